/*
 * libacmlbm example -- wind and smoke through a block of buildings (the scene
 * of the paper's teaser), rendered with the example volume renderer.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Wind blows along x: a velocity inlet at x = 0, an outflow at x = nx - 1
 * behind an absorbing layer (--absorber cells, nx / 10 by default, relaxing the
 * flow to the wind, so that the outlet sends no sound back), the ground a
 * resting wall at y = 0, the sky a wall moving with the wind, z
 * periodic. The buildings are boxes of varied heights on a grid of lots (a
 * seeded generator: --seed), built as one mesh (shapes_boxes) and one static
 * solid. Smoke rises from --plumes emitters near the ground upwind of the
 * block and leaves at the outflow. Frames DIR/city_wind-0000.png ...
 */
#include <math.h>   /* floor */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "smoke_scene.h"

static const char *const prog = "city_wind";

typedef struct city_args {
    ss_args s;
    double viscosity, wind, rate;
    int64_t plumes, seed, absorber; /* absorber -1: nx / 10 */
} city_args;

static int parse(int argc, char **argv, city_args *a)
{
    const city_args d = {{ACM_BACKEND_AUTO, {96, 24, 64}, 1000, 12, 640, 1, "city_wind", 0},
                         0.001, 0.06, 40.0, 5, 7, -1};
    *a = d;
    const sc_option opts[] = {
        SS_OPTIONS(&a->s, "96x24x64", "1000", "12", "640", "city_wind"),
        {"--viscosity", "NU", SC_REAL, &a->viscosity, 0, 1, 1, NULL, 0,
         "kinematic viscosity, cells^2 per step (default 0.001)"},
        {"--wind", "U", SC_REAL, &a->wind, 0, 0.15, 1, NULL, 0,
         "inflow speed, cells per step (default 0.06)"},
        {"--plumes", "N", SC_INT, &a->plumes, 1, 64, 0, NULL, 0,
         "smoke emitters upwind of the buildings (default 5)"},
        {"--rate", "R", SC_REAL, &a->rate, 0, 1e7, 1, NULL, 0,
         "smoke particles per step and emitter (default 40)"},
        {"--seed", "S", SC_INT, &a->seed, 0, 1e15, 0, NULL, 0,
         "seed of the buildings' layout (default 7)"},
        {"--absorber", "A", SC_INT, &a->absorber, 0, 1e5, 0, NULL, 0,
         "absorbing cells in front of the outflow, 0 for none (default nx / 10)"},
    };
    const int rc = ss_parse(prog, argc, argv, opts, SC_COUNT_OF(opts), &a->s);
    if (a->absorber < 0)
        a->absorber = a->s.size[0] / 10;
    return rc;
}

/* Boxes on a grid of lots over the middle of the ground: 6 numbers (lo, hi) each.
 * Returns the count (the array holds at most `max`). */
static size_t layout(const int32_t n[3], uint64_t seed, double *boxes, size_t max)
{
    const double lot = n[0] / 14.0 > 6.0 ? n[0] / 14.0 : 6.0;
    const double x0 = 0.30 * n[0], x1 = 0.78 * n[0], z0 = 0.06 * n[2], z1 = 0.94 * n[2];
    size_t count = 0;
    for (double x = x0; x + lot <= x1 && count < max; x += lot)
        for (double z = z0; z + lot <= z1 && count < max; z += lot) {
            if (ss_random(&seed) < 0.15) /* an open square */
                continue;
            const double w = lot * (0.5 + 0.2 * ss_random(&seed)),
                         dpt = lot * (0.5 + 0.2 * ss_random(&seed));
            const double cx = x + 0.5 * lot, cz = z + 0.5 * lot;
            const double off = (cz - 0.5 * n[2]) / n[2]; /* taller towards the middle */
            const double centre = 1.0 - 1.6 * off * off;
            const double h = n[1] * (0.18 + 0.45 * centre * ss_random(&seed));
            const double b[6] = {cx - 0.5 * w, 0.0, cz - 0.5 * dpt,
                                 cx + 0.5 * w, h,   cz + 0.5 * dpt};
            memcpy(boxes + 6 * count++, b, sizeof b);
        }
    return count;
}

static int add_buildings(const city_args *a, ss_scene *s)
{
    enum { MAX_BOXES = 1024 };
    double *boxes = malloc(6 * MAX_BOXES * sizeof *boxes);
    if (boxes == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    const size_t count = layout(a->s.size, (uint64_t)a->seed, boxes, MAX_BOXES);
    shapes_mesh m;
    const int built = count > 0 ? shapes_boxes(&m, boxes, count) : -1;
    free(boxes);
    if (built != 0) {
        fprintf(stderr, "%s: cannot build the buildings' mesh (%zu boxes)\n", prog, count);
        return -1;
    }
    printf("buildings: %zu boxes on lots of %.1f cells\n", count,
           a->s.size[0] / 14.0 > 6.0 ? a->s.size[0] / 14.0 : 6.0);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.samples_per_cell = 4.0; /* flat faces: fewer samples suffice (and cost less) */
    /* the mesh's centroid goes to `position`: put it back where the boxes were built */
    const double volume = shapes_volume(&m);
    double c[3] = {0.0, 0.0, 0.0};
    for (size_t t = 0; t < m.nt; ++t) { /* volume centroid: sum of signed tetrahedra */
        const double *p0 = m.v + 3 * m.t[3 * t], *p1 = m.v + 3 * m.t[3 * t + 1],
                     *p2 = m.v + 3 * m.t[3 * t + 2];
        const double v6 = p0[0] * (p1[1] * p2[2] - p1[2] * p2[1]) -
                          p0[1] * (p1[0] * p2[2] - p1[2] * p2[0]) +
                          p0[2] * (p1[0] * p2[1] - p1[1] * p2[0]);
        for (int k = 0; k < 3; ++k)
            c[k] += v6 * (p0[k] + p1[k] + p2[k]) / 24.0;
    }
    for (int k = 0; k < 3; ++k)
        so.position[k] = c[k] / volume;
    return ss_add_mesh_solid(prog, s->domain, &m, &so, &s->solids[0]);
}

static int add_plumes(const city_args *a, ss_scene *s)
{
    const int32_t *n = a->s.size;
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    /* what is alive once the first particles reach the outflow, with a margin */
    so.capacity = (uint64_t)(1.5 * a->rate * (double)a->plumes * n[0] / a->wind) + 1024;
    acm_status st = acm_smoke_create(&s->smoke, s->domain, &so);
    if (sc_failed(prog, st, "acm_smoke_create", acm_domain_last_error(s->domain)))
        return -1;
    for (int64_t k = 0; k < a->plumes; ++k) {
        acm_emitter e = ACM_EMITTER_INIT;
        e.shape = ACM_EMITTER_SPHERE;
        e.radius = 0.06 * n[1] + 1.0;
        e.centre[0] = 0.12 * n[0];
        e.centre[1] = e.radius + 0.5;
        e.centre[2] = ((double)k + 0.5) / (double)a->plumes * n[2];
        e.rate = a->rate;
        if (ss_add_emitter(prog, s->smoke, &e, NULL) != 0)
            return -1;
    }
    printf("smoke: %lld plumes of %g particles per step at x = %.0f\n", (long long)a->plumes,
           a->rate, 0.12 * n[0]);
    return 0;
}

static void set_view(ss_scene *s, const city_args *a)
{
    const int32_t *n = a->s.size;
    vr_params_default(&s->view);
    const double look[3] = {0.5 * n[0], 0.15 * n[1], 0.5 * n[2]};
    const double eye[3] = {look[0] - 0.30 * n[0], look[1] + 0.45 * n[0], look[2] + 0.70 * n[0]};
    memcpy(s->view.camera.eye, eye, sizeof eye);
    memcpy(s->view.camera.look_at, look, sizeof look);
    s->view.camera.fov_deg = 40.0;
    const double light[3] = {-0.6, 1.0, 0.45}; /* upper left, in front */
    memcpy(s->view.light_dir, light, sizeof light);
    s->view.floor = 1;
    s->view.floor_y = -0.5;
    /* a plume of radius r carries rate / (wind pi r^2) particles per cell: an optical
     * depth of about 1 across one where it starts */
    const double r = 0.06 * n[1] + 1.0, rho = a->rate / (a->wind * M_PI * r * r);
    s->view.extinction = 1.0 / (rho * 2.0 * r);
    s->aspect = 16.0 / 9.0;
    const float stone[3] = {0.55f, 0.50f, 0.46f};
    memcpy(s->albedo[0], stone, sizeof stone);
}

int main(int argc, char **argv)
{
    city_args a;
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    ss_scene s = {.name = prog, .args = &a.s, .nsolids = 1};
    printf("wind and smoke through a block of buildings, lattice units\n");
    const double wind[3] = {a.wind, 0.0, 0.0};
    int rc = (s.domain = ss_domain_create(prog, &a.s, a.viscosity, wind)) == NULL ? -1 : 0;
    if (rc == 0)
        rc = ss_set_face(prog, s.domain, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, wind);
    if (rc == 0)
        rc = ss_set_face(prog, s.domain, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL);
    if (rc == 0 && a.absorber > 0) {
        const acm_status st = acm_domain_set_face_absorber(s.domain, ACM_FACE_X_MAX,
                                                           (int32_t)a.absorber, 0.5, 1.0, wind);
        rc = sc_failed(prog, st, "the outflow's absorber", acm_domain_last_error(s.domain)) ? -1
                                                                                            : 0;
    }
    if (rc == 0)
        rc = ss_set_face(prog, s.domain, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL);
    if (rc == 0)
        rc = ss_set_face(prog, s.domain, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, wind);
    if (rc == 0)
        rc = add_buildings(&a, &s);
    if (rc == 0)
        rc = add_plumes(&a, &s);
    set_view(&s, &a);
    if (rc == 0)
        rc = ss_run(&s);
    acm_smoke_destroy(s.smoke); /* before the solids its emitters may use */
    acm_domain_destroy(s.domain);
    return rc == 0 ? 0 : 1;
}
