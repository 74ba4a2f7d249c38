/*
 * libacmlbm -- CSoA indexer (paper Eq. 6), the one place where population
 * storage addresses are computed, for the CPU backend and the CUDA kernels.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Component i of cell k, with alpha cells per group and beta components per
 * cell, lives at  beta*alpha*floor(k/alpha) + alpha*i + k mod alpha.
 * alpha is a power of two, so the division is a shift and the modulo a mask.
 * Storage is padded to a whole number of groups (acm_csoa_size()).
 */
#ifndef ACMLBM_CSOA_INDEX_H
#define ACMLBM_CSOA_INDEX_H

#include <stdint.h> /* uint64_t, uint32_t */

#include "lattice.h" /* ACM_HD */

/* Layout of one population array. */
typedef struct acm_csoa {
    uint64_t alpha; /* cells per group */
    uint32_t shift; /* log2(alpha) */
    uint32_t beta;  /* components per cell (27 for populations) */
} acm_csoa;

/* Layout with a power-of-two group of 2^shift cells. */
ACM_HD acm_csoa acm_csoa_pow2(uint32_t shift, uint32_t beta)
{
    acm_csoa l = {(uint64_t)1 << shift, shift, beta};
    return l;
}

/* k mod alpha: the position of cell k inside its group. */
ACM_HD uint64_t acm_csoa_offset(acm_csoa l, uint64_t k) { return k & (l.alpha - 1); }

ACM_HD uint64_t acm_csoa_index(acm_csoa l, uint64_t k, uint32_t i)
{
    return (k >> l.shift) * (uint64_t)l.beta * l.alpha + (uint64_t)i * l.alpha + (k & (l.alpha - 1));
}

/* Number of elements to allocate for ncells cells (whole groups). */
ACM_HD uint64_t acm_csoa_size(acm_csoa l, uint64_t ncells)
{
    return ((ncells + l.alpha - 1) >> l.shift) * l.alpha * (uint64_t)l.beta;
}

#endif /* ACMLBM_CSOA_INDEX_H */
