/*
 * libacmlbm example -- two smoke rings colliding around a ball (the scene of
 * Fig. 17(a) of the paper), rendered with the example volume renderer.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A closed box of air at rest, a static ball in its centre. For the first
 * --push-steps steps a per-cell body force (ACM_FIELD_FORCE) pushes two discs
 * of air of radius 0.2 ny, one near each end of the long x axis, towards the
 * ball; each slug of air rolls up into a vortex ring. The smoke is seeded in
 * the slugs at step 1: two point emitters fill a smoke whose capacity is
 * exactly their particles, so later emissions find it full and nothing more
 * is emitted. Frames DIR/vortex_rings-0000.png ... show the smoke and the
 * ball.
 */
#include <math.h>   /* sqrt, tanh, fabs, cos, sin */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memset */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "smoke_scene.h"

static const char *const prog = "vortex_rings";

typedef struct rings_args {
    ss_args s;
    double viscosity, push;
    int64_t push_steps, particles;
} rings_args;

typedef struct rings_geom {
    double ring_radius, slug_length, slug_x[2], centre[3];
} rings_geom;

static int parse(int argc, char **argv, rings_args *a)
{
    const rings_args d = {{ACM_BACKEND_AUTO, {64, 32, 32}, 800, 12, 640, 1, "vortex_rings", 0},
                          0.002, 0.004, 30, 150000};
    *a = d;
    const sc_option opts[] = {
        SS_OPTIONS(&a->s, "64x32x32", "800", "12", "640", "vortex_rings"),
        {"--viscosity", "NU", SC_REAL, &a->viscosity, 0, 1, 1, NULL, 0,
         "kinematic viscosity, cells^2 per step (default 0.002)"},
        {"--push", "F", SC_REAL, &a->push, 0, 0.02, 1, NULL, 0,
         "force density in the discs, lattice units (default 0.004)"},
        {"--push-steps", "K", SC_INT, &a->push_steps, 1, 10000, 0, NULL, 0,
         "steps the discs are pushed (default 30)"},
        {"--particles", "N", SC_INT, &a->particles, 2, 1 << 30, 0, NULL, 0,
         "smoke particles in the two rings (default 150000)"},
    };
    return ss_parse(prog, argc, argv, opts, SC_COUNT_OF(opts), &a->s);
}

static rings_geom geometry(const int32_t n[3])
{
    rings_geom g;
    g.ring_radius = 0.2 * n[1];
    g.slug_length = 0.9 * g.ring_radius;
    g.slug_x[0] = 0.17 * n[0];
    g.slug_x[1] = 0.83 * n[0] - 1.0;
    for (int k = 0; k < 3; ++k)
        g.centre[k] = 0.5 * (n[k] - 1);
    return g;
}

/* How much of the push reaches cell (x, y, z): 1 inside a disc, smooth edges.
 * Sign +1 for the first disc (pushed towards +x), -1 for the second. */
static double push_weight(const rings_geom *g, double x, double y, double z)
{
    const double r = sqrt((y - g->centre[1]) * (y - g->centre[1]) +
                          (z - g->centre[2]) * (z - g->centre[2]));
    const double radial = 0.5 * (1.0 - tanh((r - g->ring_radius) / 1.2));
    for (int k = 0; k < 2; ++k) {
        const double along = fabs(x - g->slug_x[k]) - 0.5 * g->slug_length;
        if (along < 3.0)
            return (k == 0 ? 1.0 : -1.0) * radial * 0.5 * (1.0 - tanh(along / 1.2));
    }
    return 0.0;
}

static int set_push(acm_domain *d, const int32_t n[3], const rings_geom *g, double push)
{
    const size_t cells = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
    float *force = calloc(3 * cells, sizeof *force);
    if (force == NULL) {
        fprintf(stderr, "%s: out of memory for the force field\n", prog);
        return -1;
    }
    for (int32_t z = 0; z < n[2]; ++z)
        for (int32_t y = 0; y < n[1]; ++y)
            for (int32_t x = 0; x < n[0]; ++x)
                force[3 * ((size_t)x + (size_t)n[0] * ((size_t)y + (size_t)n[1] * z))] =
                    (float)(push * push_weight(g, x, y, z));
    acm_status st = acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT32, force,
                                         3 * cells * sizeof *force);
    free(force);
    return sc_failed(prog, st, "acm_domain_set_field", acm_domain_last_error(d)) ? -1 : 0;
}

static int add_ball(acm_domain *d, const rings_geom *g, const int32_t n[3], acm_solid **out)
{
    const double radius = 0.14 * n[1];
    shapes_mesh m;
    if (shapes_sphere(&m, shapes_sphere_subdivisions(radius, 0.75), radius) != 0) {
        fprintf(stderr, "%s: cannot build the ball's mesh\n", prog);
        return -1;
    }
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    for (int k = 0; k < 3; ++k)
        so.position[k] = g->centre[k];
    printf("ball: radius %.1f cells at the centre; rings of radius %.1f cells\n", radius,
           g->ring_radius);
    return ss_add_mesh_solid(prog, d, &m, &so, out);
}

/* Smoke in the rim of the two slugs, where the rings' cores roll up: the first step
 * fills the smoke, which then stays full. */
static int seed_smoke(acm_domain *d, const rings_geom *g, int64_t particles, acm_smoke **out)
{
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = (uint64_t)particles;
    acm_status st = acm_smoke_create(out, d, &so);
    if (sc_failed(prog, st, "acm_smoke_create", acm_domain_last_error(d)))
        return -1;
    const size_t half = (size_t)particles / 2;
    double *pts = malloc(3 * half * sizeof *pts);
    if (pts == NULL) {
        fprintf(stderr, "%s: out of memory for %zu seed points\n", prog, half);
        return -1;
    }
    uint64_t rng = 17;
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; ++k) {
        for (size_t i = 0; i < half; ++i) { /* in the shear layer at the slug's rim */
            const double angle = 2.0 * M_PI * ss_random(&rng);
            const double r = g->ring_radius * (0.65 + 0.6 * sqrt(ss_random(&rng)));
            pts[3 * i] = g->slug_x[k] + (ss_random(&rng) - 0.5) * g->slug_length;
            pts[3 * i + 1] = g->centre[1] + r * cos(angle);
            pts[3 * i + 2] = g->centre[2] + r * sin(angle);
        }
        acm_emitter e = ACM_EMITTER_INIT;
        e.shape = ACM_EMITTER_POINTS;
        e.points = pts;
        e.point_count = half;
        e.rate = (double)half;
        rc = ss_add_emitter(prog, *out, &e, NULL);
    }
    free(pts);
    return rc;
}

static void set_view(ss_scene *s, const rings_geom *g, const int32_t n[3], int64_t particles)
{
    vr_params_default(&s->view);
    const double span = n[0];
    const double eye[3] = {g->centre[0] + 0.55 * span, g->centre[1] + 0.38 * span,
                           g->centre[2] + 0.80 * span};
    memcpy(s->view.camera.eye, eye, sizeof eye);
    memcpy(s->view.camera.look_at, g->centre, sizeof g->centre);
    s->view.camera.fov_deg = 38.0;
    const double light[3] = {-0.5, 1.0, 0.45}; /* upper left, in front: the ball lit */
    memcpy(s->view.light_dir, light, sizeof light);
    s->view.floor = 1;
    s->view.floor_y = -0.5;
    /* an optical depth of about 2 across the rim of a slug as seeded */
    const double r0 = 0.65 * g->ring_radius, r1 = 1.25 * g->ring_radius;
    const double rim_volume = M_PI * (r1 * r1 - r0 * r0) * g->slug_length;
    s->view.extinction = 2.0 / (0.5 * (double)particles / rim_volume * (r1 - r0));
    s->aspect = 16.0 / 9.0;
    const float ball[3] = {0.75f, 0.32f, 0.18f};
    memcpy(s->albedo[0], ball, sizeof ball);
}

int main(int argc, char **argv)
{
    rings_args a;
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    const rings_geom g = geometry(a.s.size);
    ss_scene s = {.name = prog, .args = &a.s, .nsolids = 1};
    printf("two vortex rings colliding around a ball, lattice units\n");
    int rc = (s.domain = ss_domain_create(prog, &a.s, a.viscosity, NULL)) == NULL ? -1 : 0;
    for (int f = 0; f < ACM_FACE_COUNT && rc == 0; ++f)
        rc = ss_set_face(prog, s.domain, (acm_face)f, ACM_BOUNDARY_WALL, NULL);
    if (rc == 0)
        rc = add_ball(s.domain, &g, a.s.size, &s.solids[0]);
    if (rc == 0)
        rc = seed_smoke(s.domain, &g, a.particles, &s.smoke);
    if (rc == 0)
        rc = set_push(s.domain, a.s.size, &g, a.push);
    set_view(&s, &g, a.s.size, a.particles);
    /* the push, then the free flight: the frames are spread over all the steps, so
     * the push runs as the first steps of the first frame */
    const int64_t push_steps = a.push_steps < a.s.steps ? a.push_steps : a.s.steps;
    double busy = 0.0;
    if (rc == 0)
        rc = sc_step(prog, s.domain, push_steps, &busy);
    if (rc == 0) {
        acm_status st = acm_domain_set_field(s.domain, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT32, NULL, 0);
        rc = sc_failed(prog, st, "acm_domain_set_field", acm_domain_last_error(s.domain)) ? -1 : 0;
    }
    if (rc == 0) {
        fprintf(stderr, "%s: pushed the discs for %lld steps (%.1f s)\n", prog,
                (long long)push_steps, busy);
        ss_args rest = a.s;
        rest.steps = a.s.steps - push_steps;
        s.args = &rest;
        s.steps_before = push_steps;
        rc = ss_run(&s);
    }
    acm_smoke_destroy(s.smoke); /* before the solids its emitters may use */
    acm_domain_destroy(s.domain);
    return rc == 0 ? 0 : 1;
}
