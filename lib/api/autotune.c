/*
 * libacmlbm -- the autotuner (paper Sec. 4.4): candidate layouts measured on
 * the real scene, a search that prunes with the separation of the fluid and
 * the immersed-boundary costs, a report, a cache. acm_tune.h says what it
 * does; docs/performance.md ("Autotuning") why.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>  /* errno */
#include <math.h>   /* ceil, floor, fmax, fmin */
#include <stdio.h>  /* FILE, fopen, fputs, remove */
#include <stdlib.h> /* calloc, free, realloc */
#include <string.h> /* memcpy, strcmp, strerror, strstr */
#include <time.h>   /* clock_gettime */

#include "alloc.h"
#include "backend.h"
#include "calls.h" /* acm__domain_finish */
#include "file.h"  /* acm__file_fopen, acm__file_gets, acm__temp_fopen, acm__temp_finish */
#include "guard.h"
#include "options.h"
#include "pipeline.h" /* acm__domain_check_faces */
#include "solid.h"
#include "state.h"

#define ACM_TUNE_DEFAULT_BUDGET 60.0
#define ACM_TUNE_WARMUP 2      /* steps before each window: first launches, caches */
#define ACM_TUNE_FINAL_FACTOR 3 /* the final round's window, in first-round windows */
#define ACM_TUNE_FINALISTS 2   /* best fluid and best IB settings crossed in the final */
#define ACM_TUNE_WINDOWS 45.0 /* windows of a search: ~24 candidates, 6 finalists x 3 */
#define ACM_TUNE_CHUNKS 4      /* a window is timed in chunks ... */
#define ACM_TUNE_PRUNE 2.0     /* ... and cut after half of them at this many times the best */
#define ACM_TUNE_LINE 1024     /* longest cache line */

/* Candidate values (docs/performance.md, "Autotuning"). */
static const int64_t gpu_alphas[] = {32, 128, 512, 1024, 2048, 8192};
static const int64_t cpu_alphas[] = {16, 64, 256, 1024, 4096, 16384};
static const int64_t gpu_blocks[] = {64, 128, 256};
static const int64_t sample_blocks[] = {1, 2, 4, 8};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct acm_tune_report {
    acm_tune_entry *e;
    int32_t n, cap;
    acm_tune_summary sum;
};

typedef struct tune_ctx {
    acm_domain *d;
    acm_tune_options o;
    acm_tune_report *r;
    const acm_snapshot *snap;
    const acm_layout *original; /* the caller's layout, the snapshot's */
    double t0;
    int64_t window;        /* steps of a first-round measurement */
    int32_t planned;
    double best_ms;
    bool gpu, solids;
    acm_status stop;       /* cancelled or a device failure: ends the search */
} tune_ctx;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- options and report ---------------------------------------------------------------- */

ACM_API acm_status acm_tune_options_init(acm_tune_options *opts, uint32_t version)
{
    const acm_tune_options def = ACM_TUNE_OPTIONS_INIT;
    return acm__options_init(opts, &def, version == ACM_TUNE_OPTIONS_VERSION ? sizeof def : 0,
                             version);
}

ACM_API void acm_tune_report_destroy(acm_tune_report *report)
{
    if (report == NULL)
        return;
    acm__free(report->e);
    acm__free(report);
}

ACM_API acm_status acm_tune_report_summary(const acm_tune_report *report,
                                           acm_tune_summary *summary)
{
    if (report == NULL || summary == NULL)
        return ACM_ERR_NULL_POINTER;
    if (summary->version != ACM_TUNE_SUMMARY_VERSION)
        return ACM_ERR_BAD_VERSION;
    *summary = report->sum;
    return ACM_OK;
}

ACM_API acm_status acm_tune_report_entry(const acm_tune_report *report, int32_t index,
                                         acm_tune_entry *entry)
{
    if (report == NULL || entry == NULL)
        return ACM_ERR_NULL_POINTER;
    if (entry->version != ACM_TUNE_ENTRY_VERSION)
        return ACM_ERR_BAD_VERSION;
    if (index < 0 || index >= report->n)
        return ACM_ERR_OUT_OF_RANGE;
    *entry = report->e[index];
    return ACM_OK;
}

static const char *stage_name(acm_tune_stage s)
{
    switch (s) {
    case ACM_TUNE_STAGE_FLUID: return "fluid";
    case ACM_TUNE_STAGE_SOLIDS: return "solids";
    case ACM_TUNE_STAGE_FINAL: return "final";
    default: return "exhaustive";
    }
}

ACM_API acm_status acm_tune_report_write_csv(const acm_tune_report *report, const char *path)
{
    if (report == NULL || path == NULL)
        return ACM_ERR_NULL_POINTER;
    char tmp[4096], msg[ACM_ERROR_SIZE]; /* a report has no message: the status says it */
    FILE *f = acm__temp_fopen(tmp, sizeof tmp, path, msg, sizeof msg); /* renamed when whole */
    if (f == NULL)
        return ACM_ERR_IO;
    fprintf(f, "index,stage,csoa_group,kernel,block_size,sample_block,sample_order,ib_spread,"
               "streaming,precision,status,ms_per_step,mlups,steps,chosen\n");
    for (int32_t i = 0; i < report->n; ++i) {
        const acm_tune_entry *e = &report->e[i];
        fprintf(f, "%d,%s", (int)i, stage_name(e->stage));
        /* the layout text's values, in key order, as columns */
        const char *p = strchr(e->layout, ' ');
        p = p != NULL ? strchr(p + 1, ' ') : NULL;
        while (p != NULL) {
            const char *eq = strchr(p, '='), *end = strchr(p + 1, ' ');
            if (eq == NULL)
                break;
            fprintf(f, ",%.*s", (int)((end ? end : eq + strlen(eq)) - eq - 1), eq + 1);
            p = end;
        }
        fprintf(f, ",%s,%.6f,%.1f,%lld,%d\n", e->status == ACM_OK ? "ok" : acm_status_string(e->status),
                e->ms_per_step, e->mlups, (long long)e->steps, i == report->sum.best);
    }
    int e = ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && e == 0)
        e = errno ? errno : EIO;
    return acm__temp_finish(tmp, path, e, msg, sizeof msg);
}

static acm_status report_add(acm_domain *d, acm_tune_report *r, const acm_tune_entry *e)
{
    if (r->n == r->cap) {
        int32_t cap = r->cap ? 2 * r->cap : 64;
        acm_tune_entry *p = acm__realloc(r->e, (size_t)cap * sizeof *p);
        if (p == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot grow the tuning report");
        r->e = p;
        r->cap = cap;
    }
    r->e[r->n++] = *e;
    return ACM_OK;
}

/* ---- measuring one candidate ----------------------------------------------------------- */

static void layout_text(const acm_layout *l, char *buf)
{
    (void)acm_layout_to_string(l, buf, ACM_LAYOUT_STRING_SIZE); /* always fits */
}

/* Stages that share a window length. */
static bool first_round(acm_tune_stage s)
{
    return s == ACM_TUNE_STAGE_FLUID || s == ACM_TUNE_STAGE_SOLIDS;
}

static bool same_window(acm_tune_stage a, acm_tune_stage b)
{
    return a == b || (first_round(a) && first_round(b));
}

/* An earlier measurement of the same layout with the same window, or -1. */
static int32_t find_entry(const tune_ctx *c, const char *text, acm_tune_stage stage)
{
    for (int32_t i = 0; i < c->r->n; ++i)
        if (same_window(c->r->e[i].stage, stage) && strcmp(c->r->e[i].layout, text) == 0)
            return i;
    return -1;
}

/* The layout as the domain would resolve it (defaults made explicit), so
 * that one layout is measured once however it is written. */
static void canonical_text(const acm_domain *d, const acm_layout *l, char *buf)
{
    acm_domain next = *d;
    acm__domain_apply_layout(&next, l);
    acm_layout resolved;
    acm__domain_layout(&next, &resolved);
    if (resolved.sample_order == ACM_SAMPLE_ORDER_AS_SAMPLED) /* l orders nothing then */
        resolved.sample_block = ACM_SAMPLE_BLOCK_DEFAULT;
    layout_text(&resolved, buf);
}

static bool out_of_time(const tune_ctx *c)
{
    return now_s() - c->t0 > c->o.time_budget_s;
}

/* Time the candidate already applied: a warm-up, then up to `steps` steps
 * in chunks, cut after half of them when it is already ACM_TUNE_PRUNE times
 * slower than best_ms (0: never): such a candidate cannot win, and slow
 * candidates (the paper's baseline is 10x slower) would take most of the
 * time. Its mean ms per step and the steps measured. */
static acm_status time_window(acm_domain *d, int64_t steps, double best_ms, double *ms,
                              int64_t *measured)
{
    ACM_TRY(acm_step(d, ACM_TUNE_WARMUP));
    const int64_t chunk = (steps + ACM_TUNE_CHUNKS - 1) / ACM_TUNE_CHUNKS;
    double seconds = 0.0;
    int64_t done = 0;
    while (done < steps) {
        const int64_t n = chunk < steps - done ? chunk : steps - done;
        const double t = now_s();
        ACM_TRY(acm_step(d, n)); /* its last step synchronises the device */
        seconds += now_s() - t;
        done += n;
        if (best_ms > 0.0 && 2 * done >= steps && 1e3 * seconds > ACM_TUNE_PRUNE * best_ms * (double)done)
            break;
    }
    *ms = 1e3 * seconds / (double)done;
    *measured = done;
    return ACM_OK;
}

static void report_progress(tune_ctx *c, const acm_tune_entry *e)
{
    if (c->o.progress == NULL)
        return;
    acm_tune_progress p = {c->r->n, c->planned, now_s() - c->t0, stage_name(e->stage), e->layout,
                           e->ms_per_step, c->best_ms};
    const acm_callback outer = acm__callback_begin(c->d, ACM_CALLBACK_TUNE);
    const int cancel = c->o.progress(&p, c->o.user_data);
    acm__callback_end(c->d, outer);
    if (c->d->destroy_deferred || c->d->handles_doomed)
        c->stop = ACM_FAIL(c->d, ACM_ERR_CANCELLED, "the progress callback destroyed the domain, "
                           "a solid or a smoke: the search stopped");
    else if (cancel != 0)
        c->stop = ACM_FAIL(c->d, ACM_ERR_CANCELLED, "the progress callback cancelled the search");
}

/* The caller's layout and state, as at the start. A restore that runs out of
 * memory is tried once more (the storage it needs held the same state a
 * moment ago, so a failure may be passing); failing again, it leaves the
 * domain without storage (acm__domain_require_storage). */
static acm_status restore(tune_ctx *c)
{
    acm__domain_apply_layout(c->d, c->original);
    const acm_status st = acm__snapshot_restore(c->d, c->snap);
    return st == ACM_OK ? ACM_OK : acm__snapshot_restore(c->d, c->snap);
}

/* A combination the storage or the backend refuses (acm__layout_check: in
 * place or a split kernel on moment storage, in place with the GPU's split or
 * baseline kernel): not a candidate, neither measured nor reported. */
static bool refused(const tune_ctx *c, const acm_layout *l)
{
    char why[ACM_ERROR_SIZE];
    const acm_status st =
        acm__layout_check(l, c->d->setup.options_precision, c->d->backend, why, sizeof why);
    return st == ACM_ERR_INVALID_ARG || st == ACM_ERR_UNSUPPORTED;
}

/* Measure a candidate in a stage (once: a repeat gives the earlier entry);
 * -1 when it was not measured (refused, time is up, or the search stopped). A
 * candidate that fails is recorded and the state put back from the snapshot. */
static int32_t measure(tune_ctx *c, const acm_layout *l, acm_tune_stage stage)
{
    if (refused(c, l))
        return -1;
    acm_tune_entry e;
    memset(&e, 0, sizeof e);
    e.version = ACM_TUNE_ENTRY_VERSION;
    canonical_text(c->d, l, e.layout);
    int32_t seen = find_entry(c, e.layout, stage);
    if (seen >= 0 || c->stop != ACM_OK)
        return seen;
    if (stage != ACM_TUNE_STAGE_FINAL && out_of_time(c)) {
        c->r->sum.budget_reached = 1;
        return -1;
    }
    acm_domain *d = c->d;
    e.stage = stage;
    const int64_t window = c->window * (stage == ACM_TUNE_STAGE_FINAL ? ACM_TUNE_FINAL_FACTOR : 1);
    e.status = acm__domain_relayout(d, l);
    if (e.status == ACM_OK)
        e.status = time_window(d, window, c->best_ms, &e.ms_per_step, &e.steps);
    if (e.status == ACM_OK && e.steps < window)
        acm__format(e.message, sizeof e.message, "cut after %lld of %lld steps: over %.0fx the best",
                    (long long)e.steps, (long long)window, ACM_TUNE_PRUNE);
    if (e.status != ACM_OK) {
        acm__format(e.message, sizeof e.message, "%s", d->error);
        e.ms_per_step = 0.0;
        e.steps = 0;
        if (e.status == ACM_ERR_DEVICE) /* the context may be gone: stop searching */
            c->stop = e.status;
        else if (restore(c) != ACM_OK)
            c->stop = ACM_FAIL(d, ACM_ERR_INTERNAL, "%s (restoring the state after a failed "
                               "candidate)", d->error);
    } else {
        e.mlups = (double)d->ncells / (1e3 * e.ms_per_step);
        if (c->best_ms == 0.0 || e.ms_per_step < c->best_ms)
            c->best_ms = e.ms_per_step;
    }
    if (report_add(d, c->r, &e) != ACM_OK) {
        c->stop = ACM_ERR_NO_MEMORY;
        return -1;
    }
    report_progress(c, &e);
    return c->r->n - 1;
}

/* Time of an entry for comparisons (failed and missing: infinitely slow). */
static double entry_ms(const tune_ctx *c, int32_t i)
{
    return i >= 0 && c->r->e[i].status == ACM_OK ? c->r->e[i].ms_per_step : 1e300;
}

/* ---- the search ------------------------------------------------------------------------- */

/* The best `k` entries of a stage, fastest first; returns how many. */
static int best_of_stage(const tune_ctx *c, acm_tune_stage stage, int32_t *best, int k)
{
    int n = 0;
    for (int32_t i = 0; i < c->r->n; ++i) {
        if (c->r->e[i].stage != stage || c->r->e[i].status != ACM_OK)
            continue;
        int at = n < k ? n++ : k;
        while (at > 0 && entry_ms(c, best[at - 1]) > entry_ms(c, i)) {
            if (at < k)
                best[at] = best[at - 1];
            --at;
        }
        if (at < k)
            best[at] = i;
    }
    return n;
}

/* The layout of an entry. */
static void entry_layout(const tune_ctx *c, int32_t i, acm_layout *l)
{
    (void)acm_layout_from_string(l, c->r->e[i].layout); /* our own text */
}

/* A tuned parameter: where it lives in a layout and its candidate values. */
typedef struct tune_dim {
    int64_t *slot;
    const int64_t *values;
    size_t n;
} tune_dim;

#define ACM_TUNE_MAX_DIMS 8

static const int64_t kernels[] = {ACM_KERNEL_FUSED, ACM_KERNEL_SPLIT, ACM_KERNEL_BASELINE};
static const int64_t streamings[] = {ACM_STREAMING_TWO_ARRAYS, ACM_STREAMING_IN_PLACE};
static const int64_t precisions[] = {ACM_PRECISION_FP32, ACM_PRECISION_FP16};
static const int64_t storages[] = {ACM_STORAGE_POPULATIONS, ACM_STORAGE_MOMENTS};
static const int64_t orders[] = {ACM_SAMPLE_ORDER_MORTON_BLOCK, ACM_SAMPLE_ORDER_AS_SAMPLED};
static const int64_t spreads[] = {ACM_IB_SPREAD_SCATTER, ACM_IB_SPREAD_GATHER};

static tune_dim dim(int64_t *slot, const int64_t *values, size_t n)
{
    tune_dim d = {slot, values, n};
    return d;
}

/* The fluid parameters tuned for this scene, in the order they are searched. */
static size_t fluid_dims(const tune_ctx *c, acm_layout *l, tune_dim *dims)
{
    size_t n = 0;
    dims[n++] = dim(&l->csoa_group, c->gpu ? gpu_alphas : cpu_alphas, COUNT(gpu_alphas));
    if (c->gpu) {
        dims[n++] = dim(&l->block_size, gpu_blocks, COUNT(gpu_blocks));
        dims[n++] = dim(&l->kernel, kernels, COUNT(kernels));
    }
    if (c->o.flags & ACM_TUNE_STREAMING)
        dims[n++] = dim(&l->streaming, streamings, COUNT(streamings));
    if (c->gpu && (c->o.flags & ACM_TUNE_PRECISION) && l->precision == ACM_PRECISION_FP32)
        dims[n++] = dim(&l->precision, precisions, COUNT(precisions));
    if (c->o.flags & ACM_TUNE_STORAGE)
        dims[n++] = dim(&l->storage, storages, COUNT(storages));
    return n;
}

/* The immersed-boundary parameters (none without solids). */
static size_t solid_dims(const tune_ctx *c, acm_layout *l, tune_dim *dims)
{
    if (!c->solids)
        return 0;
    size_t n = 0;
    dims[n++] = dim(&l->sample_block, sample_blocks, COUNT(sample_blocks));
    dims[n++] = dim(&l->sample_order, orders, COUNT(orders));
    if (c->gpu)
        dims[n++] = dim(&l->ib_spread, spreads, COUNT(spreads));
    return n;
}

/* Measure `base` with one parameter at each of its values; the parameter
 * keeps the fastest (or stays as it was if none is faster or all fail). */
static void sweep(tune_ctx *c, acm_layout *base, const tune_dim *p, acm_tune_stage stage)
{
    int32_t best = measure(c, base, stage);
    int64_t best_value = *p->slot;
    for (size_t v = 0; v < p->n; ++v) {
        *p->slot = p->values[v];
        int32_t i = measure(c, base, stage);
        if (entry_ms(c, i) < entry_ms(c, best)) {
            best = i;
            best_value = p->values[v];
        }
    }
    *p->slot = best_value;
}

/* Parameters one at a time, from `base`: those of the solids, then those of
 * the fluid with the solids' best. */
static void search_each(tune_ctx *c, acm_layout *base)
{
    tune_dim dims[ACM_TUNE_MAX_DIMS];
    size_t n = solid_dims(c, base, dims);
    for (size_t k = 0; k < n; ++k)
        sweep(c, base, &dims[k], ACM_TUNE_STAGE_SOLIDS);
    n = fluid_dims(c, base, dims);
    for (size_t k = 0; k < n; ++k)
        sweep(c, base, &dims[k], ACM_TUNE_STAGE_FLUID);
}

/* The fluid part of a, with the IB part of b. */
static acm_layout cross(const acm_layout *a, const acm_layout *b)
{
    acm_layout l = *a;
    l.sample_block = b->sample_block;
    l.sample_order = b->sample_order;
    l.ib_spread = b->ib_spread;
    return l;
}

/* The finalists with the long window (the default, the caller's layout, the
 * best fluid layouts crossed with the best IB settings, those IB settings
 * alone); the fastest of them wins. */
static int32_t final_round(tune_ctx *c, const acm_layout *deflt, const acm_layout *original)
{
    int32_t fl[ACM_TUNE_FINALISTS], ib[ACM_TUNE_FINALISTS];
    int nf = best_of_stage(c, ACM_TUNE_STAGE_FLUID, fl, ACM_TUNE_FINALISTS);
    int ni = best_of_stage(c, ACM_TUNE_STAGE_SOLIDS, ib, ACM_TUNE_FINALISTS);
    int32_t best = measure(c, deflt, ACM_TUNE_STAGE_FINAL);
    c->r->sum.default_entry = best;
    int32_t i = measure(c, original, ACM_TUNE_STAGE_FINAL);
    best = entry_ms(c, i) < entry_ms(c, best) ? i : best;
    for (int a = 0; a < nf; ++a)
        for (int b = 0; b < (ni > 0 ? ni : 1); ++b) {
            acm_layout fa, ib_b;
            entry_layout(c, fl[a], &fa);
            if (ni > 0)
                entry_layout(c, ib[b], &ib_b);
            acm_layout l = ni > 0 ? cross(&fa, &ib_b) : fa;
            i = measure(c, &l, ACM_TUNE_STAGE_FINAL);
            best = entry_ms(c, i) < entry_ms(c, best) ? i : best;
        }
    if (ni > 0) /* and the best IB settings as they were found, with the default fluid */
        for (int b = 0; b < ni; ++b) {
            acm_layout l;
            entry_layout(c, ib[b], &l);
            i = measure(c, &l, ACM_TUNE_STAGE_FINAL);
            best = entry_ms(c, i) < entry_ms(c, best) ? i : best;
        }
    return best;
}

/* Advance a mixed-radix counter over the dimensions; false after the last. */
static bool next_combination(const tune_dim *dims, size_t n, size_t *at)
{
    size_t k = n;
    while (k > 0 && ++at[k - 1] == dims[k - 1].n)
        at[--k] = 0;
    return k > 0;
}

/* How many different layouts the combinations resolve to (for the progress
 * report: several resolve alike, e.g. every l of the unsorted order). */
static int32_t distinct_layouts(const tune_ctx *c, acm_layout *l, const tune_dim *dims, size_t n)
{
    size_t at[2 * ACM_TUNE_MAX_DIMS] = {0}, total = 1;
    for (size_t k = 0; k < n; ++k)
        total *= dims[k].n;
    char (*seen)[ACM_LAYOUT_STRING_SIZE] = acm__malloc(total * sizeof *seen);
    if (seen == NULL)
        return (int32_t)total;
    int32_t distinct = 0;
    do {
        for (size_t k = 0; k < n; ++k)
            *dims[k].slot = dims[k].values[at[k]];
        if (refused(c, l))
            continue;
        canonical_text(c->d, l, seen[distinct]);
        int32_t j = 0;
        while (j < distinct && strcmp(seen[j], seen[distinct]) != 0)
            ++j;
        distinct += j == distinct;
    } while (next_combination(dims, n, at));
    acm__free(seen);
    return distinct;
}

/* Every combination of the candidate values (the solids' innermost, so the
 * fluid storage is rebuilt as rarely as possible). */
static int32_t exhaustive(tune_ctx *c, const acm_layout *base)
{
    acm_layout l = *base;
    tune_dim dims[2 * ACM_TUNE_MAX_DIMS];
    size_t n = fluid_dims(c, &l, dims);
    n += solid_dims(c, &l, dims + n);
    size_t at[2 * ACM_TUNE_MAX_DIMS] = {0};
    c->planned = distinct_layouts(c, &l, dims, n);
    int32_t best = -1;
    do {
        for (size_t k = 0; k < n; ++k)
            *dims[k].slot = dims[k].values[at[k]];
        const int32_t i = measure(c, &l, ACM_TUNE_STAGE_EXHAUSTIVE); /* repeats cost nothing */
        best = entry_ms(c, i) < entry_ms(c, best) ? i : best;
    } while (next_combination(dims, n, at));
    return best;
}

/* ---- the tuning cache ------------------------------------------------------------------- */

/* The scene's key: device, grid, precision, model, what may change, and the
 * solids' statistics (sample count, bounding box in cells, motion). */
static void cache_key(acm_domain *d, const acm_tune_options *o, char *key, size_t size)
{
    char dev[160];
    d->ops->device_name(d, dev, sizeof dev);
    for (char *p = dev; *p != '\0'; ++p)
        if (*p == ' ' || *p == '|')
            *p = '_';
    uint64_t samples = 0;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    int moving = 0;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_body *b = &d->solids[i]->body;
        samples += d->solids[i]->count;
        moving |= b->motion != ACM_MOTION_STATIC;
        for (int a = 0; a < 3; ++a) {
            const double l = floor(b->x[a] - b->r_max), h = ceil(b->x[a] + b->r_max);
            lo[a] = i == 0 || l < lo[a] ? l : lo[a];
            hi[a] = i == 0 || h > hi[a] ? h : hi[a];
        }
    }
    acm__format(key, size,
                "acm-tune 1 device=%s grid=%dx%dx%d precision=%d model=%d flags=%u solids=%d "
                "samples=%llu moving=%d bbox=%g,%g,%g,%g,%g,%g",
                dev, d->nx, d->ny, d->nz, (int)d->layout.precision, (int)d->setup.coll.model,
                o->flags & (ACM_TUNE_STREAMING | ACM_TUNE_PRECISION | ACM_TUNE_STORAGE), (int)d->nsolids,
                (unsigned long long)samples, moving, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
}

/* The cache open to be read (acm__file_fopen: a regular file only, never a
 * FIFO that would block), its size in *size; *f NULL when there is none yet. */
static acm_status cache_open(acm_domain *d, const char *path, FILE **f, uint64_t *size)
{
    char why[160];
    int err = 0;
    *f = acm__file_fopen(path, size, &err, why, sizeof why);
    if (*f == NULL && err != ENOENT)
        return ACM_FAIL(d, ACM_ERR_IO, "cannot read the tuning cache %s: %s", path, why);
    return ACM_OK;
}

/* The cached layout of `key` into *l: 1 found, 0 not; a status on error. */
static acm_status cache_lookup(acm_domain *d, const char *path, const char *key, acm_layout *l,
                               int *found)
{
    *found = 0;
    FILE *f = NULL;
    uint64_t size = 0;
    ACM_TRY(cache_open(d, path, &f, &size));
    if (f == NULL)
        return ACM_OK;
    char line[ACM_TUNE_LINE];
    const size_t klen = strlen(key);
    acm_status st = ACM_OK;
    for (int n = 1; st == ACM_OK && !*found && acm__file_gets(line, sizeof line, f, size) != NULL;
         ++n) {
        if (strncmp(line, key, klen) != 0 || strncmp(line + klen, " | ", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        acm_layout parsed;
        memset(&parsed, 0, sizeof parsed);
        if (acm_layout_from_string(&parsed, line + klen + 3) != ACM_OK)
            st = ACM_FAIL(d, ACM_ERR_BAD_FORMAT,
                          "tuning cache %s, line %d: the entry for this scene is corrupt (%s); "
                          "remove it or tune with ACM_TUNE_REFRESH", path, n, parsed.error);
        else
            *l = parsed;
        *found = st == ACM_OK;
    }
    fclose(f);
    return st;
}

/* Fail early when the cache cannot be read or written (before minutes of
 * search): an existing cache must be a regular file, and a temporary beside
 * it must be possible. */
static acm_status cache_check_writable(acm_domain *d, const char *path)
{
    FILE *in = NULL;
    uint64_t size = 0;
    ACM_TRY(cache_open(d, path, &in, &size));
    if (in != NULL)
        fclose(in);
    char tmp[4096], msg[ACM_ERROR_SIZE];
    FILE *f = acm__temp_fopen(tmp, sizeof tmp, path, msg, sizeof msg);
    if (f == NULL)
        return ACM_FAIL(d, ACM_ERR_IO, "cannot write the tuning cache next to %s: %s", path,
                        strerror(errno));
    fclose(f);
    remove(tmp);
    return ACM_OK;
}

/* Replace the line of `key` (or append one): the other lines kept, the new
 * file written beside the old and renamed over it. */
static acm_status cache_store(acm_domain *d, const char *path, const char *key, const char *layout)
{
    char tmp[4096], line[ACM_TUNE_LINE], msg[ACM_ERROR_SIZE];
    FILE *in = NULL;
    uint64_t size = 0;
    ACM_TRY(cache_open(d, path, &in, &size));
    FILE *out = acm__temp_fopen(tmp, sizeof tmp, path, msg, sizeof msg);
    if (out == NULL) {
        if (in != NULL)
            fclose(in);
        return ACM_FAIL(d, ACM_ERR_IO, "%s", msg);
    }
    const size_t klen = strlen(key);
    while (in != NULL && acm__file_gets(line, sizeof line, in, size) != NULL)
        if (!(strncmp(line, key, klen) == 0 && strncmp(line + klen, " | ", 3) == 0))
            fputs(line, out);
    if (in != NULL)
        fclose(in);
    fprintf(out, "%s | %s\n", key, layout);
    const bool ok = !ferror(out);
    const int e = fclose(out) != 0 || !ok ? (errno ? errno : EIO) : 0;
    if (acm__temp_finish(tmp, path, e, msg, sizeof msg) != ACM_OK)
        return ACM_FAIL(d, ACM_ERR_IO, "cannot write the tuning cache %s: %s", path,
                        strerror(errno));
    return ACM_OK;
}

/* ---- the call ---------------------------------------------------------------------------- */

/* Steps per first-round window: about 40 ms of the current layout; with
 * moving solids at least 120 ms and, within a second, as many steps as take
 * the fastest surface over two re-sorts at the largest sample block (their
 * cost comes in bursts); never so many that the search outlasts its budget. */
static acm_status auto_window(tune_ctx *c)
{
    if (c->o.window_steps > 0) {
        c->window = c->o.window_steps;
        return ACM_OK;
    }
    double speed = 0.0; /* cells per step */
    for (int32_t i = 0; i < c->d->nsolids; ++i)
        if (c->d->solids[i]->body.motion != ACM_MOTION_STATIC)
            speed = fmax(speed, acm_body_surface_speed(&c->d->solids[i]->body));
    double ms;
    int64_t steps;
    ACM_TRY(time_window(c->d, 3, 0.0, &ms, &steps));
    ms = fmax(ms, 1e-6);
    double w = ceil(40.0 / ms), lo = 5.0, hi = 500.0;
    if (speed > 0.0) {
        const double resorts = 2.0 * (double)sample_blocks[COUNT(sample_blocks) - 1] / speed;
        w = fmin(fmax(ceil(120.0 / ms), ceil(resorts)), ceil(1000.0 / ms));
        lo = 20.0;
        hi = 4000.0;
    }
    /* the whole search measures about ACM_TUNE_WINDOWS windows: fit them in the budget */
    w = fmin(w, ceil(1e3 * c->o.time_budget_s / ACM_TUNE_WINDOWS / ms));
    c->window = (int64_t)fmin(fmax(w, lo), hi);
    return ACM_OK;
}

/* The layout the search starts from: the tuned parameters at their
 * defaults, the others (streaming, precision unless allowed) as they are. */
static acm_layout default_layout(const acm_layout *now, uint32_t flags)
{
    acm_layout l;
    memset(&l, 0, sizeof l);
    l.csoa_group = 0;
    l.streaming = flags & ACM_TUNE_STREAMING ? ACM_STREAMING_TWO_ARRAYS : now->streaming;
    l.precision = now->precision;
    l.storage = flags & ACM_TUNE_STORAGE ? ACM_STORAGE_POPULATIONS : now->storage;
    l.sample_block = 2;
    l.sample_order = ACM_SAMPLE_ORDER_MORTON_BLOCK;
    l.ib_spread = ACM_IB_SPREAD_SCATTER;
    return l;
}

static void summarise(tune_ctx *c, int32_t best)
{
    acm_tune_summary *s = &c->r->sum;
    s->entries = c->r->n;
    s->best = best;
    for (int32_t i = 0; i < c->r->n; ++i) {
        const bool ok = c->r->e[i].status == ACM_OK;
        s->failed += !ok;
        if (ok && (s->worst < 0 || c->r->e[i].ms_per_step > c->r->e[s->worst].ms_per_step))
            s->worst = i;
    }
    if (best >= 0)
        memcpy(s->best_layout, c->r->e[best].layout, sizeof s->best_layout);
    acm__format(s->not_tuned, sizeof s->not_tuned, "%s%s%s%s%s",
                c->gpu ? "" : "kernel block_size ib_spread (GPU only) ",
                c->solids ? "" : "sample_block sample_order ib_spread (no solids) ",
                c->o.flags & ACM_TUNE_STREAMING ? "" : "streaming ",
                c->o.flags & ACM_TUNE_PRECISION ? "" : "precision ",
                c->o.flags & ACM_TUNE_STORAGE ? "" : "storage");
}

/* The search proper, on the domain; the caller puts its state back. */
static int32_t search(tune_ctx *c, const acm_layout *original)
{
    const acm_layout deflt = default_layout(original, c->o.flags);
    if (c->o.flags & ACM_TUNE_EXHAUSTIVE)
        return exhaustive(c, &deflt);
    c->planned = (int32_t)(COUNT(gpu_alphas) + (c->gpu ? 6 : 0) + (c->solids ? 8 : 0) + 6);
    acm_layout l = deflt;
    search_each(c, &l); /* the solids first: their best settings steady the fluid's timings */
    return final_round(c, &deflt, original);
}

static acm_status check_tune_args(acm_domain *d, const acm_tune_options *o, const acm_layout *best)
{
    if (best == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "best is NULL");
    if (o->version != ACM_TUNE_OPTIONS_VERSION)
        return ACM_FAIL(d, ACM_ERR_BAD_VERSION, "acm_tune_options version %u is not supported (%d)",
                        o->version, ACM_TUNE_OPTIONS_VERSION);
    const uint32_t known =
        ACM_TUNE_EXHAUSTIVE | ACM_TUNE_STREAMING | ACM_TUNE_PRECISION | ACM_TUNE_REFRESH |
        ACM_TUNE_STORAGE;
    if (o->flags & ~known)
        return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown flags 0x%x", (unsigned)(o->flags & ~known));
    if (!(o->time_budget_s >= 0.0) || o->window_steps < 0)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "time_budget_s=%g and window_steps=%lld must not be negative",
                        o->time_budget_s, (long long)o->window_steps);
    if (d->diverged)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "the domain has diverged; re-initialise it first");
    return acm__domain_check_faces(d);
}

/* A search that measured no candidate with success: why, as the caller can
 * act on it (a budget spent before the first candidate, or the first
 * candidate's own failure, such as a divergence, when every one failed). */
static acm_status check_found(tune_ctx *c, int32_t best)
{
    if (best >= 0 && c->r->e[best].status == ACM_OK)
        return ACM_OK;
    for (int32_t i = 0; i < c->r->n; ++i)
        if (c->r->e[i].status != ACM_OK)
            return ACM_FAIL(c->d, c->r->e[i].status, "no candidate ran: %d failed, the first (%s) "
                            "with: %s", (int)c->r->n, c->r->e[i].layout, c->r->e[i].message);
    return ACM_FAIL(c->d, ACM_ERR_OUT_OF_RANGE, "time_budget_s=%g was spent before any "
                    "candidate was measured", c->o.time_budget_s);
}

/* Search on the domain and put its state and layout back. */
static acm_status tune(tune_ctx *c, const acm_layout *original, int32_t *best)
{
    acm_snapshot snap;
    ACM_TRY(acm__snapshot_take(c->d, &snap, true));
    c->snap = &snap;
    c->original = original;
    const int32_t smokes = c->d->nsmokes; /* the trials leave the caller's particles alone */
    c->d->nsmokes = 0;
    acm_status st = auto_window(c);
    *best = st == ACM_OK ? search(c, original) : -1;
    if (st == ACM_OK)
        st = c->stop;
    /* back to the caller's layout and state, whatever happened */
    char msg[ACM_ERROR_SIZE];
    memcpy(msg, c->d->error, sizeof msg);
    acm_status back = restore(c);
    acm__snapshot_free(&snap);
    c->d->nsmokes = smokes;
    if (back != ACM_OK)
        return back;
    memcpy(c->d->error, msg, sizeof msg);
    return st == ACM_OK ? check_found(c, *best) : st;
}

static acm_status autotune_unguarded(acm_domain *domain, const acm_tune_options *opts,
                                     acm_layout *best, acm_tune_report **report)
{
    const acm_tune_options defaults = ACM_TUNE_OPTIONS_INIT;
    tune_ctx c;
    memset(&c, 0, sizeof c);
    c.d = domain;
    c.o = opts != NULL ? *opts : defaults;
    ACM_TRY(check_tune_args(domain, &c.o, best));
    if (c.o.time_budget_s == 0.0)
        c.o.time_budget_s = ACM_TUNE_DEFAULT_BUDGET;
    c.t0 = now_s();
    c.gpu = domain->backend == ACM_BACKEND_CUDA;
    c.solids = domain->nsolids > 0;
    if ((c.r = acm__calloc(1, sizeof *c.r)) == NULL)
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate the tuning report");
    c.r->sum.version = ACM_TUNE_SUMMARY_VERSION;
    c.r->sum.best = c.r->sum.default_entry = c.r->sum.worst = -1;

    acm_layout original;
    memset(&original, 0, sizeof original);
    (void)acm_domain_get_layout(domain, &original);
    char key[ACM_TUNE_LINE / 2];
    acm_status st = ACM_OK;
    int found = 0;
    if (c.o.cache_path != NULL) {
        cache_key(domain, &c.o, key, sizeof key);
        if (!(c.o.flags & ACM_TUNE_REFRESH))
            st = cache_lookup(domain, c.o.cache_path, key, best, &found);
        if (st == ACM_OK && !found)
            st = cache_check_writable(domain, c.o.cache_path);
    }
    int32_t chosen = -1;
    if (st == ACM_OK && !found)
        st = tune(&c, &original, &chosen);
    if (st == ACM_OK && !found) {
        summarise(&c, chosen);
        entry_layout(&c, chosen, best);
        if (c.o.cache_path != NULL)
            st = cache_store(domain, c.o.cache_path, key, c.r->e[chosen].layout);
    }
    if (st == ACM_OK && found) {
        c.r->sum.cache_hit = 1;
        layout_text(best, c.r->sum.best_layout);
    }
    c.r->sum.seconds = now_s() - c.t0;
    if (st != ACM_OK || report == NULL)
        acm_tune_report_destroy(c.r);
    else
        *report = c.r;
    return st;
}

/* The whole search holds the domain (lib/base/guard.c, the call guard): another
 * thread's call between two candidates would see a trial layout. The steps
 * and re-layouts inside are this thread's nested calls. */
ACM_API acm_status acm_domain_autotune(acm_domain *domain, const acm_tune_options *opts,
                                       acm_layout *best, acm_tune_report **report)
{
    if (domain == NULL)
        return ACM_ERR_NULL_POINTER;
    ACM_TRY(acm__domain_enter(domain, ACM_CALL_STATE));
    return acm__domain_finish(domain, autotune_unguarded(domain, opts, best, report));
}
