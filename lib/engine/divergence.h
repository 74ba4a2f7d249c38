/*
 * libacmlbm -- what a step does when the state diverges (acm_domain.h,
 * "Divergence policy"; docs/reliability.md). SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_DIVERGENCE_H
#define ACMLBM_DIVERGENCE_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* acm_step()'s steps under the domain's divergence policy (the pipeline, cut
 * into pieces between snapshots when it rewinds). */
acm_status acm__divergence_step(acm_domain *d, int64_t nsteps);
/* Drop the rewind snapshot (acm_domain_destroy). */
void acm__divergence_forget(acm_domain *d);

ACM_END_DECLS

#endif /* ACMLBM_DIVERGENCE_H */
