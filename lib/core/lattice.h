/*
 * libacmlbm -- D3Q27 velocity set (physics-spec section 2), shared by the host
 * and the CUDA kernels. SPDX-License-Identifier: Apache-2.0
 *
 * Public ordering: rest, 6 faces, 12 edges, 8 corners, opposite directions
 * adjacent (opp(i) = i + 1 for odd i, i - 1 for even i > 0).
 * Internally the moment sweeps index populations by (a, b, c) = c_i + 1 in
 * {0,1,2}^3, flattened as 9a + 3b + c ("abc order").
 *
 * The tables are packed into integer constants, 2 bits per population, so
 * that one header serves C, host C++ and device code without separate
 * __constant__ copies: with a compile-time index everything folds away.
 */
#ifndef ACMLBM_LATTICE_H
#define ACMLBM_LATTICE_H

#include <stdint.h> /* uint64_t */

/* Function specifier of helpers used by host code and CUDA kernels alike. */
#ifdef __CUDACC__
#  define ACM_HD static __host__ __device__ __forceinline__
#else
#  define ACM_HD static inline
#endif

#define ACM_Q 27

/* (c_ix + 1) of population i, bits 2i..2i+1 */
#define ACM__CX_PACK UINT64_C(0x20889489489549)
#define ACM__CY_PACK UINT64_C(0x0a088960949495)
#define ACM__CZ_PACK UINT64_C(0x08a0a214894955)

ACM_HD int acm_cx(int i) { return (int)((ACM__CX_PACK >> (2 * i)) & 3u) - 1; }
ACM_HD int acm_cy(int i) { return (int)((ACM__CY_PACK >> (2 * i)) & 3u) - 1; }
ACM_HD int acm_cz(int i) { return (int)((ACM__CZ_PACK >> (2 * i)) & 3u) - 1; }

/* Component d (0 = x, 1 = y, 2 = z) of c_i. */
ACM_HD int acm_c(int i, int d)
{
    return d == 0 ? acm_cx(i) : (d == 1 ? acm_cy(i) : acm_cz(i));
}

ACM_HD int acm_opp(int i) { return i == 0 ? 0 : ((i & 1) ? i + 1 : i - 1); }

/* Position of population i in abc order. */
ACM_HD int acm_abc(int i)
{
    return 9 * (acm_cx(i) + 1) + 3 * (acm_cy(i) + 1) + (acm_cz(i) + 1);
}

/* The population of velocity (cx, cy, cz), each in {-1, 0, 1}: abc order's
 * public indices, 5 bits each, a constant per cx. */
ACM_HD int acm_index_of(int cx, int cy, int cz)
{
    const uint64_t pack = cx < 0 ? UINT64_C(0x197620255914)
                                 : (cx == 0 ? UINT64_C(0xb1c4a03488c) : UINT64_C(0x133d5217ddba));
    return (int)((pack >> (5 * (3 * (cy + 1) + (cz + 1)))) & 31u);
}

/* Population i with the components of the axes in `mask` (bit a: axis a)
 * reversed: its mirror image in planes normal to those axes. */
ACM_HD int acm_mirror(int i, int mask)
{
    if (mask == 0)
        return i;
    return acm_index_of((mask & 1) ? -acm_cx(i) : acm_cx(i), (mask & 2) ? -acm_cy(i) : acm_cy(i),
                        (mask & 4) ? -acm_cz(i) : acm_cz(i));
}

/* Lattice weight w_i: 8/27, 2/27, 1/54, 1/216 for |c|^2 = 0, 1, 2, 3. */
ACM_HD double acm_weight(int i)
{
    int n = acm_cx(i) * acm_cx(i) + acm_cy(i) * acm_cy(i) + acm_cz(i) * acm_cz(i);
    return n == 0 ? 8.0 / 27.0 : (n == 1 ? 2.0 / 27.0 : (n == 2 ? 1.0 / 54.0 : 1.0 / 216.0));
}

/* The populations a transfer of ghost planes moves (lib/multi/halo.c): all of
 * them (dz 0), or only those with c_z = dz (9), which is all that pulls
 * across a cut read of a ghost plane nothing else reads. */
ACM_HD int acm_moves(int dz, int i) { return dz == 0 || acm_cz(i) == dz; }
ACM_HD int acm_moved_count(int dz) { return dz == 0 ? ACM_Q : 9; }

/* Speed of sound squared. */
#define ACM_CS2 (1.0 / 3.0)

#endif /* ACMLBM_LATTICE_H */
