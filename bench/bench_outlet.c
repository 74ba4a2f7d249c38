/*
 * libacmlbm -- how much of an acoustic pulse a domain face sends back (issue
 * #32, docs/physics.md "Domain faces"): the figure a non-reflecting outlet is
 * measured by.
 * SPDX-License-Identifier: Apache-2.0
 *
 *   acm-bench-outlet [--backend cpu|cuda] [--length 600] [--width 12] [--amplitude 1e-3]
 *                    [--nu 0.005] [--model bgk|acm] [--absorber 8,16] [--strength 0.5]
 *                    [--emulated 1]
 *
 * A channel of `length` x 2 x 2 cells, periodic in y and z, started with a
 * Gaussian density pulse of the given amplitude and width (its standard
 * deviation, cells) at the middle, moving towards x-max: u = c_s (rho - 1)
 * (a plane wave going one way). Each face rule on the x faces (the outlet of
 * equilibrium cells at density 1; that outlet behind an absorbing layer of each
 * depth in --absorber at --strength, acm_domain_set_face_absorber, reference
 * state at rest; a resting wall; with --emulated 1 also two outlet rules of the
 * literature emulated through the public API: after every step the x-max cell's
 * populations are replaced from its inner neighbour's, copied (zero gradient) or
 * by non-equilibrium extrapolation at density 1, a resting wall behind) lets it
 * hit x-max and sends
 * back what it reflects; when the reflected pulse is back at three quarters of
 * the length, the acoustic energy c_s^2 (rho - 1)^2 / 2 + u^2 / 2 left in the
 * domain (x-max's last 6 widths left out) over that of the same pulse in a
 * periodic domain at the same time (which only viscosity damps) is the share of
 * the energy reflected; its square root the amplitude's. One line per rule.
 * Exit status 0, 1 when a run failed, 2 on a usage error.
 */
#include <math.h>   /* exp, sqrt */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp */

#include <acmlbm/acmlbm.h>

#include "cli.h"

static const char *const prog = "acm-bench-outlet";

typedef struct outlet_args {
    acm_backend backend;
    long length;
    double width, amplitude, nu, strength;
    acm_collision model;
    long absorber[8];
    int nabsorbers;
    long emulated;
} outlet_args;

/* Outlet rules emulated after every step (outlet_rule.emulate). */
enum { EMULATE_NONE, EMULATE_COPY, EMULATE_NEE };

/* A rule on both x faces: a face type, an absorbing layer of `cells` (0: none),
 * and an emulated rule on the x-max cells. */
typedef struct outlet_rule {
    acm_boundary type;
    long cells;
    int emulate;
} outlet_rule;

/* D3Q27 in the library's order (docs/physics.md: rest, faces, edges, corners,
 * opposites adjacent): the velocities c_i. */
static const signed char lattice_c[27][3] = {
    {0, 0, 0},  {1, 0, 0},   {-1, 0, 0},  {0, 1, 0},  {0, -1, 0},  {0, 0, 1},   {0, 0, -1},
    {1, 1, 0},  {-1, -1, 0}, {1, 0, 1},   {-1, 0, -1}, {0, 1, 1},  {0, -1, -1}, {1, -1, 0},
    {-1, 1, 0}, {1, 0, -1},  {-1, 0, 1},  {0, 1, -1}, {0, -1, 1},  {1, 1, 1},   {-1, -1, -1},
    {1, 1, -1}, {-1, -1, 1}, {1, -1, 1},  {-1, 1, -1}, {-1, 1, 1}, {1, -1, -1}};

/* The second-order equilibrium of (rho, u). */
static void equilibrium(double rho, const double u[3], double f[27])
{
    static const double w[4] = {8.0 / 27.0, 2.0 / 27.0, 1.0 / 54.0, 1.0 / 216.0};
    const double uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    for (int i = 0; i < 27; ++i) {
        const signed char *c = lattice_c[i];
        const double cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
        f[i] = w[c[0] * c[0] + c[1] * c[1] + c[2] * c[2]] * rho *
               (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * uu);
    }
}

/* The emulated rule on the x-max cells of the populations f (nx x 2 x 2). */
static void emulate(int rule, long nx, double *f)
{
    for (long row = 0; row < 4; ++row) {
        double *out = f + 27 * (size_t)(nx - 1 + nx * row);
        const double *in = f + 27 * (size_t)(nx - 2 + nx * row);
        if (rule == EMULATE_COPY) {
            memcpy(out, in, 27 * sizeof *in);
            continue;
        }
        double rho = 0.0, j[3] = {0.0, 0.0, 0.0}, e_in[27], e_out[27];
        for (int i = 0; i < 27; ++i) {
            rho += in[i];
            for (int a = 0; a < 3; ++a)
                j[a] += lattice_c[i][a] * in[i];
        }
        const double u[3] = {j[0] / rho, j[1] / rho, j[2] / rho};
        equilibrium(rho, u, e_in);
        equilibrium(1.0, u, e_out);
        for (int i = 0; i < 27; ++i)
            out[i] = e_out[i] + in[i] - e_in[i];
    }
}

/* steps steps of d with the emulated rule after each (populations: buffer f). */
static acm_status step_emulated(acm_domain *d, int rule, long nx, long steps, double *f)
{
    const size_t bytes = 27 * 4 * (size_t)nx * sizeof *f;
    acm_status st = ACM_OK;
    for (long s = 0; st == ACM_OK && s < steps; ++s) {
        st = acm_step(d, 1);
        if (st == ACM_OK)
            st = acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes);
        if (st == ACM_OK) {
            emulate(rule, nx, f);
            st = acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes);
        }
    }
    return st;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: %s [--backend cpu|cuda] [--length 600] [--width 12] [--amplitude 1e-3]\n"
                "       [--nu 0.005] [--model bgk|acm] [--absorber 8,16] [--strength 0.5]\n"
                "       [--emulated 1]\n",
            prog);
}

static int option(const char *name, const char *value, void *ctx)
{
    outlet_args *a = ctx;
    if (strcmp(name, "--backend") == 0)
        return cli_backend(prog, name, value, &a->backend);
    if (strcmp(name, "--length") == 0)
        return cli_long(prog, name, value, 64, 100000, &a->length);
    if (strcmp(name, "--width") == 0)
        return cli_real(prog, name, value, 1.0, 1000.0, &a->width);
    if (strcmp(name, "--amplitude") == 0)
        return cli_real(prog, name, value, 1e-9, 0.1, &a->amplitude);
    if (strcmp(name, "--nu") == 0)
        return cli_real(prog, name, value, 1e-6, 1.0, &a->nu);
    if (strcmp(name, "--emulated") == 0)
        return cli_long(prog, name, value, 0, 1, &a->emulated);
    if (strcmp(name, "--strength") == 0)
        return cli_real(prog, name, value, 1e-6, 1.0, &a->strength);
    if (strcmp(name, "--absorber") == 0)
        return cli_long_list(prog, name, value, 1, 10000, a->absorber, 8, &a->nabsorbers);
    if (strcmp(name, "--model") == 0) {
        if (strcmp(value, "bgk") == 0 || strcmp(value, "acm") == 0) {
            a->model = value[0] == 'b' ? ACM_COLLISION_BGK : ACM_COLLISION_DEFAULT;
            return 0;
        }
        fprintf(stderr, "%s: --model '%s': expected bgk or acm\n", prog, value);
        return -1;
    }
    fprintf(stderr, "%s: unknown option '%s'\n", prog, name);
    return -1;
}

/* The acoustic energy of cells [x0, x1) along x (2 x 2 cells a plane). */
static double energy(const double *rho, const double *u, long nx, long x0, long x1)
{
    double e = 0.0;
    for (long k = 0; k < 4 * nx; ++k) {
        const long x = k % nx;
        if (x < x0 || x >= x1)
            continue;
        const double d = rho[k] - 1.0;
        e += d * d / 6.0 + 0.5 * (u[3 * k] * u[3 * k] + u[3 * k + 1] * u[3 * k + 1] +
                                   u[3 * k + 2] * u[3 * k + 2]);
    }
    return e;
}

/* The pulse stepped `steps` steps with rule r on both x faces (PERIODIC: the
 * reference); the energy of cells [x0, x1) then. */
static int run(const outlet_args *a, outlet_rule r, long steps, long x0, long x1, double *e)
{
    const long nx = a->length, n = 4 * nx;
    acm_domain_options o;
    acm_domain_options_init(&o, ACM_DOMAIN_OPTIONS_VERSION);
    o.nx = (int32_t)nx;
    o.ny = o.nz = 2;
    o.viscosity = a->nu;
    o.backend = a->backend;
    o.precision = ACM_PRECISION_FP64;
    o.collision = a->model;
    acm_domain *d = NULL;
    if (cli_failed(prog, acm_domain_create(&d, &o), "acm_domain_create", NULL))
        return 1;
    double *rho = malloc((size_t)n * sizeof *rho), *u = calloc(3 * (size_t)n, sizeof *u);
    double *f = r.emulate ? malloc(27 * (size_t)n * sizeof *f) : NULL;
    acm_status st = rho != NULL && u != NULL && (f != NULL || !r.emulate) ? ACM_OK
                                                                          : ACM_ERR_NO_MEMORY;
    const double cs = 1.0 / sqrt(3.0), mid = 0.5 * (double)nx;
    for (long k = 0; st == ACM_OK && k < n; ++k) {
        const double s = ((double)(k % nx) - mid) / a->width;
        rho[k] = 1.0 + a->amplitude * exp(-0.5 * s * s);
        u[3 * k] = cs * (rho[k] - 1.0) / rho[k];
    }
    for (int face = ACM_FACE_X_MIN; st == ACM_OK && face <= ACM_FACE_X_MAX; ++face) {
        st = acm_domain_set_face(d, (acm_face)face, r.type, NULL);
        if (st == ACM_OK && r.cells > 0)
            st = acm_domain_set_face_absorber(d, (acm_face)face, (int32_t)r.cells, a->strength,
                                              1.0, NULL);
    }
    if (st == ACM_OK)
        st = acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, u, (size_t)n);
    if (st == ACM_OK)
        st = r.emulate ? step_emulated(d, r.emulate, nx, steps, f) : acm_step(d, steps);
    if (st == ACM_OK)
        st = acm_domain_get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, rho,
                                  (size_t)n * sizeof *rho);
    if (st == ACM_OK)
        st = acm_domain_get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u,
                                  3 * (size_t)n * sizeof *u);
    const int failed = cli_failed(prog, st, "the pulse", acm_domain_last_error(d));
    if (!failed)
        *e = energy(rho, u, nx, x0, x1);
    free(rho);
    free(u);
    free(f);
    acm_domain_destroy(d);
    return failed;
}

int main(int argc, char **argv)
{
    outlet_args a = {ACM_BACKEND_AUTO, 600, 12.0, 1e-3, 0.005, 0.5, ACM_COLLISION_BGK, {8, 16}, 2, 0};
    const int parsed = cli_parse(prog, argc, argv, option, NULL, usage, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    if (a.length < (long)(24.0 * a.width)) {
        fprintf(stderr, "%s: --length %ld: at least 24 widths (%g) keep the pulse clear of the "
                        "faces\n",
                prog, a.length, 24.0 * a.width);
        return 2;
    }
    /* the reflected pulse's centre back at 3/4 of the length: half the length
     * to x-max, a quarter back, at the speed of sound */
    const long steps = (long)(0.75 * (double)a.length * sqrt(3.0));
    const long x1 = a.length - (long)(6.0 * a.width);
    double free_e = 0.0;
    for (int k = 0; k < a.nabsorbers; ++k)
        if (a.absorber[k] > (long)(6.0 * a.width)) {
            fprintf(stderr, "%s: --absorber %ld: the energy is measured up to 6 widths (%ld "
                            "cells) before x-max: a layer must fit in them\n",
                    prog, a.absorber[k], (long)(6.0 * a.width));
            return 2;
        }
    const outlet_rule periodic = {ACM_BOUNDARY_PERIODIC, 0, EMULATE_NONE};
    if (run(&a, periodic, steps, 0, a.length, &free_e) != 0)
        return 1;
    printf("%s: %ld x 2 x 2 cells, pulse amplitude %g, width %g cells, %s, nu %g, %ld steps\n",
           prog, a.length, a.amplitude, a.width, a.model == ACM_COLLISION_BGK ? "BGK" : "ACM",
           a.nu, steps);
    printf("%-34s %14s %14s\n", "x faces", "energy back", "amplitude back");
    outlet_rule rules[12];
    int nrules = 0;
    rules[nrules++] = (outlet_rule){ACM_BOUNDARY_OUTLET, 0, EMULATE_NONE};
    for (int k = 0; k < a.nabsorbers; ++k)
        rules[nrules++] = (outlet_rule){ACM_BOUNDARY_OUTLET, a.absorber[k], EMULATE_NONE};
    rules[nrules++] = (outlet_rule){ACM_BOUNDARY_WALL, 0, EMULATE_NONE};
    if (a.emulated) {
        rules[nrules++] = (outlet_rule){ACM_BOUNDARY_WALL, 0, EMULATE_COPY};
        rules[nrules++] = (outlet_rule){ACM_BOUNDARY_WALL, 0, EMULATE_NEE};
    }
    for (int r = 0; r < nrules; ++r) {
        double e = 0.0;
        if (run(&a, rules[r], steps, a.length / 2, x1, &e) != 0)
            return 1;
        char name[64];
        if (rules[r].emulate)
            snprintf(name, sizeof name, "%s (emulated)",
                     rules[r].emulate == EMULATE_COPY ? "zero gradient" : "NEE, rho 1");
        else if (rules[r].type == ACM_BOUNDARY_WALL)
            snprintf(name, sizeof name, "wall (resting)");
        else if (rules[r].cells == 0)
            snprintf(name, sizeof name, "outlet (equilibrium, rho 1)");
        else
            snprintf(name, sizeof name, "outlet + absorber %ld, %g", rules[r].cells, a.strength);
        printf("%-34s %13.4f%% %13.4f%%\n", name, 100.0 * e / free_e, 100.0 * sqrt(e / free_e));
    }
    printf("(the share of the pulse's energy, and of its amplitude, that comes back from x-max;\n"
           "against the same pulse in a periodic domain, which only viscosity damps)\n");
    return 0;
}
