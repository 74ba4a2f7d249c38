/*
 * Every heap allocation of the library goes through these five calls, so that
 * a test can make any one of them fail (docs/reliability.md, "Allocation
 * failures"). lib/base/alloc.c forwards them to the C library and holds no state;
 * test/fault-alloc.c replaces that file at link time with one that fails the
 * k-th call and counts what is still allocated.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_ALLOC_H
#define ACMLBM_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *acm__malloc(size_t size);
void *acm__calloc(size_t count, size_t size);
void *acm__realloc(void *ptr, size_t size);
/* size a multiple of align (C11 aligned_alloc) */
void *acm__aligned_alloc(size_t align, size_t size);
void acm__free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
