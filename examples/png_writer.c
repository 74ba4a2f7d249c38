/*
 * libacmlbm examples -- PNG writer (see png_writer.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * libpng's simplified API (png_image_write_to_file, libpng >= 1.6) reports
 * errors through png_image::message instead of longjmp, so no setjmp is
 * needed here.
 */
#include "png_writer.h"

#include <math.h>   /* isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memset */

#include <png.h>

/* viridis sampled at t = 0, 1/8, ..., 1 (matplotlib's values, rounded to 8
 * bits); linear interpolation between samples stays within a few levels of
 * the full 256-entry map. */
static const uint8_t viridis_samples[9][3] = {
    {68, 1, 84},    {72, 40, 120},  {62, 73, 137},  {49, 104, 142}, {38, 130, 142},
    {31, 158, 137}, {53, 183, 121}, {110, 206, 88}, {253, 231, 37},
};

void pngw_viridis(double t, uint8_t rgb[3])
{
    const int last = (int)(sizeof viridis_samples / sizeof viridis_samples[0]) - 1;
    if (!(t > 0.0)) /* also maps NaN to the low end */
        t = 0.0;
    if (t > 1.0)
        t = 1.0;
    double pos = t * last;
    int i = (int)pos;
    if (i >= last)
        i = last - 1;
    double w = pos - i;
    for (int c = 0; c < 3; ++c)
        rgb[c] = (uint8_t)(viridis_samples[i][c] * (1.0 - w) + viridis_samples[i + 1][c] * w +
                           0.5);
}

int pngw_write_rgb(const char *path, uint32_t width, uint32_t height, const uint8_t *rgb,
                   char *err, size_t err_size)
{
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_RGB;
    if (png_image_write_to_file(&image, path, 0, rgb, 0, NULL) == 0) {
        snprintf(err, err_size, "%s: %s", path, image.message);
        png_image_free(&image);
        return -1;
    }
    return 0;
}

/* Colour of one value of the slice. */
static void map_value(const pngw_scalar_map *map, float v, uint8_t rgb[3])
{
    double range = map->vmax - map->vmin;
    double t = range > 0.0 && isfinite(v) ? (v - map->vmin) / range : 0.0;
    pngw_viridis(t, rgb);
}

/* Fill the pixels of the scaled image: value (i, j) covers a scale x scale
 * block, and image rows run top to bottom while slice rows run bottom up. */
static void render(const float *values, uint32_t width, uint32_t height,
                   const pngw_scalar_map *map, uint8_t *rgb)
{
    const size_t s = map->scale, row_pixels = (size_t)width * s;
    for (size_t py = 0; py < (size_t)height * s; ++py) {
        const float *row = values + (size_t)(height - 1 - py / s) * width;
        uint8_t *out = rgb + py * row_pixels * 3;
        for (size_t px = 0; px < row_pixels; ++px)
            map_value(map, row[px / s], out + 3 * px);
    }
}

int pngw_write_scalar(const char *path, const float *values, uint32_t width, uint32_t height,
                      const pngw_scalar_map *map, char *err, size_t err_size)
{
    if (map->scale < 1 || width < 1 || height < 1 || width > 65535 / map->scale ||
        height > 65535 / map->scale) {
        snprintf(err, err_size, "%s: a %ux%u image scaled by %u is not supported", path,
                 (unsigned)width, (unsigned)height, (unsigned)map->scale);
        return -1;
    }
    const uint32_t w = width * map->scale, h = height * map->scale;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    if (rgb == NULL) {
        snprintf(err, err_size, "%s: out of memory for a %ux%u image", path, (unsigned)w,
                 (unsigned)h);
        return -1;
    }
    render(values, width, height, map, rgb);
    int rc = pngw_write_rgb(path, w, h, rgb, err, err_size);
    free(rgb);
    return rc;
}
