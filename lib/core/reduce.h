/*
 * libacmlbm -- the domain-wide reductions that are the ACM rules' inputs, and
 * the one order in which every backend folds them: per z-plane sums (each a
 * fold over its rows in y order), folded in plane order from zero. A
 * decomposed domain, folding its slabs' planes in the same order, gets bitwise
 * the statistics of the undivided domain (lib/multi/decomp.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_REDUCE_H
#define ACMLBM_REDUCE_H

#include <math.h>   /* sqrt */
#include <stdint.h> /* int32_t */

#include "acmlbm/acm_common.h" /* ACM_BEGIN_DECLS */
#include "lattice.h"           /* ACM_HD */

ACM_BEGIN_DECLS

/* Domain-wide reductions of the previous step, inputs of the ACM rules. */
typedef struct acm_global_stats {
    double max_u;    /* largest |u| */
    double mean_rho; /* averages over all cells */
    double mean_j;   /* of rho |u| */
    double mean_pi;  /* of |sum f c c| */
} acm_global_stats;

/* The ACM rules' sums over one z-plane. */
typedef struct acm_plane_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
} acm_plane_sums;

/* to += p, one fold step: sums in the caller's order, the maximum order-free. */
static inline void acm__plane_sums_add(acm_plane_sums *to, const acm_plane_sums *p)
{
    to->max_u2 = p->max_u2 > to->max_u2 ? p->max_u2 : to->max_u2;
    to->sum_rho += p->sum_rho;
    to->sum_j += p->sum_j;
    to->sum_pi += p->sum_pi;
}

/* The inverses the ACM rules take from a GPU's raw sums (the kernels'
 * acm_finish_sums), shared so that a decomposed domain's host computes them
 * as a device does. */
ACM_HD double acm__inv_umax(double max_u2) { return max_u2 > 0.0 ? 1.0 / sqrt(max_u2) : 0.0; }
ACM_HD double acm__inv_mean(double sum, double ncells) { return sum > 0.0 ? ncells / sum : 0.0; }

/* The ACM rules' inputs from the fold over all planes, in plane order from
 * zero, of the planes' sums; the fold itself into *total when not NULL (what
 * a GPU slab steps with). */
void acm__prev_from_planes(acm_global_stats *prev, acm_plane_sums *total,
                           const acm_plane_sums *planes, int32_t n, double ncells);

ACM_END_DECLS

#endif /* ACMLBM_REDUCE_H */
