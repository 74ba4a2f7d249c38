/*
 * libacmlbm -- smoke particles on the device (docs/smoke.md): the rules of
 * lib/core/smoke_math.h, shared with the host's path. One thread per slot moves a
 * live particle; the free slots are listed in slot order (a device select);
 * one thread per emission places a new particle; the density is scattered
 * with atomics. Counters stay on the device: a step needs no synchronisation.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "kernels.cuh"
#include "smoke_math.h"

static const unsigned acm_smoke_block = 256;

static __device__ void acm_count(unsigned long long *block_sum, uint64_t *global)
{
    __syncthreads();
    if (threadIdx.x == 0 && *block_sum != 0)
        atomicAdd((unsigned long long *)global, *block_sum);
}

__global__ void acm_smoke_advect_kernel(const acm_ib_grid g, const float *__restrict__ u,
                                        const acm_smoke_obstacle *obs, int32_t nobs, double *x,
                                        int32_t *age, const int32_t *life,
                                        acm_smoke_counts *counts, uint64_t n)
{
    __shared__ unsigned long long fate[4];
    if (threadIdx.x < 4)
        fate[threadIdx.x] = 0;
    __syncthreads();
    const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int32_t a = k < n ? age[k] : -1;
    if (a >= 0) {
        double X[3] = {x[3 * k], x[3 * k + 1], x[3 * k + 2]};
        const int what = acm_smoke_step(&g, u, obs, nobs, X, &a, life[k]);
        x[3 * k] = X[0];
        x[3 * k + 1] = X[1];
        x[3 * k + 2] = X[2];
        age[k] = what == ACM_SMOKE_ALIVE ? a : -1;
        if (what != ACM_SMOKE_ALIVE)
            atomicAdd(&fate[what], 1ull);
    }
    acm_count(&fate[ACM_SMOKE_LEFT], &counts->left);
    acm_count(&fate[ACM_SMOKE_EXPIRED], &counts->expired);
    acm_count(&fate[ACM_SMOKE_ABSORBED], &counts->absorbed);
}

/* x and q of a body's pose. */
__device__ __forceinline__ void acm_follow(double x[3], double q[4], const acm_body &b)
{
    for (int a = 0; a < 3; ++a)
        x[a] = b.x[a];
    for (int a = 0; a < 4; ++a)
        q[a] = b.q[a];
}

__global__ void acm_smoke_follow_kernel(const acm_free_body *bodies, uint32_t free_bits,
                                        unsigned char *plan, int32_t nobs,
                                        const acm_smoke_layout l)
{
    acm_smoke_obstacle *o = (acm_smoke_obstacle *)plan;
    for (int32_t t = (int32_t)threadIdx.x; t < nobs; t += (int32_t)blockDim.x)
        if ((free_bits >> o[t].body & 1u) != 0u)
            acm_follow(o[t].x, o[t].q, bodies[o[t].body].body);
    for (int k = 0; k < l.n; ++k) {
        const uint32_t *head = (const uint32_t *)(plan + l.off[k]); /* emissions, sources */
        acm_smoke_source *src = (acm_smoke_source *)(head + 2);
        for (uint32_t t = threadIdx.x; t < head[1]; t += blockDim.x)
            if (src[t].shape == ACM_SMOKE_SOLID && (free_bits >> src[t].body & 1u) != 0u)
                acm_follow(src[t].x, src[t].q, bodies[src[t].body].body);
    }
}

cudaError_t acm_launch_smoke_follow(const acm_free_body *bodies, uint32_t free_bits,
                                    unsigned char *plan, int32_t nobs,
                                    const acm_smoke_layout &l, cudaStream_t s)
{
    if (l.n < 0 || l.n > ACM_SMOKE_FOLLOW)
        return cudaErrorInvalidValue;
    acm_smoke_follow_kernel<<<1, 128, 0, s>>>(bodies, free_bits, plan, nobs, l);
    return cudaGetLastError();
}

struct acm_slot_is_free {
    const int32_t *age;
    __device__ bool operator()(uint32_t k) const { return age[k] < 0; }
};

__global__ void acm_smoke_emit_kernel(const acm_smoke_source *src, int32_t nsrc,
                                      uint32_t emissions, const uint32_t *plan, uint64_t seed,
                                      const uint32_t *free_list, const uint32_t *nfree, double *x,
                                      int32_t *age, int32_t *life, acm_smoke_counts *counts)
{
    __shared__ unsigned long long placed, dropped;
    if (threadIdx.x == 0)
        placed = dropped = 0;
    __syncthreads();
    if (plan != NULL) { /* a replayed step's */
        emissions = plan[0];
        nsrc = (int32_t)plan[1];
    }
    const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < emissions) {
        if (e < *nfree) {
            const acm_smoke_source *s = src + acm_smoke_source_of(src, nsrc, e);
            const uint32_t k = free_list[e];
            double X[3];
            acm_smoke_source_point(s, seed, e - s->first, X);
            x[3 * (uint64_t)k] = X[0];
            x[3 * (uint64_t)k + 1] = X[1];
            x[3 * (uint64_t)k + 2] = X[2];
            age[k] = 0;
            life[k] = s->lifetime;
            atomicAdd(&placed, 1ull);
        } else {
            atomicAdd(&dropped, 1ull);
        }
    }
    acm_count(&placed, &counts->emitted);
    acm_count(&dropped, &counts->dropped);
}

__global__ void acm_smoke_density_kernel(const acm_ib_grid g, int3 m, int32_t sub,
                                         const double *__restrict__ x,
                                         const int32_t *__restrict__ age, uint64_t n, float *dst)
{
    const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n || age[k] < 0)
        return;
    const double X[3] = {x[3 * k], x[3 * k + 1], x[3 * k + 2]};
    const int32_t mm[3] = {m.x, m.y, m.z};
    size_t voxel[8];
    float w[8];
    acm_smoke_cic(&g, mm, sub, X, voxel, w);
    for (int q = 0; q < 8; ++q)
        atomicAdd(dst + voxel[q], w[q]);
}

cudaError_t acm_launch_smoke_advect(const acm_ib_grid &g, const float *u,
                                    const acm_smoke_obstacle *obs, int32_t nobs, double *x,
                                    int32_t *age, const int32_t *life, acm_smoke_counts *counts,
                                    uint64_t n, cudaStream_t s)
{
    acm_smoke_advect_kernel<<<acm_blocks(n, acm_smoke_block), acm_smoke_block, 0, s>>>(
        g, u, obs, nobs, x, age, life, counts, n);
    return cudaGetLastError();
}

cudaError_t acm_launch_smoke_free_slots(void *temp, size_t *temp_bytes, const int32_t *age,
                                        uint32_t *free_list, uint32_t *nfree, uint64_t n,
                                        cudaStream_t s)
{
    return cub::DeviceSelect::If(temp, *temp_bytes, thrust::counting_iterator<uint32_t>(0),
                                 free_list, nfree, (int64_t)n, acm_slot_is_free{age}, s);
}

cudaError_t acm_launch_smoke_emit(const acm_smoke_source *src, int32_t nsrc, uint32_t emissions,
                                  const uint32_t *plan, uint64_t seed, const uint32_t *free_list,
                                  const uint32_t *nfree, double *x, int32_t *age, int32_t *life,
                                  acm_smoke_counts *counts, cudaStream_t s)
{
    if (emissions == 0)
        return cudaSuccess; /* a grid of no blocks is an error */
    acm_smoke_emit_kernel<<<acm_blocks(emissions, acm_smoke_block), acm_smoke_block, 0, s>>>(
        src, nsrc, emissions, plan, seed, free_list, nfree, x, age, life, counts);
    return cudaGetLastError();
}

cudaError_t acm_launch_smoke_density(const acm_ib_grid &g, const int32_t m[3], int32_t sub,
                                     const double *x, const int32_t *age, uint64_t n, float *dst,
                                     cudaStream_t s)
{
    acm_smoke_density_kernel<<<acm_blocks(n, acm_smoke_block), acm_smoke_block, 0, s>>>(
        g, make_int3(m[0], m[1], m[2]), sub, x, age, n, dst);
    return cudaGetLastError();
}

const void *acm_smoke_anchor(void) { return (const void *)acm_smoke_advect_kernel; }
