/*
 * libacmlbm -- the call guard: one call at a time on a domain (docs/api.md,
 * "Threads"), and the refusal of calls on a domain that lost its storage.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_GUARD_H
#define ACMLBM_GUARD_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* A callback of the library, running on the thread inside a call on a
 * domain, and what it may call on that domain (docs/api.md, "Callbacks"). */
typedef enum acm_callback {
    ACM_CALLBACK_NONE = 0,
    ACM_CALLBACK_DIVERGENCE = 1, /* queries and settings, no change of the state */
    ACM_CALLBACK_TUNE = 2,       /* nothing: the domain holds a trial layout and state */
    ACM_CALLBACK_FACE = 3        /* as DIVERGENCE: a face function before a step */
} acm_callback;

/* What a public call does to a domain: reads it or changes a setting
 * (ACM_CALL_READ), or advances, replaces or re-lays its state, or its solids
 * and smokes (ACM_CALL_STATE). */
typedef enum acm_call { ACM_CALL_READ = 0, ACM_CALL_STATE = 1 } acm_call;

/* A new domain's guard: no thread inside. */
void acm__guard_init(acm_domain *d);

/* Enter a public call of the given kind on d from this thread. Returns ACM_OK
 * (the thread now holds d; nested calls of the same thread are let in and
 * counted) or ACM_ERR_BAD_STATE when another thread is inside a call on d, or
 * a callback of the library running on this thread must not make this call:
 * then nothing of d was touched, its own message included, and
 * acm_domain_last_error(d) on this thread says why (acm__guard_refusal).
 * Every ACM_OK is paired with one acm__domain_leave(d). */
acm_status acm__domain_enter(acm_domain *d, acm_call kind);
void acm__domain_leave(acm_domain *d);

/* ACM_OK, or the refusal acm__domain_enter gives a call of this kind made
 * from inside a callback (for the unguarded solid and smoke calls). */
acm_status acm__callback_check(const acm_domain *d, acm_call kind);

/* Run a callback of the library: d marked while it runs (the previous mark
 * returned, for callbacks inside callbacks), then unmarked; a refusal it met
 * no longer names d once it is done, so the call that ran it reports its own
 * outcome. */
acm_callback acm__callback_begin(acm_domain *d, acm_callback kind);
void acm__callback_end(acm_domain *d, acm_callback previous);

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

/* Run one public call of the given kind under the guard; a NULL domain gets
 * the call's answer. */
#define ACM_GUARDED_AS(kind, d, call)                                                      \
    do {                                                                                   \
        if ((d) == NULL)                                                                   \
            return ACM_ERR_NULL_POINTER;                                                   \
        ACM_TRY(acm__domain_enter((d), (kind)));                                           \
        const acm_status acm__g = (call);                                                  \
        acm__domain_leave(d);                                                              \
        return acm__g;                                                                     \
    } while (0)

/* A call that reads the domain or changes a setting. */
#define ACM_GUARDED(d, call) ACM_GUARDED_AS(ACM_CALL_READ, d, call)
/* A call that advances, replaces or re-lays the state. */
#define ACM_GUARDED_STATE(d, call) ACM_GUARDED_AS(ACM_CALL_STATE, d, call)

ACM_END_DECLS

#endif /* ACMLBM_GUARD_H */
