/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_solid.h
 * @defgroup solid Immersed solids
 * @{
 *
 * An ::acm_solid is a rigid body immersed in a domain and coupled to the fluid
 * by the immersed-boundary (IB) method of the paper (docs/physics.md,
 * "Immersed solids"): its surface is covered by Poisson-disk samples; each
 * step the fluid velocity is interpolated at every sample with the 2x2x2
 * trilinear kernel, a penalty force density G = alpha rho (U_b - U) pulls it
 * toward the body's velocity U_b, and G is spread back to the 8 surrounding
 * cells (one thread per sample with atomic additions on the GPU). The force
 * enters the collision of the same step. Several solids may share a domain.
 *
 * ### Frames and units
 * Lattice units (cell size 1, time step 1, fluid reference density 1). A
 * solid has a body frame whose origin is its centre of mass: for a mesh, the
 * centroid of the enclosed volume (of the surface if the mesh is not closed)
 * is moved to acm_solid_options::position after scaling; caller-given sample
 * points are taken as already relative to the centre of mass. Orientation is a
 * unit quaternion (w, x, y, z) rotating body into world coordinates. Angular
 * velocities are in the world frame, in radians per step. Cell (x, y, z) has
 * its centre at the point (x, y, z).
 *
 * ### Motion
 * - ::ACM_MOTION_STATIC: fixed.
 * - ::ACM_MOTION_PRESCRIBED: the caller's velocities move it each step (pose
 *   integrated exactly for constant velocities); acm_solid_set_state() between
 *   steps sets a new pose and velocities at any time (animation).
 * - ::ACM_MOTION_FREE: a rigid body moved by the fluid force and torque,
 *   gravity (with buoyancy) and the caller's loads (two-way coupling,
 *   explicit Newton-Euler; needs a solid at least 1.2 times as dense as the
 *   fluid).
 *
 * Surface speeds must stay below 0.2 (Mach 0.35): a state or motion faster
 * than that is refused, and a free body that accelerates beyond it stops
 * acm_step() with ::ACM_ERR_DIVERGED.
 *
 * ### Errors
 * Creation errors are reported on the domain (acm_domain_last_error()); later
 * calls leave their message on the solid (acm_solid_last_error()).
 *
 * ### Lifetime and threads
 * A solid belongs to its domain: acm_domain_destroy() destroys the solids
 * still in it (their handles then dangle). A solid is used by the thread that
 * uses its domain, never while another thread is inside a call on the domain
 * (not checked here: acm_domain.h, "Thread-safety").
 */
#ifndef ACMLBM_ACM_SOLID_H
#define ACMLBM_ACM_SOLID_H

#include "acm_common.h" /* ACM_API, acm_status */
#include "acm_domain.h" /* acm_domain */
#include "acm_mesh.h"   /* acm_mesh */

ACM_BEGIN_DECLS

/** Opaque immersed rigid body. */
typedef struct acm_solid acm_solid;

/** How a solid moves. */
typedef enum acm_motion {
    ACM_MOTION_STATIC = 0,     /**< fixed in place */
    ACM_MOTION_PRESCRIBED = 1, /**< moved by the caller's velocities or states */
    ACM_MOTION_FREE = 2        /**< moved by the fluid, gravity and the caller's loads */
} acm_motion;

/** Largest surface speed |v + w x r| of a solid, lattice units per step. */
#define ACM_SOLID_MAX_SPEED 0.2

/**
 * Options of acm_solid_create(). Initialise with ::ACM_SOLID_OPTIONS_INIT or
 * acm_solid_options_init(). Give either a mesh or sample points.
 */
typedef struct acm_solid_options {
    uint32_t version;          /**< ::ACM_SOLID_OPTIONS_VERSION */
    const acm_mesh *mesh;      /**< the surface (caller units), sampled by the library; or NULL */
    size_t sample_count;       /**< without a mesh: the number of caller samples */
    const double *sample_points; /**< without a mesh: 3 per sample, body frame, caller units */
    const double *sample_areas;  /**< without a mesh: surface area per sample, caller units^2 */
    double scale;              /**< caller units -> cells (default 1) */
    double position[3];        /**< world position of the centre of mass, cells */
    double orientation[4];     /**< unit quaternion w, x, y, z, body -> world (default identity) */
    double samples_per_cell;   /**< mesh sampling density: samples per unit area (cell^2) of
                                    surface, in [1, 400]; default 16 (the paper: 10-100) */
    double surface_inset;      /**< closed meshes: samples are moved this far inside along the
                                    surface normal, cells, in [0, 2]; default 0.3, which puts
                                    the effective no-slip surface of the 2-point kernel on the
                                    mesh (docs/physics.md, "Effective surface") */
    uint64_t seed;             /**< sampling seed (default 1): same seed, same samples */
    double ib_alpha;           /**< penalty gain alpha of G = alpha rho (U_b - U), in (0, 2];
                                    default 2 (docs/physics.md) */
    acm_motion motion;         /**< default ::ACM_MOTION_STATIC */
    double velocity[3];        /**< initial velocity of the centre of mass */
    double angular_velocity[3]; /**< initial angular velocity (world frame, radians per step) */
    double density;            /**< FREE: solid density / fluid density, >= 1.2 (or set mass) */
    double mass;               /**< FREE: mass; 0 = density * volume */
    double volume;             /**< FREE: volume; 0 = from the mesh (must be closed) */
    double inertia[6];         /**< FREE: inertia about the centre of mass in the body frame,
                                    xx, yy, zz, xy, xz, yz (cells^5 times density); all 0 =
                                    from the mesh and the density */
    double gravity[3];         /**< FREE: acceleration of gravity, cells per step^2 */
    uint64_t max_samples;      /**< refuse to create more samples; 0 = default 2^24 */
} acm_solid_options;

/** Current version of ::acm_solid_options. */
#define ACM_SOLID_OPTIONS_VERSION 1

/** Static initialiser with the defaults (no surface yet). */
#define ACM_SOLID_OPTIONS_INIT                                                             \
    {                                                                                      \
        ACM_SOLID_OPTIONS_VERSION, NULL, 0, NULL, NULL, 1.0, {0.0, 0.0, 0.0},             \
            {1.0, 0.0, 0.0, 0.0}, 16.0, 0.3, 1, 2.0, ACM_MOTION_STATIC, {0.0, 0.0, 0.0},   \
            {0.0, 0.0, 0.0}, 0.0, 0.0, 0.0, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0},               \
            {0.0, 0.0, 0.0}, 0                                                             \
    }

/**
 * Initialise options of a given version with the defaults.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.1
 */
ACM_API acm_status acm_solid_options_init(acm_solid_options *opts, uint32_t version);

/**
 * Create a solid in a domain: sample its surface (a mesh) or take the
 * caller's samples, place it, and add it to the domain's next step.
 *
 * @param[out] out  receives the solid on success
 * @param domain    the domain (receives the message on failure)
 * @param opts      options
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION; ::ACM_ERR_BAD_ENUM;
 *         ::ACM_ERR_INVALID_ARG (neither or both of mesh and samples; a free body
 *         without a closed mesh, volume or inertia to take its mass properties from);
 *         ::ACM_ERR_OUT_OF_RANGE (non-finite or out-of-range numbers, a scale at
 *         which the mesh's surface, or the volume of a closed mesh, underflows in
 *         cells, a quaternion far from unit length, a solid outside the domain
 *         along a non-periodic axis, a surface speed of ::ACM_SOLID_MAX_SPEED or more, a free body
 *         lighter than 1.2 times the fluid it displaces);
 *         ::ACM_ERR_LIMIT (more than max_samples samples);
 *         ::ACM_ERR_NO_MEMORY, ::ACM_ERR_DEVICE_MEMORY, ::ACM_ERR_DEVICE.
 *         On failure the domain is unchanged.
 * @since 1.1
 */
ACM_API acm_status acm_solid_create(acm_solid **out, acm_domain *domain,
                                    const acm_solid_options *opts);

/**
 * Remove a solid from its domain and free it. NULL is a harmless no-op.
 * @since 1.1
 */
ACM_API void acm_solid_destroy(acm_solid *solid);

/** Message of the last failed call on @p solid, or "" if none. @since 1.1 */
ACM_API const char *acm_solid_last_error(const acm_solid *solid);

/** Pose and velocities of a solid; see acm_solid_get_state(). */
typedef struct acm_solid_state {
    uint32_t version;            /**< set by the caller: ::ACM_SOLID_STATE_VERSION */
    double position[3];          /**< centre of mass, cells */
    double orientation[4];       /**< unit quaternion w, x, y, z (body -> world) */
    double velocity[3];          /**< of the centre of mass, cells per step */
    double angular_velocity[3];  /**< world frame, radians per step */
} acm_solid_state;

/** Current version of ::acm_solid_state. */
#define ACM_SOLID_STATE_VERSION 1

/**
 * Current pose and velocities (those the next step will use).
 * @param solid      the solid
 * @param[out] state receives the state; set state->version first
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION, device errors
 * @since 1.1
 */
ACM_API acm_status acm_solid_get_state(acm_solid *solid, acm_solid_state *state);

/**
 * Set the pose and velocities used from the next step on: teleport a solid,
 * drive it frame by frame, or launch a free body. The orientation is
 * normalised. A static solid accepts a new pose but no velocity.
 *
 * @param solid  the solid
 * @param state  the new state (state->version set)
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_OUT_OF_RANGE (non-finite values, a quaternion far from unit
 *         length, a surface speed of ::ACM_SOLID_MAX_SPEED or more, a non-zero
 *         velocity for a static solid, a pose outside the domain along a
 *         non-periodic axis); on failure nothing changes
 * @since 1.1
 */
ACM_API acm_status acm_solid_set_state(acm_solid *solid, const acm_solid_state *state);

/**
 * Change how a solid moves (e.g. release a prescribed body as a free one).
 * Switching to ::ACM_MOTION_STATIC sets the velocities to zero.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_INVALID_ARG (FREE for a solid created without mass properties)
 * @since 1.1
 */
ACM_API acm_status acm_solid_set_motion(acm_solid *solid, acm_motion motion);

/**
 * Loads applied to a free body every step in addition to the fluid and
 * gravity (world frame; torque about the centre of mass). Default zero; a
 * NULL @p force or @p torque stands for zero (@since 1.6; before, NULL
 * was refused).
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER (solid), ::ACM_ERR_OUT_OF_RANGE (non-finite)
 * @since 1.1
 */
ACM_API acm_status acm_solid_set_load(acm_solid *solid, const double force[3],
                                      const double torque[3]);

/**
 * Hydrodynamic force and torque the fluid exerted on the solid in the last
 * step: F = -sum_l G_l dV_l and T = -sum_l (X_l - x_c) x G_l dV_l over its
 * samples (spec 9.1; exactly the reaction of the force spread into the fluid).
 * Zero before the first step.
 *
 * @param solid        the solid
 * @param[out] force   3 values, or NULL
 * @param[out] torque  3 values about the centre of mass, or NULL
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER (both NULL), device errors
 * @since 1.1
 */
ACM_API acm_status acm_solid_get_force(acm_solid *solid, double force[3], double torque[3]);

/** Description of a solid; see acm_solid_get_info(). */
typedef struct acm_solid_info {
    uint32_t version;        /**< set by the caller: ::ACM_SOLID_INFO_VERSION */
    uint64_t sample_count;   /**< surface samples */
    double area;             /**< surface area, cells^2 (sum of the sample areas) */
    double sample_spacing;   /**< smallest distance between two samples, cells (0 for
                                  caller samples) */
    acm_motion motion;       /**< current motion */
    double volume;           /**< displaced volume (0 if unknown) */
    double mass;             /**< mass (0 unless it can move freely) */
    double inertia[6];       /**< body-frame inertia about the centre of mass */
    double ib_alpha;         /**< penalty gain */
    int64_t resorts;         /**< times the samples were re-sorted into Morton-block order */
} acm_solid_info;

/** Current version of ::acm_solid_info. */
#define ACM_SOLID_INFO_VERSION 1

/**
 * Describe a solid.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.1
 */
ACM_API acm_status acm_solid_get_info(acm_solid *solid, acm_solid_info *info);

/**
 * Copy the current world positions of the samples (3 per sample, in the
 * solid's storage order, which follows the Morton-block layout).
 * @param solid  the solid
 * @param dst    3 * count doubles
 * @param count  must equal ::acm_solid_info::sample_count
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE, device errors
 * @since 1.1
 */
ACM_API acm_status acm_solid_get_samples(acm_solid *solid, double *dst, size_t count);

/**
 * Whether a world point lies inside the solid (ray parity against the
 * solid's closed mesh in its current pose).
 * @param solid       the solid
 * @param point       world coordinates, cells
 * @param[out] inside receives 1 (inside) or 0
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE (non-finite point),
 *         ::ACM_ERR_UNSUPPORTED (made from caller samples, or from a mesh that is not closed)
 * @since 1.1
 */
ACM_API acm_status acm_solid_is_inside(acm_solid *solid, const double point[3], int *inside);

/**
 * Occupancy of the solid on its domain's grid, for visualisation: one byte per
 * cell (x fastest), set to 1 where the cell centre lies inside the solid and
 * left unchanged elsewhere, so that the calls of several solids combine into
 * one field. Periodic axes wrap.
 * @param solid  the solid
 * @param dst    nx * ny * nz bytes
 * @param bytes  must equal nx * ny * nz
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE, ::ACM_ERR_UNSUPPORTED
 *         (as acm_solid_is_inside())
 * @since 1.1
 */
ACM_API acm_status acm_solid_mark_occupancy(acm_solid *solid, uint8_t *dst, size_t bytes);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_SOLID_H */
