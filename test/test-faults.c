/*
 * libacmlbm tests -- allocation failures (docs/reliability.md). A scene that
 * reaches every part of the library with an allocation in it (layouts, mesh
 * readers, sampling, solids, smoke, stepping, queries, exports, re-layout,
 * checkpoint save and load, the autotuner, a domain of three slabs with a
 * solid) is run once to count its allocation calls, then once per call k with
 * that call failing:
 *   - once only: the call that met the failure returns ACM_ERR_NO_MEMORY with
 *     a message; run again, it succeeds, and the scene ends bitwise as the
 *     run without failure (a failed call changed nothing);
 *   - from k on: the scene stops at the first failing call and everything it
 *     made is destroyed;
 * both leave no allocation behind. The program links the library's objects
 * with test/fault-alloc.c in place of lib/base/alloc.c. The solids spread their
 * forces by gathering (ib_spread=gather): on a GPU the default scatter adds
 * with float atomics, whose order, and so whose last bits, vary run to run.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <unistd.h> /* unlink, rmdir */

#include "fault-alloc.h"
#include "test-solid-common.h" /* acm_test_sphere_points */

/* ---- the scene ------------------------------------------------------------------------- */

typedef struct scene {
    char dir[64];
    acm_layout *layout;
    acm_domain *d, *restored, *split; /* split: 3 slabs (docs/multi-gpu.md) */
    acm_mesh *mesh;
    acm_solid *spinner, *ball, *split_ball;
    acm_smoke *smoke, *restored_smoke; /* the second: the loaded domain's */
    double *pts, *areas; /* the ball's samples (the test's own memory) */
    char msg[512];       /* the failing call's message */
} scene;

enum { NX = 12, NY = 10, NZ = 10, NSAMPLES = 120 };

/* The handle's message into s->msg; `st` passed through. */
static acm_status domain_said(scene *s, acm_domain *d, acm_status st)
{
    if (st != ACM_OK)
        snprintf(s->msg, sizeof s->msg, "%s", acm_domain_last_error(d));
    return st;
}

static acm_status smoke_said(scene *s, acm_status st)
{
    if (st != ACM_OK)
        snprintf(s->msg, sizeof s->msg, "%s", acm_smoke_last_error(s->smoke));
    return st;
}

static void path_of(const scene *s, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", s->dir, name);
}

static acm_status op_layout(scene *s)
{
    if (s->layout == NULL) {
        acm_status st = acm_layout_create(&s->layout);
        if (st != ACM_OK) /* a creation without a handle has only its status to tell */
            snprintf(s->msg, sizeof s->msg, "acm_layout_create: %s", acm_status_string(st));
        if (st != ACM_OK)
            return st;
    }
    acm_status st = acm_layout_from_string(s->layout, "acm-layout 1 csoa_group=64 sample_block=2 ib_spread=gather");
    if (st != ACM_OK)
        snprintf(s->msg, sizeof s->msg, "%s", acm_layout_last_error(s->layout));
    return st;
}

static acm_status op_domain(scene *s)
{
    acm_domain_options o = acm_test_options(NX, NY, NZ, 0.05, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = acm_test_backend();
    o.layout = s->layout;
    o.initial_velocity[0] = 0.02;
    o.error_buffer = s->msg;
    o.error_buffer_size = sizeof s->msg;
    return acm_domain_create(&s->d, &o);
}

static acm_status op_faces(scene *s)
{
    const double lid[3] = {0.03, 0, 0}, g[3] = {1e-6, 0, 0};
    acm_status st = acm_domain_set_face(s->d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, NULL);
    if (st == ACM_OK)
        st = acm_domain_set_face(s->d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid);
    if (st == ACM_OK)
        st = acm_domain_set_body_force(s->d, g);
    static double force[NX * NY * NZ * 3];
    for (size_t i = 0; i < NX * NY * NZ; ++i)
        force[3 * i + 2] = 1e-6 * (double)(i % 7);
    if (st == ACM_OK)
        st = acm_domain_set_field(s->d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, force, sizeof force);
    return domain_said(s, s->d, st);
}

/* A unit cube read from OBJ text, then the same cube from binary STL (kept). */
static acm_status op_mesh(scene *s)
{
    acm_mesh_options mo;
    ck_assert_int_eq(acm_mesh_options_init(&mo, ACM_MESH_OPTIONS_VERSION), ACM_OK);
    mo.error_buffer = s->msg;
    mo.error_buffer_size = sizeof s->msg;
    static const char obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 1 0 1\nv 0 1 1\n"
                              "v 1 1 1\nf 1 3 4 2\nf 5 6 8 7\nf 1 2 6 5\nf 3 7 8 4\n"
                              "f 1 5 7 3\nf 2 4 8 6\n";
    acm_mesh *m = NULL;
    acm_status st = acm_mesh_load_memory(&m, obj, sizeof obj - 1, &mo);
    if (st != ACM_OK)
        return st;
    acm_mesh_info info = {.version = ACM_MESH_INFO_VERSION};
    st = acm_mesh_get_info(m, &info);
    ck_assert_int_eq(st, ACM_OK);
    ck_assert_uint_eq(info.triangle_count, 12);
    /* binary STL: 80-byte header, count, 50 bytes per triangle */
    static unsigned char stl[84 + 12 * 50];
    memset(stl, 0, sizeof stl);
    const uint32_t n = 12;
    memcpy(stl + 80, &n, 4);
    double v[8 * 3];
    uint32_t t[12 * 3];
    ck_assert_int_eq(acm_mesh_get_vertices(m, v, 8), ACM_OK);
    ck_assert_int_eq(acm_mesh_get_triangles(m, t, 12), ACM_OK);
    acm_mesh_destroy(m);
    for (uint32_t k = 0; k < n; ++k)
        for (int c = 0; c < 3; ++c)
            for (int a = 0; a < 3; ++a) {
                const float x = (float)v[3 * t[3 * k + c] + a];
                memcpy(stl + 84 + 50 * k + 12 + 12 * c + 4 * a, &x, 4);
            }
    return acm_mesh_load_memory(&s->mesh, stl, sizeof stl, &mo);
}

static acm_status op_spinner(scene *s)
{
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = s->mesh;
    so.scale = 3.0;
    so.samples_per_cell = 2.0;
    so.motion = ACM_MOTION_PRESCRIBED;
    so.angular_velocity[2] = 0.02;
    so.position[0] = 4.0;
    so.position[1] = 5.0;
    so.position[2] = 5.0;
    return domain_said(s, s->d, acm_solid_create(&s->spinner, s->d, &so));
}

/* A ball of the scene's samples at (x, 5, z) moving as told. */
static acm_solid_options ball_options(const scene *s, acm_motion motion, double x, double z)
{
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = NSAMPLES;
    so.sample_points = s->pts;
    so.sample_areas = s->areas;
    so.motion = motion;
    so.position[0] = x;
    so.position[1] = 5.0;
    so.position[2] = z;
    return so;
}

/* A free ball, twice as dense as the fluid, of the scene's samples. */
static acm_solid_options free_ball(const scene *s, double x, double z)
{
    acm_solid_options so = ball_options(s, ACM_MOTION_FREE, x, z);
    so.density = 2.0;
    so.volume = 4.0 / 3.0 * 3.14159265358979 * 1.5 * 1.5 * 1.5;
    for (int a = 0; a < 3; ++a)
        so.inertia[a] = 0.4 * so.density * so.volume * 1.5 * 1.5; /* a solid ball */
    return so;
}

static acm_status op_ball(scene *s)
{
    const acm_solid_options so = free_ball(s, 8.5, 5.0);
    return domain_said(s, s->d, acm_solid_create(&s->ball, s->d, &so));
}

static acm_status op_smoke(scene *s)
{
    acm_smoke_options o = ACM_SMOKE_OPTIONS_INIT;
    o.capacity = 300;
    o.seed = 3;
    return domain_said(s, s->d, acm_smoke_create(&s->smoke, s->d, &o));
}

static acm_status op_box_emitter(scene *s)
{
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_BOX;
    e.lo[0] = e.lo[1] = e.lo[2] = 1.0;
    e.hi[0] = e.hi[1] = e.hi[2] = 3.0;
    e.rate = 4.5;
    e.lifetime = 20;
    return smoke_said(s, acm_smoke_add_emitter(s->smoke, &e));
}

static acm_status op_solid_emitter(scene *s)
{
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SOLID;
    e.solid = s->spinner;
    e.offset = 1.0;
    e.rate = 3.0;
    return smoke_said(s, acm_smoke_add_emitter(s->smoke, &e));
}

static acm_status op_step(scene *s) { return domain_said(s, s->d, acm_step(s->d, 3)); }

/* Every query that allocates; none changes the state. */
static acm_status op_queries(scene *s)
{
    static double u[NX * NY * NZ * 3], w[6];
    static float rho[NX * NY * NZ * 8];
    const double at[6] = {2.5, 3.5, 4.5, 9.0, 1.0, 7.0};
    acm_status st = acm_domain_get_field(s->d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u, sizeof u);
    if (st == ACM_OK)
        st = acm_domain_sample_velocity(s->d, at, 2, w);
    if (st == ACM_OK) /* the read made at the begin and kept (its buffer allocated) */
        st = acm_domain_sample_velocity_begin(s->d, at, 2);
    if (st == ACM_OK)
        st = acm_domain_sample_velocity_end(s->d, w, 2);
    acm_domain_stats stats = {.version = ACM_DOMAIN_STATS_VERSION};
    if (st == ACM_OK)
        st = acm_domain_get_stats(s->d, &stats);
    if (st != ACM_OK)
        return domain_said(s, s->d, st);
    st = acm_smoke_density(s->smoke, 2, rho, sizeof rho / sizeof *rho);
    if (st == ACM_OK) {
        size_t written = 0;
        st = acm_smoke_get_particles(s->smoke, u, NX * NY * NZ, &written);
    }
    return smoke_said(s, st);
}

static acm_status op_exports(scene *s)
{
    char vti[128], ply[128], dens[128];
    path_of(s, "f.vti", vti, sizeof vti);
    path_of(s, "p.ply", ply, sizeof ply);
    path_of(s, "d.vti", dens, sizeof dens);
    const acm_field fields[2] = {ACM_FIELD_DENSITY, ACM_FIELD_VELOCITY};
    acm_status st = acm_domain_export_vti(s->d, vti, fields, 2);
    if (st != ACM_OK)
        return domain_said(s, s->d, st);
    st = acm_smoke_export(s->smoke, ply, ACM_PARTICLES_PLY);
    if (st == ACM_OK)
        st = acm_smoke_export_density(s->smoke, dens, 1);
    return smoke_said(s, st);
}

/* d re-laid as the layout text says. */
static acm_status relayout(scene *s, acm_domain *d, const char *text)
{
    acm_layout *l = NULL;
    acm_status st = acm_layout_create(&l);
    if (st != ACM_OK) {
        snprintf(s->msg, sizeof s->msg, "acm_layout_create: %s", acm_status_string(st));
        return st;
    }
    st = acm_layout_from_string(l, text);
    if (st != ACM_OK)
        snprintf(s->msg, sizeof s->msg, "%s", acm_layout_last_error(l));
    else
        st = domain_said(s, d, acm_domain_set_layout(d, l));
    acm_layout_destroy(l);
    return st;
}

static acm_status op_relayout(scene *s)
{
    return relayout(s, s->d, "acm-layout 1 csoa_group=16 sample_block=4 ib_spread=gather");
}

static acm_status op_save(scene *s)
{
    char path[128];
    path_of(s, "run.ckpt", path, sizeof path);
    return domain_said(s, s->d, acm_domain_save(s->d, path));
}

static acm_status op_load(scene *s)
{
    char path[128];
    path_of(s, "run.ckpt", path, sizeof path);
    acm_load_options o;
    ck_assert_int_eq(acm_load_options_init(&o, ACM_LOAD_OPTIONS_VERSION), ACM_OK);
    o.error_buffer = s->msg;
    o.error_buffer_size = sizeof s->msg;
    acm_status st = acm_domain_load(&s->restored, path, &o);
    size_t n = 0;
    if (st == ACM_OK)
        st = domain_said(s, s->restored,
                         acm_domain_get_smokes(s->restored, &s->restored_smoke, 1, &n));
    if (st == ACM_OK)
        ck_assert_uint_eq(n, 1);
    return st;
}

static acm_status op_step_restored(scene *s)
{
    return domain_said(s, s->restored, acm_step(s->restored, 2));
}

/* A domain of 3 slabs: made, given faces, a force field and a velocity field
 * (every slab's part scattered), stepped, queried (gathered), re-laid. */
static acm_status op_split(scene *s)
{
    if (s->split == NULL) {
        acm_domain_options o = acm_test_options(NX, NY, NZ, 0.05, ACM_COLLISION_ACM_LI2020,
                                                ACM_PRECISION_FP32);
        o.subdomains = 3;
        o.error_buffer = s->msg;
        o.error_buffer_size = sizeof s->msg;
        const acm_status st = acm_domain_create(&s->split, &o);
        if (st != ACM_OK)
            return st;
    }
    static double u[NX * NY * NZ * 3];
    for (size_t i = 0; i < NX * NY * NZ; ++i)
        u[3 * i] = 0.01 * (double)(i % 5);
    acm_status st = acm_domain_set_face(s->split, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL);
    if (st == ACM_OK)
        st = acm_domain_set_face(s->split, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL);
    if (st == ACM_OK)
        st = acm_domain_init_fields(s->split, ACM_DTYPE_FLOAT64, NULL, u, NX * NY * NZ);
    if (st == ACM_OK)
        st = acm_domain_set_field(s->split, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, u, sizeof u);
    return domain_said(s, s->split, st);
}

/* A free ball across the slabs' cuts: proxies per slab, more ghost planes,
 * coupling sums over the slabs. */
static acm_status op_split_solid(scene *s)
{
    acm_solid_options so = free_ball(s, 6.0, 4.5);
    so.velocity[2] = 0.05;
    return domain_said(s, s->split, acm_solid_create(&s->split_ball, s->split, &so));
}

static acm_status op_split_step(scene *s) { return domain_said(s, s->split, acm_step(s->split, 3)); }

static acm_status op_split_queries(scene *s)
{
    static double u[NX * NY * NZ * 3];
    acm_status st = acm_domain_get_field(s->split, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u,
                                         sizeof u);
    acm_domain_stats stats = {.version = ACM_DOMAIN_STATS_VERSION};
    if (st == ACM_OK)
        st = acm_domain_get_stats(s->split, &stats);
    return domain_said(s, s->split, st);
}

static acm_status op_split_relayout(scene *s)
{
    return relayout(s, s->split, "acm-layout 1 streaming=in_place");
}

/* The tuner restores the domain bitwise when it is done. */
static acm_status op_autotune(scene *s)
{
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.window_steps = 1;
    o.time_budget_s = 1e-6; /* the first candidate, then the final round: the same every run */
    acm_tune_report *r = NULL;
    acm_layout *best = NULL;
    acm_status st = acm_layout_create(&best);
    if (st != ACM_OK) {
        snprintf(s->msg, sizeof s->msg, "acm_layout_create: %s", acm_status_string(st));
        return st;
    }
    st = acm_domain_autotune(s->restored, &o, best, &r);
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    return domain_said(s, s->restored, st);
}

typedef struct scene_op {
    const char *name;
    acm_status (*run)(scene *s);
} scene_op;

static const scene_op ops[] = {
    {"layout", op_layout},
    {"domain", op_domain},
    {"faces", op_faces},
    {"mesh", op_mesh},
    {"spinner", op_spinner},
    {"ball", op_ball},
    {"smoke", op_smoke},
    {"box emitter", op_box_emitter},
    {"solid emitter", op_solid_emitter},
    {"step", op_step},
    {"queries", op_queries},
    {"exports", op_exports},
    {"relayout", op_relayout},
    {"step", op_step},
    {"save", op_save},
    {"load", op_load},
    {"step restored", op_step_restored},
    {"autotune", op_autotune},
    {"split", op_split},
    {"split solid", op_split_solid},
    {"split step", op_split_step},
    {"split queries", op_split_queries},
    {"split relayout", op_split_relayout},
    {"split step", op_split_step},
};
enum { NOPS = sizeof ops / sizeof *ops };

static void scene_open(scene *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/acm-faults-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    acm_test_sphere_points(NSAMPLES, 1.5, &s->pts, &s->areas);
}

static void scene_close(scene *s)
{
    acm_smoke_destroy(s->smoke);
    acm_solid_destroy(s->spinner);
    acm_solid_destroy(s->ball);
    acm_solid_destroy(s->split_ball);
    acm_domain_destroy(s->d);
    acm_domain_destroy(s->restored);
    acm_domain_destroy(s->split);
    acm_mesh_destroy(s->mesh);
    acm_layout_destroy(s->layout);
    free(s->pts);
    free(s->areas);
    const char *files[] = {"f.vti", "p.ply", "d.vti", "run.ckpt"};
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i) {
        char path[128];
        path_of(s, files[i], path, sizeof path);
        unlink(path);
    }
    ck_assert_msg(rmdir(s->dir) == 0, "%s holds files no call should have left", s->dir);
}

/* FNV-1a over the bytes of the restored and the split domains' populations,
 * the smoke's counters and the solids' forces. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211u;
    return h;
}

static uint64_t scene_hash(scene *s)
{
    static double f[NX * NY * NZ * 27], x[3 * 300];
    ACM_CK_OK(s->restored, acm_domain_get_field(s->restored, ACM_FIELD_POPULATIONS,
                                                ACM_DTYPE_FLOAT64, f, sizeof f));
    uint64_t h = hash_bytes(14695981039346656037u, f, sizeof f);
    ACM_CK_OK(s->split, acm_domain_get_field(s->split, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64,
                                             f, sizeof f));
    /* a GPU spreads the IB force with atomics in no fixed order: with a solid
     * in its slabs the split domain differs from run to run in the last bits
     * (as an undivided GPU domain does: docs/multi-gpu.md), failure or not */
    if (acm_test_backend() != ACM_BACKEND_CUDA)
        h = hash_bytes(h, f, sizeof f);
    acm_smoke_info i = {.version = ACM_SMOKE_INFO_VERSION};
    ck_assert_int_eq(acm_smoke_get_info(s->restored_smoke, &i), ACM_OK);
    h = hash_bytes(h, &i, sizeof i);
    size_t n = 0;
    ck_assert_int_eq(acm_smoke_get_particles(s->restored_smoke, x, 300, &n), ACM_OK);
    h = hash_bytes(h, x, 3 * n * sizeof *x);
    double F[3], T[3];
    ck_assert_int_eq(acm_solid_get_force(s->ball, F, T), ACM_OK);
    return hash_bytes(hash_bytes(h, F, sizeof F), T, sizeof T);
}

/* ---- the loops ----------------------------------------------------------------------- */

/* The run without failures: its allocation count and its hash. */
static int64_t clean_run(uint64_t *hash)
{
    scene s;
    scene_open(&s);
    fault_arm(0, false);
    for (int i = 0; i < NOPS; ++i)
        ck_assert_msg(ops[i].run(&s) == ACM_OK, "%s: %s", ops[i].name, s.msg);
    const int64_t calls = fault_calls();
    *hash = scene_hash(&s);
    scene_close(&s);
    ck_assert_int_eq(fault_live(), 0);
    return calls;
}

/* With call k failing once: the call that met it reports it, changes
 * nothing and succeeds when retried. */
static void transient_run(int64_t k, uint64_t hash)
{
    scene s;
    scene_open(&s);
    fault_arm(k, false);
    int reported = 0;
    const char *where = "no call";
    for (int i = 0; i < NOPS; ++i) {
        s.msg[0] = '\0';
        const int64_t failed_before = fault_failed();
        const acm_status st = ops[i].run(&s);
        if (st == ACM_OK)
            continue;
        ck_assert_msg(st == ACM_ERR_NO_MEMORY && fault_failed() > failed_before,
                      "allocation %lld: '%s' returned %s (%s)", (long long)k, ops[i].name,
                      acm_status_string(st), s.msg);
        ck_assert_msg(s.msg[0] != '\0', "allocation %lld: '%s' gave no message", (long long)k,
                      ops[i].name);
        ++reported;
        where = ops[i].name;
        const acm_status again = ops[i].run(&s);
        ck_assert_msg(again == ACM_OK, "allocation %lld: '%s' failed, then failed again: %s (%s)",
                      (long long)k, ops[i].name, acm_status_string(again), s.msg);
    }
    ck_assert_msg(reported <= 1, "allocation %lld: %d calls failed", (long long)k, reported);
    /* a failure absorbed without a status must not have changed the result */
    ck_assert_msg(scene_hash(&s) == hash,
                  "allocation %lld failed (%s reported it) and the scene ended differently",
                  (long long)k, where);
    scene_close(&s);
    ck_assert_msg(fault_live() == 0, "allocation %lld: %lld blocks leaked", (long long)k,
                  (long long)fault_live());
}

/* From call k on every allocation fails: the scene stops at the first failing
 * call and everything it made is destroyed. */
static void sticky_run(int64_t k)
{
    scene s;
    scene_open(&s);
    fault_arm(k, true);
    for (int i = 0; i < NOPS; ++i) {
        const acm_status st = ops[i].run(&s);
        if (st == ACM_OK)
            continue;
        ck_assert_msg(st == ACM_ERR_NO_MEMORY, "allocations from %lld on: '%s' returned %s (%s)",
                      (long long)k, ops[i].name, acm_status_string(st), s.msg);
        break;
    }
    scene_close(&s);
    ck_assert_msg(fault_live() == 0, "allocations from %lld on: %lld blocks leaked", (long long)k,
                  (long long)fault_live());
}

/* Every call k from 1, or from ACM_FAULT_FIRST, every ACM_FAULT_STRIDE-th
 * (the GPU run on the device; a failure looked at alone). */
static int64_t env_count(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && atoll(e) > 0 ? atoll(e) : 1;
}

static int64_t first(void) { return env_count("ACM_FAULT_FIRST"); }
static int64_t stride(void) { return env_count("ACM_FAULT_STRIDE"); }

START_TEST(every_allocation_can_fail)
{
    uint64_t hash = 0;
    const int64_t n = clean_run(&hash);
    ck_assert_int_gt(n, 50);
    printf("test-faults: the scene makes %lld allocation calls; failing each in turn\n",
           (long long)n);
    for (int64_t k = first(); k <= n; k += stride())
        transient_run(k, hash);
}
END_TEST

START_TEST(every_allocation_fails_from_k_on)
{
    uint64_t hash = 0;
    const int64_t n = clean_run(&hash);
    for (int64_t k = first(); k <= n; k += stride())
        sticky_run(k);
}
END_TEST

TEST_SUITE(faults_suite)
{
    Suite *s = suite_create("faults");
    TCase *tc = acm_tcase("allocations", 600);
    tcase_add_test(tc, every_allocation_can_fail);
    tcase_add_test(tc, every_allocation_fails_from_k_on);
    suite_add_tcase(s, tc);
    return s;
}
