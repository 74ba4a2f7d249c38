/*
 * libacmlbm -- moment-encoded storage (docs/physics.md, "Moment storage"):
 * the 10 moments a cell keeps instead of its 27 populations, their encoding
 * from post-collision populations and the populations they stand for.
 * Host C and the CUDA kernels include this same file.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A cell stores, after its collision,
 *   m[0]     = rho - 1                       (density deviation)
 *   m[1..3]  = u* = j* / rho                 (velocity of the post-collision
 *                                             populations, j* = sum f* c)
 *   m[4..9]  = A_xx, A_yy, A_zz, A_xy, A_xz, A_yz, the non-equilibrium part
 *              of the second central moments about u*:
 *              A_ab = sum f* (c - u*)_a (c - u*)_b - rho c_s^2 delta_ab.
 * The populations it streams are those whose central Hermite moments about
 * u* of order 3 and more vanish (the regularised, recursive closure: their
 * third raw non-equilibrium moments are u_a A_bc + u_b A_ac + u_c A_ab):
 *   f_abc - w_abc = e_abc(rho, u*)
 *       + A_xx H2(a) P_y(b) P_z(c) + A_yy P_x(a) H2(b) P_z(c) + A_zz P_x(a) P_y(b) H2(c)
 *       + A_xy H1_x(a) H1_y(b) P_z(c) + A_xz H1_x(a) P_y(b) H1_z(c)
 *       + A_yz P_x(a) H1_y(b) H1_z(c)
 * with e the product-form equilibrium minus w (collide_tmpl.h), H1 =
 * d phi / d u = (u - 1/2, -2u, u + 1/2), H2 = (1/2, -1, 1/2) and P the 1-D
 * factor of the closure (acm_mom_closure, docs/physics.md "One closure per
 * model"):
 *   Hermite (every model but CM-MRT): P = phi(c, u), the equilibrium's
 *     1-D factors; the populations' central Hermite moments of order 3 and
 *     more vanish (the regularised, recursive closure: their third raw
 *     non-equilibrium moments are u_a A_bc + u_b A_ac + u_c A_ab);
 *   central (CM-MRT): P = phi - H2 / 3 = ((u^2 - u)/2, 1 - u^2, (u^2 + u)/2),
 *     the factor of second central moment 0; the populations' central
 *     moments of order 3 and more are those of the equilibrium, what the
 *     CM-MRT collision with every high-order rate at 1 (CM(1)) leaves, so
 *     that moment storage of CM-MRT steps as population storage of CM(1).
 * Encoding these populations gives m back exactly in either closure: the
 * pair is a projection (test-moments checks it).
 */
#ifndef ACMLBM_MOMENTS_H
#define ACMLBM_MOMENTS_H

#include "collide.h" /* ACM_INLINE, acm_phi1d, acm_abc */

/* Values a cell stores. */
#define ACM_MOMENTS 10

/* How the populations a cell streams close its 10 moments (above). */
typedef enum acm_mom_closure_kind { ACM_CLOSURE_HERMITE = 0, ACM_CLOSURE_CENTRAL = 1 } acm_mom_closure_kind;

/* The closure of collision model `model`: central for CM-MRT, Hermite for
 * the others (the ACM models' adaptive rates sit at 1 in the Hermite basis
 * on this storage, and BGK and RM-MRT regularise in it). */
ACM_HD int acm_mom_closure(int model)
{
    return model == ACM_COLLISION_CM_MRT ? ACM_CLOSURE_CENTRAL : ACM_CLOSURE_HERMITE;
}

/* 16-bit storage (docs/physics.md, "16-bit moments"): rho - 1 and the six A
 * as FP16 of the moment times a power of two that keeps its range inside
 * FP16's normal numbers: rho - 1 in [-15/16, 15] (the FP16 density range)
 * times 2^12 is at most 61440; the A of positive populations lie in
 * [-rho/3, 4 rho], times 2^9 at most 32768. The velocity in a 16-bit format
 * of its own, rounded without bias (acm_u16_encode below): FP16 rounded to
 * the nearest stalls a velocity that a step changes by less than half a
 * spacing (a 32^2 Taylor-Green vortex at u = 0.03 decayed 1.5 % too slowly).
 * 10 values in 20 bytes a cell, moment n in slot n. */
#define ACM_MOM16_SCALE_RHO 4096.0
#define ACM_MOM16_SCALE_A 512.0

/* Whether 16-bit storage keeps moment n as scaled FP16 (else the velocity's
 * format). */
ACM_HD bool acm_mom16_half(int n) { return n == 0 || n >= 4; }

/* 16-bit slots a cell of 16-bit storage takes: moment n in slot n. */
#define ACM_MOM16_SLOTS 10

/* The 16-bit scale of moment n (FP16 ones). */
ACM_HD double acm_mom16_scale(int n) { return n == 0 ? ACM_MOM16_SCALE_RHO : ACM_MOM16_SCALE_A; }

/* x rounded to the nearest FP16 value, ties to even (IEEE binary16 with
 * subnormals; beyond 65504 infinity, NaN stays NaN): the host's image of the
 * GPU's __float2half_rn, so that the CPU reproduces 16-bit storage. */
ACM_HD float acm_half_round(float x)
{
#ifdef __CUDA_ARCH__
    return __half2float(__float2half_rn(x));
#else
    union {
        float f;
        uint32_t u;
    } v = {x};
    const uint32_t sign = v.u & 0x80000000u, mag = v.u & 0x7fffffffu;
    if (mag >= 0x7f800000u) /* inf, NaN */
        return x;
    if (mag >= 0x477ff000u) { /* rounds to 65536 or more: infinity */
        v.u = sign | 0x7f800000u;
        return v.f;
    }
    int e = (int)(mag >> 23) - 127;
    /* the spacing of FP16 at x: 2^(e - 10) for normal, 2^-24 below 2^-14 */
    int q = e < -14 ? -24 : e - 10;
    union {
        float f;
        uint32_t u;
    } s = {0.0f};
    /* round to a multiple of 2^q through the float mantissa: add and subtract
     * 1.5 * 2^(q + 23), whose spacing is 2^q (exact for q in [-24, 5]) */
    s.u = (uint32_t)(q + 23 + 127) << 23 | 0x00400000u;
    v.u = mag;
    volatile float t = v.f + s.f; /* volatile: no re-association */
    float r = t - s.f;
    v.f = r;
    v.u |= sign;
    return v.f;
#endif /* __CUDA_ARCH__ */
}

/* ---- the 16-bit velocity (docs/physics.md, "16-bit moments") ----------------
 * A velocity component u is stored in 16 bits as a sign, a 3-bit exponent E
 * and a 12-bit mantissa M: |u| = M 2^-19 for E = 0, (4096 + M) 2^(E - 20)
 * for E = 1..7, so |u| < 1 with 12 bits below the leading one from 2^-7 up
 * (FP16 keeps 10: four times finer at the speeds a flow has) and a spacing of
 * 2^-19 below 2^-7. The code 0x8000 (a negative zero) stands for NaN; |u| >= 1
 * and infinities are kept as the largest magnitude, 1 - 2^-13.
 * Rounding is unbiased (stochastic): u goes to the multiple of the spacing
 * below it plus one with the probability of its remainder, drawn from a hash
 * of the cell's moments before rounding (acm_mom16_dither). Rounded to the
 * nearest, a velocity that a step changes by less than half a spacing stops
 * changing: a Taylor-Green vortex at nu = 0.001 decayed 32 % too slowly. The
 * hash makes the draw the same on the host and the GPU for the same values
 * and needs no step count, so recorded runs replay it. */

/* The bits of x. */
ACM_HD uint32_t acm_fbits(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    union {
        float f;
        uint32_t u;
    } v = {x};
    return v.u;
#endif
}

/* The float of bits b. */
ACM_HD float acm_ffrom(uint32_t b)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(b);
#else
    union {
        uint32_t u;
        float f;
    } v = {b};
    return v.f;
#endif
}

/* 2^k for a normal power (-126 <= k <= 127), from its bits: what ldexpf(1, k)
 * gives, without the library's range handling (a call on the GPU). */
ACM_HD float acm_pow2f(int k) { return acm_ffrom((uint32_t)(k + 127) << 23); }

/* A 32-bit integer hash (xorshift-multiply rounds). */
ACM_HD uint32_t acm_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x21f0aaadu;
    x ^= x >> 15;
    x *= 0x735a2d97u;
    x ^= x >> 15;
    return x;
}

/* The key of a cell's draws: a hash of its density and A_xx before rounding. */
ACM_HD uint32_t acm_mom16_key(float rho1, float axx)
{
    return acm_mix32(acm_fbits(rho1) ^ acm_mix32(acm_fbits(axx)));
}

/* The draw in [0, 1) (24 bits) that rounds velocity component n (1..3) of
 * value u of a cell with draw key `key` (acm_mom16_key). */
ACM_HD float acm_mom16_dither(uint32_t key, float u, int n)
{
    const uint32_t salt = (uint32_t)n * 0x9e3779b9u;
    return (float)(acm_mix32(acm_fbits(u) ^ key ^ salt) >> 8) * (1.0f / 16777216.0f);
}

/* The 16-bit code of u rounded down to a multiple of its spacing after adding
 * r in [0, 1) spacings (r = 1/2: to the nearest). A u that is a multiple of
 * its spacing keeps its code whatever r (a stored value encoded again: a
 * load, a re-cut of slabs): the fraction and r are added apart from the
 * whole spacings, so that no rounding of the sum carries it to the next. */
ACM_HD uint16_t acm_u16_encode(float u, float r)
{
    const uint32_t b = acm_fbits(u), sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
    if (mag > 0x7f800000u) /* NaN */
        return 0x8000u;
    const int e = (int)(mag >> 23) - 127; /* floor(log2 |u|) */
    if (e >= 0)
        return (uint16_t)(sign | 0x7fffu);
    const int q = (e < -7 ? -7 : e) - 12; /* the spacing 2^q */
    /* |u| 2^-q < 2^13, its whole part and its fraction: exact; so is the
     * product by 2^q */
    const float x = acm_ffrom(mag) * acm_pow2f(-q), whole = floorf(x);
    const float v = (whole + (x - whole + r >= 1.0f ? 1.0f : 0.0f)) * acm_pow2f(q);
    if (v >= 1.0f)
        return (uint16_t)(sign | 0x7fffu);
    uint32_t code;
    if (v < 0.0078125f) /* below 2^-7: E = 0 */
        code = (uint32_t)(v * 524288.0f);
    else /* v is a multiple of 2^q: its top 12 mantissa bits hold it */
        code = (uint32_t)((int)(acm_fbits(v) >> 23) - 127 + 8) << 12 |
               ((acm_fbits(v) >> 11) & 0xfffu);
    return (uint16_t)(code == 0 ? 0u : (sign | code));
}

/* The velocity component a 16-bit code stands for. */
ACM_HD float acm_u16_decode(uint16_t c)
{
    if (c == 0x8000u)
        return NAN;
    const uint32_t E = (c >> 12) & 7u, m = c & 0xfffu;
    /* E >= 1: (1 + m 2^-12) 2^(E - 8), built from its bits */
    const float v = E == 0 ? (float)m * 1.9073486328125e-06f : acm_ffrom((E + 119u) << 23 | m << 11);
    return acm_ffrom(acm_fbits(v) | (uint32_t)(c & 0x8000u) << 16);
}

#define ACM_R float
#define ACM_SFX(name) name##_f32
#define ACM_SQRT sqrtf
#include "moments_tmpl.h"
#undef ACM_R
#undef ACM_SFX
#undef ACM_SQRT

#define ACM_R double
#define ACM_SFX(name) name##_f64
#define ACM_SQRT sqrt
#include "moments_tmpl.h"
#undef ACM_R
#undef ACM_SFX
#undef ACM_SQRT

#endif /* ACMLBM_MOMENTS_H */
