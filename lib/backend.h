/*
 * libacmlbm -- the private backend interface (style guide R15). The public
 * entry points in domain.c validate every argument, then call these. Built
 * into the library, so no ABI version field. An optional op left NULL makes
 * the public call return ACM_ERR_UNSUPPORTED.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BACKEND_H
#define ACMLBM_BACKEND_H

#include "acm_private.h"

ACM_BEGIN_DECLS

struct acm_backend_ops {
    const char *name;   /* "cpu", "cuda" */
    acm_backend kind;

    /* Cheap availability check (a CUDA device is present, ...). */
    bool (*probe)(void);

    /* Allocate d->impl and the populations for the validated configuration.
     * The populations are then set by init_equilibrium. */
    acm_status (*domain_init)(acm_domain *d);
    void (*domain_fini)(acm_domain *d);

    /* Populations = equilibrium of the source (values already validated). */
    acm_status (*init_equilibrium)(acm_domain *d, const acm_init_source *src);

    /* Advance nsteps >= 1 steps: stream, collide, face conditions; update
     * d->step, d->prev, fallback counters; on divergence set d->diverged and
     * return ACM_ERR_DIVERGED with the message. */
    acm_status (*step)(acm_domain *d, int64_t nsteps);

    /* Copy a field to a host array of ncells * components elements. */
    acm_status (*get_field)(acm_domain *d, acm_field field, acm_dtype dtype, void *dst);

    /* FORCE (src NULL removes the field) or POPULATIONS; values validated. */
    acm_status (*set_field)(acm_domain *d, acm_field field, acm_dtype dtype, const void *src);

    /* Density and velocity of one cell. */
    acm_status (*probe_cell)(acm_domain *d, int32_t x, int32_t y, int32_t z, double *rho,
                             double u[3]);

    /* Global sums (mass, momentum, energy, max speed) of the current state. */
    acm_status (*stats)(acm_domain *d, acm_domain_stats *out);
};

extern const struct acm_backend_ops acm_backend_cpu;
#if ACM_HAVE_CUDA
extern const struct acm_backend_ops acm_backend_cuda;
#endif /* ACM_HAVE_CUDA */

/* The table for a requested backend (AUTO resolved; ACMLBM_BACKEND honoured).
 * Fails with a message in msg. */
acm_status acm__backend_select(acm_backend requested, const struct acm_backend_ops **out,
                               char *msg, size_t msg_size);

ACM_END_DECLS

#endif /* ACMLBM_BACKEND_H */
