/*
 * libacmlbm tests -- shared helpers and the self-registering suite macro.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Each test-<module>.c defines its suites with TEST_SUITE(name) { ... return s; }.
 * The suites register themselves in the ELF section "acm_test_suites", so
 * test-main.c runs every suite linked into the executable without a list.
 */
#ifndef ACMLBM_TEST_COMMON_H
#define ACMLBM_TEST_COMMON_H

#include <check.h>
#include <dirent.h> /* opendir: temporaries left behind */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include <acmlbm/acmlbm.h>

#ifndef M_PI
#  define M_PI 3.14159265358979323846
#endif

struct acm_test_suite {
    const char *name;
    Suite *(*make)(void);
};

#define TEST_SUITE(fn)                                                                     \
    static Suite *fn(void);                                                                \
    static const struct acm_test_suite acm__suite_##fn = {#fn, fn};                       \
    static const struct acm_test_suite *const acm__suite_ptr_##fn                          \
        __attribute__((used, section("acm_test_suites"))) = &acm__suite_##fn;              \
    static Suite *fn(void)

/* A test case with a timeout suited to simulations (seconds). */
static inline TCase *acm_tcase(const char *name, double timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    return tc;
}

/* Assert a call returned ACM_OK, printing the domain's message otherwise. */
#define ACM_CK_OK(d, call)                                                                 \
    do {                                                                                   \
        acm_status acm__st = (call);                                                       \
        ck_assert_msg(acm__st == ACM_OK, "%s -> %s: %s", #call, acm_status_string(acm__st),  \
                      acm_domain_last_error(d));                                           \
    } while (0)

/* Assert a call failed with a specific status and left a message. */
#define ACM_CK_FAIL(d, call, expected)                                                     \
    do {                                                                                   \
        acm_status acm__st = (call);                                                       \
        ck_assert_msg(acm__st == (expected), "%s -> %s (%d), expected %s", #call,           \
                      acm_status_string(acm__st), (int)acm__st,                            \
                      acm_status_string(expected));                                        \
        ck_assert_msg(acm_domain_last_error(d)[0] != '\0', "%s left no message", #call);   \
    } while (0)

/* Least-squares line y = slope x + icpt. */
static inline void acm_test_line_fit(const double *x, const double *y, int n, double *slope,
                                     double *icpt)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; ++i) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    *slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    *icpt = (sy - *slope * sx) / n;
}

/* Backend under test: ACM_TEST_BACKEND=cpu|cuda (default cpu). */
static inline acm_backend acm_test_backend(void)
{
    const char *b = getenv("ACM_TEST_BACKEND");
    return (b != NULL && strcmp(b, "cuda") == 0) ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU;
}

/* ACM_TEST_STORAGE=moments runs a suite on moment storage: a copy of the
 * test's layout (or a new one) with ACM_LAYOUT_STORAGE set, for
 * acm_test_domain; NULL when the variable is unset or "populations". */
static inline acm_layout *acm_test_storage_layout(const acm_layout *base)
{
    const char *v = getenv("ACM_TEST_STORAGE");
    if (v == NULL || strcmp(v, "populations") == 0)
        return NULL;
    ck_assert_msg(strcmp(v, "moments") == 0, "ACM_TEST_STORAGE=%s: populations or moments", v);
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    if (base != NULL) {
        char text[ACM_LAYOUT_STRING_SIZE];
        ck_assert_int_eq(acm_layout_to_string(base, text, sizeof text), ACM_OK);
        ck_assert_int_eq(acm_layout_from_string(l, text), ACM_OK);
    }
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS), ACM_OK);
    return l;
}

/* Whether the suite runs on moment storage (ACM_TEST_STORAGE=moments). */
static inline bool acm_test_moments(void)
{
    const char *v = getenv("ACM_TEST_STORAGE");
    return v != NULL && strcmp(v, "moments") == 0;
}

/* In-place streaming where the storage under test has it; moment storage
 * streams between two arrays (and refuses in place), so there the two-array
 * streaming stands in. */
static inline acm_streaming acm_test_in_place(void)
{
    return acm_test_moments() ? ACM_STREAMING_TWO_ARRAYS : ACM_STREAMING_IN_PLACE;
}

/* Options for a test domain on the backend under test. */
static inline acm_domain_options acm_test_options(int nx, int ny, int nz, double nu,
                                                  acm_collision model, acm_precision prec)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = nx;
    o.ny = ny;
    o.nz = nz;
    o.viscosity = nu;
    o.collision = model;
    o.precision = prec;
    o.backend = acm_test_backend();
    return o;
}

/* Create a domain or fail the test. */
static inline acm_domain *acm_test_domain(const acm_domain_options *o)
{
    char err[256] = "";
    acm_domain_options c = *o;
    c.error_buffer = err;
    c.error_buffer_size = sizeof err;
    acm_layout *storage = acm_test_storage_layout(c.layout);
    if (storage != NULL)
        c.layout = storage;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &c);
    acm_layout_destroy(storage);
    ck_assert_msg(st == ACM_OK, "acm_domain_create: %s: %s", acm_status_string(st), err);
    return d;
}

/* Switch a domain to plain central-moment MRT with constant high-order rate c
 * (c = 1: De Rosis 2017, the "CM(1)" of physics-spec section 11). */
static inline void acm_test_set_cm(acm_domain *d, double c)
{
    acm_collision_options co = ACM_COLLISION_OPTIONS_INIT;
    co.model = ACM_COLLISION_CM_MRT;
    co.high_order_rate = c;
    ACM_CK_OK(d, acm_domain_set_collision(d, &co));
}

/* Global diagnostics of a domain, or fail the test. */
static inline acm_domain_stats acm_test_stats(acm_domain *d)
{
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    ACM_CK_OK(d, acm_domain_get_stats(d, &s));
    return s;
}

/* After a reported divergence: the domain refuses to step until it is
 * re-initialised; then (body force off, fluid at rest) it steps again. */
static inline void acm_test_expect_recovery(acm_domain *d)
{
    ACM_CK_FAIL(d, acm_step(d, 1), ACM_ERR_BAD_STATE);
    const double zero[3] = {0.0, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_body_force(d, zero));
    ACM_CK_OK(d, acm_domain_init_uniform(d, 1.0, NULL));
    ACM_CK_OK(d, acm_step(d, 3));
}

static inline void *acm_test_alloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* acm_domain_load onto `backend`, its message in err[n]. */
static inline acm_status acm_test_try_load(const char *path, acm_backend backend, acm_domain **d,
                                           char *err, size_t n)
{
    acm_load_options lo = ACM_LOAD_OPTIONS_INIT;
    lo.backend = backend;
    lo.error_buffer = err;
    lo.error_buffer_size = n;
    return acm_domain_load(d, path, &lo);
}

/* A checkpoint loaded onto `backend`, or the test failed. */
static inline acm_domain *acm_test_load(const char *path, acm_backend backend)
{
    char err[512] = "";
    acm_domain *d = NULL;
    const acm_status st = acm_test_try_load(path, backend, &d, err, sizeof err);
    ck_assert_msg(st == ACM_OK, "acm_domain_load(%s): %s: %s", path, acm_status_string(st), err);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* Entries of a directory whose name holds ".tmp." (a writer's temporary,
 * `.acm.tmp.<pid>.<n>`, left behind). */
static inline int acm_test_temporaries(const char *dir)
{
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    int n = 0;
    for (struct dirent *e = readdir(dp); e != NULL; e = readdir(dp))
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(dp);
    return n;
}

#endif /* ACMLBM_TEST_COMMON_H */
