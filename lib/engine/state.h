/*
 * libacmlbm -- the state of a domain in host memory, apart from the memory
 * layout it runs with: what acm_domain_set_layout() carries from one layout
 * to the next and what acm_domain_autotune() puts back after its trials.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Two parts. The backend's part (acm_state) is filled by ops->state_save
 * and read back by ops->state_load, each by the backend that holds the
 * populations; values are FP64, which holds FP16, FP32 and FP64 storage
 * exactly, so a save and a load in the same precision is bitwise. A GPU may
 * instead park the state in its own memory, as stored (a re-layout in the
 * same precision: no trip through the host, milliseconds not seconds). The
 * handle's part (step counters, the solids' bodies and sample order) is
 * copied by acm__snapshot_take(). Also here: how a layout resolves into a
 * domain's settings.
 */
#ifndef ACMLBM_STATE_H
#define ACMLBM_STATE_H

#include "acm_private.h"
#include "rigid.h" /* acm_body */

ACM_BEGIN_DECLS

/* What acm_state.f holds. Both have the stored populations shifted by their
 * weights (f_i - w_i), ACM_Q per cell, cell after cell (k * ACM_Q + i). */
typedef enum acm_state_form {
    /* f*_i(x): collided, not yet streamed (two arrays; in place at parity 1,
     * where slot opp(i) holds it) */
    ACM_FORM_POST_COLLISION = 0,
    /* f_i(x): the physical state (in place at parity 0) */
    ACM_FORM_PHYSICAL = 1
} acm_state_form;

/* Number of doubles of a backend's previous-step reductions. */
#define ACM_STATE_PREV_SIZE 8

typedef struct acm_state {
    acm_state_form form;
    int mom_bits;      /* the moment storage (16, 32, 64 bits) whose populations f holds
                          (lib/core/moments.h), 0: population storage */
    int mom_closure;   /* moment storage: 1 + the closure of f's populations
                          (acm_mom_closure); 0: that of the model the state is loaded
                          under (GPU states, checkpoints) */
    double *f;         /* ACM_Q per cell */
    double *mom;       /* the GPU's moment storage: its stored moments, ACM_MOMENTS (10) per
                          cell as FP64, or NULL; a load into the same storage takes them
                          instead of encoding f again (checkpoints' moments section) */
    double *force;     /* the per-cell force field, 3 per cell (x, y, z), or NULL */
    double *tau;       /* ACM_LI2020 tau* per cell, or NULL */
    double *ib_force;  /* the last immersed-boundary force, 3 per cell, or NULL */
    uint32_t *ib_mask; /* its support: bit k % 32 of word k / 32, or NULL */
    void *parked;      /* CUDA: the same kept in device memory instead, in the storage
                          type (f, force, tau, ib_force and ib_mask are then NULL) */
    void (*parked_free)(void *parked);
    void *stream;      /* CUDA: the caller's stream (acm_cuda_domain_set_stream), or NULL
                          for the domain's own; it is not state, but a re-layout keeps it */
    acm_backend prev_backend;               /* who wrote prev */
    double prev[ACM_STATE_PREV_SIZE];       /* that backend's reductions of the last step */
} acm_state;

/* Words of a per-cell bit mask. */
static inline size_t acm_state_mask_words(int64_t ncells) { return (size_t)(ncells + 31) / 32; }

/* Allocate the arrays a backend's state_save fills: f always; force, tau and
 * the immersed-boundary pair when asked. Fails with a message on d. */
acm_status acm__state_alloc(acm_domain *d, acm_state *st, bool force, bool tau, bool ib);
/* Allocate st->mom for d's cells (a GPU's stored moments). Fails with a
 * message on d. */
acm_status acm__state_alloc_moments(acm_domain *d, acm_state *st);
void acm__state_free(acm_state *st);

/* One solid's part of the handle's state. */
typedef struct acm_solid_copy {
    acm_body body, placed;
    double *r, *dv;    /* samples in their order at the time */
    uint64_t *origin;
    double sort_x[3], sort_q[4];
    int64_t resorts;
    double force[3], torque[3];
    bool moved;
} acm_solid_copy;

/* A whole domain: the backend's state and the handle's. */
typedef struct acm_snapshot {
    acm_state backend;
    int64_t step, fallback_last, fallback_total;
    bool diverged;
    acm_global_stats prev;
    acm_ib_settings ib; /* the sample order the solids' arrays are in */
    acm_precision precision;
    int32_t nsolids;
    acm_solid_copy *solids;
} acm_snapshot;

/* Copy the state of d (the solids' forces fetched first); `park`: the backend
 * may keep it in device memory, for a restore in the same precision. */
acm_status acm__snapshot_take(acm_domain *d, acm_snapshot *snap, bool park);
/* Put it back into d, whose layout may differ from the one it was taken
 * with (but not in precision, if parked; the solids' samples are re-sorted
 * when their order changed). */
acm_status acm__snapshot_restore(acm_domain *d, const acm_snapshot *snap);
void acm__snapshot_free(acm_snapshot *snap);

/* ---- layouts ---- */

/* The layout's settings into d (a validated layout; NULL: the defaults). */
void acm__domain_apply_layout(acm_domain *d, const acm_layout *layout);
/* The layout d runs with, every value resolved (acm_domain_get_layout). */
void acm__domain_layout(const acm_domain *d, acm_layout *layout);
/* The storage precision of a layout (NULL, or 0 in it: the options'). */
acm_precision acm__layout_precision(const acm_layout *layout, acm_precision options_precision);
/* Whether the backend can run the layout (msg says why not). */
acm_status acm__layout_check(const acm_layout *layout, acm_precision options_precision,
                             acm_backend backend, char *msg, size_t size);

/* Re-lay d's memory for `layout` (validated), keeping its state: snapshot,
 * release, allocate anew, restore. On failure d is back in its old layout
 * with its state, and the failure's status and message are returned. */
acm_status acm__domain_relayout(acm_domain *d, const acm_layout *layout);

/* A velocity read the backend queued (acm_domain_sample_velocity_begin),
 * collected into host memory (d->read_velocity), where it ends as begun:
 * before the backend's storage is rebuilt, or its buffer used for another read. */
acm_status acm__read_settle(acm_domain *d);

ACM_END_DECLS

#endif /* ACMLBM_STATE_H */
