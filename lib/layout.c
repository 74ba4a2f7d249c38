/*
 * libacmlbm -- acm_layout: memory-layout parameters (CSoA group size alpha).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, free */

#include "acm_private.h"

#define ACM_CSOA_GROUP_MAX (INT64_C(1) << 30)

static acm_status layout_fail(const acm_layout *l, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static acm_status layout_fail(const acm_layout *l, acm_status code, const char *fmt, ...)
{
    /* the message buffer is logically mutable state of a const layout */
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(((acm_layout *)(uintptr_t)l)->error, ACM_ERROR_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

ACM_API acm_status acm_layout_create(acm_layout **out)
{
    if (out == NULL)
        return ACM_ERR_NULL_POINTER;
    acm_layout *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ACM_ERR_NO_MEMORY;
    *out = l;
    return ACM_OK;
}

ACM_API void acm_layout_destroy(acm_layout *layout) { free(layout); }

ACM_API acm_status acm_layout_param_bounds(acm_layout_param param, int64_t *min, int64_t *max)
{
    if (min == NULL || max == NULL)
        return ACM_ERR_NULL_POINTER;
    switch (param) {
    case ACM_LAYOUT_CSOA_GROUP:
        *min = 1;
        *max = ACM_CSOA_GROUP_MAX;
        return ACM_OK;
    default:
        return ACM_ERR_BAD_ENUM;
    }
}

ACM_API acm_status acm_layout_set(acm_layout *layout, acm_layout_param param, int64_t value)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    switch (param) {
    case ACM_LAYOUT_CSOA_GROUP:
        if (value != 0 && (value < 1 || value > ACM_CSOA_GROUP_MAX || (value & (value - 1)) != 0))
            return layout_fail(layout, ACM_ERR_OUT_OF_RANGE,
                               "CSoA group size %lld must be 0 (default) or a power of two in "
                               "[1, 2^30]",
                               (long long)value);
        layout->csoa_group = value;
        return ACM_OK;
    default:
        return layout_fail(layout, ACM_ERR_BAD_ENUM, "unknown layout parameter %d", (int)param);
    }
}

ACM_API acm_status acm_layout_get(const acm_layout *layout, acm_layout_param param,
                                  int64_t *value)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    if (value == NULL)
        return layout_fail(layout, ACM_ERR_NULL_POINTER, "value is NULL");
    switch (param) {
    case ACM_LAYOUT_CSOA_GROUP:
        *value = layout->csoa_group;
        return ACM_OK;
    default:
        return layout_fail(layout, ACM_ERR_BAD_ENUM, "unknown layout parameter %d", (int)param);
    }
}

ACM_API const char *acm_layout_last_error(const acm_layout *layout)
{
    return layout == NULL ? "layout is NULL" : layout->error;
}
