/*
 * libacmlbm -- the CUDA backend's immersed boundary: the samples' device
 * storage, the penalty iterations and the implicit coupling of free bodies,
 * and the solids' forces and torques. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend_impl.cuh"
#include "morton.h" /* ACM_MORTON_BITS */
#include "solid.h"

/* ---- immersed boundary (the CPU's twin: lib/cpu/backend.c, lib/cpu/ib_tmpl.h) ------------ */

/* The IB kernels' arguments (zeroed first: a run's graph key compares their bytes). */
acm_ib_args cu_ib_args(const acm_domain *d)
{
    cuda_ib *ib = &IMPL(d)->ib;
    acm_ib_args a;
    memset(&a, 0, sizeof a);
    a.ig = acm__ib_grid(d);
    a.n = ib->n;
    a.X = ib->X;
    a.r = ib->r;
    a.ub = ib->ub;
    a.dv = ib->dv;
    a.alpha = ib->alpha;
    a.G = ib->G;
    a.Gsum = ib->Gsum;
    a.rho = ib->rho;
    a.macro = ib->macro;
    a.force = ib->force;
    a.mask = ib->mask;
    a.band = ib->band;
    a.band_count = ib->band + ib->band_cap;
    a.own0 = acm__own_origin(d);
    a.own_n = acm__own_planes(d);
    return a;
}

/* Free the per-sample arrays (and with `cells` the per-cell planes too). */
void cu_ib_release(acm_domain *d, bool cells)
{
    cuda_ib *ib = &IMPL(d)->ib;
    const uint64_t n = ib->n;
    const size_t real = IMPL(d)->real;
    cu_dev_free(d, (void **)&ib->X, 3 * n * sizeof(double));
    cu_dev_free(d, (void **)&ib->r, 3 * n * sizeof(double));
    cu_dev_free(d, (void **)&ib->origin, n * sizeof(uint64_t));
    cu_dev_free(d, &ib->sort_scratch, ib->sort_bytes);
    ib->sort_bytes = ib->sort_samples = 0;
    cu_dev_free(d, &ib->ub, 3 * n * real);
    cu_dev_free(d, &ib->dv, n * real);
    cu_dev_free(d, &ib->alpha, n * real);
    cu_dev_free(d, &ib->G, 3 * n * real);
    cu_dev_free(d, &ib->Gsum, 3 * n * real);
    cu_dev_free(d, &ib->rho, n * real);
    cu_dev_free(d, (void **)&ib->partials, ib->partial_bytes);
    cu_dev_free(d, (void **)&ib->ft, ib->ft_bytes);
    cu_dev_free(d, &ib->fold, acm_fold_sets_scratch_bytes());
    cu_dev_free(d, &ib->scratch, ib->scratch_bytes);
    cu_dev_free(d, (void **)&ib->band, (ib->band_cap + 1) * sizeof(uint32_t));
    cu_dev_free(d, (void **)&ib->poses,
                (ACM_RUN_STEPS + 1) * (size_t)ib->nsolids * sizeof(acm_ib_pose));
    cu_dev_free(d, (void **)&ib->resort_flags, ACM_RUN_STEPS * sizeof(uint32_t));
    cu_dev_free(d, (void **)&ib->slots,
                (ACM_LOOP_STEPS + 1) * (size_t)ib->nsolids * sizeof(acm_ib_pose));
    cu_dev_free(d, (void **)&ib->slot_flags, ACM_LOOP_STEPS * sizeof(uint32_t));
    cu_dev_free(d, (void **)&ib->bodies, (size_t)ib->nsolids * sizeof(acm_free_body));
    if (ib->host_bodies != NULL)
        cudaFreeHost(ib->host_bodies);
    ib->host_bodies = NULL;
    d->bodies_on_backend = false; /* what the device held of them is gone */
    acm__free(ib->saved);
    ib->saved = NULL;
    if (ib->host_ft != NULL)
        cudaFreeHost(ib->host_ft);
    ib->host_ft = NULL;
    acm__free(ib->centre);
    ib->centre = NULL;
    ib->n = ib->band_cap = 0;
    ib->band_valid = false;
    ib->partial_bytes = ib->ft_bytes = ib->scratch_bytes = 0;
    if (cells) {
        cu_dev_free(d, &ib->macro, 4 * cu_plane_bytes(d));
        cu_dev_free(d, &ib->force, 3 * cu_plane_bytes(d));
        cu_dev_free(d, (void **)&ib->mask, acm_redo_words(d->ncells) * sizeof(uint32_t));
    }
}

/* Per-sample values of the solids in the arithmetic type R, uploaded. */
template <typename R>
static acm_status ib_upload(acm_domain *d)
{
    cuda_ib *ib = &IMPL(d)->ib;
    const size_t n = (size_t)ib->n;
    double *r = (double *)acm__malloc(3 * n * sizeof(double));
    R *dv = (R *)acm__malloc(n * sizeof(R)), *alpha = (R *)acm__malloc(n * sizeof(R));
    uint64_t *origin = (uint64_t *)acm__malloc(n * sizeof(uint64_t));
    acm_status st = ACM_OK;
    if (r == NULL || dv == NULL || alpha == NULL || origin == NULL) {
        st = ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot stage %zu samples", n);
    } else {
        for (int32_t i = 0; i < d->nsolids; ++i) {
            const acm_solid *s = d->solids[i];
            memcpy(r + 3 * s->offset, s->r, 3 * (size_t)s->count * sizeof(double));
            memcpy(origin + s->offset, s->origin, (size_t)s->count * sizeof(uint64_t));
            for (uint64_t j = 0; j < s->count; ++j) {
                dv[s->offset + j] = (R)s->dv[j];
                alpha[s->offset + j] = (R)s->alpha;
            }
        }
        cudaError_t e = cudaMemcpy(ib->r, r, 3 * n * sizeof(double), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(ib->dv, dv, n * sizeof(R), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(ib->alpha, alpha, n * sizeof(R), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(ib->origin, origin, n * sizeof(uint64_t), cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            st = cu_fail(d, e, "uploading the samples");
    }
    acm__free(r);
    acm__free(dv);
    acm__free(alpha);
    acm__free(origin);
    return st;
}

/* Where a step being recorded finds solid i's pose (its run's slot of this
 * step: step `slot` of the run; slot steps: after it), else NULL (the pose is
 * an argument). */
static const acm_ib_pose *run_pose(const acm_domain *d, int32_t i, int slot)
{
    const cuda_impl *m = IMPL(d);
    return m->run.mode == CU_RUN_RECORD ? m->ib.poses + (size_t)slot * (size_t)d->nsolids + i
                                        : NULL;
}

/* Solid i placed at its pose (in a replayed step: counted as placed). */
static acm_status ib_place(acm_domain *d, int32_t i)
{
    cuda_impl *m = IMPL(d);
    acm_solid *s = d->solids[i];
    if (m->run.mode != CU_RUN_REPLAY) {
        const acm_ib_pose pose = acm_ib_pose_of(s->body);
        CU_TRY(d, acm_launch_ib_place(cu_ib_args(d), m->elem, s->offset, s->count, pose,
                                      run_pose(d, i, m->run.step), m->stream));
    }
    s->moved = false;
    return ACM_OK;
}

/* The largest gather region and solid of the domain (sizes of the scratch). */
static void ib_extents(const acm_domain *d, uint64_t *region, uint64_t *samples)
{
    const acm_ib_grid g = acm__ib_grid(d);
    *region = *samples = 1;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        const uint64_t cells = acm_ib_region_bound(&g, s->body.r_max);
        *region = cells > *region ? cells : *region;
        *samples = s->count > *samples ? s->count : *samples;
    }
}

/* Device storage for d's sample set (the sizes in ib->n, region, most). */
static acm_status ib_allocate(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    const size_t n = (size_t)ib->n, real = m->real;
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->X, 3 * n * sizeof(double), "sample positions"));
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->r, 3 * n * sizeof(double), "sample offsets"));
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->origin, n * sizeof(uint64_t), "sample indices"));
    ACM_TRY(cu_dev_alloc(d, &ib->ub, 3 * n * real, "sample velocities"));
    ACM_TRY(cu_dev_alloc(d, &ib->dv, n * real, "sample weights"));
    ACM_TRY(cu_dev_alloc(d, &ib->alpha, n * real, "sample gains"));
    ACM_TRY(cu_dev_alloc(d, &ib->G, 3 * n * real, "sample forces"));
    ACM_TRY(cu_dev_alloc(d, &ib->Gsum, 3 * n * real, "sample forces"));
    ACM_TRY(cu_dev_alloc(d, &ib->rho, n * real, "sample densities"));
    /* a batch of solids has at most a block of samples more than they fill */
    ib->partial_bytes =
        4 * ((size_t)acm_ib_sum_blocks(n) + (size_t)d->nsolids) * sizeof(acm_gpu_sums);
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->partials, ib->partial_bytes, "force sums"));
    ACM_TRY(cu_dev_alloc(d, &ib->fold, acm_fold_sets_scratch_bytes(), "force sums' stage"));
    CU_TRY(d, cudaMemsetAsync(ib->fold, 0, acm_fold_sets_scratch_bytes(), m->stream));
    ib->band_cap = acm_ib_band_bound(n, (uint32_t)d->ncells);
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->band, (ib->band_cap + 1) * sizeof(uint32_t),
                      "IB band list"));
    ib->centre = (double *)acm__calloc(3 * (size_t)d->nsolids, sizeof(double));
    if (ib->centre == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold %d torque centres", (int)d->nsolids);
    ib->ft_bytes = 7 * (size_t)d->nsolids * sizeof(acm_gpu_sums);
    ACM_TRY(cu_dev_alloc(d, (void **)&ib->ft, ib->ft_bytes, "solid forces"));
    CU_TRY(d, cudaMallocHost((void **)&ib->host_ft, ib->ft_bytes));
    if (d->nsolids <= ACM_RUN_SOLIDS) { /* what a run of recorded steps needs */
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->poses,
                             (ACM_RUN_STEPS + 1) * (size_t)d->nsolids * sizeof(acm_ib_pose),
                             "recorded poses"));
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->resort_flags, ACM_RUN_STEPS * sizeof(uint32_t),
                             "recorded re-sorts"));
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->slots,
                             (ACM_LOOP_STEPS + 1) * (size_t)d->nsolids * sizeof(acm_ib_pose),
                             "a loop's poses"));
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->slot_flags, ACM_LOOP_STEPS * sizeof(uint32_t),
                             "a loop's re-sorts"));
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->bodies, (size_t)d->nsolids * sizeof(acm_free_body),
                             "free bodies"));
        CU_TRY(d, cudaMallocHost((void **)&ib->host_bodies,
                                 (size_t)d->nsolids * sizeof(acm_free_body)));
        ib->saved = (acm_solid *)acm__malloc((size_t)d->nsolids * sizeof(acm_solid));
        if (ib->saved == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold %d solids", (int)d->nsolids);
    }
    if (d->layout.ib.spread == ACM_IB_SPREAD_GATHER) {
        ib->scratch_bytes = acm_ib_gather_scratch_bytes(ib->region, ib->most);
        ACM_TRY(cu_dev_alloc(d, &ib->scratch, ib->scratch_bytes, "gather cell lists"));
    }
    if (ib->macro == NULL) {
        ACM_TRY(cu_dev_alloc(d, &ib->macro, 4 * cu_plane_bytes(d), "IB macroscopic planes"));
        ACM_TRY(cu_dev_alloc(d, &ib->force, 3 * cu_plane_bytes(d), "IB force planes"));
        const size_t words = acm_redo_words(d->ncells) * sizeof(uint32_t);
        ACM_TRY(cu_dev_alloc(d, (void **)&ib->mask, words, "IB band mask"));
        CU_TRY(d, cudaMemsetAsync(ib->mask, 0, words, m->stream));
        CU_TRY(d, cudaMemsetAsync(ib->force, 0, 3 * cu_plane_bytes(d), m->stream));
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_attach(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    uint64_t most = 1, region = 1;
    ib_extents(d, &region, &most);
    /* a re-sort hands over samples of the same sizes (in another order): the
     * storage stays, only the samples are uploaded again */
    const bool same = d->nsamples > 0 && ib->n == d->nsamples && ib->nsolids == d->nsolids &&
                      ib->spread == d->layout.ib.spread && ib->region == region && ib->most == most;
    if (!same) {
        cu_ib_release(d, d->nsamples == 0);
        if (d->nsamples == 0)
            return ACM_OK;
        ib->n = d->nsamples;
        ib->nsolids = d->nsolids;
        ib->spread = d->layout.ib.spread;
        ib->region = region;
        ib->most = most;
        const acm_status st = ib_allocate(d);
        if (st != ACM_OK) {
            cu_ib_release(d, false); /* nothing half-allocated looks reusable */
            return st;
        }
    }
    ib->band_valid = false;
    CU_TRY(d, cudaMemsetAsync(ib->Gsum, 0, 3 * (size_t)ib->n * m->real, m->stream));
    /* as the CPU's (calloc): a sample without a stencil on this domain (a slab's
     * margin) keeps density 0, which the free bodies' coupling reads */
    CU_TRY(d, cudaMemsetAsync(ib->rho, 0, (size_t)ib->n * m->real, m->stream));
    CU_TRY(d, cudaMemsetAsync(ib->ft, 0, ib->ft_bytes, m->stream));
    acm_status st = m->real == sizeof(double) ? ib_upload<double>(d) : ib_upload<float>(d);
    for (int32_t i = 0; st == ACM_OK && i < d->nsolids; ++i)
        st = ib_place(d, i);
    return st;
}

/* A centre of the sums' moments from the host. */
static acm_ib_centre centre(const double x[3])
{
    acm_ib_centre c;
    memcpy(c.xc, x, sizeof c.xc);
    c.at = NULL;
    return c;
}

/* The solids that want(i) picks, in batches of at most ACM_IB_BATCH: add(&b, i)
 * enters solid i into b, flush(b) launches what the batch needs. */
template <typename Want, typename Add, typename Flush>
static acm_status in_batches(const acm_domain *d, Want want, Add add, Flush flush)
{
    acm_ib_batch b;
    memset(&b, 0, sizeof b); /* a recorded launch's bytes: the same every time */
    for (int32_t i = 0; i < d->nsolids; ++i) {
        if (!want(i))
            continue;
        add(&b, i);
        if (b.n == ACM_IB_BATCH) {
            ACM_TRY(flush(b));
            memset(&b, 0, sizeof b);
        }
    }
    return b.n > 0 ? flush(b) : ACM_OK;
}

/* Every solid's force and torque (coupling false: about the centres of the
 * last step) or every free body's coupling sums, from its samples on the own
 * planes, into m->ib.host_ft (2 or 4 sums per solid after the forces' 2 per
 * solid): one wait for the device. Block sums in a fixed order: the same
 * every run. */
static acm_status ib_sums(acm_domain *d, bool coupling)
{
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = cu_ib_args(d);
    acm_gpu_sums *ft = m->ib.ft + (coupling ? 2 * d->nsolids : 0);
    ACM_TRY(in_batches(
        d, [&](int32_t i) { return !coupling || cu_ib_free(d, i); },
        [&](acm_ib_batch *b, int32_t i) {
            const acm_solid *s = d->solids[i];
            acm_ib_batch_add(b, i, s->offset, s->count,
                             centre(coupling ? s->body.x : m->ib.centre + 3 * i), NULL);
        },
        [&](const acm_ib_batch &b) {
            CU_TRY(d, coupling ? acm_launch_ib_coupling(a, m->elem, b, m->ib.partials, ft,
                                                        m->ib.fold, m->stream)
                               : acm_launch_ib_sums(a, m->elem, b, m->ib.partials, ft,
                                                    m->ib.fold, m->stream));
            return ACM_OK;
        }));
    CU_TRY(d, cudaMemcpyAsync(m->ib.host_ft, m->ib.ft, m->ib.ft_bytes, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* Implicit coupling of the free bodies (lib/core/rigid.h): their coupling
 * sums, the velocity change and the samples' new forces, all on the device
 * (the velocity change with the host's rounding, kernels/rigid.cu): no wait
 * for the host inside the step. In a run being recorded the bodies and their
 * centres are the device's (cuda_ib.bodies, the step's pose slots). */
static acm_status ib_couple(acm_domain *d, const acm_ib_args &a)
{
    cuda_impl *m = IMPL(d);
    acm_gpu_sums *sums = m->ib.ft + 2 * d->nsolids, *change = m->ib.ft + 6 * d->nsolids;
    const bool recording = m->run.mode == CU_RUN_RECORD;
    return in_batches(
        d, [&](int32_t i) { return cu_ib_free(d, i); },
        [&](acm_ib_batch *b, int32_t i) {
            const acm_solid *s = d->solids[i];
            acm_ib_centre c = centre(s->body.x);
            const acm_ib_pose *at = run_pose(d, i, m->run.step);
            c.at = at != NULL ? at->x : NULL;
            acm_ib_batch_add(b, i, s->offset, s->count, c, NULL);
        },
        [&](const acm_ib_batch &b) {
            CU_TRY(d, acm_launch_ib_coupling(a, m->elem, b, m->ib.partials, sums, m->ib.fold,
                                             m->stream));
            if (recording)
                CU_TRY(d, acm_launch_body_couple_batch(m->ib.bodies, b, sums, change,
                                                       m->stream));
            for (int k = 0; !recording && k < b.n; ++k)
                CU_TRY(d, acm_launch_body_couple(d->solids[b.slot[k]]->body,
                                                 sums + 4 * b.slot[k], change + b.slot[k],
                                                 m->stream));
            CU_TRY(d, acm_launch_ib_couple(a, m->elem, b, change, m->stream));
            return ACM_OK;
        });
}

/* Spread the penalty forces of the current iteration. */
static acm_status ib_spread(acm_domain *d, const acm_ib_args &a)
{
    cuda_impl *m = IMPL(d);
    if (d->layout.ib.spread != ACM_IB_SPREAD_GATHER) {
        CU_TRY(d, acm_launch_ib_scatter(a, m->elem, (uint64_t)d->ncells, m->stream));
        return ACM_OK;
    }
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        acm_ib_region rg = acm_ib_solid_region(&a.ig, s->body.x, s->body.r_max);
        CU_TRY(d, acm_launch_ib_gather(a, m->elem, (uint64_t)d->ncells, rg, s->offset, s->count,
                                       m->ib.scratch, m->ib.scratch_bytes, m->stream));
    }
    return ACM_OK;
}

/* The IB phase up to the first interpolation (spread with it when `fused`);
 * in a replayed step its host part only. */
static acm_status ib_first(acm_domain *d, bool fused)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    const bool all = m->run.mode != CU_RUN_NONE && m->run.place_all;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        if (s->moved || s->body.motion != ACM_MOTION_STATIC || all) {
            ACM_TRY(ib_place(d, i));
            m->ib.band_valid = false;
        }
        memcpy(m->ib.centre + 3 * i, s->body.x, 3 * sizeof(double));
    }
    const bool mark = !m->ib.band_valid; /* static samples keep their support */
    m->ib.band_valid = true;
    if (m->run.mode == CU_RUN_REPLAY)
        return ACM_OK;
    const acm_ib_args a = cu_ib_args(d);
    if (mark)
        CU_TRY(d, acm_launch_ib_mark(a, (uint32_t)d->ncells, m->stream));
    CU_TRY(d, acm_launch_ib_band(cu_step_args(d), a, m->elem, m->stream));
    CU_TRY(d, acm_launch_ib_penalty(a, m->elem, (uint64_t)d->ncells, true, fused, m->stream));
    return ACM_OK;
}

/* The rest: the first spread (unless fused), the other iterations. */
static acm_status ib_rest(acm_domain *d, bool fused)
{
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = cu_ib_args(d);
    if (!fused)
        ACM_TRY(ib_spread(d, a));
    for (int it = 1; it < d->layout.ib.iterations; ++it) {
        CU_TRY(d, acm_launch_ib_penalty(a, m->elem, (uint64_t)d->ncells, false, false, m->stream));
        ACM_TRY(ib_spread(d, a));
    }
    d->forces_stale = true; /* summed when asked for (acm_cuda_ib_fetch) */
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_forces(acm_domain *d)
{
    /* without free bodies the first iteration scatters in the same pass */
    bool free_bodies = false;
    for (int32_t i = 0; i < d->nsolids; ++i)
        free_bodies |= d->solids[i]->body.motion == ACM_MOTION_FREE;
    const bool fused = !free_bodies && d->layout.ib.spread != ACM_IB_SPREAD_GATHER;
    ACM_TRY(ib_first(d, fused));
    if (IMPL(d)->run.mode == CU_RUN_REPLAY) { /* all in the graph */
        d->forces_stale = true;
        return ACM_OK;
    }
    ACM_TRY(ib_couple(d, cu_ib_args(d)));
    return ib_rest(d, fused);
}

/* A slab's sums in the per-plane layout of ib_plane_forces and ib_begin:
 * each solid's sums of its samples on the slab's planes, in the first plane
 * (the others zero). The slab's share in one deterministic block sum rather
 * than plane by plane: a decomposed domain of GPU slabs adds the slabs' shares
 * in slab order, the same every run (on the CPU the planes are exact). */
static acm_status slab_plane_sums(acm_domain *d, bool coupling, void *out)
{
    cuda_impl *m = IMPL(d);
    const int32_t own = acm__own_planes(d);
    const size_t per = coupling ? sizeof(acm_coupling) : sizeof(acm_ib_ft);
    if (out == NULL)
        return ACM_OK;
    memset(out, 0, (size_t)d->nsolids * (size_t)own * per);
    ACM_TRY(ib_sums(d, coupling));
    for (int32_t i = 0; i < d->nsolids; ++i) {
        char *first = (char *)out + (size_t)i * (size_t)own * per;
        if (coupling && d->solids[i]->body.motion == ACM_MOTION_FREE)
            acm_ib_unpack_coupling(m->ib.host_ft + 2 * d->nsolids + 4 * i,
                                   (acm_coupling *)first);
        else if (!coupling)
            acm_ib_unpack_ft(m->ib.host_ft + 2 * i, ((acm_ib_ft *)first)->f,
                             ((acm_ib_ft *)first)->t);
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_begin(acm_domain *d, acm_coupling *out)
{
    ACM_TRY(ib_first(d, false));
    return slab_plane_sums(d, true, out);
}

extern "C" acm_status acm_cuda_ib_end(acm_domain *d, const double *dvdw)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = cu_ib_args(d);
    if (dvdw != NULL)
        ACM_TRY(in_batches(
            d, [&](int32_t i) { return cu_ib_free(d, i); },
            [&](acm_ib_batch *b, int32_t i) {
                const acm_solid *s = d->solids[i];
                acm_ib_batch_add(b, i, s->offset, s->count, centre(s->body.x), dvdw + 6 * i);
            },
            [&](const acm_ib_batch &b) {
                CU_TRY(d, acm_launch_ib_couple(a, m->elem, b, NULL, m->stream));
                return ACM_OK;
            }));
    return ib_rest(d, false);
}

/* Force and torque of every solid for the last step, from the samples' forces
 * and positions of that step (still on the device) and its torque centres. */
extern "C" acm_status acm_cuda_ib_fetch(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    ACM_TRY(ib_sums(d, false));
    for (int32_t i = 0; i < d->nsolids; ++i)
        acm_ib_unpack_ft(IMPL(d)->ib.host_ft + 2 * i, d->solids[i]->force,
                         d->solids[i]->torque);
    d->forces_stale = false;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_plane_forces(acm_domain *d, acm_ib_ft *out)
{
    ACM_TRY(cu_enter(d));
    return slab_plane_sums(d, false, out);
}

/* Bits of the largest Morton-block key of d's grid (lib/core/morton.h). */
static int key_bits(const acm_domain *d)
{
    const acm_ib_grid g = acm__ib_grid(d);
    const int32_t l = d->layout.ib.sample_block;
    uint64_t blocks = 1;
    for (int a = 0; a < 3; ++a)
        blocks *= (uint64_t)((g.n[a] + l - 1) / l);
    int bits = 3 * ACM_MORTON_BITS;
    for (uint64_t b = blocks - 1; b != 0; b >>= 1)
        bits++;
    return bits;
}

/* The re-sorts' scratch, for all the solids the device may re-sort at once
 * (cu_ib_release frees it when the sample set changes; a solid set moving
 * later makes it anew). */
static acm_status sort_scratch(acm_domain *d)
{
    cuda_ib *ib = &IMPL(d)->ib;
    uint64_t samples = 0;
    for (int32_t i = 0; i < d->nsolids; ++i)
        samples += cu_ib_sortable(d, i) ? d->solids[i]->count : 0u;
    if (ib->sort_scratch != NULL && samples <= ib->sort_samples) /* no query of CUB's size */
        return ACM_OK;
    if (samples > (uint64_t)INT32_MAX)
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED,
                        "moving solids of %llu samples in all: the device re-sorts at most %d",
                        (unsigned long long)samples, INT32_MAX);
    size_t bytes = 0;
    CU_TRY(d, acm_ib_resort_scratch_bytes(samples, &bytes));
    cu_dev_free(d, &ib->sort_scratch, ib->sort_bytes);
    ib->sort_bytes = ib->sort_samples = 0;
    ACM_TRY(cu_dev_alloc(d, &ib->sort_scratch, bytes, "sample re-sort"));
    ib->sort_bytes = bytes;
    ib->sort_samples = samples;
    return ACM_OK;
}

bool cu_ib_sortable(const acm_domain *d, int32_t i)
{
    const acm_solid *s = d->solids[i];
    return s->body.motion != ACM_MOTION_STATIC && s->count > 1 &&
           d->layout.ib.sample_order == ACM_SAMPLE_ORDER_MORTON_BLOCK;
}

acm_status cu_ib_ready(acm_domain *d)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (cu_ib_sortable(d, i))
            return sort_scratch(d);
    return ACM_OK;
}

acm_status cu_ib_resort(acm_domain *d, bool (*want)(const acm_domain *, int32_t),
                        const uint32_t *flags, int slot, cudaStream_t stream)
{
    cuda_impl *m = IMPL(d);
    ACM_TRY(sort_scratch(d));
    const acm_ib_args a = cu_ib_args(d);
    const int32_t block = d->layout.ib.sample_block;
    const int bits = key_bits(d);
    acm_sort_batch b;
    memset(&b, 0, sizeof b); /* a recorded launch's bytes: the same every time */
    for (int32_t i = 0; i < d->nsolids; ++i) {
        if (!want(d, i))
            continue;
        const acm_solid *s = d->solids[i];
        acm_sort_batch_add(&b, i, s->offset, (uint32_t)s->count, acm_ib_pose_of(s->body),
                           run_pose(d, i, slot));
        if (b.n == ACM_IB_BATCH) {
            CU_TRY(d, acm_launch_ib_resort(a, m->elem, b, flags, block, bits, m->ib.origin,
                                           m->ib.sort_scratch, stream));
            memset(&b, 0, sizeof b);
        }
    }
    if (b.n > 0)
        CU_TRY(d, acm_launch_ib_resort(a, m->elem, b, flags, block, bits, m->ib.origin,
                                       m->ib.sort_scratch, stream));
    return ACM_OK;
}

static bool resort_due(const acm_domain *d, int32_t i) { return d->solids[i]->resort_due; }

/* The solids due for a re-sort re-sorted (their positions, those of the
 * last step, move with them: acm_cuda_ib_fetch's torques use them); in a
 * run of steps its graph's conditional re-sorts do it (backend_graph.cu). */
extern "C" acm_status acm_cuda_ib_resort(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    if (IMPL(d)->run.mode != CU_RUN_NONE)
        return ACM_OK;
    return cu_ib_resort(d, resort_due, NULL, 0, IMPL(d)->stream);
}

extern "C" acm_status acm_cuda_ib_order(acm_domain *d, const acm_solid *s, uint64_t *origin)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemcpyAsync(origin, m->ib.origin + s->offset, (size_t)s->count * sizeof(uint64_t),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_positions(acm_domain *d, const acm_solid *s, double *dst)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemcpyAsync(dst, m->ib.X + 3 * s->offset, 3 * (size_t)s->count * sizeof(double),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* ---- free bodies in runs of recorded steps -------------------------------------------
 * A run integrates its free bodies on the device, as acm__solids_after_step
 * does on the host (kernels/rigid.cu, the host's rounding): each step's force
 * and torque, the Newton-Euler step, the speed limit, the pose of the next
 * step into its slot and the re-sort test, whose flag opens the step's
 * conditional re-sort, each kernel once a step for all bodies (acm_ib_batch).
 * The bodies stay on the device from run to run (d->bodies_on_backend) until
 * the host needs them (acm_cuda_ib_home). */

bool cu_ib_free(const acm_domain *d, int32_t i)
{
    return d->solids[i]->body.motion == ACM_MOTION_FREE;
}

uint32_t cu_ib_bits(const acm_domain *d, bool (*want)(const acm_domain *, int32_t))
{
    uint32_t bits = 0;
    for (int32_t i = 0; i < d->nsolids && i < 32; ++i)
        bits |= want(d, i) ? UINT32_C(1) << i : 0u;
    return bits;
}

acm_status cu_ib_bodies_send(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    if (d->bodies_on_backend)
        return ACM_OK;
    memset(ib->host_bodies, 0, (size_t)d->nsolids * sizeof(acm_free_body));
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        acm_free_body *f = ib->host_bodies + i;
        f->body = s->body;
        f->placed = s->placed;
        memcpy(f->sort_x, s->sort_x, sizeof f->sort_x);
        memcpy(f->sort_q, s->sort_q, sizeof f->sort_q);
    }
    CU_TRY(d, cudaMemcpyAsync(ib->bodies, ib->host_bodies,
                              (size_t)d->nsolids * sizeof(acm_free_body), cudaMemcpyHostToDevice,
                              m->stream));
    d->bodies_on_backend = true;
    return ACM_OK;
}

acm_status cu_ib_bodies_pose(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    return in_batches(
        d, [&](int32_t i) { return cu_ib_free(d, i); },
        [&](acm_ib_batch *b, int32_t i) {
            acm_ib_batch_add(b, i, 0, 0, centre(d->solids[i]->body.x), NULL);
        },
        [&](const acm_ib_batch &b) {
            CU_TRY(d, acm_launch_body_pose(m->ib.bodies, b, m->ib.poses, m->stream));
            return ACM_OK;
        });
}

acm_status cu_ib_bodies_step(acm_domain *d, int j)
{
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    const acm_ib_args a = cu_ib_args(d);
    const bool morton = d->layout.ib.sample_order == ACM_SAMPLE_ORDER_MORTON_BLOCK;
    const size_t n = (size_t)d->nsolids;
    const uint32_t sortable = cu_ib_bits(d, cu_ib_sortable);
    return in_batches(
        d, [&](int32_t i) { return cu_ib_free(d, i); },
        [&](acm_ib_batch *b, int32_t i) {
            const acm_solid *s = d->solids[i];
            acm_ib_centre c = centre(s->body.x);
            c.at = ib->poses[(size_t)j * n + (size_t)i].x; /* where the step placed it */
            acm_ib_batch_add(b, i, s->offset, s->count, c, NULL);
        },
        [&](const acm_ib_batch &b) {
            CU_TRY(d, acm_launch_ib_sums(a, m->elem, b, ib->partials, ib->ft, ib->fold,
                                         m->stream));
            CU_TRY(d, acm_launch_body_run(ib->bodies, b, ib->ft, ib->poses + (size_t)(j + 1) * n,
                                          ib->resort_flags + j, sortable,
                                          morton ? (double)d->layout.ib.sample_block : 0.0,
                                          cu_gate(d), m->stream));
            return ACM_OK;
        });
}

/* The step whose batch count (acm_free_body.failed) the device gave. */
static int64_t failed_step(const acm_domain *d, unsigned long long failed)
{
    const int64_t later = IMPL(d)->batch_step - (int64_t)failed; /* steps made after it */
    return later >= 0 && later < d->step ? d->step - later : d->step;
}

extern "C" acm_status acm_cuda_ib_home(acm_domain *d)
{
    if (!d->bodies_on_backend)
        return ACM_OK;
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    const size_t bytes = (size_t)d->nsolids * sizeof(acm_free_body);
    if (ib->bodies == NULL || ib->nsolids != d->nsolids) { /* released: nothing there */
        d->bodies_on_backend = false;
        return ACM_OK;
    }
    CU_TRY(d, cudaMemcpyAsync(ib->host_bodies, ib->bodies, bytes, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    d->bodies_on_backend = false;
    /* the last step re-sorted a free body: as after the host's re-sort, every
     * solid counts as placed at its pose (lib/ib/solid.c resort_on_backend) */
    bool sorted_last = false;
    for (int32_t i = 0; i < d->nsolids; ++i)
        sorted_last |= cu_ib_free(d, i) && m->batch_step > 0 &&
                       ib->host_bodies[i].sorted == (unsigned long long)m->batch_step;
    acm_status st = ACM_OK;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        const acm_free_body *f = ib->host_bodies + i;
        if (cu_ib_free(d, i)) {
            s->body = f->body;
            s->placed = s->moved ? f->body : f->placed; /* moved: a prescribed solid's re-sort */
            memcpy(s->sort_x, f->sort_x, sizeof s->sort_x);
            memcpy(s->sort_q, f->sort_q, sizeof s->sort_q);
            s->resorts += (int64_t)f->resorts;
            s->order_on_device |= f->resorts > 0;
            memcpy(ib->centre + 3 * i, f->placed.x, 3 * sizeof(double)); /* the last torques' */
        }
        if (sorted_last) {
            s->placed = s->body;
            s->moved = true;
        }
        if (cu_ib_free(d, i) && f->failed != 0 && st == ACM_OK) {
            d->diverged = true;
            d->diverged_step = failed_step(d, f->failed);
            st = ACM_FAIL(d, ACM_ERR_DIVERGED,
                          "solid %d reached the surface speed %g at step %lld (limit %g): the "
                          "fluid cannot follow it (its pose is kept from before; later steps "
                          "of the run held it there); re-initialise and set its state",
                          (int)i, f->speed, (long long)d->diverged_step, ACM_SOLID_MAX_SPEED);
        }
    }
    return st;
}
