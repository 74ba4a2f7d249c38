/*
 * libacmlbm -- acm_layout: memory-layout parameters (CSoA group size alpha).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, free */

#include "acm_private.h"
#include "morton.h" /* ACM_SAMPLE_BLOCK_MAX */

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
    case ACM_LAYOUT_KERNEL:
        *min = ACM_KERNEL_FUSED;
        *max = ACM_KERNEL_BASELINE;
        return ACM_OK;
    case ACM_LAYOUT_BLOCK_SIZE:
        *min = 32;
        *max = 256; /* the register budget of the fused kernel (docs/performance.md) */
        return ACM_OK;
    case ACM_LAYOUT_SAMPLE_BLOCK:
        *min = 1;
        *max = ACM_SAMPLE_BLOCK_MAX;
        return ACM_OK;
    case ACM_LAYOUT_SAMPLE_ORDER:
        *min = ACM_SAMPLE_ORDER_MORTON_BLOCK;
        *max = ACM_SAMPLE_ORDER_AS_SAMPLED;
        return ACM_OK;
    case ACM_LAYOUT_IB_SPREAD:
        *min = ACM_IB_SPREAD_SCATTER;
        *max = ACM_IB_SPREAD_GATHER;
        return ACM_OK;
    case ACM_LAYOUT_STREAMING:
        *min = ACM_STREAMING_TWO_ARRAYS;
        *max = ACM_STREAMING_IN_PLACE;
        return ACM_OK;
    default:
        return ACM_ERR_BAD_ENUM;
    }
}

static int64_t *param_slot(acm_layout *l, acm_layout_param param)
{
    switch (param) {
    case ACM_LAYOUT_CSOA_GROUP: return &l->csoa_group;
    case ACM_LAYOUT_KERNEL: return &l->kernel;
    case ACM_LAYOUT_BLOCK_SIZE: return &l->block_size;
    case ACM_LAYOUT_SAMPLE_BLOCK: return &l->sample_block;
    case ACM_LAYOUT_SAMPLE_ORDER: return &l->sample_order;
    case ACM_LAYOUT_IB_SPREAD: return &l->ib_spread;
    case ACM_LAYOUT_STREAMING: return &l->streaming;
    default: return NULL;
    }
}

/* Extra admissibility beyond the bounds: powers of two, multiples of 32. */
static bool value_ok(acm_layout_param param, int64_t value)
{
    if (param == ACM_LAYOUT_CSOA_GROUP)
        return (value & (value - 1)) == 0;
    if (param == ACM_LAYOUT_BLOCK_SIZE)
        return value % 32 == 0;
    return true;
}

ACM_API acm_status acm_layout_set(acm_layout *layout, acm_layout_param param, int64_t value)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    int64_t lo, hi;
    if (acm_layout_param_bounds(param, &lo, &hi) != ACM_OK)
        return layout_fail(layout, ACM_ERR_BAD_ENUM, "unknown layout parameter %d", (int)param);
    if (value != 0 && (value < lo || value > hi || !value_ok(param, value))) {
        acm__format(layout->error, ACM_ERROR_SIZE,
                    "layout parameter %d: %lld is not 0 (default) or an admissible value in "
                    "[%lld, %lld] (alpha: a power of two; block size: a multiple of 32)",
                    (int)param, (long long)value, (long long)lo, (long long)hi);
        return ACM_ERR_OUT_OF_RANGE;
    }
    *param_slot(layout, param) = value;
    return ACM_OK;
}

ACM_API acm_status acm_layout_get(const acm_layout *layout, acm_layout_param param,
                                  int64_t *value)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    if (value == NULL)
        return layout_fail(layout, ACM_ERR_NULL_POINTER, "value is NULL");
    const int64_t *slot = param_slot((acm_layout *)(uintptr_t)layout, param);
    if (slot == NULL)
        return layout_fail(layout, ACM_ERR_BAD_ENUM, "unknown layout parameter %d", (int)param);
    *value = *slot;
    return ACM_OK;
}

ACM_API const char *acm_layout_last_error(const acm_layout *layout)
{
    return layout == NULL ? "layout is NULL" : layout->error;
}
