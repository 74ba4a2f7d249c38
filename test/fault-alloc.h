/*
 * libacmlbm tests -- the allocator that test-faults links in place of
 * lib/base/alloc.c: it counts the library's allocation calls, fails the k-th one
 * (once, or that one and every later one) and counts the blocks still held.
 * With ACM_FAULT_TRACE set it prints the stack of each call it fails
 * (addr2line -f -e test-faults turns the offsets into lines).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_TEST_FAULT_ALLOC_H
#define ACMLBM_TEST_FAULT_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

/* Start counting from 0; fail call number k (1-based; 0 = none), and with
 * `sticky` every call after it too. */
void fault_arm(int64_t k, bool sticky);
/* allocation calls since fault_arm */
int64_t fault_calls(void);
/* calls that were failed since fault_arm */
int64_t fault_failed(void);
/* blocks allocated by the library and not yet freed */
int64_t fault_live(void);

#endif
