/*
 * libacmlbm -- the CUDA interoperability API (include/acmlbm/acm_cuda.h): the
 * exported functions that step, synchronise and share a domain's stream and
 * fields with the caller's CUDA code. SPDX-License-Identifier: Apache-2.0
 */
#include "backend_impl.cuh"
#include "pipeline.h" /* acm__step_check, acm__step_pipeline */
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
    ACM_TRY(require_cuda(domain));
    ACM_TRY(cu_take_seen(domain)); /* what an earlier call's steps found, without waiting */
    ACM_TRY(acm__step_check(domain, nsteps));
    ACM_TRY(acm__step_pipeline(domain, nsteps, false));
    return cu_send_seen(domain);
}

extern "C" ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain)
{
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

extern "C" ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                                     float *device_dst, size_t count)
{
    return acm__smoke_density_device(smoke, subdivisions, device_dst, count);
}
