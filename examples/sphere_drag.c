/*
 * libacmlbm example -- drag of a sphere in uniform flow, against the literature.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A sphere of diameter D (an icosphere mesh, sampled by the library) is held
 * fixed in a box of L D x S D x S D cells, X D downstream of a velocity inlet
 * (U, 0, 0) on the x-min face; the x-max face is an outlet and the four sides
 * are periodic; --absorber N puts N absorbing cells (reference state the inflow)
 * in front of the inlet and the outlet, so that sound leaves the box instead of
 * ringing in it. Re = U D / nu. Every D/U steps (one convective time) the
 * program prints the drag coefficient C_D = F_x / (rho U^2 pi D^2 / 8) of the
 * force the fluid exerts on the sphere (averaged over the box's acoustic
 * period: see drag_mean below), the lift coefficients C_y and C_z, the
 * swing of the instantaneous C_D over that period (max - min over the mean: the
 * ringing), the relative change of C_D since the last print and the throughput in MLUPS
 * (million cell updates per second). It stops when C_D changes by less than
 * --tol over one convective time (after at least 10 of them and one full
 * acoustic period), or after --steps.
 * Then it compares C_D with Johnson & Patel (1999) (or the Clift-Grace-Weber
 * correlation) and optionally writes PREFIX.png (|u| on the mid-plane z =
 * (nz - 1) / 2, sphere outline in red) and PREFIX.vti.
 *
 * Units are lattice units: cells, time steps, fluid density 1.
 */
#include <math.h>   /* fabs, fmin, fmax, lround, log, exp, pow, sqrt, ceil, isfinite */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */

#include <acmlbm/acmlbm.h>

#include "shapes.h"
#include "solid_common.h"

static const char *const prog = "sphere_drag";

typedef struct drag_args {
    int64_t diameter; /* D, cells; 0 = 16 on a GPU, 8 on the CPU */
    double re, speed, side, length, upstream, tol;
    int64_t steps;    /* most steps; 0 = 60 D / U */
    int64_t absorber; /* absorbing cells in front of the inlet and the outlet; 0 = none */
    int backend, precision, model;
    const char *out; /* NULL: no files */
} drag_args;

static int parse(int argc, char **argv, drag_args *a)
{
    const drag_args defaults = {0,    100.0, 0.05, 8.0, 20.0, 6.0, 2e-4, 0, 0,
                                ACM_BACKEND_AUTO, ACM_PRECISION_FP32, ACM_COLLISION_ACM_LI2018, NULL};
    *a = defaults;
    const sc_option opts[] = {
        {"--diameter", "D", SC_INT, &a->diameter, 4, 1024, 0, NULL, 0,
         "sphere diameter in cells (default 16 on a GPU, 8 on the CPU)"},
        {"--re", "RE", SC_REAL, &a->re, 0, 1e5, 1, NULL, 0, "Reynolds number U D / nu (default 100)"},
        {"--speed", "U", SC_REAL, &a->speed, 0, 0.15, 1, NULL, 0,
         "inflow speed, cells per step (default 0.05)"},
        {"--side", "S", SC_REAL, &a->side, 1.5, 100, 0, NULL, 0,
         "lateral box size in diameters (default 8)"},
        {"--length", "L", SC_REAL, &a->length, 2, 1000, 0, NULL, 0,
         "box length in diameters (default 20)"},
        {"--upstream", "X", SC_REAL, &a->upstream, 1, 1000, 0, NULL, 0,
         "inlet to sphere centre, diameters (default 6)"},
        {"--steps", "MAX", SC_INT, &a->steps, 1, 1e12, 0, NULL, 0, "most steps (default 60 D/U)"},
        {"--absorber", "N", SC_INT, &a->absorber, 0, 100000, 0, NULL, 0,
         "absorbing cells in front of the inlet and the outlet, strength 0.5 (default 0)"},
        {"--tol", "T", SC_REAL, &a->tol, 0, 1, 1, NULL, 0,
         "stop when C_D changes by less than T (relative) over D/U steps (default 2e-4)"},
        SC_RUN_OPTIONS(a, "acm"),
        {"--out", "PREFIX", SC_TEXT, &a->out, 0, 0, 0, NULL, 0,
         "write PREFIX.png and PREFIX.vti at the end (default: no files)"},
    };
    int rc = sc_parse_args(prog, "[options]", argc, argv, opts, SC_COUNT_OF(opts), NULL);
    if (rc != 0)
        return rc;
    if (a->diameter == 0)
        a->diameter = sc_runs_on_gpu((acm_backend)a->backend) ? 16 : 8;
    if (a->steps == 0)
        a->steps = (int64_t)ceil(60.0 * (double)a->diameter / a->speed);
    if (a->upstream + 1.0 > a->length) {
        fprintf(stderr, "%s: --upstream %g leaves less than one diameter behind the sphere in "
                        "--length %g\n", prog, a->upstream, a->length);
        return 2;
    }
    return 0;
}

/* ---- reference values ---------------------------------------------------------------- */

/* Johnson & Patel, J. Fluid Mech. 378 (1999) 19, as digitised in the project. */
static const double jp1999[][2] = {{25, 2.3656},  {50, 1.5806},  {100, 1.1022},
                                   {150, 0.9086}, {200, 0.7903}, {300, 0.656}};

/* Reference C_D at Re (log-log interpolation of the table; outside it the
 * Clift-Grace-Weber correlation where valid); 0 if there is none. */
static double reference_cd(double re, const char **source)
{
    const size_t n = SC_COUNT_OF(jp1999);
    if (re >= jp1999[0][0] && re <= jp1999[n - 1][0]) {
        size_t k = 0;
        while (k + 2 < n && re > jp1999[k + 1][0])
            ++k;
        const double t = log(re / jp1999[k][0]) / log(jp1999[k + 1][0] / jp1999[k][0]);
        *source = "Johnson & Patel 1999, log-log interpolation";
        return exp((1.0 - t) * log(jp1999[k][1]) + t * log(jp1999[k + 1][1]));
    }
    if (re > 20.0 && re <= 260.0) {
        *source = "Clift-Grace-Weber correlation 24/Re (1 + 0.1935 Re^0.6305)";
        return 24.0 / re * (1.0 + 0.1935 * pow(re, 0.6305));
    }
    *source = "no reference for this Re";
    return 0.0;
}

/* ---- setup ------------------------------------------------------------------------------ */

typedef struct drag_run {
    int32_t n[3];
    double D, centre[3];
    acm_domain *d;
    acm_solid *s;
} drag_run;

static int create_domain(const drag_args *a, drag_run *r)
{
    r->D = (double)a->diameter;
    r->n[0] = (int32_t)lround(a->length * r->D);
    r->n[1] = r->n[2] = (int32_t)lround(a->side * r->D);
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = r->n[0];
    o.ny = r->n[1];
    o.nz = r->n[2];
    o.viscosity = a->speed * r->D / a->re;
    o.collision = (acm_collision)a->model;
    o.backend = (acm_backend)a->backend;
    o.precision = (acm_precision)a->precision;
    o.initial_velocity[0] = a->speed;
    if ((r->d = sc_domain_create(prog, &o)) == NULL)
        return -1;
    const double inflow[3] = {a->speed, 0.0, 0.0};
    acm_status st = acm_domain_set_face(r->d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, inflow);
    if (st == ACM_OK)
        st = acm_domain_set_face(r->d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL);
    for (int f = ACM_FACE_X_MIN; st == ACM_OK && a->absorber > 0 && f <= ACM_FACE_X_MAX; ++f)
        st = acm_domain_set_face_absorber(r->d, (acm_face)f, (int32_t)a->absorber, 0.5, 1.0,
                                          inflow);
    return sc_failed(prog, st, "the faces", acm_domain_last_error(r->d)) ? -1 : 0;
}

/* The icosphere of radius D/2 (edges of at most half a cell), sampled by the library. */
static int create_sphere(const drag_args *a, drag_run *r)
{
    shapes_mesh sm;
    const unsigned sub = shapes_sphere_subdivisions(0.5 * r->D, 0.5);
    if (shapes_sphere(&sm, sub, 0.5 * r->D) != 0) {
        fprintf(stderr, "%s: cannot build an icosphere of %u subdivisions\n", prog, sub);
        return -1;
    }
    char err[512] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_mesh *mesh = NULL;
    acm_status st = acm_mesh_create(&mesh, sm.v, sm.nv, sm.t, sm.nt, &mo);
    const size_t triangles = sm.nt;
    shapes_free(&sm);
    if (sc_failed(prog, st, "acm_mesh_create", err))
        return -1;
    r->centre[0] = a->upstream * r->D;
    r->centre[1] = 0.5 * (r->n[1] - 1);
    r->centre[2] = 0.5 * (r->n[2] - 1);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT; /* static, 16 samples per cell^2 */
    so.mesh = mesh;
    memcpy(so.position, r->centre, sizeof so.position);
    acm_solid_info si;
    const int added = sc_add_solid(prog, r->d, &so, &r->s, &si);
    acm_mesh_destroy(mesh);
    if (added != 0)
        return -1;
    printf("sphere: icosphere of %zu triangles, D = %g cells at (%g, %g, %g); %llu surface "
           "samples, %.2f apart at least, sampled area %.1f cells^2 (4 pi (D/2)^2 = %.1f)\n",
           triangles, r->D, r->centre[0], r->centre[1], r->centre[2],
           (unsigned long long)si.sample_count, si.sample_spacing, si.area, M_PI * r->D * r->D);
    return 0;
}

/* ---- stepping ------------------------------------------------------------------------------ */

/* The inlet (fixed velocity) and the outlet (fixed density) reflect sound, so
 * the box rings like a pipe closed at one end: the start-up pressure waves
 * bounce between them at the periods 4 nx / ((2k + 1) c_s), c_s = 1/sqrt(3),
 * and decay slowly (the ACM modes have a small bulk viscosity, docs/physics.md).
 * They swing the instantaneous drag by tens of per cent; its mean over one
 * fundamental period 4 nx / c_s cancels them all. So the force is sampled
 * every few steps and C_D is the mean of the samples of the last period. */
typedef struct drag_mean {
    int64_t stride;   /* steps between samples */
    size_t size, len; /* samples per period, samples held */
    size_t next;      /* ring position */
    double *F;        /* 3 per sample */
} drag_mean;

static int mean_init(drag_mean *m, int64_t window, int32_t nx)
{
    m->stride = window / 16 > 1 ? window / 16 : 1;
    while (window % m->stride != 0) /* whole samples in each print interval */
        --m->stride;
    m->size = (size_t)ceil(4.0 * nx * sqrt(3.0) / (double)m->stride);
    m->len = m->next = 0;
    if ((m->F = calloc(3 * m->size, sizeof *m->F)) == NULL) {
        fprintf(stderr, "%s: out of memory for %zu force samples\n", prog, m->size);
        return -1;
    }
    return 0;
}

static int mean_add(drag_mean *m, const drag_run *r)
{
    acm_status st = acm_solid_get_force(r->s, m->F + 3 * m->next, NULL);
    if (sc_failed(prog, st, "acm_solid_get_force", acm_solid_last_error(r->s)))
        return -1;
    m->next = (m->next + 1) % m->size;
    m->len += m->len < m->size;
    return 0;
}

/* Force coefficients F / (rho U^2 pi D^2 / 8) of the mean force, and the
 * swing of the drag's samples (max - min) over its mean. */
static void mean_coefficients(const drag_mean *m, const drag_args *a, const drag_run *r,
                              double c[3], double *swing)
{
    const double q = 0.5 * a->speed * a->speed * 0.25 * M_PI * r->D * r->D;
    for (int k = 0; k < 3; ++k) {
        double sum = 0.0;
        for (size_t l = 0; l < m->len; ++l)
            sum += m->F[3 * l + (size_t)k];
        c[k] = sum / (double)m->len / q;
    }
    double lo = m->F[0], hi = m->F[0];
    for (size_t l = 1; l < m->len; ++l) {
        lo = fmin(lo, m->F[3 * l]);
        hi = fmax(hi, m->F[3 * l]);
    }
    *swing = (hi - lo) / q / fabs(c[0]);
}

/* Step one print interval of n steps, sampling the force. */
static int step_interval(const drag_run *r, drag_mean *m, int64_t n, double *seconds)
{
    for (int64_t done = 0; done < n; done += m->stride) {
        const int64_t k = n - done < m->stride ? n - done : m->stride;
        if (sc_step(prog, r->d, k, seconds) != 0 || mean_add(m, r) != 0)
            return -1;
    }
    return 0;
}

/* Step in convective times D/U until C_D settles; *cd receives the last value. */
static int run(const drag_args *a, const drag_run *r, double *cd, double *seconds)
{
    const int64_t window = lround(r->D / a->speed) > 0 ? lround(r->D / a->speed) : 1;
    const double cells = (double)r->n[0] * r->n[1] * r->n[2];
    double last = 0.0, c[3] = {0.0, 0.0, 0.0};
    int converged = 0;
    drag_mean m;
    if (mean_init(&m, window, r->n[0]) != 0)
        return -1;
    printf("C_D, C_y, C_z: means over the last %zu steps (the acoustic period 4 nx / c_s of the "
           "box), sampled every %lld steps\n", m.size * (size_t)m.stride, (long long)m.stride);
    printf("%9s %7s %9s %9s %9s %8s %10s %7s\n", "step", "t U/D", "C_D", "C_y", "C_z", "swing",
           "change", "MLUPS");
    *seconds = 0.0;
    int rc = 0;
    for (int64_t done = 0; done < a->steps && !converged && rc == 0;) {
        const int64_t n = a->steps - done < window ? a->steps - done : window;
        double dt = 0.0;
        if ((rc = step_interval(r, &m, n, &dt)) != 0)
            break;
        double swing = 0.0;
        mean_coefficients(&m, a, r, c, &swing);
        if (!isfinite(c[0])) {
            fprintf(stderr, "%s: the drag is not finite at step %lld\n", prog, (long long)done);
            rc = -1;
            break;
        }
        *seconds += dt;
        done += n;
        const double change = last != 0.0 ? fabs(c[0] - last) / fabs(c[0]) : 1.0;
        printf("%9lld %7.1f %9.5f %9.5f %9.5f %7.2f%% %10.2e %7.1f\n", (long long)done,
               (double)done * a->speed / r->D, c[0], c[1], c[2], 100.0 * swing, change,
               cells * (double)n / dt / 1e6);
        fflush(stdout);
        converged = done >= 10 * window && m.len == m.size && change < a->tol;
        last = c[0];
    }
    free(m.F);
    if (rc == 0 && !converged)
        printf("not converged to %g within %lld steps: the value below is the last one\n",
               a->tol, (long long)a->steps);
    *cd = c[0];
    return rc;
}

static void report(const drag_args *a, const drag_run *r, double cd)
{
    const char *source = NULL;
    const double ref = reference_cd(a->re, &source);
    const double blockage = 0.25 * M_PI * r->D * r->D / ((double)r->n[1] * r->n[2]);
    printf("\nC_D = %.4f at Re = %g (D = %g cells)\n", cd, a->re, r->D);
    if (ref > 0.0)
        printf("reference C_D = %.4f (%s): error %+.2f %%\n", ref, source,
               100.0 * (cd / ref - 1.0));
    else
        printf("%s (Johnson & Patel cover 25 to 300, Clift-Grace-Weber 20 to 260)\n", source);
    printf("blockage ratio (pi D^2/4) / (S D)^2 = %.2f %%\n", 100.0 * blockage);
    printf("note: the periodic sides make this an array of spheres %g D apart, whose images add "
           "drag\n      (+8 %% at Re = 100 with S = 8 against S = 12, docs/physics.md); it falls "
           "as the sides grow: try a larger --side\n", a->side);
    if (r->D < 20.0)
        printf("note: D = %g cells is coarse; the resolution study of docs/physics.md reaches 3 %% "
               "at D = 16 (Re = 25) and D = 24 (Re = 100)\n", r->D);
}

static int write_outputs(const drag_args *a, const drag_run *r)
{
    char png[4096], vti[4096];
    sc_fields f;
    if (sc_path(prog, png, sizeof png, a->out, ".png") != 0 ||
        sc_path(prog, vti, sizeof vti, a->out, ".vti") != 0 ||
        sc_fields_read(prog, r->d, &r->s, 1, &f) != 0)
        return -1;
    int rc = sc_write_slice_png(prog, png, &f, r->centre[2], 1.4 * a->speed);
    if (rc == 0)
        printf("wrote %s (|u| on the plane z = %g, 0 to 1.4 U on viridis, outline red)\n", png,
               r->centre[2]);
    if (rc == 0 && (rc = sc_write_vti(prog, vti, &f)) == 0)
        printf("wrote %s (velocity, density, occupancy; point (x, y, z) = cell (x, y, z))\n", vti);
    sc_fields_free(&f);
    return rc;
}

int main(int argc, char **argv)
{
    drag_args a;
    int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    drag_run r;
    memset(&r, 0, sizeof r);
    int rc = create_domain(&a, &r);
    if (rc == 0) {
        printf("flow past a sphere: Re = %g, U = %g cells/step (Mach %.3f), D = %lld cells, box "
               "%g x %g x %g D, sphere %g D from the inlet, %lld absorbing cells at each end\n",
               a.re, a.speed, a.speed * sqrt(3.0), (long long)a.diameter, a.length, a.side,
               a.side, a.upstream, (long long)a.absorber);
        rc = sc_print_domain(prog, r.d);
    }
    if (rc == 0)
        rc = create_sphere(&a, &r);
    double cd = 0.0, seconds = 0.0;
    if (rc == 0) {
        printf("up to %lld steps (%.0f D/U); printing every D/U = %.0f steps\n",
               (long long)a.steps, (double)a.steps * a.speed / r.D, r.D / a.speed);
        rc = run(&a, &r, &cd, &seconds);
    }
    if (rc == 0) {
        printf("run time %.1f s\n", seconds);
        report(&a, &r, cd);
        if (a.out != NULL)
            rc = write_outputs(&a, &r);
    }
    acm_domain_destroy(r.d);
    return rc == 0 ? 0 : 1;
}
