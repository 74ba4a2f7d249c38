/*
 * libacmlbm -- the run-time storage type to the launchers of the kernel files
 * compiled once per storage type (kernels.cuh, ACM_TU_ELEM): lbm_fused.cu and
 * lbm_moments.cu.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

cudaError_t acm_launch_lbm(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                           cudaStream_t s, const cudaAccessPolicyWindow *win)
{
    cudaError_t e = cudaSuccess;
    acm_with_elem(elem,
                  [&](auto t) { e = acm_launch_lbm_elem<decltype(t)>(a, pull, block, s, win); });
    return e;
}

cudaError_t acm_launch_mom_step(const acm_step_args &a, acm_gpu_elem elem, cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    acm_with_elem(elem, [&](auto t) { e = acm_launch_mom_step_elem<decltype(t)>(a, s); });
    return e;
}

size_t acm_kernel_anchors(const void **out, size_t max)
{
    const void *all[] = {acm_lbm_anchor_elem<__half>(), acm_lbm_anchor_elem<float>(),
                         acm_lbm_anchor_elem<double>(), acm_mom_anchor_elem<__half>(),
                         acm_mom_anchor_elem<float>(),  acm_mom_anchor_elem<double>(),
                         acm_faces_anchor(),            acm_fields_anchor(),
                         acm_ib_anchor(),               acm_ib_sort_anchor(),
                         acm_split_anchor(),            acm_net_anchor(),
                         acm_sums_anchor(),             acm_smoke_anchor(),
                         acm_rigid_anchor()};
    size_t n = 0;
    for (; n < sizeof all / sizeof all[0] && n < max; ++n)
        out[n] = all[n];
    return n;
}
