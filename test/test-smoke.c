/*
 * libacmlbm tests -- tracer particles (acm_smoke): counts with emitters,
 * lifetimes and recycling, exact transport by a uniform flow, leaving the
 * domain, trajectories in a Taylor-Green vortex against the analytic flow,
 * bad input. On the backend under test. SPDX-License-Identifier: Apache-2.0
 */
#include <signal.h>       /* SIGXFSZ */
#include <sys/resource.h> /* setrlimit: a write that fails */
#include <unistd.h>       /* rmdir */

#include "test-solid-common.h" /* acm_test_cube_solid */

static acm_smoke_info info_of(acm_smoke *s)
{
    acm_smoke_info i;
    memset(&i, 0, sizeof i);
    i.version = ACM_SMOKE_INFO_VERSION;
    ck_assert_msg(acm_smoke_get_info(s, &i) == ACM_OK, "%s", acm_smoke_last_error(s));
    return i;
}

static acm_smoke *smoke_of(acm_domain *d, uint64_t capacity)
{
    acm_smoke_options o = ACM_SMOKE_OPTIONS_INIT;
    o.capacity = capacity;
    o.seed = 7;
    acm_smoke *s = NULL;
    ACM_CK_OK(d, acm_smoke_create(&s, d, &o));
    return s;
}

static void add_box(acm_smoke *s, double lo, double hi, double rate, int64_t lifetime)
{
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX;
    for (int a = 0; a < 3; ++a) {
        e.lo[a] = lo;
        e.hi[a] = hi;
    }
    e.rate = rate;
    e.lifetime = lifetime;
    ck_assert_msg(acm_smoke_add_emitter(s, &e) == ACM_OK, "%s", acm_smoke_last_error(s));
}

/* Emissions beyond the capacity within one step are dropped while the step is
 * planned, the rest when they find no free slot: 25 a step into 10 slots for
 * 3 steps is 10 emitted and 65 dropped, on every backend (on a GPU the first
 * kind is counted on the host, the second on the device). */
START_TEST(smoke_drops_are_all_counted)
{
    acm_domain_options o = acm_test_options(8, 8, 8, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&o);
    acm_smoke *s = smoke_of(d, 10);
    add_box(s, 2.0, 5.0, 25.0, 0);
    ACM_CK_OK(d, acm_step(d, 3));
    const acm_smoke_info i = info_of(s);
    ck_assert_uint_eq(i.emitted, 10);
    ck_assert_uint_eq(i.alive, 10);
    ck_assert_uint_eq(i.dropped, 65);
    acm_domain_destroy(d);
}
END_TEST

/* Every particle emitted is alive, expired or gone: with 2.5 a step living 30
 * steps, exactly 75 live from step 30 on; a full smoke drops the rest. */
START_TEST(smoke_counts)
{
    acm_domain_options o = acm_test_options(16, 16, 16, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.05;
    o.initial_velocity[1] = 0.02;
    acm_domain *d = acm_test_domain(&o);
    acm_smoke *s = smoke_of(d, 100), *small = smoke_of(d, 50);
    add_box(s, 2.0, 6.0, 2.5, 30);
    add_box(small, 2.0, 6.0, 2.5, 30);
    for (int step = 1; step <= 60; ++step) {
        ACM_CK_OK(d, acm_step(d, 1));
        const acm_smoke_info i = info_of(s), j = info_of(small);
        ck_assert_uint_eq(i.emitted, (uint64_t)(2.5 * step)); /* 2.5 is exact in binary */
        ck_assert_uint_eq(i.alive + i.expired + i.left, i.emitted);
        ck_assert_uint_eq(i.left, 0); /* all periodic */
        ck_assert_uint_eq(i.dropped, 0);
        ck_assert_uint_eq(i.alive, step < 30 ? i.emitted : 75);
        ck_assert_uint_le(j.alive, 50);
        ck_assert_uint_eq(j.alive + j.expired + j.left, j.emitted);
        ck_assert_uint_eq(j.emitted + j.dropped, (uint64_t)(2.5 * step));
    }
    ck_assert_uint_eq(info_of(small).alive, 50);
    ck_assert_uint_gt(info_of(small).dropped, 0);
    size_t written = 0;
    double *x = acm_test_alloc(3 * 100 * sizeof(double));
    ck_assert_int_eq(acm_smoke_get_particles(s, x, 100, &written), ACM_OK);
    ck_assert_uint_eq(written, 75);
    for (size_t p = 0; p < written; ++p)
        for (int a = 0; a < 3; ++a)
            ck_assert_msg(x[3 * p + a] >= 0.0 && x[3 * p + a] < 16.0, "particle %zu at %g", p,
                          x[3 * p + a]);
    ck_assert_int_eq(acm_smoke_get_particles(s, x, 74, &written), ACM_ERR_BUFFER_SIZE);
    free(x);
    acm_smoke_destroy(small);
    ACM_CK_OK(d, acm_step(d, 2));
    acm_domain_destroy(d); /* destroys s */
}
END_TEST

/* A uniform flow carries a particle by exactly u per step, through the
 * periodic faces. */
START_TEST(smoke_uniform_flow)
{
    acm_domain_options o = acm_test_options(8, 10, 6, 0.1, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    const double u[3] = {0.07, -0.03, 0.011};
    memcpy(o.initial_velocity, u, sizeof u);
    acm_domain *d = acm_test_domain(&o);
    acm_smoke *s = smoke_of(d, 4);
    const double start[3] = {1.25, 8.5, 3.0};
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_POINTS;
    e.points = start;
    e.point_count = 1;
    e.rate = 1.0;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_OK);
    ACM_CK_OK(d, acm_step(d, 1)); /* emitted at the end of step 1, into slot 0 */
    const int steps = 150;         /* later ones fill slots 1-3, then the smoke is full */
    ACM_CK_OK(d, acm_step(d, steps));
    double x[3 * 4];
    size_t n = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s, x, 4, &n), ACM_OK);
    ck_assert_uint_eq(n, 4);
    const int32_t size[3] = {8, 10, 6};
    for (int a = 0; a < 3; ++a) {
        double expect = start[a] + steps * u[a];
        expect -= size[a] * floor(expect / size[a]);
        /* the velocity field is kept in FP32: 0.07 rounds by ~1e-9 */
        ck_assert_msg(fabs(x[a] - expect) < 1e-6, "axis %d: %.12f, expected %.12f", a, x[a], expect);
    }
    acm_domain_destroy(d);
}
END_TEST

/* Through an outlet: particles leave and are recycled; the count balances. */
START_TEST(smoke_leaves_domain)
{
    acm_domain_options o = acm_test_options(12, 6, 6, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.1;
    acm_domain *d = acm_test_domain(&o);
    const double inflow[3] = {0.1, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, inflow));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
    acm_smoke *s = smoke_of(d, 1000);
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SPHERE;
    e.centre[0] = 1.5;
    e.centre[1] = e.centre[2] = 2.5;
    e.radius = 1.0;
    e.rate = 3.0;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_OK);
    ACM_CK_OK(d, acm_step(d, 300));
    const acm_smoke_info i = info_of(s);
    ck_assert_uint_gt(i.left, 0);
    ck_assert_uint_eq(i.expired, 0);
    ck_assert_uint_eq(i.alive + i.left, i.emitted);
    ck_assert_uint_lt(i.alive, 3 * 150); /* 10.5 cells at ~0.1: ~105 steps inside */
    double *x = acm_test_alloc(3 * 1000 * sizeof(double));
    size_t n = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s, x, 1000, &n), ACM_OK);
    for (size_t p = 0; p < n; ++p)
        ck_assert_msg(x[3 * p] >= -0.5 && x[3 * p] < 11.5, "particle %zu at x = %g", p, x[3 * p]);
    free(x);
    acm_domain_destroy(d);
}
END_TEST

/* ---- a Taylor-Green vortex ------------------------------------------------------------ */

/* A decaying Taylor-Green vortex of wavelength n cells (periodic n x n x 1),
 * velocity amplitude TG_U, viscosity and duration scaled with n (diffusive
 * scaling at fixed lattice velocity: the same flow at every n). */
#define TG_U 0.02

typedef struct tg_flow {
    int n;
    double nu, k;
} tg_flow;

/* The analytic velocity at (x, y) and time t (steps). */
static void tg_velocity(const tg_flow *f, double x, double y, double t, double u[2])
{
    const double decay = exp(-2.0 * f->nu * f->k * f->k * t);
    u[0] = TG_U * decay * sin(f->k * x) * cos(f->k * y);
    u[1] = -TG_U * decay * cos(f->k * x) * sin(f->k * y);
}

/* The exact trajectory from (x, y) at t0 to t1, RK4 with 20 substeps a step. */
static void tg_trajectory(const tg_flow *f, double *x, double *y, double t0, double t1)
{
    const int n = (int)(20 * (t1 - t0));
    const double h = (t1 - t0) / n;
    for (int s = 0; s < n; ++s) {
        const double t = t0 + s * h;
        double k1[2], k2[2], k3[2], k4[2];
        tg_velocity(f, *x, *y, t, k1);
        tg_velocity(f, *x + 0.5 * h * k1[0], *y + 0.5 * h * k1[1], t + 0.5 * h, k2);
        tg_velocity(f, *x + 0.5 * h * k2[0], *y + 0.5 * h * k2[1], t + 0.5 * h, k3);
        tg_velocity(f, *x + h * k3[0], *y + h * k3[1], t + h, k4);
        *x += h / 6.0 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]);
        *y += h / 6.0 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]);
    }
}

/* The LBM's vortex (started from the analytic velocity and pressure) and six
 * particles in it for 25 n steps (a quarter turn near the vortex centres);
 * the largest distance from the analytic trajectories, in cells. */
static double tg_error(int n)
{
    const tg_flow f = {n, 0.005 * n / 64.0, 2.0 * M_PI / n};
    acm_domain_options o = acm_test_options(n, n, 1, f.nu, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    acm_domain *d = acm_test_domain(&o);
    double *rho = acm_test_alloc((size_t)n * n * sizeof(double));
    double *u = acm_test_alloc(3 * (size_t)n * n * sizeof(double));
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            const size_t c = (size_t)x + (size_t)n * (size_t)y;
            double v[2];
            tg_velocity(&f, x, y, 0.0, v);
            u[3 * c] = v[0];
            u[3 * c + 1] = v[1];
            u[3 * c + 2] = 0.0;
            rho[c] = 1.0 - 3.0 * TG_U * TG_U / 4.0 * (cos(2 * f.k * x) + cos(2 * f.k * y));
        }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, u, (size_t)n * n));
    free(rho);
    free(u);
    enum { P = 6 };
    double start[3 * P];
    for (int p = 0; p < P; ++p) { /* the same points of the flow at every n */
        start[3 * p] = n * (5.0 + 9.3 * p) / 64.0;
        start[3 * p + 1] = n * (3.0 + 4.1 * p) / 64.0;
        start[3 * p + 2] = 0.0;
    }
    acm_smoke *s = smoke_of(d, P);
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_POINTS;
    e.points = start;
    e.point_count = P;
    e.rate = P;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_OK);
    ACM_CK_OK(d, acm_step(d, 1)); /* all emitted at t = 1; then the smoke is full */
    const int steps = 25 * n;
    ACM_CK_OK(d, acm_step(d, steps));
    double x[3 * P];
    size_t got = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s, x, P, &got), ACM_OK);
    ck_assert_uint_eq(got, P);
    double worst = 0.0;
    for (int p = 0; p < P; ++p) {
        double ex = start[3 * p], ey = start[3 * p + 1];
        tg_trajectory(&f, &ex, &ey, 1.0, 1.0 + steps);
        double dx = x[3 * p] - ex, dy = x[3 * p + 1] - ey;
        dx -= n * round(dx / n);
        dy -= n * round(dy / n);
        worst = fmax(worst, hypot(dx, dy));
    }
    acm_domain_destroy(d);
    return worst;
}

/* Particles follow the analytic trajectories of a Taylor-Green vortex, and
 * the error relative to the flow's scale falls with the resolution. */
START_TEST(smoke_taylor_green)
{
    const double e32 = tg_error(32), e64 = tg_error(64);
    printf("smoke in a Taylor-Green vortex, U = %g, 25 n steps: largest distance from the "
           "analytic trajectory %.2e cells at n = 32, %.2e at n = 64 (%.2e and %.2e of n; "
           "ratio %.2f)\n", TG_U, e32, e64, e32 / 32, e64 / 64, (e32 / 32) / (e64 / 64));
    ck_assert_msg(e64 < 0.1, "a particle is %g cells off its trajectory at n = 64", e64);
    /* second order would give 4; the flow's own compressibility error (of order Ma^2,
     * the same at every n) takes a little off */
    ck_assert_msg((e32 / 32) / (e64 / 64) > 2.8, "the error fell by %.2f only",
                  (e32 / 32) / (e64 / 64));
}
END_TEST

/* The backend under test moves particles as the CPU oracle does: the same
 * emissions, slots and counters, positions within 1e-6 cells after 120 steps
 * of a sheared, decaying flow (FP64 populations; the velocity in FP32 on both).
 * On the CPU backend the two runs are the oracle twice: a check that its
 * OpenMP-parallel moves repeat exactly. */
START_TEST(smoke_backend_equals_cpu)
{
    acm_domain *d[2];
    acm_smoke *s[2];
    for (int b = 0; b < 2; ++b) {
        acm_domain_options o = acm_test_options(24, 20, 16, 0.02, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
        if (b == 1)
            o.backend = ACM_BACKEND_CPU;
        d[b] = acm_test_domain(&o);
        double *u = acm_test_alloc(3 * 24 * 20 * 16 * sizeof(double));
        for (int k = 0; k < 24 * 20 * 16; ++k) {
            const int x = k % 24, y = k / 24 % 20, z = k / 480;
            u[3 * k] = 0.04 * sin(2 * M_PI * y / 20.0);
            u[3 * k + 1] = 0.03 * cos(2 * M_PI * z / 16.0);
            u[3 * k + 2] = 0.02 * sin(2 * M_PI * x / 24.0);
        }
        ACM_CK_OK(d[b], acm_domain_init_fields(d[b], ACM_DTYPE_FLOAT64, NULL, u, 24 * 20 * 16));
        free(u);
        s[b] = smoke_of(d[b], 400);
        acm_emitter e = ACM_EMITTER_INIT;
        e.shape = ACM_EMITTER_SPHERE;
        e.centre[0] = 12;
        e.centre[1] = 10;
        e.centre[2] = 8;
        e.radius = 6;
        e.rate = 4.5;
        e.lifetime = 70;
        ck_assert_int_eq(acm_smoke_add_emitter(s[b], &e), ACM_OK);
        ACM_CK_OK(d[b], acm_step(d[b], 120));
    }
    const acm_smoke_info a = info_of(s[0]), c = info_of(s[1]);
    ck_assert_uint_eq(a.alive, c.alive);
    ck_assert_uint_eq(a.emitted, c.emitted);
    ck_assert_uint_eq(a.expired, c.expired);
    ck_assert_uint_eq(a.left, c.left);
    double *x[2];
    for (int b = 0; b < 2; ++b) {
        x[b] = acm_test_alloc(3 * 400 * sizeof(double));
        size_t n = 0;
        ck_assert_int_eq(acm_smoke_get_particles(s[b], x[b], 400, &n), ACM_OK);
        ck_assert_uint_eq(n, a.alive);
    }
    double worst = 0.0;
    for (size_t k = 0; k < 3 * a.alive; ++k)
        worst = fmax(worst, fabs(x[0][k] - x[1][k]));
    printf("smoke on the %s backend against the CPU: %llu particles, largest difference %.2e cells\n",
           acm_test_backend() == ACM_BACKEND_CUDA ? "CUDA" : "CPU", (unsigned long long)a.alive,
           worst);
    ck_assert_msg(worst < 1e-6, "positions differ by %g cells", worst);
    for (int b = 0; b < 2; ++b) {
        free(x[b]);
        acm_domain_destroy(d[b]);
    }
}
END_TEST

/* Bad arguments: specific statuses and messages, nothing changed. */
START_TEST(smoke_errors)
{
    acm_domain_options o = acm_test_options(8, 8, 8, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&o);
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    acm_smoke *s = NULL;
    ck_assert_int_eq(acm_smoke_create(&s, NULL, &so), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_smoke_create(NULL, d, &so), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_smoke_create(&s, d, NULL), ACM_ERR_NULL_POINTER);
    so.version = 9;
    ACM_CK_FAIL(d, acm_smoke_create(&s, d, &so), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_smoke_options_init(&so, 9), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_smoke_options_init(&so, ACM_SMOKE_OPTIONS_VERSION), ACM_OK);
    so.capacity = 0;
    ACM_CK_FAIL(d, acm_smoke_create(&s, d, &so), ACM_ERR_OUT_OF_RANGE);
    so.capacity = UINT64_C(1) << 31;
    ACM_CK_FAIL(d, acm_smoke_create(&s, d, &so), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_null(s);
    s = smoke_of(d, 10);
    const struct {
        acm_emitter e;
        acm_status st;
    } bad[] = {
        {{ACM_EMITTER_VERSION + 1, ACM_EMITTER_BOX, {0}, {1, 1, 1}, {0}, 0, NULL, 0, 1, 0, NULL, 0.0}, ACM_ERR_BAD_VERSION},
        {{ACM_EMITTER_VERSION, (acm_emitter_shape)9, {0}, {1, 1, 1}, {0}, 0, NULL, 0, 1, 0, NULL, 0.0}, ACM_ERR_BAD_ENUM},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {2, 0, 0}, {1, 1, 1}, {0}, 0, NULL, 0, 1, 0, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {NAN, 0, 0}, {1, 1, 1}, {0}, 0, NULL, 0, 1, 0, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {0}, {1, 1, 1}, {0}, 0, NULL, 0, -1, 0, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {0}, {1, 1, 1}, {0}, 0, NULL, 0, INFINITY, 0, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {0}, {1, 1, 1}, {0}, 0, NULL, 0, 1, -5, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_SPHERE, {0}, {0}, {1, 1, 1}, -1, NULL, 0, 1, 0, NULL, 0.0}, ACM_ERR_OUT_OF_RANGE},
        {{ACM_EMITTER_VERSION, ACM_EMITTER_POINTS, {0}, {0}, {0}, 0, NULL, 3, 1, 0, NULL, 0.0}, ACM_ERR_NULL_POINTER},
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
        ck_assert_msg(acm_smoke_add_emitter(s, &bad[b].e) == bad[b].st, "case %zu: %s", b,
                      acm_smoke_last_error(s));
        ck_assert_msg(acm_smoke_last_error(s)[0] != '\0', "case %zu: no message", b);
    }
    const double pts[3] = {1, 2, INFINITY};
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_POINTS;
    e.points = pts;
    e.point_count = 0;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_ERR_OUT_OF_RANGE);
    e.point_count = 1;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_smoke_add_emitter(s, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_add_emitter(NULL, &e), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(info_of(s).emitters, 0);
    acm_smoke_info i = {0};
    ck_assert_int_eq(acm_smoke_get_info(s, &i), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_smoke_get_info(s, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_get_info(NULL, &i), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_get_particles(s, NULL, 1, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_str_eq(acm_smoke_last_error(NULL), "smoke is NULL");
    acm_smoke_destroy(NULL);
    ACM_CK_OK(d, acm_step(d, 3));
    ck_assert_uint_eq(info_of(s).alive, 0);
    acm_domain_destroy(d);
}
END_TEST

/* ---- export ------------------------------------------------------------------------------ */

/* A whole file in memory (caller frees); *size its bytes. */
static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = acm_test_alloc(*size + 1);
    ck_assert_uint_eq(fread(b, 1, *size, f), *size);
    b[*size] = '\0';
    fclose(f);
    return b;
}

/* The start of the raw appended data (after the '_'), checked to end the file. */
static const char *appended(const char *file, size_t size)
{
    const char *a = strstr(file, "<AppendedData encoding=\"raw\">");
    ck_assert_ptr_nonnull(a);
    a = strchr(a, '_');
    ck_assert_ptr_nonnull(a);
    const char tail[] = "\n  </AppendedData>\n</VTKFile>\n";
    ck_assert_mem_eq(file + size - (sizeof tail - 1), tail, sizeof tail - 1);
    return a + 1;
}

/* The array `name` of a VTK XML file: its components and its raw block. */
static const char *vtk_array(const char *file, const char *data, const char *name, int *comp,
                             uint64_t *bytes)
{
    char key[64];
    snprintf(key, sizeof key, "Name=\"%s\"", name);
    const char *line = strstr(file, key);
    ck_assert_msg(line != NULL, "no array %s", name);
    const char *nc = strstr(line, "NumberOfComponents=\""), *off = strstr(line, "offset=\"");
    const char *end = strchr(line, '\n');
    *comp = nc != NULL && nc < end ? atoi(nc + 20) : 1;
    ck_assert_ptr_nonnull(off);
    const char *block = data + strtoull(off + 8, NULL, 10);
    memcpy(bytes, block, sizeof *bytes);
    return block + sizeof *bytes;
}

/* Fields as VTK image data, read back by this parser: extent, names,
 * components, block sizes and every value as acm_domain_get_field gives it. */
START_TEST(export_vti)
{
    acm_domain_options o = acm_test_options(6, 5, 4, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.03;
    acm_domain *d = acm_test_domain(&o);
    const double wall[3] = {0.02, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, wall));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_step(d, 7));
    char dir[] = "/tmp/acm-export-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fields.vti", dir);
    const acm_field fields[] = {ACM_FIELD_DENSITY, ACM_FIELD_VELOCITY, ACM_FIELD_POPULATIONS};
    ACM_CK_OK(d, acm_domain_export_vti(d, path, fields, 3));
    size_t size = 0;
    char *file = slurp(path, &size);
    ck_assert_ptr_nonnull(strstr(file, "WholeExtent=\"0 5 0 4 0 3\""));
    const char *data = appended(file, size);
    const char *names[] = {"density", "velocity", "populations"};
    const int comps[] = {1, 3, 27};
    for (int k = 0; k < 3; ++k) {
        int comp = 0;
        uint64_t bytes = 0;
        const char *values = vtk_array(file, data, names[k], &comp, &bytes);
        ck_assert_int_eq(comp, comps[k]);
        ck_assert_uint_eq(bytes, 120 * (uint64_t)comp * sizeof(float));
        float *expect = acm_test_alloc((size_t)bytes);
        ACM_CK_OK(d, acm_domain_get_field(d, fields[k], ACM_DTYPE_FLOAT32, expect, (size_t)bytes));
        ck_assert_msg(memcmp(values, expect, (size_t)bytes) == 0, "%s differs", names[k]);
        free(expect);
    }
    free(file);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* Particles as PLY and VTK poly data, read back: counts, positions, ages. */
START_TEST(export_particles)
{
    acm_domain_options o = acm_test_options(10, 10, 10, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[1] = 0.04;
    acm_domain *d = acm_test_domain(&o);
    acm_smoke *s = smoke_of(d, 500);
    add_box(s, 1.0, 8.0, 7.5, 0);
    ACM_CK_OK(d, acm_step(d, 12));
    const uint64_t n = info_of(s).alive;
    ck_assert_uint_eq(n, 90);
    double *x = acm_test_alloc(3 * n * sizeof(double));
    size_t got = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s, x, n, &got), ACM_OK);
    char dir[] = "/tmp/acm-export-XXXXXX", ply[128], vtp[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(ply, sizeof ply, "%s/smoke.ply", dir);
    snprintf(vtp, sizeof vtp, "%s/smoke.vtp", dir);
    ck_assert_msg(acm_smoke_export(s, ply, ACM_PARTICLES_PLY) == ACM_OK, "%s", acm_smoke_last_error(s));
    ck_assert_int_eq(acm_smoke_export(s, vtp, ACM_PARTICLES_VTP), ACM_OK);

    size_t size = 0;
    char *file = slurp(ply, &size);
    const char *end = strstr(file, "end_header\n");
    ck_assert_ptr_nonnull(end);
    ck_assert_msg(strncmp(file, "ply\nformat binary_little_endian 1.0\n", 36) == 0, "%.40s", file);
    ck_assert_ptr_nonnull(strstr(file, "element vertex 90\n"));
    const char *rows = end + 11;
    ck_assert_uint_eq(size - (size_t)(rows - file), n * 4 * sizeof(float));
    for (uint64_t p = 0; p < n; ++p) {
        float r[4];
        memcpy(r, rows + 16 * p, sizeof r);
        for (int a = 0; a < 3; ++a)
            ck_assert(r[a] == (float)x[3 * p + a]);
        ck_assert(r[3] >= 0.0f && r[3] <= 11.0f && r[3] == floorf(r[3]));
    }
    free(file);

    file = slurp(vtp, &size);
    ck_assert_ptr_nonnull(strstr(file, "NumberOfPoints=\"90\""));
    const char *data = appended(file, size);
    int comp = 0;
    uint64_t bytes = 0;
    const char *pts = strstr(file, "<Points>");
    ck_assert_ptr_nonnull(pts);
    const char *off = strstr(pts, "offset=\"");
    const char *block = data + strtoull(off + 8, NULL, 10);
    memcpy(&bytes, block, sizeof bytes);
    ck_assert_uint_eq(bytes, n * 3 * sizeof(float));
    for (uint64_t p = 0; p < n; ++p)
        for (int a = 0; a < 3; ++a) {
            float v;
            memcpy(&v, block + 8 + 4 * (3 * p + (uint64_t)a), sizeof v);
            ck_assert(v == (float)x[3 * p + a]);
        }
    const char *age = vtk_array(file, data, "age", &comp, &bytes);
    ck_assert_int_eq(comp, 1);
    ck_assert_uint_eq(bytes, n * sizeof(float));
    int young = 0; /* 7.5 a step: 7, 8, 7, 8, ...; the 12th step emitted 8, 0 steps old */
    for (uint64_t p = 0; p < n; ++p) {
        float a;
        memcpy(&a, age + 4 * p, sizeof a);
        ck_assert_msg(a >= 0.0f && a <= 11.0f && a == floorf(a), "age %g", (double)a);
        young += a == 0.0f;
    }
    ck_assert_int_eq(young, 8);
    const char *conn = vtk_array(file, data, "offsets", &comp, &bytes);
    int64_t last;
    memcpy(&last, conn + bytes - sizeof last, sizeof last);
    ck_assert_int_eq(last, (int64_t)n);
    free(file);
    free(x);
    remove(ply);
    remove(vtp);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* Bad arguments, a missing directory and a write that fails half way (the
 * file size limit, as a full disk would): specific statuses, no temporary
 * left, an earlier file of the same name untouched. */
START_TEST(export_errors)
{
    acm_domain_options o = acm_test_options(16, 16, 16, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&o);
    acm_smoke *s = smoke_of(d, 10);
    const acm_field rho = ACM_FIELD_DENSITY, twice[2] = {ACM_FIELD_VELOCITY, ACM_FIELD_VELOCITY};
    const acm_field unknown = (acm_field)77;
    ck_assert_int_eq(acm_domain_export_vti(NULL, "x.vti", &rho, 1), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, NULL, &rho, 1), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, "x.vti", NULL, 1), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, "x.vti", &rho, 0), ACM_ERR_INVALID_ARG);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, "x.vti", twice, 2), ACM_ERR_INVALID_ARG);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, "x.vti", &unknown, 1), ACM_ERR_BAD_ENUM);
    ACM_CK_FAIL(d, acm_domain_export_vti(d, "/nonexistent-dir/x.vti", &rho, 1), ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "/nonexistent-dir/x.vti"));
    ck_assert_int_eq(acm_smoke_export(NULL, "x.ply", ACM_PARTICLES_PLY), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_export(s, NULL, ACM_PARTICLES_PLY), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_export(s, "x.ply", (acm_particle_format)5), ACM_ERR_BAD_ENUM);
    ck_assert_int_eq(acm_smoke_export(s, "/nonexistent-dir/x.ply", ACM_PARTICLES_PLY), ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "/nonexistent-dir"));

    char dir[] = "/tmp/acm-export-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fields.vti", dir);
    ACM_CK_OK(d, acm_domain_export_vti(d, path, &rho, 1)); /* 16 KB of density */
    size_t before_size = 0;
    char *before = slurp(path, &before_size);
    struct rlimit keep, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    small = keep;
    small.rlim_cur = 64 * 1024; /* the populations need 442 KB */
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    const acm_field pops = ACM_FIELD_POPULATIONS;
    const acm_status st = acm_domain_export_vti(d, path, &pops, 1);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, old);
    ck_assert_msg(st == ACM_ERR_IO, "%s: %s", acm_status_string(st), acm_domain_last_error(d));
    ck_assert_int_eq(acm_test_temporaries(dir), 0);
    size_t after_size = 0;
    char *after = slurp(path, &after_size);
    ck_assert_uint_eq(after_size, before_size);
    ck_assert_mem_eq(after, before, before_size);
    free(before);
    free(after);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* ---- density ------------------------------------------------------------------------------ */

static double total(const float *v, size_t n)
{
    double t = 0.0;
    for (size_t k = 0; k < n; ++k)
        t += v[k];
    return t;
}

/* The density grid holds every particle once (periodic and open axes, every
 * subdivision), a particle at a cell centre lands on its voxel(s) exactly,
 * and bad sizes are refused. */
START_TEST(smoke_density)
{
    acm_domain_options o = acm_test_options(8, 6, 5, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.05;
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
    acm_smoke *s = smoke_of(d, 2000), *one = smoke_of(d, 1);
    add_box(s, -0.4, 7.4, 40.0, 0); /* reaches past the walls' outermost centres too */
    const double centre[3] = {3.0, 4.0, 2.0};
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_POINTS;
    e.points = centre;
    e.point_count = 1;
    e.rate = 1.0;
    ck_assert_int_eq(acm_smoke_add_emitter(one, &e), ACM_OK);
    ACM_CK_OK(d, acm_step(d, 1)); /* `one` holds its particle at the centre, unmoved */
    float single[8 * 6 * 5];
    ck_assert_int_eq(acm_smoke_density(one, 1, single, 240), ACM_OK);
    for (size_t k = 0; k < 240; ++k)
        ck_assert(single[k] == (k == 3 + 8 * (4 + 6 * 2) ? 1.0f : 0.0f));
    ACM_CK_OK(d, acm_step(d, 20));
    const uint64_t alive = info_of(s).alive;
    ck_assert_uint_gt(alive, 500);
    for (int32_t sub = 1; sub <= 3; ++sub) {
        const size_t n = (size_t)(8 * sub) * (6 * sub) * (5 * sub);
        float *v = acm_test_alloc(n * sizeof(float));
        ck_assert_int_eq(acm_smoke_density(s, sub, v, n), ACM_OK);
        const double t = total(v, n) / (sub * sub * sub);
        ck_assert_msg(fabs(t - (double)alive) < 1e-5 * (double)alive,
                      "subdivision %d: the grid holds %.6f particles, %llu are alive", sub, t,
                      (unsigned long long)alive);
        ck_assert_int_eq(acm_smoke_density(s, sub, v, n - 1), ACM_ERR_BUFFER_SIZE);
        free(v);
    }
    ck_assert_int_eq(acm_smoke_density(s, 0, single, 240), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_smoke_density(s, ACM_SMOKE_SUBDIVISIONS_MAX + 1, single, 240),
                     ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_smoke_density(s, 1, NULL, 240), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_density(NULL, 1, single, 240), ACM_ERR_NULL_POINTER);

    /* as VTK image data: the grid's geometry and values */
    char dir[] = "/tmp/acm-export-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/density.vti", dir);
    ck_assert_msg(acm_smoke_export_density(s, path, 2) == ACM_OK, "%s", acm_smoke_last_error(s));
    size_t size = 0;
    char *file = slurp(path, &size);
    ck_assert_ptr_nonnull(strstr(file, "WholeExtent=\"0 15 0 11 0 9\""));
    ck_assert_ptr_nonnull(strstr(file, "Origin=\"-0.25 -0.25 -0.25\" Spacing=\"0.5 0.5 0.5\""));
    int comp = 0;
    uint64_t bytes = 0;
    const char *values = vtk_array(file, appended(file, size), "density", &comp, &bytes);
    ck_assert_int_eq(comp, 1);
    ck_assert_uint_eq(bytes, 16 * 12 * 10 * sizeof(float));
    float *v = acm_test_alloc((size_t)bytes);
    ck_assert_int_eq(acm_smoke_density(s, 2, v, 1920), ACM_OK);
    for (size_t k = 0; k < 1920; ++k) { /* a device adds with atomics, in any order */
        float fk;
        memcpy(&fk, values + 4 * k, sizeof fk);
        ck_assert_msg(fabsf(fk - v[k]) <= 1e-5f * (1.0f + fabsf(v[k])), "voxel %zu: %g != %g", k,
                      (double)fk, (double)v[k]);
    }
    ck_assert_int_eq(acm_smoke_export_density(s, path, 0), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_smoke_export_density(s, NULL, 1), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_smoke_export_density(s, "/nonexistent-dir/d.vti", 1), ACM_ERR_IO);
    free(v);
    free(file);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* ---- solids: emitters on their surface, particles that enter them ------------------------- */

/* How far each live particle lies outside the cube (centre c, half side h):
 * the smallest and the largest over the particles. */
static void cube_distances(acm_smoke *s, const double c[3], double h, double range[2])
{
    const uint64_t n = info_of(s).alive;
    double *x = acm_test_alloc(3 * (n ? n : 1) * sizeof(double));
    size_t got = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s, x, n, &got), ACM_OK);
    range[0] = INFINITY;
    range[1] = -INFINITY;
    for (size_t k = 0; k < got; ++k) {
        double out = -INFINITY;
        for (int a = 0; a < 3; ++a)
            out = fmax(out, fabs(x[3 * k + (size_t)a] - c[a]) - h);
        range[0] = fmin(range[0], out);
        range[1] = fmax(range[1], out);
    }
    free(x);
}

/* A solid emitter puts its particles `offset` outside the surface and follows
 * the solid; particles emitted inside a solid are recycled at the next step
 * (counted as absorbed); an emitter stops with its solid; bad emitters. */
START_TEST(smoke_solids)
{
    acm_domain_options o = acm_test_options(32, 32, 32, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    acm_domain *d = acm_test_domain(&o);
    double c[3] = {16.0, 16.0, 16.0};
    acm_solid *cube = acm_test_cube_solid(d, 8.0, c, ACM_MOTION_PRESCRIBED);
    acm_smoke *shed = smoke_of(d, 1000), *trap = smoke_of(d, 1000);
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SOLID;
    e.solid = cube;
    e.offset = 1.5;
    e.rate = 40.0;
    ck_assert_msg(acm_smoke_add_emitter(shed, &e) == ACM_OK, "%s", acm_smoke_last_error(shed));
    add_box(trap, 13.0, 19.0, 10.0, 0); /* inside the cube */
    ACM_CK_OK(d, acm_step(d, 1));
    double r[2];
    cube_distances(shed, c, 4.0, r); /* the fluid is at rest: the particles stay put */
    ck_assert_msg(fabs(r[0] - 1.5) < 1e-6 && fabs(r[1] - 1.5) < 1e-6,
                  "particles %.9f to %.9f cells outside the cube, not 1.5", r[0], r[1]);
    ACM_CK_OK(d, acm_step(d, 4));
    acm_smoke_info t = info_of(trap);
    ck_assert_uint_eq(t.emitted, 50);
    ck_assert_uint_eq(t.absorbed, 40); /* all but the last step's ten */
    ck_assert_uint_eq(t.alive, 10);
    ck_assert_uint_eq(info_of(shed).absorbed, 0);

    /* the info of version 1 leaves `absorbed` alone */
    acm_smoke_info v1;
    memset(&v1, 0, sizeof v1);
    v1.version = 1;
    v1.absorbed = 12345;
    ck_assert_int_eq(acm_smoke_get_info(trap, &v1), ACM_OK);
    ck_assert_uint_eq(v1.alive, 10);
    ck_assert_uint_eq(v1.absorbed, 12345);

    /* the emitter follows the solid */
    acm_smoke_destroy(shed);
    shed = smoke_of(d, 1000);
    ck_assert_int_eq(acm_smoke_add_emitter(shed, &e), ACM_OK);
    acm_solid_state st;
    memset(&st, 0, sizeof st);
    st.version = ACM_SOLID_STATE_VERSION;
    ck_assert_int_eq(acm_solid_get_state(cube, &st), ACM_OK);
    st.position[0] += 3.0;
    c[0] += 3.0;
    ck_assert_msg(acm_solid_set_state(cube, &st) == ACM_OK, "%s", acm_solid_last_error(cube));
    ACM_CK_OK(d, acm_step(d, 1));
    cube_distances(shed, c, 4.0, r);
    ck_assert_msg(fabs(r[0] - 1.5) < 1e-6 && fabs(r[1] - 1.5) < 1e-6,
                  "after the move: %.9f to %.9f cells outside the cube", r[0], r[1]);

    /* bad solid emitters */
    acm_domain *other = acm_test_domain(&o);
    acm_solid *foreign = acm_test_cube_solid(other, 4.0, c, ACM_MOTION_STATIC);
    acm_emitter bad = e;
    bad.solid = NULL;
    ck_assert_int_eq(acm_smoke_add_emitter(shed, &bad), ACM_ERR_NULL_POINTER);
    bad.solid = foreign;
    ck_assert_int_eq(acm_smoke_add_emitter(shed, &bad), ACM_ERR_INVALID_ARG);
    const double offsets[] = {-0.1, 4.5, NAN};
    for (size_t k = 0; k < 3; ++k) {
        bad = e;
        bad.offset = offsets[k];
        ck_assert_int_eq(acm_smoke_add_emitter(shed, &bad), ACM_ERR_OUT_OF_RANGE);
    }
    bad = e;
    bad.version = 1; /* solid emitters came with version 2 */
    ck_assert_int_eq(acm_smoke_add_emitter(shed, &bad), ACM_ERR_BAD_VERSION);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(shed), "version 2"));
    acm_domain_destroy(other);

    /* a version 1 box emitter is still taken */
    acm_emitter old = ACM_EMITTER_INIT;
    old.version = 1;
    old.hi[0] = old.hi[1] = old.hi[2] = 1.0;
    old.solid = (acm_solid *)&old; /* beyond version 1: never read */
    old.offset = -7.0;
    ck_assert_int_eq(acm_smoke_add_emitter(shed, &old), ACM_OK);

    /* the solid goes: its emitter stops, the smoke goes on */
    acm_solid_destroy(cube);
    const uint64_t before = info_of(shed).emitted;
    ACM_CK_OK(d, acm_step(d, 2));
    ck_assert_uint_eq(info_of(shed).emitted, before); /* old has rate 0 */
    acm_domain_destroy(d);
}
END_TEST

/* acm_domain_sample_velocity is the trilinear interpolation of the velocity
 * field between cell centres (periodic axes wrapped, walls clamped); bad
 * input is refused. */
START_TEST(sample_velocity)
{
    enum { NX = 12, NY = 10, NZ = 8, N = NX * NY * NZ };
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
    double *u = acm_test_alloc(3 * N * sizeof(double));
    for (int k = 0; k < N; ++k) {
        const int x = k % NX, y = k / NX % NY, z = k / (NX * NY);
        u[3 * k] = 0.04 * sin(2 * M_PI * y / NY) + 0.001 * z;
        u[3 * k + 1] = 0.03 * cos(2 * M_PI * x / NX);
        u[3 * k + 2] = 0.01 * sin(M_PI * z / NZ) * cos(2 * M_PI * x / NX);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, N));
    ACM_CK_OK(d, acm_step(d, 3));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u, 3 * N * sizeof(double)));
    const double pts[] = {3.25, 4.5, 2.75,  0.0, 0.0, 0.0,   11.6, 9.7, 3.1, /* wraps in x, y */
                          -0.4, -2.2, 5.5,  25.1, 3.3, -1.0, 5.5, 5.5, 7.9}; /* clamps in z */
    const size_t np = sizeof pts / sizeof pts[0] / 3;
    double got[sizeof pts / sizeof pts[0]];
    ACM_CK_OK(d, acm_domain_sample_velocity(d, pts, np, got));
    double worst = 0.0;
    for (size_t p = 0; p < np; ++p) {
        const double x = pts[3 * p] - NX * floor(pts[3 * p] / NX),
                     y = pts[3 * p + 1] - NY * floor(pts[3 * p + 1] / NY),
                     z = fmin(fmax(pts[3 * p + 2], 0.0), NZ - 1.0);
        const int i = (int)x, j = (int)y, k = (int)fmin(z, NZ - 2.0);
        const double fx = x - i, fy = y - j, fz = z - k;
        for (int a = 0; a < 3; ++a) {
            double want = 0.0;
            for (int q = 0; q < 8; ++q) {
                const int ci = (i + (q & 1)) % NX, cj = (j + ((q >> 1) & 1)) % NY, ck = k + (q >> 2);
                const double w = ((q & 1) ? fx : 1 - fx) * ((q & 2) ? fy : 1 - fy) * ((q & 4) ? fz : 1 - fz);
                want += w * u[3 * (ci + NX * (cj + NY * ck)) + a];
            }
            worst = fmax(worst, fabs(got[3 * p + (size_t)a] - want));
        }
    }
    ck_assert_msg(worst < 1e-14, "sampled velocity off the interpolated field by %g", worst);
    ck_assert_int_eq(acm_domain_sample_velocity(NULL, pts, 1, got), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_sample_velocity(d, NULL, 1, got), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_sample_velocity(d, pts, 1, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_sample_velocity(d, pts, 0, got), ACM_ERR_OUT_OF_RANGE);
    const double nan_pt[3] = {1.0, NAN, 2.0};
    ACM_CK_FAIL(d, acm_domain_sample_velocity(d, nan_pt, 1, got), ACM_ERR_OUT_OF_RANGE);
    free(u);
    acm_domain_destroy(d);
}
END_TEST

/* acm_domain_sample_velocity_begin/_end: the velocities of the state at the
 * begin (the steps after it do not change them; they do change a read made
 * after them), bitwise those of acm_domain_sample_velocity; bad calls are
 * refused without losing the read under way; a domain destroyed with one. */
START_TEST(sample_velocity_begun_and_ended)
{
    acm_domain_options o = acm_test_options(12, 10, 8, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    acm_domain *d = acm_test_domain(&o);
    const double g[3] = {2e-5, 1e-5, 0.0};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    ACM_CK_OK(d, acm_step(d, 2));
    const double pts[] = {3.25, 4.5, 2.75, 0.0, 0.0, 0.0, 11.6, 9.7, 3.1, -0.4, -2.2, 5.5};
    enum { NP = 4 };
    double want[3 * NP], got[3 * NP], later[3 * NP];
    ACM_CK_OK(d, acm_domain_sample_velocity(d, pts, NP, want));
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NP));
    ACM_CK_OK(d, acm_step(d, 3));
    /* refused, the read kept */
    ACM_CK_FAIL(d, acm_domain_sample_velocity_begin(d, pts, NP), ACM_ERR_BAD_STATE);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_end(d, got, NP - 1), ACM_ERR_OUT_OF_RANGE);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_end(d, NULL, NP), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_domain_sample_velocity_end(NULL, got, NP), ACM_ERR_NULL_POINTER);
    ACM_CK_OK(d, acm_domain_sample_velocity_end(d, got, NP));
    ck_assert_mem_eq(got, want, sizeof want);
    ACM_CK_OK(d, acm_domain_sample_velocity(d, pts, NP, later));
    double apart = 0.0;
    for (int k = 0; k < 3 * NP; ++k)
        apart = fmax(apart, fabs(later[k] - want[k]));
    ck_assert_msg(apart > 1e-6, "3 steps moved the wind by %g only", apart);
    /* ended: no second end; bad points refused, nothing begun */
    ACM_CK_FAIL(d, acm_domain_sample_velocity_end(d, got, NP), ACM_ERR_BAD_STATE);
    ck_assert_int_eq(acm_domain_sample_velocity_begin(NULL, pts, NP), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_begin(d, NULL, NP), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_begin(d, pts, 0), ACM_ERR_OUT_OF_RANGE);
    const double nan_pt[3] = {1.0, NAN, 2.0};
    ACM_CK_FAIL(d, acm_domain_sample_velocity_begin(d, nan_pt, 1), ACM_ERR_OUT_OF_RANGE);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_end(d, got, NP), ACM_ERR_BAD_STATE);
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NP));
    acm_domain_destroy(d); /* with a read under way: nothing leaks (ASan) */
}
END_TEST

TEST_SUITE(smoke_particles)
{
    Suite *s = suite_create("smoke_particles");
    TCase *tc = tcase_create("particles");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, smoke_counts);
    tcase_add_test(tc, smoke_drops_are_all_counted);
    tcase_add_test(tc, smoke_uniform_flow);
    tcase_add_test(tc, smoke_leaves_domain);
    tcase_add_test(tc, smoke_taylor_green);
    tcase_add_test(tc, smoke_backend_equals_cpu);
    tcase_add_test(tc, smoke_errors);
    tcase_add_test(tc, smoke_solids);
    tcase_add_test(tc, sample_velocity);
    tcase_add_test(tc, sample_velocity_begun_and_ended);
    suite_add_tcase(s, tc);
    TCase *ex = tcase_create("export");
    tcase_add_test(ex, export_vti);
    tcase_add_test(ex, export_particles);
    tcase_add_test(ex, export_errors);
    tcase_add_test(ex, smoke_density);
    suite_add_tcase(s, ex);
    return s;
}
