/*
 * libacmlbm fuzz targets -- the harness shared by the readers' targets: load
 * one input with a fixed format, then check what the API promises. A broken
 * promise aborts, which libFuzzer records as a crash like a sanitizer report.
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

static int acm_fuzz_mesh(const uint8_t *data, size_t size, acm_mesh_format format)
{
    char err[512] = "";
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.format = format;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_mesh *const untouched = (acm_mesh *)(uintptr_t)0x5a5a5a50;
    acm_mesh *m = untouched;
    acm_status st = acm_mesh_load_memory(&m, data, size, &o);
    if (st == ACM_OK) {
        acm_fuzz_check_mesh(m);
        acm_mesh_destroy(m);
        return 0;
    }
    /* a refusal: a documented status, a message, *out untouched */
    if ((st != ACM_ERR_BAD_FORMAT && st != ACM_ERR_LIMIT && st != ACM_ERR_NO_MEMORY) ||
        err[0] == '\0' || m != untouched)
        abort();
    return 0;
}

#endif /* ACMLBM_FUZZ_MESH_H */
