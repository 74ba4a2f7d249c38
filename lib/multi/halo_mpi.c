/*
 * libacmlbm -- the MPI transport of a decomposed domain (lib/multi/halo.h): one
 * slab per rank; ghost planes by nonblocking point-to-point messages, the
 * planes' reductions and gathered fields by MPI_Allgatherv, statuses by an
 * all-reduce of the lowest failing rank and a broadcast of its message.
 * Only host memory is handed to MPI (Debian's OpenMPI is not CUDA-aware).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <mpi.h>
#include <stdio.h>  /* snprintf */
#include <string.h> /* memcpy */
#include <time.h>   /* clock_gettime */

#include "alloc.h"
#include "backend.h"
#include "decomp.h" /* acm__decomp_setup */
#include "halo.h"

/* Messages of one exchange: a receive and a send at each end. */
#define ACM_MPI_MESSAGES 4

/* dc->comm: the domain's communicator and the exchange under way. */
typedef struct mpi_link {
    MPI_Comm comm;
    MPI_Request req[ACM_MPI_MESSAGES];
    acm_halo_msg msg[ACM_MPI_MESSAGES];
    int n; /* requests posted */
} mpi_link;

static MPI_Comm comm_of(const acm_decomp *dc) { return ((const mpi_link *)dc->comm)->comm; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait for n requests, within ACM_HALO_WAIT_SECONDS; the late peers named. */
static acm_status wait_all(acm_domain *d, MPI_Request *req, const acm_halo_msg *msg, int n)
{
    const double start = now();
    int done = 0;
    while (!done) {
        if (MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            return ACM_FAIL(d, ACM_ERR_DEVICE, "MPI_Testall failed in the ghost plane exchange");
        if (!done && now() - start > ACM_HALO_WAIT_SECONDS) {
            for (int i = 0; i < n; ++i)
                if (req[i] != MPI_REQUEST_NULL)
                    MPI_Cancel(&req[i]);
            return ACM_FAIL(d, ACM_ERR_DEVICE,
                            "rank %d: no ghost planes from rank %d within %.0f s",
                            (int)d->decomp->rank, n > 0 ? (int)msg[0].peer : -1,
                            ACM_HALO_WAIT_SECONDS);
        }
    }
    return ACM_OK;
}

static acm_status mpi_post(acm_domain *d, const acm_halo_msg *recv, int nrecv,
                          const acm_halo_msg *send, int nsend)
{
    mpi_link *l = d->decomp->comm;
    if (l->n + nrecv + nsend > ACM_MPI_MESSAGES)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "more than %d ghost plane messages posted",
                        ACM_MPI_MESSAGES);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < nrecv; ++i, ++l->n) {
        l->msg[l->n] = recv[i];
        rc |= MPI_Irecv(recv[i].buf, (int)recv[i].bytes, MPI_BYTE, recv[i].peer, recv[i].tag,
                        l->comm, &l->req[l->n]);
    }
    for (int i = 0; i < nsend; ++i, ++l->n) {
        l->msg[l->n] = send[i];
        rc |= MPI_Isend(send[i].buf, (int)send[i].bytes, MPI_BYTE, send[i].peer, send[i].tag,
                        l->comm, &l->req[l->n]);
    }
    return rc == MPI_SUCCESS ? ACM_OK
                             : ACM_FAIL(d, ACM_ERR_DEVICE, "MPI could not post the ghost planes");
}

static acm_status mpi_wait(acm_domain *d)
{
    mpi_link *l = d->decomp->comm;
    const int n = l->n;
    l->n = 0;
    return wait_all(d, l->req, l->msg, n);
}

static acm_status mpi_gather(acm_domain *d, void *buf, size_t plane_bytes)
{
    const acm_decomp *dc = d->decomp;
    const int n = (int)dc->nslabs;
    int *count = acm__calloc(2 * (size_t)n, sizeof(int));
    if (count == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the gather's counts");
    int *displ = count + n;
    for (int p = 0; p < n; ++p) { /* in planes: a plane type keeps the counts small */
        count[p] = (int)(dc->cuts[p + 1] - dc->cuts[p]);
        displ[p] = (int)dc->cuts[p];
    }
    MPI_Datatype plane;
    MPI_Type_contiguous((int)plane_bytes, MPI_BYTE, &plane);
    MPI_Type_commit(&plane);
    const int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, plane, buf, count, displ, plane, comm_of(dc));
    MPI_Type_free(&plane);
    acm__free(count);
    return rc == MPI_SUCCESS ? ACM_OK : ACM_FAIL(d, ACM_ERR_DEVICE, "MPI_Allgatherv failed");
}

/* The lowest failing rank's status and message, on every rank. */
static acm_status agree_on(MPI_Comm c, acm_status local, char *msg, size_t size)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &ranks);
    int mine = local == ACM_OK ? ranks : rank, first = ranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c);
    if (first == ranks)
        return ACM_OK;
    struct {
        int status;
        char text[ACM_ERROR_SIZE];
    } m;
    m.status = (int)local;
    snprintf(m.text, sizeof m.text, "rank %d: %s", rank, msg);
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, c);
    snprintf(msg, size, "%s", m.text);
    return (acm_status)m.status;
}

static acm_status mpi_agree(acm_domain *d, acm_status local)
{
    return agree_on(comm_of(d->decomp), local, d->error, sizeof d->error);
}

static acm_status mpi_sum(acm_domain *d, double *v, int n, double *max)
{
    const MPI_Comm c = comm_of(d->decomp);
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, c);
    if (rc == MPI_SUCCESS && max != NULL)
        rc = MPI_Allreduce(MPI_IN_PLACE, max, 1, MPI_DOUBLE, MPI_MAX, c);
    return rc == MPI_SUCCESS ? ACM_OK : ACM_FAIL(d, ACM_ERR_DEVICE, "MPI_Allreduce failed");
}

static acm_status mpi_broadcast(acm_domain *d, int32_t root, void *buf, size_t bytes)
{
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm_of(d->decomp)) == MPI_SUCCESS
               ? ACM_OK
               : ACM_FAIL(d, ACM_ERR_DEVICE, "MPI_Bcast failed");
}

/* Whether every rank's ok is true. */
static bool all_ranks(MPI_Comm c, bool ok)
{
    int v = ok;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, c);
    return v != 0;
}

/* Whether two ranks' slabs share a device (NCCL refuses them, slowly). */
static bool devices_shared(acm_domain *sub, const struct acm_backend_ops *ops, MPI_Comm c,
                           int ranks)
{
    enum { KEY = 96 };
    char *keys = acm__calloc((size_t)ranks + 1, KEY);
    if (keys == NULL)
        return true; /* no peer communicator then */
    ops->peer_device(sub, keys + (size_t)ranks * KEY, KEY);
    MPI_Allgather(keys + (size_t)ranks * KEY, KEY, MPI_CHAR, keys, KEY, MPI_CHAR, c);
    bool shared = false;
    for (int i = 0; i < ranks && !shared; ++i)
        for (int j = 0; j < i && !shared; ++j)
            shared = strncmp(keys + (size_t)i * KEY, keys + (size_t)j * KEY, KEY) == 0;
    acm__free(keys);
    return shared;
}

/* A rank whose member failed to open says so to every other rank (tag
 * NOTICE of the set-up's own communicator), so that none waits for it until
 * the time limit; join_notice is the others' give_up. */
enum { NOTICE = 1 };
#define ACM_PEER_JOIN_SECONDS 120.0

static bool join_notice(void *ctx)
{
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, NOTICE, *(MPI_Comm *)ctx, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
}

/* Every rank opens its member; whether all of them did. The failed ranks'
 * notices are all received (synchronous sends: matched before the set-up's
 * communicator goes), so none is left for a later set-up. */
static bool open_everywhere(acm_domain *sub, const struct acm_backend_ops *ops, MPI_Comm c,
                            const unsigned char *id, int rank, int ranks, size_t bytes,
                            void **peer)
{
    MPI_Comm jc = MPI_COMM_NULL;
    const bool dup = MPI_Comm_dup(c, &jc) == MPI_SUCCESS;
    if (!all_ranks(c, dup)) { /* every rank uses jc below, or none */
        if (dup)
            MPI_Comm_free(&jc);
        return false;
    }
    const acm_peer_join join = {ACM_PEER_JOIN_SECONDS, join_notice, &jc};
    const bool opened = ops->peer_open(sub, id, rank, ranks, bytes, &join, peer) == ACM_OK;
    MPI_Request *sent = opened ? NULL : acm__calloc((size_t)ranks, sizeof *sent);
    int nsent = 0, one = 1;
    for (int r = 0; sent != NULL && r < ranks; ++r)
        if (r != rank)
            MPI_Issend(&one, 1, MPI_INT, r, NOTICE, jc, &sent[nsent++]);
    /* the failed ranks, and those of them that sent notices */
    int count[2] = {!opened, sent != NULL};
    MPI_Allreduce(MPI_IN_PLACE, count, 2, MPI_INT, MPI_SUM, jc);
    for (int k = 0; k < count[1] - (sent != NULL); ++k) /* one from each other notifier */
        MPI_Recv(&one, 1, MPI_INT, MPI_ANY_SOURCE, NOTICE, jc, MPI_STATUS_IGNORE);
    MPI_Waitall(nsent, sent, MPI_STATUSES_IGNORE);
    acm__free(sent);
    MPI_Comm_free(&jc);
    return count[0] == 0;
}

/* NCCL (or another backend's peer communicator) for the GPU slabs' ghost
 * planes: rank 0 makes the id, every rank opens its member. Where two ranks
 * share a device, or any rank cannot open its member, none keeps one and the
 * planes go through the host (the reason of a failed open stays in the local
 * slab's error); a rank that fails tells the others, which stop waiting for
 * it (open_everywhere). */
static void mpi_connect(acm_domain *d)
{
    acm_slabs *m = d->impl;
    const acm_decomp *dc = d->decomp;
    const struct acm_backend_ops *ops = dc->slab_ops;
    acm_domain *sub = m->slab[dc->rank].sub;
    const MPI_Comm c = comm_of(dc);
    if (ops->peer_open == NULL || m->n < 2 || !m->slab[dc->rank].local ||
        !all_ranks(c, !devices_shared(sub, ops, c, (int)dc->nslabs)))
        return;
    unsigned char id[ACM_PEER_ID_BYTES] = {0};
    if (!all_ranks(c, dc->rank != 0 || ops->peer_id(sub, id) == ACM_OK))
        return;
    MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, c);
    const size_t bytes = acm__planes_bytes(d, ops, m->depth, 0); /* the most a message takes */
    void *peer = NULL;
    if (!open_everywhere(sub, ops, c, id, (int)dc->rank, (int)dc->nslabs, bytes, &peer)) {
        if (peer != NULL)
            ops->peer_close(peer, true);
        return;
    }
    m->peer = peer;
    m->peer_close = ops->peer_close;
}

static void mpi_release(acm_decomp *dc)
{
    mpi_link *l = dc->comm;
    if (l == NULL)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&l->comm);
    acm__free(l);
    dc->comm = NULL;
}

static const acm_halo_transport acm_halo_mpi = {
    .name = "mpi",
    .post = mpi_post,
    .wait = mpi_wait,
    .gather = mpi_gather,
    .agree = mpi_agree,
    .sum = mpi_sum,
    .broadcast = mpi_broadcast,
    .connect = mpi_connect,
    .release = mpi_release,
};

acm_status acm__mpi_agree_create(const void *comm, acm_status local, char *msg, size_t size)
{
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
        snprintf(msg, size, "MPI is not initialised: call MPI_Init first");
        return ACM_ERR_BAD_STATE;
    }
    return agree_on(*(const MPI_Comm *)comm, local, msg, size);
}

acm_status acm__decomp_init_mpi(acm_domain *d, const struct acm_backend_ops *slab_ops,
                                const void *comm)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(*(const MPI_Comm *)comm, &rank);
    MPI_Comm_size(*(const MPI_Comm *)comm, &ranks);
    acm_status st = acm__decomp_setup(d, slab_ops, ranks, NULL);
    acm_decomp *dc = d->decomp;
    mpi_link *l = NULL;
    if (st == ACM_OK && (l = dc->comm = acm__calloc(1, sizeof *l)) == NULL)
        st = ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the communicator");
    if (st == ACM_OK) {
        MPI_Comm_dup(*(const MPI_Comm *)comm, &l->comm);
        dc->transport = &acm_halo_mpi;
        dc->rank = rank;
        for (int32_t p = 0; p < ranks; ++p)
            dc->owner[p] = p;
        st = d->ops->domain_init(d);
    }
    if (dc != NULL && dc->transport != NULL)
        return mpi_agree(d, st);
    return agree_on(*(const MPI_Comm *)comm, st, d->error, sizeof d->error);
}
