/*
 * libacmlbm -- the CUDA interoperability API (include/acmlbm/acm_cuda.h): the
 * exported functions that step, synchronise and share a domain's stream and
 * fields with the caller's CUDA code. SPDX-License-Identifier: Apache-2.0
 */
#include "backend_impl.cuh"
#include "alloc.h"    /* acm__malloc, acm__free */
#include "faces.h"    /* acm__set_face_values */
#include "pipeline.h" /* acm__step_check, acm__step_pipeline, acm__step_record */
#include "smoke.h"    /* acm__smoke_density_device */

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
    return cu_enter(d);
}

extern "C" ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps)
{
    const cu_range range("acm_cuda_step_async");
    ACM_TRY(require_cuda(domain));
    ACM_TRY(cu_take_seen(domain)); /* what an earlier call's steps found, without waiting */
    ACM_TRY(acm__step_check(domain, nsteps));
    ACM_TRY(acm__step_pipeline(domain, nsteps, false));
    return cu_send_seen(domain);
}

extern "C" ACM_API acm_status acm_cuda_step_prepare(acm_domain *domain, int64_t nsteps)
{
    ACM_TRY(require_cuda(domain));
    ACM_TRY(acm__step_check(domain, nsteps));
    return acm__step_record(domain, nsteps);
}

extern "C" ACM_API acm_status acm_cuda_graphs_recorded(acm_domain *domain, int64_t *count)
{
    if (count == NULL)
        return domain == NULL ? ACM_ERR_NULL_POINTER
                              : ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "count is NULL");
    *count = 0;
    ACM_TRY(require_cuda(domain));
    *count = IMPL(domain)->graphs_recorded;
    return ACM_OK;
}

extern "C" ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain)
{
    const cu_range range("acm_cuda_domain_synchronize");
    ACM_TRY(require_cuda(domain));
    return cu_check(domain);
}

extern "C" ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, cudaStream_t stream)
{
    ACM_TRY(require_cuda(domain));
    cuda_impl *m = IMPL(domain);
    CU_TRY(domain, cudaStreamSynchronize(m->stream));
    const bool own = stream == NULL;
    if (own) /* a stream of its own, made before the old one goes: a failure changes nothing */
        CU_TRY(domain, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (m->own_stream)
        cudaStreamDestroy(m->stream); /* synchronised above */
    m->own_stream = own;
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
        ACM_TRY(cu_dev_alloc(domain, (void **)&m->vis, 4 * (size_t)domain->ncells * sizeof(float),
                          "render fields"));
    acm_step_args a = cu_step_args(domain);
    const uint32_t n = (uint32_t)domain->ncells;
    if (density != NULL) {
        CU_TRY(domain, acm_launch_field(a, cu_state_array(m), m->elem, ACM_FIELD_DENSITY, m->vis, 4,
                                        0, n, m->stream));
        *density = m->vis;
    }
    if (velocity != NULL) {
        CU_TRY(domain, acm_launch_field(a, cu_state_array(m), m->elem, ACM_FIELD_VELOCITY,
                                        m->vis + n, 4, 0, n, m->stream));
        *velocity = m->vis + n;
    }
    return ACM_OK;
}

extern "C" ACM_API acm_status acm_cuda_domain_set_face_values(acm_domain *domain, acm_face face,
                                                              acm_dtype dtype,
                                                              const void *device_values,
                                                              size_t count)
{
    ACM_TRY(require_cuda(domain));
    const bool face_known = (unsigned)face < ACM_FACE_COUNT;
    const acm_boundary type = face_known ? domain->setup.face[face].type : ACM_BOUNDARY_PERIODIC;
    const int32_t n[3] = {domain->nx, domain->ny, domain->nz};
    int lo = 0, hi = 0;
    if (face_known)
        acm_face_axes((int)face, &lo, &hi);
    const size_t want = (size_t)acm_face_value_count(type) * (size_t)n[lo] * (size_t)n[hi];
    const size_t elem = dtype == ACM_DTYPE_FLOAT32 ? 4 : 8;
    if (!face_known || !acm_face_is_layer(type) || device_values == NULL ||
        (dtype != ACM_DTYPE_FLOAT32 && dtype != ACM_DTYPE_FLOAT64) || count != want)
        /* refused before the values are read, with the host call's message */
        return acm__set_face_values(domain, face, dtype, device_values, count);
    cudaPointerAttributes at;
    CU_TRY(domain, cudaPointerGetAttributes(&at, device_values));
    if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
        return ACM_FAIL(domain, ACM_ERR_INVALID_ARG,
                        "face %s: the values are not in device memory (acm_domain_set_face_values "
                        "takes host memory)",
                        acm__face_name(face));
    void *host = acm__malloc(count * elem);
    if (host == NULL)
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate %zu face values", count);
    cuda_impl *m = IMPL(domain);
    cudaError_t e = cudaMemcpyAsync(host, device_values, count * elem, cudaMemcpyDeviceToHost,
                                    m->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(m->stream);
    acm_status st = e == cudaSuccess
                        ? acm__set_face_values(domain, face, dtype, host, count)
                        : cu_fail(domain, e, "copying the face values from the device");
    acm__free(host);
    return st;
}

extern "C" ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                                     float *device_dst, size_t count)
{
    return acm__smoke_density_device(smoke, subdivisions, device_dst, count);
}
