/*
 * libacmlbm -- reduction of per-block partial sums into one acm_gpu_sums
 * (deterministic: a fixed order, no atomics). With the first field a maximum,
 * the result also gets the inverses the ACM rules use (acm_finish_sums). SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

template <bool FIRST_MAX>
__global__ void acm_sum_partials_kernel(const acm_gpu_sums *partials, unsigned n,
                                        acm_gpu_sums *out, double ncells)
{
    acm_gpu_sums v = {0.0, 0.0, 0.0, 0.0};
    for (unsigned b = threadIdx.x; b < n; b += blockDim.x) {
        const acm_gpu_sums &p = partials[b];
        v.max_u2 = FIRST_MAX ? fmax(v.max_u2, p.max_u2) : v.max_u2 + p.max_u2;
        v.sum_rho += p.sum_rho;
        v.sum_j += p.sum_j;
        v.sum_pi += p.sum_pi;
    }
    acm_block_sums<FIRST_MAX>(v, out);
    if (FIRST_MAX && threadIdx.x == 0)
        acm_finish_sums(*out, ncells);
}

cudaError_t acm_launch_sum_partials(const acm_gpu_sums *partials, unsigned n, acm_gpu_sums *out,
                                    bool first_max, double ncells, cudaStream_t s)
{
    if (first_max)
        acm_sum_partials_kernel<true><<<1, 1024, 0, s>>>(partials, n, out, ncells);
    else
        acm_sum_partials_kernel<false><<<1, 1024, 0, s>>>(partials, n, out, ncells);
    return cudaGetLastError();
}
