/*
 * Seeds of fuzz_checkpoint: small checkpoints of every section type (a plain
 * grid; walls, an inlet, a force field and LI2020's tau; a prescribed solid of
 * samples and a free one of a closed mesh; two smokes with every emitter shape
 * around a moving closed mesh; a grid of moment storage and its moments
 * section). Usage: checkpoint_seeds DIR
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

/* A solid of a closed mesh: the unit cube scaled. */
static acm_solid *cube(acm_domain *d, acm_motion motion, double scale, double x, double y, double z)
{
    static const double v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                    0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
    static const uint32_t t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                       2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
    acm_mesh *m = NULL;
    if (acm_mesh_create(&m, v, 8, t, 12, NULL) != ACM_OK)
        exit(1);
    acm_solid_options co = ACM_SOLID_OPTIONS_INIT;
    co.mesh = m;
    co.scale = scale;
    co.samples_per_cell = 1.0;
    co.motion = motion;
    co.density = 2.0;
    co.position[0] = x;
    co.position[1] = y;
    co.position[2] = z;
    co.velocity[0] = motion == ACM_MOTION_PRESCRIBED ? 0.02 : 0.0;
    acm_solid *s = NULL;
    if (acm_solid_create(&s, d, &co) != ACM_OK)
        exit(1);
    acm_mesh_destroy(m);
    return s;
}

static void emitter(acm_smoke *s, const acm_emitter *e)
{
    if (acm_smoke_add_emitter(s, e) != ACM_OK) {
        fprintf(stderr, "emitter: %s\n", acm_smoke_last_error(s));
        exit(1);
    }
}

/* Two smokes around a moving cube (it absorbs): a box with a lifetime, points,
 * the cube's surface, a ball in a smoke too small for it. */
static acm_domain *smoky(void)
{
    acm_domain *d = grid(4, 4, 4, ACM_COLLISION_DEFAULT); /* small: the smoke's bytes count */
    acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL);
    acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL);
    acm_solid *c = cube(d, ACM_MOTION_PRESCRIBED, 1.5, 2.0, 2.0, 2.0);
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = 40;
    so.seed = 3;
    acm_smoke *a = NULL, *b = NULL;
    if (acm_smoke_create(&a, d, &so) != ACM_OK)
        exit(1);
    acm_emitter box = ACM_EMITTER_INIT;
    box.lo[0] = box.lo[1] = box.lo[2] = 0.5;
    box.hi[0] = box.hi[1] = box.hi[2] = 2.5;
    box.rate = 2.5;
    box.lifetime = 3;
    emitter(a, &box);
    static const double pts[6] = {0.5, 0.5, 3.6, 3.0, 3.2, 1.0};
    acm_emitter p = ACM_EMITTER_INIT;
    p.shape = ACM_EMITTER_POINTS;
    p.points = pts;
    p.point_count = 2;
    p.rate = 0.5;
    emitter(a, &p);
    acm_emitter surface = ACM_EMITTER_INIT;
    surface.shape = ACM_EMITTER_SOLID;
    surface.solid = c;
    surface.offset = 0.5;
    surface.rate = 1.5;
    emitter(a, &surface);
    so.capacity = 3;
    if (acm_smoke_create(&b, d, &so) != ACM_OK)
        exit(1);
    acm_emitter ball = ACM_EMITTER_INIT;
    ball.shape = ACM_EMITTER_SPHERE;
    ball.centre[0] = ball.centre[1] = ball.centre[2] = 1.0;
    ball.radius = 0.8;
    ball.rate = 2.0;
    emitter(b, &ball);
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
    cube(d, ACM_MOTION_FREE, 1.5, 1.5, 3.0, 3.0);
    save(d, argv[1], "solids.ckpt");

    save(smoky(), argv[1], "smoke.ckpt");

    d = grid(4, 3, 2, ACM_COLLISION_DEFAULT); /* moment storage: its moments section */
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK || acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS) != ACM_OK ||
        acm_domain_set_layout(d, l) != ACM_OK)
        return 1;
    acm_layout_destroy(l);
    save(d, argv[1], "moments.ckpt");
    return 0;
}
