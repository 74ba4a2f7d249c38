/*
 * libacmlbm fuzz targets -- the harness shared by the readers' targets: load
 * one input with a fixed format, again under a small max_triangles, and with
 * format detection, then check what the API promises and that the loads
 * agree. A broken promise aborts, which libFuzzer records as a crash like a
 * sanitizer report.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_FUZZ_MESH_H
#define ACMLBM_FUZZ_MESH_H

#include <math.h>   /* isfinite */
#include <stdint.h> /* uint8_t, uintptr_t */
#include <stdlib.h> /* abort, malloc, free */
#include <string.h> /* memset */

#include <acmlbm/acmlbm.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A successful load: consistent counts, finite geometry, indices in range,
 * vertices inside the bounding box. */
static void acm_fuzz_check_mesh(const acm_mesh *m)
{
    acm_mesh_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_MESH_INFO_VERSION;
    if (acm_mesh_get_info(m, &info) != ACM_OK || info.vertex_count < 3 ||
        info.triangle_count < 1 || !(info.area > 0.0) || !isfinite(info.area) ||
        !isfinite(info.volume) || (info.closed != 0 && info.closed != 1))
        abort();
    for (int k = 0; k < 3; ++k)
        if (!isfinite(info.centroid[k]) || !(info.bbox_min[k] <= info.bbox_max[k]))
            abort();
    for (int k = 0; k < 6; ++k)
        if (!isfinite(info.inertia[k]))
            abort();
    size_t nv = (size_t)info.vertex_count, nt = (size_t)info.triangle_count;
    double *v = malloc(3 * nv * sizeof *v);
    uint32_t *t = malloc(3 * nt * sizeof *t);
    if (v == NULL || t == NULL || acm_mesh_get_vertices(m, v, nv) != ACM_OK ||
        acm_mesh_get_triangles(m, t, nt) != ACM_OK)
        abort();
    for (size_t i = 0; i < 3 * nv; ++i)
        if (!(v[i] >= info.bbox_min[i % 3] && v[i] <= info.bbox_max[i % 3]))
            abort();
    for (size_t i = 0; i < 3 * nt; ++i)
        if (t[i] >= nv)
            abort();
    /* wrong counts are refused with a message */
    if (acm_mesh_get_vertices(m, v, nv + 1) != ACM_ERR_BUFFER_SIZE ||
        acm_mesh_last_error(m)[0] == '\0')
        abort();
    free(v);
    free(t);
}

/* One load; a refusal must give a documented status, a message, and leave
 * *out untouched. */
static acm_status acm_fuzz_load(const uint8_t *data, size_t size, acm_mesh_format format,
                                uint64_t max_triangles, acm_mesh **out)
{
    char err[512] = "";
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.format = format;
    o.max_triangles = max_triangles;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_mesh *const untouched = (acm_mesh *)(uintptr_t)0x5a5a5a50;
    acm_mesh *m = untouched;
    acm_status st = acm_mesh_load_memory(&m, data, size, &o);
    if (st == ACM_OK) {
        acm_fuzz_check_mesh(m);
        *out = m;
        return st;
    }
    if ((st != ACM_ERR_BAD_FORMAT && st != ACM_ERR_LIMIT && st != ACM_ERR_NO_MEMORY) ||
        err[0] == '\0' || m != untouched)
        abort();
    return st;
}

static acm_mesh_info acm_fuzz_info(const acm_mesh *m)
{
    acm_mesh_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_MESH_INFO_VERSION;
    if (acm_mesh_get_info(m, &info) != ACM_OK)
        abort();
    return info;
}

/* The limit a second load runs under: small enough for the inputs to cross. */
#define ACM_FUZZ_SMALL_LIMIT 8

static int acm_fuzz_mesh(const uint8_t *data, size_t size, acm_mesh_format format)
{
    acm_mesh *full = NULL, *small = NULL, *any = NULL;
    acm_status st = acm_fuzz_load(data, size, format, 0, &full);
    acm_status st_small = acm_fuzz_load(data, size, format, ACM_FUZZ_SMALL_LIMIT, &small);
    /* The limit counts triangles before degenerate ones are dropped, so the
     * first load predicts the second exactly; a failure stays a failure. */
    if (st == ACM_OK) {
        acm_mesh_info a = acm_fuzz_info(full);
        uint64_t read = a.triangle_count + a.degenerate_triangles;
        if (read <= ACM_FUZZ_SMALL_LIMIT) {
            acm_mesh_info b;
            if (st_small != ACM_OK)
                abort();
            b = acm_fuzz_info(small);
            if (memcmp(&a, &b, sizeof a) != 0)
                abort();
        } else if (st_small != ACM_ERR_LIMIT) {
            abort();
        }
    } else if (st_small == ACM_OK) {
        abort();
    }
    /* format detection sees the same bytes: only the promises are checked */
    if (acm_fuzz_load(data, size, ACM_MESH_FORMAT_AUTO, 0, &any) == ACM_OK)
        acm_mesh_destroy(any);
    acm_mesh_destroy(full);
    acm_mesh_destroy(small);
    return 0;
}

#endif /* ACMLBM_FUZZ_MESH_H */
