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
 * with e the product-form equilibrium minus w (collide_tmpl.h), P the 1-D
 * equilibrium factors phi(c, u), H1 = d phi / d u = (u - 1/2, -2u, u + 1/2)
 * and H2 = (1/2, -1, 1/2). Encoding these populations gives m back exactly:
 * the pair is a projection (test-moments checks it).
 */
#ifndef ACMLBM_MOMENTS_H
#define ACMLBM_MOMENTS_H

#include "collide.h" /* ACM_INLINE, acm_phi1d, acm_abc */

/* Values a cell stores. */
#define ACM_MOMENTS 10

/* 16-bit storage (docs/physics.md, "16-bit moments"): rho - 1 and the six A
 * as FP16 of the moment times a power of two that keeps its range inside
 * FP16's normal numbers: rho - 1 in [-15/16, 15] (the FP16 density range)
 * times 2^12 is at most 61440; the A of positive populations lie in
 * [-rho/3, 4 rho], times 2^9 at most 32768. The velocity stays FP32: rounded
 * to FP16 every step it stalls where a step changes it by less than half an
 * FP16 spacing (a 32^2 Taylor-Green vortex at u = 0.03 decayed 1.5 % too
 * slowly; FP16 rho - 1 and A changed its rate by 1e-4). 7 halves and 3 floats
 * in 32 bytes a cell (acm_mom16_slot). */
#define ACM_MOM16_SCALE_RHO 4096.0
#define ACM_MOM16_SCALE_A 512.0

/* Whether 16-bit storage keeps moment n in FP16 (else FP32: the velocity). */
ACM_HD bool acm_mom16_half(int n) { return n == 0 || n >= 4; }

/* 16-bit slots a cell of 16-bit storage takes, and the first of moment n's:
 * rho - 1 and the six A in slots 0-6, the FP32 velocity in slots 8-13 (two
 * each, 4-byte aligned), slots 7, 14, 15 unused: 32 bytes, two 16-byte loads
 * on the GPU. */
#define ACM_MOM16_SLOTS 16
ACM_HD int acm_mom16_slot(int n) { return n == 0 ? 0 : (n < 4 ? 6 + 2 * n : n - 3); }

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
