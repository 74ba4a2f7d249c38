/*
 * libacmlbm -- the Morton-block order of immersed-boundary samples (paper
 * Sec. 4.1.2), the one place where sample sort keys are computed, for the
 * CPU and the CUDA backend alike. SPDX-License-Identifier: Apache-2.0
 *
 * The grid is cut into blocks of l x l x l cells, numbered in the x-y-z order
 * of the cells themselves (x fastest). A sample belongs to the block of its
 * stencil base cell floor(X) (wrapped on periodic axes, clamped on the others).
 * Samples are sorted by block, and inside a block by the Morton (Z-order) code
 * of their position relative to the block corner, quantised to 1/8 cell so
 * that the 10-100 samples sharing a cell are ordered too. The key is
 *     block index << 27  |  morton(8 * (X - block corner))
 * with 9 bits per axis for the Morton part (8 l <= 512, so l <= 64) and up to
 * 36 bits for the block index (grids of at most 2^36 cells).
 */
#ifndef ACMLBM_MORTON_H
#define ACMLBM_MORTON_H

#include <math.h>   /* floor */
#include <stdint.h> /* uint64_t */

#include "lattice.h" /* ACM_HD */

#define ACM_SAMPLE_BLOCK_MAX 64 /* largest block edge l */
#define ACM_MORTON_SUB 8        /* sub-cell resolution of the Morton part */
#define ACM_MORTON_BITS 9       /* bits per axis of the Morton part: 8 * 64 = 2^9 */

/* Spread the low 21 bits of v so that bit i moves to bit 3i. */
ACM_HD uint64_t acm_morton_spread(uint32_t v)
{
    uint64_t x = v & 0x1fffffu;
    x = (x | x << 32) & UINT64_C(0x1f00000000ffff);
    x = (x | x << 16) & UINT64_C(0x1f0000ff0000ff);
    x = (x | x << 8) & UINT64_C(0x100f00f00f00f00f);
    x = (x | x << 4) & UINT64_C(0x10c30c30c30c30c3);
    x = (x | x << 2) & UINT64_C(0x1249249249249249);
    return x;
}

/* Morton code of (x, y, z), x in the lowest bit of each triple. */
ACM_HD uint64_t acm_morton3(uint32_t x, uint32_t y, uint32_t z)
{
    return acm_morton_spread(x) | acm_morton_spread(y) << 1 | acm_morton_spread(z) << 2;
}

/* Coordinate c of a sample on an axis of n cells: wrapped into [0, n) when
 * the axis is periodic, clamped to [0, n) otherwise. */
ACM_HD double acm_morton_axis(double c, int32_t n, int periodic)
{
    if (periodic) {
        c -= (double)n * floor(c / (double)n);
        return c < (double)n ? c : 0.0; /* c / n rounding up to 1 */
    }
    return c < 0.0 ? 0.0 : (c >= (double)n ? (double)n - 1e-9 : c);
}

/* Sort key of a sample at X (lattice coordinates) on an n[0] x n[1] x n[2]
 * grid with blocks of edge l (1..ACM_SAMPLE_BLOCK_MAX). */
ACM_HD uint64_t acm_sample_key(const double X[3], const int32_t n[3], const int periodic[3],
                               int32_t l)
{
    uint64_t block = 0, stride = 1;
    uint32_t local[3];
    for (int a = 0; a < 3; ++a) {
        const double c = acm_morton_axis(X[a], n[a], periodic[a]);
        const int32_t cell = (int32_t)c, b = cell / l;
        const double q = (c - (double)b * (double)l) * ACM_MORTON_SUB;
        const uint32_t top = (uint32_t)(l * ACM_MORTON_SUB - 1);
        local[a] = q < 0.0 ? 0u : ((uint32_t)q > top ? top : (uint32_t)q);
        block += (uint64_t)b * stride;
        stride *= (uint64_t)((n[a] + l - 1) / l);
    }
    return block << (3 * ACM_MORTON_BITS) | acm_morton3(local[0], local[1], local[2]);
}

#endif /* ACMLBM_MORTON_H */
