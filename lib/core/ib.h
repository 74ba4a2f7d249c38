/*
 * libacmlbm -- the immersed-boundary operators of one sample (physics-spec
 * 8.2-8.4), shared by the CPU backend and the CUDA kernels.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A sample at X (lattice coordinates, cell centres at integers) touches the 8
 * nodes floor(X) + {0,1}^3 with trilinear weights (the 2-point hat kernel,
 * spec 8.2). Along a periodic axis the nodes wrap; along any other axis a node
 * outside the grid is dropped and the remaining weights are renormalised, for
 * interpolation and spreading alike, so that spreading stays conservative:
 * the force added to the grid is exactly sum_l G_l dV_l (spec 8.4).
 */
#ifndef ACMLBM_IB_H
#define ACMLBM_IB_H

#include <math.h>   /* floor */
#include <stddef.h> /* NULL */
#include <stdint.h> /* uint64_t */

#include "lattice.h" /* ACM_HD */

#define ACM_IB_NODES 8

/* What the stencil needs to know about the grid. A slab of a decomposed
 * domain (lib/multi/decomp.c) holds cells [lo, lo + n) of the whole domain's
 * `whole` along an axis (z); samples keep whole-domain coordinates, so that a
 * slab computes bit for bit the weights the undivided domain computes, and
 * only the node indices move. Otherwise lo = 0 and whole = n. */
typedef struct acm_ib_grid {
    int32_t n[3];
    int32_t periodic[3]; /* 1 when both faces of the whole domain's axis are periodic */
    int32_t lo[3];       /* the whole domain's index of this grid's cell 0 */
    int32_t whole[3];    /* the whole domain's cells */
} acm_ib_grid;

/* Support of one sample: linear cell indices (x fastest) and weights summing
 * to 1. Corner c = dx + 2 dy + 4 dz of floor(X). */
typedef struct acm_ib_stencil {
    uint64_t cell[ACM_IB_NODES];
    double w[ACM_IB_NODES];
} acm_ib_stencil;

/* Node index along one axis for base + d, and whether it exists in the grid. */
ACM_HD int acm_ib_axis_node(const acm_ib_grid *g, int a, double base, int d, int32_t *node)
{
    int64_t i = (int64_t)base + d - g->lo[a];
    const int64_t n = g->n[a];
    if (g->periodic[a]) {
        const int64_t w = g->whole[a];
        if (i < -w || i >= 2 * w) /* far away: a division; near the grid (always, for */
            i %= w;               /* samples of a solid inside it) a compare suffices */
        i = i < 0 ? i + w : (i >= w ? i - w : i);
        *node = (int32_t)(i < n ? i : n - 1);
        return i < n; /* a slab holds [0, n) of the wrapped [0, whole) */
    }
    *node = (int32_t)(i < 0 ? 0 : (i >= n ? n - 1 : i)); /* a valid address either way */
    return i >= 0 && i < n;
}

/* Fill s for a sample at X; returns 0 when no node of the support exists (the
 * sample then neither interpolates nor spreads). */
ACM_HD int acm_ib_make_stencil(const acm_ib_grid *g, const double X[3], acm_ib_stencil *s)
{
    int32_t node[3][2];
    double wa[3][2];
    for (int a = 0; a < 3; ++a) {
        const double base = floor(X[a]), f = X[a] - base;
        wa[a][0] = acm_ib_axis_node(g, a, base, 0, &node[a][0]) ? 1.0 - f : 0.0;
        wa[a][1] = acm_ib_axis_node(g, a, base, 1, &node[a][1]) ? f : 0.0;
    }
    double sum = 0.0;
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        const int dx = c & 1, dy = (c >> 1) & 1, dz = c >> 2;
        s->cell[c] = (uint64_t)node[0][dx] +
                     (uint64_t)g->n[0] * ((uint64_t)node[1][dy] + (uint64_t)g->n[1] * (uint64_t)node[2][dz]);
        s->w[c] = wa[0][dx] * wa[1][dy] * wa[2][dz];
        sum += s->w[c];
    }
    if (!(sum > 0.0))
        return 0;
    const double inv = 1.0 / sum;
    for (int c = 0; c < ACM_IB_NODES; ++c)
        s->w[c] *= inv;
    return 1;
}

/* Element i of an array of the backend's real type, `bytes` wide (4: float,
 * 8: double; a constant where the caller inlines this). */
ACM_HD double acm_ib_real(const void *p, uint64_t i, int bytes)
{
    return bytes == 4 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Interpolation at a sample (spec 8.3), over the nodes of its stencil in the
 * band: returns the density, and in u the velocity u* + F / (2 rho) that the
 * penalty compares with the body's. M holds rho, then u*'s three planes; F the
 * IB force spread so far, three planes (NULL before the first spread); n cells
 * each, elements of `bytes` (acm_ib_real). The CPU and the kernels both
 * interpolate here. */
ACM_HD double acm_ib_interpolate(const acm_ib_stencil *st, const void *M, const void *F,
                                 uint64_t n, int bytes, double u[3])
{
    double rho = 0.0;
    u[0] = u[1] = u[2] = 0.0;
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        if (!(st->w[c] > 0.0)) /* not in the band: no rho there */
            continue;
        const uint64_t k = st->cell[c];
        const double rk = acm_ib_real(M, k, bytes), w = st->w[c];
        rho += w * rk;
        for (int a = 0; a < 3; ++a) {
            const double half_f =
                F != NULL ? 0.5 * acm_ib_real(F, (uint64_t)a * n + k, bytes) / rk : 0.0;
            u[a] += w * (acm_ib_real(M, (uint64_t)(a + 1) * n + k, bytes) + half_f);
        }
    }
    return rho;
}

/* The whole domain's plane a sample's forces are summed in: that of its
 * stencil's base, wrapped along a periodic z, else the nearest plane. Each
 * sample has exactly one, so that slabs can sum a solid's force plane by
 * plane and their parent fold the planes in order (lib/multi/decomp.c). */
ACM_HD int32_t acm_ib_owner_plane(const acm_ib_grid *g, double Z)
{
    const int64_t w = g->whole[2];
    int64_t b = (int64_t)floor(Z);
    if (g->periodic[2]) {
        b %= w;
        return (int32_t)(b < 0 ? b + w : b);
    }
    return (int32_t)(b < 0 ? 0 : (b >= w ? w - 1 : b));
}

/* A solid's force and torque, or the part of them from one plane's samples. */
typedef struct acm_ib_ft {
    double f[3], t[3];
} acm_ib_ft;

/* A solid's force and torque from its planes' parts, folded in plane order. */
ACM_HD void acm_ib_ft_fold(const acm_ib_ft *planes, int32_t n, acm_ib_ft *out)
{
    acm_ib_ft t = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    for (int32_t p = 0; p < n; ++p)
        for (int a = 0; a < 3; ++a) {
            t.f[a] += planes[p].f[a];
            t.t[a] += planes[p].t[a];
        }
    *out = t;
}

/* Penalty force density of a sample (spec 8.4): G = alpha rho (U_b - U). */
ACM_HD void acm_ib_penalty(double alpha, double rho, const double ub[3], const double u[3],
                           double G[3])
{
    for (int a = 0; a < 3; ++a)
        G[a] = alpha * rho * (ub[a] - u[a]);
}

/* ---- gather: cell lists over a region of the grid ------------------------------
 * The gather variant (paper Sec. 4.2.1) runs one thread per cell of a box
 * around a solid and needs, for each cell, the samples whose stencil base
 * floor(X) lies in it. The box is e[0] x e[1] x e[2] cells from o: along a
 * periodic axis o is wrapped into [0, n) and e <= n (offsets wrap too); along
 * the others o may be -1 (bases just outside the grid) and nothing is wrapped.
 * Regions are boxes of the whole domain (n: acm_ib_grid.whole): a slab of a
 * decomposed domain walks the undivided domain's region and keeps the nodes
 * on its planes, so that each of its cells sums the same samples in the same
 * order. */
typedef struct acm_ib_region {
    int64_t o[3], e[3];
    uint64_t cells; /* e[0] e[1] e[2] */
} acm_ib_region;

/* The box holding every base cell and every node of samples within r_max of xc. */
ACM_HD acm_ib_region acm_ib_solid_region(const acm_ib_grid *g, const double xc[3], double r_max)
{
    acm_ib_region rg;
    rg.cells = 1;
    for (int a = 0; a < 3; ++a) {
        const int64_t n = g->whole[a];
        int64_t lo = (int64_t)floor(xc[a] - r_max), hi = (int64_t)floor(xc[a] + r_max) + 1;
        if (g->periodic[a]) {
            const int64_t e = hi - lo + 1;
            rg.e[a] = e < n ? e : n;
            rg.o[a] = e < n ? ((lo % n) + n) % n : 0;
        } else {
            lo = lo < -1 ? -1 : lo;
            hi = hi > n ? n : hi;
            rg.o[a] = lo;
            rg.e[a] = hi >= lo ? hi - lo + 1 : 0;
        }
        rg.cells *= (uint64_t)rg.e[a];
    }
    return rg;
}

/* Most cells acm_ib_solid_region() can give for r_max, wherever the solid is. */
ACM_HD uint64_t acm_ib_region_bound(const acm_ib_grid *g, double r_max)
{
    uint64_t cells = 1;
    for (int a = 0; a < 3; ++a) {
        const int64_t e = (int64_t)floor(2.0 * r_max) + 3,
                      cap = g->whole[a] + (g->periodic[a] ? 0 : 2);
        cells *= (uint64_t)(e < cap ? e : cap);
    }
    return cells;
}

/* Slot of base cell b (unwrapped cell coordinates) in the region; 0 if outside. */
ACM_HD int acm_ib_region_slot(const acm_ib_grid *g, const acm_ib_region *rg, const int64_t b[3],
                              uint64_t *slot)
{
    uint64_t s = 0, stride = 1;
    for (int a = 0; a < 3; ++a) {
        int64_t off = b[a] - rg->o[a];
        if (g->periodic[a])
            off = ((off % g->whole[a]) + g->whole[a]) % g->whole[a];
        if (off < 0 || off >= rg->e[a])
            return 0;
        s += (uint64_t)off * stride;
        stride *= (uint64_t)rg->e[a];
    }
    *slot = s;
    return 1;
}

/* Base cell of a sample's stencil. */
ACM_HD void acm_ib_base(const double X[3], int64_t b[3])
{
    for (int a = 0; a < 3; ++a)
        b[a] = (int64_t)floor(X[a]);
}

/* Region cell r as a node: its grid cell in *node and the distinct slots of the
 * base cells whose stencils hold it (node - {0,1}^3) in nb; returns how many
 * (0 when the cell lies outside the grid: outside the whole domain, or on a
 * slab outside its planes). */
ACM_HD int acm_ib_region_node(const acm_ib_grid *g, const acm_ib_region *rg, uint64_t r,
                              uint64_t *node, uint32_t nb[ACM_IB_NODES])
{
    int64_t p[3], q[3];
    uint64_t rest = r;
    for (int a = 0; a < 3; ++a) {
        const int64_t off = (int64_t)(rest % (uint64_t)rg->e[a]), w = g->whole[a];
        rest /= (uint64_t)rg->e[a];
        p[a] = rg->o[a] + off;
        if (g->periodic[a])
            p[a] %= w;
        else if (p[a] < 0 || p[a] >= w)
            return 0;
        q[a] = p[a] - g->lo[a]; /* this grid's */
        if (g->periodic[a] && q[a] < 0)
            q[a] += w;
        if (q[a] < 0 || q[a] >= g->n[a])
            return 0;
    }
    *node = (uint64_t)q[0] + (uint64_t)g->n[0] * ((uint64_t)q[1] + (uint64_t)g->n[1] * (uint64_t)q[2]);
    int count = 0;
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        const int64_t b[3] = {p[0] - (c & 1), p[1] - ((c >> 1) & 1), p[2] - (c >> 2)};
        uint64_t s;
        if (!acm_ib_region_slot(g, rg, b, &s))
            continue;
        int seen = 0;
        for (int j = 0; j < count; ++j)
            seen |= nb[j] == (uint32_t)s;
        if (!seen)
            nb[count++] = (uint32_t)s;
    }
    return count;
}

#endif /* ACMLBM_IB_H */
