/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_domain.h
 * @defgroup domain Fluid domain
 * @{
 *
 * An ::acm_domain is a box of nx x ny x nz lattice cells holding a D3Q27
 * lattice Boltzmann fluid. Create it from an ::acm_domain_options, set the
 * boundary condition of each face, optionally a body force, advance it with
 * acm_step(), and read its fields back.
 *
 * ### Units
 * Everything is in lattice units: cell size 1, time step 1, reference density
 * 1. The kinematic viscosity is nu = (tau - 1/2) / 3. Keep speeds below about
 * 0.1 (Mach 0.17); see docs/physics.md for converting physical units.
 *
 * ### Field ordering
 * Cell (x, y, z) has the linear index `x + nx * (y + ny * z)` (x fastest).
 * Scalar fields hold one value per cell; vector fields hold the components
 * (x, y, z) of a cell next to each other; ::ACM_FIELD_POPULATIONS holds 27
 * values per cell in the velocity order of docs/physics.md (rest, 6 faces,
 * 12 edges, 8 corners, opposite directions adjacent).
 *
 * ### What the fields mean
 * Between steps the domain holds the populations f_i(x, t) after streaming.
 * Density is rho = sum f_i; velocity is u = (sum f_i c_i + F/2) / rho with F
 * the external force density of the cell (the "half-force" velocity that
 * enters the collision).
 *
 * ### Errors
 * Every call validates its arguments and returns a specific ::acm_status;
 * acm_domain_last_error() then describes the failure. A diverged simulation
 * (NaN, a density <= 0 or a speed above acm_domain_options::max_speed) makes
 * acm_step() return ::ACM_ERR_DIVERGED; the state is kept as found and further
 * steps return ::ACM_ERR_BAD_STATE until it is re-initialised. Both messages
 * name the same step: the one during which the state went bad, counting from
 * 1 = the first step after the last initialisation.
 *
 * ### Thread-safety
 * Different domains are independent: threads may each use their own domains
 * at the same time (a domain's results do not depend on what other threads
 * do). One domain takes one call at a time, queries included. This is
 * checked: while a thread is inside acm_step(), acm_domain_autotune() or
 * any other acm_domain_* call on a domain (all but acm_domain_create(),
 * acm_domain_destroy() and acm_domain_last_error()), such a call from
 * another thread returns ::ACM_ERR_BAD_STATE at once and does nothing;
 * acm_domain_last_error() on the refused thread then says "in use by another
 * thread" (@since 1.3). Nothing blocks. Calls nest on one thread; what the
 * divergence and autotuner callbacks may call on their domain is checked as
 * docs/api.md, "Callbacks", says (@since 1.6). A domain may move
 * between threads: a call sees everything the previous call, on whatever
 * thread, did. Not checked: acm_domain_destroy() while another thread may
 * still call the domain, and the solid, smoke and CUDA calls of a domain in
 * use by another thread (docs/api.md, "Threads").
 */
#ifndef ACMLBM_ACM_DOMAIN_H
#define ACMLBM_ACM_DOMAIN_H

#include "acm_common.h" /* ACM_API, acm_status, enums */
#include "acm_layout.h" /* acm_layout */

ACM_BEGIN_DECLS

/** Opaque fluid domain. */
typedef struct acm_domain acm_domain;

/** Fields that can be read (and some written) as caller arrays. */
typedef enum acm_field {
    ACM_FIELD_DENSITY = 1,    /**< rho, 1 value per cell (read, or write via acm_domain_init_fields()) */
    ACM_FIELD_VELOCITY = 2,   /**< u, 3 values per cell (read) */
    ACM_FIELD_FORCE = 3,      /**< external force density per cell, 3 values (read/write) */
    ACM_FIELD_POPULATIONS = 4 /**< f_i after streaming, 27 values per cell (read/write; checkpoints) */
} acm_field;

/** Integer tunables of a domain; the numbers are stable. */
typedef enum acm_param {
    /** CPU worker threads; 0 = the OpenMP default. Default 0. */
    ACM_PARAM_THREADS = 1,
    /** CUDA backend: steps between divergence checks inside one acm_step() call
     *  of a domain with immersed solids or smoke, or of slabs over MPI ranks (a
     *  check is always made at its end; each check waits for the device). With 1,
     *  the default, a diverged domain keeps the state before the failing step, as
     *  on the CPU, which checks every step whatever this value. A domain of the
     *  fluid alone on one GPU checks once, at the end of the call, whatever this
     *  value, and keeps the state before the failing step all the same: its
     *  kernels leave the state alone once a step diverged (since 1.7). So do GPU
     *  slabs of the fluid alone in one process, whose message names the same step
     *  (since 1.8; the other slabs have taken the later steps). */
    ACM_PARAM_DIVERGENCE_INTERVAL = 2,
    /** Multi-direct-forcing iterations m of the immersed boundary (spec 8.5), in
     *  [1, 16]: each one interpolates and spreads once more and divides the slip
     *  at the surface by about 10. Default 1. */
    ACM_PARAM_IB_ITERATIONS = 3,
    /** A domain over several slabs (@ref acm_domain_options.subdomains, acm_mpi.h):
     *  whether a step computes the planes next to the cuts first and exchanges them
     *  while the rest of the step runs. 0: never, the exchange follows the whole step;
     *  1 (the default): where the exchange can run beside the step, over MPI ranks or
     *  between slabs on different GPUs (slabs sharing one GPU only lose by it); 2:
     *  always. The results are bitwise the same. The step splits with two-array
     *  streaming (on CUDA with the fused kernel), otherwise it stays whole. Since 1.5;
     *  ignored by an undivided domain. */
    ACM_PARAM_HALO_OVERLAP = 4
} acm_param;

/* ---------------------------------------------------------------------- */
/** @name Creation options
 * @{ */

/**
 * Options of acm_domain_create(). Initialise with ::ACM_DOMAIN_OPTIONS_INIT
 * or acm_domain_options_init(), then set what you need. Fields are only ever
 * appended; `version` tells the library which fields the caller knows.
 *
 * Exactly one of @ref viscosity and @ref tau must be non-zero.
 */
typedef struct acm_domain_options {
    uint32_t version;       /**< ::ACM_DOMAIN_OPTIONS_VERSION */
    int32_t nx, ny, nz;     /**< grid size in cells, each in [1, 65535] (a periodic axis of 1 cell
                                 makes a 2-D run); >= 3 along an axis with an inlet/outlet face;
                                 nx*ny*nz at most 2^36 cells */
    double viscosity;       /**< kinematic viscosity nu > 0 (lattice units); 0 = use tau */
    double tau;             /**< relaxation time tau > 1/2; 0 = use viscosity */
    acm_collision collision; /**< collision model; fine-tune with acm_domain_set_collision() */
    acm_backend backend;    /**< compute backend */
    int32_t device;         /**< CUDA device ordinal; -1 = device 0 */
    acm_precision precision; /**< population storage precision */
    const acm_layout *layout; /**< memory layout; NULL = backend defaults (copied at creation) */
    double initial_density; /**< uniform initial density (default 1), within the densities the
                                 storage precision holds (acm_domain_init_uniform()) */
    double initial_velocity[3]; /**< uniform initial velocity (default 0) */
    double max_speed;       /**< speed treated as divergence; 0 = default 0.5 */
    char *error_buffer;     /**< optional: receives the message if creation fails */
    size_t error_buffer_size; /**< size of error_buffer in bytes */
    /** Slabs along z stepped in this process (version 2, @since 1.4): 0 or 1 = one
     *  undivided domain; n >= 2 splits z into n slabs of at least 2 planes each,
     *  which step together and give bitwise the populations of one undivided domain
     *  (docs/multi-gpu.md). Every call works as on an undivided domain; immersed
     *  solids are not supported yet (::ACM_ERR_UNSUPPORTED). */
    int32_t subdomains;
    /** CUDA device of each slab (@ref subdomains entries; a device may repeat), or
     *  NULL for all on @ref device. The CPU backend ignores it (version 2). */
    const int32_t *devices;
} acm_domain_options;

/** Current version of ::acm_domain_options. */
#define ACM_DOMAIN_OPTIONS_VERSION 2

/** Static initialiser with the defaults (grid size and viscosity unset). */
#define ACM_DOMAIN_OPTIONS_INIT                                                             \
    {                                                                                       \
        ACM_DOMAIN_OPTIONS_VERSION, 0, 0, 0, 0.0, 0.0, ACM_COLLISION_DEFAULT,               \
            ACM_BACKEND_AUTO, -1, ACM_PRECISION_DEFAULT, NULL, 1.0, {0.0, 0.0, 0.0}, 0.0, \
            NULL, 0, 0, NULL                                                                \
    }

/**
 * Fill @p opts with the defaults of ::ACM_DOMAIN_OPTIONS_INIT for @p version.
 *
 * @param[out] opts    options to initialise
 * @param version      ::ACM_DOMAIN_OPTIONS_VERSION of the caller's headers
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.0
 */
ACM_API acm_status acm_domain_options_init(acm_domain_options *opts, uint32_t version);

/**
 * Parameters of the collision model (docs/physics.md, "Collision"). Rates are
 * relaxation rates omega = 1/tau in (0, 2).
 */
typedef struct acm_collision_options {
    uint32_t version;            /**< ::ACM_COLLISION_OPTIONS_VERSION */
    acm_collision model;         /**< model; ::ACM_COLLISION_DEFAULT = ACM_LI2018 */
    double high_order_rate;      /**< CM/RM-MRT: rate of the moments of order 3 to 6 (default 1: De Rosis) */
    double bulk_rate;            /**< CM/RM-MRT: rate of the trace moment (default 1) */
    int32_t bulk_follows_high_order; /**< CM/RM-MRT: 1 = trace uses high_order_rate (default 0;
                                      0 or 1, others are refused) */
    int32_t safety_net;          /**< ACM modes (0 or 1): 1 = relax the orders 3-6 as central Hermite moments
                                      (decoupled from the shear), clamp the adaptive rates to
                                      [1, max_high_order_rate], hold them at 1 in the cells
                                      next to a non-periodic face,
                                      and redo a cell with rates 1 when a population falls below
                                      0.3 of its equilibrium, relaxing it further towards
                                      equilibrium if still needed (our addition, not from the
                                      papers; default 1) */
    double max_high_order_rate;  /**< ACM modes: clamp of the safety net (default 1.95) */
    double li2018_nu0[4];        /**< ACM_LI2018: base artificial viscosity of orders 3, 4, 5, 6
                                      (default 0.0005, 0.0007, 0.0009, 0.001) */
    double li2020_theta[4];      /**< ACM_LI2020: regression coefficients for (rho, |j|, |Pi|, 1)
                                      (default 0.0003, -0.00775, 0.00016, 0.0087) */
    double li2020_tau0;          /**< ACM_LI2020: initial and fallback tau* (default 0.005) */
} acm_collision_options;

/** Current version of ::acm_collision_options. */
#define ACM_COLLISION_OPTIONS_VERSION 1

/** Static initialiser with the defaults. */
#define ACM_COLLISION_OPTIONS_INIT                                                         \
    {                                                                                      \
        ACM_COLLISION_OPTIONS_VERSION, ACM_COLLISION_DEFAULT, 1.0, 1.0, 0, 1, 1.95,        \
            {0.0005, 0.0007, 0.0009, 0.001}, {0.0003, -0.00775, 0.00016, 0.0087}, 0.005 \
    }

/**
 * Fill @p opts with the defaults of ::ACM_COLLISION_OPTIONS_INIT.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.0
 */
ACM_API acm_status acm_collision_options_init(acm_collision_options *opts, uint32_t version);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Lifecycle
 * @{ */

/**
 * Create a domain: validates @p opts, allocates the populations on the chosen
 * backend and initialises them to equilibrium at the initial density and
 * velocity. All faces start periodic; no body force.
 *
 * @param[out] out receives the domain on success (untouched on failure)
 * @param opts     creation options
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_OUT_OF_RANGE (grid size, viscosity/tau, density, speed);
 *         ::ACM_ERR_INVALID_ARG (both or neither of viscosity and tau);
 *         ::ACM_ERR_BAD_ENUM; ::ACM_ERR_NOT_BUILT (CUDA requested but not
 *         compiled in, FP16 on the CPU); ::ACM_ERR_NO_DEVICE;
 *         ::ACM_ERR_NO_MEMORY; ::ACM_ERR_DEVICE_MEMORY.
 *         On failure the message is written to opts->error_buffer if set.
 * @note On the CPU the populations are compared with the memory the system
 *       can actually give before they are allocated: MemAvailable + SwapFree
 *       of /proc/meminfo (without it, the free physical pages), capped by the
 *       process's cgroup v2 limit (memory.max - memory.current) where one is
 *       set. A domain that needs more fails at once with ::ACM_ERR_NO_MEMORY
 *       and a message giving both sizes, instead of being granted by Linux's
 *       overcommit and the process being killed while the memory is filled.
 *       acm_domain_set_layout() applies the same rule.
 * @since 1.0
 */
ACM_API acm_status acm_domain_create(acm_domain **out, const acm_domain_options *opts);

/**
 * Create a domain over the ranks of an MPI communicator (collective; acm_mpi.h
 * says which calls are collective then, and has acm_domain_create_mpi(), which
 * takes the MPI_Comm by value).
 *
 * @param[out] out      the domain (NULL on failure)
 * @param opts          the same options on every rank but for `device`;
 *                      `subdomains` must be 0 or 1
 * @param mpi_comm      address of an MPI_Comm (the library duplicates it)
 * @return the same status on every rank: ::ACM_OK, ::ACM_ERR_NOT_BUILT (no MPI
 *         in this build), ::ACM_ERR_BAD_STATE (MPI not initialised), or any
 *         status of acm_domain_create() on any rank
 * @since 1.4
 */
ACM_API acm_status acm_domain_create_on_comm(acm_domain **out, const acm_domain_options *opts,
                                             const void *mpi_comm);

/**
 * Destroy a domain and free all its host and device memory. NULL is a
 * harmless no-op. Called from the divergence or the autotuner's progress
 * callback, the destroy is deferred until the call that ran the callback
 * returns (docs/api.md, "Callbacks"; @since 1.6).
 * @since 1.0
 */
ACM_API void acm_domain_destroy(acm_domain *domain);

/**
 * Message describing the last failed call on @p domain, or "" if none. Valid
 * until the next call on the domain.
 * @note Thread-safety: call it from the thread whose call failed. On a thread
 *       whose call was refused because another thread was using the domain
 *       (::ACM_ERR_BAD_STATE), it gives that reason without reading the
 *       domain, until this thread's next call on the domain is let in.
 * @since 1.0
 */
ACM_API const char *acm_domain_last_error(const acm_domain *domain);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Time stepping
 * @{ */

/**
 * Advance the domain by @p nsteps time steps (stream, collide, apply the face
 * conditions). Synchronous: on return the new state is complete.
 *
 * @param domain the domain
 * @param nsteps number of steps, >= 0
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_OUT_OF_RANGE (negative
 *         nsteps); ::ACM_ERR_INVALID_ARG (an axis with only one periodic
 *         face; a grid too thin for its inlet/outlet faces);
 *         ::ACM_ERR_DIVERGED (NaN, a density <= 0 or a speed above
 *         max_speed; the message names the step, counted from 1 after the
 *         last initialisation, and the cell);
 *         ::ACM_ERR_BAD_STATE (stepping a diverged domain; names that step again;
 *         or another thread is inside a call on the domain, as for every
 *         acm_domain_* call: see "Thread-safety" above).
 * @since 1.0
 */
ACM_API acm_status acm_step(acm_domain *domain, int64_t nsteps);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Divergence policy
 * What acm_step() does when the state diverges (docs/reliability.md,
 * "Divergence"). By default it stops: ::ACM_ERR_DIVERGED, the state kept as
 * found, further steps refused until the domain is re-initialised. With
 * ::ACM_DIVERGENCE_REWIND the domain keeps an in-memory copy of its state,
 * taken every `snapshot_interval` steps, and a diverged step puts it back:
 * acm_step() still returns ::ACM_ERR_DIVERGED (its message says to which
 * step it rewound), and the domain steps again from there, for example
 * after the caller raised the viscosity. Either way an optional callback
 * hears of it before acm_step() returns.
 * @{ */

/** What a divergence leads to. The numbers are stable. @since 1.3 */
typedef enum acm_divergence_action {
    /** Keep the diverged state; refuse to step until re-initialised (default). */
    ACM_DIVERGENCE_STOP = 0,
    /** Put back the last snapshot (the copy costs as much memory as the
     *  populations, force field and solids; smoke particles are not copied and
     *  go on from where they are). */
    ACM_DIVERGENCE_REWIND = 1
} acm_divergence_action;

/** A divergence, as the callback hears of it. @since 1.3 */
typedef struct acm_divergence_event {
    int64_t step;          /**< the step during which the state went bad (1 = the first step
                                after the last initialisation), as the message names it */
    int64_t rewound_to;    /**< ::ACM_DIVERGENCE_REWIND: the step the domain is back at;
                                -1 when it stopped */
    const char *message;   /**< acm_step()'s message (valid during the call) */
} acm_divergence_event;

/**
 * Called once per divergence, on the thread inside acm_step(), after the
 * policy's action; it may query the domain (with ::ACM_DIVERGENCE_STOP, the
 * diverged state), change its settings, save or export it. Stepping,
 * re-initialising or re-laying it, or creating solids or smokes, is refused
 * with ::ACM_ERR_BAD_STATE (@since 1.6; before, a step there moved a rewound
 * state on); a destroy of the domain, a solid or a smoke is carried out when
 * acm_step() returns (docs/api.md, "Callbacks"). acm_step() returns its own
 * message whatever the callback called.
 */
typedef void (*acm_divergence_fn)(acm_domain *domain, const acm_divergence_event *event,
                                  void *user_data);

/** Divergence policy of a domain. Fields are only ever appended. @since 1.3 */
typedef struct acm_divergence_policy {
    uint32_t version;           /**< ::ACM_DIVERGENCE_POLICY_VERSION */
    acm_divergence_action action; /**< default ::ACM_DIVERGENCE_STOP */
    int64_t snapshot_interval;  /**< ::ACM_DIVERGENCE_REWIND: steps between snapshots, in
                                     [1, 2^40]; 0 = default 1000. A longer acm_step() call is
                                     cut into pieces of this many steps. */
    acm_divergence_fn callback; /**< or NULL */
    void *user_data;            /**< passed to callback */
} acm_divergence_policy;

/** Current version of ::acm_divergence_policy. @since 1.3 */
#define ACM_DIVERGENCE_POLICY_VERSION 1

/** Static initialiser: stop, no callback. @since 1.3 */
#define ACM_DIVERGENCE_POLICY_INIT {ACM_DIVERGENCE_POLICY_VERSION, ACM_DIVERGENCE_STOP, 0, NULL, NULL}

/**
 * Fill @p policy with the defaults of ::ACM_DIVERGENCE_POLICY_INIT.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_divergence_policy_init(acm_divergence_policy *policy, uint32_t version);

/**
 * Set the divergence policy. ::ACM_DIVERGENCE_REWIND takes the first snapshot
 * at once, so that a domain without the memory for it is told now; the
 * snapshot is taken again after a re-initialisation, a change of layout or of
 * the set of solids, and every `snapshot_interval` steps.
 *
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_BAD_ENUM (action); ::ACM_ERR_OUT_OF_RANGE
 *         (snapshot_interval); ::ACM_ERR_BAD_STATE (the domain has diverged:
 *         re-initialise it first); ::ACM_ERR_DIVERGED (a step enqueued by
 *         acm_cuda_step_async() diverged, found by the check the snapshot
 *         waits for); ::ACM_ERR_NO_MEMORY or ::ACM_ERR_DEVICE_MEMORY (no room
 *         for the snapshot); the policy is left as it was on any error
 * @since 1.3
 */
ACM_API acm_status acm_domain_set_divergence_policy(acm_domain *domain,
                                                    const acm_divergence_policy *policy);

/**
 * Read the divergence policy (@p policy->version set by the caller).
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_domain_get_divergence_policy(acm_domain *domain,
                                                    acm_divergence_policy *policy);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Configuration (allowed between steps)
 * @{ */

/**
 * Set the boundary condition of one face.
 *
 * @param domain   the domain
 * @param face     which face
 * @param type     condition
 * @param velocity wall velocity (WALL; must be tangential to the face) or inlet
 *                 velocity (INLET); NULL means zero; ignored for PERIODIC and
 *                 OUTLET; NULL or zero for SLIP. Speeds must stay below
 *                 acm_domain_options::max_speed.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_OUT_OF_RANGE (non-finite or too fast; normal wall velocity;
 *         any velocity on a slip wall)
 * @note Opposite faces must both be periodic or both not; this is checked by
 *       acm_step(), so the faces can be changed one at a time.
 * @since 1.0
 */
ACM_API acm_status acm_domain_set_face(acm_domain *domain, acm_face face, acm_boundary type,
                                       const double velocity[3]);

/**
 * Values that vary over the cells of an ::ACM_BOUNDARY_INLET or ::ACM_BOUNDARY_OUTLET face
 * (docs/physics.md, "Domain faces"): an inlet's velocity, 3 values a cell (a profile in
 * place of the face's one velocity), or an outlet's density, 1 value a cell (a pressure
 * boundary: c_s^2 rho; 1 everywhere is the outlet of old). The cells of the face in the
 * order of its two other axes, the lower one fastest: an x face (y, z) at y + ny z, a y
 * face (x, z) at x + nx z, a z face (x, y) at x + nx y. The values are copied: call again
 * between steps to change them (a pulsatile inlet; a GPU keeps its copy's memory while the
 * face keeps values). NULL (and count 0) goes back to the uniform rule;
 * acm_domain_set_face() drops them.
 *
 * @param domain the domain
 * @param face   which face (its type set first: INLET or OUTLET)
 * @param dtype  ::ACM_DTYPE_FLOAT32 or ::ACM_DTYPE_FLOAT64
 * @param values 3 or 1 per face cell, or NULL
 * @param count  number of values: 3 or 1 times the face's cells (0 with NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM, ::ACM_ERR_INVALID_ARG (a
 *         face of another type; a wrong count), ::ACM_ERR_OUT_OF_RANGE (a velocity not finite
 *         or not slower than max_speed, a density not finite or not in (0, 10]),
 *         ::ACM_ERR_NO_MEMORY, device errors. On failure nothing changes.
 * @since 1.8
 */
ACM_API acm_status acm_domain_set_face_values(acm_domain *domain, acm_face face, acm_dtype dtype,
                                              const void *values, size_t count);

/**
 * Gives an inlet's or outlet's values for one step (acm_domain_set_face_function): fill
 * @p values, @p count of them in the order and units of acm_domain_set_face_values(), for
 * step @p step (the step about to be taken: acm_domain_stats::step + 1). Called on the thread
 * inside acm_step() before every step, with the domain marked as in a callback: it may query
 * the domain, not step, re-initialise or re-lay it (::ACM_ERR_BAD_STATE). Return 0, or
 * nonzero to stop acm_step() with ::ACM_ERR_CANCELLED before that step.
 */
typedef int (*acm_face_values_fn)(acm_domain *domain, acm_face face, int64_t step,
                                  double *values, size_t count, void *user_data);

/**
 * Values of an ::ACM_BOUNDARY_INLET or ::ACM_BOUNDARY_OUTLET face that change every step: a
 * pulsatile inflow, a gusting wind. Before every step acm_step() asks @p fn for the face's
 * values and sets them as acm_domain_set_face_values() does (checked the same way: a bad value
 * stops the step with that call's status and message, the state left after the last good
 * step). The values stay after the function is removed. A domain with a face function steps
 * one step at a time (on the GPU: no CUDA graphs). Over MPI each rank calls its own. Not kept
 * by checkpoints (the values last set are); acm_domain_set_face() drops it.
 *
 * @param domain    the domain
 * @param face      which face (its type set first: INLET or OUTLET)
 * @param fn        the function, or NULL to remove it
 * @param user_data passed to @p fn
 * @return ::ACM_OK, ::ACM_ERR_BAD_ENUM, ::ACM_ERR_INVALID_ARG (a face of another type),
 *         ::ACM_ERR_NO_MEMORY. On failure nothing changes.
 * @since 1.9
 */
ACM_API acm_status acm_domain_set_face_function(acm_domain *domain, acm_face face,
                                                acm_face_values_fn fn, void *user_data);

/**
 * An absorbing layer in front of an ::ACM_BOUNDARY_INLET or ::ACM_BOUNDARY_OUTLET face: the
 * non-reflecting outlet (docs/physics.md, "The absorbing layer"). After each collision the
 * `cells` cells next to the face's layer relax their populations towards the equilibrium of
 * a reference state, f <- f + sigma (f^eq(density, velocity) - f), with sigma = strength
 * ((cells + 1 - d) / cells)^2 at distance d from the face: sound and eddies fade before they
 * reach the face instead of being sent back. The layer imposes the reference state near the
 * face: give the free stream (a wind tunnel's inflow velocity), and leave the cells of
 * interest outside it. 16 cells at strength 0.5 send back under 0.01 % of a normal sound
 * wave's energy (bench/acm-bench-outlet); the plain outlet sends back 98.6 %.
 * acm_domain_set_face() drops it.
 *
 * @param domain   the domain
 * @param face     which face (its type set first: INLET or OUTLET)
 * @param cells    depth of the layer in cells, 0 to remove it (the other arguments are
 *                 then ignored); with the opposite face's, at most the axis's cells - 2
 * @param strength sigma next to the face, in (0, 1]; 0.5 is a good start
 * @param density  reference density in (0, 10]; 0 means 1
 * @param velocity reference velocity; NULL means zero
 * @return ::ACM_OK, ::ACM_ERR_BAD_ENUM, ::ACM_ERR_INVALID_ARG (a face of another type),
 *         ::ACM_ERR_OUT_OF_RANGE (cells, strength, density or a velocity not finite or not
 *         slower than max_speed). On failure nothing changes.
 * @since 1.9
 */
ACM_API acm_status acm_domain_set_face_absorber(acm_domain *domain, acm_face face, int32_t cells,
                                                double strength, double density,
                                                const double velocity[3]);

/**
 * Read a face's absorbing layer (acm_domain_set_face_absorber).
 *
 * @param domain         the domain
 * @param face           which face
 * @param[out] cells     receives its depth, 0 without one
 * @param[out] strength  receives its strength (may be NULL)
 * @param[out] density   receives its reference density (may be NULL)
 * @param[out] velocity  receives its reference velocity (may be NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.9
 */
ACM_API acm_status acm_domain_get_face_absorber(acm_domain *domain, acm_face face,
                                                int32_t *cells, double *strength,
                                                double *density, double velocity[3]);

/**
 * Read the boundary condition of one face.
 *
 * @param domain        the domain
 * @param face          which face
 * @param[out] type     receives the condition
 * @param[out] velocity receives its velocity (may be NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_face(acm_domain *domain, acm_face face, acm_boundary *type,
                                       double velocity[3]);

/**
 * Set the uniform external body-force density (force per unit volume), added
 * to the per-cell force field if one is set.
 *
 * @param domain the domain
 * @param force  (Fx, Fy, Fz), finite
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE
 * @since 1.0
 */
ACM_API acm_status acm_domain_set_body_force(acm_domain *domain, const double force[3]);

/**
 * Change the collision model or its parameters.
 *
 * @param domain the domain
 * @param opts   options (see ::acm_collision_options)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION,
 *         ::ACM_ERR_BAD_ENUM, ::ACM_ERR_OUT_OF_RANGE (a rate outside (0, 2),
 *         negative or non-finite viscosities)
 * @since 1.0
 */
ACM_API acm_status acm_domain_set_collision(acm_domain *domain, const acm_collision_options *opts);

/**
 * Read the collision options in effect (model resolved: never DEFAULT).
 *
 * @param domain    the domain
 * @param[out] opts receives the options; set opts->version first
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_collision(acm_domain *domain, acm_collision_options *opts);

/**
 * Set an integer tunable.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_OUT_OF_RANGE (see acm_param_bounds())
 * @since 1.0
 */
ACM_API acm_status acm_domain_set_param(acm_domain *domain, acm_param param, int64_t value);

/**
 * Read an integer tunable.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_param(acm_domain *domain, acm_param param, int64_t *value);

/**
 * Admissible range of a tunable.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_param_bounds(acm_param param, int64_t *min, int64_t *max);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Initial conditions
 * Both calls set the populations to the equilibrium of the given density and
 * velocity, reset the step counter and clear a diverged state.
 * @{ */

/**
 * Uniform state.
 *
 * Densities the storage holds (@since 1.6; others are ::ACM_ERR_OUT_OF_RANGE,
 * here, in acm_domain_init_fields(), acm_domain_create() and a cell's sum of
 * populations in acm_domain_set_field()): the populations are stored as
 * f_i - w_i, so a density rho keeps a relative precision of about u / rho
 * (u: the storage's unit roundoff); 2^7 u holds it to 1 %, and the same
 * factor above 1 keeps the step's arithmetic far from overflow. FP64:
 * [1.4e-14, 7.0e13]; FP32: [7.6e-6, 1.3e5]; FP16: [1/16, 16].
 *
 * @param domain   the domain
 * @param density  rho > 0, finite, within the densities the storage holds
 * @param velocity u (NULL = 0), each |u| below max_speed
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE
 * @since 1.0
 */
ACM_API acm_status acm_domain_init_uniform(acm_domain *domain, double density,
                                           const double velocity[3]);

/**
 * State from caller arrays (field ordering as in the file comment).
 *
 * @param domain     the domain
 * @param dtype      element type of both arrays
 * @param density    nx*ny*nz densities, or NULL for 1 everywhere
 * @param velocity   3*nx*ny*nz velocity components, or NULL for 0 everywhere
 * @param cell_count must equal nx*ny*nz (guards against a wrong buffer)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER (domain), ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_BUFFER_SIZE, ::ACM_ERR_OUT_OF_RANGE (a density <= 0 or
 *         beyond what the storage holds (acm_domain_init_uniform()), a
 *         non-finite value or a speed above max_speed: the message names the
 *         cell; the domain is unchanged)
 * @since 1.0
 */
ACM_API acm_status acm_domain_init_fields(acm_domain *domain, acm_dtype dtype,
                                          const void *density, const void *velocity,
                                          size_t cell_count);

/** @} */

/* ---------------------------------------------------------------------- */
/** @name Reading and writing fields
 * @{ */

/**
 * Size in bytes of a field for a given element type.
 *
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_domain_field_size(acm_domain *domain, acm_field field, acm_dtype dtype,
                                         size_t *bytes);

/**
 * Copy a field into a caller buffer. Synchronises with the device.
 *
 * @param domain    the domain
 * @param field     which field
 * @param dtype     element type of @p dst
 * @param[out] dst  destination array
 * @param dst_bytes size of @p dst; must equal acm_domain_field_size()
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_BUFFER_SIZE, device errors
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_field(acm_domain *domain, acm_field field, acm_dtype dtype,
                                        void *dst, size_t dst_bytes);

/**
 * Write a field from a caller buffer. Writable: ::ACM_FIELD_FORCE (per-cell
 * external force; @p src NULL with @p src_bytes 0 removes the field) and
 * ::ACM_FIELD_POPULATIONS (restores a state read with acm_domain_get_field()).
 *
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM,
 *         ::ACM_ERR_INVALID_ARG (a read-only field), ::ACM_ERR_BUFFER_SIZE,
 *         ::ACM_ERR_OUT_OF_RANGE (a non-finite value, or populations of a cell
 *         whose density, their sum, is <= 0 or not finite: the message names
 *         the first such cell; the domain is unchanged)
 * @since 1.0
 */
ACM_API acm_status acm_domain_set_field(acm_domain *domain, acm_field field, acm_dtype dtype,
                                        const void *src, size_t src_bytes);

/**
 * Density and velocity of one cell (a cheap probe).
 *
 * @param domain        the domain
 * @param x,y,z         cell coordinates inside the grid
 * @param[out] density  receives rho (may be NULL)
 * @param[out] velocity receives u (may be NULL)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE
 * @since 1.0
 */
ACM_API acm_status acm_domain_probe(acm_domain *domain, int32_t x, int32_t y, int32_t z,
                                    double *density, double velocity[3]);

/**
 * The fluid velocity at arbitrary points, interpolated trilinearly between
 * cell centres (cell (i, j, k) at the point (i, j, k)): the rule that moves
 * smoke particles (docs/smoke.md). Periodic axes wrap; along the others a
 * point is clamped to the outermost centres. On a GPU only the points and
 * their velocities cross the bus, never a whole field: the call for wind on
 * a few objects each frame (it waits for the domain's stream).
 *
 * @param domain   the domain
 * @param points   3 coordinates per point, lattice units, finite
 * @param count    number of points, in [1, 2^24]
 * @param velocity receives 3 values per point
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE (count, a
 *         point not finite), ::ACM_ERR_NO_MEMORY, device errors
 * @since 1.3
 */
ACM_API acm_status acm_domain_sample_velocity(acm_domain *domain, const double *points,
                                              size_t count, double *velocity);

/**
 * acm_domain_sample_velocity() without waiting: the read is queued behind the
 * steps enqueued so far and collected by acm_domain_sample_velocity_end().
 * On a GPU it goes on the domain's stream after acm_cuda_step_async()'s
 * steps (one kernel: the points and the velocities cross the bus in pinned
 * host memory, no copy call), so that a frame can enqueue its steps and the
 * read of its wind together and collect both later with one wait; on the
 * CPU (and on a decomposed domain) it is made at once and kept. It sees the
 * state after the steps enqueued before it, not those after. The points are
 * copied: the array may be reused at once. One read at a time per domain.
 *
 * @param domain the domain
 * @param points 3 coordinates per point, lattice units, finite
 * @param count  number of points, in [1, 2^24]
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE (count, a
 *         point not finite), ::ACM_ERR_BAD_STATE (a read begun and not ended;
 *         on a GPU also while the domain's stream is being captured into a
 *         graph), ::ACM_ERR_NO_MEMORY, device errors
 * @since 1.13
 */
ACM_API acm_status acm_domain_sample_velocity_begin(acm_domain *domain, const double *points,
                                                    size_t count);

/**
 * The velocities of the read begun by acm_domain_sample_velocity_begin(), 3
 * per point, the same values acm_domain_sample_velocity() gives on the same
 * state. Waits for the read only (on a GPU, not for steps enqueued after
 * it). The read ends here, also when the device failed; a call refused for
 * its arguments leaves it pending.
 *
 * @param domain   the domain
 * @param velocity receives 3 values per point
 * @param count    the begun read's number of points
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_STATE (no read
 *         begun), ::ACM_ERR_OUT_OF_RANGE (count is not the begun read's),
 *         device errors
 * @since 1.13
 */
ACM_API acm_status acm_domain_sample_velocity_end(acm_domain *domain, double *velocity,
                                                  size_t count);

/** Global diagnostics; see acm_domain_get_stats(). */
typedef struct acm_domain_stats {
    uint32_t version;            /**< set by the caller: ::ACM_DOMAIN_STATS_VERSION */
    int64_t step;                /**< steps completed since the last initialisation */
    double mass;                 /**< sum of rho over all cells */
    double momentum[3];          /**< sum of rho*u */
    double kinetic_energy;       /**< sum of rho*|u|^2/2 */
    double max_speed;            /**< largest |u| */
    int64_t fallback_cells_last_step; /**< ACM safety-net fallbacks in the last step */
    int64_t fallback_cells_total;     /**< ... since the last initialisation */
} acm_domain_stats;

/** Current version of ::acm_domain_stats. */
#define ACM_DOMAIN_STATS_VERSION 1

/**
 * Compute global diagnostics (a pass over the whole domain; synchronises).
 *
 * @param domain     the domain
 * @param[out] stats receives the values; set stats->version first
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_stats(acm_domain *domain, acm_domain_stats *stats);

/**
 * Re-lay a live domain: run it from now on with @p layout (CSoA group, kernel
 * structure, threads per block, sample order, spreading, streaming, storage
 * precision) **without changing its state**. The populations, the force
 * field, the collision's per-cell state, the last immersed-boundary force, the
 * step counter and the solids (pose, velocities, forces, samples) are carried
 * over: bitwise when the storage precision stays, rounded once to the new
 * precision otherwise (a post-collision state moved from two arrays to in-place
 * streaming and back is exact; the one exception is a physical in-place state
 * moved to two arrays next to a moving wall, which is exact to round-off).
 * A change of the sample order or spreading alone only re-sorts the samples.
 *
 * Costs a copy of the state through host memory (about 250 bytes per cell
 * for a moment) and new device allocations; not for every frame. Pointers
 * from acm_cuda_domain_map_fields() are invalid afterwards; the stream set
 * with acm_cuda_domain_set_stream() is kept.
 *
 * @param domain the domain
 * @param layout the new layout (0 values: the defaults, as at creation;
 *               precision 0: acm_domain_options::precision)
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_NOT_BUILT (FP16 on the
 *         CPU); ::ACM_ERR_NO_MEMORY or ::ACM_ERR_DEVICE_MEMORY when the new
 *         layout does not fit: the domain then runs on with its old layout
 *         and state
 * @since 1.3
 */
ACM_API acm_status acm_domain_set_layout(acm_domain *domain, const acm_layout *layout);

/**
 * The layout a domain runs with, every parameter resolved (no 0 left but
 * those that do not apply: kernel and block size on the CPU).
 *
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER
 * @since 1.3
 */
ACM_API acm_status acm_domain_get_layout(acm_domain *domain, acm_layout *layout);

/** Static description of a domain; see acm_domain_get_info(). */
typedef struct acm_domain_info {
    uint32_t version;        /**< set by the caller: ::ACM_DOMAIN_INFO_VERSION */
    int32_t nx, ny, nz;      /**< grid size */
    acm_backend backend;     /**< backend in use (never AUTO) */
    int32_t device;          /**< CUDA device ordinal, -1 on the CPU */
    acm_precision precision; /**< storage precision (never DEFAULT) */
    acm_collision collision; /**< collision model (never DEFAULT) */
    double viscosity;        /**< kinematic viscosity */
    double tau;              /**< relaxation time 3*nu + 1/2 */
    int64_t csoa_group;      /**< CSoA group size alpha in use */
    acm_kernel kernel;       /**< GPU kernel structure (the CPU reports ::ACM_KERNEL_FUSED) */
    int32_t block_size;      /**< GPU threads per block in use (0 on the CPU) */
    int64_t step;            /**< steps completed since the last initialisation */
    uint64_t memory_bytes;   /**< bytes held for populations and fields */
    /* version 2 (1.2) */
    acm_streaming streaming; /**< population streaming in use (never DEFAULT) @since 1.2 */
    double bytes_per_cell;   /**< memory_bytes / cells: every allocation of the domain,
                                  populations, fields, solids and scratch @since 1.2 */
} acm_domain_info;

/** Current version of ::acm_domain_info (1: up to memory_bytes). */
#define ACM_DOMAIN_INFO_VERSION 2

/**
 * Describe the domain. Does not synchronise.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.0
 */
ACM_API acm_status acm_domain_get_info(acm_domain *domain, acm_domain_info *info);

/**
 * The slabs of a domain split along z (@ref acm_domain_options.subdomains, acm_mpi.h): how
 * many, where they are cut, and what a step costs each by the partitioner's model, in
 * cells' steps: each cell of the slab (its ghost planes too) 1, each immersed sample whose
 * stencil base lies in its planes 2.2 per multi-direct-forcing iteration
 * (docs/multi-gpu.md, "Balance"). The partitioner cuts where those costs are equal when
 * solids are added or removed, and again when moving solids have shifted the load by more
 * than 5 %. An undivided domain is one slab. Does not synchronise.
 * @param capacity entries of `cuts` (at least *nslabs + 1) and of `cost` (at least *nslabs)
 * @param[out] nslabs the number of slabs
 * @param[out] cuts   slab k holds planes [cuts[k], cuts[k + 1]); NULL: not wanted
 * @param[out] cost   each slab's cost; NULL: not wanted
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_OUT_OF_RANGE (capacity too small:
 *         *nslabs is set, nothing else), ::ACM_ERR_NO_MEMORY
 * @since 1.8
 */
ACM_API acm_status acm_domain_get_slabs(acm_domain *domain, int32_t capacity, int32_t *nslabs,
                                        int32_t *cuts, double *cost);

/** @} */

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_DOMAIN_H */
