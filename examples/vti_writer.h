/*
 * libacmlbm examples -- a small writer for VTK ImageData (.vti) files.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Writes point data on a uniform grid in the VTK XML format with raw binary
 * appended data (header_type UInt64), which ParaView and VisIt load directly.
 * The point ordering is VTK's (x fastest), which is also libacmlbm's field
 * ordering, so arrays read with acm_domain_get_field() can be passed as they
 * are.
 */
#ifndef ACMLBM_EXAMPLES_VTI_WRITER_H
#define ACMLBM_EXAMPLES_VTI_WRITER_H

#include <stddef.h> /* size_t */

/** Geometry of the grid: points, position of point (0,0,0), point spacing. */
typedef struct vti_grid {
    int dims[3];
    double origin[3];
    double spacing[3];
} vti_grid;

/** One point-data array of Float32 values, @p components per point. */
typedef struct vti_field {
    const char *name; /* plain name: no XML special characters */
    int components;   /* 1 (scalar) or 3 (vector) */
    const float *data;
} vti_field;

/**
 * Write @p count fields on @p grid to @p path.
 *
 * @return 0 on success; -1 on failure with errno set (EINVAL for a bad grid
 *         or field, or the error of the failing file operation)
 */
int vti_write(const char *path, const vti_grid *grid, const vti_field *fields, size_t count);

#endif /* ACMLBM_EXAMPLES_VTI_WRITER_H */
