/*
 * libacmlbm -- body of the CPU row kernels for one real type; included by
 * cpu/kernel.c with ACM_R and ACM_SFX set, like collide_tmpl.h.
 * SPDX-License-Identifier: Apache-2.0
 *
 * One loop per collision model, each with the model as a compile-time
 * constant, so that the compiler vectorises the whole collision across the
 * cells of the row (the body is straight-line code after inlining).
 */

/* Collide cells [0, n) of the row for a fixed model. */
static inline __attribute__((always_inline)) void
ACM_SFX(row_model)(const acm_row_args *a, const int model)
{
    const ACM_R *restrict fin = (const ACM_R *)a->fin;
    ACM_R *restrict fout = (ACM_R *)a->fout;
    const ACM_R *restrict fx = (const ACM_R *)a->force[0];
    const ACM_R *restrict fy = (const ACM_R *)a->force[1];
    const ACM_R *restrict fz = (const ACM_R *)a->force[2];
    const ACM_R *restrict ix = (const ACM_R *)a->force_ib[0];
    const ACM_R *restrict iy = (const ACM_R *)a->force_ib[1];
    const ACM_R *restrict iz = (const ACM_R *)a->force_ib[2];
    ACM_R *restrict scratch = (ACM_R *)a->scratch;
    ACM_R *restrict rho = scratch, *restrict u2 = scratch + a->n, *restrict pi = scratch + 2 * a->n;
    ACM_R *restrict fb = scratch + 3 * a->n;
    ACM_R *restrict tau = a->tau ? (ACM_R *)a->tau : scratch + 4 * a->n; /* unused unless LI2020 */
    const ACM_R F0x = (ACM_R)a->force0[0], F0y = (ACM_R)a->force0[1], F0z = (ACM_R)a->force0[2];
    const int32_t n = a->n, st = a->stride;

#pragma GCC ivdep
    for (int32_t x = 0; x < n; ++x) {
        ACM_R f[27], o[27], F[3] = {F0x + fx[x] + ix[x], F0y + fy[x] + iy[x], F0z + fz[x] + iz[x]};
        ACM_UNROLL
        for (int i = 0; i < 27; ++i)
            f[i] = fin[i * st + x];
        ACM_SFX(acm_cell_diag) d;
        ACM_SFX(acm_collide)(a->params, model, f, F, (ACM_R)1, &tau[x], o, &d);
        ACM_UNROLL
        for (int i = 0; i < 27; ++i)
            fout[i * st + x] = o[i];
        rho[x] = d.rho;
        u2[x] = d.u[0] * d.u[0] + d.u[1] * d.u[1] + d.u[2] * d.u[2];
        pi[x] = d.pi;
        fb[x] = (ACM_R)d.fallback;
    }
}

/* Moment storage (lib/core/moments.h): collide cells [0, n) in moment space,
 * the safety net's limiter for the adaptive models, and write the populations
 * of the moments as stored (a->project bits) to fout; the limited cells are
 * the fallbacks (fb). */
static void ACM_SFX(row_moments)(const acm_row_args *a)
{
    const ACM_R *restrict fin = (const ACM_R *)a->fin;
    ACM_R *restrict fout = (ACM_R *)a->fout;
    ACM_R *restrict scratch = (ACM_R *)a->scratch;
    ACM_R *restrict rho = scratch, *restrict u2 = scratch + a->n, *restrict pi = scratch + 2 * a->n;
    ACM_R *restrict fb = scratch + 3 * a->n;
    ACM_R *restrict tau = a->tau ? (ACM_R *)a->tau : scratch + 4 * a->n;
    const int32_t n = a->n, st = a->stride, model = a->params->model;
    const int limit = acm_is_adaptive(model) && a->params->safety_net;
    const int closure = acm_mom_closure(model);
    for (int32_t x = 0; x < n; ++x) {
        ACM_R f[27], s[ACM_MOMENTS], m[ACM_MOMENTS], F[3];
        for (int b = 0; b < 3; ++b)
            F[b] = (ACM_R)a->force0[b] + ((const ACM_R *)a->force[b])[x] +
                   ((const ACM_R *)a->force_ib[b])[x];
        for (int i = 0; i < 27; ++i)
            f[i] = fin[i * st + x];
        ACM_SFX(acm_mom_sums)(f, s);
        ACM_SFX(acm_cell_diag) d;
        ACM_SFX(acm_mom_collide)(a->params, model, s, F, &tau[x], m, &d);
        fb[x] = limit ? (ACM_R)ACM_SFX(acm_mom_limit)(a->params, m) : (ACM_R)0;
        if (a->project == 16)
            ACM_SFX(acm_mom_quantize16)(m);
        ACM_SFX(acm_mom_populations)(m, closure, f);
        for (int i = 0; i < 27; ++i)
            fout[i * st + x] = f[i];
        rho[x] = d.rho;
        u2[x] = d.u[0] * d.u[0] + d.u[1] * d.u[1] + d.u[2] * d.u[2];
        pi[x] = d.pi;
    }
}

static void ACM_SFX(collide_row)(const acm_row_args *a, acm_row_diag *diag)
{
    if (a->project)
        ACM_SFX(row_moments)(a);
    else
        switch (a->params->model) {
        case ACM_COLLISION_BGK: ACM_SFX(row_model)(a, ACM_COLLISION_BGK); break;
        case ACM_COLLISION_RM_MRT: ACM_SFX(row_model)(a, ACM_COLLISION_RM_MRT); break;
        case ACM_COLLISION_CM_MRT: ACM_SFX(row_model)(a, ACM_COLLISION_CM_MRT); break;
        case ACM_COLLISION_ACM_LI2018: ACM_SFX(row_model)(a, ACM_COLLISION_ACM_LI2018); break;
        default: ACM_SFX(row_model)(a, ACM_COLLISION_ACM_LI2020); break;
        }

    /* reductions and the rare safety-net fallbacks, in scalar code */
    const ACM_R *scratch = (const ACM_R *)a->scratch;
    const int32_t n = a->n, st = a->stride;
    const ACM_R *rho = scratch, *u2 = scratch + n, *pi = scratch + 2 * n, *fb = scratch + 3 * n;
    acm_row_diag r = {0.0, 0.0, 0.0, 0.0, 0, -1, 0.0, 0.0};
    for (int32_t x = 0; x < n; ++x) {
        double v = (double)u2[x];
        /* NaN fails both comparisons; a density <= 0 can come with any speed */
        if ((!(v <= a->u2_limit) || !((double)rho[x] > 0.0)) && r.first_bad < 0) {
            r.first_bad = x;
            r.bad_rho = (double)rho[x];
            r.bad_u2 = v;
        }
        if (v > r.max_u2)
            r.max_u2 = v;
        r.sum_rho += (double)rho[x];
        r.sum_j += (double)rho[x] * sqrt(v);
        r.sum_pi += (double)pi[x];
        if (fb[x] != (ACM_R)0 && a->project) { /* moment storage: limited in row_moments */
            r.fallbacks++;
        } else if (fb[x] != (ACM_R)0) {
            const ACM_R *fin = (const ACM_R *)a->fin;
            ACM_R *fout = (ACM_R *)a->fout;
            ACM_R f[27], o[27];
            ACM_R F[3];
            for (int b = 0; b < 3; ++b)
                F[b] = (ACM_R)a->force0[b] + ((const ACM_R *)a->force[b])[x] +
                       ((const ACM_R *)a->force_ib[b])[x];
            for (int i = 0; i < 27; ++i)
                f[i] = fin[i * st + x];
            ACM_SFX(acm_collide_fallback)(a->params, f, F, o);
            for (int i = 0; i < 27; ++i)
                fout[i * st + x] = o[i];
            r.fallbacks++;
        }
    }
    *diag = r;
}
