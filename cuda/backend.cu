/*
 * libacmlbm -- the CUDA backend's host side: a domain's lifecycle (probe,
 * init, fini) and its device's name. The other host units hold the rest
 * (backend_impl.cuh names them; backend_device.cu what they all use);
 * everything crosses into lib/ through the extern "C" functions declared in
 * cuda/backend_cuda.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "alloc.h"
#include "backend_impl.cuh"

/* ---- lifecycle ----------------------------------------------------------------- */

static size_t pop_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * (size_t)IMPL(d)->elem;
}

static size_t mom_bytes(const acm_domain *d)
{
    return (size_t)acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * IMPL(d)->real;
}

/* The bytes of the source that a fused two-array step reads once, evict-first
 * (acm_read_once): the whole array where it fits in three quarters of the
 * device's L2 and in one access policy window, else 0 (a 80^3 FP32 array of
 * 55 MB on an H100's 50 MB gained nothing: docs/performance.md, "The source
 * read once"). */
static size_t read_once_bytes(const acm_domain *d)
{
    int l2 = 0, window = 0;
    if (IMPL(d)->in_place || d->layout.kernel != ACM_KERNEL_FUSED || cu_moments(d))
        return 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, d->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, d->device) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const size_t bytes = cu_state_bytes(d);
    return bytes <= (size_t)l2 / 4u * 3u && bytes <= (size_t)window ? bytes : 0;
}

/* Block sums: one per block of the per-cell kernels (at least 32 threads),
 * two per block of the diagnostics (256 threads). */
static unsigned partial_count(const acm_domain *d)
{
    return 2 * acm_blocks((uint64_t)d->ncells, IMPL(d)->block) + 2;
}


extern "C" bool acm_cuda_probe(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return n > 0;
}

/* A stream or event of the domain's own, its handle set only when made (a
 * failed call may leave junk in it, which domain_fini would then use). */
static cudaError_t new_stream(cudaStream_t *out)
{
    cudaStream_t s = NULL;
    const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        *out = s;
    return e;
}

static cudaError_t new_event(cudaEvent_t *out)
{
    cudaEvent_t ev = NULL;
    const cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess)
        *out = ev;
    return e;
}

extern "C" acm_status acm_cuda_domain_init(acm_domain *d)
{
    if ((uint64_t)d->ncells >= ((uint64_t)1 << 32))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "the CUDA backend handles up to 2^32 - 1 cells per domain");
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
    ACM_TRY(cu_load_kernels(d));
    CU_TRY(d, new_stream(&m->stream));
    m->own_stream = true;
    CU_TRY(d, new_event(&m->marker));
    CU_TRY(d, new_stream(&m->side));
    CU_TRY(d, new_event(&m->side_done));
    CU_TRY(d, new_stream(&m->loop_stream));
    m->in_place = d->layout.streaming == ACM_STREAMING_IN_PLACE;
    for (int b = 0; b < (m->in_place ? 1 : 2); ++b)
        ACM_TRY(cu_dev_alloc(d, &m->f[b], cu_state_bytes(d),
                             cu_moments(d) ? "moments" : "populations"));
    m->read_once = read_once_bytes(d);
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
    const size_t fold_bytes = cu_planes_bytes(d) + sizeof(acm_plane_fixed) +
                              (1 + ACM_FOLD_REDO_CELLS) * sizeof(uint32_t);
    ACM_TRY(cu_dev_alloc(d, (void **)&m->fold_planes, fold_bytes, "plane sums folded in the step"));
    CU_TRY(d, cudaMemsetAsync(m->fold_planes, 0, fold_bytes, m->stream));
    ACM_TRY(cu_dev_alloc(d, &m->sum_scratch, acm_sum_scratch_bytes(), "reduction stage"));
    CU_TRY(d, cudaMemsetAsync(m->sum_scratch, 0, acm_sum_scratch_bytes(), m->stream));
    ACM_TRY(cu_dev_alloc(d, (void **)&m->counters, 6 * sizeof(unsigned long long), "counters"));
    m->loop_iter = (uint32_t *)(m->counters + 4);
    CU_TRY(d, cudaMemsetAsync(m->counters + 5, 0, sizeof(unsigned long long), m->stream));
    ACM_TRY(cu_dev_alloc(d, &m->staging, ACM_STAGING_BYTES, "transfers"));
    CU_TRY(d, cudaMallocHost((void **)&m->host_counters, 4 * sizeof(unsigned long long)));
    CU_TRY(d, cudaHostAlloc((void **)&m->seen, 3 * sizeof(unsigned long long),
                            cudaHostAllocMapped));
    m->seen[0] = ACM_NO_KEY;
    m->seen[1] = m->seen[2] = 0;
    CU_TRY(d, cudaHostGetDevicePointer((void **)&m->seen_dev, m->seen, 0));
    CU_TRY(d, cudaMallocHost((void **)&m->host_sums, 2 * sizeof(acm_gpu_sums)));
    CU_TRY(d, cudaMallocHost((void **)&m->host_planes, cu_planes_bytes(d)));
    /* CUB keeps what it learns of the device at its first call for the life of
     * the process, a failure included: ask it now, while the domain's memory
     * was just found, rather than at a first smoke made when there may be none
     * (test-cuda, device_memory_exhaustion_changes_nothing) */
    size_t select_bytes = 0;
    CU_TRY(d, acm_launch_smoke_free_slots(NULL, &select_bytes, NULL, NULL, NULL, 1, m->stream));
    for (int f = 0; f < ACM_FACE_COUNT; ++f) /* new storage (a re-layout, a restore) */
        if (d->face_values[f] != NULL)
            ACM_TRY(acm_cuda_face_values(d, f));
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
    cu_graphs_release(d);
    cu_smokes_run_release(d);
    acm__free(m->run_smoke.kept);
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        if (m->face_dev[f] != NULL)
            cudaFree(m->face_dev[f]);
    void **bufs[] = {&m->f[0],          &m->f[1],          &m->tmp,
                     &m->mom,           &m->macro,         (void **)&m->redo,
                     &m->force,         &m->tau,           (void **)&m->sums,
                     (void **)&m->partials, (void **)&m->planes, &m->sum_scratch,
                     (void **)&m->fold_planes,
                     (void **)&m->counters,
                     &m->staging,       (void **)&m->vis,  (void **)&m->smoke_u};
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
    if (m->seen != NULL)
        cudaFreeHost(m->seen);
    if (m->inbox.host != NULL)
        cudaFreeHost(m->inbox.host);
    if (m->read_host != NULL)
        cudaFreeHost(m->read_host);
    if (m->read_done != NULL)
        cudaEventDestroy(m->read_done);
    if (m->side_done != NULL)
        cudaEventDestroy(m->side_done);
    if (m->side != NULL)
        cudaStreamDestroy(m->side);
    if (m->loop_stream != NULL)
        cudaStreamDestroy(m->loop_stream);
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

/* The face's values (d->face_values) into device memory kept for them: the
 * layer kernels read them where g.face_values points (cu_grid_of); a new size
 * allocates anew, the old copy kept on failure. */
extern "C" acm_status acm_cuda_face_values(acm_domain *d, int face)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    const double *v = d->face_values[face];
    if (v == NULL)
        return ACM_OK; /* the grid points at no values; the memory stays for the next ones */
    int lo, hi;
    acm_face_axes(face, &lo, &hi);
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    const size_t count = (size_t)acm_face_value_count(d->setup.face[face].type) *
                         (size_t)n[lo] * (size_t)n[hi];
    if (m->face_dev_n[face] != count) {
        double *fresh = NULL;
        ACM_TRY(cu_dev_alloc(d, (void **)&fresh, count * sizeof *fresh, "a face's values"));
        cu_dev_free(d, (void **)&m->face_dev[face], m->face_dev_n[face] * sizeof *fresh);
        m->face_dev[face] = fresh;
        m->face_dev_n[face] = count;
    }
    CU_TRY(d, cudaMemcpyAsync(m->face_dev[face], v, count * sizeof *v, cudaMemcpyHostToDevice,
                              m->stream));
    return ACM_OK;
}
