/*
 * libacmlbm tests -- the CSoA indexer (paper Eq. 6): a bijection for every
 * alpha, the paper's formula, and simulations that do not depend on alpha.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include "csoa_index.h"

START_TEST(index_is_a_bijection)
{
    const uint64_t sizes[] = {1, 37, 1000, 4096, 5001};
    for (uint32_t shift = 0; shift <= 13; ++shift) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
            acm_csoa l = acm_csoa_pow2(shift, 27);
            uint64_t n = sizes[s], size = acm_csoa_size(l, n);
            ck_assert_uint_ge(size, 27 * n);
            ck_assert_uint_lt(size, 27 * (n + ((uint64_t)1 << shift)));
            unsigned char *hit = acm_test_alloc(size);
            for (uint64_t k = 0; k < n; ++k)
                for (uint32_t i = 0; i < 27; ++i) {
                    uint64_t idx = acm_csoa_index(l, k, i);
                    ck_assert_uint_lt(idx, size);
                    ck_assert_msg(hit[idx] == 0, "alpha=%u: index %llu hit twice", 1u << shift,
                                  (unsigned long long)idx);
                    hit[idx] = 1;
                }
            free(hit);
        }
    }
}
END_TEST

START_TEST(index_matches_paper_formula)
{
    for (uint32_t shift = 0; shift <= 10; ++shift) {
        acm_csoa l = acm_csoa_pow2(shift, 27);
        uint64_t alpha = (uint64_t)1 << shift;
        for (uint64_t k = 0; k < 3000; k += 7)
            for (uint32_t i = 0; i < 27; ++i)
                ck_assert_uint_eq(acm_csoa_index(l, k, i),
                                  27 * alpha * (k / alpha) + alpha * i + k % alpha);
    }
    /* the two extremes: alpha = 1 is AoS, a large alpha is SoA */
    acm_csoa aos = acm_csoa_pow2(0, 27), soa = acm_csoa_pow2(20, 27);
    ck_assert_uint_eq(acm_csoa_index(aos, 5, 3), 5 * 27 + 3);
    ck_assert_uint_eq(acm_csoa_index(soa, 5, 3), 3 * ((uint64_t)1 << 20) + 5);
}
END_TEST

/* Run a small flow with walls and a force for some steps with a given alpha
 * and return its populations. */
static double *run_with_alpha(int64_t alpha)
{
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, alpha), ACM_OK);
    acm_domain_options o = acm_test_options(13, 7, 5, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    o.layout = l;
    o.initial_velocity[0] = 0.03;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l); /* the domain keeps its own copy */
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    ck_assert_int_eq(info.csoa_group, alpha);
    const double lid[3] = {0.05, 0, 0.01}, g[3] = {1e-5, 2e-6, 0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    ACM_CK_OK(d, acm_step(d, 20));
    size_t bytes = 0;
    ACM_CK_OK(d, acm_domain_field_size(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &bytes));
    double *f = acm_test_alloc(bytes);
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes));
    acm_domain_destroy(d);
    return f;
}

START_TEST(simulation_is_independent_of_alpha)
{
    double *ref = run_with_alpha(1);
    const int64_t alphas[] = {2, 8, 32, 1024};
    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; ++a) {
        double *f = run_with_alpha(alphas[a]);
        for (size_t i = 0; i < (size_t)13 * 7 * 5 * 27; ++i)
            ck_assert_msg(f[i] == ref[i], "alpha=%lld: population %zu differs (%.17g vs %.17g)",
                          (long long)alphas[a], i, f[i], ref[i]);
        free(f);
    }
    free(ref);
}
END_TEST

TEST_SUITE(csoa_suite)
{
    Suite *s = suite_create("csoa");
    TCase *tc = acm_tcase("indexer", 60);
    tcase_add_test(tc, index_is_a_bijection);
    tcase_add_test(tc, index_matches_paper_formula);
    tcase_add_test(tc, simulation_is_independent_of_alpha);
    suite_add_tcase(s, tc);
    return s;
}
