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

ACM_END_DECLS

#endif /* ACMLBM_MESH_H */
