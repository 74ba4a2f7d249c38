/*
 * libacmlbm tests -- the NCCL exchange of GPU slabs (cuda/halo_nccl.cu,
 * docs/multi-gpu.md) on one GPU: a communicator of one rank whose member
 * sends planes of a domain to itself and receives them into other planes,
 * through the CUDA backend's peer ops as lib/multi/halo.c drives them. NCCL pairs
 * a rank's sends and receives in the order they are issued; the case of 4
 * messages checks that order, and one of the 9 populations a pull across a
 * cut reads checks the subset. Ranks on GPUs of their own run test-mpi
 * (bench/device-check.sh decomp on a machine with several).
 * Linked with the library's objects: the peer ops are private.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <time.h> /* timespec_get */

#include "test-common.h"

#include "acm_private.h" /* acm_domain.ops */
#include "backend.h"     /* acm_backend_ops, acm_peer_msg */

enum { NX = 16, NY = 12, NZ = 10 };

/* A CUDA domain whose planes differ: u varies with z. */
static acm_domain *make_domain(void)
{
    acm_domain_options o =
        acm_test_options(NX, NY, NZ, 0.02, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_OK);
    const size_t n = (size_t)NX * NY * NZ;
    double *u = acm_test_alloc(3 * n * sizeof(double));
    for (size_t k = 0; k < n; ++k) {
        const double z = (double)(k / (NX * NY)), x = (double)(k % NX);
        u[3 * k] = 0.01 * z + 0.001 * x;
        u[3 * k + 1] = -0.005 * z;
        u[3 * k + 2] = 0.002 * (z - 4.0);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, n));
    free(u);
    return d;
}

static const size_t plane_bytes = (size_t)NX * NY * ACM_Q * sizeof(float);

/* Every plane's stored values, as planes_get gives them. */
static unsigned char *stored(acm_domain *d)
{
    unsigned char *b = acm_test_alloc(NZ * plane_bytes);
    ACM_CK_OK(d, d->ops->planes_get(d, 0, NZ, 0, b));
    ACM_CK_OK(d, d->ops->planes_wait(d));
    return b;
}

/* One exchange of msg over a communicator of this process alone, planes of
 * `per` each; the stored values before and after. */
static void exchange(acm_domain *d, const acm_peer_msg *msg, int n, int per,
                     unsigned char **before, unsigned char **after)
{
    const struct acm_backend_ops *ops = d->ops;
    ck_assert_msg(ops->peer_open != NULL, "the CUDA backend has no peer ops");
    unsigned char id[ACM_PEER_ID_BYTES] = {0};
    ACM_CK_OK(d, ops->peer_id(d, id));
    void *peer = NULL;
    const acm_peer_join join = {60.0, NULL, NULL};
    ACM_CK_OK(d, ops->peer_open(d, id, 0, 1, (size_t)per * plane_bytes, &join, &peer));
    *before = stored(d);
    ACM_CK_OK(d, ops->peer_exchange(d, peer, msg, n));
    ACM_CK_OK(d, ops->peer_wait(d, peer, 60.0));
    *after = stored(d);
    ops->peer_close(peer, false);
}

/* Plane `to` after is plane `from` before, bitwise. */
static void expect_plane(const unsigned char *before, const unsigned char *after, int from, int to)
{
    ck_assert_msg(memcmp(after + (size_t)to * plane_bytes, before + (size_t)from * plane_bytes,
                         plane_bytes) == 0,
                  "plane %d does not hold plane %d's values", to, from);
}

START_TEST(planes_reach_their_ghosts)
{
    acm_domain *d = make_domain();
    const acm_peer_msg msg[2] = {{0, 1, 2, true, 0}, {0, 6, 2, false, 0}};
    unsigned char *before, *after;
    exchange(d, msg, 2, 2, &before, &after);
    for (int z = 0; z < NZ; ++z)
        expect_plane(before, after, z >= 6 && z < 8 ? z - 5 : z, z);
    ck_assert_int_ne(memcmp(before + plane_bytes, before + 6 * plane_bytes, plane_bytes), 0);
    free(before);
    free(after);
    acm_domain_destroy(d);
}
END_TEST

/* Sends and receives between two ranks pair in the order they are listed
 * (lib/multi/halo.c lists them by slab and end on every rank). */
START_TEST(four_messages_pair_in_order)
{
    acm_domain *d = make_domain();
    const acm_peer_msg msg[4] = {
        {0, 0, 1, true, 0}, {0, 7, 1, false, 0}, {0, 2, 1, true, 0}, {0, 9, 1, false, 0}};
    unsigned char *before, *after;
    exchange(d, msg, 4, 1, &before, &after);
    for (int z = 0; z < NZ; ++z)
        expect_plane(before, after, z == 7 ? 0 : z == 9 ? 2 : z, z);
    free(before);
    free(after);
    acm_domain_destroy(d);
}
END_TEST

/* Only the 9 populations a pull across a cut reads (dz +1 into the ghost
 * plane below a slab): those slots take the sent plane's values, the others
 * keep their own. */
START_TEST(nine_populations_move)
{
    acm_domain *d = make_domain();
    const acm_peer_msg msg[2] = {{0, 2, 1, true, 1}, {0, 8, 1, false, 1}};
    unsigned char *before, *after;
    exchange(d, msg, 2, 1, &before, &after);
    const size_t e = sizeof(float), cells = (size_t)NX * NY;
    for (int z = 0; z < NZ; ++z)
        if (z != 8)
            expect_plane(before, after, z, z);
    for (size_t k = 0; k < cells; ++k)
        for (int i = 0; i < ACM_Q; ++i) {
            const int from = acm_cz(i) == 1 ? 2 : 8;
            ck_assert_msg(memcmp(after + 8 * plane_bytes + (k * ACM_Q + (size_t)i) * e,
                                 before + (size_t)from * plane_bytes + (k * ACM_Q + (size_t)i) * e,
                                 e) == 0,
                          "cell %zu of plane 8, population %d: not plane %d's", k, i, from);
        }
    free(before);
    free(after);
    acm_domain_destroy(d);
}
END_TEST

/* Seconds of the wall clock (C11). */
static double now_s(void)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* give_up of a join: yes from the 20th question on. */
static bool give_up_later(void *ctx)
{
    return ++*(int *)ctx >= 20;
}

/* A member of a communicator of 2 whose other rank never comes (it failed
 * before joining) gives up: at its time limit, or as soon as it hears of the
 * failure (give_up); nothing stays open, and the domain and NCCL still work
 * (a communicator of one, afterwards). loop index: 0 time limit, 1 notice. */
START_TEST(a_member_does_not_wait_for_a_rank_that_never_joins)
{
    acm_domain *d = make_domain();
    const struct acm_backend_ops *ops = d->ops;
    unsigned char id[ACM_PEER_ID_BYTES] = {0};
    ACM_CK_OK(d, ops->peer_id(d, id));
    int asked = 0;
    const acm_peer_join join = {_i == 0 ? 2.0 : 60.0, _i == 0 ? NULL : give_up_later, &asked};
    void *peer = NULL;
    const double t0 = now_s();
    ACM_CK_FAIL(d, ops->peer_open(d, id, 0, 2, plane_bytes, &join, &peer), ACM_ERR_DEVICE);
    const double waited = now_s() - t0;
    printf("gave up after %.2f s: %s\n", waited, acm_domain_last_error(d));
    ck_assert_ptr_null(peer);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), _i == 0 ? "did not all join within 2 s"
                                                                   : "another rank's set-up failed"));
    if (_i == 0)
        ck_assert_msg(waited >= 1.9 && waited < 30.0, "gave up after %g s", waited);
    else
        ck_assert_msg(asked == 20 && waited < 30.0, "asked %d times, %g s", asked, waited);
    ACM_CK_OK(d, acm_step(d, 3));
    unsigned char *before, *after;
    const acm_peer_msg msg[2] = {{0, 1, 1, true, 0}, {0, 6, 1, false, 0}};
    exchange(d, msg, 2, 1, &before, &after);
    expect_plane(before, after, 1, 6);
    free(before);
    free(after);
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(nccl_suite)
{
    Suite *s = suite_create("nccl");
    TCase *tc = acm_tcase("self", 120);
    tcase_add_test(tc, planes_reach_their_ghosts);
    tcase_add_test(tc, four_messages_pair_in_order);
    tcase_add_test(tc, nine_populations_move);
    tcase_add_loop_test(tc, a_member_does_not_wait_for_a_rank_that_never_joins, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
