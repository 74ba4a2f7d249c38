/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_smoke.h
 * @defgroup smoke Smoke: tracer particles
 * @{
 *
 * An ::acm_smoke is a set of tracer particles carried by a domain's flow, the
 * way the paper renders its flows (Sec. 6: smoke particles injected and
 * traced every step). Emitters add particles at a rate, each particle lives
 * for a number of steps, and acm_step() moves every particle of every smoke
 * of the domain after the fluid (docs/smoke.md):
 *
 *     x(t + 1) = x + u(x + u(x) / 2)
 *
 * (the explicit midpoint rule over one time step, in lattice units), with u
 * the fluid velocity of the new state interpolated trilinearly between cell
 * centres (cell (i, j, k) at the point (i, j, k)). Particles wrap around
 * periodic axes; a particle that leaves the domain, or ages past its
 * lifetime, is recycled: its slot serves the next emission. The particle
 * count never exceeds the smoke's capacity; an emission that finds no free
 * slot is counted as dropped.
 *
 * Checkpoints (acm_checkpoint.h) hold every smoke of a domain: its options,
 * counters, emitters (a solid emitter by its solid's number among the
 * domain's solids) with how far each has got, and its particles in their
 * slots; the run goes on bit for bit after acm_domain_load(), whose smokes are
 * new handles (acm_domain_get_smokes()).
 *
 * Thread-safety: a smoke belongs to its domain; use both from one thread at
 * a time.
 */
#ifndef ACMLBM_ACM_SMOKE_H
#define ACMLBM_ACM_SMOKE_H

#include "acm_common.h" /* ACM_API, acm_status */
#include "acm_domain.h" /* acm_domain */
#include "acm_solid.h"  /* acm_solid */

ACM_BEGIN_DECLS

/** Opaque set of tracer particles of one domain. */
typedef struct acm_smoke acm_smoke;

/** Options of acm_smoke_create(). */
typedef struct acm_smoke_options {
    uint32_t version;  /**< ::ACM_SMOKE_OPTIONS_VERSION */
    uint64_t capacity; /**< most particles alive at once, in [1, 2^31) */
    uint64_t seed;     /**< of the emitters' random positions (0 is a valid seed) */
} acm_smoke_options;

/** Current version of ::acm_smoke_options. */
#define ACM_SMOKE_OPTIONS_VERSION 1

/** Initialiser of an ::acm_smoke_options (capacity 2^20). */
#define ACM_SMOKE_OPTIONS_INIT {ACM_SMOKE_OPTIONS_VERSION, UINT64_C(1) << 20, 0u}

/** Where an emitter puts its particles. */
typedef enum acm_emitter_shape {
    ACM_EMITTER_BOX = 1,    /**< uniformly in the box [lo, hi] */
    ACM_EMITTER_SPHERE = 2, /**< uniformly in the ball of `centre` and `radius` */
    ACM_EMITTER_POINTS = 3, /**< at the caller's points, in turn (the array is copied) */
    ACM_EMITTER_SOLID = 4   /**< on the surface of `solid`, `offset` cells out along the
                                 surface normal, following the solid as it moves (@since 1.3,
                                 ::acm_emitter version 2) */
} acm_emitter_shape;

/** An emitter (acm_smoke_add_emitter()). Positions in lattice units. */
typedef struct acm_emitter {
    uint32_t version;          /**< ::ACM_EMITTER_VERSION */
    acm_emitter_shape shape;
    double lo[3], hi[3];       /**< ::ACM_EMITTER_BOX: corners, lo <= hi */
    double centre[3];          /**< ::ACM_EMITTER_SPHERE */
    double radius;             /**< ::ACM_EMITTER_SPHERE: >= 0 */
    const double *points;      /**< ::ACM_EMITTER_POINTS: 3 per point */
    size_t point_count;        /**< ::ACM_EMITTER_POINTS: >= 1 */
    double rate;               /**< particles per step, >= 0; fractions add up over steps */
    int64_t lifetime;          /**< steps a particle lives, >= 1; 0: until it leaves */
    /* version 2 */
    acm_solid *solid;          /**< ::ACM_EMITTER_SOLID: a solid of the smoke's domain.
                                    Destroying the solid stops the emitter for good (its
                                    rate becomes 0, a checkpoint saves it so); the
                                    particles it emitted go on */
    double offset;             /**< ::ACM_EMITTER_SOLID: distance from the surface, cells, in
                                    [0, 4] */
} acm_emitter;

/** Current version of ::acm_emitter (1: without `solid` and `offset`). */
#define ACM_EMITTER_VERSION 2

/** Initialiser of an ::acm_emitter: an empty box at the origin, rate 0. */
#define ACM_EMITTER_INIT                                                                     \
    {ACM_EMITTER_VERSION, ACM_EMITTER_BOX, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 0.0, NULL, 0, 0.0, \
     0, NULL, 0.0}

/** Counters of a smoke (acm_smoke_get_info()). */
typedef struct acm_smoke_info {
    uint32_t version;    /**< set by the caller: ::ACM_SMOKE_INFO_VERSION */
    uint64_t capacity;   /**< most particles alive at once */
    uint64_t alive;      /**< particles alive now */
    uint64_t emitted;    /**< particles emitted since creation */
    uint64_t left;       /**< recycled because they left the domain */
    uint64_t expired;    /**< recycled because they reached their lifetime */
    uint64_t dropped;    /**< emissions that found the smoke full */
    int32_t emitters;    /**< emitters added */
    /* version 2 */
    uint64_t absorbed;   /**< recycled because they entered a solid (closed meshes) */
} acm_smoke_info;

/** Current version of ::acm_smoke_info (1: without `absorbed`). */
#define ACM_SMOKE_INFO_VERSION 2

/**
 * Fill @p opts with the defaults of options version @p version.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_smoke_options_init(acm_smoke_options *opts, uint32_t version);

/**
 * Create an empty smoke in a domain; from the next step on, acm_step() emits
 * and moves its particles.
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_OUT_OF_RANGE (capacity); ::ACM_ERR_NO_MEMORY. Errors are
 *         described by acm_domain_last_error().
 * @since 1.3
 */
ACM_API acm_status acm_smoke_create(acm_smoke **out, acm_domain *domain,
                                    const acm_smoke_options *opts);

/** Remove a smoke from its domain and free it. NULL is a harmless no-op. @since 1.3 */
ACM_API void acm_smoke_destroy(acm_smoke *smoke);

/**
 * Add an emitter; it emits from the next step on.
 * @param smoke the smoke
 * @param emitter the emitter (copied, its points too)
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_BAD_ENUM (shape); ::ACM_ERR_OUT_OF_RANGE (a coordinate not
 *         finite, lo > hi, a negative radius or rate, a negative lifetime, no
 *         points); ::ACM_ERR_NO_MEMORY. Described by acm_smoke_last_error().
 * @since 1.3
 */
ACM_API acm_status acm_smoke_add_emitter(acm_smoke *smoke, const acm_emitter *emitter);

/**
 * Counters of a smoke.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_smoke_get_info(acm_smoke *smoke, acm_smoke_info *info);

/**
 * Positions of the particles alive (3 per particle, lattice units), in the
 * order of their slots.
 * @param smoke the smoke
 * @param dst   3 * @p count doubles
 * @param count the capacity of @p dst in particles (acm_smoke_info::alive suffices)
 * @param[out] written particles written (may be NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE (fewer than
 *         alive; nothing written)
 * @since 1.3
 */
ACM_API acm_status acm_smoke_get_particles(acm_smoke *smoke, double *dst, size_t count,
                                           size_t *written);

/** Largest acm_smoke_density() subdivision. */
#define ACM_SMOKE_SUBDIVISIONS_MAX 8

/**
 * The smoke's density on a grid: each particle spread over the 8 voxel
 * centres around it with trilinear ("cloud in cell") weights, in particles
 * per cell volume. The grid covers the domain, [-1/2, n - 1/2) along each
 * axis, with @p subdivisions voxels per cell edge (1: the fluid's
 * resolution): (n_x s) x (n_y s) x (n_z s) values, x fastest, voxel (i, j, k)
 * centred at ((i + 1/2) / s - 1/2, ...). Periodic axes wrap; along the
 * others a particle's weight beyond the outermost voxel centres goes to the
 * outermost voxels, so the total is always the particle count:
 * sum(dst) / s^3 == acm_smoke_info::alive.
 *
 * @param smoke the smoke
 * @param subdivisions voxels per cell edge, in [1, ::ACM_SMOKE_SUBDIVISIONS_MAX]
 * @param dst   the grid's values
 * @param count values at @p dst: exactly the grid's size
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE
 *         (subdivisions), ::ACM_ERR_BUFFER_SIZE (count)
 * @since 1.3
 */
ACM_API acm_status acm_smoke_density(acm_smoke *smoke, int32_t subdivisions, float *dst,
                                     size_t count);

/**
 * Message describing the last failed call on @p smoke, or "" if none.
 * @since 1.3
 */
ACM_API const char *acm_smoke_last_error(const acm_smoke *smoke);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_SMOKE_H */
