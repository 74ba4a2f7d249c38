/*
 * libacmlbm -- the immersed boundary on the GPU (physics-spec 8; paper Sec.
 * 4.2 and Alg. 3). One thread per sample for placement, support marking,
 * interpolation and the scatter with atomic additions (the paper's load
 * balance); one thread per cell of a solid's box for the gather variant.
 * The per-sample operators are lib/core/ib.h and lib/core/rigid.h, shared with the CPU
 * (lib/cpu/ib_tmpl.h), so both backends compute the same stencils and forces;
 * only the order of the atomic additions differs.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cub/device/device_scan.cuh>

#include "kernels.cuh"
#include "rigid.h"

#define ACM_IB_BLOCK 256u

static_assert(sizeof(acm_coupling) == 16 * sizeof(double), "acm_coupling is read as 16 doubles");

template <typename R>
__global__ void acm_ib_place_kernel(const acm_ib_args ib, uint64_t first, uint64_t count,
                                    const acm_ib_pose given, const acm_ib_pose *from)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const uint64_t l = first + t;
    const acm_ib_pose pose = from != NULL ? *from : given;
    double ub[3];
    acm_rigid_place(pose.x, pose.q, pose.v, pose.w, ib.r + 3 * l, ib.X + 3 * l, ub);
    R *u = (R *)ib.ub + 3 * l;
    u[0] = (R)ub[0];
    u[1] = (R)ub[1];
    u[2] = (R)ub[2];
}

/* rho and u* of cell k into the macro planes, from the populations pulled as
 * the fused kernel will pull them; its IB force to zero. */
template <typename T, typename IDX>
__device__ void acm_ib_band_cell(const acm_step_args &a, const acm_ib_args &ib, uint32_t k)
{
    typedef acm_real<T> R;
    int32_t x, y, z;
    acm_coords(a.g, k, x, y, z);
    R f[27], rho, j[3], F[3];
    const acm_sources s = acm_source_offsets<1>(a.g, x, y, z);
    if (s.edge || a.g.state == ACM_STATE_MOMENTS) /* moments: rebuilt (acm_mom_pull) */
        acm_pull_state<T>(a.g, (const T *)a.src, x, y, z, f);
    else
        acm_pull_interior_any<T, IDX>(a, k, s, f);
    acm_moments(f, rho, j);
    acm_cell_force_ext(a, k, F);
    R *M = (R *)ib.macro, *Fib = (R *)ib.force;
    const size_t n = a.g.ncells;
    M[k] = rho;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        M[(size_t)(d + 1) * n + k] = (j[d] + (R)0.5 * F[d]) / rho;
        Fib[(size_t)d * n + k] = (R)0;
    }
}

/*
 * Runs of a warp. Samples with the same stencil (the same 8 cells) that sit in
 * neighbouring lanes form a run; in the Morton-block order the 10-100 samples
 * of a cell are contiguous, so runs are long and one lane per run can mark the
 * support and add the run's force: far fewer atomics on the same addresses.
 * (Unsorted samples make short runs: the order matters, as the paper found.)
 */
struct acm_warp_run {
    unsigned lane, start; /* this lane; the first lane of its run */
    bool tail;            /* the last lane of its run */
    unsigned mask;        /* tail lanes: the lanes of the run */
};

/* Every lane of the warp calls it; key identifies the stencil (unique per lane
 * for lanes without one). */
__device__ __forceinline__ acm_warp_run acm_warp_runs(unsigned long long key)
{
    const unsigned full = 0xffffffffu;
    acm_warp_run r;
    r.lane = threadIdx.x & 31u;
    const unsigned long long prev = __shfl_up_sync(full, key, 1), next = __shfl_down_sync(full, key, 1);
    unsigned start = (r.lane == 0 || prev != key) ? r.lane : 0u;
#pragma unroll
    for (unsigned off = 1; off < 32; off <<= 1) {
        const unsigned s = __shfl_up_sync(full, start, off);
        if (r.lane >= off)
            start = max(start, s);
    }
    r.start = start;
    r.tail = r.lane == 31 || next != key;
    r.mask = (r.lane == 31 ? full : ((2u << r.lane) - 1u)) & ~((1u << start) - 1u);
    return r;
}

/* Sum of v over the lanes of each run, complete in its tail lane. */
template <typename V>
__device__ __forceinline__ V acm_warp_run_sum(const acm_warp_run &r, V v)
{
#pragma unroll
    for (unsigned off = 1; off < 32; off <<= 1) {
        const V y = __shfl_up_sync(0xffffffffu, v, off);
        if (r.lane >= off && r.lane - off >= r.start)
            v += y;
    }
    return v;
}

/* Stencil of sample l (if it has one) and its run key: the corner cells 0 and 7
 * fix all eight. */
__device__ __forceinline__ bool acm_ib_lane_stencil(const acm_ib_args &ib, uint64_t l,
                                                    acm_ib_stencil &st, unsigned long long &key)
{
    const bool ok = l < ib.n && acm_ib_make_stencil(&ib.ig, ib.X + 3 * l, &st);
    key = ok ? (st.cell[0] | st.cell[7] << 32) : ~0ull - (threadIdx.x & 31u);
    return ok;
}

/* Mark the support of every sample: one lane per run sets the bits. */
__global__ void acm_ib_mark_kernel(const acm_ib_args ib)
{
    const uint64_t l = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    acm_ib_stencil st;
    unsigned long long key;
    const bool ok = acm_ib_lane_stencil(ib, l, st, key);
    const acm_warp_run run = acm_warp_runs(key);
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        const unsigned used = __ballot_sync(0xffffffffu, ok && st.w[c] > 0.0) & run.mask;
        if (!run.tail || used == 0)
            continue;
        const uint32_t k = (uint32_t)st.cell[c], bit = 1u << (k & 31u);
        uint32_t *word = ib.mask + (k >> 5);
        if (!(*(volatile uint32_t *)word & bit)) /* most cells are marked already */
            atomicOr(word, bit);
    }
}

/* The list of marked cells: one thread per mask word, the set bits of a
 * warp's 32 words shared out evenly among its lanes in cell order, written to
 * a segment of the list that the warp claims. */
__global__ void acm_ib_compact_kernel(const acm_ib_args ib, uint32_t words)
{
    const unsigned lane = threadIdx.x & 31u, full = 0xffffffffu;
    const uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t word = w < words ? ib.mask[w] : 0u;
    unsigned incl = (unsigned)__popc(word);
#pragma unroll
    for (unsigned off = 1; off < 32; off <<= 1) {
        const unsigned v = __shfl_up_sync(full, incl, off);
        if (lane >= off)
            incl += v;
    }
    const unsigned total = __shfl_sync(full, incl, 31), first_word = w - lane;
    if (total == 0)
        return;
    uint32_t at = lane == 31 ? atomicAdd(ib.band_count, total) : 0u;
    at = __shfl_sync(full, at, 31);
    for (unsigned base = 0; base < total; base += 32) { /* every lane shuffles */
        const unsigned j = base + lane;
        unsigned src = 0; /* the lane whose word holds item j: the first with incl > j */
#pragma unroll
        for (unsigned step = 16; step > 0; step >>= 1)
            if (__shfl_sync(full, incl, src + step - 1) <= j)
                src += step;
        src = src > 31u ? 31u : src;
        const unsigned before = __shfl_sync(full, incl, src > 0 ? src - 1 : 0);
        const uint32_t bits = __shfl_sync(full, word, src);
        if (j < total)
            ib.band[at + j] = (first_word + src) * 32u +
                              (unsigned)__fns(bits, 0, (int)(j - (src > 0 ? before : 0u) + 1));
    }
}

/* rho and u* of every cell of the band list (a grid-stride loop: the list's
 * length is only known on the device). */
template <typename T, typename IDX>
__global__ void acm_ib_band_kernel(const acm_step_args a, const acm_ib_args ib)
{
    const uint32_t count = *ib.band_count, stride = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        acm_ib_band_cell<T, IDX>(a, ib, ib.band[i]);
}

/* Interpolate at sample l and compute its penalty force density; false
 * without a stencil. FIRST: the first iteration, whose IB force is still 0. */
template <typename R, bool FIRST>
__device__ __forceinline__ void acm_ib_penalty_sample(const acm_ib_args &ib, uint64_t ncells,
                                                      uint64_t l, const acm_ib_stencil &st,
                                                      double g[3])
{
    double u[3];
    const double rho = acm_ib_interpolate(&st, ib.macro, FIRST ? NULL : ib.force, ncells,
                                          (int)sizeof(R), u);
    const R *ubr = (const R *)ib.ub + 3 * l;
    const double ub[3] = {(double)ubr[0], (double)ubr[1], (double)ubr[2]};
    acm_ib_penalty((double)((const R *)ib.alpha)[l], rho, ub, u, g);
    ((R *)ib.rho)[l] = (R)rho;
    R *G = (R *)ib.G + 3 * l, *Gs = (R *)ib.Gsum + 3 * l;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        G[d] = (R)g[d];
        Gs[d] = FIRST ? (R)g[d] : Gs[d] + (R)g[d];
    }
}

/* Add the run sums of w G dV of the samples to their cells (one atomic per
 * run, cell and component). */
template <typename R>
__device__ __forceinline__ void acm_ib_spread_runs(const acm_ib_args &ib, uint64_t ncells,
                                                   const acm_warp_run &run, bool ok,
                                                   const acm_ib_stencil &st, double dv,
                                                   const double g[3])
{
    R *F = (R *)ib.force;
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        const double s = ok ? st.w[c] * dv : 0.0;
#pragma unroll
        for (int d = 0; d < 3; ++d) { /* summed in R: the field's type, half the shuffles */
            const R v = acm_warp_run_sum<R>(run, (R)(s * g[d]));
            if (run.tail && ok && v != (R)0)
                atomicAdd(F + (uint64_t)d * ncells + st.cell[c], v);
        }
    }
}

/* One iteration's penalty forces; SPREAD also scatters them (the first
 * iteration without free bodies: nothing reads the force field meanwhile). */
template <typename R, bool FIRST, bool SPREAD>
__global__ void acm_ib_penalty_kernel(const acm_ib_args ib, uint64_t ncells)
{
    const uint64_t l = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    acm_ib_stencil st;
    unsigned long long key;
    const bool ok = acm_ib_lane_stencil(ib, l, st, key);
    double g[3] = {0.0, 0.0, 0.0};
    if (ok)
        acm_ib_penalty_sample<R, FIRST>(ib, ncells, l, st, g);
    else if (l < ib.n)
        for (int d = 0; d < 3; ++d) {
            ((R *)ib.G)[3 * l + d] = (R)0;
            if (FIRST)
                ((R *)ib.Gsum)[3 * l + d] = (R)0;
        }
    if (!SPREAD)
        return;
    const acm_warp_run run = acm_warp_runs(key); /* every lane of the warp is here */
    acm_ib_spread_runs<R>(ib, ncells, run, ok, st, ok ? (double)((const R *)ib.dv)[l] : 0.0, g);
}

template <typename R>
__global__ void acm_ib_scatter_kernel(const acm_ib_args ib, uint64_t ncells)
{
    const uint64_t l = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    acm_ib_stencil st;
    unsigned long long key;
    const bool ok = acm_ib_lane_stencil(ib, l, st, key);
    const acm_warp_run run = acm_warp_runs(key);
    double g[3] = {0.0, 0.0, 0.0}, dv = 0.0;
    if (ok) {
        const R *G = (const R *)ib.G + 3 * l;
        dv = (double)((const R *)ib.dv)[l];
        g[0] = (double)G[0];
        g[1] = (double)G[1];
        g[2] = (double)G[2];
    }
    acm_ib_spread_runs<R>(ib, ncells, run, ok, st, dv, g);
}

/* ---- gather ---------------------------------------------------------------------------- */

/* Scratch layout of the gather: start[cells + 1], cursor[cells + 1] (the
 * counts before the scan), list[samples], then CUB's. */
struct acm_gather_scratch {
    uint32_t *start, *cursor, *list;
    void *cub;
    size_t cub_bytes;
};

static acm_gather_scratch acm_gather_split(void *p, uint64_t cells, uint64_t samples,
                                           size_t cub_bytes)
{
    acm_gather_scratch g;
    g.start = (uint32_t *)p;
    g.cursor = g.start + cells + 1;
    g.list = g.cursor + cells + 1;
    uintptr_t c = (uintptr_t)(g.list + samples);
    g.cub = (void *)((c + 255u) & ~(uintptr_t)255u);
    g.cub_bytes = cub_bytes;
    return g;
}

static size_t acm_gather_cub_bytes(uint64_t cells)
{
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(NULL, bytes, (uint32_t *)NULL, (uint32_t *)NULL, (int)cells + 1);
    return bytes;
}

size_t acm_ib_gather_scratch_bytes(uint64_t region_cells, uint64_t samples)
{
    return (size_t)(2 * region_cells + 2 + samples) * sizeof(uint32_t) + 256 +
           acm_gather_cub_bytes(region_cells);
}

__global__ void acm_ib_count_kernel(const acm_ib_args ib, const acm_ib_region rg, uint64_t first,
                                    uint64_t count, uint32_t *counts)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int64_t b[3];
    uint64_t slot;
    acm_ib_base(ib.X + 3 * (first + t), b);
    if (acm_ib_region_slot(&ib.ig, &rg, b, &slot))
        atomicAdd(counts + slot, 1u);
}

__global__ void acm_ib_fill_kernel(const acm_ib_args ib, const acm_ib_region rg, uint64_t first,
                                   uint64_t count, const uint32_t *start, uint32_t *cursor,
                                   uint32_t *list)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int64_t b[3];
    uint64_t slot;
    acm_ib_base(ib.X + 3 * (first + t), b);
    if (acm_ib_region_slot(&ib.ig, &rg, b, &slot))
        list[start[slot] + atomicAdd(cursor + slot, 1u)] = (uint32_t)(first + t);
}

/* Each region cell's list of samples in ascending order (insertion sort: a
 * cell's base holds a few samples): the fill's atomics place them in any
 * order, and the gather's sums must not depend on it (two runs bitwise equal,
 * as the CPU's are). */
__global__ void acm_ib_order_kernel(uint64_t cells, const uint32_t *start, uint32_t *list)
{
    const uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= cells)
        return;
    const uint32_t b = start[r], e = start[r + 1];
    for (uint32_t i = b + 1; i < e; ++i) {
        const uint32_t v = list[i];
        uint32_t j = i;
        for (; j > b && list[j - 1] > v; --j)
            list[j] = list[j - 1];
        list[j] = v;
    }
}

template <typename R>
__global__ void acm_ib_gather_kernel(const acm_ib_args ib, uint64_t ncells, const acm_ib_region rg,
                                     const uint32_t *start, const uint32_t *list)
{
    const uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rg.cells)
        return;
    uint64_t node;
    uint32_t nb[ACM_IB_NODES];
    const int count = acm_ib_region_node(&ib.ig, &rg, r, &node, nb);
    double sum[3] = {0.0, 0.0, 0.0};
    for (int b = 0; b < count; ++b)
        for (uint32_t j = start[nb[b]]; j < start[nb[b] + 1]; ++j) {
            const uint64_t l = list[j];
            acm_ib_stencil st;
            acm_ib_make_stencil(&ib.ig, ib.X + 3 * l, &st);
            double w = 0.0;
            for (int c = 0; c < ACM_IB_NODES; ++c)
                w += st.cell[c] == node ? st.w[c] : 0.0;
            const R *G = (const R *)ib.G + 3 * l;
            const double s = w * (double)((const R *)ib.dv)[l];
#pragma unroll
            for (int d = 0; d < 3; ++d)
                sum[d] += s * (double)G[d];
        }
    if (count == 0)
        return;
    R *F = (R *)ib.force;
#pragma unroll
    for (int d = 0; d < 3; ++d)
        F[(uint64_t)d * ncells + node] += (R)sum[d];
}

/* ---- force and torque of a solid --------------------------------------------------------- */

/* Whether sample l's stencil base lies on one of the domain's own planes
 * (acm_ib_owner_plane): always on one domain, one slab's share on slabs. */
__device__ __forceinline__ bool acm_ib_owned(const acm_ib_args &ib, uint64_t l)
{
    const int32_t p = acm_ib_owner_plane(&ib.ig, ib.X[3 * l + 2]) - ib.own0;
    return p >= 0 && p < ib.own_n;
}

/* A batch's entry and sample for this thread: blocks are laid out entry
 * after entry (acm_ib_batch.block0); `t` the sample's index in its entry,
 * `lb` the block's. */
struct acm_ib_at {
    int k;
    unsigned lb;
    uint64_t t;
};
__device__ __forceinline__ acm_ib_at acm_ib_batch_at(const acm_ib_batch &b)
{
    acm_ib_at w;
    w.k = 0;
    while (w.k + 1 < b.n && blockIdx.x >= b.block0[w.k + 1])
        ++w.k;
    w.lb = blockIdx.x - b.block0[w.k];
    w.t = (uint64_t)w.lb * blockDim.x + threadIdx.x;
    return w;
}

__device__ __forceinline__ const double *acm_ib_centre_of(const acm_ib_centre &c)
{
    return c.at != NULL ? c.at : c.xc;
}

template <typename R>
__global__ void acm_ib_sums_kernel(const acm_ib_args ib, const acm_ib_batch bt,
                                   acm_gpu_sums *partials)
{
    const acm_ib_at w = acm_ib_batch_at(bt);
    const double *xc = acm_ib_centre_of(bt.centre[w.k]);
    const double cx = xc[0], cy = xc[1], cz = xc[2];
    acm_gpu_sums a = {0.0, 0.0, 0.0, 0.0}, b = {0.0, 0.0, 0.0, 0.0};
    if (w.t < bt.count[w.k] && acm_ib_owned(ib, bt.first[w.k] + w.t)) {
        const uint64_t l = bt.first[w.k] + w.t;
        const double *X = ib.X + 3 * l;
        const R *G = (const R *)ib.Gsum + 3 * l;
        const double dv = (double)((const R *)ib.dv)[l];
        const double g[3] = {(double)G[0] * dv, (double)G[1] * dv, (double)G[2] * dv};
        const double r[3] = {X[0] - cx, X[1] - cy, X[2] - cz};
        a.max_u2 = -g[0];
        a.sum_rho = -g[1];
        a.sum_j = -g[2];
        a.sum_pi = -(r[1] * g[2] - r[2] * g[1]);
        b.max_u2 = -(r[2] * g[0] - r[0] * g[2]);
        b.sum_rho = -(r[0] * g[1] - r[1] * g[0]);
    }
    const unsigned nb = bt.block0[w.k + 1] - bt.block0[w.k];
    acm_gpu_sums *p = partials + 2 * (size_t)bt.block0[w.k];
    acm_block_sums<false>(a, p + w.lb);
    acm_block_sums<false>(b, p + nb + w.lb);
}

/* ---- implicit coupling of free bodies ------------------------------------------------------ */

template <typename R>
__global__ void acm_ib_coupling_kernel(const acm_ib_args ib, const acm_ib_batch bt,
                                       acm_gpu_sums *partials)
{
    const acm_ib_at w = acm_ib_batch_at(bt);
    const double *xc = acm_ib_centre_of(bt.centre[w.k]);
    const double cx = xc[0], cy = xc[1], cz = xc[2];
    acm_coupling c;
    memset(&c, 0, sizeof c);
    if (w.t < bt.count[w.k] && acm_ib_owned(ib, bt.first[w.k] + w.t)) {
        const uint64_t l = bt.first[w.k] + w.t;
        const double *X = ib.X + 3 * l;
        const R *G = (const R *)ib.G + 3 * l;
        const double r[3] = {X[0] - cx, X[1] - cy, X[2] - cz};
        const double g[3] = {(double)G[0], (double)G[1], (double)G[2]};
        const double dv = (double)((const R *)ib.dv)[l];
        const double a = (double)((const R *)ib.alpha)[l] * (double)((const R *)ib.rho)[l] * dv;
        acm_coupling_add(&c, r, g, dv, a);
    }
    const unsigned nb = bt.block0[w.k + 1] - bt.block0[w.k];
    acm_gpu_sums *p = partials + 4 * (size_t)bt.block0[w.k];
    const double *v = (const double *)&c; /* 16 doubles: F, T, k, s, J */
    for (int q = 0; q < 4; ++q) {
        acm_gpu_sums e = {v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]};
        acm_block_sums<false>(e, p + (size_t)q * nb + w.lb);
    }
}

template <typename R>
__global__ void acm_ib_couple_kernel(const acm_ib_args ib, const acm_ib_batch bt,
                                     const acm_gpu_sums *from)
{
    const acm_ib_at w = acm_ib_batch_at(bt);
    if (w.t >= bt.count[w.k])
        return;
    const double *xc = acm_ib_centre_of(bt.centre[w.k]);
    const double *dvdw = from != NULL ? (const double *)(from + bt.slot[w.k]) : bt.dvdw[w.k];
    const uint64_t l = bt.first[w.k] + w.t;
    const double *X = ib.X + 3 * l;
    const double r[3] = {X[0] - xc[0], X[1] - xc[1], X[2] - xc[2]};
    double du[3];
    acm_coupling_target(dvdw, dvdw + 3, r, du);
    const double a = (double)((const R *)ib.alpha)[l] * (double)((const R *)ib.rho)[l];
    R *G = (R *)ib.G + 3 * l, *Gs = (R *)ib.Gsum + 3 * l, *ub = (R *)ib.ub + 3 * l;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        G[d] += (R)(a * du[d]);
        Gs[d] += (R)(a * du[d]);
        ub[d] += (R)du[d];
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

cudaError_t acm_launch_ib_place(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t first,
                                uint64_t count, const acm_ib_pose &pose, const acm_ib_pose *from,
                                cudaStream_t s)
{
    if (count == 0)
        return cudaSuccess; /* a grid of no blocks is an error */
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_ib_place_kernel<R><<<acm_blocks(count, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(
            ib, first, count, pose, from);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_ib_mark(const acm_ib_args &ib, uint32_t ncells, cudaStream_t s)
{
    const uint32_t words = acm_redo_words(ncells);
    cudaError_t e = acm_launch_zero_words(ib.mask, words, s);
    if (e == cudaSuccess)
        e = acm_launch_zero_words(ib.band_count, 1, s);
    if (e != cudaSuccess)
        return e;
    if (ib.n > 0) /* a grid of no blocks is an error */
        acm_ib_mark_kernel<<<acm_blocks(ib.n, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(ib);
    acm_ib_compact_kernel<<<acm_blocks(words, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(ib, words);
    return cudaGetLastError();
}

uint64_t acm_ib_band_bound(uint64_t samples, uint32_t ncells)
{
    const uint64_t most = (uint64_t)ACM_IB_NODES * samples;
    return most < ncells ? most : ncells;
}

cudaError_t acm_launch_ib_band(const acm_step_args &a, const acm_ib_args &ib, acm_gpu_elem elem,
                               cudaStream_t s)
{
    if (ib.n == 0)
        return cudaSuccess; /* a grid of no blocks is an error */
    const unsigned blocks = acm_blocks(acm_ib_band_bound(ib.n, a.g.ncells), ACM_IB_BLOCK);
    const unsigned grid = blocks < 2048u ? blocks : 2048u; /* a few waves; the rest loops */
    const bool narrow = acm_csoa_size(a.g.l, a.g.ncells) <= 0xffffffffull;
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        if (narrow)
            acm_ib_band_kernel<T, uint32_t><<<grid, ACM_IB_BLOCK, 0, s>>>(a, ib);
        else
            acm_ib_band_kernel<T, uint64_t><<<grid, ACM_IB_BLOCK, 0, s>>>(a, ib);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_ib_penalty(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                  bool first, bool spread, cudaStream_t s)
{
    if (ib.n == 0)
        return cudaSuccess; /* a grid of no blocks is an error */
    const unsigned grid = acm_blocks(ib.n, ACM_IB_BLOCK);
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        if (first && spread)
            acm_ib_penalty_kernel<R, true, true><<<grid, ACM_IB_BLOCK, 0, s>>>(ib, ncells);
        else if (first)
            acm_ib_penalty_kernel<R, true, false><<<grid, ACM_IB_BLOCK, 0, s>>>(ib, ncells);
        else
            acm_ib_penalty_kernel<R, false, false><<<grid, ACM_IB_BLOCK, 0, s>>>(ib, ncells);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_ib_scatter(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                  cudaStream_t s)
{
    if (ib.n == 0)
        return cudaSuccess; /* a grid of no blocks is an error */
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_ib_scatter_kernel<R><<<acm_blocks(ib.n, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(ib, ncells);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_ib_gather(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                 const acm_ib_region &rg, uint64_t first, uint64_t count,
                                 void *scratch, size_t scratch_bytes, cudaStream_t s)
{
    if (rg.cells == 0 || count == 0)
        return cudaSuccess;
    const size_t cub_bytes = acm_gather_cub_bytes(rg.cells);
    if (scratch_bytes < acm_ib_gather_scratch_bytes(rg.cells, count))
        return cudaErrorInvalidValue;
    acm_gather_scratch g = acm_gather_split(scratch, rg.cells, count, cub_bytes);
    cudaError_t e = acm_launch_zero_words(g.start, 2 * (size_t)rg.cells + 2, s);
    if (e != cudaSuccess)
        return e;
    const unsigned grid = acm_blocks(count, ACM_IB_BLOCK);
    acm_ib_count_kernel<<<grid, ACM_IB_BLOCK, 0, s>>>(ib, rg, first, count, g.cursor);
    size_t bytes = g.cub_bytes;
    e = cub::DeviceScan::ExclusiveSum(g.cub, bytes, g.cursor, g.start, (int)rg.cells + 1, s);
    if (e != cudaSuccess)
        return e;
    e = acm_launch_zero_words(g.cursor, (size_t)rg.cells + 1, s);
    if (e != cudaSuccess)
        return e;
    acm_ib_fill_kernel<<<grid, ACM_IB_BLOCK, 0, s>>>(ib, rg, first, count, g.start, g.cursor, g.list);
    acm_ib_order_kernel<<<acm_blocks(rg.cells, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(rg.cells, g.start,
                                                                                   g.list);
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_ib_gather_kernel<R><<<acm_blocks(rg.cells, ACM_IB_BLOCK), ACM_IB_BLOCK, 0, s>>>(
            ib, ncells, rg, g.start, g.list);
    });
    return cudaGetLastError();
}

unsigned acm_ib_sum_blocks(uint64_t count) { return acm_blocks(count, ACM_IB_BLOCK); }

void acm_ib_batch_add(acm_ib_batch *b, int32_t slot, uint64_t first, uint64_t count,
                      const acm_ib_centre &c, const double *dvdw)
{
    const int k = b->n++;
    b->slot[k] = slot;
    b->first[k] = first;
    b->count[k] = count;
    b->centre[k] = c;
    for (int q = 0; q < 6; ++q)
        b->dvdw[k][q] = dvdw != NULL ? dvdw[q] : 0.0;
}

/* The batch's blocks of samples: each entry's after the one before (one at
 * least, as a launch of one solid's sums had). */
static void batch_blocks(acm_ib_batch &b)
{
    b.block0[0] = 0;
    for (int k = 0; k < b.n; ++k)
        b.block0[k + 1] = b.block0[k] + acm_ib_sum_blocks(b.count[k] ? b.count[k] : 1);
}

/* A per-sample sums kernel over the batch's samples writing `sets` sets of
 * partials per entry (kernel_of(R()) is the kernel for the arithmetic type
 * R), each entry's set q then folded into out[sets slot + q]. */
template <typename K>
static cudaError_t launch_sums(const acm_ib_args &ib, acm_gpu_elem elem, const acm_ib_batch &b,
                               int sets, acm_gpu_sums *partials, acm_gpu_sums *out,
                               void *fold_scratch, cudaStream_t s, K kernel_of)
{
    if (b.n <= 0)
        return cudaSuccess;
    acm_ib_batch bt = b;
    batch_blocks(bt);
    acm_with_elem(elem, [&](auto t) {
        kernel_of(acm_real<decltype(t)>())<<<bt.block0[bt.n], ACM_IB_BLOCK, 0, s>>>(ib, bt,
                                                                                  partials);
    });
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    unsigned first[ACM_IB_BATCH + 1];
    int32_t slot[ACM_IB_BATCH];
    for (int k = 0; k <= bt.n; ++k)
        first[k] = (unsigned)sets * bt.block0[k];
    for (int k = 0; k < bt.n; ++k)
        slot[k] = bt.slot[k];
    return acm_launch_fold_sets(partials, first, slot, bt.n, sets, out, fold_scratch, s);
}

cudaError_t acm_launch_ib_coupling(const acm_ib_args &ib, acm_gpu_elem elem,
                                   const acm_ib_batch &b, acm_gpu_sums *partials,
                                   acm_gpu_sums *out, void *fold_scratch, cudaStream_t s)
{
    return launch_sums(ib, elem, b, 4, partials, out, fold_scratch, s,
                       [](auto r) { return acm_ib_coupling_kernel<decltype(r)>; });
}

cudaError_t acm_launch_ib_couple(const acm_ib_args &ib, acm_gpu_elem elem, const acm_ib_batch &b,
                                 const acm_gpu_sums *from, cudaStream_t s)
{
    if (b.n <= 0)
        return cudaSuccess;
    acm_ib_batch bt = b;
    batch_blocks(bt);
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_ib_couple_kernel<R><<<bt.block0[bt.n], ACM_IB_BLOCK, 0, s>>>(ib, bt, from);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_ib_sums(const acm_ib_args &ib, acm_gpu_elem elem, const acm_ib_batch &b,
                               acm_gpu_sums *partials, acm_gpu_sums *out, void *fold_scratch,
                               cudaStream_t s)
{
    return launch_sums(ib, elem, b, 2, partials, out, fold_scratch, s,
                       [](auto r) { return acm_ib_sums_kernel<decltype(r)>; });
}

const void *acm_ib_anchor(void) { return (const void *)acm_ib_mark_kernel; }
