/*
 * libacmlbm tests -- the CUDA backend against the CPU oracle: every collision
 * model, every face type, every kernel structure, 120 steps, compared with the
 * same run on the CPU; the safety net's fallbacks; FP16 storage accuracy;
 * the CUDA interoperability API; device error paths; moment storage (issue
 * #30) against the CPU's projection. Needs a GPU (exit 77
 * otherwise), run with CK_FORK=no.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"
#include "test-solid-common.h"

#include <cuda_runtime.h>
#include <time.h>   /* clock_gettime */
#include <unistd.h> /* close, unlink */

#include <acmlbm/acm_cuda.h>

#define NX 20
#define NY 12
#define NZ 10
#define NCELLS ((size_t)NX * NY * NZ)
/* Steps of each agreement run: 120, or ACM_TEST_STEPS (fewer under compute-sanitizer). */
static int steps(void)
{
    const char *e = getenv("ACM_TEST_STEPS");
    return e != NULL && atoi(e) > 0 ? atoi(e) : 120;
}

/* Largest |a - b| over the largest |b|. */
static double rel_diff(const double *a, const double *b, size_t n)
{
    double dmax = 0, bmax = 0;
    for (size_t i = 0; i < n; ++i) {
        dmax = fmax(dmax, fabs(a[i] - b[i]));
        bmax = fmax(bmax, fabs(b[i]));
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
    }
    return dmax / bmax;
}

/* SCENE_INFLOW_FORCE, past the scenes every kernel runs: the moment-storage
 * tests' inlet/outlet channel (absorbers in front of both), with a body force;
 * SCENE_WIDE: the periodic vortex on a grid of WIDE_NX x NY x NZ, several
 * tiles of the moment step in x and y (their seams). */
typedef enum scene {
    SCENE_PERIODIC,
    SCENE_CHANNEL,
    SCENE_INLET,
    SCENE_BOX,
    SCENE_COUNT,
    SCENE_INFLOW_FORCE = SCENE_COUNT,
    SCENE_WIDE
} scene;
static const char *const scene_names[SCENE_COUNT + 2] = {
    "periodic TGV", "slip/lid channel + force", "inlet/outlet + absorbers, slip wall",
    "closed lid box", "inflow + absorbers + force", "periodic TGV, 70 wide"};
#define WIDE_NX 70

/* Cells along x of scene sc's grid, and its cells. */
static size_t scene_nx(scene sc) { return sc == SCENE_WIDE ? WIDE_NX : NX; }
static size_t scene_cells(scene sc) { return scene_nx(sc) * NY * NZ; }

/* A domain on `backend` with `storage` set up as `sc`, in `subdomains` slabs
 * (0: undivided), stepped nsteps times. */
static acm_domain *run_scene_in(acm_backend backend, scene sc, acm_collision model,
                                acm_precision prec, acm_kernel kernel, acm_storage storage,
                                int nsteps, int subdomains)
{
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_KERNEL, kernel), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, storage), ACM_OK);
    const size_t nx = scene_nx(sc), cells = scene_cells(sc);
    acm_domain_options o = acm_test_options((int32_t)nx, NY, NZ, 0.02, model, prec);
    o.backend = backend;
    o.layout = l;
    o.subdomains = subdomains;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    /* a 3-D Taylor-Green field in every scene: non-trivial populations */
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    for (size_t k = 0; k < cells; ++k) {
        double x = 2 * M_PI * (double)(k % nx) / (double)nx;
        double y = 2 * M_PI * (double)(k / nx % NY) / NY;
        double z = 2 * M_PI * (double)(k / (nx * NY)) / NZ;
        u[3 * k] = 0.04 * sin(x) * cos(y) * cos(z);
        u[3 * k + 1] = -0.04 * cos(x) * sin(y) * cos(z);
        u[3 * k + 2] = 0.01 * sin(z);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, cells));
    free(u);
    const double lid[3] = {0.05, 0, 0.02}, inflow[3] = {0.03, 0.005, 0}, g[3] = {2e-5, 0, 1e-5};
    switch (sc) {
    case SCENE_PERIODIC:
    case SCENE_WIDE: break;
    case SCENE_CHANNEL: /* a slip floor, a moving lid */
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_SLIP, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
        ACM_CK_OK(d, acm_domain_set_body_force(d, g));
        break;
    case SCENE_INLET:
    case SCENE_INFLOW_FORCE:
        if (sc == SCENE_INFLOW_FORCE)
            ACM_CK_OK(d, acm_domain_set_body_force(d, g));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, inflow));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
        ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_X_MIN, 3, 0.4, 1.0, inflow));
        ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_X_MAX, 5, 0.6, 1.002, inflow));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_SLIP, NULL));
        break;
    default:
        for (int f = 0; f < ACM_FACE_COUNT; ++f)
            ACM_CK_OK(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
        break;
    }
    ACM_CK_OK(d, acm_step(d, nsteps));
    return d;
}

static acm_domain *run_scene(acm_backend backend, scene sc, acm_collision model,
                             acm_precision prec, acm_kernel kernel, acm_storage storage,
                             int nsteps)
{
    return run_scene_in(backend, sc, model, prec, kernel, storage, nsteps, 0);
}

/* Field f of a domain of n cells. */
static double *field_n(acm_domain *d, acm_field f, size_t comps, size_t n)
{
    double *v = acm_test_alloc(comps * n * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, f, ACM_DTYPE_FLOAT64, v, comps * n * sizeof(double)));
    return v;
}

static double *field(acm_domain *d, acm_field f, size_t comps)
{
    return field_n(d, f, comps, NCELLS);
}

/* Compare a GPU run of nsteps with the CPU run of the same scene and storage. */
static void compare_storage(scene sc, acm_collision model, acm_precision gpu_prec,
                            acm_precision cpu_prec, acm_kernel kernel, acm_storage storage,
                            int nsteps, double tol)
{
    acm_domain *cpu =
        run_scene(ACM_BACKEND_CPU, sc, model, cpu_prec, ACM_KERNEL_DEFAULT, storage, nsteps);
    acm_domain *gpu = run_scene(ACM_BACKEND_CUDA, sc, model, gpu_prec, kernel, storage, nsteps);
    const size_t n = scene_cells(sc);
    double *fc = field_n(cpu, ACM_FIELD_POPULATIONS, 27, n);
    double *fg = field_n(gpu, ACM_FIELD_POPULATIONS, 27, n);
    double *uc = field_n(cpu, ACM_FIELD_VELOCITY, 3, n), *ug = field_n(gpu, ACM_FIELD_VELOCITY, 3, n);
    double df = rel_diff(fg, fc, 27 * n), du = rel_diff(ug, uc, 3 * n);
    acm_domain_stats sc_ = acm_test_stats(cpu), sg = acm_test_stats(gpu);
    printf("GPU vs CPU, %-15s model %d kernel %d precision %d storage %d: populations %.2e, "
           "velocity %.2e, mass %.2e\n",
           scene_names[sc], model, kernel, gpu_prec, storage, df, du,
           fabs(sg.mass - sc_.mass) / sc_.mass);
    ck_assert_msg(df <= tol && du <= 10 * tol,
                  "%s, model %d, kernel %d, precision %d, storage %d: populations differ by %g, "
                  "velocity by %g (tolerance %g)",
                  scene_names[sc], model, kernel, gpu_prec, storage, df, du, tol);
    free(fc);
    free(fg);
    free(uc);
    free(ug);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}

/* Population storage, steps() steps. */
static void compare(scene sc, acm_collision model, acm_precision gpu_prec, acm_precision cpu_prec,
                    acm_kernel kernel, double tol)
{
    compare_storage(sc, model, gpu_prec, cpu_prec, kernel, ACM_STORAGE_POPULATIONS, steps(), tol);
}

static const acm_collision models[5] = {ACM_COLLISION_BGK, ACM_COLLISION_RM_MRT,
                                        ACM_COLLISION_CM_MRT, ACM_COLLISION_ACM_LI2018,
                                        ACM_COLLISION_ACM_LI2020};
static const acm_kernel kernels[3] = {ACM_KERNEL_FUSED, ACM_KERNEL_SPLIT, ACM_KERNEL_BASELINE};

/* loop index = scene * 15 + model * 3 + kernel */
START_TEST(gpu_fp32_matches_cpu_fp32)
{
    compare((scene)(_i / 15), models[_i / 3 % 5], ACM_PRECISION_FP32, ACM_PRECISION_FP32,
            kernels[_i % 3], 1e-5);
}
END_TEST

START_TEST(gpu_fp64_matches_cpu_fp64)
{
    compare((scene)(_i / 5), models[_i % 5], ACM_PRECISION_FP64, ACM_PRECISION_FP64,
            ACM_KERNEL_FUSED, 1e-12);
}
END_TEST

START_TEST(gpu_fp16_storage_tracks_cpu_fp32)
{
    /* FP16 storage rounds every population to 11 bits of its deviation */
    compare((scene)(_i / 3), ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP16, ACM_PRECISION_FP32,
            kernels[_i % 3], 2e-3);
}
END_TEST

/* GPU against CPU after 9 steps with the faces set by `walls` (a bit per
 * face: a wall, moving along the face where wall_u says; the others
 * periodic). */
static double walls_diff(unsigned walls, const double wall_u[ACM_FACE_COUNT][3],
                         acm_precision prec)
{
    double *f[2];
    for (int b = 0; b < 2; ++b) {
        acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, ACM_KERNEL_FUSED);
        acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_ACM_LI2018, prec);
        o.backend = b ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU;
        o.layout = l;
        o.initial_velocity[0] = 0.01;
        o.initial_velocity[2] = -0.005;
        acm_domain *d = acm_test_domain(&o);
        acm_layout_destroy(l);
        for (int face = 0; face < ACM_FACE_COUNT; ++face)
            if (walls >> face & 1u)
                ACM_CK_OK(d, acm_domain_set_face(d, (acm_face)face, ACM_BOUNDARY_WALL,
                                                 wall_u[face]));
        ACM_CK_OK(d, acm_step(d, 9));
        f[b] = field(d, ACM_FIELD_POPULATIONS, 27);
        acm_domain_destroy(d);
    }
    const double df = rel_diff(f[1], f[0], 27 * NCELLS);
    free(f[0]);
    free(f[1]);
    return df;
}

/* The pulls of the cells next to walls in the fused two-array kernel, FP64
 * and FP32 against the CPU: next to one wall a cell pulls as an inner cell
 * and bounces the nine populations that cross it (cuda_common.cuh,
 * acm_pull_one_face); on the edges and corners, the general acm_pull. Loop
 * index = case * 2 + FP32: cases 0-5 a moving wall on face `case` and a
 * resting one opposite; 6 walls on the four faces of x and y, z periodic
 * (edges: two walls); 7 a closed box of six walls, each moving its own way
 * (corners: three walls). */
START_TEST(wall_pull_matches_cpu)
{
    const int c = _i / 2;
    const acm_precision prec = _i % 2 ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64;
    const double tol = _i % 2 ? 1e-5 : 1e-12;
    double u[ACM_FACE_COUNT][3] = {{0.0}};
    unsigned walls;
    if (c < 6) {
        const int axis = c / 2;
        u[c][(axis + 1) % 3] = 0.04; /* along the wall */
        u[c][(axis + 2) % 3] = -0.015;
        walls = 1u << c | 1u << (c ^ 1);
    } else {
        walls = c == 6 ? 0x0fu : 0x3fu;
        for (int face = 0; face < ACM_FACE_COUNT; ++face) {
            const int axis = face / 2;
            u[face][(axis + 1) % 3] = 0.01 * (face + 1);
            u[face][(axis + 2) % 3] = -0.004 * (face + 2);
        }
    }
    const double df = walls_diff(walls, (const double(*)[3])u, prec);
    printf("walls 0x%02x, precision %d: populations GPU vs CPU %.2e\n", walls, (int)prec, df);
    ck_assert_msg(df <= tol, "walls 0x%02x precision %d: populations differ by %g", walls,
                  (int)prec, df);
}
END_TEST

/* ---- the ACM safety net's fallback (spec 6.4 item 4) on the GPU ------------------------ */

/* 21 x 12 x 10 cells: not a whole number of warps (the fused kernel's redo
 * mask has a word per warp). */
#define FB_NX 21
#define FB_NCELLS ((size_t)FB_NX * NY * NZ)

/* A closed box with a lid, random velocities of up to 0.1 and nu = 1e-4:
 * the adaptive rates over-relax the strong non-equilibrium of the first
 * steps and the safety net redoes a few hundred cells. block = 0: default. */
static acm_domain *fallback_scene(acm_backend backend, acm_collision model, acm_kernel kernel,
                                  int block, acm_storage storage, int nx, int ny, int nz)
{
    const size_t ncells = (size_t)nx * (size_t)ny * (size_t)nz;
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_KERNEL, kernel), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, storage), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, block), ACM_OK);
    acm_domain_options o = acm_test_options(nx, ny, nz, 1e-4, model, ACM_PRECISION_FP64);
    o.backend = backend;
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    double *u = acm_test_alloc(3 * ncells * sizeof(double));
    uint32_t r = 12345u;
    for (size_t i = 0; i < 3 * ncells; ++i) {
        r = r * 1664525u + 1013904223u;
        u[i] = 0.1 * ((double)(r >> 8) / (double)(1u << 24) * 2 - 1);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, ncells));
    free(u);
    const double lid[3] = {0.05, 0, 0};
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        ACM_CK_OK(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    return d;
}

static acm_domain *run_fallback_scene(acm_backend backend, acm_collision model, acm_kernel kernel,
                                      int block, acm_storage storage)
{
    acm_domain *d = fallback_scene(backend, model, kernel, block, storage, FB_NX, NY, NZ);
    ACM_CK_OK(d, acm_step(d, 20));
    return d;
}

/* loop index = model (LI2018, LI2020) * 3 + kernel */
START_TEST(gpu_safety_net_fallbacks_match_cpu)
{
    const acm_collision model = _i / 3 ? ACM_COLLISION_ACM_LI2020 : ACM_COLLISION_ACM_LI2018;
    acm_domain *cpu =
        run_fallback_scene(ACM_BACKEND_CPU, model, ACM_KERNEL_DEFAULT, 0, ACM_STORAGE_POPULATIONS);
    acm_domain *gpu =
        run_fallback_scene(ACM_BACKEND_CUDA, model, kernels[_i % 3], 0, ACM_STORAGE_POPULATIONS);
    double *fc = field_n(cpu, ACM_FIELD_POPULATIONS, 27, FB_NCELLS);
    double *fg = field_n(gpu, ACM_FIELD_POPULATIONS, 27, FB_NCELLS);
    const double df = rel_diff(fg, fc, 27 * FB_NCELLS);
    const acm_domain_stats sc = acm_test_stats(cpu), sg = acm_test_stats(gpu);
    printf("safety net, model %d kernel %d: fallbacks CPU %lld GPU %lld, populations %.2e\n",
           model, kernels[_i % 3], (long long)sc.fallback_cells_total,
           (long long)sg.fallback_cells_total, df);
    ck_assert_int_gt(sc.fallback_cells_total, 100);
    ck_assert_int_eq(sg.fallback_cells_total, sc.fallback_cells_total);
    /* the GPU checks once per call, yet counts the last step's alone */
    ck_assert_int_eq(sg.fallback_cells_last_step, sc.fallback_cells_last_step);
    ck_assert_msg(df <= 1e-12, "populations differ by %g", df);
    free(fc);
    free(fg);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}
END_TEST

/* Many fallbacks in one step of a small domain, whose fused launch redoes
 * them in its last block (cuda/backend_step.cu, fold_in_kernel): 40 x 40 x 32
 * cells, a call of two steps (the first marks 1 cell, the list; the second
 * about 11500, more than the list holds: every word of the marks is read),
 * then three calls of five steps (the check having seen many, the redo pass;
 * then, once fewer than ACM_FOLD_REDO_APART, the list again); the same
 * cells, counts and populations as the CPU. loop index = model (LI2018,
 * LI2020). */
START_TEST(gpu_many_fallbacks_in_one_step_match_cpu)
{
    const acm_collision model = _i ? ACM_COLLISION_ACM_LI2020 : ACM_COLLISION_ACM_LI2018;
    const int n[3] = {40, 40, 32};
    const size_t ncells = (size_t)n[0] * n[1] * n[2];
    acm_domain *d[2];
    int64_t first[2];
    for (int b = 0; b < 2; ++b) {
        d[b] = fallback_scene(b ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU, model, ACM_KERNEL_FUSED, 0,
                              ACM_STORAGE_POPULATIONS, n[0], n[1], n[2]);
        ACM_CK_OK(d[b], acm_step(d[b], 2));
        first[b] = acm_test_stats(d[b]).fallback_cells_last_step;
        for (int call = 0; call < 3; ++call)
            ACM_CK_OK(d[b], acm_step(d[b], 5));
    }
    const acm_domain_stats sc = acm_test_stats(d[0]), sg = acm_test_stats(d[1]);
    double *fc = field_n(d[0], ACM_FIELD_POPULATIONS, 27, ncells);
    double *fg = field_n(d[1], ACM_FIELD_POPULATIONS, 27, ncells);
    const double df = rel_diff(fg, fc, 27 * ncells);
    printf("many fallbacks, model %d: step 2 CPU %lld GPU %lld, total CPU %lld GPU %lld, "
           "populations %.2e\n",
           model, (long long)first[0], (long long)first[1], (long long)sc.fallback_cells_total,
           (long long)sg.fallback_cells_total, df);
    ck_assert_int_gt(first[0], 4096); /* more than the last block's list holds */
    ck_assert_int_eq(first[1], first[0]);
    ck_assert_int_eq(sg.fallback_cells_total, sc.fallback_cells_total);
    ck_assert_int_eq(sg.fallback_cells_last_step, sc.fallback_cells_last_step);
    ck_assert_msg(df <= 1e-12, "populations differ by %g", df);
    free(fc);
    free(fg);
    acm_domain_destroy(d[0]);
    acm_domain_destroy(d[1]);
}
END_TEST

/* The block size is a tuning knob only: with ACM_LI2018 (a maximum, not a
 * sum, across blocks) every kernel structure gives the same bits at 32, the
 * default and 256 threads per block. loop index = kernel. */
START_TEST(gpu_block_size_changes_nothing)
{
    const int blocks[3] = {0, 32, 256};
    double *ref = NULL;
    for (int b = 0; b < 3; ++b) {
        acm_domain *d = run_fallback_scene(ACM_BACKEND_CUDA, ACM_COLLISION_ACM_LI2018, kernels[_i],
                                           blocks[b], ACM_STORAGE_POPULATIONS);
        acm_domain_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_DOMAIN_INFO_VERSION;
        ACM_CK_OK(d, acm_domain_get_info(d, &info));
        ck_assert_int_eq(info.block_size, blocks[b] ? blocks[b] : 128);
        double *f = field_n(d, ACM_FIELD_POPULATIONS, 27, FB_NCELLS);
        if (ref == NULL) {
            ref = f;
        } else {
            ck_assert_msg(memcmp(f, ref, 27 * FB_NCELLS * sizeof(double)) == 0,
                          "kernel %d, block %d: populations differ from the default block",
                          kernels[_i], blocks[b]);
            free(f);
        }
        acm_domain_destroy(d);
    }
    free(ref);
}
END_TEST

/* ---- FP16 accuracy on the Taylor-Green decay (issue: measure FP16 vs FP32) --------------- */

static double tgv_rate_error(acm_precision prec)
{
    const int N = 64;
    const double nu = 0.01, U = 0.02, k = 2 * M_PI / N;
    acm_domain_options o = acm_test_options(N, N, 1, nu, ACM_COLLISION_CM_MRT, prec);
    o.backend = ACM_BACKEND_CUDA;
    acm_domain *d = acm_test_domain(&o);
    acm_test_set_cm(d, 1.0);
    size_t n = (size_t)N * N;
    double *u = acm_test_alloc(3 * n * sizeof(double)), *rho = acm_test_alloc(n * sizeof(double));
    for (int y = 0; y < N; ++y)
        for (int x = 0; x < N; ++x) {
            size_t c = (size_t)(x + N * y);
            u[3 * c] = -U * cos(k * x) * sin(k * y);
            u[3 * c + 1] = U * sin(k * x) * cos(k * y);
            rho[c] = 1 - 3 * (U * U / 4) * (cos(2 * k * x) + cos(2 * k * y));
        }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, u, n));
    int steps = (int)lround(log(4.0) / (2 * nu * k * k));
    double amp[2];
    for (int pass = 0; pass < 2; ++pass) {
        ACM_CK_OK(d, acm_step(d, pass == 0 ? steps / 10 : steps - steps / 10));
        ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u,
                                          3 * n * sizeof(double)));
        double re = 0, im = 0;
        for (int y = 0; y < N; ++y)
            for (int x = 0; x < N; ++x) {
                re += u[3 * (x + N * y)] * cos(k * (x + y));
                im -= u[3 * (x + N * y)] * sin(k * (x + y));
            }
        amp[pass] = sqrt(re * re + im * im);
    }
    free(u);
    free(rho);
    acm_domain_destroy(d);
    return log(amp[0] / amp[1]) / (steps - steps / 10) / (2 * nu * k * k) - 1;
}

START_TEST(fp16_taylor_green_accuracy)
{
    double e64 = tgv_rate_error(ACM_PRECISION_FP64), e32 = tgv_rate_error(ACM_PRECISION_FP32);
    double e16 = tgv_rate_error(ACM_PRECISION_FP16);
    printf("TGV 64x64 nu=0.01 on the GPU: decay-rate error FP64 %+.3e, FP32 %+.3e, FP16 %+.3e\n",
           e64, e32, e16);
    ck_assert_msg(fabs(e64 + 1.3e-4) < 1e-5, "FP64 %g (reference -1.3e-4)", e64);
    ck_assert_msg(fabs(e32 - e64) < 1e-3, "FP32 %g vs FP64 %g", e32, e64);
    ck_assert_msg(fabs(e16 - e64) < 1e-2, "FP16 %g vs FP64 %g", e16, e64);
}
END_TEST

/* ---- interoperability ----------------------------------------------------------------------- */

static acm_domain *gpu_domain(void)
{
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    o.initial_velocity[0] = 0.02;
    return acm_test_domain(&o);
}

/* acm_domain_sample_velocity_begin queues the read behind the steps enqueued
 * so far and _end collects it: bitwise the values acm_domain_sample_velocity
 * gives on that state, whatever is enqueued after the begin (the body force
 * speeds the flow up every step: a read of a later state differs); a read
 * at once or a re-layout between the two keeps the read; refused while the
 * caller captures the domain's stream. */
START_TEST(queued_velocity_read_sees_its_steps)
{
    enum { NPTS = 37 };
    acm_domain *d = gpu_domain();
    const double g[3] = {2e-5, 0, 1e-5};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    double pts[3 * NPTS], now[3 * NPTS], got[3 * NPTS], later[3 * NPTS];
    for (int k = 0; k < NPTS; ++k) {
        pts[3 * k] = fmod(1.37 * k, (double)NX);
        pts[3 * k + 1] = fmod(2.11 * k, (double)NY);
        pts[3 * k + 2] = fmod(0.73 * k, (double)NZ);
    }
    ACM_CK_OK(d, acm_cuda_step_async(d, 4));
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NPTS)); /* behind the 4 steps */
    ACM_CK_OK(d, acm_cuda_step_async(d, 4));
    ACM_CK_OK(d, acm_domain_sample_velocity_end(d, got, NPTS));
    ACM_CK_OK(d, acm_domain_sample_velocity(d, pts, NPTS, later)); /* after 8 */
    /* a read at once while one is queued (the backend's buffer): the queued one kept */
    double again[3 * NPTS], twice[3 * NPTS];
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NPTS));
    ACM_CK_OK(d, acm_domain_sample_velocity(d, pts, NPTS, again));
    ACM_CK_OK(d, acm_domain_sample_velocity_end(d, twice, NPTS));
    ck_assert_mem_eq(again, later, sizeof later);
    ck_assert_mem_eq(twice, later, sizeof later);
    acm_domain *twin = gpu_domain();
    ACM_CK_OK(twin, acm_domain_set_body_force(twin, g));
    ACM_CK_OK(twin, acm_cuda_step_async(twin, 4));
    ACM_CK_OK(twin, acm_domain_sample_velocity(twin, pts, NPTS, now)); /* after 4 */
    ck_assert_mem_eq(got, now, sizeof now);
    double apart = 0.0;
    for (int k = 0; k < 3 * NPTS; ++k)
        apart = fmax(apart, fabs(later[k] - now[k]));
    ck_assert_msg(apart > 1e-6, "4 more steps moved the wind by %g only", apart);
    /* a re-layout between begin and end: the read is collected before */
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NPTS));
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS); /* new storage */
    ACM_CK_OK(d, acm_domain_set_layout(d, l));
    acm_layout_destroy(l);
    ACM_CK_OK(d, acm_cuda_step_async(d, 2));
    ACM_CK_OK(d, acm_domain_sample_velocity_end(d, got, NPTS));
    ck_assert_mem_eq(got, later, sizeof later);
    /* a caller capturing the domain's stream: refused, nothing begun */
    cudaStream_t s;
    ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
    ACM_CK_OK(d, acm_cuda_domain_set_stream(d, s));
    ck_assert_int_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_begin(d, pts, NPTS), ACM_ERR_BAD_STATE);
    cudaGraph_t graph = NULL;
    ck_assert_int_eq(cudaStreamEndCapture(s, &graph), cudaSuccess);
    if (graph != NULL)
        cudaGraphDestroy(graph);
    ACM_CK_FAIL(d, acm_domain_sample_velocity_end(d, got, NPTS), ACM_ERR_BAD_STATE);
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NPTS)); /* after it: fine */
    ACM_CK_OK(d, acm_domain_sample_velocity_end(d, got, NPTS));
    ACM_CK_OK(d, acm_domain_sample_velocity_begin(d, pts, NPTS));
    acm_domain_destroy(d); /* with a read under way */
    acm_domain_destroy(twin);
    ck_assert_int_eq(cudaStreamDestroy(s), cudaSuccess);
}
END_TEST

START_TEST(caller_stream_async_steps_and_mapped_fields)
{
    acm_domain *d = gpu_domain();
    cudaStream_t s;
    ck_assert_int_eq(cudaStreamCreate(&s), cudaSuccess);
    ACM_CK_OK(d, acm_cuda_domain_set_stream(d, s));
    cudaStream_t got = NULL;
    ACM_CK_OK(d, acm_cuda_domain_get_stream(d, &got));
    ck_assert_ptr_eq(got, s);
    const double g[3] = {1e-5, 0, 0};
    ACM_CK_OK(d, acm_domain_set_body_force(d, g));
    ACM_CK_OK(d, acm_cuda_step_async(d, 25));
    const float *rho = NULL, *vel = NULL;
    ACM_CK_OK(d, acm_cuda_domain_map_fields(d, &rho, &vel));
    ck_assert_ptr_nonnull(rho);
    ck_assert_ptr_nonnull(vel);
    float *hr = acm_test_alloc(NCELLS * sizeof(float)), *hu = acm_test_alloc(3 * NCELLS * sizeof(float));
    ck_assert_int_eq(cudaMemcpyAsync(hr, rho, NCELLS * sizeof(float), cudaMemcpyDeviceToHost, s),
                     cudaSuccess);
    ck_assert_int_eq(cudaMemcpyAsync(hu, vel, 3 * NCELLS * sizeof(float), cudaMemcpyDeviceToHost, s),
                     cudaSuccess);
    ck_assert_int_eq(cudaStreamSynchronize(s), cudaSuccess);
    ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
    acm_domain_stats st = acm_test_stats(d);
    ck_assert_int_eq(st.step, 25);
    double *u = field(d, ACM_FIELD_VELOCITY, 3), *r = field(d, ACM_FIELD_DENSITY, 1);
    for (size_t k = 0; k < NCELLS; ++k) {
        ck_assert_double_eq_tol(hr[k], r[k], 1e-6);
        for (int a = 0; a < 3; ++a)
            ck_assert_double_eq_tol(hu[3 * k + a], u[3 * k + a], 1e-7);
    }
    /* back to the domain's own stream; the caller's may then go */
    ACM_CK_OK(d, acm_cuda_domain_set_stream(d, NULL));
    ck_assert_int_eq(cudaStreamDestroy(s), cudaSuccess);
    ACM_CK_OK(d, acm_step(d, 5));
    free(hr);
    free(hu);
    free(u);
    free(r);
    acm_domain_destroy(d);
}
END_TEST

START_TEST(async_divergence_is_reported_at_synchronize)
{
    acm_domain *d = gpu_domain();
    const double F[3] = {0.02, 0, 0}; /* accelerates past the speed limit */
    ACM_CK_OK(d, acm_domain_set_body_force(d, F));
    ACM_CK_OK(d, acm_cuda_step_async(d, 100));
    ACM_CK_FAIL(d, acm_cuda_domain_synchronize(d), ACM_ERR_DIVERGED);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "diverged at step"));
    acm_test_expect_recovery(d);
    acm_domain_destroy(d);
}
END_TEST

/* How many of the stored populations of two domains of NCELLS cells differ
 * in any bit. */
static size_t populations_differ(acm_domain *a, acm_domain *b)
{
    double *f[2] = {field(a, ACM_FIELD_POPULATIONS, 27), field(b, ACM_FIELD_POPULATIONS, 27)};
    size_t differ = 0;
    for (size_t k = 0; k < 27 * NCELLS; ++k)
        differ += memcmp(&f[0][k], &f[1][k], sizeof(double)) != 0;
    free(f[0]);
    free(f[1]);
    return differ;
}

/* The step a divergence message names. */
static long long diverged_step(acm_domain *d)
{
    const char *at = strstr(acm_domain_last_error(d), "diverged at step ");
    ck_assert_ptr_nonnull(at);
    long long step = 0;
    ck_assert_int_eq(sscanf(at, "diverged at step %lld", &step), 1);
    return step;
}

/* acm_cuda_step_async on a domain of the fluid alone replays its steps from
 * CUDA graphs (cuda/backend_graph.cu): the state after 13 steps taken as 5,
 * then 1 + 7 (two calls: graphs of two steps and of one, replayed from
 * both parities) is bitwise the state after acm_step(13), whose kernels are
 * launched one by one; for each kernel structure and moment storage, ACM
 * and BGK, with an inlet, an outlet, walls and a body force. */
START_TEST(graph_steps_equal_launched_steps)
{
    static const acm_kernel structures[] = {ACM_KERNEL_FUSED, ACM_KERNEL_SPLIT, ACM_KERNEL_BASELINE,
                                            ACM_KERNEL_FUSED};
    const acm_kernel kernel = structures[_i % 4];
    const acm_storage storage = _i % 4 == 3 ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS;
    const acm_collision model = _i < 4 ? ACM_COLLISION_DEFAULT : ACM_COLLISION_BGK;
    acm_domain *d[2];
    for (int r = 0; r < 2; ++r)
        d[r] = run_scene(ACM_BACKEND_CUDA, SCENE_INFLOW_FORCE, model, ACM_PRECISION_FP32, kernel,
                         storage, 0);
    ACM_CK_OK(d[0], acm_step(d[0], 13));
    ACM_CK_OK(d[1], acm_cuda_step_async(d[1], 5));
    ACM_CK_OK(d[1], acm_cuda_step_async(d[1], 1));
    ACM_CK_OK(d[1], acm_cuda_step_async(d[1], 7));
    ACM_CK_OK(d[1], acm_cuda_domain_synchronize(d[1]));
    ck_assert_int_eq(acm_test_stats(d[1]).step, 13);
    const size_t differ = populations_differ(d[0], d[1]);
    ck_assert_msg(differ == 0, "kernel %d storage %d model %d: %zu of %zu populations differ",
                  kernel, storage, model, differ, (size_t)(27 * NCELLS));
    for (int r = 0; r < 2; ++r)
        acm_domain_destroy(d[r]);
}
END_TEST

/* A divergence inside steps replayed from graphs names the step that the
 * same steps launched kernel by kernel name (the host checking after 100). */
START_TEST(graph_steps_name_the_diverged_step)
{
    long long step[2] = {0, 0};
    for (int r = 0; r < 2; ++r) {
        acm_domain *d = gpu_domain();
        const double F[3] = {0.02, 0, 0}; /* accelerates past the speed limit */
        ACM_CK_OK(d, acm_domain_set_body_force(d, F));
        if (r == 0) {
            ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, 100));
            ACM_CK_FAIL(d, acm_step(d, 100), ACM_ERR_DIVERGED);
        } else {
            ACM_CK_OK(d, acm_cuda_step_async(d, 100));
            ACM_CK_FAIL(d, acm_cuda_domain_synchronize(d), ACM_ERR_DIVERGED);
        }
        step[r] = diverged_step(d);
        acm_domain_destroy(d);
    }
    printf("diverged at step %lld launched, %lld replayed from graphs\n", step[0], step[1]);
    ck_assert_int_gt(step[0], 1);
    ck_assert_int_lt(step[0], 100);
    ck_assert_int_eq(step[1], step[0]);
}
END_TEST

/* A body force across the inlet/outlet channel (along y, periodic) drives it
 * past the speed limit: d[0] diverges in a long call (checked once, at its
 * end: cuda/backend_step.cu, cu_check), d[1] takes the steps before the
 * diverged one. d[0] keeps that state bitwise, the arrays and the step count
 * turned back over the steps its gated kernels did not take (acm_gate_shut).
 * In place, which keeps no copy of the state before a step, d[0] keeps the
 * state the diverged step left, as d[1] does when that step is the last of its
 * call. async: d[0] steps with acm_cuda_step_async and hears of it from the
 * next call, which does not wait. loop index = kernel structure (fused, split,
 * baseline, moment storage, fused in place) + 5 * async. */
START_TEST(diverged_step_keeps_the_state_before_it)
{
    static const acm_kernel structures[] = {ACM_KERNEL_FUSED, ACM_KERNEL_SPLIT, ACM_KERNEL_BASELINE,
                                            ACM_KERNEL_FUSED, ACM_KERNEL_FUSED};
    const acm_kernel kernel = structures[_i % 5];
    const acm_storage storage = _i % 5 == 3 ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS;
    const bool in_place = _i % 5 == 4, async = _i >= 5;
    const double F[3] = {0.002, 0.02, 0};
    acm_domain *d[2];
    for (int r = 0; r < 2; ++r) {
        d[r] = run_scene(ACM_BACKEND_CUDA, SCENE_INFLOW_FORCE, ACM_COLLISION_DEFAULT,
                         ACM_PRECISION_FP32, kernel, storage, 0);
        if (in_place) {
            acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE);
            ACM_CK_OK(d[r], acm_domain_set_layout(d[r], l));
            acm_layout_destroy(l);
        }
        ACM_CK_OK(d[r], acm_domain_set_body_force(d[r], F));
    }
    if (async) {
        cudaStream_t stream = NULL;
        ACM_CK_OK(d[0], acm_cuda_domain_get_stream(d[0], &stream));
        ACM_CK_OK(d[0], acm_cuda_step_async(d[0], 300));
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess); /* the caller's wait */
        ACM_CK_FAIL(d[0], acm_cuda_step_async(d[0], 1), ACM_ERR_DIVERGED);
    } else {
        ACM_CK_FAIL(d[0], acm_step(d[0], 300), ACM_ERR_DIVERGED);
    }
    const long long at = diverged_step(d[0]);
    ck_assert_int_gt(at, 10);
    ck_assert_int_lt(at, 290); /* many steps enqueued after it */
    const long long kept = in_place ? at : at - 1;
    ck_assert_int_eq(acm_test_stats(d[0]).step, kept);
    if (in_place) {
        ACM_CK_FAIL(d[1], acm_step(d[1], at), ACM_ERR_DIVERGED);
        ck_assert_int_eq(diverged_step(d[1]), at);
    } else {
        ACM_CK_OK(d[1], acm_step(d[1], at - 1));
    }
    const size_t differ = populations_differ(d[0], d[1]);
    printf("kernel %d storage %d%s %s: diverged at step %lld, %zu of %zu populations differ "
           "from the state of step %lld\n", kernel, storage, in_place ? " in place" : "",
           async ? "async" : "acm_step", at, differ, (size_t)(27 * NCELLS), kept);
    ck_assert_int_eq(differ, 0);
    acm_test_expect_recovery(d[0]);
    for (int r = 0; r < 2; ++r)
        acm_domain_destroy(d[r]);
}
END_TEST

START_TEST(divergence_keeps_the_last_good_state_like_the_cpu)
{
    /* with a check every step (the default), both backends stop at the same step */
    int64_t stopped[2];
    for (int b = 0; b < 2; ++b) {
        acm_domain_options o = acm_test_options(8, 8, 8, 0.01, ACM_COLLISION_BGK,
                                                ACM_PRECISION_FP32);
        o.backend = b ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU;
        acm_domain *d = acm_test_domain(&o);
        const double F[3] = {0.01, 0, 0};
        ACM_CK_OK(d, acm_domain_set_body_force(d, F));
        ck_assert_int_eq(acm_step(d, 1000), ACM_ERR_DIVERGED);
        acm_domain_stats s = acm_test_stats(d);
        stopped[b] = s.step;
        ck_assert_msg(s.max_speed < 0.51, "kept state speed %g", s.max_speed);
        acm_domain_destroy(d);
    }
    ck_assert_int_eq(stopped[0], stopped[1]);
}
END_TEST

/* ---- values over a face from device memory (acm_cuda_domain_set_face_values) -------------- */

/* An inlet profile and outlet densities handed over in device memory (FP32 and
 * FP64) step bitwise as the same values from the host; bad calls are refused
 * and change nothing. */
START_TEST(face_values_from_device_memory)
{
    const size_t in = 3 * (size_t)NY * NZ, out = (size_t)NY * NZ;
    acm_domain *d[2];
    double *u = acm_test_alloc(in * sizeof(double)), *rho = acm_test_alloc(out * sizeof(double));
    float *uf = acm_test_alloc(in * sizeof(float));
    for (size_t k = 0; k < out; ++k) {
        u[3 * k] = 0.02 + 0.001 * (double)(k % NY);
        u[3 * k + 2] = 0.0005 * (double)(k / NY);
        rho[k] = 1.0 + 1e-4 * (double)(k % 7);
    }
    for (size_t k = 0; k < in; ++k)
        uf[k] = (float)u[k];
    void *dev_u = NULL, *dev_uf = NULL, *dev_rho = NULL;
    ck_assert_int_eq(cudaMalloc(&dev_u, in * sizeof(double)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&dev_uf, in * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&dev_rho, out * sizeof(double)), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(dev_u, u, in * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(dev_uf, uf, in * sizeof(float), cudaMemcpyHostToDevice),
                     cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(dev_rho, rho, out * sizeof(double), cudaMemcpyHostToDevice),
                     cudaSuccess);
    for (int pass = 0; pass < 2; ++pass) { /* FP64 inlet, then FP32 */
        for (int k = 0; k < 2; ++k) {
            d[k] = run_scene(ACM_BACKEND_CUDA, SCENE_INLET, ACM_COLLISION_DEFAULT,
                             ACM_PRECISION_FP32, ACM_KERNEL_FUSED, ACM_STORAGE_POPULATIONS, 0);
            const acm_dtype t = pass ? ACM_DTYPE_FLOAT32 : ACM_DTYPE_FLOAT64;
            const void *host = pass ? (const void *)uf : (const void *)u;
            ACM_CK_OK(d[k], k ? acm_cuda_domain_set_face_values(d[k], ACM_FACE_X_MIN, t,
                                                                pass ? dev_uf : dev_u, in)
                              : acm_domain_set_face_values(d[k], ACM_FACE_X_MIN, t, host, in));
            ACM_CK_OK(d[k], k ? acm_cuda_domain_set_face_values(d[k], ACM_FACE_X_MAX,
                                                                ACM_DTYPE_FLOAT64, dev_rho, out)
                              : acm_domain_set_face_values(d[k], ACM_FACE_X_MAX,
                                                           ACM_DTYPE_FLOAT64, rho, out));
        }
        /* refused, nothing changed: host memory, a wrong count, a periodic face */
        ACM_CK_FAIL(d[1], acm_cuda_domain_set_face_values(d[1], ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64,
                                                          u, in),
                    ACM_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d[1]), "not in device memory"));
        ACM_CK_FAIL(d[1], acm_cuda_domain_set_face_values(d[1], ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64,
                                                          dev_u, in - 3),
                    ACM_ERR_INVALID_ARG);
        ACM_CK_FAIL(d[1], acm_cuda_domain_set_face_values(d[1], ACM_FACE_Y_MIN, ACM_DTYPE_FLOAT64,
                                                          dev_u, in),
                    ACM_ERR_INVALID_ARG);
        for (int k = 0; k < 2; ++k)
            ACM_CK_OK(d[k], acm_step(d[k], 20));
        double *fa = field(d[0], ACM_FIELD_POPULATIONS, 27), *fb = field(d[1], ACM_FIELD_POPULATIONS, 27);
        ck_assert_msg(memcmp(fa, fb, 27 * NCELLS * sizeof(double)) == 0,
                      "pass %d: device values step differently (%g)", pass,
                      rel_diff(fa, fb, 27 * NCELLS));
        free(fa);
        free(fb);
        for (int k = 0; k < 2; ++k)
            acm_domain_destroy(d[k]);
    }
    /* a CPU domain has no device memory to read */
    acm_domain_options o = acm_test_options(4, 4, 4, 0.05, ACM_COLLISION_BGK, ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CPU;
    acm_domain *cpu = acm_test_domain(&o);
    ACM_CK_FAIL(cpu, acm_cuda_domain_set_face_values(cpu, ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64, dev_u,
                                                     48),
                ACM_ERR_UNSUPPORTED);
    acm_domain_destroy(cpu);
    cudaFree(dev_u);
    cudaFree(dev_uf);
    cudaFree(dev_rho);
    free(u);
    free(uf);
    free(rho);
}
END_TEST

/* ---- device error paths ---------------------------------------------------------------------------- */

/* A domain of slabs (docs/multi-gpu.md) has no single device state to hand out:
 * the interoperability calls refuse it with a message. */
START_TEST(split_domain_refuses_interop)
{
    acm_domain_options o = acm_test_options(8, 8, 8, 0.05, ACM_COLLISION_BGK, ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA; /* whatever ACM_TEST_BACKEND says */
    o.subdomains = 2;
    acm_domain *d = acm_test_domain(&o);
    const float *rho = NULL;
    cudaStream_t stream = NULL;
    ACM_CK_FAIL(d, acm_cuda_domain_synchronize(d), ACM_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(acm_domain_last_error(d), "slab") != NULL, "the message: %s",
                  acm_domain_last_error(d));
    ACM_CK_FAIL(d, acm_cuda_step_async(d, 1), ACM_ERR_UNSUPPORTED);
    ACM_CK_FAIL(d, acm_cuda_step_prepare(d, 1), ACM_ERR_UNSUPPORTED);
    int64_t recorded = -1;
    ACM_CK_FAIL(d, acm_cuda_graphs_recorded(d, &recorded), ACM_ERR_UNSUPPORTED);
    ck_assert_int_eq(recorded, 0);
    ACM_CK_FAIL(d, acm_cuda_domain_map_fields(d, &rho, NULL), ACM_ERR_UNSUPPORTED);
    ACM_CK_FAIL(d, acm_cuda_domain_get_stream(d, &stream), ACM_ERR_UNSUPPORTED);
    ACM_CK_OK(d, acm_step(d, 2)); /* the domain itself is fine */
    acm_domain_destroy(d);
}
END_TEST

START_TEST(device_errors_have_specific_statuses)
{
    char err[256] = "";
    acm_domain *d = NULL;
    acm_domain_options o = acm_test_options(8, 8, 8, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    o.device = 4096;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_NO_DEVICE);
    ck_assert_ptr_null(d);
    ck_assert_msg(err[0] != '\0', "no message");
    /* more cells than the CUDA backend indexes (2^32), then more than device memory */
    o.device = -1;
    o.nx = o.ny = o.nz = 1700;
    err[0] = '\0';
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE); /* > 2^32 cells */
    o.nx = o.ny = 1600;
    o.nz = 1000; /* 2.56e9 cells: 553 GB of FP32 populations */
    acm_status st = acm_domain_create(&d, &o);
    ck_assert_msg(st == ACM_ERR_DEVICE_MEMORY, "%s: %s", acm_status_string(st), err);
    ck_assert_ptr_null(d);
    /* the device is still usable */
    acm_domain *ok = gpu_domain();
    ACM_CK_OK(ok, acm_step(ok, 2));
    acm_domain_destroy(ok);
    /* interop calls on a CPU domain */
    o.backend = ACM_BACKEND_CPU;
    o.nx = o.ny = o.nz = 4;
    acm_domain *cpu = acm_test_domain(&o);
    ACM_CK_FAIL(cpu, acm_cuda_step_async(cpu, 1), ACM_ERR_UNSUPPORTED);
    ACM_CK_FAIL(cpu, acm_cuda_step_prepare(cpu, 4), ACM_ERR_UNSUPPORTED);
    int64_t recorded = -1;
    ACM_CK_FAIL(cpu, acm_cuda_graphs_recorded(cpu, &recorded), ACM_ERR_UNSUPPORTED);
    ck_assert_int_eq(recorded, 0);
    ACM_CK_FAIL(cpu, acm_cuda_domain_synchronize(cpu), ACM_ERR_UNSUPPORTED);
    acm_domain_destroy(cpu);
}
END_TEST

/* ---- device memory running out (docs/reliability.md, "Device faults") ------------------ */

/* Device memory taken by the test until cudaMalloc refuses (big blocks, then
 * smaller ones), so that the library's next device allocation fails for real. */
typedef struct hog {
    void *blocks[4096];
    int n;
} hog;

static void hog_fill(hog *h)
{
    h->n = 0;
    for (size_t chunk = (size_t)1 << 30; chunk >= ((size_t)1 << 16); chunk /= 4)
        while (h->n < 4096 && cudaMalloc(&h->blocks[h->n], chunk) == cudaSuccess)
            h->n++;
    (void)cudaGetLastError();
}

static void hog_free(hog *h)
{
    for (int i = 0; i < h->n; ++i)
        ck_assert_int_eq(cudaFree(h->blocks[i]), cudaSuccess);
    h->n = 0;
}

/* st is a device-memory failure whose message carries CUDA's words. */
static void expect_device_memory(acm_status st, const char *msg, const char *what)
{
    ck_assert_msg(st == ACM_ERR_DEVICE_MEMORY, "%s: %s (%s), expected ACM_ERR_DEVICE_MEMORY",
                  what, acm_status_string(st), msg);
    ck_assert_msg(strstr(msg, "out of memory") != NULL, "%s: the message lacks CUDA's: '%s'",
                  what, msg);
}

/* With the device's memory taken, every call that needs more fails with
 * ACM_ERR_DEVICE_MEMORY and CUDA's message, and changes nothing: once the
 * memory is back the domain steps on and ends bitwise as a twin that never
 * met a failure. */
START_TEST(device_memory_exhaustion_changes_nothing)
{
    size_t free_before = 0, free_after = 0, total = 0;
    ck_assert_int_eq(cudaMemGetInfo(&free_before, &total), cudaSuccess);
    acm_domain *d = gpu_domain(), *twin = gpu_domain();
    ACM_CK_OK(d, acm_step(d, 5));
    ACM_CK_OK(twin, acm_step(twin, 5));
    char path[] = "/tmp/acm-cuda-oom-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ACM_CK_OK(d, acm_domain_save(d, path));
    hog h;
    hog_fill(&h);
    printf("device memory exhausted with %d blocks\n", h.n);

    char err[512] = "";
    acm_domain_options o = acm_test_options(64, 64, 64, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *other = NULL;
    expect_device_memory(acm_domain_create(&other, &o), err, "acm_domain_create");
    ck_assert_ptr_null(other);

    acm_load_options lo;
    ck_assert_int_eq(acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION), ACM_OK);
    lo.backend = ACM_BACKEND_CUDA;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    expect_device_memory(acm_domain_load(&other, path, &lo), err, "acm_domain_load");
    ck_assert_ptr_null(other);

    double *pts, *areas;
    const double at[3] = {10.0, 6.0, 5.0};
    acm_solid_options so = acm_test_moving_sphere(20000, 3.0, at, &pts, &areas);
    acm_solid *solid = NULL;
    expect_device_memory(acm_solid_create(&solid, d, &so), acm_domain_last_error(d),
                         "acm_solid_create");
    ck_assert_ptr_null(solid);
    free(pts);
    free(areas);

    acm_smoke_options sm = ACM_SMOKE_OPTIONS_INIT;
    sm.capacity = 4000000;
    acm_smoke *smoke = NULL;
    expect_device_memory(acm_smoke_create(&smoke, d, &sm), acm_domain_last_error(d),
                         "acm_smoke_create");
    ck_assert_ptr_null(smoke);

    acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, ACM_KERNEL_SPLIT);
    expect_device_memory(acm_domain_set_layout(d, l), acm_domain_last_error(d),
                         "acm_domain_set_layout");
    acm_layout_destroy(l);

    /* a snapshot that finds no device memory is kept in host memory instead */
    acm_divergence_policy p = ACM_DIVERGENCE_POLICY_INIT;
    p.action = ACM_DIVERGENCE_REWIND;
    ACM_CK_OK(d, acm_domain_set_divergence_policy(d, &p));

    hog_free(&h);
    ACM_CK_OK(d, acm_step(d, 20));
    ACM_CK_OK(twin, acm_step(twin, 20));
    double *a = acm_test_alloc(27 * NCELLS * sizeof(double));
    double *b = acm_test_alloc(27 * NCELLS * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, a,
                                      27 * NCELLS * sizeof(double)));
    ACM_CK_OK(twin, acm_domain_get_field(twin, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, b,
                                         27 * NCELLS * sizeof(double)));
    ck_assert_msg(memcmp(a, b, 27 * NCELLS * sizeof(double)) == 0,
                  "the domain that met the failures differs from its twin");
    free(a);
    free(b);
    unlink(path);
    acm_domain_destroy(d);
    acm_domain_destroy(twin);
    /* the failed calls kept no device memory */
    ck_assert_int_eq(cudaMemGetInfo(&free_after, &total), cudaSuccess);
    printf("device memory free: %.1f MB before, %.1f MB after\n", (double)free_before / 1e6,
           (double)free_after / 1e6);
    ck_assert_msg(free_after + ((size_t)64 << 20) >= free_before,
                  "%.1f MB of device memory kept by the failed calls",
                  ((double)free_before - (double)free_after) / 1e6);
}
END_TEST

/* ---- immersed solids: the GPU against the CPU oracle ----------------------------------- */

/* A channel (moving lid, body force) holding a moving, spinning sphere and a
 * free heavy sphere; run on `backend` with the given storage, kernel and spreading. */
static acm_domain *run_solids(acm_backend backend, acm_precision prec, acm_kernel kernel,
                              acm_ib_spread spread, double F[2][3], double T[2][3])
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, kernel);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, spread), ACM_OK);
    acm_domain_options o = acm_test_options(24, 14, 12, 0.05, ACM_COLLISION_DEFAULT, prec);
    o.backend = backend;
    o.layout = l;
    o.initial_velocity[0] = 0.02;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const double lid[3] = {0.04, 0, 0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, 2));
    double *pts, *areas;
    const double at[3] = {6.2, 6.7, 5.4};
    acm_solid_options so = acm_test_moving_sphere(300, 2.5, at, &pts, &areas);
    acm_solid *s[2];
    ACM_CK_OK(d, acm_solid_create(&s[0], d, &so));
    so.position[0] = 16.5;
    so.motion = ACM_MOTION_FREE;
    so.velocity[0] = so.angular_velocity[2] = 0.0;
    so.density = 2.0;
    so.volume = 4.0 / 3.0 * M_PI * 2.5 * 2.5 * 2.5;
    so.inertia[0] = so.inertia[1] = so.inertia[2] = 0.4 * 2.0 * so.volume * 2.5 * 2.5;
    so.gravity[1] = -1e-4;
    ACM_CK_OK(d, acm_solid_create(&s[1], d, &so));
    free(pts);
    free(areas);
    ACM_CK_OK(d, acm_step(d, steps()));
    for (int i = 0; i < 2; ++i)
        ACM_CK_OK(d, acm_solid_get_force(s[i], F[i], T[i]));
    return d;
}

START_TEST(gpu_solids_match_cpu)
{
    static const acm_kernel structures[] = {ACM_KERNEL_FUSED, ACM_KERNEL_SPLIT, ACM_KERNEL_BASELINE};
    const acm_precision prec = _i < 6 ? ACM_PRECISION_FP64 : ACM_PRECISION_FP32;
    const acm_kernel kernel = structures[_i % 3];
    const acm_ib_spread spread = (_i / 3) % 2 ? ACM_IB_SPREAD_GATHER : ACM_IB_SPREAD_SCATTER;
    /* FP64: the atomics only reorder additions; FP32: float atomics and float
     * arithmetic in another order, amplified over the run by the free body */
    const double tol = prec == ACM_PRECISION_FP64 ? 1e-10 : 2e-4;
    double Fc[2][3], Tc[2][3], Fg[2][3], Tg[2][3];
    acm_domain *cpu = run_solids(ACM_BACKEND_CPU, prec, ACM_KERNEL_DEFAULT, spread, Fc, Tc);
    acm_domain *gpu = run_solids(ACM_BACKEND_CUDA, prec, kernel, spread, Fg, Tg);
    const size_t n = 24 * 14 * 12;
    double *uc = field_n(cpu, ACM_FIELD_VELOCITY, 3, n), *ug = field_n(gpu, ACM_FIELD_VELOCITY, 3, n);
    const double du = rel_diff(ug, uc, 3 * n), dF = rel_diff(&Fg[0][0], &Fc[0][0], 6),
                 dT = rel_diff(&Tg[0][0], &Tc[0][0], 6);
    printf("solids GPU vs CPU, kernel %d spread %d precision %d: velocity %.2e force %.2e "
           "torque %.2e\n",
           kernel, spread, prec, du, dF, dT);
    ck_assert_msg(du <= tol && dF <= tol && dT <= 10 * tol,
                  "velocity %g, force %g, torque %g (tolerance %g)", du, dF, dT, tol);
    free(uc);
    free(ug);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}
END_TEST

/* A translating, spinning sphere of 2000 samples beside a static one, stepped
 * on `backend` (FP64) until it has drifted by a few sample blocks: its
 * samples re-sorted there (on the GPU by acm_cuda_ib_resort, with no host
 * round trip; on the CPU by the host's sort). pos: the moving sphere's
 * sample positions after `steps`; then the static sphere is destroyed (the
 * GPU's order comes home for the new attach) and 20 more steps run. */
static acm_domain *resort_scene(acm_backend backend, int64_t steps, double *pos, double *pos0,
                                double F[3], int64_t *resorts)
{
    acm_domain_options o = acm_test_options(32, 16, 16, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    o.backend = backend;
    acm_domain *d = acm_test_domain(&o);
    double *pts, *areas;
    const double at[3] = {8.0, 8.0, 8.0}, still[3] = {24.0, 8.0, 8.0};
    acm_solid_options so = acm_test_moving_sphere(2000, 3.0, at, &pts, &areas);
    acm_solid *moving = NULL, *fixed = NULL;
    ACM_CK_OK(d, acm_solid_create(&moving, d, &so));
    free(pts);
    free(areas);
    so = acm_test_moving_sphere(300, 2.0, still, &pts, &areas);
    so.motion = ACM_MOTION_STATIC;
    so.velocity[0] = so.angular_velocity[2] = 0.0;
    ACM_CK_OK(d, acm_solid_create(&fixed, d, &so));
    free(pts);
    free(areas);
    ck_assert_int_eq(acm_solid_get_samples(moving, pos0, 2000), ACM_OK);
    ACM_CK_OK(d, acm_step(d, steps));
    ck_assert_int_eq(acm_solid_get_samples(moving, pos, 2000), ACM_OK);
    acm_solid_info info = {.version = ACM_SOLID_INFO_VERSION};
    ck_assert_int_eq(acm_solid_get_info(moving, &info), ACM_OK);
    *resorts = info.resorts;
    acm_solid_destroy(fixed);
    ACM_CK_OK(d, acm_step(d, 20));
    double T[3];
    ck_assert_int_eq(acm_solid_get_force(moving, F, T), ACM_OK);
    return d;
}

START_TEST(gpu_resorts_samples_like_the_cpu)
{
    const int64_t steps = 150; /* 4.5 cells at 0.03 a step: blocks of 2 cells, re-sorted */
    double *pc = malloc(4 * 3 * 2000 * sizeof(double)), *pg = pc + 6000;
    double *c0 = pc + 12000, *g0 = pc + 18000, Fc[3], Fg[3];
    int64_t rc = 0, rg = 0;
    ck_assert_ptr_nonnull(pc);
    acm_domain *cpu = resort_scene(ACM_BACKEND_CPU, steps, pc, c0, Fc, &rc);
    acm_domain *gpu = resort_scene(ACM_BACKEND_CUDA, steps, pg, g0, Fg, &rg);
    /* the same samples in the same order as the host's sort put them */
    double worst = 0.0, moved = 0.0;
    for (int i = 0; i < 6000; ++i)
        worst = fmax(worst, fabs(pg[i] - pc[i]));
    /* and that order is not the first one carried along: sample l of the
     * first order, moved by 4.5 cells and turned by 1.5 rad about z */
    const double ang = 0.01 * (double)steps, cs = cos(ang), sn = sin(ang);
    for (int l = 0; l < 2000; ++l) {
        const double rx = g0[3 * l] - 8.0, ry = g0[3 * l + 1] - 8.0;
        const double x = 8.0 + 0.03 * (double)steps + cs * rx - sn * ry, y = 8.0 + sn * rx + cs * ry;
        moved = fmax(moved, hypot(pg[3 * l] - x, pg[3 * l + 1] - y));
    }
    const size_t n = 32 * 16 * 16;
    double *uc = field_n(cpu, ACM_FIELD_VELOCITY, 3, n), *ug = field_n(gpu, ACM_FIELD_VELOCITY, 3, n);
    const double du = rel_diff(ug, uc, 3 * n), dF = rel_diff(Fg, Fc, 3);
    printf("device re-sort: %lld re-sorts (CPU %lld); sample positions GPU vs CPU %.2e cells; "
           "farthest sample from its first-order place %.2f cells; after the order came home: "
           "velocity %.2e force %.2e\n",
           (long long)rg, (long long)rc, worst, moved, du, dF);
    ck_assert_msg(rg >= 1 && rg == rc, "re-sorts: GPU %lld, CPU %lld", (long long)rg,
                  (long long)rc);
    ck_assert_msg(worst <= 1e-9, "GPU sample order differs from the CPU's: %g cells", worst);
    ck_assert_msg(moved >= 0.5, "the samples were never re-sorted (%g cells)", moved);
    ck_assert_msg(du <= 1e-10 && dF <= 1e-10, "velocity %g, force %g", du, dF);
    free(uc);
    free(ug);
    free(pc);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}
END_TEST

/* Seconds of a monotonic clock. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A host function on the domain's stream: the device's work behind it waits. */
static void CUDART_CB hold_the_stream(void *seconds)
{
    const double t = *(const double *)seconds;
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    nanosleep(&ts, NULL);
}

/* 150 steps in calls of 1 to 7 by acm_step (runs false: kernel by kernel,
 * checked) or acm_cuda_step_async (runs), then acm_cuda_domain_synchronize;
 * the first status that is not ACM_OK (the calls stop there). *host: seconds
 * the calls took. held > 0 (runs): the domain's stream is held that many
 * seconds first, so that the calls, their recordings among them, are made
 * while the device is behind (the inbox full: cuda/backend_device.cu). */
static acm_status step_calls_held(acm_domain *d, bool runs, double held, double *host)
{
    static const int calls[] = {5, 1, 7, 2, 3, 4, 6, 1, 1, 2};
    *host = 0.0;
    if (runs && held > 0.0) {
        cudaStream_t stream = NULL;
        const acm_status st = acm_cuda_domain_get_stream(d, &stream);
        if (st != ACM_OK)
            return st;
        if (cudaLaunchHostFunc(stream, hold_the_stream, (void *)&held) != cudaSuccess)
            return ACM_ERR_DEVICE;
    }
    int64_t left = 150;
    for (int k = 0; left > 0; k = (k + 1) % (int)(sizeof calls / sizeof calls[0])) {
        const int64_t n = calls[k] < left ? calls[k] : left;
        const double t0 = now_s();
        const acm_status st = runs ? acm_cuda_step_async(d, n) : acm_step(d, n);
        *host += now_s() - t0;
        if (st != ACM_OK)
            return st;
        left -= n;
    }
    return acm_cuda_domain_synchronize(d);
}

static acm_status step_calls(acm_domain *d, bool runs, double *host)
{
    return step_calls_held(d, runs, 0.0, host);
}

/* Two moving spheres with a static one between them in the sample arrays,
 * re-sorted at different steps: sphere A (2000 samples) as in resort_scene,
 * sphere B (300 samples) slower, the other way and turning the other way.
 * 150 steps on `backend`: by acm_step on the CPU, by step_calls on the GPU
 * (runs: acm_cuda_step_async). pos: A's and B's sample positions after
 * them (2300 of 3), resorts: their re-sort counts. */
static acm_domain *two_movers(acm_backend backend, bool runs, double held, double *pos,
                              int64_t resorts[2])
{
    acm_domain_options o = acm_test_options(32, 16, 16, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    o.backend = backend;
    acm_domain *d = acm_test_domain(&o);
    double *pts, *areas;
    const double at[3][3] = {{8.0, 8.0, 8.0}, {16.0, 8.0, 13.0}, {24.0, 8.0, 8.0}};
    const int count[3] = {2000, 200, 300};
    const double radius[3] = {3.0, 1.5, 2.0};
    acm_solid *s[3];
    for (int k = 0; k < 3; ++k) {
        acm_solid_options so = acm_test_moving_sphere(count[k], radius[k], at[k], &pts, &areas);
        if (k == 1) {
            so.motion = ACM_MOTION_STATIC;
            so.velocity[0] = so.angular_velocity[2] = 0.0;
        } else if (k == 2) {
            so.velocity[0] = -0.011;
            so.angular_velocity[2] = -0.004;
        }
        ACM_CK_OK(d, acm_solid_create(&s[k], d, &so));
        free(pts);
        free(areas);
    }
    double host = 0.0;
    ACM_CK_OK(d, backend == ACM_BACKEND_CPU ? acm_step(d, 150)
                                            : step_calls_held(d, runs, held, &host));
    for (int k = 0; k < 2; ++k) {
        acm_solid *m = s[2 * k];
        ck_assert_int_eq(acm_solid_get_samples(m, pos + 6000 * k, (size_t)count[2 * k]), ACM_OK);
        acm_solid_info info = {.version = ACM_SOLID_INFO_VERSION};
        ck_assert_int_eq(acm_solid_get_info(m, &info), ACM_OK);
        resorts[k] = info.resorts;
    }
    return d;
}

/* The device re-sorts the solids due at a step in one sort (cuda/kernels/
 * ib_sort.cu: each solid's entry above its keys), in runs the solids whose
 * flags of the step are set among all that may be re-sorted: each solid's
 * samples come out in the order the CPU's sort of it alone gives, with the
 * CPU's re-sort counts, the two solids re-sorted at different steps. Case 0
 * launched (acm_step), case 1 in runs (acm_cuda_step_async), case 2 in runs
 * made while the device is held 0.3 s: the calls record and replay graphs
 * with the inbox's slots all filled. */
START_TEST(gpu_resorts_solids_together_like_the_cpu)
{
    double *pc = malloc(2 * 3 * 2300 * sizeof(double)), *pg = pc + 6900;
    int64_t rc[2], rg[2];
    ck_assert_ptr_nonnull(pc);
    acm_domain *cpu = two_movers(ACM_BACKEND_CPU, false, 0.0, pc, rc);
    acm_domain *gpu = two_movers(ACM_BACKEND_CUDA, _i >= 1, _i == 2 ? 0.3 : 0.0, pg, rg);
    double worst = 0.0;
    for (int i = 0; i < 6900; ++i)
        worst = fmax(worst, fabs(pg[i] - pc[i]));
    printf("two solids re-sorted, %s: re-sorts GPU %lld and %lld, CPU %lld and %lld; sample "
           "positions GPU vs CPU %.2e cells\n",
           _i == 2 ? "in runs behind a held stream" : _i == 1 ? "in runs" : "launched", (long long)rg[0], (long long)rg[1],
           (long long)rc[0], (long long)rc[1], worst);
    ck_assert_msg(rg[0] == rc[0] && rg[1] == rc[1], "re-sorts: GPU %lld %lld, CPU %lld %lld",
                  (long long)rg[0], (long long)rg[1], (long long)rc[0], (long long)rc[1]);
    /* both re-sorted, B less often: at some step one of them alone */
    ck_assert_msg(rc[1] >= 1 && rc[0] > rc[1], "re-sorts %lld and %lld", (long long)rc[0],
                  (long long)rc[1]);
    ck_assert_msg(worst <= 1e-9, "GPU sample order differs from the CPU's: %g cells", worst);
    free(pc);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}
END_TEST

/* The scene of run_steps_match_launched_steps on the GPU: a sphere of 2000
 * samples moving at 0.03 a step and spinning (or, cases 4 and 5, static;
 * from case 6 a free body, twice as dense as the fluid, launched so and
 * pulled along x: 5e-4 a step, case 8 5e-2, which brings it to the speed
 * limit within a few steps) beside a static one (case 9: a second free body), stepped by
 * step_calls (which must succeed but in case 8). */
static acm_domain *runs_scene(int c, bool runs, acm_solid **moving, acm_solid **second,
                              double *host)
{
    const acm_precision prec = c == 0 || c == 4 || c == 6 || c == 8 || c == 9 ? ACM_PRECISION_FP64
                                                                              : ACM_PRECISION_FP32;
    acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, c == 2 ? ACM_KERNEL_SPLIT : ACM_KERNEL_FUSED);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE,
                                    c == 3 ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS),
                     ACM_OK);
    if (c == 4 || c == 5)
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, ACM_IB_SPREAD_GATHER), ACM_OK);
    acm_domain_options o = acm_test_options(32, 16, 16, 0.05, ACM_COLLISION_DEFAULT, prec);
    o.backend = ACM_BACKEND_CUDA;
    o.layout = l;
    o.initial_velocity[0] = 0.02;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    double *pts, *areas;
    const double at[3] = {8.0, 8.0, 8.0}, still[3] = {24.0, 8.0, 8.0};
    acm_solid_options so = acm_test_moving_sphere(2000, 3.0, at, &pts, &areas);
    if (c == 4 || c == 5) {
        so.motion = ACM_MOTION_STATIC;
        so.velocity[0] = so.angular_velocity[2] = 0.0;
    } else if (c >= 6) {
        so.motion = ACM_MOTION_FREE;
        so.density = 2.0;
        so.volume = 4.0 / 3.0 * M_PI * 27.0;
        so.inertia[0] = so.inertia[1] = so.inertia[2] = 0.4 * 2.0 * so.volume * 9.0;
        so.gravity[0] = c == 8 ? 5e-2 : 5e-4;
    }
    ACM_CK_OK(d, acm_solid_create(moving, d, &so));
    free(pts);
    free(areas);
    so = acm_test_moving_sphere(300, 2.0, still, &pts, &areas);
    so.motion = c == 9 ? ACM_MOTION_FREE : ACM_MOTION_STATIC; /* 9: a second free body */
    so.velocity[0] = so.angular_velocity[2] = 0.0;
    if (c == 9) {
        so.density = 2.0;
        so.volume = 4.0 / 3.0 * M_PI * 8.0;
        so.inertia[0] = so.inertia[1] = so.inertia[2] = 0.4 * 2.0 * so.volume * 4.0;
    }
    acm_solid *fixed = NULL;
    ACM_CK_OK(d, acm_solid_create(&fixed, d, &so));
    if (second != NULL)
        *second = fixed;
    free(pts);
    free(areas);
    const acm_status st = step_calls(d, runs, host);
    if (c == 8) {
        ck_assert_msg(st == ACM_ERR_DIVERGED, "status %d: %s", (int)st, acm_domain_last_error(d));
        return d;
    }
    ACM_CK_OK(d, st);
    ck_assert_int_eq(acm_test_stats(d).step, 150);
    return d;
}

/* Largest difference of two arrays of n doubles, and how many differ in any bit. */
static double most_apart(const double *a, const double *b, size_t n, size_t *differ)
{
    double m = 0.0;
    *differ = 0;
    for (size_t k = 0; k < n; ++k) {
        m = fmax(m, fabs(a[k] - b[k]));
        *differ += memcmp(&a[k], &b[k], sizeof(double)) != 0;
    }
    return m;
}

/* acm_cuda_step_async on a domain with solids (static and prescribed, no
 * smoke) records runs of up to 16 steps into CUDA graphs and replays them
 * (cuda/backend_graph.cu, "runs"). The moving sphere of runs_scene drifts by
 * 4.5 cells over 150 steps, so its samples are re-sorted on the device inside
 * replayed runs and between them. Against the same steps launched kernel by
 * kernel (acm_step): the same sample positions and re-sorts, bitwise, and
 * the populations as close as two launched runs are to each other (the
 * scatter spreads forces with atomics, whose order changes run to run: cases
 * 0-3, 0 fused FP64, 1 fused FP32, 2 split FP32, 3 FP32 moment storage), or
 * bitwise equal where two launched runs are (both spheres static and the
 * forces gathered: 4 FP64, 5 FP32, which has no atomics). */
START_TEST(run_steps_match_launched_steps)
{
    const size_t n = 27 * 32 * 16 * 16;
    acm_domain *d[3];
    acm_solid *s[3];
    double host[3], *f[3], *X[3], F[3][3], T[3][3];
    int64_t resorts[3];
    for (int r = 0; r < 3; ++r) { /* launched, launched again, runs */
        d[r] = runs_scene(_i, r == 2, &s[r], NULL, &host[r]);
        f[r] = field_n(d[r], ACM_FIELD_POPULATIONS, 27, n / 27);
        X[r] = malloc(3 * 2000 * sizeof(double));
        ck_assert_ptr_nonnull(X[r]);
        ck_assert_int_eq(acm_solid_get_samples(s[r], X[r], 2000), ACM_OK);
        ck_assert_int_eq(acm_solid_get_force(s[r], F[r], T[r]), ACM_OK);
        acm_solid_info info = {.version = ACM_SOLID_INFO_VERSION};
        ck_assert_int_eq(acm_solid_get_info(s[r], &info), ACM_OK);
        resorts[r] = info.resorts;
    }
    size_t twins = 0, runs = 0, samples = 0;
    const double noise = most_apart(f[0], f[1], n, &twins), apart = most_apart(f[0], f[2], n, &runs);
    const bool bitwise = twins == 0; /* the launched steps repeat themselves bitwise */
    (void)most_apart(X[0], X[2], 3 * 2000, &samples);
    const double dF = fabs(F[2][0] - F[0][0]) / fabs(F[0][0]);
    printf("runs with solids, case %d: populations launched twice %zu differ (at most %.2e), "
           "launched and in runs %zu differ (at most %.2e); sample coordinates %zu differ; "
           "force x %.8e, in runs %.2e apart; re-sorts %lld and %lld; the calls' host time "
           "%.1f us a step launched and checked, %.1f us a step in runs\n",
           _i, twins, noise, runs, apart, samples, F[0][0], dF, (long long)resorts[0],
           (long long)resorts[2], 1e6 * host[0] / 150.0, 1e6 * host[2] / 150.0);
    ck_assert_msg(samples == 0, "%zu sample coordinates differ", samples);
    ck_assert_msg(resorts[2] == resorts[0] && (_i >= 4 || resorts[0] >= 2), "re-sorts %lld and %lld",
                  (long long)resorts[0], (long long)resorts[2]);
    if (bitwise) {
        ck_assert_msg(runs == 0 && memcmp(F[0], F[2], sizeof F[0]) == 0 &&
                          memcmp(T[0], T[2], sizeof T[0]) == 0,
                      "%zu populations differ (at most %g), or the force", runs, apart);
    } else { /* a misplaced solid moves populations by ~1e-4 */
        const double floor = _i == 0 ? 1e-13 : 1e-6;
        ck_assert_msg(apart <= 10.0 * noise + floor,
                      "runs %g apart, launched twins %g apart", apart, noise);
        ck_assert_msg(dF <= (_i == 0 ? 1e-12 : 1e-5), "force %g apart", dF);
    }
    for (int r = 0; r < 3; ++r) {
        free(f[r]);
        free(X[r]);
        acm_domain_destroy(d[r]);
    }
}
END_TEST

/* A free body in acm_cuda_step_async's runs moves on the device: its force,
 * Newton-Euler step, speed limit and re-sort test in the recorded graphs
 * (kernels/rigid.cu, the host's rounding), its state read back when the host
 * asks for it. Against the same steps launched kernel by kernel, whose
 * bodies the host moves (runs_scene cases 6 FP64, 7 FP32): graphs were
 * replayed, the same re-sorts (at least 2), the body's state and the
 * populations as close as two launched runs are to each other (the scatter's
 * atomics change the forces' last bits run to run, and the trajectory with
 * them) within a floor. Case 8 (FP64): the body reaches the speed limit; the
 * runs report it at acm_cuda_domain_synchronize, for the step the launched
 * acm_step names, with the body's state of that step. Case 9 (FP64): the
 * other sphere is free too (the bodies of a step integrated in one batch of
 * kernels), both bodies' states compared. */
static int64_t named_step(const acm_domain *d, const char *what)
{
    const char *at = strstr(acm_domain_last_error(d), what);
    long long step = -1;
    ck_assert_msg(at != NULL && sscanf(at + strlen(what), "%lld", &step) == 1, "%s",
                  acm_domain_last_error(d));
    return (int64_t)step;
}

static void body_state(acm_solid *s, double out[13])
{
    acm_solid_state st = {.version = ACM_SOLID_STATE_VERSION};
    ck_assert_int_eq(acm_solid_get_state(s, &st), ACM_OK);
    memcpy(out, st.position, 3 * sizeof(double));
    memcpy(out + 3, st.orientation, 4 * sizeof(double));
    memcpy(out + 7, st.velocity, 3 * sizeof(double));
    memcpy(out + 10, st.angular_velocity, 3 * sizeof(double));
}

START_TEST(free_body_runs_match_launched_steps)
{
    const int c = 6 + _i;
    const size_t n = 27 * 32 * 16 * 16;
    acm_domain *d[3];
    acm_solid *s[3], *t[3];
    double host[3], *f[3], b[3][26];
    int64_t resorts[3], step[3] = {0, 0, 0}, graphs = 0;
    for (int r = 0; r < 3; ++r) { /* launched, launched again, runs */
        d[r] = runs_scene(c, r == 2, &s[r], &t[r], &host[r]);
        if (c == 8) { /* "solid 0 reached the surface speed ... at step N" */
            ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d[r]), "surface speed"));
            step[r] = named_step(d[r], "at step ");
        }
        body_state(s[r], b[r]);
        body_state(t[r], b[r] + 13); /* the second sphere: free in case 9, else static */
        f[r] = field_n(d[r], ACM_FIELD_POPULATIONS, 27, n / 27);
        acm_solid_info info = {.version = ACM_SOLID_INFO_VERSION};
        ck_assert_int_eq(acm_solid_get_info(s[r], &info), ACM_OK);
        resorts[r] = info.resorts;
    }
    ck_assert_int_eq(acm_cuda_graphs_recorded(d[2], &graphs), ACM_OK);
    size_t twins = 0, runs = 0, bt = 0, br = 0;
    const double noise = most_apart(f[0], f[1], n, &twins), apart = most_apart(f[0], f[2], n, &runs);
    const double bnoise = most_apart(b[0], b[1], 26, &bt), bapart = most_apart(b[0], b[2], 26, &br);
    printf("free body in runs, case %d: %lld graphs; populations launched twice %zu differ (at "
           "most %.2e), launched and in runs %zu (at most %.2e); body state twice %zu differ "
           "(%.2e), in runs %zu (%.2e); x %.6f -> %.6f, v %.6f; re-sorts %lld and %lld; "
           "second sphere x 24 -> %.6f; limit at step %lld / %lld; host %.1f / %.1f us a step\n",
           c, (long long)graphs, twins, noise, runs, apart, bt, bnoise, br, bapart, 8.0, b[0][0],
           b[0][7], (long long)resorts[0], (long long)resorts[2], b[0][13],
           (long long)step[0], (long long)step[2], 1e6 * host[0] / 150.0, 1e6 * host[2] / 150.0);
    ck_assert_msg(graphs > 0, "the free body's steps were not replayed from graphs");
    ck_assert_msg(c == 8 || b[0][0] > 10.0, "the body moved from x = 8 to %g only", b[0][0]);
    ck_assert_msg(c != 9 || b[0][13] > 24.1, "the second body moved from x = 24 to %g only",
                  b[0][13]);
    ck_assert_msg(resorts[2] == resorts[0] && (c == 8 || resorts[0] >= 2),
                  "re-sorts %lld and %lld", (long long)resorts[0], (long long)resorts[2]);
    const double floor = c == 7 ? 1e-6 : 1e-12;
    ck_assert_msg(c == 8 || apart <= 10.0 * noise + floor, /* 8: the runs' fluid went on */
                  "runs %g apart, launched twins %g", apart, noise);
    ck_assert_msg(bapart <= 10.0 * bnoise + floor, "body state %g apart, launched twins %g", bapart,
                  bnoise);
    ck_assert_msg(step[2] == step[0], "the speed limit at step %lld launched, %lld in runs",
                  (long long)step[0], (long long)step[2]);
    for (int r = 0; r < 3; ++r) {
        free(f[r]);
        acm_domain_destroy(d[r]);
    }
}
END_TEST

/* A static solid moved by the caller between runs (gathered forces: its
 * region is cut around its pose on the host, so the pose is part of a run's
 * key): after the 150 steps of runs_scene (case 5, FP32, no atomics), the
 * sphere moves by 1.5 cells and 12 more steps follow, launched or in runs.
 * Bitwise the same populations; a graph recorded before the move would put
 * the forces where the sphere was. */
START_TEST(run_steps_follow_a_moved_static_solid)
{
    const size_t n = 32 * 16 * 16;
    double *f[2];
    for (int r = 0; r < 2; ++r) {
        acm_solid *s = NULL;
        double host = 0.0;
        acm_domain *d = runs_scene(5, r == 1, &s, NULL, &host);
        acm_solid_state st = {.version = ACM_SOLID_STATE_VERSION};
        ck_assert_int_eq(acm_solid_get_state(s, &st), ACM_OK);
        st.position[0] += 1.5;
        ck_assert_int_eq(acm_solid_set_state(s, &st), ACM_OK);
        for (int k = 0; k < 3; ++k)
            ACM_CK_OK(d, r == 1 ? acm_cuda_step_async(d, 4) : acm_step(d, 4));
        ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
        f[r] = field_n(d, ACM_FIELD_POPULATIONS, 27, n);
        acm_domain_destroy(d);
    }
    size_t differ = 0;
    const double apart = most_apart(f[0], f[1], 27 * n, &differ);
    printf("runs after a static solid moved: %zu of %zu populations differ (at most %.2e)\n",
           differ, 27 * n, apart);
    ck_assert_msg(differ == 0, "%zu populations differ, at most %g", differ, apart);
    free(f[0]);
    free(f[1]);
}
END_TEST

/* acm_cuda_step_prepare records what a call of that many steps replays and
 * makes no step: right after it the populations, the step count and the
 * solids' poses and samples are bitwise what they were, and the same calls
 * after it give bitwise the state of a twin domain that never prepared
 * (case 5 of runs_scene, no atomics: a static sphere, gathered forces; and
 * the fluid alone, SCENE_INFLOW_FORCE), and record no graph. Its argument
 * is checked. */
static void expect_prepare_changes_nothing(acm_domain *d, size_t n, acm_solid *s, int64_t nsteps)
{
    const int64_t step = acm_test_stats(d).step;
    double *before = field_n(d, ACM_FIELD_POPULATIONS, 27, n);
    acm_solid_state st0 = {.version = ACM_SOLID_STATE_VERSION};
    acm_solid_state st1 = st0;
    if (s != NULL)
        ck_assert_int_eq(acm_solid_get_state(s, &st0), ACM_OK);
    ACM_CK_OK(d, acm_cuda_step_prepare(d, nsteps));
    ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
    ck_assert_int_eq(acm_test_stats(d).step, step);
    if (s != NULL) {
        ck_assert_int_eq(acm_solid_get_state(s, &st1), ACM_OK);
        ck_assert_msg(memcmp(&st0, &st1, sizeof st0) == 0, "the solid's state changed");
    }
    double *after = field_n(d, ACM_FIELD_POPULATIONS, 27, n);
    ck_assert_msg(memcmp(before, after, 27 * n * sizeof(double)) == 0,
                  "acm_cuda_step_prepare(%lld) changed the populations", (long long)nsteps);
    free(before);
    free(after);
}

START_TEST(prepared_steps_change_nothing)
{
    static const int64_t calls[] = {4, 4, 5, 4, 16, 3};
    acm_domain *d[2];
    acm_solid *s[2] = {NULL, NULL};
    double host = 0.0;
    for (int r = 0; r < 2; ++r)
        d[r] = _i == 0 ? runs_scene(5, true, &s[r], NULL, &host)
                       : run_scene(ACM_BACKEND_CUDA, SCENE_INFLOW_FORCE, ACM_COLLISION_DEFAULT,
                                   ACM_PRECISION_FP32, ACM_KERNEL_FUSED,
                                   ACM_STORAGE_POPULATIONS, 0);
    const size_t n = _i == 0 ? 32 * 16 * 16 : NCELLS;
    ACM_CK_FAIL(d[1], acm_cuda_step_prepare(d[1], -1), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_cuda_step_prepare(NULL, 4), ACM_ERR_NULL_POINTER);
    int64_t made[2];
    ck_assert_int_eq(acm_cuda_graphs_recorded(NULL, &made[0]), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d[1], acm_cuda_graphs_recorded(d[1], NULL), ACM_ERR_NULL_POINTER);
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; ++k) {
        expect_prepare_changes_nothing(d[1], n, s[1], calls[k]);
        ACM_CK_OK(d[1], acm_cuda_graphs_recorded(d[1], &made[0]));
        ACM_CK_OK(d[1], acm_cuda_step_prepare(d[1], calls[k])); /* found: nothing to do */
        for (int r = 0; r < 2; ++r)
            ACM_CK_OK(d[r], acm_cuda_step_async(d[r], calls[k]));
        ACM_CK_OK(d[1], acm_cuda_graphs_recorded(d[1], &made[1]));
        ck_assert_msg(made[1] == made[0] && made[0] > 0,
                      "case %d: %lld prepared steps recorded %lld graphs (%lld before)", _i,
                      (long long)calls[k], (long long)(made[1] - made[0]), (long long)made[0]);
    }
    double *f[2];
    for (int r = 0; r < 2; ++r) {
        ACM_CK_OK(d[r], acm_cuda_domain_synchronize(d[r]));
        f[r] = field_n(d[r], ACM_FIELD_POPULATIONS, 27, n);
    }
    ck_assert_int_eq(acm_test_stats(d[1]).step, acm_test_stats(d[0]).step);
    size_t differ = 0;
    const double apart = most_apart(f[0], f[1], 27 * n, &differ);
    ck_assert_msg(differ == 0, "case %d: %zu populations differ after prepared steps (at most %g)",
                  _i, differ, apart);
    for (int r = 0; r < 2; ++r) {
        free(f[r]);
        acm_domain_destroy(d[r]);
    }
}
END_TEST

/* A game's frame loop: acm_cuda_step_prepare(K) at the level load, then
 * frames of acm_cuda_step_async(K) that record no graph (a recording costs
 * the frame about a millisecond): K odd (the parity turns from call to call)
 * and even (4: one device loop; 6: a loop and two steps unrolled), for a
 * prescribed sphere moving past a static one (forces spread; its samples
 * re-sorted), a static sphere whose forces are gathered (placed in the first
 * step only) and the fluid alone. */
static acm_domain *frames_scene(int c)
{
    if (c == 2)
        return run_scene(ACM_BACKEND_CUDA, SCENE_INFLOW_FORCE, ACM_COLLISION_DEFAULT,
                         ACM_PRECISION_FP32, ACM_KERNEL_FUSED, ACM_STORAGE_POPULATIONS, 0);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, ACM_KERNEL_FUSED);
    if (c == 1)
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, ACM_IB_SPREAD_GATHER), ACM_OK);
    acm_domain_options o = acm_test_options(32, 16, 16, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    o.layout = l;
    o.initial_velocity[0] = 0.02;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const double at[2][3] = {{8.0, 8.0, 8.0}, {24.0, 8.0, 8.0}};
    for (int k = c; k < 2; ++k) { /* c 0: both; c 1: the static one */
        double *pts, *areas;
        acm_solid_options so = acm_test_moving_sphere(k == 0 ? 2000 : 300, k == 0 ? 3.0 : 2.0,
                                                      at[k], &pts, &areas);
        if (k == 1) {
            so.motion = ACM_MOTION_STATIC;
            so.velocity[0] = so.angular_velocity[2] = 0.0;
        }
        acm_solid *s = NULL;
        ACM_CK_OK(d, acm_solid_create(&s, d, &so));
        free(pts);
        free(areas);
    }
    return d;
}

START_TEST(prepared_frames_record_nothing)
{
    static const int64_t frame_steps[3] = {3, 4, 6}; /* 4: a loop; 6: and 2 after it */
    const int c = _i / 3;
    const int64_t K = frame_steps[_i % 3];
    acm_domain *d = frames_scene(c);
    int64_t made[2];
    ACM_CK_OK(d, acm_cuda_graphs_recorded(d, &made[0]));
    ck_assert_int_eq(made[0], 0);
    ACM_CK_OK(d, acm_cuda_step_prepare(d, K));
    ACM_CK_OK(d, acm_cuda_graphs_recorded(d, &made[0]));
    ck_assert_msg(made[0] > 0, "scene %d: acm_cuda_step_prepare(%lld) recorded nothing", c,
                  (long long)K);
    for (int frame = 0; frame < 12; ++frame) {
        ACM_CK_OK(d, acm_cuda_step_async(d, K));
        ACM_CK_OK(d, acm_cuda_graphs_recorded(d, &made[1]));
        ck_assert_msg(made[1] == made[0],
                      "scene %d, %lld steps a frame: frame %d recorded %lld graphs after the "
                      "%lld of the level load", c, (long long)K, frame,
                      (long long)(made[1] - made[0]), (long long)made[0]);
    }
    ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
    ck_assert_int_eq(acm_test_stats(d).step, 12 * K);
    acm_domain_destroy(d);
}
END_TEST

/* A run of any multiple of ACM_LOOP_STEPS steps is one device loop
 * (cuda/backend_graph.cu, "runs as loops"): after acm_cuda_step_prepare(8),
 * frames of 8, 16, 24 (a run of 16, one of 8), 32 and 8 steps record no
 * graph (unrolled, each length would be a graph of its own), for the first
 * two scenes of prepared_frames_record_nothing (a prescribed sphere
 * re-sorted on the device past a static one; a static one gathering its
 * forces, whose first frame, the sphere just placed, is not a loop). The
 * fluid alone replays unrolled runs (advance_many): left out. */
START_TEST(loops_serve_runs_of_many_lengths)
{
    static const int64_t frames[] = {8, 16, 24, 32, 8};
    acm_domain *d = frames_scene(_i);
    int64_t made[2];
    ACM_CK_OK(d, acm_cuda_step_prepare(d, 8));
    ACM_CK_OK(d, acm_cuda_graphs_recorded(d, &made[0]));
    int64_t steps = 0;
    for (size_t k = 0; k < sizeof frames / sizeof frames[0]; ++k) {
        ACM_CK_OK(d, acm_cuda_step_async(d, frames[k]));
        steps += frames[k];
        ACM_CK_OK(d, acm_cuda_graphs_recorded(d, &made[1]));
        ck_assert_msg(made[1] == made[0],
                      "scene %d: a frame of %lld steps recorded %lld graphs after the %lld of "
                      "acm_cuda_step_prepare(8)", _i, (long long)frames[k],
                      (long long)(made[1] - made[0]), (long long)made[0]);
    }
    ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
    ck_assert_int_eq(acm_test_stats(d).step, steps);
    acm_domain_destroy(d);
}
END_TEST

/* A smoke shed from a cube solid and absorbed by it (FP64 flow past it),
 * on the GPU (each kernel structure: _i 0 fused, 1 split, 2 baseline) and
 * on the CPU: the same counters, the same particles, and the density
 * projected into the caller's device memory on the caller's stream equal to
 * the host's projection. */
/* Smoke shed from a cube solid's surface (the smoke scenes below). */
static void add_cube_emitter(acm_smoke *s, acm_solid *cube)
{
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SOLID;
    e.solid = cube;
    e.offset = 0.5;
    e.rate = 20.0;
    e.lifetime = 150;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_OK);
}

static acm_domain *smoke_scene(acm_backend b, acm_smoke **s)
{
    acm_domain_options o = acm_test_options(40, 24, 24, 0.02, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    o.backend = b;
    o.initial_velocity[0] = 0.05;
    acm_domain *d = acm_test_domain(&o);
    const double c[3] = {14.0, 12.0, 12.0};
    acm_solid *cube = acm_test_cube_solid(d, 8.0, c, ACM_MOTION_STATIC);
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = 3000;
    so.seed = 11;
    ACM_CK_OK(d, acm_smoke_create(s, d, &so));
    add_cube_emitter(*s, cube);
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX; /* upstream of the cube and in it */
    e.lo[0] = 2.0;
    e.lo[1] = 8.0;
    e.lo[2] = 8.0;
    e.hi[0] = 16.0;
    e.hi[1] = 16.0;
    e.hi[2] = 16.0;
    e.rate = 7.5;
    ck_assert_int_eq(acm_smoke_add_emitter(*s, &e), ACM_OK);
    return d;
}

START_TEST(gpu_smoke_matches_cpu)
{
    acm_smoke *s[2];
    acm_domain *d[2] = {smoke_scene(ACM_BACKEND_CUDA, &s[0]), smoke_scene(ACM_BACKEND_CPU, &s[1])};
    acm_layout *l = acm_test_layout(ACM_LAYOUT_KERNEL, kernels[_i]);
    ACM_CK_OK(d[0], acm_domain_set_layout(d[0], l));
    acm_layout_destroy(l);
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreate(&stream), cudaSuccess);
    ACM_CK_OK(d[0], acm_cuda_domain_set_stream(d[0], stream));
    ACM_CK_OK(d[0], acm_cuda_step_async(d[0], 100));
    ACM_CK_OK(d[1], acm_step(d[1], 100));
    const size_t nvox = 80 * 48 * 48;
    float *dev = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&dev, nvox * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(acm_cuda_smoke_density(s[0], 2, dev, nvox), ACM_OK);
    float *mapped = acm_test_alloc(nvox * sizeof(float)), *host = acm_test_alloc(nvox * sizeof(float)),
          *cpu = acm_test_alloc(nvox * sizeof(float));
    ck_assert_int_eq(cudaMemcpyAsync(mapped, dev, nvox * sizeof(float), cudaMemcpyDeviceToHost, stream),
                     cudaSuccess);
    ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
    acm_smoke_info info[2];
    for (int b = 0; b < 2; ++b) {
        memset(&info[b], 0, sizeof info[b]);
        info[b].version = ACM_SMOKE_INFO_VERSION;
        ck_assert_int_eq(acm_smoke_get_info(s[b], &info[b]), ACM_OK);
    }
    ck_assert_uint_eq(info[0].emitted, info[1].emitted);
    ck_assert_uint_eq(info[0].alive, info[1].alive);
    ck_assert_uint_eq(info[0].absorbed, info[1].absorbed);
    ck_assert_uint_eq(info[0].left, info[1].left);
    ck_assert_uint_eq(info[0].expired, info[1].expired);
    ck_assert_uint_gt(info[0].absorbed, 100); /* the box's particles inside the cube */
    ck_assert_int_eq(acm_smoke_density(s[0], 2, host, nvox), ACM_OK);
    ck_assert_int_eq(acm_smoke_density(s[1], 2, cpu, nvox), ACM_OK);
    double worst_mapped = 0.0, worst_cpu = 0.0, total = 0.0;
    for (size_t k = 0; k < nvox; ++k) {
        worst_mapped = fmax(worst_mapped, fabs((double)mapped[k] - host[k]));
        worst_cpu = fmax(worst_cpu, fabs((double)host[k] - cpu[k]));
        total += mapped[k];
    }
    printf("GPU smoke (kernel structure %d): %llu alive, %llu absorbed; device density vs host "
           "copy %.2e, vs the CPU %.2e (particles per cell volume, peak ~8); total %.3f\n",
           (int)kernels[_i], (unsigned long long)info[0].alive,
           (unsigned long long)info[0].absorbed, worst_mapped, worst_cpu, total / 8.0);
    ck_assert_msg(worst_mapped < 1e-4, "device density vs the host's copy: %g", worst_mapped);
    ck_assert_msg(worst_cpu < 1e-3, "GPU density vs the CPU's: %g", worst_cpu);
    ck_assert_msg(fabs(total / 8.0 - (double)info[0].alive) < 1e-4 * (double)info[0].alive,
                  "the grid holds %.3f particles, %llu alive", total / 8.0,
                  (unsigned long long)info[0].alive);
    /* bad calls */
    ck_assert_int_eq(acm_cuda_smoke_density(s[0], 2, dev, nvox - 1), ACM_ERR_BUFFER_SIZE);
    ck_assert_int_eq(acm_cuda_smoke_density(s[0], 2, NULL, nvox), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_cuda_smoke_density(s[0], 0, dev, nvox), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_cuda_smoke_density(NULL, 2, dev, nvox), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_cuda_smoke_density(s[1], 2, dev, nvox), ACM_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s[1]), "cpu"));
    /* the wind at points, GPU (eight threads a point) against CPU: three by hand (one
     * at the box's far x and near z), 37 spread over the box (blocks of 32 points) */
    enum { NPTS = 40 };
    double pts[3 * NPTS] = {5.5, 12.0, 12.0, 20.0, 3.3, 17.1, 39.9, 23.5, 0.2};
    for (int k = 3; k < NPTS; ++k) {
        pts[3 * k] = 0.3 + fmod(7.31 * k, 39.4);
        pts[3 * k + 1] = 0.4 + fmod(3.17 * k, 23.2);
        pts[3 * k + 2] = 0.1 + fmod(5.53 * k, 23.7);
    }
    double w[2][3 * NPTS];
    for (int b = 0; b < 2; ++b)
        ACM_CK_OK(d[b], acm_domain_sample_velocity(d[b], pts, NPTS, w[b]));
    double wind = 0.0;
    for (int k = 0; k < 3 * NPTS; ++k) {
        ck_assert_double_eq_tol(w[0][k], w[1][k], 1e-10);
        wind = fmax(wind, fabs(w[1][k]));
    }
    ck_assert_msg(wind > 1e-4, "the points see wind: at most %g", wind); /* not all zero */
    ck_assert_int_eq(cudaFree(dev), cudaSuccess);
    ACM_CK_OK(d[0], acm_cuda_domain_set_stream(d[0], NULL));
    ck_assert_int_eq(cudaStreamDestroy(stream), cudaSuccess);
    free(mapped);
    free(host);
    free(cpu);
    for (int b = 0; b < 2; ++b)
        acm_domain_destroy(d[b]);
}
END_TEST

/* The smoke of smoke_steps_in_runs_match_launched (FP64, 40 x 24 x 24, two
 * emitters: a box, and with a solid its surface): c 0 the static cube of
 * smoke_scene with its forces gathered (no atomics: two launched runs are
 * bitwise equal); c 1 the cube prescribed, moving at 0.02 and spinning (the
 * scatter's atomics: launched runs differ by round-off); c 2 no solid; c 3
 * the cube a free body twice as dense as the fluid, launched as in c 1 (in
 * runs the device moves it, and the smoke's plans follow it there). Stepped
 * 120 times by acm_step (SMOKE_LAUNCHED: kernel by kernel, checked) or by
 * acm_cuda_step_async after acm_cuda_step_prepare: in calls of 1 to 16
 * (SMOKE_RUNS) or in 30 calls of 4 made while the device is held by a host
 * function on the domain's stream (SMOKE_QUEUED: the host fills the inbox's
 * slots of inputs, cuda/backend_device.cu, faster than the device reads
 * them, and must wait for them to be read). */
enum { SMOKE_LAUNCHED, SMOKE_RUNS, SMOKE_QUEUED };

static acm_domain *runs_smoke_scene(int c, int mode, acm_smoke **s)
{
    static const int mixed[] = {5, 1, 7, 2, 16, 3, 4, 6, 1, 1, 2}, fours[] = {4};
    const bool runs = mode != SMOKE_LAUNCHED;
    const int *calls = mode == SMOKE_QUEUED ? fours : mixed;
    const int ncalls = mode == SMOKE_QUEUED ? 1 : (int)(sizeof mixed / sizeof mixed[0]);
    acm_domain_options o = acm_test_options(40, 24, 24, 0.02, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    o.backend = ACM_BACKEND_CUDA;
    o.initial_velocity[0] = 0.05;
    acm_layout *l = acm_test_layout(ACM_LAYOUT_IB_SPREAD,
                                    c == 0 ? ACM_IB_SPREAD_GATHER : ACM_IB_SPREAD_SCATTER);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = 3000;
    so.seed = 11;
    ACM_CK_OK(d, acm_smoke_create(s, d, &so));
    acm_emitter e = ACM_EMITTER_INIT;
    if (c != 2) {
        const double at[3] = {14.0, 12.0, 12.0};
        const acm_motion motion = c == 0 ? ACM_MOTION_STATIC
                                         : (c == 1 ? ACM_MOTION_PRESCRIBED : ACM_MOTION_FREE);
        acm_solid *cube = acm_test_cube_solid_dense(d, 8.0, at, motion, c == 3 ? 2.0 : 0.0);
        if (c != 0) {
            acm_solid_state st = {.version = ACM_SOLID_STATE_VERSION};
            ck_assert_int_eq(acm_solid_get_state(cube, &st), ACM_OK);
            st.velocity[0] = 0.02;
            st.angular_velocity[2] = 0.002;
            ck_assert_int_eq(acm_solid_set_state(cube, &st), ACM_OK);
        }
        add_cube_emitter(*s, cube);
    }
    e = (acm_emitter)ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX; /* upstream of the cube and in it */
    e.lo[0] = 2.0;
    e.lo[1] = e.lo[2] = 8.0;
    e.hi[0] = e.hi[1] = e.hi[2] = 16.0;
    e.rate = 7.5;
    ck_assert_int_eq(acm_smoke_add_emitter(*s, &e), ACM_OK);
    if (runs)
        ACM_CK_OK(d, acm_cuda_step_prepare(d, calls[0]));
    static const double hold = 0.3;
    double t0 = now_s();
    if (mode == SMOKE_QUEUED) { /* the device held while all the calls are made */
        cudaStream_t stream = NULL;
        ACM_CK_OK(d, acm_cuda_domain_get_stream(d, &stream));
        ck_assert_int_eq(cudaLaunchHostFunc(stream, hold_the_stream, (void *)&hold), cudaSuccess);
        t0 = now_s();
    }
    int64_t left = 120;
    for (int k = 0; left > 0; k = (k + 1) % ncalls) {
        const int64_t n = calls[k] < left ? calls[k] : left;
        ACM_CK_OK(d, runs ? acm_cuda_step_async(d, n) : acm_step(d, n));
        left -= n;
    }
    const double calls_s = now_s() - t0;
    ACM_CK_OK(d, acm_cuda_domain_synchronize(d));
    if (mode == SMOKE_QUEUED) { /* 30 replays, the device ACM_INBOX_SLOTS = 8 behind at most */
        printf("smoke in runs, case %d: 30 frames of 4 steps queued behind %.1f s on the device "
               "enqueued in %.3f s\n", c, hold, calls_s);
        ck_assert_msg(calls_s > 0.5 * hold, "30 replays enqueued in %.3f s while the device was "
                      "held for %.1f s: the host did not wait for the slots of their inputs",
                      calls_s, hold);
    }
    ck_assert_int_eq(acm_test_stats(d).step, 120);
    return d;
}

/* acm_cuda_step_async on a domain with smoke records its steps in runs and
 * replays them (cuda/backend_smoke.cu, "the smokes of runs"): the smoke's
 * counters equal and its particles (slot by slot) and the fluid the same as
 * those of the same steps launched kernel by kernel, bit for bit where two
 * launched runs are (cases 0 and 2: the gather orders each cell's samples,
 * kernels/ib.cu acm_ib_order_kernel; before it, two launched runs of case 0
 * differed in a third of the populations by 1 ulp and the particles by up to
 * 5e-12 on an H100). Cases 1 and 3 spread with atomics: their fluid differs
 * by round-off run to run and the particles' paths carry it (up to 5e-12
 * seen), bound 1e-9 (a particle misplaced by a wrong plan is cells away);
 * case 3's steps must have been replayed from graphs (the free body's runs).
 * _i 0-3: calls of 1 to 16 steps; 4-7: the same scenes queued (a plan or pose
 * read from a slot the host had filled again would move the particles). */
START_TEST(smoke_steps_in_runs_match_launched)
{
    const int c = _i % 4;
    acm_domain *d[3];
    acm_smoke *s[3];
    acm_smoke_info info[3];
    double *x[3];
    size_t nx[3];
    for (int r = 0; r < 3; ++r) { /* launched, launched again, runs */
        d[r] = runs_smoke_scene(c, r < 2 ? SMOKE_LAUNCHED : (_i < 4 ? SMOKE_RUNS : SMOKE_QUEUED),
                                &s[r]);
        memset(&info[r], 0, sizeof info[r]);
        info[r].version = ACM_SMOKE_INFO_VERSION;
        ck_assert_int_eq(acm_smoke_get_info(s[r], &info[r]), ACM_OK);
        x[r] = acm_test_alloc(3 * 3000 * sizeof(double));
        ck_assert_int_eq(acm_smoke_get_particles(s[r], x[r], 3000, &nx[r]), ACM_OK);
    }
    printf("smoke in runs, case %d: emitted %llu / %llu, alive %llu / %llu, absorbed %llu / %llu, "
           "left %llu / %llu (launched / runs)\n", c, (unsigned long long)info[0].emitted,
           (unsigned long long)info[2].emitted, (unsigned long long)info[0].alive,
           (unsigned long long)info[2].alive, (unsigned long long)info[0].absorbed,
           (unsigned long long)info[2].absorbed, (unsigned long long)info[0].left,
           (unsigned long long)info[2].left);
    ck_assert_uint_gt(info[0].emitted, 800); /* 900 from the box alone (case 2) */
    for (int r = 1; r < 3; ++r) {
        ck_assert_uint_eq(info[r].emitted, info[0].emitted);
        ck_assert_uint_eq(info[r].alive, info[0].alive);
        ck_assert_uint_eq(info[r].absorbed, info[0].absorbed);
        ck_assert_uint_eq(info[r].left, info[0].left);
        ck_assert_uint_eq(info[r].expired, info[0].expired);
        ck_assert_uint_eq(info[r].dropped, info[0].dropped);
        ck_assert_uint_eq(nx[r], nx[0]);
    }
    size_t twins = 0, runs = 0, fluid_twins = 0, fluid_runs = 0;
    const double noise = most_apart(x[0], x[1], 3 * nx[0], &twins);
    const double apart = most_apart(x[0], x[2], 3 * nx[0], &runs);
    /* the fluid too: whether a difference of the particles comes from the flow */
    const size_t cells = 40 * 24 * 24;
    double *f[3];
    for (int r = 0; r < 3; ++r)
        f[r] = field_n(d[r], ACM_FIELD_POPULATIONS, 27, cells);
    const double fluid_noise = most_apart(f[0], f[1], 27 * cells, &fluid_twins);
    const double fluid_apart = most_apart(f[0], f[2], 27 * cells, &fluid_runs);
    printf("smoke in runs, case %d: %zu particles; coordinates launched twice %zu differ (at most "
           "%.2e), launched and in runs %zu differ (at most %.2e); populations launched twice %zu "
           "differ (%.2e), in runs %zu (%.2e)\n", c, nx[0], twins, noise, runs, apart,
           fluid_twins, fluid_noise, fluid_runs, fluid_apart);
    for (int r = 0; r < 3; ++r)
        free(f[r]);
    int64_t graphs = 0;
    ck_assert_int_eq(acm_cuda_graphs_recorded(d[2], &graphs), ACM_OK);
    ck_assert_msg(graphs > 0, "case %d: the steps were not replayed from graphs", c);
    if (c == 1 || c == 3) {
        ck_assert_msg(apart <= 1e-9, "runs %g apart, twins %g", apart, noise);
    } else {
        ck_assert_msg(fluid_twins == 0 && fluid_runs == 0,
                      "populations differ: launched twice %zu, in runs %zu", fluid_twins, fluid_runs);
        ck_assert_msg(twins == 0 && runs == 0, "coordinates differ: launched twice %zu, in runs %zu",
                      twins, runs);
    }
    for (int r = 0; r < 3; ++r) {
        free(x[r]);
        acm_domain_destroy(d[r]);
    }
}
END_TEST

/* ---- moment storage (issue #30): the GPU's moment step against the CPU's projection -------- */

/* The CPU keeps populations but projects every collided cell onto its
 * moments as stored (lib/cpu/lbm_tmpl.h): the GPU, which stores the moments,
 * must give the same states. Scenes: a periodic Taylor-Green vortex, the
 * closed box with a moving lid, the inlet/outlet channel with a body force;
 * models: BGK and ACM_LI2018 with its safety net (the default options). */
static const scene mom_scenes[3] = {SCENE_PERIODIC, SCENE_BOX, SCENE_INFLOW_FORCE};
/* BGK and the ACM in the Hermite closure, CM-MRT in the central one (moments.h) */
static const acm_collision mom_models[3] = {ACM_COLLISION_BGK, ACM_COLLISION_CM_MRT,
                                            ACM_COLLISION_ACM_LI2018};
#define MOM_STEPS 50

/* loop index = scene * 3 + model. The same arithmetic on both sides but for
 * contractions into FMAs and the order of a few sums: the tolerance of the
 * population comparisons. */
START_TEST(gpu_moments_fp32_match_cpu)
{
    compare_storage(mom_scenes[_i / 3], mom_models[_i % 3], ACM_PRECISION_FP32, ACM_PRECISION_FP32,
                    ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, MOM_STEPS, 1e-5);
}
END_TEST

START_TEST(gpu_moments_fp64_match_cpu)
{
    compare_storage(mom_scenes[_i / 3], mom_models[_i % 3], ACM_PRECISION_FP64, ACM_PRECISION_FP64,
                    ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, MOM_STEPS, 1e-12);
}
END_TEST

/* The CPU emulates the GPU's FP16 rounding of every stored moment
 * (acm_mom_quantize16). Where the two sides' FP32 round-off puts a moment on
 * the other side of a rounding boundary, the stored values differ by one
 * FP16 step (2^-11 of the value: 2e-5 of a velocity of 0.04, 1.5e-5 of the
 * largest population), and such steps spread: 5e-4 of the largest population
 * leaves a margin of 30 over one step. */
START_TEST(gpu_moments_fp16_match_cpu_emulation)
{
    compare_storage(mom_scenes[_i / 3], mom_models[_i % 3], ACM_PRECISION_FP16, ACM_PRECISION_FP16,
                    ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, MOM_STEPS, 5e-4);
}
END_TEST

/* The tiles' seams: a grid of three tiles in x (32 cells a tile) and two in
 * y (8 rows in FP32 and 16-bit, 4 in FP64), periodic, so that every cell
 * takes the tiled step. loop index = precision (FP32, FP64, 16-bit) * 3 +
 * model; the tolerances of the tests above. */
START_TEST(gpu_moments_tile_seams_match_cpu)
{
    const acm_precision prec[3] = {ACM_PRECISION_FP32, ACM_PRECISION_FP64, ACM_PRECISION_FP16};
    const double tol[3] = {1e-5, 1e-12, 5e-4};
    compare_storage(SCENE_WIDE, mom_models[_i % 3], prec[_i / 3], prec[_i / 3], ACM_KERNEL_FUSED,
                    ACM_STORAGE_MOMENTS, MOM_STEPS, tol[_i / 3]);
}
END_TEST

/* A model of the other closure set between steps (the default ACM, then
 * CM-MRT, then the ACM again): the GPU rebuilds its stored moments in the new
 * closure, the CPU projects its populations again (lib/cpu/lbm_tmpl.h
 * follow_closure); the two keep agreeing. FP64, the box with its lid. */
START_TEST(gpu_moments_follow_the_closure)
{
    acm_domain *d[2];
    for (int b = 0; b < 2; ++b) {
        d[b] = run_scene(b ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU, SCENE_BOX,
                         ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64,
                         b ? ACM_KERNEL_FUSED : ACM_KERNEL_DEFAULT, ACM_STORAGE_MOMENTS, 10);
        acm_collision_options c = ACM_COLLISION_OPTIONS_INIT, cm = ACM_COLLISION_OPTIONS_INIT;
        ACM_CK_OK(d[b], acm_domain_get_collision(d[b], &c));
        cm.model = ACM_COLLISION_CM_MRT;
        cm.high_order_rate = 1.0;
        ACM_CK_OK(d[b], acm_domain_set_collision(d[b], &cm));
        ACM_CK_OK(d[b], acm_step(d[b], 10));
        ACM_CK_OK(d[b], acm_domain_set_collision(d[b], &c));
        ACM_CK_OK(d[b], acm_step(d[b], 10));
    }
    const size_t n = scene_cells(SCENE_BOX);
    double *fc = field_n(d[0], ACM_FIELD_POPULATIONS, 27, n);
    double *fg = field_n(d[1], ACM_FIELD_POPULATIONS, 27, n);
    const double df = rel_diff(fg, fc, 27 * n);
    printf("moment storage, ACM -> CM-MRT -> ACM: GPU vs CPU populations %.2e\n", df);
    ck_assert_msg(df <= 1e-12, "populations differ by %g", df);
    free(fc);
    free(fg);
    acm_domain_destroy(d[0]);
    acm_domain_destroy(d[1]);
}
END_TEST

/* The safety net's redo pass (which pulls the cell again from the moments
 * the step read) on the fallback scene, FP64: the same cells redone as on
 * the CPU and the same state. Moment storage relaxes the high orders at rate
 * 1, so it redoes fewer cells than population storage. loop index = model
 * (LI2018, LI2020). */
START_TEST(gpu_moments_safety_net_matches_cpu)
{
    const acm_collision model = _i ? ACM_COLLISION_ACM_LI2020 : ACM_COLLISION_ACM_LI2018;
    acm_domain *cpu =
        run_fallback_scene(ACM_BACKEND_CPU, model, ACM_KERNEL_DEFAULT, 0, ACM_STORAGE_MOMENTS);
    acm_domain *gpu =
        run_fallback_scene(ACM_BACKEND_CUDA, model, ACM_KERNEL_FUSED, 0, ACM_STORAGE_MOMENTS);
    double *fc = field_n(cpu, ACM_FIELD_POPULATIONS, 27, FB_NCELLS);
    double *fg = field_n(gpu, ACM_FIELD_POPULATIONS, 27, FB_NCELLS);
    const double df = rel_diff(fg, fc, 27 * FB_NCELLS);
    const acm_domain_stats sc = acm_test_stats(cpu), sg = acm_test_stats(gpu);
    printf("moment storage, safety net, model %d: fallbacks CPU %lld GPU %lld, populations %.2e\n",
           model, (long long)sc.fallback_cells_total, (long long)sg.fallback_cells_total, df);
    ck_assert_int_eq(sg.fallback_cells_total, sc.fallback_cells_total);
    /* the GPU checks once per call, yet counts the last step's alone */
    ck_assert_int_eq(sg.fallback_cells_last_step, sc.fallback_cells_last_step);
    ck_assert_msg(df <= 1e-12, "populations differ by %g", df);
    free(fc);
    free(fg);
    acm_domain_destroy(cpu);
    acm_domain_destroy(gpu);
}
END_TEST

/* A domain's storage changed by acm_domain_set_layout, 10 or 11 steps after
 * each: populations, moments (a parked post-collision state encoded),
 * in-place populations (parked moments rebuilt as populations), moments again
 * (after 11 in-place steps: a parked physical state, inverse-pulled and
 * encoded), populations; then the populations set into a fresh moment
 * domain (acm_domain_set_field) and 10 steps more. The GPU keeps what the
 * CPU keeps. */
static double *relayout_run(acm_backend backend)
{
    acm_domain *d = run_scene(backend, SCENE_BOX, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP32,
                              ACM_KERNEL_DEFAULT, ACM_STORAGE_POPULATIONS, 10);
    const struct {
        acm_storage storage;
        acm_streaming streaming;
        int steps;
    } seq[4] = {{ACM_STORAGE_MOMENTS, ACM_STREAMING_TWO_ARRAYS, 10},
                {ACM_STORAGE_POPULATIONS, ACM_STREAMING_IN_PLACE, 11},
                {ACM_STORAGE_MOMENTS, ACM_STREAMING_TWO_ARRAYS, 10},
                {ACM_STORAGE_POPULATIONS, ACM_STREAMING_TWO_ARRAYS, 10}};
    for (int q = 0; q < 4; ++q) {
        acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, seq[q].storage);
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, seq[q].streaming), ACM_OK);
        ACM_CK_OK(d, acm_domain_set_layout(d, l));
        acm_layout_destroy(l);
        ACM_CK_OK(d, acm_step(d, seq[q].steps));
    }
    double *f = field(d, ACM_FIELD_POPULATIONS, 27);
    acm_domain_destroy(d);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_ACM_LI2018,
                                            ACM_PRECISION_FP32);
    o.backend = backend;
    o.layout = l;
    d = acm_test_domain(&o);
    acm_layout_destroy(l);
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                      27 * NCELLS * sizeof(double)));
    free(f);
    ACM_CK_OK(d, acm_step(d, 10));
    f = field(d, ACM_FIELD_POPULATIONS, 27);
    acm_domain_destroy(d);
    return f;
}

START_TEST(gpu_moments_relayout_matches_cpu)
{
    double *fc = relayout_run(ACM_BACKEND_CPU), *fg = relayout_run(ACM_BACKEND_CUDA);
    const double df = rel_diff(fg, fc, 27 * NCELLS);
    printf("moment storage re-layouts and set_field, GPU vs CPU: populations %.2e\n", df);
    ck_assert_msg(df <= 1e-5, "populations differ by %g", df);
    free(fc);
    free(fg);
}
END_TEST

/* A re-layout that keeps moment storage (another block size, then back)
 * parks the moment array on the device and gets it back bit for bit: the
 * state after 10 + 10 steps is the one of a domain never re-laid. Through
 * FP64 populations (before) FP32 moments came back within rounding only.
 * loop index = FP32, 16-bit, FP64. */
START_TEST(gpu_moments_relayout_is_bitwise)
{
    const acm_precision prec[3] = {ACM_PRECISION_FP32, ACM_PRECISION_FP16, ACM_PRECISION_FP64};
    acm_domain *d[2];
    for (int r = 0; r < 2; ++r) {
        d[r] = run_scene(ACM_BACKEND_CUDA, SCENE_BOX, ACM_COLLISION_ACM_LI2018, prec[_i],
                         ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, 10);
        if (r == 1)
            for (int b = 0; b < 2; ++b) {
                acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
                ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_KERNEL, ACM_KERNEL_FUSED), ACM_OK);
                ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_BLOCK_SIZE, b ? 128 : 64), ACM_OK);
                ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_PRECISION, prec[_i]), ACM_OK);
                ACM_CK_OK(d[r], acm_domain_set_layout(d[r], l));
                acm_layout_destroy(l);
                ACM_CK_OK(d[r], acm_step(d[r], 5));
            }
        else
            ACM_CK_OK(d[r], acm_step(d[r], 10));
    }
    double *f0 = field(d[0], ACM_FIELD_POPULATIONS, 27), *f1 = field(d[1], ACM_FIELD_POPULATIONS, 27);
    double worst = 0.0;
    for (size_t k = 0; k < 27 * NCELLS; ++k)
        worst = fmax(worst, fabs(f0[k] - f1[k]));
    printf("moment storage, precision %d, re-laid twice: populations differ by %.2e\n", prec[_i],
           worst);
    ck_assert_msg(worst == 0.0, "precision %d: populations differ by %g", prec[_i], worst);
    free(f0);
    free(f1);
    acm_domain_destroy(d[0]);
    acm_domain_destroy(d[1]);
}
END_TEST

/* The device memory of moment storage: two arrays of 10 values a cell instead
 * of 27 (16-bit: 10 of 2 bytes), all else equal
 * (64^3 cells, whole CSoA groups). loop index = FP32, FP16, FP64. */
START_TEST(gpu_moments_hold_two_small_arrays)
{
    const acm_precision prec[3] = {ACM_PRECISION_FP32, ACM_PRECISION_FP16, ACM_PRECISION_FP64};
    const double elem[3] = {4, 2, 8};
    const int n = 64;
    uint64_t bytes[2];
    for (int m = 0; m < 2; ++m) {
        acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE,
                                        m ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS);
        acm_domain_options o =
            acm_test_options(n, n, n, 0.02, ACM_COLLISION_DEFAULT, prec[_i]);
        o.backend = ACM_BACKEND_CUDA;
        o.layout = l;
        acm_domain *d = acm_test_domain(&o);
        acm_layout_destroy(l);
        acm_domain_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_DOMAIN_INFO_VERSION;
        ACM_CK_OK(d, acm_domain_get_info(d, &info));
        bytes[m] = info.memory_bytes;
        acm_domain_destroy(d);
    }
    const double cells = (double)n * n * n;
    printf("moment storage, precision %d: %.1f B/cell less than population storage\n",
           prec[_i], ((double)bytes[0] - (double)bytes[1]) / cells);
    ck_assert_double_eq((double)bytes[0] - (double)bytes[1],
                        2 * (27 - 10) * elem[_i] * cells); /* 10 moments: lib/core/moments.h */
}
END_TEST

/* GPU slabs of moment storage, whose ghost planes carry the cells' stored
 * moments, step bit for bit as the undivided domain: every scene, 16-bit,
 * FP32 and FP64 storage, 2 or 3 slabs on this device. (test-decomp and
 * test-mpi with ACM_TEST_STORAGE=moments check the rest: solids, re-layouts,
 * rewinds, checkpoints, ranks.) _i: scene x precision. */
START_TEST(gpu_moment_slabs_as_one_domain)
{
    const scene sc = (scene)(_i % SCENE_COUNT);
    const acm_precision prec[3] = {ACM_PRECISION_FP16, ACM_PRECISION_FP32, ACM_PRECISION_FP64};
    const acm_precision p = prec[_i / SCENE_COUNT];
    const int slabs = 2 + _i % 2;
    acm_domain *one = run_scene_in(ACM_BACKEND_CUDA, sc, ACM_COLLISION_DEFAULT, p,
                                   ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, steps(), 0);
    acm_domain *split = run_scene_in(ACM_BACKEND_CUDA, sc, ACM_COLLISION_DEFAULT, p,
                                     ACM_KERNEL_FUSED, ACM_STORAGE_MOMENTS, steps(), slabs);
    const size_t differ = populations_differ(one, split);
    printf("moment storage, scene %d, precision %d, %d slabs: %zu of %zu populations differ\n",
           (int)sc, (int)p, slabs, differ, 27 * NCELLS);
    ck_assert_msg(differ == 0, "scene %d, precision %d, %d slabs: %zu populations differ",
                  (int)sc, (int)p, slabs, differ);
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

TEST_SUITE(cuda_suite)
{
    Suite *s = suite_create("cuda");
    TCase *tc = acm_tcase("agreement", 1200);
    tcase_add_loop_test(tc, gpu_fp32_matches_cpu_fp32, 0, SCENE_COUNT * 15);
    tcase_add_loop_test(tc, gpu_fp64_matches_cpu_fp64, 0, SCENE_COUNT * 5);
    tcase_add_loop_test(tc, gpu_fp16_storage_tracks_cpu_fp32, 0, SCENE_COUNT * 3);
    tcase_add_loop_test(tc, wall_pull_matches_cpu, 0, 16);
    tcase_add_loop_test(tc, gpu_safety_net_fallbacks_match_cpu, 0, 6);
    tcase_add_loop_test(tc, gpu_many_fallbacks_in_one_step_match_cpu, 0, 2);
    tcase_add_loop_test(tc, gpu_block_size_changes_nothing, 0, 3);
    suite_add_tcase(s, tc);
    tc = acm_tcase("moments", 600);
    tcase_add_loop_test(tc, gpu_moments_fp32_match_cpu, 0, 9);
    tcase_add_loop_test(tc, gpu_moments_fp64_match_cpu, 0, 9);
    tcase_add_loop_test(tc, gpu_moments_fp16_match_cpu_emulation, 0, 9);
    tcase_add_loop_test(tc, gpu_moments_tile_seams_match_cpu, 0, 9);
    tcase_add_test(tc, gpu_moments_follow_the_closure);
    tcase_add_loop_test(tc, gpu_moments_safety_net_matches_cpu, 0, 2);
    tcase_add_test(tc, gpu_moments_relayout_matches_cpu);
    tcase_add_loop_test(tc, gpu_moments_relayout_is_bitwise, 0, 3);
    tcase_add_loop_test(tc, gpu_moment_slabs_as_one_domain, 0, SCENE_COUNT * 3);
    tcase_add_loop_test(tc, gpu_moments_hold_two_small_arrays, 0, 3);
    suite_add_tcase(s, tc);
    tc = acm_tcase("free_bodies", 300);
    tcase_add_loop_test(tc, free_body_runs_match_launched_steps, 0, 4);
    suite_add_tcase(s, tc);
    tc = acm_tcase("solids", 600);
    tcase_add_loop_test(tc, gpu_solids_match_cpu, 0, 12);
    tcase_add_test(tc, gpu_resorts_samples_like_the_cpu);
    tcase_add_loop_test(tc, gpu_resorts_solids_together_like_the_cpu, 0, 3);
    tcase_add_loop_test(tc, run_steps_match_launched_steps, 0, 6);
    tcase_add_test(tc, run_steps_follow_a_moved_static_solid);
    tcase_add_loop_test(tc, prepared_steps_change_nothing, 0, 2);
    tcase_add_loop_test(tc, prepared_frames_record_nothing, 0, 9);
    tcase_add_loop_test(tc, loops_serve_runs_of_many_lengths, 0, 2);
    tcase_add_loop_test(tc, smoke_steps_in_runs_match_launched, 0, 8);
    suite_add_tcase(s, tc);
    tc = acm_tcase("accuracy", 600);
    tcase_add_test(tc, fp16_taylor_green_accuracy);
    suite_add_tcase(s, tc);
    tc = acm_tcase("interop", 300);
    tcase_add_test(tc, caller_stream_async_steps_and_mapped_fields);
    tcase_add_test(tc, queued_velocity_read_sees_its_steps);
    tcase_add_test(tc, async_divergence_is_reported_at_synchronize);
    tcase_add_loop_test(tc, graph_steps_equal_launched_steps, 0, 8);
    tcase_add_test(tc, graph_steps_name_the_diverged_step);
    tcase_add_test(tc, divergence_keeps_the_last_good_state_like_the_cpu);
    tcase_add_loop_test(tc, diverged_step_keeps_the_state_before_it, 0, 10);
    tcase_add_test(tc, device_errors_have_specific_statuses);
    tcase_add_test(tc, split_domain_refuses_interop);
    tcase_add_test(tc, face_values_from_device_memory);
    tcase_add_test(tc, device_memory_exhaustion_changes_nothing);
    tcase_add_loop_test(tc, gpu_smoke_matches_cpu, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}
