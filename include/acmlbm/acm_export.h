/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_export.h
 * @defgroup export File export
 * @{
 *
 * Fields and particles as files that visualisation tools read: VTK image
 * data (`.vti`: ParaView, VisIt) for any field of a domain, smoke particles as
 * PLY (`.ply`: Blender, Houdini, MeshLab) or VTK poly data (`.vtp`). Every
 * writer writes a temporary file beside @p path and renames it over @p path
 * only when everything was written, so a failed export (a full disk, a
 * missing directory) leaves no half-written file and an earlier file of that
 * name as it was. Coordinates are lattice units: cell (i, j, k) at the point
 * (i, j, k). Binary data is little-endian FP32 (VTK: raw appended data with
 * UInt64 block sizes).
 */
#ifndef ACMLBM_ACM_EXPORT_H
#define ACMLBM_ACM_EXPORT_H

#include "acm_common.h" /* ACM_API, acm_status */
#include "acm_domain.h" /* acm_domain, acm_field */
#include "acm_smoke.h"  /* acm_smoke */

ACM_BEGIN_DECLS

/**
 * Write fields of a domain as a VTK image data file: one point per cell,
 * spacing 1, one Float32 array per field, named `density`, `velocity`,
 * `force` or `populations` (1, 3, 3 and 27 components).
 *
 * @param domain the domain
 * @param path   the file to write (by convention `.vti`)
 * @param fields the fields, at least one, each once
 * @param count  number of fields
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_INVALID_ARG (no field,
 *         a field twice); ::ACM_ERR_BAD_ENUM (an unknown field);
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_IO (with the system's reason: the
 *         file cannot be created, written or renamed; nothing is left behind);
 *         device errors. Described by acm_domain_last_error().
 * @since 1.3
 */
ACM_API acm_status acm_domain_export_vti(acm_domain *domain, const char *path,
                                         const acm_field *fields, size_t count);

/** File formats of acm_smoke_export(). */
typedef enum acm_particle_format {
    ACM_PARTICLES_PLY = 1, /**< binary PLY: vertices x, y, z, age (float) */
    ACM_PARTICLES_VTP = 2  /**< VTK poly data: points and vertices, point array `age` */
} acm_particle_format;

/**
 * Write the live particles of a smoke (in the order of acm_smoke_get_particles())
 * with their age in steps.
 *
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_ENUM (format);
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_IO (nothing is left behind).
 *         Described by acm_smoke_last_error().
 * @since 1.3
 */
ACM_API acm_status acm_smoke_export(acm_smoke *smoke, const char *path,
                                    acm_particle_format format);

/**
 * Write a smoke's density (acm_smoke_density(), particles per cell volume) as
 * VTK image data, array `density`: (n s)^3 points at spacing 1/s from
 * (1/(2s) - 1/2, ...), s = @p subdivisions.
 *
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_OUT_OF_RANGE
 *         (subdivisions); ::ACM_ERR_NO_MEMORY; ::ACM_ERR_IO (nothing is left
 *         behind). Described by acm_smoke_last_error().
 * @since 1.3
 */
ACM_API acm_status acm_smoke_export_density(acm_smoke *smoke, const char *path,
                                            int32_t subdivisions);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_EXPORT_H */
