/*
 * libacmlbm -- a moving solid's samples re-sorted on the device (the twin of
 * lib/ib/solid.c sort_samples): each sample's Morton-block key at the solid's
 * pose (lib/core/morton.h acm_sample_key, the host's function), a stable
 * radix sort of (key, index) pairs (CUB; ties keep the current order, as on
 * the host), and every per-sample array that outlives the step (body-frame
 * offsets, positions, weights, summed forces, sampling indices) gathered
 * into the new order. No host round trip: issue #31.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cub/device/device_radix_sort.cuh>

#include "kernels.cuh"
#include "morton.h"
#include "rigid.h"

#define ACM_SORT_BLOCK 256u

__global__ void acm_ib_keys_kernel(const acm_ib_args ib, uint64_t first, uint32_t count,
                                   const acm_ib_pose given, const acm_ib_pose *from, int32_t block,
                                   uint64_t *keys, uint32_t *index)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const acm_ib_pose pose = from != NULL ? *from : given;
    const double zero[3] = {0.0, 0.0, 0.0};
    double X[3], ub[3];
    acm_rigid_place(pose.x, pose.q, zero, zero, ib.r + 3 * (first + t), X, ub);
    keys[t] = acm_sample_key(X, ib.ig.n, ib.ig.periodic, block);
    index[t] = t;
}

/* dst[t] = src[index[t]], W values a sample. */
template <typename V, int W>
__global__ void acm_ib_permute_kernel(const V *src, const uint32_t *index, uint32_t count, V *dst)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const uint64_t from = (uint64_t)index[t] * W;
#pragma unroll
    for (int w = 0; w < W; ++w)
        dst[(uint64_t)t * W + w] = src[from + w];
}

/* Gather W values a sample of `base` (the solid's first) into tmp in the
 * sorted order, and back. */
template <typename V, int W>
static cudaError_t permute(V *base, const uint32_t *index, uint32_t count, void *tmp,
                           cudaStream_t s)
{
    acm_ib_permute_kernel<V, W><<<acm_blocks(count, ACM_SORT_BLOCK), ACM_SORT_BLOCK, 0, s>>>(
        base, index, count, (V *)tmp);
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e
                            : cudaMemcpyAsync(base, tmp, (size_t)count * W * sizeof(V),
                                              cudaMemcpyDeviceToDevice, s);
}

/* The scratch of a sort of `samples`: keys and indices twice (CUB's double
 * buffers), one array's gathered copy (3 doubles a sample), CUB's own. */
struct acm_sort_scratch {
    uint64_t *keys[2];
    uint32_t *index[2];
    void *tmp, *cub;
    size_t cub_bytes;
};

static size_t align_up(size_t b) { return (b + 255u) & ~(size_t)255u; }

/* Bytes of the keys, the indices and the gathered copy before CUB's part. */
static size_t fixed_bytes(uint32_t samples)
{
    return 2 * align_up((size_t)samples * sizeof(uint64_t)) +
           2 * align_up((size_t)samples * sizeof(uint32_t)) +
           align_up((size_t)samples * 3 * sizeof(double));
}

static cudaError_t cub_bytes(uint32_t samples, size_t *bytes)
{
    cub::DoubleBuffer<uint64_t> keys(NULL, NULL);
    cub::DoubleBuffer<uint32_t> index(NULL, NULL);
    *bytes = 0;
    return cub::DeviceRadixSort::SortPairs(NULL, *bytes, keys, index, (int)samples);
}

static cudaError_t carve(void *scratch, uint32_t samples, acm_sort_scratch &c)
{
    char *p = (char *)scratch;
    for (int b = 0; b < 2; ++b) {
        c.keys[b] = (uint64_t *)p;
        p += align_up((size_t)samples * sizeof(uint64_t));
    }
    for (int b = 0; b < 2; ++b) {
        c.index[b] = (uint32_t *)p;
        p += align_up((size_t)samples * sizeof(uint32_t));
    }
    c.tmp = p;
    c.cub = (char *)scratch + fixed_bytes(samples);
    return cub_bytes(samples, &c.cub_bytes);
}

cudaError_t acm_ib_resort_scratch_bytes(uint64_t samples, size_t *bytes)
{
    size_t cub = 0;
    const cudaError_t e = cub_bytes((uint32_t)samples, &cub);
    *bytes = fixed_bytes((uint32_t)samples) + align_up(cub);
    return e;
}

cudaError_t acm_launch_ib_resort(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t first,
                                 uint64_t count, const acm_ib_pose &pose, const acm_ib_pose *from,
                                 int32_t block, int end_bit, uint64_t *origin, void *scratch,
                                 cudaStream_t s)
{
    const uint32_t n = (uint32_t)count;
    acm_sort_scratch c;
    cudaError_t e = carve(scratch, n, c);
    if (e != cudaSuccess)
        return e;
    acm_ib_keys_kernel<<<acm_blocks(n, ACM_SORT_BLOCK), ACM_SORT_BLOCK, 0, s>>>(
        ib, first, n, pose, from, block, c.keys[0], c.index[0]);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    cub::DoubleBuffer<uint64_t> keys(c.keys[0], c.keys[1]);
    cub::DoubleBuffer<uint32_t> index(c.index[0], c.index[1]);
    e = cub::DeviceRadixSort::SortPairs(c.cub, c.cub_bytes, keys, index, (int)n, 0, end_bit, s);
    const uint32_t *by = index.Current();
    if (e == cudaSuccess)
        e = permute<double, 3>((double *)ib.r + 3 * first, by, n, c.tmp, s);
    if (e == cudaSuccess)
        e = permute<double, 3>(ib.X + 3 * first, by, n, c.tmp, s);
    if (e == cudaSuccess)
        e = permute<uint64_t, 1>(origin + first, by, n, c.tmp, s);
    if (e != cudaSuccess)
        return e;
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        e = permute<R, 1>((R *)ib.dv + first, by, n, c.tmp, s);
        if (e == cudaSuccess)
            e = permute<R, 3>((R *)ib.Gsum + 3 * first, by, n, c.tmp, s);
    });
    return e;
}

__global__ void acm_ib_resort_flags_kernel(const acm_resort_handles h, const uint32_t *flags)
{
    const int k = (int)threadIdx.x;
    if (k < h.n)
        cudaGraphSetConditional(h.handle[k], (*flags >> h.bit[k]) & 1u);
}

cudaError_t acm_launch_ib_resort_flags(const acm_resort_handles &h, const uint32_t *flags,
                                       cudaStream_t s)
{
    if (h.n <= 0 || h.n > ACM_RESORT_HANDLES)
        return cudaErrorInvalidValue;
    acm_ib_resort_flags_kernel<<<1, ACM_RESORT_HANDLES, 0, s>>>(h, flags);
    return cudaGetLastError();
}

const void *acm_ib_sort_anchor(void) { return (const void *)acm_ib_keys_kernel; }
