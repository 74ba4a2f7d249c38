/*
 * libacmlbm example -- a torus spinning in smoke (the scene of Fig. 17(b) of
 * the paper), rendered with the example volume renderer.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A closed box of air at rest. A torus of radii 0.25 nx and 0.08 nx, its
 * axis tilted --tilt degrees from the vertical y axis, spins about y
 * (ACM_MOTION_PRESCRIBED) with its outermost point at --tip cells per step.
 * Its surface sheds smoke (an ACM_EMITTER_SOLID emitter, --offset cells off
 * the surface, particles living --lifetime steps), which the spinning torus
 * winds into the air around it. --emitter sphere puts the smoke in a ball
 * around the torus instead (for libraries without the solid emitter; the
 * program switches to it by itself, with a note, if the library refuses the
 * solid emitter). Frames DIR/torus_smoke-0000.png ...
 */
#include <math.h>   /* ceil, M_PI */
#include <stdio.h>  /* printf, fprintf */
#include <string.h> /* memcpy */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "smoke_scene.h"

static const char *const prog = "torus_smoke";

enum { EMIT_SOLID = 0, EMIT_SPHERE = 1 };
static const sc_choice emitters[2] = {{"solid", EMIT_SOLID}, {"sphere", EMIT_SPHERE}};

typedef struct torus_args {
    ss_args s;
    double viscosity, tip, tilt, rate, offset;
    int64_t lifetime;
    int emitter;
} torus_args;

static int parse(int argc, char **argv, torus_args *a)
{
    const torus_args d = {{ACM_BACKEND_AUTO, {48, 32, 48}, 800, 12, 640, 1, "torus_smoke", 0},
                          0.001, 0.08, 30.0, 150.0, 1.0, 1500, EMIT_SOLID};
    *a = d;
    const sc_option opts[] = {
        SS_OPTIONS(&a->s, "48x32x48", "800", "12", "640", "torus_smoke"),
        {"--viscosity", "NU", SC_REAL, &a->viscosity, 0, 1, 1, NULL, 0,
         "kinematic viscosity, cells^2 per step (default 0.001)"},
        {"--tip", "V", SC_REAL, &a->tip, 0, 0.15, 1, NULL, 0,
         "speed of the torus' outermost point, cells per step (default 0.08)"},
        {"--tilt", "DEG", SC_REAL, &a->tilt, 0, 90, 0, NULL, 0,
         "angle between the torus axis and the spin axis y (default 30)"},
        {"--emitter", "E", SC_CHOICE, &a->emitter, 0, 0, 0, emitters, SC_COUNT_OF(emitters),
         "solid|sphere: smoke from the torus' surface or a ball around it (default solid)"},
        {"--rate", "R", SC_REAL, &a->rate, 0, 1e7, 1, NULL, 0,
         "smoke particles per step (default 150)"},
        {"--offset", "D", SC_REAL, &a->offset, 0, 4, 0, NULL, 0,
         "distance of the solid emitter from the surface, cells (default 1)"},
        {"--lifetime", "S", SC_INT, &a->lifetime, 1, 1e9, 0, NULL, 0,
         "steps a smoke particle lives (default 1500)"},
    };
    return ss_parse(prog, argc, argv, opts, SC_COUNT_OF(opts), &a->s);
}

static int add_torus(const torus_args *a, ss_scene *s, double *outer)
{
    const double R = 0.25 * a->s.size[0], r = 0.08 * a->s.size[0];
    const unsigned nu = (unsigned)ceil(2.0 * M_PI * (R + r) / 0.75),
                   nv = (unsigned)ceil(2.0 * M_PI * r / 0.75);
    shapes_mesh m;
    if (shapes_torus(&m, R, r, nu < 12 ? 12 : nu, nv < 8 ? 8 : nv) != 0) {
        fprintf(stderr, "%s: cannot build the torus mesh\n", prog);
        return -1;
    }
    const double x_axis[3] = {1, 0, 0}, z_axis[3] = {0, 0, 1};
    double up[4], lean[4];
    sc_quat_axis_angle(up, x_axis, -90.0);     /* body z -> world y */
    sc_quat_axis_angle(lean, z_axis, a->tilt); /* then lean towards -x */
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.motion = ACM_MOTION_PRESCRIBED;
    sc_quat_mul(so.orientation, lean, up);
    for (int k = 0; k < 3; ++k)
        so.position[k] = 0.5 * (a->s.size[k] - 1);
    so.angular_velocity[1] = a->tip / (R + r);
    *outer = R + r;
    printf("torus: R = %.1f, r = %.1f cells, axis %g deg from y, spinning at %.4f rad/step (a "
           "turn in %.0f steps)\n",
           R, r, a->tilt, so.angular_velocity[1], 2.0 * M_PI / so.angular_velocity[1]);
    return ss_add_mesh_solid(prog, s->domain, &m, &so, &s->solids[0]);
}

/* The smoke: shed by the torus' surface, or (EMIT_SPHERE, or if the library refuses
 * the solid emitter) in a ball around it. */
static int add_smoke(const torus_args *a, ss_scene *s, double outer)
{
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = (uint64_t)(a->rate * (double)a->lifetime) + 16;
    acm_status st = acm_smoke_create(&s->smoke, s->domain, &so);
    if (sc_failed(prog, st, "acm_smoke_create", acm_domain_last_error(s->domain)))
        return -1;
    acm_emitter e = ACM_EMITTER_INIT;
    e.rate = a->rate;
    e.lifetime = a->lifetime;
    if (a->emitter == EMIT_SOLID) {
        e.shape = ACM_EMITTER_SOLID;
        e.solid = s->solids[0];
        e.offset = a->offset;
        st = acm_smoke_add_emitter(s->smoke, &e);
        if (st == ACM_OK) {
            printf("smoke: %g particles per step from the torus' surface, %g cells out\n",
                   a->rate, a->offset);
            return 0;
        }
        if (st != ACM_ERR_BAD_ENUM)
            return sc_failed(prog, st, "acm_smoke_add_emitter", acm_smoke_last_error(s->smoke))
                       ? -1
                       : 0;
        fprintf(stderr, "%s: note: this library has no ACM_EMITTER_SOLID yet (%s); using "
                        "--emitter sphere\n",
                prog, acm_smoke_last_error(s->smoke));
    }
    e.shape = ACM_EMITTER_SPHERE;
    for (int k = 0; k < 3; ++k)
        e.centre[k] = 0.5 * (a->s.size[k] - 1);
    e.radius = 1.15 * outer;
    printf("smoke: %g particles per step in a ball of radius %.1f around the torus\n", a->rate,
           e.radius);
    return ss_add_emitter(prog, s->smoke, &e, NULL);
}

static void set_view(ss_scene *s, const int32_t n[3], const torus_args *a)
{
    vr_params_default(&s->view);
    const double c[3] = {0.5 * (n[0] - 1), 0.5 * (n[1] - 1), 0.5 * (n[2] - 1)};
    const double eye[3] = {c[0] + 0.40 * n[0], c[1] + 1.20 * n[0], c[2] + 1.25 * n[0]};
    memcpy(s->view.camera.eye, eye, sizeof eye);
    memcpy(s->view.camera.look_at, c, sizeof c);
    s->view.camera.fov_deg = 36.0;
    s->view.floor = 1;
    s->view.floor_y = -0.5;
    /* a particle lives `lifetime` steps; a shell of smoke of about a tenth of the box
     * around the torus holds rate * lifetime of them: aim at an optical depth of 1.5 */
    const double shell = 0.1 * (double)n[0] * n[1] * n[2];
    s->view.extinction = 1.5 / (a->rate * (double)a->lifetime / shell * 0.15 * n[0]);
    s->aspect = 4.0 / 3.0;
    const float torus[3] = {0.80f, 0.45f, 0.10f};
    memcpy(s->albedo[0], torus, sizeof torus);
}

int main(int argc, char **argv)
{
    torus_args a;
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    ss_scene s = {.name = prog, .args = &a.s, .nsolids = 1};
    printf("a torus spinning in smoke in a closed box, lattice units\n");
    int rc = (s.domain = ss_domain_create(prog, &a.s, a.viscosity, NULL)) == NULL ? -1 : 0;
    for (int f = 0; f < ACM_FACE_COUNT && rc == 0; ++f)
        rc = ss_set_face(prog, s.domain, (acm_face)f, ACM_BOUNDARY_WALL, NULL);
    double outer = 0.0;
    if (rc == 0)
        rc = add_torus(&a, &s, &outer);
    if (rc == 0)
        rc = add_smoke(&a, &s, outer);
    set_view(&s, a.s.size, &a);
    if (rc == 0)
        rc = ss_run(&s);
    acm_smoke_destroy(s.smoke); /* before the solids its emitters may use */
    acm_domain_destroy(s.domain);
    return rc == 0 ? 0 : 1;
}
