/*
 * libacmlbm tests -- re-laying a live domain (acm_domain_set_layout): the
 * state is the same before and after, bitwise in the same precision, and the
 * run goes on as if nothing had happened. On the backend under test.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>  /* fopen */
#include <stdlib.h> /* mkstemp, mkdtemp */
#include <unistd.h> /* close, rmdir */

#include "test-solid-common.h"

/* What a caller can see of a domain with one solid. */
typedef struct observed {
    size_t cells, samples;
    double *f, *rho, *u, *force, *X;
    double F[3], T[3];
    int64_t step;
    acm_domain_stats stats;
} observed;

static int cmp_point(const void *a, const void *b)
{
    const double *p = a, *q = b;
    for (int k = 0; k < 3; ++k)
        if (p[k] != q[k])
            return p[k] < q[k] ? -1 : 1;
    return 0;
}

static double *get_field(acm_domain *d, acm_field field, size_t count)
{
    double *v = acm_test_alloc(count * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, field, ACM_DTYPE_FLOAT64, v, count * sizeof(double)));
    return v;
}

static observed observe(acm_domain *d, acm_solid *s)
{
    observed o;
    memset(&o, 0, sizeof o);
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    o.cells = (size_t)info.nx * (size_t)info.ny * (size_t)info.nz;
    o.step = info.step;
    o.f = get_field(d, ACM_FIELD_POPULATIONS, 27 * o.cells);
    o.rho = get_field(d, ACM_FIELD_DENSITY, o.cells);
    o.u = get_field(d, ACM_FIELD_VELOCITY, 3 * o.cells);
    o.force = get_field(d, ACM_FIELD_FORCE, 3 * o.cells);
    acm_solid_info si = {ACM_SOLID_INFO_VERSION, 0, 0, 0, 0, 0, 0, {0}, 0, 0};
    ck_assert_int_eq(acm_solid_get_info(s, &si), ACM_OK);
    o.samples = (size_t)si.sample_count;
    o.X = acm_test_alloc(3 * o.samples * sizeof(double));
    ck_assert_int_eq(acm_solid_get_samples(s, o.X, o.samples), ACM_OK);
    qsort(o.X, o.samples, 3 * sizeof(double), cmp_point); /* the order is the layout's */
    ck_assert_int_eq(acm_solid_get_force(s, o.F, o.T), ACM_OK);
    o.stats = acm_test_stats(d);
    return o;
}

static void observed_free(observed *o)
{
    free(o->f);
    free(o->rho);
    free(o->u);
    free(o->force);
    free(o->X);
}

/* Largest difference of two arrays relative to `scale` (0 when bitwise equal). */
static double rel_diff(const double *a, const double *b, size_t n, double scale)
{
    return memcmp(a, b, n * sizeof(double)) == 0 ? 0.0 : acm_test_max_diff(a, b, n) / scale;
}

/* Two observations agree within tol (0: bitwise). */
static void expect_same(const observed *a, const observed *b, double tol, const char *what)
{
    ck_assert_int_eq(a->step, b->step);
    ck_assert_msg(rel_diff(a->f, b->f, 27 * a->cells, 1e-3) <= tol, "%s: populations differ by %g",
                  what, acm_test_max_diff(a->f, b->f, 27 * a->cells));
    ck_assert_msg(rel_diff(a->rho, b->rho, a->cells, 1e-3) <= tol, "%s: density", what);
    ck_assert_msg(rel_diff(a->u, b->u, 3 * a->cells, 1e-3) <= tol, "%s: velocity differs by %g",
                  what, acm_test_max_diff(a->u, b->u, 3 * a->cells));
    ck_assert_msg(rel_diff(a->force, b->force, 3 * a->cells, 1e-5) <= tol, "%s: force field", what);
    ck_assert_msg(rel_diff(a->X, b->X, 3 * a->samples, 1.0) <= tol, "%s: sample positions", what);
    ck_assert_msg(rel_diff(a->F, b->F, 3, 1e-3) <= tol && rel_diff(a->T, b->T, 3, 1e-2) <= tol,
                  "%s: solid force (%.17g %.17g %.17g) vs (%.17g %.17g %.17g)", what, a->F[0],
                  a->F[1], a->F[2], b->F[0], b->F[1], b->F[2]);
}

/* A rotating, translating sphere in a channel with a force field and the
 * LI2020 mode (per-cell state): every kind of state there is. */
static acm_domain *scene(acm_precision precision, const acm_layout *layout, acm_solid **solid)
{
    acm_domain_options o = acm_test_options(14, 12, 10, 0.05, ACM_COLLISION_ACM_LI2020, precision);
    o.layout = layout;
    o.initial_velocity[0] = 0.02;
    acm_domain *d = acm_test_domain(&o);
    /* tau* = rho / <rho> - 0.9999: not positive in part of the cells, which then keep
     * the last positive value, so the per-cell state matters */
    acm_collision_options co = ACM_COLLISION_OPTIONS_INIT;
    ACM_CK_OK(d, acm_domain_get_collision(d, &co));
    co.li2020_theta[0] = 1.0;
    co.li2020_theta[1] = co.li2020_theta[2] = 0.0;
    co.li2020_theta[3] = -0.9999;
    co.safety_net = 0; /* its clamp would hide tau* */
    ACM_CK_OK(d, acm_domain_set_collision(d, &co));
    const double wall[3] = {0.01, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MIN, ACM_BOUNDARY_WALL, NULL));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Z_MAX, ACM_BOUNDARY_WALL, wall));
    const size_t cells = 14 * 12 * 10;
    double *F = acm_test_alloc(3 * cells * sizeof(double));
    for (size_t k = 0; k < cells; ++k) {
        F[3 * k] = 1e-6 * (double)(k % 7);
        F[3 * k + 1] = -2e-6 * (double)(k % 5);
        F[3 * k + 2] = 0.0;
    }
    ACM_CK_OK(d, acm_domain_set_field(d, ACM_FIELD_FORCE, ACM_DTYPE_FLOAT64, F,
                                      3 * cells * sizeof(double)));
    free(F);
    double *pts, *areas;
    acm_test_sphere_points(300, 2.5, &pts, &areas);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = 300;
    so.sample_points = pts;
    so.sample_areas = areas;
    so.position[0] = 6.2;
    so.position[1] = 5.7;
    so.position[2] = 4.9;
    so.motion = ACM_MOTION_PRESCRIBED;
    so.velocity[0] = 0.03;
    so.angular_velocity[1] = 0.02;
    ACM_CK_OK(d, acm_solid_create(solid, d, &so));
    free(pts);
    free(areas);
    return d;
}

static acm_layout *layout_of(const char *text)
{
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ck_assert_msg(acm_layout_from_string(l, text) == ACM_OK, "%s: %s", text,
                  acm_layout_last_error(l));
    return l;
}

/* The layouts a re-layout goes through, one after the other. */
static const char *const relayouts[] = {
    "acm-layout 1 csoa_group=1",
    "acm-layout 1 csoa_group=64 streaming=in_place",
    "acm-layout 1 csoa_group=4096 streaming=in_place sample_block=4",
    "acm-layout 1 streaming=two_arrays sample_order=as_sampled ib_spread=gather",
    "acm-layout 1 kernel=split block_size=64 sample_block=1",
    "acm-layout 1 kernel=baseline",
    "acm-layout 1",
};
#define RELAYOUTS (int)(sizeof relayouts / sizeof relayouts[0])

/* Bitwise the same state after each re-layout, at odd and even step counts
 * (in place: both parities), and the run continues as a domain that was
 * never re-laid (up to the order of the IB spreading's sums). */
START_TEST(relayout_keeps_state)
{
    acm_solid *s = NULL, *s_ref = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP64, NULL, &s);
    acm_domain *ref = scene(ACM_PRECISION_FP64, NULL, &s_ref);
    for (int k = 0; k < RELAYOUTS; ++k) {
        const int steps = 3 + k % 2; /* odd and even step counts */
        ACM_CK_OK(d, acm_step(d, steps));
        ACM_CK_OK(ref, acm_step(ref, steps));
        observed before = observe(d, s);
        acm_layout *l = layout_of(relayouts[k]);
        ck_assert_msg(acm_domain_set_layout(d, l) == ACM_OK, "%s: %s", relayouts[k],
                      acm_domain_last_error(d));
        acm_layout_destroy(l);
        observed after = observe(d, s);
        expect_same(&before, &after, 0.0, relayouts[k]);
        observed reference = observe(ref, s_ref);
        expect_same(&reference, &after, 1e-11, "against the domain never re-laid");
        observed_free(&before);
        observed_free(&after);
        observed_free(&reference);
    }
    acm_domain_destroy(d);
    acm_domain_destroy(ref);
}
END_TEST

/* acm_domain_get_layout reports the resolved layout, and setting it again
 * changes nothing. */
START_TEST(get_layout_is_resolved)
{
    acm_solid *s = NULL;
    acm_layout *l = layout_of("acm-layout 1 csoa_group=32 sample_block=3 streaming=in_place");
    acm_domain *d = scene(ACM_PRECISION_FP32, l, &s);
    acm_layout_destroy(l);
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    ACM_CK_OK(d, acm_domain_get_layout(d, l));
    int64_t v;
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_CSOA_GROUP, &v), ACM_OK);
    ck_assert_int_eq(v, 32);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_SAMPLE_BLOCK, &v), ACM_OK);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_SAMPLE_ORDER, &v), ACM_OK);
    ck_assert_int_eq(v, ACM_SAMPLE_ORDER_MORTON_BLOCK);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_STREAMING, &v), ACM_OK);
    ck_assert_int_eq(v, ACM_STREAMING_IN_PLACE);
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_PRECISION, &v), ACM_OK);
    ck_assert_int_eq(v, ACM_PRECISION_FP32);
    ACM_CK_OK(d, acm_step(d, 3));
    observed before = observe(d, s);
    ACM_CK_OK(d, acm_domain_set_layout(d, l));
    observed after = observe(d, s);
    expect_same(&before, &after, 0.0, "the domain's own layout");
    observed_free(&before);
    observed_free(&after);
    acm_layout_destroy(l);
    acm_domain_destroy(d);
}
END_TEST

/* Bad layouts are refused with a reason and leave the domain as it was. */
START_TEST(relayout_errors)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP32, NULL, &s);
    ACM_CK_OK(d, acm_step(d, 2));
    observed before = observe(d, s);
    ck_assert_int_eq(acm_domain_set_layout(NULL, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_set_layout(d, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_get_layout(d, NULL), ACM_ERR_NULL_POINTER);
    if (acm_test_backend() == ACM_BACKEND_CPU) {
        acm_layout *l = layout_of("acm-layout 1 csoa_group=8 precision=fp16");
        ACM_CK_FAIL(d, acm_domain_set_layout(d, l), ACM_ERR_NOT_BUILT);
        ck_assert_msg(strstr(acm_domain_last_error(d), "FP16") != NULL, "%s",
                      acm_domain_last_error(d));
        acm_layout_destroy(l);
    }
    observed after = observe(d, s);
    expect_same(&before, &after, 0.0, "after refused layouts");
    observed_free(&before);
    observed_free(&after);
    acm_domain_destroy(d);
}
END_TEST

/* A precision change rounds the state once; back in FP32 the run goes on. */
START_TEST(relayout_changes_precision)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP64, NULL, &s);
    ACM_CK_OK(d, acm_step(d, 5));
    observed before = observe(d, s);
    acm_layout *l = layout_of("acm-layout 1 precision=fp32");
    ACM_CK_OK(d, acm_domain_set_layout(d, l));
    observed after = observe(d, s);
    expect_same(&before, &after, 1e-4, "FP64 to FP32");
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    ck_assert_int_eq(info.precision, ACM_PRECISION_FP32);
    ACM_CK_OK(d, acm_step(d, 5));
    acm_layout_destroy(l);
    observed_free(&before);
    observed_free(&after);
    if (acm_test_backend() == ACM_BACKEND_CUDA) { /* FP16 storage and back, in place */
        before = observe(d, s);
        l = layout_of("acm-layout 1 precision=fp16 streaming=in_place");
        ACM_CK_OK(d, acm_domain_set_layout(d, l));
        acm_layout_destroy(l);
        l = layout_of("acm-layout 1 precision=fp32");
        ACM_CK_OK(d, acm_domain_set_layout(d, l));
        acm_layout_destroy(l);
        after = observe(d, s);
        /* FP16 keeps f - w to 11 bits: ~3e-5 a population here, ~1.5e-4 in rho and j; a
         * wrong slot or scale would be off by far more */
        expect_same(&before, &after, 0.3, "FP32 to FP16 and back");
        ACM_CK_OK(d, acm_step(d, 5));
        observed_free(&before);
        observed_free(&after);
    }
    acm_domain_destroy(d);
}
END_TEST

/* ---- the autotuner ------------------------------------------------------------------ */

static int count_calls(const acm_tune_progress *p, void *user)
{
    int *calls = user;
    ck_assert_msg(p->candidate != NULL && strncmp(p->candidate, "acm-layout 1", 12) == 0, "%s",
                  p->candidate);
    ck_assert_int_eq(p->done, *calls + 1);
    ++*calls;
    return 0;
}

static acm_tune_summary summary_of(const acm_tune_report *r)
{
    acm_tune_summary s;
    memset(&s, 0, sizeof s);
    s.version = ACM_TUNE_SUMMARY_VERSION;
    ck_assert_int_eq(acm_tune_report_summary(r, &s), ACM_OK);
    return s;
}

static acm_tune_entry entry_of(const acm_tune_report *r, int32_t i)
{
    acm_tune_entry e;
    memset(&e, 0, sizeof e);
    e.version = ACM_TUNE_ENTRY_VERSION;
    ck_assert_int_eq(acm_tune_report_entry(r, i, &e), ACM_OK);
    return e;
}

/* A search leaves the domain exactly as it was, reports every candidate, and
 * its choice is the fastest of the final round, the default among them. */
START_TEST(autotune_keeps_state_and_reports)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP32, NULL, &s);
    ACM_CK_OK(d, acm_step(d, 3));
    acm_layout *before_layout = NULL, *best = NULL, *after_layout = NULL;
    ck_assert_int_eq(acm_layout_create(&before_layout), ACM_OK);
    ck_assert_int_eq(acm_layout_create(&after_layout), ACM_OK);
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    ACM_CK_OK(d, acm_domain_get_layout(d, before_layout));
    observed before = observe(d, s);
    acm_tune_options o;
    ck_assert_int_eq(acm_tune_options_init(&o, ACM_TUNE_OPTIONS_VERSION), ACM_OK);
    o.window_steps = 2;
    int calls = 0;
    o.progress = count_calls;
    o.user_data = &calls;
    acm_tune_report *r = NULL;
    ACM_CK_OK(d, acm_domain_autotune(d, &o, best, &r));
    observed after = observe(d, s);
    expect_same(&before, &after, 0.0, "after tuning");
    ACM_CK_OK(d, acm_domain_get_layout(d, after_layout));
    char t1[ACM_LAYOUT_STRING_SIZE], t2[ACM_LAYOUT_STRING_SIZE];
    ck_assert_int_eq(acm_layout_to_string(before_layout, t1, sizeof t1), ACM_OK);
    ck_assert_int_eq(acm_layout_to_string(after_layout, t2, sizeof t2), ACM_OK);
    ck_assert_str_eq(t1, t2);

    const acm_tune_summary sum = summary_of(r);
    ck_assert_int_eq(sum.entries, calls);
    ck_assert_int_ge(sum.entries, 10); /* 6 alphas, 4 sample blocks and more */
    ck_assert_int_eq(sum.cache_hit, 0);
    ck_assert_int_eq(sum.failed, 0);
    ck_assert_int_ge(sum.best, 0);
    ck_assert_int_ge(sum.default_entry, 0);
    ck_assert_msg(strstr(sum.not_tuned, "kernel") != NULL || acm_test_backend() == ACM_BACKEND_CUDA,
                  "%s", sum.not_tuned);
    const acm_tune_entry b = entry_of(r, sum.best), def = entry_of(r, sum.default_entry);
    ck_assert_int_eq(b.stage, ACM_TUNE_STAGE_FINAL);
    ck_assert_int_eq(def.stage, ACM_TUNE_STAGE_FINAL);
    ck_assert_msg(b.ms_per_step <= def.ms_per_step, "best %g ms, default %g ms", b.ms_per_step,
                  def.ms_per_step);
    ck_assert_int_eq(acm_layout_to_string(best, t1, sizeof t1), ACM_OK);
    ck_assert_str_eq(t1, b.layout);
    ck_assert_str_eq(t1, sum.best_layout);
    for (int32_t i = 0; i < sum.entries; ++i) {
        const acm_tune_entry e = entry_of(r, i);
        ck_assert_msg(e.status == ACM_OK && e.ms_per_step > 0.0 && e.mlups > 0.0 && e.steps >= 1,
                      "entry %d: %s %g ms %s", (int)i, e.layout, e.ms_per_step, e.message);
    }
    acm_tune_entry e;
    e.version = ACM_TUNE_ENTRY_VERSION;
    ck_assert_int_eq(acm_tune_report_entry(r, sum.entries, &e), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_tune_report_entry(r, -1, &e), ACM_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(acm_tune_report_entry(r, 0, NULL), ACM_ERR_NULL_POINTER);
    e.version = ACM_TUNE_ENTRY_VERSION + 1;
    ck_assert_int_eq(acm_tune_report_entry(r, 0, &e), ACM_ERR_BAD_VERSION);
    acm_tune_summary bad = {0};
    ck_assert_int_eq(acm_tune_report_summary(r, &bad), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_tune_report_write_csv(r, NULL), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_tune_report_write_csv(NULL, "x.csv"), ACM_ERR_NULL_POINTER);

    /* the CSV: a header and one line per entry, the chosen one marked */
    char path[] = "/tmp/acm-tune-csv-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(acm_tune_report_write_csv(r, path), ACM_OK);
    FILE *f = fopen(path, "r");
    char line[512];
    int lines = 0, chosen = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (lines++ == 0)
            ck_assert_msg(strncmp(line, "index,stage,csoa_group,", 23) == 0, "%s", line);
        else
            chosen += line[strlen(line) - 2] == '1';
    }
    fclose(f);
    remove(path);
    ck_assert_int_eq(lines, sum.entries + 1);
    ck_assert_int_eq(chosen, 1);
    ck_assert_int_eq(acm_tune_report_write_csv(r, "/nonexistent-dir/x.csv"), ACM_ERR_IO);

    /* the best layout runs */
    ACM_CK_OK(d, acm_domain_set_layout(d, best));
    ACM_CK_OK(d, acm_step(d, 2));
    acm_tune_report_destroy(r);
    observed_free(&before);
    observed_free(&after);
    acm_layout_destroy(before_layout);
    acm_layout_destroy(after_layout);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}
END_TEST

/* A second search of the same scene comes from the cache; a corrupt entry and
 * a cache that cannot be written are refused before any measurement. */
START_TEST(autotune_cache)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP32, NULL, &s);
    acm_layout *best = NULL, *again = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    ck_assert_int_eq(acm_layout_create(&again), ACM_OK);
    char dir[] = "/tmp/acm-tune-cache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/layouts.txt", dir);
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.window_steps = 1;
    o.cache_path = path;
    acm_tune_report *r = NULL;
    ACM_CK_OK(d, acm_domain_autotune(d, &o, best, &r));
    ck_assert_int_gt(summary_of(r).entries, 0);
    acm_tune_report_destroy(r);

    ACM_CK_OK(d, acm_domain_autotune(d, &o, again, &r));
    const acm_tune_summary hit = summary_of(r);
    ck_assert_int_eq(hit.cache_hit, 1);
    ck_assert_int_eq(hit.entries, 0);
    char t1[ACM_LAYOUT_STRING_SIZE], t2[ACM_LAYOUT_STRING_SIZE];
    ck_assert_int_eq(acm_layout_to_string(best, t1, sizeof t1), ACM_OK);
    ck_assert_int_eq(acm_layout_to_string(again, t2, sizeof t2), ACM_OK);
    ck_assert_str_eq(t1, t2);
    ck_assert_str_eq(hit.best_layout, t1);
    acm_tune_report_destroy(r);

    /* corrupt the entry: a specific status, the file and line named, nothing measured */
    FILE *f = fopen(path, "r");
    char line[1024];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    char *bar = strstr(line, " | ");
    ck_assert_ptr_nonnull(bar);
    strcpy(bar + 3, "acm-layout 1 csoa_group=3\n");
    f = fopen(path, "w");
    fputs("# a comment line of another tool\n", f);
    fputs(line, f);
    fclose(f);
    observed before = observe(d, s);
    r = NULL;
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, again, &r), ACM_ERR_BAD_FORMAT);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(acm_domain_last_error(d), "line 2") != NULL, "%s", acm_domain_last_error(d));
    observed after = observe(d, s);
    expect_same(&before, &after, 0.0, "after a corrupt cache");
    ck_assert_int_eq(acm_layout_to_string(again, t2, sizeof t2), ACM_OK);
    ck_assert_str_eq(t1, t2); /* unchanged */

    /* ACM_TUNE_REFRESH searches again and replaces the entry; other lines stay */
    o.flags = ACM_TUNE_REFRESH;
    ACM_CK_OK(d, acm_domain_autotune(d, &o, again, NULL));
    o.flags = 0;
    ACM_CK_OK(d, acm_domain_autotune(d, &o, again, &r));
    ck_assert_int_eq(summary_of(r).cache_hit, 1);
    acm_tune_report_destroy(r);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "# a comment line of another tool\n");
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_ptr_null(fgets(line + 512, 512, f));
    fclose(f);

    /* a cache that cannot be written: refused at once */
    o.cache_path = "/nonexistent-dir/layouts.txt";
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, again, NULL), ACM_ERR_IO);
    ck_assert_msg(strstr(acm_domain_last_error(d), "/nonexistent-dir") != NULL, "%s",
                  acm_domain_last_error(d));
    remove(path);
    rmdir(dir);
    observed_free(&before);
    observed_free(&after);
    acm_layout_destroy(best);
    acm_layout_destroy(again);
    acm_domain_destroy(d);
}
END_TEST

/* Candidates that diverge are discarded and reported, the search goes on,
 * and the domain is left as it was. The flow accelerates past max_speed
 * about 7 steps from its start, so every few candidates one diverges. */
START_TEST(autotune_discards_failing_candidates)
{
    acm_domain_options o = acm_test_options(12, 6, 6, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.initial_velocity[0] = 0.05;
    o.max_speed = 0.1;
    acm_domain *d = acm_test_domain(&o);
    const double push[3] = {0.008, 0.0, 0.0};
    ACM_CK_OK(d, acm_domain_set_body_force(d, push));
    double *f0 = get_field(d, ACM_FIELD_POPULATIONS, 27 * 12 * 6 * 6);
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    acm_tune_options to = ACM_TUNE_OPTIONS_INIT;
    to.window_steps = 1;
    acm_tune_report *r = NULL;
    ACM_CK_OK(d, acm_domain_autotune(d, &to, best, &r));
    const acm_tune_summary sum = summary_of(r);
    ck_assert_int_ge(sum.failed, 1);
    ck_assert_int_gt(sum.entries, sum.failed);
    for (int32_t i = 0; i < sum.entries; ++i) {
        const acm_tune_entry e = entry_of(r, i);
        if (e.status != ACM_OK) {
            ck_assert_int_eq(e.status, ACM_ERR_DIVERGED);
            ck_assert_msg(strstr(e.message, "diverged") != NULL, "%s", e.message);
            ck_assert(e.ms_per_step == 0.0);
        }
    }
    ck_assert_int_ge(sum.best, 0);
    ck_assert_int_eq(entry_of(r, sum.best).status, ACM_OK);
    double *f1 = get_field(d, ACM_FIELD_POPULATIONS, 27 * 12 * 6 * 6);
    ck_assert(memcmp(f0, f1, 27 * 12 * 6 * 6 * sizeof(double)) == 0);
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    ck_assert_int_eq(info.step, 0);
    ACM_CK_OK(d, acm_step(d, 1)); /* not left diverged */
    free(f0);
    free(f1);
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}
END_TEST

static int last_planned(const acm_tune_progress *p, void *user)
{
    *(int32_t *)user = p->planned;
    return 0;
}

/* An exhaustive search of d with `flags` into best; the summary, the report
 * in *out. Fails unless the progress planned as many layouts as it measured. */
static acm_tune_summary exhaustive(acm_domain *d, unsigned flags, acm_layout *best,
                                   acm_tune_report **out)
{
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.window_steps = 1;
    o.flags = ACM_TUNE_EXHAUSTIVE | flags;
    o.progress = last_planned;
    int32_t planned = 0;
    o.user_data = &planned;
    ACM_CK_OK(d, acm_domain_autotune(d, &o, best, out));
    const acm_tune_summary sum = summary_of(*out);
    ck_assert_int_eq(planned, sum.entries); /* the progress knew how many there would be */
    return sum;
}

/* In-place streaming is a candidate only when the caller allows it; the
 * exhaustive search measures every combination once. */
START_TEST(autotune_flags)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP32, NULL, &s);
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    for (int flags = 0; flags < 2; ++flags) {
        acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
        o.window_steps = 1;
        o.flags = flags ? ACM_TUNE_STREAMING | ACM_TUNE_STORAGE : 0u;
        acm_tune_report *r = NULL;
        ACM_CK_OK(d, acm_domain_autotune(d, &o, best, &r));
        const acm_tune_summary sum = summary_of(r);
        int in_place = 0, moments = 0;
        for (int32_t i = 0; i < sum.entries; ++i) {
            in_place += strstr(entry_of(r, i).layout, "streaming=in_place") != NULL;
            moments += strstr(entry_of(r, i).layout, "storage=moments") != NULL;
        }
        ck_assert_msg(flags ? in_place > 0 : in_place == 0, "flags %d: %d in-place candidates",
                      flags, in_place);
        /* without the flag every candidate keeps the domain's storage */
        const int kept = acm_test_moments() ? sum.entries : 0;
        ck_assert_msg(flags ? moments > 0 : moments == kept, "flags %d: %d moment candidates",
                      flags, moments);
        ck_assert_msg((strstr(sum.not_tuned, "streaming") == NULL) == (flags != 0), "%s",
                      sum.not_tuned);
        ck_assert_msg((strstr(sum.not_tuned, "storage") == NULL) == (flags != 0), "%s",
                      sum.not_tuned);
        acm_tune_report_destroy(r);
    }
    acm_tune_report *r = NULL;
    const acm_tune_summary sum = exhaustive(d, 0u, best, &r);
    /* CPU: 6 alphas x (4 sample blocks + as sampled); CUDA: x 3 blocks x 3 kernels x 2
     * spreads, the baseline at alpha = 1 once (moment storage: the fused kernel only) */
    const int kernels = acm_test_moments() ? 6 : 6 * 2 + 1;
    const int expect = acm_test_backend() == ACM_BACKEND_CPU ? 6 * 5 : kernels * 3 * 5 * 2;
    ck_assert_int_eq(sum.entries, expect);
    for (int32_t i = 0; i < sum.entries; ++i) {
        const acm_tune_entry e = entry_of(r, i);
        ck_assert_int_eq(e.stage, ACM_TUNE_STAGE_EXHAUSTIVE);
        for (int32_t j = 0; j < i; ++j)
            ck_assert_msg(strcmp(e.layout, entry_of(r, j).layout) != 0, "%s twice", e.layout);
    }
    ck_assert_int_ge(sum.best, 0);
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}
END_TEST

/* An exhaustive search over streaming and storage measures no combination
 * the storage refuses (in place on moment storage; before, each was a
 * failed entry) and plans exactly what it measures. */
START_TEST(autotune_leaves_refused_combinations_out)
{
    acm_domain_options opt = acm_test_options(8, 8, 8, 0.05, ACM_COLLISION_DEFAULT,
                                              ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&opt);
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    acm_tune_report *r = NULL;
    const acm_tune_summary sum = exhaustive(d, ACM_TUNE_STREAMING | ACM_TUNE_STORAGE, best, &r);
    for (int32_t i = 0; i < sum.entries; ++i) { /* the first failed one says why */
        const acm_tune_entry e = entry_of(r, i);
        ck_assert_msg(e.status == ACM_OK, "%d failed entries, the first %s: %s", (int)sum.failed,
                      e.layout, e.message);
    }
    ck_assert_int_eq(sum.failed, 0);
    int in_place = 0, moments = 0;
    for (int32_t i = 0; i < sum.entries; ++i) {
        const char *t = entry_of(r, i).layout;
        const bool ip = strstr(t, "streaming=in_place") != NULL;
        const bool mo = strstr(t, "storage=moments") != NULL;
        ck_assert_msg(!(ip && mo), "refused combination measured: %s", t);
        in_place += ip;
        moments += mo;
    }
    ck_assert_int_gt(in_place, 0);
    ck_assert_int_gt(moments, 0);
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}
END_TEST

static int cancel_at_three(const acm_tune_progress *p, void *user)
{
    (void)user;
    return p->done >= 3;
}

/* Bad arguments and a cancelled search: specific statuses, domain unchanged. */
START_TEST(autotune_errors)
{
    acm_solid *s = NULL;
    acm_domain *d = scene(ACM_PRECISION_FP32, NULL, &s);
    acm_layout *best = NULL;
    ck_assert_int_eq(acm_layout_create(&best), ACM_OK);
    observed before = observe(d, s);
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    ck_assert_int_eq(acm_domain_autotune(NULL, &o, best, NULL), ACM_ERR_NULL_POINTER);
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, NULL, NULL), ACM_ERR_NULL_POINTER);
    o.version = 99;
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, best, NULL), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_tune_options_init(&o, 99), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_tune_options_init(NULL, ACM_TUNE_OPTIONS_VERSION), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_tune_options_init(&o, ACM_TUNE_OPTIONS_VERSION), ACM_OK);
    o.time_budget_s = -1.0;
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, best, NULL), ACM_ERR_OUT_OF_RANGE);
    o.time_budget_s = 0.0;
    o.window_steps = -3;
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, best, NULL), ACM_ERR_OUT_OF_RANGE);
    o.window_steps = 1;
    o.progress = cancel_at_three;
    ACM_CK_FAIL(d, acm_domain_autotune(d, &o, best, NULL), ACM_ERR_CANCELLED);
    observed after = observe(d, s);
    expect_same(&before, &after, 0.0, "after refused and cancelled searches");
    acm_tune_summary sum = {0};
    ck_assert_int_eq(acm_tune_report_summary(NULL, &sum), ACM_ERR_NULL_POINTER);
    acm_tune_report_destroy(NULL);
    observed_free(&before);
    observed_free(&after);
    acm_layout_destroy(best);
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(layout_relayout)
{
    Suite *s = suite_create("layout_relayout");
    TCase *tc = tcase_create("relayout");
    tcase_set_timeout(tc, 300);
    if (!acm_test_moments()) {
        tcase_add_test(tc, relayout_keeps_state);
        tcase_add_test(tc, get_layout_is_resolved);
    } else /* their layouts are population storage's */
        printf("relayout_keeps_state, get_layout_is_resolved: not run on moment storage (their "
               "layouts stream in place and split the kernel, which moment storage refuses; "
               "its re-layouts: test-moments and test-cuda)\n");
    tcase_add_test(tc, relayout_errors);
    tcase_add_test(tc, relayout_changes_precision);
    tcase_add_test(tc, autotune_keeps_state_and_reports);
    tcase_add_test(tc, autotune_cache);
    tcase_add_test(tc, autotune_discards_failing_candidates);
    tcase_add_test(tc, autotune_errors);
    tcase_add_test(tc, autotune_flags);
    tcase_add_test(tc, autotune_leaves_refused_combinations_out);
    suite_add_tcase(s, tc);
    return s;
}
