/*
 * libacmlbm -- the CUDA backend's host side: error mapping, device memory,
 * the sizes and the kernel arguments of a domain's storage, its lifecycle
 * (probe, init, fini) and its device's name. The other host units hold the
 * rest (backend_impl.cuh names them); everything crosses into lib/ through
 * the extern "C" functions declared in cuda/backend_cuda.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy, memset */

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

/* Make the domain's device current; refuse a broken context. */
acm_status cu_enter(acm_domain *d)
{
    if (IMPL(d)->broken)
        return ACM_FAIL(d, ACM_ERR_DEVICE,
                        "an earlier device fault left this domain unusable; destroy it");
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

/* ---- sizes ------------------------------------------------------------------ */

static size_t pop_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * (size_t)IMPL(d)->elem;
}

static size_t mom_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * IMPL(d)->real;
}

size_t cu_plane_bytes(const acm_domain *d) { return (size_t)d->ncells * IMPL(d)->real; }

/* Block sums: one per block of the per-cell kernels (at least 32 threads),
 * two per block of the diagnostics (256 threads). */
static unsigned partial_count(const acm_domain *d)
{
    return 2 * acm_blocks((uint64_t)d->ncells, IMPL(d)->block) + 2;
}

/* The per-plane sums of the ACM rules. */
size_t cu_planes_bytes(const acm_domain *d) { return (size_t)d->nz * sizeof(acm_plane_fixed); }

acm_gpu_grid cu_grid_of(const acm_domain *d)
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

acm_status cu_reset_counters(acm_domain *d)
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
        ACM_TRY(cu_dev_alloc(d, &m->f[b], pop_bytes(d), "populations"));
    if (d->layout.kernel != ACM_KERNEL_FUSED) {
        ACM_TRY(cu_dev_alloc(d, &m->tmp, pop_bytes(d), "streamed populations"));
        ACM_TRY(cu_dev_alloc(d, &m->macro, 4 * cu_plane_bytes(d), "macroscopic fields"));
    }
    if (d->layout.kernel == ACM_KERNEL_SPLIT)
        ACM_TRY(cu_dev_alloc(d, &m->mom, mom_bytes(d), "collision moments"));
    const size_t redo_bytes = acm_redo_words(d->ncells) * sizeof(uint32_t);
    ACM_TRY(cu_dev_alloc(d, (void **)&m->redo, redo_bytes, "fallback marks"));
    CU_TRY(d, cudaMemsetAsync(m->redo, 0, redo_bytes, m->stream));
    ACM_TRY(cu_dev_alloc(d, (void **)&m->sums, 4 * sizeof(acm_gpu_sums), "step sums"));
    CU_TRY(d, cudaMemsetAsync(m->sums, 0, 4 * sizeof(acm_gpu_sums), m->stream));
    ACM_TRY(cu_dev_alloc(d, (void **)&m->partials, partial_count(d) * sizeof(acm_gpu_sums),
                      "block sums"));
    ACM_TRY(cu_dev_alloc(d, (void **)&m->planes, cu_planes_bytes(d), "plane sums"));
    /* read before a first step when a decomposed domain re-cuts its slabs (its
     * saved reductions then replace what they give) */
    CU_TRY(d, cudaMemsetAsync(m->planes, 0, cu_planes_bytes(d), m->stream));
    ACM_TRY(cu_dev_alloc(d, &m->sum_scratch, acm_sum_scratch_bytes(), "reduction stage"));
    CU_TRY(d, cudaMemsetAsync(m->sum_scratch, 0, acm_sum_scratch_bytes(), m->stream));
    ACM_TRY(cu_dev_alloc(d, (void **)&m->counters, 2 * sizeof(unsigned long long), "counters"));
    ACM_TRY(cu_dev_alloc(d, &m->staging, ACM_STAGING_BYTES, "transfers"));
    CU_TRY(d, cudaMallocHost((void **)&m->host_counters, 2 * sizeof(unsigned long long)));
    CU_TRY(d, cudaMallocHost((void **)&m->host_sums, 2 * sizeof(acm_gpu_sums)));
    CU_TRY(d, cudaMallocHost((void **)&m->host_planes, cu_planes_bytes(d)));
    /* CUB keeps what it learns of the device at its first call for the life of
     * the process, a failure included: ask it now, while the domain's memory
     * was just found, rather than at a first smoke made when there may be none
     * (test-cuda, device_memory_exhaustion_changes_nothing) */
    size_t select_bytes = 0;
    CU_TRY(d, acm_launch_smoke_free_slots(NULL, &select_bytes, NULL, NULL, NULL, 1, m->stream));
    return cu_reset_counters(d);
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
    cu_ib_release(d, true);
    cu_share_release(d);
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
