/*
 * libacmlbm -- reduction of per-block partial sums into one acm_gpu_sums, in
 * one launch: ACM_SUM_BLOCKS blocks each reduce a fixed slice of the partials
 * into a stage, and the block that finishes last reduces the stage. Slices
 * and orders are fixed, so the result does not depend on scheduling. With
 * the first field a maximum, the result also gets the inverses the ACM rules
 * use (acm_finish_sums). SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

#define ACM_SUM_BLOCKS 256u  /* first-level blocks at most */
#define ACM_SUM_THREADS 256u /* threads per block */

/* Block `block` of a reduction of n partials by `grid` blocks: its slice
 * into stage[block]; the block that finishes last reduces the stage into
 * *out and resets *done. */
template <bool FIRST_MAX>
__device__ void acm_fold_partials(const acm_gpu_sums *partials, unsigned n, unsigned block,
                                  unsigned grid, acm_gpu_sums *out, double ncells,
                                  acm_gpu_sums *stage, unsigned *done)
{
    __shared__ bool last;
    const unsigned chunk = (n + grid - 1) / grid;
    const unsigned lo = block * chunk, hi = min(n, lo + chunk);
    acm_gpu_sums v = {0.0, 0.0, 0.0, 0.0};
    for (unsigned b = lo + threadIdx.x; b < hi; b += blockDim.x) {
        const acm_gpu_sums &p = partials[b];
        acm_sums_add<FIRST_MAX>(v, p.max_u2, p.sum_rho, p.sum_j, p.sum_pi);
    }
    acm_block_sums<FIRST_MAX>(v, stage + block);
    if (threadIdx.x == 0) {
        __threadfence(); /* the stage entry is visible before the count */
        last = atomicAdd(done, 1u) == grid - 1;
    }
    __syncthreads();
    if (!last)
        return;
    acm_gpu_sums t = {0.0, 0.0, 0.0, 0.0};
    for (unsigned b = threadIdx.x; b < grid; b += blockDim.x) /* past L1: other blocks' */
        acm_sums_add<FIRST_MAX>(t, __ldcg(&stage[b].max_u2), __ldcg(&stage[b].sum_rho),
                                __ldcg(&stage[b].sum_j), __ldcg(&stage[b].sum_pi));
    acm_block_sums<FIRST_MAX>(t, out);
    if (threadIdx.x == 0) {
        if (FIRST_MAX)
            acm_finish_sums(*out, ncells);
        *done = 0; /* ready for the next launch */
    }
}

/* First-level blocks of a reduction of n partials. */
__host__ __device__ static unsigned fold_grid(unsigned n)
{
    const unsigned g = (n + ACM_SUM_THREADS - 1u) / ACM_SUM_THREADS;
    return g < ACM_SUM_BLOCKS ? (g > 0u ? g : 1u) : ACM_SUM_BLOCKS;
}

template <bool FIRST_MAX>
__global__ void __launch_bounds__(ACM_SUM_THREADS)
    acm_sum_partials_kernel(const acm_gpu_sums *partials, unsigned n, acm_gpu_sums *out,
                            double ncells, acm_gpu_sums *stage, unsigned *done)
{
    acm_fold_partials<FIRST_MAX>(partials, n, blockIdx.x, gridDim.x, out, ncells, stage, done);
}

/* Sets of partials folded in one launch (acm_launch_fold_sets): entry k's
 * partials from first[k] to first[k + 1], `sets` sets of equal length. */
struct acm_fold_sets {
    unsigned first[ACM_IB_BATCH + 1];
    int32_t slot[ACM_IB_BATCH];
    int sets;
};

/* blockIdx.y: entry k's set q (k sets + q), each folded as
 * acm_sum_partials_kernel folds it alone; blocks past its grid return. */
__global__ void __launch_bounds__(ACM_SUM_THREADS)
    acm_fold_sets_kernel(const acm_gpu_sums *partials, const acm_fold_sets f, acm_gpu_sums *out,
                         acm_gpu_sums *stage, unsigned *done)
{
    const int k = (int)blockIdx.y / f.sets, q = (int)blockIdx.y % f.sets;
    const unsigned n = (f.first[k + 1] - f.first[k]) / (unsigned)f.sets;
    const unsigned grid = fold_grid(n);
    if (blockIdx.x >= grid)
        return;
    acm_fold_partials<false>(partials + f.first[k] + (size_t)q * n, n, blockIdx.x, grid,
                             out + (size_t)f.sets * f.slot[k] + q, 1.0,
                             stage + (size_t)blockIdx.y * ACM_SUM_BLOCKS, done + blockIdx.y);
}

size_t acm_fold_sets_scratch_bytes(void)
{
    return (size_t)4 * ACM_IB_BATCH * (ACM_SUM_BLOCKS * sizeof(acm_gpu_sums) + sizeof(unsigned));
}

cudaError_t acm_launch_fold_sets(const acm_gpu_sums *partials, const unsigned *first,
                                 const int32_t *slot, int n, int sets, acm_gpu_sums *out,
                                 void *scratch, cudaStream_t s)
{
    if (n <= 0)
        return cudaSuccess;
    if (n > ACM_IB_BATCH || sets < 1 || n * sets > 4 * ACM_IB_BATCH)
        return cudaErrorInvalidValue;
    acm_fold_sets f;
    memset(&f, 0, sizeof f);
    unsigned most = 1;
    for (int k = 0; k < n; ++k) {
        f.first[k] = first[k];
        f.slot[k] = slot[k];
        most = max(most, fold_grid((first[k + 1] - first[k]) / (unsigned)sets));
    }
    f.first[n] = first[n];
    f.sets = sets;
    acm_gpu_sums *stage = (acm_gpu_sums *)scratch;
    unsigned *done = (unsigned *)(stage + (size_t)4 * ACM_IB_BATCH * ACM_SUM_BLOCKS);
    acm_fold_sets_kernel<<<dim3(most, (unsigned)(n * sets)), ACM_SUM_THREADS, 0, s>>>(
        partials, f, out, stage, done);
    return cudaGetLastError();
}

size_t acm_sum_scratch_bytes(void)
{
    return ACM_SUM_BLOCKS * sizeof(acm_gpu_sums) + sizeof(unsigned);
}

cudaError_t acm_launch_sum_partials(const acm_gpu_sums *partials, unsigned n, acm_gpu_sums *out,
                                    bool first_max, double ncells, void *scratch,
                                    cudaStream_t s)
{
    const unsigned grid = fold_grid(n);
    acm_gpu_sums *stage = (acm_gpu_sums *)scratch;
    unsigned *done = (unsigned *)(stage + ACM_SUM_BLOCKS);
    if (first_max)
        acm_sum_partials_kernel<true>
            <<<grid, ACM_SUM_THREADS, 0, s>>>(partials, n, out, ncells, stage, done);
    else
        acm_sum_partials_kernel<false>
            <<<grid, ACM_SUM_THREADS, 0, s>>>(partials, n, out, ncells, stage, done);
    return cudaGetLastError();
}

__global__ void __launch_bounds__(ACM_FOLD_THREADS)
    acm_plane_fold_kernel(const acm_plane_fixed *planes, int32_t lo, int32_t hi,
                          acm_gpu_sums *out, double ncells, const acm_gate gate)
{
    acm_wait_for_prior();
    acm_let_dependents_start();
    if (acm_gate_shut(gate)) /* an earlier step diverged: the sums of its state stay */
        return;
    const acm_gpu_sums t = acm_fold_planes<ACM_FOLD_THREADS>(planes, lo, hi, ncells);
    if (threadIdx.x == 0)
        *out = t;
}

cudaError_t acm_launch_plane_fold(const acm_plane_fixed *planes, int32_t lo, int32_t hi,
                                  acm_gpu_sums *out, double ncells, const acm_gate &gate,
                                  cudaStream_t s)
{
    return acm_launch_dependent(acm_plane_fold_kernel, dim3(1), dim3(ACM_FOLD_THREADS), s, planes,
                                lo, hi, out, ncells, gate);
}

__global__ void acm_step_count_kernel(unsigned long long *batch, unsigned long long value, int set,
                                      const unsigned long long *key, unsigned long long *out)
{
    acm_wait_for_prior();
    acm_let_dependents_start();
    if (!set) {
        acm_count_step(batch, key, out);
        return;
    }
    *batch = value;
    if (out != NULL)
        acm_post_key(key, out, value);
}

cudaError_t acm_launch_step_count(unsigned long long *batch, bool set, unsigned long long value,
                                  const unsigned long long *key, unsigned long long *out,
                                  cudaStream_t s)
{
    return acm_launch_dependent(acm_step_count_kernel, dim3(1), dim3(1), s, batch, value,
                                set ? 1 : 0, key, out);
}

/* Iteration k's inputs into the slots (acm_run_loop). */
__device__ void acm_run_inputs(const acm_run_loop &l, uint32_t k)
{
    const int words = (int)(sizeof(acm_ib_pose) / 8), n = l.n, b = l.steps;
    const uint32_t j = (uint32_t)b * k;
    if (l.poses != NULL) {
        const uint64_t *from = (const uint64_t *)l.poses;
        uint64_t *to = (uint64_t *)l.slots;
        for (int t = (int)threadIdx.x; t < (b + 1) * n * words; t += (int)blockDim.x) {
            const int slot = t / (n * words), i = t / words % n, w = t % words;
            if ((l.free_bits >> i & 1u) == 0u) /* the host's plan */
                to[t] = from[((size_t)(j + slot) * n + i) * words + w];
            else if (slot == 0 && k > 0) /* where the last iteration left the body */
                to[t] = to[((size_t)b * n + i) * words + w];
        }
    }
    if (l.flags != NULL)
        for (int t = (int)threadIdx.x; t < b; t += (int)blockDim.x)
            l.slot_flags[t] = l.flags[j + t];
    if (l.plans != NULL)
        for (uint64_t w = threadIdx.x; w < (uint64_t)b * l.stride; w += blockDim.x)
            l.slot_plans[w] = l.plans[j * l.stride + w];
}

__global__ void acm_run_loop_kernel(const acm_run_loop l, cudaGraphConditionalHandle h, int next)
{
    __shared__ uint32_t k;
    __shared__ bool more;
    if (threadIdx.x == 0) {
        k = next ? l.iter[0] + 1u : 0u;
        more = k < l.iter[1];
        if (next) {
            l.iter[0] = k;
            cudaGraphSetConditional(h, more ? 1u : 0u);
            if (!more && l.post != NULL)
                acm_post_key(l.key, l.post, __ldcg(l.batch));
        }
    }
    __syncthreads();
    if (more)
        acm_run_inputs(l, k);
}

static bool acm_run_loop_valid(const acm_run_loop &l)
{
    return l.iter != NULL && l.n >= 0 && l.steps > 0 && (l.poses == NULL || l.slots != NULL) &&
           (l.flags == NULL || l.slot_flags != NULL) && (l.plans == NULL || l.slot_plans != NULL);
}

cudaError_t acm_launch_run_shift(const acm_run_loop &l, cudaStream_t s)
{
    if (!acm_run_loop_valid(l))
        return cudaErrorInvalidValue;
    acm_run_loop_kernel<<<1, 256, 0, s>>>(l, cudaGraphConditionalHandle(), 0);
    return cudaGetLastError();
}

cudaError_t acm_launch_run_next(const acm_run_loop &l, cudaGraphConditionalHandle h,
                                cudaStream_t s)
{
    if (!acm_run_loop_valid(l))
        return cudaErrorInvalidValue;
    acm_run_loop_kernel<<<1, 256, 0, s>>>(l, h, 1);
    return cudaGetLastError();
}

__global__ void acm_key_post_kernel(const unsigned long long *key, unsigned long long *out,
                                    unsigned long long count)
{
    acm_post_key(key, out, count);
}

cudaError_t acm_launch_key_post(const unsigned long long *key, unsigned long long *out,
                                unsigned long long count, cudaStream_t s)
{
    acm_key_post_kernel<<<1, 1, 0, s>>>(key, out, count);
    return cudaGetLastError();
}

const void *acm_sums_anchor(void) { return (const void *)acm_plane_fold_kernel; }
