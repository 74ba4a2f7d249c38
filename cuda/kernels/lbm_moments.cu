/*
 * libacmlbm -- the fused step of moment storage (issue #30, lib/core/moments.h):
 * tiles of cells walk along z, rebuild the populations each cell streams
 * (acm_mom_axes, acm_mom_populations_a), sum the moments of those each cell pulls
 * (acm_mom_add_layer), collide in moment space (acm_mom_collide: what the
 * population collision of every model keeps at orders 0-2) and write the
 * result.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A cell's moments lie together (cu_state_layout: AoS, 40 bytes FP32, 32
 * bytes 16-bit, 80 FP64), so that a source costs a few vector loads where
 * CSoA planes cost one load a moment (measured on an H200: 10.9 GLUPS with
 * CSoA, docs/performance.md). A warp's loads still read 32 consecutive cells,
 * whole lines. Two arrays: the step reads one and writes the other, so the
 * safety net's redo pass (acm_launch_mom_redo) finds its input intact.
 */
#include "kernels.cuh"

#ifndef ACM_TU_ELEM
#  error "compiled once per storage type: -DACM_TU_ELEM=ACM_ELEM_HALF, _FLOAT or _DOUBLE"
#endif

/* The sums of cell (x, y, z) next to a non-periodic face (acm_mom_pull's
 * rules), the populations in closure `closure` (the kernel's model's, a
 * constant: the edge cells' path stays as short as one closure's). */
template <typename T>
__device__ __forceinline__ void acm_mom_gather_edge(const acm_gpu_grid &g, const T *src,
                                                    int32_t x, int32_t y, int32_t z, int closure,
                                                    typename acm_io<T>::R sums[ACM_MOMENTS])
{
    typename acm_io<T>::R f[27];
    acm_mom_pull<T>(g, src, x, y, z, closure, f);
    acm_mom_math<typename acm_io<T>::R>::sums(f, sums);
}

/* A cell's step once the sums of what it pulls are known: the collision in
 * moment space (acm_mom_collide), the store, the outputs and checks. A cell
 * of an adaptive model with the safety net whose moments the cheap bound
 * (acm_mom_surely_above) cannot clear is marked for the redo pass, which
 * applies the full limiter (acm_launch_mom_redo): the return value. *u2max
 * and the plane sums take the cell's part. */
template <typename T, int MODEL>
__device__ __forceinline__ bool acm_mom_finish(const acm_step_args &a, uint32_t k, bool at_face,
                                               uint32_t ib_word,
                                               const typename acm_io<T>::R sums[ACM_MOMENTS],
                                               typename acm_io<T>::R &u2max, double &rho_sum,
                                               double &j_sum, double &pi_sum)
{
    typedef typename acm_io<T>::R R;
    const bool acm = acm_is_adaptive(MODEL);
    const bool li2020 = MODEL == ACM_COLLISION_ACM_LI2020;
    R m[ACM_MOMENTS], F[3];
    acm_cell_force(a, k, ib_word, F);
    acm_collide_params p = acm_cell_params(a, acm, at_face);
    R tau_unused = 0;
    R *tau = acm_cell_tau(a, MODEL, k, tau_unused);
    typename acm_mom_math<R>::diag d;
    acm_mom_math<R>::collide(&p, MODEL, sums, F, tau, m, &d);
    const bool redo = acm && p.safety_net && !acm_mom_math<R>::sure(&p, m);
    acm_mom_store<T>(a.g, (T *)a.dst, k, m);
    acm_cell_outputs(a, k, d, true, li2020, u2max, rho_sum, j_sum, pi_sum);
    return redo;
}

/* ---- the tiled step (docs/performance.md, "Moment storage: every warp steps cells") ---
 * A block of 32 x y threads (acm_tile) steps a tile of as many cells, a warp
 * a row, and walks along z through `lz` planes. At each plane the block
 * builds the 27 populations that each position of the tile and of the ring
 * around it streams (34 x (y + 2) positions: a thread builds one whole, then
 * a third or the whole of one of the rest), from the position's moments
 * loaded one plane ahead (each value read about once from DRAM, the ring's
 * again by the next tile, the plane before and after a walk by the next
 * walk), with the 1-D factors shared by all 27 (acm_mom_axes,
 * acm_mom_populations_a: a slice of c_x at a time), into shared memory. Each
 * cell of the tile then adds the nine of each stencil layer it pulls
 * (acm_mom_add_layer) to the sums of the plane below, its own or the one
 * above. A plane's sums are complete one plane later: that plane's cells
 * collide (acm_mom_finish). Every warp steps cells, so no warp idles at the
 * barriers while the others collide. The populations of consecutive planes
 * go to two buffers in turn, so that one barrier a plane suffices: a warp
 * builds the next plane while others still read this one (with one buffer a
 * second barrier held every warp until all had read it). Cells next to a
 * non-periodic face take the face rules' gather instead. The block's warps
 * reduce their part of a plane's sums (acm_plane_warp, two buffers as well)
 * and thread 0 adds them to the plane's behind the next plane's barrier. A
 * launch steps the planes [zb, ze). */
template <typename R> struct acm_tile {
    static constexpr int y = sizeof(R) == 8 ? 4 : 8; /* rows of cells, a warp each */
    static constexpr int threads = 32 * y;
    static constexpr int px = 32 + 2, py = y + 2; /* the positions built: tile and ring */
    /* shared memory 2 x 27 px py sizeof(R) (two planes' populations), 88 kB
     * FP64, 73 kB else: dynamic, above the 48 kB of static shared memory. A thread
     * builds a position whole, then one of the `extra` positions past the
     * first `threads`: in thirds (a slice of c_x each, acm_mom_populations_a)
     * where one round of thirds covers them (FP32, 16-bit: 252 thirds, 256
     * threads), so that every warp takes its part of them; else whole (FP64:
     * 76 positions, 128 threads; in two rounds of thirds it ran 10 % slower) */
    static constexpr int extra = px * py - threads;
    static constexpr bool thirds = 3 * extra <= threads;
    static_assert(extra <= threads, "a thread builds at most two positions");
    /* 2 blocks a multiprocessor at least (FP32: at most 128 registers) */
    static constexpr int min_blocks = 2;
    static constexpr size_t smem = 2u * 27u * py * px * sizeof(R);
};

/* A tile's coordinate v along an axis of n cells: wrapped across a periodic
 * face, else clamped (what lies beyond a wall only feeds cells of the face
 * rules' gather), always a cell. */
__device__ __forceinline__ int32_t acm_tile_coord(int32_t v, int32_t n, bool periodic)
{
    if (v < 0)
        return periodic ? v + n : 0;
    if (v >= n)
        return periodic && v - n < n ? v - n : n - 1;
    return v;
}

template <typename T, int MODEL>
__global__ void __launch_bounds__(acm_tile<typename acm_io<T>::R>::threads,
                                  acm_tile<typename acm_io<T>::R>::min_blocks)
    acm_mom_tile_kernel(const acm_step_args a, int32_t zb, int32_t ze, int32_t lz)
{
    typedef typename acm_io<T>::R R;
    typedef acm_tile<R> tile;
    constexpr int PX = tile::px, PY = tile::py, TH = tile::threads;
    constexpr bool THIRDS = tile::thirds;
    const bool acm = acm_is_adaptive(MODEL);
    if (acm_gate_shut(a.gate)) /* an earlier step diverged: its state stays */
        return;
    const acm_gpu_grid &g = a.g;
    extern __shared__ __align__(16) unsigned char acm_mom_smem[];
    R(*const pops)[27][PY][PX] = reinterpret_cast<R(*)[27][PY][PX]>(acm_mom_smem);
    __shared__ acm_plane_fixed parts[2][tile::y]; /* the warps' part of a plane's sums,
                                                     plane z in parts[z & 1] */
    const int tx = (int)(threadIdx.x & 31u), ty = (int)(threadIdx.x >> 5);
    const int32_t x0 = (int32_t)blockIdx.x * 32, y0 = (int32_t)blockIdx.y * tile::y;
    const int32_t x = x0 + tx, y = y0 + ty; /* the cell this thread steps */
    const int32_t z0 = zb + (int32_t)blockIdx.z * lz, z1 = min(z0 + lz, ze);
    const bool mine = x < g.nx && y < g.ny;
    const bool xper = g.face[ACM_FACE_X_MIN].type == ACM_BOUNDARY_PERIODIC;
    const bool yper = g.face[ACM_FACE_Y_MIN].type == ACM_BOUNDARY_PERIODIC;
    const bool zper = g.face[ACM_FACE_Z_MIN].type == ACM_BOUNDARY_PERIODIC;
    const bool edge_xy = x < g.inner_lo[0] || x > g.inner_hi[0] || y < g.inner_lo[1] ||
                         y > g.inner_hi[1];
    const T *src = (const T *)a.src;
    /* what this thread builds: position pos[0] = threadIdx.x whole, then
     * position pos[1] = TH + threadIdx.x / 3, its third threadIdx.x % 3
     * (THIRDS), or TH + threadIdx.x whole; position i lies at (i % PX, i / PX)
     * of the tile's ring, cell (xs, ys) */
    const int t = (int)threadIdx.x, third = THIRDS ? t % 3 : 0;
    int pos[2];
    uint32_t col[2]; /* xs + nx ys */
    bool builds[2];
#pragma unroll
    for (int b = 0; b < 2; ++b) {
        pos[b] = b == 0 ? t : TH + (THIRDS ? t / 3 : t);
        builds[b] = b == 0 || (THIRDS ? t < 3 * tile::extra : t < tile::extra);
        const int32_t xs = acm_tile_coord(x0 - 1 + pos[b] % PX, g.nx, xper);
        const int32_t ys = acm_tile_coord(y0 - 1 + pos[b] / PX, g.ny, yper);
        col[b] = acm_lin(g, xs, ys, 0);
    }
    const uint32_t nxy = (uint32_t)g.nx * (uint32_t)g.ny;
    R acc[3][ACM_MOMENTS];
#pragma unroll
    for (int l = 0; l < 3; ++l)
#pragma unroll
        for (int n = 0; n < ACM_MOMENTS; ++n)
            acc[l][n] = 0;
    acm_mom_raw<T> next[2]; /* the positions' cells of plane p, loaded a plane ahead */
    {
        const uint32_t zc = (uint32_t)acm_tile_coord(z0 - 1, g.nz, zper) * nxy;
#pragma unroll
        for (int b = 0; b < 2; ++b)
            if (builds[b])
                next[b].fetch(src + (uint64_t)(col[b] + zc) * acm_mom_io<T>::slots);
    }
    for (int32_t p = z0 - 1; p <= z1; ++p) {
        R(*const pop)[PY][PX] = pops[p & 1];
        const uint32_t zn = (uint32_t)acm_tile_coord(p + 1, g.nz, zper) * nxy;
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            if (!builds[b])
                continue;
            R m[ACM_MOMENTS], d[3][3], e[3][3], h[3][3];
            next[b].open(m);
            if (p < z1)
                next[b].fetch(src + (uint64_t)(col[b] + zn) * acm_mom_io<T>::slots);
            acm_mom_math<R>::axes(m, acm_mom_closure(MODEL), d, e, h);
            const int i = pos[b];
            const bool sliced = b == 1 && THIRDS; /* a third of the position, else whole */
#pragma unroll
            for (int a = 0; a < 3; ++a) {
                const int sa = sliced ? third : a;
                if (sliced && a > 0)
                    break;
                R f[9];
                acm_mom_math<R>::populations_a(m, d, e, h, sa, f);
#pragma unroll
                for (int q = 0; q < 9; ++q)
                    pop[9 * sa + q][i / PX][i % PX] = f[q];
            }
        }
        /* the one barrier of a plane: its populations built, the other buffer read
         * by every warp (the last plane's, before its barrier), the last plane's
         * parts written */
        __syncthreads();
        if (acm && threadIdx.x == 0 && p - 2 >= z0) /* the plane stepped last time */
            acm_plane_fold<MODEL == ACM_COLLISION_ACM_LI2020>(a.planes, (uint32_t)(p - 2),
                                                               parts[p & 1], tile::y);
        if (mine) {
#pragma unroll
            for (int c = 0; c < 3; ++c) { /* c_z = c - 1: to plane p + c - 1 */
                R v[9];
#pragma unroll
                for (int ab = 0; ab < 9; ++ab) /* from position (tx + 1 - c_x, ty + 1 - c_y) */
                    v[ab] = pop[3 * ab + c][ty + 2 - ab % 3][tx + 2 - ab / 3];
                acm_mom_math<R>::add_layer(acc[c], c - 1, v);
            }
        }
        const int32_t z = p - 1; /* its sums are complete */
        if (z >= z0) {
            const uint32_t k = mine ? acm_lin(g, x, y, z) : 0u;
            double rho_sum = 0.0, j_sum = 0.0, pi_sum = 0.0;
            R u2max = 0;
            bool redo = false;
            if (mine) {
                const bool edge = edge_xy || z < g.inner_lo[2] || z > g.inner_hi[2];
                const uint32_t ib_word = acm_ib_word(a, k);
                if (edge) /* next to a wall, inlet or outlet: the face rules */
                    acm_mom_gather_edge<T>(g, src, x, y, z, acm_mom_closure(MODEL), acc[0]);
                redo = acm_mom_finish<T, MODEL>(a, k, edge && acm_rule_at(g, x, y, z), ib_word,
                                                acc[0], u2max, rho_sum, j_sum, pi_sum);
            }
            if (acm) {
                if (redo) /* the mask was cleared before the step */
                    atomicOr(a.redo + (k >> 5), 1u << (k & 31u));
                const acm_plane_fixed w = acm_plane_warp<MODEL == ACM_COLLISION_ACM_LI2020>(
                    mine, u2max, rho_sum, j_sum, pi_sum);
                if (tx == 0) /* folded behind the next plane's barrier */
                    parts[z & 1][ty] = w;
            }
        }
#pragma unroll
        for (int n = 0; n < ACM_MOMENTS; ++n) {
            acc[0][n] = acc[1][n];
            acc[1][n] = acc[2][n];
            acc[2][n] = 0;
        }
    }
    if (acm) {
        __syncthreads();
        if (threadIdx.x == 0 && z1 - 1 >= z0)
            acm_plane_fold<MODEL == ACM_COLLISION_ACM_LI2020>(a.planes, (uint32_t)(z1 - 1),
                                                               parts[(z1 - 1) & 1], tile::y);
    }
}

/* Planes a tile walks: enough walks for about 4096 blocks, at least 8
 * planes a walk (each walk loads two planes more than it steps) where that
 * still makes 1024 blocks, else at least 2 (a small grid: blocks, not
 * DRAM, are what it lacks; 32^3 made 48 blocks of 8 planes). */
static int32_t acm_tile_walk(int32_t nz, unsigned tiles_xy)
{
    const int32_t walks = (int32_t)((4096u + tiles_xy - 1u) / tiles_xy);
    const int32_t least = tiles_xy * (unsigned)((nz + 7) / 8) >= 1024u ? 8 : 2;
    const int32_t lz = (nz + walks - 1) / walks;
    return lz >= least ? lz : (nz < least ? nz : least);
}

/* The launcher of this compilation's storage type (elem_dispatch.cu picks
 * it): the planes a.first / nxy to a.end / nxy, whole planes only. */
template <typename T>
cudaError_t acm_launch_mom_step_elem(const acm_step_args &a, cudaStream_t s)
{
    typedef typename acm_io<T>::R R;
    const uint32_t nxy = (uint32_t)a.g.nx * (uint32_t)a.g.ny;
    if (a.first % nxy != 0 || a.end % nxy != 0 || a.end <= a.first || a.end > a.g.ncells)
        return cudaErrorInvalidValue;
    const int32_t zb = (int32_t)(a.first / nxy), ze = (int32_t)(a.end / nxy);
    const unsigned ty = (unsigned)acm_tile<R>::y;
    const unsigned gx = ((unsigned)a.g.nx + 31u) / 32u, gy = ((unsigned)a.g.ny + ty - 1u) / ty;
    const int32_t lz = acm_tile_walk(ze - zb, gx * gy);
    const dim3 grid(gx, gy, (unsigned)((ze - zb + lz - 1) / lz));
    cudaError_t e = cudaSuccess;
    acm_with_model(a.p.model, [&](auto m) {
        const auto kernel = acm_mom_tile_kernel<T, decltype(m)::value>;
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)acm_tile<R>::smem);
        if (e == cudaSuccess)
            kernel<<<grid, acm_tile<R>::threads, acm_tile<R>::smem, s>>>(a, zb, ze, lz);
    });
    return e != cudaSuccess ? e : cudaGetLastError();
}

template cudaError_t acm_launch_mom_step_elem<acm_tu_elem>(const acm_step_args &, cudaStream_t);

template <typename T> const void *acm_mom_anchor_elem(void)
{
    return (const void *)acm_mom_tile_kernel<T, ACM_COLLISION_BGK>;
}

template const void *acm_mom_anchor_elem<acm_tu_elem>(void);
