/*
 * libacmlbm -- the call guard: one call at a time on a domain (docs/api.md,
 * "Threads"), and the refusal of calls on a domain that lost its storage.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_GUARD_H
#define ACMLBM_GUARD_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* A new domain's guard: no thread inside. */
void acm__guard_init(acm_domain *d);

/* Enter a public call on d from this thread. Returns ACM_OK (the thread now
 * holds d; nested calls of the same thread are let in and counted) or
 * ACM_ERR_BAD_STATE when another thread is inside a call on d: then nothing of
 * d was touched, and acm_domain_last_error(d) on this thread says why (see
 * acm__guard_refusal). Every ACM_OK is paired with one acm__domain_leave(d). */
acm_status acm__domain_enter(acm_domain *d);
void acm__domain_leave(acm_domain *d);

/* ACM_ERR_BAD_STATE, with a message on d, when d has no backend storage (impl
 * NULL: a re-layout failed, and restoring the old layout failed too); the
 * domain can then only be destroyed. acm__domain_enter() checks it; the solid
 * and smoke calls, which are not guarded, check it themselves. */
acm_status acm__domain_require_storage(acm_domain *d);

/* The message of this thread's last refused call on d, or NULL when the
 * guard refused no call of this thread on d since (the domain's own message
 * then applies). */
const char *acm__guard_refusal(const acm_domain *d);
/* A new domain at d's address: a refusal recorded for a destroyed domain that
 * had it no longer applies. */
void acm__guard_forget(const acm_domain *d);

/* Run one public call under the guard; a NULL domain gets the call's answer. */
#define ACM_GUARDED(d, call)                                                               \
    do {                                                                                   \
        if ((d) == NULL)                                                                   \
            return ACM_ERR_NULL_POINTER;                                                   \
        ACM_TRY(acm__domain_enter(d));                                                     \
        const acm_status acm__g = (call);                                                  \
        acm__domain_leave(d);                                                              \
        return acm__g;                                                                     \
    } while (0)

ACM_END_DECLS

#endif /* ACMLBM_GUARD_H */
