/*
 * libacmlbm tests -- lib/base/alloc.h's five calls with fault injection
 * (fault-alloc.h). The counters are atomic: the library allocates from
 * OpenMP threads too. SPDX-License-Identifier: Apache-2.0
 */
#include "fault-alloc.h"

#include <execinfo.h> /* backtrace: ACM_FAULT_TRACE */
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"

static _Atomic int64_t calls, fail_at, failed, live;
static atomic_bool fail_after;

void fault_arm(int64_t k, bool sticky)
{
    atomic_store(&calls, 0);
    atomic_store(&failed, 0);
    atomic_store(&fail_at, k);
    atomic_store(&fail_after, sticky);
}

int64_t fault_calls(void) { return atomic_load(&calls); }
int64_t fault_failed(void) { return atomic_load(&failed); }
int64_t fault_live(void) { return atomic_load(&live); }

/* true: this call is to fail */
static bool fault_now(void)
{
    const int64_t n = atomic_fetch_add(&calls, 1) + 1, k = atomic_load(&fail_at);
    if (k <= 0 || n < k || (n > k && !atomic_load(&fail_after)))
        return false;
    atomic_fetch_add(&failed, 1);
    if (getenv("ACM_FAULT_TRACE") != NULL) { /* where the failed call came from */
        void *frames[16];
        backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
    }
    return true;
}

static void *counted(void *p)
{
    if (p != NULL)
        atomic_fetch_add(&live, 1);
    return p;
}

void *acm__malloc(size_t size) { return fault_now() ? NULL : counted(malloc(size)); }

void *acm__calloc(size_t count, size_t size)
{
    return fault_now() ? NULL : counted(calloc(count, size));
}

void *acm__aligned_alloc(size_t align, size_t size)
{
    return fault_now() ? NULL : counted(aligned_alloc(align, size));
}

/* A failed realloc keeps the old block; a realloc of NULL is a new block. */
void *acm__realloc(void *ptr, size_t size)
{
    if (fault_now())
        return NULL;
    void *p = realloc(ptr, size);
    return ptr == NULL ? counted(p) : p;
}

void acm__free(void *ptr)
{
    if (ptr != NULL)
        atomic_fetch_sub(&live, 1);
    free(ptr);
}
