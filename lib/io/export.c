/*
 * libacmlbm -- file export (acm_export.h): VTK image data for fields, PLY and
 * VTK poly data for particles; each file written beside its path and renamed
 * over it when complete. SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>  /* errno */
#include <stdio.h>  /* FILE, fprintf, fwrite, remove */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strerror */
#include <unistd.h> /* fsync */

#include "alloc.h"
#include "backend.h"
#include "export.h"
#include "file.h" /* acm__temp_fopen, acm__temp_finish */
#include "guard.h"
#include "smoke.h"

/* ---- files written whole or not at all ---------------------------------------------- */

typedef struct export_file {
    FILE *f;
    const char *path;
    char tmp[4096];
    char error[ACM_ERROR_SIZE]; /* why it failed */
} export_file;

static acm_status export_open(export_file *x, const char *path)
{
    x->path = path;
    x->error[0] = '\0';
    x->f = acm__temp_fopen(x->tmp, sizeof x->tmp, path, x->error, sizeof x->error);
    return x->f != NULL ? ACM_OK : ACM_ERR_IO;
}

/* Drop the temporary file after a failure. */
static void export_abort(export_file *x)
{
    if (x->f != NULL)
        fclose(x->f);
    x->f = NULL;
    remove(x->tmp);
}

/* Complete the file: flush it to the disk and rename it over the path. */
static acm_status export_close(export_file *x)
{
    int e = 0;
    if (fflush(x->f) != 0 || ferror(x->f) || fsync(fileno(x->f)) != 0)
        e = errno ? errno : EIO;
    if (fclose(x->f) != 0 && e == 0)
        e = errno ? errno : EIO;
    x->f = NULL;
    return acm__temp_finish(x->tmp, x->path, e, x->error, sizeof x->error);
}

/* A whole file from `write` (false: it failed, x->error says why), or none. */
static acm_status export_whole(export_file *x, const char *path,
                               bool (*write)(export_file *x, const void *ctx), const void *ctx)
{
    ACM_TRY(export_open(x, path));
    if (write(x, ctx))
        return export_close(x);
    export_abort(x);
    return ACM_ERR_IO;
}

/* Raw bytes; false (and the reason) when the write failed. */
static bool put(export_file *x, const void *p, size_t bytes)
{
    if (bytes == 0 || fwrite(p, bytes, 1, x->f) == 1)
        return true;
    acm__format(x->error, sizeof x->error, "cannot write %s: %s", x->path,
                strerror(errno ? errno : EIO));
    return false;
}

static const char vtk_tail[] = "\n  </AppendedData>\n</VTKFile>\n";

static const char *byte_order(void)
{
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe == 1 ? "LittleEndian" : "BigEndian";
}

/* ---- VTK image data of a domain's fields ---------------------------------------------- */

static const char *field_name(acm_field f)
{
    switch (f) {
    case ACM_FIELD_DENSITY: return "density";
    case ACM_FIELD_VELOCITY: return "velocity";
    case ACM_FIELD_FORCE: return "force";
    default: return "populations";
    }
}

acm_status acm__export_check_fields(acm_domain *d, const acm_field *fields, size_t count,
                                    const char *(*name)(acm_field))
{
    if (count == 0)
        return ACM_FAIL(d, ACM_ERR_INVALID_ARG, "no field to export");
    for (size_t k = 0; k < count; ++k) {
        if (acm__field_components(fields[k]) == 0)
            return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown field %d", (int)fields[k]);
        for (size_t j = 0; j < k; ++j)
            if (fields[j] == fields[k])
                return ACM_FAIL(d, ACM_ERR_INVALID_ARG, "field %s given twice", name(fields[k]));
    }
    return ACM_OK;
}

/* A VTK image data grid: points, the first point, their spacing; arrays by
 * name and components, FP32, appended in this order. */
typedef struct vti_grid {
    int32_t n[3];
    double origin, spacing; /* the same on every axis */
} vti_grid;

static void vti_header(FILE *f, const vti_grid *g, const char *const *names, const int *comps,
                       size_t count)
{
    char extent[96];
    acm__format(extent, sizeof extent, "0 %d 0 %d 0 %d", g->n[0] - 1, g->n[1] - 1, g->n[2] - 1);
    fprintf(f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" "
               "byte_order=\"%s\" header_type=\"UInt64\">\n", byte_order());
    fprintf(f, "  <ImageData WholeExtent=\"%s\" Origin=\"%.17g %.17g %.17g\" "
               "Spacing=\"%.17g %.17g %.17g\">\n", extent, g->origin, g->origin, g->origin,
            g->spacing, g->spacing, g->spacing);
    fprintf(f, "    <Piece Extent=\"%s\">\n      <PointData>\n", extent);
    const uint64_t points = (uint64_t)g->n[0] * (uint64_t)g->n[1] * (uint64_t)g->n[2];
    uint64_t offset = 0;
    for (size_t k = 0; k < count; ++k) {
        fprintf(f, "        <DataArray type=\"Float32\" Name=\"%s\" NumberOfComponents=\"%d\" "
                   "format=\"appended\" offset=\"%llu\"/>\n",
                names[k], comps[k], (unsigned long long)offset);
        offset += sizeof(uint64_t) + points * (uint64_t)comps[k] * sizeof(float);
    }
    fprintf(f, "      </PointData>\n      <CellData/>\n    </Piece>\n  </ImageData>\n"
               "  <AppendedData encoding=\"raw\">\n   _");
}

/* One array's block: its byte count, then the values. */
static bool vti_block(export_file *x, const float *v, uint64_t values)
{
    const uint64_t bytes = values * sizeof(float);
    return put(x, &bytes, sizeof bytes) && put(x, v, (size_t)bytes);
}

/* The fields' values, one after the other, each fetched just before it is
 * written (one field's buffer at a time). */
static acm_status vti_data(acm_domain *d, export_file *x, const acm_field *fields, size_t count)
{
    for (size_t k = 0; k < count; ++k) {
        const uint64_t bytes = (uint64_t)d->ncells * (uint64_t)acm__field_components(fields[k]) *
                               sizeof(float);
        float *v = acm__malloc((size_t)bytes);
        if (v == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold the %s field (%.3g GB)",
                            field_name(fields[k]), (double)bytes / 1e9);
        acm_status st = d->ops->get_field(d, fields[k], ACM_DTYPE_FLOAT32, v);
        if (st == ACM_OK && !vti_block(x, v, bytes / sizeof(float)))
            st = ACM_FAIL(d, ACM_ERR_IO, "%s", x->error);
        acm__free(v);
        ACM_TRY(st);
    }
    return put(x, vtk_tail, sizeof vtk_tail - 1) ? ACM_OK : ACM_FAIL(d, ACM_ERR_IO, "%s", x->error);
}

static acm_status domain_export_vti_unguarded(acm_domain *domain, const char *path,
                                              const acm_field *fields, size_t count)
{
    if (path == NULL || fields == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "%s is NULL", path == NULL ? "path" : "fields");
    ACM_TRY(acm__export_check_fields(domain, fields, count, field_name));
    const char *names[ACM_FIELD_POPULATIONS + 1];
    int comps[ACM_FIELD_POPULATIONS + 1];
    for (size_t k = 0; k < count; ++k) {
        names[k] = field_name(fields[k]);
        comps[k] = acm__field_components(fields[k]);
    }
    export_file x;
    if (export_open(&x, path) != ACM_OK)
        return ACM_FAIL(domain, ACM_ERR_IO, "%s", x.error);
    const vti_grid g = {{domain->nx, domain->ny, domain->nz}, 0.0, 1.0};
    vti_header(x.f, &g, names, comps, count);
    acm_status st = vti_data(domain, &x, fields, count);
    if (st != ACM_OK) {
        export_abort(&x);
        return st;
    }
    return export_close(&x) == ACM_OK ? ACM_OK : ACM_FAIL(domain, ACM_ERR_IO, "%s", x.error);
}

/* ---- particles ------------------------------------------------------------------------ */

/* The live particles as FP32 x, y, z, age (4 per particle); *n of them. */
static acm_status particle_rows(acm_smoke *s, float **rows, uint64_t *n)
{
    ACM_TRY(acm__smoke_sync(s));
    const uint64_t alive = acm__smoke_alive(s);
    float *r = acm__malloc(4 * (size_t)(alive ? alive : 1) * sizeof(float));
    if (r == NULL)
        return acm__smoke_fail(s, ACM_ERR_NO_MEMORY, "cannot stage %llu particles",
                               (unsigned long long)alive);
    uint64_t k = 0;
    for (uint64_t slot = 0; slot < s->capacity; ++slot) {
        if (s->age[slot] < 0)
            continue;
        for (int a = 0; a < 3; ++a)
            r[4 * k + (uint64_t)a] = (float)s->x[3 * slot + (uint64_t)a];
        r[4 * k + 3] = (float)s->age[slot];
        ++k;
    }
    *rows = r;
    *n = k;
    return ACM_OK;
}

/* The live particles as FP32 rows (x, y, z, age). */
typedef struct particle_table {
    const float *rows;
    uint64_t n;
} particle_table;

static bool ply_write(export_file *x, const void *ctx)
{
    const float *rows = ((const particle_table *)ctx)->rows;
    const uint64_t n = ((const particle_table *)ctx)->n;
    fprintf(x->f, "ply\nformat binary_%s_endian 1.0\ncomment libacmlbm smoke particles, "
                  "lattice units\nelement vertex %llu\nproperty float x\nproperty float y\n"
                  "property float z\nproperty float age\nend_header\n",
            byte_order()[0] == 'L' ? "little" : "big", (unsigned long long)n);
    return put(x, rows, 4 * (size_t)n * sizeof(float));
}

/* A component of the rows as a raw appended block (UInt64 size, then values). */
static bool vtp_block(export_file *x, const float *rows, uint64_t n, int first, int comps)
{
    const uint64_t bytes = n * (uint64_t)comps * sizeof(float);
    if (!put(x, &bytes, sizeof bytes))
        return false;
    for (uint64_t k = 0; k < n; ++k)
        if (!put(x, rows + 4 * k + (uint64_t)first, (size_t)comps * sizeof(float)))
            return false;
    return true;
}

/* The vertex cells: connectivity 0..n-1, offsets 1..n (Int64). */
static bool vtp_cells(export_file *x, uint64_t n, int64_t base)
{
    const uint64_t bytes = n * sizeof(int64_t);
    if (!put(x, &bytes, sizeof bytes))
        return false;
    for (uint64_t k = 0; k < n; ++k) {
        const int64_t v = (int64_t)k + base;
        if (!put(x, &v, sizeof v))
            return false;
    }
    return true;
}

static bool vtp_write(export_file *x, const void *ctx)
{
    const float *rows = ((const particle_table *)ctx)->rows;
    const uint64_t n = ((const particle_table *)ctx)->n;
    const unsigned long long pts = n * 3 * sizeof(float) + 8, ids = n * sizeof(int64_t) + 8;
    fprintf(x->f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"1.0\" "
                  "byte_order=\"%s\" header_type=\"UInt64\">\n  <PolyData>\n"
                  "    <Piece NumberOfPoints=\"%llu\" NumberOfVerts=\"%llu\">\n"
                  "      <PointData Scalars=\"age\">\n        <DataArray type=\"Float32\" "
                  "Name=\"age\" format=\"appended\" offset=\"0\"/>\n      </PointData>\n"
                  "      <Points>\n        <DataArray type=\"Float32\" NumberOfComponents=\"3\" "
                  "format=\"appended\" offset=\"%llu\"/>\n      </Points>\n      <Verts>\n"
                  "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" "
                  "offset=\"%llu\"/>\n        <DataArray type=\"Int64\" Name=\"offsets\" "
                  "format=\"appended\" offset=\"%llu\"/>\n      </Verts>\n    </Piece>\n"
                  "  </PolyData>\n  <AppendedData encoding=\"raw\">\n   _",
            byte_order(), (unsigned long long)n, (unsigned long long)n,
            (unsigned long long)(n * sizeof(float) + 8), (unsigned long long)(n * sizeof(float) + 8 + pts),
            (unsigned long long)(n * sizeof(float) + 8 + pts + ids));
    return vtp_block(x, rows, n, 3, 1) && vtp_block(x, rows, n, 0, 3) && vtp_cells(x, n, 0) &&
           vtp_cells(x, n, 1) && put(x, vtk_tail, sizeof vtk_tail - 1);
}

ACM_API acm_status acm_smoke_export(acm_smoke *smoke, const char *path,
                                    acm_particle_format format)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (path == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "path is NULL");
    if (format != ACM_PARTICLES_PLY && format != ACM_PARTICLES_VTP)
        return acm__smoke_fail(smoke, ACM_ERR_BAD_ENUM, "unknown particle format %d", (int)format);
    float *rows = NULL;
    uint64_t n = 0;
    ACM_TRY(particle_rows(smoke, &rows, &n));
    const particle_table table = {rows, n};
    export_file x;
    const acm_status st = export_whole(&x, path, format == ACM_PARTICLES_PLY ? ply_write : vtp_write,
                                       &table);
    acm__free(rows);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(smoke, st, "%s", x.error);
}

/* ---- the smoke's density volume --------------------------------------------------------- */

/* A density grid and its values. */
typedef struct density_table {
    vti_grid g;
    const float *v;
} density_table;

static bool density_write(export_file *x, const void *ctx)
{
    const density_table *t = (const density_table *)ctx;
    const char *name = "density";
    const int one = 1;
    vti_header(x->f, &t->g, &name, &one, 1);
    return vti_block(x, t->v, (uint64_t)t->g.n[0] * (uint64_t)t->g.n[1] * (uint64_t)t->g.n[2]) &&
           put(x, vtk_tail, sizeof vtk_tail - 1);
}

ACM_API acm_status acm_smoke_export_density(acm_smoke *smoke, const char *path, int32_t subdivisions)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (path == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "path is NULL");
    density_table t;
    ACM_TRY(acm__smoke_grid(smoke, subdivisions, t.g.n));
    t.g.spacing = 1.0 / subdivisions;
    t.g.origin = 0.5 * t.g.spacing - 0.5;
    const uint64_t voxels = (uint64_t)t.g.n[0] * (uint64_t)t.g.n[1] * (uint64_t)t.g.n[2];
    float *v = acm__malloc((size_t)voxels * sizeof(float));
    if (v == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NO_MEMORY, "cannot hold %llu voxels",
                               (unsigned long long)voxels);
    t.v = v;
    acm_status st = acm_smoke_density(smoke, subdivisions, v, (size_t)voxels);
    if (st == ACM_OK) {
        export_file x;
        st = export_whole(&x, path, density_write, &t);
        if (st != ACM_OK)
            st = acm__smoke_fail(smoke, st, "%s", x.error);
    }
    acm__free(v);
    return st;
}

/* One thread at a time (lib/base/guard.h, the call guard). */
ACM_API acm_status acm_domain_export_vti(acm_domain *domain, const char *path,
                                         const acm_field *fields, size_t count)
{
    ACM_GUARDED(domain, domain_export_vti_unguarded(domain, path, fields, count));
}
