/*
 * libacmlbm -- GPU benchmark: measures the device's copy bandwidth, then the
 * throughput of each kernel structure (baseline, split, fused) and storage
 * precision (FP32, FP16) on several grid sizes, and prints MLUPS, bytes moved
 * per cell, achieved bandwidth and its fraction of the copy bandwidth.
 * "inplace" is the fused kernel with one population array (the AA pattern).
 * --storage moments runs moment storage (10 moments a cell, issue #30) with
 * the fused two-array variants, printed as "<variant>/m".
 *
 *   acm-bench-gpu [--sizes 128,256,400x200x400] [--variants baseline,split,fused,inplace]
 *                 [--precisions fp32,fp16] [--models acm,bgk,cm] [--seconds S]
 *                 [--storage populations,moments] [--block B] [--alpha A] [--device D]
 *                 [--faces lid|box]
 * --faces box: walls on all six faces (the lid moving), as a game's hall or a
 * closed tank, whose edges' cells lie next to two or three walls; lid (the
 * default): walls at y = 0 and y = n - 1 only, periodic along x and z.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <acmlbm/acm_cuda.h>
#include <acmlbm/acmlbm.h>

#include "bench_gpu_common.h"

#define MAX_ITEMS 16

/* A kernel structure and a streaming scheme ("inplace": the fused kernel
 * with one population array). */
typedef struct bench_variant {
    const char *name;
    acm_kernel kernel;
    acm_streaming streaming;
} bench_variant;

static const bench_variant bench_variants[] = {
    {"baseline", ACM_KERNEL_BASELINE, ACM_STREAMING_TWO_ARRAYS},
    {"split", ACM_KERNEL_SPLIT, ACM_STREAMING_TWO_ARRAYS},
    {"fused", ACM_KERNEL_FUSED, ACM_STREAMING_TWO_ARRAYS},
    {"inplace", ACM_KERNEL_FUSED, ACM_STREAMING_IN_PLACE},
};

typedef struct bench_opts {
    int sizes[MAX_ITEMS][3];
    int nsizes;
    const bench_variant *variants[MAX_ITEMS];
    int nvariants;
    acm_precision precisions[MAX_ITEMS];
    int nprecisions;
    acm_collision models[MAX_ITEMS];
    int nmodels;
    acm_storage storages[MAX_ITEMS];
    int nstorages;
    double seconds;
    int block;
    long alpha;
    int device;
    bool box; /* --faces box: walls on every face */
} bench_opts;

static const char *model_name(acm_collision m)
{
    switch (m) {
    case ACM_COLLISION_BGK: return "bgk";
    case ACM_COLLISION_RM_MRT: return "rm";
    case ACM_COLLISION_CM_MRT: return "cm";
    case ACM_COLLISION_ACM_LI2020: return "acm-li2020";
    default: return "acm";
    }
}

/* Bytes each structure moves per cell and step (every array touched once;
 * e = bytes of a stored population or moment, r = of an arithmetic value). */
static double traffic(acm_kernel k, acm_storage s, acm_precision p, acm_collision m)
{
    double e = p == ACM_PRECISION_FP16 ? 2 : p == ACM_PRECISION_FP64 ? 8 : 4;
    double r = p == ACM_PRECISION_FP64 ? 8 : 4;
    double tau = m == ACM_COLLISION_ACM_LI2020 ? 2 * r : 0;
    if (s == ACM_STORAGE_MOMENTS) /* fused: read a cell's 10 moments, write them */
        return 20 * e + tau;
    switch (k) {
    case ACM_KERNEL_BASELINE: /* stream 54e, macro 27e + 4r, collide 54e */
        return 135 * e + 4 * r + tau;
    case ACM_KERNEL_SPLIT: /* stream 54e, macro 27e+4r, moments 27e+27r, outputs 2(27r+4r)+27e, marks */
        return 135 * e + 93 * r + 1 + tau;
    default: /* fused and in place: pull 27e, write 27e */
        return 54 * e + tau;
    }
}

/* The median of n values (sorted in place: a few dozen at most). */
static double median(double *t, int n)
{
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
            const double s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    return t[n / 2];
}

/* The host's time of acm_cuda_step_async(d, 4) on an idle device (the
 * median of 21 calls, µs): what a game loop's frame of 4 steps costs the
 * host. */
static double enqueue_time(acm_domain *d)
{
    double t[21];
    for (int r = 0; r < 21; ++r) {
        if (acm_cuda_domain_synchronize(d) != ACM_OK)
            return -1.0;
        const double t0 = bench_now();
        if (acm_cuda_step_async(d, 4) != ACM_OK)
            return -1.0;
        t[r] = (bench_now() - t0) * 1e6;
    }
    return acm_cuda_domain_synchronize(d) == ACM_OK ? median(t, 21) : -1.0;
}

/* The wall time of a step taken by acm_step(d, 50), the synchronous call with
 * the library's default divergence checks (median of 5 calls, µs a step). */
static double call_time(acm_domain *d)
{
    double t[5];
    for (int r = 0; r < 5; ++r) {
        const double t0 = bench_now();
        if (acm_step(d, 50) != ACM_OK)
            return -1.0;
        t[r] = (bench_now() - t0) * 1e6 / 50.0;
    }
    return median(t, 5);
}

/* MLUPS of one configuration, or a negative number with a message; the
 * domain's memory per cell into *mem_per_cell, the enqueue of 4 steps
 * (enqueue_time) into *enqueue_us, a step of acm_step (call_time) into *call_us. */
static double run_one(const bench_opts *o, const int n[3], const bench_variant *v,
                      acm_storage storage, acm_precision p, acm_collision m, double *mem_per_cell,
                      double *enqueue_us, double *call_us)
{
    acm_layout *l = NULL;
    acm_layout_create(&l);
    acm_layout_set(l, ACM_LAYOUT_KERNEL, v->kernel);
    acm_layout_set(l, ACM_LAYOUT_STREAMING, v->streaming);
    acm_layout_set(l, ACM_LAYOUT_STORAGE, storage);
    if (o->block > 0)
        acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, o->block);
    if (o->alpha > 0)
        acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, o->alpha);
    char err[256] = "";
    acm_domain_options opts = ACM_DOMAIN_OPTIONS_INIT;
    opts.nx = n[0];
    opts.ny = n[1];
    opts.nz = n[2];
    opts.viscosity = 0.001;
    opts.collision = m;
    opts.precision = p;
    opts.backend = ACM_BACKEND_CUDA;
    opts.device = o->device;
    opts.layout = l;
    opts.initial_velocity[0] = 0.05;
    opts.error_buffer = err;
    opts.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &opts);
    acm_layout_destroy(l);
    if (st != ACM_OK) {
        printf("  (%s: %s)\n", acm_status_string(st), err);
        return -1;
    }
    /* a flow with walls and a lid, as in a real scene */
    const double lid[3] = {0.05, 0, 0};
    for (int f = 0; f < ACM_FACE_COUNT; ++f) /* --faces box: the other four walls too */
        if (o->box || f == ACM_FACE_Y_MIN || f == ACM_FACE_Y_MAX)
            acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL,
                                f == ACM_FACE_Y_MAX ? lid : NULL);
    double mlups = -1;
    st = acm_cuda_step_async(d, 5);
    if (st == ACM_OK)
        st = acm_cuda_domain_synchronize(d);
    int steps = 10;
    while (st == ACM_OK) {
        double t0 = bench_now();
        st = acm_cuda_step_async(d, steps);
        if (st == ACM_OK)
            st = acm_cuda_domain_synchronize(d);
        double t = bench_now() - t0;
        if (t >= o->seconds || st != ACM_OK) {
            mlups = (double)n[0] * n[1] * n[2] * steps / t / 1e6;
            *enqueue_us = st == ACM_OK ? enqueue_time(d) : -1.0;
            *call_us = st == ACM_OK ? call_time(d) : -1.0;
            break;
        }
        steps = (int)(steps * fmin(8.0, 1.2 * o->seconds / fmax(t, 1e-4)));
    }
    if (st != ACM_OK) {
        printf("  (%s: %s)\n", acm_status_string(st), acm_domain_last_error(d));
        mlups = -1;
    }
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    *mem_per_cell = acm_domain_get_info(d, &info) == ACM_OK ? info.bytes_per_cell : -1.0;
    acm_domain_destroy(d);
    return mlups;
}

static int parse_list(const char *s, char items[MAX_ITEMS][32])
{
    int n = 0;
    while (*s && n < MAX_ITEMS) {
        size_t len = strcspn(s, ",");
        snprintf(items[n++], 32, "%.*s", (int)len, s);
        s += len + (s[len] == ',');
    }
    return n;
}

static void parse_args(int argc, char **argv, bench_opts *o)
{
    char items[MAX_ITEMS][32];
    const char *sizes = "128,256,400x200x400", *variants = "baseline,split,fused",
               *precisions = "fp32,fp16", *models = "acm", *storages = "populations";
    o->seconds = 1.0;
    o->block = 0;
    o->alpha = 0;
    o->device = 0;
    o->box = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--variants")) variants = argv[i + 1];
        else if (!strcmp(argv[i], "--precisions")) precisions = argv[i + 1];
        else if (!strcmp(argv[i], "--models")) models = argv[i + 1];
        else if (!strcmp(argv[i], "--storage")) storages = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds")) o->seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--block")) o->block = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--alpha")) o->alpha = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--device")) o->device = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--faces")) {
            if (strcmp(argv[i + 1], "lid") != 0 && strcmp(argv[i + 1], "box") != 0) {
                fprintf(stderr, "acm-bench-gpu: --faces takes lid or box, not '%s'\n", argv[i + 1]);
                exit(2);
            }
            o->box = !strcmp(argv[i + 1], "box");
        }
    }
    o->nsizes = parse_list(sizes, items);
    for (int i = 0; i < o->nsizes; ++i) {
        int a = 0, b = 0, c = 0;
        if (sscanf(items[i], "%dx%dx%d", &a, &b, &c) != 3)
            b = c = a = atoi(items[i]);
        o->sizes[i][0] = a;
        o->sizes[i][1] = b;
        o->sizes[i][2] = c;
    }
    o->nvariants = parse_list(variants, items);
    for (int i = 0; i < o->nvariants; ++i) {
        o->variants[i] = &bench_variants[2]; /* unknown names: fused */
        for (size_t b = 0; b < sizeof bench_variants / sizeof bench_variants[0]; ++b)
            if (!strcmp(items[i], bench_variants[b].name))
                o->variants[i] = &bench_variants[b];
    }
    o->nprecisions = parse_list(precisions, items);
    for (int i = 0; i < o->nprecisions; ++i)
        o->precisions[i] = !strcmp(items[i], "fp16")   ? ACM_PRECISION_FP16
                           : !strcmp(items[i], "fp64") ? ACM_PRECISION_FP64
                                                       : ACM_PRECISION_FP32;
    o->nmodels = parse_list(models, items);
    for (int i = 0; i < o->nmodels; ++i)
        o->models[i] = !strcmp(items[i], "bgk")          ? ACM_COLLISION_BGK
                       : !strcmp(items[i], "cm")         ? ACM_COLLISION_CM_MRT
                       : !strcmp(items[i], "rm")         ? ACM_COLLISION_RM_MRT
                       : !strcmp(items[i], "acm-li2020") ? ACM_COLLISION_ACM_LI2020
                                                         : ACM_COLLISION_ACM_LI2018;
    o->nstorages = parse_list(storages, items);
    for (int i = 0; i < o->nstorages; ++i)
        o->storages[i] =
            !strcmp(items[i], "moments") ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS;
}

/* Moment storage runs the fused kernel with two arrays only. */
static bool storage_runs(acm_storage s, const bench_variant *v)
{
    return s != ACM_STORAGE_MOMENTS ||
           (v->kernel == ACM_KERNEL_FUSED && v->streaming == ACM_STREAMING_TWO_ARRAYS);
}

int main(int argc, char **argv)
{
    bench_opts o;
    parse_args(argc, argv, &o);
    if (!acm_backend_available(ACM_BACKEND_CUDA))
        return bench_no_gpu(argv[0]);
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, o.device);
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
    double bw = bench_copy_bandwidth(o.device, (size_t)2 << 30);
    printf("device: %s (%d SMs), libacmlbm %s, %s\n", prop.name, prop.multiProcessorCount,
           acm_version_string(), date);
    printf("measured device-to-device copy bandwidth: %.0f GB/s (bytes read + written)\n",
           bw / 1e9);
    printf("ceiling for FP32 D3Q27 (216 B/cell): %.0f MLUPS; FP16 (108 B/cell): %.0f MLUPS\n",
           bw / 216e6, bw / 108e6);
    printf("faces: %s\n\n", o.box ? "walls on all six (the lid at y = n - 1 moving)"
                                 : "walls at y = 0 and a moving lid at y = n - 1, periodic x and z");
    printf("%-9s %-5s %-14s %-10s %9s %8s %7s %9s %7s %10s %7s %8s\n", "variant", "prec", "size",
           "model", "MLUPS", "ms/step", "B/cell", "GB/s", "of copy", "mem B/cell", "enq4 us",
           "step us");
    for (int s = 0; s < o.nsizes; ++s)
        for (int m = 0; m < o.nmodels; ++m)
            for (int p = 0; p < o.nprecisions; ++p)
                for (int v = 0; v < o.nvariants; ++v)
                    for (int st = 0; st < o.nstorages; ++st) {
                        const acm_storage sto = o.storages[st];
                        if (!storage_runs(sto, o.variants[v]))
                            continue;
                        double mem = -1.0, enq = -1.0, call = -1.0;
                        double mlups = run_one(&o, o.sizes[s], o.variants[v], sto, o.precisions[p],
                                               o.models[m], &mem, &enq, &call);
                        double bytes =
                            traffic(o.variants[v]->kernel, sto, o.precisions[p], o.models[m]);
                        char size[32], name[16];
                        snprintf(size, sizeof size, "%dx%dx%d", o.sizes[s][0], o.sizes[s][1],
                                 o.sizes[s][2]);
                        snprintf(name, sizeof name, "%s%s", o.variants[v]->name,
                                 sto == ACM_STORAGE_MOMENTS ? "/m" : "");
                        if (mlups < 0) {
                            printf("%-9s %-5s %-14s %-10s %9s\n", name,
                                   o.precisions[p] == ACM_PRECISION_FP16 ? "fp16" : "fp32", size,
                                   model_name(o.models[m]), "failed");
                            continue;
                        }
                        const double cells = (double)o.sizes[s][0] * o.sizes[s][1] * o.sizes[s][2];
                        printf("%-9s %-5s %-14s %-10s %9.0f %8.3f %7.0f %9.0f %6.1f%% %10.1f "
                               "%7.1f %8.1f\n",
                               name,
                               o.precisions[p] == ACM_PRECISION_FP16   ? "fp16"
                               : o.precisions[p] == ACM_PRECISION_FP64 ? "fp64"
                                                                       : "fp32",
                               size, model_name(o.models[m]), mlups, cells / mlups / 1e3, bytes,
                               mlups * bytes / 1e3,
                               100.0 * mlups * bytes * 1e6 / bw, mem, enq, call);
                        fflush(stdout);
                    }
    printf("\nB/cell: bytes each kernel structure reads and writes per cell and step, every "
           "array touched once (fused FP32: 2 x 27 x 4 = 216; moments: 2 x 10 x 4 = 80 "
           "FP32, 40 16-bit).\nmem B/cell: what the domain "
           "holds on the device per cell (acm_domain_info.bytes_per_cell).\nenq4 us: the "
           "host's time of acm_cuda_step_async(d, 4) on an idle device (median of 21).\nstep us: "
           "the wall time of a step of acm_step(d, 50), with the default divergence checks "
           "(median of 5 calls).\n");
    return 0;
}
