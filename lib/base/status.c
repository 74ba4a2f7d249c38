/*
 * libacmlbm -- status strings and small shared helpers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h> /* vsnprintf */

#include "acm_private.h"

ACM_API const char *acm_status_string(acm_status status)
{
    switch (status) {
#define ACM__STATUS_CASE(name, value, text)                                                \
    case ACM_##name:                                                                       \
        return text;
        ACM_STATUS_MAP(ACM__STATUS_CASE)
#undef ACM__STATUS_CASE
    default:
        return "unknown status";
    }
}

void acm__vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    if (buf == NULL || size == 0)
        return;
    vsnprintf(buf, size, fmt, ap);
}

void acm__format(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(buf, size, fmt, ap);
    va_end(ap);
}

acm_status acm__domain_fail(acm_domain *d, acm_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(d->error, sizeof d->error, fmt, ap);
    va_end(ap);
    return code;
}

const char *acm__face_name(acm_face face)
{
    static const char *const names[ACM_FACE_COUNT] = {"x-min", "x-max", "y-min",
                                                      "y-max", "z-min", "z-max"};
    return (unsigned)face < ACM_FACE_COUNT ? names[face] : "unknown face";
}

const char *acm__boundary_name(acm_boundary type)
{
    switch (type) {
    case ACM_BOUNDARY_PERIODIC: return "periodic";
    case ACM_BOUNDARY_WALL: return "wall";
    case ACM_BOUNDARY_INLET: return "inlet";
    case ACM_BOUNDARY_OUTLET: return "outlet";
    case ACM_BOUNDARY_SLIP: return "slip wall";
    default: return "unknown";
    }
}

size_t acm__dtype_size(acm_dtype dtype)
{
    return dtype == ACM_DTYPE_FLOAT32 ? sizeof(float)
                                      : (dtype == ACM_DTYPE_FLOAT64 ? sizeof(double) : 0);
}

double acm__load(acm_dtype dtype, const void *base, size_t i)
{
    return dtype == ACM_DTYPE_FLOAT32 ? (double)((const float *)base)[i]
                                      : ((const double *)base)[i];
}

void acm__store(acm_dtype dtype, void *base, size_t i, double value)
{
    if (dtype == ACM_DTYPE_FLOAT32)
        ((float *)base)[i] = (float)value;
    else
        ((double *)base)[i] = value;
}

int acm__field_components(acm_field field)
{
    switch (field) {
    case ACM_FIELD_DENSITY: return 1;
    case ACM_FIELD_VELOCITY:
    case ACM_FIELD_FORCE: return 3;
    case ACM_FIELD_POPULATIONS: return ACM_Q;
    default: return 0;
    }
}
