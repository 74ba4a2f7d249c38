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
 * PLY (`.ply`: Blender, Houdini, MeshLab) or VTK poly data (`.vtp`), and the
 * smoke's density and the fluid's fields as OpenVDB (`.vdb`: Houdini, Blender;
 * only where the library was built with OpenVDB, acm_vdb_available()). Every
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

/* ---- OpenVDB -------------------------------------------------------------------------- */

/**
 * Whether this build of the library writes OpenVDB files: it was configured
 * with OpenVDB (meson option `openvdb`, docs/smoke.md) and its OpenVDB writer
 * module (`acmlbm-vdb.so`) loads; the call loads it, and OpenVDB with it.
 * Otherwise acm_smoke_export_vdb() and acm_domain_export_vdb() exist but
 * answer ::ACM_ERR_NOT_BUILT.
 *
 * The module is the first of these that loads and is of the library's
 * version (since 1.10): the file the environment variable `ACMLBM_VDB_MODULE`
 * names, if set and not empty; beside the libacmlbm file the process loaded,
 * `acmlbm/acmlbm-vdb.so` (as installed, `<libdir>/acmlbm/`) and then
 * `acmlbm-vdb.so` (both in one folder: a Python wheel, a game's folder), so
 * that a moved install uses its own; the path meson install gave it
 * (`<prefix>/<libdir>/acmlbm/acmlbm-vdb.so`); the build tree's. When none
 * loads, the exports' message names each path tried and why it failed.
 *
 * The library does not link OpenVDB: it loads the module when a .vdb file is
 * written, so programs that write none never load OpenVDB. Once it is loaded,
 * a forked child of the process should leave with _exit() or exec(): Debian
 * 12's log4cplus (a dependency of OpenVDB) hangs a child that calls exit().
 *
 * @return 1 if .vdb files can be written, 0 if not
 * @since 1.3
 */
ACM_API int acm_vdb_available(void);

/** Flags of acm_smoke_export_vdb(). @since 1.3 */
typedef enum acm_vdb_flag {
    /** Also write the smoke's domain's fluid velocity (acm_domain_get_field(),
     *  ::ACM_FIELD_VELOCITY) as the grid `vel`. */
    ACM_VDB_VELOCITY = 1u << 0
} acm_vdb_flag;

/**
 * Write a smoke's density (acm_smoke_density()) as an OpenVDB file, for
 * Houdini and Blender: a FloatGrid `density`, class fog volume, background
 * 0, voxel size 1/s (s = @p subdivisions) and voxel (i, j, k) centred where
 * acm_smoke_density() puts it, at ((i + 1/2)/s - 1/2, ...) in lattice units.
 * Voxels whose density is at most 1e-6 (particles per cell volume) are left
 * inactive, so the file holds only the smoke; the active values are those of
 * acm_smoke_density() exactly (FP32). With ::ACM_VDB_VELOCITY the file also
 * holds a Vec3SGrid `vel`: the fluid velocity of every cell (all active,
 * cell-centred, not staggered), voxel size 1, voxel (i, j, k) at the cell
 * centre (i, j, k), vector type contravariant relative, in lattice units per
 * step.
 *
 * The file is written beside @p path and renamed over it when complete, as
 * by the other exporters. Writes the whole density grid on the host first:
 * (n_x s)(n_y s)(n_z s) floats.
 *
 * @param smoke        the smoke
 * @param path         the file to write (by convention `.vdb`)
 * @param subdivisions voxels per cell edge, in [1, ::ACM_SMOKE_SUBDIVISIONS_MAX]
 * @param flags        ::acm_vdb_flag values, or-ed (0: the density only)
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_OUT_OF_RANGE
 *         (subdivisions); ::ACM_ERR_BAD_ENUM (an unknown flag);
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_IO (with the system's reason; nothing
 *         is left behind); ::ACM_ERR_NOT_BUILT (no OpenVDB in this build: the
 *         message says how to get it); device errors. Described by
 *         acm_smoke_last_error().
 * @note Thread-safety: as the smoke (one thread at a time with its domain).
 * @since 1.3
 */
ACM_API acm_status acm_smoke_export_vdb(acm_smoke *smoke, const char *path,
                                        int32_t subdivisions, uint32_t flags);

/**
 * Write fields of a domain as an OpenVDB file, as acm_domain_export_vti()
 * does as VTK: one voxel per cell, voxel size 1, voxel (i, j, k) at the cell
 * centre (i, j, k), every cell active, background 0, FP32. The grids are
 * named for Houdini and Blender: ::ACM_FIELD_DENSITY as the FloatGrid
 * `fluid_density` (the fluid's mass density ρ, not smoke: `density` is the
 * smoke's name, acm_smoke_export_vdb()), ::ACM_FIELD_VELOCITY as the
 * Vec3SGrid `vel` and ::ACM_FIELD_FORCE as the Vec3SGrid `force` (both
 * vector type contravariant relative, cell-centred). ::ACM_FIELD_POPULATIONS
 * (27 values a cell) has no VDB grid type and is refused.
 *
 * @param domain the domain
 * @param path   the file to write (by convention `.vdb`)
 * @param fields the fields, at least one, each once
 * @param count  number of fields
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_INVALID_ARG (no field,
 *         a field twice); ::ACM_ERR_BAD_ENUM (an unknown field);
 *         ::ACM_ERR_UNSUPPORTED (::ACM_FIELD_POPULATIONS);
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_IO (with the system's reason; nothing
 *         is left behind); ::ACM_ERR_NOT_BUILT (no OpenVDB in this build);
 *         device errors. Described by acm_domain_last_error().
 * @note Thread-safety: as the domain (one thread at a time; a call while
 *       another thread uses the domain returns ::ACM_ERR_BAD_STATE).
 * @since 1.3
 */
ACM_API acm_status acm_domain_export_vdb(acm_domain *domain, const char *path,
                                         const acm_field *fields, size_t count);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_EXPORT_H */
