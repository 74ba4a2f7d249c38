/*
 * libacmlbm -- smoke particles on the device (docs/smoke.md): one thread per
 * slot moves a live particle by the shared rule of lib/smoke_math.h; the
 * host's emissions are scattered into their slots.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"
#include "smoke_math.h"

static const unsigned acm_smoke_block = 256;

__global__ void acm_smoke_advect_kernel(const acm_ib_grid g, const float *__restrict__ u,
                                        double *x, int64_t *age, const int64_t *life,
                                        uint8_t *died, uint64_t n)
{
    const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    int64_t a = age[k];
    if (a < 0) {
        died[k] = ACM_SMOKE_ALIVE;
        return;
    }
    double X[3] = {x[3 * k], x[3 * k + 1], x[3 * k + 2]};
    const int what = acm_smoke_step(&g, u, X, &a, life[k]);
    x[3 * k] = X[0];
    x[3 * k + 1] = X[1];
    x[3 * k + 2] = X[2];
    age[k] = what == ACM_SMOKE_ALIVE ? a : -1;
    died[k] = (uint8_t)what;
}

__global__ void acm_smoke_scatter_kernel(const uint32_t *slots, const double *xs,
                                         const int64_t *lives, uint64_t n, double *x,
                                         int64_t *age, int64_t *life)
{
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t k = slots[i];
    x[3 * (uint64_t)k] = xs[3 * i];
    x[3 * (uint64_t)k + 1] = xs[3 * i + 1];
    x[3 * (uint64_t)k + 2] = xs[3 * i + 2];
    age[k] = 0;
    life[k] = lives[i];
}

cudaError_t acm_launch_smoke_advect(const acm_ib_grid &g, const float *u, double *x,
                                    int64_t *age, const int64_t *life, uint8_t *died, uint64_t n,
                                    cudaStream_t s)
{
    acm_smoke_advect_kernel<<<acm_blocks(n, acm_smoke_block), acm_smoke_block, 0, s>>>(
        g, u, x, age, life, died, n);
    return cudaGetLastError();
}

cudaError_t acm_launch_smoke_scatter(const uint32_t *slots, const double *xs,
                                     const int64_t *lives, uint64_t n, double *x, int64_t *age,
                                     int64_t *life, cudaStream_t s)
{
    acm_smoke_scatter_kernel<<<acm_blocks(n, acm_smoke_block), acm_smoke_block, 0, s>>>(
        slots, xs, lives, n, x, age, life);
    return cudaGetLastError();
}
