/*
 * libacmlbm -- the fused pull-stream-collide kernel: one pass over memory per
 * step, walls folded into the pull (acm_pull), one thread per cell.
 * SPDX-License-Identifier: Apache-2.0
 *
 * With PULL = false the same kernel collides populations that another kernel
 * has already streamed (the paper's baseline structure). STATE is what the
 * array holds (acm_array_state): two arrays, or in place the even step (own
 * slots in, opposite slots out) or the odd one (swapped pull in, push out;
 * lib/cpu/lbm_tmpl.h). In place a cell the safety net must redo writes
 * nothing: what it read is exactly what it would overwrite, so the redo pass
 * finds its input intact.
 */
#include "kernels.cuh"

#ifndef ACM_TU_ELEM
#  error "compiled once per storage type: -DACM_TU_ELEM=ACM_ELEM_HALF, _FLOAT or _DOUBLE"
#endif

/* Register budget: blocks of up to ACM_FUSED_MAX_THREADS threads, at least
 * acm_fused_min_blocks of them resident per multiprocessor. 3 (at most 85
 * registers a thread, no spills) for the moment models with FP16 storage,
 * which are bound by instruction issue: more warps hide more latency (ACM
 * +4-6 % against 96 registers, H100). 2 (at most 128) for FP32 storage,
 * bound by memory, and for BGK, which spills below 96 registers. 1 for FP64,
 * whose kernels need 158-212 registers: capped at 128 they spilled up to 544
 * bytes a thread and ran 30-50 % slower on an H200 (docs/performance.md,
 * "Register spills"). The launches whose last block folds the sums (LAST,
 * small grids of at most 4096 blocks) inline the redo, which would take 128
 * registers: held to 80 (3) with FP32 storage, to 64 (4) with FP16. There
 * they spill 1.4 and 2.5 kB, mostly on the redo's rare path, and a 64^3 FP16
 * step is two full waves of 8 blocks a multiprocessor instead of 2.6 waves
 * of 6: 19.8 against 20.9-21.5 us (LI2018), 22.0 against 24.2 (LI2020); FP32
 * at 64 registers: LI2018 the same, LI2020 7 % slower (H100,
 * docs/performance.md "Small grids"). At 128 the 64^3 FP32 step took
 * 28.9-29.1 us against 25.7 at 80 (H200). */
#define ACM_FUSED_MAX_THREADS 256
template <typename T, int MODEL, bool LAST> struct acm_fused_min_blocks {
    static constexpr bool fp16_moment_model = sizeof(T) == 2 && MODEL != ACM_COLLISION_BGK;
    static constexpr int last = sizeof(T) == 2 ? 4 : 3;
    static constexpr int value = sizeof(T) == 8 ? 1 : LAST ? last : fp16_moment_model ? 3 : 2;
};

template <typename T, typename ADDR, int MODEL, bool PULL, int STATE, bool LAST = false>
__global__ void __launch_bounds__(ACM_FUSED_MAX_THREADS, acm_fused_min_blocks<T, MODEL, LAST>::value)
    acm_lbm_kernel(const acm_step_args a)
{
    const bool in_place = STATE != ACM_STATE_POST;
    typedef typename acm_io<T>::R R;
    const R sigma = (R)acm_io<T>::sigma; /* populations collide as stored (acm_collide) */
    const bool acm = acm_is_adaptive(MODEL);
    const bool li2020 = MODEL == ACM_COLLISION_ACM_LI2020;
    acm_wait_for_prior();
    if (acm_gate_shut(a.gate)) { /* an earlier step diverged: its state stays */
        if (LAST && a.fold_count != NULL && blockIdx.x == 0 && threadIdx.x == 0)
            acm_count_step(a.fold_count, a.gate.bad, a.fold_post); /* the step still counts */
        return;
    }
    const uint32_t k = a.first + blockIdx.x * blockDim.x + threadIdx.x;
    double rho_sum = 0.0, j_sum = 0.0, pi_sum = 0.0; /* this cell's part of the plane's sums */
    R u2max = 0;
    bool redo = false;
    if (k < a.end) {
        R f[27], o[27], F[3];
        const uint32_t ib_word = acm_ib_word(a, k); /* first: its latency hides behind the pull */
        const auto at = ADDR::at(a.g.l, k);
        bool at_face;
        if (!PULL) { /* already streamed into a.src (the baseline: alpha 1, its own array) */
#pragma unroll
            for (int i = 0; i < 27; ++i)
                f[i] = acm_io<T>::ld_scaled((const T *)a.src + acm_idx(a.g, k, i));
            at_face = acm && acm_at_face(a.g, k);
        } else {
            int32_t x, y, z;
            acm_coords(a.g, k, x, y, z);
            const acm_sources s = acm_source_offsets<1>(a.g, x, y, z);
            at_face = s.edge && acm_rule_at(a.g, x, y, z);
            int face[3];
            const int faces = s.edge && !in_place ? acm_bounce_faces(a.g, x, y, z, face) : 0;
            if (faces == 1) { /* next to one wall, inlet or outlet: a plain pull, bounced there */
                acm_pull_one_face<T, ADDR, STATE>(
                    a, k, s, face[0] >= 0 ? face[0] : face[1] >= 0 ? face[1] : face[2], f);
            } else if (faces > 1) { /* a box's edge or corner: the same across each face */
                acm_pull_walls<T, ADDR, STATE>(a, k, s, face, f);
            } else if (s.edge) { /* the face rules of any faces (f - w, scaled here) */
                acm_pull<T, 1, STATE>(a.g, (const T *)a.src, x, y, z, f);
#pragma unroll
                for (int i = 0; i < 27; ++i)
                    f[i] *= sigma;
            } else {
                acm_pull_interior<T, ADDR, STATE, true>(a, k, s, f);
            }
        }
        acm_cell_force(a, k, ib_word, F);
        acm_collide_params p = acm_cell_params(a, acm, at_face);
        R tau_unused = 0;
        R *tau = acm_cell_tau(a, MODEL, k, tau_unused);
        typename acm_math<R>::diag d;
        acm_math<R>::collide(&p, MODEL, f, F, sigma, tau, o, &d);
        /* the fallback runs in acm_launch_redo: inline it would cost 32 registers */
        redo = acm && d.fallback;
        if (!in_place) {
#pragma unroll
            for (int i = 0; i < 27; ++i)
                acm_io<T>::st_scaled(ADDR::template dst<T>(a, at, i), o[i]);
        } else if (!redo && STATE == ACM_STATE_AA_OWN) { /* even step: opposite slots */
#pragma unroll
            for (int i = 0; i < 27; ++i)
                acm_io<T>::st_scaled(ADDR::template dst<T>(a, at, acm_opp(i)), o[i]);
        } else if (!redo) { /* odd step: push (the pull's sources, derived again here: kept
                               live across the collision they cost the in-place FP16
                               kernel 5 % on an H100) */
            int32_t x, y, z;
            acm_coords(a.g, k, x, y, z);
            const acm_sources s = acm_source_offsets<1>(a.g, x, y, z);
            if (s.edge) { /* at a face: bouncing across walls (acm_store_post takes f - w) */
#pragma unroll
                for (int i = 0; i < 27; ++i)
                    o[i] *= (R)1 / sigma;
                acm_store_post<T>(a.g, (T *)a.dst, ACM_STATE_AA_OWN, x, y, z, o);
            } else {
                acm_push_interior<T, ADDR>(a, k, s, o);
            }
        }
        acm_cell_outputs(a, k, d, PULL, li2020, u2max, rho_sum, j_sum, pi_sum);
    }
    acm_let_dependents_start(); /* the rest: marks and sums */
    if (acm)
        acm_mark_redo<LAST>(a, k, redo, false);
    /* the ACM rules' inputs of the next step, per plane: max |u| (LI2018), also the
     * sums of the means (LI2020) */
    if (acm && PULL)
        acm_plane_add<li2020>(a.planes, a.g, k - threadIdx.x, a.end, k, k < a.end, u2max,
                              rho_sum, j_sum, pi_sum);
    if (LAST)
        acm_fold_last<T>(a);
}

/* The pulling kernel of one model and array state: the compile-time CSoA
 * group with 32-bit indices when the layout allows it (acm_addr_fixed),
 * else the plane pointers and 64-bit indices. A launch whose last block
 * folds the sums (a.fold_out: two arrays, an adaptive model, fixed
 * addressing; cuda/backend_step.cu) is a kernel of its own (LAST), whose
 * inlined redo (acm_redo_listed) costs the others no registers. */
template <typename T, int M, int STATE>
static cudaError_t acm_launch_pulling(const acm_step_args &a, unsigned grid, unsigned block,
                                      cudaStream_t s, const cudaAccessPolicyWindow *win)
{
    typedef acm_addr_fixed<ACM_FIXED_ALPHA> FIXED;
    constexpr bool folds = (M == ACM_COLLISION_ACM_LI2018 || M == ACM_COLLISION_ACM_LI2020) &&
                           STATE == ACM_STATE_POST;
    if constexpr (folds) {
        if (a.fold_out != NULL)
            return acm_fixed_addressing(a.g)
                       ? acm_launch_dependent_in(win,
                                                 acm_lbm_kernel<T, FIXED, M, true, STATE, true>,
                                                 grid, block, s, a)
                       : cudaErrorInvalidValue; /* the host folds with fixed addressing only */
    }
    if (acm_fixed_addressing(a.g))
        return acm_launch_dependent_in(win, acm_lbm_kernel<T, FIXED, M, true, STATE>, grid, block,
                                       s, a);
    typedef acm_addr_planes<uint64_t> PLANES;
    return acm_launch_dependent_in(win, acm_lbm_kernel<T, PLANES, M, true, STATE>, grid, block, s,
                                   a);
}

/* The launcher of this compilation's storage type; elem_dispatch.cu picks it. */
template <typename T>
cudaError_t acm_launch_lbm_elem(const acm_step_args &a, bool pull, unsigned block, cudaStream_t s,
                                const cudaAccessPolicyWindow *win)
{
    const unsigned grid = acm_blocks(a.end - a.first, block);
    cudaError_t e = cudaSuccess;
    acm_with_model(a.p.model, [&](auto m) {
        constexpr int M = decltype(m)::value;
        if (!pull)
            e = acm_launch_dependent(
                acm_lbm_kernel<T, acm_addr_planes<uint64_t>, M, false, ACM_STATE_POST>, grid, block,
                s, a);
        else if (a.g.state == ACM_STATE_AA_OWN)
            e = acm_launch_pulling<T, M, ACM_STATE_AA_OWN>(a, grid, block, s, win);
        else if (a.g.state == ACM_STATE_AA_SWAP)
            e = acm_launch_pulling<T, M, ACM_STATE_AA_SWAP>(a, grid, block, s, win);
        else
            e = acm_launch_pulling<T, M, ACM_STATE_POST>(a, grid, block, s, win);
    });
    return e;
}

template cudaError_t acm_launch_lbm_elem<acm_tu_elem>(const acm_step_args &, bool, unsigned,
                                                      cudaStream_t, const cudaAccessPolicyWindow *);

template <typename T> const void *acm_lbm_anchor_elem(void)
{
    return (const void *)acm_lbm_kernel<T, acm_addr_planes<uint64_t>, ACM_COLLISION_BGK, false,
                                        ACM_STATE_POST>;
}

template const void *acm_lbm_anchor_elem<acm_tu_elem>(void);
