/*
 * libacmlbm -- private definitions shared by the library's C files.
 * Never installed. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_ACM_PRIVATE_H
#define ACMLBM_ACM_PRIVATE_H

#include <stdarg.h>  /* va_list */
#include <stdbool.h> /* bool */

#include "acmlbm/acmlbm.h"
#include "boundary.h"   /* acm_face_bc */
#include "csoa_index.h" /* acm_csoa */
#include "reduce.h"     /* acm_global_stats, acm_plane_sums */

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
    int64_t storage;      /* acm_storage, 0 = populations */
    char error[ACM_ERROR_SIZE];
};

/* Immersed-boundary settings of a domain (layout and parameters, resolved). */
typedef struct acm_ib_settings {
    int32_t sample_block; /* l of the Morton-block order */
    int32_t sample_order; /* acm_sample_order */
    int32_t spread;       /* acm_ib_spread */
    int32_t iterations;   /* multi-direct-forcing iterations m (spec 8.5) */
} acm_ib_settings;

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

/* How a domain's state is stored and stepped: what its layout resolves to
 * (lib/engine/state.c, acm__domain_apply_layout). A slab runs its parent's
 * whole (lib/multi/decomp.c); a failed re-layout puts the old one back whole. */
typedef struct acm_resolved_layout {
    acm_precision precision; /* of the stored populations or moments */
    acm_storage storage;     /* populations or moments (lib/core/moments.h) */
    acm_csoa csoa;           /* population layout (beta = 27) */
    acm_kernel kernel;       /* GPU kernel structure */
    acm_streaming streaming; /* population streaming */
    int32_t block_size;      /* GPU threads per block, 0 = backend default */
    acm_ib_settings ib;      /* the immersed boundary's (with ACM_PARAM_IB_ITERATIONS) */
} acm_resolved_layout;

/* What the caller set up, validated: the fluid and its collision model, the
 * faces, the forces and the parameters of acm_domain_set_param. A slab steps
 * with its parent's whole (lib/multi/decomp.c), the z faces at its cuts aside. */
typedef struct acm_setup {
    double viscosity, omega;
    acm_precision options_precision; /* of acm_domain_options (resolved) */
    acm_collision_options coll;      /* model resolved */
    acm_face_bc face[ACM_FACE_COUNT];
    acm_absorber absorber[ACM_FACE_COUNT]; /* acm_domain_set_face_absorber; cells 0: none */
    double body_force[3];
    bool has_force_field;
    double max_speed;
    int64_t threads;
    int64_t divergence_interval;
    int32_t halo_overlap; /* ACM_PARAM_HALO_OVERLAP (a decomposed domain's) */
} acm_setup;

struct acm_domain {
    /* configuration */
    int32_t nx, ny, nz;
    int64_t ncells;
    acm_backend backend;
    int32_t device;
    acm_resolved_layout layout;
    acm_setup setup;
    /* per face, its values cell by cell (acm_domain_set_face_values: an inlet's 3
     * velocity components, an outlet's density), or NULL for the uniform rule; a
     * slab holds its own planes' (lib/multi/decomp.c) */
    double *face_values[ACM_FACE_COUNT];
    /* per face, the function that gives its values before every step
     * (acm_domain_set_face_function; lib/engine/faces.c), its user data and the
     * buffer it fills; NULL without one. The whole domain's, never a slab's */
    acm_face_values_fn face_fn[ACM_FACE_COUNT];
    void *face_fn_user[ACM_FACE_COUNT];
    double *face_fn_values[ACM_FACE_COUNT];

    /* state */
    int64_t step;
    bool diverged;
    int64_t diverged_step; /* with diverged: the step during which the state went bad,
                              counting from 1 = the first step after the last
                              initialisation (named by ACM_ERR_DIVERGED and the later
                              ACM_ERR_BAD_STATE messages); 0 = not known */
    int64_t fallback_last, fallback_total;
    acm_global_stats prev; /* statistics of the previous step */
    /* a velocity read begun (acm_domain_sample_velocity_begin) and not ended: its
     * points (0: none) and, where it was made at once (no backend op queues it),
     * their velocities */
    size_t read_count;
    double *read_velocity;

    /* divergence policy (lib/engine/divergence.c) */
    acm_divergence_policy divergence;
    struct acm_snapshot *rewind_point; /* ACM_DIVERGENCE_REWIND: the last snapshot, or NULL */
    uint64_t config_serial;   /* bumped when the state, the layout or the set of solids is
                                 replaced: a snapshot of an older serial is dropped */
    uint64_t rewind_serial;   /* config_serial when rewind_point was taken */

    /* immersed solids (lib/ib/solid.c); their samples live in the backend, concatenated
     * in the order of this array */
    acm_ib_settings ib;
    struct acm_solid **solids;
    int32_t nsolids, solids_cap;
    uint64_t nsamples;     /* of all solids */
    bool ib_dirty;         /* the sample set changed: the backend must re-attach it */
    bool forces_stale;     /* the solids' force/torque not yet fetched from the backend */
    bool bodies_on_backend; /* the free bodies are integrated by the backend: the host's
                               copies wait for ops->ib_home */

    /* tracer particles (lib/smoke/smoke.c), moved after the fluid part of each step */
    struct acm_smoke **smokes;
    int32_t nsmokes, smokes_cap;
    float *smoke_velocity; /* 3 per cell: the velocity they move with (host moves) */
    struct acm_smoke_obstacle *smoke_obstacles; /* scratch: the solids' insides */
    int32_t smoke_obstacles_cap;                /* its length */
    /* a solid is going away (acm_solid_destroy): its smoke emitters stop. Set
     * by the smokes (lib/smoke), which sit above the solids, NULL without one */
    void (*solid_removed)(acm_domain *d, const struct acm_solid *solid);

    /* decomposition (lib/multi/decomp.c): a slab of a decomposed domain has ghost
     * planes at its z ends, copies of its neighbours' planes. They are stepped
     * like the others but left out of the reductions and divergence checks;
     * origin_z is the global z of plane 0, for messages. All 0 otherwise. */
    int32_t halo[2];
    int32_t origin_z;
    acm_plane_sums slab_total; /* a slab: the whole domain's sums of the last step, folded in
                                  plane order, which a GPU slab steps with (the CPU uses prev) */
    double slab_cells;         /* a slab: the whole domain's cell count; 0 otherwise */
    int32_t whole_nz;          /* a slab: the whole domain's planes, and whether its z */
    bool whole_periodic_z;     /* faces are periodic (the IB stencil, lib/core/ib.h); 0 otherwise */
    bool slab_sums_shared;     /* a GPU slab: the last step's plane sums are in the first
                                  slab's buffer (sums_share): the next step folds them */
    bool slab_sums_push;       /* a GPU slab: its step puts its plane sums there (else it
                                  sends them to the host), as the decomposed domain says */
    struct acm_decomp *decomp; /* set on a decomposed domain: its slabs */

    const struct acm_backend_ops *ops;
    void *impl;            /* backend state */
    uint64_t memory_bytes; /* held by the backend, kept current by it */
    char error[ACM_ERROR_SIZE];

    /* A callback of the library running on the thread inside a call on this
     * domain (an acm_callback of lib/base/guard.h: the guard refuses what it
     * must not call), and the destroys it asked for, carried out when the call
     * that ran it returns (lib/api/domain.c, acm__domain_finish). */
    int32_t in_callback;
    bool destroy_deferred; /* acm_domain_destroy inside a callback */
    bool handles_doomed;   /* acm_solid_destroy or acm_smoke_destroy inside one */

    /* The call guard (lib/base/guard.c, acm__domain_enter): the thread inside a public
     * call on this domain (0: none) and how deeply its calls nest (the
     * autotuner steps the domain, a progress callback may query it). Last in
     * the struct and atomic for C only: the C++ (CUDA) files see a plain word
     * of the same size (checked in guard.c) and never touch it. */
#ifdef __cplusplus
    uintptr_t guard_owner_cxx;
#else
    _Atomic uintptr_t guard_owner;
#endif /* __cplusplus */
    int32_t guard_depth; /* read and written by the owner only */
};

/* status.c: a message on d, and the status returned */
acm_status acm__domain_fail(acm_domain *d, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void acm__format(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void acm__vformat(char *buf, size_t size, const char *fmt, va_list ap);

/* names for messages */
const char *acm__face_name(acm_face face);
const char *acm__boundary_name(acm_boundary type);

/* status.c: values per cell of a field (0 for an unknown field). */
int acm__field_components(acm_field field);

/* Bytes of one stored population value. */
static inline size_t acm__precision_bytes(acm_precision p)
{
    return p == ACM_PRECISION_FP64 ? 8 : (p == ACM_PRECISION_FP16 ? 2 : 4);
}

/* The densities a storage precision holds (acm_domain.h, "Densities"). The
 * populations are stored as f_i - w_i, so a density rho keeps a relative
 * precision of about u / rho (u: the storage's unit roundoff): 2^7 u holds it
 * to 1 %. The same factor above 1 keeps the step's products and sums far
 * from overflow. FP64: [1.4e-14, 7.0e13], FP32: [7.6e-6, 1.3e5], FP16:
 * [1/16, 16]. */
static inline void acm__density_range(acm_precision p, double *lo, double *hi)
{
    const double u = p == ACM_PRECISION_FP64 ? 0x1p-53 : (p == ACM_PRECISION_FP16 ? 0x1p-11 : 0x1p-24);
    *lo = 0x1p7 * u;
    *hi = 1.0 / *lo;
}

/* Whether a population (stored or as a caller gives it) fits storage of
 * precision p: finite, and within the top of acm__density_range in magnitude,
 * so that a narrower storage (a re-layout, a load) and the step's arithmetic
 * keep it finite. */
static inline bool acm__population_fits(double v, acm_precision p)
{
    double lo, hi;
    acm__density_range(p, &lo, &hi);
    return v >= -hi && v <= hi; /* NaN fails both */
}

/* The name of a storage precision, for messages. */
static inline const char *acm__precision_name(acm_precision p)
{
    return p == ACM_PRECISION_FP64 ? "FP64" : (p == ACM_PRECISION_FP16 ? "FP16" : "FP32");
}

/* Size of one element of a dtype (0 for an unknown dtype). */
size_t acm__dtype_size(acm_dtype dtype);
/* Read element i of a caller array as double. */
double acm__load(acm_dtype dtype, const void *base, size_t i);
/* Write element i of a caller array. */
void acm__store(acm_dtype dtype, void *base, size_t i, double value);

ACM_END_DECLS

#endif /* ACMLBM_ACM_PRIVATE_H */
