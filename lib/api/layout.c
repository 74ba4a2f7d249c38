/*
 * libacmlbm -- acm_layout: memory-layout parameters (CSoA group size alpha and the
 * rest), and their text form.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h> /* va_list */
#include <stddef.h> /* offsetof */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memchr, memcpy, strlen */

#include "alloc.h"
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
    acm_layout *l = acm__calloc(1, sizeof *l);
    if (l == NULL)
        return ACM_ERR_NO_MEMORY;
    *out = l;
    return ACM_OK;
}

ACM_API void acm_layout_destroy(acm_layout *layout) { acm__free(layout); }

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
    case ACM_LAYOUT_PRECISION:
        *min = ACM_PRECISION_FP32;
        *max = ACM_PRECISION_FP16;
        return ACM_OK;
    case ACM_LAYOUT_STORAGE:
        *min = ACM_STORAGE_POPULATIONS;
        *max = ACM_STORAGE_MOMENTS;
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
    case ACM_LAYOUT_PRECISION: return &l->precision;
    case ACM_LAYOUT_STORAGE: return &l->storage;
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

/* ---- text form (acm_layout_to_string / acm_layout_from_string) ------------------ */

#define ACM_LAYOUT_TEXT_HEADER "acm-layout"
#define ACM_LAYOUT_TEXT_VERSION 1

/* Names of an enumeration's values 1, 2, ... (value 0 is "default"). */
static const char *const kernel_names[] = {"fused", "split", "baseline", NULL};
static const char *const order_names[] = {"morton_block", "as_sampled", NULL};
static const char *const spread_names[] = {"scatter", "gather", NULL};
static const char *const streaming_names[] = {"two_arrays", "in_place", NULL};
static const char *const precision_names[] = {"fp32", "fp64", "fp16", NULL};
static const char *const storage_names[] = {"populations", "moments", NULL};

/* Every key of the text form, in key order; names NULL for numbers. */
static const struct layout_key {
    const char *key;
    acm_layout_param param;
    const char *const *names;
} layout_keys[] = {
    {"csoa_group", ACM_LAYOUT_CSOA_GROUP, NULL},
    {"kernel", ACM_LAYOUT_KERNEL, kernel_names},
    {"block_size", ACM_LAYOUT_BLOCK_SIZE, NULL},
    {"sample_block", ACM_LAYOUT_SAMPLE_BLOCK, NULL},
    {"sample_order", ACM_LAYOUT_SAMPLE_ORDER, order_names},
    {"ib_spread", ACM_LAYOUT_IB_SPREAD, spread_names},
    {"streaming", ACM_LAYOUT_STREAMING, streaming_names},
    {"precision", ACM_LAYOUT_PRECISION, precision_names},
    {"storage", ACM_LAYOUT_STORAGE, storage_names},
};
#define ACM_LAYOUT_KEYS (sizeof layout_keys / sizeof layout_keys[0])

ACM_API acm_status acm_layout_to_string(const acm_layout *layout, char *buf, size_t size)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    if (buf == NULL)
        return layout_fail(layout, ACM_ERR_NULL_POINTER, "buf is NULL");
    char text[ACM_LAYOUT_STRING_SIZE];
    int n = snprintf(text, sizeof text, "%s %d", ACM_LAYOUT_TEXT_HEADER, ACM_LAYOUT_TEXT_VERSION);
    for (size_t k = 0; k < ACM_LAYOUT_KEYS; ++k) {
        const struct layout_key *e = &layout_keys[k];
        const int64_t v = *param_slot((acm_layout *)(uintptr_t)layout, e->param);
        if (v == 0)
            n += snprintf(text + n, sizeof text - (size_t)n, " %s=default", e->key);
        else if (e->names != NULL)
            n += snprintf(text + n, sizeof text - (size_t)n, " %s=%s", e->key, e->names[v - 1]);
        else
            n += snprintf(text + n, sizeof text - (size_t)n, " %s=%lld", e->key, (long long)v);
    }
    if ((size_t)n + 1 > size) {
        if (size > 0)
            buf[0] = '\0';
        return layout_fail(layout, ACM_ERR_BUFFER_SIZE,
                           "the layout text needs %d bytes, the buffer has %zu", n + 1, size);
    }
    memcpy(buf, text, (size_t)n + 1);
    return ACM_OK;
}

/* One white-space separated token of a text. */
typedef struct layout_token {
    const char *p;
    size_t n;
} layout_token;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The next token after *at (n = 0 at the end); *at moves past it. */
static layout_token next_token(const char **at)
{
    const char *p = *at;
    while (is_space(*p))
        ++p;
    layout_token t = {p, 0};
    while (p[t.n] != '\0' && !is_space(p[t.n]))
        ++t.n;
    *at = p + t.n;
    return t;
}

static bool token_is(layout_token t, const char *s) { return strlen(s) == t.n && memcmp(t.p, s, t.n) == 0; }

/* A decimal number of at most 18 digits (no sign), or -1. */
static int64_t token_number(layout_token t)
{
    if (t.n == 0 || t.n > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < t.n; ++i) {
        if (t.p[i] < '0' || t.p[i] > '9')
            return -1;
        v = 10 * v + (t.p[i] - '0');
    }
    return v;
}

/* The value of one key=value token into *value (a layout_fail status otherwise). */
static acm_status parse_value(const acm_layout *l, const struct layout_key *e, layout_token v,
                              int64_t *value)
{
    if (token_is(v, "default")) {
        *value = 0;
        return ACM_OK;
    }
    if (e->names != NULL) {
        for (int64_t i = 0; e->names[i] != NULL; ++i)
            if (token_is(v, e->names[i])) {
                *value = i + 1;
                return ACM_OK;
            }
        return layout_fail(l, ACM_ERR_BAD_ENUM, "layout text: %s=%.*s is not a known value", e->key,
                           (int)(v.n > 40 ? 40 : v.n), v.p);
    }
    *value = token_number(v);
    if (*value < 0)
        return layout_fail(l, ACM_ERR_BAD_FORMAT, "layout text: %s=%.*s is not a number or default",
                           e->key, (int)(v.n > 40 ? 40 : v.n), v.p);
    return ACM_OK;
}

/* The header "acm-layout 1" at the start of the text. */
static acm_status parse_header(const acm_layout *l, const char **at)
{
    const layout_token h = next_token(at), v = next_token(at);
    if (!token_is(h, ACM_LAYOUT_TEXT_HEADER))
        return layout_fail(l, ACM_ERR_BAD_FORMAT, "layout text does not start with \"%s\"",
                           ACM_LAYOUT_TEXT_HEADER);
    const int64_t version = token_number(v);
    if (version < 0)
        return layout_fail(l, ACM_ERR_BAD_FORMAT, "layout text: no format version after \"%s\"",
                           ACM_LAYOUT_TEXT_HEADER);
    if (version != ACM_LAYOUT_TEXT_VERSION)
        return layout_fail(l, ACM_ERR_BAD_VERSION,
                           "layout text of format version %lld; this library reads version %d",
                           (long long)version, ACM_LAYOUT_TEXT_VERSION);
    return ACM_OK;
}

ACM_API acm_status acm_layout_from_string(acm_layout *layout, const char *text)
{
    if (layout == NULL)
        return ACM_ERR_NULL_POINTER;
    if (text == NULL)
        return layout_fail(layout, ACM_ERR_NULL_POINTER, "text is NULL");
    const char *at = text;
    ACM_TRY(parse_header(layout, &at));
    acm_layout next;
    memset(&next, 0, sizeof next);
    bool seen[ACM_LAYOUT_KEYS] = {false};
    for (layout_token t = next_token(&at); t.n > 0; t = next_token(&at)) {
        const char *eq = memchr(t.p, '=', t.n);
        if (eq == NULL)
            return layout_fail(layout, ACM_ERR_BAD_FORMAT, "layout text: \"%.*s\" is not key=value",
                               (int)(t.n > 40 ? 40 : t.n), t.p);
        const layout_token key = {t.p, (size_t)(eq - t.p)}, val = {eq + 1, t.n - key.n - 1};
        size_t k = 0;
        while (k < ACM_LAYOUT_KEYS && !token_is(key, layout_keys[k].key))
            ++k;
        if (k == ACM_LAYOUT_KEYS)
            return layout_fail(layout, ACM_ERR_BAD_ENUM, "layout text: unknown key \"%.*s\"",
                               (int)(key.n > 40 ? 40 : key.n), key.p);
        if (seen[k])
            return layout_fail(layout, ACM_ERR_BAD_FORMAT, "layout text: key %s given twice",
                               layout_keys[k].key);
        seen[k] = true;
        int64_t v;
        ACM_TRY(parse_value(layout, &layout_keys[k], val, &v));
        if (acm_layout_set(&next, layout_keys[k].param, v) != ACM_OK)
            return layout_fail(layout, ACM_ERR_OUT_OF_RANGE, "layout text: %s", next.error);
    }
    memcpy(layout, &next, offsetof(acm_layout, error));
    layout->error[0] = '\0';
    return ACM_OK;
}
