/*
 * libacmlbm -- the run-time storage type to the launchers of the kernel files
 * compiled once per storage type (kernels.cuh, ACM_TU_ELEM): lbm_fused.cu and
 * lbm_moments.cu.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

cudaError_t acm_launch_lbm(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                           cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    acm_with_elem(elem, [&](auto t) { e = acm_launch_lbm_elem<decltype(t)>(a, pull, block, s); });
    return e;
}

cudaError_t acm_launch_mom_step(const acm_step_args &a, acm_gpu_elem elem, cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    acm_with_elem(elem, [&](auto t) { e = acm_launch_mom_step_elem<decltype(t)>(a, s); });
    return e;
}
