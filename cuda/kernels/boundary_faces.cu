/*
 * libacmlbm -- the per-face domain-boundary kernels (paper Sec. 4.2.3): each
 * launch covers one face's layer of cells, so a thread checks nothing and the
 * populations to treat are known in advance. Rules: lib/core/boundary.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"

/* Cell coordinates of thread (p, q) on a face's layer, and of its inner
 * neighbour. */
struct acm_face_cell {
    int32_t c[3], inner[3];
};

__device__ __forceinline__ bool acm_face_thread(const acm_gpu_grid &g, int face,
                                                acm_face_cell &fc)
{
    const int axis = face / 2, hi = face & 1, a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
    const int32_t n[3] = {g.nx, g.ny, g.nz};
    const int32_t p = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x), q = (int32_t)blockIdx.y;
    if (p >= n[a1])
        return false;
    fc.c[axis] = hi ? n[axis] - 1 : 0;
    fc.inner[axis] = hi ? n[axis] - 2 : 1;
    fc.c[a1] = fc.inner[a1] = p;
    fc.c[a2] = fc.inner[a2] = q;
    return true;
}

/* Inlet/outlet layer: equilibrium cells from the inner neighbour's state,
 * after the collision; g.state is the array's state after it (the slots of
 * acm_post_slot). */
template <typename T>
__global__ void acm_layer_kernel(const acm_gpu_grid g, T *f, const acm_gate gate, int face,
                                 int32_t z0, int32_t z1)
{
    typedef typename acm_io<T>::R R;
    acm_face_cell fc;
    if (acm_gate_shut(gate) || !acm_face_thread(g, face, fc) || fc.c[2] < z0 || fc.c[2] >= z1)
        return;
    const int axis = face / 2, inward = (face & 1) ? -1 : 1;
    const acm_face_bc &bc = g.face[face];
    R fa[27], e[27], rho, j[3], u[3];
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        double term;
        const uint64_t at = acm_post_slot(g, g.state, fc.inner[0], fc.inner[1], fc.inner[2], i,
                                          &term);
        fa[i] = acm_io<T>::ld(f, at) - (R)term;
    }
    acm_moments(fa, rho, j);
    const int32_t n[3] = {g.nx, g.ny, g.nz};
    const double jd[3] = {(double)j[0], (double)j[1], (double)j[2]};
    double rho_eq, ue[3];
    acm_layer_target(&bc, g.face_values[face], acm_face_index(face, n, fc.c), (double)rho, jd,
                     &rho_eq, ue);
#pragma unroll
    for (int d = 0; d < 3; ++d)
        u[d] = (R)ue[d];
    acm_equilibrium_public<R>((R)rho_eq, u, e);
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        double term;
        const uint64_t at = acm_post_slot(g, g.state, fc.c[0], fc.c[1], fc.c[2], i, &term);
        acm_io<T>::st(f, at, e[acm_layer_slot(i, axis, inward)] + (R)term);
    }
}

/* Moment storage: the layer cell keeps the moments of the equilibrium, the
 * same in every slot the neighbours pull (lib/cpu/lbm_tmpl.h apply_layer
 * with mom_bits): rho and j of the inner cell's new populations summed in
 * FP64 in the CPU's order, the equilibrium in the arithmetic type. */
template <typename T>
__global__ void acm_mom_layer_kernel(const acm_gpu_grid g, T *mom, const acm_gate gate, int face)
{
    typedef typename acm_io<T>::R R;
    acm_face_cell fc;
    if (acm_gate_shut(gate) || !acm_face_thread(g, face, fc))
        return;
    const acm_face_bc &bc = g.face[face];
    R m[ACM_MOMENTS], e[27], u[3];
    acm_mom_load<T>(g, mom, acm_lin(g, fc.inner[0], fc.inner[1], fc.inner[2]), m);
    double dr = 0.0, j[3] = {0.0, 0.0, 0.0};
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const double v = (double)acm_mom_math<R>::population(m, g.closure, i);
        dr += v;
        j[0] += acm_cx(i) * v;
        j[1] += acm_cy(i) * v;
        j[2] += acm_cz(i) * v;
    }
    const double rho = 1.0 + dr;
    const int32_t n[3] = {g.nx, g.ny, g.nz};
    double rho_eq, ue[3];
    acm_layer_target(&bc, g.face_values[face], acm_face_index(face, n, fc.c), rho, j, &rho_eq,
                     ue);
#pragma unroll
    for (int d = 0; d < 3; ++d)
        u[d] = (R)ue[d];
    acm_equilibrium_public<R>((R)rho_eq, u, e);
    acm_mom_store_populations<T>(g, mom, acm_lin(g, fc.c[0], fc.c[1], fc.c[2]), e);
}

/* The cells of an absorbing layer (lib/core/boundary.h acm_absorber) inside
 * planes [z0, z1) of a slab placed at g.origin_z: a box, lo[] and its size. */
struct acm_absorber_box {
    int32_t lo[3], size[3];
};

static acm_absorber_box absorber_box(const acm_gpu_grid &g, int face, int32_t z0, int32_t z1)
{
    const int axis = face / 2;
    const int32_t whole[3] = {g.nx, g.ny, g.whole_nz};
    int32_t lo[3] = {0, 0, z0}, hi[3] = {g.nx, g.ny, z1}, slo, shi;
    acm_absorber_span(&g.absorber[face], face, whole[axis], &slo, &shi);
    const int32_t shift = axis == 2 ? g.origin_z : 0;
    lo[axis] = slo - shift > lo[axis] ? slo - shift : lo[axis];
    hi[axis] = shi - shift < hi[axis] ? shi - shift : hi[axis];
    acm_absorber_box b;
    for (int a = 0; a < 3; ++a) {
        b.lo[a] = lo[a];
        b.size[a] = hi[a] > lo[a] ? hi[a] - lo[a] : 0;
    }
    return b;
}

/* How the absorber kernel reaches a cell's post-collision populations: two
 * arrays (each at its own slot of the cell), in place (acm_post_slot: a slot
 * of the cell or of a neighbour), moment storage (decoded and encoded again). */
enum { ACM_ABSORB_TWO_ARRAYS, ACM_ABSORB_IN_PLACE, ACM_ABSORB_MOMENTS };

/* A cell of the absorber of `face` relaxed towards its equilibrium (the CPU's
 * apply_absorber). One thread a cell of the box, x fastest: whole warps on any
 * face. */
template <typename T, int ACCESS>
__global__ void acm_absorber_kernel(const acm_gpu_grid g, T *f, const acm_gate gate, int face,
                                    const acm_absorber_box box)
{
    typedef typename acm_io<T>::R R;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t sx = (uint32_t)box.size[0], sy = (uint32_t)box.size[1];
    if (acm_gate_shut(gate) || t >= (uint64_t)sx * sy * (uint32_t)box.size[2])
        return;
    const uint32_t t32 = (uint32_t)t, row = t32 / sx; /* the box has fewer than 2^32 cells */
    const int32_t c[3] = {box.lo[0] + (int32_t)(t32 - row * sx), box.lo[1] + (int32_t)(row % sy),
                          box.lo[2] + (int32_t)(row / sy)};
    const acm_absorber &a = g.absorber[face];
    const int axis = face / 2;
    const int32_t whole[3] = {g.nx, g.ny, g.whole_nz};
    const R sigma = (R)acm_absorber_rate(&a, face, c[axis] + (axis == 2 ? g.origin_z : 0),
                                         whole[axis]);
    R e[27], v[27];
    const R u[3] = {(R)a.u[0], (R)a.u[1], (R)a.u[2]};
    acm_equilibrium_public<R>((R)a.rho, u, e);
    const uint32_t k = acm_lin(g, c[0], c[1], c[2]);
    const uint64_t base = acm_idx(g, k, 0); /* two arrays: slot i at base + i alpha */
    if (ACCESS == ACM_ABSORB_MOMENTS) {
        R m[ACM_MOMENTS];
        acm_mom_load<T>(g, f, k, m);
#pragma unroll
        for (int i = 0; i < 27; ++i)
            v[i] = acm_mom_math<R>::population(m, g.closure, i);
    } else {
#pragma unroll
        for (int i = 0; i < 27; ++i) {
            double term = 0.0;
            const uint64_t at = ACCESS == ACM_ABSORB_TWO_ARRAYS
                                    ? base + (uint64_t)i * g.l.alpha
                                    : acm_post_slot(g, g.state, c[0], c[1], c[2], i, &term);
            v[i] = acm_io<T>::ld(f, at) - (R)term;
        }
    }
#pragma unroll
    for (int i = 0; i < 27; ++i)
        v[i] = v[i] + sigma * (e[i] - v[i]);
    if (ACCESS == ACM_ABSORB_MOMENTS) {
        acm_mom_store_populations<T>(g, f, k, v);
    } else {
#pragma unroll
        for (int i = 0; i < 27; ++i) {
            double term = 0.0;
            const uint64_t at = ACCESS == ACM_ABSORB_TWO_ARRAYS
                                    ? base + (uint64_t)i * g.l.alpha
                                    : acm_post_slot(g, g.state, c[0], c[1], c[2], i, &term);
            acm_io<T>::st(f, at, v[i] + (R)term);
        }
    }
}

/* Face fix-up after plain (wrapping) streaming: the populations that came
 * across this face are replaced by what the face rules pull (acm_pull's edge
 * path): bounce-back across a wall, inlet or outlet (with any other face
 * crossed), the mirrored population across slip faces alone. */
template <typename T>
__global__ void acm_wall_face_kernel(const acm_gpu_grid g, const T *post, T *tmp, int face)
{
    acm_face_cell fc;
    if (!acm_face_thread(g, face, fc))
        return;
    const int axis = face / 2, from = (face & 1) ? -1 : 1; /* c_axis of incoming populations */
    int32_t sx[3], sy[3], sz[3];
    int fx[3], fy[3], fz[3];
    acm_axis_sources(g, 0, fc.c[0], g.nx, 1, sx, fx);
    acm_axis_sources(g, 1, fc.c[1], g.ny, 1, sy, fy);
    acm_axis_sources(g, 2, fc.c[2], g.nz, 1, sz, fz);
    const uint32_t own = acm_lin(g, fc.c[0], fc.c[1], fc.c[2]);
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        if (acm_c(i, axis) != from)
            continue;
        const int a = acm_cx(i) + 1, b = acm_cy(i) + 1, c = acm_cz(i) + 1;
        const bool slip_only = fx[a] < 0 && fy[b] < 0 && fz[c] < 0;
        acm_io<T>::st(tmp, acm_idx(g, own, i),
                      slip_only ? acm_io<T>::ld(post, acm_idx(g, acm_lin(g, sx[a], sy[b], sz[c]),
                                                               acm_mirror(i, acm_slip_mask(
                                                                                 fx[a], fy[b], fz[c]))))
                                : acm_bounced(g, post, own, i, acm_opp(i), fx[a], fy[b], fz[c]));
    }
}

/* One thread per cell of the face's layer: blocks of 128 along the first
 * in-face axis, one grid row per cell of the second. */
static dim3 face_grid(const acm_gpu_grid &g, int face)
{
    const int axis = face / 2;
    const int32_t n[3] = {g.nx, g.ny, g.nz};
    return dim3(acm_blocks((uint64_t)n[(axis + 1) % 3], 128), (unsigned)n[(axis + 2) % 3], 1);
}

cudaError_t acm_launch_layer(const acm_gpu_grid &g, void *f, const acm_gate &gate,
                             acm_gpu_elem elem, int face, int32_t z0, int32_t z1, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_layer_kernel<T><<<face_grid(g, face), 128, 0, s>>>(g, (T *)f, gate, face, z0, z1);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_mom_layer(const acm_gpu_grid &g, void *m, const acm_gate &gate,
                                 acm_gpu_elem elem, int face, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_mom_layer_kernel<T><<<face_grid(g, face), 128, 0, s>>>(g, (T *)m, gate, face);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_absorber(const acm_gpu_grid &g, void *f, const acm_gate &gate,
                                acm_gpu_elem elem, int face, int32_t z0, int32_t z1,
                                cudaStream_t s)
{
    const acm_absorber_box box = absorber_box(g, face, z0, z1);
    if (box.size[0] == 0 || box.size[1] == 0 || box.size[2] == 0)
        return cudaSuccess;
    const unsigned grid =
        acm_blocks((uint64_t)box.size[0] * (uint64_t)box.size[1] * (uint64_t)box.size[2], 128);
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        if (g.state == ACM_STATE_MOMENTS)
            acm_absorber_kernel<T, ACM_ABSORB_MOMENTS><<<grid, 128, 0, s>>>(g, (T *)f, gate,
                                                                            face, box);
        else if (g.state == ACM_STATE_POST)
            acm_absorber_kernel<T, ACM_ABSORB_TWO_ARRAYS><<<grid, 128, 0, s>>>(g, (T *)f, gate,
                                                                               face, box);
        else
            acm_absorber_kernel<T, ACM_ABSORB_IN_PLACE><<<grid, 128, 0, s>>>(g, (T *)f, gate,
                                                                             face, box);
    });
    return cudaGetLastError();
}

cudaError_t acm_launch_wall_face(const acm_gpu_grid &g, const void *post, void *tmp,
                                 acm_gpu_elem elem, int face, cudaStream_t s)
{
    acm_with_elem(elem, [&](auto t) {
        typedef decltype(t) T;
        acm_wall_face_kernel<T><<<face_grid(g, face), 128, 0, s>>>(g, (const T *)post, (T *)tmp,
                                                                    face);
    });
    return cudaGetLastError();
}

const void *acm_faces_anchor(void) { return (const void *)acm_layer_kernel<float>; }
