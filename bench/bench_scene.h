/*
 * libacmlbm -- the scene the GPU immersed-boundary benchmarks share: the
 * paper's jet (inflow along z, periodic x and y) with a mesh placed in it.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BENCH_SCENE_H
#define ACMLBM_BENCH_SCENE_H

#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* exit */
#include <string.h> /* memset */

#include <acmlbm/acmlbm.h>

#include "shapes.h"

static inline void bench_die(const char *what, acm_status st, const char *msg)
{
    fprintf(stderr, "%s: %s: %s\n", what, acm_status_string(st), msg);
    exit(1);
}

/* A domain of the benchmarks: flow along z from an inlet to an outlet,
 * periodic x and y (the paper's jet); FP32, the default model, `layout`
 * (NULL: the defaults).
 * (Along z, because the fused kernel takes its slow face path in every warp
 * that touches a non-periodic x face: inlet/outlet faces on x cost this
 * 400 x 200 x 400 domain more than half its speed, docs/performance.md.) */
static inline acm_domain *bench_jet_domain(const int n[3], const acm_layout *layout)
{
    char err[256] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = n[0];
    o.ny = n[1];
    o.nz = n[2];
    o.viscosity = 1e-3;
    o.backend = ACM_BACKEND_CUDA;
    o.layout = layout;
    o.initial_velocity[2] = 0.05;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &o);
    if (st != ACM_OK)
        bench_die("acm_domain_create", st, err);
    const double inflow[3] = {0, 0, 0.05};
    acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_INLET, inflow);
    acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_OUTLET, NULL);
    return d;
}

/* A mesh (half-extent `extent` about its centroid) scaled to `size` cells
 * across, centred at (nx / 2, ny / 2, 0.35 nz), sampled to about `samples`
 * samples; with a surface speed `spin` > 0 it turns about the y axis
 * (prescribed motion: placed, marked and re-sorted as it goes). */
static inline acm_solid *bench_add_mesh(acm_domain *d, const int n[3], const shapes_mesh *m,
                                        double extent, double size, long samples, double spin)
{
    acm_mesh *mesh = NULL;
    char err[256] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_status st = acm_mesh_create(&mesh, m->v, m->nv, m->t, m->nt, &mo);
    if (st != ACM_OK)
        bench_die("acm_mesh_create", st, err);
    acm_mesh_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_MESH_INFO_VERSION;
    acm_mesh_get_info(mesh, &info);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = mesh;
    so.scale = 0.5 * size / extent;
    so.position[0] = 0.5 * (n[0] - 1);
    so.position[1] = 0.5 * (n[1] - 1);
    so.position[2] = 0.35 * n[2];
    so.samples_per_cell = (double)samples / (info.area * so.scale * so.scale);
    so.max_samples = 1u << 26;
    so.density = 20.0; /* mass properties: a benchmark may set the solid free (slow to move) */
    if (spin > 0.0) {
        so.motion = ACM_MOTION_PRESCRIBED;
        so.angular_velocity[1] = spin / (0.5 * size);
    }
    acm_solid *s = NULL;
    st = acm_solid_create(&s, d, &so);
    acm_mesh_destroy(mesh);
    if (st != ACM_OK)
        bench_die("acm_solid_create", st, acm_domain_last_error(d));
    return s;
}

#endif /* ACMLBM_BENCH_SCENE_H */
