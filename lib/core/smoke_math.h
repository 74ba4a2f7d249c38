/*
 * libacmlbm -- the motion of one smoke particle (docs/smoke.md), shared by the
 * CPU path and the CUDA kernel. Positions in lattice units, cell (i, j, k) at
 * the point (i, j, k); the velocity u is 3 FP32 values per cell, x fastest.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SMOKE_MATH_H
#define ACMLBM_SMOKE_MATH_H

#include <math.h> /* floor */

#include "ib.h"    /* acm_ib_grid, ACM_HD */
#include "rigid.h" /* acm_quat_rotate */

/* The two cell centres along one axis around coordinate c, and the weight of
 * the upper one: wrapped on a periodic axis, clamped to the grid otherwise. A
 * coordinate that is not finite (a particle moved by a diverged flow) counts
 * as 0, so that no index is ever made from it. */
ACM_HD void acm_smoke_axis(double c, int32_t n, int periodic, int32_t *i0, int32_t *i1, double *f)
{
    if (periodic) {
        c -= (double)n * floor(c / (double)n);
        c = c >= 0.0 && c < (double)n ? c : 0.0;
        int32_t i = (int32_t)c;
        i = i >= n ? n - 1 : i;
        *i0 = i;
        *i1 = i + 1 == n ? 0 : i + 1;
        *f = c - (double)i;
        return;
    }
    c = c >= 0.0 ? (c <= (double)(n - 1) ? c : (double)(n - 1)) : 0.0;
    int32_t i = (int32_t)c;
    i = i >= n - 1 ? (n > 1 ? n - 2 : 0) : i;
    *i0 = i;
    *i1 = n > 1 ? i + 1 : i;
    *f = n > 1 ? c - (double)i : 0.0;
}

/* The 2 x 2 x 2 cell centres around X (c[axis][0 or 1]) and the weights of
 * the upper ones (f[axis]). */
ACM_HD void acm_smoke_stencil(const acm_ib_grid *g, const double X[3], int32_t c[3][2], double f[3])
{
    for (int a = 0; a < 3; ++a)
        acm_smoke_axis(X[a], g->n[a], g->periodic[a], &c[a][0], &c[a][1], &f[a]);
}

/* Trilinear weight of corner q (bit 0: upper x, bit 1: upper y, bit 2: upper z). */
ACM_HD double acm_smoke_weight(int q, const double f[3])
{
    return ((q & 1) ? f[0] : 1.0 - f[0]) * ((q & 2) ? f[1] : 1.0 - f[1]) *
           ((q & 4) ? f[2] : 1.0 - f[2]);
}

/* The cell of corner q of a stencil, x fastest. */
ACM_HD size_t acm_smoke_corner(const acm_ib_grid *g, int32_t c[3][2], int q)
{
    return (size_t)c[0][q & 1] +
           (size_t)g->n[0] * ((size_t)c[1][(q >> 1) & 1] + (size_t)g->n[1] * (size_t)c[2][q >> 2]);
}

/* The fluid velocity at X, trilinear between cell centres. */
ACM_HD void acm_smoke_velocity(const acm_ib_grid *g, const float *u, const double X[3],
                               double out[3])
{
    int32_t c[3][2];
    double f[3];
    acm_smoke_stencil(g, X, c, f);
    out[0] = out[1] = out[2] = 0.0;
    for (int q = 0; q < 8; ++q) {
        const double w = acm_smoke_weight(q, f);
        const size_t cell = acm_smoke_corner(g, c, q);
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

/* ---- solids that absorb particles ------------------------------------------------------ */

/* A solid's inside as a bit grid in its body frame: point (i, j, k) at
 * lo + h (i, j, k), x fastest, at the solid's current pose. */
typedef struct acm_smoke_obstacle {
    double x[3], q[4];    /* centre of mass and orientation (body -> world) */
    double lo[3], inv_h;
    int32_t n[3];
    int32_t body;         /* the solid's index in its domain: a backend that moves free
                             bodies itself gives their x and q */
    const uint32_t *bits; /* host or device memory, as the backend needs */
} acm_smoke_obstacle;

/* Whether X lies inside the obstacle: the nearest grid point of its body
 * frame position is marked (the nearest periodic image of the offset). */
ACM_HD int acm_smoke_inside(const acm_ib_grid *g, const acm_smoke_obstacle *o, const double X[3])
{
    double d[3];
    for (int a = 0; a < 3; ++a) {
        d[a] = X[a] - o->x[a];
        if (g->periodic[a])
            d[a] -= (double)g->n[a] * floor(d[a] / (double)g->n[a] + 0.5);
    }
    const double qc[4] = {o->q[0], -o->q[1], -o->q[2], -o->q[3]};
    double b[3];
    acm_quat_rotate(qc, d, b);
    int64_t i[3];
    for (int a = 0; a < 3; ++a) {
        const double t = floor((b[a] - o->lo[a]) * o->inv_h + 0.5);
        if (!(t >= 0.0 && t < (double)o->n[a]))
            return 0;
        i[a] = (int64_t)t;
    }
    const uint64_t bit = (uint64_t)i[0] + (uint64_t)o->n[0] * ((uint64_t)i[1] + (uint64_t)o->n[1] * (uint64_t)i[2]);
    return (int)((o->bits[bit >> 5] >> (bit & 31u)) & 1u);
}

/* ---- a particle's step ------------------------------------------------------------------ */

/* What happened to a particle in a step. */
enum { ACM_SMOKE_ALIVE = 0, ACM_SMOKE_LEFT = 1, ACM_SMOKE_EXPIRED = 2, ACM_SMOKE_ABSORBED = 3 };

/* A live particle's step: moved, aged (saturating), and what became of it. */
ACM_HD int acm_smoke_step(const acm_ib_grid *g, const float *u, const acm_smoke_obstacle *obs,
                          int32_t nobs, double X[3], int32_t *age, int32_t life)
{
    const int stays = acm_smoke_move(g, u, X);
    *age += *age < 0x7fffffff ? 1 : 0;
    if (!stays)
        return ACM_SMOKE_LEFT;
    if (life > 0 && *age >= life)
        return ACM_SMOKE_EXPIRED;
    for (int32_t o = 0; o < nobs; ++o)
        if (acm_smoke_inside(g, obs + o, X))
            return ACM_SMOKE_ABSORBED;
    return ACM_SMOKE_ALIVE;
}

/* Counters of a smoke, kept by whoever moves its particles. */
typedef struct acm_smoke_counts {
    uint64_t emitted, left, expired, absorbed, dropped;
} acm_smoke_counts;

/* ---- emission ---------------------------------------------------------------------------- */

/* One emitter's share of a step's emission: its particles are the step's
 * emissions first .. first + count - 1, in the slots the step finds free. */
typedef struct acm_smoke_source {
    int32_t shape;        /* acm_emitter_shape */
    int32_t lifetime;     /* 0: until it leaves */
    uint32_t first, count;
    uint64_t serial;      /* the emitter's emissions before this step: random streams */
    double a[3], b[3];    /* BOX: lo, hi; SPHERE: centre, (radius, 0, 0) */
    const double *points; /* POINTS: world points; SOLID: body-frame points (host or device) */
    uint64_t npoints, next; /* POINTS: the point of the first particle */
    double x[3], q[4];    /* SOLID: pose of the solid (body -> world) */
    int32_t body;         /* SOLID: the solid's index in its domain (as acm_smoke_obstacle's) */
} acm_smoke_source;

/* Shapes of sources: acm_emitter_shape's values (lib/smoke/smoke.c checks them). */
#define ACM_SMOKE_BOX 1
#define ACM_SMOKE_SPHERE 2
#define ACM_SMOKE_POINTS 3
#define ACM_SMOKE_SOLID 4

/* A uniform double in [0, 1) of random stream (seed, serial), draw j: the
 * splitmix64 finaliser of a Weyl sequence, the same on the host and the device. */
ACM_HD double acm_smoke_uniform(uint64_t seed, uint64_t serial, uint32_t j)
{
    uint64_t z = seed + (serial * 64u + j + 1u) * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Where particle i (0-based) of a source starts. */
ACM_HD void acm_smoke_source_point(const acm_smoke_source *s, uint64_t seed, uint32_t i,
                                   double X[3])
{
    const uint64_t serial = s->serial + i;
    if (s->shape == ACM_SMOKE_BOX) {
        for (int a = 0; a < 3; ++a)
            X[a] = s->a[a] + (s->b[a] - s->a[a]) * acm_smoke_uniform(seed, serial, (uint32_t)a);
        return;
    }
    if (s->shape == ACM_SMOKE_SPHERE) { /* rejection from the cube (P(21 misses) < 1e-6) */
        double v[3] = {0.0, 0.0, 0.0};
        for (uint32_t t = 0; t < 21; ++t) {
            for (int a = 0; a < 3; ++a)
                v[a] = 2.0 * acm_smoke_uniform(seed, serial, 3 * t + (uint32_t)a) - 1.0;
            if (v[0] * v[0] + v[1] * v[1] + v[2] * v[2] <= 1.0)
                break;
            v[0] = v[1] = v[2] = 0.0;
        }
        for (int a = 0; a < 3; ++a)
            X[a] = s->a[a] + s->b[0] * v[a];
        return;
    }
    if (s->shape == ACM_SMOKE_POINTS) { /* in turn */
        const uint64_t p = (s->next + i) % s->npoints;
        for (int a = 0; a < 3; ++a)
            X[a] = s->points[3 * p + (uint64_t)a];
        return;
    }
    /* ACM_SMOKE_SOLID: a random point of the solid's list, placed at its pose */
    uint64_t p = (uint64_t)(acm_smoke_uniform(seed, serial, 0) * (double)s->npoints);
    p = p < s->npoints ? p : s->npoints - 1;
    double d[3];
    acm_quat_rotate(s->q, s->points + 3 * p, d);
    for (int a = 0; a < 3; ++a)
        X[a] = s->x[a] + d[a];
}

/* The source of the step's emission e: the last source with first <= e. */
ACM_HD int32_t acm_smoke_source_of(const acm_smoke_source *src, int32_t nsrc, uint32_t e)
{
    int32_t lo = 0, hi = nsrc - 1;
    while (lo < hi) {
        const int32_t mid = (lo + hi + 1) / 2;
        if (src[mid].first <= e)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* ---- density ------------------------------------------------------------------------------ */

/* The voxels of a density grid with s voxels per cell edge around X and
 * their cloud-in-cell weights (voxel i centred at (i + 1/2) / s - 1/2: in
 * voxel units a particle lies between voxel centres as it lies between cell
 * centres), s^3 per particle per cell volume. */
ACM_HD void acm_smoke_cic(const acm_ib_grid *g, const int32_t m[3], int32_t s, const double X[3],
                          size_t voxel[8], float w[8])
{
    int32_t c[3][2];
    double f[3];
    for (int a = 0; a < 3; ++a)
        acm_smoke_axis((X[a] + 0.5) * s - 0.5, m[a], g->periodic[a], &c[a][0], &c[a][1], &f[a]);
    const double unit = (double)s * s * s;
    for (int q = 0; q < 8; ++q) {
        voxel[q] = (size_t)c[0][q & 1] +
                   (size_t)m[0] * ((size_t)c[1][(q >> 1) & 1] + (size_t)m[1] * (size_t)c[2][q >> 2]);
        w[q] = (float)(unit * acm_smoke_weight(q, f));
    }
}

#endif /* ACMLBM_SMOKE_MATH_H */
