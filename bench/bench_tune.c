/*
 * libacmlbm -- autotuner benchmark (GPU): the paper's Fig. 8 setting, a
 * 200 x 400 x 200 domain with (a) a sphere or (b) a knotted tube (many
 * concavities, >= 1M samples), static or rotating. For each scene: the
 * search's time, the layout it chose, the step time of the tuned layout
 * against the defaults and the worst candidate, and with --exhaustive the gap
 * to the best of every combination (both re-measured in turns with the same
 * window). Prints every candidate (the data behind Fig. 8) and writes them as
 * CSV. Every line gives ms per step, MLUPS, bytes per cell and the fraction
 * of the copy bandwidth measured at the start.
 *
 *   acm-bench-tune [--size 200x400x200] [--scenes sphere,knot] [--motions static,rotating]
 *                  [--samples 1200000] [--budget 60] [--exhaustive] [--csv PREFIX]
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

#define ROUNDS 3 /* timed chunks per layout in the re-measurement, taken in turns */

typedef struct bench_opts {
    int n[3];
    int sphere, knot, fixed, rotating;
    long samples;
    double budget;
    int exhaustive;
    const char *csv;
} bench_opts;

/* Mean seconds per step of `steps` steps. */
static double time_steps(acm_domain *d, int64_t steps)
{
    const double t0 = bench_now();
    acm_status st = acm_step(d, steps);
    if (st != ACM_OK)
        bench_die("acm_step", st, acm_domain_last_error(d));
    return (bench_now() - t0) / (double)steps;
}

static acm_layout *layout_of(const char *text)
{
    acm_layout *l = NULL;
    acm_layout_create(&l);
    if (acm_layout_from_string(l, text) != ACM_OK)
        bench_die("acm_layout_from_string", ACM_ERR_BAD_FORMAT, acm_layout_last_error(l));
    return l;
}

/* Best-of-ROUNDS step times of layouts a and b, measured in turns over
 * `steps` steps each (the state goes on; a moving solid keeps turning). */
static void time_layouts(acm_domain *d, const char *a, const char *b, int64_t steps, double *ta,
                         double *tb)
{
    acm_layout *la = layout_of(a), *lb = layout_of(b);
    *ta = *tb = INFINITY;
    for (int r = 0; r < ROUNDS; ++r) {
        acm_domain_set_layout(d, la);
        time_steps(d, 3);
        *ta = fmin(*ta, time_steps(d, steps));
        acm_domain_set_layout(d, lb);
        time_steps(d, 3);
        *tb = fmin(*tb, time_steps(d, steps));
    }
    acm_layout_destroy(la);
    acm_layout_destroy(lb);
}

static acm_tune_entry entry_of(const acm_tune_report *r, int32_t i)
{
    acm_tune_entry e;
    memset(&e, 0, sizeof e);
    e.version = ACM_TUNE_ENTRY_VERSION;
    acm_tune_report_entry(r, i, &e);
    return e;
}

static acm_tune_summary summary_of(const acm_tune_report *r)
{
    acm_tune_summary s;
    memset(&s, 0, sizeof s);
    s.version = ACM_TUNE_SUMMARY_VERSION;
    acm_tune_report_summary(r, &s);
    return s;
}

/* One progress line per candidate, overwritten in place on a terminal. */
static int progress(const acm_tune_progress *p, void *user)
{
    (void)user;
    fprintf(stderr, "\r  %-10s %3d/%-3d %6.1f s  best %.3f ms   ", p->stage, p->done, p->planned,
            p->elapsed_s, p->best_ms);
    return 0;
}

static double bytes_per_cell(acm_domain *d)
{
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    acm_domain_get_info(d, &info);
    return info.bytes_per_cell;
}

/* A line of figures for a step time t: ms, MLUPS, fraction of the copy
 * bandwidth (the fluid traffic of 216 B per cell in FP32 at 2 x 27 x 4 B). */
static void figures(double t, double cells, double bw, char *buf, size_t size)
{
    const double mlups = cells / t / 1e6;
    snprintf(buf, size, "%8.3f ms %8.0f MLUPS %5.1f %% of copy", 1e3 * t, mlups,
             100.0 * mlups * 1e6 * 216.0 / bw);
}

static void print_entries(const acm_tune_report *r)
{
    const acm_tune_summary s = summary_of(r);
    printf("  %-4s %-10s %-9s %-96s %9s %8s\n", "#", "stage", "status", "layout", "ms/step",
           "MLUPS");
    for (int32_t i = 0; i < s.entries; ++i) {
        const acm_tune_entry e = entry_of(r, i);
        printf("  %-4d %-10s %-9s %-96s %9.3f %8.0f%s\n", (int)i,
               e.stage == ACM_TUNE_STAGE_FLUID    ? "fluid"
               : e.stage == ACM_TUNE_STAGE_SOLIDS ? "solids"
               : e.stage == ACM_TUNE_STAGE_FINAL  ? "final"
                                                  : "exhaust.",
               e.status == ACM_OK ? "ok" : "discarded", e.layout + 13, e.ms_per_step, e.mlups,
               i == s.best ? "  <- chosen" : "");
        if (e.status != ACM_OK)
            printf("       %s\n", e.message);
    }
}

static acm_tune_report *tune(acm_domain *d, double budget, int exhaustive, int64_t window,
                             acm_layout *best)
{
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.time_budget_s = budget;
    o.window_steps = window;
    o.flags = exhaustive ? ACM_TUNE_EXHAUSTIVE : 0u;
    o.progress = progress;
    acm_tune_report *r = NULL;
    acm_status st = acm_domain_autotune(d, &o, best, &r);
    fprintf(stderr, "\n");
    if (st != ACM_OK)
        bench_die("acm_domain_autotune", st, acm_domain_last_error(d));
    return r;
}

static void bench_scene(const bench_opts *o, const char *name, const shapes_mesh *m, double extent,
                        int rotating, double bw)
{
    acm_domain *d = bench_jet_domain(o->n, NULL);
    acm_solid *s = bench_add_mesh(d, o->n, m, extent, 0.6 * o->n[0],
                                  name[0] == 's' ? o->samples / 4 : o->samples,
                                  rotating ? 0.05 : 0.0);
    acm_solid_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SOLID_INFO_VERSION;
    acm_solid_get_info(s, &si);
    time_steps(d, 20); /* the flow starts around the solid */
    const double cells = (double)o->n[0] * o->n[1] * o->n[2];
    printf("\n== %s, %s, %llu samples, %.1f B/cell ==\n", name, rotating ? "rotating" : "static",
           (unsigned long long)si.sample_count, bytes_per_cell(d));
    acm_layout *best = NULL;
    acm_layout_create(&best);
    acm_tune_report *r = tune(d, o->budget, 0, 0, best);
    const acm_tune_summary sum = summary_of(r);
    print_entries(r);
    const acm_tune_entry b = entry_of(r, sum.best), def = entry_of(r, sum.default_entry),
                         worst = entry_of(r, sum.worst);
    char line[128];
    printf("  tuning: %.1f s, %d candidates (%d discarded)%s; not tuned: %s\n", sum.seconds,
           (int)sum.entries, (int)sum.failed, sum.budget_reached ? ", budget reached" : "",
           sum.not_tuned);
    figures(b.ms_per_step * 1e-3, cells, bw, line, sizeof line);
    printf("  tuned   %s  %s\n", line, b.layout + 13);
    figures(def.ms_per_step * 1e-3, cells, bw, line, sizeof line);
    printf("  default %s  (tuned is %.1f %% faster)\n", line,
           100.0 * (def.ms_per_step / b.ms_per_step - 1.0));
    figures(worst.ms_per_step * 1e-3, cells, bw, line, sizeof line);
    printf("  worst   %s  %s (tuned is %.2fx as fast)\n", line, worst.layout + 13,
           worst.ms_per_step / b.ms_per_step);
    if (o->csv != NULL) {
        char path[512];
        snprintf(path, sizeof path, "%s-%s-%s.csv", o->csv, name, rotating ? "rotating" : "static");
        if (acm_tune_report_write_csv(r, path) == ACM_OK)
            printf("  candidates written to %s\n", path);
    }
    if (o->exhaustive) {
        acm_layout *ebest = NULL;
        acm_layout_create(&ebest);
        /* half the search's first-round window per candidate (its minutes are the
         * point of the search); the two winners are then re-measured alike */
        const int64_t window = (b.steps / 3 + 1) / 2;
        acm_tune_report *er = tune(d, 3600.0, 1, window, ebest);
        const acm_tune_summary es = summary_of(er);
        const acm_tune_entry eb = entry_of(er, es.best);
        double tp, te;
        time_layouts(d, b.layout, eb.layout, 3 * b.steps, &tp, &te);
        printf("  exhaustive: %.1f s, %d candidates of %lld steps; its best %s\n", es.seconds,
               (int)es.entries, (long long)window, eb.layout + 13);
        printf("  re-measured in turns (%d x %lld steps): search %.3f ms, exhaustive %.3f ms: "
               "the search is within %.2f %% of the exhaustive best (%.1f %% of its candidates)\n",
               ROUNDS, 3 * (long long)b.steps, 1e3 * tp, 1e3 * te, 100.0 * (tp / te - 1.0),
               100.0 * sum.entries / es.entries);
        if (o->csv != NULL) {
            char path[512];
            snprintf(path, sizeof path, "%s-%s-%s-exhaustive.csv", o->csv, name,
                     rotating ? "rotating" : "static");
            acm_tune_report_write_csv(er, path);
        }
        acm_tune_report_destroy(er);
        acm_layout_destroy(ebest);
    }
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}

static int has(const char *list, const char *word) { return strstr(list, word) != NULL; }

static void parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->n[0] = 200;
    o->n[1] = 400;
    o->n[2] = 200;
    o->sphere = o->knot = o->fixed = o->rotating = 1;
    o->samples = 1200000;
    o->budget = 60.0;
    for (int i = 1; i < argc; ++i) {
        const char *next = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(argv[i], "--size") == 0 && sscanf(next, "%dx%dx%d", &o->n[0], &o->n[1], &o->n[2]) == 3)
            ++i;
        else if (strcmp(argv[i], "--scenes") == 0 && ++i)
            o->sphere = has(next, "sphere"), o->knot = has(next, "knot");
        else if (strcmp(argv[i], "--motions") == 0 && ++i)
            o->fixed = has(next, "static"), o->rotating = has(next, "rotating");
        else if (strcmp(argv[i], "--samples") == 0 && ++i)
            o->samples = atol(next);
        else if (strcmp(argv[i], "--budget") == 0 && ++i)
            o->budget = atof(next);
        else if (strcmp(argv[i], "--csv") == 0 && ++i)
            o->csv = next;
        else if (strcmp(argv[i], "--exhaustive") == 0)
            o->exhaustive = 1;
        else {
            fprintf(stderr, "usage: %s [--size 200x400x200] [--scenes sphere,knot] "
                            "[--motions static,rotating] [--samples N] [--budget S] "
                            "[--exhaustive] [--csv PREFIX]\n", argv[0]);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    bench_opts o;
    parse_args(argc, argv, &o);
    if (!acm_backend_available(ACM_BACKEND_CUDA))
        return bench_no_gpu(argv[0]);
    const double bw = bench_banner();
    printf("domain %dx%dx%d FP32, nu = 1e-3, inlet/outlet along z; budget %.0f s\n", o.n[0],
           o.n[1], o.n[2], o.budget);
    shapes_mesh ball = {0}, knot = {0};
    if (shapes_sphere(&ball, 5, 1.0) != 0 || shapes_trefoil(&knot, 240, 24) != 0) {
        fprintf(stderr, "cannot build the meshes\n");
        return 1;
    }
    double knot_extent = 0.0;
    for (size_t i = 0; i < knot.nv; ++i)
        for (int a = 0; a < 3; ++a)
            knot_extent = fmax(knot_extent, fabs(knot.v[3 * i + a]));
    for (int rot = 0; rot < 2; ++rot) {
        if (!(rot ? o.rotating : o.fixed))
            continue;
        if (o.sphere)
            bench_scene(&o, "sphere", &ball, 1.0, rot, bw);
        if (o.knot)
            bench_scene(&o, "knot", &knot, knot_extent, rot, bw);
    }
    shapes_free(&ball);
    shapes_free(&knot);
    return 0;
}
