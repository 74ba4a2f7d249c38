/*
 * libacmlbm -- a moving solid's samples re-sorted on the device (the twin of
 * lib/ib/solid.c sort_samples): each sample's Morton-block key at the solid's
 * pose (lib/core/morton.h acm_sample_key, the host's function), a stable
 * radix sort of (key, index) pairs (CUB; ties keep the current order, as on
 * the host), and every per-sample array that outlives the step (body-frame
 * offsets, positions, weights, summed forces, sampling indices) gathered
 * into the new order. No host round trip: issue #31. The solids of a batch
 * are sorted together, each below its entry's number in the keys: each
 * comes out in the order a sort of it alone gives.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cub/device/device_radix_sort.cuh>

#include "kernels.cuh"
#include "morton.h"
#include "rigid.h"

#define ACM_SORT_BLOCK 256u

void acm_sort_batch_add(acm_sort_batch *b, int32_t bit, uint64_t first, uint32_t count,
                        const acm_ib_pose &pose, const acm_ib_pose *from)
{
    const int k = b->n++;
    b->bit[k] = bit;
    b->first[k] = first;
    b->start[k + 1] = b->start[k] + count;
    b->from[k] = from;
    b->pose[k] = pose;
}

/* The entry of the batch's sample t (t < b.start[b.n]). */
__device__ __forceinline__ int acm_sort_entry(const acm_sort_batch &b, uint32_t t)
{
    int k = 0;
    while (k + 1 < b.n && t >= b.start[k + 1])
        ++k;
    return k;
}

/* Whether entry k is re-sorted. */
__device__ __forceinline__ bool acm_sort_wanted(const acm_sort_batch &b, int k,
                                                const uint32_t *flags)
{
    return flags == NULL || ((*flags >> b.bit[k]) & 1u) != 0u;
}

/* Each sample's key: its entry above bit `bits`, below it (an entry that is
 * re-sorted) its Morton-block key at the entry's pose; an entry left as it
 * is keeps its order (equal keys, a stable sort). */
__global__ void acm_ib_keys_kernel(const acm_ib_args ib, const acm_sort_batch b,
                                   const uint32_t *flags, int32_t block, int bits, uint64_t *keys,
                                   uint32_t *index)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= b.start[b.n])
        return;
    const int k = acm_sort_entry(b, t);
    uint64_t key = k == 0 ? 0u : (uint64_t)k << bits; /* bits < 64 when n > 1 */
    if (acm_sort_wanted(b, k, flags)) {
        const acm_ib_pose pose = b.from[k] != NULL ? *b.from[k] : b.pose[k];
        const double zero[3] = {0.0, 0.0, 0.0};
        double X[3], ub[3];
        acm_rigid_place(pose.x, pose.q, zero, zero, ib.r + 3 * (b.first[k] + (t - b.start[k])),
                        X, ub);
        key |= acm_sample_key(X, ib.ig.n, ib.ig.periodic, block);
    }
    keys[t] = key;
    index[t] = t;
}

/* What moves with a sample, gathered in the sorted order (scratch). */
template <typename R> struct acm_sort_stage {
    double *r, *X;
    uint64_t *origin;
    R *dv, *G;
};

/* Sample t of the sorted order, of an entry that is re-sorted, into the
 * stage (back: from the stage into its place). */
template <typename R, bool BACK>
__global__ void acm_ib_move_kernel(const acm_ib_args ib, const acm_sort_batch b,
                                   const uint32_t *flags, const uint32_t *index, uint64_t *origin,
                                   const acm_sort_stage<R> st)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= b.start[b.n])
        return;
    const int k = acm_sort_entry(b, t);
    if (!acm_sort_wanted(b, k, flags))
        return;
    const uint64_t l = b.first[k] + ((BACK ? t : index[t]) - b.start[k]); /* the sample's */
    double *r = (double *)ib.r + 3 * l, *X = ib.X + 3 * l;
    R *dv = (R *)ib.dv + l, *G = (R *)ib.Gsum + 3 * l;
    double *sr = st.r + 3 * (uint64_t)t, *sX = st.X + 3 * (uint64_t)t;
    R *sG = st.G + 3 * (uint64_t)t;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (BACK) {
            r[a] = sr[a];
            X[a] = sX[a];
            G[a] = sG[a];
        } else {
            sr[a] = r[a];
            sX[a] = X[a];
            sG[a] = G[a];
        }
    }
    if (BACK) {
        origin[l] = st.origin[t];
        *dv = st.dv[t];
    } else {
        st.origin[t] = origin[l];
        st.dv[t] = *dv;
    }
}

/* The scratch of a sort of `samples`: keys and indices twice (CUB's double
 * buffers), the stage (11 values of 8 bytes at most a sample), CUB's own. */
struct acm_sort_scratch {
    uint64_t *keys[2];
    uint32_t *index[2];
    char *stage, *cub;
    size_t cub_bytes;
};

static size_t align_up(size_t b) { return (b + 255u) & ~(size_t)255u; }

#define ACM_STAGE_WORDS 11

/* Bytes of the keys, the indices and the stage before CUB's part. */
static size_t fixed_bytes(uint32_t samples)
{
    return 2 * align_up((size_t)samples * sizeof(uint64_t)) +
           2 * align_up((size_t)samples * sizeof(uint32_t)) +
           align_up((size_t)samples * ACM_STAGE_WORDS * sizeof(double));
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
    c.stage = p;
    c.cub = (char *)scratch + fixed_bytes(samples);
    return cub_bytes(samples, &c.cub_bytes);
}

/* The stage of n samples in R. */
template <typename R> static acm_sort_stage<R> stage_of(char *p, uint32_t n)
{
    acm_sort_stage<R> st;
    st.r = (double *)p;
    st.X = st.r + 3 * (size_t)n;
    st.origin = (uint64_t *)(st.X + 3 * (size_t)n);
    st.dv = (R *)(st.origin + n);
    st.G = st.dv + n;
    return st;
}

cudaError_t acm_ib_resort_scratch_bytes(uint64_t samples, size_t *bytes)
{
    size_t cub = 0;
    const cudaError_t e = cub_bytes((uint32_t)samples, &cub);
    *bytes = fixed_bytes((uint32_t)samples) + align_up(cub);
    return e;
}

/* Bits that number a batch's entries. */
static int entry_bits(int n)
{
    int bits = 0;
    while (((n - 1) >> bits) != 0)
        ++bits;
    return bits;
}

cudaError_t acm_launch_ib_resort(const acm_ib_args &ib, acm_gpu_elem elem,
                                 const acm_sort_batch &b, const uint32_t *flags, int32_t block,
                                 int end_bit, uint64_t *origin, void *scratch, cudaStream_t s)
{
    const uint32_t n = b.start[b.n];
    if (b.n < 1 || b.n > ACM_IB_BATCH || end_bit + entry_bits(b.n) > 64)
        return cudaErrorInvalidValue;
    acm_sort_scratch c;
    cudaError_t e = carve(scratch, n, c);
    if (e != cudaSuccess)
        return e;
    const unsigned grid = acm_blocks(n, ACM_SORT_BLOCK);
    acm_ib_keys_kernel<<<grid, ACM_SORT_BLOCK, 0, s>>>(ib, b, flags, block, end_bit, c.keys[0],
                                                       c.index[0]);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    cub::DoubleBuffer<uint64_t> keys(c.keys[0], c.keys[1]);
    cub::DoubleBuffer<uint32_t> index(c.index[0], c.index[1]);
    e = cub::DeviceRadixSort::SortPairs(c.cub, c.cub_bytes, keys, index, (int)n, 0,
                                        end_bit + entry_bits(b.n), s);
    if (e != cudaSuccess)
        return e;
    const uint32_t *by = index.Current();
    acm_with_elem(elem, [&](auto t) {
        typedef acm_real<decltype(t)> R;
        const acm_sort_stage<R> st = stage_of<R>(c.stage, n);
        acm_ib_move_kernel<R, false><<<grid, ACM_SORT_BLOCK, 0, s>>>(ib, b, flags, by, origin, st);
        acm_ib_move_kernel<R, true><<<grid, ACM_SORT_BLOCK, 0, s>>>(ib, b, flags, by, origin, st);
    });
    return cudaGetLastError();
}

__global__ void acm_ib_resort_flag_kernel(cudaGraphConditionalHandle h, uint32_t mask,
                                          const uint32_t *flags)
{
    cudaGraphSetConditional(h, (*flags & mask) != 0u);
}

cudaError_t acm_launch_ib_resort_flag(cudaGraphConditionalHandle h, uint32_t mask,
                                      const uint32_t *flags, cudaStream_t s)
{
    acm_ib_resort_flag_kernel<<<1, 1, 0, s>>>(h, mask, flags);
    return cudaGetLastError();
}

const void *acm_ib_sort_anchor(void) { return (const void *)acm_ib_keys_kernel; }
