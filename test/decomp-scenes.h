/*
 * libacmlbm tests -- the scenes a domain of several slabs is compared on with
 * the undivided domain (test-decomp.c in one process, test-mpi.c over MPI
 * ranks): face setups along the cut axis, fields with structure along every
 * axis, and a bitwise comparison of the populations.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_TEST_DECOMP_SCENES_H
#define ACMLBM_TEST_DECOMP_SCENES_H

#include "test-solid-common.h"

/* NZ: the planes of a scene cut into 3 slabs or fewer (scene_nz). */
enum { NX = 7, NY = 6, NZ = 13, STEPS = 24 };

/* The face setups: z is the axis the slabs cut. */
enum scene {
    SCENE_PERIODIC,   /* all periodic, body force and a force field */
    SCENE_LID,        /* z walls (a moving lid above), y walls, x periodic */
    SCENE_Z_THROUGH,  /* z inlet below, outlet above, x slip walls, y walls */
    SCENE_X_THROUGH,  /* x inlet and outlet, y walls, z periodic */
    SCENE_COUNT
};

static const char *const scene_name[SCENE_COUNT] = {"periodic", "lid", "z-through",
                                                     "x-through"};

static void set_faces(acm_domain *d, enum scene sc)
{
    const double lid[3] = {0.05, 0.02, 0.0}, in_z[3] = {0.01, 0.0, 0.04},
                 in_x[3] = {0.05, 0.0, 0.01};
    switch (sc) {
    case SCENE_PERIODIC: {
        const double g[3] = {1e-5, -2e-5, 3e-5};
        ACM_CK_OK(d, acm_domain_set_body_force(d, g));
        break;
    }
    case SCENE_LID:
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, lid));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, NULL));
        break;
    case SCENE_Z_THROUGH:
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_INLET, in_z));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_OUTLET, NULL));
        for (acm_face f = ACM_FACE_X_MIN; f <= ACM_FACE_Y_MAX; ++f) /* slip walls along x */
            ACM_CK_OK(d, acm_domain_set_face(d, f, f <= ACM_FACE_X_MAX ? ACM_BOUNDARY_SLIP
                                                                      : ACM_BOUNDARY_WALL,
                                             NULL));
        break;
    case SCENE_X_THROUGH:
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, in_x));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, NULL));
        break;
    default:
        ck_abort_msg("unknown scene %d", (int)sc);
    }
}

/* A velocity field with structure along every axis, and a force field, of
 * nz planes. */
static void fill_fields(double *u, double *force, int nz)
{
    for (int z = 0; z < nz; ++z)
        for (int y = 0; y < NY; ++y)
            for (int x = 0; x < NX; ++x) {
                const size_t k = (size_t)x + NX * ((size_t)y + NY * (size_t)z);
                u[3 * k + 0] = 0.04 * sin(2.0 * M_PI * z / nz) + 0.01 * cos(x + y);
                u[3 * k + 1] = 0.03 * cos(2.0 * M_PI * x / NX) * sin(0.7 * z);
                u[3 * k + 2] = 0.03 * sin(2.0 * M_PI * y / NY) + 0.005 * x;
                for (int a = 0; a < 3; ++a)
                    force[3 * k + (size_t)a] = 1e-5 * sin(0.3 * (double)(k + 7 * (size_t)a));
            }
}

typedef struct run_cfg {
    acm_collision model;
    acm_precision precision;
    acm_streaming streaming;
    enum scene scene;
    int subdomains;
} run_cfg;

/* How a scene's domain is made from its options: undivided, in slabs, over MPI. */
typedef acm_domain *(*scene_create_fn)(acm_domain_options *o, const void *ctx);

/* ACM_TEST_DEVICES=0,1,...: slab k on the k-th listed CUDA device (modulo the
 * list), so that the scenes run across several GPUs (bench/device-check.sh). */
static acm_domain *create_local(acm_domain_options *o, const void *ctx)
{
    o->subdomains = *(const int *)ctx;
    int32_t listed[8], devices[64];
    int n = 0;
    for (const char *e = getenv("ACM_TEST_DEVICES"); e != NULL && *e != '\0' && n < 8;) {
        char *end = NULL;
        listed[n++] = (int32_t)strtol(e, &end, 10);
        e = *end == ',' ? end + 1 : NULL;
    }
    for (int k = 0; n > 0 && k < o->subdomains && k < 64; ++k)
        devices[k] = listed[k % n];
    if (n > 0 && o->subdomains > 1 && o->subdomains <= 64)
        o->devices = devices;
    return acm_test_domain(o);
}

/* The planes of c's scene: NZ, or 4 a slab where it is cut into more than 3
 * (a slab with immersed solids and 2 iterations needs 4), so that a scene
 * holds for any number of ranks. */
static int scene_nz(const run_cfg *c)
{
    return 4 * c->subdomains > NZ ? 4 * c->subdomains : NZ;
}

/* The cells of a scene's domain. */
static size_t scene_cells(acm_domain *d)
{
    acm_domain_info info = {.version = ACM_DOMAIN_INFO_VERSION};
    ck_assert_int_eq(acm_domain_get_info(d, &info), ACM_OK);
    return (size_t)info.nx * (size_t)info.ny * (size_t)info.nz;
}

/* The scene of c, its domain made by create. */
static acm_domain *scene_make(const run_cfg *c, scene_create_fn create, const void *ctx)
{
    const int nz = scene_nz(c);
    const size_t n = (size_t)NX * NY * (size_t)nz;
    acm_domain_options o = acm_test_options(NX, NY, nz, 0.02, c->model, c->precision);
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, c->streaming), ACM_OK);
    o.layout = l;
    acm_domain *d = create(&o, ctx);
    acm_layout_destroy(l);
    if (c->model == ACM_COLLISION_ACM_LI2020) {
        /* without the clamp, tau* follows the domain's means: the test sees
         * whether their sums were added in the same order */
        acm_collision_options co = ACM_COLLISION_OPTIONS_INIT;
        co.model = c->model;
        co.safety_net = 0;
        ACM_CK_OK(d, acm_domain_set_collision(d, &co));
    }
    set_faces(d, c->scene);
    double *u = acm_test_alloc(3 * sizeof(double) * n);
    double *force = acm_test_alloc(3 * sizeof(double) * n);
    fill_fields(u, force, nz);
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, n));
    if (c->scene == SCENE_PERIODIC)
        ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, force,
                                          3 * sizeof(double) * n));
    free(u);
    free(force);
    return d;
}

static acm_domain *make(const run_cfg *c, int subdomains)
{
    return scene_make(c, create_local, &subdomains);
}

static double *populations(acm_domain *d)
{
    const size_t bytes = sizeof(double) * 27 * scene_cells(d);
    double *f = acm_test_alloc(bytes);
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes));
    return f;
}

/* The first of n populations that differs, or -1. */
static long first_difference(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            return (long)i;
    return -1;
}

static void expect_same(acm_domain *one, acm_domain *split, const run_cfg *c, const char *when)
{
    double *a = populations(one), *b = populations(split);
    const long i = first_difference(a, b, 27 * scene_cells(one));
    ck_assert_msg(i < 0,
                  "%s, model %d, precision %d, streaming %d, %d slabs, %s: population %ld "
                  "(cell %ld, slot %ld) differs: %.17g vs %.17g",
                  scene_name[c->scene], (int)c->model, (int)c->precision, (int)c->streaming,
                  c->subdomains, when, i, i / 27, i % 27,
                  i >= 0 ? a[i] : 0.0, i >= 0 ? b[i] : 0.0);
    free(a);
    free(b);
}

/* After every process loaded the file: remove it (over MPI, test-mpi's waits
 * for all ranks and lets one remove it). */
typedef void (*loaded_fn)(const char *path);

static inline void remove_file(const char *path) { remove(path); }

/* split saved to path and loaded as an undivided domain; both it and one step
 * on, and end bitwise the same. */
static void expect_checkpoint_continues(acm_domain *one, acm_domain *split, const run_cfg *c,
                                        const char *path, loaded_fn loaded_all,
                                        const char *when)
{
    ACM_CK_OK(split, acm_domain_save(split, path));
    acm_domain *loaded = NULL;
    ck_assert_int_eq(acm_domain_load(&loaded, path, NULL), ACM_OK);
    loaded_all(path);
    ACM_CK_OK(one, acm_step(one, 6));
    ACM_CK_OK(loaded, acm_step(loaded, 6));
    expect_same(one, loaded, c, when);
    acm_domain_destroy(loaded);
}

/* A fast spot near the top and a strong body force along z: d's step fails with
 * ACM_ERR_DIVERGED within 200 steps (in whichever slab the jet reaches the
 * speed limit first). */
static void drive_to_divergence(acm_domain *d)
{
    const size_t n = scene_cells(d), nz = n / ((size_t)NX * NY);
    double *u = acm_test_alloc(3 * n * sizeof(double));
    u[3 * ((size_t)2 + NX * (2 + NY * (nz - 2)))] = 0.45;
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, n));
    free(u);
    const double g[3] = {0.0, 0.0, 0.05};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    ck_assert_int_eq(acm_step(d, 200), ACM_ERR_DIVERGED);
}

/* ---- immersed solids across the cuts ------------------------------------------------ */

/* A static sphere across the cuts of 2 and 3 slabs; a smaller one beside it
 * that moves down along z through the cuts, spinning, by 7.7 planes in
 * SOLID_STEPS; a free ball, three times as dense as the fluid, that sinks
 * across a cut and is pushed by the flow. Where z has walls, 2
 * multi-direct-forcing iterations (4 ghost planes a cut). */
enum { SOLID_STEPS = 2 * STEPS, NSOLIDS = 3 };

static void add_solids(acm_domain *d, enum scene sc, acm_solid *out[NSOLIDS])
{
    if (sc == SCENE_LID || sc == SCENE_Z_THROUGH)
        ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, 2));
    acm_test_sphere a = acm_test_sphere_default(1.6, 2.4, 2.2, 5.8);
    out[0] = acm_test_add_sphere(d, &a);
    acm_test_sphere b = acm_test_sphere_default(1.0, 5.0, 3.8, 10.0);
    b.motion = ACM_MOTION_PRESCRIBED;
    b.v[2] = -0.16;
    b.w[0] = 0.01;
    out[1] = acm_test_add_sphere(d, &b);
    acm_test_sphere c = acm_test_sphere_default(1.0, 5.2, 1.6, 6.6);
    c.motion = ACM_MOTION_FREE;
    c.density = 3.0;
    c.g[2] = -2e-4;
    out[2] = acm_test_add_sphere(d, &c);
}

/* The solids' forces, torques and sample positions: bitwise the same on the
 * CPU; on a GPU, whose scatter adds with atomics in no fixed order, within
 * tol of the largest. */
static void expect_same_solids(acm_solid *const one[NSOLIDS], acm_solid *const split[NSOLIDS],
                               double tol, const char *when)
{
    for (int i = 0; i < NSOLIDS; ++i) {
        double f[2][6];
        ck_assert_int_eq(acm_solid_get_force(one[i], f[0], f[0] + 3), ACM_OK);
        ck_assert_int_eq(acm_solid_get_force(split[i], f[1], f[1] + 3), ACM_OK);
        double big = 0.0;
        for (int k = 0; k < 6; ++k)
            big = fmax(big, fabs(f[0][k]));
        ck_assert_msg(big > 0.0, "%s: solid %d feels no force", when, i);
        for (int k = 0; k < 6; ++k)
            ck_assert_msg(tol > 0.0 ? fabs(f[0][k] - f[1][k]) <= tol * big
                                    : memcmp(&f[0][k], &f[1][k], sizeof(double)) == 0,
                          "%s: solid %d force/torque %d: %.17g vs %.17g", when, i, k, f[0][k],
                          f[1][k]);
        acm_solid_info info = {.version = ACM_SOLID_INFO_VERSION};
        ck_assert_int_eq(acm_solid_get_info(one[i], &info), ACM_OK);
        const size_t n = (size_t)info.sample_count;
        double *x[2] = {acm_test_alloc(3 * n * sizeof(double)),
                        acm_test_alloc(3 * n * sizeof(double))};
        ck_assert_int_eq(acm_solid_get_samples(one[i], x[0], n), ACM_OK);
        ck_assert_int_eq(acm_solid_get_samples(split[i], x[1], n), ACM_OK);
        /* on a GPU a free body's pose follows forces equal within round-off:
         * 6e-8 to 9e-8 cells apart after SOLID_STEPS on an H100 */
        ck_assert_msg(acm_test_max_diff(x[0], x[1], 3 * n) <= (tol > 0.0 ? 1e-6 : 0.0),
                      "%s: solid %d samples differ by %g", when, i,
                      acm_test_max_diff(x[0], x[1], 3 * n));
        free(x[0]);
        free(x[1]);
    }
}

/* Populations within tol (relative to the largest) where the GPU's atomics
 * leave the order of the IB force's additions free; bitwise for tol 0. */
static void expect_close(acm_domain *one, acm_domain *split, const run_cfg *c, double tol,
                         const char *when)
{
    if (tol == 0.0) {
        expect_same(one, split, c, when);
        return;
    }
    double *a = populations(one), *b = populations(split);
    const size_t n = 27 * scene_cells(one);
    const double diff = acm_test_max_diff(a, b, n);
    ck_assert_msg(diff <= tol, "%s, model %d, precision %d, %d slabs, %s: populations differ by %g",
                  scene_name[c->scene], (int)c->model, (int)c->precision, c->subdomains, when,
                  diff);
    free(a);
    free(b);
}

/* How close a split domain with solids must follow the undivided one: 0
 * (bitwise) on the CPU, else by precision (an H100 run showed a free ball's
 * FP32 force 1.0e-5 of it apart after SOLID_STEPS; a sample left out or
 * counted twice is worth percents). */
static double solids_tol(const run_cfg *c)
{
    if (acm_test_backend() != ACM_BACKEND_CUDA)
        return 0.0;
    return c->precision == ACM_PRECISION_FP64 ? 1e-11 : 1e-4;
}

static const acm_collision models[] = {ACM_COLLISION_BGK, ACM_COLLISION_RM_MRT,
                                       ACM_COLLISION_CM_MRT, ACM_COLLISION_ACM_LI2018,
                                       ACM_COLLISION_ACM_LI2020};

#endif /* ACMLBM_TEST_DECOMP_SCENES_H */
