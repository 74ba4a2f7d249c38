/*
 * libacmlbm -- collision models, instantiated for float and double.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The arithmetic lives in collide_tmpl.h; this header fixes the parameter
 * block and instantiates the template as acm_collide_f32 / acm_collide_f64.
 * Host C and the CUDA kernels include this same file.
 */
#ifndef ACMLBM_COLLIDE_H
#define ACMLBM_COLLIDE_H

#include <math.h>    /* sqrt, sqrtf */
#include <stdbool.h> /* bool */

#include "acmlbm/acm_common.h" /* ACM_COLLISION_* */
#include "lattice.h"           /* ACM_HD, acm_abc, acm_weight */

/* Everything here must inline completely so that the small arrays become
 * registers (and, on the CPU, SIMD lanes of a vectorised loop over cells). */
#if defined(__CUDACC__)
#  define ACM_INLINE static __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#  define ACM_INLINE static inline __attribute__((always_inline))
#else
#  define ACM_INLINE static inline
#endif

#if defined(__CUDACC__)
#  define ACM_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__)
#  define ACM_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#  define ACM_UNROLL _Pragma("unroll")
#else
#  define ACM_UNROLL
#endif

/* Everything the collision of one cell needs besides its populations and
 * force; constant over a step (a kernel argument on the GPU). */
typedef struct acm_collide_params {
    int model;                  /* acm_collision, resolved (never DEFAULT) */
    int safety_net;             /* ACM modes: clamp + positivity fallback */
    double omega;               /* shear rate 1/tau */
    double rate_b;              /* CM/RM: trace rate */
    double rate_h;              /* CM/RM: rate of orders 3..6 */
    double rate_min, rate_max;  /* ACM: clamp of the adaptive rates ([1, max] with the
                                   safety net, [0, 2] without) */
    double li2018_nu0[4];       /* ACM_LI2018 base viscosities, orders 3..6 */
    double inv_umax;            /* ACM_LI2018: 1 / (previous step's max |u|), 0 if at rest */
    double li2020_theta[4];     /* ACM_LI2020 regression */
    double inv_mean_rho;        /* ACM_LI2020: previous step's domain averages, inverted */
    double inv_mean_j;
    double inv_mean_pi;
    int hermite_high_orders;    /* relax the moments of orders 3-6 as central Hermite
                                   moments (acm_hermite): the ACM modes with the
                                   safety net (not its fallback, which is CM(1)) */
    double floor_ratio;         /* safety net: a post-collision population below this
                                   fraction of its equilibrium sends the cell to the
                                   fallback (ACM_SAFETY_FLOOR) */
} acm_collide_params;

/* The safety net's floor: 0.3 f^eq. Pure positivity (0) let the cubic cavity
 * at nu = 1e-6 diverge on 128^3 (docs/physics.md, "Very low viscosity"). */
#define ACM_SAFETY_FLOOR 0.3

/* Whether a model is one of the adaptive (ACM) modes, whose rules take the
 * previous step's domain sums. */
ACM_HD bool acm_is_adaptive(int model)
{
    return model == ACM_COLLISION_ACM_LI2018 || model == ACM_COLLISION_ACM_LI2020;
}

/* Parameters of a cell next to a non-periodic face: with an ACM model and the
 * safety net every adaptive rate is held at 1 there (on the Hermite high
 * orders); the walls' and the inlets' sharp layers made the near-2 rates
 * diverge (docs/physics.md, "Adaptive rates at the faces"). */
ACM_HD void acm_face_params(acm_collide_params *p)
{
    if (acm_is_adaptive(p->model) && p->safety_net)
        p->rate_min = p->rate_max = 1.0;
}

/* Reciprocal of values near 1 (the adaptive rules' relaxation times, the
 * density): on the GPU the fast division (2 ulp) saves a full IEEE division,
 * its slow path included. */
ACM_HD float acm_rcp_f32(float x)
{
#ifdef __CUDA_ARCH__
    return __fdividef(1.0f, x);
#else
    return 1.0f / x;
#endif /* __CUDA_ARCH__ */
}

ACM_HD double acm_rcp_f64(double x) { return 1.0 / x; }

#define ACM_R float
#define ACM_SFX(name) name##_f32
#define ACM_SQRT sqrtf
#include "collide_tmpl.h"
#undef ACM_R
#undef ACM_SFX
#undef ACM_SQRT

#define ACM_R double
#define ACM_SFX(name) name##_f64
#define ACM_SQRT sqrt
#include "collide_tmpl.h"
#undef ACM_R
#undef ACM_SFX
#undef ACM_SQRT

#endif /* ACMLBM_COLLIDE_H */
