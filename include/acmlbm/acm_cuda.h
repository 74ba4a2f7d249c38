/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_cuda.h
 * @defgroup cuda CUDA interoperability
 * @{
 *
 * Optional API for applications that use CUDA themselves (game engines, VFX
 * renderers): run the solver on your stream, step without waiting, and read
 * the density and velocity fields straight from device memory. Include this
 * header only if you have the CUDA toolkit; acmlbm.h does not need it.
 *
 * ### Which calls synchronise
 * On the CUDA backend every GPU operation of a domain is ordered on the
 * domain's stream (its own non-blocking stream, or the one you set).
 * - acm_step() waits for the device at its end, and, on a domain with solids
 *   or smoke, at each divergence check (every ::ACM_PARAM_DIVERGENCE_INTERVAL
 *   steps, default 1).
 * - acm_cuda_step_async() only enqueues; acm_cuda_domain_synchronize() waits
 *   and reports what happened (divergence, device faults). A divergence is
 *   also reported, without waiting, by the first acm_cuda_step_async() call
 *   that finds an earlier call's steps done (since 1.7).
 * - acm_cuda_domain_map_fields() only enqueues.
 * - Field reads and writes, acm_domain_probe(), acm_domain_get_stats() and the
 *   initialisation calls wait for their own work before they return.
 * - acm_domain_set_face(), acm_domain_set_body_force() and the other setters
 *   touch host state only; they apply to steps enqueued afterwards.
 *
 * A device fault inside a kernel (for example an illegal address) is
 * reported as ::ACM_ERR_DEVICE by the next call that waits, with the CUDA
 * error in acm_domain_last_error(); the domain is then unusable and must be
 * destroyed.
 *
 * Builds without CUDA export these functions too; they return
 * ::ACM_ERR_NOT_BUILT.
 */
#ifndef ACMLBM_ACM_CUDA_H
#define ACMLBM_ACM_CUDA_H

#include <cuda_runtime.h> /* cudaStream_t */

#include "acm_domain.h" /* acm_domain */
#include "acm_smoke.h"  /* acm_smoke */

ACM_BEGIN_DECLS

/**
 * Run all of the domain's GPU work on @p stream from now on (the domain waits
 * for its previous stream first). NULL gives the domain its own stream again.
 *
 * @param domain a domain on the CUDA backend
 * @param stream a stream of the domain's device, or NULL
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER (domain), ::ACM_ERR_UNSUPPORTED (a
 *         CPU domain), ::ACM_ERR_DEVICE, ::ACM_ERR_NOT_BUILT
 * @note The caller keeps ownership of @p stream and must not destroy it while
 *       the domain uses it.
 * @since 1.0
 */
ACM_API acm_status acm_cuda_domain_set_stream(acm_domain *domain, cudaStream_t stream);

/**
 * The stream the domain's work runs on.
 *
 * @param domain      a domain on the CUDA backend
 * @param[out] stream receives the stream
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_UNSUPPORTED,
 *         ::ACM_ERR_NOT_BUILT
 * @since 1.0
 */
ACM_API acm_status acm_cuda_domain_get_stream(acm_domain *domain, cudaStream_t *stream);

/**
 * Enqueue @p nsteps time steps on the domain's stream and return at once.
 * Divergence is recorded on the device and reported by
 * acm_cuda_domain_synchronize(), or by a later acm_cuda_step_async() once
 * the device is past this call's steps: it then looks at a copy made at the
 * end of this call, never waiting (a call made before that copy arrived
 * looks again at the next). The message names the step that diverged; a
 * domain of the fluid alone keeps the state before it, since its kernels
 * leave the state alone once a step diverged (since 1.7). A domain that
 * holds only the fluid (no solid, no smoke, one slab) replays its steps from CUDA graphs, up to
 * 16 steps a launch (since 1.12; two before), captured at the first call and again after a
 * change of its configuration: the same kernels with the same arguments, the same state
 * after the steps (since 1.7). A domain with static and prescribed solids does so too (since
 * 1.11), and one with free bodies (after 1.12.0, without smoke): their Newton-Euler steps run
 * on the device, and the host takes them home when asked for them (acm_solid_get_state(),
 * a checked step, acm_cuda_domain_synchronize()), waiting for the steps enqueued so far. A
 * free body that reaches ::ACM_SOLID_MAX_SPEED there stays where it was; the domain is
 * marked diverged at that step when the body comes home, and
 * acm_cuda_domain_synchronize() reports it. acm_cuda_step_prepare() records the graphs
 * before the first frame. The inputs of a replayed run (poses, re-sorts, smoke plans) go
 * through eight slots of mapped host memory: a call made while the device is eight
 * replays behind waits for the stream first (after 1.12.0).
 *
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE,
 *         ::ACM_ERR_INVALID_ARG (faces), ::ACM_ERR_DIVERGED (an earlier call's steps),
 *         ::ACM_ERR_BAD_STATE (diverged before),
 *         ::ACM_ERR_UNSUPPORTED, ::ACM_ERR_DEVICE, ::ACM_ERR_NOT_BUILT
 * @since 1.0
 */
ACM_API acm_status acm_cuda_step_async(acm_domain *domain, int64_t nsteps);

/**
 * Do now what the first acm_cuda_step_async(@p domain, @p nsteps) would do before
 * it enqueues its steps, and make no step: allocate the steps' storage and record
 * the CUDA graph that the call's first run of steps replays (up to 16 steps), so
 * that a game's first frame costs what every later frame costs. Call it at level
 * load, after the solids are created and the faces set, with the steps per frame;
 * calling it again finds the graph recorded and does nothing. A change of
 * configuration afterwards (faces, solids added or removed, layout, a solid
 * moved by acm_solid_set_state() where its forces are gathered) records again
 * at the next call that needs it. It records each form that a frame loop's
 * calls take (the other parity when @p nsteps is odd, the solids as after
 * their first step, runs with and without re-sorts, the steps a frame has
 * after its loops of four): a loop of acm_cuda_step_async(@p nsteps) then
 * records nothing (acm_cuda_graphs_recorded()). Domains whose steps are not
 * replayed from graphs (face functions, moving solids whose forces are
 * gathered, more than 16 solids or 4 smokes) only allocate. The state,
 * the step count and the solids are left as they were (the recording enqueues
 * nothing on the device beyond the graph's upload).
 *
 * @param domain a domain on the CUDA backend, of one slab
 * @param nsteps the steps each later acm_cuda_step_async() call will make (>= 0)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE (@p nsteps),
 *         ::ACM_ERR_INVALID_ARG (faces), ::ACM_ERR_BAD_STATE (diverged),
 *         ::ACM_ERR_UNSUPPORTED, ::ACM_ERR_DEVICE_MEMORY, ::ACM_ERR_DEVICE,
 *         ::ACM_ERR_NOT_BUILT
 * @since 1.12
 */
ACM_API acm_status acm_cuda_step_prepare(acm_domain *domain, int64_t nsteps);

/**
 * How many CUDA graphs of steps the domain has recorded since it was created:
 * by acm_cuda_step_prepare() and by steps that found no graph to replay. A
 * frame loop reads it after the level load and again later: a count that grew
 * meant a recording in some frame (about a millisecond per four steps of
 * 64^3 cells on an H200), which a call to acm_cuda_step_prepare() at the level
 * load, with the frame's step count, avoids.
 *
 * @param domain     a domain on the CUDA backend
 * @param[out] count receives the number of graphs recorded (0 before any)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_UNSUPPORTED (not on the
 *         CUDA backend), ::ACM_ERR_NOT_BUILT
 * @since 1.12
 */
ACM_API acm_status acm_cuda_graphs_recorded(acm_domain *domain, int64_t *count);

/**
 * Wait for the domain's enqueued work and report its outcome.
 *
 * @return ::ACM_OK, ::ACM_ERR_DIVERGED (message names the first diverged
 *         step and cell), ::ACM_ERR_DEVICE, ::ACM_ERR_NULL_POINTER,
 *         ::ACM_ERR_UNSUPPORTED, ::ACM_ERR_NOT_BUILT
 * @since 1.0
 */
ACM_API acm_status acm_cuda_domain_synchronize(acm_domain *domain);

/**
 * Compute the density and velocity of the current state into device buffers
 * owned by the domain and return their addresses (enqueued on the domain's
 * stream; read them on that stream or after synchronising). The layout is
 * that of acm_domain_get_field(): density[ncells], velocity[3 * ncells]
 * interleaved, cell index x + nx * (y + ny * z), 32-bit floats. The buffers
 * live until the domain is destroyed; each call overwrites them.
 *
 * @param domain         a domain on the CUDA backend
 * @param[out] density   receives the density buffer (may be NULL)
 * @param[out] velocity  receives the velocity buffer (may be NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER (domain, or both outputs NULL),
 *         ::ACM_ERR_UNSUPPORTED, ::ACM_ERR_DEVICE_MEMORY, ::ACM_ERR_DEVICE,
 *         ::ACM_ERR_NOT_BUILT
 * @since 1.0
 */
ACM_API acm_status acm_cuda_domain_map_fields(acm_domain *domain, const float **density,
                                              const float **velocity);

/**
 * acm_domain_set_face_values() with the values in device memory (or managed
 * memory), for an inflow computed on the GPU: read on the domain's stream after
 * what the caller enqueued there, then checked and kept as the host call does
 * (a face's values are few: they go through the host, and the call returns when
 * they are in place). A domain of one slab (a decomposed domain: copy the values
 * to the host and call acm_domain_set_face_values()).
 *
 * @param domain        a domain on the CUDA backend
 * @param face          which face (its type set first: INLET or OUTLET)
 * @param dtype         ::ACM_DTYPE_FLOAT32 or ::ACM_DTYPE_FLOAT64
 * @param device_values 3 or 1 per face cell in device memory, or NULL (count 0) for
 *                      the uniform rule
 * @param count         number of values
 * @return as acm_domain_set_face_values(); also ::ACM_ERR_INVALID_ARG (values not in
 *         device memory), ::ACM_ERR_UNSUPPORTED (a CPU or decomposed domain),
 *         ::ACM_ERR_DEVICE, ::ACM_ERR_NOT_BUILT. On failure nothing changes.
 * @since 1.9
 */
ACM_API acm_status acm_cuda_domain_set_face_values(acm_domain *domain, acm_face face,
                                                   acm_dtype dtype, const void *device_values,
                                                   size_t count);

/**
 * Project a smoke's particles into a density grid in device memory (the grid
 * and units of acm_smoke_density()), enqueued on the domain's stream: no copy
 * to the host and no synchronisation. Read @p device_dst on that stream or
 * after acm_cuda_domain_synchronize().
 *
 * @param smoke        a smoke of a domain on the CUDA backend
 * @param subdivisions voxels per cell edge, in [1, ::ACM_SMOKE_SUBDIVISIONS_MAX]
 * @param device_dst   device memory for the grid's values
 * @param count        values at @p device_dst: exactly the grid's size
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE,
 *         ::ACM_ERR_BUFFER_SIZE, ::ACM_ERR_UNSUPPORTED (a CPU domain),
 *         ::ACM_ERR_DEVICE, ::ACM_ERR_NOT_BUILT
 * @since 1.3
 */
ACM_API acm_status acm_cuda_smoke_density(acm_smoke *smoke, int32_t subdivisions,
                                          float *device_dst, size_t count);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_CUDA_H */
