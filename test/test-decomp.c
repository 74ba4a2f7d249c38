/*
 * libacmlbm tests -- a domain of several slabs (acm_domain_options.subdomains,
 * docs/multi-gpu.md) against the same domain undivided: bitwise the same
 * populations for every collision model, face type, streaming scheme and
 * precision, through re-layout and checkpoint-free state changes; queries
 * gathered in the documented order; bad options refused.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h> /* bool */
#include <unistd.h>  /* close */

#include "decomp-scenes.h"

/* c's scene undivided and in slabs, with add_solids' solids or without; the
 * slabs exchange while they step, or after (ACM_PARAM_HALO_OVERLAP). */
static void run_pair(const run_cfg *c, bool solids, int overlap)
{
    acm_domain *one = make(c, 0), *split = make(c, c->subdomains);
    ACM_CK_OK(split, acm_domain_set_param(split, ACM_PARAM_HALO_OVERLAP, overlap));
    /* checks every few steps: GPU slabs then fold the ACM rules' inputs on
     * their devices (docs/multi-gpu.md, "Reductions on the devices") */
    if (overlap > 0)
        ACM_CK_OK(split, acm_domain_set_param(split, ACM_PARAM_DIVERGENCE_INTERVAL, 4));
    expect_same(one, split, c, "after initialisation");
    acm_solid *s1[NSOLIDS], *s2[NSOLIDS];
    if (solids) {
        add_solids(one, c->scene, s1);
        add_solids(split, c->scene, s2);
    }
    ACM_CK_OK(one, acm_step(one, solids ? SOLID_STEPS : STEPS));
    ACM_CK_OK(split, acm_step(split, solids ? SOLID_STEPS : STEPS));
    const double tol = solids ? solids_tol(c) : 0.0;
    expect_close(one, split, c, tol, solids ? "with solids" : "after the steps");
    if (solids)
        expect_same_solids(s1, s2, tol, scene_name[c->scene]);
    acm_domain_stats s[2] = {acm_test_stats(one), acm_test_stats(split)};
    ck_assert_msg(fabs(s[1].mass - s[0].mass) <= (1e-9 + tol) * s[0].mass, "mass %.17g vs %.17g",
                  s[1].mass, s[0].mass);
    ck_assert_msg(fabs(s[1].max_speed - s[0].max_speed) <= tol * s[0].max_speed,
                  "max speed %.17g vs %.17g", s[1].max_speed, s[0].max_speed);
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}

/* Every model, both streaming schemes, FP64 and FP32, 2 and 3 slabs; a third
 * of them exchanging after the whole step, a third while it runs (with two
 * arrays), a third as the default has it (after: slabs in one process on one
 * device; over MPI: test-mpi). */
static void run_pairs(enum scene sc, bool solids)
{
    for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m)
        for (int s = ACM_STREAMING_TWO_ARRAYS; s <= (int)acm_test_in_place(); ++s)
            for (int p = 0; p < 2; ++p) {
                const run_cfg c = {models[m], p ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64,
                                   (acm_streaming)s, sc, 2 + (int)((m + s + p) % 2)};
                run_pair(&c, solids, (int)((m + p + (size_t)sc) % 3));
            }
}

/* _i: scene. */
START_TEST(bitwise_as_one_domain) { run_pairs((enum scene)_i, false); }
END_TEST

/* _i: scene. A static solid across the cuts and a moving one crossing a cut. */
START_TEST(solids_across_the_cuts) { run_pairs((enum scene)_i, true); }
END_TEST

/* The gather spread (ACM_IB_SPREAD_GATHER): each slab walks the undivided
 * domain's region of a solid and keeps the cells on its planes. Two models,
 * both streaming schemes, FP64 and FP32, the periodic and the walled scene. */
START_TEST(gather_spread_across_the_cuts)
{
    const acm_collision which[2] = {ACM_COLLISION_CM_MRT, ACM_COLLISION_ACM_LI2020};
    for (int m = 0; m < 2; ++m)
        for (int s = ACM_STREAMING_TWO_ARRAYS; s <= (int)acm_test_in_place(); ++s)
            for (int sc = SCENE_PERIODIC; sc <= SCENE_LID; ++sc) {
                const run_cfg c = {which[m], (m + s) % 2 ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64,
                                   (acm_streaming)s, (enum scene)sc, 2 + (m + sc) % 2};
                acm_domain *both[2] = {make(&c, 0), make(&c, c.subdomains)};
                acm_solid *solids[2][NSOLIDS];
                acm_layout *l = acm_test_layout(ACM_LAYOUT_IB_SPREAD, ACM_IB_SPREAD_GATHER);
                ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, c.streaming), ACM_OK);
                for (int k = 0; k < 2; ++k) {
                    ACM_CK_OK(both[k], acm_domain_set_layout(both[k], l));
                    add_solids(both[k], c.scene, solids[k]);
                    ACM_CK_OK(both[k], acm_step(both[k], SOLID_STEPS));
                }
                acm_layout_destroy(l);
                const double tol = solids_tol(&c);
                expect_close(both[0], both[1], &c, tol, "with the gather spread");
                expect_same_solids(solids[0], solids[1], tol, "with the gather spread");
                acm_domain_destroy(both[0]);
                acm_domain_destroy(both[1]);
            }
}
END_TEST

/* A scene's domain made on moment storage. */
static acm_domain *create_moments(acm_domain_options *o, const void *ctx)
{
    char text[ACM_LAYOUT_STRING_SIZE];
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_to_string(o->layout, text, sizeof text), ACM_OK);
    ck_assert_int_eq(acm_layout_from_string(l, text), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS), ACM_OK);
    o->layout = l;
    acm_domain *d = create_local(o, ctx);
    acm_layout_destroy(l);
    return d;
}

/* Made on moment storage and re-laid to populations in place before the
 * first step, slabs step as the undivided domain does: the ACM rules' inputs
 * that the re-layout carries over are the same. (The slabs once folded their
 * planes' sums before their ghost planes were exchanged; moment storage
 * rebuilds a ghost cell's populations from all 27 of its neighbours', so the
 * sums of the planes next to a cut were off and moved the adaptive models'
 * rates after the re-layout, 1e-5 in a population after 48 steps.) _i: model. */
START_TEST(relayout_from_moments_keeps_the_inputs)
{
    const acm_collision model = _i ? ACM_COLLISION_ACM_LI2020 : ACM_COLLISION_ACM_LI2018;
    for (int sc = SCENE_PERIODIC; sc <= SCENE_LID; ++sc) {
        const run_cfg c = {model, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS, (enum scene)sc, 3};
        const int one = 0, three = 3;
        acm_domain *both[2] = {scene_make(&c, create_moments, &one),
                               scene_make(&c, create_moments, &three)};
        acm_layout *l = NULL;
        ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_POPULATIONS), ACM_OK);
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE), ACM_OK);
        for (int k = 0; k < 2; ++k) {
            ACM_CK_OK(both[k], acm_domain_set_layout(both[k], l));
            ACM_CK_OK(both[k], acm_step(both[k], STEPS));
        }
        acm_layout_destroy(l);
        expect_same(both[0], both[1], &c, "re-laid from moments before the first step");
        acm_domain_destroy(both[0]);
        acm_domain_destroy(both[1]);
    }
}
END_TEST

/* The slabs' cuts and costs (acm_domain_get_slabs); the costliest slab's
 * cost over the cheapest one's. */
static double slab_spread(acm_domain *d, int32_t cuts[4])
{
    int32_t n = 0;
    double cost[3];
    ck_assert_int_eq(acm_domain_get_slabs(d, 4, NULL, cuts, cost), ACM_ERR_NULL_POINTER);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "nslabs is NULL"));
    ck_assert_int_eq(acm_domain_get_slabs(d, 3, &n, cuts, cost), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "capacity=3"));
    ck_assert_int_eq(n, 3);
    ACM_CK_OK(d, acm_domain_get_slabs(d, 4, &n, cuts, cost));
    ck_assert(cuts[0] == 0 && cuts[0] < cuts[1] && cuts[1] < cuts[2] && cuts[2] < cuts[3]);
    return fmax(cost[0], fmax(cost[1], cost[2])) / fmin(cost[0], fmin(cost[1], cost[2]));
}

/* A sphere falls through a tall domain of 3 slabs, so far that each slab
 * must choose anew which of its samples it keeps (ACM_SLAB_SAMPLE_MARGIN); in
 * the order of sampling, so that no Morton-block re-sort does it for them.
 * Prescribed (18 planes), then free (thrown down, three times as dense as the
 * fluid). The cuts follow it (docs/multi-gpu.md, "Balance"): the slab it
 * starts in is made thinner when it is added, and the cuts move as it falls,
 * through the host's copy of the state, which stays the undivided domain's. */
START_TEST(slabs_follow_a_travelling_solid)
{
    const bool free_body = _i == 1;
    enum { TX = 6, TY = 6, TZ = 36, TSTEPS = 100 };
    const size_t n = (size_t)TX * TY * TZ;
    acm_domain *d[2];
    acm_solid *s[2];
    double *f[2];
    for (int k = 0; k < 2; ++k) {
        acm_domain_options o =
            acm_test_options(TX, TY, TZ, 0.05, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64);
        o.subdomains = k == 0 ? 0 : 3;
        acm_layout *l = acm_test_layout(ACM_LAYOUT_SAMPLE_ORDER, ACM_SAMPLE_ORDER_AS_SAMPLED);
        o.layout = l;
        d[k] = acm_test_domain(&o);
        acm_layout_destroy(l);
        ACM_CK_OK(d[k], acm_domain_set_face(d[k], ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(d[k], acm_domain_set_face(d[k], ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
        acm_test_sphere sp = acm_test_sphere_default(1.5, 2.8, 3.1, 30.0);
        sp.motion = free_body ? ACM_MOTION_FREE : ACM_MOTION_PRESCRIBED;
        sp.v[2] = -0.18;
        sp.w[1] = 0.01;
        sp.density = 8.0;
        sp.g[2] = -1e-2;
        int32_t cuts[4], first[4];
        if (k == 1) {
            const double spread = slab_spread(d[k], cuts); /* equal planes */
            ck_assert_msg(cuts[1] == 12 && cuts[2] == 24 && spread == 1.0, "cuts %d %d, spread %g",
                          cuts[1], cuts[2], spread);
        }
        s[k] = acm_test_add_sphere(d[k], &sp); /* in slab 2 */
        ACM_CK_OK(d[k], acm_step(d[k], 1));
        if (k == 1) {
            const double spread = slab_spread(d[k], first);
            ck_assert_msg(first[2] > 24 && spread < 1.15, "cuts %d %d, spread %g", first[1],
                          first[2], spread);
        }
        ACM_CK_OK(d[k], acm_step(d[k], TSTEPS - 1));
        if (k == 1) {
            const double spread = slab_spread(d[k], cuts);
            /* the cuts are weighed again each time the body moved 3 planes: the
             * free one, twice as fast at the end, is further from its last re-cut;
             * where it lies across a cut both slabs step its samples there */
            ck_assert_msg(cuts[2] < first[2] &&
                              spread < (free_body ? 1.4 : 1.25),
                          "cuts %d %d (first %d %d), spread %g", cuts[1], cuts[2], first[1],
                          first[2], spread);
        }
        f[k] = acm_test_alloc(27 * n * sizeof(double));
        ACM_CK_OK(d[k], acm_domain_get_field(d[k], ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f[k],
                                             27 * n * sizeof(double)));
    }
    const run_cfg c = {ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, 3};
    const double tol = solids_tol(&c), diff = acm_test_max_diff(f[0], f[1], 27 * n);
    ck_assert_msg(tol > 0.0 ? diff <= tol : memcmp(f[0], f[1], 27 * n * sizeof(double)) == 0,
                  "populations differ by %g", diff);
    double F[2][3];
    for (int k = 0; k < 2; ++k)
        ck_assert_int_eq(acm_solid_get_force(s[k], F[k], NULL), ACM_OK);
    ck_assert_msg(fabs(F[0][2]) > 0.0 && fabs(F[0][2] - F[1][2]) <= tol * fabs(F[0][2]),
                  "drag %.17g vs %.17g", F[0][2], F[1][2]);
    acm_solid_state at[2];
    for (int k = 0; k < 2; ++k) {
        at[k].version = ACM_SOLID_STATE_VERSION;
        ck_assert_int_eq(acm_solid_get_state(s[k], &at[k]), ACM_OK);
    }
    ck_assert_msg(at[0].position[2] < 30.0 - 10.0 &&
                      fabs(at[0].position[2] - at[1].position[2]) <= 30.0 * tol,
                  "the sphere at z = %.17g and %.17g", at[0].position[2], at[1].position[2]);
    for (int k = 0; k < 2; ++k) {
        free(f[k]);
        acm_domain_destroy(d[k]);
    }
}
END_TEST

/* With solids (a free body among them): a re-layout, more iterations (more
 * ghost planes), a solid gone, a checkpoint of the split domain loaded
 * undivided. */
START_TEST(solids_through_state_changes)
{
    const run_cfg c = {ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_PERIODIC, 2};
    const double tol = solids_tol(&c);
    acm_domain *one = make(&c, 0), *split = make(&c, 2);
    acm_domain *both[2] = {one, split};
    acm_solid *s[2][NSOLIDS];
    add_solids(one, c.scene, s[0]);
    add_solids(split, c.scene, s[1]);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STREAMING, acm_test_in_place());
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_step(both[k], 5));
        ACM_CK_OK(both[k], acm_domain_set_layout(both[k], l));
        ACM_CK_OK(both[k], acm_step(both[k], 5));
    }
    expect_close(one, split, &c, tol, "after a re-layout");
    expect_same_solids(s[0], s[1], tol, "after a re-layout");
    for (int k = 0; k < 2; ++k) { /* 2 iterations need 8 more ghost planes than 13 - 7 */
        ACM_CK_OK(both[k], acm_domain_set_face(both[k], ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(both[k], acm_domain_set_face(both[k], ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(both[k], acm_domain_set_param(both[k], ACM_PARAM_IB_ITERATIONS, 2));
        ACM_CK_OK(both[k], acm_step(both[k], 4));
    }
    expect_close(one, split, &c, tol, "with 2 iterations");
    for (int k = 0; k < 2; ++k) {
        acm_solid_destroy(s[k][1]);
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    }
    expect_close(one, split, &c, tol, "after a solid went");
    if (tol == 0.0) {
        char path[] = "/tmp/acm-test-decomp-XXXXXX";
        const int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        close(fd);
        expect_checkpoint_continues(one, split, &c, path, remove_file,
                                    "a checkpoint with a solid, undivided");
        ACM_CK_OK(split, acm_step(split, 6)); /* as far as the undivided domain went */
    }
    for (int k = 0; k < 2; ++k) {
        acm_solid_destroy(s[k][0]);
        acm_solid_destroy(s[k][2]);
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    }
    expect_close(one, split, &c, tol, "after the last solid went");
    /* Solids added to a uniform state without a force field: the new slabs
     * make that state anew (decomp_reshape), the one of the last call, not
     * the options'. Added after a step, they take the stepped state over. */
    const double u0[3] = {0.01, -0.02, 0.005};
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_domain_set_field(both[k], ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64,
                                                NULL, 0));
        ACM_CK_OK(both[k], acm_domain_init_uniform(both[k], 1.02, u0));
        add_solids(both[k], c.scene, s[k]);
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    }
    expect_close(one, split, &c, tol, "solids added to a uniform state");
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < NSOLIDS; ++i)
            acm_solid_destroy(s[k][i]);
        ACM_CK_OK(both[k], acm_domain_init_uniform(both[k], 0.99, u0));
        ACM_CK_OK(both[k], acm_step(both[k], 2));
        add_solids(both[k], c.scene, s[k]);
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    }
    expect_close(one, split, &c, tol, "solids added after a step from a uniform state");
    /* with a force field the slabs' state goes through the host: the field too */
    const size_t n = (size_t)NX * NY * NZ;
    double *u = acm_test_alloc(3 * n * sizeof(double)), *force = acm_test_alloc(3 * n * sizeof(double));
    fill_fields(u, force, NZ);
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_domain_set_field(both[k], ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64,
                                                force, 3 * n * sizeof(double)));
        ACM_CK_OK(both[k], acm_domain_init_uniform(both[k], 1.0, u0));
        for (int i = 0; i < NSOLIDS; ++i)
            acm_solid_destroy(s[k][i]);
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    }
    expect_close(one, split, &c, tol, "the last solid gone from a uniform state with a force field");
    free(u);
    free(force);
    acm_layout_destroy(l);
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

/* Queries: fields, probes and stats of a split domain are those of one domain. */
START_TEST(queries_are_gathered)
{
    const run_cfg c = {ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, 3};
    acm_domain *one = make(&c, 0), *split = make(&c, 3);
    ACM_CK_OK(one, acm_step(one, 10));
    ACM_CK_OK(split, acm_step(split, 10));
    const size_t n = (size_t)NX * NY * NZ;
    double *u1 = acm_test_alloc(3 * n * sizeof(double)), *u2 = acm_test_alloc(3 * n * sizeof(double));
    ACM_CK_OK(one, acm_domain_get_field(one, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u1,
                                        3 * n * sizeof(double)));
    ACM_CK_OK(split, acm_domain_get_field(split, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u2,
                                          3 * n * sizeof(double)));
    ck_assert_int_eq(memcmp(u1, u2, 3 * n * sizeof(double)), 0);
    for (int z = 0; z < NZ; ++z) {
        double r1, r2, v1[3], v2[3];
        ACM_CK_OK(one, acm_domain_probe(one, 3, 2, z, &r1, v1));
        ACM_CK_OK(split, acm_domain_probe(split, 3, 2, z, &r2, v2));
        ck_assert_msg(r1 == r2 && memcmp(v1, v2, sizeof v1) == 0, "probe at z=%d differs", z);
    }
    acm_domain_info info = {.version = ACM_DOMAIN_INFO_VERSION};
    ACM_CK_OK(split, acm_domain_get_info(split, &info));
    ck_assert_int_eq(info.nz, NZ);
    ck_assert_int_gt((long long)info.memory_bytes, 0);
    free(u1);
    free(u2);
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

/* z changed from periodic to walls after creation, a re-layout between
 * steps, new populations set: the split domain follows, bitwise. */
START_TEST(reshaped_and_relaid)
{
    run_cfg c = {ACM_COLLISION_ACM_LI2020, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                 SCENE_PERIODIC, 2};
    acm_domain *one = make(&c, 0), *split = make(&c, 2);
    ACM_CK_OK(one, acm_step(one, 5));
    ACM_CK_OK(split, acm_step(split, 5));
    acm_domain *both[2] = {one, split};
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, acm_test_in_place()), ACM_OK);
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_domain_set_face(both[k], ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(both[k], acm_domain_set_face(both[k], ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, NULL));
        ACM_CK_OK(both[k], acm_step(both[k], 7));
        ACM_CK_OK(both[k], acm_domain_set_layout(both[k], l));
        ACM_CK_OK(both[k], acm_step(both[k], 6));
    }
    expect_same(one, split, &c, "after walls and a re-layout");
    double *f = populations(one);
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_domain_set_field(both[k], ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64,
                                                f, sizeof(double) * 27 * NX * NY * NZ));
        ACM_CK_OK(both[k], acm_step(both[k], 4));
    }
    expect_same(one, split, &c, "after set populations");
    free(f);
    acm_layout_destroy(l);
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

/* Smoke moves with the gathered velocity: the same particles as on one domain
 * (bitwise on the CPU). */
START_TEST(smoke_follows_the_same_flow)
{
    const run_cfg c = {ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP32, acm_test_in_place(),
                       SCENE_Z_THROUGH, 3};
    acm_domain *d[2] = {make(&c, 0), make(&c, 3)};
    acm_smoke *sm[2];
    double *x[2];
    size_t n[2];
    for (int k = 0; k < 2; ++k) {
        acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
        so.capacity = 4096;
        so.seed = 7;
        ACM_CK_OK(d[k], acm_smoke_create(&sm[k], d[k], &so));
        acm_emitter e = ACM_EMITTER_INIT;
        const double lo[3] = {1.0, 1.0, 1.0}, hi[3] = {NX - 2.0, NY - 2.0, 3.0};
        memcpy(e.lo, lo, sizeof lo);
        memcpy(e.hi, hi, sizeof hi);
        e.rate = 20.0;
        ck_assert_int_eq(acm_smoke_add_emitter(sm[k], &e), ACM_OK);
        ACM_CK_OK(d[k], acm_step(d[k], 30));
        x[k] = acm_test_alloc(3 * sizeof(double) * 4096);
        ck_assert_int_eq(acm_smoke_get_particles(sm[k], x[k], 4096, &n[k]), ACM_OK);
    }
    ck_assert_uint_gt(n[0], 100);
    ck_assert_uint_eq(n[0], n[1]);
    if (acm_test_backend() == ACM_BACKEND_CPU) { /* both move them on the host */
        ck_assert_int_eq(memcmp(x[0], x[1], 3 * sizeof(double) * n[0]), 0);
    } else { /* the undivided domain moves them on the device with an FP32 velocity, the
                split one on the host (no device smoke on slabs yet): the same flow */
        for (size_t i = 0; i < 3 * n[0]; ++i)
            ck_assert_msg(fabs(x[0][i] - x[1][i]) < 1e-3, "coordinate %zu: %g vs %g", i,
                          x[0][i], x[1][i]);
    }
    for (int k = 0; k < 2; ++k) {
        free(x[k]);
        acm_smoke_destroy(sm[k]);
        acm_domain_destroy(d[k]);
    }
}
END_TEST

/* A split domain that rewinds after a divergence, and one saved to a
 * checkpoint and loaded undivided, continue as the undivided domain. */
START_TEST(rewinds_and_checkpoints)
{
    const run_cfg c = {ACM_COLLISION_ACM_LI2020, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, 2};
    acm_domain *one = make(&c, 0), *split = make(&c, 2);
    acm_domain *both[2] = {one, split};
    for (int k = 0; k < 2; ++k) {
        ACM_CK_OK(both[k], acm_domain_set_param(both[k], ACM_PARAM_DIVERGENCE_INTERVAL, 2));
        acm_divergence_policy pol;
        ck_assert_int_eq(acm_divergence_policy_init(&pol, ACM_DIVERGENCE_POLICY_VERSION), ACM_OK);
        pol.action = ACM_DIVERGENCE_REWIND;
        pol.snapshot_interval = 5;
        ACM_CK_OK(both[k], acm_domain_set_divergence_policy(both[k], &pol));
        ACM_CK_OK(both[k], acm_step(both[k], 12));
        const double g[3] = {0.0, 0.3, 0.0}; /* blows up within a few steps */
        ACM_CK_OK(both[k], acm_domain_set_body_force(both[k], g));
        ACM_CK_FAIL(both[k], acm_step(both[k], 20), ACM_ERR_DIVERGED);
        ck_assert_ptr_nonnull(strstr(acm_domain_last_error(both[k]), "rewound to step"));
        const double zero[3] = {0.0, 0.0, 0.0};
        ACM_CK_OK(both[k], acm_domain_set_body_force(both[k], zero));
        ACM_CK_OK(both[k], acm_step(both[k], 4));
    }
    expect_same(one, split, &c, "after a rewind");
    /* a query sums the planes of the state again: the checkpoint still holds
     * the last step's sums (on a GPU, where the slabs pushed them) */
    (void)acm_test_stats(split);
    char path[] = "/tmp/acm-test-decomp-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    expect_checkpoint_continues(one, split, &c, path, remove_file,
                                "a checkpoint of the split domain, loaded undivided");
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

START_TEST(bad_options_are_refused)
{
    char err[256] = "";
    acm_domain_options o = acm_test_options(8, 8, 3, 0.1, ACM_COLLISION_BGK, ACM_PRECISION_FP32);
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    o.subdomains = 2; /* 3 planes cannot make 2 slabs of 2 */
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(err, "too small"));
    o.subdomains = -1;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE);
    const int32_t devices[2] = {0, -3};
    o.nz = 8;
    o.subdomains = 2;
    o.devices = devices;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(err, "devices[1]"));
    ck_assert_ptr_null(d);
    /* the overlap is where it helps by default; 0, 1 or 2 */
    o.devices = NULL;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_OK);
    int64_t overlap = -1;
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_HALO_OVERLAP, &overlap));
    ck_assert_int_eq(overlap, 1);
    ck_assert_int_eq(acm_domain_set_param(d, ACM_PARAM_HALO_OVERLAP, 3), ACM_ERR_OUT_OF_RANGE);
    ACM_CK_OK(d, acm_domain_get_param(d, ACM_PARAM_HALO_OVERLAP, &overlap));
    ck_assert_int_eq(overlap, 1);
    acm_domain_destroy(d);
    /* a version-1 caller knows nothing of subdomains: an undivided domain */
    o.version = 1;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_OK);
    acm_domain_destroy(d);
}
END_TEST

/* Slabs too thin for the solids' iterations are refused with a message, and
 * the domain goes on (CUDA interoperability: test-cuda,
 * split_domain_refuses_interop). */
START_TEST(solids_the_slabs_refuse)
{
    const run_cfg c = {ACM_COLLISION_BGK, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, 3};
    acm_domain *d = make(&c, 3);
    acm_test_sphere sp = acm_test_sphere_default(1.5, 3.0, 3.0, 6.0);
    acm_solid *s = acm_test_add_sphere(d, &sp);
    /* 13 planes in 3 slabs of 4 or 5; with two arrays 4 iterations need 5 ghost
     * planes, and as many own */
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, 4));
    ACM_CK_FAIL(d, acm_step(d, 1), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "needs at least 5"));
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, 1));
    ACM_CK_OK(d, acm_step(d, 2));
    acm_solid_destroy(s);
    ACM_CK_OK(d, acm_step(d, 2));
    acm_domain_destroy(d);
}
END_TEST

/* The step a domain's divergence message names. */
static long long diverged_at(acm_domain *d)
{
    const char *msg = strstr(acm_domain_last_error(d), "diverged at step ");
    long long step = -1;
    ck_assert_msg(msg != NULL && sscanf(msg, "diverged at step %lld", &step) == 1, "message: %s",
                  acm_domain_last_error(d));
    return step;
}

/* Values over the faces (acm_domain_set_face_values) on slabs: an inlet
 * profile on an x face and outlet densities on the other (each slab takes
 * its planes' rows, ghost planes too), an inlet profile on the z face the
 * first slab holds; changed between steps (a pulsatile inlet). Bitwise the
 * undivided domain's (within the GPU tolerance of the scenes); then absorbers, one in
 * front of the z face reaching across the cuts. */
START_TEST(face_values_across_the_slabs)
{
    const run_cfg c = {ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, 3};
    acm_domain *both[2] = {make(&c, 0), make(&c, 3)};
    const int nz = scene_nz(&c);
    const size_t xn = (size_t)NY * (size_t)nz, zn = (size_t)NX * NY;
    double *u = acm_test_alloc(3 * xn * sizeof(double)), *rho = acm_test_alloc(xn * sizeof(double));
    double *w = acm_test_alloc(3 * zn * sizeof(double));
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t k = 0; k < xn; ++k) {
            u[3 * k] = 0.02 + 0.002 * (double)(k % NY) + 0.001 * (double)(k / NY) + 0.01 * pass;
            u[3 * k + 1] = 0.001 * (double)(k % 3);
            rho[k] = 1.0 + 1e-3 * (double)(k / NY) - 1e-3 * pass;
        }
        for (size_t k = 0; k < zn; ++k)
            w[3 * k + 2] = 0.01 + 0.001 * (double)k;
        for (int k = 0; k < 2; ++k) {
            acm_domain *d = both[k];
            if (pass == 0) {
                ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, NULL));
                ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
                ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_INLET, NULL));
                ACM_CK_OK(d, acm_domain_set_face_values(d, ACM_FACE_Z_MIN, ACM_DTYPE_FLOAT64, w,
                                                        3 * zn));
            }
            ACM_CK_OK(d, acm_domain_set_face_values(d, ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64, u, 3 * xn));
            ACM_CK_OK(d, acm_domain_set_face_values(d, ACM_FACE_X_MAX, ACM_DTYPE_FLOAT64, rho, xn));
            if (pass == 1) { /* absorbers, the z one across the first cut or two */
                const double ref[3] = {0.01, 0.0, 0.02};
                ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_Z_MIN, nz - 5, 0.5, 1.0,
                                                          ref));
                ACM_CK_OK(d, acm_domain_set_face_absorber(d, ACM_FACE_X_MAX, 3, 0.8, 1.002, NULL));
            }
            ACM_CK_OK(d, acm_step(d, STEPS));
        }
        expect_close(both[0], both[1], &c, solids_tol(&c),
                     pass ? "new face values, absorbers" : "face values");
    }
    free(u);
    free(rho);
    free(w);
    acm_domain_destroy(both[0]);
    acm_domain_destroy(both[1]);
}
END_TEST

/* A slab that diverges makes the domain's step fail and name it, and the
 * step the undivided domain names (on GPUs, where the slabs look at their
 * keys only at the call's end, as where they look after every step). */
START_TEST(divergence_names_the_slab)
{
    run_cfg c = {ACM_COLLISION_BGK, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS, SCENE_PERIODIC,
                 3};
    acm_domain *d = make(&c, 3), *one = make(&c, 0);
    drive_to_divergence(d);
    drive_to_divergence(one);
    const char *msg = acm_domain_last_error(d);
    int slab = -1;
    ck_assert_msg(sscanf(msg, "slab %d of 3", &slab) == 1 && slab >= 0 && slab < 3 &&
                      strstr(msg, "diverged") != NULL,
                  "message: %s", msg);
    ck_assert_int_eq(diverged_at(d), diverged_at(one));
    ck_assert_int_gt(diverged_at(d), 1);
    acm_test_expect_recovery(d);
    acm_domain_destroy(one);
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(decomp_suite)
{
    Suite *s = suite_create("decomp");
    TCase *tc = acm_tcase("bitwise", 600);
    tcase_add_loop_test(tc, bitwise_as_one_domain, 0, SCENE_COUNT);
    tcase_add_test(tc, queries_are_gathered);
    tcase_add_test(tc, reshaped_and_relaid);
    tcase_add_test(tc, smoke_follows_the_same_flow);
    tcase_add_test(tc, rewinds_and_checkpoints);
    tcase_add_test(tc, face_values_across_the_slabs);
    tcase_add_loop_test(tc, solids_across_the_cuts, 0, SCENE_COUNT);
    suite_add_tcase(s, tc);
    TCase *ts = acm_tcase("solids", 300); /* also under compute-sanitizer: device-check.sh */
    tcase_add_test(ts, solids_through_state_changes);
    tcase_add_test(ts, gather_spread_across_the_cuts);
    tcase_add_loop_test(ts, relayout_from_moments_keeps_the_inputs, 0, 2);
    tcase_add_loop_test(ts, slabs_follow_a_travelling_solid, 0, 2);
    suite_add_tcase(s, ts);
    TCase *te = acm_tcase("errors", 60);
    tcase_add_test(te, bad_options_are_refused);
    tcase_add_test(te, divergence_names_the_slab);
    tcase_add_test(te, solids_the_slabs_refuse);
    suite_add_tcase(s, te);
    return s;
}
