/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_solid.h
 * @defgroup solid Immersed solids
 * @{
 *
 * An ::acm_solid will be a rigid body immersed in a domain and coupled to the
 * fluid by the immersed-boundary method (Poisson-disk surface samples, 2x2x2
 * kernel, penalty forces). Only the handle type is declared in this version of
 * the library: there are no functions yet, so nothing can pretend to work.
 * Interior obstacles can be modelled today with a per-cell force field
 * (acm_domain_set_field() with ::ACM_FIELD_FORCE).
 */
#ifndef ACMLBM_ACM_SOLID_H
#define ACMLBM_ACM_SOLID_H

#include "acm_common.h" /* ACM_BEGIN_DECLS */

ACM_BEGIN_DECLS

/** Opaque immersed rigid body (API to come; see the file comment). */
typedef struct acm_solid acm_solid;

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_SOLID_H */
