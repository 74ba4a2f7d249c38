/*
 * libacmlbm -- the time step: its order (acm__step_pipeline, the one place it
 * is written), the checks before any step, and the parameters of the
 * collision and the faces that every backend steps with.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_PIPELINE_H
#define ACMLBM_PIPELINE_H

#include "acm_private.h"

ACM_BEGIN_DECLS

struct acm_collide_params;

/* What acm_step() and acm_cuda_step_async() check before stepping nsteps
 * (>= 0, a domain not diverged, faces consistent); a message on d if not. */
acm_status acm__step_check(acm_domain *d, int64_t nsteps);

/* The time-step pipeline of acm_step() and acm_cuda_step_async(); checks =
 * false leaves the divergence check to the caller (CUDA interop). */
acm_status acm__step_pipeline(acm_domain *d, int64_t nsteps, bool checks);

/* What an unchecked call of nsteps would do before its first step, without
 * making a step (acm_cuda_step_prepare): the allocations, and what the
 * backend records of the steps' first run (CUDA: its graph). */
acm_status acm__step_record(acm_domain *d, int64_t nsteps);

/* ACM_ERR_BAD_STATE for stepping a diverged domain; names d->diverged_step. */
acm_status acm__domain_fail_diverged(acm_domain *d);

/* Opposite faces consistent, inlet/outlet layers thick enough. */
acm_status acm__domain_check_faces(acm_domain *d);

/* The collision parameters of the current step (the ACM rules' inputs from
 * the previous step's reductions). */
void acm__domain_collide_params(const acm_domain *d, struct acm_collide_params *p);
/* Those of the cells next to a non-periodic face (acm_face_params); false
 * (and *face = *p) when they are the interior parameters. */
bool acm__face_collide_params(const struct acm_collide_params *p, struct acm_collide_params *face);

ACM_END_DECLS

#endif /* ACMLBM_PIPELINE_H */
