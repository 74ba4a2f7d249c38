/*
 * libacmlbm -- transfers between the stored state and physical fields:
 * initial equilibria, restored populations, inverse streaming, per-cell
 * planes, field read-back, the stored state as it is (lib/engine/state.h) and
 * diagnostics. SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

/* Caller element (float or double) of a staging buffer. */
template <typename D>
__device__ __forceinline__ double acm_ld(const void *p, size_t i)
{
    return (double)((const D *)p)[i];
}

__device__ __forceinline__ double acm_load_any(const void *p, int elem, size_t i)
{
    return elem == 4 ? acm_ld<float>(p, i) : acm_ld<double>(p, i);
}

__device__ __forceinline__ void acm_store_any(void *p, int elem, size_t i, double v)
{
    if (elem == 4)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* The velocity u = (j + F/2) / rho of cell k from its pulled populations f. */
template <typename R>
__device__ __forceinline__ void acm_velocity_of(const acm_step_args &a, uint32_t k, const R f[27],
                                                double u[3])
{
    R rho, j[3], F[3];
    acm_moments(f, rho, j);
    acm_cell_force(a, k, acm_ib_word(a, k), F);
    for (int d = 0; d < 3; ++d)
        u[d] = (double)((j[d] + (R)0.5 * F[d]) / rho);
}

/* Field values of cell k0 + t into dst[t * components + c]. */
template <typename T>
__global__ void acm_field_kernel(const acm_step_args a, const T *__restrict__ cur, int field,
                                 void *dst, int dst_elem, uint32_t k0, uint32_t count)
{
    typedef acm_real<T> R;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const uint32_t k = k0 + t;
    int32_t x, y, z;
    acm_coords(a.g, k, x, y, z);
    R f[27];
    acm_pull_state<T>(a.g, cur, x, y, z, f);
    if (field == ACM_FIELD_POPULATIONS) {
        for (int i = 0; i < 27; ++i)
            acm_store_any(dst, dst_elem, (size_t)t * 27 + i, (double)f[i] + acm_weight(i));
        return;
    }
    if (field == ACM_FIELD_DENSITY) {
        R rho, j[3];
        acm_moments(f, rho, j);
        acm_store_any(dst, dst_elem, t, (double)rho);
        return;
    }
    double u[3];
    acm_velocity_of(a, k, f, u);
    for (int d = 0; d < 3; ++d)
        acm_store_any(dst, dst_elem, (size_t)t * 3 + d, u[d]);
}

/* The velocity of cell k of the current state (as acm_field_kernel gives it). */
template <typename T>
__device__ void acm_cell_velocity(const acm_step_args &a, const T *__restrict__ cur, uint32_t k,
                                  double u[3])
{
    int32_t x, y, z;
    acm_coords(a.g, k, x, y, z);
    acm_real<T> f[27];
    acm_pull_state<T>(a.g, cur, x, y, z, f);
    acm_velocity_of(a, k, f, u);
}

/* Eight threads per point, one for each of the 8 cells around it (lib/core/
 * smoke_math.h); the point's first thread sums their weighted velocities in
 * the corners' order, as one thread would. A point's corners are read in
 * parallel: with one thread a point the 16 probes of examples/game_loop took
 * 26 us, one warp's chain of 8 x 27 loads (docs/performance.md, "Timelines").
 * Every lane of a warp reaches the shuffles: the grid is whole warps. */
#define ACM_SAMPLE_LANES 8
template <typename T>
__global__ void acm_sample_velocity_kernel(const acm_step_args a, const acm_ib_grid g,
                                           const T *__restrict__ cur, const double *points,
                                           double *out, uint32_t count)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t p = t / ACM_SAMPLE_LANES;
    const int q = (int)(t % ACM_SAMPLE_LANES);
    double w = 0.0, u[3] = {0.0, 0.0, 0.0};
    if (p < count) {
        const double X[3] = {points[3 * p], points[3 * p + 1], points[3 * p + 2]};
        int32_t c[3][2];
        double f[3];
        acm_smoke_stencil(&g, X, c, f);
        acm_cell_velocity<T>(a, cur, (uint32_t)acm_smoke_corner(&g, c, q), u);
        w = acm_smoke_weight(q, f);
    }
    const int first = (int)(threadIdx.x % 32u) - q; /* the point's first lane */
    double v[3] = {0.0, 0.0, 0.0};
#pragma unroll
    for (int r = 0; r < ACM_SAMPLE_LANES; ++r) {
        const double wr = __shfl_sync(0xffffffffu, w, first + r);
#pragma unroll
        for (int d = 0; d < 3; ++d)
            v[d] += wr * __shfl_sync(0xffffffffu, u[d], first + r);
    }
    if (p < count && q == 0)
        for (int d = 0; d < 3; ++d)
            out[3 * p + d] = v[d];
}

/* Physical state = f^eq(rho, u) of arrays or uniform values. */
template <typename T>
__global__ void acm_equilibrium_kernel(const acm_gpu_grid g, T *phys, const void *rho,
                                       const void *u, int src_elem, double rho0, double u0x,
                                       double u0y, double u0z, uint32_t k0, uint32_t count)
{
    typedef acm_real<T> R;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    R r = (R)(rho ? acm_load_any(rho, src_elem, t) : rho0), v[3], e[27];
    v[0] = (R)(u ? acm_load_any(u, src_elem, (size_t)t * 3) : u0x);
    v[1] = (R)(u ? acm_load_any(u, src_elem, (size_t)t * 3 + 1) : u0y);
    v[2] = (R)(u ? acm_load_any(u, src_elem, (size_t)t * 3 + 2) : u0z);
    acm_equilibrium_public<R>(r, v, e);
#pragma unroll
    for (int i = 0; i < 27; ++i)
        acm_io<T>::st(phys, acm_idx(g, k0 + t, i), e[i]);
}

/* Physical state = full populations f (27 per cell), stored shifted. */
template <typename T>
__global__ void acm_set_populations_kernel(const acm_gpu_grid g, T *phys, const void *f,
                                           int src_elem, uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int i = 0; i < 27; ++i)
        acm_io<T>::st(phys, acm_idx(g, k0 + t, i),
                      (acm_real<T>)(acm_load_any(f, src_elem, (size_t)t * 27 + i) - acm_weight(i)));
}

/* Stored populations of cell k0 + t as they are, in public order, into
 * dst[t * 27 + i]: no streaming and no weights, so FP64 holds them exactly
 * (swap: population i from slot opp(i), the in-place parity 1). */
template <typename T>
__global__ void acm_get_stored_kernel(const acm_gpu_grid g, const T *__restrict__ arr, bool swap,
                                      double *dst, uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int i = 0; i < 27; ++i)
        dst[(size_t)t * 27 + i] =
            (double)acm_io<T>::ld(arr, acm_idx(g, k0 + t, swap ? acm_opp(i) : i));
}

/* The inverse: src[t * 27 + i] into the slots of cell k0 + t. */
template <typename T>
__global__ void acm_set_stored_kernel(const acm_gpu_grid g, T *arr, bool swap, const double *src,
                                      uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int i = 0; i < 27; ++i)
        acm_io<T>::st(arr, acm_idx(g, k0 + t, swap ? acm_opp(i) : i),
                      (acm_real<T>)src[(size_t)t * 27 + i]);
}

/* Stored values moved as they are between arr (CSoA slots, opp(i) with swap)
 * and a canonical buffer (27 per cell, cell after cell from cell k0): a state
 * parked in device memory during a re-layout, the ghost planes of a slab
 * (lib/multi/decomp.h); bitwise in every storage type. */
template <typename T>
__global__ void acm_move_stored_kernel(const acm_gpu_grid g, T *arr, T *canon, bool swap,
                                       bool to_arr, int dz, uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const int per = acm_moved_count(dz);
    for (int i = 0, j = 0; i < 27; ++i) {
        if (!acm_moves(dz, i))
            continue;
        const uint64_t slot = acm_idx(g, k0 + t, swap ? acm_opp(i) : i);
        const size_t c = (size_t)t * per + j++;
        if (to_arr)
            arr[slot] = canon[c];
        else
            canon[c] = arr[slot];
    }
}

/* Stored values of count cells from one array to another of the same type and
 * CSoA group, each with its grid: the ghost planes of a slab from its
 * neighbour's planes (lib/multi/halo.c), src possibly on a peer device. */
template <typename T>
__global__ void acm_copy_stored_kernel(const acm_gpu_grid gd, T *dst, uint32_t d0,
                                       const acm_gpu_grid gs, const T *src, uint32_t s0,
                                       uint32_t count, int dz)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int i = 0; i < 27; ++i)
        if (acm_moves(dz, i))
            dst[acm_idx(gd, d0 + t, i)] = src[acm_idx(gs, s0 + t, i)];
}

/* Moment storage from a physical state: the inverse pull of phys (the
 * arithmetic type, grid gp) gives cell k's post-collision populations, whose
 * moments go into mom (grid gm), as the CPU's unstream and projection. */
template <typename T>
__global__ void acm_mom_unstream_kernel(const acm_gpu_grid gm, T *mom, const acm_gpu_grid gp,
                                        const acm_real<T> *__restrict__ phys)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= gm.ncells)
        return;
    int32_t x, y, z;
    acm_coords(gp, k, x, y, z);
    acm_real<T> f[27];
    acm_pull<acm_real<T>, -1>(gp, phys, x, y, z, f);
    acm_mom_store_populations<T>(gm, mom, k, f);
}

/* The shifted post-collision populations the moments of cell k0 + t stand
 * for, public order, into dst[t * 27 + i]. */
template <typename T>
__global__ void acm_mom_get_kernel(const acm_gpu_grid g, const T *__restrict__ mom, double *dst,
                                   uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    acm_real<T> m[ACM_MOMENTS];
    acm_mom_load<T>(g, mom, k0 + t, m);
#pragma unroll
    for (int i = 0; i < 27; ++i)
        dst[(size_t)t * 27 + i] = (double)acm_mom_math<acm_real<T>>::population(m, g.closure, i);
}

/* The inverse: the moments of src[t * 27 + i] (in the arithmetic type) into
 * cell k0 + t. */
template <typename T>
__global__ void acm_mom_set_kernel(const acm_gpu_grid g, T *mom, const double *src, uint32_t k0,
                                   uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    acm_real<T> f[27];
#pragma unroll
    for (int i = 0; i < 27; ++i)
        f[i] = (acm_real<T>)src[(size_t)t * 27 + i];
    acm_mom_store_populations<T>(g, mom, k0 + t, f);
}

/* The stored moments of cells k0 .. k0 + count as FP64, 10 a cell (to_mom
 * false), or the other way: values that the storage type holds exactly
 * (those read from it) come back bit for bit. */
template <typename T>
__global__ void acm_mom_values_kernel(const acm_gpu_grid g, T *mom, double *buf, bool to_mom,
                                      uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    acm_real<T> m[ACM_MOMENTS];
    double *v = buf + (size_t)t * ACM_MOMENTS;
    if (to_mom) {
#pragma unroll
        for (int n = 0; n < ACM_MOMENTS; ++n)
            m[n] = (acm_real<T>)v[n];
        acm_mom_store<T>(g, mom, k0 + t, m);
    } else {
        acm_mom_load<T>(g, mom, k0 + t, m);
#pragma unroll
        for (int n = 0; n < ACM_MOMENTS; ++n)
            v[n] = (double)m[n];
    }
}

/* The same moments m in every cell (a uniform equilibrium). */
template <typename T>
__global__ void acm_mom_fill_kernel(const acm_gpu_grid g, T *mom, acm_mom_uniform u)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= g.ncells)
        return;
    acm_real<T> m[ACM_MOMENTS];
#pragma unroll
    for (int n = 0; n < ACM_MOMENTS; ++n)
        m[n] = (acm_real<T>)u.m[n];
    acm_mom_store<T>(g, mom, k, m);
}

/* comp planes from interleaved values (comp per cell). */
template <typename R>
__global__ void acm_set_planes_kernel(const acm_gpu_grid g, R *planes, int comp, const void *src,
                                      int src_elem, uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int c = 0; c < comp; ++c)
        planes[(size_t)c * g.ncells + k0 + t] =
            (R)acm_load_any(src, src_elem, (size_t)t * comp + c);
}

/* The inverse, into FP64. */
template <typename R>
__global__ void acm_get_planes_kernel(const acm_gpu_grid g, const R *__restrict__ planes,
                                      int comp, double *dst, uint32_t k0, uint32_t count)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    for (int c = 0; c < comp; ++c)
        dst[(size_t)t * comp + c] = (double)planes[(size_t)c * g.ncells + k0 + t];
}

template <typename R> __global__ void acm_fill_kernel(R *p, uint64_t n, double v)
{
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (R)v;
}

/* Diagnostics of the physical state, two block sums (see kernels.cuh). */
template <typename T>
__global__ void acm_diagnostics_kernel(const acm_step_args a, const T *__restrict__ cur,
                                       acm_gpu_sums *partials)
{
    typedef acm_real<T> R;
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    acm_gpu_sums s1 = {0.0, 0.0, 0.0, 0.0}, s2 = {0.0, 0.0, 0.0, 0.0};
    const bool live = k >= a.live_lo && k < a.live_hi; /* a slab's ghost planes: not its own */
    if (live) {
        int32_t x, y, z;
        acm_coords(a.g, k, x, y, z);
        R f[27], rho, j[3], F[3];
        acm_pull_state<T>(a.g, cur, x, y, z, f);
        acm_moments(f, rho, j);
        acm_cell_force(a, k, acm_ib_word(a, k), F);
        double u[3], u2 = 0.0, r = (double)rho;
        for (int d = 0; d < 3; ++d) {
            u[d] = ((double)j[d] + 0.5 * (double)F[d]) / r;
            u2 += u[d] * u[d];
        }
        s1.max_u2 = isnan(u2) ? 0.0 : u2;
        s1.sum_rho = r;
        s1.sum_j = r * sqrt(u2);
        s1.sum_pi = (double)acm_pi_norm(f);
        s2.max_u2 = r * u[0];
        s2.sum_rho = r * u[1];
        s2.sum_j = r * u[2];
        s2.sum_pi = 0.5 * r * u2;
    }
    acm_block_sums<true>(s1, partials + blockIdx.x);
    acm_block_sums<false>(s2, partials + gridDim.x + blockIdx.x);
    /* the ACM rules' inputs of the first step, per plane (acm_plane_add) */
    acm_plane_add<true>(a.planes, a.g, blockIdx.x * blockDim.x, a.g.ncells, k, live, s1.max_u2,
                        s1.sum_rho, s1.sum_j, s1.sum_pi);
}

static const unsigned acm_aux_block = 256;

cudaError_t acm_launch_field(const acm_step_args &a, const void *cur, acm_gpu_elem elem,
                             int field, void *dst, int dst_elem, uint32_t k0, uint32_t count,
                             cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_field_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            a, (const T *)cur, field, dst, dst_elem, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_sample_velocity(const acm_step_args &a, const acm_ib_grid &g,
                                       const void *cur, acm_gpu_elem elem, const double *points,
                                       double *out, uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_sample_velocity_kernel<T>
            <<<acm_blocks((uint64_t)count * ACM_SAMPLE_LANES, acm_aux_block), acm_aux_block, 0,
               s>>>(a, g, (const T *)cur, points, out, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_equilibrium(const acm_gpu_grid &g, void *phys, acm_gpu_elem elem,
                                   const void *rho, const void *u, int src_elem, double rho0,
                                   const double u0[3], uint32_t k0, uint32_t count,
                                   cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_equilibrium_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)phys, rho, u, src_elem, rho0, u0[0], u0[1], u0[2], k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_set_populations(const acm_gpu_grid &g, void *phys, acm_gpu_elem elem,
                                       const void *f, int src_elem, uint32_t k0,
                                       uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_set_populations_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)phys, f, src_elem, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_get_stored(const acm_gpu_grid &g, const void *arr, acm_gpu_elem elem,
                                  bool swap, double *dst, uint32_t k0, uint32_t count,
                                  cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_get_stored_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (const T *)arr, swap, dst, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_unstream(const acm_gpu_grid &gm, void *mom, const acm_gpu_grid &gp,
                                    const void *phys, acm_gpu_elem elem, unsigned block,
                                    cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_unstream_kernel<T><<<acm_blocks(gm.ncells, block), block, 0, s>>>(
            gm, (T *)mom, gp, (const acm_real<T> *)phys);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_get(const acm_gpu_grid &g, const void *mom, acm_gpu_elem elem,
                               double *dst, uint32_t k0, uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_get_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (const T *)mom, dst, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_fill(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem,
                                const acm_mom_uniform &u, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_fill_kernel<T><<<acm_blocks(g.ncells, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)mom, u);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_set(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem,
                               const double *src, uint32_t k0, uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_set_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)mom, src, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_values(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem, double *buf,
                                  bool to_mom, uint32_t k0, uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_values_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)mom, buf, to_mom, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_move_stored(const acm_gpu_grid &g, void *arr, acm_gpu_elem elem, bool swap,
                                   void *canon, bool to_arr, int dz, uint32_t k0, uint32_t count,
                                   cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_move_stored_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)arr, (T *)canon, swap, to_arr, dz, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_copy_stored(const acm_gpu_grid &gd, void *dst, uint32_t d0,
                                   const acm_gpu_grid &gs, const void *src, uint32_t s0,
                                   uint32_t count, int dz, acm_gpu_elem elem, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_copy_stored_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            gd, (T *)dst, d0, gs, (const T *)src, s0, count, dz);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_set_stored(const acm_gpu_grid &g, void *arr, acm_gpu_elem elem, bool swap,
                                  const double *src, uint32_t k0, uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_set_stored_kernel<T><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (T *)arr, swap, src, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_set_planes(const acm_gpu_grid &g, void *planes, acm_gpu_elem elem,
                                  int comp, const void *src, int src_elem, uint32_t k0,
                                  uint32_t count, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_set_planes_kernel<R><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (R *)planes, comp, src, src_elem, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_get_planes(const acm_gpu_grid &g, const void *planes, acm_gpu_elem elem,
                                  int comp, double *dst, uint32_t k0, uint32_t count,
                                  cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_get_planes_kernel<R><<<acm_blocks(count, acm_aux_block), acm_aux_block, 0, s>>>(
            g, (const R *)planes, comp, dst, k0, count);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_fill(void *p, acm_gpu_elem elem, uint64_t n, double v, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        acm_fill_kernel<R><<<acm_blocks(n, acm_aux_block), acm_aux_block, 0, s>>>((R *)p, n, v);
    });
    return cudaGetLastError();
}

__global__ void acm_zero_words_kernel(uint32_t *p, size_t n)
{
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        p[k] = 0;
}

cudaError_t acm_launch_zero_words(uint32_t *p, size_t n, cudaStream_t s)
{
    if (n > 0) /* a grid of no blocks is an error */
        acm_zero_words_kernel<<<acm_blocks(n, acm_aux_block), acm_aux_block, 0, s>>>(p, n);
    return cudaGetLastError();
}

static_assert(sizeof(acm_inbox_segment) == 16, "a segment in two words of the slot");

/* The segment holding word w: the last whose first word is at most w. */
__device__ static uint32_t acm_inbox_find(const acm_inbox_segment *seg, uint32_t nseg, uint32_t w)
{
    uint32_t lo = 0, hi = nseg;
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (seg[mid].first <= w)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

__global__ void __launch_bounds__(512) acm_inbox_kernel(const uint64_t *__restrict__ ring,
                                                        size_t slot_words,
                                                        unsigned long long *turn,
                                                        unsigned long long *read)
{
    __shared__ acm_inbox_segment seg[ACM_INBOX_SEGMENTS];
    __shared__ uint64_t head;
    const unsigned long long t = *turn;
    const uint64_t *slot = ring + (t % ACM_INBOX_SLOTS) * slot_words;
    if (threadIdx.x == 0)
        head = __ldcv(slot); /* written by the host since the last launch: never cached */
    __syncthreads();
    const uint32_t nseg = min((uint32_t)head, (uint32_t)ACM_INBOX_SEGMENTS);
    const uint32_t words = (uint32_t)(head >> 32);
    const uint64_t *table = slot + 1 + words;
    for (uint32_t k = threadIdx.x; k < nseg; k += blockDim.x) {
        const uint64_t at = __ldcv(table + 2 * k), span = __ldcv(table + 2 * k + 1);
        seg[k].dst = (void *)at;
        seg[k].first = (uint32_t)span;
        seg[k].words = (uint32_t)(span >> 32);
    }
    __syncthreads();
#pragma unroll 4
    for (uint32_t w = threadIdx.x; w < words && nseg > 0; w += blockDim.x) {
        const uint64_t v = __ldcv(slot + 1 + w);
        const acm_inbox_segment &g = seg[acm_inbox_find(seg, nseg, w)];
        if (w - g.first < g.words)
            ((uint64_t *)g.dst)[w - g.first] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        *turn = t + 1;
        *(volatile unsigned long long *)read = t + 1; /* the slot may be written again */
    }
}

cudaError_t acm_launch_inbox(const uint64_t *ring, size_t slot_words, unsigned long long *turn,
                             unsigned long long *read, cudaStream_t s)
{
    if (ring == NULL || turn == NULL || read == NULL || slot_words == 0)
        return cudaErrorInvalidValue;
    acm_inbox_kernel<<<1, 512, 0, s>>>(ring, slot_words, turn, read);
    return cudaGetLastError();
}

cudaError_t acm_launch_diagnostics(const acm_step_args &a, const void *cur, acm_gpu_elem elem,
                                   acm_gpu_sums *partials, unsigned *n, cudaStream_t s)
{
    *n = acm_blocks(a.g.ncells, acm_aux_block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_diagnostics_kernel<T><<<*n, acm_aux_block, 0, s>>>(a, (const T *)cur, partials);
    });
    return cudaGetLastError();
}

const void *acm_fields_anchor(void) { return (const void *)acm_field_kernel<float>; }
