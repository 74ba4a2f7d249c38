/*
 * libacmlbm -- the ACM safety net's positivity fallback (spec 6.4 item 4) on
 * the GPU. The collision kernels only mark the cells whose result has a
 * negative population (acm_mark_redo: one bit per cell); this pass collides
 * those cells again with the fallback rates. Marks are rare, and keeping the
 * fallback out of the collision kernels keeps their register count down.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

/* One thread per word of 32 cells of [a.first, a.end). PULL: a.src holds the populations before
 * streaming (the fused kernel's source, unchanged until the next step; in
 * place the fused kernel left a marked cell's slots alone) and is pulled
 * again; else a.src holds them streamed (split and baseline). */
template <typename T, bool PULL>
__global__ void acm_redo_kernel(const acm_step_args a)
{
    acm_wait_for_prior();
    acm_let_dependents_start();
    const uint32_t w = a.first / 32u + blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= acm_redo_words(a.end) || acm_gate_shut(a.gate))
        return;
    const uint32_t word = a.redo[w];
    for (uint32_t bits = word; bits != 0; bits &= bits - 1)
        acm_redo_cell<T, PULL>(a, w * 32u + (uint32_t)(__ffs((int)bits) - 1));
    if (word != 0)
        atomicAdd(a.fallbacks, (unsigned long long)__popc(word));
}

cudaError_t acm_launch_redo(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                            cudaStream_t s)
{
    const unsigned grid = acm_blocks(acm_redo_words(a.end) - a.first / 32u, block);
    cudaError_t e = cudaSuccess;
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        e = acm_launch_dependent(pull ? acm_redo_kernel<T, true> : acm_redo_kernel<T, false>,
                                 grid, block, s, a);
    });
    return e;
}

/* Moment storage: the marked cells (the cheap bound could not clear them)
 * again from the moments of a.src (two arrays: intact), with the full
 * limiter (acm_mom_limit); the cells it scaled are the fallbacks, as the
 * CPU counts them. */
template <typename T>
__global__ void acm_mom_redo_kernel(const acm_step_args a)
{
    typedef acm_real<T> R;
    const uint32_t w = a.first / 32u + blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= acm_redo_words(a.end) || acm_gate_shut(a.gate))
        return;
    const uint32_t word = a.redo[w];
    unsigned limited = 0;
    for (uint32_t bits = word; bits != 0; bits &= bits - 1) {
        const uint32_t k = w * 32u + (uint32_t)(__ffs((int)bits) - 1);
        R f[27], F[3], s[ACM_MOMENTS], m[ACM_MOMENTS];
        int32_t x, y, z;
        acm_coords(a.g, k, x, y, z);
        /* the adaptive models' redo: their closure is the Hermite one */
        acm_mom_pull<T>(a.g, (const T *)a.src, x, y, z, ACM_CLOSURE_HERMITE, f);
        acm_mom_math<R>::sums(f, s);
        acm_cell_force(a, k, acm_ib_word(a, k), F);
        const acm_collide_params p =
            acm_cell_params(a, true, acm_rule_at(a.g, x, y, z));
        R tau_unused = 0;
        R *tau = acm_cell_tau(a, a.p.model, k, tau_unused);
        R tau_before = *tau;
        typename acm_mom_math<R>::diag d;
        acm_mom_math<R>::collide(&p, p.model, s, F, &tau_before, m, &d);
        limited += (unsigned)acm_mom_math<R>::limit(&p, m);
        acm_mom_store<T>(a.g, (T *)a.dst, k, m);
    }
    if (limited != 0)
        atomicAdd(a.fallbacks, (unsigned long long)limited);
}

cudaError_t acm_launch_mom_redo(const acm_step_args &a, acm_gpu_elem elem, unsigned block,
                                cudaStream_t s)
{
    const unsigned grid = acm_blocks(acm_redo_words(a.end) - a.first / 32u, block);
    acm_with_elem(elem, [&](auto t) {
        acm_mom_redo_kernel<decltype(t)><<<grid, block, 0, s>>>(a);
    });
    return cudaGetLastError();
}

const void *acm_net_anchor(void) { return (const void *)acm_redo_kernel<float, true>; }
