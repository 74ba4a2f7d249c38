/*
 * libacmlbm tests -- the public API used as documented: options defaults,
 * versions, domain description, field transfers and their round trips,
 * faces, collision options, tunables, and a uniform flow that must stay
 * uniform. SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include <stdint.h> /* uintptr_t */

#define NX 6
#define NY 5
#define NZ 4
#define NCELLS ((size_t)NX * NY * NZ)

static acm_domain_info info_of(acm_domain *d)
{
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    return info;
}

static acm_domain *make_domain(acm_precision prec, acm_collision model)
{
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.04, model, prec);
    return acm_test_domain(&o);
}

static void *get_field(acm_domain *d, acm_field field, acm_dtype dtype, size_t *bytes_out)
{
    size_t bytes = 0;
    ACM_CK_OK(d, acm_domain_field_size(d, field, dtype, &bytes));
    void *buf = acm_test_alloc(bytes);
    ACM_CK_OK(d, acm_domain_get_field(d, field, dtype, buf, bytes));
    if (bytes_out != NULL)
        *bytes_out = bytes;
    return buf;
}

static double elem(acm_dtype dtype, const void *buf, size_t i)
{
    return dtype == ACM_DTYPE_FLOAT32 ? (double)((const float *)buf)[i]
                                      : ((const double *)buf)[i];
}

/* ---- options, versions, backends ------------------------------------------------- */

/* init(&o, version) gives the same bytes as the _INIT macro and writes
 * nothing past the struct (guard bytes after it). */
#define EXPECT_INIT_MATCHES_MACRO(type, init, version, macro_value)                        \
    do {                                                                                   \
        struct {                                                                           \
            type o;                                                                        \
            unsigned char guard[32];                                                       \
        } fn_;                                                                             \
        memset(&fn_, 0xA5, sizeof fn_);                                                    \
        ck_assert_int_eq(init(&fn_.o, version), ACM_OK);                                   \
        type macro_ = macro_value;                                                         \
        ck_assert_msg(memcmp(&fn_.o, &macro_, sizeof macro_) == 0,                         \
                      #macro_value " and " #init "() differ");                             \
        for (size_t i_ = 0; i_ < sizeof fn_.guard; ++i_)                                   \
            ck_assert_uint_eq(fn_.guard[i_], 0xA5);                                        \
    } while (0)

START_TEST(options_init_matches_macro)
{
    EXPECT_INIT_MATCHES_MACRO(acm_domain_options, acm_domain_options_init,
                              ACM_DOMAIN_OPTIONS_VERSION, ACM_DOMAIN_OPTIONS_INIT);
    EXPECT_INIT_MATCHES_MACRO(acm_collision_options, acm_collision_options_init,
                              ACM_COLLISION_OPTIONS_VERSION, ACM_COLLISION_OPTIONS_INIT);
    acm_domain_options macro = ACM_DOMAIN_OPTIONS_INIT;
    acm_collision_options cmacro = ACM_COLLISION_OPTIONS_INIT;

    /* the documented defaults */
    ck_assert_uint_eq(macro.version, ACM_DOMAIN_OPTIONS_VERSION);
    ck_assert_int_eq(macro.backend, ACM_BACKEND_AUTO);
    ck_assert_int_eq(macro.collision, ACM_COLLISION_DEFAULT);
    ck_assert_int_eq(macro.precision, ACM_PRECISION_DEFAULT);
    ck_assert_int_eq(macro.device, -1);
    ck_assert(macro.initial_density == 1.0);
    ck_assert(macro.viscosity == 0.0 && macro.tau == 0.0);
    ck_assert_ptr_null(macro.layout);
    ck_assert_ptr_null(macro.error_buffer);
    ck_assert_uint_eq(cmacro.version, ACM_COLLISION_OPTIONS_VERSION);
    ck_assert_int_eq(cmacro.safety_net, 1);
    ck_assert(cmacro.high_order_rate == 1.0 && cmacro.max_high_order_rate == 1.95);
}
END_TEST

START_TEST(versions_agree)
{
    ck_assert_uint_eq(acm_version_number(), ACM_VERSION_NUMBER);
    ck_assert_str_eq(acm_version_string(), ACM_VERSION_STRING);
    ck_assert_int_eq(ACM_VERSION_NUMBER,
                     ACM_VERSION_MAJOR * 10000 + ACM_VERSION_MINOR * 100 + ACM_VERSION_PATCH);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", ACM_VERSION_MAJOR, ACM_VERSION_MINOR,
             ACM_VERSION_PATCH);
    ck_assert_str_eq(acm_version_string(), expect);
}
END_TEST

START_TEST(backends_available)
{
    ck_assert_int_eq(acm_backend_available(ACM_BACKEND_CPU), 1);
    ck_assert_int_eq(acm_backend_available(ACM_BACKEND_AUTO), 1);
    ck_assert_int_eq(acm_backend_available(ACM_BACKEND_CUDA) == 1 ||
                         acm_backend_available(ACM_BACKEND_CUDA) == 0,
                     1);
}
END_TEST

/* ---- domain description ------------------------------------------------------------ */

START_TEST(domain_info_defaults)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = NX;
    o.ny = NY;
    o.nz = NZ;
    o.viscosity = 0.04;
    /* AUTO resolves by ACMLBM_BACKEND, then CUDA if usable, then the CPU */
    const char *env = getenv("ACMLBM_BACKEND");
    acm_backend expect = ACM_BACKEND_CPU;
    if (env != NULL && strcmp(env, "cuda") == 0)
        expect = ACM_BACKEND_CUDA;
    else if ((env == NULL || env[0] == '\0') && acm_backend_available(ACM_BACKEND_CUDA))
        expect = ACM_BACKEND_CUDA;
    acm_domain *d = acm_test_domain(&o);
    ck_assert_str_eq(acm_domain_last_error(d), "");
    acm_domain_info info = info_of(d);
    ck_assert_uint_eq(info.version, ACM_DOMAIN_INFO_VERSION);
    ck_assert_int_eq(info.nx, NX);
    ck_assert_int_eq(info.ny, NY);
    ck_assert_int_eq(info.nz, NZ);
    ck_assert_int_eq(info.backend, expect);
    ck_assert_int_eq(info.device, expect == ACM_BACKEND_CPU ? -1 : 0);
    ck_assert_int_eq(info.precision, ACM_PRECISION_FP32);
    ck_assert_int_eq(info.collision, ACM_COLLISION_ACM_LI2018);
    ck_assert_double_eq_tol(info.viscosity, 0.04, 1e-15);
    ck_assert_double_eq_tol(info.tau, 3.0 * info.viscosity + 0.5, 1e-15);
    ck_assert_double_eq_tol(info.tau, 0.62, 1e-15);
    ck_assert_int_ge(info.csoa_group, 1);
    ck_assert_int_eq(info.csoa_group & (info.csoa_group - 1), 0);
    ck_assert_int_eq(info.step, 0);
    ck_assert_uint_ge(info.memory_bytes, 2 * 27 * 4 * (uint64_t)NCELLS);
    ACM_CK_OK(d, acm_step(d, 3));
    ck_assert_int_eq(info_of(d).step, 3);
    acm_domain_destroy(d);

    /* tau instead of viscosity; explicit precision, model and backend */
    o = (acm_domain_options)ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = 3;
    o.tau = 0.8;
    o.precision = ACM_PRECISION_FP64;
    o.collision = ACM_COLLISION_BGK;
    o.backend = ACM_BACKEND_CPU;
    d = acm_test_domain(&o);
    info = info_of(d);
    ck_assert_int_eq(info.backend, ACM_BACKEND_CPU);
    ck_assert_int_eq(info.device, -1);
    ck_assert_int_eq(info.precision, ACM_PRECISION_FP64);
    ck_assert_int_eq(info.collision, ACM_COLLISION_BGK);
    ck_assert_double_eq_tol(info.tau, 0.8, 1e-15);
    ck_assert_double_eq_tol(info.viscosity, 0.1, 1e-15);
    ck_assert_uint_ge(info.memory_bytes, 2 * 27 * 8 * 27);
    acm_domain_destroy(d);
}
END_TEST

START_TEST(field_sizes)
{
    acm_domain *d = make_domain(ACM_PRECISION_FP32, ACM_COLLISION_DEFAULT);
    static const struct {
        acm_field field;
        size_t per_cell;
    } f[] = {{ACM_FIELD_DENSITY, 1}, {ACM_FIELD_VELOCITY, 3}, {ACM_FIELD_FORCE, 3},
             {ACM_FIELD_POPULATIONS, 27}};
    for (size_t i = 0; i < 4; ++i) {
        size_t b32 = 0, b64 = 0;
        ACM_CK_OK(d, acm_domain_field_size(d, f[i].field, ACM_DTYPE_FLOAT32, &b32));
        ACM_CK_OK(d, acm_domain_field_size(d, f[i].field, ACM_DTYPE_FLOAT64, &b64));
        ck_assert_uint_eq(b32, NCELLS * f[i].per_cell * sizeof(float));
        ck_assert_uint_eq(b64, NCELLS * f[i].per_cell * sizeof(double));
    }
    acm_domain_destroy(d);
}
END_TEST

/* ---- initial fields read back ------------------------------------------------------------ */

/* Loop index: domain precision x input dtype x output dtype. */
START_TEST(init_fields_read_back)
{
    const acm_precision prec = (_i & 4) ? ACM_PRECISION_FP64 : ACM_PRECISION_FP32;
    const acm_dtype in = (_i & 2) ? ACM_DTYPE_FLOAT64 : ACM_DTYPE_FLOAT32;
    const acm_dtype out = (_i & 1) ? ACM_DTYPE_FLOAT64 : ACM_DTYPE_FLOAT32;
    /* the domain's precision, or a float output's rounding if coarser */
    const double tol = (prec == ACM_PRECISION_FP64 && out == ACM_DTYPE_FLOAT64) ? 1e-15 : 1e-6;
    const size_t es = in == ACM_DTYPE_FLOAT64 ? sizeof(double) : sizeof(float);

    acm_domain *d = make_domain(prec, ACM_COLLISION_DEFAULT);
    void *rho = acm_test_alloc(NCELLS * es), *u = acm_test_alloc(3 * NCELLS * es);
    /* moment storage keeps what 10 moments a cell hold of a field that jumps
     * from cell to cell, not the field (docs/physics.md, "Faces and fields";
     * test-moments smooth_fields_read_back): a uniform one there, whose
     * conversions this test checks */
    const double jumps = acm_test_moments() ? 0.0 : 1.0;
    for (size_t k = 0; k < NCELLS; ++k) {
        double r = 1.0 + 0.02 * (jumps * sin(0.7 * (double)k) + 0.1);
        double v[3] = {0.03 * jumps * cos(0.3 * (double)k) + 0.01,
                       -0.02 * jumps * sin(0.5 * (double)k) - 0.004,
                       jumps * (0.01 * (double)(k % 3) - 0.01) + 0.002};
        if (in == ACM_DTYPE_FLOAT64) {
            ((double *)rho)[k] = r;
            memcpy((double *)u + 3 * k, v, sizeof v);
        } else {
            ((float *)rho)[k] = (float)r;
            for (int a = 0; a < 3; ++a)
                ((float *)u)[3 * k + (size_t)a] = (float)v[a];
        }
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, in, rho, u, NCELLS));
    ck_assert_int_eq(info_of(d).step, 0);

    void *got_rho = get_field(d, ACM_FIELD_DENSITY, out, NULL);
    void *got_u = get_field(d, ACM_FIELD_VELOCITY, out, NULL);
    for (size_t k = 0; k < NCELLS; ++k) {
        ck_assert_double_eq_tol(elem(out, got_rho, k), elem(in, rho, k), tol);
        for (size_t a = 0; a < 3; ++a)
            ck_assert_double_eq_tol(elem(out, got_u, 3 * k + a), elem(in, u, 3 * k + a), tol);
    }
    free(got_rho);
    free(got_u);

    /* NULL arrays mean density 1 and velocity 0 */
    ACM_CK_OK(d, acm_domain_init_fields(d, in, NULL, u, NCELLS));
    got_rho = get_field(d, ACM_FIELD_DENSITY, out, NULL);
    for (size_t k = 0; k < NCELLS; ++k)
        ck_assert_double_eq_tol(elem(out, got_rho, k), 1.0, tol);
    free(got_rho);
    ACM_CK_OK(d, acm_domain_init_fields(d, in, rho, NULL, NCELLS));
    got_u = get_field(d, ACM_FIELD_VELOCITY, out, NULL);
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        ck_assert_double_eq_tol(elem(out, got_u, i), 0.0, tol);
    free(got_u);

    free(rho);
    free(u);
    acm_domain_destroy(d);
}
END_TEST

/* A domain with a lid, walls, a force field and some history. */
static acm_domain *stirred_domain(acm_precision prec, acm_collision model, double lid_speed)
{
    acm_domain *d = make_domain(prec, model);
    const double lid[3] = {lid_speed, 0.0, 0.5 * lid_speed}, g[3] = {2e-5, 0.0, -1e-5};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    double *F = acm_test_alloc(3 * NCELLS * sizeof(double));
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        F[i] = 1e-5 * sin((double)i);
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, F,
                                      3 * NCELLS * sizeof(double)));
    free(F);
    ACM_CK_OK(d, acm_step(d, 7));
    return d;
}

START_TEST(probe_equals_fields)
{
    const acm_precision prec = _i ? ACM_PRECISION_FP64 : ACM_PRECISION_FP32;
    acm_domain *d = stirred_domain(prec, ACM_COLLISION_DEFAULT, 0.05);
    double *rho = get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, NULL);
    double *u = get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, NULL);
    for (int32_t z = 0; z < NZ; ++z)
        for (int32_t y = 0; y < NY; ++y)
            for (int32_t x = 0; x < NX; ++x) {
                size_t k = (size_t)x + NX * ((size_t)y + NY * (size_t)z);
                double r = 0.0, v[3] = {0.0, 0.0, 0.0};
                ACM_CK_OK(d, acm_domain_probe(d, x, y, z, &r, v));
                ck_assert_msg(r == rho[k], "density at (%d,%d,%d): probe %.17g field %.17g", x,
                              y, z, r, rho[k]);
                for (int a = 0; a < 3; ++a)
                    ck_assert_msg(v[a] == u[3 * k + (size_t)a],
                                  "velocity %d at (%d,%d,%d): probe %.17g field %.17g", a, x, y,
                                  z, v[a], u[3 * k + (size_t)a]);
            }
    /* the state is not uniform, so the comparison meant something */
    ck_assert(rho[0] != rho[NCELLS - 1] || u[0] != u[3 * (NCELLS - 1)]);
    free(rho);
    free(u);
    acm_domain_destroy(d);
}
END_TEST

/* ---- populations: checkpoints ---------------------------------------------------------- */

static void populations_round_trip(double lid_speed, double tol)
{
    acm_domain *d = stirred_domain(ACM_PRECISION_FP64, ACM_COLLISION_DEFAULT, lid_speed);
    size_t bytes = 0;
    double *f1 = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &bytes);
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f1, bytes));
    double *f2 = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, NULL);
    double worst = 0.0;
    for (size_t i = 0; i < 27 * NCELLS; ++i) {
        double e = fabs(f2[i] - f1[i]);
        worst = e > worst ? e : worst;
    }
    ck_assert_msg(worst <= tol, "lid %g: round trip differs by %g (allowed %g)", lid_speed, worst,
                  tol);
    free(f1);
    free(f2);
    acm_domain_destroy(d);
}

START_TEST(populations_round_trip_walls)
{
    /* moment storage: the FP64 populations rebuilt from the moments the set
     * made, within an ulp of the populations' magnitude */
    populations_round_trip(0.0, acm_test_moments() ? 1e-17 : 0.0);
}
END_TEST

START_TEST(populations_round_trip_moving_wall)
{
    populations_round_trip(0.05, 1e-15);
}
END_TEST

START_TEST(populations_round_trip_fp32)
{
    acm_domain *d = stirred_domain(ACM_PRECISION_FP32, ACM_COLLISION_DEFAULT, 0.0);
    size_t bytes = 0;
    float *f1 = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT32, &bytes);
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT32, f1, bytes));
    float *f2 = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT32, NULL);
    for (size_t i = 0; i < 27 * NCELLS; ++i)
        ck_assert_double_eq_tol(f2[i], f1[i], 1e-7);
    free(f1);
    free(f2);
    acm_domain_destroy(d);
}
END_TEST

/* Run 5 steps from a checkpoint restored into d. */
static double *run_from(acm_domain *d, const double *saved, size_t bytes)
{
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, saved, bytes));
    ACM_CK_OK(d, acm_step(d, 5));
    return get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, NULL);
}

/* A checkpoint restarts deterministically, whatever the model: two runs
 * from the same restored state agree bit for bit. */
START_TEST(checkpoint_restart_is_deterministic)
{
    const acm_collision model = (acm_collision)(ACM_COLLISION_BGK + _i);
    acm_domain *d = stirred_domain(ACM_PRECISION_FP64, model, 0.03);
    size_t bytes = 0;
    double *saved = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &bytes);
    double *a = run_from(d, saved, bytes);
    double *b = run_from(d, saved, bytes);
    ck_assert_msg(memcmp(a, b, bytes) == 0, "model %d: two restarts differ", (int)model);
    ck_assert_msg(memcmp(a, saved, bytes) != 0, "five steps changed nothing");
    free(saved);
    free(a);
    free(b);
    acm_domain_destroy(d);
}
END_TEST

/* With BGK the populations are the whole state, so a restarted run follows
 * the original to round-off (the API reports f while the domain stores
 * f - w: restoring may round the last bit of a stored value). */
START_TEST(checkpoint_restart_follows_original)
{
    acm_domain *d = stirred_domain(ACM_PRECISION_FP64, ACM_COLLISION_BGK, 0.03);
    size_t bytes = 0;
    double *saved = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &bytes);
    ACM_CK_OK(d, acm_step(d, 5));
    double *orig = get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, NULL);
    double *a = run_from(d, saved, bytes);
    double worst = 0.0;
    for (size_t i = 0; i < 27 * NCELLS; ++i)
        worst = fmax(worst, fabs(a[i] - orig[i]));
    ck_assert_msg(worst < 1e-15, "the restarted run departs from the original by %g", worst);
    ck_assert_msg(memcmp(orig, saved, bytes) != 0, "five steps changed nothing");
    free(saved);
    free(orig);
    free(a);
    acm_domain_destroy(d);
}
END_TEST

/* ---- forces ---------------------------------------------------------------------------------- */

START_TEST(force_field_set_get_clear)
{
    acm_domain *d = make_domain(ACM_PRECISION_FP64, ACM_COLLISION_DEFAULT);
    const uint64_t mem0 = info_of(d).memory_bytes;
    const double B[3] = {1e-5, -2e-5, 3e-5};
    ACM_CK_OK(d, acm_domain_set_body_force(d, B));
    double *G = acm_test_alloc(3 * NCELLS * sizeof(double));
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        G[i] = 1e-4 * cos(1.3 * (double)i);
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, G,
                                      3 * NCELLS * sizeof(double)));
    ck_assert_uint_gt(info_of(d).memory_bytes, mem0);

    double *F = get_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL);
    double *u = get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, NULL);
    for (size_t k = 0; k < NCELLS; ++k)
        for (size_t a = 0; a < 3; ++a) {
            ck_assert_msg(F[3 * k + a] == B[a] + G[3 * k + a], "force %zu.%zu", k, a);
            /* a fluid at rest with density 1 reports the half-force velocity */
            ck_assert_double_eq_tol(u[3 * k + a], 0.5 * (B[a] + G[3 * k + a]), 1e-15);
        }
    free(F);
    free(u);

    /* float input is converted */
    float *Gf = acm_test_alloc(3 * NCELLS * sizeof(float));
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        Gf[i] = (float)G[i];
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT32, Gf,
                                      3 * NCELLS * sizeof(float)));
    F = get_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL);
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        ck_assert(F[i] == B[i % 3] + (double)Gf[i]);
    free(F);
    free(Gf);

    /* NULL with 0 bytes removes the field; the body force stays */
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL, 0));
    ck_assert_uint_eq(info_of(d).memory_bytes, mem0);
    F = get_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, NULL);
    for (size_t i = 0; i < 3 * NCELLS; ++i)
        ck_assert(F[i] == B[i % 3]);
    free(F);
    free(G);
    acm_domain_destroy(d);
}
END_TEST

/* ---- configuration round trips --------------------------------------------------------------- */

START_TEST(params_round_trip)
{
    int64_t lo = -1, hi = -1;
    ck_assert_int_eq(acm_param_bounds(ACM_PARAM_THREADS, &lo, &hi), ACM_OK);
    ck_assert_int_eq(lo, 0);
    ck_assert_int_ge(hi, 1);
    ck_assert_int_eq(acm_param_bounds(ACM_PARAM_DIVERGENCE_INTERVAL, &lo, &hi), ACM_OK);
    ck_assert_int_eq(lo, 1);
    ck_assert_int_gt(hi, 1000);

    acm_domain *d = make_domain(ACM_PRECISION_FP32, ACM_COLLISION_DEFAULT);
    int64_t v = -1;
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_THREADS, &v));
    ck_assert_int_eq(v, 0);
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, &v));
    ck_assert_int_eq(v, 1);
    const acm_param params[] = {ACM_PARAM_THREADS, ACM_PARAM_DIVERGENCE_INTERVAL};
    for (int p = 0; p < 2; ++p) {
        ck_assert_int_eq(acm_param_bounds(params[p], &lo, &hi), ACM_OK);
        const int64_t values[] = {lo, hi, lo + 1};
        for (int i = 0; i < 3; ++i) {
            ACM_CK_OK(d, acm_domain_set_param(d, params[p], values[i]));
            ACM_CK_OK(d, acm_domain_get_param(d, params[p], &v));
            ck_assert_int_eq(v, values[i]);
        }
    }
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_THREADS, 2));
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, 4));
    ACM_CK_OK(d, acm_step(d, 5));
    acm_domain_destroy(d);
}
END_TEST

START_TEST(faces_round_trip)
{
    acm_domain *d = make_domain(ACM_PRECISION_FP32, ACM_COLLISION_DEFAULT);
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        acm_boundary type = (acm_boundary)-1;
        double u[3] = {9, 9, 9};
        ACM_CK_OK(d, acm_domain_get_face(d, (acm_face)f, &type, u));
        ck_assert_int_eq(type, ACM_BOUNDARY_PERIODIC);
        ck_assert(u[0] == 0.0 && u[1] == 0.0 && u[2] == 0.0);
    }
    static const struct {
        acm_face face;
        acm_boundary type;
        double u[3];
        double expect[3];
    } cases[] = {
        {ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, {0.05, 0.0, 0.01}, {0.05, 0.0, 0.01}},
        {ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, {0.0, 0.0, -0.02}, {0.0, 0.0, -0.02}},
        {ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, {0.03, 0.01, 0.0}, {0.03, 0.01, 0.0}},
        /* velocities of outlets and periodic faces are ignored */
        {ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, {0.03, 0.0, 0.0}, {0.0, 0.0, 0.0}},
        {ACM_FACE_Z_MIN, ACM_BOUNDARY_PERIODIC, {0.0, 0.04, 0.0}, {0.0, 0.0, 0.0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        ACM_CK_OK(d, acm_domain_set_face(d, cases[c].face, cases[c].type, cases[c].u));
        acm_boundary type = (acm_boundary)-1;
        double u[3] = {9, 9, 9};
        ACM_CK_OK(d, acm_domain_get_face(d, cases[c].face, &type, u));
        ck_assert_int_eq(type, cases[c].type);
        ck_assert_msg(memcmp(u, cases[c].expect, sizeof u) == 0, "face %d: (%g, %g, %g)",
                      (int)cases[c].face, u[0], u[1], u[2]);
    }
    /* NULL velocity means zero */
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, NULL));
    double u[3] = {9, 9, 9};
    acm_boundary type;
    ACM_CK_OK(d, acm_domain_get_face(d, ACM_FACE_Y_MAX, &type, u));
    ck_assert(u[0] == 0.0 && u[1] == 0.0 && u[2] == 0.0);
    /* the configuration steps */
    ACM_CK_OK(d, acm_step(d, 3));
    acm_domain_destroy(d);
}
END_TEST

START_TEST(collision_round_trip)
{
    acm_domain *d = make_domain(ACM_PRECISION_FP32, ACM_COLLISION_DEFAULT);
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    c.model = ACM_COLLISION_BGK; /* overwritten */
    ACM_CK_OK(d, acm_domain_get_collision(d, &c));
    ck_assert_int_eq(c.model, ACM_COLLISION_ACM_LI2018);
    acm_collision_options defaults = ACM_COLLISION_OPTIONS_INIT;
    defaults.model = ACM_COLLISION_ACM_LI2018;
    ck_assert(memcmp(&c, &defaults, sizeof c) == 0);

    acm_collision_options set = ACM_COLLISION_OPTIONS_INIT;
    set.model = ACM_COLLISION_CM_MRT;
    set.high_order_rate = 1.3;
    set.bulk_rate = 0.9;
    set.bulk_follows_high_order = 1;
    set.safety_net = 0;
    set.max_high_order_rate = 1.5;
    set.li2018_nu0[2] = 0.002;
    set.li2020_theta[1] = -0.01;
    set.li2020_tau0 = 0.01;
    ACM_CK_OK(d, acm_domain_set_collision(d, &set));
    acm_collision_options got;
    memset(&got, 0, sizeof got);
    got.version = ACM_COLLISION_OPTIONS_VERSION;
    ACM_CK_OK(d, acm_domain_get_collision(d, &got));
    ck_assert(memcmp(&got, &set, sizeof got) == 0);

    /* DEFAULT resolves to ACM_LI2018 */
    acm_collision_options def = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_set_collision(d, &def));
    ACM_CK_OK(d, acm_domain_get_collision(d, &got));
    ck_assert_int_eq(got.model, ACM_COLLISION_ACM_LI2018);
    ck_assert_int_eq(info_of(d).collision, ACM_COLLISION_ACM_LI2018);

    /* every model is accepted and steps */
    for (int m = ACM_COLLISION_BGK; m <= ACM_COLLISION_ACM_LI2020; ++m) {
        acm_collision_options o = ACM_COLLISION_OPTIONS_INIT;
        o.model = (acm_collision)m;
        ACM_CK_OK(d, acm_domain_set_collision(d, &o));
        ck_assert_int_eq(info_of(d).collision, m);
        ACM_CK_OK(d, acm_step(d, 2));
    }
    acm_domain_destroy(d);
}
END_TEST

/* ---- a uniform flow stays uniform ---------------------------------------------------------- */

/* Loop index: collision model (5) x precision (2). */
START_TEST(uniform_flow_stays_uniform)
{
    const acm_collision model = (acm_collision)(ACM_COLLISION_BGK + _i / 2);
    const acm_precision prec = (_i & 1) ? ACM_PRECISION_FP64 : ACM_PRECISION_FP32;
    const double tol = prec == ACM_PRECISION_FP64 ? 1e-12 : 2e-6;
    acm_domain *d = make_domain(prec, model);
    const double rho0 = 1.03, u0[3] = {0.02, -0.01, 0.015};
    ACM_CK_OK(d, acm_domain_init_uniform(d, rho0, u0));
    ACM_CK_OK(d, acm_step(d, 20));
    ck_assert_int_eq(info_of(d).step, 20);
    double *rho = get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, NULL);
    double *u = get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, NULL);
    for (size_t k = 0; k < NCELLS; ++k) {
        ck_assert_double_eq_tol(rho[k], rho0, tol);
        for (size_t a = 0; a < 3; ++a)
            ck_assert_double_eq_tol(u[3 * k + a], u0[a], tol);
    }
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    ACM_CK_OK(d, acm_domain_get_stats(d, &s));
    ck_assert_int_eq(s.step, 20);
    ck_assert_double_eq_tol(s.mass, rho0 * (double)NCELLS, tol * (double)NCELLS);
    for (int a = 0; a < 3; ++a)
        ck_assert_double_eq_tol(s.momentum[a], rho0 * u0[a] * (double)NCELLS,
                                tol * (double)NCELLS);
    const double speed = sqrt(u0[0] * u0[0] + u0[1] * u0[1] + u0[2] * u0[2]);
    ck_assert_double_eq_tol(s.max_speed, speed, tol);
    ck_assert_double_eq_tol(s.kinetic_energy, 0.5 * rho0 * speed * speed * (double)NCELLS,
                            tol * (double)NCELLS);
    free(rho);
    free(u);
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(api_basics_suite)
{
    Suite *s = suite_create("api_basics");
    TCase *tc = acm_tcase("library", 30);
    tcase_add_test(tc, options_init_matches_macro);
    tcase_add_test(tc, versions_agree);
    tcase_add_test(tc, backends_available);
    suite_add_tcase(s, tc);

    tc = acm_tcase("domain", 60);
    tcase_add_test(tc, domain_info_defaults);
    tcase_add_test(tc, field_sizes);
    tcase_add_loop_test(tc, init_fields_read_back, 0, 8);
    tcase_add_loop_test(tc, probe_equals_fields, 0, 2);
    tcase_add_test(tc, populations_round_trip_walls);
    tcase_add_test(tc, populations_round_trip_moving_wall);
    tcase_add_test(tc, populations_round_trip_fp32);
    tcase_add_loop_test(tc, checkpoint_restart_is_deterministic, 0, 5);
    tcase_add_test(tc, checkpoint_restart_follows_original);
    tcase_add_test(tc, force_field_set_get_clear);
    tcase_add_test(tc, params_round_trip);
    tcase_add_test(tc, faces_round_trip);
    tcase_add_test(tc, collision_round_trip);
    tcase_add_loop_test(tc, uniform_flow_stays_uniform, 0, 10);
    suite_add_tcase(s, tc);
    return s;
}
