/*
 * libacmlbm example -- a torus spinning in still air (the scene of Fig. 17(b)
 * of the paper, without the smoke).
 * SPDX-License-Identifier: Apache-2.0
 *
 * A closed box of resting walls holds air at rest (low viscosity, the default
 * ACM collision model). A torus of radii R = 0.25 nx and r = 0.08 nx, centred
 * in the box, spins about the vertical y axis (the short axis of the box)
 * with its own axis tilted --tilt degrees from it, so that it wobbles and
 * pushes the air around instead of only dragging it along its skin. Its
 * motion is PRESCRIBED: the library turns it every step at the angular
 * velocity that gives the outermost point the speed --tip.
 *
 * Every --every steps it prints: step, kinetic energy sum rho |u|^2 / 2, the
 * largest speed, the torque of the air on the torus about the spin axis (and
 * its magnitude), the re-sorts of the surface samples into Morton-block order
 * so far, and the throughput in MLUPS. It writes --frames images
 * PREFIX-0000.png ... of |u| on the plane z through the torus centre (0 to
 * the tip speed on viridis, the torus section outlined in red), and at the end
 * PREFIX.vti with velocity, density and occupancy. With --tune S it first
 * lets the library find the fastest layout for the scene (acm_domain_autotune,
 * at most S seconds; --tune-cache FILE remembers it for the next run).
 *
 * Units are lattice units: cells, time steps, density 1, radians per step.
 */
#include <math.h>   /* ceil, lround, sqrt, M_PI */
#include <stdio.h>  /* printf, fprintf, snprintf */
#include <string.h> /* memset, memcpy */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "solid_common.h"

static const char *const prog = "rotating_torus";

typedef struct torus_args {
    int32_t size[3];  /* 0: 256x160x256 on a GPU, 96x64x96 on the CPU */
    int64_t steps;    /* 0: one turn on a GPU, 800 on the CPU */
    int64_t every;    /* progress interval; 0: steps / 16 */
    int64_t frames;   /* PNG frames */
    double tip, tilt, viscosity, density;
    double tune;      /* seconds of autotuning; 0: the default layout */
    int backend, precision, model;
    const char *out;
    const char *tune_cache;
} torus_args;

static int parse(int argc, char **argv, torus_args *a)
{
    const torus_args defaults = {{0, 0, 0}, 0, 0, 8, 0.06, 30.0, 1e-4, 16.0, 0.0,
                                 ACM_BACKEND_AUTO, ACM_PRECISION_FP32,
                                 ACM_COLLISION_ACM_LI2018, "torus", NULL};
    *a = defaults;
    const sc_option opts[] = {
        {"--size", "NXxNYxNZ", SC_SIZE3, a->size, 8, 4096, 0, NULL, 0,
         "box in cells (default 256x160x256 on a GPU, 96x64x96 on the CPU)"},
        {"--steps", "S", SC_INT, &a->steps, 1, 1e12, 0, NULL, 0,
         "time steps (default one turn on a GPU, 800 on the CPU)"},
        {"--every", "K", SC_INT, &a->every, 1, 1e12, 0, NULL, 0,
         "print progress every K steps (default steps/16)"},
        {"--frames", "F", SC_INT, &a->frames, 0, 10000, 0, NULL, 0,
         "PNG frames over the run (default 8)"},
        {"--tip", "V", SC_REAL, &a->tip, 0, 0.15, 1, NULL, 0,
         "speed of the outermost point, cells per step (default 0.06)"},
        {"--tilt", "DEG", SC_REAL, &a->tilt, 0, 90, 0, NULL, 0,
         "angle between the torus axis and the spin axis (default 30)"},
        {"--viscosity", "NU", SC_REAL, &a->viscosity, 0, 1, 1, NULL, 0,
         "kinematic viscosity, cells^2 per step (default 1e-4)"},
        {"--density", "N", SC_REAL, &a->density, 1, 400, 0, NULL, 0,
         "surface samples per cell^2 (default 16)"},
        SC_RUN_OPTIONS(a, "acm"),
        {"--tune", "SECONDS", SC_REAL, &a->tune, 0, 3600, 0, NULL, 0,
         "find the fastest layout first, within SECONDS (default 0: don't)"},
        {"--tune-cache", "FILE", SC_TEXT, &a->tune_cache, 0, 0, 0, NULL, 0,
         "keep tuned layouts in FILE (a second run of the scene skips the search)"},
        {"--out", "PREFIX", SC_TEXT, &a->out, 0, 0, 0, NULL, 0,
         "PREFIX-0000.png ... and PREFIX.vti (default torus)"},
    };
    int rc = sc_parse_args(prog, "[options]", argc, argv, opts, SC_COUNT_OF(opts), NULL);
    if (rc != 0)
        return rc;
    const int gpu = sc_runs_on_gpu((acm_backend)a->backend);
    if (a->size[0] == 0) {
        const int32_t cpu[3] = {96, 64, 96}, big[3] = {256, 160, 256};
        memcpy(a->size, gpu ? big : cpu, sizeof a->size);
    }
    if (a->steps == 0) /* a turn is 2 pi (R + r) / tip = 2 pi 0.33 nx / tip steps */
        a->steps = gpu ? (int64_t)ceil(2.0 * M_PI * 0.33 * a->size[0] / a->tip) : 800;
    if (a->every == 0)
        a->every = a->steps >= 16 ? a->steps / 16 : 1;
    if (a->frames > a->steps)
        a->frames = a->steps;
    return 0;
}

/* ---- setup ------------------------------------------------------------------------------ */

typedef struct torus_run {
    double R, r, centre[3], omega[3];
    acm_domain *d;
    acm_solid *s;
} torus_run;

static int create_domain(const torus_args *a, torus_run *t)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT; /* air at rest */
    o.nx = a->size[0];
    o.ny = a->size[1];
    o.nz = a->size[2];
    o.viscosity = a->viscosity;
    o.collision = (acm_collision)a->model;
    o.backend = (acm_backend)a->backend;
    o.precision = (acm_precision)a->precision;
    if ((t->d = sc_domain_create(prog, &o)) == NULL)
        return -1;
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        acm_status st = acm_domain_set_face(t->d, (acm_face)f, ACM_BOUNDARY_WALL, NULL);
        if (sc_failed(prog, st, "acm_domain_set_face", acm_domain_last_error(t->d)))
            return -1;
    }
    return 0;
}

/* The torus mesh (edges of about 3/4 cell) around the body z axis, turned so
 * that its axis leans --tilt degrees from the world y axis towards -x. */
static int create_torus(const torus_args *a, torus_run *t)
{
    t->R = 0.25 * a->size[0];
    t->r = 0.08 * a->size[0];
    const unsigned nu = (unsigned)ceil(2.0 * M_PI * (t->R + t->r) / 0.75),
                   nv = (unsigned)ceil(2.0 * M_PI * t->r / 0.75);
    shapes_mesh sm;
    if (shapes_torus(&sm, t->R, t->r, nu < 12 ? 12 : nu, nv < 8 ? 8 : nv) != 0) {
        fprintf(stderr, "%s: cannot build the torus mesh\n", prog);
        return -1;
    }
    char err[512] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_mesh *mesh = NULL;
    acm_status st = acm_mesh_create(&mesh, sm.v, sm.nv, sm.t, sm.nt, &mo);
    shapes_free(&sm);
    if (sc_failed(prog, st, "acm_mesh_create", err))
        return -1;
    const double x_axis[3] = {1, 0, 0}, z_axis[3] = {0, 0, 1};
    double up[4], lean[4];
    sc_quat_axis_angle(up, x_axis, -90.0);     /* body z -> world y */
    sc_quat_axis_angle(lean, z_axis, a->tilt); /* then lean towards -x */
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = mesh;
    so.samples_per_cell = a->density;
    so.motion = ACM_MOTION_PRESCRIBED;
    sc_quat_mul(so.orientation, lean, up);
    for (int k = 0; k < 3; ++k)
        t->centre[k] = so.position[k] = 0.5 * (a->size[k] - 1);
    t->omega[0] = t->omega[2] = 0.0;
    t->omega[1] = a->tip / (t->R + t->r); /* the outermost points are R + r off the axis */
    memcpy(so.angular_velocity, t->omega, sizeof t->omega);
    acm_solid_info si;
    const int added = sc_add_solid(prog, t->d, &so, &t->s, &si);
    acm_mesh_destroy(mesh);
    if (added != 0)
        return -1;
    printf("torus: R = %.2f, r = %.2f cells (%ux%u mesh), axis %g deg from the spin axis y; "
           "%llu samples (%.1f per cell^2), area %.0f cells^2\n",
           t->R, t->r, nu, nv, a->tilt, (unsigned long long)si.sample_count, a->density, si.area);
    printf("spin %.3g rad/step about y (tip speed %g, one turn in %.0f steps), Re = tip (R + r) "
           "/ nu = %.0f\n",
           t->omega[1], a->tip, 2.0 * M_PI / t->omega[1], a->tip * (t->R + t->r) / a->viscosity);
    return 0;
}

/* ---- stepping and output ------------------------------------------------------------------- */

static int progress(const torus_run *t, double mlups)
{
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    acm_solid_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SOLID_INFO_VERSION;
    double T[3];
    acm_status st = acm_domain_get_stats(t->d, &s);
    if (sc_failed(prog, st, "acm_domain_get_stats", acm_domain_last_error(t->d)))
        return -1;
    if ((st = acm_solid_get_force(t->s, NULL, T)) == ACM_OK)
        st = acm_solid_get_info(t->s, &si);
    if (sc_failed(prog, st, "acm_solid_get_force/info", acm_solid_last_error(t->s)))
        return -1;
    printf("%8lld %13.5e %9.5f %12.4e %11.4e %7lld %7.1f\n", (long long)s.step, s.kinetic_energy,
           s.max_speed, T[1], sqrt(T[0] * T[0] + T[1] * T[1] + T[2] * T[2]),
           (long long)si.resorts, mlups);
    fflush(stdout);
    return 0;
}

/* A frame (index >= 0: PREFIX-NNNN.png) or the final VTI (index < 0). */
static int write_output(const torus_args *a, const torus_run *t, int64_t index)
{
    char suffix[32], path[4096];
    if (index >= 0)
        snprintf(suffix, sizeof suffix, "-%04lld.png", (long long)index);
    else
        snprintf(suffix, sizeof suffix, ".vti");
    sc_fields f;
    if (sc_path(prog, path, sizeof path, a->out, suffix) != 0 ||
        sc_fields_read(prog, t->d, &t->s, 1, &f) != 0)
        return -1;
    int rc = index >= 0 ? sc_write_slice_png(prog, path, &f, t->centre[2], a->tip)
                        : sc_write_vti(prog, path, &f);
    sc_fields_free(&f);
    if (rc == 0)
        printf("wrote %s\n", path);
    return rc;
}

static int64_t frame_step(const torus_args *a, int64_t k)
{
    return (int64_t)((double)(k + 1) * (double)a->steps / (double)a->frames + 0.5);
}

static int run(const torus_args *a, const torus_run *t, double *seconds)
{
    const double cells = (double)a->size[0] * a->size[1] * a->size[2];
    int64_t done = 0, frame = 0, next_print = a->every, since = 0;
    double busy = 0.0;
    *seconds = 0.0;
    printf("%8s %13s %9s %12s %11s %7s %7s\n", "step", "kinetic en.", "max|u|", "torque_y",
           "|torque|", "resorts", "MLUPS");
    while (done < a->steps) {
        int64_t target = next_print < a->steps ? next_print : a->steps;
        if (frame < a->frames && frame_step(a, frame) < target)
            target = frame_step(a, frame);
        if (sc_step(prog, t->d, target - done, &busy) != 0)
            return -1;
        since += target - done;
        done = target;
        if (done == next_print || done == a->steps) {
            if (progress(t, cells * (double)since / busy / 1e6) != 0)
                return -1;
            *seconds += busy;
            busy = 0.0;
            since = 0;
            next_print += a->every;
        }
        while (frame < a->frames && frame_step(a, frame) <= done)
            if (write_output(a, t, frame++) != 0)
                return -1;
    }
    *seconds += busy;
    return 0;
}

int main(int argc, char **argv)
{
    torus_args a;
    int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    torus_run t;
    memset(&t, 0, sizeof t);
    const double t_start = sc_now();
    printf("a torus spinning in a closed box of air at rest, lattice units\n");
    int rc = create_domain(&a, &t);
    if (rc == 0)
        rc = sc_print_domain(prog, t.d);
    if (rc == 0)
        rc = create_torus(&a, &t);
    if (rc == 0 && a.tune > 0.0)
        rc = sc_autotune(prog, t.d, a.tune, a.tune_cache);
    double seconds = 0.0;
    if (rc == 0) {
        printf("%lld steps (%.2f turns)\n", (long long)a.steps,
               (double)a.steps * t.omega[1] / (2.0 * M_PI));
        rc = run(&a, &t, &seconds);
    }
    if (rc == 0)
        rc = write_output(&a, &t, -1);
    if (rc == 0)
        printf("%lld steps in %.1f s (%.1f MLUPS); %.1f s in all\n", (long long)a.steps, seconds,
               (double)a.size[0] * a.size[1] * a.size[2] * (double)a.steps / seconds / 1e6,
               sc_now() - t_start);
    acm_domain_destroy(t.d);
    return rc == 0 ? 0 : 1;
}
