/*
 * libacmlbm -- NCCL between the GPU slabs of a domain over MPI ranks
 * (cuda/halo_nccl.cu; docs/multi-gpu.md): one communicator per domain,
 * one member per rank, the ghost planes sent and received device to
 * device in one group per exchange, on the slab's side stream.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_HALO_NCCL_H
#define ACMLBM_HALO_NCCL_H

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stddef.h>

/* A rank's member of the communicator, with device buffers for the
 * exchange's messages (ACM_NCCL_MESSAGES of `bytes`). */
typedef struct acm_nccl acm_nccl;

#define ACM_NCCL_MESSAGES 4 /* a send and a receive at each end of a slab (ACM_PEER_MESSAGES) */

/* One message of an exchange: the first `bytes` of buffer k to or from `rank`. */
typedef struct acm_nccl_msg {
    int rank;
    int buffer;
    int send;
    size_t bytes;
} acm_nccl_msg;

/* Whether to stop waiting for the other ranks (one of them failed). */
typedef bool (*acm_nccl_give_up)(void *ctx);

/* Each returns 0, or -1 with a message in err. */
int acm_nccl_make_id(void *id, size_t size, char *err, size_t err_size);
/* The member of rank `rank` of `nranks` in communicator `id`: its buffers,
 * then NCCL's non-blocking set-up polled until every rank has joined, never
 * longer than `seconds`, and only while give_up(ctx) (NULL: never) says
 * no; on any failure the set-up is aborted and nothing is kept. */
int acm_nccl_open(acm_nccl **out, const void *id, int rank, int nranks, int device, size_t bytes,
                  double seconds, acm_nccl_give_up give_up, void *ctx, char *err,
                  size_t err_size);
void *acm_nccl_buffer(const acm_nccl *c, int k);
/* The messages as one group on stream s (at most the bytes opened with each). */
int acm_nccl_exchange(acm_nccl *c, const acm_nccl_msg *msg, int n, cudaStream_t s, char *err,
                      size_t err_size);
/* Until `done` (recorded after the group) completes, within `seconds`, or
 * the communicator reports an error. */
int acm_nccl_wait(acm_nccl *c, cudaEvent_t done, double seconds, char *err, size_t err_size);
/* The member released; abort: without waiting for the other ranks. */
void acm_nccl_close(acm_nccl *c, int abort);

#endif /* ACMLBM_HALO_NCCL_H */
