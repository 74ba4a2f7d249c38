/*
 * libacmlbm -- the CUDA interoperability API in a build without CUDA: the
 * same symbols (so the ABI does not depend on the build), each answering
 * ACM_ERR_NOT_BUILT. cudaStream_t is an opaque pointer, hence void * here.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "acm_private.h"
#include "smoke.h" /* acm__smoke_fail */

ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, void *stream);
ACM_API acm_status acm_cuda_domain_get_stream(acm_domain *domain, void **stream);
ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps);
ACM_API acm_status acm_cuda_step_prepare(acm_domain *domain, int64_t nsteps);
ACM_API acm_status acm_cuda_graphs_recorded(acm_domain *domain, int64_t *count);
ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain);
ACM_API acm_status acm_cuda_domain_map_fields(acm_domain *domain, const float **density,
                                              const float **velocity);
ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                          float *device_dst, size_t count);
ACM_API acm_status acm_cuda_domain_set_face_values(acm_domain *domain, acm_face face,
                                                   acm_dtype dtype, const void *device_values,
                                                   size_t count);

static acm_status not_built(acm_domain *domain)
{
    if (domain == NULL)
        return ACM_ERR_NULL_POINTER;
    return ACM_FAIL(domain, ACM_ERR_NOT_BUILT, "this build of libacmlbm has no CUDA backend");
}

ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, void *stream)
{
    (void)stream;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_domain_get_stream(acm_domain *domain, void **stream)
{
    (void)stream;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps)
{
    (void)nsteps;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_step_prepare(acm_domain *domain, int64_t nsteps)
{
    (void)nsteps;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_graphs_recorded(acm_domain *domain, int64_t *count)
{
    if (count != NULL)
        *count = 0;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain) { return not_built(domain); }

ACM_API acm_status acm_cuda_domain_map_fields(acm_domain *domain, const float **density,
                                              const float **velocity)
{
    (void)density;
    (void)velocity;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_domain_set_face_values(acm_domain *domain, acm_face face,
                                                   acm_dtype dtype, const void *device_values,
                                                   size_t count)
{
    (void)face;
    (void)dtype;
    (void)device_values;
    (void)count;
    return not_built(domain);
}

ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                          float *device_dst, size_t count)
{
    (void)subdivisions;
    (void)device_dst;
    (void)count;
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    return acm__smoke_fail(smoke, ACM_ERR_NOT_BUILT, "this build of libacmlbm has no CUDA backend");
}
