/*
 * libacmlbm tests -- what a hostile embedding application found in the
 * library's file handling, one test each; the public API only. Readers
 * (meshes, checkpoints, the tuning cache) refuse what is not a regular file
 * before reading it and never block; writers (checkpoints, exports, the
 * tuning cache) take any valid file name, name it in every message and keep
 * the old file when they fail; meshes too small for a double are refused;
 * a message quotes a token whole or says that it was cut.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>       /* opendir: the directory emptied */
#include <errno.h>        /* errno */
#include <signal.h>       /* sigaction, SIGALRM, SIGXFSZ */
#include <sys/resource.h> /* setrlimit, RLIMIT_FSIZE */
#include <sys/stat.h>     /* mkdir, mkfifo */
#include <time.h>         /* clock_gettime */
#include <unistd.h>       /* alarm, rmdir */

#include "test-common.h"

#define N 8

/* ---- a directory of its own, and what it holds ---------------------------------------- */

typedef struct files {
    char dir[64];
    char fifo[96];
    char sub[96];
} files;

static void files_make(files *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/acm-hostile-files-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    snprintf(f->fifo, sizeof f->fifo, "%s/fifo", f->dir);
    snprintf(f->sub, sizeof f->sub, "%s/subdir", f->dir);
    ck_assert_int_eq(mkfifo(f->fifo, 0600), 0);
    ck_assert_int_eq(mkdir(f->sub, 0700), 0);
}

/* Every entry of the directory removed, then the directory. */
static void files_remove(files *f)
{
    DIR *dir = opendir(f->dir);
    ck_assert_ptr_nonnull(dir);
    char path[512];
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
        if (remove(path) != 0)
            rmdir(path);
    }
    closedir(dir);
    ck_assert_int_eq(rmdir(f->dir), 0);
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    const long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

static acm_domain *small_domain(void)
{
    acm_domain_options o =
        acm_test_options(N, N, N, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    return acm_test_domain(&o);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- a call that must not block -------------------------------------------------------- */

/* A reader that blocks (in open() on a FIFO without a writer) is woken by
 * SIGALRM after this many seconds: its open fails with EINTR, and the test
 * fails on the message rather than hanging. */
#define WATCHDOG_S 4

static void on_alarm(int sig) { (void)sig; }

static struct sigaction watchdog_start(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: a blocked open() returns EINTR */
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGALRM, &sa, &old), 0);
    alarm(WATCHDOG_S);
    return old;
}

static void watchdog_stop(struct sigaction old, double t0, const char *what)
{
    alarm(0);
    ck_assert_int_eq(sigaction(SIGALRM, &old, NULL), 0);
    const double s = now_s() - t0;
    ck_assert_msg(s < WATCHDOG_S - 1, "%s took %.1f s: it blocked", what, s);
}

/* msg names path and says what it is, as a refusal of a file that is not regular must. */
static void expect_not_regular(const char *msg, const char *path, const char *kind)
{
    ck_assert_msg(strstr(msg, path) != NULL, "'%s' does not name %s", msg, path);
    ck_assert_msg(strstr(msg, kind) != NULL && strstr(msg, "not a regular file") != NULL,
                  "'%s' does not say that %s is %s", msg, path, kind);
}

/* The paths that are no regular file, and what each is. */
typedef struct special {
    const char *path, *kind;
} special;

static int specials(const files *f, special out[5])
{
    out[0] = (special){f->sub, "a directory"};
    out[1] = (special){f->fifo, "a FIFO"};
    out[2] = (special){"/dev/zero", "a character device"};
    out[3] = (special){"/dev/urandom", "a character device"};
    out[4] = (special){"/dev/null", "a character device"};
    return 5;
}

/* ---- readers -------------------------------------------------------------------------- */

/* A reader of the library on path: its status, its message in err[n]. */
typedef acm_status (*reader)(const char *path, char *err, size_t n);

static acm_status read_mesh(const char *path, char *err, size_t n)
{
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.max_triangles = 1000; /* a bound of 2 MiB: the old reader stopped there */
    o.error_buffer = err;
    o.error_buffer_size = n;
    acm_mesh *m = NULL;
    const acm_status st = acm_mesh_load(&m, path, &o);
    ck_assert(st == ACM_OK || m == NULL);
    acm_mesh_destroy(m);
    return st;
}

static acm_status read_checkpoint(const char *path, char *err, size_t n)
{
    acm_domain *d = NULL;
    const acm_status st = acm_test_try_load(path, ACM_BACKEND_CPU, &d, err, n);
    ck_assert(st == ACM_OK || d == NULL);
    acm_domain_destroy(d);
    return st;
}

/* Each path that is no regular file refused by `read` at once: ACM_ERR_IO, the
 * path and what it is. */
static void expect_specials_refused(reader read)
{
    files f;
    files_make(&f);
    special sp[5];
    const int n = specials(&f, sp);
    for (int i = 0; i < n; ++i) {
        char err[512] = "";
        const double t0 = now_s();
        struct sigaction old = watchdog_start();
        const acm_status st = read(sp[i].path, err, sizeof err);
        watchdog_stop(old, t0, sp[i].path);
        ck_assert_msg(st == ACM_ERR_IO, "%s: %s: %s", sp[i].path, acm_status_string(st), err);
        expect_not_regular(err, sp[i].path, sp[i].kind);
    }
    files_remove(&f);
}

/* acm_mesh_load once read /dev/zero until memory ran out (the bound came from
 * stat(), 0 there), /dev/urandom until malloc failed (here, with a small
 * max_triangles, up to its bound), blocked in open() on a FIFO without a
 * writer, and said "Is a directory" only after reading. Each is now refused
 * before anything is read: ACM_ERR_IO, the path and what it is. */
START_TEST(mesh_reader_takes_regular_files_only)
{
    expect_specials_refused(read_mesh);
    /* a regular file is read as before */
    files f;
    files_make(&f);
    char path[128], err[512] = "";
    snprintf(path, sizeof path, "%s/tet.obj", f.dir);
    spit(path, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n");
    ck_assert_msg(read_mesh(path, err, sizeof err) == ACM_OK, "%s", err);
    files_remove(&f);
}
END_TEST

/* acm_domain_load blocked forever on a FIFO without a writer and called a
 * directory or /dev/zero "not a checkpoint (no magic)". */
START_TEST(checkpoint_reader_takes_regular_files_only)
{
    expect_specials_refused(read_checkpoint);
}
END_TEST

static int count_progress(const acm_tune_progress *p, void *user)
{
    (void)p;
    ++*(int *)user;
    return 1; /* cancel: what is tested happens before any candidate */
}

/* A tuning cache that is a FIFO blocked the autotuner in fopen(); a directory
 * was found writable (its temporary went beside it) and failed only after the
 * whole search. Both are refused before any measurement. */
START_TEST(tune_cache_is_a_regular_file)
{
    files f;
    files_make(&f);
    const special sp[2] = {{f.fifo, "a FIFO"}, {f.sub, "a directory"}};
    acm_domain *d = small_domain();
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    for (int i = 0; i < 2; ++i) {
        for (uint32_t flags = 0; flags <= (uint32_t)ACM_TUNE_REFRESH; flags += ACM_TUNE_REFRESH) {
            acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
            int calls = 0;
            o.window_steps = 2;
            o.flags = flags;
            o.cache_path = sp[i].path;
            o.progress = count_progress;
            o.user_data = &calls;
            const double t0 = now_s();
            struct sigaction old = watchdog_start();
            const acm_status st = acm_domain_autotune(d, &o, best, NULL);
            watchdog_stop(old, t0, sp[i].path);
            ck_assert_msg(st == ACM_ERR_IO, "%s: %s: %s", sp[i].path, acm_status_string(st),
                          acm_domain_last_error(d));
            ck_assert_int_eq(calls, 0);
            expect_not_regular(acm_domain_last_error(d), sp[i].path, sp[i].kind);
        }
    }
    acm_layout_destroy(best);
    acm_domain_destroy(d);
    files_remove(&f);
}
END_TEST

/* ---- writers -------------------------------------------------------------------------- */

/* dir/<name of `len` bytes>, the name ending in `suffix`. */
static void long_name(char *path, size_t size, const char *dir, size_t len, const char *suffix)
{
    char name[256];
    ck_assert_uint_lt(len, sizeof name);
    memset(name, 'n', len);
    memcpy(name + len - strlen(suffix), suffix, strlen(suffix));
    name[len] = '\0';
    snprintf(path, size, "%s/%s", dir, name);
}

/* A file name of 255 bytes (NAME_MAX) is valid: its temporary `<name>.tmp.<pid>`
 * was not, so every save and export of it failed, naming the temporary
 * (test-vdb.c, vdb_longest_name, for OpenVDB). */
START_TEST(writers_take_the_longest_names)
{
    files f;
    files_make(&f);
    char ckpt[512], vti[512], ply[512], cache[512];
    long_name(ckpt, sizeof ckpt, f.dir, 255, ".ckpt");
    long_name(vti, sizeof vti, f.dir, 255, ".vti");
    long_name(ply, sizeof ply, f.dir, 255, ".ply");
    long_name(cache, sizeof cache, f.dir, 255, ".tune");
    acm_domain *d = small_domain();
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    acm_smoke *s = NULL;
    ACM_CK_OK(d, acm_smoke_create(&s, d, &so));
    ACM_CK_OK(d, acm_step(d, 3));

    ACM_CK_OK(d, acm_domain_save(d, ckpt));
    acm_domain_destroy(acm_test_load(ckpt, ACM_BACKEND_CPU));

    const acm_field fields[1] = {ACM_FIELD_DENSITY};
    ACM_CK_OK(d, acm_domain_export_vti(d, vti, fields, 1));
    ck_assert_msg(acm_smoke_export(s, ply, ACM_PARTICLES_PLY) == ACM_OK, "%s",
                  acm_smoke_last_error(s));

    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.window_steps = 2;
    o.time_budget_s = 2.0;
    o.cache_path = cache;
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    ACM_CK_OK(d, acm_domain_autotune(d, &o, best, NULL));
    size_t n = 0;
    free(slurp(cache, &n));
    ck_assert_uint_gt(n, 0);
    acm_layout_destroy(best);

    ck_assert_int_eq(acm_test_temporaries(f.dir), 0);
    acm_domain_destroy(d);
    files_remove(&f);
}
END_TEST

/* A save or export that fails half way (the file-size limit, as a full disk
 * would) keeps the old file byte for byte, leaves no temporary, and its
 * message names the caller's path, never the temporary's; so does a save
 * into a missing directory. */
START_TEST(failed_writes_keep_the_old_file)
{
    files f;
    files_make(&f);
    char ckpt[512], vti[512], missing[512];
    long_name(ckpt, sizeof ckpt, f.dir, 255, ".ckpt");
    long_name(vti, sizeof vti, f.dir, 255, ".vti");
    snprintf(missing, sizeof missing, "%s/no-such-dir/run.ckpt", f.dir);
    acm_domain *d = small_domain();
    ACM_CK_OK(d, acm_domain_save(d, ckpt));
    const acm_field fields[1] = {ACM_FIELD_POPULATIONS};
    ACM_CK_OK(d, acm_domain_export_vti(d, vti, fields, 1));
    size_t ckpt_n = 0, vti_n = 0;
    unsigned char *ckpt_before = slurp(ckpt, &ckpt_n), *vti_before = slurp(vti, &vti_n);
    ACM_CK_OK(d, acm_step(d, 2));

    struct rlimit keep, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    small = keep;
    small.rlim_cur = 4096; /* far below either file */
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    const acm_status save = acm_domain_save(d, ckpt);
    char save_msg[512];
    snprintf(save_msg, sizeof save_msg, "%s", acm_domain_last_error(d));
    const acm_status vti_st = acm_domain_export_vti(d, vti, fields, 1);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, old);

    ck_assert_msg(save == ACM_ERR_IO, "%s: %s", acm_status_string(save), save_msg);
    ck_assert_msg(strstr(save_msg, ckpt) != NULL && strstr(save_msg, ".tmp") == NULL,
                  "'%s' does not name the caller's path alone", save_msg);
    ck_assert_msg(vti_st == ACM_ERR_IO, "%s: %s", acm_status_string(vti_st),
                  acm_domain_last_error(d));
    ck_assert_msg(strstr(acm_domain_last_error(d), vti) != NULL &&
                      strstr(acm_domain_last_error(d), ".tmp") == NULL,
                  "'%s' does not name the caller's path alone", acm_domain_last_error(d));
    ck_assert_int_eq(acm_test_temporaries(f.dir), 0);
    size_t n = 0;
    unsigned char *after = slurp(ckpt, &n);
    ck_assert_uint_eq(n, ckpt_n);
    ck_assert_mem_eq(after, ckpt_before, n);
    free(after);
    after = slurp(vti, &n);
    ck_assert_uint_eq(n, vti_n);
    ck_assert_mem_eq(after, vti_before, n);
    free(after);

    ACM_CK_FAIL(d, acm_domain_save(d, missing), ACM_ERR_IO);
    ck_assert_msg(strstr(acm_domain_last_error(d), missing) != NULL &&
                      strstr(acm_domain_last_error(d), ".tmp") == NULL,
                  "'%s' does not name the caller's path alone", acm_domain_last_error(d));
    /* and the domain saves again */
    ACM_CK_OK(d, acm_domain_save(d, ckpt));
    free(ckpt_before);
    free(vti_before);
    acm_domain_destroy(d);
    files_remove(&f);
}
END_TEST

/* ---- meshes too small for a double ---------------------------------------------------- */

static const double cube_v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                     0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
static const uint32_t cube_t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                        2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};

/* A closed cube of side 1e-120 (area 6e-240, volume 1e-360) was accepted with
 * volume 0; it is refused, by acm_mesh_create (ACM_ERR_OUT_OF_RANGE) and by
 * the readers (ACM_ERR_BAD_FORMAT, as for an area that underflows). */
START_TEST(mesh_whose_volume_underflows)
{
    double v[8 * 3];
    for (int i = 0; i < 24; ++i)
        v[i] = 1e-120 * cube_v[i];
    char err[512] = "";
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_mesh *m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, v, 8, cube_t, 12, &o), ACM_ERR_OUT_OF_RANGE);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err, "volume underflows") != NULL, "message '%s'", err);

    char obj[1024] = "";
    size_t len = 0;
    for (int i = 0; i < 8; ++i)
        len += (size_t)snprintf(obj + len, sizeof obj - len, "v %.17g %.17g %.17g\n", v[3 * i],
                                v[3 * i + 1], v[3 * i + 2]);
    for (int t = 0; t < 12; ++t)
        len += (size_t)snprintf(obj + len, sizeof obj - len, "f %u %u %u\n", cube_t[3 * t] + 1,
                                cube_t[3 * t + 1] + 1, cube_t[3 * t + 2] + 1);
    err[0] = '\0';
    ck_assert_int_eq(acm_mesh_load_memory(&m, obj, len, &o), ACM_ERR_BAD_FORMAT);
    ck_assert_msg(strstr(err, "volume underflows") != NULL, "message '%s'", err);

    /* an open surface has no volume to lose: the cube without its top is kept */
    m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, v, 8, cube_t, 10, &o), ACM_OK);
    acm_mesh_destroy(m);
}
END_TEST

/* A scale of 1e-300 made the surface 0 cells^2: "invalid argument, zero total
 * area"; 1e-120 kept the surface but gave a closed solid a volume of 0. Both
 * are out of range now, and say what underflows; the domain keeps no solid. */
START_TEST(solid_scale_that_underflows)
{
    acm_mesh *m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, cube_v, 8, cube_t, 12, NULL), ACM_OK);
    acm_domain *d = small_domain();
    const struct {
        double scale;
        const char *what;
    } bad[] = {{1e-300, "surface"}, {1e-90, "surface"}, {1e-120, "volume"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        acm_solid_options o = ACM_SOLID_OPTIONS_INIT;
        o.mesh = m;
        o.scale = bad[i].scale;
        o.position[0] = o.position[1] = o.position[2] = 0.5 * N;
        acm_solid *s = NULL;
        ACM_CK_FAIL(d, acm_solid_create(&s, d, &o), ACM_ERR_OUT_OF_RANGE);
        ck_assert_ptr_null(s);
        const char *msg = acm_domain_last_error(d);
        ck_assert_msg(strstr(msg, "scale=") != NULL && strstr(msg, bad[i].what) != NULL &&
                          strstr(msg, "underflows") != NULL,
                      "scale %g: message '%s'", bad[i].scale, msg);
        size_t count = 1;
        ACM_CK_OK(d, acm_domain_get_solids(d, NULL, 0, &count));
        ck_assert_uint_eq(count, 0);
    }
    /* a small but representable scale still makes a solid */
    acm_solid_options o = ACM_SOLID_OPTIONS_INIT;
    o.mesh = m;
    o.scale = 2.0;
    o.position[0] = o.position[1] = o.position[2] = 0.5 * N;
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_solid_create(&s, d, &o));
    acm_domain_destroy(d);
    acm_mesh_destroy(m);
}
END_TEST

/* ---- messages that quote the input ---------------------------------------------------- */

static void load_text(const char *text, char *err, size_t n)
{
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.error_buffer = err;
    o.error_buffer_size = n;
    acm_mesh *m = NULL;
    ck_assert_int_eq(acm_mesh_load_memory(&m, text, strlen(text), &o), ACM_ERR_BAD_FORMAT);
    ck_assert_ptr_null(m);
}

/* "f 1 2 99999999999999999999999" was reported as "vertex index
 * 9999999999999": an index or token is quoted whole, or cut with "..." and
 * its length. */
START_TEST(messages_quote_tokens_whole_or_say_they_are_cut)
{
    char err[512];
    load_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999999\n", err, sizeof err);
    ck_assert_msg(strstr(err, "vertex index 99999999999999999999999,") != NULL, "'%s'", err);
    load_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 -99999999999999999999999/2/3\n", err,
              sizeof err);
    ck_assert_msg(strstr(err, "index -99999999999999999999999,") != NULL, "'%s'", err);
    load_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", err, sizeof err);
    ck_assert_msg(strstr(err, "vertex index 4, the file has 3 vertices") != NULL, "'%s'", err);

    /* 70 digits: cut, with the count */
    char text[256], digits[71];
    memset(digits, '7', 70);
    digits[70] = '\0';
    snprintf(text, sizeof text, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 %s\n", digits);
    load_text(text, err, sizeof err);
    ck_assert_msg(strstr(err, "...") != NULL && strstr(err, "(70 characters)") != NULL, "'%s'",
                  err);
    /* a token of 60 bytes that is not a number: cut, with its length */
    snprintf(text, sizeof text, "v 0 0 %.59sx\n", digits);
    load_text(text, err, sizeof err);
    ck_assert_msg(strstr(err, "...' (60 bytes) is not a number") != NULL, "'%s'", err);
    /* a short one whole, as before */
    load_text("v 0 0 12345678901234567890x\n", err, sizeof err);
    ck_assert_msg(strstr(err, "'12345678901234567890x' is not a number") != NULL, "'%s'", err);
}
END_TEST

TEST_SUITE(hostile_files_suite)
{
    Suite *s = suite_create("hostile-files");
    TCase *tc = acm_tcase("readers", 60);
    tcase_add_test(tc, mesh_reader_takes_regular_files_only);
    tcase_add_test(tc, checkpoint_reader_takes_regular_files_only);
    tcase_add_test(tc, tune_cache_is_a_regular_file);
    suite_add_tcase(s, tc);
    tc = acm_tcase("writers", 120);
    tcase_add_test(tc, writers_take_the_longest_names);
    tcase_add_test(tc, failed_writes_keep_the_old_file);
    suite_add_tcase(s, tc);
    tc = acm_tcase("meshes", 60);
    tcase_add_test(tc, mesh_whose_volume_underflows);
    tcase_add_test(tc, solid_scale_that_underflows);
    tcase_add_test(tc, messages_quote_tokens_whole_or_say_they_are_cut);
    suite_add_tcase(s, tc);
    return s;
}
