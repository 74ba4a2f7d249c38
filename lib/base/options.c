/*
 * libacmlbm -- the versioned options structs (options.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy */

#include "options.h"

acm_status acm__options_init(void *opts, const void *def, size_t size, uint32_t version)
{
    if (opts == NULL)
        return ACM_ERR_NULL_POINTER;
    if (size == 0)
        return ACM_ERR_BAD_VERSION;
    memcpy(opts, def, size);
    memcpy(opts, &version, sizeof version); /* the version comes first in each */
    return ACM_OK;
}
