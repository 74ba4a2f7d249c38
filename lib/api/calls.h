/*
 * libacmlbm -- what the public entry points of lib/api share.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CALLS_H
#define ACMLBM_CALLS_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* The end of a guarded call that may have run a callback of the library
 * (acm_step, acm_domain_autotune): leaves the guard, and when this is the
 * outermost call, carries out the destroys the callback asked for (of smokes
 * and solids, then of the domain itself: d is then gone). Returns st. */
acm_status acm__domain_finish(acm_domain *d, acm_status st);

ACM_END_DECLS

#endif /* ACMLBM_CALLS_H */
