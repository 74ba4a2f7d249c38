/*
 * libacmlbm examples -- PNG output of colour images and scalar slices,
 * written with libpng's simplified API.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_PNG_WRITER_H
#define ACMLBM_EXAMPLES_PNG_WRITER_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t, uint32_t */

/** Colour of @p t in [0, 1] (clamped) on the viridis colour map. */
void pngw_viridis(double t, uint8_t rgb[3]);

/**
 * Write an 8-bit RGB image (rows top to bottom, 3 bytes per pixel).
 *
 * @return 0 on success; -1 on failure with a message in @p err
 */
int pngw_write_rgb(const char *path, uint32_t width, uint32_t height, const uint8_t *rgb,
                   char *err, size_t err_size);

/** How a scalar slice becomes an image. */
typedef struct pngw_scalar_map {
    double vmin, vmax; /* values mapped to the two ends of the colour map */
    uint32_t scale;    /* each value becomes a scale x scale block of pixels (>= 1) */
} pngw_scalar_map;

/**
 * Write a width x height array of scalars (row-major, row 0 at the bottom,
 * as a y axis pointing up) as a viridis image.
 *
 * @return 0 on success; -1 on failure with a message in @p err
 */
int pngw_write_scalar(const char *path, const float *values, uint32_t width, uint32_t height,
                      const pngw_scalar_map *map, char *err, size_t err_size);

#endif /* ACMLBM_EXAMPLES_PNG_WRITER_H */
