/*
 * libacmlbm examples -- what the smoke scenes (vortex_rings, torus_smoke,
 * city_wind) share: their command line, the run loop that steps the domain
 * and renders a frame of the smoke density and the solids every so many
 * steps (volume_render.h), the PNG frames DIR/NAME-0000.png ..., and the
 * optional video made with ffmpeg.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_SMOKE_SCENE_H
#define ACMLBM_EXAMPLES_SMOKE_SCENE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, int64_t */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "solid_common.h"
#include "volume_render.h"

/** The options every scene has. */
typedef struct ss_args {
    int backend;      /* acm_backend */
    int32_t size[3];  /* grid, cells */
    int64_t steps;    /* time steps in all */
    int64_t frames;   /* PNG frames, spread evenly over the steps */
    int64_t width;    /* image width, pixels (the height follows the scene's aspect) */
    int64_t sub;      /* density voxels per cell edge (acm_smoke_density) */
    const char *out;  /* output directory */
    int video;        /* --video: make DIR/NAME.mp4 with ffmpeg afterwards */
} ss_args;

/* The option rows of ss_args for sc_parse_args(), with each scene's defaults
 * spelled out in the help (string literals). */
#define SS_OPTIONS(a, size_default, steps_default, frames_default, width_default, out_default) \
    {"--backend", "B", SC_CHOICE, &(a)->backend, 0, 0, 0, sc_backends,                         \
     SC_COUNT_OF(sc_backends), "auto|cpu|cuda (default auto)"},                               \
    {"--size", "NXxNYxNZ", SC_SIZE3, (a)->size, 8, 4096, 0, NULL, 0,                           \
     "grid in cells (default " size_default ")"},                                             \
    {"--steps", "S", SC_INT, &(a)->steps, 1, 1e12, 0, NULL, 0,                                 \
     "time steps (default " steps_default ")"},                                               \
    {"--frames", "N", SC_INT, &(a)->frames, 1, 100000, 0, NULL, 0,                             \
     "PNG frames over the run (default " frames_default ")"},                                 \
    {"--width", "W", SC_INT, &(a)->width, 16, 8192, 0, NULL, 0,                                \
     "image width in pixels (default " width_default ")"},                                    \
    {"--subdivisions", "K", SC_INT, &(a)->sub, 1, ACM_SMOKE_SUBDIVISIONS_MAX, 0, NULL, 0,      \
     "density voxels per cell edge (default 1)"},                                             \
    {"--out", "DIR", SC_TEXT, &(a)->out, 0, 0, 0, NULL, 0,                                     \
     "directory of the frames, made if missing (default " out_default ")"}

/**
 * Parse the command line: "--video" (a flag) and the option rows. Prints the
 * usage for --help.
 * @return 0 to run, 1 after --help (exit 0), 2 after a usage error (exit 2)
 */
int ss_parse(const char *prog, int argc, char **argv, const sc_option *opts, size_t nopts,
             ss_args *a);

/** Create the domain of a scene (size, backend, viscosity, initial velocity or NULL);
 *  NULL after a message. */
acm_domain *ss_domain_create(const char *prog, const ss_args *a, double viscosity,
                             const double velocity[3]);

/** Set faces; 0, or -1 after a message. */
int ss_set_face(const char *prog, acm_domain *d, acm_face face, acm_boundary type,
                const double velocity[3]);

/** A solid from a procedural mesh (the mesh is freed here, whatever happens): so->mesh is
 *  set to it; 0, or -1 after a message. */
int ss_add_mesh_solid(const char *prog, acm_domain *d, shapes_mesh *mesh, acm_solid_options *so,
                      acm_solid **out);

/** Add an emitter; 0, or -1 after a message (the library's status in *status if not NULL). */
int ss_add_emitter(const char *prog, acm_smoke *smoke, const acm_emitter *e, acm_status *status);

#define SS_MAX_SOLIDS 4

/** One scene: what to step and what to draw. */
typedef struct ss_scene {
    const char *name;  /* the program's name: frames NAME-0000.png, video NAME.mp4 */
    const ss_args *args;
    acm_domain *domain;
    acm_smoke *smoke;
    acm_solid *solids[SS_MAX_SOLIDS];
    float albedo[SS_MAX_SOLIDS][3];
    size_t nsolids;
    double aspect;     /* image width / height */
    int64_t steps_before; /* steps run before ss_run (counted in its reports) */
    vr_params view;    /* camera, light, extinction...; width and height set by ss_run */
} ss_scene;

/**
 * Step the scene's domain args->steps steps, writing a frame after every
 * steps/frames steps (progress on stderr, each file named on stdout), then
 * the video if asked for. 0, or -1 after a message.
 */
int ss_run(ss_scene *s);

/** splitmix64: the scenes' own deterministic random numbers, in [0, 1). */
double ss_random(uint64_t *state);

#endif /* ACMLBM_EXAMPLES_SMOKE_SCENE_H */
