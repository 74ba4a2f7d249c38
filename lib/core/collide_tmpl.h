/*
 * libacmlbm -- the D3Q27 collision of one cell (physics-spec sections 3-6),
 * written once for every real type. SPDX-License-Identifier: Apache-2.0
 *
 * Included by collide.h with
 *   ACM_R          the arithmetic type (float or double)
 *   ACM_SFX(name)  name##_f32 or name##_f64
 * Everything is a static inline function on small arrays indexed by
 * compile-time constants, so after full unrolling it lives in registers (CPU
 * SIMD lanes or one CUDA thread).
 *
 * Formulation (equal to spec section 5 to round-off, see docs/physics.md):
 * populations are stored shifted, ft_i = f_i - w_i. With the product-form
 * equilibrium e_i = f^eq_i - w_i (section 3.2) and the non-equilibrium part
 * g_i = ft_i - e_i, every model relaxes g in its moment space:
 *     m*_n = (1 - K_n) m_n(g) + (1 - K_n / 2) s_n
 * where s are the moments of the forcing source S_i = F . d f^eq_i / d u / rho
 * (whose central moments are exactly the R vector of section 4.3), and
 * ft* = e + g*. Central moments of e equal k^eq, so this is section 4.4
 * rewritten around the equilibrium: no large terms cancel, which keeps FP32
 * accurate at low Mach number.
 */
#ifndef ACM_R
#  error "collide_tmpl.h is included by collide.h only"
#endif

#define ACM__R ACM_R
#define ACM__F(name) ACM_SFX(name)

/* --- equilibrium and forcing in product form ------------------------- */

/* 1-D equilibrium factors phi(c, u) = w1(c) (1 + d(c)) as the offsets d, and
 * their derivatives d phi / d u (spec 3.2). Index 0, 1, 2 = c of -1, 0, +1. */
ACM_INLINE void ACM__F(acm_phi1d)(ACM__R u, ACM__R d[3], ACM__R dphi[3])
{
    ACM__R uu = u * u;
    d[0] = (ACM__R)3 * (uu - u);
    d[1] = (ACM__R)-1.5 * uu;
    d[2] = (ACM__R)3 * (uu + u);
    dphi[0] = u - (ACM__R)0.5;
    dphi[1] = (ACM__R)-2 * u;
    dphi[2] = u + (ACM__R)0.5;
}

/* e = f^eq(rho, u) - w in abc order, computed from small quantities only:
 * e = w (drho + rho (P - 1)) with P = prod (1 + d). */
ACM_INLINE void ACM__F(acm_equilibrium)(ACM__R drho, const ACM__R dx[3],
                                                 const ACM__R dy[3], const ACM__R dz[3],
                                                 ACM__R e[27])
{
    const ACM__R w1[3] = {(ACM__R)(1.0 / 6.0), (ACM__R)(2.0 / 3.0), (ACM__R)(1.0 / 6.0)};
    ACM__R rho = (ACM__R)1 + drho;
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int b = 0; b < 3; ++b) {
            ACM__R q = dx[a] + dy[b] + dx[a] * dy[b];
            ACM__R wab = w1[a] * w1[b];
            ACM_UNROLL
            for (int c = 0; c < 3; ++c) {
                ACM__R pm1 = q + dz[c] + q * dz[c];
                e[9 * a + 3 * b + c] = wab * w1[c] * (drho + rho * pm1);
            }
        }
    }
}

/* Forcing source S = F . grad_u f^eq / rho in abc order (BGK). */
ACM_INLINE void ACM__F(acm_force_source)(const ACM__R F[3], const ACM__R dx[3],
                                                  const ACM__R dy[3], const ACM__R dz[3],
                                                  const ACM__R px[3], const ACM__R py[3],
                                                  const ACM__R pz[3], ACM__R S[27])
{
    const ACM__R w1[3] = {(ACM__R)(1.0 / 6.0), (ACM__R)(2.0 / 3.0), (ACM__R)(1.0 / 6.0)};
    ACM__R phx[3], phy[3], phz[3];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        phx[a] = w1[a] * ((ACM__R)1 + dx[a]);
        phy[a] = w1[a] * ((ACM__R)1 + dy[a]);
        phz[a] = w1[a] * ((ACM__R)1 + dz[a]);
    }
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int b = 0; b < 3; ++b) {
            ACM_UNROLL
            for (int c = 0; c < 3; ++c)
                S[9 * a + 3 * b + c] = F[0] * px[a] * phy[b] * phz[c] +
                                       F[1] * phx[a] * py[b] * phz[c] +
                                       F[2] * phx[a] * phy[b] * pz[c];
        }
    }
}

/* --- moment transforms (spec 5.1 and 5.3), one axis at a time -------------
 * Moment (p, q, r) lives in abc slot 9p + 3q + r. Along one axis three values
 * (c = -1, 0, +1) become the raw sums (sum f, sum c f, sum c^2 f), then the
 * central moments about u (sum f (c - u)^n), with the third one taken as a
 * Hermite moment sum f ((c - u)^2 - 1/3) when `hermite` (the safety net's high
 * orders, docs/physics.md "Hermite high orders"; else monomial). The three
 * axes commute, so the basis change costs nothing: it is a constant of the
 * sweeps. `central` and `hermite` are compile-time constants after inlining
 * (acm_collide specialises on them). */

/* Raw sums along one axis, in place. */
ACM_INLINE void ACM__F(acm_raw3)(ACM__R *k, int im, int i0, int ip)
{
    const ACM__R m = k[im], z = k[i0], p = k[ip], pm = p + m;
    k[im] = pm + z;
    k[i0] = p - m;
    k[ip] = pm;
}

/* Raw sums (r0, r1, r2) along one axis -> (r0, r1 - u r0, r2 - 2u r1 + (u^2 - h) r0). */
ACM_INLINE void ACM__F(acm_shift3)(ACM__R *k, int i0, int i1, int i2, ACM__R u, ACM__R m2u,
                                   ACM__R uuh)
{
    const ACM__R r0 = k[i0], r1 = k[i1];
    k[i1] = r1 - u * r0;
    k[i2] = (k[i2] + uuh * r0) + m2u * r1;
}

/* Populations in abc slots -> raw sums along z (slot 3j + r: sum over c_z of
 * c_z^r f, j = 3a + b). Density, momentum and the second moments are sums of
 * these, so the collision's first sweep also gives them (acm_macro_zsums). */
ACM_INLINE void ACM__F(acm_zsums)(ACM__R k[27])
{
    ACM_UNROLL
    for (int j = 0; j < 9; ++j)
        ACM__F(acm_raw3)(k, 3 * j, 3 * j + 1, 3 * j + 2);
}

/* z sums -> the moments of the basis: central about u (raw ones when
 * !central, then u is unused and hermite must be 0). */
ACM_INLINE void ACM__F(acm_moments_from_zsums)(ACM__R k[27], const ACM__R u[3], int central,
                                               int hermite)
{
    ACM__R m2u[3], uuh[3];
    ACM_UNROLL
    for (int d = 0; d < 3; ++d) {
        m2u[d] = (ACM__R)-2 * u[d];
        uuh[d] = hermite ? u[d] * u[d] - (ACM__R)(1.0 / 3.0) : u[d] * u[d];
    }
    if (central) {
        ACM_UNROLL
        for (int j = 0; j < 9; ++j)
            ACM__F(acm_shift3)(k, 3 * j, 3 * j + 1, 3 * j + 2, u[2], m2u[2], uuh[2]);
    }
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int r = 0; r < 3; ++r) {
            ACM__F(acm_raw3)(k, 9 * a + r, 9 * a + 3 + r, 9 * a + 6 + r);
            if (central)
                ACM__F(acm_shift3)(k, 9 * a + r, 9 * a + 3 + r, 9 * a + 6 + r, u[1], m2u[1],
                                   uuh[1]);
        }
    }
    ACM_UNROLL
    for (int j = 0; j < 9; ++j) {
        ACM__F(acm_raw3)(k, j, 9 + j, 18 + j);
        if (central)
            ACM__F(acm_shift3)(k, j, 9 + j, 18 + j, u[0], m2u[0], uuh[0]);
    }
}

/* Scale of moment (p, q, r) in the backward sweeps' input: 1/2 per non-zero index. */
ACM_INLINE ACM__R ACM__F(acm_moment_scale)(int p, int q, int r)
{
    const int nz = (p != 0) + (q != 0) + (r != 0);
    return nz == 0 ? (ACM__R)1 : nz == 1 ? (ACM__R)0.5 : nz == 2 ? (ACM__R)0.25 : (ACM__R)0.125;
}

/* One axis of the inverse for moments (k0, k1/2, k2/2): with M1/2 = r and
 * M2/2 = q the raw moments, f(-1, 0, +1) = (q - r, k0 - 2q, q + r). */
ACM_INLINE void ACM__F(acm_bwd3)(ACM__R *k, int i0, int i1, int i2, ACM__R hu, ACM__R u2,
                                 ACM__R huuh, int central)
{
    const ACM__R k0 = k[i0], h1 = k[i1], h2 = k[i2];
    const ACM__R r = central ? hu * k0 + h1 : h1;
    const ACM__R q = central ? u2 * h1 + (huuh * k0 + h2) : h2;
    k[i0] = q - r;
    k[i1] = k0 - (ACM__R)2 * q;
    k[i2] = q + r;
}

/* Exact inverse of acm_zsums + acm_moments_from_zsums for moments scaled by
 * acm_moment_scale (what acm_relax_moments writes): the half of every
 * non-zero index saves two operations per axis and triple. Sweeps x, y, z. */
ACM_INLINE void ACM__F(acm_moments_backward)(ACM__R k[27], const ACM__R u[3], int central,
                                             int hermite)
{
    ACM__R hu[3], u2[3], huuh[3];
    ACM_UNROLL
    for (int d = 0; d < 3; ++d) {
        hu[d] = (ACM__R)0.5 * u[d];
        u2[d] = (ACM__R)2 * u[d];
        huuh[d] = hermite ? (ACM__R)0.5 * (u[d] * u[d] + (ACM__R)(1.0 / 3.0))
                          : (ACM__R)0.5 * (u[d] * u[d]);
    }
    ACM_UNROLL
    for (int j = 0; j < 9; ++j)
        ACM__F(acm_bwd3)(k, j, 9 + j, 18 + j, hu[0], u2[0], huuh[0], central);
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int r = 0; r < 3; ++r)
            ACM__F(acm_bwd3)(k, 9 * a + r, 9 * a + 3 + r, 9 * a + 6 + r, hu[1], u2[1], huuh[1],
                             central);
    }
    ACM_UNROLL
    for (int j = 0; j < 9; ++j)
        ACM__F(acm_bwd3)(k, 3 * j, 3 * j + 1, 3 * j + 2, hu[2], u2[2], huuh[2], central);
}

/* --- the equilibrium and the force in moment space -------------------------
 * The collision transforms f - w itself and never forms the equilibrium in
 * population space: the moments of f^eq - w are products of per-axis
 * factors. Along one axis the rest state w has the moments A = (1, 0, A2)
 * (A2 = 1/3 monomial, 0 Hermite) and the cell's state B = A + d, with
 * d = (0, -u, u^2) for central moments of w about u, (0, u, u^2) for raw
 * moments of f^eq / rho. Moment n of f^eq - w is then
 *   central: E = drho prod A - (prod B - prod A)
 *   raw:     E = drho prod A + rho (prod B - prod A),
 * and prod B - prod A = d_x B_y B_z + A_x (d_y B_z + A_y d_z) has no large
 * terms that cancel (FP32 stays accurate at low Mach number). Every factor
 * of a non-zero index is stored halved (the backward sweeps' scale). */
typedef struct ACM__F(acm_eq_axes) {
    ACM__R a2;      /* A2 / 2 */
    ACM__R d[3][3]; /* [axis][index]: d / 2 (index 1 and 2) */
    ACM__R b[3][3]; /* [axis][index]: B / 2 (index 1 and 2) */
    ACM__R drho, rho;
    int hermite; /* A2 = 0: prod A vanishes but for order 0 */
} ACM__F(acm_eq_axes);

ACM_INLINE void ACM__F(acm_eq_axes_make)(ACM__F(acm_eq_axes) * e, ACM__R drho, const ACM__R u[3],
                                         int central, int hermite)
{
    const ACM__R half = (ACM__R)0.5;
    e->hermite = hermite;
    e->a2 = hermite ? (ACM__R)0 : (ACM__R)(1.0 / 6.0);
    e->drho = drho;
    e->rho = (ACM__R)1 + drho;
    ACM_UNROLL
    for (int d = 0; d < 3; ++d) {
        e->d[d][0] = e->b[d][0] = (ACM__R)1; /* unused: index 0 factors are 1 and skipped */
        e->d[d][1] = e->b[d][1] = central ? -half * u[d] : half * u[d];
        e->d[d][2] = half * u[d] * u[d];
        e->b[d][2] = hermite ? e->d[d][2] : e->a2 + e->d[d][2];
    }
}

/* prod B over the non-zero indices of (p, q, r), z first (shared pairs). */
ACM_INLINE ACM__R ACM__F(acm_prod_b)(const ACM__F(acm_eq_axes) * e, int p, int q, int r)
{
    const int n[3] = {p, q, r};
    ACM__R v = (ACM__R)1;
    int have = 0;
    ACM_UNROLL
    for (int ax = 2; ax >= 0; --ax) {
        if (n[ax] == 0)
            continue;
        v = have ? v * e->b[ax][n[ax]] : e->b[ax][n[ax]];
        have = 1;
    }
    return v;
}

/* prod B - prod A for indices in {0, 2}, telescoped axis by axis. */
ACM_INLINE ACM__R ACM__F(acm_excess02)(const ACM__F(acm_eq_axes) * e, int p, int q, int r)
{
    const int n[3] = {p, q, r};
    ACM__R D = 0, P = 1;
    int have = 0;
    ACM_UNROLL
    for (int ax = 2; ax >= 0; --ax) {
        if (n[ax] == 0)
            continue;
        const ACM__R t = have ? e->d[ax][2] * P : e->d[ax][2];
        D = have ? t + e->a2 * D : t;
        P = have ? P * e->b[ax][2] : e->b[ax][2];
        have = 1;
    }
    return D;
}

/* Moment (p, q, r) != (0, 0, 0) of f^eq - w, scaled by acm_moment_scale. */
ACM_INLINE ACM__R ACM__F(acm_eq_moment)(const ACM__F(acm_eq_axes) * e, int central, int p, int q,
                                        int r)
{
    const int ones = (p == 1) + (q == 1) + (r == 1), twos = (p == 2) + (q == 2) + (r == 2);
    if (ones || e->hermite) { /* prod A = 0 */
        const ACM__R D = ACM__F(acm_prod_b)(e, p, q, r);
        return central ? -D : e->rho * D;
    }
    const ACM__R D = ACM__F(acm_excess02)(e, p, q, r);
    const ACM__R An = twos == 1 ? e->a2 : twos == 2 ? e->a2 * e->a2 : e->a2 * e->a2 * e->a2;
    return central ? e->drho * An - D : e->drho * An + e->rho * D;
}

/* Whether moment (p, q, r) of the forcing source is non-zero: central
 * moments have F on order 1 and A2 F, A2^2 F where one index is 1 and the
 * others are in {0, 2} (spec 4.3); raw ones have every moment but 000. */
ACM_INLINE int ACM__F(acm_has_source)(int central, int hermite, int p, int q, int r)
{
    const int ones = (p == 1) + (q == 1) + (r == 1), twos = (p == 2) + (q == 2) + (r == 2);
    return central ? ones == 1 && !(hermite && twos) : p + q + r > 0;
}

/* Moment (p, q, r) of the forcing source F . d f^eq / d u / rho, scaled by
 * acm_moment_scale (acm_has_source must hold). Central: F_a prod A over the
 * other axes, a the axis of index 1. Raw: the derivative of prod B, whose
 * per-axis derivative is (0, 1, 2u), halved (0, 1/2, u). */
ACM_INLINE ACM__R ACM__F(acm_source_moment)(const ACM__F(acm_eq_axes) * e, const ACM__R F[3],
                                            const ACM__R u[3], int central, int p, int q, int r)
{
    const int n[3] = {p, q, r};
    if (central) {
        const int a = p == 1 ? 0 : q == 1 ? 1 : 2, twos = (p == 2) + (q == 2) + (r == 2);
        const ACM__R hF = (ACM__R)0.5 * F[a];
        return twos == 0 ? hF : twos == 1 ? hF * e->a2 : hF * (e->a2 * e->a2);
    }
    ACM__R s = 0;
    int have = 0;
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        if (n[a] == 0)
            continue;
        ACM__R t = n[a] == 1 ? (ACM__R)0.5 * F[a] : u[a] * F[a];
        ACM_UNROLL
        for (int b = 2; b >= 0; --b)
            if (b != a && n[b] != 0)
                t = t * e->b[b][n[b]];
        s = have ? s + t : t;
        have = 1;
    }
    return s;
}

/* --- relaxation (spec 5.2) ---------------------------------------------------
 * k: moments of f - w in the basis (times sigma, the storage scale); out:
 * the relaxed moments scaled for acm_moments_backward. With E the moments of
 * f^eq - w and s those of the forcing source, every moment n relaxes as
 *     k*_n = k_n - K_n (k_n - E_n) + (1 - K_n / 2) s_n,
 * orders 0 and 1 conserved (k*_n = k_n + s_n, which keeps the populations'
 * own mass and momentum plus the force: docs/physics.md "Very low
 * viscosity"); the trace of order 2 relaxes with omega_b, its deviators with
 * omega. rate[0] = omega, rate[1] = omega_b, rate[2..5] = orders 3..6. */
ACM_INLINE void ACM__F(acm_relax_moments)(ACM__R k[27], const ACM__R rate[6], ACM__R drho,
                                          const ACM__R u[3], const ACM__R F[3], int central,
                                          int hermite, ACM__R sigma)
{
    const ACM__R one = (ACM__R)1, half = (ACM__R)0.5;
    ACM__F(acm_eq_axes) e;
    ACM__F(acm_eq_axes_make)(&e, drho, u, central, hermite);
    const ACM__R sF[3] = {sigma * F[0], sigma * F[1], sigma * F[2]};
    ACM_UNROLL
    for (int n = 1; n < 27; ++n) {
        const int p = n / 9, q = (n / 3) % 3, r = n % 3, order = p + q + r;
        const int ones = (p == 1) + (q == 1) + (r == 1);
        if (order == 1) { /* conserved: (k + sigma F_a) / 2 */
            k[n] = half * k[n] + half * sF[p == 1 ? 0 : q == 1 ? 1 : 2];
            continue;
        }
        if (order == 2 && ones == 0)
            continue; /* the diagonal of order 2: below */
        const ACM__R w = rate[order == 2 ? 0 : order - 1], c = ACM__F(acm_moment_scale)(p, q, r);
        ACM__R v = (sigma * w) * ACM__F(acm_eq_moment)(&e, central, p, q, r);
        if (ACM__F(acm_has_source)(central, hermite, p, q, r))
            v = v + (one - half * w) * ACM__F(acm_source_moment)(&e, sF, u, central, p, q, r);
        k[n] = (c * (one - w)) * k[n] + v;
    }
    /* order 2, diagonal (200, 020, 002 at slots 18, 6, 2; scale 1/2) */
    const int slot[3] = {18, 6, 2};
    const ACM__R w = rate[0], wb = rate[1];
    ACM__R E[3], g[3], s[3];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        E[a] = sigma * ACM__F(acm_eq_moment)(&e, central, a == 0 ? 2 : 0, a == 1 ? 2 : 0,
                                             a == 2 ? 2 : 0);
        g[a] = k[slot[a]] - (ACM__R)2 * E[a];
        s[a] = central ? (ACM__R)0 : (ACM__R)2 * u[a] * sF[a]; /* raw: 2 u_a F_a */
    }
    ACM__R T = (one - wb) * (g[0] + g[1] + g[2]);
    ACM__R D1 = (one - w) * (g[0] - g[1]);
    ACM__R D2 = (one - w) * (g[0] - g[2]);
    if (!central) {
        T = T + (one - half * wb) * (s[0] + s[1] + s[2]);
        D1 = D1 + (one - half * w) * (s[0] - s[1]);
        D2 = D2 + (one - half * w) * (s[0] - s[2]);
    }
    const ACM__R sixth = (ACM__R)(1.0 / 6.0);
    k[18] = sixth * ((T + D1) + D2) + E[0];
    k[6] = sixth * ((T + D2) - (ACM__R)2 * D1) + E[1];
    k[2] = sixth * ((T + D1) - (ACM__R)2 * D2) + E[2];
}

/* --- one cell ----------------------------------------------------------- */

/* Per-cell macroscopic quantities reported back to the caller. */
typedef struct ACM__F(acm_cell_diag) {
    ACM__R rho;  /* density */
    ACM__R u[3]; /* half-force velocity */
    ACM__R pi;   /* |Pi|, Frobenius norm of sum f c c (ACM_LI2020 only) */
    int fallback; /* 1 when the safety net must redo the cell (acm_collide_fallback) */
} ACM__F(acm_cell_diag);

/* Density deviation and half-force velocity from the z sums (acm_zsums) of
 * populations times sigma. */
ACM_INLINE void ACM__F(acm_macro_zsums)(const ACM__R k[27], const ACM__R F[3], ACM__R sigma,
                                       ACM__R *drho, ACM__R u[3])
{
    ACM__R X[3], Y[3], jz = k[1];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        X[a] = (k[9 * a] + k[9 * a + 3]) + k[9 * a + 6]; /* sum over b, c at c_x = a - 1 */
        Y[a] = (k[3 * a] + k[9 + 3 * a]) + k[18 + 3 * a]; /* sum over a, c at c_y = a - 1 */
    }
    ACM_UNROLL
    for (int j = 1; j < 9; ++j)
        jz += k[3 * j + 1];
    const ACM__R is = (ACM__R)1 / sigma, d = ((X[0] + X[1]) + X[2]) * is;
    const ACM__R inv_rho = ACM__F(acm_rcp)((ACM__R)1 + d);
    *drho = d;
    u[0] = ((X[2] - X[0]) * is + (ACM__R)0.5 * F[0]) * inv_rho;
    u[1] = ((Y[2] - Y[0]) * is + (ACM__R)0.5 * F[1]) * inv_rho;
    u[2] = (jz * is + (ACM__R)0.5 * F[2]) * inv_rho;
}

/* |Pi|, the Frobenius norm of sum f c c, from the z sums of f - w (times sigma). */
ACM_INLINE ACM__R ACM__F(acm_pi_zsums)(const ACM__R k[27], ACM__R sigma)
{
#define ACM__S(a, b, r) k[9 * (a) + 3 * (b) + (r)]
    ACM__R pxx = ACM__S(0, 0, 0) + ACM__S(2, 0, 0), pyy = ACM__S(0, 0, 0) + ACM__S(0, 2, 0);
    ACM__R pxz = ACM__S(2, 0, 1) - ACM__S(0, 0, 1), pyz = ACM__S(0, 2, 1) - ACM__S(0, 0, 1);
    ACM__R pzz = (ACM__S(0, 0, 2) + ACM__S(1, 0, 2)) + ACM__S(2, 0, 2);
    ACM_UNROLL
    for (int b = 1; b < 3; ++b) {
        pxx += ACM__S(0, b, 0) + ACM__S(2, b, 0);
        pyy += ACM__S(b, 0, 0) + ACM__S(b, 2, 0);
        pxz += ACM__S(2, b, 1) - ACM__S(0, b, 1);
        pyz += ACM__S(b, 2, 1) - ACM__S(b, 0, 1);
        pzz += (ACM__S(0, b, 2) + ACM__S(1, b, 2)) + ACM__S(2, b, 2);
    }
    ACM__R pxy = (ACM__S(2, 2, 0) - ACM__S(2, 0, 0)) - (ACM__S(0, 2, 0) - ACM__S(0, 0, 0));
#undef ACM__S
    const ACM__R is = (ACM__R)1 / sigma, third = (ACM__R)(1.0 / 3.0);
    pxx = third + pxx * is;
    pyy = third + pyy * is;
    pzz = third + pzz * is;
    pxy *= is;
    pxz *= is;
    pyz *= is;
    return ACM_SQRT(pxx * pxx + pyy * pyy + pzz * pzz +
                    (ACM__R)2 * (pxy * pxy + pxz * pxz + pyz * pyz));
}

/* Adaptive high-order rates (spec 6.4) into rate[1..5]; rate[0] = omega.
 * pi: |Pi| of the cell (ACM_LI2020). */
ACM_INLINE void ACM__F(acm_adaptive_rates)(const acm_collide_params *p, int model, ACM__R pi,
                                           ACM__R rho, const ACM__R u[3], ACM__R *tau_state,
                                           ACM__R rate[6])
{
    ACM__R umag = ACM_SQRT(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    if (model == ACM_COLLISION_ACM_LI2018) {
        ACM__R ratio = umag * (ACM__R)p->inv_umax;
        ACM_UNROLL
        for (int o = 0; o < 4; ++o) {
            ACM__R nu = ((ACM__R)-4 * ratio + (ACM__R)5) * (ACM__R)p->li2018_nu0[o];
            rate[2 + o] = ACM__F(acm_rcp)((ACM__R)3 * nu + (ACM__R)0.5);
        }
    } else { /* ACM_LI2020: tau* = theta . (rho/<rho>, |j|/<|j|>, |Pi|/<|Pi|>, 1) */
        ACM__R ts = (ACM__R)p->li2020_theta[0] * rho * (ACM__R)p->inv_mean_rho +
                    (ACM__R)p->li2020_theta[1] * rho * umag * (ACM__R)p->inv_mean_j +
                    (ACM__R)p->li2020_theta[2] * pi * (ACM__R)p->inv_mean_pi +
                    (ACM__R)p->li2020_theta[3];
        ACM__R prev = *tau_state;
        ts = ((ts > (ACM__R)0) & (ts < (ACM__R)1e30)) ? ts : prev; /* keep tau* if <= 0 or not finite */
        *tau_state = ts;
        ACM__R wh = ACM__F(acm_rcp)(ts + (ACM__R)0.5);
        rate[2] = rate[3] = rate[4] = rate[5] = wh;
    }
    /* safety net: [1, max_high_order_rate]; without it [0, 2] (stability limit) */
    const ACM__R wmin = (ACM__R)p->rate_min, wmax = (ACM__R)p->rate_max;
    ACM_UNROLL
    for (int o = 2; o < 6; ++o)
        rate[o] = rate[o] < wmin ? wmin : (rate[o] > wmax ? wmax : rate[o]);
    rate[1] = rate[2]; /* bulk moment k9 grouped with the order-3 rate (spec 6.2 item 3) */
}

/* Density deviation and half-force velocity of shifted populations (abc order). */
ACM_INLINE void ACM__F(acm_cell_macro)(const ACM__R f[27], const ACM__R F[3], ACM__R *drho,
                                      ACM__R u[3])
{
    ACM__R k[27];
    ACM_UNROLL
    for (int n = 0; n < 27; ++n)
        k[n] = f[n];
    ACM__F(acm_zsums)(k);
    ACM__F(acm_macro_zsums)(k, F, (ACM__R)1, drho, u);
}

/* The start of every collision: populations fin (public order, times sigma)
 * into abc slots of k as z sums (acm_zsums), density and velocity, the
 * diagnostics (pi 0, no fallback). */
ACM_INLINE void ACM__F(acm_collide_start)(const ACM__R fin[27], const ACM__R F[3], ACM__R sigma,
                                         ACM__R k[27], ACM__R *drho, ACM__R u[3],
                                         ACM__F(acm_cell_diag) * diag)
{
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        k[acm_abc(i)] = fin[i];
    ACM__F(acm_zsums)(k);
    ACM__F(acm_macro_zsums)(k, F, sigma, drho, u);
    diag->rho = (ACM__R)1 + *drho;
    diag->u[0] = u[0];
    diag->u[1] = u[1];
    diag->u[2] = u[2];
    diag->pi = 0;
    diag->fallback = 0;
}

/* Whether a model's moments are central (all but RM-MRT). */
ACM_INLINE int ACM__F(acm_central)(int model) { return model != ACM_COLLISION_RM_MRT; }

/* Whether a model relaxes central Hermite moments (the ACM safety net's high orders). */
ACM_INLINE int ACM__F(acm_hermite)(const acm_collide_params *p, int model)
{
    return ACM__F(acm_central)(model) && p->hermite_high_orders;
}

/* Relaxation rates {omega, omega_b, omega_3..omega_6} of a moment model. */
ACM_INLINE void ACM__F(acm_rates)(const acm_collide_params *p, int model, ACM__R pi, ACM__R rho,
                                 const ACM__R u[3], ACM__R *tau_state, ACM__R rate[6])
{
    rate[0] = (ACM__R)p->omega;
    if (model == ACM_COLLISION_BGK) { /* BGK = every rate omega (spec 4.5) */
        rate[1] = rate[2] = rate[3] = rate[4] = rate[5] = rate[0];
    } else if (model == ACM_COLLISION_CM_MRT || model == ACM_COLLISION_RM_MRT) {
        rate[1] = (ACM__R)p->rate_b;
        rate[2] = rate[3] = rate[4] = rate[5] = (ACM__R)p->rate_h;
    } else {
        ACM__F(acm_adaptive_rates)(p, model, pi, rho, u, tau_state, rate);
    }
}

/* Stage 1 in the basis given by hermite (acm_hermite). */
ACM_INLINE void ACM__F(acm_collide_stage1_in)(const acm_collide_params *p, int model, int hermite,
                                             const ACM__R fin[27], const ACM__R F[3],
                                             ACM__R sigma, ACM__R *tau_state, ACM__R k[27],
                                             ACM__F(acm_cell_diag) * diag)
{
    const int central = ACM__F(acm_central)(model);
    ACM__R drho, u[3], rate[6];
    ACM__F(acm_collide_start)(fin, F, sigma, k, &drho, u, diag);
    if (model == ACM_COLLISION_ACM_LI2020)
        diag->pi = ACM__F(acm_pi_zsums)(k, sigma);
    ACM__F(acm_rates)(p, model, diag->pi, diag->rho, u, tau_state, rate);
    ACM__F(acm_moments_from_zsums)(k, u, central, hermite);
    ACM__F(acm_relax_moments)(k, rate, drho, u, F, central, hermite, sigma);
}

/*
 * Stage 1 of the moment-space collision (every model but BGK): populations
 * fin (shifted, public order, times sigma) and force F -> the relaxed moments
 * k, scaled for acm_collide_stage2 (the GPU's split kernels store them
 * between the stages), and the diagnostics (rho, u of the cell).
 */
ACM_INLINE void ACM__F(acm_collide_stage1)(const acm_collide_params *p, int model,
                                          const ACM__R fin[27], const ACM__R F[3], ACM__R sigma,
                                          ACM__R *tau_state, ACM__R k[27],
                                          ACM__F(acm_cell_diag) * diag)
{
    ACM__F(acm_collide_stage1_in)(p, model, ACM__F(acm_hermite)(p, model), fin, F, sigma,
                                  tau_state, k, diag);
}

/* Stage 2 in the basis given by hermite. */
ACM_INLINE void ACM__F(acm_collide_stage2_in)(int model, int hermite, ACM__R k[27],
                                             const ACM__R u[3], ACM__R fout[27])
{
    ACM__F(acm_moments_backward)(k, u, ACM__F(acm_central)(model), hermite);
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        fout[i] = k[acm_abc(i)];
}

/* Stage 2: populations (public order, times sigma) from the relaxed moments k
 * of stage 1 (consumed); u: the cell's velocity (diag->u). */
ACM_INLINE void ACM__F(acm_collide_stage2)(const acm_collide_params *p, int model, ACM__R k[27],
                                          const ACM__R u[3], ACM__R fout[27])
{
    ACM__F(acm_collide_stage2_in)(model, ACM__F(acm_hermite)(p, model), k, u, fout);
}

/* The safety net's floor of every population (public order, shifted, times
 * sigma): sigma (floor_ratio f^eq_i(rho, u) - w_i), f^eq in product form. */
ACM_INLINE void ACM__F(acm_floor)(const acm_collide_params *p, ACM__R rho, const ACM__R u[3],
                                 ACM__R sigma, ACM__R lo[27])
{
    /* phi(c, u) = w1(c) (1 + d(c, u)) (acm_phi1d): 1/6 + (u^2 + c u) / 2 for
     * c = -1, +1 and 2/3 - u^2 for c = 0 */
    ACM__R phi[3][3];
    ACM_UNROLL
    for (int d = 0; d < 3; ++d) {
        const ACM__R uu = u[d] * u[d], side = (ACM__R)0.5 * uu + (ACM__R)(1.0 / 6.0);
        phi[d][0] = side - (ACM__R)0.5 * u[d];
        phi[d][1] = (ACM__R)(2.0 / 3.0) - uu;
        phi[d][2] = side + (ACM__R)0.5 * u[d];
    }
    const ACM__R s = sigma * (ACM__R)p->floor_ratio * rho;
    ACM__R X[3];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a)
        X[a] = s * phi[0][a];
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        lo[i] = (X[acm_cx(i) + 1] * phi[1][acm_cy(i) + 1]) * phi[2][acm_cz(i) + 1] -
                sigma * (ACM__R)acm_weight(i);
}

/* The safety net's test: is a post-collision population among [first,
 * first + count) (shifted, public order, times sigma) below its floor
 * (acm_floor)? With floor_ratio 0 this is the plain positivity test. */
ACM_INLINE int ACM__F(acm_below_floor)(const acm_collide_params *p, ACM__R rho, const ACM__R u[3],
                                      ACM__R sigma, const ACM__R fout[27], int first, int count)
{
    ACM__R lo[27];
    ACM__F(acm_floor)(p, rho, u, sigma, lo);
    int below = 0;
    ACM_UNROLL
    for (int i = first; i < first + count; ++i)
        below |= fout[i] < lo[i];
    return below;
}

/* BGK in population space (the cheapest): f* = (1 - omega) f + omega f^eq + (1 - omega/2) S. */
ACM_INLINE void ACM__F(acm_collide_bgk)(const acm_collide_params *p, const ACM__R fin[27],
                                       const ACM__R F[3], ACM__R sigma, ACM__R fout[27],
                                       ACM__F(acm_cell_diag) * diag)
{
    ACM__R f[27], k[27], e[27], S[27], drho, u[3], dx[3], dy[3], dz[3], px[3], py[3], pz[3];
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        f[acm_abc(i)] = fin[i];
    ACM__F(acm_collide_start)(fin, F, sigma, k, &drho, u, diag);
    ACM__F(acm_phi1d)(u[0], dx, px);
    ACM__F(acm_phi1d)(u[1], dy, py);
    ACM__F(acm_phi1d)(u[2], dz, pz);
    ACM__F(acm_equilibrium)(drho, dx, dy, dz, e);
    ACM__F(acm_force_source)(F, dx, dy, dz, px, py, pz, S);
    const ACM__R w = (ACM__R)p->omega, a = (ACM__R)1 - w;
    const ACM__R sw = sigma * w, sb = sigma * ((ACM__R)1 - (ACM__R)0.5 * w);
    ACM_UNROLL
    for (int i = 0; i < 27; ++i) {
        const int n = acm_abc(i);
        fout[i] = a * f[n] + (sw * e[n] + sb * S[n]);
    }
}

/* One moment-space collision in the basis given by hermite, and the safety
 * net's floor test for the ACM modes. */
ACM_INLINE void ACM__F(acm_collide_in)(const acm_collide_params *p, int model, int hermite,
                                      const ACM__R fin[27], const ACM__R F[3], ACM__R sigma,
                                      ACM__R *tau_state, ACM__R fout[27],
                                      ACM__F(acm_cell_diag) * diag)
{
    ACM__R k[27];
    ACM__F(acm_collide_stage1_in)(p, model, hermite, fin, F, sigma, tau_state, k, diag);
    ACM__F(acm_collide_stage2_in)(model, hermite, k, diag->u, fout);
    if (acm_is_adaptive(model))
        diag->fallback = (p->safety_net != 0) &
                         ACM__F(acm_below_floor)(p, diag->rho, diag->u, sigma, fout, 0, 27);
}

/*
 * Collide one cell.
 *   model  p->model, passed separately so that a caller looping over cells
 *          can make it a compile-time constant (one specialised loop per model)
 *   fin    shifted populations f - w in public order (after streaming), times
 *          sigma: the storage scale (FP16 storage keeps f - w times 2^15;
 *          the transforms are linear, so the scale costs nothing inside)
 *   F      total force density on the cell
 *   tau_state  per-cell tau* of ACM_LI2020 (read and updated), else unused
 *   fout   shifted post-collision populations in public order, times sigma
 */
ACM_INLINE void ACM__F(acm_collide)(const acm_collide_params *p, int model, const ACM__R fin[27],
                                   const ACM__R F[3], ACM__R sigma, ACM__R *tau_state,
                                   ACM__R fout[27], ACM__F(acm_cell_diag) * diag)
{
    if (model == ACM_COLLISION_BGK) {
        ACM__F(acm_collide_bgk)(p, fin, F, sigma, fout, diag);
        return;
    }
    const bool adaptive = acm_is_adaptive(model);
    if (adaptive && p->hermite_high_orders) /* one specialised path per basis */
        ACM__F(acm_collide_in)(p, model, 1, fin, F, sigma, tau_state, fout, diag);
    else if (adaptive)
        ACM__F(acm_collide_in)(p, model, 0, fin, F, sigma, tau_state, fout, diag);
    else
        ACM__F(acm_collide_in)(p, model, ACM__F(acm_hermite)(p, model), fin, F, sigma, tau_state,
                               fout, diag);
}

/*
 * Fallback of the ACM safety net (spec 6.4 item 4, extended): for the cells
 * whose acm_collide() reported diag->fallback (populations not scaled).
 *   1. collide again with the De Rosis rates (high-order rates and omega_b 1 on
 *      monomial moments: fewer fallbacks than the Hermite ones, measured);
 *   2. if a population is still below the floor, blend towards the fully
 *      relaxed state t (every rate 1, omega too): out = t + s (out - t) with
 *      the largest s in [0, 1] that lifts every population to the floor. This
 *      adds viscosity to that one cell for that one step (an entropic-limiter
 *      style repair); mass and momentum are those of the collision.
 */
ACM_INLINE void ACM__F(acm_collide_fallback)(const acm_collide_params *p,
                                                      const ACM__R fin[27], const ACM__R F[3],
                                                      ACM__R fout[27])
{
    acm_collide_params q = *p;
    q.model = ACM_COLLISION_CM_MRT;
    q.rate_b = 1.0;
    q.rate_h = 1.0;
    q.hermite_high_orders = 0;
    ACM__R k[27], t[27], lo[27];
    ACM__F(acm_cell_diag) diag;
    ACM__F(acm_collide_stage1)(&q, ACM_COLLISION_CM_MRT, fin, F, (ACM__R)1, 0, k, &diag);
    ACM__F(acm_collide_stage2)(&q, ACM_COLLISION_CM_MRT, k, diag.u, fout);
    ACM__F(acm_floor)(p, diag.rho, diag.u, (ACM__R)1, lo);
    int below = 0;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        below |= fout[i] < lo[i];
    if (!below)
        return;
    q.omega = 1.0;
    ACM__F(acm_collide_stage1)(&q, ACM_COLLISION_CM_MRT, fin, F, (ACM__R)1, 0, k, &diag);
    ACM__F(acm_collide_stage2)(&q, ACM_COLLISION_CM_MRT, k, diag.u, t);
    ACM__R s = 1;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i) {
        if (fout[i] < lo[i]) { /* t[i] <= fout[i]: only t itself helps */
            const ACM__R si = t[i] > fout[i] ? (t[i] - lo[i]) / (t[i] - fout[i]) : (ACM__R)0;
            s = si < s ? si : s;
        }
    }
    s = s > (ACM__R)0 ? s : (ACM__R)0;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        fout[i] = t[i] + s * (fout[i] - t[i]);
}

#undef ACM__R
#undef ACM__F
