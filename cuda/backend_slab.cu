/*
 * libacmlbm -- the CUDA backend's side of a decomposed domain
 * (lib/multi/decomp.c): the slabs' plane sums, ghost planes got, put and
 * copied between slabs (through the host, by peer access or, between ranks,
 * by NCCL), and the plane sums shared between the slabs' devices.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memcpy */
#include <unistd.h> /* gethostname */

#include "alloc.h"
#include "backend_impl.cuh"
#if ACM_HAVE_NCCL
#include "halo_nccl.h"
#endif

/* ---- decomposition (lib/multi/decomp.c) -------------------------------------------------------- */

/* Into pinned memory kept for it: a decomposed domain reads them every step
 * (after its slabs stepped, when nothing may fail for want of memory). */
extern "C" acm_status acm_cuda_plane_sums(acm_domain *d, acm_plane_sums *out)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    const int32_t n = acm__own_planes(d);
    if (d->slab_sums_shared) /* the step's, where push_planes put them (a query since
                                may have summed the planes again) */
        ACM_TRY(cu_copy_planes_home(d, cu_shared_planes(d, d->step) + acm__own_origin(d)));
    else if (!m->planes_sent) /* not after a step: an initialisation, a load */
        ACM_TRY(cu_send_planes(d));
    m->planes_sent = false;
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    for (int32_t z = 0; z < n; ++z) {
        double v[4];
        acm_plane_value(m->host_planes[z], v);
        out[z] = acm_plane_sums{v[0], v[1], v[2], v[3]};
    }
    return ACM_OK;
}

/* Moment storage: a cell's moments lie together, cells in plane order
 * (cu_state_layout), so planes [z0, z0 + n) are one run of bytes of the
 * state array, moved as they are (every moment, whatever dz). */
static char *moment_planes(acm_domain *d, int32_t z0)
{
    return (char *)cu_state_array(IMPL(d)) + acm__planes_bytes(d, d->ops, z0, 0);
}

/* n planes of the state from z0 into device buffer buf, or (put) from buf into
 * them: the slots of acm_moves(dz, i) packed, or moment storage's moments. */
static cudaError_t move_stored(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf, bool put,
                               cudaStream_t s)
{
    cuda_impl *m = IMPL(d);
    const uint32_t plane = (uint32_t)d->nx * (uint32_t)d->ny;
    if (cu_moments(d)) {
        char *at = moment_planes(d, z0);
        return cudaMemcpyAsync(put ? at : buf, put ? buf : at, acm__planes_bytes(d, d->ops, n, dz),
                               cudaMemcpyDeviceToDevice, s);
    }
    return acm_launch_move_stored(cu_grid_of(d), cu_state_array(m), m->elem, false, buf, put, dz,
                                  (uint32_t)z0 * plane, (uint32_t)n * plane, s);
}

/* Moment storage's planes between the state and host memory, directly. */
static acm_status enqueue_moment_planes(acm_domain *d, int32_t z0, int32_t n, const void *in,
                                        void *out, cudaStream_t s, bool wait)
{
    char *at = moment_planes(d, z0);
    const size_t bytes = acm__planes_bytes(d, d->ops, n, 0);
    if (out == NULL)
        CU_TRY(d, cudaMemcpyAsync(at, in, bytes, cudaMemcpyHostToDevice, s));
    else
        CU_TRY(d, cudaMemcpyAsync(out, at, bytes, cudaMemcpyDeviceToHost, s));
    if (wait)
        CU_TRY(d, cudaStreamSynchronize(s));
    return ACM_OK;
}

/* Stored values of planes [z0, z0 + n) (the slots of acm_moves(dz, i), or
 * moment storage's moments) from the state into host memory out, or (out
 * NULL) from host memory in into the state, through the staging buffer in
 * chunks of whole cells, on stream s; with `wait` each chunk is
 * done before the next is enqueued (the host buffer may be pageable), else
 * the stream orders them (page-locked memory, planes_host_alloc). */
static acm_status enqueue_planes(acm_domain *d, int32_t z0, int32_t n, int dz, const void *in,
                                 void *out, cudaStream_t s, bool wait)
{
    if (cu_moments(d))
        return enqueue_moment_planes(d, z0, n, in, out, s, wait);
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    const size_t per_cell = (size_t)acm_moved_count(dz) * acm__precision_bytes(d->layout.precision);
    const uint32_t first = (uint32_t)z0 * (uint32_t)d->nx * (uint32_t)d->ny;
    const uint32_t count = (uint32_t)n * (uint32_t)d->nx * (uint32_t)d->ny;
    const bool put = out == NULL;
    const uint32_t chunk = (uint32_t)(ACM_STAGING_BYTES / per_cell);
    for (uint32_t c = 0; c < count; c += chunk) {
        const uint32_t k = count - c < chunk ? count - c : chunk;
        const size_t at = (size_t)c * per_cell;
        if (put)
            CU_TRY(d, cudaMemcpyAsync(m->staging, (const char *)in + at, (size_t)k * per_cell,
                                      cudaMemcpyHostToDevice, s));
        CU_TRY(d, acm_launch_move_stored(g, cu_state_array(m), m->elem, false, m->staging, put, dz,
                                         first + c, k, s));
        if (!put)
            CU_TRY(d, cudaMemcpyAsync((char *)out + at, m->staging, (size_t)k * per_cell,
                                      cudaMemcpyDeviceToHost, s));
        if (wait)
            CU_TRY(d, cudaStreamSynchronize(s)); /* staging is reused */
    }
    return ACM_OK;
}

static acm_status move_planes(acm_domain *d, int32_t z0, int32_t n, int dz, const void *in,
                              void *out)
{
    ACM_TRY(cu_enter(d));
    return enqueue_planes(d, z0, n, dz, in, out, IMPL(d)->stream, true);
}

/* On the side stream, after what the main stream holds (a split step: its
 * edges) and alongside what it is given next (the rest); done at
 * planes_wait. The side stream has the staging buffer until then. */
extern "C" acm_status acm_cuda_planes_get(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaEventRecord(m->marker, m->stream));
    CU_TRY(d, cudaStreamWaitEvent(m->side, m->marker, 0));
    ACM_TRY(enqueue_planes(d, z0, n, dz, NULL, buf, m->side, false));
    CU_TRY(d, cudaEventRecord(m->side_done, m->side));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_planes_wait(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    CU_TRY(d, cudaEventSynchronize(IMPL(d)->side_done));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_planes_put(acm_domain *d, int32_t z0, int32_t n, int dz,
                                          const void *buf)
{
    return move_planes(d, z0, n, dz, buf, NULL);
}

/* Page-locked: the copies above run at the link's speed, and asynchronously. */
extern "C" void *acm_cuda_planes_host_alloc(acm_domain *d, size_t bytes)
{
    void *p = NULL;
    if (cudaSetDevice(d->device) != cudaSuccess ||
        cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

extern "C" void acm_cuda_planes_host_free(void *p)
{
    if (p != NULL)
        cudaFreeHost(p);
}

#if ACM_HAVE_NCCL
/* ---- ghost planes between ranks by NCCL (cuda/halo_nccl.cu) ------------------------------- */

extern "C" acm_status acm_cuda_peer_id(acm_domain *d, void *id)
{
    char err[ACM_ERROR_SIZE];
    if (acm_nccl_make_id(id, ACM_PEER_ID_BYTES, err, sizeof err) != 0)
        return ACM_FAIL(d, ACM_ERR_DEVICE, "%s", err);
    return ACM_OK;
}

/* The host and the PCI bus id: CUDA ordinals differ between processes. */
extern "C" void acm_cuda_peer_device(acm_domain *d, char *key, size_t size)
{
    char host[64] = "", bus[32] = "";
    gethostname(host, sizeof host - 1);
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, d->device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(bus, sizeof bus, "device %d", (int)d->device);
    }
    snprintf(key, size, "%.63s/%.31s", host, bus);
}

extern "C" acm_status acm_cuda_peer_open(acm_domain *d, const void *id, int rank, int nranks,
                                         size_t bytes, const acm_peer_join *join, void **peer)
{
    ACM_TRY(cu_enter(d));
    char err[ACM_ERROR_SIZE];
    acm_nccl *c = NULL;
    if (acm_nccl_open(&c, id, rank, nranks, d->device, bytes, join->seconds, join->give_up,
                      join->ctx, err, sizeof err) != 0)
        return ACM_FAIL(d, ACM_ERR_DEVICE, "%s", err);
    *peer = c;
    return ACM_OK;
}

/* On the side stream after what the main stream holds (a split step: its
 * edges), beside the rest: the planes to send packed into their buffers, one
 * NCCL group, the planes received unpacked into the ghost planes (which the
 * rest of a step does not touch); peer_wait joins the main stream to it. */
extern "C" acm_status acm_cuda_peer_exchange(acm_domain *d, void *peer, const acm_peer_msg *msg,
                                             int n)
{
    ACM_TRY(cu_enter(d));
    if (n > ACM_NCCL_MESSAGES)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "%d NCCL messages in one exchange", n);
    cuda_impl *m = IMPL(d);
    acm_nccl *c = (acm_nccl *)peer;
    acm_nccl_msg group[ACM_NCCL_MESSAGES];
    /* the group is issued even after a failure here, so that no peer waits
     * for it in vain (its contents then do not matter: the step fails) */
    cudaError_t e = cudaEventRecord(m->marker, m->stream);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(m->side, m->marker, 0);
    for (int i = 0; i < n; ++i) {
        group[i].rank = msg[i].rank;
        group[i].buffer = i;
        group[i].send = msg[i].send;
        group[i].bytes = acm__planes_bytes(d, d->ops, msg[i].n, msg[i].dz);
        if (msg[i].send && e == cudaSuccess)
            e = move_stored(d, msg[i].z0, msg[i].n, msg[i].dz, acm_nccl_buffer(c, i), false,
                            m->side);
    }
    char err[ACM_ERROR_SIZE];
    const int grouped = acm_nccl_exchange(c, group, n, m->side, err, sizeof err);
    if (e != cudaSuccess)
        return cu_fail(d, e, "packing the ghost planes for NCCL");
    if (grouped != 0)
        return ACM_FAIL(d, ACM_ERR_DEVICE, "%s", err);
    for (int i = 0; i < n; ++i)
        if (!msg[i].send)
            CU_TRY(d, move_stored(d, msg[i].z0, msg[i].n, msg[i].dz, acm_nccl_buffer(c, i), true,
                                  m->side));
    CU_TRY(d, cudaEventRecord(m->side_done, m->side));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_peer_wait(acm_domain *d, void *peer, double seconds)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    char err[ACM_ERROR_SIZE];
    if (acm_nccl_wait((acm_nccl *)peer, m->side_done, seconds, err, sizeof err) != 0)
        return ACM_FAIL(d, ACM_ERR_DEVICE, "%s", err);
    CU_TRY(d, cudaStreamWaitEvent(m->stream, m->side_done, 0));
    return ACM_OK;
}

extern "C" void acm_cuda_peer_close(void *peer, bool abort)
{
    acm_nccl_close((acm_nccl *)peer, abort);
}
#endif

/* Whether dst's device reads src's memory directly (peer access, enabled here). */
static bool peer_reachable(acm_domain *dst, acm_domain *src)
{
    if (dst->device == src->device)
        return true;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, dst->device, src->device) != cudaSuccess || !can) {
        (void)cudaGetLastError();
        return false;
    }
    cudaSetDevice(dst->device);
    const cudaError_t e = cudaDeviceEnablePeerAccess(src->device, 0);
    (void)cudaGetLastError(); /* cudaErrorPeerAccessAlreadyEnabled is fine */
    return e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
}

/* Through the host, for devices that cannot reach each other. */
static acm_status planes_copy_staged(acm_domain *dst, int32_t dst_z, acm_domain *src,
                                     int32_t src_z, int32_t n, int dz)
{
    const size_t bytes = acm__planes_bytes(src, src->ops, n, dz);
    void *host = acm__malloc(bytes);
    if (host == NULL)
        return ACM_FAIL(dst, ACM_ERR_NO_MEMORY, "cannot allocate %zu bytes for ghost planes", bytes);
    acm_status st = move_planes(src, src_z, n, dz, NULL, host);
    if (st != ACM_OK)
        acm__format(dst->error, sizeof dst->error, "%s", src->error);
    else
        st = move_planes(dst, dst_z, n, dz, host, NULL);
    acm__free(host);
    return st;
}

/* src's planes into dst's on dst's side stream, after both streams' work so
 * far (a slab's split step: its edges) and alongside what follows (the rest
 * of the step), with events, no host wait; across devices by peer access. */
extern "C" acm_status acm_cuda_planes_copy(acm_domain *dst, int32_t dst_z, acm_domain *src,
                                           int32_t src_z, int32_t n, int dz)
{
    ACM_TRY(cu_enter(src));
    ACM_TRY(cu_enter(dst));
    if (!peer_reachable(dst, src))
        return planes_copy_staged(dst, dst_z, src, src_z, n, dz);
    cuda_impl *md = IMPL(dst), *ms = IMPL(src);
    const uint32_t plane = (uint32_t)src->nx * (uint32_t)src->ny;
    CU_TRY(dst, cudaSetDevice(src->device));
    CU_TRY(dst, cudaEventRecord(ms->marker, ms->stream));
    CU_TRY(dst, cudaSetDevice(dst->device));
    CU_TRY(dst, cudaStreamWaitEvent(md->side, ms->marker, 0));
    CU_TRY(dst, cudaEventRecord(md->marker, md->stream));
    CU_TRY(dst, cudaStreamWaitEvent(md->side, md->marker, 0));
    if (cu_moments(dst)) /* both of one layout: the moments as stored */
        CU_TRY(dst, cudaMemcpyPeerAsync(moment_planes(dst, dst_z), dst->device,
                                        moment_planes(src, src_z), src->device,
                                        acm__planes_bytes(src, src->ops, n, dz), md->side));
    else
        CU_TRY(dst, acm_launch_copy_stored(cu_grid_of(dst), cu_state_array(md),
                                           (uint32_t)dst_z * plane, cu_grid_of(src),
                                           cu_state_array(ms), (uint32_t)src_z * plane,
                                           (uint32_t)n * plane, dz, md->elem, md->side));
    return ACM_OK;
}

/* dst's and src's streams wait for the copies into dst so far. */
extern "C" acm_status acm_cuda_planes_join(acm_domain *dst, acm_domain *src)
{
    ACM_TRY(cu_enter(src));
    ACM_TRY(cu_enter(dst));
    cuda_impl *md = IMPL(dst), *ms = IMPL(src);
    CU_TRY(dst, cudaEventRecord(md->side_done, md->side));
    CU_TRY(dst, cudaStreamWaitEvent(md->stream, md->side_done, 0));
    CU_TRY(dst, cudaSetDevice(src->device));
    CU_TRY(dst, cudaStreamWaitEvent(ms->stream, md->side_done, 0));
    CU_TRY(dst, cudaSetDevice(dst->device));
    return ACM_OK;
}

/* What acm_cuda_sums_share made (on d's device, nothing pushing into it). */
void cu_share_release(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    for (int k = 0; k < 2; ++k) {
        cu_dev_free(d, (void **)&m->whole[k], (size_t)d->whole_nz * sizeof(acm_plane_fixed));
        if (m->pushed[k] != NULL)
            cudaEventDestroy(m->pushed[k]);
        m->pushed[k] = NULL;
    }
    acm__free(m->peers);
    m->peers = NULL;
    m->npeers = 0;
    d->slab_sums_shared = false;
    (void)cudaGetLastError();
}

/* d joins the slabs that fold the ACM rules' inputs on their devices (every
 * slab of a decomposed domain, d among them, in one process): the first one
 * holds the buffers they all push into and fold from, d's device reading them
 * by peer access (ACM_ERR_UNSUPPORTED where it cannot: the host folds). */
extern "C" acm_status acm_cuda_sums_share(acm_domain *d, acm_domain *const *slabs, int32_t n)
{
    ACM_TRY(cu_enter(d));
    if (!peer_reachable(d, slabs[0]))
        return ACM_ERR_UNSUPPORTED;
    ACM_TRY(cu_enter(d)); /* peer_reachable may leave another device current */
    cuda_impl *m = IMPL(d);
    m->peers = (acm_domain **)acm__calloc((size_t)n, sizeof *m->peers);
    if (m->peers == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the list of %d slabs", (int)n);
    memcpy(m->peers, slabs, (size_t)n * sizeof *slabs);
    m->npeers = n;
    for (int k = 0; k < 2; ++k) {
        if (d == slabs[0])
            ACM_TRY(cu_dev_alloc(d, (void **)&m->whole[k],
                              (size_t)d->whole_nz * sizeof(acm_plane_fixed),
                              "the whole domain's plane sums"));
        CU_TRY(d, cudaEventCreateWithFlags(&m->pushed[k], cudaEventDisableTiming));
    }
    return ACM_OK;
}

/* d leaves them (before any of them is released: what the others enqueued
 * may still push into or fold from the first one's buffers). */
extern "C" void acm_cuda_sums_unshare(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m == NULL)
        return;
    for (int32_t q = 0; q < m->npeers; ++q) {
        cuda_impl *p = IMPL(m->peers[q]);
        if (!p->broken && cudaSetDevice(m->peers[q]->device) == cudaSuccess)
            (void)cudaStreamSynchronize(p->stream);
    }
    (void)cudaSetDevice(d->device);
    cu_share_release(d);
}
