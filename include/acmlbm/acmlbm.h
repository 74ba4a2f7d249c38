/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acmlbm.h
 *
 * Umbrella header: include this one. It needs no CUDA headers; the optional
 * CUDA interoperability API lives in acm_cuda.h.
 *
 * Minimal use:
 * @code
 * acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
 * o.nx = o.ny = o.nz = 64;
 * o.viscosity = 0.01;
 * acm_domain *d;
 * if (acm_domain_create(&d, &o) != ACM_OK) return 1;
 * acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, (double[3]){0.05, 0, 0});
 * ...
 * acm_step(d, 100);
 * acm_domain_destroy(d);
 * @endcode
 */
#ifndef ACMLBM_ACMLBM_H
#define ACMLBM_ACMLBM_H

#include "acm_checkpoint.h" /* acm_domain_save, acm_domain_load */
#include "acm_common.h" /* status, enums, version */
#include "acm_domain.h" /* acm_domain */
#include "acm_export.h" /* acm_domain_export_vti, acm_smoke_export */
#include "acm_layout.h" /* acm_layout */
#include "acm_mesh.h"   /* acm_mesh */
#include "acm_smoke.h"  /* acm_smoke */
#include "acm_solid.h"  /* acm_solid */
#include "acm_tune.h"   /* acm_domain_autotune */

#endif /* ACMLBM_ACMLBM_H */
