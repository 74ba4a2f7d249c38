/*
 * libacmlbm tests -- the examples' figure module (examples/figure.c): the
 * font, the upsamplers, text clipping, tick spacing and the argument checks
 * of the slice figure, plus one small figure written to a temporary file.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <unistd.h> /* close, unlink */

#include "figure.h"
#include "test-common.h"

START_TEST(font_has_a_glyph_for_every_printable_character)
{
    for (int c = FIG_FIRST_CHAR; c <= FIG_LAST_CHAR; ++c) {
        const uint8_t *g = fig_glyph(c);
        ck_assert_msg(g != NULL, "no glyph for '%c'", c);
        int ink = 0;
        for (int r = 0; r < FIG_GLYPH_H; ++r) {
            ck_assert_msg(g[r] < (1u << FIG_GLYPH_W), "'%c' row %d is wider than the glyph", c, r);
            ink |= g[r];
        }
        ck_assert_msg((ink != 0) == (c != ' '), "'%c' is blank, or space is not", c);
        for (int d = FIG_FIRST_CHAR; d < c; ++d) /* no two characters look the same */
            ck_assert_msg(memcmp(g, fig_glyph(d), FIG_GLYPH_H) != 0, "'%c' == '%c'", c, d);
    }
    ck_assert_ptr_null(fig_glyph(FIG_FIRST_CHAR - 1));
    ck_assert_ptr_null(fig_glyph(FIG_LAST_CHAR + 1));
    ck_assert_ptr_null(fig_glyph(-1));
}
END_TEST

/* f = 0.3 + 2 x - 1.5 y at the cell centres of an nx x ny grid. */
static void linear_grid(float *v, uint32_t nx, uint32_t ny)
{
    for (uint32_t j = 0; j < ny; ++j)
        for (uint32_t i = 0; i < nx; ++i)
            v[j * nx + i] = (float)(0.3 + 2.0 * (i + 0.5) / nx - 1.5 * (j + 0.5) / ny);
}

START_TEST(upsampling_reproduces_a_linear_field)
{
    enum { NX = 7, NY = 5, W = 53, H = 31 };
    float v[NX * NY], out[W * H];
    linear_grid(v, NX, NY);
    const fig_grid g = {NX, NY, v};
    const fig_interp modes[2] = {FIG_BILINEAR, FIG_BICUBIC};
    for (int m = 0; m < 2; ++m) {
        ck_assert_int_eq(fig_upsample(out, W, H, &g, modes[m]), 0);
        for (int py = 0; py < H; ++py)
            for (int px = 0; px < W; ++px) { /* row 0 of the image is the top */
                const double x = (px + 0.5) / W, y = 1.0 - (py + 0.5) / H;
                ck_assert_double_eq_tol(out[py * W + px], 0.3 + 2.0 * x - 1.5 * y, 1e-5);
            }
        /* the corners of the square, outside the outermost samples */
        ck_assert_double_eq_tol(fig_grid_sample(&g, 0.0, 0.0, modes[m]), 0.3, 1e-5);
        ck_assert_double_eq_tol(fig_grid_sample(&g, 1.0, 1.0, modes[m]), 0.8, 1e-5);
    }
}
END_TEST

START_TEST(upsampling_checks_its_arguments)
{
    float v[4] = {1.0f, 1.0f, 1.0f, 1.0f}, out[4];
    const fig_grid g = {2, 2, v}, empty = {0, 2, v}, no_values = {2, 2, NULL};
    ck_assert_int_eq(fig_upsample(NULL, 2, 2, &g, FIG_BILINEAR), -1);
    ck_assert_int_eq(fig_upsample(out, 0, 2, &g, FIG_BILINEAR), -1);
    ck_assert_int_eq(fig_upsample(out, 2, 2, &empty, FIG_BICUBIC), -1);
    ck_assert_int_eq(fig_upsample(out, 2, 2, &no_values, FIG_BICUBIC), -1);
    ck_assert_int_eq(fig_upsample(out, 2, 2, NULL, FIG_BICUBIC), -1);
    const float one = 4.0f; /* a single sample is a constant field */
    const fig_grid single = {1, 1, &one};
    ck_assert_int_eq(fig_upsample(out, 2, 2, &single, FIG_BICUBIC), 0);
    for (int k = 0; k < 4; ++k)
        ck_assert_float_eq(out[k], 4.0f);
}
END_TEST

START_TEST(text_is_clipped_at_the_image_edges)
{
    enum { W = 23, H = 13, PAD = 64, CANARY = 0xa5 };
    uint8_t buf[PAD + 3 * W * H + PAD];
    memset(buf, CANARY, sizeof buf);
    memset(buf + PAD, 0, 3 * W * H);
    fig_image img = {W, H, buf + PAD};
    const uint8_t red[3] = {255, 0, 0};
    const int64_t xs[] = {INT64_MIN, -1000, -13, -6, -1, 0, 5, W - 3, W, INT64_MAX};
    const int64_t ys[] = {INT64_MIN, -20, -9, -1, 0, 4, H - 2, H, INT64_MAX};
    for (uint32_t scale = 1; scale <= 3; ++scale)
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; ++i)
            for (size_t j = 0; j < sizeof ys / sizeof ys[0]; ++j)
                fig_draw_text(&img, xs[i], ys[j], "Wg|\x01~\x7f", scale, red);
    for (size_t k = 0; k < PAD; ++k) {
        ck_assert_int_eq(buf[k], CANARY);
        ck_assert_int_eq(buf[PAD + 3 * W * H + k], CANARY);
    }
    ck_assert_int_eq(buf[PAD], 255); /* text at (0, 0) set the first pixel ('W') */
    ck_assert_int_eq(fig_text_width("", 2), 0);
    ck_assert_int_eq(fig_text_width("ab", 1), FIG_ADVANCE + FIG_GLYPH_W);
    ck_assert_int_eq(fig_text_width("ab", 2), 2 * (FIG_ADVANCE + FIG_GLYPH_W));
}
END_TEST

START_TEST(tick_steps_are_nice)
{
    ck_assert_double_eq_tol(fig_tick_step(1.0, 5), 0.2, 1e-12);
    ck_assert_double_eq_tol(fig_tick_step(1.0, 4), 0.25, 1e-12);
    ck_assert_double_eq_tol(fig_tick_step(0.08, 5), 0.02, 1e-12);
    ck_assert_double_eq_tol(fig_tick_step(7.0, 5), 2.0, 1e-12);
    ck_assert_double_eq_tol(fig_tick_step(300.0, 4), 100.0, 1e-9);
    ck_assert_double_eq(fig_tick_step(0.0, 5), 0.0);
    ck_assert_double_eq(fig_tick_step(NAN, 5), 0.0);
    ck_assert_double_eq(fig_tick_step(1.0, 0), 0.0);
}
END_TEST

/* A 6 x 4 slice of a solid-body rotation about its centre. */
typedef struct rotation {
    float speed[24], vx[24], vy[24];
} rotation;

static void rotation_fill(rotation *r)
{
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 6; ++i) {
            const double x = (i + 0.5) / 6.0 * 1.5 - 0.75, y = (j + 0.5) / 4.0 - 0.5;
            r->vx[j * 6 + i] = (float)-y;
            r->vy[j * 6 + i] = (float)x;
            r->speed[j * 6 + i] = (float)hypot(x, y);
        }
}

static fig_slice_spec rotation_spec(const rotation *r)
{
    fig_slice_spec s = {.title = {"A test", NULL}, .x_label = "x", .y_label = "y",
                        .bar_label = "|u|", .top_label = "lid", .caption = {"caption", NULL},
                        .scalar = {6, 4, r->speed}, .vx = {6, 4, r->vx}, .vy = {6, 4, r->vy},
                        .vmin = 0.0, .vmax = 1.0, .x_extent = 1.5, .y_extent = 1.0,
                        .plot_px = 96};
    return s;
}

START_TEST(slice_figure_checks_its_spec)
{
    rotation r;
    rotation_fill(&r);
    char err[256];
    fig_slice_spec s = rotation_spec(&r);
    s.vmax = s.vmin;
    err[0] = '\0';
    ck_assert_int_eq(fig_write_slice("/nonexistent/x.png", &s, NULL, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "vmin") != NULL, "message: %s", err);
    s = rotation_spec(&r);
    s.vy.values = NULL;
    ck_assert_int_eq(fig_write_slice("/nonexistent/x.png", &s, NULL, NULL, err, sizeof err), -1);
    s = rotation_spec(&r);
    s.plot_px = 10;
    ck_assert_int_eq(fig_write_slice("/nonexistent/x.png", &s, NULL, NULL, err, sizeof err), -1);
    ck_assert_int_eq(fig_write_slice(NULL, &s, NULL, NULL, err, sizeof err), -1);
    ck_assert_int_eq(fig_write_slice("/nonexistent/x.png", NULL, NULL, NULL, NULL, 0), -1);
    s = rotation_spec(&r); /* a valid spec, an unwritable path */
    ck_assert_int_eq(fig_write_slice("/nonexistent/x.png", &s, NULL, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/x.png") != NULL, "message: %s", err);
}
END_TEST

START_TEST(slice_figure_is_written)
{
    rotation r;
    rotation_fill(&r);
    char path[] = "/tmp/acm-test-figure-XXXXXX", err[256] = "";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const fig_slice_spec s = rotation_spec(&r);
    uint32_t w = 0, h = 0;
    const int rc = fig_write_slice(path, &s, &w, &h, err, sizeof err);
    FILE *fp = fopen(path, "rb");
    long size = -1;
    if (fp != NULL && fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    if (fp != NULL)
        fclose(fp);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_gt(w, 96); /* the plot is 96 x 64, with margins around it */
    ck_assert_uint_gt(h, 64);
    ck_assert_int_gt(size, 100);
}
END_TEST

TEST_SUITE(figure_suite)
{
    Suite *s = suite_create("figure");
    TCase *tc = acm_tcase("figure", 10);
    tcase_add_test(tc, font_has_a_glyph_for_every_printable_character);
    tcase_add_test(tc, upsampling_reproduces_a_linear_field);
    tcase_add_test(tc, upsampling_checks_its_arguments);
    tcase_add_test(tc, text_is_clipped_at_the_image_edges);
    tcase_add_test(tc, tick_steps_are_nice);
    tcase_add_test(tc, slice_figure_checks_its_spec);
    tcase_add_test(tc, slice_figure_is_written);
    suite_add_tcase(s, tc);
    return s;
}
