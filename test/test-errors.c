/*
 * libacmlbm tests -- every public call fed bad input: it must return the
 * status its header documents, leave a message on the handle (where there is
 * one), leave its outputs and the domain untouched, and neither crash nor
 * leak (the sanitizer build checks the last two).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include <stdint.h> /* uintptr_t, INT64_MIN */
#include <time.h>   /* clock_gettime */

/* ---- helpers ------------------------------------------------------------------- */

/* Grid of the test domains: unequal sizes catch swapped axes. */
#define NX 4
#define NY 5
#define NZ 6
#define NCELLS ((size_t)NX * NY * NZ)
#define LAST_CELL (NCELLS - 1)

/* A marker message is left on a handle before each call under test. A call
 * that fails without writing its own message leaves the marker in place, so
 * a stale message from an earlier failure cannot pass for a fresh one. The
 * marker comes from a failure no test provokes otherwise. */
#define MARK 424242
static char marker[512];

static const char *prime_domain(acm_domain *d)
{
    double rho = 0.0;
    acm_status st = acm_domain_probe(d, -MARK, 0, 0, &rho, NULL);
    ck_assert_int_eq(st, ACM_ERR_OUT_OF_RANGE);
    snprintf(marker, sizeof marker, "%s", acm_domain_last_error(d));
    ck_assert_msg(strstr(marker, "424242") != NULL, "unexpected marker message '%s'", marker);
    return marker;
}

static const char *prime_layout(acm_layout *l)
{
    acm_status st = acm_layout_set(l, (acm_layout_param)MARK, 0);
    ck_assert_int_eq(st, ACM_ERR_BAD_ENUM);
    snprintf(marker, sizeof marker, "%s", acm_layout_last_error(l));
    ck_assert_msg(strstr(marker, "424242") != NULL, "unexpected marker message '%s'", marker);
    return marker;
}

/* A call on a handle fails with `expected` and leaves a message of its own. */
#define EXPECT_DOMAIN_FAIL(d, call, expected)                                              \
    do {                                                                                   \
        const char *mark_ = prime_domain(d);                                               \
        acm_status st_ = (call);                                                           \
        ck_assert_msg(st_ == (expected), "%s -> %s (%d), expected %s", #call,             \
                      acm_status_string(st_), (int)st_, acm_status_string(expected));      \
        const char *m_ = acm_domain_last_error(d);                                         \
        ck_assert_msg(m_ != NULL && m_[0] != '\0', "%s left no message", #call);           \
        ck_assert_msg(strcmp(m_, mark_) != 0, "%s left no message of its own: %s", #call,  \
                      m_);                                                                 \
    } while (0)

/* getter(d, &out) with out.version = ver fails with ACM_ERR_BAD_VERSION and
 * leaves every byte of out as it was. */
#define EXPECT_GET_BAD_VERSION(d, type, getter, ver)                                       \
    do {                                                                                   \
        type out_, ref_;                                                                   \
        memset(&out_, 0x5A, sizeof out_);                                                  \
        out_.version = (ver);                                                              \
        ref_ = out_;                                                                       \
        EXPECT_DOMAIN_FAIL(d, getter(d, &out_), ACM_ERR_BAD_VERSION);                      \
        ck_assert_msg(memcmp(&out_, &ref_, sizeof out_) == 0,                              \
                      #getter " wrote on failure");                                        \
    } while (0)

#define EXPECT_LAYOUT_FAIL(l, call, expected)                                              \
    do {                                                                                   \
        const char *mark_ = prime_layout(l);                                               \
        acm_status st_ = (call);                                                           \
        ck_assert_msg(st_ == (expected), "%s -> %s (%d), expected %s", #call,             \
                      acm_status_string(st_), (int)st_, acm_status_string(expected));      \
        const char *m_ = acm_layout_last_error(l);                                         \
        ck_assert_msg(m_ != NULL && m_[0] != '\0', "%s left no message", #call);           \
        ck_assert_msg(strcmp(m_, mark_) != 0, "%s left no message of its own: %s", #call,  \
                      m_);                                                                 \
    } while (0)

/* A call without a handle returns `expected`. */
#define EXPECT_STATUS(call, expected)                                                      \
    do {                                                                                   \
        acm_status st_ = (call);                                                           \
        ck_assert_msg(st_ == (expected), "%s -> %s (%d), expected %s", #call,             \
                      acm_status_string(st_), (int)st_, acm_status_string(expected));      \
    } while (0)

/* A pointer value that no successful create would return. */
static int not_a_domain;
#define SENTINEL_DOMAIN ((acm_domain *)(void *)&not_a_domain)
#define SENTINEL_LAYOUT ((acm_layout *)(void *)&not_a_domain)

static acm_domain_options base_options(void)
{
    return acm_test_options(NX, NY, NZ, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
}

/* A domain holding a non-uniform state, a body force and a force field, so
 * that any change to its state shows up in a probe or a field. */
static acm_domain *busy_domain(void)
{
    acm_domain_options o = base_options();
    acm_domain *d = acm_test_domain(&o);
    double *rho = acm_test_alloc(NCELLS * sizeof(double));
    double *u = acm_test_alloc(3 * NCELLS * sizeof(double));
    double *F = acm_test_alloc(3 * NCELLS * sizeof(double));
    for (size_t k = 0; k < NCELLS; ++k) {
        rho[k] = 1.0 + 0.001 * (double)(k % 7);
        for (int a = 0; a < 3; ++a) {
            u[3 * k + (size_t)a] = 0.002 * (double)((k + (size_t)a) % 5) - 0.004;
            F[3 * k + (size_t)a] = 1e-5 * (double)((k * 3 + (size_t)a) % 4);
        }
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, u, NCELLS));
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, F,
                                      3 * NCELLS * sizeof(double)));
    const double g[3] = {1e-6, -2e-6, 3e-6};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    free(rho);
    free(u);
    free(F);
    return d;
}

/* Everything observable about a domain's state. */
typedef struct snapshot {
    double probe[2][4]; /* rho, u at the first and the last cell */
    double *pops;       /* POPULATIONS */
    double *force;      /* FORCE (body force + field) */
    int64_t step;
} snapshot;

static void take(acm_domain *d, snapshot *s)
{
    ACM_CK_OK(d, acm_domain_probe(d, 0, 0, 0, &s->probe[0][0], &s->probe[0][1]));
    ACM_CK_OK(d, acm_domain_probe(d, NX - 1, NY - 1, NZ - 1, &s->probe[1][0], &s->probe[1][1]));
    s->pops = acm_test_alloc(27 * NCELLS * sizeof(double));
    s->force = acm_test_alloc(3 * NCELLS * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, s->pops,
                                      27 * NCELLS * sizeof(double)));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, s->force,
                                      3 * NCELLS * sizeof(double)));
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    s->step = info.step;
}

/* Assert the domain still holds the state of `before` (then free it). */
static void expect_unchanged(acm_domain *d, snapshot *before, const char *what)
{
    snapshot now;
    take(d, &now);
    ck_assert_msg(memcmp(before->probe, now.probe, sizeof now.probe) == 0,
                  "%s: a probe changed (rho %.17g -> %.17g)", what, before->probe[0][0],
                  now.probe[0][0]);
    ck_assert_msg(memcmp(before->pops, now.pops, 27 * NCELLS * sizeof(double)) == 0,
                  "%s: the populations changed", what);
    ck_assert_msg(memcmp(before->force, now.force, 3 * NCELLS * sizeof(double)) == 0,
                  "%s: the force changed", what);
    ck_assert_msg(before->step == now.step, "%s: the step counter changed", what);
    free(now.pops);
    free(now.force);
    free(before->pops);
    free(before->force);
}

/* acm_domain_create must fail with `expected`, write a message to
 * error_buffer and leave *out as it was. */
static void expect_create_fail(const acm_domain_options *in, acm_status expected,
                               const char *what)
{
    acm_domain_options o = *in;
    char buf[256] = "untouched";
    o.error_buffer = buf;
    o.error_buffer_size = sizeof buf;
    acm_domain *d = SENTINEL_DOMAIN;
    acm_status st = acm_domain_create(&d, &o);
    if (st == ACM_OK && d != SENTINEL_DOMAIN)
        acm_domain_destroy(d);
    ck_assert_msg(st == expected, "%s: %s (%d), expected %s; message '%s'", what,
                  acm_status_string(st), (int)st, acm_status_string(expected), buf);
    ck_assert_msg(d == SENTINEL_DOMAIN, "%s: *out was written on failure", what);
    ck_assert_msg(buf[0] != '\0' && strcmp(buf, "untouched") != 0,
                  "%s: error_buffer received no message", what);
}

/* ---- status strings and trivial queries ---------------------------------------- */

START_TEST(status_strings_are_distinct)
{
    static const struct {
        acm_status status;
        const char *name, *text;
    } all[] = {
#define ROW(name, value, text) {ACM_##name, #name, text},
        ACM_STATUS_MAP(ROW)
#undef ROW
    };
    const size_t n = sizeof all / sizeof all[0];
    ck_assert_uint_ge(n, 16);
    for (size_t i = 0; i < n; ++i) {
        const char *s = acm_status_string(all[i].status);
        ck_assert_msg(s != NULL && s[0] != '\0', "%s has no string", all[i].name);
        ck_assert_msg(strcmp(s, all[i].text) == 0, "%s: '%s' is not the text of the map '%s'",
                      all[i].name, s, all[i].text);
        ck_assert_msg(strcmp(s, "unknown status") != 0, "%s reads as unknown", all[i].name);
        for (size_t j = 0; j < i; ++j) {
            ck_assert_msg(all[i].status != all[j].status, "%s and %s share a value",
                          all[i].name, all[j].name);
            ck_assert_msg(strcmp(s, acm_status_string(all[j].status)) != 0,
                          "%s and %s share the string '%s'", all[i].name, all[j].name, s);
        }
    }
    const int unknown[] = {-1, 1, 100, 106, 200, 211, 300, 303, 400, 402, 900, 902, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
        const char *s = acm_status_string((acm_status)unknown[i]);
        ck_assert_msg(s != NULL && strcmp(s, "unknown status") == 0,
                      "status %d gives '%s', expected 'unknown status'", unknown[i],
                      s ? s : "(null)");
    }
}
END_TEST

START_TEST(unknown_backend_is_unavailable)
{
    ck_assert_int_eq(acm_backend_available((acm_backend)3), 0);
    ck_assert_int_eq(acm_backend_available((acm_backend)-1), 0);
    ck_assert_int_eq(acm_backend_available((acm_backend)1000), 0);
#if !ACM_HAVE_CUDA
    ck_assert_int_eq(acm_backend_available(ACM_BACKEND_CUDA), 0);
#endif /* !ACM_HAVE_CUDA */
}
END_TEST

#if !ACM_HAVE_CUDA
/* The interop API of acm_cuda.h, declared without the CUDA headers this build
 * need not have: cudaStream_t is a pointer to struct CUstream_st. */
struct CUstream_st;
ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, struct CUstream_st *stream);
ACM_API acm_status acm_cuda_domain_get_stream(acm_domain *domain, struct CUstream_st **stream);
ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps);
ACM_API acm_status acm_cuda_step_prepare(acm_domain *domain, int64_t nsteps);
ACM_API acm_status acm_cuda_graphs_recorded(acm_domain *domain, int64_t *count);
ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain);
ACM_API acm_status acm_cuda_domain_map_fields(acm_domain *domain, const float **density,
                                              const float **velocity);

START_TEST(cuda_interop_is_not_built)
{
    /* a build without CUDA exports the interop calls; each says so */
    struct CUstream_st *stream = NULL;
    const float *rho = NULL, *u = NULL;
    EXPECT_STATUS(acm_cuda_domain_set_stream(NULL, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_cuda_domain_get_stream(NULL, &stream), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_cuda_step_async(NULL, 1), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_cuda_domain_synchronize(NULL), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_cuda_domain_map_fields(NULL, &rho, &u), ACM_ERR_NULL_POINTER);
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_domain_set_stream(d, NULL), ACM_ERR_NOT_BUILT);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_domain_get_stream(d, &stream), ACM_ERR_NOT_BUILT);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_step_async(d, 1), ACM_ERR_NOT_BUILT);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_step_prepare(d, 1), ACM_ERR_NOT_BUILT);
    int64_t recorded = -1;
    EXPECT_DOMAIN_FAIL(d, acm_cuda_graphs_recorded(d, &recorded), ACM_ERR_NOT_BUILT);
    ck_assert_int_eq(recorded, 0);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_domain_synchronize(d), ACM_ERR_NOT_BUILT);
    EXPECT_DOMAIN_FAIL(d, acm_cuda_domain_map_fields(d, &rho, &u), ACM_ERR_NOT_BUILT);
    ck_assert(stream == NULL && rho == NULL && u == NULL);
    expect_unchanged(d, &before, "the CUDA interop calls");
    acm_domain_destroy(d);
}
END_TEST
#endif /* !ACM_HAVE_CUDA */

/* ---- NULL pointers ---------------------------------------------------------------- */

/* acm_domain_create_on_comm (acm_mpi.h): a NULL communicator or options, and
 * MPI not initialised (or not built), each refused with a status and a message. */
START_TEST(create_on_comm_refuses_bad_calls)
{
    char err[256] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = 8;
    o.viscosity = 0.05;
    o.backend = ACM_BACKEND_CPU;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_create_on_comm(&d, &o, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_ptr_nonnull(strstr(err, "mpi_comm"));
    const long comm = 0; /* never read: MPI is not initialised in this program */
    ck_assert_int_eq(acm_domain_create_on_comm(&d, NULL, &comm), ACM_ERR_NULL_POINTER);
    err[0] = '\0';
    const acm_status st = acm_domain_create_on_comm(&d, &o, &comm);
    ck_assert_msg(st == ACM_ERR_BAD_STATE || st == ACM_ERR_NOT_BUILT, "%s: %s",
                  acm_status_string(st), err);
    ck_assert_msg(strstr(err, "MPI") != NULL, "message: %s", err);
    ck_assert_ptr_null(d);
}
END_TEST

START_TEST(null_without_a_handle)
{
    acm_domain_options o = base_options();
    acm_domain *d = SENTINEL_DOMAIN;

    EXPECT_STATUS(acm_domain_options_init(NULL, ACM_DOMAIN_OPTIONS_VERSION),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_collision_options_init(NULL, ACM_COLLISION_OPTIONS_VERSION),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_create(&d, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_ptr_eq(d, SENTINEL_DOMAIN);
    EXPECT_STATUS(acm_domain_create(NULL, NULL), ACM_ERR_NULL_POINTER);

    /* out NULL: the message still reaches error_buffer */
    char buf[128] = "untouched";
    o.error_buffer = buf;
    o.error_buffer_size = sizeof buf;
    EXPECT_STATUS(acm_domain_create(NULL, &o), ACM_ERR_NULL_POINTER);
    ck_assert_msg(buf[0] != '\0' && strcmp(buf, "untouched") != 0,
                  "no message in error_buffer for out == NULL");

    /* every call on a NULL domain */
    const double v[3] = {0.0, 0.0, 0.0};
    double rho = 0.0, u[3];
    double buf64[27] = {0};
    int64_t i64 = 0;
    size_t bytes = 0;
    acm_boundary type;
    acm_collision_options co = ACM_COLLISION_OPTIONS_INIT;
    acm_domain_stats stats = {ACM_DOMAIN_STATS_VERSION, 0, 0, {0, 0, 0}, 0, 0, 0, 0};
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    EXPECT_STATUS(acm_step(NULL, 1), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_set_face(NULL, ACM_FACE_X_MIN, ACM_BOUNDARY_WALL, v),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_face(NULL, ACM_FACE_X_MIN, &type, u), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_set_body_force(NULL, v), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_set_collision(NULL, &co), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_collision(NULL, &co), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_set_param(NULL, ACM_PARAM_THREADS, 1), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_param(NULL, ACM_PARAM_THREADS, &i64), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_init_uniform(NULL, 1.0, v), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_init_fields(NULL, ACM_DTYPE_FLOAT64, buf64, NULL, 1),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_field_size(NULL, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, &bytes),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_field(NULL, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, buf64,
                                       sizeof(double)),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_set_field(NULL, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, buf64,
                                       sizeof buf64),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_probe(NULL, 0, 0, 0, &rho, u), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_stats(NULL, &stats), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_domain_get_info(NULL, &info), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(i64, 0);
    ck_assert_uint_eq(bytes, 0);

    const char *m = acm_domain_last_error(NULL);
    ck_assert_msg(m != NULL && m[0] != '\0', "acm_domain_last_error(NULL) must say why");

    /* bounds queries */
    int64_t lo = -5, hi = -5;
    EXPECT_STATUS(acm_param_bounds(ACM_PARAM_THREADS, NULL, &hi), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_param_bounds(ACM_PARAM_THREADS, &lo, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_param_bounds(ACM_LAYOUT_CSOA_GROUP, NULL, &hi),
                  ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_param_bounds(ACM_LAYOUT_CSOA_GROUP, &lo, NULL),
                  ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(lo, -5);
    ck_assert_int_eq(hi, -5);

    /* layouts */
    EXPECT_STATUS(acm_layout_create(NULL), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_set(NULL, ACM_LAYOUT_CSOA_GROUP, 4), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_get(NULL, ACM_LAYOUT_CSOA_GROUP, &i64), ACM_ERR_NULL_POINTER);
    m = acm_layout_last_error(NULL);
    ck_assert_msg(m != NULL && m[0] != '\0', "acm_layout_last_error(NULL) must say why");

    /* destroy(NULL) is harmless */
    acm_domain_destroy(NULL);
    acm_layout_destroy(NULL);
}
END_TEST

START_TEST(null_with_a_handle)
{
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);

    double u[3] = {-9.0, -9.0, -9.0};
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_face(d, ACM_FACE_X_MIN, NULL, u), ACM_ERR_NULL_POINTER);
    ck_assert(u[0] == -9.0 && u[1] == -9.0 && u[2] == -9.0);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_body_force(d, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_collision(d, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_param(d, ACM_PARAM_THREADS, NULL),
                       ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_field_size(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, NULL),
                       ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, NULL,
                                               NCELLS * sizeof(double)),
                       ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64,
                                               NULL, 27 * NCELLS * sizeof(double)),
                       ACM_ERR_NULL_POINTER);
    /* NULL with a size is not the "remove the force field" request */
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL,
                                               3 * NCELLS * sizeof(double)),
                       ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_stats(d, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_info(d, NULL), ACM_ERR_NULL_POINTER);
    expect_unchanged(d, &before, "NULL arguments");

    /* pointers documented as optional are accepted */
    ACM_CK_OK(d, acm_domain_probe(d, 1, 1, 1, NULL, NULL));
    acm_boundary type = (acm_boundary)-1;
    ACM_CK_OK(d, acm_domain_get_face(d, ACM_FACE_Z_MAX, &type, NULL));
    ck_assert_int_eq(type, ACM_BOUNDARY_PERIODIC);
    acm_domain_destroy(d);

    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    EXPECT_LAYOUT_FAIL(l, acm_layout_get(l, ACM_LAYOUT_CSOA_GROUP, NULL), ACM_ERR_NULL_POINTER);
    acm_layout_destroy(l);
}
END_TEST

/* ---- struct versions ----------------------------------------------------------- */

START_TEST(wrong_struct_versions)
{
    const uint32_t bad[] = {0, ACM_DOMAIN_OPTIONS_VERSION + 1, 0xffffffffu};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
        /* *_options_init leave the struct alone */
        acm_domain_options o, ref;
        memset(&o, 0xA5, sizeof o);
        ref = o;
        EXPECT_STATUS(acm_domain_options_init(&o, bad[b]), ACM_ERR_BAD_VERSION);
        ck_assert_msg(memcmp(&o, &ref, sizeof o) == 0, "options_init(%u) wrote the struct",
                      bad[b]);
        acm_collision_options c, cref;
        memset(&c, 0xA5, sizeof c);
        cref = c;
        EXPECT_STATUS(acm_collision_options_init(&c, bad[b]), ACM_ERR_BAD_VERSION);
        ck_assert_msg(memcmp(&c, &cref, sizeof c) == 0,
                      "collision_options_init(%u) wrote the struct", bad[b]);

        /* creation */
        acm_domain_options co = base_options();
        co.version = bad[b];
        expect_create_fail(&co, ACM_ERR_BAD_VERSION, "options version");
    }

    acm_domain *d = busy_domain();
    acm_collision_options in_effect = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_get_collision(d, &in_effect));
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
        acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
        c.model = ACM_COLLISION_BGK;
        c.version = bad[b];
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_BAD_VERSION);

        EXPECT_GET_BAD_VERSION(d, acm_collision_options, acm_domain_get_collision, bad[b]);
        EXPECT_GET_BAD_VERSION(d, acm_domain_stats, acm_domain_get_stats, bad[b]);
        const uint32_t bad_info[] = {0, ACM_DOMAIN_INFO_VERSION + 1, 0xffffffffu};
        EXPECT_GET_BAD_VERSION(d, acm_domain_info, acm_domain_get_info, bad_info[b]);
    }
    /* the rejected set_collision calls changed nothing */
    acm_collision_options now = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_get_collision(d, &now));
    ck_assert(memcmp(&now, &in_effect, sizeof now) == 0);
    acm_domain_destroy(d);
}
END_TEST

/* ---- creation options ---------------------------------------------------------- */

START_TEST(create_grid_sizes)
{
    const int32_t bad[] = {0, -1, -100000, 65536, 65537, 70000, 100000, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        for (int axis = 0; axis < 3; ++axis) {
            acm_domain_options o = base_options();
            int32_t *n = axis == 0 ? &o.nx : (axis == 1 ? &o.ny : &o.nz);
            *n = bad[i];
            char what[64];
            snprintf(what, sizeof what, "axis %d of size %d", axis, (int)bad[i]);
            expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, what);
        }
    acm_domain_options o = base_options();
    o.nx = o.ny = o.nz = 100000;
    expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "100000^3");
    /* every axis within its limit, the product above 2^36 cells */
    o.nx = o.ny = 65536;
    o.nz = 17;
    expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "65536 x 65536 x 17");

    /* the smallest admissible grid works */
    o = base_options();
    o.nx = o.ny = o.nz = 2;
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_step(d, 2));
    acm_domain_destroy(d);
}
END_TEST

START_TEST(create_viscosity_and_tau)
{
    static const struct {
        double nu, tau;
        acm_status expected;
        const char *what;
    } cases[] = {
        {0.0, 0.4, ACM_ERR_OUT_OF_RANGE, "tau < 0.5"},
        {0.0, 0.5, ACM_ERR_OUT_OF_RANGE, "tau == 0.5"},
        {0.0, -1.0, ACM_ERR_OUT_OF_RANGE, "tau < 0"},
        {0.0, NAN, ACM_ERR_OUT_OF_RANGE, "tau NaN"},
        {0.0, INFINITY, ACM_ERR_OUT_OF_RANGE, "tau inf"},
        {-0.01, 0.0, ACM_ERR_OUT_OF_RANGE, "negative viscosity"},
        {NAN, 0.0, ACM_ERR_OUT_OF_RANGE, "viscosity NaN"},
        {INFINITY, 0.0, ACM_ERR_OUT_OF_RANGE, "viscosity inf"},
        {1e-300, 0.0, ACM_ERR_OUT_OF_RANGE, "viscosity rounding tau to 0.5"},
        {0.05, 0.65, ACM_ERR_INVALID_ARG, "both viscosity and tau"},
        {0.0, 0.0, ACM_ERR_INVALID_ARG, "neither viscosity nor tau"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        acm_domain_options o = base_options();
        o.viscosity = cases[i].nu;
        o.tau = cases[i].tau;
        expect_create_fail(&o, cases[i].expected, cases[i].what);
    }
}
END_TEST

START_TEST(create_enums)
{
    const int bad_collision[] = {-1, 6, 1000};
    const int bad_backend[] = {-1, 3, 1000};
    const int bad_precision[] = {-1, 4, 1000};
    for (int i = 0; i < 3; ++i) {
        acm_domain_options o = base_options();
        o.collision = (acm_collision)bad_collision[i];
        expect_create_fail(&o, ACM_ERR_BAD_ENUM, "collision");
        o = base_options();
        o.backend = (acm_backend)bad_backend[i];
        expect_create_fail(&o, ACM_ERR_BAD_ENUM, "backend");
        o = base_options();
        o.precision = (acm_precision)bad_precision[i];
        expect_create_fail(&o, ACM_ERR_BAD_ENUM, "precision");
    }
}
END_TEST

START_TEST(create_other_ranges)
{
    acm_domain_options o;
    const double bad_density[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_density / sizeof bad_density[0]; ++i) {
        o = base_options();
        o.initial_density = bad_density[i];
        expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "initial_density");
    }
    const double bad_u[][3] = {{0.6, 0, 0}, {0, 0, -0.6}, {0.3, 0.3, 0.3}, {NAN, 0, 0},
                               {0, INFINITY, 0}};
    for (size_t i = 0; i < sizeof bad_u / sizeof bad_u[0]; ++i) {
        o = base_options();
        memcpy(o.initial_velocity, bad_u[i], sizeof o.initial_velocity);
        expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "initial_velocity");
    }
    /* a custom max_speed applies to the initial velocity */
    o = base_options();
    o.max_speed = 0.1;
    o.initial_velocity[1] = 0.15;
    expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "initial_velocity above a custom max_speed");
    const double bad_max[] = {-0.1, 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_max / sizeof bad_max[0]; ++i) {
        o = base_options();
        o.max_speed = bad_max[i];
        expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "max_speed");
    }
    o = base_options();
    o.device = -2;
    expect_create_fail(&o, ACM_ERR_OUT_OF_RANGE, "device");
}
END_TEST

START_TEST(create_error_buffer)
{
    /* a size without a buffer is an inconsistent argument */
    acm_domain_options o = base_options();
    o.error_buffer = NULL;
    o.error_buffer_size = 64;
    acm_domain *d = SENTINEL_DOMAIN;
    EXPECT_STATUS(acm_domain_create(&d, &o), ACM_ERR_INVALID_ARG);
    ck_assert_ptr_eq(d, SENTINEL_DOMAIN);

    /* a short buffer gets a truncated, terminated message and nothing beyond */
    char buf[16];
    memset(buf, 'Z', sizeof buf);
    o = base_options();
    o.nx = 0;
    o.error_buffer = buf;
    o.error_buffer_size = 8;
    EXPECT_STATUS(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_eq(d, SENTINEL_DOMAIN);
    ck_assert_uint_eq(strlen(buf), 7);
    for (size_t i = 8; i < sizeof buf; ++i)
        ck_assert_msg(buf[i] == 'Z', "byte %zu beyond error_buffer_size was written", i);

    /* the message is the grid's, not a generic one */
    char full[256] = "";
    o.error_buffer = full;
    o.error_buffer_size = sizeof full;
    EXPECT_STATUS(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE);
    ck_assert_msg(strstr(full, "0x5x6") != NULL, "message does not name the grid: '%s'", full);
}
END_TEST

START_TEST(create_backend_and_precision)
{
    /* FP16 storage is a CUDA-only feature */
    acm_domain_options o = base_options();
    o.backend = ACM_BACKEND_CPU;
    o.precision = ACM_PRECISION_FP16;
    expect_create_fail(&o, ACM_ERR_NOT_BUILT, "FP16 on the CPU");

    o = base_options();
    o.backend = ACM_BACKEND_CUDA;
    if (!ACM_HAVE_CUDA) {
        ck_assert_int_eq(acm_backend_available(ACM_BACKEND_CUDA), 0);
        expect_create_fail(&o, ACM_ERR_NOT_BUILT, "CUDA in a build without CUDA");
    } else if (!acm_backend_available(ACM_BACKEND_CUDA)) {
        expect_create_fail(&o, ACM_ERR_NO_DEVICE, "CUDA without a device");
    } else {
        acm_domain *d = acm_test_domain(&o);
        acm_domain_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_DOMAIN_INFO_VERSION;
        ACM_CK_OK(d, acm_domain_get_info(d, &info));
        ck_assert_int_eq(info.backend, ACM_BACKEND_CUDA);
        acm_domain_destroy(d);
    }
}
END_TEST

/* A CPU domain larger than the machine's memory (2^36 cells in FP64: 30 TB of
 * populations) is refused with ACM_ERR_NO_MEMORY before anything is allocated
 * -- not granted by the kernel's overcommit and killed while filled -- with a
 * message that gives both the need and what is available, and at once. */
START_TEST(create_beyond_available_memory)
{
    acm_domain_options o = base_options();
    o.backend = ACM_BACKEND_CPU;
    o.nx = o.ny = o.nz = 4096;
    char buf[512] = "untouched";
    o.error_buffer = buf;
    o.error_buffer_size = sizeof buf;
    acm_domain *d = SENTINEL_DOMAIN;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    acm_status st = acm_domain_create(&d, &o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st == ACM_OK && d != SENTINEL_DOMAIN)
        acm_domain_destroy(d);
    ck_assert_msg(st == ACM_ERR_NO_MEMORY, "4096^3 FP64: %s, expected %s; message '%s'",
                  acm_status_string(st), acm_status_string(ACM_ERR_NO_MEMORY), buf);
    ck_assert_ptr_eq(d, SENTINEL_DOMAIN);
    ck_assert_msg(strstr(buf, "4096x4096x4096") != NULL && strstr(buf, "needs 2.97e+04 GB") != NULL &&
                      strstr(buf, "GB of memory is available") != NULL,
                  "the message does not give the grid, the need and what is available: '%s'",
                  buf);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(seconds < 1.0, "the refusal took %.2f s: was the memory touched?", seconds);
}
END_TEST

/* ---- unknown enumeration values on a domain --------------------------------------- */

START_TEST(domain_enums)
{
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);
    const double v[3] = {0.01, 0.0, 0.0};
    const int bad_face[] = {-1, 6, 1000};
    const int bad_type[] = {-1, 5, 1000};
    const int bad_field[] = {-1, 0, 5};
    const int bad_dtype[] = {-1, 0, 3};
    const int bad_param[] = {-1, 0, ACM_PARAM_HALO_OVERLAP + 1};
    double *buf = acm_test_alloc(27 * NCELLS * sizeof(double));
    for (int i = 0; i < 3; ++i) {
        acm_boundary type = (acm_boundary)77;
        double u[3] = {-9, -9, -9};
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, (acm_face)bad_face[i], ACM_BOUNDARY_WALL, v),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_get_face(d, (acm_face)bad_face[i], &type, u),
                           ACM_ERR_BAD_ENUM);
        ck_assert_int_eq(type, 77);
        ck_assert(u[0] == -9 && u[1] == -9 && u[2] == -9);
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, (acm_boundary)bad_type[i], v),
                           ACM_ERR_BAD_ENUM);

        size_t bytes = 12345;
        EXPECT_DOMAIN_FAIL(d, acm_domain_field_size(d, (acm_field)bad_field[i], ACM_DTYPE_FLOAT64,
                                                    &bytes),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_field_size(d, ACM_FIELD_DENSITY, (acm_dtype)bad_dtype[i],
                                                    &bytes),
                           ACM_ERR_BAD_ENUM);
        ck_assert_uint_eq(bytes, 12345);
        EXPECT_DOMAIN_FAIL(d, acm_domain_get_field(d, (acm_field)bad_field[i], ACM_DTYPE_FLOAT64,
                                                   buf, NCELLS * sizeof(double)),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_get_field(d, ACM_FIELD_DENSITY, (acm_dtype)bad_dtype[i],
                                                   buf, NCELLS * sizeof(double)),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, (acm_field)bad_field[i], ACM_DTYPE_FLOAT64,
                                                   buf, 3 * NCELLS * sizeof(double)),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_FORCE, (acm_dtype)bad_dtype[i],
                                                   buf, 3 * NCELLS * sizeof(double)),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, (acm_dtype)bad_dtype[i], NULL, NULL,
                                                     NCELLS),
                           ACM_ERR_BAD_ENUM);

        int64_t value = -77, lo = -77, hi = -77;
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_param(d, (acm_param)bad_param[i], 1),
                           ACM_ERR_BAD_ENUM);
        EXPECT_DOMAIN_FAIL(d, acm_domain_get_param(d, (acm_param)bad_param[i], &value),
                           ACM_ERR_BAD_ENUM);
        EXPECT_STATUS(acm_param_bounds((acm_param)bad_param[i], &lo, &hi), ACM_ERR_BAD_ENUM);
        ck_assert(value == -77 && lo == -77 && hi == -77);
    }
    /* the faces are still the defaults */
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        acm_boundary type;
        double u[3];
        ACM_CK_OK(d, acm_domain_get_face(d, (acm_face)f, &type, u));
        ck_assert_int_eq(type, ACM_BOUNDARY_PERIODIC);
        ck_assert(u[0] == 0.0 && u[1] == 0.0 && u[2] == 0.0);
    }
    free(buf);
    expect_unchanged(d, &before, "unknown enums");
    acm_domain_destroy(d);
}
END_TEST

START_TEST(probe_outside_the_grid)
{
    acm_domain *d = busy_domain();
    const int32_t cells[][3] = {{-1, 0, 0}, {0, -1, 0}, {0, 0, -1},        {NX, 0, 0},
                                {0, NY, 0}, {0, 0, NZ}, {INT32_MIN, 0, 0}, {0, 0, INT32_MAX}};
    for (size_t c = 0; c < sizeof cells / sizeof cells[0]; ++c) {
        double rho = -9.0, u[3] = {-9.0, -9.0, -9.0};
        EXPECT_DOMAIN_FAIL(d, acm_domain_probe(d, cells[c][0], cells[c][1], cells[c][2], &rho, u),
                           ACM_ERR_OUT_OF_RANGE);
        ck_assert(rho == -9.0 && u[0] == -9.0 && u[1] == -9.0 && u[2] == -9.0);
    }
    acm_domain_destroy(d);
}
END_TEST

/* ---- buffer sizes -------------------------------------------------------------- */

START_TEST(buffer_sizes)
{
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);
    const acm_field fields[] = {ACM_FIELD_DENSITY, ACM_FIELD_VELOCITY, ACM_FIELD_FORCE,
                                ACM_FIELD_POPULATIONS};
    const acm_dtype dtypes[] = {ACM_DTYPE_FLOAT32, ACM_DTYPE_FLOAT64};
    for (size_t f = 0; f < 4; ++f)
        for (size_t t = 0; t < 2; ++t) {
            size_t size = 0;
            ACM_CK_OK(d, acm_domain_field_size(d, fields[f], dtypes[t], &size));
            const size_t wrong[] = {size - 1, size + 1, 0, size / 2};
            for (size_t w = 0; w < 4; ++w) {
                /* the buffer is exactly as large as claimed, so a read or write
                 * past it is caught by the sanitizer build */
                unsigned char *buf = acm_test_alloc(wrong[w] + 1);
                memset(buf, 0xA5, wrong[w] + 1);
                EXPECT_DOMAIN_FAIL(d, acm_domain_get_field(d, fields[f], dtypes[t], buf, wrong[w]),
                                   ACM_ERR_BUFFER_SIZE);
                for (size_t b = 0; b < wrong[w] + 1; ++b)
                    ck_assert_msg(buf[b] == 0xA5, "get_field wrote byte %zu on failure", b);
                free(buf);
                if (fields[f] == ACM_FIELD_DENSITY || fields[f] == ACM_FIELD_VELOCITY ||
                    wrong[w] == 0)
                    continue;
                double *src = acm_test_alloc(wrong[w]);
                EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, fields[f], dtypes[t], src, wrong[w]),
                                   ACM_ERR_BUFFER_SIZE);
                free(src);
            }
        }
    /* bytes for one element type, declared as the other */
    double *pops = acm_test_alloc(27 * NCELLS * sizeof(double));
    memcpy(pops, before.pops, 27 * NCELLS * sizeof(double));
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT32, pops,
                                               27 * NCELLS * sizeof(double)),
                       ACM_ERR_BUFFER_SIZE);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT32, pops,
                                               27 * NCELLS * sizeof(double)),
                       ACM_ERR_BUFFER_SIZE);
    ck_assert(memcmp(pops, before.pops, 27 * NCELLS * sizeof(double)) == 0);
    free(pops);

    /* init_fields: cell_count must be the grid's */
    double *rho = acm_test_alloc((NCELLS + 1) * sizeof(double));
    for (size_t k = 0; k <= NCELLS; ++k)
        rho[k] = 1.01;
    const size_t counts[] = {NCELLS - 1, NCELLS + 1, 0, (size_t)-1};
    for (size_t c = 0; c < 4; ++c) {
        EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, NULL, counts[c]),
                           ACM_ERR_BUFFER_SIZE);
        EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT32, NULL, NULL, counts[c]),
                           ACM_ERR_BUFFER_SIZE);
    }
    free(rho);

    /* density and velocity are not written through set_field */
    double *vel = acm_test_alloc(3 * NCELLS * sizeof(double));
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, vel,
                                               NCELLS * sizeof(double)),
                       ACM_ERR_INVALID_ARG);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, vel,
                                               3 * NCELLS * sizeof(double)),
                       ACM_ERR_INVALID_ARG);
    free(vel);
    expect_unchanged(d, &before, "wrong buffer sizes");
    acm_domain_destroy(d);
}
END_TEST

/* ---- non-finite values and speeds ------------------------------------------------ */

static const double bad_values[] = {NAN, INFINITY, -INFINITY};
#define N_BAD_VALUES (sizeof bad_values / sizeof bad_values[0])

/* Element i of a float (fp64 == 0) or double array. */
static void put(int fp64, void *buf, size_t i, double v)
{
    if (fp64)
        ((double *)buf)[i] = v;
    else
        ((float *)buf)[i] = (float)v;
}

/* The message names the last cell: by its linear index or its coordinates. */
static void expect_names_last_cell(acm_domain *d, const char *what)
{
    const char *m = acm_domain_last_error(d);
    char index[32], coords[64];
    snprintf(index, sizeof index, "cell %zu", LAST_CELL);
    snprintf(coords, sizeof coords, "x=%d y=%d z=%d", NX - 1, NY - 1, NZ - 1);
    ck_assert_msg(strstr(m, index) != NULL || strstr(m, coords) != NULL,
                  "%s: the message does not name the cell: '%s'", what, m);
}

START_TEST(nonfinite_set_field)
{
    acm_domain *d = busy_domain();
    for (size_t b = 0; b < N_BAD_VALUES; ++b)
        for (int t = 0; t < 2; ++t) {
            const acm_dtype dtype = t ? ACM_DTYPE_FLOAT64 : ACM_DTYPE_FLOAT32;
            const size_t es = t ? sizeof(double) : sizeof(float);
            snapshot before;
            take(d, &before);
            /* new valid values everywhere except one component of the last cell:
             * a partial write would show at the first cell */
            void *F = acm_test_alloc(3 * NCELLS * es);
            for (size_t i = 0; i < 3 * NCELLS; ++i)
                put(t, F, i, 2e-4);
            put(t, F, 3 * LAST_CELL + 2, bad_values[b]);
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_FORCE, dtype, F,
                                                       3 * NCELLS * es),
                               ACM_ERR_OUT_OF_RANGE);
            expect_names_last_cell(d, "FORCE");
            free(F);

            void *f = acm_test_alloc(27 * NCELLS * es);
            for (size_t i = 0; i < 27 * NCELLS; ++i)
                put(t, f, i, 1.0 / 27.0);
            put(t, f, 27 * LAST_CELL + 26, bad_values[b]);
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, dtype, f,
                                                       27 * NCELLS * es),
                               ACM_ERR_OUT_OF_RANGE);
            expect_names_last_cell(d, "POPULATIONS");
            free(f);
            expect_unchanged(d, &before, "non-finite set_field");
        }
    acm_domain_destroy(d);
}
END_TEST

/* Populations of D3Q27 equilibrium at rest, density rho. */
static void rest_populations(double rho, double f[27])
{
    f[0] = rho * 8.0 / 27.0;
    for (int i = 1; i < 27; ++i)
        f[i] = rho * (i < 7 ? 2.0 / 27.0 : i < 19 ? 1.0 / 54.0 : 1.0 / 216.0);
}

/* Finite populations that are no physical state: all zero, a cell whose
 * density (their sum) is negative, a sum that overflows. Rejected like a
 * density <= 0 in acm_domain_init_fields, naming the first such cell, the
 * domain unchanged; a negative population in a cell of positive density is
 * allowed. */
START_TEST(nonphysical_populations)
{
    acm_domain *d = busy_domain();
    double rest[27];
    rest_populations(1.0, rest);
    for (int t = 0; t < 2; ++t) {
        const acm_dtype dtype = t ? ACM_DTYPE_FLOAT64 : ACM_DTYPE_FLOAT32;
        const size_t es = t ? sizeof(double) : sizeof(float), bytes = 27 * NCELLS * es;
        void *f = acm_test_alloc(bytes);
        snapshot before;
        take(d, &before);

        /* all zero: the first cell is named */
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, dtype, f, bytes),
                           ACM_ERR_OUT_OF_RANGE);
        ck_assert_msg(strstr(acm_domain_last_error(d), "cell 0 (x=0 y=0 z=0): density 0") !=
                          NULL,
                      "zero populations: '%s'", acm_domain_last_error(d));

        /* a valid state but for the last cell, whose density is -1 */
        for (size_t k = 0; k < NCELLS; ++k)
            for (size_t i = 0; i < 27; ++i)
                put(t, f, 27 * k + i, k == LAST_CELL ? -rest[i] : rest[i]);
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, dtype, f, bytes),
                           ACM_ERR_OUT_OF_RANGE);
        expect_names_last_cell(d, "negative density");
        ck_assert_msg(strstr(acm_domain_last_error(d), "density -1 ") != NULL,
                      "negative density: '%s'", acm_domain_last_error(d));

        /* finite populations whose sum is not (FP64 only: FP32 values cannot overflow
         * a double sum) */
        if (t) {
            for (size_t i = 0; i < 27; ++i)
                put(t, f, 27 * LAST_CELL + i, 1e308);
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, dtype, f, bytes),
                               ACM_ERR_OUT_OF_RANGE);
            expect_names_last_cell(d, "overflowing density");
        }
        expect_unchanged(d, &before, "non-physical populations");

        /* negative populations in a cell of density 1 are a state */
        for (size_t i = 0; i < 27; ++i)
            put(t, f, 27 * LAST_CELL + i, rest[i]);
        put(t, f, 27 * LAST_CELL + 1, -0.5);
        put(t, f, 27 * LAST_CELL + 2, -0.5);
        put(t, f, 27 * LAST_CELL, rest[0] + 1.0 + 2.0 * rest[1]);
        ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, dtype, f, bytes));
        free(f);
    }
    acm_domain_destroy(d);
}
END_TEST

START_TEST(nonfinite_init_fields)
{
    acm_domain *d = busy_domain();
    for (int t = 0; t < 2; ++t) {
        const acm_dtype dtype = t ? ACM_DTYPE_FLOAT64 : ACM_DTYPE_FLOAT32;
        const size_t es = t ? sizeof(double) : sizeof(float);
        void *rho = acm_test_alloc(NCELLS * es), *u = acm_test_alloc(3 * NCELLS * es);
        /* bad density values, bad velocity components, too fast a cell */
        const double bad_rho[] = {NAN, INFINITY, -INFINITY, 0.0, -1.0};
        const double bad_u[] = {NAN, INFINITY, -INFINITY, 0.6, -0.51};
        for (size_t b = 0; b < 10; ++b) {
            const int in_rho = b < 5;
            for (size_t k = 0; k < NCELLS; ++k) {
                double r = 1.02, v = 0.003;
                if (k == LAST_CELL && in_rho)
                    r = bad_rho[b];
                put(t, rho, k, r);
                for (size_t a = 0; a < 3; ++a)
                    put(t, u, 3 * k + a, (k == LAST_CELL && !in_rho && a == 1) ? bad_u[b - 5] : v);
            }
            snapshot before;
            take(d, &before);
            EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, dtype, rho, u, NCELLS),
                               ACM_ERR_OUT_OF_RANGE);
            expect_names_last_cell(d, "init_fields");
            /* the same with the other array left out */
            if (in_rho)
                EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, dtype, rho, NULL, NCELLS),
                                   ACM_ERR_OUT_OF_RANGE);
            else
                EXPECT_DOMAIN_FAIL(d, acm_domain_init_fields(d, dtype, NULL, u, NCELLS),
                                   ACM_ERR_OUT_OF_RANGE);
            expect_names_last_cell(d, "init_fields");
            expect_unchanged(d, &before, "bad init_fields");
        }
        free(rho);
        free(u);
    }
    acm_domain_destroy(d);
}
END_TEST

START_TEST(nonfinite_uniform_values)
{
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);
    for (size_t b = 0; b < N_BAD_VALUES; ++b)
        for (int a = 0; a < 3; ++a) {
            double g[3] = {1e-5, 1e-5, 1e-5};
            g[a] = bad_values[b];
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_body_force(d, g), ACM_ERR_OUT_OF_RANGE);
            double u[3] = {0.01, 0.0, 0.0};
            u[a] = bad_values[b];
            EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, 1.0, u), ACM_ERR_OUT_OF_RANGE);
        }
    for (size_t b = 0; b < N_BAD_VALUES; ++b)
        EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, bad_values[b], NULL),
                           ACM_ERR_OUT_OF_RANGE);
    EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, 0.0, NULL), ACM_ERR_OUT_OF_RANGE);
    EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, -1.0, NULL), ACM_ERR_OUT_OF_RANGE);
    const double fast[][3] = {{0.6, 0, 0}, {0, -0.6, 0}, {0.3, 0.3, 0.3}};
    for (int i = 0; i < 3; ++i)
        EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, 1.0, fast[i]), ACM_ERR_OUT_OF_RANGE);
    expect_unchanged(d, &before, "bad uniform values");
    acm_domain_destroy(d);

    /* a custom max_speed is the limit */
    acm_domain_options o = base_options();
    o.max_speed = 0.1;
    d = acm_test_domain(&o);
    const double u[3] = {0.0, 0.0, 0.12};
    EXPECT_DOMAIN_FAIL(d, acm_domain_init_uniform(d, 1.0, u), ACM_ERR_OUT_OF_RANGE);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, u),
                       ACM_ERR_OUT_OF_RANGE);
    acm_domain_destroy(d);
}
END_TEST

/* ---- faces ----------------------------------------------------------------------- */

START_TEST(face_velocities)
{
    acm_domain *d = busy_domain();
    const double lid[3] = {0.05, 0.0, 0.01};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));

    /* non-finite and too fast, for walls and inlets */
    const acm_boundary types[] = {ACM_BOUNDARY_WALL, ACM_BOUNDARY_INLET};
    for (int t = 0; t < 2; ++t) {
        for (size_t b = 0; b < N_BAD_VALUES; ++b) {
            double u[3] = {0.0, 0.0, 0.0};
            u[2] = bad_values[b];
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, types[t], u),
                               ACM_ERR_OUT_OF_RANGE);
        }
        const double fast[3] = {0.45, 0.0, 0.45};
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, types[t], fast),
                           ACM_ERR_OUT_OF_RANGE);
    }
    /* a wall may only move along itself */
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        double u[3] = {0.0, 0.0, 0.0};
        u[f / 2] = 0.01;
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL, u),
                           ACM_ERR_OUT_OF_RANGE);
    }
    /* nothing changed: Y_MAX is still the lid, the others as before */
    acm_boundary type;
    double u[3];
    ACM_CK_OK(d, acm_domain_get_face(d, ACM_FACE_Y_MAX, &type, u));
    ck_assert_int_eq(type, ACM_BOUNDARY_WALL);
    ck_assert(memcmp(u, lid, sizeof u) == 0);
    ACM_CK_OK(d, acm_domain_get_face(d, ACM_FACE_X_MIN, &type, u));
    ck_assert_int_eq(type, ACM_BOUNDARY_PERIODIC);
    ACM_CK_OK(d, acm_domain_get_face(d, ACM_FACE_Z_MAX, &type, u));
    ck_assert_int_eq(type, ACM_BOUNDARY_PERIODIC);
    acm_domain_destroy(d);
}
END_TEST

START_TEST(step_face_consistency)
{
    acm_domain *d = busy_domain();
    for (int axis = 0; axis < 3; ++axis)
        for (int side = 0; side < 2; ++side) {
            const acm_face f = (acm_face)(2 * axis + side);
            const acm_face other = (acm_face)(2 * axis + 1 - side);
            ACM_CK_OK(d, acm_domain_set_face(d, f, ACM_BOUNDARY_WALL, NULL));
            snapshot before;
            take(d, &before);
            EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_INVALID_ARG);
            EXPECT_DOMAIN_FAIL(d, acm_step(d, 0), ACM_ERR_INVALID_ARG);
            expect_unchanged(d, &before, "one periodic face");
            /* both walls are fine, and so is going back to periodic */
            ACM_CK_OK(d, acm_domain_set_face(d, other, ACM_BOUNDARY_WALL, NULL));
            ACM_CK_OK(d, acm_step(d, 1));
            ACM_CK_OK(d, acm_domain_set_face(d, f, ACM_BOUNDARY_PERIODIC, NULL));
            ACM_CK_OK(d, acm_domain_set_face(d, other, ACM_BOUNDARY_PERIODIC, NULL));
            ACM_CK_OK(d, acm_step(d, 1));
        }
    acm_domain_destroy(d);

    /* inlet/outlet layers need 3 cells along their axis */
    acm_domain_options o = acm_test_options(4, 2, 4, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    d = acm_test_domain(&o);
    const double in[3] = {0.0, 0.02, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_INLET, in));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_OUTLET, NULL));
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_INVALID_ARG);
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_INVALID_ARG);
    /* walls on a 2-cell axis are fine */
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_step(d, 1));
    acm_domain_destroy(d);
}
END_TEST

/* ---- stepping ------------------------------------------------------------------------ */

START_TEST(step_arguments_and_divergence)
{
    acm_domain *d = busy_domain();
    snapshot before;
    take(d, &before);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, -1), ACM_ERR_OUT_OF_RANGE);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, INT64_MIN), ACM_ERR_OUT_OF_RANGE);
    expect_unchanged(d, &before, "negative nsteps");

    /* drive the flow past max_speed */
    const double u[3] = {0.45, 0.0, 0.0}, g[3] = {0.05, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL, 0));
    ACM_CK_OK(d, acm_domain_init_uniform(d, 1.0, u));
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    /* one step at a time: the diverging step must leave the state it found */
    acm_status st = ACM_OK;
    int steps = 0;
    while (st == ACM_OK && steps < 50) {
        snapshot before_step;
        take(d, &before_step);
        st = acm_step(d, 1);
        ++steps;
        if (st == ACM_OK) {
            free(before_step.pops);
            free(before_step.force);
        } else {
            expect_unchanged(d, &before_step, "the diverging step");
        }
    }
    ck_assert_msg(st == ACM_ERR_DIVERGED, "after %d steps: %s, expected %s", steps,
                  acm_status_string(st), acm_status_string(ACM_ERR_DIVERGED));
    const char *msg = acm_domain_last_error(d);
    ck_assert_msg(strstr(msg, "step") != NULL && strstr(msg, "cell") != NULL,
                  "the divergence message names no step or no cell: %s", msg);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_BAD_STATE);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 0), ACM_ERR_BAD_STATE);
    acm_test_expect_recovery(d); /* re-initialising clears the state */
    acm_domain_destroy(d);
}
END_TEST

/* The step a divergence message names ("... at step N ..."), -1 if none. */
static long long step_named(const char *msg)
{
    const char *at = strstr(msg, "at step ");
    return at != NULL ? strtoll(at + 8, NULL, 10) : -1;
}

/* The ACM_ERR_DIVERGED message and the ACM_ERR_BAD_STATE message of the next
 * step name the same step: the one during which the state went bad, counted
 * from 1 after the initialisation. With checks after every step (_i = 0, the
 * default) the domain keeps the state before it, so it is one more than the
 * steps completed; on a GPU with a check every 8 steps (_i = 1) it is found
 * at the check, and still named the same way twice. */
START_TEST(divergence_messages_agree)
{
    acm_domain *d = busy_domain();
    const double u[3] = {0.45, 0.0, 0.0}, g[3] = {0.05, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, _i == 0 ? 1 : 8));
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL, 0));
    ACM_CK_OK(d, acm_domain_init_uniform(d, 1.0, u));
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    acm_status st = acm_step(d, 50);
    char diverged[512];
    snprintf(diverged, sizeof diverged, "%s", acm_domain_last_error(d));
    ck_assert_msg(st == ACM_ERR_DIVERGED, "%s, expected %s", acm_status_string(st),
                  acm_status_string(ACM_ERR_DIVERGED));
    const long long n = step_named(diverged);
    ck_assert_msg(n >= 1 && n <= 50, "the divergence message names step %lld: '%s'", n, diverged);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_BAD_STATE);
    const char *refused = acm_domain_last_error(d);
    ck_assert_msg(step_named(refused) == n, "'%s' names another step than '%s'", refused,
                  diverged);
    if (_i == 0) {
        acm_domain_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_DOMAIN_INFO_VERSION;
        ACM_CK_OK(d, acm_domain_get_info(d, &info));
        ck_assert_msg(n == info.step + 1, "step %lld named, %lld steps completed", n,
                      (long long)info.step);
    }
    acm_domain_destroy(d);
}
END_TEST

/* A density <= 0 is a divergence even at rest. Populations of density 1 in
 * every cell, with -2 in both x populations of the cells of even x (their rest
 * population holds the difference), collide at step 1 without trouble (BGK,
 * tau = 10, so the negative populations survive the collision), but the cells
 * of odd x then pull about -1.8 from each side: density about -2.7 with no
 * momentum, a speed of 0. The check of step 2 must catch it at the first such
 * cell, (1, 0, 0). */
START_TEST(negative_density_diverges)
{
    acm_domain_options o = base_options();
    o.collision = ACM_COLLISION_BGK;
    o.viscosity = 0.0;
    o.tau = 10.0;
    acm_domain *d = acm_test_domain(&o);
    double rest[27];
    rest_populations(1.0, rest);
    const size_t bytes = 27 * NCELLS * sizeof(double);
    double *f = acm_test_alloc(bytes);
    for (size_t k = 0; k < NCELLS; ++k) {
        memcpy(f + 27 * k, rest, sizeof rest);
        if (k % NX % 2 == 0) { /* populations 1 and 2 are +x and -x */
            f[27 * k + 1] = f[27 * k + 2] = -2.0;
            f[27 * k] += 4.0 + 2.0 * rest[1];
        }
    }
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes));
    free(f);
    ACM_CK_OK(d, acm_step(d, 1));
    ACM_CK_FAIL(d, acm_step(d, 1), ACM_ERR_DIVERGED);
    const char *m = acm_domain_last_error(d);
    /* the CPU names what the cell held in the failed collision, the GPU the state kept:
     * both are the density the collision saw */
    ck_assert_msg(strstr(m, "diverged at step 2: cell (1, 0, 0) ha") != NULL &&
                      strstr(m, "density -") != NULL,
                  "message: '%s'", m);
    ck_assert_int_eq(step_named(m), 2);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_BAD_STATE);
    ck_assert_int_eq(step_named(acm_domain_last_error(d)), 2);
    acm_domain_destroy(d);
}
END_TEST

/* ---- divergence policy (docs/reliability.md, "Divergence") ------------------------ */

typedef struct heard {
    int calls;
    acm_divergence_event event;
    char message[512];
    acm_status query; /* a query from inside the callback */
} heard;

static void listen(acm_domain *d, const acm_divergence_event *e, void *user)
{
    heard *h = user;
    h->calls++;
    h->event = *e;
    snprintf(h->message, sizeof h->message, "%s", e->message);
    acm_domain_stats st = {.version = ACM_DOMAIN_STATS_VERSION};
    h->query = acm_domain_get_stats(d, &st);
}

static int64_t steps_done(acm_domain *d)
{
    acm_domain_stats st = {.version = ACM_DOMAIN_STATS_VERSION};
    ACM_CK_OK(d, acm_domain_get_stats(d, &st));
    return st.step;
}

static double *populations(acm_domain *d)
{
    double *f = acm_test_alloc(27 * NCELLS * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                      27 * NCELLS * sizeof(double)));
    return f;
}

/* The force that makes the busy domain diverge within a few steps (a speed
 * above max_speed = 0.5 by the second). */
static void push_hard(acm_domain *d)
{
    const double g[3] = {0.3, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
}

/* STOP (the default) with a callback: called once, with the message and step
 * of acm_step's ACM_ERR_DIVERGED, able to query the diverged domain. */
START_TEST(divergence_callback_on_stop)
{
    acm_domain *d = busy_domain();
    heard h = {0};
    acm_divergence_policy p;
    ck_assert_int_eq(acm_divergence_policy_init(&p, ACM_DIVERGENCE_POLICY_VERSION), ACM_OK);
    ck_assert_int_eq(p.action, ACM_DIVERGENCE_STOP);
    p.callback = listen;
    p.user_data = &h;
    ACM_CK_OK(d, acm_domain_set_divergence_policy(d, &p));
    ACM_CK_OK(d, acm_step(d, 5));
    ck_assert_int_eq(h.calls, 0);
    push_hard(d);
    ACM_CK_FAIL(d, acm_step(d, 200), ACM_ERR_DIVERGED);
    ck_assert_int_eq(h.calls, 1);
    ck_assert_str_eq(h.message, acm_domain_last_error(d));
    ck_assert_int_eq(h.event.step, step_named(h.message));
    ck_assert_int_eq(h.event.rewound_to, -1);
    ck_assert_int_eq(h.query, ACM_OK);
    EXPECT_DOMAIN_FAIL(d, acm_step(d, 1), ACM_ERR_BAD_STATE);
    ck_assert_int_eq(h.calls, 1);
    acm_domain_destroy(d);
}
END_TEST

/* REWIND: a snapshot every 10 steps; the divergence puts back the last one
 * bitwise, acm_step says so, and with the force taken away the domain steps
 * on from there. */
START_TEST(divergence_rewinds_to_the_last_snapshot)
{
    acm_domain *d = busy_domain();
    heard h = {0};
    acm_divergence_policy p = ACM_DIVERGENCE_POLICY_INIT;
    p.action = ACM_DIVERGENCE_REWIND;
    p.snapshot_interval = 10;
    p.callback = listen;
    p.user_data = &h;
    ACM_CK_OK(d, acm_domain_set_divergence_policy(d, &p));
    acm_divergence_policy back = {.version = ACM_DIVERGENCE_POLICY_VERSION};
    ACM_CK_OK(d, acm_domain_get_divergence_policy(d, &back));
    ck_assert_int_eq(back.action, ACM_DIVERGENCE_REWIND);
    ck_assert_int_eq(back.snapshot_interval, 10);
    ACM_CK_OK(d, acm_step(d, 23));
    ACM_CK_OK(d, acm_step(d, 7)); /* step 30: a snapshot is due before the next step */
    double *at30 = populations(d);
    push_hard(d);
    ACM_CK_FAIL(d, acm_step(d, 5), ACM_ERR_DIVERGED);
    ck_assert_int_eq(h.calls, 1);
    ck_assert_int_eq(h.event.rewound_to, 30);
    ck_assert_int_gt(h.event.step, 30);
    ck_assert_int_le(h.event.step, 35);
    const char *m = acm_domain_last_error(d);
    ck_assert_msg(strstr(m, "rewound to step 30") != NULL, "message: '%s'", m);
    ck_assert_int_eq(steps_done(d), 30);
    double *now = populations(d);
    ck_assert_int_eq(memcmp(now, at30, 27 * NCELLS * sizeof(double)), 0);
    free(now);
    /* without the force the run goes on; the snapshot moves with it */
    const double g[3] = {1e-6, -2e-6, 3e-6};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    ACM_CK_OK(d, acm_step(d, 25));
    ck_assert_int_eq(steps_done(d), 55);
    push_hard(d);
    ACM_CK_FAIL(d, acm_step(d, 100), ACM_ERR_DIVERGED);
    ck_assert_int_eq(h.calls, 2);
    ck_assert_int_eq(h.event.rewound_to, 50);
    ck_assert_int_eq(steps_done(d), 50);
    free(at30);
    acm_domain_destroy(d);
}
END_TEST

/* A re-initialisation replaces the snapshot: the rewind goes back to the new
 * state, never to one from before. */
START_TEST(divergence_snapshot_follows_reinitialisation)
{
    acm_domain *d = busy_domain();
    acm_divergence_policy p = ACM_DIVERGENCE_POLICY_INIT;
    p.action = ACM_DIVERGENCE_REWIND;
    ACM_CK_OK(d, acm_domain_set_divergence_policy(d, &p)); /* interval 1000 */
    ACM_CK_OK(d, acm_step(d, 4));
    const double u[3] = {0.01, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_init_uniform(d, 1.0, u));
    double *fresh = populations(d);
    push_hard(d);
    ACM_CK_FAIL(d, acm_step(d, 300), ACM_ERR_DIVERGED);
    ck_assert_int_eq(steps_done(d), 0);
    double *now = populations(d);
    ck_assert_int_eq(memcmp(now, fresh, 27 * NCELLS * sizeof(double)), 0);
    free(now);
    free(fresh);
    acm_domain_destroy(d);
}
END_TEST

START_TEST(divergence_policy_errors)
{
    acm_domain *d = busy_domain();
    acm_divergence_policy p = ACM_DIVERGENCE_POLICY_INIT;
    ck_assert_int_eq(acm_divergence_policy_init(NULL, ACM_DIVERGENCE_POLICY_VERSION),
                     ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_divergence_policy_init(&p, 99), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_domain_set_divergence_policy(NULL, &p), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_divergence_policy(d, NULL), ACM_ERR_NULL_POINTER);
    p.version = 0;
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, &p), ACM_ERR_BAD_VERSION);
    EXPECT_DOMAIN_FAIL(d, acm_domain_get_divergence_policy(d, &p), ACM_ERR_BAD_VERSION);
    p.version = ACM_DIVERGENCE_POLICY_VERSION;
    p.action = (acm_divergence_action)2;
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, &p), ACM_ERR_BAD_ENUM);
    p.action = ACM_DIVERGENCE_REWIND;
    p.snapshot_interval = -1;
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, &p), ACM_ERR_OUT_OF_RANGE);
    p.snapshot_interval = ((int64_t)1 << 40) + 1;
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, &p), ACM_ERR_OUT_OF_RANGE);
    /* a refused policy leaves the old one */
    acm_divergence_policy back = {.version = ACM_DIVERGENCE_POLICY_VERSION};
    ACM_CK_OK(d, acm_domain_get_divergence_policy(d, &back));
    ck_assert_int_eq(back.action, ACM_DIVERGENCE_STOP);
    /* a diverged domain takes no policy until re-initialised */
    push_hard(d);
    ACM_CK_FAIL(d, acm_step(d, 300), ACM_ERR_DIVERGED);
    p.snapshot_interval = 0;
    EXPECT_DOMAIN_FAIL(d, acm_domain_set_divergence_policy(d, &p), ACM_ERR_BAD_STATE);
    acm_domain_destroy(d);
}
END_TEST

/* ---- collision options -------------------------------------------------------------- */

START_TEST(collision_ranges)
{
    acm_domain *d = busy_domain();
    acm_collision_options in_effect = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_get_collision(d, &in_effect));

    const int bad_model[] = {-1, 6, 1000};
    for (int i = 0; i < 3; ++i) {
        acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
        c.model = (acm_collision)bad_model[i];
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_BAD_ENUM);
    }
    const double bad_rate[] = {0.0, 2.0, -0.5, 2.5, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad_rate / sizeof bad_rate[0]; ++i) {
        acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
        c.model = ACM_COLLISION_CM_MRT;
        c.high_order_rate = bad_rate[i];
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
        c = (acm_collision_options)ACM_COLLISION_OPTIONS_INIT;
        c.model = ACM_COLLISION_RM_MRT;
        c.bulk_rate = bad_rate[i];
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
        c = (acm_collision_options)ACM_COLLISION_OPTIONS_INIT;
        c.max_high_order_rate = bad_rate[i];
        EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
    }
    const double bad_nu[] = {-0.001, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad_nu / sizeof bad_nu[0]; ++i)
        for (int o = 0; o < 4; ++o) {
            acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
            c.li2018_nu0[o] = bad_nu[i];
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
            c = (acm_collision_options)ACM_COLLISION_OPTIONS_INIT;
            c.model = ACM_COLLISION_ACM_LI2020;
            c.li2020_tau0 = bad_nu[i];
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
        }
    for (size_t b = 0; b < N_BAD_VALUES; ++b)
        for (int o = 0; o < 4; ++o) {
            acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
            c.model = ACM_COLLISION_ACM_LI2020;
            c.li2020_theta[o] = bad_values[b];
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_collision(d, &c), ACM_ERR_OUT_OF_RANGE);
        }
    acm_collision_options now = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_get_collision(d, &now));
    ck_assert_msg(memcmp(&now, &in_effect, sizeof now) == 0,
                  "a rejected set_collision changed the options");
    acm_domain_destroy(d);
}
END_TEST

/* ---- parameters ----------------------------------------------------------------------- */

START_TEST(param_ranges)
{
    acm_domain *d = busy_domain();
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_THREADS, 1));
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, 3));
    const acm_param params[] = {ACM_PARAM_THREADS, ACM_PARAM_DIVERGENCE_INTERVAL};
    for (int p = 0; p < 2; ++p) {
        int64_t lo, hi;
        ck_assert_int_eq(acm_param_bounds(params[p], &lo, &hi), ACM_OK);
        const int64_t bad[] = {lo - 1, hi + 1, INT64_MIN, INT64_MAX};
        for (int i = 0; i < 4; ++i)
            EXPECT_DOMAIN_FAIL(d, acm_domain_set_param(d, params[p], bad[i]),
                               ACM_ERR_OUT_OF_RANGE);
    }
    int64_t v = 0;
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_THREADS, &v));
    ck_assert_int_eq(v, 1);
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, &v));
    ck_assert_int_eq(v, 3);
    acm_domain_destroy(d);
}
END_TEST

/* ---- layouts ------------------------------------------------------------------------- */

START_TEST(layout_errors)
{
    acm_layout *l = SENTINEL_LAYOUT;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_ptr_ne(l, SENTINEL_LAYOUT);
    ck_assert_str_eq(acm_layout_last_error(l), "");
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, 64), ACM_OK);

    int64_t lo = 0, hi = 0;
    ck_assert_int_eq(acm_layout_param_bounds(ACM_LAYOUT_CSOA_GROUP, &lo, &hi), ACM_OK);
    ck_assert_int_eq(lo, 1);
    ck_assert_int_eq(hi, INT64_C(1) << 30);
    const int64_t bad[] = {3,  6,  12, 1000, -1, -2, -64, (INT64_C(1) << 30) + 1,
                           INT64_C(1) << 31, INT64_C(1) << 62, INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        EXPECT_LAYOUT_FAIL(l, acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, bad[i]),
                           ACM_ERR_OUT_OF_RANGE);
    int64_t v = 0;
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_CSOA_GROUP, &v), ACM_OK);
    ck_assert_int_eq(v, 64);

    const int bad_param[] = {-1, 0, ACM_LAYOUT_STORAGE + 1, 1000};
    for (int i = 0; i < 4; ++i) {
        int64_t got = -77, blo = -77, bhi = -77;
        EXPECT_LAYOUT_FAIL(l, acm_layout_set(l, (acm_layout_param)bad_param[i], 8),
                           ACM_ERR_BAD_ENUM);
        EXPECT_LAYOUT_FAIL(l, acm_layout_get(l, (acm_layout_param)bad_param[i], &got),
                           ACM_ERR_BAD_ENUM);
        EXPECT_STATUS(acm_layout_param_bounds((acm_layout_param)bad_param[i], &blo, &bhi),
                      ACM_ERR_BAD_ENUM);
        ck_assert(got == -77 && blo == -77 && bhi == -77);
    }
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_CSOA_GROUP, &v), ACM_OK);
    ck_assert_int_eq(v, 64);

    /* GPU block size: multiples of 32 up to the fused kernel's 256 threads */
    ck_assert_int_eq(acm_layout_param_bounds(ACM_LAYOUT_BLOCK_SIZE, &lo, &hi), ACM_OK);
    ck_assert(lo == 32 && hi == 256);
    const int64_t bad_block[] = {-32, 16, 48, 100, 288, 512, 1024};
    for (size_t i = 0; i < sizeof bad_block / sizeof bad_block[0]; ++i)
        EXPECT_LAYOUT_FAIL(l, acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, bad_block[i]),
                           ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, 32), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, 256), ACM_OK);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_BLOCK_SIZE, &v), ACM_OK);
    ck_assert_int_eq(v, 256);

    /* streaming: one of the acm_streaming values (0 = default) */
    ck_assert_int_eq(acm_layout_param_bounds(ACM_LAYOUT_STREAMING, &lo, &hi), ACM_OK);
    ck_assert(lo == ACM_STREAMING_TWO_ARRAYS && hi == ACM_STREAMING_IN_PLACE);
    const int64_t bad_streaming[] = {-1, ACM_STREAMING_IN_PLACE + 1, 1000};
    for (size_t i = 0; i < sizeof bad_streaming / sizeof bad_streaming[0]; ++i)
        EXPECT_LAYOUT_FAIL(l, acm_layout_set(l, ACM_LAYOUT_STREAMING, bad_streaming[i]),
                           ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE), ACM_OK);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_STREAMING, &v), ACM_OK);
    ck_assert_int_eq(v, ACM_STREAMING_IN_PLACE);

    /* the extremes of the range, and 0, are accepted */
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, 1), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, INT64_C(1) << 30), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_CSOA_GROUP, 0), ACM_OK);
    acm_layout_destroy(l);
}
END_TEST

/* Every parameter of a layout, by key. */
static void layout_values(const acm_layout *l, int64_t v[ACM_LAYOUT_STORAGE])
{
    for (int k = 1; k <= ACM_LAYOUT_STORAGE; ++k)
        ck_assert_int_eq(acm_layout_get(l, (acm_layout_param)k, &v[k - 1]), ACM_OK);
}

/* A random admissible value of parameter k (0, the default, one time in four). */
static int64_t random_layout_value(unsigned *seed, int k)
{
    int64_t lo, hi;
    ck_assert_int_eq(acm_layout_param_bounds((acm_layout_param)k, &lo, &hi), ACM_OK);
    *seed = *seed * 1664525u + 1013904223u;
    const unsigned r = *seed >> 8;
    if (r % 4 == 0)
        return 0;
    if (k == ACM_LAYOUT_CSOA_GROUP)
        return INT64_C(1) << (r % 31);
    if (k == ACM_LAYOUT_BLOCK_SIZE)
        return 32 * (1 + (int64_t)(r % 8));
    return lo + (int64_t)(r % (unsigned)(hi - lo + 1));
}

START_TEST(layout_text_round_trip)
{
    acm_layout *a = NULL, *b = NULL;
    ck_assert_int_eq(acm_layout_create(&a), ACM_OK);
    ck_assert_int_eq(acm_layout_create(&b), ACM_OK);
    char text[ACM_LAYOUT_STRING_SIZE], again[ACM_LAYOUT_STRING_SIZE];
    ck_assert_int_eq(acm_layout_to_string(a, text, sizeof text), ACM_OK);
    ck_assert_str_eq(text, "acm-layout 1 csoa_group=default kernel=default block_size=default "
                           "sample_block=default sample_order=default ib_spread=default "
                           "streaming=default precision=default storage=default");
    unsigned seed = 5;
    for (int trial = 0; trial < 500; ++trial) {
        int64_t va[ACM_LAYOUT_STORAGE], vb[ACM_LAYOUT_STORAGE];
        for (int k = 1; k <= ACM_LAYOUT_STORAGE; ++k)
            ck_assert_int_eq(acm_layout_set(a, (acm_layout_param)k, random_layout_value(&seed, k)),
                             ACM_OK);
        ck_assert_int_eq(acm_layout_to_string(a, text, sizeof text), ACM_OK);
        ck_assert_msg(strlen(text) < ACM_LAYOUT_STRING_SIZE, "%s", text);
        ck_assert_msg(acm_layout_from_string(b, text) == ACM_OK, "%s: %s", text,
                      acm_layout_last_error(b));
        layout_values(a, va);
        layout_values(b, vb);
        ck_assert_msg(memcmp(va, vb, sizeof va) == 0, "round trip changed %s", text);
        ck_assert_int_eq(acm_layout_to_string(b, again, sizeof again), ACM_OK);
        ck_assert_str_eq(text, again);
    }
    /* any order, any white space; absent keys are defaults; names as documented */
    ck_assert_int_eq(acm_layout_from_string(b, "\t acm-layout   1\nstreaming=in_place\r\n"
                                               "  kernel=split csoa_group=256 "),
                     ACM_OK);
    int64_t v[ACM_LAYOUT_STORAGE];
    layout_values(b, v);
    const int64_t expect[ACM_LAYOUT_STORAGE] = {256, ACM_KERNEL_SPLIT, 0, 0, 0, 0,
                                                  ACM_STREAMING_IN_PLACE};
    ck_assert(memcmp(v, expect, sizeof v) == 0);
    ck_assert_int_eq(acm_layout_from_string(b, "acm-layout 1 sample_order=as_sampled "
                                               "ib_spread=gather kernel=baseline"),
                     ACM_OK);
    layout_values(b, v);
    ck_assert(v[ACM_LAYOUT_SAMPLE_ORDER - 1] == ACM_SAMPLE_ORDER_AS_SAMPLED &&
              v[ACM_LAYOUT_IB_SPREAD - 1] == ACM_IB_SPREAD_GATHER &&
              v[ACM_LAYOUT_KERNEL - 1] == ACM_KERNEL_BASELINE && v[0] == 0);
    acm_layout_destroy(a);
    acm_layout_destroy(b);
}
END_TEST

START_TEST(layout_text_errors)
{
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    const char *good = "acm-layout 1 csoa_group=64 kernel=fused block_size=96 sample_block=3 "
                       "sample_order=morton_block ib_spread=scatter streaming=two_arrays";
    ck_assert_int_eq(acm_layout_from_string(l, good), ACM_OK);
    char before[ACM_LAYOUT_STRING_SIZE], after[ACM_LAYOUT_STRING_SIZE];
    ck_assert_int_eq(acm_layout_to_string(l, before, sizeof before), ACM_OK);
    static const struct {
        const char *text;
        acm_status expect;
    } bad[] = {
        {"", ACM_ERR_BAD_FORMAT},
        {"   ", ACM_ERR_BAD_FORMAT},
        {"acm-layout", ACM_ERR_BAD_FORMAT},
        {"acm-layout x kernel=fused", ACM_ERR_BAD_FORMAT},
        {"acm_layout 1", ACM_ERR_BAD_FORMAT},
        {"kernel=fused", ACM_ERR_BAD_FORMAT},
        {"acm-layout 2 kernel=fused", ACM_ERR_BAD_VERSION},
        {"acm-layout 0", ACM_ERR_BAD_VERSION},
        {"acm-layout 1 kernel", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 kernel=fused kernel=split", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 csoa_group=", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 csoa_group=-4", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 csoa_group=4k", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 csoa_group=99999999999999999999999", ACM_ERR_BAD_FORMAT},
        {"acm-layout 1 colour=red", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 =3", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 Kernel=fused", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 kernel=warp", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 kernel=2", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 streaming=inplace", ACM_ERR_BAD_ENUM},
        {"acm-layout 1 csoa_group=1000", ACM_ERR_OUT_OF_RANGE},
        {"acm-layout 1 csoa_group=2147483648", ACM_ERR_OUT_OF_RANGE},
        {"acm-layout 1 block_size=48", ACM_ERR_OUT_OF_RANGE},
        {"acm-layout 1 block_size=512", ACM_ERR_OUT_OF_RANGE},
        {"acm-layout 1 sample_block=65", ACM_ERR_OUT_OF_RANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        EXPECT_LAYOUT_FAIL(l, acm_layout_from_string(l, bad[i].text), bad[i].expect);
        ck_assert_int_eq(acm_layout_to_string(l, after, sizeof after), ACM_OK);
        ck_assert_msg(strcmp(before, after) == 0, "\"%s\" changed the layout", bad[i].text);
    }
    EXPECT_LAYOUT_FAIL(l, acm_layout_from_string(l, NULL), ACM_ERR_NULL_POINTER);
    EXPECT_LAYOUT_FAIL(l, acm_layout_to_string(l, NULL, 100), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_to_string(NULL, after, sizeof after), ACM_ERR_NULL_POINTER);
    EXPECT_STATUS(acm_layout_from_string(NULL, good), ACM_ERR_NULL_POINTER);
    char small[40];
    memset(small, 'x', sizeof small);
    EXPECT_LAYOUT_FAIL(l, acm_layout_to_string(l, small, sizeof small), ACM_ERR_BUFFER_SIZE);
    ck_assert_int_eq(small[0], '\0');
    EXPECT_LAYOUT_FAIL(l, acm_layout_to_string(l, small, 0), ACM_ERR_BUFFER_SIZE);
    ck_assert_int_eq(acm_layout_to_string(l, after, strlen(before) + 1), ACM_OK);

    /* mutated texts: never a crash, and on failure the layout unchanged */
    unsigned seed = 9;
    char text[160];
    for (int trial = 0; trial < 3000; ++trial) {
        snprintf(text, sizeof text, "%s", good);
        const size_t n = strlen(text);
        for (int m = 0; m < 1 + trial % 4; ++m) {
            seed = seed * 1664525u + 1013904223u;
            const size_t at = (seed >> 8) % n;
            text[at] = (char)(" =ax0_9-\t"[(seed >> 20) % 9]);
        }
        if (acm_layout_from_string(l, text) != ACM_OK) {
            ck_assert(acm_layout_last_error(l)[0] != '\0');
            ck_assert_int_eq(acm_layout_to_string(l, after, sizeof after), ACM_OK);
            ck_assert_msg(strcmp(before, after) == 0, "\"%s\" changed the layout", text);
        } else {
            ck_assert_int_eq(acm_layout_from_string(l, good), ACM_OK);
        }
    }
    acm_layout_destroy(l);
}
END_TEST

TEST_SUITE(errors_suite)
{
    Suite *s = suite_create("errors");
    TCase *tc = acm_tcase("status", 30);
    tcase_add_test(tc, status_strings_are_distinct);
    tcase_add_test(tc, unknown_backend_is_unavailable);
#if !ACM_HAVE_CUDA
    tcase_add_test(tc, cuda_interop_is_not_built);
    tcase_add_test(tc, create_on_comm_refuses_bad_calls);
#endif /* !ACM_HAVE_CUDA */
    suite_add_tcase(s, tc);

    tc = acm_tcase("null", 30);
    tcase_add_test(tc, null_without_a_handle);
    tcase_add_test(tc, null_with_a_handle);
    tcase_add_test(tc, wrong_struct_versions);
    suite_add_tcase(s, tc);

    tc = acm_tcase("create", 60);
    tcase_add_test(tc, create_grid_sizes);
    tcase_add_test(tc, create_viscosity_and_tau);
    tcase_add_test(tc, create_enums);
    tcase_add_test(tc, create_other_ranges);
    tcase_add_test(tc, create_error_buffer);
    tcase_add_test(tc, create_backend_and_precision);
    tcase_add_test(tc, create_beyond_available_memory);
    suite_add_tcase(s, tc);

    tc = acm_tcase("domain", 60);
    tcase_add_test(tc, domain_enums);
    tcase_add_test(tc, probe_outside_the_grid);
    tcase_add_test(tc, buffer_sizes);
    tcase_add_test(tc, nonfinite_set_field);
    tcase_add_test(tc, nonphysical_populations);
    tcase_add_test(tc, nonfinite_init_fields);
    tcase_add_test(tc, nonfinite_uniform_values);
    tcase_add_test(tc, face_velocities);
    tcase_add_test(tc, step_face_consistency);
    tcase_add_test(tc, step_arguments_and_divergence);
    tcase_add_loop_test(tc, divergence_messages_agree, 0, 2);
    tcase_add_test(tc, negative_density_diverges);
    tcase_add_test(tc, divergence_callback_on_stop);
    tcase_add_test(tc, divergence_rewinds_to_the_last_snapshot);
    tcase_add_test(tc, divergence_snapshot_follows_reinitialisation);
    tcase_add_test(tc, divergence_policy_errors);
    tcase_add_test(tc, collision_ranges);
    tcase_add_test(tc, param_ranges);
    suite_add_tcase(s, tc);

    tc = acm_tcase("layout", 30);
    tcase_add_test(tc, layout_errors);
    tcase_add_test(tc, layout_text_round_trip);
    tcase_add_test(tc, layout_text_errors);
    suite_add_tcase(s, tc);
    return s;
}
