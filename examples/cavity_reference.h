/*
 * libacmlbm examples and tests -- the cubic lid-driven cavity at Re = 1000
 * against Albensoeder & Kuhlmann, J. Comput. Phys. 206 (2005) 536, Table 5:
 * u/U on the centreline x = z = 1/2 of the unit cube, lid at y = 1 moving in
 * +x (the project's bench data cavity3d_re1000, converted to these axes; a
 * single transcription of the table). Used by examples/cavity.c and the
 * validation suite.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_CAVITY_REFERENCE_H
#define ACMLBM_EXAMPLES_CAVITY_REFERENCE_H

#include <math.h>   /* sqrt */
#include <stddef.h> /* size_t */

#define AK2005_POINTS 17

/* (y, u/U) pairs, y from the fixed wall (0) to the lid (1). */
static const double ak2005_re1000[AK2005_POINTS][2] = {
    {0.0000, 0.00000},  {0.0547, -0.20623}, {0.0625, -0.22283}, {0.0703, -0.23696},
    {0.1016, -0.27293}, {0.1719, -0.25160}, {0.2813, -0.10999}, {0.4531, -0.00612},
    {0.5000, 0.00802},  {0.6172, 0.03905},  {0.7344, 0.07334},  {0.8516, 0.12183},
    {0.9531, 0.33171},  {0.9609, 0.39821},  {0.9688, 0.48443},  {0.9766, 0.58964},
    {1.0000, 1.00000},
};

/*
 * The computed profile at height s in [0, 1] from u/U at the n cell rows
 * (row j centred at (j + 1/2) / n): linear between centres, with the walls
 * (0 at s = 0, 1 at the lid) as ends. The half-way walls of the library put
 * the cavity exactly n cells wide.
 */
static inline double ak2005_profile_at(const double *rows, int n, double s)
{
    const double pos = s * n - 0.5; /* in cell-row units */
    if (pos < 0.0)
        return (pos + 0.5) / 0.5 * rows[0];
    if (pos >= n - 1) {
        const double w = (pos - (n - 1)) / 0.5;
        return (1.0 - w) * rows[n - 1] + w;
    }
    const int j = (int)pos;
    const double w = pos - j;
    return (1.0 - w) * rows[j] + w * rows[j + 1];
}

/* Root-mean-square difference from the reference over its 17 points. */
static inline double ak2005_rms(const double *rows, int n)
{
    double sum2 = 0.0;
    for (size_t k = 0; k < AK2005_POINTS; ++k) {
        const double d = ak2005_profile_at(rows, n, ak2005_re1000[k][0]) - ak2005_re1000[k][1];
        sum2 += d * d;
    }
    return sqrt(sum2 / AK2005_POINTS);
}

#endif /* ACMLBM_EXAMPLES_CAVITY_REFERENCE_H */
