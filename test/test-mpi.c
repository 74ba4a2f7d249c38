/*
 * libacmlbm tests -- one domain over MPI ranks (acm_mpi.h), run under mpirun
 * with 2 and 3 ranks (test/meson.build): bitwise the populations of the
 * undivided domain that every rank also steps by itself, for every collision
 * model, face setup and streaming scheme; a checkpoint of the domain over the
 * ranks loads undivided and continues bitwise; a rank whose slab diverges or
 * cannot allocate makes every rank's call fail, naming it, and nothing hangs.
 * Its own main: MPI is initialised around the Check runner (no fork: CK_FORK
 * is forced off), and the exit status is the worst of all ranks.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <sys/resource.h> /* setrlimit */
#include <unistd.h>       /* getpid */

#include "acmlbm/acm_mpi.h"
#include "cuda-poison.h"
#include "decomp-scenes.h"

static int rank_of(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* On the storage under test (ACM_TEST_STORAGE), as acm_test_domain makes
 * the undivided domains it is compared with. */
static acm_domain *create_mpi(acm_domain_options *o, const void *ctx)
{
    (void)ctx;
    char err[256] = "";
    o->error_buffer = err;
    o->error_buffer_size = sizeof err;
    acm_layout *storage = acm_test_storage_layout(o->layout);
    const acm_layout *given = o->layout;
    if (storage != NULL)
        o->layout = storage;
    acm_domain *d = NULL;
    const acm_status st = acm_domain_create_mpi(&d, o, MPI_COMM_WORLD);
    o->layout = given;
    acm_layout_destroy(storage);
    ck_assert_msg(st == ACM_OK, "rank %d: acm_domain_create_mpi: %s: %s", rank_of(),
                  acm_status_string(st), err);
    return d;
}

/* _i: scene. Every model, both streaming schemes, FP64 (and FP32 for BGK);
 * the ranks exchange their ghost planes while they step (ACM_PARAM_HALO_OVERLAP
 * 1, the default, and 2; with two arrays), or after the step (0). */
START_TEST(bitwise_as_one_domain)
{
    for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m)
        for (int s = ACM_STREAMING_TWO_ARRAYS; s <= (int)acm_test_in_place(); ++s)
            for (int p = 0; p < (m == 0 ? 2 : 1); ++p) {
                int ranks = 1;
                MPI_Comm_size(MPI_COMM_WORLD, &ranks);
                const run_cfg c = {models[m], p ? ACM_PRECISION_FP32 : ACM_PRECISION_FP64,
                                   (acm_streaming)s, (enum scene)_i, ranks};
                acm_domain *one = make(&c, 0), *split = scene_make(&c, create_mpi, NULL);
                ACM_CK_OK(split, acm_domain_set_param(split, ACM_PARAM_HALO_OVERLAP,
                                                      (int64_t)((m + (size_t)_i) % 3)));
                ACM_CK_OK(one, acm_step(one, STEPS));
                ACM_CK_OK(split, acm_step(split, STEPS));
                expect_same(one, split, &c, "after the steps");
                acm_domain_stats s1 = acm_test_stats(one), s2 = acm_test_stats(split);
                ck_assert_double_eq_tol(s2.mass, s1.mass, 1e-9 * s1.mass);
                ck_assert_double_eq(s2.max_speed, s1.max_speed);
                double r1, r2, u1[3], u2[3];
                ACM_CK_OK(one, acm_domain_probe(one, 1, 2, scene_nz(&c) - 1, &r1, u1));
                ACM_CK_OK(split, acm_domain_probe(split, 1, 2, scene_nz(&c) - 1, &r2, u2));
                ck_assert(r1 == r2 && memcmp(u1, u2, sizeof u1) == 0);
                acm_domain_destroy(one);
                acm_domain_destroy(split);
            }
}
END_TEST

/* _i: scene. A static solid across the cuts and a moving one crossing them
 * (decomp-scenes.h add_solids): the populations, forces and samples of the
 * undivided domain, for a model with and one without the adaptive sums. */
START_TEST(solids_across_ranks)
{
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const acm_collision which[2] = {ACM_COLLISION_CM_MRT, ACM_COLLISION_ACM_LI2020};
    for (int m = 0; m < 2; ++m)
        for (int s = ACM_STREAMING_TWO_ARRAYS; s <= (int)acm_test_in_place(); ++s) {
            const run_cfg c = {which[m], ACM_PRECISION_FP64, (acm_streaming)s, (enum scene)_i,
                               ranks};
            acm_domain *one = make(&c, 0), *split = scene_make(&c, create_mpi, NULL);
            acm_solid *s1[NSOLIDS], *s2[NSOLIDS];
            add_solids(one, c.scene, s1);
            add_solids(split, c.scene, s2);
            ACM_CK_OK(one, acm_step(one, SOLID_STEPS));
            ACM_CK_OK(split, acm_step(split, SOLID_STEPS));
            expect_close(one, split, &c, solids_tol(&c), "with solids");
            expect_same_solids(s1, s2, solids_tol(&c), scene_name[c.scene]);
            acm_domain_destroy(one);
            acm_domain_destroy(split);
        }
}
END_TEST

/* A slab diverges: every rank's acm_step fails and names the rank and slab. */
START_TEST(divergence_on_one_rank)
{
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const run_cfg c = {ACM_COLLISION_BGK, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_PERIODIC, ranks};
    acm_domain *d = scene_make(&c, create_mpi, NULL);
    drive_to_divergence(d);
    const char *msg = acm_domain_last_error(d);
    int who = -1, slab = -1;
    ck_assert_msg(sscanf(msg, "rank %d: slab %d of", &who, &slab) == 2 && who == slab &&
                      who >= 0 && who < ranks && strstr(msg, "diverged") != NULL,
                  "rank %d's message: %s", rank_of(), msg);
    acm_test_expect_recovery(d);
    acm_domain_destroy(d);
}
END_TEST

/* A BGK domain (FP32) of nx x ny x nz_per_rank * ranks cells over the ranks. */
static acm_domain *bgk_over_ranks(int nx, int ny, int nz_per_rank)
{
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    acm_domain_options o = acm_test_options(nx, ny, nz_per_rank * ranks, 0.05,
                                            ACM_COLLISION_BGK, ACM_PRECISION_FP32);
    return create_mpi(&o, NULL);
}

/* An inlet's values for each step: uniform along z, except that rank 1's
 * function refuses step 3 (nonzero: cancel). */
static int inflow_until_3_on_rank_1(acm_domain *d, acm_face face, int64_t step, double *v,
                                    size_t count, void *user)
{
    (void)d, (void)face, (void)user;
    if (rank_of() == 1 && step == 3)
        return 1;
    for (size_t k = 0; k < count; k += 3) {
        v[k] = v[k + 1] = 0.0;
        v[k + 2] = 0.01;
    }
    return 0;
}

/* A face function that stops the step on one rank only (a caller's function,
 * run by every rank for its domain): every rank's call fails with rank 1's
 * status and message before that step, nobody waits for anybody, and every
 * rank then steps on together with the function removed. */
START_TEST(face_function_cancelled_on_one_rank)
{
    acm_domain *d = bgk_over_ranks(16, 16, 8);
    const double in[3] = {0.0, 0.0, 0.01};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_INLET, in));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_OUTLET, NULL));
    ACM_CK_OK(d, acm_domain_set_face_function(d, ACM_FACE_Z_MIN, inflow_until_3_on_rank_1,
                                              NULL));
    ACM_CK_FAIL(d, acm_step(d, 5), ACM_ERR_CANCELLED);
    ck_assert_msg(strstr(acm_domain_last_error(d), "rank 1") != NULL, "rank %d's message: %s",
                  rank_of(), acm_domain_last_error(d));
    ck_assert_int_eq(acm_test_stats(d).step, 2);
    ACM_CK_OK(d, acm_domain_set_face_function(d, ACM_FACE_Z_MIN, NULL, NULL));
    ACM_CK_OK(d, acm_step(d, 3));
    ck_assert_int_eq(acm_test_stats(d).step, 5);
    acm_domain_destroy(d);
}
END_TEST

/* GPU slabs over the ranks (NCCL between them where built): rank 1's CUDA
 * context dies (a kernel of the test's own stores to an invalid address)
 * between two calls. The next step fails on every rank with ACM_ERR_DEVICE
 * naming rank 1, within seconds: no rank waits out the exchange's time limit
 * for planes that rank 1 cannot send. The last test of the program: rank 1's
 * process has no context left. */
START_TEST(device_fault_on_one_rank)
{
    acm_domain *d = bgk_over_ranks(32, 32, 16);
    ACM_CK_OK(d, acm_step(d, 2));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_of() == 1)
        ck_assert_int_eq(poison_context(), POISON_ILLEGAL_ADDRESS);
    const double start = MPI_Wtime();
    const acm_status st = acm_step(d, 3);
    const double took = MPI_Wtime() - start;
    printf("rank %d: %s after %.2f s: %s\n", rank_of(), acm_status_string(st), took,
           acm_domain_last_error(d));
    ck_assert_msg(st == ACM_ERR_DEVICE && strstr(acm_domain_last_error(d), "rank 1") != NULL,
                  "rank %d: %s: %s", rank_of(), acm_status_string(st), acm_domain_last_error(d));
    ck_assert_msg(took < 30.0, "rank %d's step took %.0f s", rank_of(), took);
    acm_domain_destroy(d);
}
END_TEST

/* Every rank has loaded the file: rank 0 removes it. */
static void remove_after_all(const char *path)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_of() == 0)
        remove(path);
}

/* A checkpoint of the domain over the ranks (rank 0 writes it, every rank's
 * call returns its outcome), with solids on the CPU, loads on every rank as an
 * undivided domain that continues bitwise. */
START_TEST(checkpoint_loads_undivided)
{
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const run_cfg c = {ACM_COLLISION_ACM_LI2020, ACM_PRECISION_FP64, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_LID, ranks};
    acm_domain *one = make(&c, 0), *split = scene_make(&c, create_mpi, NULL);
    acm_solid *s1[NSOLIDS], *s2[NSOLIDS];
    if (solids_tol(&c) == 0.0) { /* a GPU's IB adds in no fixed order: not bitwise */
        add_solids(one, c.scene, s1);
        add_solids(split, c.scene, s2);
    }
    ACM_CK_OK(one, acm_step(one, 9));
    ACM_CK_OK(split, acm_step(split, 9));
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char path[64];
    snprintf(path, sizeof path, "/tmp/acm-test-mpi-%d.ckpt", pid);
    /* rank 0 alone writes: the others' paths are not looked at, and rank 0's
     * failure is every rank's */
    const char *missing = "/nonexistent-acm-dir/x.ckpt";
    ACM_CK_OK(split, acm_domain_save(split, rank_of() == 0 ? path : missing));
    remove_after_all(path);
    ACM_CK_FAIL(split, acm_domain_save(split, rank_of() == 0 ? missing : path), ACM_ERR_IO);
    ck_assert_msg(strstr(acm_domain_last_error(split), "nonexistent-acm-dir") != NULL,
                  "rank %d: %s", rank_of(), acm_domain_last_error(split));
    ACM_CK_FAIL(split, acm_domain_save(split, rank_of() == 0 ? NULL : path),
                ACM_ERR_NULL_POINTER);
    ACM_CK_OK(split, acm_domain_save(split, rank_of() == 0 ? path : NULL));
    remove_after_all(path);
    expect_checkpoint_continues(one, split, &c, path, remove_after_all,
                                "a checkpoint over MPI, loaded undivided");
    acm_domain_destroy(split);
    acm_domain_destroy(one);
}
END_TEST

/* The OpenMP runtime's worker threads, made now: each one's stack is address
 * space (8 MB by default), and a pool made under limit_rank_1's limit, by the
 * first parallel loop of a process whose domains all run on a GPU, would not
 * fit in 64 MB on a machine of many cores (libgomp then ends the process). A
 * CPU domain's step makes the pool, which the runtime keeps: 32^3 cells, as
 * the CPU backend runs its loops in parallel from 16384 cells on (an 8^3
 * domain made no pool, and test-mpi -n 3 on a GPU of a 16-core machine ended
 * with "libgomp: Thread creation failed"). */
static void make_threads_now(void)
{
    acm_domain_options o = acm_test_options(32, 32, 32, 0.05, ACM_COLLISION_BGK,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CPU;
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_step(d, 1));
    acm_domain_destroy(d);
}

/* An address-space limit on rank 1: room for what runs now, not for 64 MB
 * more. The old limit in *old. */
static void limit_rank_1(struct rlimit *old)
{
    getrlimit(RLIMIT_AS, old);
    if (rank_of() != 1)
        return;
    make_threads_now();
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    ck_assert(f != NULL && fscanf(f, "%lu", &pages) == 1);
    fclose(f);
    struct rlimit lim = *old;
    lim.rlim_cur = (rlim_t)pages * 4096u + (64u << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
}

/* Rank 1 cannot allocate its slab (an address-space limit): creation fails on
 * every rank with its status and message. Also run on a GPU (ACM_TEST_BACKEND=cuda,
 * every rank on one device: bench/device-check.sh decomp). */
START_TEST(allocation_failure_on_one_rank)
{
    acm_domain_options o = acm_test_options(64, 64, 192, 0.05, ACM_COLLISION_BGK,
                                            ACM_PRECISION_FP64);
    char err[256] = "";
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    /* rank 1 has room for what runs now, not for 100+ MB of populations; a GPU slab's
     * populations are the device's memory, out of that limit's reach (and the limit
     * left the CUDA and OpenMP runtimes of 4 ranks no room for their threads): on
     * the GPU rank 1 asks for a device no machine has instead */
    const bool gpu = acm_test_backend() == ACM_BACKEND_CUDA;
    struct rlimit old;
    if (!gpu)
        limit_rank_1(&old);
    else if (rank_of() == 1)
        o.device = 4096;
    acm_domain *d = NULL;
    const acm_status st = acm_domain_create_mpi(&d, &o, MPI_COMM_WORLD);
    if (!gpu)
        setrlimit(RLIMIT_AS, &old);
    /* the host's or, for a GPU slab, the device's allocation (the CUDA runtime
     * needs address space too), or rank 1's device */
    ck_assert_msg(st == ACM_ERR_NO_MEMORY || st == ACM_ERR_DEVICE_MEMORY || st == ACM_ERR_NO_DEVICE,
                  "rank %d: %s: %s", rank_of(), acm_status_string(st), err);
    ck_assert_msg(strstr(err, "rank 1") != NULL, "rank %d's message: %s", rank_of(), err);
    ck_assert_ptr_null(d);
}
END_TEST

/* Rank 1 cannot allocate the host's copy of the state that cutting the slabs
 * anew moves (170 MB): a solid that would re-cut them is refused on every
 * rank with rank 1's status and message, nobody waits for anybody, the cuts
 * stay; once rank 1 has room the solid comes, the slabs are re-cut, and the
 * domain goes on as the undivided one. */
START_TEST(recut_failure_on_one_rank)
{
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const run_cfg c = {ACM_COLLISION_BGK, ACM_PRECISION_FP32, ACM_STREAMING_TWO_ARRAYS,
                       SCENE_PERIODIC, ranks};
    acm_domain_options o = acm_test_options(64, 64, 192, 0.05, c.model, c.precision);
    acm_domain *one = acm_test_domain(&o), *split = create_mpi(&o, NULL);
    acm_domain *both[2] = {one, split};
    for (int k = 0; k < 2; ++k) /* no longer a uniform equilibrium: the state must move */
        ACM_CK_OK(both[k], acm_step(both[k], 3));
    acm_test_sphere sp = acm_test_sphere_default(6.0, 32.0, 32.0, 20.0); /* in slab 0 */
    sp.per_area = 64.0; /* 26k samples: as costly as 14 planes */
    int32_t n = 0, before[65], after[65];
    ACM_CK_OK(split, acm_domain_get_slabs(split, 65, &n, before, NULL));
    struct rlimit old;
    limit_rank_1(&old);
    acm_solid *s = NULL;
    const acm_status st = acm_test_try_sphere(split, &sp, &s);
    setrlimit(RLIMIT_AS, &old);
    ck_assert_msg(st == ACM_ERR_NO_MEMORY || st == ACM_ERR_DEVICE_MEMORY, "rank %d: %s: %s",
                  rank_of(), acm_status_string(st), acm_domain_last_error(split));
    ck_assert_msg(strstr(acm_domain_last_error(split), "rank 1") != NULL && s == NULL,
                  "rank %d's message: %s", rank_of(), acm_domain_last_error(split));
    ACM_CK_OK(split, acm_domain_get_slabs(split, 65, &n, after, NULL));
    ck_assert(memcmp(before, after, ((size_t)n + 1) * sizeof *after) == 0);
    for (int k = 0; k < 2; ++k) {
        (void)acm_test_add_sphere(both[k], &sp);
        ACM_CK_OK(both[k], acm_step(both[k], 4));
    }
    ACM_CK_OK(split, acm_domain_get_slabs(split, 65, &n, after, NULL));
    ck_assert_msg(after[1] < before[1], "the first cut at %d, before %d", after[1], before[1]);
    expect_close(one, split, &c, solids_tol(&c), "after a failed re-cut");
    acm_domain_destroy(one);
    acm_domain_destroy(split);
}
END_TEST

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    Suite *s = suite_create("mpi");
    TCase *tc = acm_tcase("mpi", 600);
    tcase_add_loop_test(tc, bitwise_as_one_domain, 0, SCENE_COUNT);
    tcase_add_loop_test(tc, solids_across_ranks, 0, SCENE_COUNT);
    tcase_add_test(tc, divergence_on_one_rank);
    tcase_add_test(tc, checkpoint_loads_undivided);
    tcase_add_test(tc, allocation_failure_on_one_rank);
    tcase_add_test(tc, recut_failure_on_one_rank);
    tcase_add_test(tc, face_function_cancelled_on_one_rank);
    if (acm_test_backend() == ACM_BACKEND_CUDA) /* last: it ends rank 1's CUDA context */
        tcase_add_test(tc, device_fault_on_one_rank);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* no fork under MPI */
    srunner_run_all(sr, rank_of() == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr), worst = 0;
    srunner_free(sr);
    MPI_Allreduce(&failed, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst == 0 ? 0 : 1;
}
