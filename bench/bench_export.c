/*
 * libacmlbm benchmark -- what exporting a frame costs. A periodic box with a
 * shear flow and a smoke of N particles spread through it (a few steps of
 * advection after they are emitted); then, each timed over --frames calls,
 * every way a frame leaves the solver: the fluid velocity as VTK image data,
 * the particles as PLY and VTK poly data, the smoke's density as VTK image
 * data (1 and 2 voxels per cell edge), the density into host memory only, and
 * OpenVDB files where the library has OpenVDB. For scale: one acm_step with
 * and without the smoke, and acm_domain_sample_velocity at 16 points (the
 * wind a game reads each frame). Each line gives the mean and the fastest
 * call in ms and the bytes written (or filled) per second of the mean call.
 * Files go to --dir and are deleted after each measurement.
 *
 *   acm-bench-export [--size N|NXxNYxNZ] [--backend auto|cpu|cuda] [--particles N]
 *                    [--frames F] [--dir DIR]
 *
 * Defaults: 128^3 on the GPU, 64^3 on the CPU; 1,000,000 particles; 10 frames.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>    /* errno */
#include <math.h>     /* sin, cos */
#include <stdio.h>    /* printf, fprintf, snprintf, remove */
#include <stdlib.h>   /* malloc, free, strtol, getenv */
#include <string.h>   /* strcmp, memset, memcpy, strerror */
#include <sys/stat.h> /* stat, S_ISDIR */
#include <time.h>     /* clock_gettime, time, strftime */
#include <unistd.h>   /* getpid */

#include <acmlbm/acmlbm.h>
#if ACM_HAVE_CUDA
#include "bench_gpu_common.h" /* bench_banner: the device and its copy bandwidth */
#endif

#include "cli.h" /* cli_long, cli_dims, cli_backend */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define ADVECT_STEPS 10 /* steps that spread the particles before the timing */
#define PROBES 16       /* points of the wind read */

static const char *const prog = "acm-bench-export";

typedef struct bench_args {
    int32_t n[3]; /* 0: 128^3 on the GPU, 64^3 on the CPU */
    acm_backend backend;
    long particles;
    long frames;
    const char *dir;
} bench_args;

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: %s [options]\n"
            "  --size N|NXxNYxNZ        grid, each in [8, 2048] (default 128^3 on the GPU, 64^3 "
            "on the CPU)\n"
            "  --backend auto|cpu|cuda  (default auto)\n"
            "  --particles N            smoke particles, in [1, 2^31) (default 1000000)\n"
            "  --frames F               calls timed per export, in [1, 100000] (default 10)\n"
            "  --dir DIR                where the files are written and deleted (default /tmp)\n",
            prog);
}

static int parse_option(const char *name, const char *value, bench_args *a)
{
    if (strcmp(name, "--size") == 0)
        return cli_dims(prog, name, value, 'x', 8, 2048, a->n);
    if (strcmp(name, "--backend") == 0)
        return cli_backend(prog, name, value, &a->backend);
    if (strcmp(name, "--particles") == 0)
        return cli_long(prog, name, value, 1, 2147483647L, &a->particles);
    if (strcmp(name, "--frames") == 0)
        return cli_long(prog, name, value, 1, 100000, &a->frames);
    if (strcmp(name, "--dir") == 0) {
        struct stat sb;
        if (stat(value, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "%s: --dir '%s': not a directory\n", prog, value);
            return -1;
        }
        a->dir = value;
        return 0;
    }
    fprintf(stderr, "%s: unknown option '%s'\n", prog, name);
    return -1;
}

/* 0 to run, 1 after --help, 2 after a usage error. */
static int take_option(const char *name, const char *value, void *a)
{
    return parse_option(name, value, a);
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    const bench_args defaults = {{0, 0, 0}, ACM_BACKEND_AUTO, 1000000, 10, "/tmp"};
    *a = defaults;
    return cli_parse(prog, argc, argv, take_option, NULL, usage, a);
}

/* ---- helpers --------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_size : 0.0;
}

/* Timings of one kind of call. */
typedef struct timing {
    double mean, min; /* seconds */
    double bytes;     /* written or filled by one call */
} timing;

static void timing_add(timing *t, double seconds, long k)
{
    t->mean += (seconds - t->mean) / (double)(k + 1);
    t->min = k == 0 || seconds < t->min ? seconds : t->min;
}

static void print_row(const char *what, const timing *t)
{
    if (t->bytes > 0.0)
        printf("%-40s %9.3f %9.3f %9.1f %9.0f\n", what, 1e3 * t->mean, 1e3 * t->min,
               t->bytes / 1e6, t->bytes / t->mean / 1e6);
    else
        printf("%-40s %9.3f %9.3f %9s %9s\n", what, 1e3 * t->mean, 1e3 * t->min, "-", "-");
}

/* ---- the scene ------------------------------------------------------------------------------ */

typedef struct scene {
    acm_domain *d;
    acm_smoke *s;
    acm_domain_info info;
    double cells;
} scene;

/* A periodic box with a shear flow and some swirl (stays smooth for the run). */
static int scene_domain(scene *sc, const bench_args *a)
{
    char err[512] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = a->n[0];
    o.ny = a->n[1];
    o.nz = a->n[2];
    o.viscosity = 1e-3;
    o.backend = a->backend;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    if (cli_failed(prog, acm_domain_create(&sc->d, &o), "acm_domain_create", err))
        return -1;
    memset(&sc->info, 0, sizeof sc->info);
    sc->info.version = ACM_DOMAIN_INFO_VERSION;
    acm_domain_get_info(sc->d, &sc->info);
    const size_t cells = (size_t)a->n[0] * (size_t)a->n[1] * (size_t)a->n[2];
    sc->cells = (double)cells;
    double *u = malloc(3 * cells * sizeof *u);
    if (u == NULL) {
        fprintf(stderr, "%s: out of memory for the initial velocity\n", prog);
        return -1;
    }
    for (size_t k = 0; k < cells; ++k) {
        const double y = (double)(k / (size_t)a->n[0] % (size_t)a->n[1]);
        const double z = (double)(k / ((size_t)a->n[0] * (size_t)a->n[1]));
        u[3 * k] = 0.05 * sin(2.0 * M_PI * y / a->n[1]);
        u[3 * k + 1] = 0.02 * cos(2.0 * M_PI * z / a->n[2]);
        u[3 * k + 2] = 0.0;
    }
    acm_status st = acm_domain_init_fields(sc->d, ACM_DTYPE_FLOAT64, NULL, u, cells);
    free(u);
    return cli_failed(prog, st, "acm_domain_init_fields", acm_domain_last_error(sc->d)) ? -1 : 0;
}

/* N particles emitted in one step all over the box, then spread by the flow. */
static int scene_smoke(scene *sc, const bench_args *a)
{
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = (uint64_t)a->particles;
    if (cli_failed(prog, acm_smoke_create(&sc->s, sc->d, &so), "acm_smoke_create",
                   acm_domain_last_error(sc->d)))
        return -1;
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX;
    for (int k = 0; k < 3; ++k)
        e.hi[k] = a->n[k] - 1;
    e.rate = (double)a->particles;
    if (cli_failed(prog, acm_smoke_add_emitter(sc->s, &e), "acm_smoke_add_emitter",
                   acm_smoke_last_error(sc->s)))
        return -1;
    return cli_failed(prog, acm_step(sc->d, ADVECT_STEPS), "acm_step", acm_domain_last_error(sc->d))
               ? -1
               : 0;
}

/* Seconds per acm_step over `steps` steps (after one untimed step). */
static int time_steps(scene *sc, int steps, timing *t)
{
    memset(t, 0, sizeof *t);
    if (cli_failed(prog, acm_step(sc->d, 1), "acm_step", acm_domain_last_error(sc->d)))
        return -1;
    for (int k = 0; k < steps; ++k) {
        const double t0 = now_s();
        if (cli_failed(prog, acm_step(sc->d, 1), "acm_step", acm_domain_last_error(sc->d)))
            return -1;
        timing_add(t, now_s() - t0, k);
    }
    return 0;
}

/* ---- the exports ---------------------------------------------------------------------------- */

typedef enum export_kind {
    EXPORT_VTI_VELOCITY,
    EXPORT_PLY,
    EXPORT_VTP,
    EXPORT_DENSITY_VTI,
    EXPORT_DENSITY_HOST,
    EXPORT_VDB_SMOKE,
    EXPORT_VDB_SMOKE_VELOCITY,
    EXPORT_VDB_VELOCITY,
} export_kind;

typedef struct export_case {
    const char *label;
    export_kind kind;
    int subdivisions;
    const char *ext; /* NULL: no file */
} export_case;

static const export_case cases[] = {
    {"acm_domain_export_vti velocity", EXPORT_VTI_VELOCITY, 1, "vti"},
    {"acm_smoke_export PLY", EXPORT_PLY, 1, "ply"},
    {"acm_smoke_export VTP", EXPORT_VTP, 1, "vtp"},
    {"acm_smoke_export_density s=1", EXPORT_DENSITY_VTI, 1, "vti"},
    {"acm_smoke_export_density s=2", EXPORT_DENSITY_VTI, 2, "vti"},
    {"acm_smoke_density s=1 (host memory)", EXPORT_DENSITY_HOST, 1, NULL},
    {"acm_smoke_density s=2 (host memory)", EXPORT_DENSITY_HOST, 2, NULL},
    {"acm_smoke_export_vdb s=1", EXPORT_VDB_SMOKE, 1, "vdb"},
    {"acm_smoke_export_vdb s=1 +velocity", EXPORT_VDB_SMOKE_VELOCITY, 1, "vdb"},
    {"acm_smoke_export_vdb s=2", EXPORT_VDB_SMOKE, 2, "vdb"},
    {"acm_domain_export_vdb velocity", EXPORT_VDB_VELOCITY, 1, "vdb"},
};

static int is_vdb(export_kind k)
{
    return k == EXPORT_VDB_SMOKE || k == EXPORT_VDB_SMOKE_VELOCITY || k == EXPORT_VDB_VELOCITY;
}

/* One call of a case; `grid` holds the host density (EXPORT_DENSITY_HOST). */
static int export_once(scene *sc, const export_case *c, const char *path, float *grid,
                       size_t grid_count)
{
    const acm_field velocity = ACM_FIELD_VELOCITY;
    acm_status st = ACM_OK;
    switch (c->kind) {
    case EXPORT_VTI_VELOCITY:
        st = acm_domain_export_vti(sc->d, path, &velocity, 1);
        return cli_failed(prog, st, c->label, acm_domain_last_error(sc->d)) ? -1 : 0;
    case EXPORT_VDB_VELOCITY:
        st = acm_domain_export_vdb(sc->d, path, &velocity, 1);
        return cli_failed(prog, st, c->label, acm_domain_last_error(sc->d)) ? -1 : 0;
    case EXPORT_PLY:
        st = acm_smoke_export(sc->s, path, ACM_PARTICLES_PLY);
        break;
    case EXPORT_VTP:
        st = acm_smoke_export(sc->s, path, ACM_PARTICLES_VTP);
        break;
    case EXPORT_DENSITY_VTI:
        st = acm_smoke_export_density(sc->s, path, c->subdivisions);
        break;
    case EXPORT_DENSITY_HOST:
        st = acm_smoke_density(sc->s, c->subdivisions, grid, grid_count);
        break;
    case EXPORT_VDB_SMOKE:
        st = acm_smoke_export_vdb(sc->s, path, c->subdivisions, 0);
        break;
    case EXPORT_VDB_SMOKE_VELOCITY:
        st = acm_smoke_export_vdb(sc->s, path, c->subdivisions, ACM_VDB_VELOCITY);
        break;
    }
    return cli_failed(prog, st, c->label, acm_smoke_last_error(sc->s)) ? -1 : 0;
}

/* Time `frames` calls of a case, deleting its file after each. */
static int time_export(scene *sc, const bench_args *a, const export_case *c, timing *t)
{
    memset(t, 0, sizeof *t);
    char path[4096];
    snprintf(path, sizeof path, "%s/acm-bench-export-%ld.%s", a->dir, (long)getpid(),
             c->ext != NULL ? c->ext : "none");
    const size_t s = (size_t)c->subdivisions;
    const size_t grid_count = (size_t)sc->cells * s * s * s;
    float *grid = NULL;
    if (c->kind == EXPORT_DENSITY_HOST && (grid = malloc(grid_count * sizeof *grid)) == NULL) {
        fprintf(stderr, "%s: out of memory for a density grid of %zu values\n", prog, grid_count);
        return -1;
    }
    int rc = 0;
    for (long k = 0; k < a->frames && rc == 0; ++k) {
        const double t0 = now_s();
        rc = export_once(sc, c, path, grid, grid_count);
        timing_add(t, now_s() - t0, k);
        if (rc == 0)
            t->bytes = c->ext != NULL ? file_bytes(path) : (double)(grid_count * sizeof *grid);
        if (c->ext != NULL)
            remove(path);
    }
    free(grid);
    return rc;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void print_banner(const scene *sc, const bench_args *a, uint64_t alive)
{
    const int gpu = sc->info.backend == ACM_BACKEND_CUDA;
#if ACM_HAVE_CUDA
    if (gpu)
        bench_banner();
#endif
    time_t tt = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&tt));
    printf("libacmlbm %s, %s; backend %s, %dx%dx%d FP32 (%.1f B/cell); %llu particles "
           "(after %d steps); %ld calls per export; files in %s\n",
           acm_version_string(), date, gpu ? "cuda" : "cpu", (int)a->n[0], (int)a->n[1],
           (int)a->n[2], sc->info.bytes_per_cell, (unsigned long long)alive, ADVECT_STEPS,
           a->frames, a->dir);
    printf("%-40s %9s %9s %9s %9s\n", "call", "mean ms", "min ms", "MB", "MB/s");
}

/* The wind at 16 points (a 4 x 4 grid on the mid-plane z = nz / 2), as a game
 * reads it each frame. */
static int time_sample(scene *sc, const bench_args *a, timing *t)
{
    double points[3 * PROBES], u[3 * PROBES];
    for (int p = 0; p < PROBES; ++p) {
        points[3 * p] = (a->n[0] - 1) * ((p % 4) + 0.5) / 4.0;
        points[3 * p + 1] = (a->n[1] - 1) * ((p / 4) + 0.5) / 4.0;
        points[3 * p + 2] = 0.5 * (a->n[2] - 1);
    }
    memset(t, 0, sizeof *t);
    const long calls = 10 * a->frames;
    for (long k = 0; k < calls; ++k) {
        const double t0 = now_s();
        acm_status st = acm_domain_sample_velocity(sc->d, points, PROBES, u);
        timing_add(t, now_s() - t0, k);
        if (cli_failed(prog, st, "acm_domain_sample_velocity", acm_domain_last_error(sc->d)))
            return -1;
    }
    return 0;
}

static int run(scene *sc, const bench_args *a)
{
    timing plain, smoky, t;
    if (scene_domain(sc, a) != 0 || time_steps(sc, 5, &plain) != 0 || scene_smoke(sc, a) != 0 ||
        time_steps(sc, 5, &smoky) != 0)
        return -1;
    acm_smoke_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SMOKE_INFO_VERSION;
    if (cli_failed(prog, acm_smoke_get_info(sc->s, &si), "acm_smoke_get_info",
                   acm_smoke_last_error(sc->s)))
        return -1;
    print_banner(sc, a, si.alive);
    print_row("acm_step, no smoke", &plain);
    char label[64];
    snprintf(label, sizeof label, "acm_step, %llu particles", (unsigned long long)si.alive);
    print_row(label, &smoky);
    if (time_sample(sc, a, &t) != 0)
        return -1;
    print_row("acm_domain_sample_velocity, 16 points", &t);
    const int vdb = acm_vdb_available();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        if (is_vdb(cases[k].kind) && !vdb)
            continue;
        if (time_export(sc, a, &cases[k], &t) != 0)
            return -1;
        print_row(cases[k].label, &t);
    }
    if (!vdb)
        printf("OpenVDB export skipped: this build of the library has no OpenVDB "
               "(acm_vdb_available() = 0)\n");
    return 0;
}

int main(int argc, char **argv)
{
    bench_args a;
    const int parsed = parse_args(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    if (a.n[0] == 0) {
        const char *env = getenv("ACMLBM_BACKEND");
        const int gpu = a.backend == ACM_BACKEND_CUDA ||
                        (a.backend == ACM_BACKEND_AUTO && acm_backend_available(ACM_BACKEND_CUDA) &&
                         !(env != NULL && strcmp(env, "cpu") == 0));
        a.n[0] = a.n[1] = a.n[2] = gpu ? 128 : 64;
    }
    scene sc;
    memset(&sc, 0, sizeof sc);
    const int rc = run(&sc, &a);
    acm_domain_destroy(sc.d); /* and its smoke */
    return rc == 0 ? 0 : 1;
}
