/*
 * libacmlbm examples -- procedural triangle meshes for tests, examples and
 * benchmarks: closed, watertight (neighbouring triangles share vertex
 * indices), counter-clockwise seen from outside. Plain arrays, no library
 * API. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_SHAPES_H
#define ACMLBM_EXAMPLES_SHAPES_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shapes_mesh {
    double *v;   /* 3 coordinates per vertex */
    size_t nv;   /* vertices */
    uint32_t *t; /* 3 vertex indices per triangle */
    size_t nt;   /* triangles */
} shapes_mesh;

/* The constructors return 0, or -1 for bad arguments or no memory (out is
 * then empty). */

/* Icosphere: an icosahedron whose faces are split in four `subdivisions`
 * times (20 * 4^s triangles, 10 * 4^s + 2 vertices), every vertex on the
 * sphere of the given radius. subdivisions <= 10. */
int shapes_sphere(shapes_mesh *out, unsigned subdivisions, double radius);

/* Subdivisions that bring the edges to about `edge` or below (each level
 * halves them, roughly). */
unsigned shapes_sphere_subdivisions(double radius, double edge);

/* Torus around the z axis: tube radius r around a circle of radius R > r;
 * nu segments around the axis, nv around the tube (each >= 3). */
int shapes_torus(shapes_mesh *out, double R, double r, unsigned nu, unsigned nv);

/* Tube of radius a around the (p, q) torus knot
 *   c(s) = ((R + r cos qs) cos ps, (R + r cos qs) sin ps, r sin qs), s in [0, 2 pi),
 * p, q coprime (p = 2, q = 3: the trefoil). nu rings along the knot (>= 8),
 * nv vertices per ring (>= 3). The rings are oriented by parallel transport,
 * with the holonomy spread evenly so that the tube closes without a twist
 * seam. a must stay below the curvature radius and half the distance between
 * strands (shapes_trefoil() picks safe values). */
int shapes_knot_tube(shapes_mesh *out, int p, int q, double R, double r, double a, unsigned nu,
                     unsigned nv);

/* The trefoil of the examples: p = 2, q = 3, R = 2, r = 1, a = 0.35. */
int shapes_trefoil(shapes_mesh *out, unsigned nu, unsigned nv);

/* Axis-aligned box [lo, hi], 12 triangles. */
int shapes_box(shapes_mesh *out, const double lo[3], const double hi[3]);

void shapes_free(shapes_mesh *m);

/* Total area; enclosed volume (positive for outward winding). */
double shapes_area(const shapes_mesh *m);
double shapes_volume(const shapes_mesh *m);

/* Write binary STL (float32, little endian) or Wavefront OBJ; 0 or -1. */
int shapes_write_stl_binary(const char *path, const shapes_mesh *m);
int shapes_write_obj(const char *path, const shapes_mesh *m);

/* `count` axis-aligned boxes as one mesh (each closed, 12 triangles, no shared
 * vertices): box b spans lo_hi[6b .. 6b+2] to lo_hi[6b+3 .. 6b+5]. The boxes
 * should not overlap (the mesh then still has an inside by ray parity). */
int shapes_boxes(shapes_mesh *out, const double *lo_hi, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* ACMLBM_EXAMPLES_SHAPES_H */
