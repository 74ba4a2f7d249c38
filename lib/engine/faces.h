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

ACM_END_DECLS

#endif /* ACMLBM_FACES_H */
