/*
 * The library's heap allocations (alloc.h): the C library's, unchanged.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "alloc.h"

#include <stdlib.h>

void *acm__malloc(size_t size) { return malloc(size); }

void *acm__calloc(size_t count, size_t size) { return calloc(count, size); }

void *acm__realloc(void *ptr, size_t size) { return realloc(ptr, size); }

void *acm__aligned_alloc(size_t align, size_t size) { return aligned_alloc(align, size); }

void acm__free(void *ptr) { free(ptr); }
