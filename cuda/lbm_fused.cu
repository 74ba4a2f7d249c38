/*
 * libacmlbm -- the fused pull-stream-collide kernel: one pass over memory per
 * step, walls folded into the pull (acm_pull), one thread per cell.
 * SPDX-License-Identifier: Apache-2.0
 *
 * With PULL = false the same kernel collides populations that another kernel
 * has already streamed (the paper's baseline structure).
 */
#include "kernels.cuh"

template <typename T, int MODEL, bool PULL>
__global__ void acm_lbm_kernel(const acm_step_args a)
{
    typedef typename acm_io<T>::R R;
    const bool acm = acm_is_adaptive(MODEL);
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    acm_gpu_sums sums = {0.0, 0.0, 0.0, 0.0};
    if (k < a.g.ncells) {
        const T *src = (const T *)a.src;
        R f[27], o[27], F[3];
        if (PULL) {
            int32_t x, y, z;
            acm_coords(a.g, k, x, y, z);
            acm_pull<T, 1>(a.g, src, x, y, z, f);
        } else {
#pragma unroll
            for (int i = 0; i < 27; ++i)
                f[i] = acm_io<T>::ld(src, acm_idx(a.g, k, i));
        }
        acm_cell_force(a, k, F);
        acm_collide_params p = a.p;
        if (acm)
            acm_params_from_sums(p, a.prev, (double)a.g.ncells);
        R tau_unused = 0;
        R *tau = MODEL == ACM_COLLISION_ACM_LI2020 ? (R *)a.tau + k : &tau_unused;
        typename acm_math<R>::diag d;
        acm_math<R>::collide(&p, MODEL, f, F, tau, o, &d);
        if (acm && d.fallback) {
            acm_math<R>::fallback(&p, f, F, o);
            atomicAdd(a.fallbacks, 1ull);
        }
        T *dst = (T *)a.dst;
#pragma unroll
        for (int i = 0; i < 27; ++i)
            acm_io<T>::st(dst, acm_idx(a.g, k, i), o[i]);
        double u2 = (double)(d.u[0] * d.u[0] + d.u[1] * d.u[1] + d.u[2] * d.u[2]);
        if (PULL)
            acm_check_divergence(a, k, u2);
        sums.max_u2 = isnan(u2) ? 0.0 : u2;
        sums.sum_rho = (double)d.rho;
        sums.sum_j = (double)d.rho * sqrt(u2);
        sums.sum_pi = (double)d.pi;
    }
    if (acm && PULL)
        acm_block_sums<true>(sums, a.partials + blockIdx.x);
}

cudaError_t acm_launch_lbm(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                           cudaStream_t s)
{
    const unsigned grid = acm_blocks(a.g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_with_model(a.p.model, [&](auto m) {
            if (pull)
                acm_lbm_kernel<T, decltype(m)::value, true><<<grid, block, 0, s>>>(a);
            else
                acm_lbm_kernel<T, decltype(m)::value, false><<<grid, block, 0, s>>>(a);
        });
    });
    return cudaGetLastError();
}
