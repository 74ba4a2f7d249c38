/*
 * libacmlbm -- CPU collision of one row of cells, compiled once per
 * instruction set (baseline, AVX2, AVX-512) and chosen at run time.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CPU_KERNEL_H
#define ACMLBM_CPU_KERNEL_H

#include <stdint.h> /* int32_t, int64_t */

#include "collide.h" /* acm_collide_params */
#include "moments.h" /* acm_mom_project */

/* Reductions over one row, combined across rows by the caller. */
typedef struct acm_row_diag {
    double max_u2;       /* largest |u|^2 (ignores NaN) */
    double sum_rho;      /* ACM_LI2020 statistics: sums of rho, rho|u|, |Pi| */
    double sum_j;
    double sum_pi;
    int64_t fallbacks;   /* cells redone by the ACM safety net */
    int32_t first_bad;   /* first x with NaN, |u|^2 > limit or rho <= 0, -1 if none */
    double bad_rho;      /* with first_bad: that cell's rho and |u|^2 in the collision */
    double bad_u2;
} acm_row_diag;

/* Arguments of one row collision. Arrays are [27][stride] (population-major)
 * of the kernel's real type; force rows are never NULL (zeros if no field). */
typedef struct acm_row_args {
    const acm_collide_params *params;
    int32_t n;            /* cells in the row */
    int32_t stride;       /* distance between populations in fin/fout */
    const void *fin;      /* shifted populations after streaming */
    void *fout;           /* shifted populations after collision */
    const void *force[3]; /* per-cell force of the row (without the uniform part) */
    const void *force_ib[3]; /* immersed-boundary force of the row (zeros without solids) */
    double force0[3];     /* uniform body force */
    void *tau;            /* ACM_LI2020 per-cell tau* of the row, else NULL */
    void *scratch;        /* 5 * n reals of the kernel's type */
    double u2_limit;      /* |u|^2 treated as divergence */
    int project;          /* moment storage: fout projected on its moments as stored
                             with this many bits (acm_mom_project); 0: populations */
} acm_row_args;

typedef void (*acm_row_fn)(const acm_row_args *args, acm_row_diag *diag);

/* One instruction-set variant: a row kernel per storage precision. */
typedef struct acm_cpu_kernels {
    const char *isa; /* "x86_64_v4", "x86_64_v3", "baseline" */
    acm_row_fn collide_row_f32;
    acm_row_fn collide_row_f64;
} acm_cpu_kernels;

/* The variant for this CPU (honours ACMLBM_CPU_ISA=baseline|x86_64_v3|x86_64_v4). */
const acm_cpu_kernels *acm_cpu_kernels_select(void);

/* Variants compiled into this build (defined by cpu/kernel.c per ISA). */
extern const acm_cpu_kernels acm_cpu_kernels_baseline;
#if defined(ACM_CPU_HAVE_X86_VARIANTS)
extern const acm_cpu_kernels acm_cpu_kernels_x86_64_v3;
extern const acm_cpu_kernels acm_cpu_kernels_x86_64_v4;
#endif /* ACM_CPU_HAVE_X86_VARIANTS */

#endif /* ACMLBM_CPU_KERNEL_H */
