/*
 * libacmlbm -- what every CUDA file of the backend shares: storage types,
 * kernel arguments, pull streaming with the face rules, launch helpers.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The physics is not restated here: the collision comes from lib/core/collide.h,
 * the face rules from lib/core/boundary.h and the storage addresses from
 * lib/core/csoa_index.h, the same headers the CPU backend uses.
 */
#ifndef ACMLBM_CUDA_COMMON_CUH
#define ACMLBM_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h> /* memcpy (acm_plane_value on the host) */

#include <utility> /* std::forward */

#include "boundary.h"
#include "collide.h"
#include "csoa_index.h"
#include "moments.h" /* acm_mom_encode, acm_mom_population, acm_mom16_scale */
#include "reduce.h" /* acm__inv_umax, acm__inv_mean */

/* FP16 populations are stored as half(f - w) * 2^15, which keeps low-Mach
 * deviations in the normal range of half precision. */
#define ACM_HALF_SCALE 32768.0f

/* ---- storage types ------------------------------------------------------- */

/* Load/store of one stored population and the arithmetic type R. */
template <typename T> struct acm_io;

/* ld/st convert to and from f - w; ld_scaled/st_scaled move the stored value
 * times its scale `sigma` (the fused kernel collides FP16 populations as
 * stored: acm_collide's sigma). */
template <> struct acm_io<float> {
    typedef float R;
    static constexpr float sigma = 1.0f;
    static __device__ __forceinline__ R ld(const float *p, uint64_t i) { return __ldg(p + i); }
    static __device__ __forceinline__ void st(float *p, uint64_t i, R v) { p[i] = v; }
    static __device__ __forceinline__ R ld_scaled(const float *p) { return __ldg(p); }
    static __device__ __forceinline__ void st_scaled(float *p, R v) { *p = v; }
};

template <> struct acm_io<double> {
    typedef double R;
    static constexpr double sigma = 1.0;
    static __device__ __forceinline__ R ld(const double *p, uint64_t i) { return __ldg(p + i); }
    static __device__ __forceinline__ void st(double *p, uint64_t i, R v) { p[i] = v; }
    static __device__ __forceinline__ R ld_scaled(const double *p) { return __ldg(p); }
    static __device__ __forceinline__ void st_scaled(double *p, R v) { *p = v; }
};

template <> struct acm_io<__half> {
    typedef float R;
    static constexpr float sigma = ACM_HALF_SCALE;
    static __device__ __forceinline__ R ld(const __half *p, uint64_t i)
    {
        return __half2float(__ldg(p + i)) * (1.0f / ACM_HALF_SCALE);
    }
    static __device__ __forceinline__ void st(__half *p, uint64_t i, R v)
    {
        p[i] = __float2half_rn(v * ACM_HALF_SCALE);
    }
    static __device__ __forceinline__ R ld_scaled(const __half *p) { return __half2float(__ldg(p)); }
    static __device__ __forceinline__ void st_scaled(__half *p, R v) { *p = __float2half_rn(v); }
};

/* The collision template of collide.h for an arithmetic type, so kernels
 * templated on the storage type call the right instance. */
template <typename R> struct acm_math;

#define ACM__MATH(R, SFX)                                                                    \
    template <> struct acm_math<R> {                                                         \
        typedef acm_cell_diag_##SFX diag;                                                    \
        static __device__ __forceinline__ void collide(const acm_collide_params *p, int model, \
                                                       const R f[27], const R F[3], R sigma, \
                                                       R *tau, R o[27], diag *d)             \
        {                                                                                    \
            acm_collide_##SFX(p, model, f, F, sigma, tau, o, d);                             \
        }                                                                                    \
        static __device__ __forceinline__ void fallback(const acm_collide_params *p,         \
                                                        const R f[27], const R F[3], R o[27]) \
        {                                                                                    \
            acm_collide_fallback_##SFX(p, f, F, o);                                          \
        }                                                                                    \
        static __device__ __forceinline__ void stage1(const acm_collide_params *p, int model, \
                                                      const R f[27], const R F[3], R *tau,   \
                                                      R k[27], diag *d)                      \
        {                                                                                    \
            acm_collide_stage1_##SFX(p, model, f, F, (R)1, tau, k, d);                       \
        }                                                                                    \
        static __device__ __forceinline__ void stage2(const acm_collide_params *p, int model, \
                                                      R k[27], const R u[3], R o[27])        \
        {                                                                                    \
            acm_collide_stage2_##SFX(p, model, k, u, o);                                     \
        }                                                                                    \
        static __device__ __forceinline__ void macro(const R f[27], const R F[3], R *drho,   \
                                                     R u[3])                                 \
        {                                                                                    \
            acm_cell_macro_##SFX(f, F, drho, u);                                             \
        }                                                                                    \
        static __device__ __forceinline__ int below_floor(const acm_collide_params *p, R rho, \
                                                          const R u[3], const R o[27],       \
                                                          int first, int count)              \
        {                                                                                    \
            return acm_below_floor_##SFX(p, rho, u, (R)1, o, first, count);                  \
        }                                                                                    \
        static __device__ __forceinline__ void phi1d(R u, R d[3], R dp[3])                   \
        {                                                                                    \
            acm_phi1d_##SFX(u, d, dp);                                                       \
        }                                                                                    \
        static __device__ __forceinline__ void equilibrium(R drho, const R dx[3],            \
                                                           const R dy[3], const R dz[3],     \
                                                           R e[27])                          \
        {                                                                                    \
            acm_equilibrium_##SFX(drho, dx, dy, dz, e);                                      \
        }                                                                                    \
    };

ACM__MATH(float, f32)
ACM__MATH(double, f64)
#undef ACM__MATH

/* ---- grid and kernel arguments ---------------------------------------------- */

/* Division of 32-bit unsigned numbers by a constant divisor d with a
 * multiply and shifts (Granlund & Montgomery 1994, Fig. 4.1); exact for every
 * n. Set up on the host by acm_fastdiv_make. */
struct acm_fastdiv {
    uint32_t m, s1, s2;
};

static inline acm_fastdiv acm_fastdiv_make(uint32_t d)
{
    uint32_t l = 0;
    while (l < 32 && ((uint64_t)1 << l) < d)
        ++l;
    acm_fastdiv f;
    f.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - d)) / d + 1);
    f.s1 = l < 1 ? l : 1;
    f.s2 = l > 1 ? l - 1 : 0;
    return f;
}

__device__ __forceinline__ uint32_t acm_fastdiv_div(const acm_fastdiv &f, uint32_t n)
{
    const uint32_t t = __umulhi(f.m, n);
    return (t + ((n - t) >> f.s1)) >> f.s2;
}

/* The geometry every kernel needs (passed by value). */
struct acm_gpu_grid {
    int32_t nx, ny, nz;
    uint32_t ncells;
    acm_csoa l;
    acm_fastdiv div_nx, div_ny; /* for linear index -> coordinates */
    acm_face_bc face[ACM_FACE_COUNT];
    const double *face_values[ACM_FACE_COUNT]; /* per face cell, or NULL (acm_layer_target) */
    acm_absorber absorber[ACM_FACE_COUNT];     /* in front of each face (cells 0: none) */
    int32_t origin_z, whole_nz;                /* a slab's place in the whole domain's z */
    int32_t state;              /* what the population array holds (acm_array_state) */
    int32_t inner_lo[3], inner_hi[3]; /* per axis, the coordinates whose pull crosses no
                                         non-periodic face (acm_inner_bounds) */
    int32_t rule_lo[3], rule_hi[3];   /* per axis, those whose pull crosses no face that
                                         takes the face rule (acm_face_takes_rule) */
    int32_t closure; /* moment storage: how its cells' moments close (acm_mom_closure of
                        the model); else 0. Last: in the struct's former tail padding */
};

/* The inner coordinate range of every axis: 1 in from a non-periodic face. */
static inline void acm_inner_bounds(acm_gpu_grid &g)
{
    const int32_t n[3] = {g.nx, g.ny, g.nz};
    for (int a = 0; a < 3; ++a) {
        g.inner_lo[a] = g.face[2 * a].type == ACM_BOUNDARY_PERIODIC ? 0 : 1;
        g.inner_hi[a] = n[a] - 1 - (g.face[2 * a + 1].type == ACM_BOUNDARY_PERIODIC ? 0 : 1);
        g.rule_lo[a] = acm_face_takes_rule(g.face[2 * a].type) ? 1 : 0;
        g.rule_hi[a] = n[a] - 1 - (acm_face_takes_rule(g.face[2 * a + 1].type) ? 1 : 0);
    }
}

/* Domain-wide sums of one step, the inputs of the ACM rules of the next.
 * Block reductions combine the first four fields; acm_finish_sums derives
 * the inverses the collision uses once per step. */
struct acm_gpu_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
    double inv_umax, inv_mean_rho, inv_mean_j, inv_mean_pi;
};

__host__ __device__ inline void acm_finish_sums(acm_gpu_sums &s, double ncells)
{
    s.inv_umax = acm__inv_umax(s.max_u2); /* as the CPU computes it */
    s.inv_mean_rho = acm__inv_mean(s.sum_rho, ncells);
    s.inv_mean_j = acm__inv_mean(s.sum_j, ncells);
    s.inv_mean_pi = acm__inv_mean(s.sum_pi, ncells);
}

/* The divergence key (acm_check_divergence) and the step a kernel works for:
 * the gate of the kernels that write the state. Once a step of the batch
 * diverged, those of the later steps leave the state alone, so that the state
 * before the diverged step is still there when the host looks, however many
 * steps later (cuda/backend_step.cu, cu_check). NULL bad: always open. */
struct acm_gate {
    unsigned long long *bad;         /* min over (step << ACM_KEY_CELL_BITS | cell) */
    unsigned long long step_key;     /* this step's part of the key */
    const unsigned long long *batch; /* a step replayed from a CUDA graph: its index in the
                                        batch on the device (acm_launch_step_count), which
                                        then stands for step_key's */
};

/* Everything a collision kernel needs for one step. */
struct acm_step_args {
    acm_gpu_grid g;
    acm_collide_params p;        /* inv_umax and the means are taken from prev */
    const void *src;             /* stored populations after the previous collision */
    void *dst;                   /* stored populations after this collision */
    const void *src_plane[27];   /* src + i * alpha elements: population i of a cell is at
                                    src_plane[i] + acm_cell_base(cell) */
    void *dst_plane[27];         /* likewise for dst */
    const void *force;           /* 3 planes of ncells (arithmetic type), or NULL */
    double force0[3];            /* uniform body force */
    void *tau;                   /* ACM_LI2020 per-cell tau* (arithmetic type) */
    double u2_limit;             /* |u|^2 treated as divergence */
    const acm_gpu_sums *prev;    /* sums of the previous step (ACM modes) */
    acm_gpu_sums *partials;      /* one per block, summed by acm_sum_partials (diagnostics) */
    struct acm_plane_fixed *planes; /* the ACM rules' sums of each plane (acm_plane_add) */
    acm_gpu_sums *fold_out;      /* or NULL: the collision launch's last block folds the
                                    planes [fold_lo, fold_hi) of fold_cells cells into it
                                    and zeroes them (acm_fold_last) */
    unsigned *fold_done;         /* its count of the blocks done, 0 between launches */
    uint32_t *fold_redo;         /* or NULL (acm_launch_redo redoes them): the cells the
                                    safety net marked, [0] their count and [1 ..
                                    ACM_FOLD_REDO_CELLS] the first of them, redone by the
                                    last block (acm_redo_listed); count 0 between launches */
    unsigned long long *fold_count; /* or NULL: the last block counts the step in the
                                    batch, as acm_launch_step_count does (acm_count_step) */
    unsigned long long *fold_post; /* with fold_count: and posts the key there, or NULL */
    double fold_cells;
    int32_t fold_lo, fold_hi;
    uint32_t live_lo, live_hi;   /* cells checked for divergence: a slab's ghost planes
                                    (lib/multi/decomp.h) are left out */
    uint32_t *redo;              /* bit k % 32 of word k / 32 set for a cell the safety
                                    net must redo (acm_mark_redo, acm_launch_redo) */
    unsigned long long *fallbacks; /* safety-net fallback counter */
    acm_gate gate;               /* the divergence key and this step's part of it */
    const uint32_t *ib_mask;     /* immersed boundary: a bit per cell holding IB force, or NULL */
    const void *ib_force;        /* its force planes (3 of ncells, arithmetic type) */
    float *u_out;                /* or NULL: the velocity (j + F/2)/rho of the state the step
                                    starts from, 3 per cell (smoke particles, docs/smoke.md) */
    uint32_t first, end;         /* the cells [first, end) a collision launch steps: all of
                                    them, or one part of a slab's split step (first a
                                    multiple of 32: the parts share no word of redo) */
};

/* Linear cell index -> coordinates. */
__device__ __forceinline__ void acm_coords(const acm_gpu_grid &g, uint32_t k, int32_t &x,
                                           int32_t &y, int32_t &z)
{
    uint32_t t = acm_fastdiv_div(g.div_nx, k);
    x = (int32_t)(k - t * (uint32_t)g.nx);
    z = (int32_t)acm_fastdiv_div(g.div_ny, t);
    y = (int32_t)(t - (uint32_t)z * (uint32_t)g.ny);
}

__device__ __forceinline__ uint32_t acm_lin(const acm_gpu_grid &g, int32_t x, int32_t y,
                                            int32_t z)
{
    return (uint32_t)x + (uint32_t)g.nx * ((uint32_t)y + (uint32_t)g.ny * (uint32_t)z);
}

__device__ __forceinline__ uint64_t acm_idx(const acm_gpu_grid &g, uint32_t k, int i)
{
    return acm_csoa_index(g.l, k, (uint32_t)i);
}

/* ---- pull streaming (boundary.h rules) ----------------------------------------- */

/* face[] of acm_axis_sources for a pull across a slip face. */
#define ACM_SLIP_CROSSED (-2)

/* Sources along one axis for c = -1, 0, +1 (slot c + 1): wrapped across
 * periodic faces; across another face the coordinate is left at x and face[]
 * records the face's index, or ACM_SLIP_CROSSED for a slip face (else -1). */
__device__ __forceinline__ void acm_axis_sources(const acm_gpu_grid &g, int axis, int32_t x,
                                                 int32_t n, int dir, int32_t s[3], int face[3])
{
#pragma unroll
    for (int c = -1; c <= 1; ++c) {
        int32_t v = x - dir * c;
        int fc = -1;
        if (v < 0 || v >= n) {
            int f = 2 * axis + (v < 0 ? 0 : 1);
            if (g.face[f].type == ACM_BOUNDARY_PERIODIC)
                v = v < 0 ? v + n : v - n;
            else {
                fc = g.face[f].type == ACM_BOUNDARY_SLIP ? ACM_SLIP_CROSSED : f;
                v = x;
            }
        }
        s[c + 1] = v;
        face[c + 1] = fc;
    }
}

/* The axes a pull crossed through slip faces (boundary.h acm_crossing.slip). */
__device__ __forceinline__ int acm_slip_mask(int f0, int f1, int f2)
{
    return (f0 == ACM_SLIP_CROSSED ? 1 : 0) | (f1 == ACM_SLIP_CROSSED ? 2 : 0) |
           (f2 == ACM_SLIP_CROSSED ? 4 : 0);
}

/* The crossing of the wall, inlet and outlet faces f0, f1, f2 (negative where
 * an axis crosses none of them). */
__device__ __forceinline__ acm_crossing acm_crossing_of(const acm_gpu_grid &g, int f0, int f1,
                                                        int f2)
{
    acm_crossing cr = acm_no_crossing();
    const int crossed[3] = {f0, f1, f2};
#pragma unroll
    for (int axis = 0; axis < 3; ++axis)
        if (crossed[axis] >= 0)
            acm_cross_face(&g.face[crossed[axis]], &cr);
    return cr;
}

/* Population i of cell `own` pulled across the non-periodic faces f0, f1,
 * f2: half-way bounce-back with the mean velocity of the crossed walls
 * (boundary.h) from slot `slot` of the cell (opp(i); i when the slots are
 * swapped, ACM_STATE_AA_SWAP). */
template <typename T>
__device__ __forceinline__ typename acm_io<T>::R acm_bounced(const acm_gpu_grid &g,
                                                            const T *__restrict__ src,
                                                            uint32_t own, int i, int slot, int f0,
                                                            int f1, int f2)
{
    typedef typename acm_io<T>::R R;
    const acm_crossing cr = acm_crossing_of(g, f0, f1, f2);
    return acm_io<T>::ld(src, acm_idx(g, own, slot)) + (R)acm_bounce_term(i, &cr);
}

/* Shifted populations of cell (x, y, z) after streaming: f_i = src_i(x - dir c_i),
 * with half-way bounce-back across walls (dir = -1: the inverse map, two
 * arrays only). Threads away from non-periodic faces (whole warps, mostly)
 * take the plain path. In place (STATE, acm_array_state) the physical state is
 * the cell's own slots (ACM_STATE_AA_OWN) or the pull with the slots swapped;
 * a template argument, so that the fused kernel carries only its own case
 * (acm_pull_state chooses at run time for the other kernels). */
template <typename T, int DIR, int STATE = ACM_STATE_POST>
__device__ __forceinline__ void acm_pull(const acm_gpu_grid &g, const T *__restrict__ src,
                                         int32_t x, int32_t y, int32_t z,
                                         typename acm_io<T>::R f[27])
{
    const uint32_t own = acm_lin(g, x, y, z);
    if (STATE == ACM_STATE_AA_OWN) {
#pragma unroll
        for (int i = 0; i < 27; ++i)
            f[i] = acm_io<T>::ld(src, acm_idx(g, own, i));
        return;
    }
    const bool swap = STATE == ACM_STATE_AA_SWAP;
    int32_t sx[3], sy[3], sz[3];
    int fx[3], fy[3], fz[3];
    acm_axis_sources(g, 0, x, g.nx, DIR, sx, fx);
    acm_axis_sources(g, 1, y, g.ny, DIR, sy, fy);
    acm_axis_sources(g, 2, z, g.nz, DIR, sz, fz);
    const bool edge = (fx[0] & fx[2] & fy[0] & fy[2] & fz[0] & fz[2]) != -1;
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const int a = acm_cx(i) + 1, b = acm_cy(i) + 1, c = acm_cz(i) + 1;
        const int pulled = swap ? acm_opp(i) : i, bounced = swap ? i : acm_opp(i);
        if (!edge)
            f[i] = acm_io<T>::ld(src, acm_idx(g, acm_lin(g, sx[a], sy[b], sz[c]), pulled));
        else if (fx[a] < 0 && fy[b] < 0 && fz[c] < 0) /* wrapped, or mirrored across slip faces */
            f[i] = acm_io<T>::ld(src, acm_idx(g, acm_lin(g, sx[a], sy[b], sz[c]),
                                              acm_mirror(pulled, acm_slip_mask(fx[a], fy[b], fz[c]))));
        else
            f[i] = acm_bounced(g, src, own, i, bounced, fx[a], fy[b], fz[c]);
    }
}

/* ---- moment storage (lib/core/moments.h) ------------------------------------------ */

/* The GPU's array state of moment storage, beside acm_array_state's (an
 * acm_gpu_grid's `state`): two arrays, the current one holding each cell's
 * ACM_MOMENTS post-collision moments, CSoA with beta = ACM_MOMENTS (the grid's
 * l). The physical state is the pull of the populations they stand for
 * (acm_mom_pull). */
#define ACM_STATE_MOMENTS 3

/* Moment storage's types: the arithmetic type R of storage type T, and the
 * slots a cell takes (its moments together, cu_state_layout): FP32 and FP64
 * keep m_n in slot n; 16-bit storage (acm_mom_quantize16 on the CPU) keeps
 * half(m_n * acm_mom16_scale(n)) for rho - 1 and the A and the velocity's
 * 16-bit code (acm_u16_encode), m_n in half-slot n. The scales are powers of
 * two, so the scaling itself is exact. */
template <typename T> struct acm_mom_io {
    typedef T R;
    static constexpr int slots = ACM_MOMENTS;
};

template <> struct acm_mom_io<__half> {
    typedef float R;
    static constexpr int slots = ACM_MOM16_SLOTS;
};

/* A whole cell's moments at p, its slots together (cu_state_layout): as
 * vectors of two (acm_pair), 8-byte aligned for FP32 (40-byte cells), 16 for
 * FP64. */
template <typename T> struct acm_pair;
template <> struct acm_pair<float> {
    typedef float2 type;
    static __device__ __forceinline__ type make(float a, float b) { return make_float2(a, b); }
};
template <> struct acm_pair<double> {
    typedef double2 type;
    static __device__ __forceinline__ type make(double a, double b) { return make_double2(a, b); }
};

/* A cell's moments as loaded (fetch) and as values (open): the tiled step
 * loads the next plane's cells while it works on this one's, so that the
 * loads' latency hides behind a plane's arithmetic. */
template <typename T> struct acm_mom_raw {
    typedef typename acm_pair<T>::type V;
    V v[ACM_MOMENTS / 2];
    __device__ __forceinline__ void fetch(const T *p)
    {
#pragma unroll
        for (int i = 0; i < ACM_MOMENTS / 2; ++i)
            v[i] = __ldg((const V *)p + i);
    }
    __device__ __forceinline__ void open(T m[ACM_MOMENTS]) const
    {
#pragma unroll
        for (int i = 0; i < ACM_MOMENTS / 2; ++i) {
            m[2 * i] = v[i].x;
            m[2 * i + 1] = v[i].y;
        }
    }
};
/* 16-bit: the 20-byte cell as five 4-byte words (cells are 4-byte aligned),
 * moment n in half-word n: rho - 1 and the A as scaled FP16, the velocity
 * in its own format (acm_u16_encode), as acm_mom_quantize16 on the CPU. */
template <> struct acm_mom_raw<__half> {
    unsigned w[ACM_MOMENTS / 2];
    static __device__ __forceinline__ float value(unsigned short bits, int n)
    {
        return acm_mom16_half(n) ? __half2float(__ushort_as_half(bits)) *
                                       (float)(1.0 / acm_mom16_scale(n))
                                 : acm_u16_decode(bits);
    }
    __device__ __forceinline__ void fetch(const __half *p)
    {
#pragma unroll
        for (int i = 0; i < ACM_MOMENTS / 2; ++i)
            w[i] = __ldg((const unsigned *)p + i);
    }
    __device__ __forceinline__ void open(float m[ACM_MOMENTS]) const
    {
#pragma unroll
        for (int i = 0; i < ACM_MOMENTS / 2; ++i) {
            m[2 * i] = value((unsigned short)(w[i] & 0xffffu), 2 * i);
            m[2 * i + 1] = value((unsigned short)(w[i] >> 16), 2 * i + 1);
        }
    }
};

/* A whole cell's moments: ld loads and opens them (acm_mom_raw), st stores. */
template <typename T> struct acm_mom_vec {
    typedef typename acm_pair<T>::type V;
    static __device__ __forceinline__ void ld(const T *p, T m[ACM_MOMENTS])
    {
        acm_mom_raw<T> r;
        r.fetch(p);
        r.open(m);
    }
    static __device__ __forceinline__ void st(T *p, const T m[ACM_MOMENTS])
    {
#pragma unroll
        for (int n = 0; n < ACM_MOMENTS; n += 2)
            *(V *)(p + n) = acm_pair<T>::make(m[n], m[n + 1]);
    }
};
template <> struct acm_mom_vec<__half> {
    static __device__ __forceinline__ void ld(const __half *p, float m[ACM_MOMENTS])
    {
        acm_mom_raw<__half> r;
        r.fetch(p);
        r.open(m);
    }
    static __device__ __forceinline__ unsigned bits(const float m[ACM_MOMENTS], int n,
                                                    uint32_t key)
    {
        if (acm_mom16_half(n))
            return __half_as_ushort(__float2half_rn(m[n] * (float)acm_mom16_scale(n)));
        return acm_u16_encode(m[n], acm_mom16_dither(key, m[n], n));
    }
    static __device__ __forceinline__ void st(__half *p, const float m[ACM_MOMENTS])
    {
        unsigned *w = (unsigned *)p;
        const uint32_t key = acm_mom16_key(m[0], m[4]);
#pragma unroll
        for (int i = 0; i < ACM_MOMENTS / 2; ++i)
            w[i] = bits(m, 2 * i, key) | bits(m, 2 * i + 1, key) << 16;
    }
};

/* moments.h for an arithmetic type. */
template <typename R> struct acm_mom_math;

#define ACM__MOM_MATH(R, SFX)                                                                \
    template <> struct acm_mom_math<R> {                                                     \
        typedef acm_cell_diag_##SFX diag;                                                    \
        static __device__ __forceinline__ void encode(const R g[27], R m[ACM_MOMENTS])        \
        {                                                                                    \
            acm_mom_encode_##SFX(g, m);                                                      \
        }                                                                                    \
        static __device__ __forceinline__ void sums(const R g[27], R s[ACM_MOMENTS])          \
        {                                                                                    \
            acm_mom_sums_##SFX(g, s);                                                        \
        }                                                                                    \
        static __device__ __forceinline__ void add(R s[ACM_MOMENTS], int i, R v)             \
        {                                                                                    \
            acm_mom_add_##SFX(s, i, v);                                                      \
        }                                                                                    \
        static __device__ __forceinline__ R population(const R m[ACM_MOMENTS], int closure,   \
                                                       int i)                                \
        {                                                                                    \
            return acm_mom_population_##SFX(m, closure, i);                                  \
        }                                                                                    \
        static __device__ __forceinline__ void axes(const R m[ACM_MOMENTS], int closure,       \
                                                    R d[3][3], R p[3][3], R h[3][3])         \
        {                                                                                    \
            acm_mom_axes_##SFX(m, closure, d, p, h);                                         \
        }                                                                                    \
        static __device__ __forceinline__ void populations_a(const R m[ACM_MOMENTS],          \
                                                             const R d[3][3], const R p[3][3], \
                                                             const R h[3][3], int a, R g[9])   \
        {                                                                                    \
            acm_mom_populations_a_##SFX(m, d, p, h, a, g);                                   \
        }                                                                                    \
        static __device__ __forceinline__ void add_layer(R s[ACM_MOMENTS], int cz,           \
                                                         const R v[9])                       \
        {                                                                                    \
            acm_mom_add_layer_##SFX(s, cz, v);                                               \
        }                                                                                    \
        static __device__ __forceinline__ void collide(const acm_collide_params *p, int model, \
                                                       const R s[ACM_MOMENTS], const R F[3], \
                                                       R *tau, R m[ACM_MOMENTS], diag *d)    \
        {                                                                                    \
            acm_mom_collide_##SFX(p, model, s, F, tau, m, d);                                \
        }                                                                                    \
        static __device__ __forceinline__ bool sure(const acm_collide_params *p,             \
                                                    const R m[ACM_MOMENTS])                  \
        {                                                                                    \
            return acm_mom_surely_above_##SFX(m, (R)(1.0 - p->floor_ratio));                 \
        }                                                                                    \
        static __device__ __forceinline__ int limit(const acm_collide_params *p,             \
                                                    R m[ACM_MOMENTS])                        \
        {                                                                                    \
            return acm_mom_limit_##SFX(p, m);                                                \
        }                                                                                    \
    };

ACM__MOM_MATH(float, f32)
ACM__MOM_MATH(double, f64)
#undef ACM__MOM_MATH

/* The moments of cell k of a moment array (its slots together). */
template <typename T>
__device__ __forceinline__ void acm_mom_load(const acm_gpu_grid &g, const T *__restrict__ src,
                                             uint32_t k, typename acm_io<T>::R m[ACM_MOMENTS])
{
    acm_mom_vec<T>::ld(src + (uint64_t)k * acm_mom_io<T>::slots, m);
}

/* Moments m into cell k (rounded to 16 bits by the store for 16-bit storage,
 * as acm_mom_quantize16 rounds on the CPU). */
template <typename T>
__device__ __forceinline__ void acm_mom_store(const acm_gpu_grid &g, T *dst, uint32_t k,
                                              const typename acm_io<T>::R m[ACM_MOMENTS])
{
    acm_mom_vec<T>::st(dst + (uint64_t)k * acm_mom_io<T>::slots, m);
}

/* The moments of shifted post-collision populations o into cell k: what the
 * cell keeps of them. */
template <typename T>
__device__ __forceinline__ void acm_mom_store_populations(const acm_gpu_grid &g, T *dst,
                                                          uint32_t k,
                                                          const typename acm_io<T>::R o[27])
{
    typedef typename acm_io<T>::R R;
    R m[ACM_MOMENTS];
    acm_mom_math<R>::encode(o, m);
    acm_mom_store<T>(g, dst, k, m);
}

/* Shifted populations of cell (x, y, z) after streaming from a moment array:
 * acm_pull's face rules (lib/cpu/lbm_tmpl.h stream_row) on the populations
 * the cells' moments stand for in closure `closure` (g.closure; a kernel of
 * one model passes its own as a constant). Across a non-periodic face the bounced
 * population is the cell's own post-collision population opp(i), rebuilt
 * from its own moments, plus the wall term. */
template <typename T>
__device__ __forceinline__ void acm_mom_pull(const acm_gpu_grid &g, const T *__restrict__ src,
                                             int32_t x, int32_t y, int32_t z, int closure,
                                             typename acm_io<T>::R f[27])
{
    typedef typename acm_io<T>::R R;
    int32_t sx[3], sy[3], sz[3];
    int fx[3], fy[3], fz[3];
    acm_axis_sources(g, 0, x, g.nx, 1, sx, fx);
    acm_axis_sources(g, 1, y, g.ny, 1, sy, fy);
    acm_axis_sources(g, 2, z, g.nz, 1, sz, fz);
    R own[ACM_MOMENTS];
    acm_mom_load<T>(g, src, acm_lin(g, x, y, z), own);
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const int a = acm_cx(i) + 1, b = acm_cy(i) + 1, c = acm_cz(i) + 1;
        if (fx[a] < 0 && fy[b] < 0 && fz[c] < 0) { /* wrapped, or mirrored across slip faces */
            R m[ACM_MOMENTS];
            acm_mom_load<T>(g, src, acm_lin(g, sx[a], sy[b], sz[c]), m);
            f[i] = acm_mom_math<R>::population(
                m, closure, acm_mirror(i, acm_slip_mask(fx[a], fy[b], fz[c])));
        } else { /* bounce-back, or a layer cell's own equilibrium (acm_layer_pull) */
            const acm_crossing cr = acm_crossing_of(g, fx[a], fy[b], fz[c]);
            f[i] = acm_layer_pull(&cr, true)
                       ? acm_mom_math<R>::population(own, closure, i)
                       : acm_mom_math<R>::population(own, closure, acm_opp(i)) +
                             (R)acm_bounce_term(i, &cr);
        }
    }
}

/* The physical state of cell (x, y, z) for the state the grid says (a
 * run-time choice: field, diagnostics, IB and redo kernels; moment storage
 * included). */
template <typename T>
__device__ __forceinline__ void acm_pull_state(const acm_gpu_grid &g, const T *__restrict__ src,
                                               int32_t x, int32_t y, int32_t z,
                                               typename acm_io<T>::R f[27])
{
    if (g.state == ACM_STATE_MOMENTS)
        acm_mom_pull<T>(g, src, x, y, z, g.closure, f);
    else if (g.state == ACM_STATE_AA_OWN)
        acm_pull<T, 1, ACM_STATE_AA_OWN>(g, src, x, y, z, f);
    else if (g.state == ACM_STATE_AA_SWAP)
        acm_pull<T, 1, ACM_STATE_AA_SWAP>(g, src, x, y, z, f);
    else
        acm_pull<T, 1, ACM_STATE_POST>(g, src, x, y, z, f);
}

/* Where f*_i of cell (x, y, z) goes when a step leaves the array in state
 * `after` (acm_state_after): its element index, and the wall term to add
 * there (the in-place odd step bounces in advance: lib/cpu/lbm_tmpl.h). */
__device__ __forceinline__ uint64_t acm_post_slot(const acm_gpu_grid &g, int32_t after,
                                                  int32_t x, int32_t y, int32_t z, int i,
                                                  double *term)
{
    const int32_t n[3] = {g.nx, g.ny, g.nz}, c[3] = {x, y, z};
    int32_t t[3];
    const int slot = acm_post_target(g.face, n, after, c, i, t, term);
    return acm_idx(g, acm_lin(g, t[0], t[1], t[2]), slot);
}

/* Store the post-collision populations o of cell (x, y, z) of a step that
 * leaves the array in state `after`. */
template <typename T>
__device__ __forceinline__ void acm_store_post(const acm_gpu_grid &g, T *dst, int32_t after,
                                               int32_t x, int32_t y, int32_t z,
                                               const typename acm_io<T>::R o[27])
{
    typedef typename acm_io<T>::R R;
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        double term;
        const uint64_t at = acm_post_slot(g, after, x, y, z, i, &term);
        acm_io<T>::st(dst, at, o[i] + (R)term);
    }
}

/* ---- fast addressing for the per-cell kernels ------------------------------------ */

/* Element index of population 0 of cell k (population i adds i * alpha):
 * 27 alpha floor(k / alpha) + k mod alpha = 27 k - 26 (k mod alpha). IDX is
 * uint32_t when the whole array has fewer than 2^32 elements, else uint64_t. */
template <typename IDX>
__device__ __forceinline__ IDX acm_cell_base(const acm_csoa &l, uint32_t k)
{
    /* 27 alpha (k >> shift) + (k & mask) = k + 26 (k & ~mask) */
    const uint32_t mask = (uint32_t)l.alpha - 1u;
    return (IDX)k + (IDX)26 * (IDX)(k & ~mask);
}

/* How a per-cell kernel addresses population `slot` of a cell (`at` its
 * acm_addr_*::at). acm_addr_planes: any CSoA group, through the
 * per-population plane pointers (one 64-bit address per population).
 * acm_addr_fixed: the group ALPHA known at compile time and 32-bit indices:
 * one address per cell, the populations at constant offsets that the load and
 * store instructions carry as immediates (27 address computations fewer per
 * pass over a cell's own slots). */
template <typename IDX> struct acm_addr_planes {
    static __device__ __forceinline__ IDX at(const acm_csoa &l, uint32_t k)
    {
        return acm_cell_base<IDX>(l, k);
    }
    template <typename T>
    static __device__ __forceinline__ const T *src(const acm_step_args &a, IDX at, int slot)
    {
        return (const T *)a.src_plane[slot] + at;
    }
    template <typename T>
    static __device__ __forceinline__ T *dst(const acm_step_args &a, IDX at, int slot)
    {
        return (T *)a.dst_plane[slot] + at;
    }
};

template <uint32_t ALPHA> struct acm_addr_fixed {
    static __device__ __forceinline__ uint32_t at(const acm_csoa &, uint32_t k)
    {
        return k + 26u * (k & ~(ALPHA - 1u));
    }
    template <typename T>
    static __device__ __forceinline__ const T *src(const acm_step_args &a, uint32_t at, int slot)
    {
        return ((const T *)a.src + at) + (uint32_t)slot * ALPHA;
    }
    template <typename T>
    static __device__ __forceinline__ T *dst(const acm_step_args &a, uint32_t at, int slot)
    {
        return ((T *)a.dst + at) + (uint32_t)slot * ALPHA;
    }
};

/* The CSoA group of acm_addr_fixed (the default group, docs/performance.md). */
#define ACM_FIXED_ALPHA 1024u

/* Whether the pulling kernels address a grid's populations through
 * acm_addr_fixed (its group, 32-bit indices), rather than plane pointers. */
__host__ __device__ inline bool acm_fixed_addressing(const acm_gpu_grid &g)
{
    return g.l.alpha == ACM_FIXED_ALPHA && acm_csoa_size(g.l, g.ncells) <= 0xffffffffull;
}

/* The 27 pull sources of a cell away from non-periodic faces, as offsets of
 * the linear cell index along each axis (slot c + 1 for velocity component c,
 * periodic wrap included). `edge` is set when some source lies across a
 * non-periodic face: such a cell takes the general acm_pull. */
struct acm_sources {
    int32_t ox[3], oy[3], oz[3];
    bool edge;
};

template <int DIR>
__device__ __forceinline__ acm_sources acm_source_offsets(const acm_gpu_grid &g, int32_t x,
                                                          int32_t y, int32_t z)
{
    acm_sources s;
    const int32_t coord[3] = {x, y, z}, n[3] = {g.nx, g.ny, g.nz};
    const int32_t stride[3] = {1, g.nx, g.nx * g.ny};
    int32_t *off[3] = {s.ox, s.oy, s.oz};
    bool edge = false;
#pragma unroll
    for (int axis = 0; axis < 3; ++axis) {
        const int32_t c = coord[axis], m = n[axis];
        edge |= (c < g.inner_lo[axis]) | (c > g.inner_hi[axis]);
        /* the neighbours at c + 1 and c - 1, wrapped (across a non-periodic face
         * the wrapped value is unused: edge is set) */
        const int32_t up = (c == m - 1 ? 1 - m : 1) * stride[axis];
        const int32_t down = (c == 0 ? m - 1 : -1) * stride[axis];
        off[axis][0] = DIR > 0 ? up : down; /* velocity -1: source at c + DIR */
        off[axis][1] = 0;
        off[axis][2] = DIR > 0 ? down : up;
    }
    s.edge = edge;
    return s;
}

/* Whether cell (x, y, z) collides with the face parameters: next to a face
 * that takes the face rule (acm_face_takes_rule). */
__device__ __forceinline__ bool acm_rule_at(const acm_gpu_grid &g, int32_t x, int32_t y,
                                            int32_t z)
{
    return x < g.rule_lo[0] || x > g.rule_hi[0] || y < g.rule_lo[1] || y > g.rule_hi[1] ||
           z < g.rule_lo[2] || z > g.rule_hi[2];
}

/* acm_rule_at for cell k. */
__device__ __forceinline__ bool acm_at_face(const acm_gpu_grid &g, uint32_t k)
{
    int32_t x, y, z;
    acm_coords(g, k, x, y, z);
    return acm_rule_at(g, x, y, z);
}

/* Pull of a cell whose sources are all inside or across periodic faces:
 * straight-line loads, no branches. STATE (acm_array_state): the cell's own
 * slots for ACM_STATE_AA_OWN, slot opp(i) of the source for
 * ACM_STATE_AA_SWAP. ADDR: acm_addr_planes or acm_addr_fixed. SCALED: the
 * populations as stored, times acm_io<T>::sigma (acm_collide's sigma). */
template <typename T, typename ADDR, int STATE, bool SCALED = false>
__device__ __forceinline__ void acm_pull_interior(const acm_step_args &a, uint32_t k,
                                                  const acm_sources &s,
                                                  typename acm_io<T>::R f[27])
{
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const uint32_t kn = STATE == ACM_STATE_AA_OWN
                                ? k
                                : (uint32_t)((int32_t)k + s.ox[acm_cx(i) + 1] +
                                             s.oy[acm_cy(i) + 1] + s.oz[acm_cz(i) + 1]);
        const int slot = STATE == ACM_STATE_AA_SWAP ? acm_opp(i) : i;
        const T *p = ADDR::template src<T>(a, ADDR::at(a.g.l, kn), slot);
        f[i] = SCALED ? acm_io<T>::ld_scaled(p) : acm_io<T>::ld(p, 0);
    }
}

/* How many non-periodic faces a cell lies next to (0 to 3, one per axis;
 * face[axis]: the face's index, else -1) where each of them bounces back (a
 * wall, an inlet or an outlet: no slip face, whose pull mirrors) and no axis
 * has the cell next to both its faces (an axis of one cell); else 0. */
__device__ __forceinline__ int acm_bounce_faces(const acm_gpu_grid &g, int32_t x, int32_t y,
                                                int32_t z, int face[3])
{
    const int32_t c[3] = {x, y, z};
    int count = 0;
    bool other = false; /* a slip face, or both faces of an axis */
#pragma unroll
    for (int axis = 0; axis < 3; ++axis) {
        const bool lo = c[axis] < g.inner_lo[axis], hi = c[axis] > g.inner_hi[axis];
        face[axis] = lo ? 2 * axis : hi ? 2 * axis + 1 : -1;
        count += lo || hi;
        other |= (lo && hi) || ((lo || hi) && g.face[face[axis]].type == ACM_BOUNDARY_SLIP);
    }
    return other ? 0 : count;
}

/* a + b rounded once, never contracted with a product into an FMA: the wall
 * term as acm_bounced adds it (there it ends in a division by the count of
 * faces crossed, which one face makes a division by 1). */
__device__ __forceinline__ float acm_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double acm_add_rn(double a, double b) { return __dadd_rn(a, b); }

/* The pull of a cell next to the one face `face` (acm_bounce_faces), two
 * arrays, as acm_pull and then times sigma, bit for bit: the plain pull
 * (acm_pull_interior, whose wrapped sources across the face go unused), then
 * the nine populations whose source lies across the face bounced back from
 * the cell's own slot with the face's wall term. At 32^3 with two walls the
 * cells next to them took the general acm_pull, 3.3 times the instructions of
 * an inner cell's step, and the kernel waited for their warps
 * (docs/performance.md, "Small grids"). */
template <typename T, typename ADDR, int STATE>
__device__ __forceinline__ void acm_pull_one_face(const acm_step_args &a, uint32_t k,
                                                  const acm_sources &s, int face,
                                                  typename acm_io<T>::R f[27])
{
    typedef typename acm_io<T>::R R;
    acm_pull_interior<T, ADDR, STATE, true>(a, k, s, f);
    acm_crossing cr = acm_no_crossing();
    acm_cross_face(&a.g.face[face], &cr);
    const int axis = face >> 1, across = (face & 1) ? -1 : 1; /* c_i of the crossing sources */
    const auto at = ADDR::at(a.g.l, k);
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const int c = axis == 0 ? acm_cx(i) : axis == 1 ? acm_cy(i) : acm_cz(i);
        if (c == across) {
            const int bounced = STATE == ACM_STATE_AA_SWAP ? i : acm_opp(i);
            const R v = acm_add_rn(acm_io<T>::ld(ADDR::template src<T>(a, at, bounced), 0),
                                   (R)acm_bounce_term(i, &cr));
            f[i] = v * (R)acm_io<T>::sigma;
        }
    }
}

/* acm_bounce_term(i, cr) (boundary.h), bit for bit, with its division by the
 * count of faces crossed made only for three: t / 1 and t / 2 are t and t * 0.5
 * exactly. */
__device__ __forceinline__ double acm_bounce_term_walls(int i, const acm_crossing &cr)
{
    const double cu = acm_cx(i) * cr.u[0] + acm_cy(i) * cr.u[1] + acm_cz(i) * cr.u[2];
    const double t = 6.0 * acm_weight(i) * cu;
    return cr.n == 1 ? t : cr.n == 2 ? t * 0.5 : t / cr.n;
}

/* The pull of a cell next to two or three faces `face` (acm_bounce_faces:
 * walls, inlets or outlets; a box's edges and corners), two arrays, as
 * acm_pull and then times sigma, bit for bit: the plain pull
 * (acm_pull_interior), then each population whose source lies across one or
 * more of the faces bounced back from the cell's own slot with the wall term
 * of the faces it crosses, added in axis order as acm_crossing_of adds them.
 * In a closed box the cells of its edges took the general acm_pull, and their
 * warps held the kernel: 32^3 FP32 ACM 1525 -> 2077 MLUPS, FP16 1266 -> 2048
 * (H100, docs/performance.md). The cells next to one face keep
 * acm_pull_one_face: this pull for them too, with or without the division of
 * the wall term, ran the box with walls at y = 0 and y = n - 1 16-35 % slower. */
template <typename T, typename ADDR, int STATE>
__device__ __forceinline__ void acm_pull_walls(const acm_step_args &a, uint32_t k,
                                               const acm_sources &s, const int face[3],
                                               typename acm_io<T>::R f[27])
{
    typedef typename acm_io<T>::R R;
    acm_pull_interior<T, ADDR, STATE, true>(a, k, s, f);
    int across[3]; /* c_i of the sources across the face of each axis (0: none) */
#pragma unroll
    for (int axis = 0; axis < 3; ++axis)
        across[axis] = face[axis] < 0 ? 0 : (face[axis] & 1) ? -1 : 1;
    const auto at = ADDR::at(a.g.l, k);
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const int c[3] = {acm_cx(i), acm_cy(i), acm_cz(i)};
        acm_crossing cr = acm_no_crossing();
#pragma unroll
        for (int axis = 0; axis < 3; ++axis)
            if (c[axis] != 0 && c[axis] == across[axis])
                acm_cross_face(&a.g.face[face[axis]], &cr);
        if (cr.n > 0) {
            const int bounced = STATE == ACM_STATE_AA_SWAP ? i : acm_opp(i);
            const R v = acm_add_rn(acm_io<T>::ld(ADDR::template src<T>(a, at, bounced), 0),
                                   (R)acm_bounce_term_walls(i, cr));
            f[i] = v * (R)acm_io<T>::sigma;
        }
    }
}

/* The same for the state the grid says (a run-time choice). */
template <typename T, typename IDX>
__device__ __forceinline__ void acm_pull_interior_any(const acm_step_args &a, uint32_t k,
                                                      const acm_sources &s,
                                                      typename acm_io<T>::R f[27])
{
    typedef acm_addr_planes<IDX> ADDR;
    if (a.g.state == ACM_STATE_AA_OWN)
        acm_pull_interior<T, ADDR, ACM_STATE_AA_OWN>(a, k, s, f);
    else if (a.g.state == ACM_STATE_AA_SWAP)
        acm_pull_interior<T, ADDR, ACM_STATE_AA_SWAP>(a, k, s, f);
    else
        acm_pull_interior<T, ADDR, ACM_STATE_POST>(a, k, s, f);
}

/* In place, odd step, a cell away from non-periodic faces: f*_i (times
 * sigma) to slot i of x + c_i, which is the pull source of opp(i). */
template <typename T, typename ADDR>
__device__ __forceinline__ void acm_push_interior(const acm_step_args &a, uint32_t k,
                                                  const acm_sources &s,
                                                  const typename acm_io<T>::R o[27])
{
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        const int j = acm_opp(i);
        const uint32_t kn = (uint32_t)((int32_t)k + s.ox[acm_cx(j) + 1] + s.oy[acm_cy(j) + 1] +
                                       s.oz[acm_cz(j) + 1]);
        acm_io<T>::st_scaled(ADDR::template dst<T>(a, ADDR::at(a.g.l, kn), i), o[i]);
    }
}

/* Shifted equilibrium f^eq - w in public order. */
template <typename R>
__device__ __forceinline__ void acm_equilibrium_public(R rho, const R u[3], R out[27])
{
    R dx[3], dy[3], dz[3], p[3], e[27];
    acm_math<R>::phi1d(u[0], dx, p);
    acm_math<R>::phi1d(u[1], dy, p);
    acm_math<R>::phi1d(u[2], dz, p);
    acm_math<R>::equilibrium(rho - (R)1, dx, dy, dz, e);
#pragma unroll
    for (int i = 0; i < 27; ++i)
        out[i] = e[acm_abc(i)];
}

/* Density and momentum of shifted populations. */
template <typename R>
__device__ __forceinline__ void acm_moments(const R f[27], R &rho, R j[3])
{
    R r = 0, jx = 0, jy = 0, jz = 0;
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        r += f[i];
        jx += (R)acm_cx(i) * f[i];
        jy += (R)acm_cy(i) * f[i];
        jz += (R)acm_cz(i) * f[i];
    }
    rho = (R)1 + r;
    j[0] = jx;
    j[1] = jy;
    j[2] = jz;
}

/* External force density on cell k: uniform part plus the caller's field. */
template <typename R>
__device__ __forceinline__ void acm_cell_force_ext(const acm_step_args &a, uint32_t k, R F[3])
{
    const R *pl = (const R *)a.force;
#pragma unroll
    for (int d = 0; d < 3; ++d)
        F[d] = (R)a.force0[d] + (pl ? __ldg(pl + (size_t)d * a.g.ncells + k) : (R)0);
}

/* The immersed-boundary mask word of cell k (0 without one). Per-cell kernels
 * load it before their pull, so that its latency hides behind the pull's. */
__device__ __forceinline__ uint32_t acm_ib_word(const acm_step_args &a, uint32_t k)
{
    return a.ib_mask != NULL ? __ldg(a.ib_mask + (k >> 5)) : 0u;
}

/* Total force density on cell k: external plus the immersed boundary's of this
 * step, read where the cell's bit of ib_word (acm_ib_word) is set. */
template <typename R>
__device__ __forceinline__ void acm_cell_force(const acm_step_args &a, uint32_t k,
                                               uint32_t ib_word, R F[3])
{
    acm_cell_force_ext(a, k, F);
    if ((ib_word >> (k & 31u)) & 1u) {
        const R *ib = (const R *)a.ib_force;
#pragma unroll
        for (int d = 0; d < 3; ++d)
            F[d] += ib[(size_t)d * a.g.ncells + k];
    }
}

/* The ACM rules' inputs from the previous step's sums; at a cell next to a
 * non-periodic face the face parameters (acm_face_params, as on the CPU). */
__device__ __forceinline__ void acm_params_from_sums(acm_collide_params &p,
                                                     const acm_gpu_sums *prev, bool at_face)
{
    p.inv_umax = prev->inv_umax;
    p.inv_mean_rho = prev->inv_mean_rho;
    p.inv_mean_j = prev->inv_mean_j;
    p.inv_mean_pi = prev->inv_mean_pi;
    if (at_face)
        acm_face_params(&p);
}

/* The collision's parameters at a cell: the layout's, with the ACM rules'
 * inputs for an adaptive model (acm_params_from_sums). */
__device__ __forceinline__ acm_collide_params acm_cell_params(const acm_step_args &a,
                                                              bool adaptive, bool at_face)
{
    acm_collide_params p = a.p;
    if (adaptive)
        acm_params_from_sums(p, a.prev, at_face);
    return p;
}

/* Where cell k's relaxation time lives: the LI2020 model's field, else the
 * caller's spare. */
template <typename R>
__device__ __forceinline__ R *acm_cell_tau(const acm_step_args &a, int model, uint32_t k,
                                           R &spare)
{
    return model == ACM_COLLISION_ACM_LI2020 ? (R *)a.tau + k : &spare;
}

/* Raw second-moment norm |sum f c c| of shifted populations. */
template <typename R>
__device__ __forceinline__ R acm_pi_norm(const R f[27])
{
    R p[6] = {(R)(1.0 / 3.0), (R)(1.0 / 3.0), (R)(1.0 / 3.0), 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 27; ++i) {
        R cx = (R)acm_cx(i), cy = (R)acm_cy(i), cz = (R)acm_cz(i);
        p[0] += cx * cx * f[i];
        p[1] += cy * cy * f[i];
        p[2] += cz * cz * f[i];
        p[3] += cx * cy * f[i];
        p[4] += cx * cz * f[i];
        p[5] += cy * cz * f[i];
    }
    return sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] +
                (R)2 * (p[3] * p[3] + p[4] * p[4] + p[5] * p[5]));
}

/* The divergence key: the step of the batch above ACM_KEY_CELL_BITS, the
 * cell below; the earliest wins (atomicMin), ACM_NO_KEY when none. */
#define ACM_KEY_CELL_BITS 36
#define ACM_NO_KEY 0xffffffffffffffffull

/* This step's part of the key. */
__device__ __forceinline__ unsigned long long acm_gate_step(const acm_gate &g)
{
    return g.batch != NULL ? *g.batch << ACM_KEY_CELL_BITS : g.step_key;
}

/* An earlier step of the batch diverged: a kernel that writes the state
 * returns at once (the whole launch alike: keys of its own step are not
 * earlier). */
__device__ __forceinline__ bool acm_gate_shut(const acm_gate &g)
{
    return g.bad != NULL && *g.bad < acm_gate_step(g);
}

/* Record a diverged cell: NaN, |u|^2 above the limit or a density <= 0 (which
 * can come with any speed), as the CPU's row kernels (lib/cpu/row_tmpl.h). */
__device__ __forceinline__ void acm_check_divergence(const acm_step_args &a, uint32_t k,
                                                     double rho, double u2)
{
    if ((!(u2 <= a.u2_limit) || !(rho > 0.0)) && k >= a.live_lo && k < a.live_hi) /* NaN
                                                                  fails both comparisons */
        atomicMin(a.gate.bad, acm_gate_step(a.gate) | (unsigned long long)k);
}

/* What a cell's collision leaves beside its new state (d: its diagnostics,
 * rho, u and |Pi|): the velocity for the smoke (a.u_out: no second read of
 * the state), the divergence check (when `check`), and the cell's part of
 * the plane's sums of the ACM rules: |u|^2 for the maximum, and for LI2020
 * rho, rho |u| and |Pi|. */
template <typename R, typename DIAG>
__device__ __forceinline__ void acm_cell_outputs(const acm_step_args &a, uint32_t k, const DIAG &d,
                                                 bool check, bool li2020, R &u2max,
                                                 double &rho_sum, double &j_sum, double &pi_sum)
{
    if (a.u_out != NULL) {
        a.u_out[3 * (size_t)k] = (float)d.u[0];
        a.u_out[3 * (size_t)k + 1] = (float)d.u[1];
        a.u_out[3 * (size_t)k + 2] = (float)d.u[2];
    }
    const R u2 = d.u[0] * d.u[0] + d.u[1] * d.u[1] + d.u[2] * d.u[2];
    if (check)
        acm_check_divergence(a, k, (double)d.rho, (double)u2);
    u2max = isnan(u2) ? (R)0 : u2;
    if (li2020) {
        rho_sum = (double)d.rho;
        j_sum = (double)(d.rho * sqrt(u2));
        pi_sum = (double)d.pi;
    }
}

/* ---- the ACM rules' sums per plane -------------------------------------------------
 * Each plane's sums are integers, multiples of 2^-26 of the cells' values: integer
 * sums are exact, so the order in which threads, blocks and atomics add them does
 * not matter, and a slab of a decomposed domain (lib/multi/decomp.h), whose blocks fall
 * differently on its planes, gets bitwise the same plane sums. The planes are then
 * folded in plane order (acm_launch_plane_fold, or the host for a decomposed
 * domain). A plane of 2^32 cells of values below 32 stays within 63 bits. */
#define ACM_PLANE_SCALE 67108864.0 /* 2^26 */

struct acm_plane_fixed {
    unsigned long long max_u2; /* the bits of a double >= 0, ordered as its values */
    long long sum_rho, sum_j, sum_pi;
};

/* A plane's sums as doubles (max_u2, sum_rho, sum_j, sum_pi): the same on the host. */
__host__ __device__ inline void acm_plane_value(const acm_plane_fixed &f, double v[4])
{
#ifdef __CUDA_ARCH__
    v[0] = __longlong_as_double((long long)f.max_u2);
#else
    memcpy(&v[0], &f.max_u2, sizeof v[0]);
#endif
    v[1] = (double)f.sum_rho / ACM_PLANE_SCALE;
    v[2] = (double)f.sum_j / ACM_PLANE_SCALE;
    v[3] = (double)f.sum_pi / ACM_PLANE_SCALE;
}

/* Add the cell of each thread (valid: it has one, cell k) to its plane: u2 >= 0
 * to the maximum, with SUMS rho, j and pi to the sums. The block's cells are
 * [first, min(first + blockDim.x, end)). Every thread of the block calls it. A block within one plane adds once, after a warp reduction (of R,
 * the kernel's arithmetic type: one instruction for float) and an exact integer
 * one. Defined after acm_warp_max (below). */
template <bool SUMS, typename R>
__device__ __forceinline__ void acm_plane_add(acm_plane_fixed *planes, const acm_gpu_grid &g,
                                              uint32_t first, uint32_t end, uint32_t k,
                                              bool valid, R u2, double rho, double j, double pi);

/* v (+)= one set of sums; max_u2 as a maximum when FIRST_MAX. */
template <bool FIRST_MAX>
__device__ __forceinline__ void acm_sums_add(acm_gpu_sums &v, double max_u2, double rho,
                                             double j, double pi)
{
    v.max_u2 = FIRST_MAX ? fmax(v.max_u2, max_u2) : v.max_u2 + max_u2;
    v.sum_rho += rho;
    v.sum_j += j;
    v.sum_pi += pi;
}

/* Block-wide reduction of v into *out: field max_u2 is a maximum when
 * FIRST_MAX, every other field a sum. Every thread of the block calls it
 * (inactive ones with zeros). Blocks of at most 1024 threads. */
template <bool FIRST_MAX>
__device__ __forceinline__ void acm_block_sums(acm_gpu_sums v, acm_gpu_sums *out)
{
    __shared__ acm_gpu_sums warp_sums[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        acm_sums_add<FIRST_MAX>(v, __shfl_down_sync(0xffffffffu, v.max_u2, off),
                                __shfl_down_sync(0xffffffffu, v.sum_rho, off),
                                __shfl_down_sync(0xffffffffu, v.sum_j, off),
                                __shfl_down_sync(0xffffffffu, v.sum_pi, off));
    __syncthreads(); /* warp_sums may still be read by a previous call */
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        acm_gpu_sums t = warp_sums[0];
        for (unsigned w = 1; w < (blockDim.x + 31u) / 32u; ++w)
            acm_sums_add<FIRST_MAX>(t, warp_sums[w].max_u2, warp_sums[w].sum_rho,
                                    warp_sums[w].sum_j, warp_sums[w].sum_pi);
        *out = t;
    }
}

/* Maximum over the warp of v >= 0 (never NaN). FP32: one warp reduction of
 * the bit patterns (__reduce_max_sync, sm_80 and later), which order like
 * the values for non-negative floats; FP64: shuffles. */
__device__ __forceinline__ float acm_warp_max(float v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(v)));
#else
#  pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
#endif
}

__device__ __forceinline__ double acm_warp_max(double v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = fmax(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

/* A warp's part of a plane's sums (valid: the thread has a cell), complete
 * in lane 0: the maximum of u2 and the exact integer sums. Every lane calls it. */
template <bool SUMS, typename R>
__device__ __forceinline__ acm_plane_fixed acm_plane_warp(bool valid, R u2, double rho, double j,
                                                          double pi)
{
    long long s[3] = {0, 0, 0};
    if (SUMS && valid) {
        s[0] = __double2ll_rn(rho * ACM_PLANE_SCALE);
        s[1] = __double2ll_rn(j * ACM_PLANE_SCALE);
        s[2] = __double2ll_rn(pi * ACM_PLANE_SCALE);
    }
    const R wmax = acm_warp_max(valid ? u2 : (R)0);
    if (SUMS)
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
#pragma unroll
            for (int q = 0; q < 3; ++q)
                s[q] += __shfl_down_sync(0xffffffffu, s[q], off);
    return acm_plane_fixed{(unsigned long long)__double_as_longlong((double)wmax), s[0], s[1],
                           s[2]};
}

/* Fold the parts of `n` warps into plane `plane`: one atomic per sum. One
 * thread calls it. */
template <bool SUMS>
__device__ __forceinline__ void acm_plane_fold(acm_plane_fixed *planes, uint32_t plane,
                                               const acm_plane_fixed *part, unsigned n)
{
    acm_plane_fixed t = part[0];
    for (unsigned w = 1; w < n; ++w) {
        t.max_u2 = part[w].max_u2 > t.max_u2 ? part[w].max_u2 : t.max_u2;
        t.sum_rho += part[w].sum_rho;
        t.sum_j += part[w].sum_j;
        t.sum_pi += part[w].sum_pi;
    }
    acm_plane_fixed *p = &planes[plane];
    atomicMax(&p->max_u2, t.max_u2);
    if (SUMS) {
        atomicAdd((unsigned long long *)&p->sum_rho, (unsigned long long)t.sum_rho);
        atomicAdd((unsigned long long *)&p->sum_j, (unsigned long long)t.sum_j);
        atomicAdd((unsigned long long *)&p->sum_pi, (unsigned long long)t.sum_pi);
    }
}

/* Add the cells of a block that all lie in plane `plane` (valid: the thread
 * has one) with one atomic per sum, after a warp and an exact integer block
 * reduction. Every thread of the block calls it. */
template <bool SUMS, typename R>
__device__ __forceinline__ void acm_plane_add_block(acm_plane_fixed *planes, uint32_t plane,
                                                    bool valid, R u2, double rho, double j,
                                                    double pi)
{
    __shared__ acm_plane_fixed warp_part[32];
    const acm_plane_fixed w = acm_plane_warp<SUMS>(valid, u2, rho, j, pi);
    __syncthreads(); /* warp_part may still be read by a previous call */
    if ((threadIdx.x & 31u) == 0)
        warp_part[threadIdx.x >> 5] = w;
    __syncthreads();
    if (threadIdx.x == 0)
        acm_plane_fold<SUMS>(planes, plane, warp_part, (blockDim.x + 31u) / 32u);
}

template <bool SUMS, typename R>
__device__ __forceinline__ void acm_plane_add(acm_plane_fixed *planes, const acm_gpu_grid &g,
                                              uint32_t first, uint32_t end, uint32_t k,
                                              bool valid, R u2, double rho, double j, double pi)
{
    const uint32_t nxy = (uint32_t)g.nx * (uint32_t)g.ny;
    const uint32_t last = min(first + blockDim.x, end) - 1u;
    if (first / nxy == last / nxy) {
        acm_plane_add_block<SUMS>(planes, first / nxy, valid, u2, rho, j, pi);
        return;
    }
    if (!valid) /* the block spans planes: each cell to its own */
        return;
    acm_plane_fixed *p = &planes[k / nxy];
    atomicMax(&p->max_u2, (unsigned long long)__double_as_longlong((double)u2));
    if (SUMS) {
        atomicAdd((unsigned long long *)&p->sum_rho,
                  (unsigned long long)__double2ll_rn(rho * ACM_PLANE_SCALE));
        atomicAdd((unsigned long long *)&p->sum_j,
                  (unsigned long long)__double2ll_rn(j * ACM_PLANE_SCALE));
        atomicAdd((unsigned long long *)&p->sum_pi,
                  (unsigned long long)__double2ll_rn(pi * ACM_PLANE_SCALE));
    }
}

/* The planes [lo, hi) of acm_plane_add folded in plane order, as lib/multi/decomp.c
 * folds a decomposed domain's planes on the host, with the means of ncells:
 * complete in thread 0. The block's first CHUNK threads convert a chunk of
 * planes at once, then one thread adds them up in order (a single thread
 * loading each plane in turn waited on memory for ~0.1 ms a step at 256
 * planes); the result does not depend on CHUNK. Loads past L1 (the planes are
 * other blocks' atomics). Every thread of a block of at least CHUNK threads
 * calls it. */
#define ACM_FOLD_THREADS 256u

template <unsigned CHUNK>
__device__ __forceinline__ acm_gpu_sums acm_fold_planes(const acm_plane_fixed *planes, int32_t lo,
                                                        int32_t hi, double ncells)
{
    __shared__ double v[CHUNK][4];
    acm_gpu_sums t = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int32_t c = lo; c < hi; c += (int32_t)CHUNK) {
        const int32_t z = c + (int32_t)threadIdx.x;
        if (threadIdx.x < CHUNK && z < hi) {
            const acm_plane_fixed p = {__ldcg(&planes[z].max_u2), __ldcg(&planes[z].sum_rho),
                                       __ldcg(&planes[z].sum_j), __ldcg(&planes[z].sum_pi)};
            acm_plane_value(p, v[threadIdx.x]);
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (int32_t k = 0; k < (int32_t)CHUNK && c + k < hi; ++k) {
                t.max_u2 = fmax(t.max_u2, v[k][0]);
                t.sum_rho += v[k][1];
                t.sum_j += v[k][2];
                t.sum_pi += v[k][3];
            }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        acm_finish_sums(t, ncells);
    return t;
}

/* Words of the safety net's redo mask: one bit per cell. */
__host__ __device__ inline uint32_t acm_redo_words(uint32_t ncells)
{
    return (ncells + 31u) / 32u;
}

/* The divergence key into out[0] of mapped host memory, then the step count
 * into out[1]: the host reads the key once it finds the count. The key is
 * read past L1 (other blocks' atomics). */
__device__ __forceinline__ void acm_post_key(const unsigned long long *key,
                                             volatile unsigned long long *out,
                                             unsigned long long count)
{
    out[0] = __ldcg(key);
    __threadfence_system(); /* the key is there before the count says so */
    out[1] = count;
}

/* The step counted in the batch (the key of the next step's kernels in a
 * graph: acm_gate_step); the key posted to out unless NULL. */
__device__ __forceinline__ void acm_count_step(unsigned long long *batch,
                                               const unsigned long long *key,
                                               unsigned long long *out)
{
    const unsigned long long n = atomicAdd(batch, 1ull) + 1ull;
    if (out != NULL)
        acm_post_key(key, out, n);
}

/* The safety net's fallback of cell k, which the collision marked (PULL:
 * a.src holds the populations before streaming, unchanged during the step,
 * and is pulled again; else a.src holds them streamed). */
template <typename T, bool PULL>
__device__ __forceinline__ void acm_redo_cell(const acm_step_args &a, uint32_t k)
{
    typedef typename acm_io<T>::R R;
    R f[27], F[3], o[27];
    int32_t x, y, z;
    acm_coords(a.g, k, x, y, z);
    if (PULL)
        acm_pull_state<T>(a.g, (const T *)a.src, x, y, z, f);
    else
        acm_load_cell(a.g, (const T *)a.src, k, f);
    acm_cell_force(a, k, acm_ib_word(a, k), F);
    acm_math<R>::fallback(&a.p, f, F, o);
    acm_store_post<T>(a.g, (T *)a.dst, acm_state_after(a.g.state), x, y, z, o);
}

/* The n cells a fused two-array launch marked (a.fold_redo), redone by its
 * last block once every block is done, a cell a thread: those of the list,
 * or, when more were marked than it holds, every word of the marks. Counted
 * as fallbacks; the list left empty. Every thread of the block calls it,
 * with the count it read before a barrier. */
#define ACM_FOLD_REDO_CELLS 4096u
template <typename T>
__device__ __forceinline__ void acm_redo_listed(const acm_step_args &a, unsigned n)
{
    if (n <= ACM_FOLD_REDO_CELLS) {
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
            acm_redo_cell<T, true>(a, __ldcg(a.fold_redo + 1 + i));
    } else {
        for (uint32_t w = a.first / 32u + threadIdx.x; w < acm_redo_words(a.end); w += blockDim.x)
            for (uint32_t bits = __ldcg(a.redo + w); bits != 0; bits &= bits - 1)
                acm_redo_cell<T, true>(a, w * 32u + (uint32_t)(__ffs((int)bits) - 1));
    }
    if (threadIdx.x == 0) { /* every thread read the count before acm_fold_planes' barriers */
        atomicAdd(a.fallbacks, (unsigned long long)n);
        *a.fold_redo = 0u;
    }
}

/* A collision launch with a.fold_out (the plane sums of one undivided domain):
 * the block that finishes last folds the planes, as acm_launch_plane_fold
 * does, and zeroes them for the next step: no memset and no fold kernel
 * between two steps. With a.fold_count it counts the step (no count kernel),
 * with a.fold_redo it redoes the marked cells (no redo pass). Every
 * thread of every block (of at least 32 threads) calls it, after its
 * acm_plane_add and acm_mark_redo. A warp converts the planes: the kernel's
 * shared memory grows by 1 kB rather than the fold kernel's 8 kB. */
template <typename T> __device__ __forceinline__ void acm_fold_last(const acm_step_args &a)
{
    __shared__ bool last;
    __syncthreads(); /* the block's plane sums are added (thread 0's atomics) */
    if (threadIdx.x == 0) {
        __threadfence(); /* ... before the count says so */
        last = atomicAdd(a.fold_done, 1u) == gridDim.x - 1u;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    /* every block has checked its cells: the step's key is final, and the
     * next step's kernels wait for this launch to end (acm_wait_for_prior),
     * so the step counts now, by a thread the fold leaves alone */
    if (a.fold_count != NULL && threadIdx.x == blockDim.x - 1u)
        acm_count_step(a.fold_count, a.gate.bad, a.fold_post);
    const unsigned marked = a.fold_redo != NULL ? __ldcg(a.fold_redo) : 0u;
    const acm_gpu_sums t = acm_fold_planes<32>(a.planes, a.fold_lo, a.fold_hi, a.fold_cells);
    /* read: acm_fold_planes ends in a barrier */
    for (int32_t z = (int32_t)threadIdx.x; z < a.g.nz; z += (int32_t)blockDim.x)
        a.planes[z] = acm_plane_fixed{0ull, 0ll, 0ll, 0ll};
    if (threadIdx.x == 0) {
        *a.fold_out = t;
        *a.fold_done = 0u;
    }
    if (marked != 0u)
        acm_redo_listed<T>(a, marked);
}

/* Record which cells of this warp the safety net must redo (acm_launch_redo):
 * bit k % 32 of word k / 32 of a.redo, and with LIST (a launch that folds its
 * sums) and a.fold_redo in that list too (acm_redo_listed). Every lane of the
 * warp calls it; accumulate ORs into the word (a second launch over the same
 * cells). */
template <bool LIST = false>
__device__ __forceinline__ void acm_mark_redo(const acm_step_args &a, uint32_t k, bool redo,
                                              bool accumulate)
{
    const unsigned bits = __ballot_sync(0xffffffffu, redo);
    const unsigned lane = threadIdx.x & 31u;
    if (lane == 0 && k < a.end)
        a.redo[k >> 5] = accumulate ? a.redo[k >> 5] | bits : bits;
    if (LIST && a.fold_redo != NULL && bits != 0) { /* rare: one atomic for the warp */
        unsigned base = 0;
        if (lane == 0)
            base = atomicAdd(a.fold_redo, (unsigned)__popc(bits));
        base = __shfl_sync(0xffffffffu, base, 0);
        const unsigned slot = base + (unsigned)__popc(bits & ((1u << lane) - 1u));
        if (redo && slot < ACM_FOLD_REDO_CELLS)
            a.fold_redo[1 + slot] = k;
    }
}

/* Populations of cell k of an array as stored (no streaming), public order. */
template <typename T>
__device__ __forceinline__ void acm_load_cell(const acm_gpu_grid &g, const T *src, uint32_t k,
                                              typename acm_io<T>::R f[27])
{
#pragma unroll
    for (int i = 0; i < 27; ++i)
        f[i] = acm_io<T>::ld(src, acm_idx(g, k, i));
}

/* ---- programmatic dependent launch (sm_90) ------------------------------------------
 * A step's kernels follow each other in one stream: the fused kernel, the safety
 * net's redo, the fold of the plane sums, the step count. Launched with
 * acm_launch_dependent, a kernel's blocks are scheduled once every block of the
 * kernel before it has called acm_let_dependents_start (or exited), and wait
 * in acm_wait_for_prior until that kernel has completed and its writes are
 * visible: the launch's latency hides behind the end of the kernel before.
 * Each such kernel calls acm_wait_for_prior before it touches memory. Both
 * are no-ops before sm_90 and when the kernel was launched without the
 * attribute, which asks the runtime to allow the overlap where it can (CUDA:
 * "opportunistically"); measured on sm_90 only (docs/performance.md). */
__device__ __forceinline__ void acm_wait_for_prior(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void acm_let_dependents_start(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* kernel<<<grid, block, 0, s>>>(args...) as a programmatic dependent launch,
 * with the L2 access policy window *win where win is not NULL (acm_read_once). */
template <typename... P, typename... A>
static inline cudaError_t acm_launch_dependent_in(const cudaAccessPolicyWindow *win,
                                                  void (*kernel)(P...), dim3 grid, dim3 block,
                                                  cudaStream_t s, A &&...args)
{
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c = {};
    c.gridDim = grid;
    c.blockDim = block;
    c.dynamicSmemBytes = 0;
    c.stream = s;
    c.attrs = attr;
    c.numAttrs = 1;
    if (win != NULL) {
        attr[1].id = cudaLaunchAttributeAccessPolicyWindow;
        attr[1].val.accessPolicyWindow = *win;
        c.numAttrs = 2;
    }
    return cudaLaunchKernelEx(&c, kernel, std::forward<A>(args)...);
}

template <typename... P, typename... A>
static inline cudaError_t acm_launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block,
                                               cudaStream_t s, A &&...args)
{
    return acm_launch_dependent_in(NULL, kernel, grid, block, s, std::forward<A>(args)...);
}

/* ---- the source read once (docs/performance.md, "The source read once") -----------
 * A two-array step reads each value of its source once and writes its
 * destination, which the next step reads. Where the destination fits in L2
 * with room to spare, the source's lines are marked evict-first (streaming,
 * on a hit and on a miss), so that L2 keeps the lines being written for the
 * next step rather than those read already: a 64^3 FP32 step then reads its
 * populations from L2 instead of DRAM. No set-aside of L2 is made (that limit
 * is the whole device's, the host application's to choose). The window over
 * the `bytes` at `base` into *w: false (none) where bytes is 0. */
static inline bool acm_read_once(const void *base, size_t bytes, cudaAccessPolicyWindow *w)
{
    if (base == NULL || bytes == 0)
        return false;
    *w = cudaAccessPolicyWindow{};
    w->base_ptr = const_cast<void *>(base);
    w->num_bytes = bytes;
    w->hitRatio = 1.0f;
    w->hitProp = cudaAccessPropertyStreaming;
    w->missProp = cudaAccessPropertyStreaming;
    return true;
}

/* Host-side launch shape over n items. */
static inline unsigned acm_blocks(uint64_t n, unsigned block)
{
    return (unsigned)((n + block - 1) / block);
}

#endif /* ACMLBM_CUDA_COMMON_CUH */
