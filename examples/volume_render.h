/*
 * libacmlbm examples -- a small emission-absorption volume renderer for smoke
 * density grids (acm_smoke_density()), with solids drawn from their surface
 * samples (acm_solid_get_samples()). No library API inside: plain arrays in,
 * an RGB8 image out. SPDX-License-Identifier: Apache-2.0
 *
 * How it draws a frame (vr_render):
 *  1. Solids: each sample gets a normal, the direction of least spread of
 *     its neighbours within the splat radius (weighted principal axes; the
 *     neighbours found through a hash of cells), and is drawn as a disc of
 *     radius vr_splats::radius across that normal: per pixel the ray meets
 *     the disc's plane, and a depth test keeps the nearest disc and its
 *     normal (surfels).
 *  2. Light: one directional light. The transmittance from the light to every
 *     voxel centre is computed once per frame by sweeping the grid slice by
 *     slice along the axis closest to the light direction (each voxel reads
 *     the slice before it bilinearly): O(voxels), no per-sample shadow rays.
 *     The samples are voxelised into this pass, so solids shadow the smoke
 *     and the floor; a second sweep through the smoke alone lights the
 *     solids (their own voxels would shadow their surface).
 *  3. Rays: from a pinhole camera, one per pixel, marched through the grid at
 *     a fixed step (jittered per pixel by a hash, so the result is
 *     deterministic) up to the solid's depth; each step absorbs
 *     exp(-sigma rho ds) and scatters albedo (light T_light + ambient).
 *  4. What is behind: the shaded solid, an optional floor under the grid
 *     (shadowed by the same grid), or a vertical sky gradient; then a soft
 *     tone curve and gamma.
 * Rows run in parallel with OpenMP when it is available.
 *
 * World coordinates are those of the grid (lattice cells for the library's
 * grids); y is "up" for the sky gradient and the floor.
 */
#ifndef ACMLBM_EXAMPLES_VOLUME_RENDER_H
#define ACMLBM_EXAMPLES_VOLUME_RENDER_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint8_t, uint32_t */

/** A density grid: n[0] x n[1] x n[2] values, x fastest (as acm_smoke_density()). */
typedef struct vr_volume {
    const float *density;
    int32_t n[3];
    double voxel;     /* edge of a voxel, world units */
    double origin[3]; /* world position of the centre of voxel (0, 0, 0) */
} vr_volume;

/** Points on the surface of a solid, drawn as small shaded discs. */
typedef struct vr_splats {
    const double *xyz; /* 3 per point, world units */
    size_t count;
    double radius;    /* world units: about the spacing of the points or more */
    float albedo[3];  /* linear RGB in [0, 1] */
} vr_splats;

/** A pinhole camera. */
typedef struct vr_camera {
    double eye[3], look_at[3], up[3];
    double fov_deg; /* vertical field of view, degrees, in (0, 180) */
} vr_camera;

/** Everything that is not data. vr_params_default() fills sensible values. */
typedef struct vr_params {
    uint32_t width, height;  /* pixels, each in [1, 16384] */
    vr_camera camera;
    double light_dir[3];     /* direction towards the light (need not be unit) */
    float light[3];          /* radiance of the light, linear RGB */
    float ambient[3];        /* radiance from everywhere else */
    float smoke_albedo[3];   /* scattering colour of the smoke */
    double extinction;       /* sigma per unit density per world unit, >= 0 */
    double solid_extinction; /* optical depth of a voxel holding a solid point (shadows), >= 0 */
    double step;             /* ray step in voxels, in (0, 4] (default 0.5) */
    float sky_top[3], sky_bottom[3];
    int floor;               /* 1: draw the plane y = floor_y under the grid's footprint */
    double floor_y;
    float floor_albedo[3];
    double exposure;         /* tone curve 1 - exp(-exposure c) of the linear colour c, > 0 */
    double gamma;            /* display gamma, > 0 (default 2.2) */
} vr_params;

/** Defaults: 640x360, a camera looking at the origin from +z, light from the upper left
 *  and behind, white smoke, a blue-grey sky, no floor. */
void vr_params_default(vr_params *p);

/**
 * Render @p volume (may have no density: NULL) and @p nsplats point sets into
 * @p rgb (width x height x 3 bytes, rows top to bottom). Deterministic: the
 * same input gives the same bytes for any number of threads.
 * @return 0, or -1 with a message in @p err (bad parameters, no memory)
 */
int vr_render(uint8_t *rgb, const vr_params *p, const vr_volume *volume, const vr_splats *splats,
              size_t nsplats, char *err, size_t err_size);

#endif /* ACMLBM_EXAMPLES_VOLUME_RENDER_H */
