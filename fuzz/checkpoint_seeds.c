/*
 * Seeds of fuzz_checkpoint: small checkpoints of every section type (a plain
 * grid; walls, an inlet, a force field and LI2020's tau; a prescribed solid of
 * samples and a free one of a closed mesh). Usage: checkpoint_seeds DIR
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>

#include "acmlbm.h"

static acm_domain *grid(int nx, int ny, int nz, acm_collision model)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = nx;
    o.ny = ny;
    o.nz = nz;
    o.viscosity = 0.05;
    o.collision = model;
    o.backend = ACM_BACKEND_CPU;
    o.initial_velocity[0] = 0.02;
    acm_domain *d = NULL;
    if (acm_domain_create(&d, &o) != ACM_OK)
        exit(1);
    return d;
}

static void save(acm_domain *d, const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (acm_step(d, 2) != ACM_OK || acm_domain_save(d, path) != ACM_OK) {
        fprintf(stderr, "%s: %s\n", path, acm_domain_last_error(d));
        exit(1);
    }
    acm_domain_destroy(d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    save(grid(4, 3, 2, ACM_COLLISION_DEFAULT), argv[1], "plain.ckpt");

    acm_domain *d = grid(5, 3, 4, ACM_COLLISION_ACM_LI2020);
    const double in[3] = {0.02, 0, 0}, lid[3] = {0.01, 0, 0};
    acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, in);
    acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL);
    acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL);
    acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, lid);
    double F[5 * 3 * 4 * 3] = {0};
    for (int k = 0; k < 60; ++k)
        F[3 * k] = 1e-6 * (k % 3);
    acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, F, sizeof F);
    save(d, argv[1], "channel.ckpt");

    d = grid(6, 6, 6, ACM_COLLISION_DEFAULT);
    const double pts[12] = {0.5, 0, 0, -0.5, 0, 0, 0, 0.5, 0, 0, -0.5, 0}, areas[4] = {1, 1, 1, 1};
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = 4;
    so.sample_points = pts;
    so.sample_areas = areas;
    so.position[0] = so.position[1] = so.position[2] = 3.0;
    so.motion = ACM_MOTION_PRESCRIBED;
    so.velocity[0] = 0.01;
    acm_solid *s = NULL;
    if (acm_solid_create(&s, d, &so) != ACM_OK)
        return 1;
    static const double v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                    0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
    static const uint32_t t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                       2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
    acm_mesh *m = NULL;
    if (acm_mesh_create(&m, v, 8, t, 12, NULL) != ACM_OK)
        return 1;
    acm_solid_options co = ACM_SOLID_OPTIONS_INIT;
    co.mesh = m;
    co.scale = 1.5;
    co.samples_per_cell = 1.0;
    co.motion = ACM_MOTION_FREE;
    co.density = 2.0;
    co.position[0] = 1.5;
    co.position[1] = co.position[2] = 3.0;
    if (acm_solid_create(&s, d, &co) != ACM_OK)
        return 1;
    acm_mesh_destroy(m);
    save(d, argv[1], "solids.ckpt");
    return 0;
}
