/*
 * libacmlbm -- the CUDA backend: device memory, the domain's stream, the
 * step sequence of each kernel structure, error mapping. Everything crosses
 * into lib/ through the extern "C" functions declared in cuda/backend_cuda.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcpy */
#include <unistd.h> /* gethostname */

#include "alloc.h"
#include "backend_cuda.h"
#if ACM_HAVE_NCCL
#include "halo_nccl.h"
#endif
#include "kernels.cuh"
#include "pipeline.h" /* acm__step_check, acm__step_pipeline */
#include "smoke.h"
#include "solid.h"
#include "state.h"

#define ACM_KEY_CELL_BITS 36
#define ACM_NO_KEY 0xffffffffffffffffull
/* Field transfers go in chunks of this: 64 MiB moves at full PCIe speed and
 * costs 4 B/cell at 256^3 (256 MiB cost 16, docs/performance.md). */
#define ACM_STAGING_BYTES ((size_t)64 << 20)

/* Immersed-boundary storage (see acm_ib_args); host_ft is pinned. */
struct cuda_ib {
    uint64_t n;
    double *X, *r;
    void *ub, *dv, *alpha, *G, *Gsum, *rho;
    void *macro, *force;
    uint32_t *mask;
    uint32_t *band;       /* the marked cells, then their count (band[band_cap]) */
    uint64_t band_cap;
    bool band_valid;      /* mask and band hold the support of the samples' positions */
    acm_gpu_sums *partials, *ft, *host_ft; /* ft: 2 per solid, then 4 of coupling */
    size_t partial_bytes, ft_bytes;
    double *centre;       /* host, 3 per solid: the torque centres of the last step */
    void *scratch;        /* gather cell lists */
    size_t scratch_bytes;
    int32_t nsolids, spread;  /* what the storage was sized for, with n ... */
    uint64_t region, most;    /* ... and ib_extents */
};

struct cuda_impl {
    acm_gpu_elem elem;
    size_t real;          /* bytes of the arithmetic type: 4 or 8 */
    unsigned block;       /* threads per block of the per-cell kernels */
    void *f[2];           /* stored populations (CSoA); f[1] NULL in place */
    int cur;              /* two arrays: f[cur] holds the current post-collision state */
    bool in_place;        /* ACM_STREAMING_IN_PLACE: f[0] only, the AA pattern */
    int parity;           /* in place: 0 = physical state (ACM_STATE_AA_OWN), 1 = swapped */
    void *tmp, *mom;      /* split/baseline: streamed populations, relaxed moments */
    void *macro;          /* split/baseline: rho - 1, ux, uy, uz planes */
    uint32_t *redo;       /* cells the safety net must redo, a bit each (acm_redo_words) */
    void *force;          /* per-cell force planes (arithmetic type) or NULL */
    void *tau;            /* ACM_LI2020 per-cell tau* or NULL */
    acm_gpu_sums *sums;   /* [0..1]: ring of step sums; [2..3]: diagnostics */
    int ring;             /* sums[ring] holds the previous step's sums */
    acm_gpu_sums *partials;
    acm_plane_fixed *planes; /* nz: the ACM rules' sums of each plane (acm_plane_add) */
    acm_plane_fixed *host_planes; /* pinned copy (acm_cuda_plane_sums) */
    bool planes_sent;     /* the last step enqueued that copy */
    /* GPU slabs of one process (acm_cuda_sums_share): the first slab's, every
     * slab's plane sums of a step, by its parity; the events after which this
     * slab's are there; the slabs (this one among them), 0 when not shared */
    acm_plane_fixed *whole[2];
    cudaEvent_t pushed[2];
    acm_domain **peers;
    int32_t npeers;
    void *sum_scratch;    /* acm_launch_sum_partials' stage and counter */
    unsigned long long *counters;      /* [0] divergence key, [1] fallbacks */
    unsigned long long *host_counters; /* pinned copy */
    acm_gpu_sums *host_sums;           /* pinned [2] */
    void *staging;        /* device buffer of ACM_STAGING_BYTES for field transfers */
    float *vis;           /* acm_cuda_domain_map_fields: rho, then u interleaved */
    float *smoke_u;       /* the velocity smoke particles move with, 3 per cell */
    bool smoke_capture;   /* the next step writes it (acm_cuda_smoke_velocity) */
    double *probe;        /* acm_domain_sample_velocity: points, then velocities */
    size_t probe_bytes;
    cudaStream_t stream;
    cudaEvent_t marker;   /* orders work between this domain's stream and another's */
    cudaStream_t side;    /* a slab's: the copies into its ghost planes (planes_copy) */
    cudaEvent_t side_done;
    bool split;           /* advance_edges stepped the edges of part: advance_rest the rest */
    acm_step_args part;
    bool own_stream;
    bool broken;          /* a sticky device error: the context is unusable */
    int64_t batch_step;   /* steps since the divergence key was reset */
    cuda_ib ib;
};

#define IMPL(d) ((cuda_impl *)(d)->impl)

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

static acm_status cuda_fail(acm_domain *d, cudaError_t e, const char *what)
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

#define CU_TRY(d, call)                                                                    \
    do {                                                                                   \
        cudaError_t cu_e_ = (call);                                                        \
        if (cu_e_ != cudaSuccess)                                                          \
            return cuda_fail((d), cu_e_, #call);                                           \
    } while (0)

/* Make the domain's device current; refuse a broken context. */
static acm_status enter(acm_domain *d)
{
    if (IMPL(d)->broken)
        return ACM_FAIL(d, ACM_ERR_DEVICE,
                        "an earlier device fault left this domain unusable; destroy it");
    CU_TRY(d, cudaSetDevice(d->device));
    return ACM_OK;
}

static acm_status dev_alloc(acm_domain *d, void **p, size_t bytes, const char *what)
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

static void dev_free(acm_domain *d, void **p, size_t bytes)
{
    if (*p != NULL) {
        cudaFree(*p);
        d->memory_bytes -= bytes;
    }
    *p = NULL;
}

static void ib_release(acm_domain *d, bool cells);
static void share_release(acm_domain *d);

/* ---- sizes ------------------------------------------------------------------ */

static size_t pop_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * (size_t)IMPL(d)->elem;
}

static size_t mom_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * IMPL(d)->real;
}

static size_t plane_bytes(const acm_domain *d) { return (size_t)d->ncells * IMPL(d)->real; }

/* Block sums: one per block of the per-cell kernels (at least 32 threads),
 * two per block of the diagnostics (256 threads). */
static unsigned partial_count(const acm_domain *d)
{
    return 2 * acm_blocks((uint64_t)d->ncells, IMPL(d)->block) + 2;
}

/* The per-plane sums of the ACM rules. */
static size_t planes_bytes(const acm_domain *d) { return (size_t)d->nz * sizeof(acm_plane_fixed); }

static acm_gpu_grid grid_of(const acm_domain *d)
{
    acm_gpu_grid g;
    g.nx = d->nx;
    g.ny = d->ny;
    g.nz = d->nz;
    g.ncells = (uint32_t)d->ncells;
    g.l = d->layout.csoa;
    g.div_nx = acm_fastdiv_make((uint32_t)d->nx);
    g.div_ny = acm_fastdiv_make((uint32_t)d->ny);
    memcpy(g.face, d->setup.face, sizeof g.face);
    const cuda_impl *m = IMPL(d);
    g.state = !m->in_place ? ACM_STATE_POST : (m->parity ? ACM_STATE_AA_SWAP : ACM_STATE_AA_OWN);
    acm_inner_bounds(g);
    return g;
}

/* The array that holds the state. */
static void *state_array(const cuda_impl *m) { return m->f[m->in_place ? 0 : m->cur]; }

/* The array to write a physical state into before adopt_physical_state. */
static void *physical_target(const cuda_impl *m) { return m->f[m->in_place ? 0 : 1 - m->cur]; }

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

/* Arguments of a kernel for the current state. */
static acm_step_args step_args(const acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a;
    memset(&a, 0, sizeof a);
    a.g = grid_of(d);
    acm__domain_collide_params(d, &a.p);
    a.src = state_array(m);
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
    a.bad = m->counters;
    a.step_key = (unsigned long long)m->batch_step << ACM_KEY_CELL_BITS;
    a.ib_mask = m->ib.n > 0 ? m->ib.mask : NULL;
    a.ib_force = m->ib.force;
    a.first = 0;
    a.end = (uint32_t)d->ncells;
    plane_pointers(d, a);
    return a;
}

/* ---- lifecycle ----------------------------------------------------------------- */

extern "C" bool acm_cuda_probe(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return n > 0;
}

static acm_status reset_counters(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemsetAsync(m->counters, 0xff, sizeof(unsigned long long), m->stream));
    CU_TRY(d, cudaMemsetAsync(m->counters + 1, 0, sizeof(unsigned long long), m->stream));
    m->batch_step = 0;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_domain_init(acm_domain *d)
{
    if ((uint64_t)d->ncells >= ((uint64_t)1 << 32))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "the CUDA backend handles up to 2^32 - 1 cells per domain");
    if (d->layout.streaming == ACM_STREAMING_IN_PLACE && d->layout.kernel != ACM_KERNEL_FUSED)
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED,
                        "in-place streaming needs the fused kernel (ACM_LAYOUT_KERNEL = "
                        "ACM_KERNEL_FUSED); the split and baseline structures keep two arrays");
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || d->device >= count) {
        (void)cudaGetLastError();
        return ACM_FAIL(d, ACM_ERR_NO_DEVICE, "CUDA device %d not available (%d found: %s)",
                        d->device, count, cudaGetErrorString(e));
    }
    cuda_impl *m = (cuda_impl *)acm__calloc(1, sizeof *m);
    if (m == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the CUDA backend state");
    d->impl = m;
    d->memory_bytes = 0;
    m->elem = d->layout.precision == ACM_PRECISION_FP16   ? ACM_ELEM_HALF
              : d->layout.precision == ACM_PRECISION_FP64 ? ACM_ELEM_DOUBLE
                                                   : ACM_ELEM_FLOAT;
    m->real = m->elem == ACM_ELEM_DOUBLE ? sizeof(double) : sizeof(float);
    m->block = d->layout.block_size > 0 ? (unsigned)d->layout.block_size : (unsigned)ACM_GPU_DEFAULT_BLOCK;
    d->layout.block_size = (int32_t)m->block;
    CU_TRY(d, cudaSetDevice(d->device));
    CU_TRY(d, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    m->own_stream = true;
    CU_TRY(d, cudaEventCreateWithFlags(&m->marker, cudaEventDisableTiming));
    CU_TRY(d, cudaStreamCreateWithFlags(&m->side, cudaStreamNonBlocking));
    CU_TRY(d, cudaEventCreateWithFlags(&m->side_done, cudaEventDisableTiming));
    m->in_place = d->layout.streaming == ACM_STREAMING_IN_PLACE;
    for (int b = 0; b < (m->in_place ? 1 : 2); ++b)
        ACM_TRY(dev_alloc(d, &m->f[b], pop_bytes(d), "populations"));
    if (d->layout.kernel != ACM_KERNEL_FUSED) {
        ACM_TRY(dev_alloc(d, &m->tmp, pop_bytes(d), "streamed populations"));
        ACM_TRY(dev_alloc(d, &m->macro, 4 * plane_bytes(d), "macroscopic fields"));
    }
    if (d->layout.kernel == ACM_KERNEL_SPLIT)
        ACM_TRY(dev_alloc(d, &m->mom, mom_bytes(d), "collision moments"));
    const size_t redo_bytes = acm_redo_words(d->ncells) * sizeof(uint32_t);
    ACM_TRY(dev_alloc(d, (void **)&m->redo, redo_bytes, "fallback marks"));
    CU_TRY(d, cudaMemsetAsync(m->redo, 0, redo_bytes, m->stream));
    ACM_TRY(dev_alloc(d, (void **)&m->sums, 4 * sizeof(acm_gpu_sums), "step sums"));
    CU_TRY(d, cudaMemsetAsync(m->sums, 0, 4 * sizeof(acm_gpu_sums), m->stream));
    ACM_TRY(dev_alloc(d, (void **)&m->partials, partial_count(d) * sizeof(acm_gpu_sums),
                      "block sums"));
    ACM_TRY(dev_alloc(d, (void **)&m->planes, planes_bytes(d), "plane sums"));
    /* read before a first step when a decomposed domain re-cuts its slabs (its
     * saved reductions then replace what they give) */
    CU_TRY(d, cudaMemsetAsync(m->planes, 0, planes_bytes(d), m->stream));
    ACM_TRY(dev_alloc(d, &m->sum_scratch, acm_sum_scratch_bytes(), "reduction stage"));
    CU_TRY(d, cudaMemsetAsync(m->sum_scratch, 0, acm_sum_scratch_bytes(), m->stream));
    ACM_TRY(dev_alloc(d, (void **)&m->counters, 2 * sizeof(unsigned long long), "counters"));
    ACM_TRY(dev_alloc(d, &m->staging, ACM_STAGING_BYTES, "transfers"));
    CU_TRY(d, cudaMallocHost((void **)&m->host_counters, 2 * sizeof(unsigned long long)));
    CU_TRY(d, cudaMallocHost((void **)&m->host_sums, 2 * sizeof(acm_gpu_sums)));
    CU_TRY(d, cudaMallocHost((void **)&m->host_planes, planes_bytes(d)));
    /* CUB keeps what it learns of the device at its first call for the life of
     * the process, a failure included: ask it now, while the domain's memory
     * was just found, rather than at a first smoke made when there may be none
     * (test-cuda, device_memory_exhaustion_changes_nothing) */
    size_t select_bytes = 0;
    CU_TRY(d, acm_launch_smoke_free_slots(NULL, &select_bytes, NULL, NULL, NULL, 1, m->stream));
    return reset_counters(d);
}

extern "C" void acm_cuda_domain_fini(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (!m->broken) {
        cudaSetDevice(d->device);
        if (m->stream != NULL)
            cudaStreamSynchronize(m->stream);
        if (m->side != NULL)
            cudaStreamSynchronize(m->side);
    }
    ib_release(d, true);
    share_release(d);
    void **bufs[] = {&m->f[0],          &m->f[1],          &m->tmp,
                     &m->mom,           &m->macro,         (void **)&m->redo,
                     &m->force,         &m->tau,           (void **)&m->sums,
                     (void **)&m->partials, (void **)&m->planes, &m->sum_scratch,
                     (void **)&m->counters,
                     &m->staging,       (void **)&m->vis,  (void **)&m->smoke_u,
                     (void **)&m->probe};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; ++b)
        if (*bufs[b] != NULL)
            cudaFree(*bufs[b]);
    if (m->host_counters != NULL)
        cudaFreeHost(m->host_counters);
    if (m->host_sums != NULL)
        cudaFreeHost(m->host_sums);
    if (m->host_planes != NULL)
        cudaFreeHost(m->host_planes);
    if (m->marker != NULL)
        cudaEventDestroy(m->marker);
    if (m->side_done != NULL)
        cudaEventDestroy(m->side_done);
    if (m->side != NULL)
        cudaStreamDestroy(m->side);
    if (m->own_stream && m->stream != NULL)
        cudaStreamDestroy(m->stream);
    (void)cudaGetLastError();
    acm__free(m);
    d->impl = NULL;
}

/* ---- statistics ------------------------------------------------------------------ */

/* Diagnostics of the current state into m->sums[2..3] (device). */
static acm_status diagnose(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a = step_args(d);
    unsigned n = 0;
    m->planes_sent = false; /* the planes now hold the current state's sums */
    CU_TRY(d, cudaMemsetAsync(m->planes, 0, planes_bytes(d), m->stream));
    CU_TRY(d, acm_launch_diagnostics(a, state_array(m), m->elem, m->partials, &n, m->stream));
    CU_TRY(d, acm_launch_sum_partials(m->partials, n, m->sums + 2, true, (double)d->ncells,
                                      m->sum_scratch, m->stream));
    CU_TRY(d, acm_launch_sum_partials(m->partials + n, n, m->sums + 3, false, (double)d->ncells,
                                      m->sum_scratch, m->stream));
    return ACM_OK;
}

/* The ACM rules' inputs of the next step into sums[slot]: the planes of
 * acm_plane_add folded in plane order, ghost planes left out. */
static acm_status fold_planes(acm_domain *d, int slot)
{
    cuda_impl *m = IMPL(d);
    const int32_t lo = d->halo[0], hi = d->nz - d->halo[1];
    CU_TRY(d, acm_launch_plane_fold(m->planes, lo, hi, m->sums + slot,
                                    (double)(hi - lo) * d->nx * d->ny, m->stream));
    return ACM_OK;
}

/* The ACM rules' "previous step" from the current state (after a new state). */
static acm_status refresh_ring(acm_domain *d)
{
    ACM_TRY(diagnose(d));
    return fold_planes(d, IMPL(d)->ring);
}

extern "C" acm_status acm_cuda_stats(acm_domain *d, acm_domain_stats *out)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    ACM_TRY(diagnose(d));
    CU_TRY(d, cudaMemcpyAsync(m->host_sums, m->sums + 2, 2 * sizeof(acm_gpu_sums),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    out->mass = m->host_sums[0].sum_rho;
    out->momentum[0] = m->host_sums[1].max_u2;
    out->momentum[1] = m->host_sums[1].sum_rho;
    out->momentum[2] = m->host_sums[1].sum_j;
    out->kinetic_energy = m->host_sums[1].sum_pi;
    out->max_speed = sqrt(m->host_sums[0].max_u2);
    return ACM_OK;
}

/* ---- state transfers ----------------------------------------------------------------- */

/* Cells per chunk for transfers of `per_cell` bytes per cell. */
static uint32_t chunk_cells(const acm_domain *d, size_t per_cell)
{
    size_t n = ACM_STAGING_BYTES / per_cell;
    return (uint32_t)(n < (size_t)d->ncells ? n : (size_t)d->ncells);
}

static acm_status ensure_tau(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->tau != NULL)
        return ACM_OK;
    ACM_TRY(dev_alloc(d, &m->tau, plane_bytes(d), "ACM_LI2020 state"));
    CU_TRY(d, acm_launch_fill(m->tau, m->elem, (uint64_t)d->ncells, d->setup.coll.li2020_tau0, m->stream));
    return ACM_OK;
}

/* A physical state in physical_target() becomes the stored one: two arrays,
 * its inverse pull into f[cur]; in place it is the state (parity 0). */
static acm_status store_physical_state(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_gpu_grid g = grid_of(d);
    if (m->in_place)
        m->parity = 0;
    else
        CU_TRY(d, acm_launch_pull(g, m->f[1 - m->cur], m->f[m->cur], m->elem, -1, m->block,
                                  m->stream));
    return ACM_OK;
}

/* After a new physical state in physical_target(): store it and reset the
 * ACM state. */
static acm_status adopt_physical_state(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    ACM_TRY(store_physical_state(d));
    if (m->tau != NULL)
        CU_TRY(d, acm_launch_fill(m->tau, m->elem, (uint64_t)d->ncells, d->setup.coll.li2020_tau0,
                                  m->stream));
    ACM_TRY(refresh_ring(d));
    ACM_TRY(reset_counters(d));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_init_equilibrium(acm_domain *d, const acm_init_source *src)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    acm_gpu_grid g = grid_of(d);
    const int de = (int)acm__dtype_size(src->dtype);
    const size_t per_cell = 4 * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        char *rho = NULL, *u = NULL;
        if (src->rho != NULL) {
            rho = (char *)m->staging;
            CU_TRY(d, cudaMemcpyAsync(rho, (const char *)src->rho + (size_t)k0 * de,
                                      (size_t)n * de, cudaMemcpyHostToDevice, m->stream));
        }
        if (src->u != NULL) {
            u = (char *)m->staging + (size_t)n * de;
            CU_TRY(d, cudaMemcpyAsync(u, (const char *)src->u + (size_t)k0 * 3 * de,
                                      (size_t)n * 3 * de, cudaMemcpyHostToDevice, m->stream));
        }
        CU_TRY(d, acm_launch_equilibrium(g, physical_target(m), m->elem, rho, u, de, src->rho0,
                                         src->u0, k0, n, m->stream));
    }
    return adopt_physical_state(d);
}

/* Download interleaved per-cell values in chunks, each written into the
 * staging buffer by `fill` first. */
template <typename F>
static acm_status download_chunks(acm_domain *d, int comp, acm_dtype dtype, void *dst, F &&fill)
{
    cuda_impl *m = IMPL(d);
    const int de = (int)acm__dtype_size(dtype);
    const size_t per_cell = (size_t)comp * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        CU_TRY(d, fill(de, k0, n));
        CU_TRY(d, cudaMemcpyAsync((char *)dst + (size_t)k0 * per_cell, m->staging,
                                  (size_t)n * per_cell, cudaMemcpyDeviceToHost, m->stream));
        CU_TRY(d, cudaStreamSynchronize(m->stream)); /* staging is reused */
    }
    return ACM_OK;
}

/* Copy a per-cell field of `comp` values through the staging buffer. */
static acm_status download_field(acm_domain *d, acm_field field, int comp, acm_dtype dtype,
                                 void *dst)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a = step_args(d);
    return download_chunks(d, comp, dtype, dst, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_field(a, state_array(m), m->elem, field, m->staging, de, k0, n,
                                m->stream);
    });
}

/* The per-cell force (uniform + field) as a host array. */
static acm_status download_force(acm_domain *d, acm_dtype dtype, void *dst)
{
    cuda_impl *m = IMPL(d);
    double *planes = NULL;
    if (m->force != NULL) {
        size_t bytes = 3 * plane_bytes(d);
        void *host = acm__malloc(bytes);
        if (host == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %zu bytes for the force", bytes);
        cudaError_t e = cudaMemcpyAsync(host, m->force, bytes, cudaMemcpyDeviceToHost, m->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(m->stream);
        if (e != cudaSuccess) {
            acm__free(host);
            return cuda_fail(d, e, "copying the force field");
        }
        planes = (double *)host;
    }
    for (size_t k = 0; k < (size_t)d->ncells; ++k)
        for (int a = 0; a < 3; ++a) {
            size_t i = (size_t)a * (size_t)d->ncells + k;
            double v = planes == NULL ? 0.0
                       : m->real == sizeof(float) ? (double)((float *)planes)[i]
                                                  : planes[i];
            acm__store(dtype, dst, 3 * k + (size_t)a, d->setup.body_force[a] + v);
        }
    acm__free(planes);
    return ACM_OK;
}

extern "C" acm_status acm_cuda_get_field(acm_domain *d, acm_field field, acm_dtype dtype,
                                         void *dst)
{
    ACM_TRY(enter(d));
    switch (field) {
    case ACM_FIELD_DENSITY: return download_field(d, field, 1, dtype, dst);
    case ACM_FIELD_VELOCITY: return download_field(d, field, 3, dtype, dst);
    case ACM_FIELD_POPULATIONS: return download_field(d, field, ACM_Q, dtype, dst);
    default: return download_force(d, dtype, dst);
    }
}

/* Upload interleaved per-cell values in chunks and run `apply` on each. */
template <typename F>
static acm_status upload_chunks(acm_domain *d, int comp, acm_dtype dtype, const void *src,
                                F &&apply)
{
    cuda_impl *m = IMPL(d);
    const int de = (int)acm__dtype_size(dtype);
    const size_t per_cell = (size_t)comp * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        CU_TRY(d, cudaMemcpyAsync(m->staging, (const char *)src + (size_t)k0 * per_cell,
                                  (size_t)n * per_cell, cudaMemcpyHostToDevice, m->stream));
        CU_TRY(d, apply(de, k0, n));
        CU_TRY(d, cudaStreamSynchronize(m->stream)); /* staging is reused */
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_set_field(acm_domain *d, acm_field field, acm_dtype dtype,
                                         const void *src)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    acm_gpu_grid g = grid_of(d);
    if (field == ACM_FIELD_FORCE) {
        if (src == NULL) {
            CU_TRY(d, cudaStreamSynchronize(m->stream));
            dev_free(d, &m->force, 3 * plane_bytes(d));
            return ACM_OK;
        }
        if (m->force == NULL)
            ACM_TRY(dev_alloc(d, &m->force, 3 * plane_bytes(d), "the force field"));
        return upload_chunks(d, 3, dtype, src, [&](int de, uint32_t k0, uint32_t n) {
            return acm_launch_set_planes(g, m->force, m->elem, 3, m->staging, de, k0, n,
                                         m->stream);
        });
    }
    ACM_TRY(upload_chunks(d, ACM_Q, dtype, src, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_set_populations(g, physical_target(m), m->elem, m->staging, de, k0, n,
                                          m->stream);
    }));
    return adopt_physical_state(d);
}

extern "C" acm_status acm_cuda_probe_cell(acm_domain *d, int32_t x, int32_t y, int32_t z,
                                          double *rho, double u[3])
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    acm_step_args a = step_args(d);
    uint32_t k = (uint32_t)x + (uint32_t)d->nx * ((uint32_t)y + (uint32_t)d->ny * (uint32_t)z);
    double host[4];
    double *dev = (double *)m->staging;
    CU_TRY(d, acm_launch_field(a, state_array(m), m->elem, ACM_FIELD_DENSITY, dev, 8, k, 1,
                               m->stream));
    CU_TRY(d, acm_launch_field(a, state_array(m), m->elem, ACM_FIELD_VELOCITY, dev + 1, 8, k, 1,
                               m->stream));
    CU_TRY(d, cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    *rho = host[0];
    memcpy(u, host + 1, 3 * sizeof(double));
    return ACM_OK;
}

/* ---- time stepping ------------------------------------------------------------------------ */

/* The inlet/outlet layers' cells of planes [z0, z1) of the new state f. */
static acm_status launch_layers(acm_domain *d, const acm_gpu_grid &g, void *f, int32_t z0,
                                int32_t z1)
{
    cuda_impl *m = IMPL(d);
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (acm_face_is_layer(d->setup.face[face].type))
            CU_TRY(d, acm_launch_layer(g, f, m->elem, face, z0, z1, m->stream));
    return ACM_OK;
}

/* The ACM rules' sums of this step from the planes' (zeroed by clear_planes);
 * a slab's next step takes the whole domain's instead (before_step). */
static acm_status finish_sums(acm_domain *d)
{
    return acm_is_adaptive(d->setup.coll.model) && d->slab_cells == 0.0
               ? fold_planes(d, 1 - IMPL(d)->ring)
               : ACM_OK;
}

/* Before a step's collision adds to them. */
static acm_status clear_planes(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (acm_is_adaptive(d->setup.coll.model))
        CU_TRY(d, cudaMemsetAsync(m->planes, 0, planes_bytes(d), m->stream));
    return ACM_OK;
}

/* The safety net's fallback of the cells the collision marked (pull: a.src
 * is the unstreamed source, else the streamed populations). */
static acm_status redo_marked(acm_domain *d, const acm_step_args &a, bool pull)
{
    cuda_impl *m = IMPL(d);
    if (acm_is_adaptive(d->setup.coll.model) && d->setup.coll.safety_net)
        CU_TRY(d, acm_launch_redo(a, m->elem, pull, m->block, m->stream));
    return ACM_OK;
}

/* The first cell of plane z, rounded to a word of the redo mask (up or down),
 * at most ncells. */
static uint32_t word_cell(const acm_domain *d, int32_t z, bool up)
{
    const uint64_t k = (uint64_t)z * (uint64_t)d->nx * (uint64_t)d->ny;
    const uint64_t w = up ? (k + 31u) / 32u * 32u : k / 32u * 32u;
    return (uint32_t)(w < (uint64_t)d->ncells ? w : (uint64_t)d->ncells);
}

/* The fused kernel steps the planes acm__stepped_planes names (a slab's ghost
 * planes only in place), in whole words of the redo mask. */
static acm_status enqueue_fused(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    a.first = word_cell(d, z0, false);
    a.end = word_cell(d, z1, true);
    ACM_TRY(clear_planes(d));
    CU_TRY(d, acm_launch_lbm(a, m->elem, true, m->block, m->stream));
    ACM_TRY(redo_marked(d, a, true));
    return finish_sums(d);
}

static acm_status enqueue_split(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, acm_launch_stream(a.g, a.src, m->tmp, m->elem, m->block, m->stream));
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (d->setup.face[face].type != ACM_BOUNDARY_PERIODIC)
            CU_TRY(d, acm_launch_wall_face(a.g, a.src, m->tmp, m->elem, face, m->stream));
    ACM_TRY(clear_planes(d));
    CU_TRY(d, acm_launch_macro(a, m->tmp, m->macro, m->elem, m->block, m->stream));
    ACM_TRY(finish_sums(d));
    CU_TRY(d, acm_launch_moments(a, m->tmp, m->mom, m->elem, m->block, m->stream));
    for (int half = 0; half < 2; ++half)
        CU_TRY(d, acm_launch_outputs(a, m->mom, m->macro, m->elem, half, m->block, m->stream));
    a.src = m->tmp;
    return redo_marked(d, a, false);
}

static acm_status enqueue_baseline(acm_domain *d, acm_step_args a)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, acm_launch_pull(a.g, a.src, m->tmp, m->elem, 1, m->block, m->stream));
    ACM_TRY(clear_planes(d));
    CU_TRY(d, acm_launch_macro(a, m->tmp, m->macro, m->elem, m->block, m->stream));
    ACM_TRY(finish_sums(d));
    a.src = m->tmp;
    CU_TRY(d, acm_launch_lbm(a, m->elem, false, m->block, m->stream));
    return redo_marked(d, a, false);
}

/* The arguments of this step's kernels; the smoke's velocity captured on the way. */
static acm_status start_step(acm_domain *d, acm_step_args &a)
{
    cuda_impl *m = IMPL(d);
    a = step_args(d);
    if (m->smoke_capture) { /* the step's start velocity for the smoke (acm_cuda_smoke_velocity) */
        m->smoke_capture = false;
        if (d->layout.kernel != ACM_KERNEL_SPLIT) /* the collision kernel writes it on the way */
            a.u_out = m->smoke_u;
        else /* the split kernels have no single place for it: a pass of its own */
            CU_TRY(d, acm_launch_field(a, state_array(m), m->elem, ACM_FIELD_VELOCITY, m->smoke_u,
                                       (int)sizeof(float), 0, (uint32_t)d->ncells, m->stream));
    }
    return ACM_OK;
}

/* A slab's plane sums (its own planes', from src) on their way to the host
 * (acm_cuda_plane_sums). */
static acm_status copy_planes_home(acm_domain *d, const acm_plane_fixed *src)
{
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemcpyAsync(m->host_planes, src, (size_t)acm__own_planes(d) * sizeof *src,
                              cudaMemcpyDeviceToHost, m->stream));
    return ACM_OK;
}

/* Its handle folds them after every step of an adaptive model (unless shared),
 * so the copy goes with the step and the step's wait (its divergence check)
 * covers it. */
static acm_status send_planes(acm_domain *d)
{
    IMPL(d)->planes_sent = true;
    return copy_planes_home(d, IMPL(d)->planes + d->halo[0]);
}

/* Every shared slab's plane sums of the step with the parity of step `step`:
 * the first slab's buffer, which the others read by peer access. */
static acm_plane_fixed *shared_planes(const acm_domain *d, int64_t step)
{
    return IMPL(IMPL(d)->peers[0])->whole[step & 1];
}

/* A shared slab's plane sums of the step into the shared buffer, then the
 * event the others' next step waits for. */
static acm_status push_planes(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    const size_t bytes = (size_t)acm__own_planes(d) * sizeof(acm_plane_fixed);
    CU_TRY(d, cudaMemcpyPeerAsync(shared_planes(d, d->step) + acm__own_origin(d), m->peers[0]->device,
                                  m->planes + d->halo[0], d->device, bytes, m->stream));
    CU_TRY(d, cudaEventRecord(m->pushed[d->step & 1], m->stream));
    return ACM_OK;
}

/* After every kernel of the step is enqueued: a slab's plane sums go where
 * the next step's inputs are folded, the host or (shared, the host not
 * waiting after every step) every slab. */
static acm_status end_step(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    m->ring = 1 - m->ring;
    m->batch_step++;
    d->step++;
    if (d->slab_cells == 0.0 || !acm_is_adaptive(d->setup.coll.model))
        return ACM_OK;
    return m->npeers > 0 && d->setup.divergence_interval > 1 ? push_planes(d) : send_planes(d);
}

/* Enqueue one step of the domain's kernel structure. */
static acm_status enqueue_step(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a;
    ACM_TRY(start_step(d, a));
    if (d->layout.kernel == ACM_KERNEL_SPLIT)
        ACM_TRY(enqueue_split(d, a));
    else if (d->layout.kernel == ACM_KERNEL_BASELINE)
        ACM_TRY(enqueue_baseline(d, a));
    else
        ACM_TRY(enqueue_fused(d, a));
    if (m->in_place)
        m->parity = 1 - m->parity;
    else
        m->cur = 1 - m->cur;
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    ACM_TRY(launch_layers(d, grid_of(d), a.dst, z0, z1)); /* the grid of the new state */
    return end_step(d);
}

/* ---- a slab's step in two parts (backend.h advance_edges) ----------------------------- */

/* Where a split step of d divides its cells and planes (for the layers): the
 * edges [cut[0], cut[1]) and [cut[2], cut[3]), the rest [cut[1], cut[2]).
 * Only the fused kernel with two arrays splits. */
static bool split_cells(const acm_domain *d, uint32_t cut[4], int32_t planes[4])
{
    acm__stepped_planes(d, &planes[0], &planes[3]);
    acm__edge_planes(d, &planes[1], &planes[2]);
    if (IMPL(d)->in_place || d->layout.kernel != ACM_KERNEL_FUSED || planes[1] >= planes[2])
        return false;
    cut[0] = word_cell(d, planes[0], false);
    cut[1] = word_cell(d, planes[1], true);
    cut[2] = word_cell(d, planes[2], false);
    cut[3] = word_cell(d, planes[3], true);
    return cut[1] < cut[2];
}

/* Cells [first, end) of a fused two-array step, then the layers of planes
 * [z0, z1) (which read only cells of their own plane). */
static acm_status enqueue_part(acm_domain *d, acm_step_args a, uint32_t first, uint32_t end,
                               int32_t z0, int32_t z1)
{
    cuda_impl *m = IMPL(d);
    a.first = first;
    a.end = end;
    if (first < end) {
        CU_TRY(d, acm_launch_lbm(a, m->elem, true, m->block, m->stream));
        ACM_TRY(redo_marked(d, a, true));
    }
    return launch_layers(d, a.g, a.dst, z0, z1);
}

/* Wait for the enqueued steps; report a divergence or a device fault. When
 * only one step ran since the last check, a diverged state is rolled back to
 * the state before that step (as on the CPU). */
static acm_status check(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->batch_step == 0)
        return ACM_OK;
    CU_TRY(d, cudaMemcpyAsync(m->host_counters, m->counters, 2 * sizeof(unsigned long long),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    const unsigned long long key = m->host_counters[0];
    const int64_t batch = m->batch_step;
    d->fallback_last = (int64_t)m->host_counters[1];
    d->fallback_total += (int64_t)m->host_counters[1];
    ACM_TRY(reset_counters(d));
    if (key == ACM_NO_KEY)
        return ACM_OK;
    const int64_t first = d->step - batch + (int64_t)(key >> ACM_KEY_CELL_BITS) + 1;
    const uint64_t cell = key & (((uint64_t)1 << ACM_KEY_CELL_BITS) - 1);
    const bool rolled_back = batch == 1 && !m->in_place; /* in place keeps no copy */
    if (rolled_back) {
        m->cur = 1 - m->cur;
        m->ring = 1 - m->ring;
        d->step--;
    }
    d->diverged = true;
    d->diverged_step = first; /* named again by acm__domain_fail_diverged */
    int32_t x = (int32_t)(cell % (uint64_t)d->nx), y = (int32_t)(cell / (uint64_t)d->nx % (uint64_t)d->ny);
    int32_t z = (int32_t)(cell / ((uint64_t)d->nx * (uint64_t)d->ny));
    double rho = 0.0, u[3] = {0.0, 0.0, 0.0};
    ACM_TRY(acm_cuda_probe_cell(d, x, y, z, &rho, u));
    return ACM_FAIL(d, ACM_ERR_DIVERGED,
                    "diverged at step %lld: cell (%d, %d, %d) has density %g and velocity (%g, "
                    "%g, %g), speed limit %g; %s",
                    (long long)first, x, y, z, rho, u[0], u[1], u[2], d->setup.max_speed,
                    rolled_back ? "the state before that step is kept"
                    : m->in_place
                        ? "in-place streaming kept no copy of the state before it"
                        : "the state is the one found at the check (raise the check "
                          "frequency with ACM_PARAM_DIVERGENCE_INTERVAL = 1 to keep the "
                          "last good state)");
}

/* A slab of a decomposed domain (lib/multi/decomp.c) steps with the whole domain's
 * sums, folded on the host as fold_planes folds them here. */
static acm_status take_domain_sums(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_gpu_sums t = {d->slab_total.max_u2, d->slab_total.sum_rho, d->slab_total.sum_j,
                      d->slab_total.sum_pi, 0.0, 0.0, 0.0, 0.0};
    acm_finish_sums(t, d->slab_cells);
    CU_TRY(d, cudaMemcpyAsync(m->sums + m->ring, &t, sizeof t, cudaMemcpyHostToDevice,
                              m->stream));
    return ACM_OK;
}

/* A shared slab (lib/multi/decomp.c, d->slab_sums_shared): every slab's plane sums
 * of the last step, once they are all in the shared buffer, folded here as
 * fold_planes folds one domain's, with no host in between. */
static acm_status fold_shared(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    const int par = (int)(d->step & 1);
    for (int32_t q = 0; q < m->npeers; ++q)
        if (m->peers[q] != d)
            CU_TRY(d, cudaStreamWaitEvent(m->stream, IMPL(m->peers[q])->pushed[par], 0));
    CU_TRY(d, acm_launch_plane_fold(shared_planes(d, d->step), 0, d->whole_nz,
                                    m->sums + m->ring, d->slab_cells, m->stream));
    return ACM_OK;
}

/* What a step needs before its first kernel. */
static acm_status before_step(acm_domain *d)
{
    ACM_TRY(enter(d));
    if (d->setup.coll.model == ACM_COLLISION_ACM_LI2020)
        ACM_TRY(ensure_tau(d));
    if (d->slab_cells > 0.0 && acm_is_adaptive(d->setup.coll.model))
        ACM_TRY(d->slab_sums_shared ? fold_shared(d) : take_domain_sums(d));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_advance(acm_domain *d, acm_check when)
{
    ACM_TRY(before_step(d));
    ACM_TRY(enqueue_step(d));
    return acm_cuda_check(d, when);
}

/* The edges of a split step enqueued, then the new state is f[cur] (the rest
 * writes only other cells of it); or the whole step. */
extern "C" acm_status acm_cuda_advance_edges(acm_domain *d)
{
    ACM_TRY(before_step(d));
    cuda_impl *m = IMPL(d);
    uint32_t cut[4];
    int32_t planes[4];
    if (!split_cells(d, cut, planes))
        return enqueue_step(d);
    acm_step_args a;
    ACM_TRY(start_step(d, a));
    ACM_TRY(clear_planes(d));
    ACM_TRY(enqueue_part(d, a, cut[0], cut[1], planes[0], planes[1]));
    ACM_TRY(enqueue_part(d, a, cut[2], cut[3], planes[2], planes[3]));
    m->part = a;
    m->cur = 1 - m->cur;
    m->split = true;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_advance_rest(acm_domain *d, acm_check when)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    if (m->split) {
        m->split = false;
        uint32_t cut[4] = {0, 0, 0, 0};
        int32_t planes[4] = {0, 0, 0, 0};
        (void)split_cells(d, cut, planes); /* as in advance_edges */
        ACM_TRY(enqueue_part(d, m->part, cut[1], cut[2], planes[1], planes[2]));
        ACM_TRY(finish_sums(d));
        ACM_TRY(end_step(d));
    }
    return acm_cuda_check(d, when);
}

extern "C" acm_status acm_cuda_prepare(acm_domain *d)
{
    ACM_TRY(enter(d));
    return d->setup.coll.model == ACM_COLLISION_ACM_LI2020 ? ensure_tau(d) : ACM_OK;
}

extern "C" acm_status acm_cuda_check(acm_domain *d, acm_check when)
{
    if (when == ACM_CHECK_NOW ||
        (when == ACM_CHECK_DUE && IMPL(d)->batch_step >= d->setup.divergence_interval)) {
        ACM_TRY(enter(d));
        return check(d);
    }
    return ACM_OK;
}

/* ---- decomposition (lib/multi/decomp.c) -------------------------------------------------------- */

/* Into pinned memory kept for it: a decomposed domain reads them every step
 * (after its slabs stepped, when nothing may fail for want of memory). */
extern "C" acm_status acm_cuda_plane_sums(acm_domain *d, acm_plane_sums *out)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    const int32_t n = acm__own_planes(d);
    if (d->slab_sums_shared) /* the step's, where push_planes put them (a query since
                                may have summed the planes again) */
        ACM_TRY(copy_planes_home(d, shared_planes(d, d->step) + acm__own_origin(d)));
    else if (!m->planes_sent) /* not after a step: an initialisation, a load */
        ACM_TRY(send_planes(d));
    m->planes_sent = false;
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    for (int32_t z = 0; z < n; ++z) {
        double v[4];
        acm_plane_value(m->host_planes[z], v);
        out[z] = acm_plane_sums{v[0], v[1], v[2], v[3]};
    }
    return ACM_OK;
}

/* Stored values of planes [z0, z0 + n) (the slots of acm_moves(dz, i)) from
 * the state into host memory out, or (out NULL) from host memory in into the
 * state, through the staging buffer in chunks of whole cells, on stream s;
 * with `wait` each chunk is
 * done before the next is enqueued (the host buffer may be pageable), else
 * the stream orders them (page-locked memory, planes_host_alloc). */
static acm_status enqueue_planes(acm_domain *d, int32_t z0, int32_t n, int dz, const void *in,
                                 void *out, cudaStream_t s, bool wait)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = grid_of(d);
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
        CU_TRY(d, acm_launch_move_stored(g, state_array(m), m->elem, false, m->staging, put, dz,
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
    ACM_TRY(enter(d));
    return enqueue_planes(d, z0, n, dz, in, out, IMPL(d)->stream, true);
}

/* On the side stream, after what the main stream holds (a split step: its
 * edges) and alongside what it is given next (the rest); done at
 * planes_wait. The side stream has the staging buffer until then. */
extern "C" acm_status acm_cuda_planes_get(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaEventRecord(m->marker, m->stream));
    CU_TRY(d, cudaStreamWaitEvent(m->side, m->marker, 0));
    ACM_TRY(enqueue_planes(d, z0, n, dz, NULL, buf, m->side, false));
    CU_TRY(d, cudaEventRecord(m->side_done, m->side));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_planes_wait(acm_domain *d)
{
    ACM_TRY(enter(d));
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
                                         size_t bytes, void **peer)
{
    ACM_TRY(enter(d));
    char err[ACM_ERROR_SIZE];
    acm_nccl *c = NULL;
    if (acm_nccl_open(&c, id, rank, nranks, d->device, bytes, err, sizeof err) != 0)
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
    ACM_TRY(enter(d));
    if (n > ACM_NCCL_MESSAGES)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "%d NCCL messages in one exchange", n);
    cuda_impl *m = IMPL(d);
    acm_nccl *c = (acm_nccl *)peer;
    const acm_gpu_grid g = grid_of(d);
    const uint32_t plane = (uint32_t)d->nx * (uint32_t)d->ny;
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
        group[i].bytes = acm__planes_bytes(d, msg[i].n, msg[i].dz);
        if (msg[i].send && e == cudaSuccess)
            e = acm_launch_move_stored(g, state_array(m), m->elem, false, acm_nccl_buffer(c, i),
                                       false, msg[i].dz, (uint32_t)msg[i].z0 * plane,
                                       (uint32_t)msg[i].n * plane, m->side);
    }
    char err[ACM_ERROR_SIZE];
    const int grouped = acm_nccl_exchange(c, group, n, m->side, err, sizeof err);
    if (e != cudaSuccess)
        return cuda_fail(d, e, "packing the ghost planes for NCCL");
    if (grouped != 0)
        return ACM_FAIL(d, ACM_ERR_DEVICE, "%s", err);
    for (int i = 0; i < n; ++i)
        if (!msg[i].send)
            CU_TRY(d, acm_launch_move_stored(g, state_array(m), m->elem, false,
                                             acm_nccl_buffer(c, i), true, msg[i].dz,
                                             (uint32_t)msg[i].z0 * plane,
                                             (uint32_t)msg[i].n * plane, m->side));
    CU_TRY(d, cudaEventRecord(m->side_done, m->side));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_peer_wait(acm_domain *d, void *peer, double seconds)
{
    ACM_TRY(enter(d));
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
    const size_t bytes = acm__planes_bytes(src, n, dz);
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
    ACM_TRY(enter(src));
    ACM_TRY(enter(dst));
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
    CU_TRY(dst, acm_launch_copy_stored(grid_of(dst), state_array(md), (uint32_t)dst_z * plane,
                                       grid_of(src), state_array(ms), (uint32_t)src_z * plane,
                                       (uint32_t)n * plane, dz, md->elem, md->side));
    return ACM_OK;
}

/* dst's and src's streams wait for the copies into dst so far. */
extern "C" acm_status acm_cuda_planes_join(acm_domain *dst, acm_domain *src)
{
    ACM_TRY(enter(src));
    ACM_TRY(enter(dst));
    cuda_impl *md = IMPL(dst), *ms = IMPL(src);
    CU_TRY(dst, cudaEventRecord(md->side_done, md->side));
    CU_TRY(dst, cudaStreamWaitEvent(md->stream, md->side_done, 0));
    CU_TRY(dst, cudaSetDevice(src->device));
    CU_TRY(dst, cudaStreamWaitEvent(ms->stream, md->side_done, 0));
    CU_TRY(dst, cudaSetDevice(dst->device));
    return ACM_OK;
}

/* What acm_cuda_sums_share made (on d's device, nothing pushing into it). */
static void share_release(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    for (int k = 0; k < 2; ++k) {
        dev_free(d, (void **)&m->whole[k], (size_t)d->whole_nz * sizeof(acm_plane_fixed));
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
    ACM_TRY(enter(d));
    if (!peer_reachable(d, slabs[0]))
        return ACM_ERR_UNSUPPORTED;
    ACM_TRY(enter(d)); /* peer_reachable may leave another device current */
    cuda_impl *m = IMPL(d);
    m->peers = (acm_domain **)acm__calloc((size_t)n, sizeof *m->peers);
    if (m->peers == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the list of %d slabs", (int)n);
    memcpy(m->peers, slabs, (size_t)n * sizeof *slabs);
    m->npeers = n;
    for (int k = 0; k < 2; ++k) {
        if (d == slabs[0])
            ACM_TRY(dev_alloc(d, (void **)&m->whole[k],
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
    share_release(d);
}

/* ---- immersed boundary (the CPU's twin: lib/cpu/backend.c, lib/cpu/ib_tmpl.h) ------------ */

static acm_ib_args ib_args(const acm_domain *d)
{
    cuda_ib *ib = &IMPL(d)->ib;
    acm_ib_args a;
    a.ig = acm__ib_grid(d);
    a.n = ib->n;
    a.X = ib->X;
    a.r = ib->r;
    a.ub = ib->ub;
    a.dv = ib->dv;
    a.alpha = ib->alpha;
    a.G = ib->G;
    a.Gsum = ib->Gsum;
    a.rho = ib->rho;
    a.macro = ib->macro;
    a.force = ib->force;
    a.mask = ib->mask;
    a.band = ib->band;
    a.band_count = ib->band + ib->band_cap;
    a.own0 = acm__own_origin(d);
    a.own_n = acm__own_planes(d);
    return a;
}

/* Free the per-sample arrays (and with `cells` the per-cell planes too). */
static void ib_release(acm_domain *d, bool cells)
{
    cuda_ib *ib = &IMPL(d)->ib;
    const uint64_t n = ib->n;
    const size_t real = IMPL(d)->real;
    dev_free(d, (void **)&ib->X, 3 * n * sizeof(double));
    dev_free(d, (void **)&ib->r, 3 * n * sizeof(double));
    dev_free(d, &ib->ub, 3 * n * real);
    dev_free(d, &ib->dv, n * real);
    dev_free(d, &ib->alpha, n * real);
    dev_free(d, &ib->G, 3 * n * real);
    dev_free(d, &ib->Gsum, 3 * n * real);
    dev_free(d, &ib->rho, n * real);
    dev_free(d, (void **)&ib->partials, ib->partial_bytes);
    dev_free(d, (void **)&ib->ft, ib->ft_bytes);
    dev_free(d, &ib->scratch, ib->scratch_bytes);
    dev_free(d, (void **)&ib->band, (ib->band_cap + 1) * sizeof(uint32_t));
    if (ib->host_ft != NULL)
        cudaFreeHost(ib->host_ft);
    ib->host_ft = NULL;
    acm__free(ib->centre);
    ib->centre = NULL;
    ib->n = ib->band_cap = 0;
    ib->band_valid = false;
    ib->partial_bytes = ib->ft_bytes = ib->scratch_bytes = 0;
    if (cells) {
        dev_free(d, &ib->macro, 4 * plane_bytes(d));
        dev_free(d, &ib->force, 3 * plane_bytes(d));
        dev_free(d, (void **)&ib->mask, acm_redo_words(d->ncells) * sizeof(uint32_t));
    }
}

/* Per-sample values of the solids in the arithmetic type R, uploaded. */
template <typename R>
static acm_status ib_upload(acm_domain *d)
{
    cuda_ib *ib = &IMPL(d)->ib;
    const size_t n = (size_t)ib->n;
    double *r = (double *)acm__malloc(3 * n * sizeof(double));
    R *dv = (R *)acm__malloc(n * sizeof(R)), *alpha = (R *)acm__malloc(n * sizeof(R));
    acm_status st = ACM_OK;
    if (r == NULL || dv == NULL || alpha == NULL) {
        st = ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot stage %zu samples", n);
    } else {
        for (int32_t i = 0; i < d->nsolids; ++i) {
            const acm_solid *s = d->solids[i];
            memcpy(r + 3 * s->offset, s->r, 3 * (size_t)s->count * sizeof(double));
            for (uint64_t j = 0; j < s->count; ++j) {
                dv[s->offset + j] = (R)s->dv[j];
                alpha[s->offset + j] = (R)s->alpha;
            }
        }
        cudaError_t e = cudaMemcpy(ib->r, r, 3 * n * sizeof(double), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(ib->dv, dv, n * sizeof(R), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(ib->alpha, alpha, n * sizeof(R), cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            st = cuda_fail(d, e, "uploading the samples");
    }
    acm__free(r);
    acm__free(dv);
    acm__free(alpha);
    return st;
}

static acm_status ib_place(acm_domain *d, acm_solid *s)
{
    cuda_impl *m = IMPL(d);
    acm_ib_pose pose;
    memcpy(pose.x, s->body.x, sizeof pose.x);
    memcpy(pose.q, s->body.q, sizeof pose.q);
    memcpy(pose.v, s->body.v, sizeof pose.v);
    memcpy(pose.w, s->body.w, sizeof pose.w);
    CU_TRY(d, acm_launch_ib_place(ib_args(d), m->elem, s->offset, s->count, pose, m->stream));
    s->moved = false;
    return ACM_OK;
}

/* The largest gather region and solid of the domain (sizes of the scratch). */
static void ib_extents(const acm_domain *d, uint64_t *region, uint64_t *samples)
{
    const acm_ib_grid g = acm__ib_grid(d);
    *region = *samples = 1;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        const uint64_t cells = acm_ib_region_bound(&g, s->body.r_max);
        *region = cells > *region ? cells : *region;
        *samples = s->count > *samples ? s->count : *samples;
    }
}

/* Device storage for d's sample set (the sizes in ib->n, region, most). */
static acm_status ib_allocate(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    const size_t n = (size_t)ib->n, real = m->real;
    ACM_TRY(dev_alloc(d, (void **)&ib->X, 3 * n * sizeof(double), "sample positions"));
    ACM_TRY(dev_alloc(d, (void **)&ib->r, 3 * n * sizeof(double), "sample offsets"));
    ACM_TRY(dev_alloc(d, &ib->ub, 3 * n * real, "sample velocities"));
    ACM_TRY(dev_alloc(d, &ib->dv, n * real, "sample weights"));
    ACM_TRY(dev_alloc(d, &ib->alpha, n * real, "sample gains"));
    ACM_TRY(dev_alloc(d, &ib->G, 3 * n * real, "sample forces"));
    ACM_TRY(dev_alloc(d, &ib->Gsum, 3 * n * real, "sample forces"));
    ACM_TRY(dev_alloc(d, &ib->rho, n * real, "sample densities"));
    ib->partial_bytes = 4 * (size_t)acm_ib_sum_blocks(ib->most) * sizeof(acm_gpu_sums);
    ACM_TRY(dev_alloc(d, (void **)&ib->partials, ib->partial_bytes, "force sums"));
    ib->band_cap = acm_ib_band_bound(n, (uint32_t)d->ncells);
    ACM_TRY(dev_alloc(d, (void **)&ib->band, (ib->band_cap + 1) * sizeof(uint32_t),
                      "IB band list"));
    ib->centre = (double *)acm__calloc(3 * (size_t)d->nsolids, sizeof(double));
    if (ib->centre == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold %d torque centres", (int)d->nsolids);
    ib->ft_bytes = 6 * (size_t)d->nsolids * sizeof(acm_gpu_sums);
    ACM_TRY(dev_alloc(d, (void **)&ib->ft, ib->ft_bytes, "solid forces"));
    CU_TRY(d, cudaMallocHost((void **)&ib->host_ft, ib->ft_bytes));
    if (d->layout.ib.spread == ACM_IB_SPREAD_GATHER) {
        ib->scratch_bytes = acm_ib_gather_scratch_bytes(ib->region, ib->most);
        ACM_TRY(dev_alloc(d, &ib->scratch, ib->scratch_bytes, "gather cell lists"));
    }
    if (ib->macro == NULL) {
        ACM_TRY(dev_alloc(d, &ib->macro, 4 * plane_bytes(d), "IB macroscopic planes"));
        ACM_TRY(dev_alloc(d, &ib->force, 3 * plane_bytes(d), "IB force planes"));
        const size_t words = acm_redo_words(d->ncells) * sizeof(uint32_t);
        ACM_TRY(dev_alloc(d, (void **)&ib->mask, words, "IB band mask"));
        CU_TRY(d, cudaMemsetAsync(ib->mask, 0, words, m->stream));
        CU_TRY(d, cudaMemsetAsync(ib->force, 0, 3 * plane_bytes(d), m->stream));
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_attach(acm_domain *d)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    cuda_ib *ib = &m->ib;
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    uint64_t most = 1, region = 1;
    ib_extents(d, &region, &most);
    /* a re-sort hands over samples of the same sizes (in another order): the
     * storage stays, only the samples are uploaded again */
    const bool same = d->nsamples > 0 && ib->n == d->nsamples && ib->nsolids == d->nsolids &&
                      ib->spread == d->layout.ib.spread && ib->region == region && ib->most == most;
    if (!same) {
        ib_release(d, d->nsamples == 0);
        if (d->nsamples == 0)
            return ACM_OK;
        ib->n = d->nsamples;
        ib->nsolids = d->nsolids;
        ib->spread = d->layout.ib.spread;
        ib->region = region;
        ib->most = most;
        const acm_status st = ib_allocate(d);
        if (st != ACM_OK) {
            ib_release(d, false); /* nothing half-allocated looks reusable */
            return st;
        }
    }
    ib->band_valid = false;
    CU_TRY(d, cudaMemsetAsync(ib->Gsum, 0, 3 * (size_t)ib->n * m->real, m->stream));
    CU_TRY(d, cudaMemsetAsync(ib->ft, 0, ib->ft_bytes, m->stream));
    acm_status st = m->real == sizeof(double) ? ib_upload<double>(d) : ib_upload<float>(d);
    for (int32_t i = 0; st == ACM_OK && i < d->nsolids; ++i)
        st = ib_place(d, d->solids[i]);
    return st;
}

/* A solid's force and torque (2 sums) or a free body's coupling sums (4) as
 * acm_launch_ib_sums and acm_launch_ib_coupling lay them out. */
static void unpack_ft(const acm_gpu_sums *p, double f[3], double t[3])
{
    f[0] = p[0].max_u2;
    f[1] = p[0].sum_rho;
    f[2] = p[0].sum_j;
    t[0] = p[0].sum_pi;
    t[1] = p[1].max_u2;
    t[2] = p[1].sum_rho;
}

static void unpack_coupling(const acm_gpu_sums *p, acm_coupling *c)
{
    double *v = (double *)c; /* F, T, k, s, J */
    for (int q = 0; q < 4; ++q) {
        v[4 * q] = p[q].max_u2;
        v[4 * q + 1] = p[q].sum_rho;
        v[4 * q + 2] = p[q].sum_j;
        v[4 * q + 3] = p[q].sum_pi;
    }
}

/* Every solid's force and torque (coupling false: about the centres of the
 * last step) or every free body's coupling sums, from its samples on the own
 * planes, into m->ib.host_ft (2 or 4 sums per solid after the forces' 2 per
 * solid): one wait for the device. Block sums in a fixed order: the same
 * every run. */
static acm_status ib_sums(acm_domain *d, bool coupling)
{
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = ib_args(d);
    acm_gpu_sums *ft = m->ib.ft + (coupling ? 2 * d->nsolids : 0);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (coupling && s->body.motion == ACM_MOTION_FREE)
            CU_TRY(d, acm_launch_ib_coupling(a, m->elem, s->offset, s->count, s->body.x,
                                             m->ib.partials, ft + 4 * i, m->sum_scratch,
                                             m->stream));
        else if (!coupling)
            CU_TRY(d, acm_launch_ib_sums(a, m->elem, s->offset, s->count, m->ib.centre + 3 * i,
                                         m->ib.partials, ft + 2 * i, m->sum_scratch, m->stream));
    }
    CU_TRY(d, cudaMemcpyAsync(m->ib.host_ft, m->ib.ft, m->ib.ft_bytes, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* Implicit coupling of the free bodies (lib/core/rigid.c): their coupling sums,
 * the velocity change, the samples' new forces. */
static acm_status ib_couple(acm_domain *d, const acm_ib_args &a)
{
    cuda_impl *m = IMPL(d);
    if (!acm__solids_any_free(d))
        return ACM_OK;
    ACM_TRY(ib_sums(d, true));
    const acm_gpu_sums *host = m->ib.host_ft + 2 * d->nsolids;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion != ACM_MOTION_FREE)
            continue;
        acm_coupling c;
        unpack_coupling(host + 4 * i, &c);
        double dv[3], dw[3];
        acm__body_coupled_velocity(&s->body, &c, dv, dw);
        CU_TRY(d, acm_launch_ib_couple(a, m->elem, s->offset, s->count, s->body.x, dv, dw,
                                       m->stream));
    }
    return ACM_OK;
}

/* Spread the penalty forces of the current iteration. */
static acm_status ib_spread(acm_domain *d, const acm_ib_args &a)
{
    cuda_impl *m = IMPL(d);
    if (d->layout.ib.spread != ACM_IB_SPREAD_GATHER) {
        CU_TRY(d, acm_launch_ib_scatter(a, m->elem, (uint64_t)d->ncells, m->stream));
        return ACM_OK;
    }
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        acm_ib_region rg = acm_ib_solid_region(&a.ig, s->body.x, s->body.r_max);
        CU_TRY(d, acm_launch_ib_gather(a, m->elem, (uint64_t)d->ncells, rg, s->offset, s->count,
                                       m->ib.scratch, m->ib.scratch_bytes, m->stream));
    }
    return ACM_OK;
}

/* The IB phase up to the first interpolation (spread with it when `fused`). */
static acm_status ib_first(acm_domain *d, bool fused)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        if (s->moved || s->body.motion != ACM_MOTION_STATIC) {
            ACM_TRY(ib_place(d, s));
            m->ib.band_valid = false;
        }
        memcpy(m->ib.centre + 3 * i, s->body.x, 3 * sizeof(double));
    }
    const acm_ib_args a = ib_args(d);
    if (!m->ib.band_valid) /* static samples keep their support */
        CU_TRY(d, acm_launch_ib_mark(a, (uint32_t)d->ncells, m->stream));
    m->ib.band_valid = true;
    CU_TRY(d, acm_launch_ib_band(step_args(d), a, m->elem, m->stream));
    CU_TRY(d, acm_launch_ib_penalty(a, m->elem, (uint64_t)d->ncells, true, fused, m->stream));
    return ACM_OK;
}

/* The rest: the first spread (unless fused), the other iterations. */
static acm_status ib_rest(acm_domain *d, bool fused)
{
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = ib_args(d);
    if (!fused)
        ACM_TRY(ib_spread(d, a));
    for (int it = 1; it < d->layout.ib.iterations; ++it) {
        CU_TRY(d, acm_launch_ib_penalty(a, m->elem, (uint64_t)d->ncells, false, false, m->stream));
        ACM_TRY(ib_spread(d, a));
    }
    d->forces_stale = true; /* summed when asked for (acm_cuda_ib_fetch) */
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_forces(acm_domain *d)
{
    /* without free bodies the first iteration scatters in the same pass */
    bool free_bodies = false;
    for (int32_t i = 0; i < d->nsolids; ++i)
        free_bodies |= d->solids[i]->body.motion == ACM_MOTION_FREE;
    const bool fused = !free_bodies && d->layout.ib.spread != ACM_IB_SPREAD_GATHER;
    ACM_TRY(ib_first(d, fused));
    ACM_TRY(ib_couple(d, ib_args(d)));
    return ib_rest(d, fused);
}

/* A slab's sums in the per-plane layout of ib_plane_forces and ib_begin:
 * each solid's sums of its samples on the slab's planes, in the first plane
 * (the others zero). The slab's share in one deterministic block sum rather
 * than plane by plane: a decomposed domain of GPU slabs adds the slabs' shares
 * in slab order, the same every run (on the CPU the planes are exact). */
static acm_status slab_plane_sums(acm_domain *d, bool coupling, void *out)
{
    cuda_impl *m = IMPL(d);
    const int32_t own = acm__own_planes(d);
    const size_t per = coupling ? sizeof(acm_coupling) : sizeof(acm_ib_ft);
    if (out == NULL)
        return ACM_OK;
    memset(out, 0, (size_t)d->nsolids * (size_t)own * per);
    ACM_TRY(ib_sums(d, coupling));
    for (int32_t i = 0; i < d->nsolids; ++i) {
        char *first = (char *)out + (size_t)i * (size_t)own * per;
        if (coupling && d->solids[i]->body.motion == ACM_MOTION_FREE)
            unpack_coupling(m->ib.host_ft + 2 * d->nsolids + 4 * i, (acm_coupling *)first);
        else if (!coupling)
            unpack_ft(m->ib.host_ft + 2 * i, ((acm_ib_ft *)first)->f, ((acm_ib_ft *)first)->t);
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_begin(acm_domain *d, acm_coupling *out)
{
    ACM_TRY(ib_first(d, false));
    return slab_plane_sums(d, true, out);
}

extern "C" acm_status acm_cuda_ib_end(acm_domain *d, const double *dvdw)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    const acm_ib_args a = ib_args(d);
    for (int32_t i = 0; dvdw != NULL && i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion == ACM_MOTION_FREE)
            CU_TRY(d, acm_launch_ib_couple(a, m->elem, s->offset, s->count, s->body.x,
                                           dvdw + 6 * i, dvdw + 6 * i + 3, m->stream));
    }
    return ib_rest(d, false);
}

/* Force and torque of every solid for the last step, from the samples' forces
 * and positions of that step (still on the device) and its torque centres. */
extern "C" acm_status acm_cuda_ib_fetch(acm_domain *d)
{
    ACM_TRY(enter(d));
    ACM_TRY(ib_sums(d, false));
    for (int32_t i = 0; i < d->nsolids; ++i)
        unpack_ft(IMPL(d)->ib.host_ft + 2 * i, d->solids[i]->force, d->solids[i]->torque);
    d->forces_stale = false;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_ib_plane_forces(acm_domain *d, acm_ib_ft *out)
{
    ACM_TRY(enter(d));
    return slab_plane_sums(d, false, out);
}

extern "C" acm_status acm_cuda_ib_positions(acm_domain *d, const acm_solid *s, double *dst)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    CU_TRY(d, cudaMemcpyAsync(dst, m->ib.X + 3 * s->offset, 3 * (size_t)s->count * sizeof(double),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* ---- re-layout (lib/engine/state.h) ------------------------------------------------------------- */

static_assert(sizeof(acm_gpu_sums) == ACM_STATE_PREV_SIZE * sizeof(double),
              "acm_state.prev holds the ring's acm_gpu_sums as they are");

/* comp planes of the arithmetic type to and from interleaved host FP64. */
static acm_status save_planes(acm_domain *d, const void *planes, int comp, double *dst)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = grid_of(d);
    return download_chunks(d, comp, ACM_DTYPE_FLOAT64, dst, [&](int, uint32_t k0, uint32_t n) {
        return acm_launch_get_planes(g, planes, m->elem, comp, (double *)m->staging, k0, n,
                                     m->stream);
    });
}

static acm_status load_planes(acm_domain *d, void *planes, int comp, const double *src)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = grid_of(d);
    return upload_chunks(d, comp, ACM_DTYPE_FLOAT64, src, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_set_planes(g, planes, m->elem, comp, m->staging, de, k0, n, m->stream);
    });
}

/* Bytes of the IB support mask in a state: a bit per cell, which the device
 * mask (acm_redo_words, 32-bit arithmetic) must hold. */
static acm_status ib_mask_bytes(acm_domain *d, size_t *bytes)
{
    const size_t words = acm_state_mask_words(d->ncells);
    if (words > acm_redo_words((uint32_t)d->ncells))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "the immersed-boundary mask cannot hold a bit for each of %lld cells",
                        (long long)d->ncells);
    *bytes = words * sizeof(uint32_t);
    return ACM_OK;
}

/* The stored populations in canonical order, unstreamed (nothing is
 * rounded): f*_i(x) at (x, i) from f[cur] (two arrays) or the opposite slots
 * (in place, parity 1); in place at parity 0 the physical state. */
static acm_status save_populations(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = grid_of(d);
    const bool swap = m->in_place && m->parity == 1;
    st->form = m->in_place && m->parity == 0 ? ACM_FORM_PHYSICAL : ACM_FORM_POST_COLLISION;
    return download_chunks(d, ACM_Q, ACM_DTYPE_FLOAT64, st->f, [&](int, uint32_t k0, uint32_t n) {
        return acm_launch_get_stored(g, state_array(m), m->elem, swap, (double *)m->staging, k0,
                                     n, m->stream);
    });
}

/* A state parked in device memory (acm_state.parked): the populations in
 * canonical order as stored, the per-cell planes and the mask as they are. */
struct cuda_parked {
    int device;
    acm_gpu_elem elem;
    acm_state_form form;
    void *f, *force, *tau, *ib_force;
    uint32_t *ib_mask;
};

static void parked_free(void *p)
{
    cuda_parked *k = (cuda_parked *)p;
    cudaSetDevice(k->device);
    void *bufs[] = {k->f, k->force, k->tau, k->ib_force, k->ib_mask};
    for (void *b : bufs)
        if (b != NULL)
            cudaFree(b);
    acm__free(k);
}

/* A device copy of `bytes` at src (NULL src: nothing, *dst stays NULL). */
static acm_status park_copy(acm_domain *d, const void *src, size_t bytes, void **dst)
{
    if (src == NULL)
        return ACM_OK;
    cudaError_t e = cudaMalloc(dst, bytes);
    if (e != cudaSuccess) {
        *dst = NULL;
        (void)cudaGetLastError();
        return ACM_FAIL(d, ACM_ERR_DEVICE_MEMORY, "no device memory to park the state");
    }
    CU_TRY(d, cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyDeviceToDevice, IMPL(d)->stream));
    return ACM_OK;
}

/* The state into device memory, as stored. */
static acm_status park(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    cuda_parked *k = (cuda_parked *)acm__calloc(1, sizeof *k);
    if (k == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a parked state");
    k->device = d->device;
    k->elem = m->elem;
    st->parked = k;
    st->parked_free = parked_free;
    const bool swap = m->in_place && m->parity == 1;
    k->form = m->in_place && m->parity == 0 ? ACM_FORM_PHYSICAL : ACM_FORM_POST_COLLISION;
    const size_t pops = (size_t)ACM_Q * (size_t)d->ncells * (size_t)m->elem;
    if (cudaMalloc(&k->f, pops) != cudaSuccess) {
        k->f = NULL;
        (void)cudaGetLastError();
        return ACM_FAIL(d, ACM_ERR_DEVICE_MEMORY, "no device memory to park the state");
    }
    CU_TRY(d, acm_launch_move_stored(grid_of(d), state_array(m), m->elem, swap, k->f, false, 0, 0,
                                     (uint32_t)d->ncells, m->stream));
    ACM_TRY(park_copy(d, m->force, 3 * plane_bytes(d), &k->force));
    ACM_TRY(park_copy(d, m->tau, plane_bytes(d), &k->tau));
    if (m->ib.force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        ACM_TRY(park_copy(d, m->ib.force, 3 * plane_bytes(d), &k->ib_force));
        ACM_TRY(park_copy(d, m->ib.mask, bytes, (void **)&k->ib_mask));
    }
    return ACM_OK;
}

/* The state into host memory as FP64. */
static acm_status save_to_host(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    ACM_TRY(acm__state_alloc(d, st, m->force != NULL, m->tau != NULL, m->ib.force != NULL));
    ACM_TRY(save_populations(d, st));
    if (st->force != NULL) /* the field only: the uniform part is the handle's */
        ACM_TRY(save_planes(d, m->force, 3, st->force));
    if (st->tau != NULL)
        ACM_TRY(save_planes(d, m->tau, 1, st->tau));
    if (st->ib_force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        ACM_TRY(save_planes(d, m->ib.force, 3, st->ib_force));
        CU_TRY(d, cudaMemcpyAsync(st->ib_mask, m->ib.mask, bytes, cudaMemcpyDeviceToHost,
                                  m->stream));
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_state_save(acm_domain *d, acm_state *st, bool parked)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    memset(st, 0, sizeof *st);
    acm_status s = parked ? park(d, st) : ACM_ERR_UNSUPPORTED;
    if (s == ACM_ERR_DEVICE_MEMORY || s == ACM_ERR_UNSUPPORTED) { /* through the host, then */
        acm__state_free(st);
        s = save_to_host(d, st);
    }
    ACM_TRY(s);
    if (st->parked != NULL)
        st->form = ((cuda_parked *)st->parked)->form;
    st->stream = m->own_stream ? NULL : (void *)m->stream;
    st->prev_backend = ACM_BACKEND_CUDA;
    CU_TRY(d, cudaMemcpyAsync(st->prev, m->sums + m->ring, sizeof(acm_gpu_sums),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* A saved state's populations into this layout: a post-collision state into
 * f[cur] (two arrays) or the opposite slots of f[0] (in place, parity 1); a
 * physical state into f[0] (in place, parity 0) or, with two arrays, through
 * the inverse pull (exact but for the moving-wall terms it subtracts). */
static acm_status load_populations(acm_domain *d, const acm_state *st)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = grid_of(d);
    const bool physical = st->form == ACM_FORM_PHYSICAL;
    const bool swap = m->in_place && !physical;
    void *dst = physical ? physical_target(m) : state_array(m);
    if (st->parked != NULL)
        CU_TRY(d, acm_launch_move_stored(g, dst, m->elem, swap, ((cuda_parked *)st->parked)->f,
                                         true, 0, 0, (uint32_t)d->ncells, m->stream));
    else
        ACM_TRY(upload_chunks(d, ACM_Q, ACM_DTYPE_FLOAT64, st->f,
                              [&](int, uint32_t k0, uint32_t n) {
                                  return acm_launch_set_stored(g, dst, m->elem, swap,
                                                               (const double *)m->staging, k0, n,
                                                               m->stream);
                              }));
    if (physical)
        return store_physical_state(d);
    if (m->in_place)
        m->parity = 1;
    return ACM_OK;
}

/* The last immersed-boundary force and its support, which the fluid kernels
 * and the field read-back add until the next step's IB phase. */
static acm_status load_ib(acm_domain *d, const acm_state *st)
{
    cuda_impl *m = IMPL(d);
    size_t bytes = 0;
    ACM_TRY(ib_mask_bytes(d, &bytes));
    ACM_TRY(load_planes(d, m->ib.force, 3, st->ib_force));
    CU_TRY(d, cudaMemcpyAsync(m->ib.mask, st->ib_mask, bytes, cudaMemcpyHostToDevice,
                              m->stream));
    m->ib.band_valid = false; /* the band list is not loaded: the next step marks anew */
    return ACM_OK;
}

/* The per-cell planes of a parked state back (the same storage type). */
static acm_status unpark_planes(acm_domain *d, const cuda_parked *k)
{
    cuda_impl *m = IMPL(d);
    const size_t plane = plane_bytes(d);
    if (k->force != NULL) {
        if (m->force == NULL)
            ACM_TRY(dev_alloc(d, &m->force, 3 * plane, "the force field"));
        CU_TRY(d, cudaMemcpyAsync(m->force, k->force, 3 * plane, cudaMemcpyDeviceToDevice,
                                  m->stream));
    }
    if (k->tau != NULL) {
        ACM_TRY(ensure_tau(d));
        CU_TRY(d, cudaMemcpyAsync(m->tau, k->tau, plane, cudaMemcpyDeviceToDevice, m->stream));
    }
    if (k->ib_force != NULL && m->ib.force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        CU_TRY(d, cudaMemcpyAsync(m->ib.force, k->ib_force, 3 * plane, cudaMemcpyDeviceToDevice,
                                  m->stream));
        CU_TRY(d, cudaMemcpyAsync(m->ib.mask, k->ib_mask, bytes, cudaMemcpyDeviceToDevice,
                                  m->stream));
        m->ib.band_valid = false; /* the next step marks the band anew */
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_state_load(acm_domain *d, const acm_state *st)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    if (st->stream != NULL) { /* the caller's stream, as before the re-layout */
        CU_TRY(d, cudaStreamDestroy(m->stream));
        m->stream = (cudaStream_t)st->stream;
        m->own_stream = false;
    }
    const cuda_parked *k = (const cuda_parked *)st->parked;
    if (k != NULL && k->elem != m->elem)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a state parked with %d-byte populations loaded "
                        "into %d-byte storage", (int)k->elem, (int)m->elem);
    ACM_TRY(load_populations(d, st));
    if (k != NULL) {
        ACM_TRY(unpark_planes(d, k));
    } else {
        if (st->force != NULL) {
            if (m->force == NULL)
                ACM_TRY(dev_alloc(d, &m->force, 3 * plane_bytes(d), "the force field"));
            ACM_TRY(load_planes(d, m->force, 3, st->force));
        }
        if (st->tau != NULL) {
            ACM_TRY(ensure_tau(d));
            ACM_TRY(load_planes(d, m->tau, 1, st->tau));
        }
        if (st->ib_force != NULL && m->ib.force != NULL)
            ACM_TRY(load_ib(d, st));
    }
    if (st->prev_backend == ACM_BACKEND_CUDA)
        CU_TRY(d, cudaMemcpyAsync(m->sums + m->ring, st->prev, sizeof(acm_gpu_sums),
                                  cudaMemcpyHostToDevice, m->stream));
    else /* another backend's reductions: recompute ours, after the IB force is back */
        ACM_TRY(refresh_ring(d));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* ---- smoke (lib/smoke/smoke.c, docs/smoke.md) ----------------------------------------------------- */

/* A smoke's particles on the device (acm_smoke.dev): the slots, the list of
 * free slots a step emits into, the counters, and the step's plan. */
struct cuda_smoke {
    int device;
    double *x;
    int32_t *age, *life;
    uint32_t *free_list, *nfree;
    acm_smoke_counts *counts;
    void *select_temp;              /* the free-slot select's scratch */
    size_t select_bytes;
    acm_smoke_source *sources;      /* the step's plan, grown as needed */
    int32_t sources_cap;
    acm_smoke_obstacle *obstacles;
    int32_t obstacles_cap;
};

extern "C" void acm_cuda_smoke_detach(acm_smoke *s)
{
    cuda_smoke *c = (cuda_smoke *)s->dev;
    cudaSetDevice(c->device); /* cudaFree waits for the device */
    void *bufs[] = {c->x,      c->age,         c->life,    c->free_list, c->nfree,
                    c->counts, c->select_temp, c->sources, c->obstacles};
    for (void *b : bufs)
        if (b != NULL)
            cudaFree(b);
    acm__free(c);
    s->dev = NULL;
}

extern "C" acm_status acm_cuda_smoke_attach(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(enter(d));
    cuda_smoke *c = (cuda_smoke *)acm__calloc(1, sizeof *c);
    if (c == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a smoke's device record");
    s->dev = c;
    c->device = d->device;
    const size_t n = (size_t)s->capacity;
    cudaStream_t st = IMPL(d)->stream;
    cudaError_t e = acm_launch_smoke_free_slots(NULL, &c->select_bytes, c->age, c->free_list,
                                                c->nfree, n, st);
    struct {
        void **p;
        size_t bytes;
    } want[] = {{(void **)&c->x, 3 * n * sizeof(double)}, {(void **)&c->age, n * sizeof(int32_t)},
                {(void **)&c->life, n * sizeof(int32_t)},
                {(void **)&c->free_list, n * sizeof(uint32_t)},
                {(void **)&c->nfree, sizeof(uint32_t)},
                {(void **)&c->counts, sizeof(acm_smoke_counts)},
                {(void **)&c->select_temp, c->select_bytes}};
    for (size_t k = 0; k < sizeof want / sizeof want[0] && e == cudaSuccess; ++k)
        e = cudaMalloc(want[k].p, want[k].bytes ? want[k].bytes : 1);
    if (e == cudaSuccess) /* every slot free: age -1 */
        e = cudaMemsetAsync(c->age, 0xff, n * sizeof(int32_t), st);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(c->counts, 0, sizeof(acm_smoke_counts), st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        acm_cuda_smoke_detach(s);
        return cuda_fail(d, e, "allocating a smoke's particles");
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_velocity(acm_domain *d)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    if (m->smoke_u == NULL)
        ACM_TRY(dev_alloc(d, (void **)&m->smoke_u, 3 * (size_t)d->ncells * sizeof(float),
                          "the smoke's velocity"));
    m->smoke_capture = true; /* enqueue_step writes it */
    return ACM_OK;
}

/* Room for n records of a plan in device memory (grown, never shrunk). */
template <typename T>
static cudaError_t plan_room(T **p, int32_t *cap, int32_t n)
{
    if (n <= *cap)
        return cudaSuccess;
    if (*p != NULL)
        cudaFree(*p); /* waits for the kernels that read it */
    *p = NULL;
    *cap = 0;
    const cudaError_t e = cudaMalloc((void **)p, (size_t)n * sizeof(T));
    if (e == cudaSuccess)
        *cap = n;
    return e;
}

/* Copy a plan's records (pageable: staged before the call returns, so the
 * host may reuse them at once). */
template <typename T>
static cudaError_t plan_upload(T **p, int32_t *cap, const T *src, int32_t n, cudaStream_t st)
{
    if (n == 0)
        return cudaSuccess;
    cudaError_t e = plan_room(p, cap, n);
    return e != cudaSuccess ? e
                            : cudaMemcpyAsync(*p, src, (size_t)n * sizeof(T), cudaMemcpyHostToDevice, st);
}

extern "C" acm_status acm_cuda_smoke_step(acm_domain *d, acm_smoke *s, const acm_smoke_plan *p)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, plan_upload(&c->obstacles, &c->obstacles_cap, p->obstacles, p->nobstacles, m->stream));
    CU_TRY(d, acm_launch_smoke_advect(acm__ib_grid(d), m->smoke_u, c->obstacles, p->nobstacles,
                                      c->x, c->age, c->life, c->counts, s->capacity, m->stream));
    if (p->emissions == 0)
        return ACM_OK;
    CU_TRY(d, plan_upload(&c->sources, &c->sources_cap, p->sources, p->nsources, m->stream));
    CU_TRY(d, acm_launch_smoke_free_slots(c->select_temp, &c->select_bytes, c->age, c->free_list,
                                          c->nfree, s->capacity, m->stream));
    CU_TRY(d, acm_launch_smoke_emit(c->sources, p->nsources, p->emissions, p->seed, c->free_list,
                                    c->nfree, c->x, c->age, c->life, c->counts, m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_counts(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, cudaMemcpyAsync(&s->counts, c->counts, sizeof s->counts, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* The particles (positions, ages, lifetimes) between the host's arrays and
 * the device's, either way, on the domain's stream. */
static acm_status smoke_copy(acm_domain *d, acm_smoke *s, cudaMemcpyKind kind)
{
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    const bool up = kind == cudaMemcpyHostToDevice;
    const size_t n = (size_t)s->capacity;
    const struct {
        void *host, *dev;
        size_t bytes;
    } part[3] = {{s->x, c->x, 3 * n * sizeof(double)},
                 {s->age, c->age, n * sizeof(int32_t)},
                 {s->life, c->life, n * sizeof(int32_t)}};
    for (int i = 0; i < 3; ++i)
        CU_TRY(d, cudaMemcpyAsync(up ? part[i].dev : part[i].host, up ? part[i].host : part[i].dev,
                                  part[i].bytes, kind, m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_fetch(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(enter(d));
    ACM_TRY(smoke_copy(d, s, cudaMemcpyDeviceToHost));
    return acm_cuda_smoke_counts(d, s);
}

extern "C" acm_status acm_cuda_smoke_upload(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(enter(d));
    ACM_TRY(smoke_copy(d, s, cudaMemcpyHostToDevice));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, cudaMemcpyAsync(c->counts, &s->counts, sizeof s->counts, cudaMemcpyHostToDevice,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_project(acm_domain *d, acm_smoke *s, int32_t sub, float *dst,
                                             size_t count, bool on_device)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    int32_t g[3];
    ACM_TRY(acm__smoke_grid(s, sub, g));
    float *grid = dst;
    if (!on_device) {
        const cudaError_t e = cudaMalloc((void **)&grid, count * sizeof(float));
        if (e != cudaSuccess)
            return cuda_fail(d, e, "allocating the density grid");
    }
    cudaError_t e = cudaMemsetAsync(grid, 0, count * sizeof(float), m->stream);
    if (e == cudaSuccess)
        e = acm_launch_smoke_density(acm__ib_grid(d), g, sub, c->x, c->age, s->capacity, grid,
                                     m->stream);
    if (e == cudaSuccess && !on_device)
        e = cudaMemcpyAsync(dst, grid, count * sizeof(float), cudaMemcpyDeviceToHost, m->stream);
    if (e == cudaSuccess && !on_device)
        e = cudaStreamSynchronize(m->stream);
    if (!on_device)
        cudaFree(grid);
    return e == cudaSuccess ? ACM_OK : cuda_fail(d, e, "projecting the smoke's density");
}

extern "C" acm_status acm_cuda_upload(acm_domain *d, const void *src, size_t bytes, void **dev)
{
    ACM_TRY(enter(d));
    cudaError_t e = cudaMalloc(dev, bytes ? bytes : 1);
    if (e == cudaSuccess)
        e = cudaMemcpy(*dev, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        if (*dev != NULL)
            cudaFree(*dev);
        *dev = NULL;
        return cuda_fail(d, e, "copying emitter or obstacle data to the device");
    }
    return ACM_OK;
}

extern "C" void acm_cuda_release(acm_domain *d, void *dev)
{
    cudaSetDevice(d->device);
    cudaFree(dev);
}

/* Velocity at points (lib/core/smoke_math.h): the points up, one thread each, the values down. */
extern "C" acm_status acm_cuda_sample_velocity(acm_domain *d, const double *points, size_t count,
                                               double *velocity)
{
    ACM_TRY(enter(d));
    cuda_impl *m = IMPL(d);
    const size_t bytes = 3 * count * sizeof(double);
    if (m->probe_bytes < 2 * bytes) {
        if (m->probe != NULL)
            cudaFree(m->probe);
        m->probe = NULL;
        m->probe_bytes = 0;
        ACM_TRY(dev_alloc(d, (void **)&m->probe, 2 * bytes, "velocity probes"));
        m->probe_bytes = 2 * bytes;
    }
    CU_TRY(d, cudaMemcpyAsync(m->probe, points, bytes, cudaMemcpyHostToDevice, m->stream));
    CU_TRY(d, acm_launch_sample_velocity(step_args(d), acm__ib_grid(d), state_array(m), m->elem,
                                         m->probe, m->probe + 3 * count, (uint32_t)count,
                                         m->stream));
    CU_TRY(d, cudaMemcpyAsync(velocity, m->probe + 3 * count, bytes, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

extern "C" void acm_cuda_device_name(acm_domain *d, char *buf, size_t size)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d->device) != cudaSuccess) {
        (void)cudaGetLastError();
        acm__format(buf, size, "cuda device %d", (int)d->device);
        return;
    }
    acm__format(buf, size, "%s sm_%d%d %zuMiB", p.name, p.major, p.minor, p.totalGlobalMem >> 20);
}

/* ---- interoperability (include/acmlbm/acm_cuda.h) ---------------------------------------- */

static acm_status require_cuda(acm_domain *d)
{
    if (d == NULL)
        return ACM_ERR_NULL_POINTER;
    if (d->backend != ACM_BACKEND_CUDA)
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED, "this domain runs on the CPU backend");
    if (d->decomp != NULL) /* its impl is the slabs' table, not a device's state */
        return ACM_FAIL(d, ACM_ERR_UNSUPPORTED,
                        "CUDA interoperability works on a domain of one slab; this one is "
                        "decomposed (docs/multi-gpu.md)");
    return enter(d);
}

extern "C" ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps)
{
    ACM_TRY(require_cuda(domain));
    ACM_TRY(acm__step_check(domain, nsteps));
    return acm__step_pipeline(domain, nsteps, false);
}

extern "C" ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain)
{
    ACM_TRY(require_cuda(domain));
    return check(domain);
}

extern "C" ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, cudaStream_t stream)
{
    ACM_TRY(require_cuda(domain));
    cuda_impl *m = IMPL(domain);
    CU_TRY(domain, cudaStreamSynchronize(m->stream));
    if (m->own_stream)
        CU_TRY(domain, cudaStreamDestroy(m->stream));
    m->own_stream = stream == NULL;
    if (m->own_stream)
        CU_TRY(domain, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    m->stream = stream;
    return ACM_OK;
}

extern "C" ACM_API acm_status acm_cuda_domain_get_stream(acm_domain *domain, cudaStream_t *stream)
{
    ACM_TRY(require_cuda(domain));
    if (stream == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "stream is NULL");
    *stream = IMPL(domain)->stream;
    return ACM_OK;
}

extern "C" ACM_API acm_status acm_cuda_domain_map_fields(acm_domain *domain, const float **density,
                                                         const float **velocity)
{
    ACM_TRY(require_cuda(domain));
    if (density == NULL && velocity == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "density and velocity are both NULL");
    cuda_impl *m = IMPL(domain);
    if (m->vis == NULL)
        ACM_TRY(dev_alloc(domain, (void **)&m->vis, 4 * (size_t)domain->ncells * sizeof(float),
                          "render fields"));
    acm_step_args a = step_args(domain);
    const uint32_t n = (uint32_t)domain->ncells;
    if (density != NULL) {
        CU_TRY(domain, acm_launch_field(a, state_array(m), m->elem, ACM_FIELD_DENSITY, m->vis, 4,
                                        0, n, m->stream));
        *density = m->vis;
    }
    if (velocity != NULL) {
        CU_TRY(domain, acm_launch_field(a, state_array(m), m->elem, ACM_FIELD_VELOCITY,
                                        m->vis + n, 4, 0, n, m->stream));
        *velocity = m->vis + n;
    }
    return ACM_OK;
}

extern "C" ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                                     float *device_dst, size_t count)
{
    return acm__smoke_density_device(smoke, subdivisions, device_dst, count);
}
