/*
 * libacmlbm -- the versioned options structs of the public API.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_OPTIONS_H
#define ACMLBM_OPTIONS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t */

#include "acm_private.h"

ACM_BEGIN_DECLS

/* The body of every acm_*_options_init(): opts (a struct whose first member
 * is its uint32_t version) gets the first `size` bytes of the defaults `def`,
 * the bytes a caller of that version knows, with `version` as its version.
 * size 0 stands for a version the library does not know. */
acm_status acm__options_init(void *opts, const void *def, size_t size, uint32_t version);

ACM_END_DECLS

#endif /* ACMLBM_OPTIONS_H */
