/*
 * libacmlbm -- one domain over several slabs (docs/multi-gpu.md): the
 * composite backend that steps the slabs and exchanges their ghost planes
 * (lib/multi/halo.h), and how a domain becomes one.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_DECOMP_H
#define ACMLBM_DECOMP_H

#include "slab.h"

ACM_BEGIN_DECLS

/* Make d, configured like an ordinary domain of the given backend, a
 * decomposed one of `parts` slabs along z in this process (slab p on CUDA
 * device devices[p], or d->device with devices NULL): d->ops becomes the
 * composite's table, d->decomp its slabs. */
acm_status acm__decomp_init(acm_domain *d, const struct acm_backend_ops *slab_ops, int32_t parts,
                            const int32_t *devices);
/* The same over the ranks of an MPI communicator (comm: an MPI_Comm *), one
 * slab per rank (lib/multi/halo_mpi.c; ACM_ERR_NOT_BUILT without MPI). */
acm_status acm__decomp_init_mpi(acm_domain *d, const struct acm_backend_ops *slab_ops,
                                const void *comm);
/* Before a domain is made over comm: every rank's status of its options, the
 * lowest failing rank's in all (its message in msg). */
acm_status acm__mpi_agree_create(const void *comm, acm_status local, char *msg, size_t size);
/* The common part of both: slab p on process owner[p] (NULL: all here). */
acm_status acm__decomp_setup(acm_domain *d, const struct acm_backend_ops *slab_ops,
                             int32_t parts, const int32_t *devices);
/* Whether this process writes d's files: the one of slab 0 over MPI (the
 * others take part in gathering the state, then learn the outcome). */
bool acm__decomp_writes(const acm_domain *d);
/* Release d->decomp (acm_domain_destroy, after the backend's fini). */
void acm__decomp_free(acm_domain *d);

/* acm_domain_get_slabs (an undivided domain is one slab): capacity checked
 * by the caller (at least nslabs + 1); cuts and cost may be NULL. */
acm_status acm__decomp_slabs(acm_domain *d, int32_t *cuts, double *cost);

ACM_END_DECLS

#endif /* ACMLBM_DECOMP_H */
