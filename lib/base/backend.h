/*
 * libacmlbm -- the private backend interface (style guide R15). The public
 * entry points (lib/api/domain.c) validate every argument, then call these. Built
 * into the library, so no ABI version field. An optional op left NULL makes
 * the public call return ACM_ERR_UNSUPPORTED.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BACKEND_H
#define ACMLBM_BACKEND_H

#include "acm_private.h"

ACM_BEGIN_DECLS

struct acm_ib_ft;
struct acm_coupling;
struct acm_state;
struct acm_smoke;
struct acm_smoke_plan;

/* GPU threads per block when the layout leaves it at 0. */
#define ACM_GPU_DEFAULT_BLOCK 128

/* When the fluid part of a step looks for divergence. */
typedef enum acm_check {
    ACM_CHECK_NONE = 0, /* not now (CUDA interop: the caller synchronises) */
    ACM_CHECK_DUE = 1,  /* when the backend's interval has come (the CPU: every step) */
    ACM_CHECK_NOW = 2   /* this step (the last of an acm_step() call) */
} acm_check;

/* Bytes of a peer communicator's id (peer_id; NCCL's takes 128), and the
 * most messages of one exchange (a send and a receive at each end). */
#define ACM_PEER_ID_BYTES 256
#define ACM_PEER_MESSAGES 4

/* How long peer_open waits for the other processes to join: at most
 * `seconds`, and only while give_up(ctx) says no (NULL: never gives up
 * early; the transport's notice that another process failed). */
typedef struct acm_peer_join {
    double seconds;
    bool (*give_up)(void *ctx);
    void *ctx;
} acm_peer_join;

/* One message of a peer exchange: planes [z0, z0 + n) of the slab (its own
 * planes to send, or ghost planes to fill) to or from process `rank`, the
 * slots of acm_moves(dz, i). */
typedef struct acm_peer_msg {
    int32_t rank;
    int32_t z0, n;
    bool send;
    int dz;
} acm_peer_msg;

struct acm_backend_ops {
    const char *name;   /* "cpu", "cuda" */
    acm_backend kind;

    /* Cheap availability check (a CUDA device is present, ...). */
    bool (*probe)(void);

    /* Allocate d->impl and the populations for the validated configuration.
     * The populations are then set by init_equilibrium. */
    acm_status (*domain_init)(acm_domain *d);
    void (*domain_fini)(acm_domain *d);

    /* Populations = equilibrium of the source (values already validated). */
    acm_status (*init_equilibrium)(acm_domain *d, const acm_init_source *src);

    /* The fluid part of one step (spec 3.4 K1 + K3 and the faces): stream,
     * collide with the external and the immersed-boundary force, face layers;
     * update d->step, d->prev and the fallback counters. Detect divergence
     * (the CPU every step; CUDA as `check` says):
     * then set d->diverged and return ACM_ERR_DIVERGED with the message. */
    acm_status (*advance)(acm_domain *d, acm_check check);
    /* Optional: what nsteps advance(d, ACM_CHECK_NONE) would do, for a domain
     * whose steps hold nothing but the fluid (no solids, no smoke), enqueued
     * at less host cost (CUDA: the steps replayed from graphs). A backend that
     * has it keeps the state before a diverged step of the fluid alone until
     * it checks, however many steps later (CUDA: acm_gate), so that acm_step()
     * checks such a domain once, at its end. With `record`, nothing is
     * made: what the steps would record first (CUDA: the graph of their first
     * run) is recorded now (acm_cuda_step_prepare). */
    acm_status (*advance_many)(acm_domain *d, int64_t nsteps, bool record);
    /* Optional, with run_end: the pipeline's unchecked steps of a domain with
     * solids or smoke (no timed faces) in runs that the backend may record
     * once and replay (CUDA: a graph of the run's IB and fluid kernels).
     * run_begin sets *run (1 <= *run <= left) to the steps of the next run; the
     * pipeline then makes them as always (ib_forces, advance, the bodies'
     * moves, the smokes' steps) and calls run_end with their status. A backend that recorded the
     * run without making it puts the host's state back as it was before the
     * run and sets *again: the pipeline makes the same steps again (replayed
     * now). run_end returns the status of the run, or its own error. With
     * `record` (acm_cuda_step_prepare), run_begin sets *run to 0 unless a
     * recording of the next run (in one of its forms) is still missing, and the
     * pipeline makes its steps once, into the recording only, and asks again. */
    acm_status (*run_begin)(acm_domain *d, int64_t left, bool record, int64_t *run);
    acm_status (*run_end)(acm_domain *d, acm_status st, bool *again);
    /* Optional: allocate now what the next advance would allocate (ACM_LI2020's
     * tau*, per-thread buffers), so that a decomposed domain's slabs fail, if at
     * all, before any of them has stepped. */
    acm_status (*prepare)(acm_domain *d);
    /* Optional: the divergence check alone, for steps enqueued with
     * ACM_CHECK_NONE: what advance(d, when) would have checked (a decomposed
     * domain enqueues every slab's step before it waits for any). */
    acm_status (*check)(acm_domain *d, acm_check when);

    /* ---- immersed boundary (spec 8; the order of a step: lib/engine/pipeline.c) ---- */

    /* Take the samples of d->solids (concatenated in that order, each solid's
     * at s->offset) and place them at their bodies' poses; allocate the IB
     * storage. With no solid left, free it. */
    acm_status (*ib_attach)(acm_domain *d);

    /* The IB part of one step (spec 3.4 K2): place the samples of moving
     * solids, compute rho and u* of their support, the penalty forces of the
     * multi-direct-forcing iterations and the force field they spread, and
     * each solid's force and torque (kept for ib_fetch). */
    acm_status (*ib_forces)(acm_domain *d);

    /* The last IB phase's force and torque of every solid into s->force and
     * s->torque. */
    acm_status (*ib_fetch)(acm_domain *d);

    /* The last IB phase's force and torque (acm_ib_ft) of every solid, per
     * plane of [halo[0], nz - halo[1]), from the samples whose base plane
     * (acm_ib_owner_plane) is that plane, in sample order: element
     * (solid * planes + plane) of out. A backend may instead put the sum over
     * all its planes, in an order fixed run to run, in each solid's first
     * plane and zeros in the others (the GPU's block sums). Optional: a
     * decomposed domain's slabs need it (their parent folds the planes of all
     * in plane order). */
    acm_status (*ib_plane_forces)(acm_domain *d, struct acm_ib_ft *out);

    /* ib_forces in two halves, for a decomposed domain's slabs (optional):
     * ib_begin up to the first interpolation, with each free body's coupling
     * sums per plane of [halo[0], nz - halo[1]) into out (as ib_plane_forces
     * lays out its planes; NULL: kept); ib_end with the free bodies' velocity
     * changes (6 per solid: dv, dw; NULL without free bodies) to the end. */
    acm_status (*ib_begin)(acm_domain *d, struct acm_coupling *out);
    acm_status (*ib_end)(acm_domain *d, const double *dvdw);

    /* Put the samples of the solids marked resort_due in the Morton-block
     * order at their current pose on the backend's side, keeping their
     * sampling indices and last positions with them (optional: without it
     * lib/ib sorts on the host and attaches again). The host's copies (s->r,
     * s->dv, s->origin) keep the old order until ib_order hands the new one
     * over. */
    acm_status (*ib_resort)(acm_domain *d);
    /* The sampling indices of a solid's samples in the backend's order
     * (count of them into origin); with ib_resort. */
    acm_status (*ib_order)(acm_domain *d, const struct acm_solid *s, uint64_t *origin);

    /* World positions of a solid's samples (3 per sample) as last placed. */
    acm_status (*ib_positions)(acm_domain *d, const struct acm_solid *s, double *dst);

    /* Optional: while d->bodies_on_backend, the backend integrates the free
     * bodies itself (CUDA: in runs of recorded steps) and the host's copies
     * of them (body, placed, sort_x/q, resorts) are stale; ib_home waits for
     * the backend, takes them home and clears the flag. A free body that
     * reached ACM_SOLID_MAX_SPEED meanwhile makes it ACM_ERR_DIVERGED (the
     * domain marked diverged at that step). */
    acm_status (*ib_home)(acm_domain *d);

    /* Optional: d->face_values[face] changed (NULL: the uniform rule); a backend
     * that keeps a copy of them takes it, or fails and keeps its old one. */
    acm_status (*face_values)(acm_domain *d, int face);

    /* Optional: the outcome of host-side work that only this process did (a face
     * function's answer) agreed across the processes of a domain over MPI ranks:
     * the first failing rank's status and message on every rank, so that all go
     * on, or stop, together and no process waits in a collective that another
     * left. Without it, local is the outcome. */
    acm_status (*agree)(acm_domain *d, acm_status local);

    /* Copy a field to a host array of ncells * components elements. */
    acm_status (*get_field)(acm_domain *d, acm_field field, acm_dtype dtype, void *dst);

    /* FORCE (src NULL removes the field) or POPULATIONS; values validated. */
    acm_status (*set_field)(acm_domain *d, acm_field field, acm_dtype dtype, const void *src);

    /* Density and velocity of one cell. */
    acm_status (*probe_cell)(acm_domain *d, int32_t x, int32_t y, int32_t z, double *rho,
                             double u[3]);

    /* Velocity at points, trilinear between cell centres (lib/core/smoke_math.h):
     * the read queued behind the steps enqueued so far (count points, finite,
     * checked; one at a time), and its velocities once it is done (the count
     * begun). Optional, both or neither: without them the 8 cells around each
     * point are read through probe_cell. */
    acm_status (*sample_velocity_begin)(acm_domain *d, const double *points, size_t count);
    acm_status (*sample_velocity_end)(acm_domain *d, double *velocity, size_t count);

    /* Global sums (mass, momentum, energy, max speed) of the current state. */
    acm_status (*stats)(acm_domain *d, acm_domain_stats *out);

    /* ---- re-layout (lib/engine/state.h) ---- */

    /* Copy the backend's state to host memory: the stored populations in
     * canonical order, the force field, LI2020's tau*, the last immersed-
     * boundary force and its support mask, the previous step's reductions.
     * Allocates st's arrays with acm__state_alloc; with `park` a GPU may keep
     * them in its memory instead (acm_state.parked), for a load in the same
     * precision. */
    acm_status (*state_save)(acm_domain *d, struct acm_state *st, bool park);
    /* Load such a state into a freshly initialised backend (domain_init, and
     * ib_attach when the domain has solids, already done), whatever the
     * streaming, CSoA group, kernel structure or precision it was saved with. */
    acm_status (*state_load)(acm_domain *d, const struct acm_state *st);

    /* ---- smoke (optional: without them the particles move on the host with
     * the velocity from get_field; docs/smoke.md) ---- */

    /* Device storage for a smoke's particles (s->dev), and its release. */
    acm_status (*smoke_attach)(acm_domain *d, struct acm_smoke *s);
    void (*smoke_detach)(struct acm_smoke *s);
    /* Before the fluid part of a step (after the IB forces): the next advance
     * also writes the velocity (j + F/2)/rho of the state it starts from, for
     * this step's moves. */
    acm_status (*smoke_velocity)(acm_domain *d);
    /* A smoke's step on the device (lib/core/smoke_math.h): move the live
     * particles, recycle those that left, expired or entered an obstacle,
     * emit the plan's particles into the lowest free slots; counters kept on
     * the device. Enqueued: no synchronisation. */
    acm_status (*smoke_step)(acm_domain *d, struct acm_smoke *s, const struct acm_smoke_plan *p);
    /* s->x, s->age, s->life and s->counts from the device, for a query. */
    acm_status (*smoke_fetch)(acm_domain *d, struct acm_smoke *s);
    /* s->counts alone. */
    acm_status (*smoke_counts)(acm_domain *d, struct acm_smoke *s);
    /* The other way: s->x, s->age, s->life and s->counts to the device (a
     * smoke loaded from a checkpoint, lib/io/checkpoint_load.c); synchronised. */
    acm_status (*smoke_upload)(acm_domain *d, struct acm_smoke *s);
    /* The density grid (lib/core/smoke_math.h acm_smoke_cic) into dst: device
     * memory, enqueued (on_device), or host memory, synchronised. */
    acm_status (*smoke_density)(acm_domain *d, struct acm_smoke *s, int32_t subdivisions,
                                float *dst, size_t count, bool on_device);
    /* A copy of host data where the kernels read it (*dev), and its release:
     * emitters' points, obstacles' bits. */
    acm_status (*upload)(acm_domain *d, const void *src, size_t bytes, void **dev);
    void (*release)(acm_domain *d, void *dev);

    /* ---- decomposition (lib/multi/decomp.c, docs/multi-gpu.md; optional: without
     * them the backend cannot be a slab of a decomposed domain) ---- */

    /* The reductions of the last advance, one per plane of [d->halo[0],
     * d->nz - d->halo[1]) in plane order (out: that many entries). */
    acm_status (*plane_sums)(acm_domain *d, acm_plane_sums *out);
    /* Make plane_sums those of the state as it is now (its ghost planes
     * changed since the last advance or initialisation). Needed by slabs of
     * moment storage, whose ghost cells' crossing populations are rebuilt from
     * all 27 of their own (docs/multi-gpu.md); NULL where the backend refuses
     * moment storage in slabs. */
    acm_status (*refresh_sums)(acm_domain *d);
    /* Values a cell's plane moves carry on moment storage: a backend that
     * stores the moments moves them (ACM_MOMENTS, every one whatever dz);
     * 0 where it keeps populations then too (the CPU: acm_moved_count). */
    int moment_values;
    /* The stored populations of planes [z0, z0 + n), every slot as stored (the
     * storage type, acm__precision_bytes each), cell-major in canonical order:
     * element (k - z0 nx ny) * 27 + i for cell k and slot i, into host memory
     * (the MPI transport's messages), after what d has enqueued so far; buf
     * holds them when planes_wait returns (NULL: when planes_get does). The
     * other way for planes_put, done when it returns. dz 0 moves every slot;
     * +1 or -1 only the 9 of acm_moves(dz, i), packed in slot order. On
     * moment storage of a backend with moment_values, the cells' moments as
     * stored instead, moment_values a cell. */
    acm_status (*planes_get)(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf);
    acm_status (*planes_wait)(acm_domain *d);
    acm_status (*planes_put)(acm_domain *d, int32_t z0, int32_t n, int dz, const void *buf);
    /* Host memory for planes_get and planes_put that the backend moves fastest
     * (page-locked on a GPU), and its release (NULL: acm__malloc, acm__free). */
    void *(*planes_host_alloc)(acm_domain *d, size_t bytes);
    void (*planes_host_free)(void *p);
    /* Ghost planes between processes without the host (NCCL between GPUs; all
     * NULL: through host memory and the transport). peer_id: a new
     * communicator's id (ACM_PEER_ID_BYTES), on one process; peer_open: this
     * process's member (collective), for messages of `bytes`, waiting for the
     * others as `join` allows (a failure or time-out leaves nothing open, and
     * never hangs); peer_exchange:
     * the messages enqueued after what d has enqueued so far and alongside
     * what follows, every process listing those between two ranks in one
     * order; peer_wait: done within `seconds` (what d enqueues next sees the
     * ghost planes), or the failure; peer_close: the member released (abort:
     * without waiting for the other processes); peer_device: what names d's
     * device across processes (NCCL takes one process a device). */
    acm_status (*peer_id)(acm_domain *d, void *id);
    void (*peer_device)(acm_domain *d, char *key, size_t size);
    acm_status (*peer_open)(acm_domain *d, const void *id, int rank, int nranks, size_t bytes,
                            const acm_peer_join *join, void **peer);
    acm_status (*peer_exchange)(acm_domain *d, void *peer, const acm_peer_msg *msg, int n);
    acm_status (*peer_wait)(acm_domain *d, void *peer, double seconds);
    void (*peer_close)(void *peer, bool abort);
    /* The same from planes [src_z, src_z + n) of src into [dst_z, dst_z + n) of
     * dst, two domains of this backend and of the same layout in this process,
     * without a trip through the host; after what both have enqueued so far,
     * and alongside what they enqueue next until planes_join. */
    acm_status (*planes_copy)(acm_domain *dst, int32_t dst_z, acm_domain *src, int32_t src_z,
                              int32_t n, int dz);
    /* What dst and src enqueue from now on waits for the copies into dst
     * (NULL: planes_copy returns when its copy is done). */
    acm_status (*planes_join)(acm_domain *dst, acm_domain *src);
    /* The ACM rules' inputs of a step folded on the devices, with no host in
     * between (GPU slabs of one process; optional): sums_share makes d one of
     * `slabs` (n, every slab of the domain, d among them) that push their
     * planes' sums into one buffer on slabs[0] after every step of an
     * adaptive model with a divergence interval above 1 (with 1 the host
     * waits for every step and folds them: plane_sums); while
     * d->slab_sums_shared, d's next step folds that buffer where d runs and
     * plane_sums reads the last step's from it. ACM_ERR_UNSUPPORTED: d
     * cannot take part (the host folds for all). sums_unshare, on every slab
     * before any is released, undoes it (also after a failed sums_share). */
    acm_status (*sums_share)(acm_domain *d, acm_domain *const *slabs, int32_t n);
    void (*sums_unshare)(acm_domain *d);
    /* One step in two calls, so that a decomposed domain exchanges the planes
     * next to its cuts while the rest of the step runs (docs/multi-gpu.md,
     * "Overlap"). advance_edges steps the planes acm__edge_planes names, then
     * makes the step's new state the one planes_get, planes_put and planes_copy
     * address; advance_rest steps the other planes and completes the step as
     * advance(d, check) would. A backend that cannot split d's step takes it
     * whole in advance_edges (in-place streaming: its pushes cross between the
     * parts). Optional, both or neither. */
    acm_status (*advance_edges)(acm_domain *d);
    acm_status (*advance_rest)(acm_domain *d, acm_check check);

    /* What the domain runs on, for the tuning cache's key ("NVIDIA H200",
     * the CPU's model and thread count). */
    void (*device_name)(acm_domain *d, char *buf, size_t size);
};

/* The planes [*z0, *z1) a step computes. A slab's ghost planes (d->halo) get
 * their neighbours' planes after every step (lib/multi/halo.c); with two arrays
 * nothing reads what a step would write into them first (a pull reaches the
 * previous state only), so they are not stepped. With in-place streaming
 * their pushes land in the slab's own planes: they are. */
static inline void acm__stepped_planes(const acm_domain *d, int32_t *z0, int32_t *z1)
{
    const bool pushes = d->layout.streaming == ACM_STREAMING_IN_PLACE;
    *z0 = pushes ? 0 : d->halo[0];
    *z1 = d->nz - (pushes ? 0 : d->halo[1]);
}

/* A slab's own planes, its ghost planes left out (every plane of an
 * undivided domain), and the first one's plane in the whole domain. */
static inline int32_t acm__own_planes(const acm_domain *d)
{
    return d->nz - d->halo[0] - d->halo[1];
}

static inline int32_t acm__own_origin(const acm_domain *d) { return d->origin_z + d->halo[0]; }

/* Values a cell of n planes of d's state moves, on backend `ops` (d's
 * slabs'): the slots of acm_moves(dz, i), or on moment storage of a backend
 * that stores the moments, all of them (backend ops moment_values). */
static inline size_t acm__moved_values(const acm_domain *d, const struct acm_backend_ops *ops,
                                       int dz)
{
    return d->layout.storage == ACM_STORAGE_MOMENTS && ops->moment_values > 0
               ? (size_t)ops->moment_values
               : (size_t)acm_moved_count(dz);
}

/* Bytes of n planes of d's stored state on backend `ops` (planes_get,
 * planes_put, planes_copy and peer messages move these). */
static inline size_t acm__planes_bytes(const acm_domain *d, const struct acm_backend_ops *ops,
                                       int32_t n, int dz)
{
    return (size_t)n * (size_t)d->nx * (size_t)d->ny * acm__moved_values(d, ops, dz) *
           acm__precision_bytes(d->layout.precision);
}

/* A slab's split step (advance_edges, two arrays): first the planes its
 * neighbours copy, [halo[0], *lo) and [*hi, nz - halo[1]), then the rest
 * [*lo, *hi) (empty when *lo >= *hi). */
static inline void acm__edge_planes(const acm_domain *d, int32_t *lo, int32_t *hi)
{
    *lo = 2 * d->halo[0];
    *hi = d->nz - 2 * d->halo[1];
}

ACM_END_DECLS

#endif /* ACMLBM_BACKEND_H */
