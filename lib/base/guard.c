/*
 * libacmlbm -- the call guard (guard.h).
 * SPDX-License-Identifier: Apache-2.0
 *
 * A domain takes one call at a time (docs/api.md, "Threads"). Rather than
 * leave a second thread's call to corrupt the state or read a half-written
 * step, every public call on a domain enters through this guard: a
 * compare-and-swap claims the domain for the calling thread, and a call from
 * another thread meanwhile is refused with ACM_ERR_BAD_STATE without touching
 * the domain (a lock would instead hold a render thread for a whole step).
 * The same thread may nest calls (the autotuner steps and re-lays the domain
 * through the public calls): the owner counts them, and the last one out
 * releases the domain. A callback of the library (the divergence callback,
 * the autotuner's progress callback) runs on that thread with the domain
 * marked, and the guard refuses the calls it must not make
 * (acm__callback_check) without touching the domain.
 *
 * Acquire on entry and release on exit order a thread's call after the
 * previous owner's, so a domain may move between threads without other
 * synchronisation. The thread's identity is the address of a thread-local
 * byte, distinct for every live thread (C11 has no integral thread id).
 */
#include <stdatomic.h> /* the owner word */

#include "guard.h"

_Static_assert(sizeof(_Atomic uintptr_t) == sizeof(uintptr_t) &&
                   _Alignof(_Atomic uintptr_t) == _Alignof(uintptr_t),
               "the C++ files see the guard word as a plain uintptr_t");

/* Message of a call refused by the guard. */
#define ACM_BUSY_MESSAGE                                                                   \
    "the domain is in use by another thread: a domain takes one call at a time (this "    \
    "call did nothing; see \"Threads\" in docs/api.md)"

/* Messages of calls refused inside a callback of the library. */
#define ACM_TUNE_MESSAGE                                                                   \
    "refused inside the autotuner's progress callback: the domain holds a trial layout "   \
    "and state until acm_domain_autotune returns (this call did nothing; see "             \
    "\"Callbacks\" in docs/api.md)"
#define ACM_DIVERGENCE_MESSAGE                                                             \
    "refused inside the divergence callback: it may query the domain and change its "      \
    "settings, not step, re-initialise or re-lay it (this call did nothing; see "          \
    "\"Callbacks\" in docs/api.md)"

#define ACM_FACE_MESSAGE                                                                   \
    "refused inside a face function: it may query the domain and change its settings, "   \
    "not step, re-initialise or re-lay it (this call did nothing; see \"Callbacks\" in "   \
    "docs/api.md)"

/* The domain whose last call from this thread the guard refused, and why:
 * that thread's acm_domain_last_error() gives the refusal, not the domain's
 * own buffer, which belongs to the thread inside the domain (or holds the
 * message of the call that ran the callback). */
static _Thread_local const acm_domain *acm__refused;
static _Thread_local const char *acm__refusal;

static _Thread_local char acm__thread_tag;

void acm__guard_init(acm_domain *d) { atomic_init(&d->guard_owner, 0); }

static acm_status refuse(const acm_domain *d, const char *why)
{
    acm__refused = d;
    acm__refusal = why;
    return ACM_ERR_BAD_STATE;
}

acm_status acm__callback_check(const acm_domain *d, acm_call kind)
{
    if (d->in_callback == ACM_CALLBACK_TUNE)
        return refuse(d, ACM_TUNE_MESSAGE);
    if (d->in_callback == ACM_CALLBACK_DIVERGENCE && kind == ACM_CALL_STATE)
        return refuse(d, ACM_DIVERGENCE_MESSAGE);
    if (d->in_callback == ACM_CALLBACK_FACE && kind == ACM_CALL_STATE)
        return refuse(d, ACM_FACE_MESSAGE);
    return ACM_OK;
}

acm_callback acm__callback_begin(acm_domain *d, acm_callback kind)
{
    const acm_callback previous = (acm_callback)d->in_callback;
    d->in_callback = kind;
    return previous;
}

void acm__callback_end(acm_domain *d, acm_callback previous)
{
    d->in_callback = previous;
    acm__guard_forget(d);
}

acm_status acm__domain_enter(acm_domain *d, acm_call kind)
{
    const uintptr_t self = (uintptr_t)&acm__thread_tag;
    uintptr_t owner = 0;
    if (atomic_compare_exchange_strong_explicit(&d->guard_owner, &owner, self,
                                                memory_order_acquire, memory_order_relaxed))
        d->guard_depth = 1;
    else if (owner != self)
        return refuse(d, ACM_BUSY_MESSAGE);
    else if (acm__callback_check(d, kind) != ACM_OK)
        return ACM_ERR_BAD_STATE; /* a callback of this thread, inside a call on d */
    else
        ++d->guard_depth; /* only this thread could have set it, and it is still inside */
    if (acm__refused == d)
        acm__refused = NULL; /* from now on the domain's own message applies */
    const acm_status st = acm__domain_require_storage(d);
    if (st != ACM_OK)
        acm__domain_leave(d);
    return st;
}

acm_status acm__domain_require_storage(acm_domain *d)
{
    if (d->impl != NULL)
        return ACM_OK;
    return ACM_FAIL(d, ACM_ERR_BAD_STATE,
                    "the domain lost its storage: a change of layout ran out of memory, and so "
                    "did going back to the old one; destroy the domain");
}

void acm__domain_leave(acm_domain *d)
{
    if (--d->guard_depth == 0)
        atomic_store_explicit(&d->guard_owner, 0, memory_order_release);
}

const char *acm__guard_refusal(const acm_domain *d)
{
    return d == acm__refused ? acm__refusal : NULL;
}

void acm__guard_forget(const acm_domain *d)
{
    if (acm__refused == d)
        acm__refused = NULL;
}
