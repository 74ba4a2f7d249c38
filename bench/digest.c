/*
 * libacmlbm bench -- a digest of the final state of a few scenes, to show that
 * a change of the code is bitwise neutral: run it against the library before
 * and after (LD_LIBRARY_PATH), and compare the lines.
 *
 *   build/bench/acm-digest [--backend cpu|cuda] [--steps N] [--scene NAME]
 *
 * Each scene runs twice; a line ends in "repeatable" when both runs gave the
 * same digest (a GPU's atomic scatter of immersed-boundary forces may not).
 * The digest is FNV-1a over the populations (FP64), the force field, every
 * solid's force, torque and samples, and every smoke's particles.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h> /* bool */
#include <stdint.h> /* uint64_t */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* malloc, free, strtol */
#include <string.h> /* strcmp, memcpy */

#include <acmlbm/acmlbm.h>

#include "shapes.h" /* shapes_sphere, shapes_torus */

#define FNV_OFFSET UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)

static uint64_t fnv(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; ++i)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

#define TRY(call)                                                                          \
    do {                                                                                   \
        const acm_status st_ = (call);                                                     \
        if (st_ != ACM_OK) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,             \
                    acm_status_string(st_), acm_domain_last_error(sc->d));                 \
            return st_;                                                                    \
        }                                                                                  \
    } while (0)

/* A scene's objects (destroyed by scene_free). */
typedef struct scene {
    acm_domain *d;
    acm_solid *solid[2];
    acm_smoke *smoke;
    acm_mesh *mesh[2];
} scene;

typedef struct run_options {
    acm_backend backend;
    int64_t steps;
} run_options;

static void scene_free(scene *sc)
{
    acm_smoke_destroy(sc->smoke);
    for (int i = 0; i < 2; ++i) {
        acm_solid_destroy(sc->solid[i]);
        acm_mesh_destroy(sc->mesh[i]);
    }
    acm_domain_destroy(sc->d);
    memset(sc, 0, sizeof *sc);
}

static acm_status make_domain(scene *sc, const run_options *ro, int32_t n[3], double nu,
                              acm_collision model, acm_precision precision, int32_t slabs,
                              const acm_layout *layout)
{
    char err[256] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = n[0];
    o.ny = n[1];
    o.nz = n[2];
    o.viscosity = nu;
    o.collision = model;
    o.backend = ro->backend;
    o.precision = precision;
    o.subdomains = slabs;
    o.layout = layout;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    const acm_status st = acm_domain_create(&sc->d, &o);
    if (st != ACM_OK)
        fprintf(stderr, "acm_domain_create: %s: %s\n", acm_status_string(st), err);
    return st;
}

static acm_status walls(scene *sc, const double lid[3])
{
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        TRY(acm_domain_set_face(sc->d, (acm_face)f, ACM_BOUNDARY_WALL,
                                f == ACM_FACE_Y_MAX ? lid : NULL));
    return ACM_OK;
}

static acm_status mesh_of(scene *sc, int i, const shapes_mesh *m)
{
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    return acm_mesh_create(&sc->mesh[i], m->v, m->nv, m->t, m->nt, &mo);
}

static acm_status solid_of(scene *sc, int i, const double at[3], acm_motion motion)
{
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = sc->mesh[i];
    memcpy(so.position, at, sizeof so.position);
    so.motion = motion;
    if (motion == ACM_MOTION_PRESCRIBED)
        so.angular_velocity[2] = 0.004;
    if (motion == ACM_MOTION_FREE) {
        so.density = 2.0;
        so.gravity[1] = -1e-5;
    }
    TRY(acm_solid_create(&sc->solid[i], sc->d, &so));
    return ACM_OK;
}

/* ---- the scenes ------------------------------------------------------------------ */

/* A lid-driven cavity (walls, a moving lid), ACM LI2018. */
static acm_status cavity(scene *sc, const run_options *ro, acm_precision p, int32_t slabs,
                         const acm_layout *layout)
{
    int32_t n[3] = {24, 24, 24};
    TRY(make_domain(sc, ro, n, 0.01, ACM_COLLISION_ACM_LI2018, p, slabs, layout));
    const double lid[3] = {0.08, 0.0, 0.0};
    return walls(sc, lid);
}

/* A periodic box pushed by a body force past a wavy start, ACM LI2020 with
 * in-place streaming. */
static acm_status forced_box(scene *sc, const run_options *ro, acm_precision p)
{
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK)
        return ACM_ERR_NO_MEMORY;
    acm_layout_set(l, ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE);
    int32_t n[3] = {20, 16, 12};
    const acm_status st = make_domain(sc, ro, n, 0.004, ACM_COLLISION_ACM_LI2020, p, 0, l);
    acm_layout_destroy(l);
    if (st != ACM_OK)
        return st;
    const size_t cells = (size_t)n[0] * n[1] * n[2];
    double *u = calloc(3 * cells, sizeof *u);
    if (u == NULL)
        return ACM_ERR_NO_MEMORY;
    for (size_t k = 0; k < cells; ++k) {
        const double y = (double)(k / (size_t)n[0] % (size_t)n[1]);
        u[3 * k] = 0.05 * (y / n[1] - 0.5);
        u[3 * k + 2] = 0.01 * (double)(k % 7) / 7.0;
    }
    const acm_status s2 = acm_domain_init_fields(sc->d, ACM_DTYPE_FLOAT64, NULL, u, cells);
    free(u);
    TRY(s2);
    const double g[3] = {2e-6, 0.0, -1e-6};
    TRY(acm_domain_set_body_force(sc->d, g));
    return ACM_OK;
}

/* A channel with an inlet and an outlet around a static sphere and a spinning
 * torus, and a smoke with a box emitter. */
static acm_status channel_solids(scene *sc, const run_options *ro, acm_precision p, int spread,
                                 acm_storage storage)
{
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK)
        return ACM_ERR_NO_MEMORY;
    acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, spread);
    acm_layout_set(l, ACM_LAYOUT_STORAGE, storage);
    int32_t n[3] = {48, 24, 24};
    const acm_status st = make_domain(sc, ro, n, 0.02, ACM_COLLISION_ACM_LI2018, p, 0, l);
    acm_layout_destroy(l);
    if (st != ACM_OK)
        return st;
    const double uin[3] = {0.04, 0.0, 0.0};
    TRY(acm_domain_set_face(sc->d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, uin));
    TRY(acm_domain_set_face(sc->d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
    for (int f = ACM_FACE_Y_MIN; f <= ACM_FACE_Z_MAX; ++f)
        TRY(acm_domain_set_face(sc->d, (acm_face)f, ACM_BOUNDARY_WALL, NULL));
    shapes_mesh sphere = {0}, torus = {0};
    if (shapes_sphere(&sphere, 3, 4.0) != 0 || shapes_torus(&torus, 4.0, 1.5, 32, 16) != 0) {
        shapes_free(&sphere);
        return ACM_ERR_NO_MEMORY;
    }
    acm_status s2 = mesh_of(sc, 0, &sphere);
    if (s2 == ACM_OK)
        s2 = mesh_of(sc, 1, &torus);
    shapes_free(&sphere);
    shapes_free(&torus);
    TRY(s2);
    const double a[3] = {14.0, 12.0, 12.0}, b[3] = {30.0, 12.5, 11.5};
    TRY(solid_of(sc, 0, a, ACM_MOTION_STATIC));
    TRY(solid_of(sc, 1, b, ACM_MOTION_PRESCRIBED));
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = 4096;
    so.seed = 7;
    TRY(acm_smoke_create(&sc->smoke, sc->d, &so));
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX;
    const double lo[3] = {2.0, 6.0, 6.0}, hi[3] = {4.0, 18.0, 18.0};
    memcpy(e.lo, lo, sizeof lo);
    memcpy(e.hi, hi, sizeof hi);
    e.rate = 3.5;
    e.lifetime = 300;
    TRY(acm_smoke_add_emitter(sc->smoke, &e));
    return ACM_OK;
}

/* A free sphere sinking in a closed box. */
static acm_status free_body(scene *sc, const run_options *ro, acm_precision p, int32_t slabs)
{
    int32_t n[3] = {24, 32, 24};
    TRY(make_domain(sc, ro, n, 0.05, ACM_COLLISION_CM_MRT, p, slabs, NULL));
    TRY(walls(sc, NULL));
    shapes_mesh sphere = {0};
    if (shapes_sphere(&sphere, 3, 3.5) != 0)
        return ACM_ERR_NO_MEMORY;
    const acm_status s2 = mesh_of(sc, 0, &sphere);
    shapes_free(&sphere);
    TRY(s2);
    const double at[3] = {12.0, 20.0, 12.0};
    return solid_of(sc, 0, at, ACM_MOTION_FREE);
}

/* ---- the digest ---------------------------------------------------------------- */

static acm_status digest_field(scene *sc, acm_field field, uint64_t *h)
{
    size_t bytes = 0;
    TRY(acm_domain_field_size(sc->d, field, ACM_DTYPE_FLOAT64, &bytes));
    void *buf = malloc(bytes);
    if (buf == NULL)
        return ACM_ERR_NO_MEMORY;
    const acm_status st = acm_domain_get_field(sc->d, field, ACM_DTYPE_FLOAT64, buf, bytes);
    if (st == ACM_OK)
        *h = fnv(*h, buf, bytes);
    free(buf);
    TRY(st);
    return ACM_OK;
}

static acm_status digest_solid(scene *sc, acm_solid *s, uint64_t *h)
{
    double f[3], t[3];
    TRY(acm_solid_get_force(s, f, t));
    *h = fnv(fnv(*h, f, sizeof f), t, sizeof t);
    acm_solid_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SOLID_INFO_VERSION;
    TRY(acm_solid_get_info(s, &info));
    const size_t count = (size_t)info.sample_count;
    double *x = malloc(3 * count * sizeof *x);
    if (x == NULL)
        return ACM_ERR_NO_MEMORY;
    const acm_status st = acm_solid_get_samples(s, x, count);
    if (st == ACM_OK)
        *h = fnv(*h, x, 3 * count * sizeof *x);
    free(x);
    TRY(st);
    return ACM_OK;
}

static acm_status digest_smoke(scene *sc, uint64_t *h)
{
    acm_smoke_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SMOKE_INFO_VERSION;
    TRY(acm_smoke_get_info(sc->smoke, &info));
    const uint64_t counts[5] = {info.alive, info.emitted, info.left, info.expired, info.absorbed};
    *h = fnv(*h, counts, sizeof counts);
    const size_t n = (size_t)info.alive ? (size_t)info.alive : 1;
    double *x = malloc(3 * n * sizeof *x);
    acm_status st = x != NULL ? ACM_OK : ACM_ERR_NO_MEMORY;
    size_t got = 0;
    if (st == ACM_OK)
        st = acm_smoke_get_particles(sc->smoke, x, n, &got);
    if (st == ACM_OK)
        *h = fnv(*h, x, 3 * got * sizeof *x);
    free(x);
    TRY(st);
    return ACM_OK;
}

static acm_status digest(scene *sc, uint64_t *h)
{
    *h = FNV_OFFSET;
    TRY(digest_field(sc, ACM_FIELD_POPULATIONS, h));
    TRY(digest_field(sc, ACM_FIELD_VELOCITY, h));
    for (int i = 0; i < 2; ++i)
        if (sc->solid[i] != NULL)
            TRY(digest_solid(sc, sc->solid[i], h));
    if (sc->smoke != NULL)
        TRY(digest_smoke(sc, h));
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    TRY(acm_domain_get_stats(sc->d, &s));
    *h = fnv(*h, &s.step, sizeof s.step);
    *h = fnv(*h, &s.fallback_cells_total, sizeof s.fallback_cells_total);
    return ACM_OK;
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct scene_def {
    const char *name;
    bool gpu_only;
    acm_status (*make)(scene *sc, const run_options *ro, int variant);
    int variant;
} scene_def;

static acm_status make_cavity(scene *sc, const run_options *ro, int v)
{
    return cavity(sc, ro, v == 0 ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64, 0, NULL);
}

static acm_status make_cavity_slabs(scene *sc, const run_options *ro, int v)
{
    (void)v;
    return cavity(sc, ro, ACM_PRECISION_FP32, 3, NULL);
}

static acm_status make_cavity_kernel(scene *sc, const run_options *ro, int v)
{
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK)
        return ACM_ERR_NO_MEMORY;
    acm_layout_set(l, ACM_LAYOUT_KERNEL, v == 0 ? ACM_KERNEL_SPLIT : ACM_KERNEL_BASELINE);
    const acm_status st = cavity(sc, ro, ACM_PRECISION_FP32, 0, l);
    acm_layout_destroy(l);
    return st;
}

static acm_status make_cavity_fp16(scene *sc, const run_options *ro, int v)
{
    (void)v;
    return cavity(sc, ro, ACM_PRECISION_FP16, 0, NULL);
}

/* The cavity on moment storage, FP32 or 16-bit (v = 1); v = 2: FP32 with
 * CM-MRT (the central closure, lib/core/moments.h). */
static acm_status make_cavity_moments(scene *sc, const run_options *ro, int v)
{
    acm_layout *l = NULL;
    if (acm_layout_create(&l) != ACM_OK)
        return ACM_ERR_NO_MEMORY;
    acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    const acm_status st = cavity(sc, ro, v == 1 ? ACM_PRECISION_FP16 : ACM_PRECISION_FP32, 0, l);
    acm_layout_destroy(l);
    if (st != ACM_OK || v != 2)
        return st;
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    c.model = ACM_COLLISION_CM_MRT;
    c.high_order_rate = 1.0;
    return acm_domain_set_collision(sc->d, &c);
}

static acm_status make_forced(scene *sc, const run_options *ro, int v)
{
    return forced_box(sc, ro, v == 0 ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64);
}

static acm_status make_channel(scene *sc, const run_options *ro, int v)
{
    TRY(channel_solids(sc, ro, ACM_PRECISION_FP32,
                       v == 1 ? ACM_IB_SPREAD_SCATTER : ACM_IB_SPREAD_GATHER,
                       v == 3 ? ACM_STORAGE_MOMENTS : ACM_STORAGE_POPULATIONS));
    if (v == 2) /* multi-direct forcing: the later iterations read the force spread so far */
        TRY(acm_domain_set_param(sc->d, ACM_PARAM_IB_ITERATIONS, 3));
    return ACM_OK;
}

static acm_status make_free(scene *sc, const run_options *ro, int v)
{
    return free_body(sc, ro, ACM_PRECISION_FP64, v == 0 ? 0 : 2);
}

static const scene_def scenes[] = {
    {"cavity-fp32", false, make_cavity, 0},
    {"cavity-fp64", false, make_cavity, 1},
    {"cavity-3-slabs", false, make_cavity_slabs, 0},
    {"cavity-split", true, make_cavity_kernel, 0},
    {"cavity-baseline", true, make_cavity_kernel, 1},
    {"cavity-fp16", true, make_cavity_fp16, 0},
    {"forced-in-place-fp32", false, make_forced, 0},
    {"forced-in-place-fp64", false, make_forced, 1},
    {"channel-solids-smoke-gather", false, make_channel, 0},
    {"channel-solids-smoke-scatter", false, make_channel, 1},
    {"channel-solids-3-iterations", false, make_channel, 2},
    {"cavity-moments-fp32", false, make_cavity_moments, 0},
    {"cavity-moments-16-bit", false, make_cavity_moments, 1},
    {"cavity-moments-cm", false, make_cavity_moments, 2},
    {"channel-moments-gather", false, make_channel, 3},
    {"free-sphere", false, make_free, 0},
    {"free-sphere-2-slabs", false, make_free, 1},
};

static acm_status run_scene(const scene_def *def, const run_options *ro, uint64_t *h)
{
    scene sc = {0};
    acm_status st = def->make(&sc, ro, def->variant);
    if (st == ACM_OK && (st = acm_step(sc.d, ro->steps)) != ACM_OK)
        fprintf(stderr, "%s: acm_step: %s\n", def->name, acm_domain_last_error(sc.d));
    if (st == ACM_OK)
        st = digest(&sc, h);
    scene_free(&sc);
    return st;
}

int main(int argc, char **argv)
{
    run_options ro = {ACM_BACKEND_CPU, 200};
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--backend") == 0)
            ro.backend = strcmp(argv[i + 1], "cuda") == 0 ? ACM_BACKEND_CUDA : ACM_BACKEND_CPU;
        else if (strcmp(argv[i], "--steps") == 0)
            ro.steps = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--scene") == 0)
            only = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--backend cpu|cuda] [--steps N] [--scene NAME]\n",
                    argv[0]);
            return 2;
        }
    }
    printf("# libacmlbm %s, %s backend, %lld steps\n", acm_version_string(),
           ro.backend == ACM_BACKEND_CUDA ? "cuda" : "cpu", (long long)ro.steps);
    int failed = 0;
    for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; ++k) {
        const scene_def *def = &scenes[k];
        if ((only != NULL && strcmp(only, def->name) != 0) ||
            (def->gpu_only && ro.backend != ACM_BACKEND_CUDA))
            continue;
        uint64_t h[2] = {0, 0};
        acm_status st = run_scene(def, &ro, &h[0]);
        if (st == ACM_OK)
            st = run_scene(def, &ro, &h[1]);
        if (st != ACM_OK) {
            printf("%-30s failed: %s\n", def->name, acm_status_string(st));
            failed = 1;
            continue;
        }
        printf("%-30s %016llx %s\n", def->name, (unsigned long long)h[0],
               h[0] == h[1] ? "repeatable" : "NOT repeatable");
    }
    return failed;
}
