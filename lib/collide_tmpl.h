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

/* --- central-moment chimera sweeps (spec 5.1 and 5.3) ------------------ */

ACM_INLINE void ACM__F(acm_fwd3)(ACM__R *k, int im, int i0, int ip, ACM__R u,
                                          ACM__R uu)
{
    ACM__R m = k[im], z = k[i0], p = k[ip];
    ACM__R s = p - m;
    ACM__R k0 = m + z + p;
    k[im] = k0;
    k[i0] = s - u * k0;
    k[ip] = (p + m) - (ACM__R)2 * u * s + uu * k0;
}

ACM_INLINE void ACM__F(acm_bwd3)(ACM__R *k, int im, int i0, int ip, ACM__R u,
                                          ACM__R uu)
{
    ACM__R k0 = k[im], k1 = k[i0], k2 = k[ip];
    k[i0] = k0 * ((ACM__R)1 - uu) - (ACM__R)2 * u * k1 - k2;
    k[ip] = (ACM__R)0.5 * (k0 * (uu + u) + k1 * ((ACM__R)2 * u + (ACM__R)1) + k2);
    k[im] = (ACM__R)0.5 * (k0 * (uu - u) + k1 * ((ACM__R)2 * u - (ACM__R)1) + k2);
}

/* Populations (abc order) -> monomial central moments kappa_pqr at slot 9p+3q+r. */
ACM_INLINE void ACM__F(acm_cm_forward)(ACM__R k[27], ACM__R ux, ACM__R uy,
                                                ACM__R uz)
{
    ACM_UNROLL
    for (int ab = 0; ab < 9; ++ab)
        ACM__F(acm_fwd3)(k, 3 * ab, 3 * ab + 1, 3 * ab + 2, uz, uz * uz);
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int r = 0; r < 3; ++r)
            ACM__F(acm_fwd3)(k, 9 * a + r, 9 * a + 3 + r, 9 * a + 6 + r, uy, uy * uy);
    }
    ACM_UNROLL
    for (int qr = 0; qr < 9; ++qr)
        ACM__F(acm_fwd3)(k, qr, 9 + qr, 18 + qr, ux, ux * ux);
}

/* Exact inverse of acm_cm_forward: sweeps x, then y, then z. */
ACM_INLINE void ACM__F(acm_cm_backward)(ACM__R k[27], ACM__R ux, ACM__R uy,
                                                 ACM__R uz)
{
    ACM_UNROLL
    for (int qr = 0; qr < 9; ++qr)
        ACM__F(acm_bwd3)(k, qr, 9 + qr, 18 + qr, ux, ux * ux);
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        ACM_UNROLL
        for (int r = 0; r < 3; ++r)
            ACM__F(acm_bwd3)(k, 9 * a + r, 9 * a + 3 + r, 9 * a + 6 + r, uy, uy * uy);
    }
    ACM_UNROLL
    for (int ab = 0; ab < 9; ++ab)
        ACM__F(acm_bwd3)(k, 3 * ab, 3 * ab + 1, 3 * ab + 2, uz, uz * uz);
}

/* --- central Hermite moments (the safety net's high orders) ---------------
 * Monomial central moments k (abc slots) to central Hermite moments, in
 * place: along every axis the 1-D basis (1, c, c^2) becomes (1, c, c^2 - 1/3)
 * (sign +1), and back (sign -1); the three sweeps commute. In this basis an
 * order-4 moment no longer contains the order-2 ones (c_x^2 c_y^2 does:
 * (c_x^2 - 1/3)(c_y^2 - 1/3) + (c_x^2 + c_y^2)/3 - 1/9), so relaxing it at its
 * own rate leaves the shear alone (docs/physics.md, "Hermite high orders"). */
ACM_INLINE void ACM__F(acm_cm_hermite)(ACM__R k[27], ACM__R sign)
{
    const ACM__R t = sign * (ACM__R)(1.0 / 3.0);
    ACM_UNROLL
    for (int j = 0; j < 9; ++j) /* x: slot 9a + j, (b, c) = j */
        k[18 + j] -= t * k[j];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) { /* y: slot 9a + 3b + c */
        ACM_UNROLL
        for (int c = 0; c < 3; ++c)
            k[9 * a + 6 + c] -= t * k[9 * a + c];
    }
    ACM_UNROLL
    for (int j = 0; j < 9; ++j) /* z: slot 3j + c */
        k[3 * j + 2] -= t * k[3 * j];
}

/* --- relaxation on monomial moments (spec 5.2, non-equilibrium form) -------
 * rate[0] = omega (shear), rate[1] = omega_b (trace), rate[2..5] = orders 3..6.
 * s = moments of the forcing source in the same monomial basis. */
ACM_INLINE void ACM__F(acm_relax)(ACM__R k[27], const ACM__R rate[6],
                                           const ACM__R s[27])
{
    const ACM__R half = (ACM__R)0.5, one = (ACM__R)1;
    ACM__R w = rate[0], wb = rate[1];
    /* order 0 and 1: conserved. In exact arithmetic these moments of f - e are
     * -s/2 (0 and -F/2) and relax to +s/2; adding s instead of setting s/2
     * keeps the populations' own mass and momentum (plus the force) and so
     * repairs the round-off of e, whose float weights (1/6, 2/3) make its
     * momentum ~1e-7 too large: in FP32 a periodic flow gained kinetic energy
     * without forcing (docs/physics.md, "Very low viscosity"). */
    k[0] += s[0];
    k[9] += s[9];
    k[3] += s[3];
    k[1] += s[1];
    /* order 2, off-diagonal: 110, 101, 011 */
    k[12] = (one - w) * k[12] + (one - half * w) * s[12];
    k[10] = (one - w) * k[10] + (one - half * w) * s[10];
    k[4] = (one - w) * k[4] + (one - half * w) * s[4];
    /* order 2, diagonal: trace with omega_b, two deviators with omega */
    {
        ACM__R T = k[18] + k[6] + k[2], D1 = k[18] - k[6], D2 = k[18] - k[2];
        ACM__R Ts = s[18] + s[6] + s[2], D1s = s[18] - s[6], D2s = s[18] - s[2];
        T = (one - wb) * T + (one - half * wb) * Ts;
        D1 = (one - w) * D1 + (one - half * w) * D1s;
        D2 = (one - w) * D2 + (one - half * w) * D2s;
        const ACM__R third = (ACM__R)(1.0 / 3.0);
        k[18] = third * (T + D1 + D2);
        k[6] = third * (T - (ACM__R)2 * D1 + D2);
        k[2] = third * (T + D1 - (ACM__R)2 * D2);
    }
    /* orders 3..6 */
    {
        ACM__R a3 = one - rate[2], b3 = one - half * rate[2];
        ACM__R a4 = one - rate[3], b4 = one - half * rate[3];
        ACM__R a5 = one - rate[4], b5 = one - half * rate[4];
        ACM__R a6 = one - rate[5], b6 = one - half * rate[5];
        k[15] = a3 * k[15] + b3 * s[15]; /* 120 */
        k[11] = a3 * k[11] + b3 * s[11]; /* 102 */
        k[21] = a3 * k[21] + b3 * s[21]; /* 210 */
        k[5] = a3 * k[5] + b3 * s[5];    /* 012 */
        k[19] = a3 * k[19] + b3 * s[19]; /* 201 */
        k[7] = a3 * k[7] + b3 * s[7];    /* 021 */
        k[13] = a3 * k[13] + b3 * s[13]; /* 111 */
        k[24] = a4 * k[24] + b4 * s[24]; /* 220 */
        k[20] = a4 * k[20] + b4 * s[20]; /* 202 */
        k[8] = a4 * k[8] + b4 * s[8];    /* 022 */
        k[22] = a4 * k[22] + b4 * s[22]; /* 211 */
        k[16] = a4 * k[16] + b4 * s[16]; /* 121 */
        k[14] = a4 * k[14] + b4 * s[14]; /* 112 */
        k[17] = a5 * k[17] + b5 * s[17]; /* 122 */
        k[23] = a5 * k[23] + b5 * s[23]; /* 212 */
        k[25] = a5 * k[25] + b5 * s[25]; /* 221 */
        k[26] = a6 * k[26] + b6 * s[26]; /* 222 */
    }
}

/* Central moments of the forcing source (spec 4.3): F on order 1, cs2*F on
 * 120/102 (and permutations), cs4*F on 122 (and permutations). */
ACM_INLINE void ACM__F(acm_force_cm)(const ACM__R F[3], ACM__R s[27])
{
    ACM_UNROLL
    for (int n = 0; n < 27; ++n)
        s[n] = (ACM__R)0;
    const ACM__R c2 = (ACM__R)(1.0 / 3.0), c4 = (ACM__R)(1.0 / 9.0);
    s[9] = F[0];
    s[3] = F[1];
    s[1] = F[2];
    s[15] = s[11] = c2 * F[0];
    s[21] = s[5] = c2 * F[1];
    s[19] = s[7] = c2 * F[2];
    s[17] = c4 * F[0];
    s[23] = c4 * F[1];
    s[25] = c4 * F[2];
}

/* Raw moments (u = 0) of the forcing source: product of the 1-D raw moments
 * M = (1, u, 1/3 + u^2) and their derivatives M' = (0, 1, 2u). */
ACM_INLINE void ACM__F(acm_force_raw)(const ACM__R F[3], const ACM__R u[3],
                                               ACM__R s[27])
{
    ACM__R M[3][3], D[3][3];
    ACM_UNROLL
    for (int d = 0; d < 3; ++d) {
        M[d][0] = (ACM__R)1;
        M[d][1] = u[d];
        M[d][2] = (ACM__R)(1.0 / 3.0) + u[d] * u[d];
        D[d][0] = (ACM__R)0;
        D[d][1] = (ACM__R)1;
        D[d][2] = (ACM__R)2 * u[d];
    }
    ACM_UNROLL
    for (int p = 0; p < 3; ++p) {
        ACM_UNROLL
        for (int q = 0; q < 3; ++q) {
            ACM_UNROLL
            for (int r = 0; r < 3; ++r)
                s[9 * p + 3 * q + r] = F[0] * D[0][p] * M[1][q] * M[2][r] +
                                       F[1] * M[0][p] * D[1][q] * M[2][r] +
                                       F[2] * M[0][p] * M[1][q] * D[2][r];
        }
    }
}

/* --- one cell ----------------------------------------------------------- */

/* Per-cell macroscopic quantities reported back to the caller. */
typedef struct ACM__F(acm_cell_diag) {
    ACM__R rho;  /* density */
    ACM__R u[3]; /* half-force velocity */
    ACM__R pi;   /* |Pi|, Frobenius norm of sum f c c (ACM_LI2020 only) */
    int fallback; /* 1 when the safety net must redo the cell (acm_collide_fallback) */
} ACM__F(acm_cell_diag);

/* Adaptive high-order rates (spec 6.4) into rate[1..5]; rate[0] = omega. */
ACM_INLINE void ACM__F(acm_adaptive_rates)(const acm_collide_params *p, int model,
                                                    const ACM__R k[27], ACM__R rho,
                                                    const ACM__R u[3], ACM__R *tau_state,
                                                    ACM__R rate[6], ACM__R *pi_out)
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
        ACM__R pxx = (ACM__R)(1.0 / 3.0), pyy = pxx, pzz = pxx, pxy = 0, pxz = 0, pyz = 0;
        ACM_UNROLL
        for (int n = 0; n < 27; ++n) {
            int cx = n / 9 - 1, cy = (n / 3) % 3 - 1, cz = n % 3 - 1;
            pxx += (ACM__R)(cx * cx) * k[n];
            pyy += (ACM__R)(cy * cy) * k[n];
            pzz += (ACM__R)(cz * cz) * k[n];
            pxy += (ACM__R)(cx * cy) * k[n];
            pxz += (ACM__R)(cx * cz) * k[n];
            pyz += (ACM__R)(cy * cz) * k[n];
        }
        ACM__R pi = ACM_SQRT(pxx * pxx + pyy * pyy + pzz * pzz +
                             (ACM__R)2 * (pxy * pxy + pxz * pxz + pyz * pyz));
        *pi_out = pi;
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

/* Density and half-force velocity of shifted populations in abc order. */
ACM_INLINE void ACM__F(acm_cell_macro)(const ACM__R f[27], const ACM__R F[3], ACM__R *drho,
                                      ACM__R u[3])
{
    ACM__R d = 0, jx = 0, jy = 0, jz = 0;
    ACM_UNROLL
    for (int n = 0; n < 27; ++n) {
        d += f[n];
        jx += (ACM__R)(n / 9 - 1) * f[n];
        jy += (ACM__R)((n / 3) % 3 - 1) * f[n];
        jz += (ACM__R)(n % 3 - 1) * f[n];
    }
    ACM__R inv_rho = (ACM__R)1 / ((ACM__R)1 + d);
    *drho = d;
    u[0] = (jx + (ACM__R)0.5 * F[0]) * inv_rho;
    u[1] = (jy + (ACM__R)0.5 * F[1]) * inv_rho;
    u[2] = (jz + (ACM__R)0.5 * F[2]) * inv_rho;
}

/* Velocity of the moment transform: u for central moments, 0 for raw ones. */
ACM_INLINE void ACM__F(acm_transform_velocity)(int model, const ACM__R u[3], ACM__R ut[3])
{
    const bool raw = model == ACM_COLLISION_RM_MRT;
    ut[0] = raw ? (ACM__R)0 : u[0];
    ut[1] = raw ? (ACM__R)0 : u[1];
    ut[2] = raw ? (ACM__R)0 : u[2];
}

/* Relaxation rates {omega, omega_b, omega_3..omega_6} of a model; the ACM
 * modes evaluate their rule (which needs the populations f, abc order). */
ACM_INLINE void ACM__F(acm_rates)(const acm_collide_params *p, int model, const ACM__R f[27],
                                 ACM__R rho, const ACM__R u[3], ACM__R *tau_state,
                                 ACM__R rate[6], ACM__R *pi_out)
{
    const ACM__R w = (ACM__R)p->omega, rb = (ACM__R)p->rate_b, rh = (ACM__R)p->rate_h;
    if (model == ACM_COLLISION_BGK) { /* BGK = every rate omega (spec 4.5) */
        rate[0] = rate[1] = rate[2] = rate[3] = rate[4] = rate[5] = w;
    } else if (model == ACM_COLLISION_CM_MRT || model == ACM_COLLISION_RM_MRT) {
        rate[0] = w;
        rate[1] = rb;
        rate[2] = rate[3] = rate[4] = rate[5] = rh;
    } else {
        rate[0] = w;
        ACM__F(acm_adaptive_rates)(p, model, f, rho, u, tau_state, rate, pi_out);
    }
}

/* What the start of every collision computes about a cell. */
typedef struct ACM__F(acm_cell_state) {
    ACM__R drho, u[3];
    ACM__R dx[3], dy[3], dz[3]; /* 1-D equilibrium offsets */
    ACM__R px[3], py[3], pz[3]; /* and their velocity derivatives */
} ACM__F(acm_cell_state);

/* Common start of a collision: populations to abc order, density and
 * velocity, the shifted equilibrium e (abc), the diagnostics. */
ACM_INLINE void ACM__F(acm_collide_begin)(const ACM__R fin[27], const ACM__R F[3], ACM__R f[27],
                                         ACM__F(acm_cell_state) * c, ACM__R e[27],
                                         ACM__F(acm_cell_diag) * diag)
{
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        f[acm_abc(i)] = fin[i];
    ACM__F(acm_cell_macro)(f, F, &c->drho, c->u);
    diag->rho = (ACM__R)1 + c->drho;
    diag->u[0] = c->u[0];
    diag->u[1] = c->u[1];
    diag->u[2] = c->u[2];
    diag->pi = 0;
    diag->fallback = 0;
    ACM__F(acm_phi1d)(c->u[0], c->dx, c->px);
    ACM__F(acm_phi1d)(c->u[1], c->dy, c->py);
    ACM__F(acm_phi1d)(c->u[2], c->dz, c->pz);
    ACM__F(acm_equilibrium)(c->drho, c->dx, c->dy, c->dz, e);
}

/*
 * Stage 1 of the moment-space collision (all models but the fused BGK):
 * from shifted populations fin (public order) and force F, compute the
 * shifted equilibrium e (abc), the relaxed non-equilibrium moments k (abc
 * slots, in the model's basis) and the transform velocity ut. Together with
 * acm_collide_stage2 this is one collision; the GPU's split kernels store k
 * between the two.
 */
ACM_INLINE void ACM__F(acm_collide_stage1)(const acm_collide_params *p, int model,
                                          const ACM__R fin[27], const ACM__R F[3],
                                          ACM__R *tau_state, ACM__R e[27], ACM__R k[27],
                                          ACM__R ut[3], ACM__F(acm_cell_diag) * diag)
{
    ACM__R f[27], u[3], rate[6], s[27];
    ACM__F(acm_cell_state) c;
    ACM__F(acm_collide_begin)(fin, F, f, &c, e, diag);
    u[0] = c.u[0];
    u[1] = c.u[1];
    u[2] = c.u[2];
    ACM__F(acm_rates)(p, model, f, diag->rho, u, tau_state, rate, &diag->pi);
    ACM__F(acm_transform_velocity)(model, u, ut);
    ACM_UNROLL
    for (int n = 0; n < 27; ++n)
        k[n] = f[n] - e[n];
    ACM__F(acm_cm_forward)(k, ut[0], ut[1], ut[2]);
    if (model == ACM_COLLISION_RM_MRT)
        ACM__F(acm_force_raw)(F, u, s);
    else
        ACM__F(acm_force_cm)(F, s);
    if (p->hermite_high_orders) {
        ACM__F(acm_cm_hermite)(k, (ACM__R)1);
        ACM__F(acm_cm_hermite)(s, (ACM__R)1);
    }
    ACM__F(acm_relax)(k, rate, s);
    if (p->hermite_high_orders)
        ACM__F(acm_cm_hermite)(k, (ACM__R)-1);
}

/* Stage 2: populations from relaxed moments, out = e + backward(k) in public
 * order (k is consumed). */
ACM_INLINE void ACM__F(acm_collide_stage2)(const ACM__R e[27], ACM__R k[27], const ACM__R ut[3],
                                          ACM__R fout[27])
{
    ACM__F(acm_cm_backward)(k, ut[0], ut[1], ut[2]);
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        fout[i] = e[acm_abc(i)] + k[acm_abc(i)];
}

/* The safety net's test: is a post-collision population (shifted, public
 * order) below the floor, floor_ratio times its equilibrium (e: shifted, abc
 * order)? With ratio 0 this is the plain positivity test. */
ACM_INLINE int ACM__F(acm_below_floor)(const acm_collide_params *p, const ACM__R e[27],
                                      const ACM__R fout[27], int first, int count)
{
    const ACM__R r = (ACM__R)p->floor_ratio;
    int below = 0;
    ACM_UNROLL
    for (int i = first; i < first + count; ++i) {
        const ACM__R w = (ACM__R)acm_weight(i);
        below |= fout[i] < r * (e[acm_abc(i)] + w) - w;
    }
    return below;
}

/*
 * Collide one cell.
 *   model p->model, passed separately so that a caller looping over cells can
 *         make it a compile-time constant (one specialised loop per model)
 *   fin   shifted populations f - w in public order (after streaming)
 *   F     total force density on the cell
 *   tau_state  per-cell tau* of ACM_LI2020 (read and updated), else unused
 *   fout  shifted post-collision populations in public order
 * BGK is evaluated directly in population space (cheapest); the other models
 * go through the two moment-space stages.
 */
ACM_INLINE void ACM__F(acm_collide)(const acm_collide_params *p, int model, const ACM__R fin[27],
                                   const ACM__R F[3], ACM__R *tau_state, ACM__R fout[27],
                                   ACM__F(acm_cell_diag) * diag)
{
    if (model == ACM_COLLISION_BGK) {
        ACM__R f[27], e[27], S[27];
        ACM__F(acm_cell_state) c;
        ACM__F(acm_collide_begin)(fin, F, f, &c, e, diag);
        ACM__F(acm_force_source)(F, c.dx, c.dy, c.dz, c.px, c.py, c.pz, S);
        const ACM__R w = (ACM__R)p->omega, a = (ACM__R)1 - w, b = (ACM__R)1 - (ACM__R)0.5 * w;
        ACM_UNROLL
        for (int i = 0; i < 27; ++i) {
            const int n = acm_abc(i);
            fout[i] = e[n] + a * (f[n] - e[n]) + b * S[n];
        }
        return;
    }
    ACM__R e[27], k[27], ut[3];
    ACM__F(acm_collide_stage1)(p, model, fin, F, tau_state, e, k, ut, diag);
    ACM__F(acm_collide_stage2)(e, k, ut, fout);
    if (model == ACM_COLLISION_ACM_LI2018 || model == ACM_COLLISION_ACM_LI2020)
        diag->fallback = (p->safety_net != 0) & ACM__F(acm_below_floor)(p, e, fout, 0, 27);
}

/*
 * Fallback of the ACM safety net (spec 6.4 item 4, extended): for the cells
 * whose acm_collide() reported diag->fallback.
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
    ACM__R e[27], k[27], ut[3], t[27];
    ACM__F(acm_cell_diag) diag;
    ACM__F(acm_collide_stage1)(&q, ACM_COLLISION_CM_MRT, fin, F, 0, e, k, ut, &diag);
    ACM__F(acm_collide_stage2)(e, k, ut, fout);
    if (!ACM__F(acm_below_floor)(p, e, fout, 0, 27))
        return;
    q.omega = 1.0;
    ACM__F(acm_collide_stage1)(&q, ACM_COLLISION_CM_MRT, fin, F, 0, e, k, ut, &diag);
    ACM__F(acm_collide_stage2)(e, k, ut, t);
    const ACM__R r = (ACM__R)p->floor_ratio;
    ACM__R s = 1;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i) {
        const ACM__R w = (ACM__R)acm_weight(i), lo = r * (e[acm_abc(i)] + w) - w;
        if (fout[i] < lo) { /* t[i] <= fout[i]: only t itself helps */
            const ACM__R si = t[i] > fout[i] ? (t[i] - lo) / (t[i] - fout[i]) : (ACM__R)0;
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
