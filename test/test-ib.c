/*
 * libacmlbm tests -- the per-sample IB math shared by host and device
 * (lib/core/ib.h, lib/core/morton.h): stencils wrap periodic axes from anywhere, drop
 * and renormalise across the others, and give trilinear weights; sort keys
 * order samples by block, then by Morton code inside the block; a body's turn
 * takes its sine and cosine from a series that host and device round alike.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>

#include "test-common.h"

#include "ib.h"
#include "morton.h"
#include "rigid.h"

static const acm_ib_grid periodic_grid = {{10, 6, 4}, {1, 1, 1}, {0, 0, 0}, {10, 6, 4}};
static const acm_ib_grid walled_grid = {{10, 6, 4}, {0, 0, 0}, {0, 0, 0}, {10, 6, 4}};

static double weight_sum(const acm_ib_stencil *s)
{
    double sum = 0.0;
    for (int c = 0; c < ACM_IB_NODES; ++c)
        sum += s->w[c];
    return sum;
}

START_TEST(periodic_stencil_wraps_from_anywhere)
{
    const double X0[3] = {3.25, 1.5, 0.75};
    acm_ib_stencil ref;
    ck_assert(acm_ib_make_stencil(&periodic_grid, X0, &ref));
    /* whole periods away, near (one compare) and far (the remainder) */
    for (int k = -40; k <= 40; ++k) {
        const double X[3] = {X0[0] + 10.0 * k, X0[1] - 6.0 * k, X0[2] + 4.0 * k};
        acm_ib_stencil s;
        ck_assert(acm_ib_make_stencil(&periodic_grid, X, &s));
        for (int c = 0; c < ACM_IB_NODES; ++c) {
            ck_assert_msg(s.cell[c] == ref.cell[c], "shift %d, corner %d: cell %llu, not %llu", k,
                          c, (unsigned long long)s.cell[c], (unsigned long long)ref.cell[c]);
            ck_assert_double_eq_tol(s.w[c], ref.w[c], 1e-12);
        }
    }
    /* the corner past the last cell is cell 0 of that axis */
    const double edge[3] = {9.5, 5.5, 3.5};
    acm_ib_stencil s;
    ck_assert(acm_ib_make_stencil(&periodic_grid, edge, &s));
    ck_assert_uint_eq(s.cell[0], 9 + 10 * (5 + 6 * 3));
    ck_assert_uint_eq(s.cell[7], 0);
    ck_assert_double_eq_tol(weight_sum(&s), 1.0, 1e-15);
}
END_TEST

START_TEST(interior_weights_are_trilinear)
{
    const double X[3] = {4.2, 2.7, 1.1};
    acm_ib_stencil s;
    ck_assert(acm_ib_make_stencil(&walled_grid, X, &s));
    const double f[3] = {0.2, 0.7, 0.1};
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        const int d[3] = {c & 1, (c >> 1) & 1, c >> 2};
        double w = 1.0;
        for (int a = 0; a < 3; ++a)
            w *= d[a] ? f[a] : 1.0 - f[a];
        ck_assert_double_eq_tol(s.w[c], w, 1e-12);
        ck_assert_uint_eq(s.cell[c], (uint64_t)(4 + d[0]) + 10 * ((uint64_t)(2 + d[1]) +
                                                                  6 * (uint64_t)(1 + d[2])));
    }
    ck_assert_double_eq_tol(weight_sum(&s), 1.0, 1e-15);
}
END_TEST

START_TEST(walls_drop_outside_nodes_and_renormalise)
{
    /* base -1 along x: the node at -1 is dropped, x = 0 takes all the x weight */
    const double X[3] = {-0.25, 2.0, 1.0};
    acm_ib_stencil s;
    ck_assert(acm_ib_make_stencil(&walled_grid, X, &s));
    for (int c = 0; c < ACM_IB_NODES; ++c) {
        if ((c & 1) == 0)
            ck_assert_double_eq(s.w[c], 0.0);
        ck_assert_uint_lt(s.cell[c], 10 * 6 * 4); /* a valid address either way */
    }
    ck_assert_double_eq_tol(s.w[1], 1.0, 1e-15); /* (0, 2, 1): y and z exactly on nodes */
    ck_assert_uint_eq(s.cell[1], 0 + 10 * (2 + 6 * 1));
    /* a sample with no node inside the grid has no stencil */
    const double out[3] = {-3.0, 2.0, 1.0};
    ck_assert(!acm_ib_make_stencil(&walled_grid, out, &s));
}
END_TEST

/* A slab's grid (planes [lo, lo + n) of the whole z, lib/multi/decomp.c): where the
 * whole grid's stencil has a node in the slab, the slab's has the same node,
 * shifted, with the bitwise same weight; a sample whose support lies in the
 * slab has its whole stencil there. Along a periodic z the slab of planes
 * 8, 9, 0, 1, 2 (lo = -2) wraps; the owner plane is the base's, wrapped or
 * clamped. */
START_TEST(slab_stencil_is_the_whole_grids_shifted)
{
    for (int periodic = 0; periodic < 2; ++periodic) {
        const acm_ib_grid whole = {{5, 4, 10}, {1, 1, periodic}, {0, 0, 0}, {5, 4, 10}};
        const int32_t lo = periodic ? -2 : 3;
        const acm_ib_grid slab = {{5, 4, 5}, {1, 1, periodic}, {0, 0, lo}, {5, 4, 10}};
        for (double Z = -1.7; Z < 11.0; Z += 0.37) {
            const double X[3] = {1.3, 2.6, Z};
            acm_ib_stencil w, s;
            const int hw = acm_ib_make_stencil(&whole, X, &w), hs = acm_ib_make_stencil(&slab, X, &s);
            int inside = 0; /* the whole stencil's nodes with weight in the slab */
            for (int c = 0; c < ACM_IB_NODES; ++c) {
                const int64_t z = (int64_t)(w.cell[c] / 20), rel = ((z - lo) % 10 + 10) % 10;
                inside += w.w[c] > 0.0 && (periodic ? rel < 5 : z - lo >= 0 && z - lo < 5);
            }
            int nodes = 0;
            for (int c = 0; c < ACM_IB_NODES; ++c)
                nodes += hw && w.w[c] > 0.0;
            ck_assert_int_eq(hs, inside > 0);
            if (inside != nodes) /* partly outside: renormalised, the slab's ghost is wrong */
                continue;
            for (int c = 0; c < ACM_IB_NODES; ++c) {
                if (!(w.w[c] > 0.0))
                    continue;
                const int64_t z = (int64_t)(w.cell[c] / 20);
                const int64_t local = periodic ? ((z - lo) % 10 + 10) % 10 : z - lo;
                ck_assert_uint_eq(s.cell[c], w.cell[c] % 20 + 20 * (uint64_t)local);
                ck_assert(memcmp(&s.w[c], &w.w[c], sizeof(double)) == 0);
            }
        }
        ck_assert_int_eq(acm_ib_owner_plane(&slab, -0.5), periodic ? 9 : 0);
        ck_assert_int_eq(acm_ib_owner_plane(&slab, 10.2), periodic ? 0 : 9);
        ck_assert_int_eq(acm_ib_owner_plane(&slab, 4.99), 4);
    }
}
END_TEST

START_TEST(sort_keys_go_by_block_then_morton)
{
    const int32_t n[3] = {8, 8, 8};
    const int periodic[3] = {1, 1, 1};
    const int32_t l = 2;
    /* every cell centre: keys are distinct, and sorting by key visits whole
     * blocks one after the other in x-y-z block order */
    uint64_t prev_block = 0, prev_key = 0;
    int first = 1;
    for (int32_t bz = 0; bz < 4; ++bz)
        for (int32_t by = 0; by < 4; ++by)
            for (int32_t bx = 0; bx < 4; ++bx) {
                uint64_t lo = UINT64_MAX, hi = 0;
                for (int c = 0; c < 8; ++c) {
                    const double X[3] = {2.0 * bx + (c & 1) + 0.5, 2.0 * by + ((c >> 1) & 1) + 0.5,
                                         2.0 * bz + (c >> 2) + 0.5};
                    const uint64_t key = acm_sample_key(X, n, periodic, l);
                    ck_assert_uint_eq(key >> (3 * ACM_MORTON_BITS),
                                      (uint64_t)(bx + 4 * (by + 4 * bz)));
                    lo = key < lo ? key : lo;
                    hi = key > hi ? key : hi;
                }
                if (!first)
                    ck_assert_uint_gt(lo, prev_key); /* blocks do not interleave */
                ck_assert_uint_ge(lo >> (3 * ACM_MORTON_BITS), prev_block);
                prev_block = lo >> (3 * ACM_MORTON_BITS);
                prev_key = hi;
                first = 0;
            }
    /* inside a block: Z order, x the lowest bit */
    const double a[3] = {0.5, 0.5, 0.5}, b[3] = {1.5, 0.5, 0.5}, c[3] = {0.5, 1.5, 0.5},
                 d[3] = {0.5, 0.5, 1.5};
    const uint64_t ka = acm_sample_key(a, n, periodic, l), kb = acm_sample_key(b, n, periodic, l),
                   kc = acm_sample_key(c, n, periodic, l), kd = acm_sample_key(d, n, periodic, l);
    ck_assert_uint_lt(ka, kb);
    ck_assert_uint_lt(kb, kc);
    ck_assert_uint_lt(kc, kd);
    ck_assert_uint_eq(acm_morton3(1, 0, 0), 1);
    ck_assert_uint_eq(acm_morton3(0, 1, 0), 2);
    ck_assert_uint_eq(acm_morton3(0, 0, 1), 4);
    ck_assert_uint_eq(acm_morton3(3, 3, 3), 63);
    /* periodic wrap: a whole period away, the same key */
    const double far[3] = {0.5 + 8.0 * 5, 0.5 - 8.0 * 3, 0.5};
    ck_assert_uint_eq(acm_sample_key(far, n, periodic, l), ka);
}
END_TEST

/* acm_half_turn's series (lib/core/rigid.h) against the C library over the
 * half-angles a step's turn has: within 2 units in the last place of cos(x)
 * and of sin(x) / x. And a turn keeps a unit quaternion, and two half turns
 * about one axis are one whole (to rounding). */
START_TEST(half_turn_is_the_sine_and_cosine)
{
    double worst_c = 0.0, worst_s = 0.0;
    for (int k = 0; k <= 100000; ++k) {
        const double x = 0.5 * k / 100000.0;
        double c, s;
        acm_half_turn(x, &c, &s);
        const double sx = x > 0.0 ? sin(x) / x : 1.0;
        worst_c = fmax(worst_c, fabs(c - cos(x)) / (nextafter(cos(x), 2.0) - cos(x)));
        worst_s = fmax(worst_s, fabs(s - sx) / (nextafter(sx, 2.0) - sx));
    }
    printf("half-turn series: cos within %.1f, sin(x)/x within %.1f units in the last place\n",
           worst_c, worst_s);
    ck_assert_msg(worst_c <= 2.0 && worst_s <= 2.0, "cos %g, sin/x %g ulp", worst_c, worst_s);
    double q[4] = {1, 0, 0, 0}, r[4] = {1, 0, 0, 0};
    const double w[3] = {0.3, -0.2, 0.5}, half[3] = {0.15, -0.1, 0.25};
    acm_quat_turn(q, w);
    acm_quat_turn(r, half);
    acm_quat_turn(r, half);
    for (int i = 0; i < 4; ++i)
        ck_assert_msg(fabs(q[i] - r[i]) < 1e-15, "component %d: %.17g vs %.17g", i, q[i], r[i]);
    ck_assert(fabs(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1.0) < 1e-15);
    ck_assert(fabs(q[0] - cos(0.5 * sqrt(0.38))) < 1e-15);
}
END_TEST

TEST_SUITE(ib)
{
    Suite *s = suite_create("ib");
    TCase *tc = acm_tcase("stencil", 30);
    tcase_add_test(tc, periodic_stencil_wraps_from_anywhere);
    tcase_add_test(tc, interior_weights_are_trilinear);
    tcase_add_test(tc, walls_drop_outside_nodes_and_renormalise);
    tcase_add_test(tc, slab_stencil_is_the_whole_grids_shifted);
    tcase_add_test(tc, sort_keys_go_by_block_then_morton);
    tcase_add_test(tc, half_turn_is_the_sine_and_cosine);
    suite_add_tcase(s, tc);
    return s;
}
