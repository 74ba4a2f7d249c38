/*
 * libacmlbm -- the fused step of moment storage (issue #30, lib/core/moments.h):
 * one thread per cell gathers the moments of the 27 cells it pulls from,
 * rebuilds the incoming populations (acm_mom_population) and sums their
 * moments, collides in moment space (acm_mom_collide: what the population
 * collision of every model keeps at orders 0-2) and writes the result.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A cell's moments lie together (cu_state_layout: AoS, 40 bytes FP32, 32
 * bytes 16-bit, 80 FP64), so that a source costs a few vector loads where
 * CSoA planes cost one load a moment (measured on an H200: 10.9 GLUPS with
 * CSoA, docs/performance.md). A warp's loads still read 32 consecutive cells,
 * whole lines. Two arrays: the step reads one and writes the other, so the
 * safety net's redo pass (acm_launch_mom_redo) finds its input intact.
 */
#include "kernels.cuh"

#ifndef ACM_TU_ELEM
#  error "compiled once per storage type: -DACM_TU_ELEM=ACM_ELEM_HALF, _FLOAT or _DOUBLE"
#endif

/* Register budget: blocks of up to ACM_MOM_MAX_THREADS threads (the
 * population kernel's bound, which the layout's block size respects), at
 * least acm_mom_min_blocks of them per multiprocessor: 3 (80 registers; 8-16
 * bytes spill) in float arithmetic (FP16 and FP32 storage), whose gather
 * waits on loads and gains from more warps (2 gave 119 registers, no
 * spills); 1 for FP64 (lbm_fused.cu, docs/performance.md "Register spills"). */
#define ACM_MOM_MAX_THREADS 256
template <typename T> struct acm_mom_min_blocks {
    static constexpr int value = sizeof(T) == 8 ? 1 : 3;
};

/* The sums (acm_mom_add) of the populations a cell pulls, all its sources
 * inside or across periodic faces: each source's moments (a few vector
 * loads through the read-only cache: every cell's moments serve the 27
 * cells around it), the population of direction i they stand for, added as
 * it is built (no 27 live values). */
template <typename T>
__device__ __forceinline__ void acm_mom_gather_interior(const acm_step_args &a, uint32_t k,
                                                        const acm_sources &s,
                                                        typename acm_io<T>::R sums[ACM_MOMENTS])
{
    typedef typename acm_io<T>::R R;
    const T *src = (const T *)a.src;
#pragma unroll
    for (int n = 0; n < ACM_MOMENTS; ++n)
        sums[n] = 0;
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const uint32_t kn = (uint32_t)((int32_t)k + s.ox[acm_cx(i) + 1] + s.oy[acm_cy(i) + 1] +
                                       s.oz[acm_cz(i) + 1]);
        R m[ACM_MOMENTS];
        acm_mom_vec<T>::ld(src + (uint64_t)kn * acm_mom_io<T>::slots, m);
        acm_mom_math<R>::add(sums, i, acm_mom_math<R>::population(m, i));
    }
}

/* The sums of cell (x, y, z) next to a non-periodic face (acm_mom_pull's rules). */
template <typename T>
__device__ __forceinline__ void acm_mom_gather_edge(const acm_gpu_grid &g, const T *src,
                                                    int32_t x, int32_t y, int32_t z,
                                                    typename acm_io<T>::R sums[ACM_MOMENTS])
{
    typename acm_io<T>::R f[27];
    acm_mom_pull<T>(g, src, x, y, z, f);
    acm_mom_math<typename acm_io<T>::R>::sums(f, sums);
}

/* One cell's step: gather, collide in moment space (acm_mom_collide), store.
 * A cell of an adaptive model with the safety net whose moments the cheap
 * bound (acm_mom_surely_above) cannot clear is marked for the redo pass,
 * which applies the full limiter (acm_launch_mom_redo). */
template <typename T, int MODEL>
__global__ void __launch_bounds__(ACM_MOM_MAX_THREADS, acm_mom_min_blocks<T>::value)
    acm_mom_kernel(const acm_step_args a)
{
    typedef typename acm_io<T>::R R;
    const bool acm = acm_is_adaptive(MODEL);
    const bool li2020 = MODEL == ACM_COLLISION_ACM_LI2020;
    const uint32_t k = a.first + blockIdx.x * blockDim.x + threadIdx.x;
    double rho_sum = 0.0, j_sum = 0.0, pi_sum = 0.0; /* this cell's part of the plane's sums */
    R u2max = 0;
    bool redo = false;
    if (k < a.end) {
        R sums[ACM_MOMENTS], m[ACM_MOMENTS], F[3];
        const uint32_t ib_word = acm_ib_word(a, k); /* first: its latency hides behind the gather */
        int32_t x, y, z;
        acm_coords(a.g, k, x, y, z);
        const acm_sources s = acm_source_offsets<1>(a.g, x, y, z);
        if (s.edge) /* next to a wall, inlet or outlet: the face rules */
            acm_mom_gather_edge<T>(a.g, (const T *)a.src, x, y, z, sums);
        else
            acm_mom_gather_interior<T>(a, k, s, sums);
        acm_cell_force(a, k, ib_word, F);
        acm_collide_params p = a.p;
        if (acm)
            acm_params_from_sums(p, a.prev, s.edge);
        R tau_unused = 0;
        R *tau = li2020 ? (R *)a.tau + k : &tau_unused;
        typename acm_mom_math<R>::diag d;
        acm_mom_math<R>::collide(&p, MODEL, sums, F, tau, m, &d);
        redo = acm && p.safety_net && !acm_mom_math<R>::sure(&p, m);
        acm_mom_store<T>(a.g, (T *)a.dst, k, m);
        if (a.u_out != NULL) {
            a.u_out[3 * (size_t)k] = (float)d.u[0];
            a.u_out[3 * (size_t)k + 1] = (float)d.u[1];
            a.u_out[3 * (size_t)k + 2] = (float)d.u[2];
        }
        const R u2 = d.u[0] * d.u[0] + d.u[1] * d.u[1] + d.u[2] * d.u[2];
        acm_check_divergence(a, k, (double)d.rho, (double)u2);
        u2max = isnan(u2) ? (R)0 : u2;
        if (li2020) {
            rho_sum = (double)d.rho;
            j_sum = (double)(d.rho * sqrt(u2));
            pi_sum = (double)d.pi;
        }
    }
    if (acm) {
        acm_mark_redo(a, k, redo, false);
        acm_plane_add<li2020>(a.planes, a.g, k - threadIdx.x, a.end, k, k < a.end, u2max,
                              rho_sum, j_sum, pi_sum);
    }
}

/* The launcher of this compilation's storage type; elem_dispatch.cu picks it. */
template <typename T>
cudaError_t acm_launch_mom_step_elem(const acm_step_args &a, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(a.end - a.first, block);
    acm_with_model(a.p.model, [&](auto m) {
        acm_mom_kernel<T, decltype(m)::value><<<grid, block, 0, s>>>(a);
    });
    return cudaGetLastError();
}

template cudaError_t acm_launch_mom_step_elem<acm_tu_elem>(const acm_step_args &, unsigned,
                                                           cudaStream_t);
