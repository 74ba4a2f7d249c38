/*
 * libacmlbm -- one domain over several slabs (lib/multi/decomp.h, docs/multi-gpu.md).
 * SPDX-License-Identifier: Apache-2.0
 *
 * A decomposed domain keeps its handle (configuration, counters, solids,
 * smoke) and hands the fluid to slabs along z. Each slab is an ordinary
 * backend domain of its planes plus ghost planes at each cut (ghost_depth;
 * and at both ends when z is periodic); its faces are the domain's, but for
 * a resting wall at an end with ghosts, which only the outer ghost plane
 * sees. A step is: every slab steps (in place its ghosts too: the first ghost
 * plane pulls only planes that hold exact copies, so it is stepped exactly);
 * the planes' reductions are folded in global plane order into the ACM rules'
 * inputs of the next step; the ghost planes are refreshed from the
 * neighbours' planes (lib/multi/halo.c), beside the rest of the step where that
 * pays (ACM_PARAM_HALO_OVERLAP). The kernels do not know they run on a
 * slab.
 *
 * Immersed solids: the handle keeps the solids; each slab steps with proxies
 * of them that hold the samples near its planes (ACM_SLAB_SAMPLE_MARGIN), in
 * the solids' sample order and at whole-domain coordinates, so that every
 * cell's force is spread from the same samples in the same order as on one
 * domain. With m iterations a slab has m more ghost planes (decomp.h). Each
 * slab sums the forces of the samples based on its own planes plane by
 * plane; the handle folds all planes in order (one sum over processes).
 */
#include <math.h>   /* floor, fmax, fmin, isfinite, sqrt */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "collide.h" /* acm_is_adaptive */
#include "decomp.h"
#include "halo.h"
#include "ib.h"
#include "moments.h" /* ACM_MOMENTS */
#include "partition.h"
#include "reduce.h" /* acm__prev_from_planes */
#include "rigid.h"
#include "solid.h"
#include "state.h"

#define IMPL(d) ((acm_slabs *)(d)->impl)

static acm_status decomp_reshape(acm_domain *d);
static acm_status decomp_state_load(acm_domain *d, const acm_state *st);

/* ---- slabs ------------------------------------------------------------------- */

static bool z_periodic(const acm_domain *d)
{
    return d->setup.face[ACM_FACE_Z_MIN].type == ACM_BOUNDARY_PERIODIC;
}

/* Ghost planes at a cut with d's streaming, solids and iterations (decomp.h). */
static int32_t ghost_depth(const acm_domain *d)
{
    const int32_t fluid = d->layout.streaming == ACM_STREAMING_IN_PLACE ? ACM_HALO_PLANES : 1;
    return fluid + (d->nsolids > 0 ? d->layout.ib.iterations : 0);
}

/* Ghost planes slab p needs below and above with d's z faces. */
static void slab_halo(const acm_domain *d, int32_t p, int32_t halo[2])
{
    const int32_t n = d->decomp->nslabs;
    halo[0] = p > 0 || z_periodic(d) ? ghost_depth(d) : 0;
    halo[1] = p < n - 1 || z_periodic(d) ? ghost_depth(d) : 0;
}

/* The handle's settings a slab steps with; its own sizes, ghost planes and
 * device stay. */
static void slab_sync(const acm_domain *d, acm_domain *s)
{
    s->setup = d->setup;
    for (int e = 0; e < 2; ++e)
        if (s->halo[e] > 0) { /* seen by the outer ghost plane only */
            memset(&s->setup.face[ACM_FACE_Z_MIN + e], 0, sizeof s->setup.face[0]);
            s->setup.face[ACM_FACE_Z_MIN + e].type = ACM_BOUNDARY_WALL;
        }
    s->step = d->step;
    s->prev = d->prev;
    s->slab_total = IMPL(d)->total;
    s->slab_cells = (double)d->ncells;
    s->whole_nz = d->nz;
    s->whole_periodic_z = z_periodic(d) && d->setup.face[ACM_FACE_Z_MAX].type == ACM_BOUNDARY_PERIODIC;
    s->layout.ib.iterations = d->layout.ib.iterations;
    s->diverged = false;
}

/* A slab's proxies of the solids (slab_select): its solids, as a slab
 * domain holds them. */
typedef struct proxy_set {
    acm_solid **solids;
    int32_t n;
    uint64_t samples;
} proxy_set;

static void proxy_set_free(proxy_set *p)
{
    for (int32_t i = 0; p->solids != NULL && i < p->n; ++i)
        if (p->solids[i] != NULL) {
            acm__free(p->solids[i]->r);
            acm__free(p->solids[i]->dv);
            acm__free(p->solids[i]->origin);
            acm__free(p->solids[i]);
        }
    acm__free(p->solids);
    *p = (proxy_set){NULL, 0, 0};
}

/* Slab s's proxies out of it, or p's into it. */
static proxy_set take_proxies(acm_domain *s)
{
    const proxy_set p = {s->solids, s->nsolids, s->nsamples};
    s->solids = NULL;
    s->nsolids = s->solids_cap = 0;
    s->nsamples = 0;
    return p;
}

static void give_proxies(acm_domain *s, const proxy_set *p)
{
    s->solids = p->solids;
    s->nsolids = s->solids_cap = p->n;
    s->nsamples = p->samples;
}

static void proxies_free(acm_domain *s)
{
    proxy_set p = take_proxies(s);
    proxy_set_free(&p);
}

static void slab_table_free(acm_slabs *m)
{
    if (m == NULL)
        return;
    for (int32_t p = 0; m->shared && p < m->n; ++p) /* before any slab is released */
        m->slab[p].sub->ops->sums_unshare(m->slab[p].sub);
    for (int32_t p = 0; m->slab != NULL && p < m->n; ++p) { /* the table may have failed */
        acm_domain *s = m->slab[p].sub;
        if (s != NULL && s->impl != NULL)
            s->ops->domain_fini(s);
        if (s != NULL) {
            proxies_free(s);
            for (int f = 0; f < ACM_FACE_COUNT; ++f)
                acm__free(s->face_values[f]);
        }
        acm__free(s);
    }
    acm__free(m->slab);
    acm__free(m->planes);
    acm__halo_fini(m);
    acm__free(m);
}

static void slabs_free(acm_domain *d)
{
    slab_table_free(IMPL(d));
    d->impl = NULL;
}

static int32_t global_plane(const acm_domain *d, const acm_domain *s, int32_t l);

/* Slab s's part of d's values of a face (acm_domain_set_face_values), in an
 * array of its own: for an x or y face the rows of its planes, ghost planes
 * too (wrapped along a periodic z); for a z face all of them. NULL where d
 * has none. Handed to its backend; on failure its old ones stay. */
static acm_status slab_face_values(acm_domain *d, acm_domain *s, int face)
{
    const double *whole = d->face_values[face];
    double *mine = NULL;
    if (whole != NULL) {
        int lo, hi;
        acm_face_axes(face, &lo, &hi);
        const int32_t n[3] = {s->nx, s->ny, s->nz};
        const size_t row = (size_t)acm_face_value_count(d->setup.face[face].type) * (size_t)n[lo];
        const size_t count = row * (size_t)n[hi];
        if ((mine = acm__malloc(count * sizeof *mine)) == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a slab's %zu face values",
                            count);
        for (int32_t r = 0; r < n[hi]; ++r) /* rows along y (a z face) or z */
            memcpy(mine + (size_t)r * row,
                   whole + (size_t)(hi == 2 ? global_plane(d, s, r) : r) * row,
                   row * sizeof *mine);
    }
    double *old = s->face_values[face];
    s->face_values[face] = mine;
    const acm_status st = s->ops->face_values != NULL ? s->ops->face_values(s, face) : ACM_OK;
    if (st != ACM_OK) {
        s->face_values[face] = old;
        acm__free(mine);
        return st;
    }
    acm__free(old);
    return ACM_OK;
}

/* Slab p's domain for d's settings: planes [z0 - halo[0], z1 + halo[1]). */
static acm_status slab_init(acm_domain *d, acm_slab *sl, int32_t p)
{
    acm_domain *s = acm__calloc(1, sizeof *s);
    if (s == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate slab %d", (int)p);
    sl->sub = s;
    *s = (acm_domain){0};
    memcpy(s->halo, sl->halo, sizeof s->halo);
    s->nx = d->nx;
    s->ny = d->ny;
    s->nz = sl->z1 - sl->z0 + s->halo[0] + s->halo[1];
    s->ncells = (int64_t)s->nx * s->ny * s->nz;
    s->origin_z = sl->z0 - s->halo[0];
    s->backend = d->backend;
    s->device = sl->device;
    s->layout = d->layout;
    s->ops = d->decomp->slab_ops;
    slab_sync(d, s);
    acm_status st = s->ops->domain_init(s);
    for (int f = 0; f < ACM_FACE_COUNT && st == ACM_OK; ++f)
        if (d->face_values[f] != NULL)
            st = slab_face_values(d, s, f);
    if (st != ACM_OK)
        return ACM_FAIL(d, st, "slab %d of %d (planes %d..%d): %s", (int)p, (int)d->decomp->nslabs,
                        (int)sl->z0, (int)sl->z1 - 1, s->error);
    return ACM_OK;
}

static acm_status slabs_make(acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    acm_slabs *m = acm__calloc(1, sizeof *m);
    if (m == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the slab table");
    d->impl = m;
    m->n = dc->nslabs;
    m->depth = ghost_depth(d);
    m->slab = acm__calloc((size_t)m->n, sizeof *m->slab);
    m->planes = acm__calloc((size_t)d->nz, sizeof *m->planes);
    if (m->slab == NULL || m->planes == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the slab table");
    for (int32_t p = 0; p < m->n; ++p) {
        acm_slab *sl = &m->slab[p];
        sl->z0 = dc->cuts[p];
        sl->z1 = dc->cuts[p + 1];
        sl->device = dc->devices[p];
        slab_halo(d, p, sl->halo);
        sl->local = acm__halo_is_local(dc, p);
        if (sl->local)
            ACM_TRY(slab_init(d, sl, p));
    }
    return acm__halo_init(d);
}

/* GPU slabs all in this process fold the ACM rules' inputs on their devices
 * (docs/multi-gpu.md, "Reductions on the devices"). */
static acm_status slabs_share(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    const acm_decomp *dc = d->decomp;
    if (dc->transport != NULL || dc->slab_ops->sums_share == NULL || m->n < 2)
        return ACM_OK;
    acm_domain **subs = acm__calloc((size_t)m->n, sizeof *subs);
    if (subs == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the list of %d slabs", (int)m->n);
    for (int32_t p = 0; p < m->n; ++p)
        subs[p] = m->slab[p].sub;
    m->shared = true; /* slab_table_free undoes what was done */
    acm_status st = ACM_OK;
    int32_t p = 0;
    for (; p < m->n && st == ACM_OK; ++p)
        st = dc->slab_ops->sums_share(subs[p], subs, m->n);
    acm__free(subs);
    if (st == ACM_ERR_UNSUPPORTED) { /* devices that cannot read each other: the host folds */
        for (int32_t q = 0; q < m->n; ++q)
            dc->slab_ops->sums_unshare(m->slab[q].sub);
        m->shared = false;
        return ACM_OK;
    }
    return acm__slab_failed(d, p - 1, st);
}

/* The slab table and the local slabs, made on every process or failed on
 * all; then the peer communicator of their ghost planes, if any. */
static acm_status slabs_init(acm_domain *d)
{
    ACM_TRY(acm__halo_agree(d, slabs_make(d)));
    acm__halo_connect(d);
    return slabs_share(d);
}

/* The slab holding global plane z. */
static int32_t slab_of(const acm_slabs *m, int32_t z)
{
    int32_t p = 0;
    while (p + 1 < m->n && z >= m->slab[p].z1)
        ++p;
    return p;
}

/* Global plane of slab-local plane l (wrapped: a ghost plane past an end of a
 * periodic axis). */
static int32_t global_plane(const acm_domain *d, const acm_domain *s, int32_t l)
{
    int32_t z = s->origin_z + l;
    return z < 0 ? z + d->nz : (z >= d->nz ? z - d->nz : z);
}

static void account(acm_domain *d)
{
    const acm_slabs *m = IMPL(d);
    d->memory_bytes = 0;
    for (int32_t p = 0; p < m->n; ++p)
        if (m->slab[p].sub != NULL)
            d->memory_bytes += m->slab[p].sub->memory_bytes;
}

/* ---- the composite backend ---------------------------------------------------- */

static acm_status decomp_domain_init(acm_domain *d)
{
    acm_status st = slabs_init(d);
    if (st == ACM_OK)
        account(d);
    return st;
}

static void decomp_domain_fini(acm_domain *d) { slabs_free(d); }

/* Whether the slabs look for a divergence only when the call's last step is
 * checked (ACM_CHECK_NOW): GPU slabs of the fluid alone in one process. Each
 * slab's key keeps its first diverged step and its gate leaves its state
 * alone after it, so the check names the step as a check after every step
 * would; the host waits for no slab in between (docs/multi-gpu.md). */
static bool checks_at_call_end(const acm_domain *d)
{
    return d->decomp->slab_ops->check != NULL && d->decomp->transport == NULL &&
           d->nsolids == 0 && d->nsmokes == 0;
}

/* Whether the slabs' next step folds the ACM rules' inputs where they run,
 * from the plane sums every slab pushed after the last step (sums_share). */
static void sums_on_devices(acm_domain *d, bool on)
{
    acm_slabs *m = IMPL(d);
    m->on_devices = on;
    for (int32_t p = 0; p < m->n; ++p)
        if (m->slab[p].local)
            m->slab[p].sub->slab_sums_shared = on;
}

/* The ACM rules' inputs from every slab's planes, in global plane order. A GPU
 * sums them only for the adaptive models, and keeps the last sums otherwise:
 * so does a decomposed domain of GPU slabs. */
static acm_status fold_planes(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    m->stale = false;
    if (d->backend == ACM_BACKEND_CUDA && !acm_is_adaptive(d->setup.coll.model))
        return ACM_OK;
    acm_status st = ACM_OK;
    for (int32_t p = 0; p < m->n && st == ACM_OK; ++p) {
        acm_slab *sl = &m->slab[p];
        if (sl->local)
            st = acm__slab_failed(d, p, sl->sub->ops->plane_sums(sl->sub, m->planes + sl->z0));
    }
    ACM_TRY(acm__halo_agree(d, st)); /* before the gather, which every process joins */
    ACM_TRY(acm__halo_gather_planes(d));
    acm__prev_from_planes(&d->prev, &m->total, m->planes, d->nz, (double)d->ncells);
    return ACM_OK;
}

/* The handle's fold of the last step's sums, when it needs it (a checkpoint,
 * the slabs' next step without them on their devices). */
static acm_status host_sums(acm_domain *d)
{
    return IMPL(d)->stale ? fold_planes(d) : ACM_OK;
}

/* Whether the slabs' next step folds this step's plane sums on their devices
 * (shared GPU slabs whose host does not wait after every step: checked every
 * few steps, or at the call's end), else the host (docs/multi-gpu.md,
 * "Reductions on the devices"). With a check after every step the host waits
 * for every slab anyway, and the pushes only add to the step. */
static bool folds_on_devices(const acm_domain *d)
{
    return IMPL(d)->shared && (d->setup.divergence_interval > 1 || checks_at_call_end(d));
}

/* After every slab took a step: its sums folded on the devices at the next
 * step (folds_on_devices, for an adaptive model), else here. */
static acm_status after_step_sums(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    if (!folds_on_devices(d)) {
        sums_on_devices(d, false); /* the slabs sent their planes here */
        return fold_planes(d);
    }
    const bool adaptive = acm_is_adaptive(d->setup.coll.model);
    sums_on_devices(d, adaptive); /* the others push nothing: the last sums stay */
    if (adaptive)
        m->stale = true;
    return ACM_OK;
}

/* Run fn on every local slab, then agree across processes on the outcome. */
typedef acm_status (*slab_fn)(acm_domain *d, acm_domain *s, int32_t p, const void *ctx);

/* sync: the slabs take the handle's settings first (not when fn finishes what
 * the previous pass started: their step counters have moved on). */
static acm_status each_slab_pass(acm_domain *d, slab_fn fn, const void *ctx, bool sync)
{
    acm_slabs *m = IMPL(d);
    acm_status st = ACM_OK;
    for (int32_t p = 0; p < m->n && st == ACM_OK; ++p) {
        acm_slab *sl = &m->slab[p];
        if (!sl->local)
            continue;
        if (sync)
            slab_sync(d, sl->sub);
        acm_status s = fn(d, sl->sub, p, ctx);
        if (s != ACM_OK)
            st = acm__slab_failed(d, p, s);
    }
    return acm__halo_agree(d, st);
}

static acm_status each_slab(acm_domain *d, slab_fn fn, const void *ctx)
{
    return each_slab_pass(d, fn, ctx, true);
}

static acm_status refresh_slab_sums(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    (void)ctx;
    if (s->ops->refresh_sums == NULL)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "the %s backend's slabs cannot hold moment storage",
                        s->ops->name);
    return s->ops->refresh_sums(s);
}

/* After the state changed everywhere: the reductions and the ghost planes.
 * On moment storage the sums wait for the exchange: a slab made its ghost
 * cells' crossing populations from all 27 of theirs, wrong at the outer ghost
 * plane, and the planes next to a cut pull them. */
static acm_status settle(acm_domain *d)
{
    const bool moments = d->layout.storage == ACM_STORAGE_MOMENTS;
    if (moments) {
        ACM_TRY(acm__halo_exchange(d));
        ACM_TRY(each_slab(d, refresh_slab_sums, NULL));
    }
    sums_on_devices(d, false); /* the planes hold the new state's sums */
    ACM_TRY(fold_planes(d));
    if (!moments)
        ACM_TRY(acm__halo_exchange(d));
    account(d);
    return ACM_OK;
}

/* Values per cell of `comp` elements of `size` bytes: slab s's planes from
 * the global array src (ghost planes wrapped). */
static void scatter(const acm_domain *d, const acm_domain *s, size_t cell_bytes, const void *src,
                    void *dst)
{
    const size_t plane = cell_bytes * (size_t)d->nx * (size_t)d->ny;
    for (int32_t l = 0; l < s->nz; ++l)
        memcpy((char *)dst + plane * (size_t)l,
               (const char *)src + plane * (size_t)global_plane(d, s, l), plane);
}

/* Slab s's own planes (not its ghosts) into the global array dst. */
static void gather(const acm_domain *d, const acm_domain *s, size_t cell_bytes, const void *src,
                   void *dst)
{
    const size_t plane = cell_bytes * (size_t)d->nx * (size_t)d->ny;
    const int32_t own = s->nz - s->halo[0] - s->halo[1];
    memcpy((char *)dst + plane * (size_t)acm__own_origin(s),
           (const char *)src + plane * (size_t)s->halo[0], plane * (size_t)own);
}

/* A host buffer of a slab's cells. */
static void *slab_buffer(acm_domain *d, const acm_domain *s, size_t cell_bytes)
{
    void *b = acm__malloc(cell_bytes * (size_t)s->ncells);
    if (b == NULL)
        ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %.3g MB for a slab's copy",
                 cell_bytes * (double)s->ncells / 1e6);
    return b;
}

static acm_status init_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const acm_init_source *src = ctx;
    acm_init_source local = *src;
    const size_t e = acm__dtype_size(src->dtype);
    void *rho = NULL, *u = NULL;
    if (src->rho != NULL && (rho = slab_buffer(d, s, e)) == NULL)
        return ACM_ERR_NO_MEMORY;
    if (src->u != NULL && (u = slab_buffer(d, s, 3 * e)) == NULL) {
        acm__free(rho);
        return ACM_ERR_NO_MEMORY;
    }
    if (rho != NULL)
        scatter(d, s, e, src->rho, rho);
    if (u != NULL)
        scatter(d, s, 3 * e, src->u, u);
    local.rho = rho;
    local.u = u;
    acm_status st = s->ops->init_equilibrium(s, &local);
    acm__free(rho);
    acm__free(u);
    return st;
}

/* The equilibrium of src in every slab (no reshape). */
static acm_status init_slabs(acm_domain *d, const acm_init_source *src)
{
    acm_decomp *dc = d->decomp;
    dc->uniform = false;
    ACM_TRY(each_slab(d, init_slab, src));
    ACM_TRY(settle(d));
    dc->uniform = src->rho == NULL && src->u == NULL;
    if (dc->uniform) /* its arrays, when it has any, are the caller's */
        dc->init = *src;
    return ACM_OK;
}

static acm_status decomp_init_equilibrium(acm_domain *d, const acm_init_source *src)
{
    ACM_TRY(decomp_reshape(d));
    return init_slabs(d, src);
}

/* A slab's divergence as the domain's. */
static acm_status slab_outcome(acm_domain *d, const acm_domain *s, acm_status st)
{
    if (st == ACM_ERR_DIVERGED) {
        d->diverged = true;
        d->diverged_step = s->diverged_step;
    }
    return st;
}

/* One slab's step; with a backend that checks apart (ops->check), only
 * enqueued, so that every slab's step is under way before any wait. */
static acm_status advance_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const acm_check when = s->ops->check != NULL ? ACM_CHECK_NONE : *(const acm_check *)ctx;
    return slab_outcome(d, s, s->ops->advance(s, when));
}

static acm_status prepare_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)d;
    (void)p;
    (void)ctx;
    return s->ops->prepare != NULL ? s->ops->prepare(s) : ACM_OK;
}

static acm_status edges_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    (void)ctx;
    return slab_outcome(d, s, s->ops->advance_edges(s));
}

static acm_status rest_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const acm_check when = s->ops->check != NULL ? ACM_CHECK_NONE : *(const acm_check *)ctx;
    return slab_outcome(d, s, s->ops->advance_rest(s, when));
}

/* Whether a slab's divergence (of a step or an earlier one: st, at step)
 * is reported before the one kept (*best, at *best_step): a fault first,
 * then the earliest diverged step. */
static bool reported_first(acm_status st, int64_t step, acm_status best, int64_t best_step)
{
    if (best == ACM_OK)
        return true;
    if ((st == ACM_ERR_DIVERGED) != (best == ACM_ERR_DIVERGED))
        return st != ACM_ERR_DIVERGED;
    return st == ACM_ERR_DIVERGED && step < best_step;
}

/* After every slab's step is enqueued or done: every slab's divergence check.
 * A check of several steps may find slabs that diverged at different steps:
 * the message names the earliest (and its slab). */
static acm_status check_slabs(acm_domain *d, acm_status st, const acm_check *check)
{
    if (st != ACM_OK || d->decomp->slab_ops->check == NULL)
        return st;
    acm_slabs *m = IMPL(d);
    char kept[sizeof d->error] = "";
    int64_t kept_step = 0;
    for (int32_t p = 0; p < m->n; ++p) {
        acm_slab *sl = &m->slab[p];
        if (!sl->local)
            continue;
        const acm_status s = sl->sub->ops->check(sl->sub, *check);
        if (s == ACM_OK || !reported_first(s, sl->sub->diverged_step, st, kept_step))
            continue;
        st = acm__slab_failed(d, p, s);
        kept_step = sl->sub->diverged_step;
        memcpy(kept, d->error, sizeof kept);
    }
    if (st != ACM_OK) {
        memcpy(d->error, kept, sizeof kept);
        if (st == ACM_ERR_DIVERGED) {
            d->diverged = true;
            d->diverged_step = kept_step;
        }
    }
    return acm__halo_agree(d, st);
}

/* The step with the exchange behind it (docs/multi-gpu.md, "Overlap"): every
 * slab steps the planes next to its cuts, the exchange starts, every slab
 * steps the rest (on a GPU alongside the copies), the exchange completes.
 * Every slab completes its step, even after another failed. */
static acm_status step_overlapped(acm_domain *d, const acm_check *check)
{
    acm_status st = each_slab_pass(d, edges_slab, NULL, true);
    const bool exchanging = st == ACM_OK; /* agreed: every process or none */
    const acm_status begun = exchanging ? acm__halo_exchange_begin(d) : ACM_OK;
    const acm_status rest = check_slabs(d, each_slab_pass(d, rest_slab, check, false), check);
    st = st != ACM_OK ? st : rest;
    const acm_status ended = exchanging ? acm__halo_exchange_end(d, begun) : ACM_OK;
    return st != ACM_OK ? st : ended; /* a failed exchange leaves the slabs out of step */
}

/* Whether slabs of this process run on more than one device. */
static bool spans_devices(const acm_domain *d)
{
    const acm_slabs *m = IMPL(d);
    for (int32_t p = 1; p < m->n; ++p)
        if (m->slab[p].local && m->slab[p].device != m->slab[0].device)
            return true;
    return false;
}

/* Whether the slabs step in two parts around the exchange
 * (ACM_PARAM_HALO_OVERLAP): by default where the exchange runs beside the
 * rest of the step, as messages between processes or copies between devices.
 * Slabs sharing one device share its memory bandwidth with their copies: the
 * extra launches only cost there (docs/multi-gpu.md, "Overlap"). */
static bool overlapped(const acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    if (d->setup.halo_overlap == 0 || dc->slab_ops->advance_edges == NULL)
        return false;
    return d->setup.halo_overlap == 2 || dc->transport != NULL || spans_devices(d);
}

/* The slabs' fallback cells, counted at their last checks: the domain's
 * count of the last checked step, and its total grown by what the slabs'
 * totals grew in the step. */
static void count_fallbacks(acm_domain *d)
{
    const acm_slabs *m = IMPL(d);
    double v[2] = {0.0, 0.0}; /* counts below 2^53 */
    for (int32_t p = 0; p < m->n; ++p)
        if (m->slab[p].local) {
            v[0] += (double)m->slab[p].sub->fallback_last;
            v[1] += (double)(m->slab[p].sub->fallback_total - m->slab[p].fallbacks_before);
        }
    if (acm__halo_sum_doubles(d, v, 2, NULL) != ACM_OK)
        return; /* the step failed over there too: the next check reports it */
    d->fallback_last = (int64_t)v[0];
    d->fallback_total += (int64_t)v[1];
}

static acm_status decomp_advance(acm_domain *d, acm_check check)
{
    ACM_TRY(decomp_reshape(d));
    if (check == ACM_CHECK_DUE && checks_at_call_end(d))
        check = ACM_CHECK_NONE;
    if (!IMPL(d)->on_devices)
        ACM_TRY(host_sums(d));
    d->decomp->uniform = false;
    ACM_TRY(each_slab(d, prepare_slab, NULL)); /* fail, if at all, before any slab steps */
    acm_slabs *m = IMPL(d);
    for (int32_t p = 0; p < m->n; ++p)
        if (m->slab[p].local) {
            m->slab[p].fallbacks_before = m->slab[p].sub->fallback_total;
            m->slab[p].sub->slab_sums_push = folds_on_devices(d);
        }
    const bool overlap = overlapped(d);
    acm_status st = overlap ? step_overlapped(d, &check)
                            : check_slabs(d, each_slab(d, advance_slab, &check), &check);
    if (st != ACM_OK) {
        bool stepped = false; /* a slab of this process took the step */
        for (int32_t p = 0; p < m->n; ++p)
            stepped = stepped || (m->slab[p].local && m->slab[p].sub->step > d->step);
        const bool torn = !acm__halo_all(d, !stepped);
        if (torn && st != ACM_ERR_DIVERGED) {
            const size_t len = strlen(d->error);
            acm__format(d->error + len, sizeof d->error - len,
                        "; other slabs took the step: re-initialise or load the domain");
        }
        if ((st == ACM_ERR_DIVERGED || torn) && !d->diverged) { /* out of step, or another
                                                                    process's divergence */
            d->diverged = true;
            d->diverged_step = d->step + 1;
        }
        return st;
    }
    d->step++;
    count_fallbacks(d);
    st = after_step_sums(d);
    if (st == ACM_OK && !overlap)
        st = acm__halo_exchange(d);
    account(d);
    if (st != ACM_OK && !d->diverged) { /* stepped, but without the next step's inputs */
        const size_t len = strlen(d->error);
        acm__format(d->error + len, sizeof d->error - len,
                    "; the slabs took the step without exchanging their ghost planes: "
                    "re-initialise or load the domain");
        d->diverged = true;
        d->diverged_step = d->step;
    }
    return st;
}

static acm_status values_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    return slab_face_values(d, s, *(const int *)ctx);
}

/* A face's values changed: every slab takes its part. */
static acm_status decomp_face_values(acm_domain *d, int face)
{
    return each_slab(d, values_slab, &face);
}

typedef struct field_job {
    acm_field field;
    acm_dtype dtype;
    void *dst;
    const void *src;
} field_job;

static acm_status get_slab_field(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const field_job *j = ctx;
    const size_t cell = acm__dtype_size(j->dtype) * (size_t)acm__field_components(j->field);
    void *b = slab_buffer(d, s, cell);
    if (b == NULL)
        return ACM_ERR_NO_MEMORY;
    acm_status st = s->ops->get_field(s, j->field, j->dtype, b);
    if (st == ACM_OK)
        gather(d, s, cell, b, j->dst);
    acm__free(b);
    return st;
}

static acm_status decomp_get_field(acm_domain *d, acm_field field, acm_dtype dtype, void *dst)
{
    ACM_TRY(decomp_reshape(d));
    const field_job j = {field, dtype, dst, NULL};
    ACM_TRY(each_slab(d, get_slab_field, &j));
    return acm__halo_gather_cells(d, acm__dtype_size(dtype) * (size_t)acm__field_components(field),
                                  dst);
}

static acm_status set_slab_field(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const field_job *j = ctx;
    if (j->src == NULL)
        return s->ops->set_field(s, j->field, j->dtype, NULL);
    const size_t cell = acm__dtype_size(j->dtype) * (size_t)acm__field_components(j->field);
    void *b = slab_buffer(d, s, cell);
    if (b == NULL)
        return ACM_ERR_NO_MEMORY;
    scatter(d, s, cell, j->src, b);
    acm_status st = s->ops->set_field(s, j->field, j->dtype, b);
    acm__free(b);
    return st;
}

static acm_status decomp_set_field(acm_domain *d, acm_field field, acm_dtype dtype,
                                   const void *src)
{
    ACM_TRY(decomp_reshape(d));
    d->decomp->uniform = false;
    const field_job j = {field, dtype, NULL, src};
    ACM_TRY(each_slab(d, set_slab_field, &j));
    return field == ACM_FIELD_POPULATIONS ? settle(d) : ACM_OK;
}

static acm_status decomp_probe_cell(acm_domain *d, int32_t x, int32_t y, int32_t z, double *rho,
                                    double u[3])
{
    ACM_TRY(decomp_reshape(d));
    acm_slabs *m = IMPL(d);
    const int32_t p = slab_of(m, z);
    acm_slab *sl = &m->slab[p];
    acm_status st = ACM_OK;
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    if (sl->local) {
        slab_sync(d, sl->sub);
        st = sl->sub->ops->probe_cell(sl->sub, x, y, z - sl->sub->origin_z, &v[0], &v[1]);
        if (st != ACM_OK)
            st = acm__slab_failed(d, p, st);
    }
    ACM_TRY(acm__halo_agree(d, st));
    ACM_TRY(acm__halo_broadcast(d, p, v, sizeof v));
    *rho = v[0];
    memcpy(u, &v[1], 3 * sizeof(double));
    return ACM_OK;
}

static acm_status decomp_stats(acm_domain *d, acm_domain_stats *out)
{
    ACM_TRY(decomp_reshape(d));
    acm_slabs *m = IMPL(d);
    double sums[5] = {0.0, 0.0, 0.0, 0.0, 0.0}, max_speed = 0.0;
    acm_status st = ACM_OK;
    for (int32_t p = 0; p < m->n && st == ACM_OK; ++p) {
        acm_slab *sl = &m->slab[p];
        if (!sl->local)
            continue;
        acm_domain_stats s;
        slab_sync(d, sl->sub);
        st = sl->sub->ops->stats(sl->sub, &s);
        if (st != ACM_OK) {
            st = acm__slab_failed(d, p, st);
            break;
        }
        sums[0] += s.mass;
        for (int a = 0; a < 3; ++a)
            sums[1 + a] += s.momentum[a];
        sums[4] += s.kinetic_energy;
        max_speed = s.max_speed > max_speed ? s.max_speed : max_speed;
    }
    ACM_TRY(acm__halo_agree(d, st));
    ACM_TRY(acm__halo_sum_doubles(d, sums, 5, &max_speed));
    out->mass = sums[0];
    memcpy(out->momentum, &sums[1], 3 * sizeof(double));
    out->kinetic_energy = sums[4];
    out->max_speed = max_speed;
    return ACM_OK;
}

/* ---- the cuts: slabs of equal cost ------------------------------------------------- */

/* What a step costs at each plane of d, in cells' steps (w: 2 nz entries):
 * w[z] its cells and, at w[nz + z] and added to w[z], ACM_SAMPLE_COST per IB
 * iteration for every sample whose stencil base lies in it at its body's pose. */
static void plane_costs(const acm_domain *d, double *w)
{
    double *samples = w + d->nz;
    for (int32_t z = 0; z < d->nz; ++z)
        samples[z] = 0.0;
    const double per = ACM_SAMPLE_COST * d->layout.ib.iterations;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        const acm_body *b = &s->body;
        for (uint64_t j = 0; j < s->count; ++j) {
            double X[3], ub[3];
            acm_rigid_place(b->x, b->q, b->v, b->w, s->r + 3 * j, X, ub);
            const double f = floor(X[2]);
            int64_t z = isfinite(f) ? (int64_t)fmax(fmin(f, 4.0 * d->nz), -4.0 * d->nz) : 0;
            z = z_periodic(d) ? ((z % d->nz) + d->nz) % d->nz : (z < 0 ? 0 : z);
            samples[z < d->nz ? z : d->nz - 1] += per;
        }
    }
    for (int32_t z = 0; z < d->nz; ++z)
        w[z] = (double)d->nx * (double)d->ny + samples[z];
}

/* Whether a slab steps its ghost planes' cells (backend.h acm__stepped_planes). */
static bool ghosts_stepped(const acm_domain *d)
{
    return d->layout.streaming == ACM_STREAMING_IN_PLACE;
}

/* Cuts (nslabs + 1) of slabs of about equal cost (w of plane_costs), each as
 * thick as d's solids need; false where nz is too thin for that. */
static bool balanced_cuts(const acm_domain *d, const double *w, int32_t *cuts)
{
    const acm_decomp *dc = d->decomp;
    const int32_t depth = d->nsolids > 0 ? ghost_depth(d) : 0;
    double *ghosts = acm__malloc((size_t)dc->nslabs * sizeof *ghosts); /* NULL: left out */
    for (int32_t p = 0; p < dc->nslabs && ghosts != NULL; ++p) {
        int32_t halo[2];
        slab_halo(d, p, halo);
        ghosts[p] = ghosts_stepped(d) ? (double)(halo[0] + halo[1]) * d->nx * d->ny : 0.0;
    }
    const bool ok = acm__partition(d->nz, d->nsolids > 0 ? w : NULL, dc->nslabs,
                                   depth > ACM_HALO_PLANES ? depth : ACM_HALO_PLANES,
                                   ghosts, cuts);
    acm__free(ghosts);
    return ok;
}

/* The cost of slab p's step at the cuts: its own planes, the samples of its
 * ghost planes (which its solids' iterations reach) and, where it steps
 * them, their cells. */
static double slab_cost(const acm_domain *d, const double *w, const int32_t *cuts, int32_t p)
{
    int32_t halo[2];
    slab_halo(d, p, halo);
    double c = 0.0;
    for (int32_t z = cuts[p] - halo[0]; z < cuts[p + 1] + halo[1]; ++z) {
        const int32_t g = (z % d->nz + d->nz) % d->nz;
        const bool own = z >= cuts[p] && z < cuts[p + 1];
        c += own || ghosts_stepped(d) ? w[g] : w[d->nz + g];
    }
    return c;
}

static double costliest(const acm_domain *d, const double *w, const int32_t *cuts)
{
    double most = 0.0;
    for (int32_t p = 0; p < d->decomp->nslabs; ++p)
        most = fmax(most, slab_cost(d, w, cuts, p));
    return most;
}

/* The solids' poses the cuts were weighed at (acm_decomp.ib_weighed). */
static void note_poses(acm_domain *d)
{
    acm_decomp *dc = d->decomp;
    for (int32_t i = 0; i < d->nsolids && dc->ib_weighed != NULL; ++i) {
        memcpy(dc->ib_weighed + 7 * i, d->solids[i]->body.x, 3 * sizeof(double));
        memcpy(dc->ib_weighed + 7 * i + 3, d->solids[i]->body.q, 4 * sizeof(double));
    }
}

/* Cuts of slabs of equal cost at the solids' poses (the old cuts where nz is
 * too thin for them: check_solids says why), and the planes' costs w. */
static void weigh(acm_domain *d, int32_t *cuts, double *w)
{
    const acm_decomp *dc = d->decomp;
    plane_costs(d, w);
    if (!balanced_cuts(d, w, cuts))
        memcpy(cuts, dc->cuts, ((size_t)dc->nslabs + 1) * sizeof *cuts);
    note_poses(d);
}

/* Whether cutting the slabs anew at the solids' poses lowers the costliest
 * slab's cost by more than `gain` (a fraction). The same answer on every
 * process: every one holds every solid at the same pose. */
static bool recut_pays(acm_domain *d, double gain)
{
    acm_decomp *dc = d->decomp;
    double *w = acm__malloc(2 * (size_t)d->nz * sizeof *w);
    int32_t *cuts = acm__malloc(((size_t)dc->nslabs + 1) * sizeof *cuts);
    bool pays = false;
    if (w != NULL && cuts != NULL) { /* else the cuts stay */
        weigh(d, cuts, w);
        pays = memcmp(cuts, dc->cuts, ((size_t)dc->nslabs + 1) * sizeof *cuts) != 0 &&
               costliest(d, w, cuts) < (1.0 - gain) * costliest(d, w, dc->cuts);
    }
    acm__free(w);
    acm__free(cuts);
    return acm__halo_all(d, pays); /* false everywhere where one process had no memory */
}

/* Whether a solid moved by the sample margin since the cuts were weighed. */
static bool moved_since_weighed(const acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    for (int32_t i = 0; i < d->nsolids && dc->ib_weighed != NULL; ++i) {
        const acm_body *b = &d->solids[i]->body;
        if (acm_body_displacement(dc->ib_weighed + 7 * i, dc->ib_weighed + 7 * i + 3, b->x, b->q,
                                   b->r_max) >= ACM_SLAB_SAMPLE_MARGIN - 1)
            return true;
    }
    return false;
}

/* Moving solids shift the load: once they moved by the sample margin, the
 * slabs are cut anew where that pays by ACM_RECUT_GAIN. */
static acm_status rebalance(acm_domain *d)
{
    if (d->nsolids == 0 || !moved_since_weighed(d))
        return ACM_OK;
    if (!recut_pays(d, ACM_RECUT_GAIN)) /* weighed: not again until they move on */
        return ACM_OK;
    d->decomp->recut = true;
    return decomp_reshape(d);
}

/* ---- immersed solids ------------------------------------------------------------ */

/* Whether a sample with its stencil base at whole-domain height Z may reach
 * slab s's planes (ghosts included) before its proxies are chosen anew. */
static bool near_slab(const acm_ib_grid *g, double Z)
{
    const int64_t n = g->n[2], w = g->whole[2], margin = ACM_SLAB_SAMPLE_MARGIN;
    if (g->periodic[2] && n + 2 * margin + 2 > w)
        return true; /* the slab and its margins wrap around the axis */
    int64_t i = (int64_t)floor(Z) - g->lo[2];
    if (g->periodic[2]) {
        i %= w;
        i = i < 0 ? i + w : i;
        i = i >= n + margin ? i - w : i;
    }
    return i >= -1 - margin && i < n + margin;
}

/* Slab s's proxy of solid src: the samples near the slab at the pose `at`,
 * in src's order, with src's gain and body. */
static acm_status make_proxy(acm_domain *d, acm_domain *s, const acm_solid *src,
                             const acm_body *at, acm_solid **out)
{
    const acm_ib_grid g = acm__ib_grid(s);
    acm_solid *x = acm__calloc(1, sizeof *x);
    if (x == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a slab's solid");
    *out = x;
    x->domain = s;
    x->alpha = src->alpha;
    x->body = x->placed = *at;
    memcpy(x->sort_x, at->x, sizeof x->sort_x); /* the pose the samples were chosen at */
    memcpy(x->sort_q, at->q, sizeof x->sort_q);
    double X[3], ub[3];
    for (int pass = 0; pass < 2; ++pass) {
        uint64_t k = 0;
        for (uint64_t j = 0; j < src->count; ++j) {
            acm_rigid_place(at->x, at->q, at->v, at->w, src->r + 3 * j, X, ub);
            if (!near_slab(&g, X[2]))
                continue;
            if (pass == 1) {
                memcpy(x->r + 3 * k, src->r + 3 * j, 3 * sizeof(double));
                x->dv[k] = src->dv[j];
                x->origin[k] = src->origin[j];
            }
            ++k;
        }
        if (pass == 0) {
            x->count = k;
            x->r = acm__malloc((k ? k : 1) * 3 * sizeof(double));
            x->dv = acm__malloc((k ? k : 1) * sizeof(double));
            x->origin = acm__malloc((k ? k : 1) * sizeof(uint64_t));
            if (x->r == NULL || x->dv == NULL || x->origin == NULL)
                return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %llu samples of a slab",
                                (unsigned long long)k);
        }
    }
    return ACM_OK;
}

/* Proxies for slab s of d's solids at their bodies (or where they were last
 * placed). */
static acm_status make_proxies(acm_domain *d, acm_domain *s, bool at_body, proxy_set *p)
{
    if (d->nsolids > 0 && (p->solids = acm__calloc((size_t)d->nsolids, sizeof *p->solids)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a slab's solids");
    p->n = d->nsolids;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *src = d->solids[i];
        ACM_TRY(make_proxy(d, s, src, at_body ? &src->body : &src->placed, &p->solids[i]));
        p->solids[i]->offset = p->samples;
        p->samples += p->solids[i]->count;
    }
    return ACM_OK;
}

/* Slab s's proxies made anew and handed to its backend. On failure the old
 * stay (a backend keeps its IB planes when its attach fails), and so does
 * what made the call select: the next call selects again. */
static acm_status slab_select(acm_domain *d, acm_domain *s, bool at_body)
{
    proxy_set fresh = {NULL, 0, 0};
    acm_status st = make_proxies(d, s, at_body, &fresh);
    if (st != ACM_OK) {
        proxy_set_free(&fresh);
        return st;
    }
    proxy_set old = take_proxies(s);
    give_proxies(s, &fresh);
    st = s->ops->ib_attach(s);
    s->ib_dirty = st != ACM_OK;
    if (st != ACM_OK) {
        fresh = take_proxies(s);
        give_proxies(s, &old);
        proxy_set_free(&fresh);
        return st;
    }
    proxy_set_free(&old);
    return ACM_OK;
}

static acm_status attach_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    (void)ctx;
    return slab_select(d, s, false);
}

/* The first slab at `cuts` too thin for d's solids' ghost planes, or -1. */
static int32_t thin_slab(const acm_domain *d, const int32_t *cuts)
{
    const int32_t depth = ghost_depth(d);
    for (int32_t p = 0; d->nsolids > 0 && p < d->decomp->nslabs; ++p) {
        const int32_t own = cuts[p + 1] - cuts[p];
        if (own < depth || (z_periodic(d) && own + 2 * depth > d->nz))
            return p;
    }
    return -1;
}

/* Whether the slabs can step d's solids: a backend with the IB ops, slabs
 * at `cuts` thick enough for the iterations. */
static acm_status check_solids(acm_domain *d, const int32_t *cuts)
{
    if (d->nsolids == 0)
        return ACM_OK;
    const struct acm_backend_ops *ops = d->decomp->slab_ops;
    if (ops->ib_attach == NULL || ops->ib_plane_forces == NULL || ops->ib_begin == NULL ||
        ops->ib_end == NULL)
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED,
                        "the %s backend cannot run immersed solids on slabs", ops->name);
    const int32_t p = thin_slab(d, cuts), depth = ghost_depth(d);
    if (p >= 0)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "slab %d has %d planes: with immersed solids and %d iterations a slab "
                        "needs at least %d (and, along a periodic z, nz - %d); use fewer "
                        "slabs",
                        (int)p, (int)(cuts[p + 1] - cuts[p]), (int)d->layout.ib.iterations,
                        (int)depth, (int)(2 * depth));
    return ACM_OK;
}

static void ib_scratch_free(acm_decomp *dc)
{
    acm__free(dc->ib_planes);
    acm__free(dc->ib_mine);
    acm__free(dc->ib_dvdw);
    acm__free(dc->ib_weighed);
    dc->ib_planes = dc->ib_mine = dc->ib_dvdw = dc->ib_weighed = NULL;
    dc->ib_nsolids = 0;
}

/* The scratch of the solids' sums for d's solids (acm_decomp). */
static acm_status ib_scratch(acm_domain *d)
{
    acm_decomp *dc = d->decomp;
    if (dc->ib_nsolids == d->nsolids && (d->nsolids == 0 || dc->ib_planes != NULL))
        return ACM_OK;
    ib_scratch_free(dc);
    if (d->nsolids == 0)
        return ACM_OK;
    const int32_t own = d->nz; /* a slab's planes, whatever the cuts */
    const size_t per = sizeof(acm_coupling) / sizeof(double), n = (size_t)d->nsolids;
    dc->ib_planes = acm__calloc(n * (size_t)d->nz * per, sizeof(double));
    dc->ib_mine = acm__calloc(n * (size_t)own * per, sizeof(double));
    dc->ib_dvdw = acm__calloc(6 * n, sizeof(double));
    dc->ib_weighed = acm__calloc(7 * n, sizeof(double));
    if (dc->ib_planes == NULL || dc->ib_mine == NULL || dc->ib_dvdw == NULL ||
        dc->ib_weighed == NULL) {
        ib_scratch_free(dc);
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the solids' sums of %d planes",
                        (int)d->nz);
    }
    dc->ib_nsolids = d->nsolids;
    return ACM_OK;
}

static acm_status decomp_ib_attach(acm_domain *d)
{
    const acm_slabs *m = IMPL(d);
    ACM_TRY(ib_scratch(d));
    d->decomp->recut = true; /* solids came or went: new slabs, cut where they weigh */
    if (m->depth != ghost_depth(d) || thin_slab(d, d->decomp->cuts) >= 0 || recut_pays(d, 0.0))
        return decomp_reshape(d);
    d->decomp->recut = false;
    ACM_TRY(check_solids(d, d->decomp->cuts));
    ACM_TRY(each_slab(d, attach_slab, NULL));
    account(d);
    return ACM_OK;
}

/* Whether a solid of d moved so far since slab s chose its samples that one
 * outside the margin may reach the slab. */
static bool needs_select(const acm_domain *d, const acm_domain *s)
{
    if (s->ib_dirty || s->nsolids != d->nsolids)
        return true;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_body *b = &d->solids[i]->body;
        const acm_solid *x = s->solids[i];
        if (acm_body_displacement(x->sort_x, x->sort_q, b->x, b->q, b->r_max) >=
            ACM_SLAB_SAMPLE_MARGIN - 1)
            return true;
    }
    return false;
}

/* Slab s's proxies at their bodies' poses, chosen anew if they moved far. */
static acm_status sync_proxies(acm_domain *d, acm_domain *s)
{
    if (needs_select(d, s))
        ACM_TRY(slab_select(d, s, true));
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *x = s->solids[i];
        x->body = d->solids[i]->body;
        x->moved = x->moved || d->solids[i]->moved;
    }
    return ACM_OK;
}

static acm_status forces_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    (void)ctx;
    ACM_TRY(sync_proxies(d, s));
    return s->nsamples > 0 ? s->ops->ib_forces(s) : ACM_OK;
}

/* What the slabs' halves of the IB phase share: every solid's planes of
 * coupling sums (nsolids x nz, by whole-domain plane), then their velocity
 * changes (6 per solid). */
typedef struct coupling_job {
    acm_coupling *planes;
    double *dvdw;
} coupling_job;

static acm_status begin_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    const coupling_job *j = ctx;
    ACM_TRY(sync_proxies(d, s));
    if (s->nsamples == 0)
        return ACM_OK;
    const int32_t own = s->nz - s->halo[0] - s->halo[1], z0 = IMPL(d)->slab[p].z0;
    acm_coupling *mine = (acm_coupling *)d->decomp->ib_mine;
    ACM_TRY(s->ops->ib_begin(s, mine));
    for (int32_t i = 0; i < d->nsolids; ++i)
        memcpy(j->planes + (size_t)i * (size_t)d->nz + z0, mine + (size_t)i * (size_t)own,
               (size_t)own * sizeof *mine);
    return ACM_OK;
}

static acm_status end_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)d;
    (void)p;
    const coupling_job *j = ctx;
    return s->nsamples > 0 ? s->ops->ib_end(s, j->dvdw) : ACM_OK;
}

/* With free bodies the IB phase is cut after the first interpolation: each
 * free body's coupling sums are added over every slab's planes (in plane
 * order, as one domain adds them), its velocity change is computed once and
 * every slab finishes with it. */
static acm_status forces_coupled(acm_domain *d)
{
    const size_t n = (size_t)d->nsolids * (size_t)d->nz;
    const coupling_job j = {(acm_coupling *)d->decomp->ib_planes, d->decomp->ib_dvdw};
    memset(j.planes, 0, n * sizeof *j.planes);
    memset(j.dvdw, 0, 6 * (size_t)d->nsolids * sizeof *j.dvdw);
    acm_status st = each_slab(d, begin_slab, &j);
    if (st == ACM_OK) /* each plane has one slab: the sum adds zeros, exactly */
        st = acm__halo_sum_doubles(d, (double *)j.planes, (int)(16 * n), NULL);
    if (st == ACM_OK) {
        acm__solids_coupled_velocities(d, j.planes, d->nz, j.dvdw);
        st = each_slab_pass(d, end_slab, &j, false);
    }
    return st;
}

static acm_status decomp_ib_forces(acm_domain *d)
{
    if (d->decomp->ib_nsolids != d->nsolids || d->decomp->ib_planes == NULL)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "the solids are not attached to the slabs");
    ACM_TRY(decomp_reshape(d));
    ACM_TRY(rebalance(d));
    ACM_TRY(acm__solids_any_free(d) ? forces_coupled(d) : each_slab(d, forces_slab, NULL));
    for (int32_t i = 0; i < d->nsolids; ++i)
        d->solids[i]->moved = false; /* the slabs placed them */
    d->forces_stale = true;
    account(d);
    return ACM_OK;
}

/* Slab s's planes of every solid's forces into ctx (nsolids x nz, by whole-
 * domain plane). */
static acm_status plane_forces_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    acm_ib_ft *all = (acm_ib_ft *)(uintptr_t)ctx;
    const int32_t own = s->nz - s->halo[0] - s->halo[1], z0 = IMPL(d)->slab[p].z0;
    if (s->nsamples == 0)
        return ACM_OK;
    acm_ib_ft *mine = (acm_ib_ft *)d->decomp->ib_mine;
    ACM_TRY(s->ops->ib_plane_forces(s, mine));
    for (int32_t i = 0; i < d->nsolids; ++i)
        memcpy(all + (size_t)i * (size_t)d->nz + z0, mine + (size_t)i * (size_t)own,
               (size_t)own * sizeof *mine);
    return ACM_OK;
}

/* Every solid's force and torque: the slabs' planes, summed over processes
 * (each plane has one slab: the sum adds zeros, exactly), folded in order. */
static acm_status decomp_ib_fetch(acm_domain *d)
{
    const size_t n = (size_t)d->nsolids * (size_t)d->nz;
    if (d->decomp->ib_nsolids != d->nsolids || d->decomp->ib_planes == NULL)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "the solids are not attached to the slabs");
    acm_ib_ft *all = (acm_ib_ft *)d->decomp->ib_planes;
    memset(all, 0, n * sizeof *all);
    acm_status st = each_slab_pass(d, plane_forces_slab, all, false);
    if (st == ACM_OK)
        st = acm__halo_sum_doubles(d, (double *)all, (int)(6 * n), NULL);
    for (int32_t i = 0; st == ACM_OK && i < d->nsolids; ++i) {
        acm_ib_ft ft;
        acm_ib_ft_fold(all + (size_t)i * (size_t)d->nz, d->nz, &ft);
        memcpy(d->solids[i]->force, ft.f, sizeof ft.f);
        memcpy(d->solids[i]->torque, ft.t, sizeof ft.t);
    }
    if (st == ACM_OK)
        d->forces_stale = false;
    return st;
}

/* Where the samples were last placed, placed again here as the backends do. */
static acm_status decomp_ib_positions(acm_domain *d, const acm_solid *s, double *dst)
{
    (void)d;
    const acm_body *b = &s->placed;
    double ub[3];
    for (uint64_t j = 0; j < s->count; ++j)
        acm_rigid_place(b->x, b->q, b->v, b->w, s->r + 3 * j, dst + 3 * j, ub);
    return ACM_OK;
}

/* ---- state transfers: the slabs' own planes <-> one state of the domain ---- */

/* The part of a state array of `comp` doubles per cell. */
static void state_part(const acm_domain *d, const acm_domain *s, int comp, const double *src,
                       double *dst, bool to_slab)
{
    if (src == NULL || dst == NULL)
        return;
    if (to_slab)
        scatter(d, s, (size_t)comp * sizeof(double), src, dst);
    else
        gather(d, s, (size_t)comp * sizeof(double), src, dst);
}

static void state_parts(const acm_domain *d, const acm_domain *s, const acm_state *from,
                        acm_state *to, bool to_slab)
{
    to->form = from->form;
    to->mom_bits = from->mom_bits;
    to->mom_closure = from->mom_closure;
    state_part(d, s, ACM_Q, from->f, to->f, to_slab);
    state_part(d, s, ACM_MOMENTS, from->mom, to->mom, to_slab);
    state_part(d, s, 3, from->force, to->force, to_slab);
    state_part(d, s, 1, from->tau, to->tau, to_slab);
    state_part(d, s, 3, from->ib_force, to->ib_force, to_slab);
}

/* The IB support bits of slab s's cells (from whole-domain bits when to_slab,
 * ghosts included) or of its own cells (into a byte per whole-domain cell,
 * which the processes gather like any other cell value). */
static void band_part(const acm_domain *d, const acm_domain *s, const uint32_t *whole_bits,
                      uint32_t *slab_bits, uint8_t *whole_bytes, bool to_slab)
{
    const int64_t plane = (int64_t)d->nx * d->ny;
    for (int32_t l = to_slab ? 0 : s->halo[0]; l < s->nz - (to_slab ? 0 : s->halo[1]); ++l)
        for (int64_t c = 0; c < plane; ++c) {
            const int64_t k = l * plane + c, g = (int64_t)global_plane(d, s, l) * plane + c;
            if (!to_slab) {
                whole_bytes[g] = (uint8_t)(slab_bits != NULL && (slab_bits[k >> 5] >> (k & 31) & 1u));
                continue;
            }
            const uint32_t bit = 1u << (k & 31);
            slab_bits[k >> 5] = (whole_bits[g >> 5] >> (g & 31) & 1u) ? slab_bits[k >> 5] | bit
                                                                        : slab_bits[k >> 5] & ~bit;
        }
}

/* What save_slab fills: the domain's state, and its IB support a byte a cell. */
typedef struct save_job {
    acm_state *st;
    uint8_t *band;
} save_job;

static acm_status save_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const save_job *j = ctx;
    acm_state *st = j->st, local;
    ACM_TRY(s->ops->state_save(s, &local, false));
    acm_status r = ACM_OK;
    if (st->f == NULL) { /* the first slab: the arrays the slabs have */
        r = acm__state_alloc(d, st, local.force != NULL, local.tau != NULL, j->band != NULL);
        if (r == ACM_OK && j->band != NULL) /* zero where no sample is near a slab */
            memset(st->ib_force, 0, 3 * (size_t)d->ncells * sizeof(double));
        if (r == ACM_OK && local.mom != NULL) /* the GPU's stored moments: back bit for bit */
            r = acm__state_alloc_moments(d, st);
    }
    if (r == ACM_OK) {
        state_parts(d, s, &local, st, false);
        if (j->band != NULL)
            band_part(d, s, NULL, local.ib_mask, j->band, false);
    }
    acm__state_free(&local);
    return r;
}

/* The ACM rules' inputs of the next step as the slabs' backend keeps them: the
 * CPU's means, or a GPU's raw sums and their inverses (cuda acm_gpu_sums), so
 * that an undivided domain loads them as its own. */
static void save_prev(const acm_domain *d, acm_state *st)
{
    const acm_plane_sums *t = &IMPL(d)->total;
    st->prev_backend = d->backend;
    if (d->backend == ACM_BACKEND_CUDA) {
        const double cuda[8] = {t->max_u2,
                                t->sum_rho,
                                t->sum_j,
                                t->sum_pi,
                                acm__inv_umax(t->max_u2),
                                acm__inv_mean(t->sum_rho, (double)d->ncells),
                                acm__inv_mean(t->sum_j, (double)d->ncells),
                                acm__inv_mean(t->sum_pi, (double)d->ncells)};
        memcpy(st->prev, cuda, sizeof cuda);
        return;
    }
    const double cpu[4] = {d->prev.max_u, d->prev.mean_rho, d->prev.mean_j, d->prev.mean_pi};
    memcpy(st->prev, cpu, sizeof cpu);
}

/* The other way, after a load in the same backend; from another backend's
 * state the slabs' own reductions of the loaded state stand (decomp_state_load). */
static void load_prev(acm_domain *d, const acm_state *st)
{
    acm_slabs *m = IMPL(d);
    if (d->backend == ACM_BACKEND_CUDA) {
        const acm_plane_sums t = {st->prev[0], st->prev[1], st->prev[2], st->prev[3]};
        m->total = t;
        d->prev.max_u = sqrt(t.max_u2);
        d->prev.mean_rho = t.sum_rho / (double)d->ncells;
        d->prev.mean_j = t.sum_j / (double)d->ncells;
        d->prev.mean_pi = t.sum_pi / (double)d->ncells;
        return;
    }
    d->prev.max_u = st->prev[0];
    d->prev.mean_rho = st->prev[1];
    d->prev.mean_j = st->prev[2];
    d->prev.mean_pi = st->prev[3];
}

/* The domain's state from its slabs as they are (decomp_reshape saves with it). */
static acm_status save_state(acm_domain *d, acm_state *st)
{
    memset(st, 0, sizeof *st);
    ACM_TRY(host_sums(d));
    save_job j = {st, NULL};
    acm_status s = ACM_OK;
    if (d->nsolids > 0 && d->nsamples > 0 && (j.band = acm__calloc((size_t)d->ncells, 1)) == NULL)
        s = ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %.3g MB for a copy of the IB support",
                     (double)d->ncells / 1e6);
    s = acm__halo_agree(d, s); /* every process, or none, goes on to the gathers */
    if (s == ACM_OK)
        s = each_slab(d, save_slab, &j);
    if (s == ACM_OK)
        s = acm__halo_gather_state(d, st);
    if (s == ACM_OK && j.band != NULL)
        s = acm__halo_gather_cells(d, 1, j.band);
    if (s == ACM_OK && j.band != NULL) {
        memset(st->ib_mask, 0, acm_state_mask_words(d->ncells) * sizeof(uint32_t));
        for (int64_t k = 0; k < d->ncells; ++k)
            st->ib_mask[k >> 5] |= (uint32_t)j.band[k] << (k & 31);
    }
    acm__free(j.band);
    if (s != ACM_OK) {
        acm__state_free(st);
        return s;
    }
    save_prev(d, st);
    return ACM_OK;
}

static acm_status decomp_state_save(acm_domain *d, acm_state *st, bool park)
{
    (void)park; /* the slabs' states go through the host */
    ACM_TRY(decomp_reshape(d));
    return save_state(d, st);
}

static acm_status load_slab(acm_domain *d, acm_domain *s, int32_t p, const void *ctx)
{
    (void)p;
    const acm_state *st = ctx;
    acm_state local;
    const bool ib = st->ib_force != NULL && st->ib_mask != NULL;
    ACM_TRY(acm__state_alloc(s, &local, st->force != NULL, st->tau != NULL, ib));
    acm_status r = st->mom != NULL ? acm__state_alloc_moments(s, &local) : ACM_OK;
    if (r != ACM_OK) {
        acm__state_free(&local);
        return r;
    }
    state_parts(d, s, st, &local, true);
    if (ib) {
        memset(local.ib_mask, 0, acm_state_mask_words(s->ncells) * sizeof(uint32_t));
        band_part(d, s, st->ib_mask, local.ib_mask, NULL, true);
    }
    local.prev_backend = st->prev_backend;
    memcpy(local.prev, st->prev, sizeof local.prev);
    r = s->ops->state_load(s, &local);
    acm__state_free(&local);
    return r;
}

static acm_status decomp_state_load(acm_domain *d, const acm_state *st)
{
    d->decomp->uniform = false;
    ACM_TRY(each_slab(d, load_slab, st));
    ACM_TRY(settle(d));
    if (st->prev_backend == d->backend) /* the saved inputs, not those of the loaded state */
        load_prev(d, st);
    return ACM_OK;
}

static void decomp_device_name(acm_domain *d, char *buf, size_t size)
{
    acm_slabs *m = IMPL(d);
    char one[128] = "";
    for (int32_t p = 0; p < m->n && one[0] == '\0'; ++p)
        if (m->slab[p].local)
            m->slab[p].sub->ops->device_name(m->slab[p].sub, one, sizeof one);
    acm__format(buf, size, "%s; %d slabs", one, (int)d->decomp->nslabs);
}

static const struct acm_backend_ops acm_backend_decomp = {
    .name = "slabs",
    .kind = ACM_BACKEND_AUTO, /* d->backend says what the slabs run on */
    .domain_init = decomp_domain_init,
    .domain_fini = decomp_domain_fini,
    .init_equilibrium = decomp_init_equilibrium,
    .advance = decomp_advance,
    .get_field = decomp_get_field,
    .set_field = decomp_set_field,
    .face_values = decomp_face_values,
    .agree = acm__halo_agree,
    .probe_cell = decomp_probe_cell,
    .stats = decomp_stats,
    .state_save = decomp_state_save,
    .state_load = decomp_state_load,
    .ib_attach = decomp_ib_attach,
    .ib_forces = decomp_ib_forces,
    .ib_fetch = decomp_ib_fetch,
    .ib_positions = decomp_ib_positions,
    .device_name = decomp_device_name,
};

/* ---- creation and reshaping ---------------------------------------------------- */

/* New slabs at `cuts` in place of the old. They are made and loaded before
 * the old ones go, so that running out of memory leaves the domain as it was
 * (and the next call tries again). The state goes through the host in double
 * precision (27 x 8 bytes a cell) unless the slabs still hold a uniform
 * equilibrium and no per-cell force field, the usual case of solids added
 * before the first step: that is made anew. */
static acm_status remake(acm_domain *d, int32_t **cuts)
{
    acm_decomp *dc = d->decomp;
    const bool uniform = dc->uniform && !d->setup.has_force_field;
    const acm_init_source init = dc->init;
    acm_state st;
    memset(&st, 0, sizeof st);
    if (!uniform)
        ACM_TRY(save_state(d, &st)); /* at the old cuts */
    int32_t *was = dc->cuts; /* the caller frees what *cuts holds after: old or new */
    dc->cuts = *cuts;
    *cuts = was;
    acm_slabs *old = IMPL(d);
    d->impl = NULL;
    acm_status s = slabs_init(d);
    if (s == ACM_OK && d->nsolids > 0) /* the slabs' backends load IB planes into storage */
        s = each_slab(d, attach_slab, NULL);
    if (s == ACM_OK)
        s = uniform ? init_slabs(d, &init) : decomp_state_load(d, &st);
    acm__state_free(&st);
    if (s != ACM_OK) {
        slabs_free(d);
        d->impl = old;
        *cuts = dc->cuts;
        dc->cuts = was;
        dc->uniform = uniform;
        account(d);
        return s;
    }
    slab_table_free(old);
    dc->recut = false;
    return ACM_OK;
}

/* New slabs where z changed between periodic and not, solids came or went or
 * changed their iterations (the slabs' ghost planes with them), or the cuts
 * are to be weighed anew (acm_decomp.recut): cut where the slabs' costs are
 * equal at the solids' poses. */
static acm_status decomp_reshape(acm_domain *d)
{
    acm_decomp *dc = d->decomp;
    const acm_slabs *m = IMPL(d);
    bool same = !dc->recut && thin_slab(d, dc->cuts) < 0; /* else cut where they fit */
    for (int32_t p = 0; p < m->n; ++p) {
        int32_t halo[2];
        slab_halo(d, p, halo);
        same = same && m->slab[p].halo[0] == halo[0] && m->slab[p].halo[1] == halo[1];
    }
    if (acm__halo_all(d, same))
        return check_solids(d, dc->cuts); /* their iterations may have changed */
    int32_t *cuts = acm__malloc(((size_t)dc->nslabs + 1) * sizeof *cuts);
    double *w = acm__malloc(2 * (size_t)d->nz * sizeof *w);
    acm_status s = cuts == NULL || w == NULL
                       ? ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the cuts of %d slabs",
                                  (int)dc->nslabs)
                       : ACM_OK;
    if (s == ACM_OK) {
        weigh(d, cuts, w);
        s = check_solids(d, cuts);
    }
    s = acm__halo_agree(d, s); /* the same cuts everywhere: the same solids at the same poses */
    if (s == ACM_OK)
        s = remake(d, &cuts);
    acm__free(cuts);
    acm__free(w);
    return s;
}

acm_status acm__decomp_setup(acm_domain *d, const struct acm_backend_ops *slab_ops,
                             int32_t parts, const int32_t *devices)
{
    if (slab_ops->plane_sums == NULL || slab_ops->planes_get == NULL ||
        slab_ops->planes_put == NULL)
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED,
                        "the %s backend cannot run a domain of several slabs yet", slab_ops->name);
    acm_decomp *dc = acm__calloc(1, sizeof *dc);
    if (dc == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the decomposition");
    d->decomp = dc;
    dc->slab_ops = slab_ops;
    dc->nslabs = parts;
    dc->cuts = acm__calloc((size_t)parts + 1, sizeof *dc->cuts);
    dc->devices = acm__calloc((size_t)parts, sizeof *dc->devices);
    dc->owner = acm__calloc((size_t)parts, sizeof *dc->owner);
    if (dc->cuts == NULL || dc->devices == NULL || dc->owner == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the decomposition");
    for (int32_t p = 0; p < parts; ++p)
        dc->devices[p] = devices != NULL ? devices[p] : d->device;
    if (!acm__partition(d->nz, NULL, parts, ACM_HALO_PLANES, NULL, dc->cuts))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "nz=%d is too small for %d slabs of at least %d planes each", (int)d->nz,
                        (int)parts, ACM_HALO_PLANES);
    d->ops = &acm_backend_decomp;
    return ACM_OK;
}

acm_status acm__decomp_init(acm_domain *d, const struct acm_backend_ops *slab_ops, int32_t parts,
                            const int32_t *devices)
{
    ACM_TRY(acm__decomp_setup(d, slab_ops, parts, devices));
    return d->ops->domain_init(d);
}

bool acm__decomp_writes(const acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    return dc == NULL || dc->transport == NULL || dc->owner[0] == dc->rank;
}

void acm__decomp_free(acm_domain *d)
{
    acm_decomp *dc = d->decomp;
    if (dc == NULL)
        return;
    acm__halo_release(dc);
    ib_scratch_free(dc);
    acm__free(dc->cuts);
    acm__free(dc->devices);
    acm__free(dc->owner);
    acm__free(dc);
    d->decomp = NULL;
}

acm_status acm__decomp_slabs(acm_domain *d, int32_t *cuts, double *cost)
{
    const acm_decomp *dc = d->decomp;
    const int32_t n = dc != NULL ? dc->nslabs : 1;
    for (int32_t p = 0; cuts != NULL && p <= n; ++p)
        cuts[p] = dc != NULL ? dc->cuts[p] : (p == 0 ? 0 : d->nz);
    if (cost == NULL)
        return ACM_OK;
    double *w = acm__malloc(2 * (size_t)d->nz * sizeof *w);
    if (w == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the costs of %d planes",
                        (int)d->nz);
    plane_costs(d, w);
    cost[0] = 0.0;
    for (int32_t z = 0; dc == NULL && z < d->nz; ++z)
        cost[0] += w[z];
    for (int32_t p = 0; dc != NULL && p < n; ++p)
        cost[p] = slab_cost(d, w, dc->cuts, p);
    acm__free(w);
    return ACM_OK;
}
