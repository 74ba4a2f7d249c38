/*
 * libacmlbm -- what every host unit of the CUDA backend uses: the mapping of
 * CUDA errors, device memory, the sizes and the kernels' arguments of a
 * domain's storage, its counters, the inbox of replayed runs' inputs. It
 * calls into no other unit, so that the units form no loop (test/floors.py).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy, memset */

#include <cuda.h> /* the driver's types of cu_load_kernels' entry points */

#include "alloc.h"
#include "backend_impl.cuh"
#include "pipeline.h" /* acm__domain_collide_params */

/* ---- errors ---------------------------------------------------------------- */

static bool sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
        return true;
    default:
        return false;
    }
}

acm_status cu_fail(acm_domain *d, cudaError_t e, const char *what)
{
    (void)cudaGetLastError(); /* clear a non-sticky error */
    acm_status st = ACM_ERR_DEVICE;
    if (e == cudaErrorMemoryAllocation)
        st = ACM_ERR_DEVICE_MEMORY;
    else if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
             e == cudaErrorInvalidDevice)
        st = ACM_ERR_NO_DEVICE;
    if (d->impl != NULL && sticky(e))
        IMPL(d)->broken = true;
    return ACM_FAIL(d, st, "%s: %s (%s)%s", what, cudaGetErrorName(e), cudaGetErrorString(e),
                    sticky(e) ? "; the device context is lost, destroy the domain" : "");
}

/* Make the domain's device current; refuse a broken context. Inside a run
 * of steps (acm_cuda_run_begin to acm_cuda_run_end, within one call of one
 * thread) it is current already: the run's begin entered it, and the steps'
 * host parts would otherwise set it three times a step (docs/performance.md,
 * "The enqueue of a frame"). */
acm_status cu_enter(acm_domain *d)
{
    if (IMPL(d)->broken)
        return ACM_FAIL(d, ACM_ERR_DEVICE,
                        "an earlier device fault left this domain unusable; destroy it");
    if (IMPL(d)->run.mode != CU_RUN_NONE)
        return ACM_OK;
    CU_TRY(d, cudaSetDevice(d->device));
    return ACM_OK;
}

acm_status cu_dev_alloc(acm_domain *d, void **p, size_t bytes, const char *what)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *p = NULL;
        (void)cudaGetLastError();
        return ACM_FAIL(d, e == cudaErrorMemoryAllocation ? ACM_ERR_DEVICE_MEMORY : ACM_ERR_DEVICE,
                        "cannot allocate %.3g GB of device memory for %s: %s", (double)bytes / 1e9,
                        what, cudaGetErrorString(e));
    }
    d->memory_bytes += bytes;
    return ACM_OK;
}

void cu_dev_free(acm_domain *d, void **p, size_t bytes)
{
    if (*p != NULL) {
        cudaFree(*p);
        d->memory_bytes -= bytes;
    }
    *p = NULL;
}

/* ---- kernels loaded up front -------------------------------------------------------- */

/* The driver calls that find and load a module's kernels (CUDA 12.5 and later). */
struct cu_loader {
    CUresult (*library)(CUlibrary *, CUkernel);
    CUresult (*count)(unsigned *, CUlibrary);
    CUresult (*list)(CUkernel *, unsigned, CUlibrary);
    CUresult (*function)(CUfunction *, CUkernel);
    CUresult (*load)(CUfunction);
};

static bool driver_call(const char *name, void **fn)
{
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    const bool ok = cudaGetDriverEntryPointByVersion(name, fn, 12050, cudaEnableDefault, &q) ==
                        cudaSuccess &&
                    q == cudaDriverEntryPointSuccess && *fn != NULL;
    (void)cudaGetLastError();
    return ok;
}

/* Every kernel of the module that holds `anchor`, loaded. */
static acm_status load_module(acm_domain *d, const cu_loader &L, const void *anchor)
{
    cudaKernel_t k = NULL;
    CUlibrary lib = NULL;
    unsigned count = 0;
    if (cudaGetKernel(&k, anchor) != cudaSuccess || L.library(&lib, (CUkernel)k) != CUDA_SUCCESS ||
        L.count(&count, lib) != CUDA_SUCCESS || count == 0) {
        (void)cudaGetLastError();
        return ACM_OK;
    }
    CUkernel *all = (CUkernel *)acm__malloc(count * sizeof *all);
    if (all == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot list %u kernels", count);
    if (L.list(all, count, lib) == CUDA_SUCCESS)
        for (unsigned i = 0; i < count; ++i) {
            CUfunction f = NULL;
            if (L.function(&f, all[i]) == CUDA_SUCCESS)
                (void)L.load(f); /* a failure shows at the kernel's launch, as before */
        }
    acm__free(all);
    return ACM_OK;
}

/* By default CUDA loads a kernel at its first launch: 3-5 ms in the first
 * frame of examples/game_loop on an H200, and up to 1 ms more in a later
 * frame that first re-sorts a solid (docs/performance.md, "Real time"). */
acm_status cu_load_kernels(acm_domain *d)
{
    cu_loader L;
    if (!driver_call("cuKernelGetLibrary", (void **)&L.library) ||
        !driver_call("cuLibraryGetKernelCount", (void **)&L.count) ||
        !driver_call("cuLibraryEnumerateKernels", (void **)&L.list) ||
        !driver_call("cuKernelGetFunction", (void **)&L.function) ||
        !driver_call("cuFuncLoad", (void **)&L.load))
        return ACM_OK;
    const void *anchors[32];
    const size_t n = acm_kernel_anchors(anchors, sizeof anchors / sizeof anchors[0]);
    for (size_t a = 0; a < n; ++a)
        ACM_TRY(load_module(d, L, anchors[a]));
    return ACM_OK;
}

/* ---- sizes ------------------------------------------------------------------ */



size_t cu_plane_bytes(const acm_domain *d) { return (size_t)d->ncells * IMPL(d)->real; }

/* The CSoA layout of a state array: the layout's group and 27 populations
 * per cell, or for moment storage a cell's slots together (alpha 1: the
 * fused step loads a source's moments as a few vectors, 8 or 16 bytes each,
 * instead of one load per moment; measured 2026-11-28, docs/performance.md),
 * ACM_MOMENTS of them (16-bit: ACM_MOM16_SLOTS). */
acm_csoa cu_state_layout(const acm_domain *d)
{
    if (!cu_moments(d)) {
        acm_csoa l = d->layout.csoa;
        l.beta = ACM_Q;
        return l;
    }
    return acm_csoa_pow2(0, d->layout.precision == ACM_PRECISION_FP16 ? ACM_MOM16_SLOTS
                                                                       : ACM_MOMENTS);
}

/* Bytes of one state array. */
size_t cu_state_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(cu_state_layout(d), (uint64_t)d->ncells) * (size_t)IMPL(d)->elem;
}


/* The per-plane sums of the ACM rules. */
size_t cu_planes_bytes(const acm_domain *d) { return (size_t)d->nz * sizeof(acm_plane_fixed); }

acm_gpu_grid cu_grid_of(const acm_domain *d)
{
    acm_gpu_grid g;
    memset(&g, 0, sizeof g); /* its padding too: graph keys compare bytes */
    g.nx = d->nx;
    g.ny = d->ny;
    g.nz = d->nz;
    g.ncells = (uint32_t)d->ncells;
    g.l = cu_state_layout(d);
    g.div_nx = acm_fastdiv_make((uint32_t)d->nx);
    g.div_ny = acm_fastdiv_make((uint32_t)d->ny);
    memcpy(g.face, d->setup.face, sizeof g.face);
    const cuda_impl *m = IMPL(d);
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        g.face_values[f] = d->face_values[f] != NULL ? m->face_dev[f] : NULL;
    memcpy(g.absorber, d->setup.absorber, sizeof g.absorber);
    g.origin_z = d->origin_z;
    g.whole_nz = d->whole_nz > 0 ? d->whole_nz : d->nz;
    g.state = cu_moments(d) ? ACM_STATE_MOMENTS
              : !m->in_place ? ACM_STATE_POST
                             : (m->parity ? ACM_STATE_AA_SWAP : ACM_STATE_AA_OWN);
    g.closure = cu_moments(d) ? acm_mom_closure(d->setup.coll.model) : 0;
    acm_inner_bounds(g);
    return g;
}

/* The grid of a population array of d's layout after a collision (two
 * arrays): moment storage passes physical states through one (backend_state.cu). */
acm_gpu_grid cu_pop_grid(const acm_domain *d)
{
    acm_gpu_grid g = cu_grid_of(d);
    g.l = d->layout.csoa;
    g.l.beta = ACM_Q;
    g.state = ACM_STATE_POST;
    return g;
}

/* The array that holds the state. */
void *cu_state_array(const cuda_impl *m) { return m->f[m->in_place ? 0 : m->cur]; }

/* Start of each population's storage inside each CSoA group, so that a
 * kernel adds only the cell's own offset (acm_cell_base). */
static void plane_pointers(const acm_domain *d, acm_step_args &a)
{
    const size_t elem = (size_t)IMPL(d)->elem;
    for (int i = 0; i < ACM_Q; ++i) {
        size_t off = (size_t)i * (size_t)d->layout.csoa.alpha * elem;
        a.src_plane[i] = (const char *)a.src + off;
        a.dst_plane[i] = (char *)a.dst + off;
    }
}

/* The gate of the state kernels of the step about to be enqueued: its index
 * in the batch from the host, or, in a graph, from the device's count. */
acm_gate cu_gate(const acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_gate g;
    g.bad = m->counters;
    g.step_key = (unsigned long long)m->batch_step << ACM_KEY_CELL_BITS;
    g.batch = NULL;
    if (m->capturing) { /* a graph's kernels: the same arguments at every replay */
        g.step_key = 0;
        g.batch = m->counters + 2;
    }
    return g;
}

/* Arguments of a kernel for the current state. */
acm_step_args cu_step_args(const acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a;
    memset(&a, 0, sizeof a);
    a.g = cu_grid_of(d);
    acm__domain_collide_params(d, &a.p);
    a.src = cu_state_array(m);
    a.dst = m->in_place ? m->f[0] : m->f[1 - m->cur];
    a.force = m->force;
    memcpy(a.force0, d->setup.body_force, sizeof a.force0);
    a.tau = m->tau;
    a.u2_limit = d->setup.max_speed * d->setup.max_speed;
    a.prev = m->sums + m->ring;
    a.partials = m->partials;
    a.planes = m->planes;
    const uint32_t nxy = (uint32_t)d->nx * (uint32_t)d->ny;
    a.live_lo = (uint32_t)d->halo[0] * nxy;
    a.live_hi = (uint32_t)(d->nz - d->halo[1]) * nxy;
    a.redo = m->redo;
    a.fallbacks = m->counters + 1;
    a.gate = cu_gate(d);
    a.ib_mask = m->ib.n > 0 ? m->ib.mask : NULL;
    a.ib_force = m->ib.force;
    a.first = 0;
    a.end = (uint32_t)d->ncells;
    plane_pointers(d, a);
    return a;
}

/* Whether the caller is capturing the domain's stream into a graph of its own
 * (or the stream cannot say): the library then adds nothing of its own there. */
bool cu_stream_captured(const cuda_impl *m)
{
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const bool said = cudaStreamIsCapturing(m->stream, &capture) == cudaSuccess;
    (void)cudaGetLastError();
    return !said || capture != cudaStreamCaptureStatusNone;
}

/* ---- counters ---------------------------------------------------------------- */

acm_status cu_reset_counters(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemsetAsync(m->counters, 0xff, sizeof(unsigned long long), m->stream));
    CU_TRY(d, cudaMemsetAsync(m->counters + 1, 0, 3 * sizeof(unsigned long long), m->stream));
    m->batch_step = 0;
    m->batch_mixed = false;
    /* what the device posted of the old batch (cu_check waited for it) */
    __atomic_store_n(&m->seen[1], 0ull, __ATOMIC_RELAXED);
    m->posted = false;
    return ACM_OK;
}

/* ---- the inputs of a replayed run: the inbox (kernels.cuh acm_launch_inbox) ---------------
 * A replay's inputs are written into a slot of a ring in mapped host memory
 * and read by its graph's first kernel: the host makes no call for them.
 * Every graph launched with inputs reads one slot, in the order the host
 * filled them (one stream: a stream is changed only once it is idle); the
 * host fills a slot again once the device says it has read it. */

acm_status cu_inbox_ready(acm_domain *d, size_t words)
{
    cuda_impl *m = IMPL(d);
    cu_inbox &b = m->inbox;
    const size_t need = 1 + words + 2 * (size_t)ACM_INBOX_SEGMENTS;
    if (b.host != NULL && b.slot_words >= need)
        return ACM_OK;
    CU_TRY(d, cudaStreamSynchronize(m->stream)); /* the replays that read the old ring */
    if (b.host != NULL)
        cudaFreeHost(b.host);
    b.host = NULL;
    b.dev = NULL;
    b.slot_words = 0;
    void *host = NULL, *dev = NULL;
    const size_t bytes = (size_t)ACM_INBOX_SLOTS * need * sizeof(uint64_t);
    cudaError_t e = cudaHostAlloc(&host, bytes, cudaHostAllocMapped);
    if (e == cudaSuccess && (e = cudaHostGetDevicePointer(&dev, host, 0)) != cudaSuccess)
        cudaFreeHost(host);
    if (e != cudaSuccess)
        return cu_fail(d, e, "allocating the inputs of replayed steps (mapped host memory)");
    b.host = (uint64_t *)host;
    b.dev = (const uint64_t *)dev;
    b.slot_words = need;
    return ACM_OK;
}

acm_status cu_inbox_open(acm_domain *d, cu_inbox_fill *f)
{
    cuda_impl *m = IMPL(d);
    cu_inbox &b = m->inbox;
    if (b.host == NULL)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "the inputs of a replay before their ring");
    for (int tries = 0; b.sent - __atomic_load_n(&m->seen[2], __ATOMIC_ACQUIRE) >= ACM_INBOX_SLOTS;
         ++tries) {
        if (tries > 0) /* the stream is idle: every replay has read its slot */
            return ACM_FAIL(d, ACM_ERR_INTERNAL, "the device read %llu slots of inputs, the "
                            "host filled %llu", (unsigned long long)m->seen[2], b.sent);
        CU_TRY(d, cudaStreamSynchronize(m->stream)); /* ACM_INBOX_SLOTS replays ahead */
    }
    f->slot = b.host + (b.sent % ACM_INBOX_SLOTS) * b.slot_words;
    f->room = b.slot_words - 1 - 2 * (size_t)ACM_INBOX_SEGMENTS;
    f->nseg = f->words = 0;
    return ACM_OK;
}

acm_status cu_inbox_add(acm_domain *d, cu_inbox_fill *f, void *dst, const void *src, size_t bytes)
{
    const size_t n = bytes / 8;
    if (bytes % 8 != 0 || (uintptr_t)dst % 8 != 0 || n > f->room - f->words)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "%zu bytes of a replay's inputs do not fit its slot",
                        bytes);
    if (n == 0)
        return ACM_OK;
    acm_inbox_segment *last = f->nseg > 0 ? &f->seg[f->nseg - 1] : NULL;
    if (last != NULL && (unsigned char *)last->dst + 8 * (size_t)last->words == dst) {
        last->words += (uint32_t)n; /* the bytes after the last segment's */
    } else {
        if (f->nseg == ACM_INBOX_SEGMENTS)
            return ACM_FAIL(d, ACM_ERR_INTERNAL, "a replay's inputs in more than %d pieces",
                            ACM_INBOX_SEGMENTS);
        f->seg[f->nseg++] = {dst, f->words, (uint32_t)n};
    }
    memcpy(f->slot + 1 + f->words, src, bytes);
    f->words += (uint32_t)n;
    return ACM_OK;
}

void cu_inbox_close(acm_domain *d, cu_inbox_fill *f)
{
    uint64_t *table = f->slot + 1 + f->words;
    for (uint32_t k = 0; k < f->nseg; ++k) {
        table[2 * k] = (uint64_t)(uintptr_t)f->seg[k].dst;
        table[2 * k + 1] = f->seg[k].first | (uint64_t)f->seg[k].words << 32;
    }
    f->slot[0] = f->nseg | (uint64_t)f->words << 32;
    ++IMPL(d)->inbox.sent;
}
