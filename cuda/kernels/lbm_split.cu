/*
 * libacmlbm -- the paper's kernel structure (its Alg. 2, Sec. 4.3): streaming,
 * macroscopic fields, the moments of the collision, and the collision outputs
 * split into two launches (populations 0-13 and 14-26) that share the moment
 * computation through global memory. The "shared-term simplification" of the
 * paper is, in this library, the factorised central-moment transform itself
 * (collide_tmpl.h): every output is assembled from the same 27 moments.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

/* tmp_i(x) = src_i(x - c_i), wrapping at every face: the wall kernels then fix
 * the populations that came across a wall. */
template <typename T>
__global__ void acm_stream_kernel(const acm_gpu_grid g, const T *__restrict__ src,
                                  T *__restrict__ tmp)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= g.ncells)
        return;
    int32_t x, y, z;
    acm_coords(g, k, x, y, z);
    const int32_t xs[3] = {x + 1 == g.nx ? 0 : x + 1, x, x == 0 ? g.nx - 1 : x - 1};
    const int32_t ys[3] = {y + 1 == g.ny ? 0 : y + 1, y, y == 0 ? g.ny - 1 : y - 1};
    const int32_t zs[3] = {z + 1 == g.nz ? 0 : z + 1, z, z == 0 ? g.nz - 1 : z - 1};
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        uint32_t ks = acm_lin(g, xs[acm_cx(i) + 1], ys[acm_cy(i) + 1], zs[acm_cz(i) + 1]);
        tmp[acm_idx(g, k, i)] = src[acm_idx(g, ks, i)];
    }
}

/* dst = the pull of src with the face rules (acm_pull; DIR = -1: its inverse). */
template <typename T, int DIR>
__global__ void acm_pull_kernel(const acm_gpu_grid g, const T *__restrict__ src,
                                T *__restrict__ dst)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= g.ncells)
        return;
    int32_t x, y, z;
    acm_coords(g, k, x, y, z);
    acm_real<T> f[27];
    acm_pull<T, DIR>(g, src, x, y, z, f);
#pragma unroll
    for (int i = 0; i < 27; ++i)
        acm_io<T>::st(dst, acm_idx(g, k, i), f[i]);
}

/* Macroscopic fields: planes (rho - 1, ux, uy, uz) of the arithmetic type. */
template <typename T, int MODEL>
__global__ void acm_macro_kernel(const acm_step_args a, const T *__restrict__ tmp,
                                 acm_real<T> *__restrict__ macro)
{
    typedef acm_real<T> R;
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    double u2max = 0.0, rho_sum = 0.0, j_sum = 0.0, pi_sum = 0.0;
    if (k < a.g.ncells) {
        R f[27], fa[27], F[3], drho, u[3];
        const uint32_t ib_word = acm_ib_word(a, k);
        acm_load_cell(a.g, tmp, k, f);
#pragma unroll
        for (int i = 0; i < 27; ++i)
            fa[acm_abc(i)] = f[i];
        acm_cell_force(a, k, ib_word, F);
        acm_math<R>::macro(fa, F, &drho, u);
        macro[k] = drho;
#pragma unroll
        for (int d = 0; d < 3; ++d)
            macro[(size_t)(d + 1) * a.g.ncells + k] = u[d];
        double u2 = (double)(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), rho = 1.0 + (double)drho;
        acm_check_divergence(a, k, rho, u2);
        u2max = isnan(u2) ? 0.0 : u2;
        rho_sum = rho;
        j_sum = rho * sqrt(u2);
        pi_sum = MODEL == ACM_COLLISION_ACM_LI2020 ? (double)acm_pi_norm(f) : 0.0;
    }
    if (acm_is_adaptive(MODEL)) /* the ACM rules' inputs of the next step, per plane */
        acm_plane_add<MODEL == ACM_COLLISION_ACM_LI2020>(a.planes, a.g, blockIdx.x * blockDim.x,
                                                         a.g.ncells, k, k < a.g.ncells, u2max,
                                                         rho_sum, j_sum, pi_sum);
}

/* Relaxed moments (collision stage 1) into mom, 27 CSoA components. */
template <typename T, int MODEL>
__global__ void acm_moments_kernel(const acm_step_args a, const T *__restrict__ tmp,
                                   acm_real<T> *__restrict__ mom)
{
    typedef acm_real<T> R;
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= a.g.ncells)
        return;
    R f[27], F[3], m[27], tau_unused = 0;
    const uint32_t ib_word = acm_ib_word(a, k);
    acm_load_cell(a.g, tmp, k, f);
    acm_cell_force(a, k, ib_word, F);
    acm_collide_params p = acm_cell_params(a, acm_is_adaptive(MODEL), acm_at_face(a.g, k));
    R *tau = acm_cell_tau(a, MODEL, k, tau_unused);
    typename acm_math<R>::diag d;
    acm_math<R>::stage1(&p, MODEL, f, F, tau, m, &d);
#pragma unroll
    for (int n = 0; n < 27; ++n)
        mom[acm_idx(a.g, k, n)] = m[n];
}

/* Collision outputs [FIRST, FIRST + COUNT) of cell k (stage 2) into a.dst;
 * true when one of them is below the safety net's floor (acm_below_floor). */
template <typename T, int MODEL, int FIRST, int COUNT>
__device__ __forceinline__ bool acm_outputs(const acm_step_args &a,
                                            const acm_real<T> *__restrict__ mom,
                                            const acm_real<T> *__restrict__ macro, uint32_t k)
{
    typedef acm_real<T> R;
    R m[27], u[3], out[27];
#pragma unroll
    for (int n = 0; n < 27; ++n)
        m[n] = __ldg(mom + acm_idx(a.g, k, n));
    const R drho = __ldg(macro + k);
#pragma unroll
    for (int d = 0; d < 3; ++d)
        u[d] = __ldg(macro + (size_t)(d + 1) * a.g.ncells + k);
    acm_math<R>::stage2(&a.p, MODEL, m, u, out);
    T *dst = (T *)a.dst;
#pragma unroll
    for (int i = FIRST; i < FIRST + COUNT; ++i)
        acm_io<T>::st(dst, acm_idx(a.g, k, i), out[i]);
    return acm_is_adaptive(MODEL) && a.p.safety_net &&
           acm_math<R>::below_floor(&a.p, (R)1 + drho, u, out, FIRST, COUNT);
}

/* Collision outputs [FIRST, FIRST + COUNT) (stage 2) into a.dst, with the
 * cells for the safety net marked in a.redo. */
template <typename T, int MODEL, int FIRST, int COUNT>
__global__ void acm_outputs_kernel(const acm_step_args a, const acm_real<T> *__restrict__ mom,
                                   const acm_real<T> *__restrict__ macro)
{
    if (acm_gate_shut(a.gate)) /* an earlier step diverged: its state stays */
        return;
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const bool redo = k < a.g.ncells && acm_outputs<T, MODEL, FIRST, COUNT>(a, mom, macro, k);
    if (acm_is_adaptive(MODEL)) /* the first half sets the word, the second adds to it */
        acm_mark_redo(a, k, redo, FIRST != 0);
}

cudaError_t acm_launch_stream(const acm_gpu_grid &g, const void *src, void *tmp,
                              acm_gpu_elem elem, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_stream_kernel<T><<<grid, block, 0, s>>>(g, (const T *)src, (T *)tmp);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_pull(const acm_gpu_grid &g, const void *src, void *dst, acm_gpu_elem elem,
                            int dir, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        if (dir > 0)
            acm_pull_kernel<T, 1><<<grid, block, 0, s>>>(g, (const T *)src, (T *)dst);
        else
            acm_pull_kernel<T, -1><<<grid, block, 0, s>>>(g, (const T *)src, (T *)dst);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_macro(const acm_step_args &a, const void *tmp, void *macro,
                             acm_gpu_elem elem, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(a.g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_with_model(a.p.model, [&](auto m) {
            acm_macro_kernel<T, decltype(m)::value>
                <<<grid, block, 0, s>>>(a, (const T *)tmp, (acm_real<T> *)macro);
        });
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_moments(const acm_step_args &a, const void *tmp, void *mom,
                               acm_gpu_elem elem, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(a.g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_with_model(a.p.model, [&](auto m) {
            acm_moments_kernel<T, decltype(m)::value>
                <<<grid, block, 0, s>>>(a, (const T *)tmp, (acm_real<T> *)mom);
        });
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_outputs(const acm_step_args &a, const void *mom, const void *macro,
                               acm_gpu_elem elem, int half, unsigned block, cudaStream_t s)
{
    const unsigned grid = acm_blocks(a.g.ncells, block);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        typedef acm_real<T> R;
        acm_with_model(a.p.model, [&](auto m) {
            constexpr int M = decltype(m)::value;
            if (half == 0)
                acm_outputs_kernel<T, M, 0, 14>
                    <<<grid, block, 0, s>>>(a, (const R *)mom, (const R *)macro);
            else
                acm_outputs_kernel<T, M, 14, 13>
                    <<<grid, block, 0, s>>>(a, (const R *)mom, (const R *)macro);
        });
    });
    return cudaGetLastError();
}

const void *acm_split_anchor(void) { return (const void *)acm_stream_kernel<float>; }
