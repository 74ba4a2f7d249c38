/*
 * libacmlbm example -- laminar flow through a square duct fed with its
 * developed profile (acm_domain_set_face_values).
 * SPDX-License-Identifier: Apache-2.0
 *
 *   duct [--side H] [--length L] [--re RE] [--speed U] [--steps S] [--uniform] [--out PREFIX]
 *
 * A duct of H x H cells (half-way walls on the four y and z faces) and L H
 * cells long along x. The inlet at x = 0 takes, cell by cell, the developed
 * laminar profile of mean velocity U: the series solution of the duct's
 * Poisson problem, summed here for the cells' centres. The outlet at
 * x = nx - 1 holds density 1. Re = U H / nu. The duct starts with the uniform
 * velocity U. Every S / 8 steps the program prints, at a quarter, half and
 * three quarters of the length, the relative L2 difference of u_x from the
 * profile, and the pressure gradient -c_s^2 d rho / dx along the axis over
 * the series solution's G. --uniform feeds the uniform U instead: the profile
 * then develops along the duct. PREFIX.png (|u| on the plane z through the
 * axis, 0 to 2.2 U on viridis) and PREFIX.vti at the end.
 */
#include <math.h>   /* cosh, cos, sqrt, ceil, M_PI */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* malloc, free */

#include <acmlbm/acmlbm.h>

#include "solid_common.h"

static const char *const prog = "duct";

typedef struct duct_args {
    int64_t side, steps; /* steps 0: H^2 / nu */
    double length, re, speed;
    int64_t uniform;
    int backend, precision, model;
    const char *out;
} duct_args;

static int parse(int argc, char **argv, duct_args *a)
{
    const duct_args defaults = {16, 0, 8.0, 20.0, 0.02, 0, ACM_BACKEND_AUTO, ACM_PRECISION_FP32,
                                ACM_COLLISION_ACM_LI2018, "duct"};
    *a = defaults;
    const sc_option opts[] = {
        {"--side", "H", SC_INT, &a->side, 4, 1024, 0, NULL, 0, "cells across the duct (default 16)"},
        {"--length", "L", SC_REAL, &a->length, 2, 1000, 0, NULL, 0,
         "duct length in sides (default 8)"},
        {"--re", "RE", SC_REAL, &a->re, 0, 1e5, 1, NULL, 0, "Reynolds number U H / nu (default 20)"},
        {"--speed", "U", SC_REAL, &a->speed, 0, 0.15, 1, NULL, 0,
         "mean speed, cells per step (default 0.02)"},
        {"--steps", "S", SC_INT, &a->steps, 8, 1e12, 0, NULL, 0, "time steps (default H^2 / nu)"},
        {"--uniform", "0|1", SC_INT, &a->uniform, 0, 1, 0, NULL, 0,
         "1: feed the uniform U instead of the profile (default 0)"},
        SC_RUN_OPTIONS(a, "acm"),
        {"--out", "PREFIX", SC_TEXT, &a->out, 0, 0, 0, NULL, 0,
         "write PREFIX.png and PREFIX.vti (default duct)"},
    };
    int rc = sc_parse_args(prog, "[options]", argc, argv, opts, SC_COUNT_OF(opts), NULL);
    if (rc != 0)
        return rc;
    const double nu = a->speed * (double)a->side / a->re;
    if (a->steps == 0)
        a->steps = (int64_t)ceil((double)(a->side * a->side) / nu);
    return 0;
}

/* ---- the developed profile -------------------------------------------------------------- */

/* u_x of a square duct of half-width h (walls at -h and h on y and z) driven by
 * the pressure gradient G at viscosity mu: the series of the Poisson problem
 * mu (u_yy + u_zz) = -G, odd n up to the point where the terms vanish. */
static double series(double y, double z, double h, double G, double mu)
{
    double u = 0.0;
    for (int n = 1; n < 200; n += 2) {
        const double k = n * M_PI / (2.0 * h);
        const double sign = ((n - 1) / 2) % 2 == 0 ? 1.0 : -1.0;
        u += sign / ((double)n * n * n) * (1.0 - cosh(k * z) / cosh(k * h)) * cos(k * y);
    }
    return 16.0 * h * h * G / (mu * M_PI * M_PI * M_PI) * u;
}

/* The profile at the H x H cell centres (y fastest) with mean U, and the
 * pressure gradient G that drives it at viscosity mu. */
static void profile(int32_t H, double U, double mu, double *u, double *G)
{
    const double h = 0.5 * (double)H, mid = 0.5 * (double)(H - 1);
    double mean = 0.0;
    for (int32_t z = 0; z < H; ++z)
        for (int32_t y = 0; y < H; ++y) {
            u[y + H * z] = series(y - mid, z - mid, h, 1.0, mu);
            mean += u[y + H * z];
        }
    mean /= (double)H * H;
    for (int32_t k = 0; k < H * H; ++k)
        u[k] *= U / mean;
    *G = U / mean;
}

/* ---- the run --------------------------------------------------------------------------- */

typedef struct duct_run {
    int32_t n[3];
    double nu, G, vmax; /* vmax: the picture's top, 2.2 U */
    double *shape;      /* the inlet's u_x, H x H */
    acm_domain *d;
} duct_run;

static int create_duct(const duct_args *a, duct_run *r)
{
    const int32_t H = (int32_t)a->side;
    r->n[0] = (int32_t)ceil(a->length * (double)H);
    r->n[1] = r->n[2] = H;
    r->nu = a->speed * (double)H / a->re;
    r->vmax = 2.2 * a->speed;
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = r->n[0];
    o.ny = o.nz = H;
    o.viscosity = r->nu;
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
    for (int f = ACM_FACE_Y_MIN; st == ACM_OK && f <= ACM_FACE_Z_MAX; ++f)
        st = acm_domain_set_face(r->d, (acm_face)f, ACM_BOUNDARY_WALL, NULL);
    if (sc_failed(prog, st, "the faces", acm_domain_last_error(r->d)))
        return -1;
    double *values = malloc(3 * (size_t)H * (size_t)H * sizeof *values);
    r->shape = malloc((size_t)H * (size_t)H * sizeof *r->shape);
    if (values == NULL || r->shape == NULL) {
        free(values);
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    profile(H, a->speed, r->nu, r->shape, &r->G);
    for (int32_t k = 0; k < H * H; ++k) { /* an x face's cells: y fastest, as the profile */
        values[3 * k] = r->shape[k];
        values[3 * k + 1] = values[3 * k + 2] = 0.0;
    }
    st = a->uniform ? ACM_OK
                    : acm_domain_set_face_values(r->d, ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64, values,
                                                 3 * (size_t)H * (size_t)H);
    free(values);
    return sc_failed(prog, st, "acm_domain_set_face_values", acm_domain_last_error(r->d)) ? -1 : 0;
}

/* The relative L2 difference of u_x from the profile at plane x. */
static double station_error(const duct_run *r, const sc_fields *f, int32_t x)
{
    double num = 0.0, den = 0.0;
    for (int32_t z = 0; z < r->n[2]; ++z)
        for (int32_t y = 0; y < r->n[1]; ++y) {
            const size_t k = (size_t)x + (size_t)r->n[0] * ((size_t)y + (size_t)r->n[1] * z);
            const double e = (double)f->velocity[3 * k] - r->shape[y + r->n[1] * z];
            num += e * e;
            den += r->shape[y + r->n[1] * z] * r->shape[y + r->n[1] * z];
        }
    return sqrt(num / den);
}

/* The pressure gradient -c_s^2 d rho / dx on the axis between a quarter and
 * three quarters of the length (the axis's four nearest cells averaged). */
static double gradient(const duct_run *r, const sc_fields *f)
{
    const int32_t x0 = r->n[0] / 4, x1 = 3 * r->n[0] / 4, a = (r->n[1] - 1) / 2, b = r->n[1] / 2;
    double rho[2] = {0.0, 0.0};
    for (int s = 0; s < 2; ++s)
        for (int32_t z = a; z <= b; ++z)
            for (int32_t y = a; y <= b; ++y)
                rho[s] += f->density[(size_t)(s ? x1 : x0) +
                                     (size_t)r->n[0] * ((size_t)y + (size_t)r->n[1] * z)];
    const double cells = (double)(b - a + 1) * (b - a + 1);
    return -(rho[1] - rho[0]) / cells / 3.0 / (double)(x1 - x0);
}

static int report(const duct_run *r, int64_t step, double seconds, int last, const char *out)
{
    sc_fields f;
    if (sc_fields_read(prog, r->d, NULL, 0, &f) != 0)
        return -1;
    const double cells = (double)r->n[0] * r->n[1] * r->n[2];
    printf("%9lld %10.2e %10.2e %10.2e %9.4f %8.1f\n", (long long)step,
           station_error(r, &f, r->n[0] / 4), station_error(r, &f, r->n[0] / 2),
           station_error(r, &f, 3 * r->n[0] / 4), gradient(r, &f) / r->G,
           seconds > 0.0 ? cells * (double)step / seconds / 1e6 : 0.0);
    int rc = 0;
    if (last) {
        char png[4096], vti[4096];
        rc = sc_path(prog, png, sizeof png, out, ".png") != 0 ||
                     sc_path(prog, vti, sizeof vti, out, ".vti") != 0
                 ? -1
                 : 0;
        if (rc == 0)
            rc = sc_write_slice_png(prog, png, &f, 0.5 * (r->n[2] - 1), r->vmax);
        if (rc == 0 && (rc = sc_write_vti(prog, vti, &f)) == 0)
            printf("wrote %s (|u| on the plane z through the axis, 0 to 2.2 U on viridis) and %s\n",
                   png, vti);
    }
    sc_fields_free(&f);
    return rc;
}

int main(int argc, char **argv)
{
    duct_args a;
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    duct_run r = {{0, 0, 0}, 0.0, 0.0, 0.0, NULL, NULL};
    int rc = create_duct(&a, &r);
    if (rc == 0) {
        printf("square duct of %lld x %lld cells, %d long: Re = U H / nu = %g, U = %g (mean), "
               "nu = %g; inlet: %s\n",
               (long long)a.side, (long long)a.side, (int)r.n[0], a.re, a.speed, r.nu,
               a.uniform ? "uniform U" : "the developed profile, cell by cell");
        printf("series solution: peak %.4f U, pressure gradient G = %.4e\n",
               r.shape[(a.side / 2) * (a.side + 1)] / a.speed, r.G);
        rc = sc_print_domain(prog, r.d);
    }
    if (rc == 0)
        printf("%9s %10s %10s %10s %9s %8s\n", "step", "L2 @ L/4", "L2 @ L/2", "L2 @ 3L/4",
               "grad / G", "MLUPS");
    double seconds = 0.0;
    const int64_t every = a.steps / 8;
    for (int64_t done = 0; rc == 0 && done < a.steps;) {
        const int64_t n = a.steps - done < every ? a.steps - done : every;
        if ((rc = sc_step(prog, r.d, n, &seconds)) != 0)
            break;
        done += n;
        rc = report(&r, done, seconds, done == a.steps, a.out);
    }
    free(r.shape);
    acm_domain_destroy(r.d);
    return rc == 0 ? 0 : 1;
}
