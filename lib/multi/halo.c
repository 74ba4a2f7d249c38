/*
 * libacmlbm -- the exchange between the slabs of a decomposed domain
 * (lib/multi/halo.h). SPDX-License-Identifier: Apache-2.0
 *
 * After every step, the ghost planes at each end of a slab (m->depth of them:
 * 1 with two arrays, 2 in place, and one more per multi-direct-forcing
 * iteration with solids) get as many
 * planes of the neighbour they copy: the neighbour's first planes above a
 * slab, its last below. The populations move as stored: all 27, so that
 * the ghost planes are what the neighbour holds whatever the streaming
 * scheme, or with one ghost plane only the 9 the slab pulls from it
 * (ghost_dz); a transfer is depth x 27 (or 9) x nx x ny stored values.
 * A backend that stores moment storage's moments (the GPU) moves a cell's
 * 10 moments instead, whatever the depth (acm__moved_values).
 * Between slabs of this process the backend
 * copies them directly (planes_copy: device to device on a GPU); to and from
 * other processes they go through host buffers and the transport, or
 * between GPUs through the slabs' peer communicator (NCCL) where every
 * process could open one.
 */
#include <string.h> /* memcpy */

#include "alloc.h"
#include "backend.h"
#include "halo.h"
#include "moments.h" /* ACM_MOMENTS */
#include "state.h"

#define IMPL(d) ((acm_slabs *)(d)->impl)

/* The slab whose planes fill slab p's ghost planes at end e (0 below, 1 above). */
static int32_t neighbour(const acm_slabs *m, int32_t p, int e)
{
    return e == 0 ? (p + m->n - 1) % m->n : (p + 1) % m->n;
}

/* Where they come from in the neighbour q and go to in p (slab-local planes),
 * m->depth planes at every cut. */
static int32_t source_plane(const acm_slabs *m, const acm_slab *q, int e)
{
    return e == 0 ? q->halo[0] + (q->z1 - q->z0) - m->depth : q->halo[0];
}

static int32_t target_plane(const acm_slabs *m, const acm_slab *p, int e)
{
    return e == 0 ? 0 : p->halo[0] + (p->z1 - p->z0) + p->halo[1] - m->depth;
}

/* The populations the ghost planes at end e need (acm_moves). One ghost
 * plane (two arrays, no solids) is read by nothing but the pulls of the
 * slab's first plane across the cut: the 9 populations moving into the slab,
 * c_z = +1 below it and -1 above. More are stepped or interpolated (in
 * place, solids): all 27. */
static int ghost_dz(const acm_slabs *m, int e)
{
    return m->depth == 1 ? (e == 0 ? 1 : -1) : 0;
}

/* Bytes of the ghost planes at end e. */
static size_t transfer_bytes(const acm_domain *d, int e)
{
    const acm_slabs *m = IMPL(d);
    return acm__planes_bytes(d, d->decomp->slab_ops, m->depth, ghost_dz(m, e));
}

/* Whether the ghost planes at end e of slab p pass through this process. */
static bool involves_us(const acm_domain *d, int32_t p, int e)
{
    const acm_slabs *m = IMPL(d);
    return m->slab[p].halo[e] > 0 &&
           (m->slab[p].local || m->slab[neighbour(m, p, e)].local);
}

/* Ghost planes at end e of slab p from a neighbour in this process, directly. */
static bool copied_directly(const acm_domain *d, int32_t p, int e)
{
    const acm_slabs *m = IMPL(d);
    return d->decomp->slab_ops->planes_copy != NULL && m->slab[p].local &&
           m->slab[neighbour(m, p, e)].local;
}

/* A host buffer for the planes at end e of slab p, of the backend of the
 * local slab of the two (page-locked on a GPU). */
static void *ghost_alloc(acm_domain *d, int32_t p, int e)
{
    acm_slabs *m = IMPL(d);
    const struct acm_backend_ops *ops = d->decomp->slab_ops;
    if (ops->planes_host_alloc == NULL)
        return acm__malloc(transfer_bytes(d, e));
    const acm_slab *sl = &m->slab[p];
    acm_domain *local = sl->local ? sl->sub : m->slab[neighbour(m, p, e)].sub;
    m->ghost_free = ops->planes_host_free;
    return ops->planes_host_alloc(local, transfer_bytes(d, e));
}

acm_status acm__halo_init(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    m->ghost = acm__calloc(2 * (size_t)m->n, sizeof *m->ghost);
    if (m->ghost == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the ghost plane table");
    for (int32_t p = 0; p < m->n; ++p)
        for (int e = 0; e < 2; ++e)
            if (involves_us(d, p, e) && !copied_directly(d, p, e) &&
                (m->ghost[2 * p + e] = ghost_alloc(d, p, e)) == NULL)
                return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                                "cannot allocate %.3g MB for the ghost planes of slab %d",
                                (double)transfer_bytes(d, e) / 1e6, (int)p);
    return ACM_OK;
}

void acm__halo_connect(acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    if (dc->transport != NULL && dc->transport->connect != NULL)
        dc->transport->connect(d);
}

void acm__halo_fini(acm_slabs *m)
{
    if (m->peer != NULL)
        m->peer_close(m->peer, false);
    m->peer = NULL;
    if (m->ghost != NULL)
        for (int32_t g = 0; g < 2 * m->n; ++g) {
            if (m->ghost_free != NULL)
                m->ghost_free(m->ghost[g]);
            else
                acm__free(m->ghost[g]);
        }
    acm__free(m->ghost);
    m->ghost = NULL;
}

void acm__halo_release(acm_decomp *dc)
{
    if (dc->transport != NULL)
        dc->transport->release(dc);
}

/* Ghost planes at end e of slab p copied directly: begin started the copy. */
static acm_status copy_directly(acm_domain *d, int32_t p, int e)
{
    const acm_slabs *m = IMPL(d);
    const acm_slab *sl = &m->slab[p], *q = &m->slab[neighbour(m, p, e)];
    return acm__slab_failed(d, p,
                            d->decomp->slab_ops->planes_copy(sl->sub, target_plane(m, sl, e),
                                                             q->sub, source_plane(m, q, e),
                                                             m->depth, ghost_dz(m, e)));
}

/* A crossing of ghost planes between this process and another: those at end
 * e of slab p, sent (p's neighbour is ours, p is not) or received (p is
 * ours, its neighbour not), from or to process `rank`. */
typedef struct halo_route {
    int32_t p;
    int e;
    int32_t rank;
    bool send;
} halo_route;

/* This process's crossings, slabs and ends ascending: the same order on
 * every process, which is how a peer communicator pairs them. Over a
 * transport each process steps one slab (acm__decomp_init_mpi): at most one
 * send and one receive at each end. */
static acm_status routes(acm_domain *d, halo_route r[ACM_PEER_MESSAGES], int *n)
{
    acm_slabs *m = IMPL(d);
    const acm_decomp *dc = d->decomp;
    int sends = 0, recvs = 0;
    *n = 0;
    for (int32_t p = 0; p < m->n; ++p)
        for (int e = 0; e < 2; ++e) {
            const int32_t nb = neighbour(m, p, e);
            const bool ours = m->slab[p].local, theirs_ours = m->slab[nb].local;
            if (!involves_us(d, p, e) || copied_directly(d, p, e) || (ours && theirs_ours))
                continue;
            const bool send = theirs_ours;
            if ((send && sends == 2) || (!send && recvs == 2))
                return ACM_FAIL(d, ACM_ERR_BAD_STATE,
                                "more than one slab in a process of a decomposition over ranks");
            sends += send;
            recvs += !send;
            const halo_route route = {p, e, dc->owner[send ? p : nb], send};
            r[(*n)++] = route;
        }
    return ACM_OK;
}

/* The crossings as messages of host buffers (the transport's). */
static acm_status messages(acm_domain *d, acm_halo_msg recv[2], int *nrecv, acm_halo_msg send[2],
                           int *nsend)
{
    acm_slabs *m = IMPL(d);
    halo_route r[ACM_PEER_MESSAGES];
    int n = 0;
    *nrecv = *nsend = 0;
    ACM_TRY(routes(d, r, &n));
    for (int i = 0; i < n; ++i) {
        const int g = 2 * r[i].p + r[i].e;
        const acm_halo_msg msg = {r[i].rank, g, m->ghost[g], transfer_bytes(d, r[i].e)};
        if (r[i].send)
            send[(*nsend)++] = msg;
        else
            recv[(*nrecv)++] = msg;
    }
    return ACM_OK;
}

/* The planes local slabs pass through the host, into their buffers: started
 * (when `start`) or waited for. */
static acm_status host_planes(acm_domain *d, bool start)
{
    acm_slabs *m = IMPL(d);
    const struct acm_backend_ops *ops = d->decomp->slab_ops;
    acm_status st = ACM_OK;
    for (int32_t p = 0; p < m->n; ++p)
        for (int e = 0; e < 2; ++e) {
            const int32_t nb = neighbour(m, p, e);
            const acm_slab *q = &m->slab[nb];
            if (!involves_us(d, p, e) || copied_directly(d, p, e) || !q->local || st != ACM_OK)
                continue;
            acm_status s = ACM_OK;
            if (start)
                s = ops->planes_get(q->sub, source_plane(m, q, e), m->depth, ghost_dz(m, e),
                                    m->ghost[2 * p + e]);
            else if (ops->planes_wait != NULL)
                s = ops->planes_wait(q->sub);
            st = acm__slab_failed(d, nb, s);
        }
    return st;
}

/* The crossings as the planes they carry (a peer exchange). */
static int peer_messages(acm_domain *d, acm_peer_msg msg[ACM_PEER_MESSAGES])
{
    acm_slabs *m = IMPL(d);
    halo_route r[ACM_PEER_MESSAGES];
    int n = 0;
    if (routes(d, r, &n) != ACM_OK) /* not with a peer communicator: one slab a process */
        return 0;
    for (int i = 0; i < n; ++i) {
        const acm_slab *sl = &m->slab[r[i].p], *q = &m->slab[neighbour(m, r[i].p, r[i].e)];
        const int dz = ghost_dz(m, r[i].e);
        const acm_peer_msg send = {r[i].rank, source_plane(m, q, r[i].e), m->depth, true, dz};
        const acm_peer_msg recv = {r[i].rank, target_plane(m, sl, r[i].e), m->depth, false, dz};
        msg[i] = r[i].send ? send : recv;
    }
    return n;
}

/* A peer communicator's process steps one slab, its rank's (acm__decomp_init_mpi). */
static acm_domain *peer_slab(acm_domain *d)
{
    return IMPL(d)->slab[d->decomp->rank].sub;
}

/* Over a peer communicator (m->peer): the exchange enqueued; waited for. */
static acm_status peer_begin(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    acm_peer_msg msg[ACM_PEER_MESSAGES];
    const int n = peer_messages(d, msg);
    m->posted = true;
    return n == 0 ? ACM_OK
                  : acm__slab_failed(d, (int32_t)d->decomp->rank,
                                     d->decomp->slab_ops->peer_exchange(peer_slab(d), m->peer,
                                                                        msg, n));
}

static acm_status peer_end(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    acm_peer_msg msg[ACM_PEER_MESSAGES];
    m->posted = false;
    if (peer_messages(d, msg) == 0)
        return ACM_OK;
    return acm__slab_failed(d, (int32_t)d->decomp->rank,
                            d->decomp->slab_ops->peer_wait(peer_slab(d), m->peer,
                                                           ACM_HALO_WAIT_SECONDS));
}

/* Begin copies between local slabs, starts the copies of the planes that
 * leave the process into host buffers, posts the receives; end waits for
 * those copies, posts the sends, waits, unpacks. With a peer communicator
 * begin enqueues one exchange of the slab's planes instead and end waits
 * for it. Every message is posted even after a local failure (its contents
 * then do not matter: end agrees on the failure). */
acm_status acm__halo_exchange_begin(acm_domain *d)
{
    acm_slabs *m = IMPL(d);
    const acm_decomp *dc = d->decomp;
    acm_status st = ACM_OK;
    for (int32_t p = 0; p < m->n && st == ACM_OK; ++p)
        for (int e = 0; e < 2 && st == ACM_OK; ++e)
            if (m->slab[p].halo[e] > 0 && copied_directly(d, p, e))
                st = copy_directly(d, p, e);
    if (m->peer != NULL) {
        const acm_status sent = peer_begin(d);
        return st != ACM_OK ? st : sent;
    }
    acm_halo_msg recv[2], send[2];
    int nrecv = 0, nsend = 0;
    const acm_status listed = messages(d, recv, &nrecv, send, &nsend);
    if (listed != ACM_OK)
        return listed;
    st = st != ACM_OK ? st : host_planes(d, true);
    if (dc->transport != NULL) {
        const acm_status posted = dc->transport->post(d, recv, nrecv, NULL, 0);
        m->posted = true;
        st = st != ACM_OK ? st : posted;
    }
    return st;
}

acm_status acm__halo_exchange_end(acm_domain *d, acm_status begun)
{
    acm_slabs *m = IMPL(d);
    const acm_decomp *dc = d->decomp;
    acm_status st = begun;
    const bool peer = m->peer != NULL;
    const acm_status got = peer ? (m->posted ? peer_end(d) : ACM_OK) : host_planes(d, false);
    st = st != ACM_OK ? st : got;
    if (m->posted && !peer) {
        m->posted = false;
        acm_halo_msg recv[2], send[2];
        int nrecv = 0, nsend = 0;
        const acm_status listed = messages(d, recv, &nrecv, send, &nsend); /* as in begin */
        const acm_status posted = dc->transport->post(d, NULL, 0, send, nsend);
        const acm_status waited = dc->transport->wait(d);
        st = st != ACM_OK ? st : listed != ACM_OK ? listed : posted != ACM_OK ? posted : waited;
    }
    for (int32_t p = 0; p < m->n; ++p)
        for (int e = 0; e < 2; ++e) {
            acm_slab *sl = &m->slab[p];
            if (!sl->local || sl->halo[e] == 0)
                continue;
            acm_status s = ACM_OK;
            if (!copied_directly(d, p, e)) { /* unpack into the local slab's ghost planes */
                if (st == ACM_OK && !peer) /* a peer exchange unpacked them */
                    s = sl->sub->ops->planes_put(sl->sub, target_plane(m, sl, e), m->depth,
                                                 ghost_dz(m, e),
                                                 m->ghost[2 * p + e]);
            } else if (dc->slab_ops->planes_join != NULL) { /* even after a failure */
                s = dc->slab_ops->planes_join(sl->sub, m->slab[neighbour(m, p, e)].sub);
            }
            if (s != ACM_OK && st == ACM_OK)
                st = acm__slab_failed(d, p, s);
        }
    st = acm__halo_agree(d, st);
    if (st != ACM_OK && peer) { /* every process: the ghost planes go through the host now */
        m->peer_close(m->peer, true);
        m->peer = NULL;
    }
    return st;
}

acm_status acm__halo_exchange(acm_domain *d)
{
    return acm__halo_exchange_end(d, acm__halo_exchange_begin(d));
}

/* ---- collective pieces -------------------------------------------------------------- */

acm_status acm__halo_gather_planes(acm_domain *d)
{
    const acm_decomp *dc = d->decomp;
    return dc->transport == NULL
               ? ACM_OK
               : dc->transport->gather(d, IMPL(d)->planes, sizeof(acm_plane_sums));
}

acm_status acm__halo_gather_cells(acm_domain *d, size_t cell_bytes, void *dst)
{
    const acm_decomp *dc = d->decomp;
    return dc->transport == NULL
               ? ACM_OK
               : dc->transport->gather(d, dst, cell_bytes * (size_t)d->nx * (size_t)d->ny);
}

acm_status acm__halo_gather_state(acm_domain *d, acm_state *st)
{
    ACM_TRY(acm__halo_gather_cells(d, ACM_Q * sizeof(double), st->f));
    if (st->mom != NULL)
        ACM_TRY(acm__halo_gather_cells(d, ACM_MOMENTS * sizeof(double), st->mom));
    if (st->force != NULL)
        ACM_TRY(acm__halo_gather_cells(d, 3 * sizeof(double), st->force));
    if (st->tau != NULL)
        ACM_TRY(acm__halo_gather_cells(d, sizeof(double), st->tau));
    if (st->ib_force != NULL)
        ACM_TRY(acm__halo_gather_cells(d, 3 * sizeof(double), st->ib_force));
    return ACM_OK;
}

acm_status acm__halo_agree(acm_domain *d, acm_status local)
{
    const acm_decomp *dc = d->decomp;
    return dc->transport == NULL ? local : dc->transport->agree(d, local);
}

bool acm__halo_all(acm_domain *d, bool local)
{
    const acm_decomp *dc = d->decomp;
    if (dc->transport == NULL)
        return local;
    double v = local ? 0.0 : 1.0;
    return dc->transport->sum(d, &v, 1, NULL) == ACM_OK && v == 0.0;
}

int64_t acm__halo_sum(acm_domain *d, int64_t local)
{
    const acm_decomp *dc = d->decomp;
    double v = (double)local; /* counts below 2^53 */
    if (dc->transport != NULL && dc->transport->sum(d, &v, 1, NULL) != ACM_OK)
        return local;
    return (int64_t)v;
}

acm_status acm__halo_sum_doubles(acm_domain *d, double *v, int n, double *max)
{
    const acm_decomp *dc = d->decomp;
    return dc->transport == NULL ? ACM_OK : dc->transport->sum(d, v, n, max);
}

acm_status acm__halo_broadcast(acm_domain *d, int32_t slab, void *buf, size_t bytes)
{
    const acm_decomp *dc = d->decomp;
    return dc->transport == NULL ? ACM_OK
                                 : dc->transport->broadcast(d, dc->owner[slab], buf, bytes);
}
