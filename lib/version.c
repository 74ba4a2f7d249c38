/*
 * libacmlbm -- runtime version and backend availability.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "backend.h"

ACM_API unsigned acm_version_number(void) { return ACM_VERSION_NUMBER; }

ACM_API const char *acm_version_string(void) { return ACM_VERSION_STRING; }

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
