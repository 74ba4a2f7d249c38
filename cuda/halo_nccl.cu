/*
 * libacmlbm -- NCCL between the GPU slabs of a domain over MPI ranks
 * (cuda/halo_nccl.h). NCCL's point-to-point calls match the sends and
 * receives between two ranks in the order they are issued: the caller lists
 * them in one order on every rank (lib/multi/halo.c, slab and end ascending).
 * The communicator is non-blocking (ncclConfig_t.blocking = 0): its set-up,
 * its groups and its release are polled, as are the waits (the stream's event
 * and the communicator's asynchronous error), each within a time limit, so
 * that a dead or failing peer ends in an error, never a hang.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <nccl.h>
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memcpy */
#include <time.h>   /* clock_gettime, nanosleep */

#include "halo_nccl.h"

struct acm_nccl {
    ncclComm_t comm;
    int device;
    size_t bytes;
    void *buf[ACM_NCCL_MESSAGES];
};

static int nccl_fail(char *err, size_t size, const char *what, ncclResult_t r)
{
    snprintf(err, size, "NCCL %s: %s", what, ncclGetErrorString(r));
    return -1;
}

static int cuda_fail(char *err, size_t size, const char *what, cudaError_t e)
{
    (void)cudaGetLastError();
    snprintf(err, size, "NCCL %s: %s", what, cudaGetErrorString(e));
    return -1;
}

int acm_nccl_make_id(void *id, size_t size, char *err, size_t err_size)
{
    if (size < sizeof(ncclUniqueId)) {
        snprintf(err, err_size, "NCCL's id needs %zu bytes", sizeof(ncclUniqueId));
        return -1;
    }
    ncclUniqueId u;
    const ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess)
        return nccl_fail(err, err_size, "ncclGetUniqueId", r);
    memcpy(id, &u, sizeof u);
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Spin first, then sleep between polls: what is polled takes microseconds
 * to seconds. */
static void pause_after(long polls)
{
    if (polls > 1000) {
        const struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
}

/* Until the communicator's last call has finished (ncclInProgress no more),
 * within `seconds`: its outcome. */
static ncclResult_t settle(ncclComm_t comm, double seconds)
{
    const double start = now();
    for (long polls = 0;; ++polls) {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess)
            return r;
        if (state != ncclInProgress || now() - start > seconds)
            return state;
        pause_after(polls);
    }
}

#define ACM_NCCL_RELEASE_SECONDS 60.0

void acm_nccl_close(acm_nccl *c, int abort)
{
    if (c == NULL)
        return;
    cudaSetDevice(c->device);
    if (c->comm != NULL) {
        if (!abort) { /* a release that does not finish in time is aborted */
            ncclResult_t f = ncclCommFinalize(c->comm);
            if (f == ncclInProgress)
                f = settle(c->comm, ACM_NCCL_RELEASE_SECONDS);
            abort = f != ncclSuccess;
        }
        if (abort)
            ncclCommAbort(c->comm);
        else
            ncclCommDestroy(c->comm);
    }
    for (int k = 0; k < ACM_NCCL_MESSAGES; ++k)
        cudaFree(c->buf[k]);
    free(c);
}

/* NCCL's set-up of c's member, polled (acm_nccl_open). */
static int join(acm_nccl *c, const void *id, int rank, int nranks, double seconds,
                acm_nccl_give_up give_up, void *ctx, char *err, size_t err_size)
{
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&c->comm, nranks, u, rank, &config);
    const double start = now();
    for (long polls = 0; r == ncclInProgress; ++polls) {
        if (give_up != NULL && give_up(ctx)) {
            snprintf(err, err_size, "NCCL: another rank's set-up failed");
            return -1;
        }
        if (now() - start > seconds) {
            snprintf(err, err_size, "NCCL: the %d ranks did not all join within %.0f s", nranks,
                     seconds);
            return -1;
        }
        pause_after(polls);
        ncclResult_t state = ncclSuccess;
        const ncclResult_t q = ncclCommGetAsyncError(c->comm, &state);
        r = q != ncclSuccess ? q : state;
    }
    return r == ncclSuccess ? 0 : nccl_fail(err, err_size, "ncclCommInitRankConfig", r);
}

int acm_nccl_open(acm_nccl **out, const void *id, int rank, int nranks, int device, size_t bytes,
                  double seconds, acm_nccl_give_up give_up, void *ctx, char *err,
                  size_t err_size)
{
    *out = NULL;
    acm_nccl *c = (acm_nccl *)calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, err_size, "NCCL: cannot allocate the communicator's record");
        return -1;
    }
    c->device = device;
    c->bytes = bytes;
    cudaError_t e = cudaSetDevice(device);
    for (int k = 0; k < ACM_NCCL_MESSAGES && e == cudaSuccess; ++k)
        e = cudaMalloc(&c->buf[k], bytes);
    if (e != cudaSuccess) {
        acm_nccl_close(c, 1);
        return cuda_fail(err, err_size, "message buffers", e);
    }
    if (join(c, id, rank, nranks, seconds, give_up, ctx, err, err_size) != 0) {
        acm_nccl_close(c, 1); /* an unfinished set-up is aborted */
        return -1;
    }
    *out = c;
    return 0;
}

void *acm_nccl_buffer(const acm_nccl *c, int k) { return c->buf[k]; }

int acm_nccl_exchange(acm_nccl *c, const acm_nccl_msg *msg, int n, cudaStream_t s, char *err,
                      size_t err_size)
{
    for (int i = 0; i < n; ++i)
        if (msg[i].bytes > c->bytes) {
            snprintf(err, err_size, "NCCL: a message of %zu bytes, buffers of %zu", msg[i].bytes,
                     c->bytes);
            return -1;
        }
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < n && r == ncclSuccess; ++i)
        r = msg[i].send ? ncclSend(c->buf[msg[i].buffer], msg[i].bytes, ncclUint8, msg[i].rank,
                                   c->comm, s)
                        : ncclRecv(c->buf[msg[i].buffer], msg[i].bytes, ncclUint8, msg[i].rank,
                                   c->comm, s);
    ncclResult_t g = ncclGroupEnd(); /* a started group always ends */
    if (g == ncclInProgress) /* non-blocking: enqueued once the communicator settles */
        g = settle(c->comm, ACM_NCCL_RELEASE_SECONDS);
    r = r != ncclSuccess ? r : g;
    return r == ncclSuccess ? 0 : nccl_fail(err, err_size, "ghost plane group", r);
}

int acm_nccl_wait(acm_nccl *c, cudaEvent_t done, double seconds, char *err, size_t err_size)
{
    const double start = now();
    for (long polls = 0;; ++polls) {
        const cudaError_t e = cudaEventQuery(done);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return cuda_fail(err, err_size, "waiting for the ghost planes", e);
        ncclResult_t async = ncclSuccess;
        const ncclResult_t r = ncclCommGetAsyncError(c->comm, &async);
        if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress))
            return nccl_fail(err, err_size, "ghost planes", r != ncclSuccess ? r : async);
        if (now() - start > seconds) {
            snprintf(err, err_size, "NCCL: ghost planes not complete within %.0f s", seconds);
            return -1;
        }
        pause_after(polls);
    }
}
