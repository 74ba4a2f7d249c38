/*
 * libacmlbm -- the private side of acm_mesh: what the solid and sampling
 * code read, and the one constructor every reader ends in.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_MESH_H
#define ACMLBM_MESH_H

#include "acm_private.h"
#include "acmlbm/acm_mesh.h"

ACM_BEGIN_DECLS

#define ACM_MESH_DEFAULT_MAX_TRIANGLES (UINT64_C(1) << 26)

struct acm_mesh {
    size_t nverts, ntris;
    double *v;          /* 3 per vertex */
    uint32_t *t;        /* 3 per triangle, degenerate ones removed */
    acm_mesh_info info; /* computed once at creation (version field unused) */
    char error[ACM_ERROR_SIZE];
};

/*
 * Adopt vertex and triangle arrays (malloc'ed; ownership passes to this call
 * whatever it returns): check coordinates and indices, drop degenerate
 * triangles, compute the info. On failure writes a message to msg.
 */
acm_status acm__mesh_adopt(acm_mesh **out, double *v, size_t nverts, uint32_t *t, size_t ntris,
                           uint64_t max_triangles, char *msg, size_t msg_size);

/* Most vertices a mesh may hold: indices are uint32_t, and UINT32_MAX stays
 * free as the "no vertex" mark of the welding table. */
#define ACM_MESH_MAX_VERTICES ((size_t)UINT32_MAX - 1)

/*
 * Resolve caller options (NULL, or any known version) into *o over the
 * defaults, max_triangles 0 replaced by the default. Loaders also check the
 * format. On failure writes a message to msg.
 */
acm_status acm__mesh_options(const acm_mesh_options *opts, bool loader, acm_mesh_options *o,
                             char *msg, size_t msg_size);

/* Copy a creation failure's message to the caller's error_buffer (if any);
 * returns st. */
acm_status acm__mesh_report(const acm_mesh_options *opts, acm_status st, const char *msg);

/*
 * Number the n points of v (3 coordinates each, all finite, n <=
 * ACM_MESH_MAX_VERTICES) so that exactly equal points share a number:
 * id[i] in [0, *nunique), assigned in order of first appearance, so the
 * result does not depend on anything but the input. ACM_ERR_NO_MEMORY only.
 */
acm_status acm__mesh_weld(const double *v, size_t n, uint32_t *id, size_t *nunique);

ACM_END_DECLS

#endif /* ACMLBM_MESH_H */
