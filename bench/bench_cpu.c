/*
 * libacmlbm benchmark -- throughput of the CPU backend against the memory
 * bandwidth of the machine.
 * SPDX-License-Identifier: Apache-2.0
 *
 * 1. Measures the copy bandwidth: memcpy between two large buffers, split
 *    across the OpenMP threads, best of several repetitions, counting the
 *    bytes read plus the bytes written.
 * 2. Runs a lid-driven cavity for every collision model and grid size:
 *    warm-up steps, then timed steps (at least --min-time seconds), and
 *    prints MLUPS (million cell updates per second) and the bandwidth this
 *    implies. A step reads and writes each of the 27 populations of a cell
 *    once, so it moves 2 * 27 * sizeof(population) bytes per cell (216 B in
 *    FP32, 432 B in FP64); force and ACM state arrays are not counted.
 *
 *   acm-bench-cpu [--size N[,N...]] [--precision fp32|fp64] [--min-time S]
 *                 [--threads T] [--copy-mib M] [--streaming two|inplace|both]
 *
 * Both streaming schemes move the same bytes per step; the "mem B/cell"
 * column is what the domain holds (acm_domain_info.bytes_per_cell).
 *
 * ACMLBM_CPU_ISA selects the kernel variant (baseline, x86_64_v3, x86_64_v4);
 * OMP_NUM_THREADS or --threads the thread count.
 */
#include <errno.h>  /* errno */
#include <math.h>   /* ceil */
#include <stdio.h>  /* printf, fprintf, fopen, fgets */
#include <stdlib.h> /* aligned_alloc, free, strtol, strtod, getenv */
#include <string.h> /* memcpy, memset, strcmp, strncmp, strchr, strcspn */
#include <time.h>   /* clock_gettime, time, localtime_r, strftime */

#ifdef _OPENMP
#  include <omp.h>
#endif /* _OPENMP */

#include <acmlbm/acmlbm.h>

#include "bench_host.h" /* bench_now, bench_cpu_model, bench_host_copy_bandwidth */

#define BENCH_MAX_SIZES 16
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

typedef struct bench_args {
    int32_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    acm_precision precision;
    double min_time;  /* seconds of timed steps per case, at least */
    int threads;      /* 0: the OpenMP default */
    size_t copy_mib;  /* size of each copy buffer */
    int streaming;    /* bit 0: two arrays, bit 1: in place */
} bench_args;

typedef struct bench_model {
    const char *name;
    acm_collision model;
} bench_model;

static const bench_model bench_models[] = {
    {"bgk", ACM_COLLISION_BGK},
    {"rm", ACM_COLLISION_RM_MRT},
    {"cm", ACM_COLLISION_CM_MRT},
    {"acm-li2018", ACM_COLLISION_ACM_LI2018},
    {"acm-li2020", ACM_COLLISION_ACM_LI2020},
};

/* The flow: a cube with walls, a lid at speed 0.05, nu = 0.02 (tau = 0.56). */
#define BENCH_LID 0.05
#define BENCH_VISCOSITY 0.02
#define BENCH_WARMUP_STEPS 3

/* ---- small helpers ---------------------------------------------------------- */

static int thread_count(const bench_args *a)
{
    if (a->threads > 0)
        return a->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif /* _OPENMP */
}

static size_t population_bytes(acm_precision p)
{
    return p == ACM_PRECISION_FP64 ? sizeof(double) : sizeof(float);
}

/* ---- command line --------------------------------------------------------------- */

static void usage(FILE *fp)
{
    fprintf(fp, "usage: acm-bench-cpu [--size N[,N...]] [--precision fp32|fp64] "
                "[--min-time S]\n"
                "                     [--threads T] [--copy-mib M] [--streaming two|inplace|both]\n"
                "defaults: --size 64,128 --precision fp32 --min-time 1 --threads 0 (OpenMP "
                "default) --copy-mib 512 --streaming both\n");
}

static int parse_long(const char *s, char **end, long lo, long hi, long *out)
{
    errno = 0;
    long v = strtol(s, end, 10);
    if (errno != 0 || *end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "64" or "64,128,..." */
static int parse_sizes(const char *s, bench_args *a)
{
    a->nsizes = 0;
    for (;;) {
        char *end = NULL;
        long v = 0;
        if (a->nsizes == BENCH_MAX_SIZES || parse_long(s, &end, 3, 4096, &v) != 0)
            return -1;
        a->sizes[a->nsizes++] = (int32_t)v;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        s = end + 1;
    }
}

static int parse_whole(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    if (parse_long(s, &end, lo, hi, out) != 0 || *end != '\0')
        return -1;
    return 0;
}

static int parse_seconds(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0.0 && v < 3600.0))
        return -1;
    *out = v;
    return 0;
}

static int apply_option(bench_args *a, const char *key, const char *val)
{
    long v = 0;
    if (strcmp(key, "--size") == 0)
        return parse_sizes(val, a);
    if (strcmp(key, "--precision") == 0 && strcmp(val, "fp32") == 0)
        a->precision = ACM_PRECISION_FP32;
    else if (strcmp(key, "--precision") == 0 && strcmp(val, "fp64") == 0)
        a->precision = ACM_PRECISION_FP64;
    else if (strcmp(key, "--min-time") == 0)
        return parse_seconds(val, &a->min_time);
    else if (strcmp(key, "--threads") == 0 && parse_whole(val, 0, 4096, &v) == 0)
        a->threads = (int)v;
    else if (strcmp(key, "--copy-mib") == 0 && parse_whole(val, 1, 1 << 20, &v) == 0)
        a->copy_mib = (size_t)v;
    else if (strcmp(key, "--streaming") == 0 && strcmp(val, "two") == 0)
        a->streaming = 1;
    else if (strcmp(key, "--streaming") == 0 && strcmp(val, "inplace") == 0)
        a->streaming = 2;
    else if (strcmp(key, "--streaming") == 0 && strcmp(val, "both") == 0)
        a->streaming = 3;
    else
        return -1;
    return 0;
}

/* Returns 0 to run, 1 after --help, -1 on a usage error. */
static int parse_args(int argc, char **argv, bench_args *a)
{
    const bench_args defaults = {{64, 128}, 2, ACM_PRECISION_FP32, 1.0, 0, 512, 3};
    *a = defaults;
    for (int k = 1; k < argc; k += 2) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (k + 1 >= argc || apply_option(a, argv[k], argv[k + 1]) != 0) {
            fprintf(stderr, "acm-bench-cpu: bad option or value: %s %s\n", argv[k],
                    k + 1 < argc ? argv[k + 1] : "(missing)");
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* ---- machine description ---------------------------------------------------------- */

static void print_environment(const bench_args *a)
{
    char model[256], date[64];
    bench_cpu_model(model, sizeof model);
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
        snprintf(date, sizeof date, "unknown");
    const char *isa = getenv("ACMLBM_CPU_ISA");
    printf("acm-bench-cpu, libacmlbm %s\n", acm_version_string());
    printf("date        %s\n", date);
    printf("machine     %s\n", model);
#ifdef _OPENMP
    printf("threads     %d (OpenMP, %d processors)\n", thread_count(a), omp_get_num_procs());
#else
    printf("threads     1 (built without OpenMP)\n");
#endif /* _OPENMP */
    printf("CPU kernel  %s\n", isa != NULL && isa[0] != '\0' ? isa : "auto");
    printf("precision   %s\n", a->precision == ACM_PRECISION_FP64 ? "FP64" : "FP32");
}

/* ---- LBM cases -------------------------------------------------------------------- */

static int failed(const acm_domain *d, acm_status st, const char *call)
{
    if (st == ACM_OK)
        return 0;
    fprintf(stderr, "acm-bench-cpu: %s failed: %s: %s\n", call, acm_status_string(st),
            acm_domain_last_error(d));
    return 1;
}

#define BENCH_TRY(d, call)                                                                 \
    do {                                                                                   \
        if (failed((d), (call), #call))                                                    \
            return -1;                                                                     \
    } while (0)

static acm_domain *create_domain(const bench_args *a, acm_collision model, int32_t n,
                                 acm_streaming streaming)
{
    char err[512] = "";
    acm_layout *layout = NULL;
    if (acm_layout_create(&layout) != ACM_OK ||
        acm_layout_set(layout, ACM_LAYOUT_STREAMING, streaming) != ACM_OK) {
        fprintf(stderr, "acm-bench-cpu: cannot make the layout\n");
        acm_layout_destroy(layout);
        return NULL;
    }
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.layout = layout;
    o.nx = o.ny = o.nz = n;
    o.viscosity = BENCH_VISCOSITY;
    o.collision = model;
    o.backend = ACM_BACKEND_CPU;
    o.precision = a->precision;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &o);
    acm_layout_destroy(layout);
    if (st != ACM_OK) {
        fprintf(stderr, "acm-bench-cpu: acm_domain_create (%d^3) failed: %s: %s\n", (int)n,
                acm_status_string(st), err);
        return NULL;
    }
    return d;
}

static int configure(acm_domain *d, const bench_args *a)
{
    const double lid[3] = {BENCH_LID, 0.0, 0.0};
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        BENCH_TRY(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL, NULL));
    BENCH_TRY(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    BENCH_TRY(d, acm_domain_set_param(d, ACM_PARAM_THREADS, a->threads));
    return 0;
}

/* Warm up, then time batches of steps until one batch lasts min_time;
 * returns the MLUPS of that batch through *mlups. */
static int measure(acm_domain *d, const bench_args *a, int32_t n, double *mlups)
{
    const double cells = (double)n * n * n;
    double t0 = bench_now();
    BENCH_TRY(d, acm_step(d, BENCH_WARMUP_STEPS));
    double per_step = (bench_now() - t0) / BENCH_WARMUP_STEPS;
    int64_t steps = (int64_t)ceil(1.1 * a->min_time / (per_step > 1e-9 ? per_step : 1e-9));
    for (;;) {
        steps = steps < 5 ? 5 : steps;
        t0 = bench_now();
        BENCH_TRY(d, acm_step(d, steps));
        const double dt = bench_now() - t0;
        if (dt >= a->min_time) {
            *mlups = cells * (double)steps / dt / 1e6;
            return 0;
        }
        steps = (int64_t)ceil((double)steps * 1.1 * a->min_time / dt);
    }
}

static int run_case(const bench_args *a, const bench_model *m, int32_t n, acm_streaming streaming,
                    double copy_gbs)
{
    acm_domain *d = create_domain(a, m->model, n, streaming);
    if (d == NULL)
        return -1;
    double mlups = 0.0;
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    int rc = configure(d, a);
    if (rc == 0)
        rc = measure(d, a, n, &mlups);
    if (rc == 0 && acm_domain_get_info(d, &info) != ACM_OK)
        rc = -1;
    acm_domain_destroy(d);
    if (rc != 0)
        return -1;
    const double bytes = 2.0 * 27.0 * (double)population_bytes(a->precision);
    const double gbs = mlups * bytes / 1e3;
    printf("%-11s  %-8s  %4d^3  %8.1f  %6.0f  %7.2f  %7.1f%%  %10.1f\n", m->name,
           streaming == ACM_STREAMING_IN_PLACE ? "in place" : "two", (int)n, mlups, bytes, gbs,
           copy_gbs > 0.0 ? 100.0 * gbs / copy_gbs : 0.0, info.bytes_per_cell);
    fflush(stdout);
    return 0;
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    bench_args args;
    int parsed = parse_args(argc, argv, &args);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;
    print_environment(&args);

    const size_t copy_bytes = args.copy_mib << 20;
    const double copy_gbs = bench_host_copy_bandwidth(copy_bytes, thread_count(&args));
    if (copy_gbs < 0.0) {
        fprintf(stderr, "acm-bench-cpu: cannot allocate 2 x %zu MiB for the copy test\n",
                args.copy_mib);
        return 1;
    }
    const size_t pop = population_bytes(args.precision);
    printf("copy        %.2f GB/s (memcpy, 2 x %zu MiB, best of %d, read + write)\n", copy_gbs,
           args.copy_mib, BENCH_COPY_REPS);
    printf("bytes/cell  2 * 27 * %zu = %zu per step (each population read once, written "
           "once)\n\n",
           pop, 2 * 27 * pop);
    printf("%-11s  %-8s  %6s  %8s  %6s  %7s  %8s  %10s\n", "model", "stream", "size", "MLUPS",
           "B/cell", "GB/s", "of copy", "mem B/cell");
    for (int s = 0; s < args.nsizes; ++s)
        for (size_t k = 0; k < COUNT_OF(bench_models); ++k)
            for (int scheme = 1; scheme <= 2; ++scheme)
                if ((args.streaming & scheme) &&
                    run_case(&args, &bench_models[k], args.sizes[s],
                             scheme == 1 ? ACM_STREAMING_TWO_ARRAYS : ACM_STREAMING_IN_PLACE,
                             copy_gbs) != 0)
                    return 1;
    return 0;
}
