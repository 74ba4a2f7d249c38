/*
 * libacmlbm tests -- OpenVDB export (acm_smoke_export_vdb, acm_domain_export_vdb).
 * With OpenVDB (ACM_TEST_VDB_READER: the meson option openvdb on) the files
 * are read back by OpenVDB itself (vdb-read.cc): grid names, value types,
 * classes, vector types, transforms, the active set and every value against
 * acm_smoke_density and acm_domain_get_field, the particle count; then the
 * errors, a failed write leaving nothing behind. Without it, every call
 * answers ACM_ERR_NOT_BUILT and says how to get it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <signal.h>       /* SIGXFSZ */
#include <sys/resource.h> /* setrlimit: a write that fails */
#include <unistd.h>       /* rmdir, access */

#include "test-common.h"

#ifdef ACM_TEST_VDB_READER
#  include "vdb-read.h"
#endif

/* Densities at most this stay inactive (acm_export.h). */
#define CUTOFF 1e-6f

static acm_smoke *smoke_of(acm_domain *d, uint64_t capacity)
{
    acm_smoke_options o = ACM_SMOKE_OPTIONS_INIT;
    o.capacity = capacity;
    o.seed = 11;
    acm_smoke *s = NULL;
    ACM_CK_OK(d, acm_smoke_create(&s, d, &o));
    return s;
}

/* A ball of smoke in the middle of a sheared box (walls at z = 0 and z max,
 * the top one moving), some steps on: a sparse density, a velocity that
 * varies from cell to cell. */
static acm_domain *smoky_domain(acm_smoke **smoke)
{
    acm_domain_options o = acm_test_options(8, 6, 5, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.03;
    o.initial_velocity[1] = 0.01;
    acm_domain *d = acm_test_domain(&o);
    const double lid[3] = {0.05, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, lid));
    acm_smoke *s = smoke_of(d, 1000);
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SPHERE;
    e.centre[0] = 3.0;
    e.centre[1] = 2.5;
    e.centre[2] = 2.0;
    e.radius = 1.2;
    e.rate = 30.0;
    ck_assert_int_eq(acm_smoke_add_emitter(s, &e), ACM_OK);
    ACM_CK_OK(d, acm_step(d, 12));
    *smoke = s;
    return d;
}

static uint64_t alive_of(acm_smoke *s)
{
    acm_smoke_info i;
    memset(&i, 0, sizeof i);
    i.version = ACM_SMOKE_INFO_VERSION;
    ck_assert_int_eq(acm_smoke_get_info(s, &i), ACM_OK);
    return i.alive;
}

#ifdef ACM_TEST_VDB_READER
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
    fclose(f);
    return b;
}
#endif /* ACM_TEST_VDB_READER */

/* The same on both configurations: a NULL handle, and the answer of
 * acm_vdb_available matching how the test was built. */
START_TEST(vdb_available)
{
#ifdef ACM_TEST_VDB_READER
    ck_assert_int_eq(acm_vdb_available(), 1);
#else
    ck_assert_int_eq(acm_vdb_available(), 0);
#endif /* ACM_TEST_VDB_READER */
    const acm_field rho = ACM_FIELD_DENSITY;
    ck_assert_int_eq(acm_smoke_export_vdb(NULL, "x.vdb", 1, 0), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_domain_export_vdb(NULL, "x.vdb", &rho, 1), ACM_ERR_NULL_POINTER);
}
END_TEST

#ifdef ACM_TEST_VDB_READER

/* Read grid `name` of path: dense values (comps per voxel) and active flags. */
static vdb_test_grid read_grid(const char *path, const char *name, const int32_t n[3], int comps,
                               float *values, unsigned char *active)
{
    vdb_test_grid g;
    char msg[512] = "";
    const size_t voxels = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
    memset(values, 0, voxels * (size_t)comps * sizeof(float));
    memset(active, 0, voxels);
    ck_assert_msg(vdb_test_read(path, name, n, comps, values, active, &g, msg, sizeof msg) == 0,
                  "%s: %s", path, msg);
    ck_assert_uint_eq(g.outside, 0);
    ck_assert_msg(strstr(g.creator, "1.") != NULL, "creator '%s'", g.creator);
    ck_assert(g.linear);
    for (int a = 0; a < 3; ++a)
        ck_assert(g.background[a] == 0.0f);
    return g;
}

/* The grid's transform: voxel size h, voxel (i, j, k) centred at origin + h (i, j, k). */
static void check_transform(const vdb_test_grid *g, double h, double origin)
{
    const double ijk[3] = {1.0, 2.0, 3.0};
    for (int a = 0; a < 3; ++a) {
        ck_assert_double_eq_tol(g->voxel_size[a], h, 1e-12);
        ck_assert_double_eq_tol(g->origin[a], origin, 1e-12);
        ck_assert_double_eq_tol(g->centre[a], origin + h * ijk[a], 1e-12);
    }
}

/* A cell-centred field grid: every cell active, values as acm_domain_get_field. */
static void check_field_grid(acm_domain *d, const char *path, const char *name, acm_field field,
                             const char *value_type)
{
    const int32_t n[3] = {8, 6, 5};
    const int comps = field == ACM_FIELD_DENSITY ? 1 : 3;
    const size_t cells = 8 * 6 * 5, bytes = cells * (size_t)comps * sizeof(float);
    float *got = acm_test_alloc(bytes), *expect = acm_test_alloc(bytes);
    unsigned char *on = acm_test_alloc(cells);
    const vdb_test_grid g = read_grid(path, name, n, comps, got, on);
    ck_assert_str_eq(g.value_type, value_type);
    ck_assert_str_eq(g.grid_class, "unknown");
    if (comps == 3)
        ck_assert_str_eq(g.vector_type, "contravariant relative");
    check_transform(&g, 1.0, 0.0);
    ck_assert_uint_eq(g.active, cells);
    ACM_CK_OK(d, acm_domain_get_field(d, field, ACM_DTYPE_FLOAT32, expect, bytes));
    for (size_t k = 0; k < cells * (size_t)comps; ++k)
        ck_assert_msg(got[k] == expect[k], "%s value %zu: %.9g, expected %.9g", name, k,
                      (double)got[k], (double)expect[k]);
    free(got);
    free(expect);
    free(on);
}

/* The smoke's density at s = 1, 2, 3 (with the velocity at 1 and 3): a fog
 * volume, sparse, its active voxels exactly those above the cutoff, with the
 * values of acm_smoke_density, holding every particle once. */
START_TEST(vdb_smoke)
{
    acm_smoke *s = NULL;
    acm_domain *d = smoky_domain(&s);
    const uint64_t alive = alive_of(s);
    ck_assert_uint_gt(alive, 300);
    char dir[] = "/tmp/acm-vdb-XXXXXX", path[128], names[128], creator[64], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/smoke.vdb", dir);
    for (int32_t sub = 1; sub <= 3; ++sub) {
        const uint32_t flags = sub == 2 ? 0u : (uint32_t)ACM_VDB_VELOCITY;
        ck_assert_msg(acm_smoke_export_vdb(s, path, sub, flags) == ACM_OK, "%s",
                      acm_smoke_last_error(s));
        ck_assert_msg(vdb_test_names(path, names, sizeof names, creator, sizeof creator, msg,
                                     sizeof msg) == 0, "%s", msg);
        ck_assert_str_eq(names, flags ? "density,vel" : "density");
        ck_assert_str_eq(creator, acm_version_string());

        const int32_t n[3] = {8 * sub, 6 * sub, 5 * sub};
        const size_t voxels = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
        float *got = acm_test_alloc(voxels * sizeof(float)), *expect = acm_test_alloc(voxels * sizeof(float));
        unsigned char *on = acm_test_alloc(voxels);
        const vdb_test_grid g = read_grid(path, "density", n, 1, got, on);
        ck_assert_str_eq(g.value_type, "float");
        ck_assert_str_eq(g.grid_class, "fog volume");
        check_transform(&g, 1.0 / sub, 0.5 / sub - 0.5);
        ck_assert_int_eq(acm_smoke_density(s, sub, expect, voxels), ACM_OK);
        double sum = 0.0;
        uint64_t above = 0;
        for (size_t k = 0; k < voxels; ++k) {
            ck_assert_msg(on[k] == (expect[k] > CUTOFF), "voxel %zu: active %d, density %g", k,
                          on[k], (double)expect[k]);
            ck_assert_msg(got[k] == (on[k] ? expect[k] : 0.0f), "voxel %zu: %.9g, expected %.9g",
                          k, (double)got[k], (double)expect[k]);
            sum += got[k];
            above += on[k];
        }
        ck_assert_uint_eq(g.active, above);
        ck_assert_msg(above > 0 && above < voxels / 2, "%llu of %zu voxels active: not sparse",
                      (unsigned long long)above, voxels);
        /* what the cutoff drops is at most CUTOFF a voxel */
        const double held = sum / (sub * sub * sub), slack = 1e-5 * (double)alive + CUTOFF * (double)voxels;
        ck_assert_msg(fabs(held - (double)alive) < slack, "s=%d: the grid holds %.6f particles, %llu "
                      "are alive", sub, held, (unsigned long long)alive);
        if (flags)
            check_field_grid(d, path, "vel", ACM_FIELD_VELOCITY, "vec3s");
        free(got);
        free(expect);
        free(on);
    }
    ck_assert_int_eq(acm_test_temporaries(dir), 0);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* Fields of a domain: density, velocity and a force field as their grids;
 * a second export replaces the first. */
START_TEST(vdb_domain)
{
    acm_smoke *s = NULL;
    acm_domain *d = smoky_domain(&s);
    const size_t cells = 8 * 6 * 5;
    float *force = acm_test_alloc(3 * cells * sizeof(float));
    for (size_t k = 0; k < 3 * cells; ++k)
        force[k] = 1e-5f * (float)((k * 37) % 11) - 4e-5f;
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT32, force,
                                      3 * cells * sizeof(float)));
    ACM_CK_OK(d, acm_step(d, 3));
    char dir[] = "/tmp/acm-vdb-XXXXXX", path[128], names[128], creator[64], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fields.vdb", dir);
    const acm_field rho = ACM_FIELD_DENSITY;
    ACM_CK_OK(d, acm_domain_export_vdb(d, path, &rho, 1));
    const acm_field fields[] = {ACM_FIELD_DENSITY, ACM_FIELD_VELOCITY, ACM_FIELD_FORCE};
    ACM_CK_OK(d, acm_domain_export_vdb(d, path, fields, 3));
    ck_assert_msg(vdb_test_names(path, names, sizeof names, creator, sizeof creator, msg,
                                 sizeof msg) == 0, "%s", msg);
    ck_assert_str_eq(names, "fluid_density,force,vel");
    check_field_grid(d, path, "fluid_density", ACM_FIELD_DENSITY, "float");
    check_field_grid(d, path, "vel", ACM_FIELD_VELOCITY, "vec3s");
    check_field_grid(d, path, "force", ACM_FIELD_FORCE, "vec3s");
    ck_assert_int_eq(acm_test_temporaries(dir), 0);
    free(force);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

/* Bad arguments, a missing directory, and a write that fails half way (the
 * file size limit, as a full disk would): specific statuses and messages, no
 * temporary left, an earlier file untouched. */
START_TEST(vdb_errors)
{
    acm_smoke *s = NULL;
    acm_domain *d = smoky_domain(&s);
    ck_assert_int_eq(acm_smoke_export_vdb(s, NULL, 1, 0), ACM_ERR_NULL_POINTER);
    ck_assert_str_eq(acm_smoke_last_error(s), "path is NULL");
    ck_assert_int_eq(acm_smoke_export_vdb(s, "x.vdb", 0, 0), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_smoke_export_vdb(s, "x.vdb", ACM_SMOKE_SUBDIVISIONS_MAX + 1, 0),
                     ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "subdivisions"));
    ck_assert_int_eq(acm_smoke_export_vdb(s, "x.vdb", 1, 0x6u), ACM_ERR_BAD_ENUM);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "0x6"));
    ck_assert_int_eq(acm_smoke_export_vdb(s, "/nonexistent-dir/s.vdb", 1, ACM_VDB_VELOCITY),
                     ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "/nonexistent-dir/s.vdb"));
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "No such file or directory"));
    ck_assert_int_ne(access("x.vdb", F_OK), 0); /* nothing written for a refused call */

    const acm_field rho = ACM_FIELD_DENSITY, twice[2] = {ACM_FIELD_VELOCITY, ACM_FIELD_VELOCITY};
    const acm_field unknown = (acm_field)77, pops = ACM_FIELD_POPULATIONS;
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, NULL, &rho, 1), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "x.vdb", NULL, 1), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "x.vdb", &rho, 0), ACM_ERR_INVALID_ARG);
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "x.vdb", twice, 2), ACM_ERR_INVALID_ARG);
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "x.vdb", &unknown, 1), ACM_ERR_BAD_ENUM);
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "x.vdb", &pops, 1), ACM_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "acm_domain_export_vti"));
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, "/nonexistent-dir/x.vdb", &rho, 1), ACM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "/nonexistent-dir/x.vdb"));
    ck_assert_int_ne(access("x.vdb", F_OK), 0);

    /* a write that fails after the temporary was created */
    char dir[] = "/tmp/acm-vdb-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/smoke.vdb", dir);
    ck_assert_msg(acm_smoke_export_vdb(s, path, 1, 0) == ACM_OK, "%s", acm_smoke_last_error(s));
    size_t before_size = 0;
    char *before = slurp(path, &before_size); /* about 10 KB */
    struct rlimit keep, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    small = keep;
    small.rlim_cur = 16 * 1024; /* the density at s = 8 with the velocity takes 32 KB */
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    const acm_status st = acm_smoke_export_vdb(s, path, 8, ACM_VDB_VELOCITY);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, old);
    ck_assert_msg(st == ACM_ERR_IO, "%s: %s", acm_status_string(st), acm_smoke_last_error(s));
    ck_assert_msg(strstr(acm_smoke_last_error(s), "File too large") != NULL, "%s",
                  acm_smoke_last_error(s));
    ck_assert_msg(strstr(acm_smoke_last_error(s), path) != NULL &&
                      strstr(acm_smoke_last_error(s), ".tmp") == NULL,
                  "'%s' does not name the caller's path alone", acm_smoke_last_error(s));
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

/* A file name of 255 bytes (NAME_MAX) is valid: its temporary `<name>.tmp.<pid>`
 * was not, and the export failed naming the temporary. */
START_TEST(vdb_longest_name)
{
    acm_smoke *s = NULL;
    acm_domain *d = smoky_domain(&s);
    char dir[] = "/tmp/acm-vdb-XXXXXX", name[256], path[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    memset(name, 'n', 255);
    memcpy(name + 251, ".vdb", 5);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(acm_smoke_export_vdb(s, path, 1, ACM_VDB_VELOCITY) == ACM_OK, "%s",
                  acm_smoke_last_error(s));
    char names[128], creator[64], msg[512];
    ck_assert_msg(vdb_test_names(path, names, sizeof names, creator, sizeof creator, msg,
                                 sizeof msg) == 0, "%s", msg);
    ck_assert_str_eq(names, "density,vel");
    const acm_field rho = ACM_FIELD_DENSITY;
    ACM_CK_OK(d, acm_domain_export_vdb(d, path, &rho, 1));
    ck_assert_int_eq(acm_test_temporaries(dir), 0);
    remove(path);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

#else /* !ACM_TEST_VDB_READER */

/* Without OpenVDB: ACM_ERR_NOT_BUILT, a message that says what to install,
 * and no file. */
START_TEST(vdb_not_built)
{
    acm_smoke *s = NULL;
    acm_domain *d = smoky_domain(&s);
    char dir[] = "/tmp/acm-vdb-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/smoke.vdb", dir);
    ck_assert_int_eq(acm_smoke_export_vdb(s, path, 1, ACM_VDB_VELOCITY), ACM_ERR_NOT_BUILT);
    ck_assert_ptr_nonnull(strstr(acm_smoke_last_error(s), "libopenvdb-dev"));
    const acm_field rho = ACM_FIELD_DENSITY;
    ACM_CK_FAIL(d, acm_domain_export_vdb(d, path, &rho, 1), ACM_ERR_NOT_BUILT);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "-Dopenvdb=enabled"));
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(acm_test_temporaries(dir), 0);
    rmdir(dir);
    acm_domain_destroy(d);
}
END_TEST

#endif /* ACM_TEST_VDB_READER */

TEST_SUITE(vdb_export)
{
    Suite *s = suite_create("vdb_export");
    TCase *tc = acm_tcase("vdb", 60);
    tcase_add_test(tc, vdb_available);
#ifdef ACM_TEST_VDB_READER
    tcase_add_test(tc, vdb_smoke);
    tcase_add_test(tc, vdb_domain);
    tcase_add_test(tc, vdb_errors);
    tcase_add_test(tc, vdb_longest_name);
#else
    tcase_add_test(tc, vdb_not_built);
#endif /* ACM_TEST_VDB_READER */
    suite_add_tcase(s, tc);
    return s;
}
