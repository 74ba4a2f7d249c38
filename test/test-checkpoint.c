/*
 * libacmlbm tests -- checkpoint and restart (acm_checkpoint.h, docs/checkpoint.md):
 * a restart continues bit for bit, smoke particles included; CPU and GPU
 * checkpoints cross over (ACM_TEST_BACKEND=cuda); every kind of damaged file is
 * refused with its status; a failed save leaves the earlier file. Public API only.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <signal.h>       /* SIGXFSZ */
#include <stdint.h>
#include <sys/resource.h> /* setrlimit */
#include <unistd.h>       /* rmdir */

#include "test-common.h"
#include "test-solid-common.h" /* acm_test_layout */

/* ---- helpers ---------------------------------------------------------------------------- */

/* CRC-32C as docs/checkpoint.md defines it (bitwise: the test's own). */
static uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; ++k)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = acm_test_alloc((size_t)n + 1);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Fields of a checkpoint image, in the format's byte order (docs/checkpoint.md). */
static uint32_t rd32(const unsigned char *b, size_t at)
{
    uint32_t v;
    memcpy(&v, b + at, 4);
    return v;
}
static void wr32(unsigned char *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }
static uint64_t rd64(const unsigned char *b, size_t at)
{
    uint64_t v;
    memcpy(&v, b + at, 8);
    return v;
}
static void wr64(unsigned char *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }

/* Table entry (its byte offset) of a section by type and index; 0: none. */
static size_t entry_at(const unsigned char *b, uint32_t type, uint32_t index)
{
    const uint32_t n = rd32(b, 20);
    for (uint32_t i = 0; i < n; ++i)
        if (rd32(b, 40 + 32 * i) == type && rd32(b, 40 + 32 * i + 4) == index)
            return 40 + 32 * (size_t)i;
    return 0;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

typedef struct tmpdir {
    char dir[64], path[128];
} tmpdir;

static void tmpdir_make(tmpdir *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/acm-ckpt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/run.ckpt", t->dir);
}

static void tmpdir_remove(tmpdir *t)
{
    remove(t->path);
    ck_assert_int_eq(acm_test_temporaries(t->dir), 0);
    ck_assert_int_eq(rmdir(t->dir), 0);
}

static double *populations(acm_domain *d)
{
    size_t n = 0;
    ACM_CK_OK(d, acm_domain_field_size(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &n));
    double *f = acm_test_alloc(n);
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, n));
    return f;
}

static size_t population_bytes(acm_domain *d)
{
    size_t n = 0;
    ACM_CK_OK(d, acm_domain_field_size(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, &n));
    return n;
}

/* Points on a sphere (a Fibonacci lattice) with equal areas. */
static void sphere_points(int n, double R, double *pts, double *areas)
{
    const double golden = M_PI * (3.0 - sqrt(5.0));
    for (int i = 0; i < n; ++i) {
        const double z = 1.0 - 2.0 * (i + 0.5) / n, r = sqrt(1.0 - z * z), a = golden * i;
        pts[3 * i] = R * r * cos(a);
        pts[3 * i + 1] = R * r * sin(a);
        pts[3 * i + 2] = R * z;
        areas[i] = 4.0 * M_PI * R * R / n;
    }
}

enum scene_kind { SCENE_PLAIN, SCENE_CHANNEL, SCENE_LI2020, SCENE_SOLIDS, SCENE_SMOKE, SCENE_COUNT };
static const char *const scene_names[] = {"plain", "channel", "li2020", "solids", "smoke"};

/* Two smokes in the solids scene, with every emitter shape and every fate of
 * a particle: smoke 0 a box over the free cube (whose closed mesh absorbs),
 * with a lifetime, a ball, and points, one beyond a wall (it leaves); smoke 1
 * too small for its emitter on the moving sphere's surface (emissions
 * dropped), and an emitter whose solid was destroyed. */
static void add_smokes(acm_domain *d)
{
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
    acm_solid *solids[2];
    size_t n = 0;
    ACM_CK_OK(d, acm_domain_get_solids(d, solids, 2, &n));
    ck_assert_uint_eq(n, 2);
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = 200;
    so.seed = 11;
    acm_smoke *a = NULL, *b = NULL;
    ACM_CK_OK(d, acm_smoke_create(&a, d, &so));
    acm_emitter e = ACM_EMITTER_INIT;
    const double lo[3] = {7.5, 3.5, 2.5}, hi[3] = {12.5, 8.5, 7.5};
    memcpy(e.lo, lo, sizeof lo);
    memcpy(e.hi, hi, sizeof hi);
    e.rate = 4.5;
    e.lifetime = 5;
    ck_assert_int_eq(acm_smoke_add_emitter(a, &e), ACM_OK);
    acm_emitter ball = ACM_EMITTER_INIT;
    ball.shape = ACM_EMITTER_SPHERE;
    ball.centre[0] = ball.centre[1] = ball.centre[2] = 3.0;
    ball.radius = 1.5;
    ball.rate = 0.7;
    ck_assert_int_eq(acm_smoke_add_emitter(a, &ball), ACM_OK);
    static const double pts[9] = {1.0, 9.0, 9.7, 2.0, 2.0, 5.0, 12.5, 10.5, 0.5};
    acm_emitter p = ACM_EMITTER_INIT;
    p.shape = ACM_EMITTER_POINTS;
    p.points = pts;
    p.point_count = 3;
    p.rate = 1.5;
    ck_assert_int_eq(acm_smoke_add_emitter(a, &p), ACM_OK);
    so.capacity = 12;
    so.seed = 0;
    ACM_CK_OK(d, acm_smoke_create(&b, d, &so));
    acm_emitter surface = ACM_EMITTER_INIT;
    surface.shape = ACM_EMITTER_SOLID;
    surface.solid = solids[0];
    surface.offset = 0.8;
    surface.rate = 4.0;
    surface.lifetime = 4;
    ck_assert_int_eq(acm_smoke_add_emitter(b, &surface), ACM_OK);
    const double dot[3] = {1.0, 0.0, 0.0}, area = 1.0;
    acm_solid_options o = ACM_SOLID_OPTIONS_INIT;
    o.sample_count = 1;
    o.sample_points = dot;
    o.sample_areas = &area;
    o.position[0] = o.position[1] = o.position[2] = 2.0;
    acm_solid *gone = NULL;
    ACM_CK_OK(d, acm_solid_create(&gone, d, &o));
    surface.solid = gone;
    ck_assert_int_eq(acm_smoke_add_emitter(b, &surface), ACM_OK);
    acm_solid_destroy(gone);
}

/* The scenes: every kind of state a checkpoint holds. */
static acm_domain *scene(int kind, acm_backend backend)
{
    const int nx = 14, ny = 12, nz = 10;
    const size_t cells = (size_t)nx * ny * nz;
    acm_collision model = kind == SCENE_LI2020 ? ACM_COLLISION_ACM_LI2020 : ACM_COLLISION_DEFAULT;
    acm_precision prec = kind == SCENE_CHANNEL ? ACM_PRECISION_FP64 : ACM_PRECISION_FP32;
    acm_domain_options o = acm_test_options(nx, ny, nz, 0.05, model, prec);
    o.backend = backend;
    acm_layout *layout = NULL;
    if (kind == SCENE_LI2020) { /* in place: the saved state is in its own form */
        ck_assert_int_eq(acm_layout_create(&layout), ACM_OK);
        ck_assert_int_eq(acm_layout_set(layout, ACM_LAYOUT_STREAMING, acm_test_in_place()),
                         ACM_OK);
        o.layout = layout;
    }
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(layout);
    /* a lumpy start: density and velocity vary from cell to cell */
    double *rho = acm_test_alloc(cells * sizeof(double));
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    for (size_t k = 0; k < cells; ++k) {
        rho[k] = 1.0 + 0.01 * sin(0.7 * (double)k);
        u[3 * k] = 0.02 + 0.005 * cos(0.3 * (double)k);
        u[3 * k + 1] = 0.004 * sin(0.11 * (double)k);
        u[3 * k + 2] = kind == SCENE_CHANNEL ? 0.0 : 0.003 * cos(0.05 * (double)k);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, u, cells));
    free(rho);
    free(u);
    if (kind == SCENE_CHANNEL) {
        const double in[3] = {0.03, 0.0, 0.0}, lid[3] = {0.01, 0.0, 0.0};
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, in));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, lid));
        const double g[3] = {1e-6, 0.0, -2e-6};
        ACM_CK_OK(d, acm_domain_set_body_force(d, g));
        double *F = acm_test_alloc(3 * cells * sizeof(double));
        for (size_t k = 0; k < cells; ++k) {
            F[3 * k] = 1e-6 * (double)(k % 7);
            F[3 * k + 1] = -2e-6 * (double)(k % 5);
        }
        ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, F,
                                          3 * cells * sizeof(double)));
        free(F);
        ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, 3));
    }
    if (kind == SCENE_LI2020) { /* tau* not positive in part of the cells: per-cell state */
        acm_collision_options co = ACM_COLLISION_OPTIONS_INIT;
        ACM_CK_OK(d, acm_domain_get_collision(d, &co));
        co.li2020_theta[0] = 1.0;
        co.li2020_theta[1] = co.li2020_theta[2] = 0.0;
        co.li2020_theta[3] = -0.9999;
        co.safety_net = 0;
        ACM_CK_OK(d, acm_domain_set_collision(d, &co));
    }
    if (kind == SCENE_SOLIDS || kind == SCENE_SMOKE) {
        ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, 2));
        /* gather spreading: on a GPU the default scatter adds with atomics, in an
         * order that differs from run to run, so no two runs (restarted or not)
         * agree bit for bit there (docs/checkpoint.md) */
        acm_layout *gather = NULL;
        ck_assert_int_eq(acm_layout_create(&gather), ACM_OK);
        ck_assert_int_eq(acm_layout_set(gather, ACM_LAYOUT_IB_SPREAD, ACM_IB_SPREAD_GATHER), ACM_OK);
        ACM_CK_OK(d, acm_domain_set_layout(d, gather));
        acm_layout_destroy(gather);
        enum { N = 240 };
        double pts[3 * N], areas[N];
        sphere_points(N, 2.2, pts, areas);
        acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
        so.sample_count = N;
        so.sample_points = pts;
        so.sample_areas = areas;
        so.position[0] = 4.2;
        so.position[1] = 5.7;
        so.position[2] = 4.9;
        so.motion = ACM_MOTION_PRESCRIBED;
        so.velocity[0] = 0.03;
        so.angular_velocity[1] = 0.02;
        acm_solid *s = NULL;
        ACM_CK_OK(d, acm_solid_create(&s, d, &so));
        /* a free, heavy cube of a closed mesh (normals and surface saved too) */
        static const double v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                        0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
        static const uint32_t t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                           2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
        acm_mesh *m = NULL;
        ck_assert_int_eq(acm_mesh_create(&m, v, 8, t, 12, NULL), ACM_OK);
        acm_solid_options co = ACM_SOLID_OPTIONS_INIT;
        co.mesh = m;
        co.scale = 3.0;
        co.samples_per_cell = 4.0;
        co.motion = ACM_MOTION_FREE;
        co.density = 2.0;
        co.gravity[1] = -1e-4;
        co.position[0] = 10.0;
        co.position[1] = 6.0;
        co.position[2] = 5.0;
        co.angular_velocity[2] = 0.005;
        ACM_CK_OK(d, acm_solid_create(&s, d, &co));
        acm_mesh_destroy(m);
    }
    if (kind == SCENE_SMOKE)
        add_smokes(d);
    return d;
}

/* The smokes of two domains: counters, and the particles bit for bit (`cross`:
 * to 1e-9, each backend's arithmetic). */
static void expect_same_smokes(acm_domain *a, acm_domain *b, const char *what, bool cross)
{
    acm_smoke *la[4], *lb[4];
    size_t na = 0, nb = 0;
    ACM_CK_OK(a, acm_domain_get_smokes(a, la, 4, &na));
    ACM_CK_OK(b, acm_domain_get_smokes(b, lb, 4, &nb));
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; ++i) {
        acm_smoke_info ia = {.version = ACM_SMOKE_INFO_VERSION};
        acm_smoke_info ib = {.version = ACM_SMOKE_INFO_VERSION};
        ck_assert_int_eq(acm_smoke_get_info(la[i], &ia), ACM_OK);
        ck_assert_int_eq(acm_smoke_get_info(lb[i], &ib), ACM_OK);
        ck_assert_msg(ia.capacity == ib.capacity && ia.alive == ib.alive &&
                          ia.emitted == ib.emitted && ia.left == ib.left &&
                          ia.expired == ib.expired && ia.dropped == ib.dropped &&
                          ia.emitters == ib.emitters && ia.absorbed == ib.absorbed,
                      "%s: smoke %zu counters: alive %llu/%llu emitted %llu/%llu left %llu/%llu "
                      "expired %llu/%llu dropped %llu/%llu absorbed %llu/%llu",
                      what, i, (unsigned long long)ia.alive, (unsigned long long)ib.alive,
                      (unsigned long long)ia.emitted, (unsigned long long)ib.emitted,
                      (unsigned long long)ia.left, (unsigned long long)ib.left,
                      (unsigned long long)ia.expired, (unsigned long long)ib.expired,
                      (unsigned long long)ia.dropped, (unsigned long long)ib.dropped,
                      (unsigned long long)ia.absorbed, (unsigned long long)ib.absorbed);
        const size_t n = (size_t)ia.alive;
        double *xa = acm_test_alloc(3 * n * sizeof(double) + 1);
        double *xb = acm_test_alloc(3 * n * sizeof(double) + 1);
        size_t wa = 0, wb = 0;
        ck_assert_int_eq(acm_smoke_get_particles(la[i], xa, n, &wa), ACM_OK);
        ck_assert_int_eq(acm_smoke_get_particles(lb[i], xb, n, &wb), ACM_OK);
        ck_assert_uint_eq(wa, n);
        ck_assert_uint_eq(wb, n);
        for (size_t k = 0; k < 3 * n; ++k)
            ck_assert_msg(cross ? fabs(xa[k] - xb[k]) < 1e-9 : memcmp(&xa[k], &xb[k], 8) == 0,
                          "%s: smoke %zu particle coordinate %zu: %.17g vs %.17g", what, i, k,
                          xa[k], xb[k]);
        free(xa);
        free(xb);
    }
}

/* Populations, counters and the solids of two domains bit for bit (`cross`:
 * on two backends, the solids' world positions to 1e-9). */
static void expect_same(acm_domain *a, acm_domain *b, const char *what, bool cross)
{
    const size_t n = population_bytes(a);
    ck_assert_uint_eq(population_bytes(b), n);
    double *fa = populations(a), *fb = populations(b);
    /* across backends, f_i is streamed by each backend's arithmetic on the way
     * out (moving walls, inlets): the stored values are exact, f_i to FP32's ulp */
    const double tol = cross ? 1e-7 : 0.0;
    size_t first = n;
    for (size_t i = 0; i < n / sizeof(double) && first == n; ++i)
        if (cross ? !(fabs(fa[i] - fb[i]) <= tol) : memcmp(&fa[i], &fb[i], sizeof(double)) != 0)
            first = i;
    ck_assert_msg(first == n, "%s: population %zu differs: %.17g vs %.17g", what, first,
                  first < n ? fa[first] : 0.0, first < n ? fb[first] : 0.0);
    free(fa);
    free(fb);
    acm_domain_info ia = {.version = ACM_DOMAIN_INFO_VERSION};
    acm_domain_info ib = {.version = ACM_DOMAIN_INFO_VERSION};
    ACM_CK_OK(a, acm_domain_get_info(a, &ia));
    ACM_CK_OK(b, acm_domain_get_info(b, &ib));
    ck_assert_int_eq(ia.step, ib.step);
    ck_assert_int_eq(ia.precision, ib.precision);
    acm_domain_stats sa = acm_test_stats(a), sb = acm_test_stats(b);
    ck_assert_int_eq(sa.fallback_cells_total, sb.fallback_cells_total);
    acm_solid *la[4], *lb[4];
    size_t na = 0, nb = 0;
    ACM_CK_OK(a, acm_domain_get_solids(a, la, 4, &na));
    ACM_CK_OK(b, acm_domain_get_solids(b, lb, 4, &nb));
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; ++i) {
        acm_solid_info si = {.version = ACM_SOLID_INFO_VERSION};
        ck_assert_int_eq(acm_solid_get_info(la[i], &si), ACM_OK);
        const size_t ns = (size_t)si.sample_count;
        double *xa = acm_test_alloc(3 * ns * sizeof(double));
        double *xb = acm_test_alloc(3 * ns * sizeof(double));
        ck_assert_int_eq(acm_solid_get_samples(la[i], xa, ns), ACM_OK);
        ck_assert_int_eq(acm_solid_get_samples(lb[i], xb, ns), ACM_OK);
        /* across backends the world positions are each backend's arithmetic */
        for (size_t k = 0; k < 3 * ns; ++k)
            ck_assert_msg(cross ? fabs(xa[k] - xb[k]) < 1e-9 : memcmp(&xa[k], &xb[k], 8) == 0,
                          "%s: solid %zu sample coordinate %zu: %.17g vs %.17g", what, i, k,
                          xa[k], xb[k]);
        free(xa);
        free(xb);
        double Fa[3], Ta[3], Fb[3], Tb[3];
        ck_assert_int_eq(acm_solid_get_force(la[i], Fa, Ta), ACM_OK);
        ck_assert_int_eq(acm_solid_get_force(lb[i], Fb, Tb), ACM_OK);
        ck_assert_msg(memcmp(Fa, Fb, sizeof Fa) == 0 && memcmp(Ta, Tb, sizeof Ta) == 0,
                      "%s: solid %zu force (%.17g %.17g %.17g) vs (%.17g %.17g %.17g)", what, i,
                      Fa[0], Fa[1], Fa[2], Fb[0], Fb[1], Fb[2]);
        acm_solid_state xa_s = {.version = ACM_SOLID_STATE_VERSION};
        acm_solid_state xb_s = {.version = ACM_SOLID_STATE_VERSION};
        ck_assert_int_eq(acm_solid_get_state(la[i], &xa_s), ACM_OK);
        ck_assert_int_eq(acm_solid_get_state(lb[i], &xb_s), ACM_OK);
        const bool same_state =
            memcmp(xa_s.position, xb_s.position, sizeof xa_s.position) == 0 &&
            memcmp(xa_s.orientation, xb_s.orientation, sizeof xa_s.orientation) == 0 &&
            memcmp(xa_s.velocity, xb_s.velocity, sizeof xa_s.velocity) == 0 &&
            memcmp(xa_s.angular_velocity, xb_s.angular_velocity, sizeof xa_s.angular_velocity) == 0;
        ck_assert_msg(same_state, "%s: solid %zu state", what, i);
    }
    expect_same_smokes(a, b, what, cross);
}

/* ---- restart is bitwise ------------------------------------------------------------------- */

/* Every fate of a particle came to pass in the smoke scene, so that its
 * restart covers every counter. */
static void expect_every_fate(acm_domain *d)
{
    acm_smoke *s[2];
    size_t n = 0;
    ACM_CK_OK(d, acm_domain_get_smokes(d, s, 2, &n));
    ck_assert_uint_eq(n, 2);
    acm_smoke_info a = {.version = ACM_SMOKE_INFO_VERSION};
    acm_smoke_info b = {.version = ACM_SMOKE_INFO_VERSION};
    ck_assert_int_eq(acm_smoke_get_info(s[0], &a), ACM_OK);
    ck_assert_int_eq(acm_smoke_get_info(s[1], &b), ACM_OK);
    ck_assert_msg(a.alive > 0 && a.left > 0 && a.expired > 0 && a.absorbed > 0,
                  "smoke 0: alive %llu left %llu expired %llu absorbed %llu",
                  (unsigned long long)a.alive, (unsigned long long)a.left,
                  (unsigned long long)a.expired, (unsigned long long)a.absorbed);
    ck_assert_msg(b.alive > 0 && b.dropped > 0 && b.emitters == 2,
                  "smoke 1: alive %llu dropped %llu emitters %d", (unsigned long long)b.alive,
                  (unsigned long long)b.dropped, (int)b.emitters);
}

/* The smoke sections of what two domains save, byte for byte: the particles'
 * slots, ages and lifetimes and the emitters' progress, which no public call
 * shows. */
static void expect_same_smoke_sections(acm_domain *a, acm_domain *b, const tmpdir *t)
{
    char pa[160], pb[160];
    snprintf(pa, sizeof pa, "%s/a.ckpt", t->dir);
    snprintf(pb, sizeof pb, "%s/b.ckpt", t->dir);
    ACM_CK_OK(a, acm_domain_save(a, pa));
    ACM_CK_OK(b, acm_domain_save(b, pb));
    size_t na = 0, nb = 0;
    unsigned char *fa = slurp(pa, &na), *fb = slurp(pb, &nb);
    uint32_t i = 0;
    for (size_t ea, eb; (ea = entry_at(fa, 9, i)) != 0; ++i) {
        eb = entry_at(fb, 9, i);
        ck_assert_uint_ne(eb, 0);
        const uint64_t size = rd64(fa, ea + 16);
        ck_assert_uint_eq(rd64(fb, eb + 16), size);
        ck_assert_msg(memcmp(fa + rd64(fa, ea + 8), fb + rd64(fb, eb + 8), (size_t)size) == 0,
                      "smoke section %u differs", i);
    }
    ck_assert_uint_eq(i, 2);
    ck_assert_uint_eq(entry_at(fb, 9, i), 0);
    free(fa);
    free(fb);
    remove(pa);
    remove(pb);
}

/* N steps, save, load, M steps == N + M steps, for every scene, on the
 * backend under test; a checkpoint reloaded twice gives the same again. */
START_TEST(restart_bitwise)
{
    const int kind = _i;
    const acm_backend be = acm_test_backend();
    tmpdir t;
    tmpdir_make(&t);
    acm_domain *d = scene(kind, be);
    ACM_CK_OK(d, acm_step(d, 7));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    acm_domain *r = acm_test_load(t.path, ACM_BACKEND_AUTO);
    acm_domain_info info = {.version = ACM_DOMAIN_INFO_VERSION};
    ACM_CK_OK(r, acm_domain_get_info(r, &info));
    ck_assert_int_eq(info.backend, be);
    expect_same(d, r, scene_names[kind], false);
    ACM_CK_OK(d, acm_step(d, 9));
    ACM_CK_OK(r, acm_step(r, 9));
    expect_same(d, r, scene_names[kind], false);
    /* the reloaded domain saves the same state again: a second generation */
    ACM_CK_OK(r, acm_domain_save(r, t.path));
    acm_domain *r2 = acm_test_load(t.path, ACM_BACKEND_AUTO);
    ACM_CK_OK(d, acm_step(d, 4));
    ACM_CK_OK(r2, acm_step(r2, 4));
    expect_same(d, r2, scene_names[kind], false);
    if (kind == SCENE_SMOKE) {
        expect_every_fate(d);
        expect_same_smoke_sections(d, r2, &t);
    }
    acm_domain_destroy(r2);
    acm_domain_destroy(r);
    acm_domain_destroy(d);
    tmpdir_remove(&t);
}
END_TEST

/* The caller's layout replaces the checkpoint's: the state arrives the same
 * (a re-layout through a file), and the run goes on as in its own layout. */
START_TEST(restart_other_layout)
{
    tmpdir t;
    tmpdir_make(&t);
    acm_domain *d = scene(SCENE_SOLIDS, acm_test_backend());
    ACM_CK_OK(d, acm_step(d, 4));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    acm_layout *layout = NULL;
    ck_assert_int_eq(acm_layout_create(&layout), ACM_OK);
    ck_assert_int_eq(acm_layout_from_string(layout, "acm-layout 1 csoa_group=1 streaming=in_place"),
                     ACM_OK);
    char err[512] = "";
    acm_load_options lo = ACM_LOAD_OPTIONS_INIT;
    lo.layout = layout;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    acm_domain *r = NULL;
    ck_assert_msg(acm_domain_load(&r, t.path, &lo) == ACM_OK, "%s", err);
    acm_layout_destroy(layout);
    acm_layout *got = NULL;
    ck_assert_int_eq(acm_layout_create(&got), ACM_OK);
    ACM_CK_OK(r, acm_domain_get_layout(r, got));
    int64_t v = 0;
    ck_assert_int_eq(acm_layout_get(got, ACM_LAYOUT_STREAMING, &v), ACM_OK);
    ck_assert_int_eq(v, ACM_STREAMING_IN_PLACE);
    acm_layout_destroy(got);
    expect_same(d, r, "other layout", false);
    ACM_CK_OK(d, acm_step(d, 3));
    ACM_CK_OK(r, acm_step(r, 3));
    const size_t n = population_bytes(d) / sizeof(double);
    double *fa = populations(d), *fb = populations(r), worst = 0.0;
    for (size_t i = 0; i < n; ++i)
        worst = fmax(worst, fabs(fa[i] - fb[i]));
    ck_assert_msg(worst < 1e-6, "populations differ by %g after 3 steps", worst);
    free(fa);
    free(fb);
    acm_domain_destroy(r);
    acm_domain_destroy(d);
    tmpdir_remove(&t);
}
END_TEST

/* A checkpoint crosses backends: CPU -> GPU and GPU -> CPU. The populations
 * arrive exactly; the steps after follow each backend's arithmetic (close). */
START_TEST(restart_cross_backend)
{
    const int kind = _i;
    if (acm_test_backend() != ACM_BACKEND_CUDA)
        return; /* needs ACM_TEST_BACKEND=cuda */
    const acm_backend from[2] = {ACM_BACKEND_CPU, ACM_BACKEND_CUDA};
    for (int dir = 0; dir < 2; ++dir) {
        const acm_backend src = from[dir], dst = from[1 - dir];
        tmpdir t;
        tmpdir_make(&t);
        acm_domain *d = scene(kind, src);
        ACM_CK_OK(d, acm_step(d, 5));
        ACM_CK_OK(d, acm_domain_save(d, t.path));
        acm_domain *r = acm_test_load(t.path, dst);
        acm_domain_info info = {.version = ACM_DOMAIN_INFO_VERSION};
        ACM_CK_OK(r, acm_domain_get_info(r, &info));
        ck_assert_int_eq(info.backend, dst);
        /* straight after the load: exact where no boundary term is streamed, and
         * on population storage (moment storage rebuilds f_i from the stored
         * moments in each backend's arithmetic) */
        expect_same(d, r, scene_names[kind],
                    (kind != SCENE_PLAIN && kind != SCENE_LI2020) || acm_test_moments());
        ACM_CK_OK(d, acm_step(d, 6));
        ACM_CK_OK(r, acm_step(r, 6));
        const size_t n = population_bytes(d) / sizeof(double);
        double *fa = populations(d), *fb = populations(r), worst = 0.0;
        for (size_t i = 0; i < n; ++i)
            worst = fmax(worst, fabs(fa[i] - fb[i]));
        ck_assert_msg(worst < 1e-5, "%s %s -> %s: populations differ by %g after 6 steps",
                      scene_names[kind], src == ACM_BACKEND_CPU ? "cpu" : "cuda",
                      dst == ACM_BACKEND_CPU ? "cpu" : "cuda", worst);
        free(fa);
        free(fb);
        acm_domain_destroy(r);
        acm_domain_destroy(d);
        tmpdir_remove(&t);
    }
}
END_TEST

/* ---- damaged files ------------------------------------------------------------------------ */

/* Fix the table's CRC after an edit of the header or the table (the format's
 * layout: docs/checkpoint.md). */
static void reseal(unsigned char *b)
{
    const uint32_t n = rd32(b, 20);
    uint32_t crc = crc32c(0, b, 36);
    crc = crc32c(crc, b + 40, (size_t)n * 32);
    wr32(b, 36, crc);
}

/* Table entry of a section type: its byte offset in the file. */
static size_t entry_of(const unsigned char *b, uint32_t type)
{
    const uint32_t n = rd32(b, 20);
    for (uint32_t i = 0; i < n; ++i)
        if (rd32(b, 40 + 32 * i) == type)
            return 40 + 32 * (size_t)i;
    ck_abort_msg("no section of type %u", type);
    return 0;
}

/* Load a damaged image: the status, no domain, and a message naming the file
 * and (when given) a section. */
static void expect_refused(const char *path, const unsigned char *b, size_t n, acm_status want,
                           const char *section, const char *what)
{
    spit(path, b, n);
    char err[512] = "";
    acm_load_options lo = ACM_LOAD_OPTIONS_INIT;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    acm_domain *d = (acm_domain *)(uintptr_t)1; /* untouched on failure */
    const acm_status st = acm_domain_load(&d, path, &lo);
    ck_assert_msg(st == want, "%s: %s (%s), expected %s", what, acm_status_string(st), err,
                  acm_status_string(want));
    ck_assert_ptr_eq(d, (acm_domain *)(uintptr_t)1);
    ck_assert_msg(strstr(err, path) != NULL, "%s: message without the file: %s", what, err);
    if (section != NULL)
        ck_assert_msg(strstr(err, section) != NULL, "%s: message without '%s': %s", what,
                      section, err);
}

START_TEST(corrupted_files)
{
    tmpdir t;
    tmpdir_make(&t);
    acm_domain *d = scene(SCENE_SMOKE, acm_test_backend());
    ACM_CK_OK(d, acm_step(d, 2));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    acm_domain_destroy(d);
    size_t n = 0;
    unsigned char *good = slurp(t.path, &n), *b = acm_test_alloc(n);
    char bad[160];
    snprintf(bad, sizeof bad, "%s/bad.ckpt", t.dir);
    ck_assert_uint_eq(rd64(good, 24), n);

    acm_domain *x = NULL;
    char err[512] = "";
    acm_load_options lo = ACM_LOAD_OPTIONS_INIT;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    ck_assert_int_eq(acm_domain_load(&x, "/nonexistent-dir/x.ckpt", &lo), ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/x.ckpt"));
    ck_assert_ptr_null(x);

    expect_refused(bad, good, 0, ACM_ERR_BAD_FORMAT, NULL, "empty");
    expect_refused(bad, good, 20, ACM_ERR_BAD_FORMAT, "truncated", "20 bytes");
    expect_refused(bad, good, n - 1, ACM_ERR_BAD_FORMAT, "truncated", "one byte short");
    expect_refused(bad, good, n / 2, ACM_ERR_BAD_FORMAT, "truncated", "half");

    memcpy(b, good, n);
    b[0] = 'X';
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "magic", "magic");
    memcpy(b, good, n);
    wr32(b, 8, 2);
    expect_refused(bad, b, n, ACM_ERR_BAD_VERSION, "version", "format version 2");
    memcpy(b, good, n);
    wr32(b, 12, 0x04030201u);
    expect_refused(bad, b, n, ACM_ERR_UNSUPPORTED, "byte order", "byte order");
    memcpy(b, good, n);
    b[41] ^= 1; /* the first entry's type: the table's checksum */
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "section table", "table bit flip");

    /* a bit flipped in a section's data: that section's checksum */
    const struct { uint32_t type; const char *name; } sections[] = {
        {1, "settings"}, {2, "counters"}, {3, "populations"}, {8, "solid 0"}, {9, "smoke 0"}};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; ++i) {
        memcpy(b, good, n);
        const size_t e = entry_of(b, sections[i].type);
        const uint64_t off = rd64(b, e + 8), size = rd64(b, e + 16);
        b[off + size / 2] ^= 0x10;
        expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, sections[i].name, sections[i].name);
    }
    /* the second solid's section: its name */
    {
        memcpy(b, good, n);
        const uint32_t ns = rd32(b, 20);
        size_t e = 0;
        for (uint32_t i = 0; i < ns; ++i)
            if (rd32(b, 40 + 32 * i) == 8 && rd32(b, 40 + 32 * i + 4) == 1)
                e = 40 + 32 * (size_t)i;
        ck_assert_uint_ne(e, 0);
        b[rd64(b, e + 8) + 3] ^= 0x01;
        expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "solid 1", "solid 1");
    }
    /* an unknown section type (table resealed: only the type is wrong) */
    memcpy(b, good, n);
    wr32(b, entry_of(b, 3), 99);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "unknown section", "unknown type");
    /* a section given twice */
    memcpy(b, good, n);
    wr32(b, entry_of(b, 3), 2);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "twice", "repeated");
    /* an absent section: populations turned into a solid index past the count */
    memcpy(b, good, n);
    wr32(b, entry_of(b, 3), 8);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "populations", "missing populations");
    /* a section outside the file */
    memcpy(b, good, n);
    {
        const size_t e = entry_of(b, 3);
        const uint64_t big = (uint64_t)n;
        memcpy(b + e + 16, &big, 8);
    }
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "populations", "section past the end");
    /* a huge sample count in a solid (resealed and re-checksummed: only the
     * sizes tell) */
    memcpy(b, good, n);
    {
        const size_t e = entry_of(b, 8);
        const uint64_t off = rd64(b, e + 8), size = rd64(b, e + 16);
        const uint64_t huge = UINT64_C(1) << 60;
        memcpy(b + off, &huge, 8);
        wr32(b, e + 24, crc32c(0, b + off, (size_t)size));
    }
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "solid 0", "huge sample count");
    /* a grid that does not match the populations' size */
    memcpy(b, good, n);
    {
        const size_t e = entry_of(b, 1);
        const uint64_t off = rd64(b, e + 8), size = rd64(b, e + 16);
        wr32(b, (size_t)off, 15); /* nx */
        wr32(b, e + 24, crc32c(0, b + off, (size_t)size));
    }
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "populations", "grid size");

    /* every byte of the file is under a checksum: no single flip loads (each
     * byte of the header, the table and the small sections, then a spread) */
    spit(bad, good, n);
    FILE *f = fopen(bad, "r+b");
    ck_assert_ptr_nonnull(f);
    const size_t dense = 40 + 32 * (size_t)rd32(good, 20) + 1024;
    for (size_t at = 0; at < n; at += at < dense ? 1 : n / 97) {
        for (int pass = 0; pass < 2; ++pass) { /* flip, then flip back */
            ck_assert_int_eq(fseek(f, (long)at, SEEK_SET), 0);
            const int c = good[at] ^ (pass == 0 ? 0x40 : 0);
            ck_assert_int_eq(fputc(c, f), c);
            ck_assert_int_eq(fflush(f), 0);
            if (pass == 1)
                break;
            acm_domain *y = NULL;
            const acm_status st = acm_domain_load(&y, bad, NULL);
            ck_assert_msg(st != ACM_OK, "a flip at byte %zu of %zu loaded", at, n);
            ck_assert_ptr_null(y);
        }
    }
    fclose(f);

    /* the intact file still loads */
    acm_domain *ok = acm_test_load(t.path, ACM_BACKEND_AUTO);
    acm_domain_destroy(ok);
    free(good);
    free(b);
    remove(bad);
    tmpdir_remove(&t);
}
END_TEST

/* After an edit inside a section: its checksum and the table's made right
 * again, so that only the edit tells. */
static void reseal_section(unsigned char *b, size_t e)
{
    wr32(b, e + 24, crc32c(0, b + rd64(b, e + 8), (size_t)rd64(b, e + 16)));
    reseal(b);
}

/* Offsets in smoke section i (docs/checkpoint.md): the section, emitter k's
 * record, the slot map (past the emitters and their points). */
static size_t smoke_at(const unsigned char *b, uint32_t i)
{
    const size_t e = entry_at(b, 9, i);
    ck_assert_uint_ne(e, 0);
    return (size_t)rd64(b, e + 8);
}
static size_t emitter_at(const unsigned char *b, uint32_t i, uint32_t k)
{
    size_t at = smoke_at(b, i) + 64;
    for (uint32_t j = 0; j < k; ++j)
        at += 144 + 24 * (size_t)rd64(b, at + 136);
    return at;
}
static size_t slot_map_at(const unsigned char *b, uint32_t i)
{
    return emitter_at(b, i, rd32(b, smoke_at(b, i) + 56));
}

/* Damaged smoke sections, each checksummed anew: refused, with the section's name. */
START_TEST(corrupted_smoke)
{
    tmpdir t;
    tmpdir_make(&t);
    acm_domain *d = scene(SCENE_SMOKE, acm_test_backend());
    ACM_CK_OK(d, acm_step(d, 3));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    acm_domain_destroy(d);
    size_t n = 0;
    unsigned char *good = slurp(t.path, &n), *b = acm_test_alloc(n);
    char bad[160];
    snprintf(bad, sizeof bad, "%s/bad.ckpt", t.dir);
    const size_t s0 = smoke_at(good, 0), e0 = entry_at(good, 9, 0), e1 = entry_at(good, 9, 1);
    ck_assert_uint_eq(rd64(good, s0), 200); /* capacity: the layout is the documented one */
    ck_assert_uint_eq(rd32(good, s0 + 56), 3);
    ck_assert_uint_eq(rd32(good, emitter_at(good, 1, 0)), 4); /* ACM_EMITTER_SOLID */
    const size_t map0 = slot_map_at(good, 0), alive0 = (size_t)(rd64(good, s0 + 16) -
        rd64(good, s0 + 24) - rd64(good, s0 + 32) - rd64(good, s0 + 40));
    ck_assert_uint_gt(alive0, 4);
    ck_assert_uint_eq(rd64(good, e0 + 16), map0 + 4 * 7 + 32 * alive0 - s0);

    /* a section shorter than its content (the file as long: the next bytes unread) */
    memcpy(b, good, n);
    wr64(b, e0 + 16, rd64(b, e0 + 16) - 4);
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "smoke 0", "section cut short");
    memcpy(b, good, n);
    wr64(b, e1 + 16, 40);
    reseal_section(b, e1);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "smoke 1", "shorter than the head");
    /* counts: no room, more alive than the capacity, more gone than emitted, a
     * capacity whose slots the file does not hold */
    const struct { size_t at; uint64_t value; const char *what; } counts[] = {
        {0, 0, "capacity 0"},
        {0, UINT64_C(1) << 40, "capacity 2^40"},
        {0, (UINT64_C(1) << 31) - 1, "capacity without its slot map"},
        {0, 4, "more alive than the capacity"},
        {32, UINT64_MAX, "the sums overflow"},
        {24, 1000000, "more left than emitted"},
        {16, UINT64_C(1) << 62, "a billion billion alive"},
        {16, rd64(good, s0 + 16) + 1, "one more alive than the slots hold"},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
        memcpy(b, good, n);
        wr64(b, s0 + counts[i].at, counts[i].value);
        reseal_section(b, e0);
        expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "smoke 0", counts[i].what);
    }
    /* a slot map that disagrees with the counters */
    memcpy(b, good, n);
    size_t bit = 0;
    while (!(b[map0 + bit / 8] >> (bit % 8) & 1))
        ++bit;
    b[map0 + bit / 8] ^= (unsigned char)(1u << (bit % 8));
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "slots hold", "slot map");
    /* a particle: not finite, far off, older than its lifetime, a negative age */
    const size_t x0 = map0 + 4 * 7, age0 = x0 + 24 * alive0, life0 = age0 + 4 * alive0;
    memcpy(b, good, n);
    wr64(b, x0 + 8, UINT64_C(0x7ff8000000000000)); /* NaN */
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "slot", "position NaN");
    memcpy(b, good, n);
    {
        const double far = 1e300;
        memcpy(b + x0, &far, 8);
    }
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "slot", "position far off");
    memcpy(b, good, n);
    wr32(b, life0, 3);
    wr32(b, age0, 3);
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "slot", "age past the lifetime");
    memcpy(b, good, n);
    wr32(b, age0, UINT32_MAX); /* -1 */
    reseal_section(b, e0);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "slot", "negative age");
    /* emitters: a solid number out of range, a solid for a box, a kind unknown,
     * a solid emitter without its solid that still emits, a points emitter's
     * next point past its points, a fraction owed of 1 or more, too many points */
    const size_t box = emitter_at(good, 0, 0), pts = emitter_at(good, 0, 2);
    const size_t surface = emitter_at(good, 1, 0), orphan = emitter_at(good, 1, 1);
    const struct { size_t at; int bytes; uint64_t value; const char *what; } emitters[] = {
        {surface + 4, 4, 2, "solid 2"},
        {surface + 4, 4, (uint32_t)-2, "solid -2"},
        {box + 4, 4, 0, "solid 0"},
        {box, 4, 7, "shape 7"},
        {box, 4, 0, "shape 0"},
        {orphan + 96, 8, UINT64_C(0x3ff0000000000000), "rate 1"}, /* 1.0 */
        {pts + 120, 8, 3, "next point 3 of 3"},
        {box + 112, 8, UINT64_C(0x3ff0000000000000), "carry 1"},
        {pts + 136, 8, 1000, "1000 points"},
        {box + 136, 8, 1, "a point for a box"},
        {box + 40, 8, UINT64_C(0x7ff0000000000000), "box hi +inf"},
    };
    for (size_t i = 0; i < sizeof emitters / sizeof emitters[0]; ++i) {
        memcpy(b, good, n);
        if (emitters[i].bytes == 4)
            wr32(b, emitters[i].at, (uint32_t)emitters[i].value);
        else
            wr64(b, emitters[i].at, emitters[i].value);
        const size_t e = emitters[i].at < rd64(b, e1 + 8) ? e0 : e1;
        reseal_section(b, e);
        expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, e == e0 ? "smoke 0" : "smoke 1",
                       emitters[i].what);
    }
    /* smoke numbers: twice, and past the count */
    memcpy(b, good, n);
    wr32(b, e1 + 4, 0);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "twice", "smoke 0 twice");
    memcpy(b, good, n);
    wr32(b, e1 + 4, 2);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "smoke 2", "smoke 2 of 2");

    /* the intact file still loads, its smokes whole */
    acm_domain *ok = acm_test_load(t.path, ACM_BACKEND_AUTO);
    size_t count = 0;
    ACM_CK_OK(ok, acm_domain_get_smokes(ok, NULL, 0, &count));
    ck_assert_uint_eq(count, 2);
    acm_domain_destroy(ok);
    free(good);
    free(b);
    remove(bad);
    tmpdir_remove(&t);
}
END_TEST

/* ---- a failed save keeps the last good checkpoint ----------------------------------------- */

START_TEST(save_errors)
{
    tmpdir t;
    tmpdir_make(&t);
    acm_domain *d = scene(SCENE_PLAIN, acm_test_backend());
    ck_assert_int_eq(acm_domain_save(NULL, t.path), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_save(d, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_save(d, "/nonexistent-dir/run.ckpt"), ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "/nonexistent-dir/run.ckpt"));

    ACM_CK_OK(d, acm_domain_save(d, t.path));
    size_t before_size = 0;
    unsigned char *before = slurp(t.path, &before_size);
    ck_assert_uint_gt(before_size, 14 * 12 * 10 * 27 * 8);
    ACM_CK_OK(d, acm_step(d, 3));
    struct rlimit keep, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    small = keep;
    small.rlim_cur = 64 * 1024; /* the populations need 363 KB */
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    const acm_status st = acm_domain_save(d, t.path);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, old);
    ck_assert_msg(st == ACM_ERR_IO, "%s: %s", acm_status_string(st), acm_domain_last_error(d));
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), t.path));
    ck_assert_int_eq(acm_test_temporaries(t.dir), 0);
    size_t after_size = 0;
    unsigned char *after = slurp(t.path, &after_size);
    ck_assert_uint_eq(after_size, before_size);
    ck_assert_mem_eq(after, before, before_size);
    free(before);
    free(after);
    /* the domain goes on, and saves again */
    ACM_CK_OK(d, acm_step(d, 1));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    acm_domain_destroy(d);
    tmpdir_remove(&t);
}
END_TEST

/* Moment storage writes a moments section (10 doubles a cell: what a GPU
 * loads back bit for bit; the CPU loads the populations), checked as
 * hostile: sized by the grid, finite, and only with moment storage. */
START_TEST(moments_section_checked)
{
    tmpdir t;
    tmpdir_make(&t);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    acm_domain_options o = acm_test_options(12, 10, 8, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const double lid[3] = {0.05, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_step(d, 5));
    ACM_CK_OK(d, acm_domain_save(d, t.path));
    size_t n = 0;
    unsigned char *good = slurp(t.path, &n), *b = acm_test_alloc(n);
    char bad[160];
    snprintf(bad, sizeof bad, "%s/bad.ckpt", t.dir);
    const size_t e = entry_of(good, 12);
    const uint64_t off = rd64(good, e + 8), size = rd64(good, e + 16);
    ck_assert_uint_eq(size, 12 * 10 * 8 * 10 * sizeof(double));
    /* the moments of the saved populations: densities the lid has moved */
    double most = 0.0;
    for (size_t k = 0; k < 12 * 10 * 8; ++k) {
        double m0 = 0.0;
        memcpy(&m0, good + off + k * 10 * sizeof(double), sizeof m0);
        most = fmax(most, fabs(m0));
    }
    ck_assert_msg(most > 1e-6 && most < 0.01, "largest |rho - 1| %g", most);
    /* a value not finite */
    memcpy(b, good, n);
    const double nan = NAN;
    memcpy(b + off + 8 * 17, &nan, sizeof nan);
    reseal_section(b, e);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "moments", "NaN moment");
    /* a section shorter than the grid needs (its own checksum and the table's right) */
    memcpy(b, good, n);
    wr64(b, e + 16, size - 8);
    reseal_section(b, e);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "moments", "short moments section");
    /* a second one (the populations' entry relabelled) */
    memcpy(b, good, n);
    wr32(b, entry_of(b, 3), 12);
    reseal(b);
    expect_refused(bad, b, n, ACM_ERR_BAD_FORMAT, "twice", "moments twice");
    /* the file as written loads and steps on as the domain saved */
    acm_domain *back = acm_test_load(t.path, ACM_BACKEND_AUTO);
    ACM_CK_OK(d, acm_step(d, 3));
    ACM_CK_OK(back, acm_step(back, 3));
    double *pa = populations(d), *pb = populations(back);
    for (size_t i = 0; i < 27 * 12 * 10 * 8; ++i)
        ck_assert_msg(memcmp(&pa[i], &pb[i], sizeof(double)) == 0, "population %zu: %.17g vs %.17g",
                      i, pa[i], pb[i]);
    free(pa);
    free(pb);
    acm_domain_destroy(back);
    acm_domain_destroy(d);
    free(good);
    free(b);
    remove(bad);
    tmpdir_remove(&t);
}
END_TEST

/* ---- arguments ------------------------------------------------------------------------------ */

START_TEST(load_arguments)
{
    acm_load_options lo;
    ck_assert_int_eq(acm_load_options_init(NULL, 1), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_load_options_init(&lo, 0), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION + 1), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION), ACM_OK);
    const acm_load_options init = ACM_LOAD_OPTIONS_INIT;
    ck_assert_int_eq(lo.version, init.version);
    ck_assert_int_eq(lo.backend, ACM_BACKEND_AUTO);
    ck_assert_int_eq(lo.device, -1);
    ck_assert_ptr_null(lo.layout);
    ck_assert_ptr_null(lo.error_buffer);
    ck_assert_uint_eq(lo.error_buffer_size, 0);

    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_load(NULL, "x", NULL), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_domain_load(&d, NULL, NULL), ACM_ERR_NULL_POINTER);
    lo.version = 99;
    ck_assert_int_eq(acm_domain_load(&d, "x", &lo), ACM_ERR_BAD_VERSION);
    lo.version = ACM_LOAD_OPTIONS_VERSION;
    lo.backend = (acm_backend)7;
    ck_assert_int_eq(acm_domain_load(&d, "x", &lo), ACM_ERR_BAD_ENUM);
    ck_assert_ptr_null(d);

    acm_domain *p = scene(SCENE_SMOKE, acm_test_backend());
    size_t n = 99;
    acm_solid *s[1] = {NULL};
    ck_assert_int_eq(acm_domain_get_solids(NULL, s, 1, &n), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(p, acm_domain_get_solids(p, s, 1, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_OK(p, acm_domain_get_solids(p, NULL, 0, &n));
    ck_assert_uint_eq(n, 2);
    ACM_CK_OK(p, acm_domain_get_solids(p, s, 1, &n));
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_nonnull(s[0]);

    acm_smoke *k[3] = {NULL, NULL, NULL};
    n = 99;
    ck_assert_int_eq(acm_domain_get_smokes(NULL, k, 1, &n), ACM_ERR_NULL_POINTER);
    ck_assert_uint_eq(n, 99);
    ACM_CK_FAIL(p, acm_domain_get_smokes(p, k, 1, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(p, acm_domain_get_smokes(p, NULL, 1, &n), ACM_ERR_NULL_POINTER);
    ck_assert_uint_eq(n, 99);
    ck_assert_ptr_null(k[0]);
    ACM_CK_OK(p, acm_domain_get_smokes(p, NULL, 0, &n));
    ck_assert_uint_eq(n, 2);
    ACM_CK_OK(p, acm_domain_get_smokes(p, k, 1, &n)); /* fewer than there are */
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_nonnull(k[0]);
    ck_assert_ptr_null(k[1]);
    ACM_CK_OK(p, acm_domain_get_smokes(p, k, 3, &n)); /* more room than smokes */
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_nonnull(k[1]);
    ck_assert_ptr_ne(k[0], k[1]);
    ck_assert_ptr_null(k[2]);
    acm_smoke_destroy(k[0]); /* the list follows */
    acm_smoke *left = NULL;
    ACM_CK_OK(p, acm_domain_get_smokes(p, &left, 1, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(left, k[1]);
    acm_domain_destroy(p);
}
END_TEST

/* The checksum of docs/checkpoint.md is CRC-32C: its check value. */
START_TEST(crc_check_value)
{
    ck_assert_uint_eq(crc32c(0, (const unsigned char *)"123456789", 9), 0xE3069283u);
}
END_TEST

TEST_SUITE(checkpoint_suite)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = acm_tcase("restart", 120);
    tcase_add_loop_test(tc, restart_bitwise, 0, SCENE_COUNT);
    tcase_add_loop_test(tc, restart_cross_backend, 0, SCENE_COUNT);
    tcase_add_test(tc, restart_other_layout);
    suite_add_tcase(s, tc);
    tc = acm_tcase("files", 120);
    tcase_add_test(tc, corrupted_files);
    tcase_add_test(tc, corrupted_smoke);
    tcase_add_test(tc, moments_section_checked);
    tcase_add_test(tc, save_errors);
    tcase_add_test(tc, load_arguments);
    tcase_add_test(tc, crc_check_value);
    suite_add_tcase(s, tc);
    return s;
}
