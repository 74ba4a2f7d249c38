/*
 * libacmlbm -- the CUDA backend's time stepping: the step sequence of each
 * kernel structure, a slab's step in two parts (edges, then the rest), the
 * ACM rules' sums between steps and the divergence check.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "backend_impl.cuh"

/* ---- time stepping ------------------------------------------------------------------------ */

/* The absorbers' and then the inlet/outlet layers' cells of planes [z0, z1) of
 * the new state f (moment storage's layers: every plane; a slab's ghost
 * planes are then written, and overwritten by the exchange that follows its
 * step, since a slab of moment storage never splits its step). */
static acm_status launch_layers(acm_domain *d, const acm_gpu_grid &g, void *f,
                                const acm_gate &gate, int32_t z0, int32_t z1)
{
    cuda_impl *m = IMPL(d);
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (d->setup.absorber[face].cells > 0)
            CU_TRY(d, acm_launch_absorber(g, f, gate, m->elem, face, z0, z1, m->stream));
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (acm_face_is_layer(d->setup.face[face].type))
            CU_TRY(d, cu_moments(d)
                          ? acm_launch_mom_layer(g, f, gate, m->elem, face, m->stream)
                          : acm_launch_layer(g, f, gate, m->elem, face, z0, z1, m->stream));
    return ACM_OK;
}

/* The ACM rules' sums of this step from the planes' (zeroed by clear_planes);
 * a slab's next step takes the whole domain's instead (before_step). */
static acm_status finish_sums(acm_domain *d)
{
    return acm_is_adaptive(d->setup.coll.model) && d->slab_cells == 0.0
               ? cu_fold_planes(d, 1 - IMPL(d)->ring, true)
               : ACM_OK;
}

/* Before a step's collision adds to them. */
static acm_status clear_planes(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (acm_is_adaptive(d->setup.coll.model))
        CU_TRY(d, cudaMemsetAsync(m->planes, 0, cu_planes_bytes(d), m->stream));
    return ACM_OK;
}

/* The safety net's fallback of the cells the collision marked (pull: a.src
 * is the unstreamed source, else the streamed populations). */
static acm_status redo_marked(acm_domain *d, const acm_step_args &a, bool pull)
{
    cuda_impl *m = IMPL(d);
    if (acm_is_adaptive(d->setup.coll.model) && d->setup.coll.safety_net)
        CU_TRY(d, acm_launch_redo(a, m->elem, pull, m->block, m->stream));
    return ACM_OK;
}

/* The first cell of plane z, rounded to a word of the redo mask (up or down),
 * at most ncells. */
static uint32_t word_cell(const acm_domain *d, int32_t z, bool up)
{
    const uint64_t k = (uint64_t)z * (uint64_t)d->nx * (uint64_t)d->ny;
    const uint64_t w = up ? (k + 31u) / 32u * 32u : k / 32u * 32u;
    return (uint32_t)(w < (uint64_t)d->ncells ? w : (uint64_t)d->ncells);
}

/* Whether kernels follow the collision in a step (the layers: they read the
 * step's key, acm_gate_step). */
static bool has_layers(const acm_domain *d)
{
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (d->setup.absorber[face].cells > 0 || acm_face_is_layer(d->setup.face[face].type))
            return true;
    return false;
}

/* The fused two-array kernel of an undivided domain with an adaptive model
 * folds the ACM rules' sums in its last block (acm_fold_last), into the slot
 * that finish_sums fills, from planes of its own that it leaves zeroed, in
 * launches of at most ACM_FOLD_LAST_BLOCKS blocks: there it saves two
 * launches a step; folding at 128^3 too (16384 blocks, an atomic each on one
 * count) was slower there (docs/performance.md, "Small grids"). The same
 * block then redoes the cells the safety net marked, unless the last check
 * found more than ACM_FOLD_REDO_APART a step (a thread a cell: many would
 * make it the step's tail), and, in a step being recorded with no layers
 * after the collision, counts the step: the step is one kernel. */
#define ACM_FOLD_LAST_BLOCKS 4096u
#define ACM_FOLD_REDO_APART 1024
static void fold_in_kernel(acm_domain *d, acm_step_args &a)
{
    cuda_impl *m = IMPL(d);
    a.planes = m->fold_planes;
    a.fold_done = (unsigned *)(m->fold_planes + d->nz);
    a.fold_out = m->sums + (1 - m->ring);
    a.fold_lo = d->halo[0];
    a.fold_hi = d->nz - d->halo[1];
    a.fold_cells = (double)(a.fold_hi - a.fold_lo) * d->nx * d->ny;
    if (d->setup.coll.safety_net && !m->redo_apart)
        a.fold_redo = (uint32_t *)(m->fold_planes + d->nz + 1);
    if (m->recording_step && !has_layers(d)) {
        a.fold_count = m->counters + 2;
        a.fold_post = m->count_post;
        m->step_counted = true;
    }
}

/* The L2 window of a fused two-array launch reading a.src (acm_read_once):
 * w, or NULL where the domain reads no source once (m->read_once). */
static const cudaAccessPolicyWindow *read_once(const acm_domain *d, const acm_step_args &a,
                                               cudaAccessPolicyWindow *w)
{
    return acm_read_once(a.src, IMPL(d)->read_once, w) ? w : NULL;
}

/* The fused kernel steps the planes acm__stepped_planes names (a slab's ghost
 * planes only in place), in whole words of the redo mask. */
static acm_status enqueue_fused(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    a.first = word_cell(d, z0, false);
    a.end = word_cell(d, z1, true);
    const bool fold = acm_is_adaptive(d->setup.coll.model) && d->slab_cells == 0.0 &&
                      !m->in_place && acm_fixed_addressing(a.g) &&
                      acm_blocks(a.end - a.first, m->block) <= ACM_FOLD_LAST_BLOCKS;
    if (fold)
        fold_in_kernel(d, a);
    else
        ACM_TRY(clear_planes(d));
    cudaAccessPolicyWindow win;
    CU_TRY(d, acm_launch_lbm(a, m->elem, true, m->block, m->stream, read_once(d, a, &win)));
    if (a.fold_redo == NULL)
        ACM_TRY(redo_marked(d, a, true));
    return fold ? ACM_OK : finish_sums(d);
}

/* Moment storage: the fused step of lbm_moments.cu over the planes
 * acm__stepped_planes names (a slab's own), its safety net's redo pass (the
 * two arrays keep its input intact), the ACM rules' sums. */
static acm_status enqueue_moments(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    a.first = (uint32_t)z0 * (uint32_t)d->nx * (uint32_t)d->ny;
    a.end = (uint32_t)z1 * (uint32_t)d->nx * (uint32_t)d->ny;
    const bool net = acm_is_adaptive(d->setup.coll.model) && d->setup.coll.safety_net;
    ACM_TRY(clear_planes(d));
    if (net) /* the tiled step marks cells one bit at a time */
        CU_TRY(d, cudaMemsetAsync(a.redo, 0, acm_redo_words(d->ncells) * sizeof(uint32_t),
                                  m->stream));
    CU_TRY(d, acm_launch_mom_step(a, m->elem, m->stream));
    if (net)
        CU_TRY(d, acm_launch_mom_redo(a, m->elem, m->block, m->stream));
    return finish_sums(d);
}

static acm_status enqueue_split(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, acm_launch_stream(a.g, a.src, m->tmp, m->elem, m->block, m->stream));
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (d->setup.face[face].type != ACM_BOUNDARY_PERIODIC)
            CU_TRY(d, acm_launch_wall_face(a.g, a.src, m->tmp, m->elem, face, m->stream));
    ACM_TRY(clear_planes(d));
    CU_TRY(d, acm_launch_macro(a, m->tmp, m->macro, m->elem, m->block, m->stream));
    ACM_TRY(finish_sums(d));
    CU_TRY(d, acm_launch_moments(a, m->tmp, m->mom, m->elem, m->block, m->stream));
    for (int half = 0; half < 2; ++half)
        CU_TRY(d, acm_launch_outputs(a, m->mom, m->macro, m->elem, half, m->block, m->stream));
    a.src = m->tmp;
    return redo_marked(d, a, false);
}

static acm_status enqueue_baseline(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, acm_launch_pull(a.g, a.src, m->tmp, m->elem, 1, m->block, m->stream));
    ACM_TRY(clear_planes(d));
    CU_TRY(d, acm_launch_macro(a, m->tmp, m->macro, m->elem, m->block, m->stream));
    ACM_TRY(finish_sums(d));
    a.src = m->tmp;
    CU_TRY(d, acm_launch_lbm(a, m->elem, false, m->block, m->stream));
    return redo_marked(d, a, false);
}

/* The arguments of this step's kernels; the smoke's velocity captured on the way. */
static acm_status start_step(acm_domain *d, acm_step_args &a)
{
    cuda_impl *m = IMPL(d);
    a = cu_step_args(d);
    if (m->smoke_capture) { /* the step's start velocity for the smoke (acm_cuda_smoke_velocity) */
        m->smoke_capture = false;
        if (d->layout.kernel != ACM_KERNEL_SPLIT) /* the collision kernel writes it on the way */
            a.u_out = m->smoke_u;
        else /* the split kernels have no single place for it: a pass of its own */
            CU_TRY(d, acm_launch_field(a, cu_state_array(m), m->elem, ACM_FIELD_VELOCITY, m->smoke_u,
                                       (int)sizeof(float), 0, (uint32_t)d->ncells, m->stream));
    }
    return ACM_OK;
}

/* A slab's plane sums (its own planes', from src) on their way to the host
 * (acm_cuda_plane_sums). */
acm_status cu_copy_planes_home(acm_domain *d, const acm_plane_fixed *src)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemcpyAsync(m->host_planes, src, (size_t)acm__own_planes(d) * sizeof *src,
                              cudaMemcpyDeviceToHost, m->stream));
    return ACM_OK;
}

/* Its handle folds them after every step of an adaptive model (unless shared),
 * so the copy goes with the step and the step's wait (its divergence check)
 * covers it. */
acm_status cu_send_planes(acm_domain *d)
{
    IMPL(d)->planes_sent = true;
    return cu_copy_planes_home(d, IMPL(d)->planes + d->halo[0]);
}

/* Every shared slab's plane sums of the step with the parity of step `step`:
 * the first slab's buffer, which the others read by peer access. */
acm_plane_fixed *cu_shared_planes(const acm_domain *d, int64_t step)
{
    return IMPL(IMPL(d)->peers[0])->whole[step & 1];
}

/* A shared slab's plane sums of the step into the shared buffer, then the
 * event the others' next step waits for. */
static acm_status push_planes(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    const size_t bytes = (size_t)acm__own_planes(d) * sizeof(acm_plane_fixed);
    CU_TRY(d, cudaMemcpyPeerAsync(cu_shared_planes(d, d->step) + acm__own_origin(d), m->peers[0]->device,
                                  m->planes + d->halo[0], d->device, bytes, m->stream));
    CU_TRY(d, cudaEventRecord(m->pushed[d->step & 1], m->stream));
    return ACM_OK;
}

/* The host's part of a step whose kernels are enqueued: the new state is the
 * other array (or, in place, the other parity), the sums' ring turns, the
 * step is counted. */
static void turn_arrays(cuda_impl *m)
{
    if (m->in_place)
        m->parity = 1 - m->parity;
    else
        m->cur = 1 - m->cur;
}

static void count_step(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    m->ring = 1 - m->ring;
    m->batch_step++;
    m->batch_mixed = m->batch_mixed || d->nsolids > 0 || d->nsmokes > 0;
    d->step++;
}

void cu_replayed_step(acm_domain *d)
{
    turn_arrays(IMPL(d));
    count_step(d);
}

/* After every kernel of the step is enqueued: a slab's plane sums go where
 * the next step's inputs are folded, the host or (shared, the host not
 * waiting after every step: d->slab_sums_push) every slab. */
static acm_status end_step(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    count_step(d);
    if (d->slab_cells == 0.0 || !acm_is_adaptive(d->setup.coll.model))
        return ACM_OK;
    return m->npeers > 0 && d->slab_sums_push ? push_planes(d) : cu_send_planes(d);
}

/* Enqueue one step of the domain's kernel structure. */
static acm_status enqueue_step(acm_domain *d)
{
    acm_step_args a;
    ACM_TRY(start_step(d, a));
    if (cu_moments(d))
        ACM_TRY(enqueue_moments(d, a));
    else if (d->layout.kernel == ACM_KERNEL_SPLIT)
        ACM_TRY(enqueue_split(d, a));
    else if (d->layout.kernel == ACM_KERNEL_BASELINE)
        ACM_TRY(enqueue_baseline(d, a));
    else
        ACM_TRY(enqueue_fused(d, a));
    turn_arrays(IMPL(d));
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    ACM_TRY(launch_layers(d, cu_grid_of(d), a.dst, a.gate, z0, z1)); /* the grid of the new state */
    return end_step(d);
}

/* ---- a slab's step in two parts (backend.h advance_edges) ----------------------------- */

/* Where a split step of d divides its cells and planes (for the layers): the
 * edges [cut[0], cut[1]) and [cut[2], cut[3]), the rest [cut[1], cut[2]).
 * Only the fused kernel with two arrays on population storage splits. */
static bool split_cells(const acm_domain *d, uint32_t cut[4], int32_t planes[4])
{
    acm__stepped_planes(d, &planes[0], &planes[3]);
    acm__edge_planes(d, &planes[1], &planes[2]);
    if (IMPL(d)->in_place || d->layout.kernel != ACM_KERNEL_FUSED || cu_moments(d) ||
        planes[1] >= planes[2])
        return false;
    cut[0] = word_cell(d, planes[0], false);
    cut[1] = word_cell(d, planes[1], true);
    cut[2] = word_cell(d, planes[2], false);
    cut[3] = word_cell(d, planes[3], true);
    return cut[1] < cut[2];
}

/* Cells [first, end) of a fused two-array step, then the layers of planes
 * [z0, z1) (which read only cells of their own plane). */
static acm_status enqueue_part(acm_domain *d, acm_step_args a, uint32_t first, uint32_t end,
                               int32_t z0, int32_t z1)
{
    cuda_impl *m = IMPL(d);
    a.first = first;
    a.end = end;
    if (first < end) {
        cudaAccessPolicyWindow win;
        CU_TRY(d, acm_launch_lbm(a, m->elem, true, m->block, m->stream, read_once(d, a, &win)));
        ACM_TRY(redo_marked(d, a, true));
    }
    return launch_layers(d, a.g, a.dst, a.gate, z0, z1);
}

/* Whether the state kernels left the state alone after the diverged step
 * (`later`: it and the steps after it): it was the last of the batch, or
 * every step was of the fluid alone on one device (their gate shut:
 * acm_gate_shut; solids and smoke move on the host, a slab's neighbours go
 * on). */
static bool held_after(const acm_domain *d, int64_t later)
{
    const cuda_impl *m = IMPL(d);
    return later == 1 || (!m->batch_mixed && d->slab_cells == 0.0 && m->npeers == 0);
}

/* The host's count, arrays and sums' ring turned back `back` steps. */
static void turn_back(acm_domain *d, int64_t back)
{
    cuda_impl *m = IMPL(d);
    if (back & 1) {
        if (m->in_place)
            m->parity = 1 - m->parity;
        else
            m->cur = 1 - m->cur;
        m->ring = 1 - m->ring;
    }
    d->step -= back;
}

/* Wait for the enqueued steps; report a divergence or a device fault. A
 * diverged state is rolled back to the state before the diverged step where
 * the later steps left it alone (held_after; as on the CPU). */
acm_status cu_check(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->batch_step == 0)
        return ACM_OK;
    /* the free bodies of runs first, while the batch still names their steps */
    const acm_status bodies = acm_cuda_ib_home(d);
    if (bodies != ACM_OK && bodies != ACM_ERR_DIVERGED)
        return bodies;
    CU_TRY(d, cudaMemcpyAsync(m->host_counters, m->counters, 4 * sizeof(unsigned long long),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    const unsigned long long key = m->host_counters[0];
    d->fallback_last = (int64_t)(m->host_counters[1] - m->host_counters[3]);
    m->redo_apart = d->fallback_last > ACM_FOLD_REDO_APART;
    d->fallback_total += (int64_t)m->host_counters[1];
    /* the diverged step and the steps enqueued after it */
    const int64_t later = m->batch_step - (int64_t)(key >> ACM_KEY_CELL_BITS);
    const bool held = key != ACM_NO_KEY && held_after(d, later);
    const bool rolled_back = held && !m->in_place; /* in place keeps no copy */
    ACM_TRY(cu_reset_counters(d));
    if (key == ACM_NO_KEY)
        return bodies;
    const int64_t first = d->step - later + 1;
    const uint64_t cell = key & (((uint64_t)1 << ACM_KEY_CELL_BITS) - 1);
    if (held) /* to the state before that step, or (in place) the state it left */
        turn_back(d, rolled_back ? later : later - 1);
    d->diverged = true;
    d->diverged_step = first; /* named again by acm__domain_fail_diverged */
    int32_t x = (int32_t)(cell % (uint64_t)d->nx), y = (int32_t)(cell / (uint64_t)d->nx % (uint64_t)d->ny);
    int32_t z = (int32_t)(cell / ((uint64_t)d->nx * (uint64_t)d->ny));
    double rho = 0.0, u[3] = {0.0, 0.0, 0.0};
    ACM_TRY(acm_cuda_probe_cell(d, x, y, z, &rho, u));
    return ACM_FAIL(d, ACM_ERR_DIVERGED,
                    "diverged at step %lld: cell (%d, %d, %d) has density %g and velocity (%g, "
                    "%g, %g), speed limit %g; %s",
                    (long long)first, x, y, z, rho, u[0], u[1], u[2], d->setup.max_speed,
                    rolled_back ? "the state before that step is kept"
                    : m->in_place
                        ? "in-place streaming kept no copy of the state before it"
                        : "the state is the one found at the check (raise the check "
                          "frequency with ACM_PARAM_DIVERGENCE_INTERVAL = 1 to keep the "
                          "last good state)");
}

/* A slab of a decomposed domain (lib/multi/decomp.c) steps with the whole domain's
 * sums, folded on the host as cu_fold_planes folds them here. */
static acm_status take_domain_sums(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_gpu_sums t = {d->slab_total.max_u2, d->slab_total.sum_rho, d->slab_total.sum_j,
                      d->slab_total.sum_pi, 0.0, 0.0, 0.0, 0.0};
    acm_finish_sums(t, d->slab_cells);
    CU_TRY(d, cudaMemcpyAsync(m->sums + m->ring, &t, sizeof t, cudaMemcpyHostToDevice,
                              m->stream));
    return ACM_OK;
}

/* A shared slab (lib/multi/decomp.c, d->slab_sums_shared): every slab's plane sums
 * of the last step, once they are all in the shared buffer, folded here as
 * cu_fold_planes folds one domain's, with no host in between. */
static acm_status fold_shared(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    const int par = (int)(d->step & 1);
    for (int32_t q = 0; q < m->npeers; ++q)
        if (m->peers[q] != d)
            CU_TRY(d, cudaStreamWaitEvent(m->stream, IMPL(m->peers[q])->pushed[par], 0));
    CU_TRY(d, acm_launch_plane_fold(cu_shared_planes(d, d->step), 0, d->whole_nz,
                                    m->sums + m->ring, d->slab_cells, cu_gate(d), m->stream));
    return ACM_OK;
}

/* The host looks at the divergence key before its step index runs out of
 * bits (ACM_KEY_CELL_BITS): at most every ACM_BATCH_STEPS_MAX steps. */
acm_status cu_bound_batch(acm_domain *d, int64_t steps)
{
    return IMPL(d)->batch_step + steps > ACM_BATCH_STEPS_MAX ? cu_check(d) : ACM_OK;
}

/* What a step needs before its first kernel. */
static acm_status before_step(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (!m->capturing) { /* a capture puts the host's count back */
        ACM_TRY(cu_bound_batch(d, 1));
        m->posted = false; /* a step launched kernel by kernel */
    }
    if (d->setup.coll.model == ACM_COLLISION_ACM_LI2020)
        ACM_TRY(cu_ensure_tau(d));
    if (d->slab_cells > 0.0 && acm_is_adaptive(d->setup.coll.model))
        ACM_TRY(d->slab_sums_shared ? fold_shared(d) : take_domain_sums(d));
    return ACM_OK;
}

/* Whether a check follows once the batch holds `steps` steps. */
static bool check_due(const acm_domain *d, acm_check when, int64_t steps)
{
    return when == ACM_CHECK_NOW ||
           (when == ACM_CHECK_DUE && steps >= d->setup.divergence_interval);
}

extern "C" acm_status acm_cuda_advance(acm_domain *d, acm_check when)
{
    cuda_impl *m = IMPL(d);
    if (check_due(d, when, m->batch_step + 1) && m->batch_step > 0) { /* the check's step alone */
        ACM_TRY(cu_enter(d));
        CU_TRY(d, cudaMemcpyAsync(m->counters + 3, m->counters + 1, sizeof *m->counters,
                                  cudaMemcpyDeviceToDevice, m->stream));
    }
    ACM_TRY(cu_step(d));
    return acm_cuda_check(d, when);
}

acm_status cu_step(acm_domain *d)
{
    ACM_TRY(before_step(d));
    return enqueue_step(d);
}

/* The edges of a split step enqueued, then the new state is f[cur] (the rest
 * writes only other cells of it); or the whole step. */
extern "C" acm_status acm_cuda_advance_edges(acm_domain *d)
{
    ACM_TRY(before_step(d));
    cuda_impl *m = IMPL(d);
    uint32_t cut[4];
    int32_t planes[4];
    if (!split_cells(d, cut, planes))
        return enqueue_step(d);
    acm_step_args a;
    ACM_TRY(start_step(d, a));
    ACM_TRY(clear_planes(d));
    ACM_TRY(enqueue_part(d, a, cut[0], cut[1], planes[0], planes[1]));
    ACM_TRY(enqueue_part(d, a, cut[2], cut[3], planes[2], planes[3]));
    m->part = a;
    m->cur = 1 - m->cur;
    m->split = true;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_advance_rest(acm_domain *d, acm_check when)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (m->split) {
        m->split = false;
        uint32_t cut[4] = {0, 0, 0, 0};
        int32_t planes[4] = {0, 0, 0, 0};
        (void)split_cells(d, cut, planes); /* as in advance_edges */
        ACM_TRY(enqueue_part(d, m->part, cut[1], cut[2], planes[1], planes[2]));
        ACM_TRY(finish_sums(d));
        ACM_TRY(end_step(d));
    }
    return acm_cuda_check(d, when);
}

extern "C" acm_status acm_cuda_prepare(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    return d->setup.coll.model == ACM_COLLISION_ACM_LI2020 ? cu_ensure_tau(d) : ACM_OK;
}

extern "C" acm_status acm_cuda_check(acm_domain *d, acm_check when)
{
    if (check_due(d, when, IMPL(d)->batch_step)) {
        ACM_TRY(cu_enter(d));
        return cu_check(d);
    }
    return ACM_OK;
}

/* ---- the key read a call later (acm_cuda_step_async) ---------------------------------- */

acm_status cu_take_seen(acm_domain *d)
{
    const cuda_impl *m = IMPL(d);
    /* the device writes the key, then (after a system-wide fence) the count */
    if (__atomic_load_n(&m->seen[1], __ATOMIC_ACQUIRE) == 0)
        return ACM_OK; /* nothing posted since the last check */
    if (__atomic_load_n(&m->seen[0], __ATOMIC_RELAXED) == ACM_NO_KEY)
        return ACM_OK;
    return cu_check(d); /* a step diverged: the check waits and reports it */
}

acm_status cu_send_seen(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->posted || m->batch_step == 0 || cu_stream_captured(m)) /* none into the caller's graph */
        return ACM_OK;
    CU_TRY(d, acm_launch_key_post(m->counters, m->seen_dev, (unsigned long long)m->batch_step,
                                  m->stream));
    m->posted = true;
    return ACM_OK;
}
