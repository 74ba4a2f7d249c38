/*
 * libacmlbm benchmark -- what cutting one domain into slabs along z costs
 * (acm_domain_options.subdomains, docs/multi-gpu.md). The same flow as
 * acm-bench-gpu (x and z periodic, walls across y with a lid, nu = 0.001) is
 * stepped undivided and in 2, 4, ... slabs on one backend; each slab count
 * gives one row: ms per step, MLUPS and GLUPS, the speed-up over 1 slab, the
 * overhead of the decomposition, the memory per cell and the share of the
 * copy bandwidth, measured in the same run, that the step's own traffic
 * reaches (2 x 27 populations per cell, read once and written once; with
 * --storage moments 2 x 10 moments).
 *
 *   acm-bench-decomp [--backend cpu|cuda] [--size NXxNYxNZ] [--slabs 1,2,4]
 *                    [--devices 0,1,...] [--weak] [--steps N] [--warmup N]
 *                    [--precision fp32|fp64|fp16] [--collision NAME] [--copy-mib M]
 *                    [--samples N] [--exchange auto|overlap|after|both] [--check-every N]
 *                    [--storage populations|moments] [--mpi] [--csv FILE]
 *
 * --samples puts a static sphere of N immersed-boundary samples (radius a
 * sixth of the smallest side) at the centre of the grid, across the middle
 * cut; the paper's scaling runs had 1.5M (acm_solid_options.sample_points).
 *
 * Strong scaling (the default) keeps the grid for every slab count; --weak
 * makes --size the grid of one slab, NZ multiplied by the slab count. With
 * slabs on one device they share it, so the honest figure is the overhead:
 * the time per cell update over that of 1 slab, minus 1. A backend that
 * cannot divide a domain (ACM_ERR_UNSUPPORTED) has its rows skipped with the
 * library's message; the others still run.
 *
 * --mpi (under mpiexec, the library and this program built with MPI): a row
 * of k slabs is one domain over ranks [0, k) (acm_mpi.h), rank r on CUDA
 * device --devices[r % count], while the other ranks wait; 1 slab is an
 * undivided domain on rank 0. Ranks on one host and device share it, as
 * slabs do without --mpi. Rank 0 prints.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>  /* errno */
#include <math.h>   /* NAN, isnan */
#include <stdio.h>  /* printf, fprintf, fopen, sscanf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp, strcspn, strerror, memset, memcpy */
#include <time.h>   /* time, gmtime_r, strftime */

#ifdef _OPENMP
#include <omp.h> /* omp_get_max_threads */
#endif

#include <acmlbm/acmlbm.h>
#include "bench_host.h" /* bench_now, bench_cpu_model, bench_host_copy_bandwidth */
#if ACM_HAVE_CUDA
#include "bench_gpu_common.h" /* bench_copy_bandwidth */
#endif

#include "bench_mpi.h" /* bench_group: the ranks of --mpi */
#include "cli.h"       /* cli_long, cli_dims, cli_backend, cli_failed */
#include "timeline.h"  /* RANGE_BEGIN, RANGE_END: the timed steps in a timeline */

#define MAX_COUNTS 16        /* entries of --slabs */
#define MAX_ROWS (2 * MAX_COUNTS) /* --exchange both: two rows a slab count */
#define MAX_SLABS 1024       /* slabs of one row */
#define MAX_DEVICES 64       /* entries of --devices, and the ordinals they may name */
#define PROGRESS_SECONDS 5.0 /* timed runs expected longer than this report on stderr */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const prog = "acm-bench-decomp";

/* A name on the command line and the enum value it stands for. */
typedef struct named {
    const char *name;
    int value;
} named;

static const named precisions[] = {
    {"fp32", ACM_PRECISION_FP32}, {"fp64", ACM_PRECISION_FP64}, {"fp16", ACM_PRECISION_FP16}};
static const named storages[] = {{"populations", ACM_STORAGE_POPULATIONS},
                                 {"moments", ACM_STORAGE_MOMENTS}};
/* ACM_PARAM_HALO_OVERLAP of the rows of more than one slab (0, 1, 2), or a
 * row of overlap and one of after. */
enum { EXCHANGE_AFTER = 0, EXCHANGE_AUTO = 1, EXCHANGE_OVERLAP = 2, EXCHANGE_BOTH = 3 };
static const named exchanges[] = {{"auto", EXCHANGE_AUTO},
                                  {"overlap", EXCHANGE_OVERLAP},
                                  {"after", EXCHANGE_AFTER},
                                  {"both", EXCHANGE_BOTH}};
static const named collisions[] = {
    {"bgk", ACM_COLLISION_BGK},           {"rm", ACM_COLLISION_RM_MRT},
    {"cm", ACM_COLLISION_CM_MRT},         {"acm-li2018", ACM_COLLISION_ACM_LI2018},
    {"acm-li2020", ACM_COLLISION_ACM_LI2020}};

typedef struct bench_args {
    int32_t n[3]; /* the grid, or one slab's with --weak */
    acm_backend backend;
    long slabs[MAX_COUNTS];
    int nslabs;
    long devices[MAX_DEVICES]; /* slab k of a row on devices[k % ndevices] */
    int ndevices;              /* 0: every slab on the default device */
    int weak;
    long steps, warmup;
    int precision; /* acm_precision; DEFAULT: the library's */
    int collision; /* acm_collision; DEFAULT: the library's */
    long copy_mib;
    long samples; /* of a static sphere at the centre; 0: fluid only */
    int exchange; /* EXCHANGE_* */
    long check_every; /* ACM_PARAM_DIVERGENCE_INTERVAL */
    const char *csv;
    int storage; /* acm_storage (ACM_LAYOUT_STORAGE) */
    int mpi; /* --mpi: a row of k slabs over k MPI ranks */
} bench_args;

/* One slab count's result. */
typedef struct row {
    int32_t slabs;
    int overlap;         /* ACM_PARAM_HALO_OVERLAP: EXCHANGE_AFTER, _AUTO or _OVERLAP */
    int32_t n[3];        /* the global grid */
    int ndevices;        /* distinct CUDA devices its slabs run on; 1 on the CPU */
    acm_status status;   /* ACM_OK, or why the row was skipped */
    char message[256];   /* the library's message when skipped */
    double seconds;      /* of the timed steps */
    double memory_bytes; /* acm_domain_info.memory_bytes */
    double copy_bw;      /* bytes per second: the sum over its devices */
    double imbalance;    /* the costliest slab's cost over the mean (acm_domain_get_slabs) */
    acm_domain_info info;
} row;

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: %s [options]\n"
            "  --backend cpu|cuda       (default cuda when there is a GPU, else cpu)\n"
            "  --size N|NXxNYxNZ        grid, each in [2, 65535] (default 128x128x128)\n"
            "  --slabs N,N,...          slab counts along z, each in [1, %d] (default 1,2,4)\n"
            "  --devices D,D,...        CUDA ordinal of slab k: D[k %% count] (default: all on "
            "device 0)\n"
            "  --weak                   weak scaling: --size is one slab's, NZ x slabs in all\n"
            "  --steps N                timed steps, in [1, 10^9] (default 200)\n"
            "  --warmup N               untimed steps first, in [0, 10^9] (default 20)\n"
            "  --precision fp32|fp64|fp16  population storage (default: the library's)\n"
            "  --collision bgk|rm|cm|acm-li2018|acm-li2020  (default: the library's)\n"
            "  --copy-mib M             size of each copy-bandwidth buffer (default 512)\n"
            "  --samples N              a static sphere of N IB samples at the centre (default 0)\n"
            "  --exchange auto|overlap|after|both  ghost planes exchanged as the library chooses,\n"
            "                           while the step runs, after it (ACM_PARAM_HALO_OVERLAP 1, 2,\n"
            "                           0), or a row of overlap and one of after (default auto)\n"
            "  --check-every N          CUDA: steps between divergence checks, each a wait for\n"
            "                           the device (ACM_PARAM_DIVERGENCE_INTERVAL, default 1)\n"
            "  --storage populations|moments  ACM_LAYOUT_STORAGE (default populations)\n"
            "  --mpi                    under mpiexec: k slabs over ranks [0, k), rank r on\n"
            "                           --devices[r %% count]; 1 slab on rank 0 alone\n"
            "  --csv FILE               the rows as CSV too\n"
            "Exit status: 0 every row measured or unsupported, 1 a row failed, 2 usage error,\n"
            "77 --backend cuda without a GPU.\n",
            prog, MAX_SLABS);
}

/* One of a table's names; the message lists them all. */
static int cli_named(const char *name, const char *text, const named *table, size_t count,
                     int *out)
{
    for (size_t k = 0; k < count; ++k)
        if (strcmp(text, table[k].name) == 0) {
            *out = table[k].value;
            return 0;
        }
    fprintf(stderr, "%s: %s '%s': expected", prog, name, text);
    for (size_t k = 0; k < count; ++k)
        fprintf(stderr, "%s %s", k == 0 ? "" : k + 1 == count ? " or" : ",", table[k].name);
    fprintf(stderr, "\n");
    return -1;
}

static const char *name_of(const named *table, size_t count, int value)
{
    for (size_t k = 0; k < count; ++k)
        if (table[k].value == value)
            return table[k].name;
    return "default";
}

/* "N,N,...": at most `max` integers, each in [lo, hi]. */
static int cli_list(const char *name, const char *text, long lo, long hi, long *out, int max,
                    int *count)
{
    char item[32];
    *count = 0;
    for (const char *p = text;; ++p) {
        const size_t len = strcspn(p, ",");
        if (*count == max) {
            fprintf(stderr, "%s: %s '%s': at most %d values\n", prog, name, text, max);
            return -1;
        }
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (len >= sizeof item || cli_long(prog, name, item, lo, hi, &out[(*count)++]) != 0) {
            if (len >= sizeof item)
                fprintf(stderr, "%s: %s '%s': a value is too long\n", prog, name, text);
            return -1;
        }
        p += len;
        if (*p == '\0')
            return 0;
    }
}

static int parse_option(const char *name, const char *value, bench_args *a)
{
    if (strcmp(name, "--backend") == 0)
        return cli_backend(prog, name, value, &a->backend);
    if (strcmp(name, "--size") == 0)
        return cli_dims(prog, name, value, 'x', 2, 65535, a->n);
    if (strcmp(name, "--slabs") == 0)
        return cli_list(name, value, 1, MAX_SLABS, a->slabs, MAX_COUNTS, &a->nslabs);
    if (strcmp(name, "--devices") == 0)
        return cli_list(name, value, 0, MAX_DEVICES - 1, a->devices, MAX_DEVICES, &a->ndevices);
    if (strcmp(name, "--steps") == 0)
        return cli_long(prog, name, value, 1, 1000000000L, &a->steps);
    if (strcmp(name, "--warmup") == 0)
        return cli_long(prog, name, value, 0, 1000000000L, &a->warmup);
    if (strcmp(name, "--precision") == 0)
        return cli_named(name, value, precisions, COUNT_OF(precisions), &a->precision);
    if (strcmp(name, "--collision") == 0)
        return cli_named(name, value, collisions, COUNT_OF(collisions), &a->collision);
    if (strcmp(name, "--copy-mib") == 0)
        return cli_long(prog, name, value, 1, 1L << 20, &a->copy_mib);
    if (strcmp(name, "--samples") == 0)
        return cli_long(prog, name, value, 0, 1L << 26, &a->samples);
    if (strcmp(name, "--check-every") == 0)
        return cli_long(prog, name, value, 1, 1L << 30, &a->check_every);
    if (strcmp(name, "--exchange") == 0)
        return cli_named(name, value, exchanges, COUNT_OF(exchanges), &a->exchange);
    if (strcmp(name, "--storage") == 0)
        return cli_named(name, value, storages, COUNT_OF(storages), &a->storage);
    if (strcmp(name, "--csv") == 0) {
        a->csv = value;
        return 0;
    }
    fprintf(stderr, "%s: unknown option '%s'\n", prog, name);
    return -1;
}

/* The z planes of a row with `slabs` slabs. */
static long row_nz(const bench_args *a, long slabs)
{
    return a->weak ? a->n[2] * slabs : a->n[2];
}

/* What the options allow only together, and the backend AUTO resolves to. */
static int check_args(bench_args *a)
{
    if (a->backend == ACM_BACKEND_AUTO)
        a->backend = acm_backend_available(ACM_BACKEND_CUDA) ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU;
    for (int k = 0; k < a->nslabs; ++k) {
        const long nz = row_nz(a, a->slabs[k]);
        if (nz > 65535) {
            fprintf(stderr, "%s: --weak --slabs %ld: NZ = %ld x %ld exceeds 65535\n", prog,
                    a->slabs[k], (long)a->n[2], a->slabs[k]);
            return -1;
        }
        if (nz < 2 * a->slabs[k]) { /* the library's rule, said before anything runs */
            fprintf(stderr, "%s: --slabs %ld: each slab needs 2 planes or more, NZ = %ld has %ld\n",
                    prog, a->slabs[k], nz, nz / a->slabs[k]);
            return -1;
        }
    }
    if (a->backend == ACM_BACKEND_CPU && a->precision == ACM_PRECISION_FP16) {
        fprintf(stderr, "%s: --precision fp16: the CPU backend stores fp32 or fp64\n", prog);
        return -1;
    }
    if (a->backend == ACM_BACKEND_CPU && a->ndevices > 0)
        fprintf(stderr, "%s: --devices is ignored on the CPU\n", prog);
    return 0;
}

/* 0 to run, 1 after --help, 2 after a usage error. */
static int take_option(const char *name, const char *value, void *a)
{
    return parse_option(name, value, a);
}

static int take_flag(const char *name, void *a)
{
    if (strcmp(name, "--weak") == 0)
        ((bench_args *)a)->weak = 1;
    else if (strcmp(name, "--mpi") == 0)
        ((bench_args *)a)->mpi = 1;
    else
        return 0;
    return 1;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    const bench_args defaults = {{128, 128, 128}, ACM_BACKEND_AUTO, {1, 2, 4}, 3, {0}, 0, 0,
                                 200, 20, ACM_PRECISION_DEFAULT, ACM_COLLISION_DEFAULT, 512,
                                 0, EXCHANGE_AUTO, 1, NULL, ACM_STORAGE_POPULATIONS, 0};
    *a = defaults;
    const int st = cli_parse(prog, argc, argv, take_option, take_flag, usage, a);
    if (st != 0)
        return st;
    return check_args(a) == 0 ? 0 : 2;
}

/* ---- the machine --------------------------------------------------------------------------- */

/* The copy bandwidth of one device in bytes per second (the host's on the
 * CPU, with every thread); negative without memory for the test. */
static double measure_one(const bench_args *a, int device)
{
    const size_t bytes = (size_t)a->copy_mib << 20;
    double bw = -1.0;
    if (a->backend == ACM_BACKEND_CPU) {
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        bw = 1e9 * bench_host_copy_bandwidth(bytes, threads);
    }
#if ACM_HAVE_CUDA
    else
        bw = bench_copy_bandwidth(device, bytes);
#else
    (void)device;
#endif
    if (bw < 0.0)
        fprintf(stderr, "%s: no memory for 2 x %ld MiB of copy test\n", prog, a->copy_mib);
    return bw;
}

/* Copy bandwidth of each device the rows use: bw[d] for CUDA ordinal d, or
 * bw[0] for the host. */
static int measure_bandwidth(const bench_args *a, double bw[MAX_DEVICES])
{
    if (a->backend == ACM_BACKEND_CPU)
        return (bw[0] = measure_one(a, 0)) < 0.0 ? -1 : 0;
    for (int k = 0; k < (a->ndevices > 0 ? a->ndevices : 1); ++k) {
        const int d = a->ndevices > 0 ? (int)a->devices[k] : 0;
        if (bw[d] == 0.0 && (bw[d] = measure_one(a, d)) < 0.0)
            return -1;
    }
    return 0;
}

/* --mpi: the CUDA ordinal rank r runs on. */
static int rank_device(const bench_args *a, int r)
{
    return a->ndevices > 0 ? (int)a->devices[r % a->ndevices] : 0;
}

/* --mpi: every rank's host, device and copy bandwidth into all[size], the
 * ranks measuring in turn (those sharing a device must not overlap). */
static int measure_places(const bench_args *a, const bench_group *g, bench_place *all)
{
    const int dev = rank_device(a, g->rank);
    double bw = 0.0;
    for (int r = 0; r < g->size; ++r) {
        if (r == g->rank)
            bw = measure_one(a, dev);
        bench_group_turn(g);
    }
    bench_place mine;
    bench_place_here(&mine, a->backend == ACM_BACKEND_CUDA, dev, bw);
    bench_group_places(g, &mine, all);
    return bench_group_min(g, bw >= 0.0) ? 0 : -1;
}

/* The CUDA ordinals named by --devices that this machine lacks: a message
 * and -1. */
static int check_devices(const bench_args *a)
{
#if ACM_HAVE_CUDA
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess)
        count = 0;
    for (int k = 0; k < a->ndevices; ++k)
        if (a->devices[k] >= count) {
            fprintf(stderr, "%s: --devices: no CUDA device %ld (this machine has %d)\n", prog,
                    a->devices[k], count);
            return -1;
        }
#else
    (void)a;
#endif
    return 0;
}

/* The header: the program, library and date (UTC); the exact command line;
 * the devices with their copy bandwidth; what every row shares. */
static void print_places(FILE *fp, const bench_args *a, const bench_group *g,
                         const bench_place *places)
{
    fprintf(fp, "ranks    %d MPI processes; a row of k slabs runs on ranks 0..k-1\n", g->size);
    for (int r = 0; r < g->size; ++r)
        if (!bench_place_seen(places, r))
            fprintf(fp, "device   rank %d: %s (%s); copy %.0f GB/s (2 x %ld MiB)\n", r,
                    places[r].name, places[r].key, places[r].bw / 1e9, a->copy_mib);
}

static void print_header(FILE *fp, const bench_args *a, int argc, char **argv,
                         const double bw[MAX_DEVICES], const bench_group *g,
                         const bench_place *places)
{
    char date[64] = "unknown";
    const time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL)
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(fp, "%s, libacmlbm %s, %s\ncommand ", prog, acm_version_string(), date);
    for (int k = 0; k < argc; ++k) /* quoted where a shell would need it */
        fprintf(fp, strcspn(argv[k], " \t'\"\\$*?;&|<>()") == strlen(argv[k]) ? " %s" : " '%s'",
                argv[k]);
    fprintf(fp, "\n");
    if (g->mpi)
        print_places(fp, a, g, places);
    else if (a->backend == ACM_BACKEND_CPU) {
        char model[256];
        bench_cpu_model(model, sizeof model);
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        fprintf(fp, "device   cpu: %s, %d threads; copy %.1f GB/s (memcpy, 2 x %ld MiB)\n",
                model, threads, bw[0] / 1e9, a->copy_mib);
    }
#if ACM_HAVE_CUDA
    for (int d = 0; !g->mpi && a->backend == ACM_BACKEND_CUDA && d < MAX_DEVICES; ++d)
        if (bw[d] > 0.0) {
            struct cudaDeviceProp prop;
            cudaGetDeviceProperties(&prop, d);
            fprintf(fp, "device   cuda %d: %s; copy %.0f GB/s (device to device, 2 x %ld MiB)\n",
                    d, prop.name, bw[d] / 1e9, a->copy_mib);
        }
#endif
    fprintf(fp, "grid     %dx%dx%d %s; %ld timed steps after %ld, a divergence check every %ld\n",
            (int)a->n[0], (int)a->n[1], (int)a->n[2],
            a->weak ? "per slab (weak scaling)" : "in all (strong scaling)", a->steps, a->warmup,
            a->check_every);
    fprintf(fp, "storage  %s\n", name_of(storages, COUNT_OF(storages), a->storage));
    fprintf(fp, a->samples > 0 ? "solid    a static sphere of %ld samples at the centre\n\n"
                               : "solid    none (fluid only)\n\n",
            a->samples);
}

/* ---- one row ------------------------------------------------------------------------------- */

/* The row's devices (slab k on --devices[k % count]) into devs; their
 * distinct count, and the sum of their copy bandwidths into r->copy_bw (the
 * host's on the CPU, one device). */
static void slab_devices(const bench_args *a, row *r, const double bw[MAX_DEVICES],
                         int32_t devs[MAX_SLABS])
{
    const int cpu = a->backend == ACM_BACKEND_CPU;
    r->ndevices = 0;
    r->copy_bw = 0.0;
    for (int32_t k = 0; k < r->slabs; ++k) {
        devs[k] = a->ndevices > 0 && !cpu ? (int32_t)a->devices[k % a->ndevices] : 0;
        int seen = 0;
        for (int32_t j = 0; j < k; ++j)
            seen |= devs[j] == devs[k];
        r->ndevices += !seen;
        r->copy_bw += seen ? 0.0 : bw[devs[k]];
    }
}

/* --mpi: the row's distinct devices, ranks [0, k), and their copy bandwidth. */
static void rank_places(const bench_place *places, row *r)
{
    r->ndevices = 0;
    r->copy_bw = 0.0;
    for (int32_t k = 0; k < r->slabs; ++k)
        if (!bench_place_seen(places, k)) {
            ++r->ndevices;
            r->copy_bw += places[k].bw;
        }
}

/* acm-bench-gpu's flow: x and z periodic, walls across y, a lid along x. */
static acm_domain *create_domain(const bench_args *a, row *r, const int32_t *devs,
                                 const bench_group *g)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = r->n[0];
    o.ny = r->n[1];
    o.nz = r->n[2];
    o.viscosity = 0.001;
    o.collision = (acm_collision)a->collision;
    o.precision = (acm_precision)a->precision;
    o.backend = a->backend;
    o.subdomains = g->mpi ? 1 : r->slabs; /* over MPI: a slab per rank of the row */
    /* NULL leaves the library's default, one device, in the rows without --devices */
    o.devices = a->backend == ACM_BACKEND_CUDA && a->ndevices > 0 && r->slabs > 1 && !g->mpi
                    ? devs
                    : NULL;
    o.device = a->backend == ACM_BACKEND_CUDA && a->ndevices > 0
                   ? (g->mpi ? rank_device(a, g->rank) : devs[0])
                   : -1;
    o.initial_velocity[0] = 0.05;
    o.error_buffer = r->message;
    o.error_buffer_size = sizeof r->message;
    acm_layout *l = NULL;
    if (a->storage != ACM_STORAGE_POPULATIONS &&
        (acm_layout_create(&l) != ACM_OK ||
         acm_layout_set(l, ACM_LAYOUT_STORAGE, a->storage) != ACM_OK)) {
        acm_layout_destroy(l);
        r->status = ACM_ERR_NO_MEMORY;
        snprintf(r->message, sizeof r->message, "cannot make the layout of --storage");
        return NULL;
    }
    o.layout = l;
    acm_domain *d = NULL;
    r->status = bench_group_create(g, &d, &o);
    acm_layout_destroy(l);
    const double lid[3] = {0.05, 0.0, 0.0};
    if (r->status == ACM_OK)
        r->status = acm_domain_set_param(d, ACM_PARAM_HALO_OVERLAP, r->overlap);
    if (r->status == ACM_OK)
        r->status = acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, a->check_every);
    if (r->status == ACM_OK)
        r->status = acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL);
    if (r->status == ACM_OK)
        r->status = acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid);
    return d;
}

/* --samples: a sphere of radius a sixth of the smallest side at the centre,
 * its samples on a Fibonacci lattice, each with an equal share of the area. */
static acm_status add_sphere(acm_domain *d, const bench_args *a, const row *r)
{
    const int32_t m = r->n[0] < r->n[1] ? (r->n[0] < r->n[2] ? r->n[0] : r->n[2])
                                        : (r->n[1] < r->n[2] ? r->n[1] : r->n[2]);
    const double pi = 3.14159265358979323846, R = m / 6.0, golden = pi * (3.0 - sqrt(5.0));
    const size_t n = (size_t)a->samples;
    double *pts = malloc(3 * n * sizeof(double)), *areas = malloc(n * sizeof(double));
    acm_status st = ACM_ERR_NO_MEMORY;
    if (pts != NULL && areas != NULL) {
        for (size_t l = 0; l < n; ++l) {
            const double z = 1.0 - (2.0 * (double)l + 1.0) / (double)n, rho = sqrt(1.0 - z * z),
                         phi = golden * (double)l;
            pts[3 * l] = R * rho * cos(phi);
            pts[3 * l + 1] = R * rho * sin(phi);
            pts[3 * l + 2] = R * z;
            areas[l] = 4.0 * pi * R * R / (double)n;
        }
        acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
        so.sample_count = n;
        so.sample_points = pts;
        so.sample_areas = areas;
        so.max_samples = (uint64_t)n;
        for (int k = 0; k < 3; ++k)
            so.position[k] = 0.5 * r->n[k];
        acm_solid *s = NULL;
        st = acm_solid_create(&s, d, &so);
    }
    free(pts);
    free(areas);
    return st;
}

/* The warm-up, then the timed steps: in about ten calls when they should take
 * long, with a line on stderr after each, else in one. acm_step returns with
 * the steps done, so the clock around it times them. */
static acm_status time_steps(acm_domain *d, const bench_args *a, row *r, const bench_group *g)
{
    double t0 = bench_now();
    acm_status st = acm_step(d, a->warmup);
    /* the slowest rank's: every rank of an MPI row steps in the same chunks */
    const double per_step = bench_group_row_fold(
        g, a->warmup > 0 ? (bench_now() - t0) / (double)a->warmup : 0.0, 1);
    const long chunk = per_step * (double)a->steps > PROGRESS_SECONDS ? (a->steps + 9) / 10
                                                                      : a->steps;
    r->seconds = 0.0;
    for (long done = 0; st == ACM_OK && done < a->steps; done += chunk) {
        const long k = chunk < a->steps - done ? chunk : a->steps - done;
        t0 = bench_now();
        RANGE_BEGIN("timed steps"); /* bench/trace/acm-trace.sh */
        st = acm_step(d, k);
        RANGE_END();
        r->seconds += bench_now() - t0;
        if (chunk < a->steps && g->rank == 0)
            fprintf(stderr, "%s:   %d slabs: %ld of %ld steps\n", prog, (int)r->slabs, done + k,
                    a->steps);
    }
    return st;
}

/* How a row's slabs exchange, for the table: "" for one slab. */
static const char *exchange_name(const row *r)
{
    static const char *const names[3] = {" after", " auto", " overlap"};
    return r->slabs == 1 ? "" : names[r->overlap];
}

/* Where the partitioner cut the slabs (on stderr) and how far the costliest
 * slab's cost by its model lies above the mean (docs/multi-gpu.md, "Balance"). */
static acm_status slab_balance(acm_domain *d, row *r, const bench_group *g)
{
    int32_t n = 0, cuts[MAX_SLABS + 1];
    double cost[MAX_SLABS + 1], sum = 0.0, most = 0.0;
    const acm_status st = acm_domain_get_slabs(d, MAX_SLABS + 1, &n, cuts, cost);
    if (st != ACM_OK)
        return st;
    for (int32_t p = 0; p < n; ++p) {
        sum += cost[p];
        most = cost[p] > most ? cost[p] : most;
    }
    r->imbalance = most / (sum / n);
    if (g->rank == 0 && n > 1) {
        fprintf(stderr, "%s:   cuts", prog);
        for (int32_t p = 0; p <= n; ++p)
            fprintf(stderr, "%c%d", p == 0 ? ' ' : ',', (int)cuts[p]);
        fprintf(stderr, "; costliest slab %.3f of the mean\n", r->imbalance);
    }
    return ACM_OK;
}

static void run_row(const bench_args *a, row *r, const double bw[MAX_DEVICES],
                    const bench_group *g, const bench_place *places)
{
    int32_t devs[MAX_SLABS];
    if (g->mpi)
        rank_places(places, r);
    else
        slab_devices(a, r, bw, devs);
    if (g->rank == 0)
        fprintf(stderr, "%s: %d slab%s%s, %dx%dx%d: %ld + %ld steps\n", prog, (int)r->slabs,
            r->slabs == 1 ? "" : "s", exchange_name(r), (int)r->n[0], (int)r->n[1],
            (int)r->n[2], a->warmup, a->steps);
    acm_domain *d = create_domain(a, r, devs, g);
    if (r->status == ACM_OK && a->samples > 0)
        r->status = add_sphere(d, a, r);
    if (r->status == ACM_OK)
        r->status = time_steps(d, a, r, g);
    if (r->status == ACM_OK)
        r->status = slab_balance(d, r, g);
    memset(&r->info, 0, sizeof r->info);
    r->info.version = ACM_DOMAIN_INFO_VERSION;
    if (r->status == ACM_OK)
        r->status = acm_domain_get_info(d, &r->info);
    if (r->status != ACM_OK && d != NULL) /* create's message is in r->message already */
        snprintf(r->message, sizeof r->message, "%s", acm_domain_last_error(d));
    r->memory_bytes = bench_group_row_fold(g, (double)r->info.memory_bytes, 0); /* every rank's */
    acm_domain_destroy(d);
}

/* ---- the table ----------------------------------------------------------------------------- */

static double row_cells(const row *r)
{
    return (double)r->n[0] * (double)r->n[1] * (double)r->n[2];
}

/* Million cell updates per second. */
static double row_mlups(const row *r, const bench_args *a)
{
    return row_cells(r) * (double)a->steps / r->seconds / 1e6;
}

/* The step's own traffic in bytes per second: each of the 27 populations (or,
 * on the GPU's moment storage, 10 moments; the CPU's keeps populations) of a
 * cell read once and written once, in the storage precision. */
static double row_traffic(const row *r, const bench_args *a)
{
    const double pop = r->info.precision == ACM_PRECISION_FP64   ? 8.0
                       : r->info.precision == ACM_PRECISION_FP16 ? 2.0
                                                                 : 4.0;
    const double values =
        a->storage == ACM_STORAGE_MOMENTS && a->backend == ACM_BACKEND_CUDA ? 10.0 : 27.0;
    return 2.0 * values * pop * row_mlups(r, a) * 1e6;
}

/* A row's figures; those against 1 slab are NaN without a measured one. */
typedef struct figures {
    double ms, mlups, speedup, overhead, efficiency, mem_per_cell, gbs, of_copy;
} figures;

static figures row_figures(const row *r, const row *base, const bench_args *a)
{
    figures f;
    f.mlups = row_mlups(r, a);
    f.ms = 1e3 * r->seconds / (double)a->steps;
    const double ref = base != NULL && base->status == ACM_OK ? row_mlups(base, a) : NAN;
    f.speedup = f.mlups / ref;
    f.overhead = 100.0 * (ref / f.mlups - 1.0); /* time per cell update over 1 slab's */
    f.efficiency = 100.0 * f.speedup / r->ndevices;
    f.mem_per_cell = r->memory_bytes / row_cells(r);
    f.gbs = row_traffic(r, a) / 1e9;
    f.of_copy = 100.0 * row_traffic(r, a) / r->copy_bw;
    return f;
}

/* v in `format`, or "-" for NaN (no 1-slab row to compare with). */
static const char *number(char *buf, size_t size, const char *format, double v)
{
    if (isnan(v))
        return "-";
    snprintf(buf, size, format, v);
    return buf;
}

static void print_rows(const row *rows, int count, const row *base, const bench_args *a)
{
    printf("%5s %-8s %-17s %5s %9s %9s %7s %8s %8s %6s %8s %7s %7s %6s\n", "slabs", "exchange",
           "grid", "devs", "ms/step", "MLUPS", "GLUPS", "speed-up", "overhead", "eff.", "B/cell",
           "GB/s", "of copy", "imbal.");
    for (const row *r = rows; r < rows + count; ++r) {
        char grid[40];
        snprintf(grid, sizeof grid, "%dx%dx%d", (int)r->n[0], (int)r->n[1], (int)r->n[2]);
        const char *ex = r->slabs == 1 ? "-" : exchange_name(r) + 1;
        if (r->status != ACM_OK) {
            printf("%5d %-8s %-17s skipped: %s: %s\n", (int)r->slabs, ex, grid,
                   acm_status_string(r->status), r->message);
            continue;
        }
        const figures f = row_figures(r, base, a);
        char speedup[16], overhead[16], efficiency[16];
        printf("%5d %-8s %-17s %5d %9.3f %9.1f %7.3f %8s %8s %6s %8.1f %7.1f %6.1f%% %6.3f\n",
               (int)r->slabs, ex, grid, r->ndevices, f.ms, f.mlups, f.mlups / 1e3,
               number(speedup, sizeof speedup, "%.2fx", f.speedup),
               number(overhead, sizeof overhead, "%+.1f%%", f.overhead),
               number(efficiency, sizeof efficiency, "%.0f%%", f.efficiency), f.mem_per_cell,
               f.gbs, f.of_copy, r->imbalance);
    }
    printf("\nspeed-up: MLUPS over 1 slab's; overhead: time per cell update over 1 slab's, "
           "minus 1\n(the figure that counts while the slabs share one device); exchange: "
           "ghost planes sent\nwhile the rest of the step runs (overlap), after it, or as the "
           "library chooses (auto);\neff.: speed-up "
           "per device in use;\nB/cell: acm_domain_info.memory_bytes per cell; GB/s: 2 x 27 "
           "populations (2 x 10 moments\non the GPU's moment storage) per cell and step, against the "
           "copy bandwidth of the devices in use;\n"
           "imbal.: the costliest slab's cost over the mean, by the partitioner's model\n"
           "(acm_domain_get_slabs).\n");
}

static void write_csv(FILE *fp, const row *rows, int count, const row *base, const bench_args *a)
{
    fprintf(fp, "slabs,exchange,nx,ny,nz,backend,devices_in_use,precision,collision,steps,ms_per_step,mlups,"
                "glups,speedup,overhead_pct,efficiency_pct,bytes_per_cell,gbs,copy_gbs,"
                "copy_pct,imbalance,status\n");
    for (const row *r = rows; r < rows + count; ++r) {
        fprintf(fp, "%d,%s,%d,%d,%d,%s,%d,%s,%s,%ld,", (int)r->slabs,
                r->slabs == 1 ? "" : exchange_name(r) + 1, (int)r->n[0], (int)r->n[1],
                (int)r->n[2], a->backend == ACM_BACKEND_CPU ? "cpu" : "cuda", r->ndevices,
                name_of(precisions, COUNT_OF(precisions), (int)r->info.precision),
                name_of(collisions, COUNT_OF(collisions), (int)r->info.collision), a->steps);
        if (r->status != ACM_OK) { /* the message may hold commas: quoted, quotes doubled */
            fprintf(fp, ",,,,,,,,,,,\"%s: ", acm_status_string(r->status));
            for (const char *c = r->message; *c != '\0'; ++c) {
                if (*c == '"')
                    fputc('"', fp);
                fputc(*c, fp);
            }
            fputs("\"\n", fp);
            continue;
        }
        const figures f = row_figures(r, base, a);
        fprintf(fp, "%.6f,%.3f,%.6f,%.4f,%.3f,%.2f,%.2f,%.3f,%.3f,%.3f,%.4f,ok\n", f.ms,
                f.mlups, f.mlups / 1e3, f.speedup, f.overhead, f.efficiency, f.mem_per_cell,
                f.gbs, r->copy_bw / 1e9, f.of_copy, r->imbalance);
    }
}

/* ---- main ---------------------------------------------------------------------------------- */

/* --mpi: every slab count within the ranks; 0, or -1 with a message. */
static int check_ranks(const bench_args *a, const bench_group *g)
{
    for (int k = 0; g->mpi && k < a->nslabs; ++k)
        if (a->slabs[k] > g->size) {
            if (g->rank == 0)
                fprintf(stderr, "%s: --mpi --slabs %ld: only %d ranks (mpiexec -n)\n", prog,
                        a->slabs[k], g->size);
            return -1;
        }
    return 0;
}

/* Every row, the table and the CSV; the exit status. */
static int run(const bench_args *a, bench_group *g, int argc, char **argv)
{
    if (check_ranks(a, g) != 0 || bench_group_min(g, check_devices(a) == 0) == 0)
        return 2;
    FILE *csv = NULL;
    if (a->csv != NULL && g->rank == 0 && (csv = fopen(a->csv, "w")) == NULL)
        fprintf(stderr, "%s: --csv '%s': %s\n", prog, a->csv, strerror(errno));
    if (bench_group_min(g, a->csv == NULL || g->rank != 0 || csv != NULL) == 0)
        return 2;
    double bw[MAX_DEVICES] = {0};
    bench_place *places = calloc((size_t)g->size, sizeof *places);
    const int measured = places != NULL && (g->mpi ? measure_places(a, g, places)
                                                   : measure_bandwidth(a, bw)) == 0;
    if (!measured) {
        free(places);
        if (csv != NULL)
            fclose(csv);
        return 1;
    }
    if (g->rank == 0)
        print_header(stdout, a, argc, argv, bw, g, places);
    fflush(stdout);

    row rows[MAX_ROWS];
    const row *base = NULL; /* the first 1-slab row: every speed-up is against it */
    int failed = 0, nrows = 0;
    for (int k = 0; k < a->nslabs; ++k) {
        const int passes = a->exchange == EXCHANGE_BOTH && a->slabs[k] > 1 ? 2 : 1;
        for (int pass = 0; pass < passes; ++pass) {
            row *r = &rows[nrows++];
            memset(r, 0, sizeof *r);
            r->slabs = (int32_t)a->slabs[k];
            r->overlap = a->exchange != EXCHANGE_BOTH ? a->exchange
                         : pass == 0              ? EXCHANGE_OVERLAP
                                                  : EXCHANGE_AFTER;
            memcpy(r->n, a->n, sizeof r->n);
            r->n[2] = (int32_t)row_nz(a, r->slabs);
            if (bench_group_row_begin(g, r->slabs))
                run_row(a, r, bw, g, places);
            bench_group_row_end(g);
            char what[48];
            snprintf(what, sizeof what, "  %d slabs skipped", (int)r->slabs);
            if (g->rank == 0)
                cli_failed(prog, r->status, what, r->message);
            /* a backend that cannot divide yet is what the row reports, not a failure */
            failed |= r->status != ACM_OK && r->status != ACM_ERR_UNSUPPORTED;
            base = base == NULL && r->slabs == 1 ? r : base;
        }
    }
    free(places);
    if (g->rank == 0)
        print_rows(rows, nrows, base, a);
    if (csv != NULL) {
        write_csv(csv, rows, nrows, base, a);
        if (fclose(csv) != 0) {
            fprintf(stderr, "%s: --csv '%s': %s\n", prog, a->csv, strerror(errno));
            failed = 1;
        }
    }
    return bench_group_min(g, !failed) ? 0 : 1;
}

int main(int argc, char **argv)
{
    bench_args a;
    const int parsed = parse_args(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    if (a.backend == ACM_BACKEND_CUDA && !acm_backend_available(ACM_BACKEND_CUDA)) {
#if ACM_HAVE_CUDA
        return bench_no_gpu(prog);
#else
        printf("SKIP: %s --backend cuda: this libacmlbm is built without CUDA\n", prog);
        return 77;
#endif
    }
    bench_group g;
    if (bench_group_init(&g, a.mpi, &argc, &argv, prog) != 0)
        return 2;
    const int st = run(&a, &g, argc, argv);
    bench_group_fini(&g);
    return st;
}
