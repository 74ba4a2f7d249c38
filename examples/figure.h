/*
 * libacmlbm examples -- figures of a 2-D slice of a flow: the scalar field
 * smoothly upsampled and coloured on viridis, streamlines of the in-plane
 * velocity, axes with ticks, a labelled colour bar and a title, all drawn
 * into an RGB buffer with a small built-in bitmap font (figure_font.c) and
 * written as PNG through png_writer.
 *
 * Grids hold cell-centred samples: sample (i, j) of an nx x ny grid sits at
 * ((i + 1/2) / nx, (j + 1/2) / ny) of the unit square, row j = 0 at the
 * bottom. Between the outermost sample and the edge of the square, the
 * samplers extrapolate linearly, so a linear field is reproduced everywhere.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_FIGURE_H
#define ACMLBM_EXAMPLES_FIGURE_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint32_t, int64_t */

/* ---- font ------------------------------------------------------------------------- */

#define FIG_FIRST_CHAR 32 /* space: the first character with a glyph */
#define FIG_LAST_CHAR 126 /* tilde: the last */
#define FIG_GLYPH_W 5     /* columns of a glyph */
#define FIG_GLYPH_H 9     /* rows: 7 above the baseline, 2 of descenders */
#define FIG_ADVANCE 6     /* pen advance per character at scale 1, pixels */
#define FIG_LINE 11       /* line height at scale 1, pixels */

/**
 * The glyph of character @p c: FIG_GLYPH_H rows, top to bottom, bit 4 the
 * leftmost column. NULL outside FIG_FIRST_CHAR..FIG_LAST_CHAR.
 */
const uint8_t *fig_glyph(int c);

/* ---- images and text ------------------------------------------------------------ */

/** An 8-bit RGB image, rows top to bottom, 3 bytes per pixel. */
typedef struct fig_image {
    uint32_t width, height;
    uint8_t *rgb;
} fig_image;

/**
 * Allocate a @p width x @p height image filled with @p background.
 * @return 0, or -1 for a zero or too large size or no memory (*img untouched)
 */
int fig_image_create(fig_image *img, uint32_t width, uint32_t height,
                     const uint8_t background[3]);

/** Free the pixels of an image made by fig_image_create(); NULL is a no-op. */
void fig_image_destroy(fig_image *img);

/** Width in pixels of @p text drawn at @p scale (its last column included). */
uint32_t fig_text_width(const char *text, uint32_t scale);

/**
 * Draw @p text with its top-left corner at pixel (@p x, @p y), each font
 * pixel a @p scale x @p scale block. Characters without a glyph are drawn as
 * '?'; whatever falls outside the image is clipped.
 */
void fig_draw_text(fig_image *img, int64_t x, int64_t y, const char *text, uint32_t scale,
                   const uint8_t rgb[3]);

/* ---- sampling -------------------------------------------------------------------- */

/** nx x ny cell-centred samples, row-major, row 0 at the bottom. */
typedef struct fig_grid {
    uint32_t nx, ny;
    const float *values;
} fig_grid;

typedef enum fig_interp {
    FIG_BILINEAR, /* continuous, no overshoot */
    FIG_BICUBIC   /* Catmull-Rom: continuous slopes too, may overshoot a little */
} fig_interp;

/**
 * The field at (@p x, @p y) of the unit square (clamped to it).
 * @return the value; 0 for an invalid grid
 */
double fig_grid_sample(const fig_grid *grid, double x, double y, fig_interp mode);

/**
 * Resample @p grid onto a @p width x @p height image of the unit square
 * (@p dst row-major, row 0 at the TOP, pixel centres at ((px + 1/2) / width,
 * 1 - (py + 1/2) / height)).
 * @return 0, or -1 for an invalid argument
 */
int fig_upsample(float *dst, uint32_t width, uint32_t height, const fig_grid *grid,
                 fig_interp mode);

/**
 * A "nice" tick spacing (1, 2, 2.5 or 5 times a power of ten) that cuts
 * @p range into at most about @p target intervals; 0 for invalid input.
 */
double fig_tick_step(double range, int target);

/* ---- the slice figure ----------------------------------------------------------- */

/** What fig_write_slice() draws. Text is printable ASCII. */
typedef struct fig_slice_spec {
    const char *title[2];  /* up to two title lines; NULL for none */
    const char *x_label;   /* under the x axis, e.g. "x/N" */
    const char *y_label;   /* left of the y axis, e.g. "y/N" */
    const char *bar_label; /* above the colour bar: the quantity and its unit */
    const char *top_label; /* NULL, or a moving top wall: a thick edge, an arrow to
                              the right (+x) and this text above it */
    const char *caption[2]; /* up to two lines under the figure; NULL for none */
    fig_grid scalar;       /* the coloured field */
    fig_grid vx, vy;       /* in-plane velocity for streamlines; values NULL: none */
    double vmin, vmax;     /* values at the two ends of the colour map */
    double x_extent;       /* the axes run from 0 to x_extent and 0 to y_extent */
    double y_extent;
    uint32_t plot_px;      /* the longer side of the plot, pixels (64 to 4096) */
} fig_slice_spec;

/**
 * Draw the figure and write it as an RGB PNG to @p path. When
 * @p width_out / @p height_out are not NULL they receive the image size.
 * @return 0; -1 with a message in @p err for an invalid spec, no memory or
 *         a failed write
 */
int fig_write_slice(const char *path, const fig_slice_spec *spec, uint32_t *width_out,
                    uint32_t *height_out, char *err, size_t err_size);

#endif /* ACMLBM_EXAMPLES_FIGURE_H */
