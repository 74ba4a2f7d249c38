/*
 * libacmlbm unit tests -- the partitioner of a decomposed domain
 * (lib/multi/partition.c): slabs of whole planes, balanced by the planes' weights,
 * each at least min_planes, refused when they cannot be.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include "partition.h"

/* Every slab non-empty, at least min planes, cuts increasing from 0 to n. */
static void check_cuts(const int32_t *cuts, int32_t n, int32_t parts, int32_t min)
{
    ck_assert_int_eq(cuts[0], 0);
    ck_assert_int_eq(cuts[parts], n);
    for (int32_t p = 0; p < parts; ++p)
        ck_assert_msg(cuts[p + 1] - cuts[p] >= min, "slab %d: planes %d..%d", p, cuts[p],
                      cuts[p + 1]);
}

START_TEST(equal_weights_give_equal_slabs)
{
    int32_t cuts[5];
    ck_assert(acm__partition(400, NULL, 4, 2, NULL, cuts));
    check_cuts(cuts, 400, 4, 2);
    for (int p = 0; p < 4; ++p)
        ck_assert_int_eq(cuts[p + 1] - cuts[p], 100);
    ck_assert(acm__partition(13, NULL, 3, 2, NULL, cuts)); /* 13 = 4 + 4 + 5 or so */
    check_cuts(cuts, 13, 3, 2);
    for (int p = 0; p < 3; ++p)
        ck_assert_int_le(abs((cuts[p + 1] - cuts[p]) - 13 / 3), 1);
}
END_TEST

START_TEST(heavy_planes_make_thin_slabs)
{
    double w[100];
    for (int z = 0; z < 100; ++z)
        w[z] = z < 20 ? 4.0 : 1.0; /* 80 + 80: the first 20 planes weigh half */
    int32_t cuts[3];
    ck_assert(acm__partition(100, w, 2, 2, NULL, cuts));
    check_cuts(cuts, 100, 2, 2);
    ck_assert_int_eq(cuts[1], 20);
}
END_TEST

START_TEST(minimum_planes_hold)
{
    double w[10] = {100, 1, 1, 1, 1, 1, 1, 1, 1, 1}; /* balance alone would give slab 0 one plane */
    int32_t cuts[4];
    ck_assert(acm__partition(10, w, 3, 2, NULL, cuts));
    check_cuts(cuts, 10, 3, 2);
    ck_assert(acm__partition(6, NULL, 3, 2, NULL, cuts)); /* exactly enough */
    check_cuts(cuts, 6, 3, 2);
    ck_assert(!acm__partition(5, NULL, 3, 2, NULL, cuts));
    ck_assert(!acm__partition(5, NULL, 0, 2, NULL, cuts));
    ck_assert(acm__partition(7, NULL, 1, 2, NULL, cuts));
    check_cuts(cuts, 7, 1, 2);
}
END_TEST

/* A slab's own cost (its ghost planes: an inner slab has twice the ends'):
 * the inner slab gets fewer planes, and no cuts make the costliest slab
 * cheaper. */
START_TEST(own_costs_are_weighed)
{
    const double extra[3] = {2.0, 4.0, 2.0};
    int32_t cuts[4];
    ck_assert(acm__partition(30, NULL, 3, 2, extra, cuts));
    check_cuts(cuts, 30, 3, 2);
    double most = 0.0;
    for (int p = 0; p < 3; ++p)
        most = fmax(most, extra[p] + (cuts[p + 1] - cuts[p]));
    ck_assert_msg(most <= 13.0 && cuts[2] - cuts[1] < cuts[1] - cuts[0], "cuts %d %d", cuts[1],
                  cuts[2]);
    /* a heavy plane in the middle slab: the least costliest slab, found by
     * bisection where the prefix sums' split is worse */
    double w[12] = {1, 1, 1, 1, 1, 9, 1, 1, 1, 1, 1, 1};
    ck_assert(acm__partition(12, w, 3, 1, extra, cuts));
    check_cuts(cuts, 12, 3, 1);
    most = 0.0;
    for (int p = 0; p < 3; ++p) {
        double c = extra[p];
        for (int z = cuts[p]; z < cuts[p + 1]; ++z)
            c += w[z];
        most = fmax(most, c);
    }
    ck_assert_msg(most <= 14.0, "cuts %d %d: costliest %g", cuts[1], cuts[2], most);
}
END_TEST

TEST_SUITE(partition_suite)
{
    Suite *s = suite_create("partition");
    TCase *tc = acm_tcase("partition", 10);
    tcase_add_test(tc, equal_weights_give_equal_slabs);
    tcase_add_test(tc, heavy_planes_make_thin_slabs);
    tcase_add_test(tc, minimum_planes_hold);
    tcase_add_test(tc, own_costs_are_weighed);
    suite_add_tcase(s, tc);
    return s;
}
