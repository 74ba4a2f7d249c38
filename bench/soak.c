/*
 * libacmlbm soak test -- runs a small scene for a long time and checks that
 * nothing grows or drifts: the fluid's mass, the process's resident memory,
 * its open file descriptors and threads, and (CUDA) the device memory in use.
 *
 * The scene: a periodic box driven by a small body force along x, with a
 * torus at its centre spinning about z with its own axis tilted 30 degrees
 * from z (PRESCRIBED motion: it wobbles, so its surface samples sweep the
 * grid and are re-sorted now and then), and with --smoke a smoke emitted
 * from the torus's surface whose particles expire, so that their count
 * settles where emission and expiry balance. Every --chunk steps (one
 * acm_step call) the program measures everything; it prints a line per
 * chunk, or every few seconds when chunks are short, and a summary at the
 * end, whose last line is machine-readable:
 *
 *   soak: steps=... ms_per_step=... mass_drift=... rss_growth_kib=... fds=... threads=...
 *         result=PASS
 *
 * Exit status 1 (result=FAIL, with the reasons) when the state diverged, the
 * mass drifted more than --mass-tol, or, between the end of the warm-up (the
 * first 10 % of the steps) and the end, RSS grew more than --rss-tol MiB or
 * the open fds, threads or device memory in use changed at any check, and
 * when the scene cannot be made (the message says why); 2 for a usage error,
 * 0 for a pass.
 *
 *   acm-soak [--size N | --grid X,Y,Z] [--backend auto|cpu|cuda] [--precision fp32|fp64|fp16]
 *            [--steps N] [--chunk N] [--smoke] [--mass-tol X] [--rss-tol MIB] [--force G]
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>   /* opendir, readdir, closedir */
#include <errno.h>    /* errno */
#include <math.h>     /* fabs, ceil, cos, sin, isfinite */
#include <stdio.h>    /* printf, fprintf, fopen, fscanf, fgets */
#include <stdlib.h>   /* malloc, free, strtoll, strtod */
#include <string.h>   /* strcmp, strncmp, memset */
#include <time.h>     /* clock_gettime, time, strftime */
#include <unistd.h>   /* sysconf */

#include <acmlbm/acmlbm.h>
#if ACM_HAVE_CUDA
#include <cuda_runtime.h> /* cudaMemGetInfo */
#endif

#include "cli.h"    /* cli_long, cli_real, cli_dims, cli_backend */
#include "shapes.h" /* shapes_torus */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const prog = "acm-soak";

/* AddressSanitizer keeps freed blocks in a quarantine (256 MiB by default)
 * rather than reusing them, so that every block the library allocates and
 * frees inside a step would show as RSS growth. A 1 MiB quarantine keeps
 * the RSS check meaningful under ASan and still catches a use right after a
 * free; ASAN_OPTIONS, where it sets the size, still wins. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#ifdef SOAK_ASAN
const char *__asan_default_options(void); /* read by the ASan runtime at start-up */
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=1";
}
#endif

/* Scene constants, in lattice units. The defaults keep the flow well inside
 * the solver's stable range (max |u| about 0.05, Re about 20) so that a
 * failure means a leak or a drift, not physics. */
#define VISCOSITY 0.02     /* tau = 0.56 */
#define TIP_SPEED 0.05     /* speed of the torus's outermost points */
#define TILT_DEG 30.0      /* torus axis against the spin axis z */
#define SMOKE_CELLS_PER_EMISSION 2048.0 /* cells per particle emitted a step: 2 a step in 16^3 */
#define SMOKE_LIFETIME 500 /* steps: about cells / 4 particles once settled */
#define WARMUP_FRACTION 0.1 /* RSS, fds, threads and device memory are compared from here */
#define PRINT_SECONDS 5.0   /* shortest interval between two progress lines */

typedef struct soak_args {
    int32_t n[3];
    acm_backend backend;
    acm_precision precision;
    long steps;
    long chunk; /* 0: 10000, or steps / 20 when that is smaller */
    int smoke;
    double mass_tol; /* < 0: the default of the precision (default_mass_tol) */
    double rss_tol_mib;
    double force; /* body force density along x */
    const char *save;   /* --save: a checkpoint at the end, or NULL */
    const char *resume; /* --resume: the scene from a checkpoint instead, or NULL */
    double mass0;       /* --mass0: the mass drifts are measured from (< 0: this run's start) */
} soak_args;

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: %s [options]\n"
            "  --size N                  cubic grid N^3, N in [12, 1024] (default 24)\n"
            "  --grid X,Y,Z              any box, each in [12, 1024]\n"
            "  --backend auto|cpu|cuda   (default auto: the GPU if there is one)\n"
            "  --precision fp32|fp64|fp16  population storage (default fp32; fp16: CUDA only)\n"
            "  --steps N                 time steps (default 1000000)\n"
            "  --chunk N                 steps per acm_step call between checks (default "
            "10000, or steps/20 when smaller)\n"
            "  --smoke                   add a smoke emitted from the torus (recycled particles)\n"
            "  --mass-tol X              largest relative mass drift (default 1e-12 fp64, "
            "1e-6 fp32, 1e-3 fp16)\n"
            "  --rss-tol MIB             largest RSS growth after the warm-up (default 8)\n"
            "  --force G                 body force density along x (default 2e-6)\n"
            "  --save PATH               write a checkpoint at the end (acm_domain_save)\n"
            "  --resume PATH             go on from such a checkpoint instead of a new scene\n"
            "                            (grid, precision and smoke come from it)\n"
            "  --mass0 X                 measure the mass drift from X (a resumed run: the mass\n"
            "                            the first run started with, its summary's 'mass0=')\n"
            "  --help                    this text\n"
            "Exit status: 0 pass, 1 fail (divergence, drift, growth) or no scene, 2 usage error.\n",
            prog);
}

static int parse_precision(const char *text, acm_precision *out)
{
    static const char *const names[] = {"fp32", "fp64", "fp16"};
    static const acm_precision values[] = {ACM_PRECISION_FP32, ACM_PRECISION_FP64,
                                           ACM_PRECISION_FP16};
    for (int k = 0; k < 3; ++k)
        if (strcmp(text, names[k]) == 0) {
            *out = values[k];
            return 0;
        }
    fprintf(stderr, "%s: --precision '%s': expected fp32, fp64 or fp16\n", prog, text);
    return -1;
}

static int parse_option(const char *name, const char *value, soak_args *a)
{
    long v = 0;
    if (strcmp(name, "--size") == 0) {
        if (cli_long(prog, name, value, 12, 1024, &v) != 0)
            return -1;
        a->n[0] = a->n[1] = a->n[2] = (int32_t)v;
        return 0;
    }
    if (strcmp(name, "--grid") == 0)
        return cli_dims(prog, name, value, ',', 12, 1024, a->n);
    if (strcmp(name, "--backend") == 0)
        return cli_backend(prog, name, value, &a->backend);
    if (strcmp(name, "--precision") == 0)
        return parse_precision(value, &a->precision);
    if (strcmp(name, "--steps") == 0)
        return cli_long(prog, name, value, 1, 1L << 50, &a->steps);
    if (strcmp(name, "--chunk") == 0)
        return cli_long(prog, name, value, 1, 1L << 40, &a->chunk);
    if (strcmp(name, "--mass-tol") == 0)
        return cli_real(prog, name, value, 0.0, 1.0, &a->mass_tol);
    if (strcmp(name, "--rss-tol") == 0)
        return cli_real(prog, name, value, 0.0, 1e6, &a->rss_tol_mib);
    if (strcmp(name, "--force") == 0)
        return cli_real(prog, name, value, -1e-3, 1e-3, &a->force);
    if (strcmp(name, "--save") == 0 || strcmp(name, "--resume") == 0) {
        *(strcmp(name, "--save") == 0 ? &a->save : &a->resume) = value;
        return 0;
    }
    if (strcmp(name, "--mass0") == 0)
        return cli_real(prog, name, value, 1e-300, 1e300, &a->mass0);
    fprintf(stderr, "%s: unknown option '%s'\n", prog, name);
    return -1;
}

/* 0 to run, 1 after --help, 2 after a usage error. */
static int take_option(const char *name, const char *value, void *a)
{
    return parse_option(name, value, a);
}

static int take_flag(const char *name, void *a)
{
    if (strcmp(name, "--smoke") != 0)
        return 0;
    ((soak_args *)a)->smoke = 1;
    return 1;
}

static int parse_args(int argc, char **argv, soak_args *a)
{
    const soak_args defaults = {{24, 24, 24}, ACM_BACKEND_AUTO, ACM_PRECISION_FP32, 1000000, 0, 0,
                                -1.0, 8.0, 2e-6, NULL, NULL, -1.0};
    *a = defaults;
    const int st = cli_parse(prog, argc, argv, take_option, take_flag, usage, a);
    if (st != 0)
        return st;
    if (a->chunk == 0) /* at least 20 checks, so that the warm-up is a fraction of the run */
        a->chunk = a->steps / 20 < 10000 ? (a->steps / 20 > 0 ? a->steps / 20 : 1) : 10000;
    return 0;
}

/* The default mass tolerance. In a periodic box every operator conserves
 * mass exactly (streaming moves populations; the collision keeps the
 * populations' own mass; the body and IB forces change momentum only), so
 * what drifts is round-off, a random walk whose step is the rounding of the
 * stored populations: FP64 (arithmetic and storage) rounds at 1e-16 of a
 * population per cell and step; FP32 and FP16 store f - w_i rounded to
 * 2^-24 and 2^-11 of its size and compute in FP32 (acm_common.h,
 * acm_precision). docs/physics.md gives 1e-15 (FP64) and 5e-9 (FP32) over
 * its short decay runs. Measured by this program with the torus and the
 * smoke (docs/reliability.md, "Soak"): FP64 exactly 0 (1e6 steps of 16^3 on
 * the CPU, 2e6 of 24^3 on an H100); FP32 at most 4e-9 over 1e6 steps of 16^3
 * on the CPU, 1.2e-8 over 4e6 steps of 24^3 and 7e-9 over 2.5e6 of 64^3 on
 * the H100; FP16 2.7e-5 over 2e6 steps of 24^3. The defaults sit 30 to 80
 * times above these (FP64: 1000 times the docs' round-off), so a pass is
 * not luck, and below what a real error gives: the FP32 collision that took
 * its mass from the float equilibrium drifted 1.8e-6 in 200K steps of a jet
 * (docs/physics.md, "Why the periodic jet gained energy"). */
static double default_mass_tol(acm_precision p)
{
    switch (p) {
    case ACM_PRECISION_FP64:
        return 1e-12;
    case ACM_PRECISION_FP16:
        return 1e-3;
    default:
        return 1e-6;
    }
}

static const char *precision_name(acm_precision p)
{
    return p == ACM_PRECISION_FP64 ? "fp64" : p == ACM_PRECISION_FP16 ? "fp16" : "fp32";
}

/* ---- what the process holds ---------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Resident set size in KiB (/proc/self/statm, second field, in pages); -1 if unknown. */
static long rss_kib(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (fp == NULL)
        return -1;
    if (fscanf(fp, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(fp);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Open file descriptors: the entries of /proc/self/fd, less the one that
 * reading the directory itself holds. -1 if unknown. */
static int open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL)
        return -1;
    int count = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (e->d_name[0] != '.')
            ++count;
    closedir(dir);
    return count - 1;
}

/* Threads of the process (/proc/self/status, "Threads:"); -1 if unknown. */
static int thread_count(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    if (fp == NULL)
        return -1;
    char line[256];
    int threads = -1;
    while (fgets(line, sizeof line, fp) != NULL)
        if (strncmp(line, "Threads:", 8) == 0) {
            threads = atoi(line + 8);
            break;
        }
    fclose(fp);
    return threads;
}

/* Bytes in use on the domain's device (cudaMemGetInfo: total - free, every
 * process's allocations, so run on an otherwise idle GPU); -1 on the CPU. */
static long long device_used(const acm_domain_info *info)
{
#if ACM_HAVE_CUDA
    size_t free_b = 0, total_b = 0;
    if (info->backend == ACM_BACKEND_CUDA && cudaSetDevice(info->device) == cudaSuccess &&
        cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        return (long long)(total_b - free_b);
#else
    (void)info;
#endif
    return -1;
}

/* ---- the scene ------------------------------------------------------------------------------ */

typedef struct scene {
    acm_domain *d;
    acm_solid *s;
    acm_smoke *smoke; /* NULL without --smoke */
    acm_domain_info info;
    uint64_t samples;
    double *rho; /* the density field, read at every check */
    size_t cells;
} scene;

/* A periodic box at rest, pushed along x by the body force. */
static int scene_domain(scene *sc, const soak_args *a)
{
    char err[512] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = a->n[0];
    o.ny = a->n[1];
    o.nz = a->n[2];
    o.viscosity = VISCOSITY;
    o.backend = a->backend;
    o.precision = a->precision;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    if (cli_failed(prog, acm_domain_create(&sc->d, &o), "acm_domain_create", err))
        return -1;
    memset(&sc->info, 0, sizeof sc->info);
    sc->info.version = ACM_DOMAIN_INFO_VERSION;
    const double force[3] = {a->force, 0.0, 0.0};
    if (cli_failed(prog, acm_domain_get_info(sc->d, &sc->info), "acm_domain_get_info",
                   acm_domain_last_error(sc->d)) ||
        cli_failed(prog, acm_domain_set_body_force(sc->d, force), "acm_domain_set_body_force",
                   acm_domain_last_error(sc->d)))
        return -1;
    sc->cells = (size_t)a->n[0] * (size_t)a->n[1] * (size_t)a->n[2];
    return 0;
}

/* The torus: radii 0.22 and 0.08 of the smallest side, centred in the box, so
 * that whatever its pose it stays clear of its periodic images; mesh edges of
 * about 3/4 cell, as in examples/rotating_torus.c. */
static int scene_torus(scene *sc, const soak_args *a)
{
    int32_t side = a->n[0] < a->n[1] ? a->n[0] : a->n[1];
    side = side < a->n[2] ? side : a->n[2];
    const double R = 0.22 * side, r = 0.08 * side;
    const unsigned nu = (unsigned)ceil(2.0 * M_PI * (R + r) / 0.75),
                   nv = (unsigned)ceil(2.0 * M_PI * r / 0.75);
    shapes_mesh sm;
    if (shapes_torus(&sm, R, r, nu < 12 ? 12 : nu, nv < 8 ? 8 : nv) != 0) {
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
    if (cli_failed(prog, st, "acm_mesh_create", err))
        return -1;
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = mesh;
    so.motion = ACM_MOTION_PRESCRIBED;
    const double half = 0.5 * TILT_DEG * M_PI / 180.0; /* body z leans towards -y */
    so.orientation[0] = cos(half);
    so.orientation[1] = sin(half);
    for (int k = 0; k < 3; ++k)
        so.position[k] = 0.5 * (a->n[k] - 1);
    so.angular_velocity[2] = TIP_SPEED / (R + r); /* about z through the centre: it stays put */
    st = acm_solid_create(&sc->s, sc->d, &so);
    acm_mesh_destroy(mesh);
    return cli_failed(prog, st, "acm_solid_create", acm_domain_last_error(sc->d)) ? -1 : 0;
}

/* Particles from a shell one cell outside the torus, each living
 * SMOKE_LIFETIME steps (or less, if it wanders into the torus): the count
 * settles at about a particle per 4 cells, so that the smoke costs about the
 * same share of a step at every size, within a capacity of one per cell. */
static int scene_smoke(scene *sc)
{
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = sc->cells;
    if (cli_failed(prog, acm_smoke_create(&sc->smoke, sc->d, &so), "acm_smoke_create",
                   acm_domain_last_error(sc->d)))
        return -1;
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SOLID;
    e.solid = sc->s;
    e.offset = 1.0;
    e.rate = (double)sc->cells / SMOKE_CELLS_PER_EMISSION;
    e.lifetime = SMOKE_LIFETIME;
    return cli_failed(prog, acm_smoke_add_emitter(sc->smoke, &e), "acm_smoke_add_emitter",
                      acm_smoke_last_error(sc->smoke))
               ? -1
               : 0;
}

/* The scene of an earlier run, from its checkpoint (--resume): the grid,
 * precision and smoke are the checkpoint's. */
static int scene_resume(scene *sc, soak_args *a)
{
    char err[512] = "";
    acm_load_options lo;
    acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION);
    lo.backend = a->backend;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    if (cli_failed(prog, acm_domain_load(&sc->d, a->resume, &lo), "acm_domain_load", err))
        return -1;
    memset(&sc->info, 0, sizeof sc->info);
    sc->info.version = ACM_DOMAIN_INFO_VERSION;
    size_t nsolids = 0, nsmokes = 0;
    if (cli_failed(prog, acm_domain_get_info(sc->d, &sc->info), "acm_domain_get_info",
                   acm_domain_last_error(sc->d)) ||
        cli_failed(prog, acm_domain_get_solids(sc->d, &sc->s, 1, &nsolids), "acm_domain_get_solids",
                   acm_domain_last_error(sc->d)) ||
        cli_failed(prog, acm_domain_get_smokes(sc->d, &sc->smoke, 1, &nsmokes),
                   "acm_domain_get_smokes", acm_domain_last_error(sc->d)))
        return -1;
    if (nsolids != 1 || nsmokes > 1) {
        fprintf(stderr, "%s: %s holds %zu solids and %zu smokes, not a soak's scene\n", prog,
                a->resume, nsolids, nsmokes);
        return -1;
    }
    a->n[0] = sc->info.nx;
    a->n[1] = sc->info.ny;
    a->n[2] = sc->info.nz;
    a->precision = sc->info.precision;
    a->smoke = nsmokes == 1;
    sc->cells = (size_t)a->n[0] * (size_t)a->n[1] * (size_t)a->n[2];
    return 0;
}

/* What every scene needs besides: the torus's sample count, the density buffer. */
static int scene_finish(scene *sc)
{
    acm_solid_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SOLID_INFO_VERSION;
    if (cli_failed(prog, acm_solid_get_info(sc->s, &si), "acm_solid_get_info",
                   acm_solid_last_error(sc->s)))
        return -1;
    sc->samples = si.sample_count;
    if ((sc->rho = malloc(sc->cells * sizeof *sc->rho)) == NULL) {
        fprintf(stderr, "%s: out of memory for the density of %zu cells\n", prog, sc->cells);
        return -1;
    }
    return 0;
}

/* A new scene, or the one of --resume. */
static int scene_make(scene *sc, soak_args *a)
{
    const int made = a->resume != NULL ? scene_resume(sc, a)
                                       : (scene_domain(sc, a) == 0 && scene_torus(sc, a) == 0 &&
                                          (!a->smoke || scene_smoke(sc) == 0))
                                             ? 0
                                             : -1;
    return made == 0 ? scene_finish(sc) : -1;
}

static void scene_free(scene *sc)
{
    acm_smoke_destroy(sc->smoke); /* before the solid its emitter follows */
    acm_domain_destroy(sc->d);    /* and the solid with it */
    free(sc->rho);
}

/* ---- one check ------------------------------------------------------------------------------- */

typedef struct check {
    int64_t step;
    double ms_per_step; /* over the chunk that ended here */
    double mass;        /* sum of the density */
    double max_speed;
    double force[3]; /* of the fluid on the torus, last step */
    long rss_kib;
    int fds, threads;
    long long device_bytes; /* -1 on the CPU */
    long long particles;    /* -1 without smoke */
} check;

/* Sum of the density, compensated (Neumaier): the drifts looked for are far
 * below the rounding of a plain sum of a million values. */
static double total_mass(const scene *sc)
{
    double sum = 0.0, carry = 0.0;
    for (size_t k = 0; k < sc->cells; ++k) {
        const double x = sc->rho[k], t = sum + x;
        carry += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    return sum + carry;
}

static int measure(scene *sc, check *c)
{
    acm_domain_stats st;
    memset(&st, 0, sizeof st);
    st.version = ACM_DOMAIN_STATS_VERSION;
    if (cli_failed(prog,
                   acm_domain_get_field(sc->d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, sc->rho,
                                        sc->cells * sizeof *sc->rho),
                   "acm_domain_get_field", acm_domain_last_error(sc->d)) ||
        cli_failed(prog, acm_domain_get_stats(sc->d, &st), "acm_domain_get_stats",
                   acm_domain_last_error(sc->d)) ||
        cli_failed(prog, acm_solid_get_force(sc->s, c->force, NULL), "acm_solid_get_force",
                   acm_solid_last_error(sc->s)))
        return -1;
    c->step = st.step;
    c->mass = total_mass(sc);
    c->max_speed = st.max_speed;
    c->particles = -1;
    if (sc->smoke != NULL) {
        acm_smoke_info si;
        memset(&si, 0, sizeof si);
        si.version = ACM_SMOKE_INFO_VERSION;
        if (cli_failed(prog, acm_smoke_get_info(sc->smoke, &si), "acm_smoke_get_info",
                       acm_smoke_last_error(sc->smoke)))
            return -1;
        c->particles = (long long)si.alive;
    }
    c->rss_kib = rss_kib();
    c->fds = open_fds();
    c->threads = thread_count();
    c->device_bytes = device_used(&sc->info);
    return 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* What the run found, for the verdict. */
typedef struct outcome {
    check first, warm, last;
    int warmed;              /* warm holds the check at the end of the warm-up */
    double max_drift;        /* largest |mass / first mass - 1| at any check */
    long rss_peak_kib;       /* after the warm-up */
    int fds_changed, threads_changed, device_changed; /* after the warm-up, at any check */
    int diverged;
    char divergence[512];
    double busy_s; /* inside acm_step */
} outcome;

static void print_header(const scene *sc, const soak_args *a)
{
    time_t tt = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&tt));
    const int gpu = sc->info.backend == ACM_BACKEND_CUDA;
    printf("libacmlbm %s, %s; %s soak: %dx%dx%d %s on %s, %lld steps in chunks of %lld; "
           "torus of %llu samples spinning (tip %.2f), body force %g%s\n",
           acm_version_string(), date, prog, (int)a->n[0], (int)a->n[1], (int)a->n[2],
           precision_name(sc->info.precision), gpu ? "cuda" : "cpu", (long long)a->steps,
           (long long)a->chunk, (unsigned long long)sc->samples, TIP_SPEED, a->force,
           a->smoke ? "; smoke from the torus" : "");
    printf("%12s %9s %11s %8s %11s %9s %4s %4s%s%s\n", "step", "ms/step", "mass drift", "max|u|",
           "F_x torus", "RSS MiB", "fds", "thr", gpu ? "  dev MiB" : "",
           a->smoke ? " particles" : "");
}

static void print_check(const check *c, const outcome *o)
{
    printf("%12lld %9.4f %11.3e %8.5f %11.4e %9.2f %4d %4d", (long long)c->step, c->ms_per_step,
           c->mass / o->first.mass - 1.0, c->max_speed, c->force[0], c->rss_kib / 1024.0, c->fds,
           c->threads);
    if (c->device_bytes >= 0)
        printf(" %8.1f", (double)c->device_bytes / (1024.0 * 1024.0));
    if (c->particles >= 0)
        printf(" %9lld", c->particles);
    printf("\n");
    fflush(stdout);
}

/* Fold a check into the outcome: its mass drift always, what the process
 * holds once the warm-up is over. */
static void track(outcome *o, const check *c)
{
    const double drift = fabs(c->mass / o->first.mass - 1.0);
    if (!(drift <= o->max_drift)) /* NaN sticks */
        o->max_drift = drift;
    if (!o->warmed)
        return;
    if (c->rss_kib > o->rss_peak_kib)
        o->rss_peak_kib = c->rss_kib;
    o->fds_changed |= c->fds != o->warm.fds;
    o->threads_changed |= c->threads != o->warm.threads;
    o->device_changed |= c->device_bytes != o->warm.device_bytes;
}

/* Step to the end in chunks, checking after each; the warm-up's end is a
 * check of its own, whatever the chunk size. */
static int run(scene *sc, const soak_args *a, outcome *o)
{
    const int64_t warm_step = (int64_t)ceil(WARMUP_FRACTION * (double)a->steps);
    double last_print = now_s();
    int64_t done = 0;
    while (done < a->steps) {
        int64_t next = done + a->chunk;
        if (!o->warmed && next > warm_step)
            next = warm_step;
        next = next < a->steps ? next : a->steps;
        const double t0 = now_s();
        const acm_status st = acm_step(sc->d, next - done);
        const double dt = now_s() - t0;
        if (st == ACM_ERR_DIVERGED || st == ACM_ERR_BAD_STATE) {
            o->diverged = 1;
            snprintf(o->divergence, sizeof o->divergence, "%s", acm_domain_last_error(sc->d));
            return 0;
        }
        if (cli_failed(prog, st, "acm_step", acm_domain_last_error(sc->d)))
            return -1;
        o->busy_s += dt;
        check c;
        if (measure(sc, &c) != 0)
            return -1;
        c.ms_per_step = 1e3 * dt / (double)(next - done);
        done = next;
        const int warm_end = !o->warmed && done >= warm_step;
        if (warm_end) {
            o->warm = c;
            o->warmed = 1;
            o->rss_peak_kib = c.rss_kib;
        }
        track(o, &c);
        o->last = c;
        /* a line per chunk, but none closer than PRINT_SECONDS apart (fast
         * GPU chunks), except the warm-up's end and the last */
        if (now_s() - last_print >= PRINT_SECONDS || warm_end || done == a->steps) {
            print_check(&c, o);
            last_print = now_s();
        }
        if (!isfinite(c.mass)) {
            o->diverged = 1;
            snprintf(o->divergence, sizeof o->divergence, "mass not finite at step %lld",
                     (long long)c.step);
            return 0;
        }
    }
    return 0;
}

/* ---- verdict --------------------------------------------------------------------------------- */

/* Append a reason to the failure list; returns 1 (failed). */
static int fail_reason(char *list, size_t size, const char *reason)
{
    const size_t used = strlen(list);
    snprintf(list + used, size - used, "%s%s", used > 0 ? "; " : "", reason);
    return 1;
}

static int summarise(const scene *sc, const soak_args *a, const outcome *o)
{
    const double mass_tol = a->mass_tol >= 0.0 ? a->mass_tol : default_mass_tol(a->precision);
    const long growth_kib = o->last.rss_kib - o->warm.rss_kib;
    const int64_t steps =
        o->last.step - o->first.step; /* by this run (a resumed one starts late) */
    const double ms = steps > 0 ? 1e3 * o->busy_s / (double)steps : 0.0;
    char why[1024] = "", line[256];
    int fail = 0;
    if (o->diverged)
        fail = fail_reason(why, sizeof why, "diverged");
    if (!(o->max_drift <= mass_tol)) {
        snprintf(line, sizeof line, "mass drift %.3e > %.1e", o->max_drift, mass_tol);
        fail = fail_reason(why, sizeof why, line);
    }
    if (o->warmed && (double)growth_kib > 1024.0 * a->rss_tol_mib) {
        snprintf(line, sizeof line, "RSS grew %ld KiB > %g MiB after the warm-up", growth_kib,
                 a->rss_tol_mib);
        fail = fail_reason(why, sizeof why, line);
    }
    if (o->fds_changed)
        fail = fail_reason(why, sizeof why, "open fds changed after the warm-up");
    if (o->threads_changed)
        fail = fail_reason(why, sizeof why, "threads changed after the warm-up");
    if (o->device_changed)
        fail = fail_reason(why, sizeof why, "device memory in use changed after the warm-up");

    printf("summary: %lld of %lld steps, %.1f s in acm_step, %.4f ms/step\n", (long long)steps,
           (long long)a->steps, o->busy_s, ms);
    if (o->diverged)
        printf("  diverged: %s\n", o->divergence);
    printf("  mass: %.15g at the start, %.15g at the end; largest drift %.3e (tolerance %.1e); "
           "mass0=%.17g\n",
           o->first.mass, o->last.mass, o->max_drift, mass_tol, o->first.mass);
    printf("  RSS: %.2f MiB at the start, %.2f after the warm-up (step %lld), %.2f at the end, "
           "peak %.2f; growth %ld KiB (tolerance %g MiB)\n",
           o->first.rss_kib / 1024.0, o->warm.rss_kib / 1024.0, (long long)o->warm.step,
           o->last.rss_kib / 1024.0, o->rss_peak_kib / 1024.0, growth_kib, a->rss_tol_mib);
    printf("  fds %d -> %d -> %d, threads %d -> %d -> %d (start, warm-up, end)\n", o->first.fds,
           o->warm.fds, o->last.fds, o->first.threads, o->warm.threads, o->last.threads);
    if (sc->info.backend == ACM_BACKEND_CUDA)
        printf("  device memory in use: %lld -> %lld -> %lld bytes\n", o->first.device_bytes,
               o->warm.device_bytes, o->last.device_bytes);
    if (fail)
        printf("  FAIL: %s\n", why);
    printf("soak: steps=%lld last_step=%lld size=%dx%dx%d precision=%s backend=%s smoke=%d "
           "ms_per_step=%.4f mass_drift=%.3e rss_growth_kib=%ld fds=%d threads=%d "
           "device_bytes=%lld particles=%lld result=%s\n",
           (long long)steps, (long long)o->last.step, (int)a->n[0], (int)a->n[1], (int)a->n[2],
           precision_name(sc->info.precision),
           sc->info.backend == ACM_BACKEND_CUDA ? "cuda" : "cpu", a->smoke, ms, o->max_drift,
           growth_kib, o->last.fds, o->last.threads, o->last.device_bytes, o->last.particles,
           fail ? "FAIL" : "PASS");
    return fail;
}

int main(int argc, char **argv)
{
    soak_args a;
    const int parsed = parse_args(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    scene sc;
    memset(&sc, 0, sizeof sc);
    outcome o;
    memset(&o, 0, sizeof o);
    int rc = 1;
    if (scene_make(&sc, &a) == 0 && measure(&sc, &o.first) == 0) {
        print_header(&sc, &a);
        if (a.mass0 > 0.0)
            o.first.mass = a.mass0;
        o.warm = o.last = o.first;
        print_check(&o.first, &o);
        if (run(&sc, &a, &o) == 0)
            rc = summarise(&sc, &a, &o);
        if (a.save != NULL && cli_failed(prog, acm_domain_save(sc.d, a.save), "acm_domain_save",
                                         acm_domain_last_error(sc.d)))
            rc = 1;
    }
    scene_free(&sc);
    return rc;
}
