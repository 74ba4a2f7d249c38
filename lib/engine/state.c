/*
 * libacmlbm -- how a layout resolves into a domain's settings, a domain's
 * state in host memory, and re-laying a live domain (lib/engine/state.h). SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h> /* calloc, free, malloc */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "moments.h" /* ACM_MOMENTS */
#include "solid.h"
#include "state.h"

/* ---- layouts ------------------------------------------------------------------------ */

/* The population layout. An explicit alpha (a power of two) is used as given;
 * the default is groups of up to 1024 cells on both backends: every row of a
 * typical grid stays contiguous on the CPU, and on the GPU the 27 populations
 * of a cell stay within a few pages (structure-of-arrays, alpha >= the cell
 * count, measured 30 % slower in FP32 and 3x slower in FP16 at 256^3 on an
 * H200; docs/performance.md). The paper's baseline structure on the GPU
 * stores arrays of structures (alpha = 1). */
#define ACM_CSOA_GROUP_ANY (INT64_C(1) << 14)

static acm_csoa choose_layout(const acm_layout *layout, int64_t ncells, acm_backend backend,
                              acm_kernel kernel)
{
    int64_t alpha = layout->csoa_group;
    if (backend == ACM_BACKEND_CUDA && kernel == ACM_KERNEL_BASELINE)
        alpha = 1;
    if (alpha == 0) {
        alpha = 1;
        while (alpha < ncells && alpha < 1024)
            alpha <<= 1;
    }
    /* storage is padded to whole groups: a group far past the grid would hold empty
     * cells only (2^24 for 1 cell: 3.6 GB), so one past both the grid and 2^14 cells
     * (the tuner's largest candidate) shrinks to the larger of the two */
    while (alpha > ACM_CSOA_GROUP_ANY && alpha / 2 >= ncells)
        alpha >>= 1;
    uint32_t shift = 0;
    while ((INT64_C(1) << shift) < alpha)
        ++shift;
    return acm_csoa_pow2(shift, ACM_Q);
}

/* Immersed-boundary settings from a layout (0 = default), with the domain's
 * iteration count. */
static acm_ib_settings ib_settings(const acm_layout *layout, int32_t iterations)
{
    acm_ib_settings ib;
    ib.sample_block = layout && layout->sample_block ? (int32_t)layout->sample_block
                                                     : ACM_SAMPLE_BLOCK_DEFAULT;
    ib.sample_order = layout && layout->sample_order ? (int32_t)layout->sample_order
                                                     : ACM_SAMPLE_ORDER_MORTON_BLOCK;
    ib.spread = layout && layout->ib_spread ? (int32_t)layout->ib_spread : ACM_IB_SPREAD_SCATTER;
    ib.iterations = iterations;
    return ib;
}

acm_precision acm__layout_precision(const acm_layout *layout, acm_precision options_precision)
{
    return layout != NULL && layout->precision != 0 ? (acm_precision)layout->precision
                                                    : options_precision;
}

acm_status acm__layout_check(const acm_layout *layout, acm_precision options_precision,
                             acm_backend backend, char *msg, size_t size)
{
    const acm_precision p = acm__layout_precision(layout, options_precision);
    const bool moments = layout != NULL && layout->storage == ACM_STORAGE_MOMENTS;
    if (p == ACM_PRECISION_FP16 && backend != ACM_BACKEND_CUDA && !moments) {
        acm__format(msg, size, "FP16 population storage needs the CUDA backend");
        return ACM_ERR_NOT_BUILT;
    }
    if (moments && layout->streaming == ACM_STREAMING_IN_PLACE) {
        acm__format(msg, size, "moment storage streams between two arrays: streaming=in_place "
                               "is for population storage");
        return ACM_ERR_INVALID_ARG;
    }
    if (!moments && backend == ACM_BACKEND_CUDA && layout != NULL &&
        layout->streaming == ACM_STREAMING_IN_PLACE && layout->kernel != 0 &&
        layout->kernel != ACM_KERNEL_FUSED) {
        acm__format(msg, size, "in-place streaming needs the fused kernel (ACM_LAYOUT_KERNEL = "
                               "ACM_KERNEL_FUSED); the split and baseline structures keep two "
                               "arrays");
        return ACM_ERR_UNSUPPORTED;
    }
    if (moments && backend == ACM_BACKEND_CUDA && layout->kernel != 0 &&
        layout->kernel != ACM_KERNEL_FUSED) {
        acm__format(msg, size, "moment storage has the fused kernel only (kernel=%s asked)",
                    layout->kernel == ACM_KERNEL_SPLIT ? "split" : "baseline");
        return ACM_ERR_INVALID_ARG;
    }
    return ACM_OK;
}

void acm__domain_apply_layout(acm_domain *d, const acm_layout *layout)
{
    const acm_layout none = {0};
    const acm_layout *l = layout != NULL ? layout : &none;
    d->layout.precision = acm__layout_precision(l, d->setup.options_precision);
    d->layout.streaming = l->streaming != 0 ? (acm_streaming)l->streaming : ACM_STREAMING_TWO_ARRAYS;
    d->layout.storage = l->storage != 0 ? (acm_storage)l->storage : ACM_STORAGE_POPULATIONS;
    d->layout.kernel = l->kernel != 0 ? (acm_kernel)l->kernel : ACM_KERNEL_FUSED;
    d->layout.block_size = (int32_t)l->block_size;
    d->layout.csoa = choose_layout(l, d->ncells, d->backend, d->layout.kernel);
    d->layout.ib = ib_settings(l, d->layout.ib.iterations);
}

void acm__domain_layout(const acm_domain *d, acm_layout *layout)
{
    const bool gpu = d->backend == ACM_BACKEND_CUDA;
    layout->csoa_group = (int64_t)d->layout.csoa.alpha;
    layout->kernel = gpu ? d->layout.kernel : 0;
    layout->block_size = gpu ? (d->layout.block_size ? d->layout.block_size : ACM_GPU_DEFAULT_BLOCK) : 0;
    layout->sample_block = d->layout.ib.sample_block;
    layout->sample_order = d->layout.ib.sample_order;
    layout->ib_spread = d->layout.ib.spread;
    layout->streaming = d->layout.streaming;
    layout->precision = d->layout.precision;
    layout->storage = d->layout.storage;
    layout->error[0] = '\0';
}

/* ---- the backend's part ------------------------------------------------------------- */

acm_status acm__state_alloc(acm_domain *d, acm_state *st, bool force, bool tau, bool ib)
{
    memset(st, 0, sizeof *st);
    const size_t n = (size_t)d->ncells;
    st->f = acm__malloc((size_t)ACM_Q * n * sizeof(double));
    if (force)
        st->force = acm__malloc(3 * n * sizeof(double));
    if (tau)
        st->tau = acm__malloc(n * sizeof(double));
    if (ib) {
        st->ib_force = acm__malloc(3 * n * sizeof(double));
        st->ib_mask = acm__malloc(acm_state_mask_words(d->ncells) * sizeof(uint32_t));
    }
    if (st->f == NULL || (force && st->force == NULL) || (tau && st->tau == NULL) ||
        (ib && (st->ib_force == NULL || st->ib_mask == NULL))) {
        acm__state_free(st);
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                        "cannot allocate %.3g GB of host memory for a copy of the state",
                        (double)n * (ACM_Q + 3 * force + tau + 3 * ib) * sizeof(double) / 1e9);
    }
    return ACM_OK;
}

acm_status acm__state_alloc_moments(acm_domain *d, acm_state *st)
{
    const size_t bytes = (size_t)d->ncells * ACM_MOMENTS * sizeof(double);
    st->mom = acm__malloc(bytes);
    if (st->mom == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %.3g GB of host memory for the "
                        "stored moments", (double)bytes / 1e9);
    return ACM_OK;
}

void acm__state_free(acm_state *st)
{
    if (st->parked != NULL)
        st->parked_free(st->parked);
    acm__free(st->f);
    acm__free(st->mom);
    acm__free(st->force);
    acm__free(st->tau);
    acm__free(st->ib_force);
    acm__free(st->ib_mask);
    memset(st, 0, sizeof *st);
}

/* ---- the handle's part ---------------------------------------------------------------- */

static void solid_copy_free(acm_solid_copy *ss)
{
    acm__free(ss->r);
    acm__free(ss->dv);
    acm__free(ss->origin);
}

static acm_status solid_copy_take(acm_domain *d, const acm_solid *s, acm_solid_copy *ss)
{
    const size_t n = (size_t)s->count ? (size_t)s->count : 1;
    ss->r = acm__malloc(3 * n * sizeof(double));
    ss->dv = acm__malloc(n * sizeof(double));
    ss->origin = acm__malloc(n * sizeof(uint64_t));
    if (ss->r == NULL || ss->dv == NULL || ss->origin == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot copy %zu samples", n);
    memcpy(ss->r, s->r, 3 * (size_t)s->count * sizeof(double));
    memcpy(ss->dv, s->dv, (size_t)s->count * sizeof(double));
    memcpy(ss->origin, s->origin, (size_t)s->count * sizeof(uint64_t));
    ss->body = s->body;
    ss->placed = s->placed;
    memcpy(ss->sort_x, s->sort_x, sizeof ss->sort_x);
    memcpy(ss->sort_q, s->sort_q, sizeof ss->sort_q);
    ss->resorts = s->resorts;
    memcpy(ss->force, s->force, sizeof ss->force);
    memcpy(ss->torque, s->torque, sizeof ss->torque);
    ss->moved = s->moved;
    return ACM_OK;
}

/* Samples, body and counters back into the solid (same sample count). */
static void solid_copy_put(acm_solid *s, const acm_solid_copy *ss)
{
    memcpy(s->r, ss->r, 3 * (size_t)s->count * sizeof(double));
    memcpy(s->dv, ss->dv, (size_t)s->count * sizeof(double));
    memcpy(s->origin, ss->origin, (size_t)s->count * sizeof(uint64_t));
    s->body = ss->body;
    s->placed = ss->placed;
    memcpy(s->sort_x, ss->sort_x, sizeof s->sort_x);
    memcpy(s->sort_q, ss->sort_q, sizeof s->sort_q);
    s->resorts = ss->resorts;
    memcpy(s->force, ss->force, sizeof s->force);
    memcpy(s->torque, ss->torque, sizeof s->torque);
    s->moved = ss->moved;
    s->order_on_device = false; /* these arrays are the order now: attaching uploads them */
}

void acm__snapshot_free(acm_snapshot *snap)
{
    acm__state_free(&snap->backend);
    for (int32_t i = 0; snap->solids != NULL && i < snap->nsolids; ++i)
        solid_copy_free(&snap->solids[i]);
    acm__free(snap->solids);
    memset(snap, 0, sizeof *snap);
}

acm_status acm__snapshot_take(acm_domain *d, acm_snapshot *snap, bool park)
{
    memset(snap, 0, sizeof *snap);
    ACM_TRY(acm__solids_fetch(d));
    snap->step = d->step;
    snap->fallback_last = d->fallback_last;
    snap->fallback_total = d->fallback_total;
    snap->diverged = d->diverged;
    snap->prev = d->prev;
    snap->ib = d->layout.ib;
    snap->precision = d->layout.precision;
    if (d->nsolids > 0 &&
        (snap->solids = acm__calloc((size_t)d->nsolids, sizeof *snap->solids)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot copy %d solids", (int)d->nsolids);
    snap->nsolids = d->nsolids;
    acm_status st = ACM_OK;
    for (int32_t i = 0; st == ACM_OK && i < d->nsolids; ++i)
        st = solid_copy_take(d, d->solids[i], &snap->solids[i]);
    if (st == ACM_OK)
        st = d->ops->state_save(d, &snap->backend, park);
    if (st != ACM_OK)
        acm__snapshot_free(snap);
    return st;
}

/* The solids as the snapshot has them, re-sorted if d's sample order is not
 * the one they were in. */
static acm_status restore_solids(acm_domain *d, const acm_snapshot *snap)
{
    if (snap->backend.parked != NULL && snap->precision != d->layout.precision)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a state parked in precision %d restored in %d",
                        (int)snap->precision, (int)d->layout.precision);
    if (snap->nsolids != d->nsolids)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a snapshot of %d solids for a domain of %d",
                        (int)snap->nsolids, (int)d->nsolids);
    for (int32_t i = 0; i < d->nsolids; ++i)
        solid_copy_put(d->solids[i], &snap->solids[i]);
    if (d->layout.ib.sample_block != snap->ib.sample_block || d->layout.ib.sample_order != snap->ib.sample_order)
        ACM_TRY(acm__solids_resort(d));
    return d->nsolids > 0 ? acm__solids_reattach(d) : ACM_OK;
}

static void restore_handle(acm_domain *d, const acm_snapshot *snap)
{
    d->step = snap->step;
    d->fallback_last = snap->fallback_last;
    d->fallback_total = snap->fallback_total;
    d->diverged = snap->diverged;
    d->prev = snap->prev;
    d->ib_dirty = false;
    d->forces_stale = false;
}

acm_status acm__read_settle(acm_domain *d)
{
    if (d->read_count == 0 || d->read_velocity != NULL || d->impl == NULL)
        return ACM_OK;
    double *u = acm__malloc(3 * d->read_count * sizeof(double));
    if (u == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold the velocities of the %zu points "
                        "read", d->read_count);
    const acm_status st = d->ops->sample_velocity_end(d, u, d->read_count);
    if (st != ACM_OK) {
        acm__free(u);
        return st;
    }
    d->read_velocity = u;
    return ACM_OK;
}

/* Fresh backend storage for d's current settings, filled from the snapshot. */
static acm_status reinit(acm_domain *d, const acm_snapshot *snap)
{
    ACM_TRY(acm__read_settle(d));
    if (d->impl != NULL)
        d->ops->domain_fini(d);
    d->memory_bytes = 0;
    ACM_TRY(d->ops->domain_init(d));
    restore_handle(d, snap); /* before the backend's load, which may refine prev */
    acm_status st = restore_solids(d, snap);
    if (st == ACM_OK)
        st = d->ops->state_load(d, &snap->backend);
    if (st != ACM_OK) /* no storage rather than storage without the state */
        d->ops->domain_fini(d);
    return st;
}

acm_status acm__snapshot_restore(acm_domain *d, const acm_snapshot *snap)
{
    return reinit(d, snap);
}

/* ---- re-layout ------------------------------------------------------------------------- */

/* Whether the fluid storage of d must be rebuilt to run `next` (settings of
 * a domain after acm__domain_apply_layout). The CPU ignores kernel and block. */
static bool fluid_changes(const acm_domain *d, const acm_domain *next)
{
    bool change = d->layout.precision != next->layout.precision || d->layout.streaming != next->layout.streaming ||
                  d->layout.storage != next->layout.storage ||
                  d->layout.csoa.alpha != next->layout.csoa.alpha;
    if (d->backend == ACM_BACKEND_CUDA)
        change = change || d->layout.kernel != next->layout.kernel ||
                 (next->layout.block_size != 0 && next->layout.block_size != d->layout.block_size);
    return change;
}

/* Only the samples' order or spreading changes: re-sort and re-attach; the
 * per-cell planes of the immersed boundary stay with the backend. */
static acm_status relayout_samples(acm_domain *d, const acm_ib_settings *ib)
{
    ACM_TRY(acm__solids_fetch(d));
    const acm_ib_settings old = d->layout.ib;
    d->layout.ib = *ib;
    acm_status st = acm__solids_resort(d);
    if (st == ACM_OK && d->nsolids > 0)
        st = acm__solids_reattach(d);
    if (st == ACM_OK)
        return ACM_OK;
    char msg[ACM_ERROR_SIZE];
    memcpy(msg, d->error, sizeof msg);
    d->layout.ib = old;
    if (acm__solids_resort(d) != ACM_OK || (d->nsolids > 0 && acm__solids_reattach(d) != ACM_OK))
        d->ib_dirty = true; /* the next step tries again */
    memcpy(d->error, msg, sizeof msg);
    return st;
}

acm_status acm__domain_relayout(acm_domain *d, const acm_layout *layout)
{
    char msg[ACM_ERROR_SIZE];
    acm_status st = acm__layout_check(layout, d->setup.options_precision, d->backend, msg, sizeof msg);
    if (st != ACM_OK)
        return ACM_FAIL(d, st, "%s", msg);
    acm_domain next = *d;
    acm__domain_apply_layout(&next, layout);
    if (!fluid_changes(d, &next))
        return relayout_samples(d, &next.layout.ib);

    acm_snapshot snap;
    ACM_TRY(acm__snapshot_take(d, &snap, next.layout.precision == d->layout.precision));
    d->config_serial++; /* a divergence snapshot parked for the old storage is dropped */
    const acm_resolved_layout old = d->layout;
    acm__domain_apply_layout(d, layout);
    st = reinit(d, &snap);
    if (st != ACM_OK) { /* back to the old settings, which held this state a moment ago */
        memcpy(msg, d->error, sizeof msg);
        d->layout = old;
        if (reinit(d, &snap) != ACM_OK) /* out of memory twice: acm__domain_require_storage */
            acm__format(msg + strlen(msg), sizeof msg - strlen(msg),
                        "; restoring the old layout failed as well (%s): destroy the domain",
                        d->error);
        memcpy(d->error, msg, sizeof msg);
    }
    acm__snapshot_free(&snap);
    return st;
}
