/*
 * libacmlbm -- immersed-boundary benchmark (GPU): the cost of the IB phase of
 * a step for spheres and a knotted tube (many concavities) of 50K to 2M
 * samples, scatter vs gather, unsorted vs Morton-block order for several block
 * edges l, static, spinning and free; the loop counts of gather and scatter (the paper's Table 1); the
 * paper's scene class (a jet over a ball, 400 x 200 x 400, ~48K samples).
 *
 * The IB cost is the step time with the solid minus the step time of the same
 * domain without it, both the best of several timed chunks taken in turns.
 * Every line also gives MLUPS, bytes per cell and the fraction of the copy
 * bandwidth measured at the start.
 *
 *   acm-bench-ib [--size 400x200x400] [--samples 50000,500000,1000000,2000000]
 *                [--shapes sphere,knot] [--seconds S] [--quick]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include <acmlbm/acm_cuda.h>
#include <acmlbm/acmlbm.h>

#include "bench_gpu_common.h"
#include "bench_scene.h"

#define MAX_ITEMS 8
#define ROUNDS 5 /* timed chunks per configuration, taken in turns with the fluid-only run */

typedef struct bench_opts {
    int n[3];
    long samples[MAX_ITEMS];
    int nsamples;
    int sphere, knot;
    double seconds;
    int quick;
} bench_opts;

/* The benchmark's domain with the sample order, block edge and spreading. */
static acm_domain *make_domain(const int n[3], acm_sample_order order, int block,
                               acm_ib_spread spread)
{
    acm_layout *l = NULL;
    acm_layout_create(&l);
    acm_layout_set(l, ACM_LAYOUT_SAMPLE_ORDER, order);
    acm_layout_set(l, ACM_LAYOUT_SAMPLE_BLOCK, block);
    acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, spread);
    acm_domain *d = bench_jet_domain(n, l);
    acm_layout_destroy(l);
    return d;
}

/* Seconds per step of `steps` asynchronous steps. */
static double time_steps(acm_domain *d, int steps)
{
    double t0 = bench_now();
    acm_status st = acm_cuda_step_async(d, steps);
    if (st == ACM_OK)
        st = acm_cuda_domain_synchronize(d);
    if (st != ACM_OK)
        bench_die("acm_step", st, acm_domain_last_error(d));
    return (bench_now() - t0) / steps;
}

/* Steps of one timed chunk: about `seconds` for a step of `t` seconds. */
static int chunk_steps(double t, double seconds)
{
    int s = (int)(seconds / fmax(t, 1e-6));
    return s < 5 ? 5 : (s > 20000 ? 20000 : s);
}

/* Best step times of two domains measured in turns, and b's mean (which
 * counts what happens only every so many steps, like a moving solid's re-sort). */
static void time_pair(acm_domain *a, acm_domain *b, double seconds, double *ta, double *tb,
                      double *tb_mean)
{
    time_steps(a, 5);
    time_steps(b, 5);
    const int sa = chunk_steps(time_steps(a, 5), seconds / ROUNDS);
    const int sb = chunk_steps(time_steps(b, 5), seconds / ROUNDS);
    *ta = *tb = INFINITY;
    *tb_mean = 0.0;
    for (int r = 0; r < ROUNDS; ++r) {
        *ta = fmin(*ta, time_steps(a, sa));
        const double t = time_steps(b, sb);
        *tb = fmin(*tb, t);
        *tb_mean += t / ROUNDS;
    }
}

typedef struct shape {
    const char *name;
    shapes_mesh mesh;
    double extent; /* largest half-extent of the mesh about its centroid */
} shape;

static acm_solid *add_shape(acm_domain *d, const int n[3], const shape *sh, double size,
                            long samples, double spin)
{
    return bench_add_mesh(d, n, &sh->mesh, sh->extent, size, samples, spin);
}

static uint64_t sample_count(acm_solid *s)
{
    acm_solid_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SOLID_INFO_VERSION;
    acm_solid_get_info(s, &si);
    return si.sample_count;
}

/* Loop counts of the paper's Table 1 from the sample positions: gather visits,
 * for each cell of the solid's support, the samples of the 8 cells below it;
 * scatter visits the 8 cells of each sample. */
static void loop_counts(acm_solid *s, const int n[3], long *gmin, long *gmax, double *gmean)
{
    const uint64_t count = sample_count(s);
    double *X = malloc(3 * count * sizeof(double));
    acm_solid_get_samples(s, X, count);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint64_t l = 0; l < count; ++l)
        for (int a = 0; a < 3; ++a) {
            lo[a] = fmin(lo[a], floor(X[3 * l + a]));
            hi[a] = fmax(hi[a], floor(X[3 * l + a]));
        }
    const long e[3] = {(long)(hi[0] - lo[0]) + 2, (long)(hi[1] - lo[1]) + 2, (long)(hi[2] - lo[2]) + 2};
    const size_t cells = (size_t)e[0] * e[1] * e[2];
    unsigned *per = calloc(cells, sizeof *per);
    for (uint64_t l = 0; l < count; ++l) {
        size_t c = 0, stride = 1;
        for (int a = 0; a < 3; ++a) {
            c += (size_t)((long)(floor(X[3 * l + a]) - lo[a])) * stride;
            stride *= (size_t)e[a];
        }
        per[c]++;
    }
    *gmin = -1;
    *gmax = 0;
    double sum = 0;
    long nodes = 0;
    for (long z = 0; z < e[2]; ++z)
        for (long y = 0; y < e[1]; ++y)
            for (long x = 0; x < e[0]; ++x) {
                long visits = 0;
                for (int c = 0; c < 8; ++c) {
                    const long bx = x - (c & 1), by = y - ((c >> 1) & 1), bz = z - (c >> 2);
                    if (bx >= 0 && by >= 0 && bz >= 0)
                        visits += per[(size_t)bx + (size_t)e[0] * ((size_t)by + (size_t)e[1] * (size_t)bz)];
                }
                if (visits == 0)
                    continue;
                *gmin = *gmin < 0 || visits < *gmin ? visits : *gmin;
                *gmax = visits > *gmax ? visits : *gmax;
                sum += (double)visits;
                nodes++;
            }
    *gmean = nodes ? sum / (double)nodes : 0.0;
    (void)n;
    free(per);
    free(X);
}

static void print_row(const char *shape_name, uint64_t samples, const char *variant, double t,
                      double t0, const int n[3], double bw)
{
    const double cells = (double)n[0] * n[1] * n[2], ib = t - t0;
    const double mlups = cells / t / 1e6, bytes = 216.0; /* the fused FP32 step's traffic */
    printf("%-6s %9llu %-16s %8.3f %8.3f %6.1f%% %9.1f %7.0f %6.1f%%\n", shape_name,
           (unsigned long long)samples, variant, 1e3 * t, 1e3 * ib, 100.0 * ib / t,
           (double)samples / fmax(ib, 1e-9) / 1e6, mlups, 100.0 * mlups * 1e6 * bytes / bw);
    fflush(stdout);
}

static void bench_shape(const bench_opts *o, const shape *sh, double size, double bw)
{
    static const struct {
        const char *name;
        acm_sample_order order;
        int block;
        acm_ib_spread spread;
        double spin; /* surface speed of a spinning solid */
        int free_body; /* a free body of density 20 (starting at rest, no gravity) */
    } variants[] = {
        {"scatter unsorted", ACM_SAMPLE_ORDER_AS_SAMPLED, 0, ACM_IB_SPREAD_SCATTER, 0.0, 0},
        {"scatter l=1", ACM_SAMPLE_ORDER_MORTON_BLOCK, 1, ACM_IB_SPREAD_SCATTER, 0.0, 0},
        {"scatter l=2", ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_SCATTER, 0.0, 0},
        {"scatter l=4", ACM_SAMPLE_ORDER_MORTON_BLOCK, 4, ACM_IB_SPREAD_SCATTER, 0.0, 0},
        {"scatter l=8", ACM_SAMPLE_ORDER_MORTON_BLOCK, 8, ACM_IB_SPREAD_SCATTER, 0.0, 0},
        {"spinning l=2", ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_SCATTER, 0.02, 0},
        {"free l=2", ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_SCATTER, 0.0, 1},
        {"gather l=2", ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_GATHER, 0.0, 0},
    };
    static const int quick[] = {0, 2, 5, 6, 7};
    const int nv = o->quick ? 5 : (int)(sizeof variants / sizeof variants[0]);
    for (int k = 0; k < o->nsamples; ++k) {
        double t_scatter = 0, t_gather = 0;
        for (int v = 0; v < nv; ++v) {
            const int vi = o->quick ? quick[v] : v;
            acm_domain *fluid = make_domain(o->n, variants[vi].order, variants[vi].block,
                                            variants[vi].spread);
            acm_domain *d = make_domain(o->n, variants[vi].order, variants[vi].block,
                                        variants[vi].spread);
            acm_solid *s = add_shape(d, o->n, sh, size, o->samples[k], variants[vi].spin);
            if (variants[vi].free_body) {
                const acm_status st = acm_solid_set_motion(s, ACM_MOTION_FREE);
                if (st != ACM_OK)
                    bench_die("acm_solid_set_motion", st, acm_solid_last_error(s));
            }
            double t0, t, t_mean;
            time_pair(fluid, d, o->seconds, &t0, &t, &t_mean);
            print_row(sh->name, sample_count(s), variants[vi].name, t, t0, o->n, bw);
            if (variants[vi].spin > 0.0)
                printf("       spinning at surface speed %.2f: mean of the chunks %.3f ms/step, "
                       "IB %.3f ms (re-sorts on the host included)\n",
                       variants[vi].spin, 1e3 * t_mean, 1e3 * (t_mean - t0));
            if (variants[vi].free_body)
                printf("       a free body: coupled and integrated on the device, in the "
                       "recorded runs of acm_cuda_step_async\n");
            if (variants[vi].block == 2 && variants[vi].spin == 0.0 && !variants[vi].free_body)
                *(variants[vi].spread == ACM_IB_SPREAD_GATHER ? &t_gather : &t_scatter) = t - t0;
            if (variants[vi].spread == ACM_IB_SPREAD_GATHER) {
                long gmin, gmax;
                double gmean;
                loop_counts(s, o->n, &gmin, &gmax, &gmean);
                printf("       loop counts: gather %ld to %ld samples per cell (mean %.1f); "
                       "scatter 8 cells per sample; gather/scatter IB time %.1fx\n",
                       gmin, gmax, gmean, t_gather / fmax(t_scatter, 1e-9));
            }
            acm_domain_destroy(d);
            acm_domain_destroy(fluid);
        }
    }
}

/* The paper's Fig. 15(a) scene class: a ball in a jet, 400 x 200 x 400, ~48K samples. */
static void bench_paper_scene(const bench_opts *o, const shape *ball, double bw)
{
    const int n[3] = {400, 200, 400};
    acm_domain *fluid = make_domain(n, ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_SCATTER);
    acm_domain *d = make_domain(n, ACM_SAMPLE_ORDER_MORTON_BLOCK, 2, ACM_IB_SPREAD_SCATTER);
    acm_solid *s = add_shape(d, n, ball, 32.0, 48336, 0.0);
    double t0, t, t_mean;
    time_pair(fluid, d, o->seconds, &t0, &t, &t_mean);
    printf("\npaper scene (ball of D = 32 in a jet, 400x200x400, FP32, ACM default):\n");
    print_row("ball", sample_count(s), "scatter l=2", t, t0, n, bw);
    printf("       %.3f ms per step (the paper: 560 ms on a TITAN Xp)\n", 1e3 * t);
    acm_domain_destroy(d);
    acm_domain_destroy(fluid);
}

static void parse_args(int argc, char **argv, bench_opts *o)
{
    const char *samples = "50000,500000,1000000,2000000", *shapes = "sphere,knot";
    o->n[0] = 400;
    o->n[1] = 200;
    o->n[2] = 400;
    o->seconds = 1.0;
    o->quick = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick"))
            o->quick = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--size"))
            sscanf(argv[++i], "%dx%dx%d", &o->n[0], &o->n[1], &o->n[2]);
        else if (i + 1 < argc && !strcmp(argv[i], "--samples"))
            samples = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--shapes"))
            shapes = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--seconds"))
            o->seconds = atof(argv[++i]);
    }
    o->nsamples = 0;
    for (const char *p = samples; *p && o->nsamples < MAX_ITEMS;) {
        o->samples[o->nsamples++] = atol(p);
        p += strcspn(p, ",");
        p += *p == ',';
    }
    o->sphere = strstr(shapes, "sphere") != NULL;
    o->knot = strstr(shapes, "knot") != NULL;
}

int main(int argc, char **argv)
{
    bench_opts o;
    parse_args(argc, argv, &o);
    if (!acm_backend_available(ACM_BACKEND_CUDA))
        return bench_no_gpu(argv[0]);
    const double bw = bench_banner();
    printf("domain %dx%dx%d FP32, nu = 1e-3, inlet/outlet along z, periodic x and y; IB ms = "
           "step with the solid - step without\n\n",
           o.n[0], o.n[1], o.n[2]);
    printf("%-6s %9s %-16s %8s %8s %7s %9s %7s %7s\n", "shape", "samples", "variant", "ms/step",
           "IB ms", "IB %", "Msmp/s", "MLUPS", "of copy");
    shape ball = {"sphere", {0}, 1.0}, knot = {"knot", {0}, 0.0};
    if (shapes_sphere(&ball.mesh, 5, 1.0) != 0 || shapes_trefoil(&knot.mesh, 240, 24) != 0) {
        fprintf(stderr, "cannot build the meshes\n");
        return 1;
    }
    for (size_t i = 0; i < knot.mesh.nv; ++i) /* half-extent about the origin */
        for (int a = 0; a < 3; ++a)
            knot.extent = fmax(knot.extent, fabs(knot.mesh.v[3 * i + a]));
    const double size = 0.6 * o.n[1]; /* across, in cells */
    if (o.sphere)
        bench_shape(&o, &ball, size, bw);
    if (o.knot)
        bench_shape(&o, &knot, size, bw);
    bench_paper_scene(&o, &ball, bw);
    printf("\nMsmp/s: million samples per second of IB time. MLUPS and 'of copy' count the "
           "fluid traffic only (216 B/cell).\n");
    shapes_free(&ball.mesh);
    shapes_free(&knot.mesh);
    return 0;
}
