/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_checkpoint.h
 * @defgroup checkpoint Checkpoint and restart
 * @{
 *
 * acm_domain_save() writes the whole state of a domain to one file;
 * acm_domain_load() makes a new domain from it that continues the run bit for
 * bit: N steps, a save, a load and M steps give the populations of N + M steps
 * in one go, on the same backend in the same precision. A checkpoint of the
 * CPU restarts on a GPU and the other way round (the populations arrive
 * exactly; the steps after it then follow that backend's arithmetic).
 *
 * ### What a checkpoint holds
 * The grid, viscosity, collision model and its parameters, the faces, the body
 * force, the tunables (acm_domain_set_param()), the memory layout; the
 * populations as stored (FP64 in the file: FP16, FP32 and FP64 storage all
 * convert to it exactly), the per-cell force field, the LI2020 tau*, the last
 * immersed-boundary force and its support, the statistics of the previous step
 * the ACM rules use, the step and fallback counters; every solid: its
 * samples in their current order, normals, surface mesh, pose, velocities,
 * mass properties, caller loads and the fluid force of the last step; and
 * every smoke (acm_smoke.h): its capacity and seed, its counters, its
 * emitters with their points and how far each has got (the fraction of a
 * particle owed, the next point, the position of its random stream; a solid
 * emitter by its solid's number), and each particle in its slot with its
 * position, age and lifetime. The particles restart bit for bit with the rest.
 *
 * ### What it does not hold (this version)
 * The caller's CUDA stream (acm_cuda.h): the loaded domain uses its own.
 *
 * The file format is described in docs/checkpoint.md.
 *
 * ### Thread-safety
 * acm_domain_save() uses the domain: no other thread may use it meanwhile.
 * acm_domain_load() touches nothing shared.
 */
#ifndef ACMLBM_ACM_CHECKPOINT_H
#define ACMLBM_ACM_CHECKPOINT_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint32_t, int32_t */

#include "acm_common.h" /* ACM_API, acm_status, acm_backend */
#include "acm_domain.h" /* acm_domain */
#include "acm_layout.h" /* acm_layout */
#include "acm_smoke.h"  /* acm_smoke */
#include "acm_solid.h"  /* acm_solid */

ACM_BEGIN_DECLS

/**
 * Options of acm_domain_load(). Initialise with ::ACM_LOAD_OPTIONS_INIT or
 * acm_load_options_init(). Fields are only ever appended.
 * @since 1.3
 */
typedef struct acm_load_options {
    uint32_t version;         /**< ::ACM_LOAD_OPTIONS_VERSION */
    acm_backend backend;      /**< where the loaded domain runs: ::ACM_BACKEND_AUTO (default)
                                   means the backend the checkpoint was saved on (not "CUDA if
                                   present"); ::ACM_BACKEND_CPU or ::ACM_BACKEND_CUDA choose.
                                   FP16 storage loaded on the CPU becomes FP32 (exact). */
    int32_t device;           /**< CUDA device ordinal; -1 (default) = device 0 */
    const acm_layout *layout; /**< memory layout of the loaded domain; NULL (default) = the
                                   checkpoint's (restart is then bitwise on the same backend) */
    char *error_buffer;       /**< optional: receives the message if the load fails (it names
                                   the file and the section) */
    size_t error_buffer_size; /**< size of error_buffer in bytes */
} acm_load_options;

/** Current version of ::acm_load_options. @since 1.3 */
#define ACM_LOAD_OPTIONS_VERSION 1

/** Static initialiser with the defaults. @since 1.3 */
#define ACM_LOAD_OPTIONS_INIT { ACM_LOAD_OPTIONS_VERSION, ACM_BACKEND_AUTO, -1, NULL, NULL, 0 }

/**
 * Fill @p opts with the defaults of ::ACM_LOAD_OPTIONS_INIT for @p version.
 *
 * @param[out] opts  options to initialise
 * @param version    ::ACM_LOAD_OPTIONS_VERSION of the caller's headers
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_load_options_init(acm_load_options *opts, uint32_t version);

/**
 * Write the whole state of @p domain to @p path (docs/checkpoint.md).
 *
 * The file is written beside @p path (a temporary `.acm.tmp.<pid>.<n>` in its
 * directory, which fits whatever the length of the file's name), flushed to
 * the disk and renamed over @p path only when complete: a crash or a failure
 * half way leaves the previous file at @p path as it was, and no temporary.
 * The domain is not changed (on a GPU, the state and the smokes' particles are
 * copied to the host: this synchronises). Checkpoints are about 8 x 27 bytes
 * per cell plus 56 for the force field, tau and the immersed-boundary force
 * where the domain has them, and per smoke 32 bytes per particle alive and one
 * bit per slot of its capacity.
 *
 * @param domain  the domain (receives the message on failure)
 * @param path    file to write
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_IO (the file could not be
 *         created, written, flushed or renamed: the message names @p path and
 *         says which and why);
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_DEVICE (copying a GPU's state or particles).
 * @note Thread-safety: as for any call on the domain.
 * @since 1.3
 */
ACM_API acm_status acm_domain_save(acm_domain *domain, const char *path);

/**
 * Make a new domain from a checkpoint written by acm_domain_save(). Nothing is
 * loaded into an existing domain: the result is a new handle, with new
 * handles for its solids (acm_domain_get_solids()) and smokes
 * (acm_domain_get_smokes()), in the order they had. The divergence policy
 * is not part of a checkpoint (it holds the caller's callback and data,
 * addresses of the process that saved): the loaded domain has the default,
 * ::ACM_DIVERGENCE_STOP, until acm_domain_set_divergence_policy() is called
 * again (docs/checkpoint.md, "What is saved, and what is not").
 *
 * Every size, offset and count of the file is checked before it is used, and
 * every section's CRC-32C; what is wrong is reported by the status and a
 * message naming the file and the section.
 *
 * @param[out] out  receives the domain on success (untouched on failure)
 * @param path      checkpoint file
 * @param opts      options, or NULL for the defaults (the checkpoint's backend
 *                  and layout)
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_IO (cannot open or read the
 *         file, or it is not a regular file: a directory, a FIFO or a device is
 *         refused before anything is read, without blocking); ::ACM_ERR_BAD_FORMAT (not a checkpoint, truncated, a checksum
 *         mismatch, an unknown, missing, repeated or inconsistent section, values
 *         out of range); ::ACM_ERR_BAD_VERSION (a format version this library does
 *         not read, or an unknown @p opts version); ::ACM_ERR_UNSUPPORTED (written
 *         on a machine of the other byte order); ::ACM_ERR_NOT_BUILT, ::ACM_ERR_NO_DEVICE
 *         (the backend asked for is not available); ::ACM_ERR_NO_MEMORY,
 *         ::ACM_ERR_DEVICE_MEMORY, ::ACM_ERR_DEVICE.
 *         On failure nothing is left allocated.
 * @note Thread-safety: different loads may run in parallel.
 * @since 1.3
 */
ACM_API acm_status acm_domain_load(acm_domain **out, const char *path,
                                   const acm_load_options *opts);

/**
 * The solids of a domain, in the order they were created (a loaded domain:
 * in the order of the checkpoint, which is the order they had when saved).
 *
 * @param domain     the domain
 * @param[out] out   receives up to @p count handles (may be NULL when @p count is 0)
 * @param count      room in @p out
 * @param[out] n     receives the number of solids of the domain (may exceed @p count)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER
 * @since 1.3
 */
ACM_API acm_status acm_domain_get_solids(acm_domain *domain, acm_solid **out, size_t count,
                                         size_t *n);

/**
 * The smokes of a domain, in the order they were created (a loaded domain:
 * in the order of the checkpoint, which is the order they had when saved).
 *
 * @param domain     the domain
 * @param[out] out   receives up to @p count handles (may be NULL when @p count is 0)
 * @param count      room in @p out
 * @param[out] n     receives the number of smokes of the domain (may exceed @p count)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER
 * @since 1.3
 */
ACM_API acm_status acm_domain_get_smokes(acm_domain *domain, acm_smoke **out, size_t count,
                                         size_t *n);

ACM_END_DECLS

/** @} */

#endif /* ACMLBM_ACM_CHECKPOINT_H */
