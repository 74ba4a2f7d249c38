/*
 * libacmlbm -- what a face takes from the caller (lib/engine/faces.c): the
 * speed rule of every velocity and the values over a face.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_FACES_H
#define ACMLBM_FACES_H

#include <stdbool.h> /* bool */

#include "acm_private.h"

ACM_BEGIN_DECLS

/* Whether velocity u is finite and slower than max_speed. */
bool acm__speed_ok(const double u[3], double max_speed);

/* The face's values replaced by v (NULL: the uniform rule; v is the domain's
 * after), the backend told; on failure the old ones stay and v is freed. */
acm_status acm__swap_face_values(acm_domain *domain, acm_face face, double *v);

/* acm_domain_set_face_values() without the call guard: every argument and
 * value checked, nothing changed on failure. */
acm_status acm__set_face_values(acm_domain *domain, acm_face face, acm_dtype dtype,
                                const void *values, size_t count);

/* acm_domain_set_face_function() without the call guard. */
acm_status acm__set_face_function(acm_domain *domain, acm_face face, acm_face_values_fn fn,
                                  void *user_data);

/* Whether a face of d has a function (the steps then go one at a time). */
bool acm__faces_timed(const acm_domain *d);

/* Before a step: each face function asked for its values, which are set;
 * ACM_ERR_CANCELLED when one says stop, the setting's error when a value is
 * bad. A function may change the faces (a setting): check them after. */
acm_status acm__faces_update(acm_domain *d);

/* A face's function removed, its buffer freed. */
void acm__face_function_drop(acm_domain *d, int face);

ACM_END_DECLS

#endif /* ACMLBM_FACES_H */
