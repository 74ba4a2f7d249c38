/*
 * libacmlbm -- the private side of acm_smoke: what the step pipeline calls.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SMOKE_H
#define ACMLBM_SMOKE_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* After the fluid part of a step: move every smoke's particles with the
 * velocity of the new state, recycle those that left or expired, emit. */
acm_status acm__smokes_advance(acm_domain *d);

/* Destroy every smoke of a domain (acm_domain_destroy). */
void acm__smokes_destroy_all(acm_domain *d);

ACM_END_DECLS

#endif /* ACMLBM_SMOKE_H */
