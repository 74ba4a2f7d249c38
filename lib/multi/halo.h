/*
 * libacmlbm -- what the slabs of a decomposed domain (lib/multi/decomp.h) exchange,
 * and the agreements between the processes that step them: the ghost planes
 * after each step, the planes' reductions, the status of every call. In one
 * process these are copies between slabs, or nothing; across MPI ranks a
 * transport (lib/multi/halo_mpi.c) carries them. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_HALO_H
#define ACMLBM_HALO_H

#include "slab.h"

ACM_BEGIN_DECLS

/* How long an exchange waits for another process before it gives up. */
#define ACM_HALO_WAIT_SECONDS 600.0

/* Bytes to or from another process. */
typedef struct acm_halo_msg {
    int32_t peer; /* its rank */
    int32_t tag;
    void *buf;
    size_t bytes;
} acm_halo_msg;

/* How processes talk (NULL in d->decomp: one process). Every call is
 * collective: every process of the domain makes it, in the same order. */
typedef struct acm_halo_transport {
    const char *name;
    /* Post receives and sends (at most 2 each between two waits, in one
     * call or more; the buffers stay put until wait returns), and wait for
     * all of them. */
    acm_status (*post)(acm_domain *d, const acm_halo_msg *recv, int nrecv,
                       const acm_halo_msg *send, int nsend);
    acm_status (*wait)(acm_domain *d);
    /* Every slab's planes [z0, z1) of plane_bytes each, from its owner, into
     * buf (a whole domain's worth) on every process. */
    acm_status (*gather)(acm_domain *d, void *buf, size_t plane_bytes);
    /* The status of every process: ACM_OK, or the failure of the lowest
     * failing rank, its message in d->error on every process. */
    acm_status (*agree)(acm_domain *d, acm_status local);
    /* Sums of n doubles, and the maximum of one more (max may be NULL). */
    acm_status (*sum)(acm_domain *d, double *v, int n, double *max);
    /* bytes of buf from rank root to all. */
    acm_status (*broadcast)(acm_domain *d, int32_t root, void *buf, size_t bytes);
    /* Optional: the slabs' peer communicator (acm_slabs.peer) where their
     * backend has one and every process opens it; else none (the ghost
     * planes go through the host). */
    void (*connect)(acm_domain *d);
    /* Release dc->comm. */
    void (*release)(acm_decomp *dc);
} acm_halo_transport;

static inline bool acm__halo_is_local(const acm_decomp *dc, int32_t p)
{
    return dc->owner[p] == dc->rank;
}

/* The buffers of the exchange (after the local slabs are made); their release. */
acm_status acm__halo_init(acm_domain *d);
/* After every process made its slabs (collective): their peer communicator
 * (acm_halo_transport.connect), where there can be one. */
void acm__halo_connect(acm_domain *d);
void acm__halo_fini(acm_slabs *m);
void acm__halo_release(acm_decomp *dc);

/* Every local slab's ghost planes from its neighbours' planes: begin starts
 * the copies (into host buffers for other processes) and posts the receives,
 * so that the slabs' work enqueued or done until end runs alongside
 * (docs/multi-gpu.md, "Overlap"); end posts the sends once their copies are
 * done, completes everything with begin's status and returns every process's
 * agreed outcome. Every message is posted, even after a local failure, so
 * that no process waits in vain. acm__halo_exchange does both. */
acm_status acm__halo_exchange_begin(acm_domain *d);
acm_status acm__halo_exchange_end(acm_domain *d, acm_status begun);
acm_status acm__halo_exchange(acm_domain *d);

/* The collective pieces of the composite backend (all trivial in one process). */
acm_status acm__halo_gather_planes(acm_domain *d);
acm_status acm__halo_gather_cells(acm_domain *d, size_t cell_bytes, void *dst);
acm_status acm__halo_gather_state(acm_domain *d, struct acm_state *st);
acm_status acm__halo_agree(acm_domain *d, acm_status local);
bool acm__halo_all(acm_domain *d, bool local);
int64_t acm__halo_sum(acm_domain *d, int64_t local);
acm_status acm__halo_sum_doubles(acm_domain *d, double *v, int n, double *max);
acm_status acm__halo_broadcast(acm_domain *d, int32_t slab, void *buf, size_t bytes);

ACM_END_DECLS

#endif /* ACMLBM_HALO_H */
