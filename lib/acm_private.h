/*
 * libacmlbm -- private definitions shared by the library's C files.
 * Never installed. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_ACM_PRIVATE_H
#define ACMLBM_ACM_PRIVATE_H

#include <stdarg.h>  /* va_list */
#include <stdbool.h> /* bool */

#include "acmlbm/acmlbm.h"
#include "csoa_index.h" /* acm_csoa */

ACM_BEGIN_DECLS

/* Internal error propagation (style guide R8). */
#define ACM_TRY(expr)                                                                      \
    do {                                                                                   \
        acm_status acm__s = (expr);                                                        \
        if (acm__s != ACM_OK)                                                              \
            return acm__s;                                                                 \
    } while (0)

/* Record a message on the domain and return the status. */
#define ACM_FAIL(d, code, ...) acm__domain_fail((d), (code), __VA_ARGS__)

#define ACM_ERROR_SIZE 512

struct acm_layout {
    int64_t csoa_group;   /* 0 = backend default */
    int64_t kernel;       /* acm_kernel, 0 = default */
    int64_t block_size;   /* 0 = default */
    int64_t sample_block; /* Morton block edge l, 0 = default */
    int64_t sample_order; /* acm_sample_order, 0 = default */
    int64_t ib_spread;    /* acm_ib_spread, 0 = default */
    int64_t streaming;    /* acm_streaming, 0 = default */
    int64_t precision;    /* acm_precision, 0 = the domain options' */
    char error[ACM_ERROR_SIZE];
};

/* Immersed-boundary settings of a domain (layout and parameters, resolved). */
typedef struct acm_ib_settings {
    int32_t sample_block; /* l of the Morton-block order */
    int32_t sample_order; /* acm_sample_order */
    int32_t spread;       /* acm_ib_spread */
    int32_t iterations;   /* multi-direct-forcing iterations m (spec 8.5) */
} acm_ib_settings;

/* Condition of one face. */
typedef struct acm_face_bc {
    acm_boundary type;
    double u[3]; /* wall or inlet velocity */
} acm_face_bc;

/* Domain-wide reductions of the previous step, inputs of the ACM rules. */
typedef struct acm_global_stats {
    double max_u;    /* largest |u| */
    double mean_rho; /* averages over all cells */
    double mean_j;   /* of rho |u| */
    double mean_pi;  /* of |sum f c c| */
} acm_global_stats;

/* The ACM rules' sums over one z-plane (lib/decomp.c): every domain folds
 * its planes' sums in plane order, so that a decomposed domain, folding its
 * slabs' planes in the same order, gets bitwise the same statistics. */
typedef struct acm_plane_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
} acm_plane_sums;

/* Source of an equilibrium initialisation: arrays, or uniform values where
 * an array is NULL. */
typedef struct acm_init_source {
    acm_dtype dtype;
    const void *rho; /* ncells values or NULL */
    const void *u;   /* 3 * ncells values or NULL */
    double rho0;
    double u0[3];
} acm_init_source;

struct acm_backend_ops;

struct acm_domain {
    /* configuration (validated) */
    int32_t nx, ny, nz;
    int64_t ncells;
    double viscosity, omega;
    acm_backend backend;
    int32_t device;
    acm_precision precision;     /* of the layout (resolved) */
    acm_precision options_precision; /* of acm_domain_options (resolved) */
    acm_csoa csoa;               /* population layout (beta = 27) */
    acm_kernel kernel;           /* GPU kernel structure (resolved) */
    acm_streaming streaming;     /* population streaming (resolved) */
    int32_t block_size;          /* GPU threads per block, 0 = backend default */
    acm_collision_options coll;  /* model resolved */
    acm_face_bc face[ACM_FACE_COUNT];
    double body_force[3];
    bool has_force_field;
    double max_speed;
    int64_t threads;
    int64_t divergence_interval;
    int32_t halo_overlap;        /* ACM_PARAM_HALO_OVERLAP (a decomposed domain's) */

    /* state */
    int64_t step;
    bool diverged;
    int64_t diverged_step; /* with diverged: the step during which the state went bad,
                              counting from 1 = the first step after the last
                              initialisation (named by ACM_ERR_DIVERGED and the later
                              ACM_ERR_BAD_STATE messages); 0 = not known */
    int64_t fallback_last, fallback_total;
    acm_global_stats prev; /* statistics of the previous step */

    /* divergence policy (divergence.c) */
    acm_divergence_policy divergence;
    struct acm_snapshot *rewind_point; /* ACM_DIVERGENCE_REWIND: the last snapshot, or NULL */
    uint64_t config_serial;   /* bumped when the state, the layout or the set of solids is
                                 replaced: a snapshot of an older serial is dropped */
    uint64_t rewind_serial;   /* config_serial when rewind_point was taken */

    /* immersed solids (solid.c); their samples live in the backend, concatenated
     * in the order of this array */
    acm_ib_settings ib;
    struct acm_solid **solids;
    int32_t nsolids, solids_cap;
    uint64_t nsamples;     /* of all solids */
    bool ib_dirty;         /* the sample set changed: the backend must re-attach it */
    bool forces_stale;     /* the solids' force/torque not yet fetched from the backend */

    /* tracer particles (smoke.c), moved after the fluid part of each step */
    struct acm_smoke **smokes;
    int32_t nsmokes, smokes_cap;
    float *smoke_velocity; /* 3 per cell: the velocity they move with (host moves) */
    struct acm_smoke_obstacle *smoke_obstacles; /* scratch: the solids' insides */
    int32_t smoke_obstacles_cap;                /* its length */

    /* decomposition (lib/decomp.c): a slab of a decomposed domain has ghost
     * planes at its z ends, copies of its neighbours' planes. They are stepped
     * like the others but left out of the reductions and divergence checks;
     * origin_z is the global z of plane 0, for messages. All 0 otherwise. */
    int32_t halo[2];
    int32_t origin_z;
    acm_plane_sums slab_total; /* a slab: the whole domain's sums of the last step, folded in
                                  plane order, which a GPU slab steps with (the CPU uses prev) */
    double slab_cells;         /* a slab: the whole domain's cell count; 0 otherwise */
    int32_t whole_nz;          /* a slab: the whole domain's planes, and whether its z */
    bool whole_periodic_z;     /* faces are periodic (the IB stencil, lib/ib.h); 0 otherwise */
    bool slab_sums_shared;     /* a GPU slab: the last step's plane sums are in the first
                                  slab's buffer (sums_share): the next step folds them */
    struct acm_decomp *decomp; /* set on a decomposed domain: its slabs */

    const struct acm_backend_ops *ops;
    void *impl;            /* backend state */
    uint64_t memory_bytes; /* held by the backend, kept current by it */
    char error[ACM_ERROR_SIZE];

    /* The call guard (domain.c, acm__domain_enter): the thread inside a public
     * call on this domain (0: none) and how deeply its calls nest (the
     * autotuner steps the domain, a progress callback may query it). Last in
     * the struct and atomic for C only: the C++ (CUDA) files see a plain word
     * of the same size (checked in domain.c) and never touch it. */
#ifdef __cplusplus
    uintptr_t guard_owner_cxx;
#else
    _Atomic uintptr_t guard_owner;
#endif /* __cplusplus */
    int32_t guard_depth; /* read and written by the owner only */
};

/* domain.c: enter a public call on d from this thread. Returns ACM_OK (the
 * thread now holds d; nested calls of the same thread are let in and
 * counted) or ACM_ERR_BAD_STATE when another thread is inside a call on d:
 * then nothing of d was touched, and acm_domain_last_error(d) on this thread
 * says why. Every ACM_OK is paired with one acm__domain_leave(d). */
acm_status acm__domain_enter(acm_domain *d);
void acm__domain_leave(acm_domain *d);

/* domain.c: ACM_ERR_BAD_STATE, with a message on d, when d has no backend
 * storage (impl NULL: a re-layout failed, and restoring the old layout failed
 * too); the domain can then only be destroyed. acm__domain_enter() checks it;
 * the solid and smoke calls, which are not guarded, check it themselves. */
acm_status acm__domain_require_storage(acm_domain *d);

/* domain.c: the time-step pipeline of acm_step() and acm_cuda_step_async();
 * checks = false leaves the divergence check to the caller (CUDA interop). */
acm_status acm__step_pipeline(acm_domain *d, int64_t nsteps, bool checks);

/* domain.c: the layout's settings into d (a validated layout; NULL: the
 * defaults), and whether the backend can run it (msg says why not). */
void acm__domain_apply_layout(acm_domain *d, const acm_layout *layout);
/* The layout d runs with, every value resolved (acm_domain_get_layout). */
void acm__domain_layout(const acm_domain *d, acm_layout *layout);
acm_status acm__layout_check(const acm_layout *layout, acm_precision options_precision,
                             acm_backend backend, char *msg, size_t size);

/* error.c */
acm_status acm__domain_fail(acm_domain *d, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void acm__format(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void acm__vformat(char *buf, size_t size, const char *fmt, va_list ap);

/* names for messages */
const char *acm__face_name(acm_face face);
const char *acm__boundary_name(acm_boundary type);

/* domain.c: ACM collision parameters of the current step */
struct acm_collide_params;
void acm__domain_collide_params(const acm_domain *d, struct acm_collide_params *p);
bool acm__face_collide_params(const struct acm_collide_params *p, struct acm_collide_params *face);
/* Opposite faces consistent, inlet/outlet layers thick enough. */
acm_status acm__domain_check_faces(acm_domain *d);
/* ACM_ERR_BAD_STATE for stepping a diverged domain; names d->diverged_step. */
acm_status acm__domain_fail_diverged(acm_domain *d);

/* divergence.c: acm_step()'s steps under the domain's divergence policy (the
 * pipeline, cut into pieces between snapshots when it rewinds); and dropping
 * the snapshot (acm_domain_destroy). */
acm_status acm__divergence_step(acm_domain *d, int64_t nsteps);
void acm__divergence_forget(acm_domain *d);

/* Values per cell of a field (0 for an unknown field). */
int acm__field_components(acm_field field);

/* Bytes of one stored population value. */
static inline size_t acm__precision_bytes(acm_precision p)
{
    return p == ACM_PRECISION_FP64 ? 8 : (p == ACM_PRECISION_FP16 ? 2 : 4);
}

/* Size of one element of a dtype (0 for an unknown dtype). */
size_t acm__dtype_size(acm_dtype dtype);
/* Read element i of a caller array as double. */
double acm__load(acm_dtype dtype, const void *base, size_t i);
/* Write element i of a caller array. */
void acm__store(acm_dtype dtype, void *base, size_t i, double value);

ACM_END_DECLS

#endif /* ACMLBM_ACM_PRIVATE_H */
