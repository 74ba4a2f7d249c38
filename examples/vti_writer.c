/*
 * libacmlbm examples -- VTK ImageData writer (see vti_writer.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * File layout:
 *   <VTKFile ... header_type="UInt64"> <ImageData> <Piece> <PointData>
 *     <DataArray ... format="appended" offset="O_k"/>   one per field
 *   <AppendedData encoding="raw">_  then, per field: a UInt64 byte count and
 *   the raw Float32 values, in host byte order (declared in byte_order).
 * O_k is the position of field k's byte count after the '_' marker.
 */
#include "vti_writer.h"

#include <errno.h>  /* errno, EINVAL, EIO */
#include <stdint.h> /* uint64_t */
#include <stdio.h>  /* FILE, fopen, fprintf, fwrite */

static const char *host_byte_order(void)
{
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe == 1 ? "LittleEndian" : "BigEndian";
}

static int grid_valid(const vti_grid *g)
{
    for (int a = 0; a < 3; ++a)
        if (g->dims[a] < 1)
            return 0;
    return 1;
}

static uint64_t point_count(const vti_grid *g)
{
    return (uint64_t)g->dims[0] * (uint64_t)g->dims[1] * (uint64_t)g->dims[2];
}

static uint64_t field_bytes(const vti_field *f, uint64_t points)
{
    return points * (uint64_t)f->components * sizeof(float);
}

static int fields_valid(const vti_field *fields, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        if (fields[k].name == NULL || fields[k].data == NULL || fields[k].components < 1)
            return 0;
    return 1;
}

static void write_data_arrays(FILE *fp, const vti_field *fields, size_t count, uint64_t points)
{
    uint64_t offset = 0;
    for (size_t k = 0; k < count; ++k) {
        fprintf(fp,
                "        <DataArray type=\"Float32\" Name=\"%s\" NumberOfComponents=\"%d\" "
                "format=\"appended\" offset=\"%llu\"/>\n",
                fields[k].name, fields[k].components, (unsigned long long)offset);
        offset += sizeof(uint64_t) + field_bytes(&fields[k], points);
    }
}

/* Name the first scalar and the first vector field as the active ones. */
static void write_point_data_open(FILE *fp, const vti_field *fields, size_t count)
{
    fprintf(fp, "      <PointData");
    for (size_t k = 0; k < count; ++k)
        if (fields[k].components == 1) {
            fprintf(fp, " Scalars=\"%s\"", fields[k].name);
            break;
        }
    for (size_t k = 0; k < count; ++k)
        if (fields[k].components == 3) {
            fprintf(fp, " Vectors=\"%s\"", fields[k].name);
            break;
        }
    fprintf(fp, ">\n");
}

static void write_header(FILE *fp, const vti_grid *g, const vti_field *fields, size_t count)
{
    char extent[96];
    snprintf(extent, sizeof extent, "0 %d 0 %d 0 %d", g->dims[0] - 1, g->dims[1] - 1,
             g->dims[2] - 1);
    fprintf(fp, "<?xml version=\"1.0\"?>\n");
    fprintf(fp,
            "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"%s\" "
            "header_type=\"UInt64\">\n",
            host_byte_order());
    fprintf(fp, "  <ImageData WholeExtent=\"%s\" Origin=\"%.17g %.17g %.17g\" "
                "Spacing=\"%.17g %.17g %.17g\">\n",
            extent, g->origin[0], g->origin[1], g->origin[2], g->spacing[0], g->spacing[1],
            g->spacing[2]);
    fprintf(fp, "    <Piece Extent=\"%s\">\n", extent);
    write_point_data_open(fp, fields, count);
    write_data_arrays(fp, fields, count, point_count(g));
    fprintf(fp, "      </PointData>\n");
    fprintf(fp, "      <CellData/>\n");
    fprintf(fp, "    </Piece>\n");
    fprintf(fp, "  </ImageData>\n");
}

static void write_appended(FILE *fp, const vti_field *fields, size_t count, uint64_t points)
{
    fprintf(fp, "  <AppendedData encoding=\"raw\">\n   _");
    for (size_t k = 0; k < count; ++k) {
        const uint64_t bytes = field_bytes(&fields[k], points);
        fwrite(&bytes, sizeof bytes, 1, fp);
        fwrite(fields[k].data, sizeof(float) * (size_t)fields[k].components, (size_t)points,
               fp);
    }
    fprintf(fp, "\n  </AppendedData>\n</VTKFile>\n");
}

int vti_write(const char *path, const vti_grid *grid, const vti_field *fields, size_t count)
{
    if (path == NULL || grid == NULL || !grid_valid(grid) || (count > 0 && fields == NULL) ||
        !fields_valid(fields, count)) {
        errno = EINVAL;
        return -1;
    }
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    errno = 0;
    write_header(fp, grid, fields, count);
    write_appended(fp, fields, count, point_count(grid));
    /* stdio remembers any failed write; report it, or a failed close */
    int failed = ferror(fp);
    int saved = errno;
    if (fclose(fp) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        errno = saved != 0 ? saved : EIO;
        return -1;
    }
    return 0;
}
