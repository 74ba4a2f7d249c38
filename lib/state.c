/*
 * libacmlbm -- a domain's state in host memory, and re-laying a live domain
 * (lib/state.h). SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h> /* calloc, free, malloc */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "solid.h"
#include "state.h"

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

void acm__state_free(acm_state *st)
{
    if (st->parked != NULL)
        st->parked_free(st->parked);
    acm__free(st->f);
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
    snap->ib = d->ib;
    snap->precision = d->precision;
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
    if (snap->backend.parked != NULL && snap->precision != d->precision)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a state parked in precision %d restored in %d",
                        (int)snap->precision, (int)d->precision);
    if (snap->nsolids != d->nsolids)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a snapshot of %d solids for a domain of %d",
                        (int)snap->nsolids, (int)d->nsolids);
    for (int32_t i = 0; i < d->nsolids; ++i)
        solid_copy_put(d->solids[i], &snap->solids[i]);
    if (d->ib.sample_block != snap->ib.sample_block || d->ib.sample_order != snap->ib.sample_order)
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

/* Fresh backend storage for d's current settings, filled from the snapshot. */
static acm_status reinit(acm_domain *d, const acm_snapshot *snap)
{
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
    bool change = d->precision != next->precision || d->streaming != next->streaming ||
                  d->csoa.alpha != next->csoa.alpha;
    if (d->backend == ACM_BACKEND_CUDA)
        change = change || d->kernel != next->kernel ||
                 (next->block_size != 0 && next->block_size != d->block_size);
    return change;
}

/* Only the samples' order or spreading changes: re-sort and re-attach; the
 * per-cell planes of the immersed boundary stay with the backend. */
static acm_status relayout_samples(acm_domain *d, const acm_ib_settings *ib)
{
    ACM_TRY(acm__solids_fetch(d));
    const acm_ib_settings old = d->ib;
    d->ib = *ib;
    acm_status st = acm__solids_resort(d);
    if (st == ACM_OK && d->nsolids > 0)
        st = acm__solids_reattach(d);
    if (st == ACM_OK)
        return ACM_OK;
    char msg[ACM_ERROR_SIZE];
    memcpy(msg, d->error, sizeof msg);
    d->ib = old;
    if (acm__solids_resort(d) != ACM_OK || (d->nsolids > 0 && acm__solids_reattach(d) != ACM_OK))
        d->ib_dirty = true; /* the next step tries again */
    memcpy(d->error, msg, sizeof msg);
    return st;
}

acm_status acm__domain_relayout(acm_domain *d, const acm_layout *layout)
{
    char msg[ACM_ERROR_SIZE];
    acm_status st = acm__layout_check(layout, d->options_precision, d->backend, msg, sizeof msg);
    if (st != ACM_OK)
        return ACM_FAIL(d, st, "%s", msg);
    acm_domain next = *d;
    acm__domain_apply_layout(&next, layout);
    if (!fluid_changes(d, &next))
        return relayout_samples(d, &next.ib);

    acm_snapshot snap;
    ACM_TRY(acm__snapshot_take(d, &snap, next.precision == d->precision));
    d->config_serial++; /* a divergence snapshot parked for the old storage is dropped */
    const acm_domain old = *d;
    acm__domain_apply_layout(d, layout);
    st = reinit(d, &snap);
    if (st != ACM_OK) { /* back to the old settings, which held this state a moment ago */
        memcpy(msg, d->error, sizeof msg);
        d->precision = old.precision;
        d->streaming = old.streaming;
        d->kernel = old.kernel;
        d->block_size = old.block_size;
        d->csoa = old.csoa;
        d->ib = old.ib;
        if (reinit(d, &snap) != ACM_OK) /* out of memory twice: acm__domain_require_storage */
            acm__format(msg + strlen(msg), sizeof msg - strlen(msg),
                        "; restoring the old layout failed as well (%s): destroy the domain",
                        d->error);
        memcpy(d->error, msg, sizeof msg);
    }
    acm__snapshot_free(&snap);
    return st;
}
