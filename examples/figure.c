/*
 * libacmlbm examples -- figures of a 2-D slice (see figure.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * The figure is built in layers on one RGB image: the upsampled field, the
 * streamlines (anti-aliased through a coverage mask, then blended in one
 * pass), the frame, ticks and labels, the colour bar, the title. Streamlines
 * follow Jobard & Lefer (1997): seeds on a coarse-to-fine grid, each line
 * traced both ways with RK4 in arc length until it comes within d_test of
 * another line (or of itself, one turn later), leaves the plot or stalls;
 * a seed closer than d_sep to a line is skipped.
 */
#include "figure.h"

#include <math.h>   /* floor, ceil, sqrt, hypot, log10, pow, isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, realloc, free */
#include <string.h> /* memcpy, strlen */

#include "png_writer.h"

/* ---- images and text ------------------------------------------------------------ */

#define FIG_MAX_SIDE 16384u /* largest image side accepted */
#define FIG_MAX_SCALE 64u   /* largest text scale */

int fig_image_create(fig_image *img, uint32_t width, uint32_t height,
                     const uint8_t background[3])
{
    if (img == NULL || background == NULL || width < 1 || height < 1 ||
        width > FIG_MAX_SIDE || height > FIG_MAX_SIDE)
        return -1;
    const size_t n = (size_t)width * height;
    uint8_t *rgb = malloc(3 * n);
    if (rgb == NULL)
        return -1;
    for (size_t k = 0; k < n; ++k)
        memcpy(rgb + 3 * k, background, 3);
    img->width = width;
    img->height = height;
    img->rgb = rgb;
    return 0;
}

void fig_image_destroy(fig_image *img)
{
    if (img != NULL) {
        free(img->rgb);
        *img = (fig_image){0, 0, NULL};
    }
}

/* Fill the part of [x, x + w) x [y, y + h) that lies inside the image. */
static void fill_rect(fig_image *img, int64_t x, int64_t y, int64_t w, int64_t h,
                      const uint8_t rgb[3])
{
    if (w <= 0 || h <= 0 || x >= (int64_t)img->width || y >= (int64_t)img->height ||
        x + w <= 0 || y + h <= 0)
        return;
    const int64_t x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    const int64_t x1 = x + w > (int64_t)img->width ? (int64_t)img->width : x + w;
    const int64_t y1 = y + h > (int64_t)img->height ? (int64_t)img->height : y + h;
    for (int64_t r = y0; r < y1; ++r)
        for (int64_t c = x0; c < x1; ++c)
            memcpy(img->rgb + 3 * ((size_t)r * img->width + (size_t)c), rgb, 3);
}

uint32_t fig_text_width(const char *text, uint32_t scale)
{
    if (text == NULL || text[0] == '\0' || scale < 1 || scale > FIG_MAX_SCALE)
        return 0;
    const size_t n = strlen(text);
    if (n > FIG_MAX_SIDE)
        return UINT32_MAX;
    return (uint32_t)((n - 1) * FIG_ADVANCE + FIG_GLYPH_W) * scale;
}

static void draw_glyph(fig_image *img, int64_t x, int64_t y, const uint8_t *rows, int64_t s,
                       const uint8_t rgb[3])
{
    for (int r = 0; r < FIG_GLYPH_H; ++r)
        for (int c = 0; c < FIG_GLYPH_W; ++c)
            if (rows[r] >> (FIG_GLYPH_W - 1 - c) & 1u)
                fill_rect(img, x + c * s, y + r * s, s, s, rgb);
}

void fig_draw_text(fig_image *img, int64_t x, int64_t y, const char *text, uint32_t scale,
                   const uint8_t rgb[3])
{
    if (img == NULL || img->rgb == NULL || text == NULL || rgb == NULL || scale < 1 ||
        scale > FIG_MAX_SCALE)
        return;
    const int64_t s = scale, advance = FIG_ADVANCE * s;
    /* far outside: nothing to draw, and no overflow of the pen position */
    if (y >= (int64_t)img->height || y <= -(int64_t)FIG_GLYPH_H * s || x > INT64_MAX / 2 ||
        x < INT64_MIN / 2)
        return;
    for (const char *p = text; *p != '\0' && x < (int64_t)img->width; ++p, x += advance) {
        if (x + advance <= 0)
            continue;
        const uint8_t *rows = fig_glyph((unsigned char)*p);
        draw_glyph(img, x, y, rows != NULL ? rows : fig_glyph('?'), s, rgb);
    }
}

/* ---- sampling -------------------------------------------------------------------- */

static int grid_ok(const fig_grid *g)
{
    return g != NULL && g->values != NULL && g->nx >= 1 && g->ny >= 1 &&
           g->nx <= FIG_MAX_SIDE && g->ny <= FIG_MAX_SIDE;
}

/* The pair of samples (b, b + 1) around position s of an axis of n samples,
 * and the weight w of b + 1; outside [0, n - 1] w leaves [0, 1] and the
 * pair's line extrapolates. */
static uint32_t axis_pair(double s, uint32_t n, double *w)
{
    if (n < 2) {
        *w = 0.0;
        return 0;
    }
    double b = floor(s);
    if (b < 0.0)
        b = 0.0;
    if (b > (double)(n - 2))
        b = (double)(n - 2);
    *w = s - b;
    return (uint32_t)b;
}

/* Bilinear interpolation at sample coordinates (sx, sy): sample (i, j) sits
 * at (i, j); linear extrapolation outside. */
static double sample_linear(const fig_grid *g, double sx, double sy)
{
    double wx, wy;
    const uint32_t i = axis_pair(sx, g->nx, &wx), j = axis_pair(sy, g->ny, &wy);
    const uint32_t i1 = g->nx > 1 ? i + 1 : i, j1 = g->ny > 1 ? j + 1 : j;
    const float *r0 = g->values + (size_t)j * g->nx, *r1 = g->values + (size_t)j1 * g->nx;
    const double a = r0[i] + wx * ((double)r0[i1] - r0[i]);
    const double b = r1[i] + wx * ((double)r1[i1] - r1[i]);
    return a + wy * (b - a);
}

/* Catmull-Rom weights of the taps at -1, 0, 1, 2 for a position t in [0, 1). */
static void catmull_rom(double t, double w[4])
{
    const double t2 = t * t, t3 = t2 * t;
    w[0] = 0.5 * (-t3 + 2.0 * t2 - t);
    w[1] = 0.5 * (3.0 * t3 - 5.0 * t2 + 2.0);
    w[2] = 0.5 * (-3.0 * t3 + 4.0 * t2 + t);
    w[3] = 0.5 * (t3 - t2);
}

/* Bicubic interpolation; taps outside the grid are the linear extrapolation. */
static double sample_cubic(const fig_grid *g, double sx, double sy)
{
    const double fx = floor(sx), fy = floor(sy);
    double wx[4], wy[4], sum = 0.0;
    catmull_rom(sx - fx, wx);
    catmull_rom(sy - fy, wy);
    for (int b = 0; b < 4; ++b) {
        double row = 0.0;
        for (int a = 0; a < 4; ++a)
            row += wx[a] * sample_linear(g, fx - 1.0 + a, fy - 1.0 + b);
        sum += wy[b] * row;
    }
    return sum;
}

static double clamp01(double v)
{
    return v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0; /* NaN -> 0 */
}

double fig_grid_sample(const fig_grid *grid, double x, double y, fig_interp mode)
{
    if (!grid_ok(grid))
        return 0.0;
    const double sx = clamp01(x) * grid->nx - 0.5, sy = clamp01(y) * grid->ny - 0.5;
    return mode == FIG_BICUBIC ? sample_cubic(grid, sx, sy) : sample_linear(grid, sx, sy);
}

int fig_upsample(float *dst, uint32_t width, uint32_t height, const fig_grid *grid,
                 fig_interp mode)
{
    if (dst == NULL || width < 1 || height < 1 || width > FIG_MAX_SIDE ||
        height > FIG_MAX_SIDE || !grid_ok(grid))
        return -1;
    for (uint32_t py = 0; py < height; ++py) {
        const double y = 1.0 - (py + 0.5) / height;
        for (uint32_t px = 0; px < width; ++px)
            dst[(size_t)py * width + px] =
                (float)fig_grid_sample(grid, (px + 0.5) / width, y, mode);
    }
    return 0;
}

/* ---- ticks ------------------------------------------------------------------------ */

#define TICK_TARGET 5 /* about this many tick intervals per axis */

double fig_tick_step(double range, int target)
{
    static const double nice[] = {1.0, 2.0, 2.5, 5.0, 10.0};
    if (!(range > 0.0) || !isfinite(range) || target < 1)
        return 0.0;
    const double raw = range / target, decade = pow(10.0, floor(log10(raw)));
    for (size_t k = 0; k < sizeof nice / sizeof nice[0]; ++k)
        if (nice[k] * decade >= raw * (1.0 - 1e-9))
            return nice[k] * decade;
    return 10.0 * decade;
}

/* Digits after the point that show every multiple of step exactly. */
static int tick_decimals(double step)
{
    for (int d = 0; d < 9; ++d) {
        const double m = step * pow(10.0, d);
        if (fabs(m - floor(m + 0.5)) < 1e-6 * m)
            return d;
    }
    return 9;
}

/* The ticks of an axis lo..hi: count values (first + i) * step. */
typedef struct ticks {
    double first, step;
    int count, decimals;
} ticks;

static ticks make_ticks(double lo, double hi)
{
    ticks t = {0.0, fig_tick_step(hi - lo, TICK_TARGET), 0, 0};
    if (!(t.step > 0.0) || !isfinite(lo / t.step) || !isfinite(hi / t.step))
        return t;
    t.first = ceil(lo / t.step - 1e-9);
    const double last = floor(hi / t.step + 1e-9);
    t.count = last >= t.first ? (int)(last - t.first) + 1 : 0;
    t.count = t.count > 4 * TICK_TARGET ? 4 * TICK_TARGET : t.count;
    t.decimals = tick_decimals(t.step);
    return t;
}

/* Label of tick i; + 0.0 prints -0 as 0. */
static void tick_label(const ticks *t, int i, char *buf, size_t size)
{
    snprintf(buf, size, "%.*f", t->decimals, (t->first + i) * t->step + 0.0);
}

/* ---- canvas: the image and a coverage mask for anti-aliased shapes ------------- */

typedef struct canvas {
    fig_image img;
    float *mask;                /* coverage in [0, 1] per pixel */
    int64_t cx0, cy0, cx1, cy1; /* mask shapes are clipped to [cx0, cx1) x [cy0, cy1) */
} canvas;

static const uint8_t ink[3] = {25, 25, 25};
static const uint8_t white[3] = {255, 255, 255};

static int canvas_create(canvas *c, uint32_t width, uint32_t height)
{
    c->mask = NULL;
    if (fig_image_create(&c->img, width, height, white) != 0)
        return -1;
    c->mask = calloc((size_t)width * height, sizeof *c->mask);
    if (c->mask == NULL) {
        fig_image_destroy(&c->img);
        return -1;
    }
    c->cx0 = c->cy0 = 0;
    c->cx1 = width;
    c->cy1 = height;
    return 0;
}

static void canvas_destroy(canvas *c)
{
    fig_image_destroy(&c->img);
    free(c->mask);
    c->mask = NULL;
}

/* The clipped pixel range [*a, *b) that covers [lo, hi]. */
static int clip_span(double lo, double hi, int64_t min, int64_t max, int64_t *a, int64_t *b)
{
    *a = lo > (double)min ? (int64_t)floor(lo) : min;
    *b = hi < (double)(max - 1) ? (int64_t)ceil(hi) + 1 : max;
    return *a < *b;
}

/* Anti-aliased segment of the given width, image coordinates (pixel (X, Y)
 * has its centre at (X + 1/2, Y + 1/2)). */
static void mask_segment(canvas *c, double ax, double ay, double bx, double by, double width)
{
    const double r = 0.5 * width + 0.5, dx = bx - ax, dy = by - ay,
                 len2 = dx * dx + dy * dy;
    int64_t x0, x1, y0, y1;
    if (!clip_span(fmin(ax, bx) - r, fmax(ax, bx) + r, c->cx0, c->cx1, &x0, &x1) ||
        !clip_span(fmin(ay, by) - r, fmax(ay, by) + r, c->cy0, c->cy1, &y0, &y1))
        return;
    for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x) {
            const double px = x + 0.5 - ax, py = y + 0.5 - ay;
            const double t = len2 > 0.0 ? clamp01((px * dx + py * dy) / len2) : 0.0;
            const double cov = clamp01(r - hypot(px - t * dx, py - t * dy));
            float *m = c->mask + (size_t)y * c->img.width + (size_t)x;
            if (cov > *m)
                *m = (float)cov;
        }
}

/* Anti-aliased filled triangle (x0, y0, x1, y1, x2, y2), image coordinates. */
static void mask_triangle(canvas *c, const double v[6])
{
    const double area = (v[2] - v[0]) * (v[5] - v[1]) - (v[3] - v[1]) * (v[4] - v[0]);
    if (area == 0.0)
        return;
    const double sign = area > 0.0 ? 1.0 : -1.0;
    int64_t x0, x1, y0, y1;
    if (!clip_span(fmin(v[0], fmin(v[2], v[4])) - 1.0, fmax(v[0], fmax(v[2], v[4])) + 1.0,
                   c->cx0, c->cx1, &x0, &x1) ||
        !clip_span(fmin(v[1], fmin(v[3], v[5])) - 1.0, fmax(v[1], fmax(v[3], v[5])) + 1.0,
                   c->cy0, c->cy1, &y0, &y1))
        return;
    for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x) {
            double inside = INFINITY; /* distance to the nearest edge, > 0 inside */
            for (int e = 0; e < 3; ++e) {
                const double *a = v + 2 * e, *b = v + 2 * ((e + 1) % 3);
                const double ex = b[0] - a[0], ey = b[1] - a[1];
                const double d = sign * (ex * (y + 0.5 - a[1]) - ey * (x + 0.5 - a[0])) /
                                 hypot(ex, ey);
                inside = fmin(inside, d);
            }
            const double cov = clamp01(inside + 0.5);
            float *m = c->mask + (size_t)y * c->img.width + (size_t)x;
            if (cov > *m)
                *m = (float)cov;
        }
}

/* An arrowhead of length len with its centre at (x, y), pointing along the
 * unit vector (dx, dy), image coordinates. */
static void mask_arrowhead(canvas *c, double x, double y, double dx, double dy, double len)
{
    const double half = 0.42 * len, back = 0.45 * len, tip = 0.55 * len;
    const double v[6] = {x + tip * dx,
                         y + tip * dy,
                         x - back * dx - half * dy,
                         y - back * dy + half * dx,
                         x - back * dx + half * dy,
                         y - back * dy - half * dx};
    mask_triangle(c, v);
}

/* Blend rgb over the image where the mask is set, with the given opacity,
 * and clear the mask. */
static void mask_flush(canvas *c, const uint8_t rgb[3], double opacity)
{
    const size_t n = (size_t)c->img.width * c->img.height;
    for (size_t k = 0; k < n; ++k) {
        const double a = clamp01(c->mask[k] * opacity);
        c->mask[k] = 0.0f;
        if (a <= 0.0)
            continue;
        uint8_t *p = c->img.rgb + 3 * k;
        for (int ch = 0; ch < 3; ++ch)
            p[ch] = (uint8_t)(p[ch] + (rgb[ch] - p[ch]) * a + 0.5);
    }
}

/* ---- streamlines ------------------------------------------------------------------ */

/* A traced point, kept in a bucket grid of cells d_sep wide. */
typedef struct sl_point {
    float x, y;
    int32_t line; /* the line it belongs to */
    int32_t step; /* its step along that line, negative when traced backwards */
    int32_t next; /* next point of the same bucket, -1 at the end */
} sl_point;

typedef struct streamlines {
    const fig_grid *vx, *vy;
    double w, h;           /* the plot, pixels; x right, y up */
    double x0, x1, y0, y1; /* lines stay between the outermost samples */
    double dsep, dtest;    /* seed and stop distances, pixels */
    double step;           /* RK4 step, pixels of arc length */
    double slow;           /* an in-plane speed below this is a stagnation point */
    double min_len;        /* shorter lines are dropped, pixels */
    int32_t self_gap;      /* points of the same line fewer steps away never stop it */
    int32_t max_steps;     /* per direction */
    uint32_t gx, gy;       /* buckets */
    int32_t *head;         /* first point of each bucket, -1 when empty */
    sl_point *pts;
    size_t count, cap;
    double *path;          /* the line being traced: x, y pairs */
    size_t path_len, path_cap;
} streamlines;

/* Unit direction of the in-plane velocity at (x, y); -1 where it stalls. */
static int sl_direction(const streamlines *s, double x, double y, double d[2])
{
    const double u = fig_grid_sample(s->vx, x / s->w, y / s->h, FIG_BILINEAR);
    const double v = fig_grid_sample(s->vy, x / s->w, y / s->h, FIG_BILINEAR);
    const double speed = hypot(u, v);
    if (!(speed > s->slow))
        return -1;
    d[0] = u / speed;
    d[1] = v / speed;
    return 0;
}

/* One classical Runge-Kutta step of dp/ds = sign * direction(p). */
static int sl_rk4(const streamlines *s, double p[2], double sign)
{
    const double h = sign * s->step;
    double k1[2], k2[2], k3[2], k4[2];
    if (sl_direction(s, p[0], p[1], k1) != 0 ||
        sl_direction(s, p[0] + 0.5 * h * k1[0], p[1] + 0.5 * h * k1[1], k2) != 0 ||
        sl_direction(s, p[0] + 0.5 * h * k2[0], p[1] + 0.5 * h * k2[1], k3) != 0 ||
        sl_direction(s, p[0] + h * k3[0], p[1] + h * k3[1], k4) != 0)
        return -1;
    p[0] += h * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]) / 6.0;
    p[1] += h * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]) / 6.0;
    return 0;
}

static uint32_t sl_cell(double v, double cell, uint32_t n)
{
    const double k = floor(v / cell);
    return k < 0.0 ? 0 : (k >= n ? n - 1 : (uint32_t)k);
}

/* Whether a point closer than dist to (x, y) belongs to another line, or to
 * the same line more than self_gap steps away (line -1: any point counts). */
static int sl_blocked(const streamlines *s, double x, double y, double dist, int32_t line,
                      int32_t step)
{
    const uint32_t cx = sl_cell(x, s->dsep, s->gx), cy = sl_cell(y, s->dsep, s->gy);
    for (uint32_t j = cy > 0 ? cy - 1 : 0; j <= cy + 1 && j < s->gy; ++j)
        for (uint32_t i = cx > 0 ? cx - 1 : 0; i <= cx + 1 && i < s->gx; ++i)
            for (int32_t k = s->head[(size_t)j * s->gx + i]; k >= 0; k = s->pts[k].next) {
                const sl_point *p = &s->pts[k];
                if (hypot(p->x - x, p->y - y) < dist &&
                    (p->line != line || abs(p->step - step) > s->self_gap))
                    return 1;
            }
    return 0;
}

static size_t sl_bucket(const streamlines *s, double x, double y)
{
    return (size_t)sl_cell(y, s->dsep, s->gy) * s->gx + sl_cell(x, s->dsep, s->gx);
}

/* buf (of *cap elements of elem bytes) grown to hold at least need; NULL
 * without memory, buf and *cap then unchanged. */
static void *grow(void *buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return buf;
    size_t n = *cap > 0 ? 2 * *cap : 1024;
    while (n < need)
        n *= 2;
    void *p = realloc(buf, n * elem);
    if (p != NULL)
        *cap = n;
    return p;
}

/* Record a point of a line in the bucket grid and on the current path. */
static int sl_add(streamlines *s, double x, double y, int32_t line, int32_t step)
{
    if (s->count >= INT32_MAX)
        return -1;
    sl_point *pts = grow(s->pts, &s->cap, s->count + 1, sizeof *s->pts);
    if (pts == NULL)
        return -1;
    s->pts = pts;
    double *path = grow(s->path, &s->path_cap, 2 * (s->path_len + 1), sizeof *s->path);
    if (path == NULL)
        return -1;
    s->path = path;
    const size_t b = sl_bucket(s, x, y);
    s->pts[s->count] = (sl_point){(float)x, (float)y, line, step, s->head[b]};
    s->head[b] = (int32_t)s->count++;
    s->path[2 * s->path_len] = x;
    s->path[2 * s->path_len + 1] = y;
    s->path_len++;
    return 0;
}

/* Remove the points added after the first `keep` (last in, first out, so each
 * bucket's list gets its old head back). */
static void sl_pop(streamlines *s, size_t keep)
{
    while (s->count > keep) {
        const sl_point *p = &s->pts[--s->count];
        s->head[sl_bucket(s, p->x, p->y)] = p->next;
    }
}

/* Follow line `line` from (x, y) in direction sign (+1 or -1). */
static int sl_trace(streamlines *s, double x, double y, int32_t line, int sign)
{
    double p[2] = {x, y};
    for (int32_t k = 1; k <= s->max_steps; ++k) {
        if (sl_rk4(s, p, sign) != 0 ||
            !(p[0] >= s->x0 && p[0] <= s->x1 && p[1] >= s->y0 && p[1] <= s->y1) ||
            sl_blocked(s, p[0], p[1], s->dtest, line, sign * k))
            break;
        if (sl_add(s, p[0], p[1], line, sign * k) != 0)
            return -1;
    }
    return 0;
}

static void sl_reverse_path(streamlines *s)
{
    for (size_t a = 0, b = s->path_len - 1; a < b; ++a, --b)
        for (int c = 0; c < 2; ++c) {
            const double t = s->path[2 * a + c];
            s->path[2 * a + c] = s->path[2 * b + c];
            s->path[2 * b + c] = t;
        }
}

/* Trace the line through seed (x, y) into s->path, backwards then forwards.
 * Returns 1 when the line is kept, 0 when the seed is skipped, -1 without
 * memory. */
static int sl_seed(streamlines *s, double x, double y, int32_t line)
{
    double d[2];
    if (sl_blocked(s, x, y, s->dsep, -1, 0) || sl_direction(s, x, y, d) != 0)
        return 0;
    const size_t keep = s->count;
    s->path_len = 0;
    if (sl_add(s, x, y, line, 0) != 0 || sl_trace(s, x, y, line, -1) != 0)
        return -1;
    sl_reverse_path(s);
    if (sl_trace(s, x, y, line, +1) != 0)
        return -1;
    if ((double)(s->path_len - 1) * s->step < s->min_len) {
        sl_pop(s, keep);
        return 0;
    }
    return 1;
}

/* Draw s->path into the mask: the polyline (every 4th point: RK4 at half a
 * pixel is smooth) and arrowheads spaced about `spacing` pixels apart. */
static void sl_draw(canvas *c, const streamlines *s, int64_t px, int64_t py, double spacing)
{
    const double *p = s->path;
    const size_t n = s->path_len, stride = 4;
#define SL_X(k) ((double)px + p[2 * (k)])
#define SL_Y(k) ((double)py + s->h - p[2 * (k) + 1])
    for (size_t k = 0; k + 1 < n; k += stride) {
        const size_t e = k + stride < n ? k + stride : n - 1;
        mask_segment(c, SL_X(k), SL_Y(k), SL_X(e), SL_Y(e), 1.3);
    }
    const double len = (double)(n - 1) * s->step;
    const size_t arrows = len > spacing ? (size_t)(len / spacing) : 1;
    for (size_t a = 0; a < arrows; ++a) {
        const size_t k = (size_t)((a + 0.5) * (double)(n - 1) / (double)arrows);
        const size_t k0 = k >= 3 ? k - 3 : 0, k1 = k + 3 < n ? k + 3 : n - 1;
        const double dx = SL_X(k1) - SL_X(k0), dy = SL_Y(k1) - SL_Y(k0), dl = hypot(dx, dy);
        if (dl > 0.0)
            mask_arrowhead(c, SL_X(k), SL_Y(k), dx / dl, dy / dl, 10.0);
    }
#undef SL_X
#undef SL_Y
}

/* The largest in-plane speed of the velocity grids. */
static double max_speed(const fig_grid *vx, const fig_grid *vy)
{
    double m = 0.0;
    for (size_t k = 0; k < (size_t)vx->nx * vx->ny && k < (size_t)vy->nx * vy->ny; ++k) {
        const double v = hypot(vx->values[k], vy->values[k]);
        if (v > m)
            m = v;
    }
    return m;
}

static void sl_free(streamlines *s)
{
    free(s->head);
    free(s->pts);
    free(s->path);
}

/* Seed, trace and draw evenly spaced streamlines over the w x h plot whose
 * top-left pixel is (px, py). */
static int draw_streamlines(canvas *c, const fig_grid *vx, const fig_grid *vy, int64_t px,
                            int64_t py, uint32_t w, uint32_t h)
{
    const double side = w > h ? w : h;
    streamlines s = {.vx = vx, .vy = vy, .w = w, .h = h, .dsep = 0.045 * side,
                     .dtest = 0.0225 * side, .step = 0.5, .min_len = 0.07 * side};
    s.slow = 1e-4 * max_speed(vx, vy);
    /* no streamlines where the velocity is extrapolated: near walls it is
     * slow and its direction is mostly noise */
    s.x0 = 0.5 * w / vx->nx;
    s.x1 = w - s.x0;
    s.y0 = 0.5 * h / vx->ny;
    s.y1 = h - s.y0;
    s.self_gap = (int32_t)ceil(2.5 * s.dtest / s.step);
    s.max_steps = (int32_t)(8.0 * (w + h) / s.step);
    s.gx = (uint32_t)ceil(w / s.dsep);
    s.gy = (uint32_t)ceil(h / s.dsep);
    if ((s.head = malloc((size_t)s.gx * s.gy * sizeof *s.head)) == NULL)
        return -1;
    memset(s.head, 0xff, (size_t)s.gx * s.gy * sizeof *s.head); /* all -1 */
    c->cx0 = px;
    c->cy0 = py;
    c->cx1 = px + w;
    c->cy1 = py + h;
    const double g = 0.5 * s.dsep; /* seed candidates, visited coarse to fine */
    const int32_t nx = (int32_t)(w / g), ny = (int32_t)(h / g);
    int32_t line = 0;
    int rc = 0;
    for (int32_t stride = 8; stride >= 1 && rc >= 0; stride /= 2)
        for (int32_t j = 0; j < ny && rc >= 0; j += stride)
            for (int32_t i = 0; i < nx && rc >= 0; i += stride)
                if ((rc = sl_seed(&s, (i + 0.5) * g, (j + 0.5) * g, line)) > 0) {
                    sl_draw(c, &s, px, py, 0.5 * side);
                    ++line;
                }
    sl_free(&s);
    c->cx0 = c->cy0 = 0;
    c->cx1 = c->img.width;
    c->cy1 = c->img.height;
    if (rc < 0)
        return -1;
    mask_flush(c, white, 0.85);
    return 0;
}

/* ---- layout ------------------------------------------------------------------------ */

#define TS 2                    /* text scale */
#define LINE_PX (FIG_LINE * TS) /* line height */
#define CAP_PX (7 * TS)         /* height of capitals and digits */
#define MARGIN 16
#define TICK 6
#define BAR_GAP 30
#define BAR_W 22

typedef struct layout {
    uint32_t width, height;     /* the image */
    int64_t px, py;             /* the plot's top-left pixel */
    uint32_t pw, ph;            /* the plot's size */
    int64_t bar_x;              /* the colour bar's left edge */
    int64_t title_y, label_y;   /* title lines; top label and colour bar label */
    int64_t xlabel_y, caption_y;
} layout;

static const char *text_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* Widest tick label of the axis lo..hi. */
static uint32_t tick_label_width(double lo, double hi)
{
    const ticks t = make_ticks(lo, hi);
    uint32_t w = 0;
    for (int i = 0; i < t.count; ++i) {
        char buf[64];
        tick_label(&t, i, buf, sizeof buf);
        const uint32_t tw = fig_text_width(buf, TS);
        w = tw > w ? tw : w;
    }
    return w;
}

static void make_layout(const fig_slice_spec *sp, layout *L)
{
    const double ratio = sp->y_extent / sp->x_extent;
    L->pw = ratio <= 1.0 ? sp->plot_px : (uint32_t)(sp->plot_px / ratio + 0.5);
    L->ph = ratio <= 1.0 ? (uint32_t)(sp->plot_px * ratio + 0.5) : sp->plot_px;
    const int ntitle = (sp->title[0] != NULL) + (sp->title[1] != NULL);
    L->title_y = MARGIN;
    L->label_y = L->title_y + ntitle * LINE_PX + 8;
    L->py = L->label_y + LINE_PX + 20; /* room for the lid arrow */
    const uint32_t ylw = fig_text_width(sp->y_label, TS);
    L->px = MARGIN + ylw + (ylw > 0 ? 12 : 0) + tick_label_width(0.0, sp->y_extent) + 4 + TICK;
    L->bar_x = L->px + L->pw + BAR_GAP;
    const int64_t ticks_right = L->bar_x + BAR_W + TICK + 4 + tick_label_width(sp->vmin, sp->vmax);
    const int64_t label_right = L->bar_x + fig_text_width(sp->bar_label, TS);
    int64_t right = (ticks_right > label_right ? ticks_right : label_right) + MARGIN;
    for (int k = 0; k < 2; ++k) { /* titles are centred over the plot, inside the image */
        const int64_t tw = fig_text_width(sp->title[k], TS);
        int64_t tx = L->px + L->pw / 2 - tw / 2;
        tx = tx < MARGIN ? MARGIN : tx;
        right = tx + tw + MARGIN > right ? tx + tw + MARGIN : right;
    }
    L->xlabel_y = L->py + L->ph + TICK + 4 + LINE_PX + 2;
    L->caption_y = L->xlabel_y + LINE_PX + 8;
    L->width = (uint32_t)right;
    const int ncaption = (sp->caption[0] != NULL) + (sp->caption[1] != NULL);
    L->height = (uint32_t)((ncaption > 0 ? L->caption_y + (ncaption - 1) * LINE_PX : L->xlabel_y) +
                           LINE_PX + MARGIN);
}

/* ---- figure parts ----------------------------------------------------------------- */

/* Left edge of text centred on column `centre`. */
static int64_t centred(int64_t centre, const char *text)
{
    return centre - (int64_t)fig_text_width(text, TS) / 2;
}

static int draw_field(canvas *c, const fig_slice_spec *sp, const layout *L)
{
    float *v = malloc((size_t)L->pw * L->ph * sizeof *v);
    if (v == NULL || fig_upsample(v, L->pw, L->ph, &sp->scalar, FIG_BICUBIC) != 0) {
        free(v);
        return -1;
    }
    const double range = sp->vmax - sp->vmin;
    for (uint32_t y = 0; y < L->ph; ++y)
        for (uint32_t x = 0; x < L->pw; ++x) {
            uint8_t *p = c->img.rgb + 3 * ((size_t)(L->py + y) * c->img.width +
                                           (size_t)(L->px + x));
            pngw_viridis((v[(size_t)y * L->pw + x] - sp->vmin) / range, p);
        }
    free(v);
    return 0;
}

/* A one-pixel frame just outside the rectangle [x, x + w) x [y, y + h). */
static void frame(fig_image *img, int64_t x, int64_t y, int64_t w, int64_t h)
{
    fill_rect(img, x - 1, y - 1, w + 2, 1, ink);
    fill_rect(img, x - 1, y + h, w + 2, 1, ink);
    fill_rect(img, x - 1, y, 1, h, ink);
    fill_rect(img, x + w, y, 1, h, ink);
}

/* Pixel of value f in [0, 1] along a framed span of n pixels starting at
 * start: 0 on the frame before it, 1 on the frame after it. */
static int64_t tick_pos(int64_t start, uint32_t n, double f)
{
    return start - 1 + (int64_t)floor((n + 1.0) * f + 0.5);
}

/* Where an axis's ticks and labels go: under the plot (x), left of it (y),
 * right of the colour bar. */
typedef enum axis_side { AXIS_BOTTOM, AXIS_LEFT, AXIS_BAR } axis_side;

/* Ticks and labels of the axis lo..hi on the given side. */
static void draw_ticks(canvas *c, const layout *L, axis_side side, double lo, double hi)
{
    const ticks t = make_ticks(lo, hi);
    for (int i = 0; i < t.count; ++i) {
        const double f = ((t.first + i) * t.step - lo) / (hi - lo);
        char buf[64];
        tick_label(&t, i, buf, sizeof buf);
        const int64_t tw = fig_text_width(buf, TS);
        if (side == AXIS_BOTTOM) {
            const int64_t x = tick_pos(L->px, L->pw, f), y = L->py + L->ph + 1;
            fill_rect(&c->img, x, y, 1, TICK, ink);
            fig_draw_text(&c->img, x - tw / 2, y + TICK + 4, buf, TS, ink);
        } else {
            const int64_t y = tick_pos(L->py, L->ph, 1.0 - f);
            const int64_t x = side == AXIS_LEFT ? L->px - 1 - TICK : L->bar_x + BAR_W + 1;
            fill_rect(&c->img, x, y, TICK, 1, ink);
            fig_draw_text(&c->img, side == AXIS_LEFT ? x - 4 - tw : x + TICK + 4, y - CAP_PX / 2,
                          buf, TS, ink);
        }
    }
}

static void draw_axes(canvas *c, const fig_slice_spec *sp, const layout *L)
{
    frame(&c->img, L->px, L->py, L->pw, L->ph);
    draw_ticks(c, L, AXIS_BOTTOM, 0.0, sp->x_extent);
    draw_ticks(c, L, AXIS_LEFT, 0.0, sp->y_extent);
    const char *xl = text_or_empty(sp->x_label), *yl = text_or_empty(sp->y_label);
    fig_draw_text(&c->img, centred(L->px + L->pw / 2, xl), L->xlabel_y, xl, TS, ink);
    fig_draw_text(&c->img, MARGIN, L->py + L->ph / 2 - CAP_PX / 2, yl, TS, ink);
}

static void draw_colour_bar(canvas *c, const fig_slice_spec *sp, const layout *L)
{
    for (uint32_t r = 0; r < L->ph; ++r) {
        uint8_t rgb[3];
        pngw_viridis(1.0 - (r + 0.5) / L->ph, rgb);
        fill_rect(&c->img, L->bar_x, L->py + r, BAR_W, 1, rgb);
    }
    frame(&c->img, L->bar_x, L->py, BAR_W, L->ph);
    draw_ticks(c, L, AXIS_BAR, sp->vmin, sp->vmax);
    fig_draw_text(&c->img, L->bar_x, L->label_y, text_or_empty(sp->bar_label), TS, ink);
}

/* The moving top wall: a thick top edge, an arrow to the right above it and
 * the label above the arrow. */
static void draw_lid(canvas *c, const fig_slice_spec *sp, const layout *L)
{
    if (sp->top_label == NULL)
        return;
    fill_rect(&c->img, L->px - 1, L->py - 4, L->pw + 2, 4, ink);
    const int64_t y = L->label_y + LINE_PX + 6, x0 = L->px + L->pw / 4,
                  x1 = L->px + 3 * (int64_t)L->pw / 4;
    fill_rect(&c->img, x0, y - 1, x1 - x0 - 8, 3, ink);
    mask_arrowhead(c, (double)x1 - 6.0, y + 0.5, 1.0, 0.0, 16.0);
    mask_flush(c, ink, 1.0);
    fig_draw_text(&c->img, centred(L->px + L->pw / 2, sp->top_label), L->label_y, sp->top_label,
                  TS, ink);
}

static void draw_texts(canvas *c, const fig_slice_spec *sp, const layout *L)
{
    int64_t y = L->title_y;
    for (int k = 0; k < 2; ++k)
        if (sp->title[k] != NULL) {
            const int64_t x = centred(L->px + L->pw / 2, sp->title[k]);
            fig_draw_text(&c->img, x < MARGIN ? MARGIN : x, y, sp->title[k], TS, ink);
            y += LINE_PX;
        }
    y = L->caption_y;
    for (int k = 0; k < 2; ++k)
        if (sp->caption[k] != NULL) {
            fig_draw_text(&c->img, MARGIN, y, sp->caption[k], TS, ink);
            y += LINE_PX;
        }
}

/* ---- the figure ---------------------------------------------------------------- */

static int fail(char *err, size_t err_size, const char *path, const char *why)
{
    if (err != NULL && err_size > 0)
        snprintf(err, err_size, "%s: %s", path != NULL ? path : "(no path)", why);
    return -1;
}

static const char *spec_problem(const fig_slice_spec *sp)
{
    if (!grid_ok(&sp->scalar))
        return "the scalar grid is empty, too large or has no values";
    if ((sp->vx.values == NULL) != (sp->vy.values == NULL))
        return "streamlines need both velocity grids, or neither";
    if (sp->vx.values != NULL && (!grid_ok(&sp->vx) || !grid_ok(&sp->vy)))
        return "a velocity grid is empty or too large";
    if (!isfinite(sp->vmin) || !isfinite(sp->vmax) || !(sp->vmin < sp->vmax))
        return "the colour range needs finite vmin < vmax";
    if (!(sp->x_extent > 0.0) || !(sp->y_extent > 0.0) || !isfinite(sp->x_extent) ||
        !isfinite(sp->y_extent) || sp->x_extent > 16.0 * sp->y_extent ||
        sp->y_extent > 16.0 * sp->x_extent)
        return "the extents must be positive and within a factor 16 of each other";
    if (sp->plot_px < 64 || sp->plot_px > 4096)
        return "plot_px must be in 64..4096";
    return NULL;
}

int fig_write_slice(const char *path, const fig_slice_spec *spec, uint32_t *width_out,
                    uint32_t *height_out, char *err, size_t err_size)
{
    if (path == NULL || spec == NULL)
        return fail(err, err_size, path, "no path or no figure");
    const char *problem = spec_problem(spec);
    if (problem != NULL)
        return fail(err, err_size, path, problem);
    layout L;
    make_layout(spec, &L);
    canvas c;
    if (canvas_create(&c, L.width, L.height) != 0)
        return fail(err, err_size, path, "out of memory for the image");
    int rc = draw_field(&c, spec, &L);
    if (rc == 0 && spec->vx.values != NULL)
        rc = draw_streamlines(&c, &spec->vx, &spec->vy, L.px, L.py, L.pw, L.ph);
    if (rc != 0) {
        canvas_destroy(&c);
        return fail(err, err_size, path, "out of memory while drawing");
    }
    draw_axes(&c, spec, &L);
    draw_colour_bar(&c, spec, &L);
    draw_lid(&c, spec, &L);
    draw_texts(&c, spec, &L);
    rc = pngw_write_rgb(path, c.img.width, c.img.height, c.img.rgb, err, err_size);
    canvas_destroy(&c);
    if (rc == 0 && width_out != NULL)
        *width_out = L.width;
    if (rc == 0 && height_out != NULL)
        *height_out = L.height;
    return rc;
}
