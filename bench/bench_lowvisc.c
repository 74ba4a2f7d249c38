/*
 * libacmlbm -- the low-viscosity scenes of docs/physics.md ("Very low
 * viscosity next to walls and inlets"): how long a scene survives and
 * whether its energy ever grows; the runs behind that section's tables.
 * SPDX-License-Identifier: Apache-2.0
 *
 *   acm-bench-lowvisc [--scene cavity|channel|jet|tgv|open] [--size N] [--steps S]
 *                     [--every K] [--nu NU] [--speed U] [--backend cpu|cuda]
 *                     [--model acm|acm-li2020|cm|rm|bgk] [--precision fp32|fp64|fp16]
 *                     [--storage populations|moments] (ACM_LAYOUT_STORAGE)
 *                     [--max-rate R] (ACM: the safety net's clamp of the adaptive rates)
 *                     [--rates H,B] (CM: the high-order and the bulk rate)
 *                     [--nu0 A,B,C,D] (ACM: base viscosities of orders 3..6)
 *
 * Scenes (all cubes of N^3 cells, started from f = f^eq of the velocity given):
 *   cavity  six walls, the y-max face a lid sliding with (U, 0, 0), fluid at rest;
 *   channel inlet (U, 0, 0) at x-min, outlet at x-max, walls on y and z, the
 *           fluid started at U (an impulsive start at the walls);
 *   jet     periodic on every axis, a round jet u_x = U (1 + tanh((R - r)/d))/2
 *           of radius R = N/4, d = N/32, with a 1 % wavy perturbation, no force;
 *   tgv     periodic, the 3-D Taylor-Green vortex of physics-spec 11.8 (there:
 *           --size 32 --nu 1e-5 --speed 0.05 --steps 2000);
 *   open    the jet, fed through an inlet of its profile at x-min, leaving through
 *           an outlet behind N/8 absorbing cells (reference state: the inflow's mean
 *           velocity) at x-max, slip walls on y and z.
 * Every K steps a line: step, the kinetic energy and the mechanical energy
 * (kinetic + acoustic, c_s^2/2 sum (rho - <rho>)^2/<rho>) in units of N^3 U^2/2,
 * the largest rise of the mechanical energy over one interval so far, max |u| / U,
 * the safety net's fallbacks so far, relative mass drift. The last line says whether the
 * scene survived S steps or at which step it diverged. Exit status 0 if it
 * survived, 2 if it diverged, 1 on a usage or setup error.
 */
#include <stdio.h>  /* printf, fprintf, sscanf */
#include <stdlib.h> /* malloc, free, strtol, strtod */
#include <string.h> /* strcmp, memset */
#include <time.h>   /* clock_gettime */

#include <acmlbm/acmlbm.h>

#include "lowvisc_scenes.h"

typedef struct lv_args {
    int scene;
    int n;
    long steps, every;
    double nu, speed;
    acm_backend backend;
    acm_collision model;
    acm_precision precision;
    acm_storage storage;
    double max_rate; /* ACM: the safety net's clamp, 0 = default */
    double rates[2]; /* CM: high-order and bulk rate, 0 = default */
    double nu0[4];   /* ACM_LI2018: base viscosities of orders 3..6, 0 = default */
} lv_args;

typedef struct lv_name {
    const char *name;
    int value;
} lv_name;

static const lv_name lv_backends[] = {{"cpu", ACM_BACKEND_CPU}, {"cuda", ACM_BACKEND_CUDA}};
static const lv_name lv_models[] = {
    {"acm", ACM_COLLISION_ACM_LI2018}, {"acm-li2020", ACM_COLLISION_ACM_LI2020},
    {"cm", ACM_COLLISION_CM_MRT},      {"rm", ACM_COLLISION_RM_MRT},
    {"bgk", ACM_COLLISION_BGK}};
static const lv_name lv_precisions[] = {
    {"fp32", ACM_PRECISION_FP32}, {"fp64", ACM_PRECISION_FP64}, {"fp16", ACM_PRECISION_FP16}};
static const lv_name lv_storages[] = {{"populations", ACM_STORAGE_POPULATIONS},
                                      {"moments", ACM_STORAGE_MOMENTS}};

/* The value of `name` in a table of n names; -1 if it is not there. */
static int lv_lookup(const lv_name *t, int n, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(t[i].name, name))
            return t[i].value;
    return -1;
}

/* Exactly `n` comma-separated numbers from v into x; 0 on success. */
static int lv_numbers(const char *v, double *x, int n)
{
    char *end = (char *)v;
    for (int i = 0; i < n; ++i) {
        x[i] = strtod(end, &end);
        if (i + 1 < n && *end++ != ',')
            return 1;
    }
    return *end != '\0';
}

#define LV_COUNT(t) ((int)(sizeof(t) / sizeof((t)[0])))

/* One option and its value into a; 0 on success. */
static int lv_option(const char *k, const char *v, lv_args *a)
{
    double x[4];
    int r = 0;
    if (!strcmp(k, "--scene"))
        r = (a->scene = lv_scene_by_name(v)) < 0;
    else if (!strcmp(k, "--size") || !strcmp(k, "--steps") || !strcmp(k, "--every")) {
        r = lv_numbers(v, x, 1) || !(x[0] >= 1 && x[0] <= 1e12);
        if (!strcmp(k, "--size"))
            a->n = r ? 0 : (int)x[0];
        else if (!strcmp(k, "--steps"))
            a->steps = (long)x[0];
        else
            a->every = (long)x[0];
    } else if (!strcmp(k, "--nu") || !strcmp(k, "--speed") || !strcmp(k, "--max-rate")) {
        r = lv_numbers(v, x, 1) || !(x[0] > 0);
        *(!strcmp(k, "--nu") ? &a->nu : !strcmp(k, "--speed") ? &a->speed : &a->max_rate) = x[0];
    } else if (!strcmp(k, "--nu0"))
        r = lv_numbers(v, a->nu0, 4);
    else if (!strcmp(k, "--rates"))
        r = lv_numbers(v, a->rates, 2);
    else if (!strcmp(k, "--backend"))
        r = (int)(a->backend = (acm_backend)lv_lookup(lv_backends, LV_COUNT(lv_backends), v)) < 0;
    else if (!strcmp(k, "--model"))
        r = (int)(a->model = (acm_collision)lv_lookup(lv_models, LV_COUNT(lv_models), v)) < 0;
    else if (!strcmp(k, "--precision"))
        r = (int)(a->precision =
                      (acm_precision)lv_lookup(lv_precisions, LV_COUNT(lv_precisions), v)) < 0;
    else if (!strcmp(k, "--storage"))
        r = (int)(a->storage = (acm_storage)lv_lookup(lv_storages, LV_COUNT(lv_storages), v)) < 0;
    else
        return fprintf(stderr, "acm-bench-lowvisc: unknown option %s\n", k), 1;
    if (r)
        fprintf(stderr, "acm-bench-lowvisc: bad value '%s' for %s\n", v, k);
    return r;
}

static int lv_parse(int argc, char **argv, lv_args *a)
{
    *a = (lv_args){LV_CAVITY, 64, 1000, 100, 1e-6, 0.1, ACM_BACKEND_AUTO,
                   ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32, ACM_STORAGE_POPULATIONS, 0, {0, 0},
                   {0, 0, 0, 0}};
    if (argc % 2 == 0)
        return fprintf(stderr, "acm-bench-lowvisc: %s needs a value\n", argv[argc - 1]), 1;
    for (int i = 1; i + 1 < argc; i += 2)
        if (lv_option(argv[i], argv[i + 1], a))
            return 1;
    if (a->n < 8)
        return fprintf(stderr, "acm-bench-lowvisc: --size must be at least 8\n"), 1;
    return 0;
}

/* The collision settings that --max-rate, --nu0 (ACM) and --rates (CM) ask for. */
static acm_status lv_collision(acm_domain *d, const lv_args *a)
{
    if (!(a->max_rate > 0) && !(a->rates[0] > 0) && !(a->nu0[0] > 0))
        return ACM_OK;
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    acm_status st = acm_domain_get_collision(d, &c);
    if (a->max_rate > 0)
        c.max_high_order_rate = a->max_rate;
    for (int o = 0; o < 4 && a->nu0[0] > 0; ++o)
        c.li2018_nu0[o] = a->nu0[o];
    if (a->rates[0] > 0) {
        c.high_order_rate = a->rates[0];
        c.bulk_rate = a->rates[1] > 0 ? a->rates[1] : 1.0;
    }
    return st != ACM_OK ? st : acm_domain_set_collision(d, &c);
}

static int lv_stats(acm_domain *d, acm_domain_stats *s)
{
    memset(s, 0, sizeof *s);
    s->version = ACM_DOMAIN_STATS_VERSION;
    return acm_domain_get_stats(d, s) != ACM_OK;
}

static double lv_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    lv_args a;
    if (lv_parse(argc, argv, &a))
        return 1;
    char err[512] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = a.n;
    o.viscosity = a.nu;
    o.backend = a.backend;
    o.precision = a.precision;
    o.collision = a.model;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK ||
        acm_layout_set(l, ACM_LAYOUT_STORAGE, (int64_t)a.storage) != ACM_OK) {
        fprintf(stderr, "out of memory\n");
        acm_layout_destroy(l);
        return 1;
    }
    o.layout = l;
    acm_domain *d = NULL;
    const acm_status made = acm_domain_create(&d, &o);
    acm_layout_destroy(l);
    if (made != ACM_OK || lv_collision(d, &a) != ACM_OK ||
        lv_scene_setup(d, (lv_scene)a.scene, a.n, a.speed) != ACM_OK) {
        fprintf(stderr, "setup failed: %s\n", d ? acm_domain_last_error(d) : err);
        acm_domain_destroy(d);
        return 1;
    }
    const size_t cells = (size_t)a.n * a.n * a.n;
    double *rho = malloc(cells * sizeof *rho);
    acm_domain_stats s;
    if (!rho || lv_stats(d, &s)) {
        fprintf(stderr, "out of memory or no stats\n");
        free(rho);
        acm_domain_destroy(d);
        return 1;
    }
    /* energies in units of a uniform flow at U: N^3 U^2 / 2 */
    const double eu = 0.5 * (double)cells * a.speed * a.speed, m0 = s.mass;
    double prev = (s.kinetic_energy + lv_acoustic_energy(d, rho, cells)) / eu, rise = 0;
    const double t0 = lv_now();
    printf("%s %d^3 nu=%g U=%g steps=%ld; energies in units of N^3 U^2 / 2\n"
           "%10s %10s %10s %10s %9s %12s %10s\n",
           lv_scene_name((lv_scene)a.scene), a.n, a.nu, a.speed, a.steps, "step", "E_kin",
           "E_kin+ac", "max rise", "max|u|/U", "fallbacks", "mass drift");
    int rc = 0;
    for (long done = 0; done < a.steps;) {
        long k = a.steps - done < a.every ? a.steps - done : a.every;
        if (acm_step(d, (int64_t)k) != ACM_OK) {
            printf("diverged: %s\n", acm_domain_last_error(d));
            rc = 2;
            break;
        }
        done += k;
        lv_stats(d, &s);
        double ek = s.kinetic_energy / eu, e = ek + lv_acoustic_energy(d, rho, cells) / eu;
        rise = e - prev > rise ? e - prev : rise;
        prev = e;
        printf("%10ld %10.6f %10.6f %10.3e %9.3f %12lld %10.2e\n", done, ek, e, rise,
               s.max_speed / a.speed, (long long)s.fallback_cells_total, s.mass / m0 - 1);
        fflush(stdout);
    }
    free(rho);
    if (rc == 0)
        printf("survived %ld steps in %.1f s; largest rise of E_kin+ac over %ld steps: %.3e\n",
               a.steps, lv_now() - t0, a.every, rise);
    acm_domain_destroy(d);
    return rc;
}
