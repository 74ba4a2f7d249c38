/*
 * libacmlbm -- choice of the backend ops table (style guide R15), and which
 * backends this build and machine offer.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h> /* getenv */
#include <string.h> /* strcmp */

#include "backends.h"
#include "cpu.h" /* acm_backend_cpu */
#if ACM_HAVE_CUDA
#include "backend_cuda.h" /* acm_backend_cuda */
#endif /* ACM_HAVE_CUDA */

static acm_status pick_cuda(const struct acm_backend_ops **out, char *msg, size_t n)
{
#if ACM_HAVE_CUDA
    if (!acm_backend_cuda.probe()) {
        acm__format(msg, n, "the CUDA backend found no usable device");
        return ACM_ERR_NO_DEVICE;
    }
    *out = &acm_backend_cuda;
    return ACM_OK;
#else
    (void)out;
    acm__format(msg, n, "this build of libacmlbm has no CUDA backend (-Dcuda=enabled)");
    return ACM_ERR_NOT_BUILT;
#endif /* ACM_HAVE_CUDA */
}

acm_status acm__backend_select(acm_backend requested, const struct acm_backend_ops **out,
                               char *msg, size_t n)
{
    if (requested == ACM_BACKEND_AUTO) {
        const char *env = getenv("ACMLBM_BACKEND");
        if (env != NULL && strcmp(env, "cpu") == 0)
            requested = ACM_BACKEND_CPU;
        else if (env != NULL && strcmp(env, "cuda") == 0)
            requested = ACM_BACKEND_CUDA;
        else if (env != NULL && env[0] != '\0') {
            acm__format(msg, n, "ACMLBM_BACKEND=%s: expected cpu or cuda", env);
            return ACM_ERR_INVALID_ARG;
        } else if (pick_cuda(out, msg, n) == ACM_OK)
            return ACM_OK;
        else
            requested = ACM_BACKEND_CPU;
    }
    if (requested == ACM_BACKEND_CUDA)
        return pick_cuda(out, msg, n);
    *out = &acm_backend_cpu;
    return ACM_OK;
}

ACM_API int acm_backend_available(acm_backend backend)
{
    switch (backend) {
    case ACM_BACKEND_AUTO:
    case ACM_BACKEND_CPU:
        return 1;
    case ACM_BACKEND_CUDA:
#if ACM_HAVE_CUDA
        return acm_backend_cuda.probe() ? 1 : 0;
#else
        return 0;
#endif /* ACM_HAVE_CUDA */
    default:
        return 0;
    }
}
