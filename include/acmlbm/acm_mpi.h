/*
 * libacmlbm -- one domain over the ranks of an MPI communicator (optional).
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_mpi.h
 * @brief A domain split into slabs along z, one per MPI rank (docs/multi-gpu.md).
 *
 * Not included by acmlbm.h: it includes <mpi.h>. The library's entry point
 * takes the communicator by address, so its ABI does not depend on the MPI
 * implementation; acm_domain_create_mpi() below passes it. A library built
 * without MPI answers ::ACM_ERR_NOT_BUILT.
 *
 * Every rank calls acm_domain_create_mpi() with the same options (its own
 * acm_domain_options::device); rank r steps slab r. From then on every call
 * that reaches the fluid is **collective**: acm_step(), the field, probe and
 * stats queries, acm_domain_init_uniform(), acm_domain_init_fields(),
 * acm_domain_set_field(), acm_domain_set_layout(), acm_domain_save(),
 * acm_domain_destroy()... Make them on every rank in the same order, with the
 * same arguments. Queries gather: every rank receives the whole field, in
 * the documented cell order. A failure on any rank (divergence, out of
 * memory, a CUDA error) makes the call fail on every rank, with the failing
 * rank named in the message. The caller initialises MPI (MPI_Init) first and
 * destroys its domains before MPI_Finalize.
 */
#ifndef ACMLBM_ACM_MPI_H
#define ACMLBM_ACM_MPI_H

#include <mpi.h>

#include "acm_domain.h"

#ifdef __cplusplus
extern "C" {
#endif

/** acm_domain_create_on_comm() (acm_domain.h) with the communicator by value.
 *  @since 1.4 */
static inline acm_status acm_domain_create_mpi(acm_domain **out, const acm_domain_options *opts,
                                               MPI_Comm comm)
{
    return acm_domain_create_on_comm(out, opts, &comm);
}

#ifdef __cplusplus
}
#endif

#endif /* ACMLBM_ACM_MPI_H */
