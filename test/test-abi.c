/*
 * libacmlbm tests -- the binary interface of version 1, pinned.
 *
 * The numbers below are what libacmlbm 1.0 shipped with, and those that 1.1
 * added (marked as such). THEY MUST NEVER CHANGE: a caller compiled against
 * 1.0 or 1.1 passes structs of exactly these sizes and layouts, and enum
 * values of exactly these numbers. A new field goes at
 * the end of its struct together with a new *_VERSION (docs/abi.md); the
 * version-1 numbers stay here unchanged, and the new version gets its own
 * line. If a check here fails, the change broke the ABI: undo it.
 *
 * Sizes were measured on x86-64 Linux. They hold on every LP64 ABI with
 * naturally aligned 8-byte types and 4-byte enums, which the preconditions
 * check first. SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include <stddef.h> /* offsetof */
#include <stdint.h> /* UINTPTR_MAX */

/* ---- preconditions: the ABI family the numbers were measured on ----------------- */

#if !defined(__LP64__) && !defined(_LP64)
#  error "pin the version-1 struct sizes for this (non-LP64) ABI in test-abi.c"
#endif /* !__LP64__ */
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "LP64");
_Static_assert(sizeof(double) == 8 && _Alignof(double) == 8, "8-byte aligned double");
_Static_assert(sizeof(int64_t) == 8 && _Alignof(int64_t) == 8, "8-byte aligned int64_t");
_Static_assert(sizeof(acm_backend) == 4 && sizeof(acm_status) == 4, "4-byte enums");

/* ---- struct sizes and layouts of version 1 --------------------------------------- */

#define ACM_V1_DOMAIN_OPTIONS_SIZE 112
#define ACM_V2_DOMAIN_OPTIONS_SIZE 128 /* 1.4: subdomains, devices */
#define ACM_V1_COLLISION_OPTIONS_SIZE 112
#define ACM_V1_DOMAIN_STATS_SIZE 80
#define ACM_V1_DOMAIN_INFO_SIZE 80
#define ACM_V2_DOMAIN_INFO_SIZE 96 /* 1.2: streaming, bytes_per_cell */

_Static_assert(ACM_DOMAIN_OPTIONS_VERSION == 2 && ACM_COLLISION_OPTIONS_VERSION == 1 &&
                   ACM_DOMAIN_STATS_VERSION == 1 && ACM_DOMAIN_INFO_VERSION == 2,
               "a new struct version needs its own pinned sizes here");

_Static_assert(sizeof(acm_domain_options) == ACM_V2_DOMAIN_OPTIONS_SIZE,
               "acm_domain_options v2 size");
_Static_assert(offsetof(acm_domain_options, subdomains) == ACM_V1_DOMAIN_OPTIONS_SIZE,
               "acm_domain_options v1 is the prefix of v2");
_Static_assert(sizeof(acm_collision_options) == ACM_V1_COLLISION_OPTIONS_SIZE,
               "acm_collision_options v1 size");
_Static_assert(sizeof(acm_domain_stats) == ACM_V1_DOMAIN_STATS_SIZE, "acm_domain_stats v1 size");
_Static_assert(sizeof(acm_domain_info) == ACM_V2_DOMAIN_INFO_SIZE, "acm_domain_info v2 size");

/* Every field's offset: a reordering keeps the size but breaks callers. */
#define PIN(type, field, off) \
    _Static_assert(offsetof(type, field) == (off), #type "." #field " moved")

PIN(acm_domain_options, version, 0);
PIN(acm_domain_options, nx, 4);
PIN(acm_domain_options, ny, 8);
PIN(acm_domain_options, nz, 12);
PIN(acm_domain_options, viscosity, 16);
PIN(acm_domain_options, tau, 24);
PIN(acm_domain_options, collision, 32);
PIN(acm_domain_options, backend, 36);
PIN(acm_domain_options, device, 40);
PIN(acm_domain_options, precision, 44);
PIN(acm_domain_options, layout, 48);
PIN(acm_domain_options, initial_density, 56);
PIN(acm_domain_options, initial_velocity, 64);
PIN(acm_domain_options, max_speed, 88);
PIN(acm_domain_options, error_buffer, 96);
PIN(acm_domain_options, error_buffer_size, 104);
PIN(acm_domain_options, subdomains, 112);
PIN(acm_domain_options, devices, 120);

PIN(acm_collision_options, version, 0);
PIN(acm_collision_options, model, 4);
PIN(acm_collision_options, high_order_rate, 8);
PIN(acm_collision_options, bulk_rate, 16);
PIN(acm_collision_options, bulk_follows_high_order, 24);
PIN(acm_collision_options, safety_net, 28);
PIN(acm_collision_options, max_high_order_rate, 32);
PIN(acm_collision_options, li2018_nu0, 40);
PIN(acm_collision_options, li2020_theta, 72);
PIN(acm_collision_options, li2020_tau0, 104);

PIN(acm_domain_stats, version, 0);
PIN(acm_domain_stats, step, 8);
PIN(acm_domain_stats, mass, 16);
PIN(acm_domain_stats, momentum, 24);
PIN(acm_domain_stats, kinetic_energy, 48);
PIN(acm_domain_stats, max_speed, 56);
PIN(acm_domain_stats, fallback_cells_last_step, 64);
PIN(acm_domain_stats, fallback_cells_total, 72);

PIN(acm_domain_info, version, 0);
PIN(acm_domain_info, nx, 4);
PIN(acm_domain_info, ny, 8);
PIN(acm_domain_info, nz, 12);
PIN(acm_domain_info, backend, 16);
PIN(acm_domain_info, device, 20);
PIN(acm_domain_info, precision, 24);
PIN(acm_domain_info, collision, 28);
PIN(acm_domain_info, viscosity, 32);
PIN(acm_domain_info, tau, 40);
PIN(acm_domain_info, csoa_group, 48);
PIN(acm_domain_info, kernel, 56);
PIN(acm_domain_info, block_size, 60);
PIN(acm_domain_info, step, 64);
PIN(acm_domain_info, memory_bytes, 72);
PIN(acm_domain_info, streaming, 80); /* version 2 */
PIN(acm_domain_info, bytes_per_cell, 88);

/* ---- 1.1: meshes, version 1 of their structs ------------------------------------ */

#define ACM_V1_MESH_OPTIONS_SIZE 32
#define ACM_V1_MESH_INFO_SIZE 176

_Static_assert(ACM_MESH_OPTIONS_VERSION == 1 && ACM_MESH_INFO_VERSION == 1,
               "a new struct version needs its own pinned sizes here");
_Static_assert(sizeof(acm_mesh_options) == ACM_V1_MESH_OPTIONS_SIZE, "acm_mesh_options v1 size");
_Static_assert(sizeof(acm_mesh_info) == ACM_V1_MESH_INFO_SIZE, "acm_mesh_info v1 size");
_Static_assert(sizeof(acm_mesh_format) == 4, "4-byte enums");

PIN(acm_mesh_options, version, 0);
PIN(acm_mesh_options, format, 4);
PIN(acm_mesh_options, max_triangles, 8);
PIN(acm_mesh_options, error_buffer, 16);
PIN(acm_mesh_options, error_buffer_size, 24);

PIN(acm_mesh_info, version, 0);
PIN(acm_mesh_info, vertex_count, 8);
PIN(acm_mesh_info, triangle_count, 16);
PIN(acm_mesh_info, degenerate_triangles, 24);
PIN(acm_mesh_info, bbox_min, 32);
PIN(acm_mesh_info, bbox_max, 56);
PIN(acm_mesh_info, area, 80);
PIN(acm_mesh_info, volume, 88);
PIN(acm_mesh_info, centroid, 96);
PIN(acm_mesh_info, inertia, 120);
PIN(acm_mesh_info, closed, 168);

/* ---- 1.1: immersed solids, version 1 of their structs --------------------------- */

#define ACM_V1_SOLID_OPTIONS_SIZE 296
#define ACM_V1_SOLID_STATE_SIZE 112
#define ACM_V1_SOLID_INFO_SIZE 120

_Static_assert(ACM_SOLID_OPTIONS_VERSION == 1 && ACM_SOLID_STATE_VERSION == 1 &&
                   ACM_SOLID_INFO_VERSION == 1,
               "a new struct version needs its own pinned sizes here");
_Static_assert(sizeof(acm_solid_options) == ACM_V1_SOLID_OPTIONS_SIZE, "acm_solid_options v1 size");
_Static_assert(sizeof(acm_solid_state) == ACM_V1_SOLID_STATE_SIZE, "acm_solid_state v1 size");
_Static_assert(sizeof(acm_solid_info) == ACM_V1_SOLID_INFO_SIZE, "acm_solid_info v1 size");

PIN(acm_solid_options, version, 0);
PIN(acm_solid_options, mesh, 8);
PIN(acm_solid_options, sample_count, 16);
PIN(acm_solid_options, sample_points, 24);
PIN(acm_solid_options, sample_areas, 32);
PIN(acm_solid_options, scale, 40);
PIN(acm_solid_options, position, 48);
PIN(acm_solid_options, orientation, 72);
PIN(acm_solid_options, samples_per_cell, 104);
PIN(acm_solid_options, surface_inset, 112);
PIN(acm_solid_options, seed, 120);
PIN(acm_solid_options, ib_alpha, 128);
PIN(acm_solid_options, motion, 136);
PIN(acm_solid_options, velocity, 144);
PIN(acm_solid_options, angular_velocity, 168);
PIN(acm_solid_options, density, 192);
PIN(acm_solid_options, mass, 200);
PIN(acm_solid_options, volume, 208);
PIN(acm_solid_options, inertia, 216);
PIN(acm_solid_options, gravity, 264);
PIN(acm_solid_options, max_samples, 288);
PIN(acm_solid_state, version, 0);
PIN(acm_solid_state, position, 8);
PIN(acm_solid_state, orientation, 32);
PIN(acm_solid_state, velocity, 64);
PIN(acm_solid_state, angular_velocity, 88);
PIN(acm_solid_info, version, 0);
PIN(acm_solid_info, sample_count, 8);
PIN(acm_solid_info, area, 16);
PIN(acm_solid_info, sample_spacing, 24);
PIN(acm_solid_info, motion, 32);
PIN(acm_solid_info, volume, 40);
PIN(acm_solid_info, mass, 48);
PIN(acm_solid_info, inertia, 56);
PIN(acm_solid_info, ib_alpha, 104);
PIN(acm_solid_info, resorts, 112);
PIN(acm_divergence_policy, version, 0); /* 1.3 */
PIN(acm_divergence_policy, action, 4);
PIN(acm_divergence_policy, snapshot_interval, 8);
PIN(acm_divergence_policy, callback, 16);
PIN(acm_divergence_policy, user_data, 24);
PIN(acm_divergence_event, step, 0);
PIN(acm_divergence_event, rewound_to, 8);
PIN(acm_divergence_event, message, 16);

/* ---- enumeration values ------------------------------------------------------------ */

#define PIN_VALUE(name, value) _Static_assert((name) == (value), #name " changed value")

PIN_VALUE(ACM_OK, 0);
PIN_VALUE(ACM_ERR_NO_MEMORY, 101);
PIN_VALUE(ACM_ERR_DEVICE, 102);
PIN_VALUE(ACM_ERR_NO_DEVICE, 103);
PIN_VALUE(ACM_ERR_DEVICE_MEMORY, 104);
PIN_VALUE(ACM_ERR_IO, 105); /* 1.1 */
PIN_VALUE(ACM_ERR_INVALID_ARG, 201);
PIN_VALUE(ACM_ERR_BAD_STATE, 202);
PIN_VALUE(ACM_ERR_BAD_VERSION, 203);
PIN_VALUE(ACM_ERR_NULL_POINTER, 204);
PIN_VALUE(ACM_ERR_OUT_OF_RANGE, 205);
PIN_VALUE(ACM_ERR_BAD_ENUM, 206);
PIN_VALUE(ACM_ERR_BUFFER_SIZE, 207);
PIN_VALUE(ACM_ERR_BAD_FORMAT, 208); /* 1.1 */
PIN_VALUE(ACM_ERR_LIMIT, 209);      /* 1.1 */
PIN_VALUE(ACM_ERR_UNSUPPORTED, 301);
PIN_VALUE(ACM_ERR_NOT_BUILT, 302);
PIN_VALUE(ACM_ERR_DIVERGED, 401);
PIN_VALUE(ACM_ERR_INTERNAL, 901);

PIN_VALUE(ACM_LAYOUT_CSOA_GROUP, 1);
PIN_VALUE(ACM_LAYOUT_KERNEL, 2);
PIN_VALUE(ACM_LAYOUT_BLOCK_SIZE, 3);
PIN_VALUE(ACM_KERNEL_DEFAULT, 0);
PIN_VALUE(ACM_KERNEL_FUSED, 1);
PIN_VALUE(ACM_KERNEL_SPLIT, 2);
PIN_VALUE(ACM_KERNEL_BASELINE, 3);
PIN_VALUE(ACM_BACKEND_AUTO, 0);
PIN_VALUE(ACM_BACKEND_CPU, 1);
PIN_VALUE(ACM_BACKEND_CUDA, 2);
PIN_VALUE(ACM_PRECISION_DEFAULT, 0);
PIN_VALUE(ACM_PRECISION_FP32, 1);
PIN_VALUE(ACM_PRECISION_FP64, 2);
PIN_VALUE(ACM_PRECISION_FP16, 3);
PIN_VALUE(ACM_COLLISION_DEFAULT, 0);
PIN_VALUE(ACM_COLLISION_BGK, 1);
PIN_VALUE(ACM_COLLISION_RM_MRT, 2);
PIN_VALUE(ACM_COLLISION_CM_MRT, 3);
PIN_VALUE(ACM_COLLISION_ACM_LI2018, 4);
PIN_VALUE(ACM_COLLISION_ACM_LI2020, 5);
PIN_VALUE(ACM_FACE_X_MIN, 0);
PIN_VALUE(ACM_FACE_X_MAX, 1);
PIN_VALUE(ACM_FACE_Y_MIN, 2);
PIN_VALUE(ACM_FACE_Y_MAX, 3);
PIN_VALUE(ACM_FACE_Z_MIN, 4);
PIN_VALUE(ACM_FACE_Z_MAX, 5);
PIN_VALUE(ACM_FACE_COUNT, 6);
PIN_VALUE(ACM_BOUNDARY_PERIODIC, 0);
PIN_VALUE(ACM_BOUNDARY_WALL, 1);
PIN_VALUE(ACM_BOUNDARY_INLET, 2);
PIN_VALUE(ACM_BOUNDARY_OUTLET, 3);
PIN_VALUE(ACM_DTYPE_FLOAT32, 1);
PIN_VALUE(ACM_DTYPE_FLOAT64, 2);
PIN_VALUE(ACM_FIELD_DENSITY, 1);
PIN_VALUE(ACM_FIELD_VELOCITY, 2);
PIN_VALUE(ACM_FIELD_FORCE, 3);
PIN_VALUE(ACM_FIELD_POPULATIONS, 4);
PIN_VALUE(ACM_PARAM_THREADS, 1);
PIN_VALUE(ACM_PARAM_DIVERGENCE_INTERVAL, 2);
PIN_VALUE(ACM_MESH_FORMAT_AUTO, 0); /* 1.1 */
PIN_VALUE(ACM_MESH_FORMAT_STL, 1);
PIN_VALUE(ACM_MESH_FORMAT_OBJ, 2);
PIN_VALUE(ACM_PARAM_IB_ITERATIONS, 3);
PIN_VALUE(ACM_LAYOUT_SAMPLE_BLOCK, 4);
PIN_VALUE(ACM_LAYOUT_SAMPLE_ORDER, 5);
PIN_VALUE(ACM_LAYOUT_IB_SPREAD, 6);
PIN_VALUE(ACM_LAYOUT_STREAMING, 7); /* 1.2 */
PIN_VALUE(ACM_STREAMING_DEFAULT, 0);
PIN_VALUE(ACM_STREAMING_TWO_ARRAYS, 1);
PIN_VALUE(ACM_STREAMING_IN_PLACE, 2);
PIN_VALUE(ACM_SAMPLE_ORDER_DEFAULT, 0);
PIN_VALUE(ACM_SAMPLE_ORDER_MORTON_BLOCK, 1);
PIN_VALUE(ACM_SAMPLE_ORDER_AS_SAMPLED, 2);
PIN_VALUE(ACM_IB_SPREAD_DEFAULT, 0);
PIN_VALUE(ACM_IB_SPREAD_SCATTER, 1);
PIN_VALUE(ACM_IB_SPREAD_GATHER, 2);
PIN_VALUE(ACM_MOTION_STATIC, 0);
PIN_VALUE(ACM_MOTION_PRESCRIBED, 1);
PIN_VALUE(ACM_MOTION_FREE, 2);
PIN_VALUE(ACM_DIVERGENCE_STOP, 0); /* 1.3 */
PIN_VALUE(ACM_DIVERGENCE_REWIND, 1);

/* ---- run-time checks --------------------------------------------------------------- */

/* The same numbers seen by the running code (the static checks above are
 * the ones that guard the ABI; this keeps the suite visible in the log). */
START_TEST(struct_sizes_are_version_1)
{
    ck_assert_uint_eq(sizeof(acm_domain_options), ACM_V2_DOMAIN_OPTIONS_SIZE);
    ck_assert_uint_eq(sizeof(acm_collision_options), ACM_V1_COLLISION_OPTIONS_SIZE);
    ck_assert_uint_eq(sizeof(acm_domain_stats), ACM_V1_DOMAIN_STATS_SIZE);
    ck_assert_uint_eq(sizeof(acm_domain_info), ACM_V2_DOMAIN_INFO_SIZE);
    ck_assert_uint_eq(sizeof(acm_mesh_options), ACM_V1_MESH_OPTIONS_SIZE);
    ck_assert_uint_eq(sizeof(acm_mesh_info), ACM_V1_MESH_INFO_SIZE);
    ck_assert_uint_eq(sizeof(acm_solid_options), ACM_V1_SOLID_OPTIONS_SIZE);
    ck_assert_uint_eq(sizeof(acm_solid_state), ACM_V1_SOLID_STATE_SIZE);
    ck_assert_uint_eq(sizeof(acm_solid_info), ACM_V1_SOLID_INFO_SIZE);
}
END_TEST

/* The library reads and writes no more than a version-1 struct: each one
 * lives in a heap block of exactly its size, so the sanitizer build catches
 * an access past it. */
START_TEST(library_reads_only_version_1_bytes)
{
    acm_domain_options *o = acm_test_alloc(ACM_V1_DOMAIN_OPTIONS_SIZE); /* a 1.3 caller's */
    ck_assert_int_eq(acm_domain_options_init(o, 1), ACM_OK);
    o->nx = o->ny = o->nz = 3;
    o->viscosity = 0.05;
    o->backend = acm_test_backend();
    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_create(&d, o), ACM_OK);
    free(o);

    acm_collision_options *c = acm_test_alloc(sizeof *c);
    ck_assert_int_eq(acm_collision_options_init(c, 1), ACM_OK);
    ACM_CK_OK(d, acm_domain_set_collision(d, c));
    ACM_CK_OK(d, acm_domain_get_collision(d, c));
    free(c);

    acm_domain_stats *s = acm_test_alloc(sizeof *s);
    s->version = 1;
    ACM_CK_OK(d, acm_domain_get_stats(d, s));
    ck_assert_uint_eq(s->version, 1);
    free(s);

    /* acm_domain_info is at version 2: a version-1 caller's block is smaller
     * (its fields read through memcpy, as the caller's own struct would be) */
    unsigned char *i = acm_test_alloc(ACM_V1_DOMAIN_INFO_SIZE);
    const uint32_t v1 = 1;
    int32_t nx = 0;
    uint32_t version = 0;
    memcpy(i, &v1, sizeof v1);
    ACM_CK_OK(d, acm_domain_get_info(d, (acm_domain_info *)(void *)i));
    memcpy(&version, i + offsetof(acm_domain_info, version), sizeof version);
    memcpy(&nx, i + offsetof(acm_domain_info, nx), sizeof nx);
    ck_assert_uint_eq(version, 1);
    ck_assert_int_eq(nx, 3);
    free(i);
    acm_domain_destroy(d);
}
END_TEST

START_TEST(mesh_structs_are_version_1)
{
    static const double v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    static const uint32_t t[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
    acm_mesh_options *o = acm_test_alloc(sizeof *o);
    ck_assert_int_eq(acm_mesh_options_init(o, 1), ACM_OK);
    acm_mesh *m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, v, 4, t, 4, o), ACM_OK);
    free(o);
    acm_mesh_info *i = acm_test_alloc(sizeof *i);
    i->version = 1;
    ck_assert_int_eq(acm_mesh_get_info(m, i), ACM_OK);
    ck_assert_uint_eq(i->version, 1);
    ck_assert_uint_eq(i->triangle_count, 4);
    free(i);
    acm_mesh_destroy(m);
}
END_TEST

TEST_SUITE(abi_suite)
{
    Suite *s = suite_create("abi");
    TCase *tc = acm_tcase("v1", 30);
    tcase_add_test(tc, struct_sizes_are_version_1);
    tcase_add_test(tc, library_reads_only_version_1_bytes);
    tcase_add_test(tc, mesh_structs_are_version_1);
    suite_add_tcase(s, tc);
    return s;
}
