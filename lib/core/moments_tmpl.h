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

/* Add shifted population v of direction i to the sums s of a cell:
 * s[0] = sum g, s[1..3] = sum c g, s[4..9] = sum c_a c_b g (xx, yy, zz, xy,
 * xz, yz). The gather of moment storage adds each population as it builds it. */
ACM_INLINE void ACM__F(acm_mom_add)(ACM__R s[ACM_MOMENTS], int i, ACM__R v)
{
    const int cx = acm_cx(i), cy = acm_cy(i), cz = acm_cz(i);
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

/* The sums (acm_mom_add) of 27 shifted populations in public order. */
ACM_INLINE void ACM__F(acm_mom_sums)(const ACM__R g[27], ACM__R s[ACM_MOMENTS])
{
    ACM_UNROLL
    for (int n = 0; n < ACM_MOMENTS; ++n)
        s[n] = 0;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        ACM__F(acm_mom_add)(s, i, g[i]);
}

/* The moments (moments.h) of populations with sums s (acm_mom_sums): their
 * velocity u = j / rho and A about it. Small quantities only: the density's
 * 1 and the lattice's c_s^2 never enter a sum. */
ACM_INLINE void ACM__F(acm_mom_from_sums)(const ACM__R s[ACM_MOMENTS], ACM__R m[ACM_MOMENTS])
{
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

/* The 10 moments of shifted populations g in public order. */
ACM_INLINE void ACM__F(acm_mom_encode)(const ACM__R g[27], ACM__R m[ACM_MOMENTS])
{
    ACM__R s[ACM_MOMENTS];
    ACM__F(acm_mom_sums)(g, s);
    ACM__F(acm_mom_from_sums)(s, m);
}

/* t / 27 without a bias: t times the rounded 1/27 and its remainder. The
 * lattice weights are 1/27 times 8, 2, 1/2 and 1/8; as rounded constants
 * (FP32 ones are 7.5e-9 too large, products of the 1-D weights 2/3 and 1/6
 * 1.1e-7) they gave the rebuilt populations that much too much momentum,
 * every cell and step, in the flow's direction: a flow with shear gained
 * momentum and energy (docs/physics.md, "Moment storage: the weights'
 * round-off"). t is the weight times 27 (exact) times the equilibrium's
 * bracket. In FP64 the remainder is 0 and the product is the one of the
 * rounded weight, bit for bit. */
ACM_INLINE ACM__R ACM__F(acm_mom_div27)(ACM__R t)
{
#ifdef __CUDA_ARCH__
    /* one rounding of t (hi + lo): t / 27 correctly rounded but where t / 27
     * lies within about 1e-8 of a float spacing of a tie */
    const ACM__R hi = (ACM__R)(1.0 / 27.0), lo = (ACM__R)(1.0 / 27.0 - (double)hi);
    return sizeof(ACM__R) == sizeof(float) ? (ACM__R)fmaf((float)t, (float)hi, (float)(t * lo))
                                           : t * hi;
#else
    /* the host's image: the exact product in double (FP32 t), rounded once;
     * without a fused multiply-add t hi + t lo rounds twice and loses lo */
    return (ACM__R)((double)t * (1.0 / 27.0));
#endif
}

/* The 1-D factors of one axis at velocity u for c = a - 1: the equilibrium
 * offset d (phi = w1 (1 + d)), the A terms' factor P of the closure
 * (moments.h: phi for the Hermite closure, phi - H2 / 3 for the central one)
 * and H1 = d phi / d u. */
ACM_INLINE void ACM__F(acm_mom_axis)(ACM__R u, int a, int closure, ACM__R *d, ACM__R *p,
                                     ACM__R *h1)
{
    const ACM__R uu = u * u;
    const int central = closure == ACM_CLOSURE_CENTRAL;
    if (a == 1) {
        *d = (ACM__R)-1.5 * uu;
        *p = (central ? (ACM__R)1 : (ACM__R)(2.0 / 3.0)) - uu;
        *h1 = (ACM__R)-2 * u;
    } else {
        const ACM__R half = a == 2 ? (ACM__R)0.5 : (ACM__R)-0.5, cu = a == 2 ? u : -u;
        *d = (ACM__R)3 * (uu + cu);
        *p = central ? (ACM__R)0.5 * (uu + cu) : (ACM__R)0.5 * (uu + cu) + (ACM__R)(1.0 / 6.0);
        *h1 = u + half;
    }
}

/* Population i (public order) of moments m in two parts: *e, the shifted
 * equilibrium f^eq_i(rho, u) - w_i, and *d, the part of the A in the closure
 * `closure` (moments.h); f_i - w_i is their sum. */
ACM_INLINE void ACM__F(acm_mom_parts)(const ACM__R m[ACM_MOMENTS], int closure, int i, ACM__R *e,
                                      ACM__R *d)
{
    const int a = acm_cx(i) + 1, b = acm_cy(i) + 1, c = acm_cz(i) + 1;
    ACM__R dx, px, hx, dy, py, hy, dz, pz, hz;
    ACM__F(acm_mom_axis)(m[1], a, closure, &dx, &px, &hx);
    ACM__F(acm_mom_axis)(m[2], b, closure, &dy, &py, &hy);
    ACM__F(acm_mom_axis)(m[3], c, closure, &dz, &pz, &hz);
    const ACM__R h2x = a == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    const ACM__R h2y = b == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    const ACM__R h2z = c == 1 ? (ACM__R)-1 : (ACM__R)0.5;
    /* e = w (drho + rho (P - 1)), P - 1 telescoped as in acm_equilibrium */
    const ACM__R q = dx + dy + dx * dy, pm1 = q + dz + q * dz;
    const ACM__R rho = (ACM__R)1 + m[0];
    *e = ACM__F(acm_mom_div27)((ACM__R)(27.0 * acm_weight(i)) * (m[0] + rho * pm1));
    const ACM__R pyz = py * pz;
    *d = (m[4] * h2x * pyz + px * (m[5] * h2y * pz + m[6] * py * h2z)) +
         (hx * (m[7] * hy * pz + m[8] * py * hz) + m[9] * px * hy * hz);
}

/* Shifted population i (public order) that moments m stand for in the
 * closure `closure`. The one formula of the storage: the CPU's projection
 * and the GPU's gather both use it. */
ACM_INLINE ACM__R ACM__F(acm_mom_population)(const ACM__R m[ACM_MOMENTS], int closure, int i)
{
    ACM__R e, d;
    ACM__F(acm_mom_parts)(m, closure, i, &e, &d);
    return e + d;
}

/* All 27 shifted populations of moments m, public order. */
ACM_INLINE void ACM__F(acm_mom_populations)(const ACM__R m[ACM_MOMENTS], int closure,
                                            ACM__R g[27])
{
    ACM_UNROLL
    for (int i = 0; i < 27; ++i)
        g[i] = ACM__F(acm_mom_population)(m, closure, i);
}

/* The 1-D factors (acm_mom_axis) of moments m's velocity along each axis
 * ax for c = v - 1 in the closure `closure`: what all 27 populations of the
 * cell share. */
ACM_INLINE void ACM__F(acm_mom_axes)(const ACM__R m[ACM_MOMENTS], int closure, ACM__R d[3][3],
                                     ACM__R p[3][3], ACM__R h[3][3])
{
    ACM_UNROLL
    for (int ax = 0; ax < 3; ++ax)
        ACM_UNROLL
        for (int v = 0; v < 3; ++v)
            ACM__F(acm_mom_axis)(m[1 + ax], v, closure, &d[ax][v], &p[ax][v], &h[ax][v]);
}

/* The nine shifted populations g[3 b + c] of moments m with c_x = a - 1
 * (abc order, lattice.h), the same values as acm_mom_population in the
 * closure the factors p were made for (acm_mom_axes), grouped by axes: the cell's 1-D factors (acm_mom_axes) made once for all 27, then per
 * (a, b) the parts that do not depend on c, then 5 operations a population
 * (the GPU's tiled step builds a cell's populations this way):
 *   g_abc = w_abc (E0_ab + E1_ab d_c) + B0_ab P_z(c) + B2_ab H2(c) + B1_ab H1_z(c)
 * with E0 = drho + rho q, E1 = rho (1 + q), q = d_a + d_b + d_a d_b. */
ACM_INLINE void ACM__F(acm_mom_populations_a)(const ACM__R m[ACM_MOMENTS], const ACM__R d[3][3],
                                              const ACM__R p[3][3], const ACM__R h[3][3], int a,
                                              ACM__R g[9])
{
    /* the x factors of slice a (a may be a run-time value: no indexing) */
    const ACM__R da = a == 0 ? d[0][0] : (a == 1 ? d[0][1] : d[0][2]);
    const ACM__R pa = a == 0 ? p[0][0] : (a == 1 ? p[0][1] : p[0][2]);
    const ACM__R ha = a == 0 ? h[0][0] : (a == 1 ? h[0][1] : h[0][2]);
    const ACM__R rho = (ACM__R)1 + m[0];
    /* the 1-D weights times 3 (2/3 and 1/6 times 3: exact) */
    const ACM__R h2a = a == 1 ? (ACM__R)-1 : (ACM__R)0.5, w1a = a == 1 ? 2 : 0.5;
    const ACM__R x4 = m[4] * h2a, x7 = m[7] * ha, x8 = m[8] * ha;
    const ACM__R x6 = m[6] * pa;
    ACM_UNROLL
    for (int b = 0; b < 3; ++b) {
        const ACM__R h2b = b == 1 ? (ACM__R)-1 : (ACM__R)0.5;
        const ACM__R w1b = b == 1 ? 2 : 0.5;
        const ACM__R q = da + d[1][b] + da * d[1][b];
        const ACM__R e0 = m[0] + rho * q, e1 = rho + rho * q;
        const ACM__R b0 = x4 * p[1][b] + pa * (m[5] * h2b) + x7 * h[1][b];
        const ACM__R b1 = x8 * p[1][b] + pa * (m[9] * h[1][b]);
        const ACM__R b2 = x6 * p[1][b];
        ACM_UNROLL
        for (int c = 0; c < 3; ++c) {
            const ACM__R h2c = c == 1 ? (ACM__R)-1 : (ACM__R)0.5;
            const ACM__R w27 = w1a * w1b * (c == 1 ? 2 : 0.5); /* 27 w_abc */
            g[3 * b + c] = ACM__F(acm_mom_div27)(w27 * (e0 + e1 * d[2][c])) + b0 * p[2][c] +
                           b2 * h2c + b1 * h[2][c];
        }
    }
}

/* Add to the sums s (acm_mom_add) the nine shifted populations v[3a + b] of
 * one layer of the stencil, c_z = cz for all of them (c_x = a - 1, c_y = b - 1):
 * the 1-D sums along x, then along y (17 additions instead of 9 acm_mom_add). */
ACM_INLINE void ACM__F(acm_mom_add_layer)(ACM__R s[ACM_MOMENTS], int cz, const ACM__R v[9])
{
    ACM__R r0[3], r1[3], r2[3];
    ACM_UNROLL
    for (int b = 0; b < 3; ++b) {
        r2[b] = v[6 + b] + v[b];
        r1[b] = v[6 + b] - v[b];
        r0[b] = r2[b] + v[3 + b];
    }
    const ACM__R syy = r0[2] + r0[0], s0 = syy + r0[1], sy = r0[2] - r0[0];
    const ACM__R sx = r1[0] + r1[1] + r1[2], sxy = r1[2] - r1[0];
    const ACM__R sxx = r2[0] + r2[1] + r2[2];
    s[0] += s0;
    s[1] += sx;
    s[2] += sy;
    s[4] += sxx;
    s[5] += syy;
    s[7] += sxy;
    if (cz != 0) {
        s[3] += cz > 0 ? s0 : -s0;
        s[6] += s0;
        s[8] += cz > 0 ? sx : -sx;
        s[9] += cz > 0 ? sy : -sy;
    }
}

/* Relax a symmetric tensor (xx, yy, zz, xy, xz, yz): its deviator at rate w,
 * its trace at rate wb. */
ACM_INLINE void ACM__F(acm_mom_relax)(ACM__R t[6], ACM__R w, ACM__R wb)
{
    const ACM__R one = (ACM__R)1, tr = (t[0] + t[1] + t[2]) * (ACM__R)(1.0 / 3.0);
    const ACM__R keep = one - w, trace = (one - wb) * tr;
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        t[a] = keep * (t[a] - tr) + trace;
        t[3 + a] = keep * t[3 + a];
    }
}

/*
 * The collision of moment storage (docs/physics.md, "Moment storage"): from
 * the sums s (acm_mom_add) of a cell's gathered populations and its total
 * force F to the moments m it stores. Orders 0 and 1 as every model keeps
 * them (the momentum gains F); the second central moments' non-equilibrium
 * part A relaxes, its deviator at omega and its trace at the model's bulk
 * rate (acm_rates: the ACM's grouped order-3 rate, held at 1 here), with the
 * Guo source (zero in central moments; RM-MRT relaxes raw moments, whose
 * source is u F + F u). Orders 3-6 are not kept: the populations a cell
 * streams have them at their regularised values (rate 1). m's A is about
 * u* = j* / rho, u* = u + F / (2 rho): A(u*) = A(u) - F F / (4 rho).
 * diag: rho, the half-force velocity u, |Pi| (ACM_LI2020), no fallback.
 */
ACM_INLINE void ACM__F(acm_mom_collide)(const acm_collide_params *p, int model,
                                        const ACM__R s[ACM_MOMENTS], const ACM__R F[3],
                                        ACM__R *tau_state, ACM__R m[ACM_MOMENTS],
                                        ACM__F(acm_cell_diag) * diag)
{
    const ACM__R half = (ACM__R)0.5, third = (ACM__R)(1.0 / 3.0);
    const ACM__R rho = (ACM__R)1 + s[0], inv = ACM__F(acm_rcp)(rho);
    /* the velocity stored, (j + F) / rho, is a quotient rounded once: as j
     * times a rounded 1 / rho it came out 3e-8 too large in cells lighter
     * than 1 (whose 1 / rho often lies half a float spacing above a float)
     * and pushed every flow forward (docs/physics.md, "Moment storage: the
     * weights' round-off"); u of the collision is the same without F / 2 */
    ACM__R us[3], u[3], A[6], uF[6];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        us[a] = (s[1 + a] + F[a]) / rho;
        u[a] = us[a] - half * F[a] * inv;
    }
    const int ab[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
    ACM_UNROLL
    for (int n = 0; n < 6; ++n) { /* A = Pi - rho c_s^2 I - rho u u + (u F + F u) / 2 */
        const int a = ab[n][0], b = ab[n][1];
        uF[n] = u[a] * F[b] + F[a] * u[b];
        A[n] = (s[4 + n] - (n < 3 ? third * s[0] : (ACM__R)0)) - rho * u[a] * u[b] + half * uF[n];
    }
    diag->rho = rho;
    diag->u[0] = u[0];
    diag->u[1] = u[1];
    diag->u[2] = u[2];
    diag->fallback = 0;
    diag->pi = 0;
    if (model == ACM_COLLISION_ACM_LI2020) { /* |Pi| of the full populations */
        const ACM__R pxx = s[4] + third, pyy = s[5] + third, pzz = s[6] + third;
        diag->pi = ACM_SQRT(pxx * pxx + pyy * pyy + pzz * pzz +
                            (ACM__R)2 * (s[7] * s[7] + s[8] * s[8] + s[9] * s[9]));
    }
    ACM__R rate[6];
    ACM__F(acm_rates)(p, model, diag->pi, rho, u, tau_state, rate);
    if (model == ACM_COLLISION_RM_MRT) { /* raw: N = A - uF/2 relaxes with source uF */
        ACM__R S[6];
        ACM_UNROLL
        for (int n = 0; n < 6; ++n) {
            A[n] -= half * uF[n];
            S[n] = uF[n];
        }
        ACM__F(acm_mom_relax)(A, rate[0], rate[1]);
        const ACM__R trS = (S[0] + S[1] + S[2]) * third;
        const ACM__R kd = (ACM__R)1 - half * rate[0], kb = (ACM__R)1 - half * rate[1];
        ACM_UNROLL
        for (int n = 0; n < 6; ++n) /* then back to A about u: - uF / 2 */
            A[n] += (n < 3 ? kd * (S[n] - trS) + kb * trS : kd * S[n]) - half * uF[n];
    } else {
        ACM__F(acm_mom_relax)(A, rate[0], rate[1]);
    }
    const ACM__R q = (ACM__R)0.25 * inv;
    m[0] = s[0];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a)
        m[1 + a] = us[a];
    ACM_UNROLL
    for (int n = 0; n < 6; ++n)
        m[4 + n] = A[n] - q * F[ab[n][0]] * F[ab[n][1]];
}

/* A bound that spares most cells the limiter's 27 populations, with the
 * same outcome: true when |d_i| <= keep f^eq_i for every i. With f^eq_i =
 * rho phi_x phi_y phi_z, d_i / f^eq_i = (sum_a A_aa H2_a / phi_a + sum_ab A_ab
 * (H1_a / phi_a) (H1_b / phi_b)) / rho, bounded per axis by the largest
 * |H2 / phi| and |H1 / phi| over its three directions. */
ACM_INLINE int ACM__F(acm_mom_surely_above)(const ACM__R m[ACM_MOMENTS], ACM__R keep)
{
    ACM__R r1[3], r2[3];
    ACM_UNROLL
    for (int a = 0; a < 3; ++a) {
        const ACM__R u = m[1 + a], uu = u * u, sixth = (ACM__R)(1.0 / 6.0), half = (ACM__R)0.5;
        const ACM__R lo = half * (uu - u) + sixth, mid = (ACM__R)(2.0 / 3.0) - uu;
        const ACM__R hi = half * (uu + u) + sixth;
        if (!(lo > (ACM__R)0 && mid > (ACM__R)0 && hi > (ACM__R)0))
            return 0;
        const ACM__R ilo = (ACM__R)1 / lo, imid = (ACM__R)1 / mid, ihi = (ACM__R)1 / hi;
        const ACM__R e1 = half * (ilo > ihi ? ilo : ihi);
        r2[a] = e1 > imid ? e1 : imid;
        const ACM__R t0 = (u < half ? half - u : u - half) * ilo;
        const ACM__R t1 = (ACM__R)2 * (u < (ACM__R)0 ? -u : u) * imid, t2 = (u + half) * ihi;
        const ACM__R t01 = t0 > t1 ? t0 : t1;
        r1[a] = t01 > t2 ? t01 : (t2 < (ACM__R)0 ? -t2 : t2);
    }
    ACM__R b = 0;
    const int pa[3] = {0, 0, 1}, pb[3] = {1, 2, 2};
    ACM_UNROLL
    for (int n = 0; n < 3; ++n) {
        const ACM__R ad = m[4 + n] < (ACM__R)0 ? -m[4 + n] : m[4 + n];
        const ACM__R ao = m[7 + n] < (ACM__R)0 ? -m[7 + n] : m[7 + n];
        b += ad * r2[n] + ao * r1[pa[n]] * r1[pb[n]];
    }
    return b <= keep * ((ACM__R)1 + m[0]);
}

/* The safety net of moment storage (adaptive models with the net, as for
 * populations; their closure is Hermite, as acm_mom_surely_above's bound
 * assumes): the A scaled by the largest s in [0, 1] that keeps every
 * population the cell streams above its floor, ACM_SAFETY_FLOOR f^eq
 * (e_i + s d_i >= floor - w_i, acm_mom_parts). Returns whether it scaled. */
ACM_INLINE int ACM__F(acm_mom_limit)(const acm_collide_params *p, ACM__R m[ACM_MOMENTS])
{
    const ACM__R keep = (ACM__R)(1.0 - p->floor_ratio);
    if (ACM__F(acm_mom_surely_above)(m, keep))
        return 0;
    ACM__R s = 1;
    ACM_UNROLL
    for (int i = 0; i < 27; ++i) {
        ACM__R e, d;
        ACM__F(acm_mom_parts)(m, ACM_CLOSURE_HERMITE, i, &e, &d);
        const ACM__R room = keep * (e + (ACM__R)acm_weight(i)); /* f^eq - floor */
        if (d < (ACM__R)0 && room + s * d < (ACM__R)0)
            s = room > (ACM__R)0 ? room / -d : (ACM__R)0;
    }
    if (s >= (ACM__R)1)
        return 0;
    ACM_UNROLL
    for (int n = 4; n < ACM_MOMENTS; ++n)
        m[n] *= s;
    return 1;
}

/* m as 16-bit storage keeps it (moments.h: rho - 1 and A as scaled FP16,
 * the velocity in its own format with unbiased rounding; the host's image of
 * the GPU's stores and loads). */
ACM_INLINE void ACM__F(acm_mom_quantize16)(ACM__R m[ACM_MOMENTS])
{
    const uint32_t key = acm_mom16_key((float)m[0], (float)m[4]);
    ACM_UNROLL
    for (int n = 0; n < ACM_MOMENTS; ++n) {
        if (acm_mom16_half(n)) {
            const ACM__R s = (ACM__R)acm_mom16_scale(n);
            m[n] = (ACM__R)acm_half_round((float)(m[n] * s)) * ((ACM__R)1 / s);
        } else {
            const float u = (float)m[n];
            m[n] = (ACM__R)acm_u16_decode(acm_u16_encode(u, acm_mom16_dither(key, u, n)));
        }
    }
}

/* Replace shifted post-collision populations g by the ones their moments
 * stand for in the closure `closure`, as stored with `bits` 32/64 (exact)
 * or 16 (quantised): what a cell of moment storage streams. */
ACM_INLINE void ACM__F(acm_mom_project)(ACM__R g[27], int bits, int closure)
{
    ACM__R m[ACM_MOMENTS];
    ACM__F(acm_mom_encode)(g, m);
    if (bits == 16)
        ACM__F(acm_mom_quantize16)(m);
    ACM__F(acm_mom_populations)(m, closure, g);
}

#undef ACM__R
#undef ACM__F
