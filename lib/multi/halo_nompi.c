/*
 * libacmlbm -- a build without MPI: acm_domain_create_on_comm() answers
 * ACM_ERR_NOT_BUILT (lib/multi/halo_mpi.c is the real one).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h> /* snprintf */

#include "decomp.h"

acm_status acm__mpi_agree_create(const void *comm, acm_status local, char *msg, size_t size)
{
    (void)comm;
    (void)local;
    snprintf(msg, size, "this libacmlbm was built without MPI (meson -Dmpi=enabled, "
                        "libopenmpi-dev)");
    return ACM_ERR_NOT_BUILT;
}

acm_status acm__decomp_init_mpi(acm_domain *d, const struct acm_backend_ops *slab_ops,
                                const void *comm)
{
    (void)slab_ops;
    (void)comm;
    return ACM_FAIL(d, ACM_ERR_NOT_BUILT, "this libacmlbm was built without MPI");
}
