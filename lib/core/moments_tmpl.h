/*
 * libacmlbm -- moment encoding for one real type (moments.h has the model).
 * Included by moments.h with ACM_R and ACM_SFX set, like collide_tmpl.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACM_R
#  error "moments_tmpl.h is included by moments.h only"
#endif

#define ACM__R ACM_R
#define ACM__F(name) ACM_SFX(name)

/* The 10 moments (moments.h) of shifted post-collision populations g = f - w
 * in public order. Small quantities only: the density's 1 and the lattice's
 * c_s^2 never enter a sum. */
ACM_INLINE void ACM__F(acm_mom_encode)(const ACM__R g[27], ACM__R m[ACM_MOMENTS])
{
    ACM__R s[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    ACM_UNROLL
    for (int i = 0; i < 27; ++i) {
        const int cx = acm_cx(i), cy = acm_cy(i), cz = acm_cz(i);
        const ACM__R v = g[i];
        s[0] += v;
        s[1] += (ACM__R)cx * v;
        s[2] += (ACM__R)cy * v;
        s[3] += (ACM__R)cz * v;
        s[4] += (ACM__R)(cx * cx) * v;
        s[5] += (ACM__R)(cy * cy) * v;
        s[6] += (ACM__R)(cz * cz) * v;
        s[7] += (ACM__R)(cx * cy) * v;
        s[8] += (ACM__R)(cx * cz) * v;
        s[9] += (ACM__R)(cy * cz) * v;
    }
    const ACM__R rho = (ACM__R)1 + s[0], inv = (ACM__R)1 / rho;
    const ACM__R third = (ACM__R)(1.0 / 3.0);
    const ACM__R u[3] = {s[1] * inv, s[2] * inv, s[3] * inv};
    m[0] = s[0];
    m[1] = u[0];
    m[2] = u[1];
    m[3] = u[2];
    m[4] = (s[4] - third * s[0]) - rho * u[0] * u[0];
    m[5] = (s[5] - third * s[0]) - rho * u[1] * u[1];
    m[6] = (s[6] - third * s[0]) - rho * u[2] * u[2];
    m[7] = s[7] - rho * u[0] * u[1];
    m[8] = s[8] - rho * u[0] * u[2];
    m[9] = s[9] - rho * u[1] * u[2];
}

/* The 1-D factors of one axis at velocity u for c = a - 1: the equilibrium
 * offset d (phi = w1 (1 + d)), phi itself and H1 = d phi / d u. */
ACM_INLINE void ACM__F(acm_mom_axis)(ACM__R u, int a, ACM__R *d, ACM__R *phi, ACM__R *h1)
{
    const ACM__R uu = u * u;
    if (a == 1) {
        *d = (ACM__R)-1.5 * uu;
        *phi = (ACM__R)(2.0 / 3.0) - uu;
        *h1 = (ACM__R)-2 * u;
    } else {
        const ACM__R half = a == 2 ? (ACM__R)0.5 : (ACM__R)-0.5, cu = a == 2 ? u : -u;
        *d = (ACM__R)3 * (uu + cu);
        *phi = (ACM__R)0.5 * (uu + cu) + (ACM__R)(1.0 / 6.0);
        *h1 = u + half;
    }
}

/* Shifted population i (public order) that moments m stand for. The one
 * formula of the storage: the CPU's projection and the GPU's pull both use it. */
ACM_INLINE ACM__R ACM__F(acm_mom_population)(const ACM__R m[ACM_MOMENTS], int i)
{
    const int a = acm_cx(i) + 1, b = acm_cy(i) + 1, c = acm_cz(i) + 1;
    ACM__R dx, px, hx, dy, py, hy, dz, pz, hz;
    ACM__F(acm_mom_axis)(m[1], a, &dx, &px, &hx);
    ACM__F(acm_mom_axis)(m[2], b, &dy, &py, &hy);
    ACM__F(acm_mom_axis)(m[3], c, &dz, &pz, &hz);
    const ACM__R h2x = a == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    const ACM__R h2y = b == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    const ACM__R h2z = c == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    /* e = w (drho + rho (P - 1)), P - 1 telescoped as in acm_equilibrium */
    const ACM__R q = dx + dy + dx * dy, pm1 = q + dz + q * dz;
    const ACM__R w = (ACM__R)acm_weight(i), rho = (ACM__R)1 + m[0];
    const ACM__R e = w * (m[0] + rho * pm1);
    const ACM__R pyz = py * pz;
    return e + (m[4] * h2x * pyz + px * (m[5] * h2y * pz + m[6] * py * h2z)) +
           (hx * (m[7] * hy * pz + m[8] * py * hz) + m[9] * px * hy * hz);
}

/* All 27 shifted populations of moments m, public order. */
ACM_INLINE void ACM__F(acm_mom_populations)(const ACM__R m[ACM_MOMENTS], ACM__R g[27])
{
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        g[i] = ACM__F(acm_mom_population)(m, i);
}

/* m as 16-bit storage keeps it (moments.h: FP16 times a scale, the velocity
 * FP32; the host's image of the GPU's stores and loads). */
ACM_INLINE void ACM__F(acm_mom_quantize16)(ACM__R m[ACM_MOMENTS])
{
    ACM_UNROLL
    for (int n = 0; n < ACM_MOMENTS; ++n) {
        if (acm_mom16_half(n)) {
            const ACM__R s = (ACM__R)acm_mom16_scale(n);
            m[n] = (ACM__R)acm_half_round((float)(m[n] * s)) * ((ACM__R)1 / s);
        } else {
            m[n] = (ACM__R)(float)m[n];
        }
    }
}

/* Replace shifted post-collision populations g by the ones their moments
 * stand for, as stored with `bits` 32/64 (exact) or 16 (quantised): what a
 * cell of moment storage streams. */
ACM_INLINE void ACM__F(acm_mom_project)(ACM__R g[27], int bits)
{
    ACM__R m[ACM_MOMENTS];
    ACM__F(acm_mom_encode)(g, m);
    if (bits == 16)
        ACM__F(acm_mom_quantize16)(m);
    ACM__F(acm_mom_populations)(m, g);
}

#undef ACM__R
#undef ACM__F
