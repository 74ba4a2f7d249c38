/*
 * libacmlbm tests -- in-place streaming (ACM_STREAMING_IN_PLACE, the AA
 * pattern) against the two-array scheme: every collision model, every face
 * type, a moving immersed solid, both step parities; field transfers at both
 * parities; memory. SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"
#include "test-solid-common.h" /* acm_test_layout, acm_test_sphere_points */

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { NX = 11, NY = 8, NZ = 6, SCENES = 4, Q = 27 };

/* Lattice weight of population i in the public order (rest, 6 faces, 12
 * edges, 8 corners; docs/physics.md). */
static double weight(int i)
{
    return i == 0 ? 8.0 / 27.0 : i < 7 ? 2.0 / 27.0 : i < 19 ? 1.0 / 54.0 : 1.0 / 216.0;
}

static const char *const scene_names[SCENES] = {
    "periodic", "moving walls on every face, body force",
    "inlet, outlet (absorbers in front of both), moving walls",
    "walls and a moving sphere"};

static const acm_collision models[] = {ACM_COLLISION_BGK, ACM_COLLISION_RM_MRT,
                                       ACM_COLLISION_CM_MRT, ACM_COLLISION_ACM_LI2018,
                                       ACM_COLLISION_ACM_LI2020};
#define MODELS ((int)(sizeof models / sizeof models[0]))

/* Random populations around the equilibrium at rest, far enough from it that
 * the ACM safety net redoes cells: the same in every call. */
static double *random_populations(void)
{
    const size_t n = (size_t)NX * NY * NZ * Q;
    double *f = acm_test_alloc(n * sizeof *f);
    unsigned seed = 12345;
    for (size_t k = 0; k < n; ++k) {
        seed = seed * 1103515245u + 12345u;
        const double r = (double)((seed >> 8) & 0xffff) / 65536.0 - 0.5;
        f[k] = weight((int)(k % Q)) * (1.0 + 0.9 * r); /* up to 45 %: the safety net acts */
    }
    return f;
}

/* A domain of scene s, model m, with the given streaming. */
static acm_domain *scene_domain(int s, acm_collision model, acm_streaming streaming)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, streaming);
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, model, ACM_PRECISION_FP64);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const double zero[3] = {0, 0, 0}, lid[3] = {0.04, 0, 0.01}, lid_z[3] = {0.02, -0.01, 0};
    const double wind[3] = {0.03, 0.005, 0};
    if (s >= 1) {
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, zero));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    }
    if (s == 1 || s == 3) {
        const double F[3] = {1e-5, -2e-6, 3e-6};
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, zero));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, lid_z));
        ACM_CK_OK(d, acm_domain_set_body_force(d, F));
    }
    if (s == 1) {
        const double side[3] = {0, 0.01, -0.02};
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_WALL, zero));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_WALL, side));
    }
    if (s == 2) {
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, wind));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
        ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_X_MIN, 2, 0.4, 1.0, wind));
        ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_X_MAX, 3, 0.6, 1.01, NULL));
    }
    double *f = random_populations();
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                      (size_t)NX * NY * NZ * Q * sizeof *f));
    free(f);
    if (s == 3) {
        double *pts, *areas;
        const double at[3] = {5.2, 3.9, 2.8};
        acm_solid_options so = acm_test_moving_sphere(200, 2.0, at, &pts, &areas);
        acm_solid *solid = NULL;
        ACM_CK_OK(d, acm_solid_create(&solid, d, &so));
        free(pts);
        free(areas);
    }
    return d;
}

static double *get_field(acm_domain *d, acm_field field, size_t n)
{
    double *v = acm_test_alloc(n * sizeof *v);
    ACM_CK_OK(d, acm_domain_get_field(d, field, ACM_DTYPE_FLOAT64, v, n * sizeof *v));
    return v;
}

/* Both schemes after `steps` steps of scene _i: the populations and the
 * velocity agree to FP64 round-off. An odd count ends at parity 1 (the state
 * post-collision in swapped slots), an even one at parity 0. */
START_TEST(in_place_streaming_equals_two_arrays)
{
    const int s = _i;
    const size_t cells = (size_t)NX * NY * NZ;
    double worst_f = 0.0, worst_u = 0.0;
    for (int m = 0; m < MODELS; ++m) {
        for (int steps = 7; steps <= 8; ++steps) {
            acm_domain *a = scene_domain(s, models[m], ACM_STREAMING_TWO_ARRAYS);
            acm_domain *b = scene_domain(s, models[m], ACM_STREAMING_IN_PLACE);
            ACM_CK_OK(a, acm_step(a, steps));
            ACM_CK_OK(b, acm_step(b, steps));
            double *fa = get_field(a, ACM_FIELD_POPULATIONS, cells * Q);
            double *fb = get_field(b, ACM_FIELD_POPULATIONS, cells * Q);
            double *ua = get_field(a, ACM_FIELD_VELOCITY, 3 * cells);
            double *ub = get_field(b, ACM_FIELD_VELOCITY, 3 * cells);
            const double df = acm_test_max_diff(fa, fb, cells * Q), du = acm_test_max_diff(ua, ub, 3 * cells);
            ck_assert_msg(df <= 1e-14 && du <= 1e-14,
                          "%s, model %d, %d steps: populations differ by %g, velocity by %g",
                          scene_names[s], (int)models[m], steps, df, du);
            worst_f = fmax(worst_f, df);
            worst_u = fmax(worst_u, du);
            const acm_domain_stats sa = acm_test_stats(a), sb = acm_test_stats(b);
            ck_assert_int_eq(sa.fallback_cells_total, sb.fallback_cells_total);
            if (models[m] == ACM_COLLISION_ACM_LI2018 && s == 0)
                ck_assert_msg(sa.fallback_cells_total > 0, "the safety net was not exercised");
            double rho_a, rho_b, va[3], vb[3];
            ACM_CK_OK(a, acm_domain_probe(a, 3, 0, 5, &rho_a, va));
            ACM_CK_OK(b, acm_domain_probe(b, 3, 0, 5, &rho_b, vb));
            ck_assert_double_eq_tol(rho_a, rho_b, 1e-14);
            free(fa);
            free(fb);
            free(ua);
            free(ub);
            acm_domain_destroy(a);
            acm_domain_destroy(b);
        }
    }
    printf("in place vs two arrays, %s, 5 models, 7 and 8 steps: populations %.1e, velocity "
           "%.1e\n",
           scene_names[s], worst_f, worst_u);
}
END_TEST

/* Populations set at either parity read back unchanged, and the run goes on
 * as in the two-array scheme from the same populations. */
START_TEST(in_place_fields_round_trip_at_both_parities)
{
    const size_t cells = (size_t)NX * NY * NZ, n = cells * Q;
    for (int steps = 1; steps <= 2; ++steps) {
        acm_domain *a = scene_domain(2, ACM_COLLISION_DEFAULT, ACM_STREAMING_TWO_ARRAYS);
        acm_domain *b = scene_domain(2, ACM_COLLISION_DEFAULT, ACM_STREAMING_IN_PLACE);
        ACM_CK_OK(b, acm_step(b, steps));
        double *f = get_field(b, ACM_FIELD_POPULATIONS, n);
        ACM_CK_OK(b, acm_domain_set_field(b, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                          n * sizeof *f));
        double *g = get_field(b, ACM_FIELD_POPULATIONS, n);
        ck_assert_msg(acm_test_max_diff(f, g, n) == 0.0, "get -> set -> get changed the populations");
        ACM_CK_OK(a, acm_domain_set_field(a, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                          n * sizeof *f));
        ACM_CK_OK(a, acm_step(a, 5));
        ACM_CK_OK(b, acm_step(b, 5));
        double *fa = get_field(a, ACM_FIELD_POPULATIONS, n);
        double *fb = get_field(b, ACM_FIELD_POPULATIONS, n);
        ck_assert_msg(acm_test_max_diff(fa, fb, n) <= 1e-14, "after set_field at parity %d: %g",
                      steps % 2, acm_test_max_diff(fa, fb, n));
        free(f);
        free(g);
        free(fa);
        free(fb);
        acm_domain_destroy(a);
        acm_domain_destroy(b);
    }
}
END_TEST

/* A domain of n^3 cells with the given streaming, and its info. */
static acm_domain_info streaming_info(int n, acm_streaming streaming)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, streaming);
    acm_domain_options o = acm_test_options(n, n, n, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    acm_domain_destroy(d);
    return info;
}

/* acm_domain_get_info reports the scheme and the bytes per cell: in place
 * holds one population array instead of two. */
START_TEST(in_place_streaming_halves_the_population_memory)
{
    const int n = 32; /* a whole number of CSoA groups: no padding */
    acm_domain_info a = streaming_info(n, ACM_STREAMING_DEFAULT);
    acm_domain_info b = streaming_info(n, ACM_STREAMING_IN_PLACE);
    ck_assert_int_eq(a.streaming, ACM_STREAMING_TWO_ARRAYS);
    ck_assert_int_eq(b.streaming, ACM_STREAMING_IN_PLACE);
    const double cells = (double)n * n * n;
    ck_assert_double_eq_tol(a.bytes_per_cell, (double)a.memory_bytes / cells, 1e-9);
    ck_assert_double_eq_tol(a.bytes_per_cell - b.bytes_per_cell, 27 * 4, 1e-9);
    printf("FP32, %d^3: two arrays %.1f B/cell, in place %.1f B/cell (%s)\n", n,
           a.bytes_per_cell, b.bytes_per_cell,
           acm_test_backend() == ACM_BACKEND_CUDA ? "GPU" : "CPU");
}
END_TEST

/* The GPU's split and baseline structures keep two arrays: in place with
 * them is refused with a message. The CPU has one structure and ignores the
 * kernel key: there the domain is made and steps. */
START_TEST(in_place_needs_the_fused_kernel_on_the_gpu)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_KERNEL, ACM_KERNEL_SPLIT), ACM_OK);
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    char err[256] = "";
    o.layout = l;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    const acm_status st = acm_domain_create(&d, &o);
    acm_layout_destroy(l);
    if (acm_test_backend() != ACM_BACKEND_CUDA) {
        ck_assert_msg(st == ACM_OK, "CPU, in place with the split key: %s", err);
        ACM_CK_OK(d, acm_step(d, 3));
        acm_domain_destroy(d);
        return;
    }
    ck_assert_int_eq(st, ACM_ERR_UNSUPPORTED);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(err, "fused"));
}
END_TEST

/* ACM_TEST_STORAGE=moments: in-place streaming is a layout of population
 * storage; moment storage refuses it with a message (its suite runs this
 * instead of the in-place tests). */
START_TEST(in_place_is_refused_on_moment_storage)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS), ACM_OK);
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    char err[256] = "";
    o.layout = l;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_INVALID_ARG);
    acm_layout_destroy(l);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(err, "in_place"));
    printf("in-place tests not run on moment storage: %s\n", err);
}
END_TEST

TEST_SUITE(streaming_suite)
{
    Suite *s = suite_create("streaming");
    TCase *tc = acm_tcase("in_place", 300);
    if (acm_test_moments()) {
        tcase_add_test(tc, in_place_is_refused_on_moment_storage);
        suite_add_tcase(s, tc);
        return s;
    }
    tcase_add_loop_test(tc, in_place_streaming_equals_two_arrays, 0, SCENES);
    tcase_add_test(tc, in_place_fields_round_trip_at_both_parities);
    tcase_add_test(tc, in_place_streaming_halves_the_population_memory);
    tcase_add_test(tc, in_place_needs_the_fused_kernel_on_the_gpu);
    suite_add_tcase(s, tc);
    return s;
}
