/*
 * libacmlbm -- the motion of one smoke particle (docs/smoke.md), shared by the
 * CPU path and the CUDA kernel. Positions in lattice units, cell (i, j, k) at
 * the point (i, j, k); the velocity u is 3 FP32 values per cell, x fastest.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SMOKE_MATH_H
#define ACMLBM_SMOKE_MATH_H

#include <math.h> /* floor */

#include "ib.h" /* acm_ib_grid, ACM_HD */

/* The two cell centres along one axis around coordinate c, and the weight of
 * the upper one: wrapped on a periodic axis, clamped to the grid otherwise. */
ACM_HD void acm_smoke_axis(double c, int32_t n, int periodic, int32_t *i0, int32_t *i1, double *f)
{
    if (periodic) {
        c -= (double)n * floor(c / (double)n);
        int32_t i = (int32_t)c;
        i = i >= n ? n - 1 : i;
        *i0 = i;
        *i1 = i + 1 == n ? 0 : i + 1;
        *f = c - (double)i;
        return;
    }
    c = c < 0.0 ? 0.0 : (c > (double)(n - 1) ? (double)(n - 1) : c);
    int32_t i = (int32_t)c;
    i = i >= n - 1 ? (n > 1 ? n - 2 : 0) : i;
    *i0 = i;
    *i1 = n > 1 ? i + 1 : i;
    *f = n > 1 ? c - (double)i : 0.0;
}

/* The fluid velocity at X, trilinear between cell centres. */
ACM_HD void acm_smoke_velocity(const acm_ib_grid *g, const float *u, const double X[3],
                               double out[3])
{
    int32_t c[3][2];
    double f[3];
    for (int a = 0; a < 3; ++a)
        acm_smoke_axis(X[a], g->n[a], g->periodic[a], &c[a][0], &c[a][1], &f[a]);
    out[0] = out[1] = out[2] = 0.0;
    for (int k = 0; k < 8; ++k) {
        const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
        const double w = (dx ? f[0] : 1.0 - f[0]) * (dy ? f[1] : 1.0 - f[1]) * (dz ? f[2] : 1.0 - f[2]);
        const size_t cell = (size_t)c[0][dx] + (size_t)g->n[0] * ((size_t)c[1][dy] + (size_t)g->n[1] * (size_t)c[2][dz]);
        for (int a = 0; a < 3; ++a)
            out[a] += w * (double)u[3 * cell + (size_t)a];
    }
}

/* Wrap X into the periodic images; 0 when it has left along another axis
 * (beyond half a cell outside the outermost centres). */
ACM_HD int acm_smoke_wrap(const acm_ib_grid *g, double X[3])
{
    for (int a = 0; a < 3; ++a) {
        const double n = (double)g->n[a];
        if (g->periodic[a]) {
            X[a] -= n * floor(X[a] / n);
            X[a] = X[a] < n ? X[a] : 0.0; /* -1e-18 wraps to n by rounding */
        } else if (!(X[a] >= -0.5 && X[a] < n - 0.5)) {
            return 0;
        }
    }
    return 1;
}

/* One step of the explicit midpoint rule, x + u(x + u(x) / 2); 0 when the
 * particle has left the domain. */
ACM_HD int acm_smoke_move(const acm_ib_grid *g, const float *u, double X[3])
{
    double u1[3], mid[3], u2[3];
    acm_smoke_velocity(g, u, X, u1);
    for (int a = 0; a < 3; ++a)
        mid[a] = X[a] + 0.5 * u1[a];
    acm_smoke_velocity(g, u, mid, u2);
    for (int a = 0; a < 3; ++a)
        X[a] += u2[a];
    return acm_smoke_wrap(g, X);
}

/* What happened to a particle in a step (the `died` bytes of the backends). */
enum { ACM_SMOKE_ALIVE = 0, ACM_SMOKE_LEFT = 1, ACM_SMOKE_EXPIRED = 2 };

/* A live particle's step: moved, aged, and what became of it. */
ACM_HD int acm_smoke_step(const acm_ib_grid *g, const float *u, double X[3], int64_t *age,
                          int64_t life)
{
    const int inside = acm_smoke_move(g, u, X);
    *age += 1;
    return !inside ? ACM_SMOKE_LEFT : (life > 0 && *age >= life ? ACM_SMOKE_EXPIRED : ACM_SMOKE_ALIVE);
}

#endif /* ACMLBM_SMOKE_MATH_H */
