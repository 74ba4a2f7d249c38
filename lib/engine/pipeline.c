/*
 * libacmlbm -- the time step (pipeline.h): its order, the checks before it,
 * the collision and face parameters of each step.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* fmax, fmin */
#include <string.h> /* memset */

#include "backend.h"
#include "collide.h" /* acm_collide_params */
#include "faces.h"   /* acm__faces_timed, acm__faces_update */
#include "pipeline.h"
#include "smoke.h"   /* the tracer particles of the step */
#include "solid.h"   /* the immersed solids of the step */

/*
 * One time step, in order (physics-spec 3.4; docs/physics.md "The step"),
 * after what the steps of the call allocate (the IB storage, the smokes'
 * obstacles), so that running out of memory fails the call before any step:
 *   1. immersed boundary: samples placed, rho and u* of their support from the
 *      populations about to be pulled, penalty forces spread (spec 8);
 *   2. fluid: pull-stream and collide with the external plus the IB force,
 *      face layers, divergence check (spec 3-7); with smoke, the velocity
 *      (j + F/2)/rho the collision starts from is kept (on a GPU the
 *      collision kernel writes it);
 *   3. rigid bodies: moved by the force of step 1 (spec 9), re-sorted into the
 *      Morton-block order when they drifted by a block;
 *   4. smoke: tracer particles moved with the velocity of step 2, recycled,
 *      emitted (docs/smoke.md).
 */
static acm_status one_step(acm_domain *d, acm_check check, bool timed)
{
    if (timed) { /* the faces' values for this step, which may change the faces */
        ACM_TRY(acm__faces_update(d));
        ACM_TRY(acm__domain_check_faces(d));
    }
    if (d->nsolids > 0)
        ACM_TRY(d->ops->ib_forces(d));
    if (d->nsmokes > 0)
        ACM_TRY(acm__smokes_velocity(d));
    ACM_TRY(d->ops->advance(d, check));
    if (d->nsolids > 0)
        ACM_TRY(acm__solids_after_step(d));
    if (d->nsmokes > 0)
        ACM_TRY(acm__smokes_advance(d));
    return ACM_OK;
}

/* What the steps of a call allocate before any step. */
static acm_status before_steps(acm_domain *d)
{
    if (d->ib_dirty) {
        ACM_TRY(acm__solids_home(d));
        ACM_TRY(d->ops->ib_attach(d));
    }
    d->ib_dirty = false;
    return d->nsmokes > 0 ? acm__smokes_prepare(d) : ACM_OK;
}

/* The fluid alone: the steps go to advance_many (step 2 only). */
static bool fluid_alone(const acm_domain *d, bool timed)
{
    return d->nsolids == 0 && d->nsmokes == 0 && !timed && d->ops->advance_many != NULL;
}

/* Solids and smoke without timed faces, unchecked (acm_cuda_step_async): the
 * backend may record runs of these steps and replay them (backend.h run_begin). */
static bool in_runs(const acm_domain *d, bool checks, bool timed)
{
    return !checks && !timed && d->ops->run_begin != NULL;
}

acm_status acm__step_pipeline(acm_domain *d, int64_t nsteps, bool checks)
{
    ACM_TRY(before_steps(d));
    const bool timed = acm__faces_timed(d); /* values asked for before every step */
    if (fluid_alone(d, timed)) {
        /* checked once at the end (a backend with advance_many keeps the state
         * before a diverged step however many steps later it looks) */
        if (!checks || nsteps == 0)
            return d->ops->advance_many(d, nsteps, false);
        ACM_TRY(d->ops->advance_many(d, nsteps - 1, false));
        return d->ops->advance(d, ACM_CHECK_NOW);
    }
    const bool runs = in_runs(d, checks, timed);
    if (!runs) /* steps on the host's bodies (a run's backend takes them home if it must) */
        ACM_TRY(acm__solids_home(d));
    for (int64_t s = 0; s < nsteps;) {
        int64_t run = 1;
        bool again = false;
        if (runs)
            ACM_TRY(d->ops->run_begin(d, nsteps - s, false, &run));
        acm_status st = ACM_OK;
        for (int64_t r = 0; r < run && st == ACM_OK; ++r)
            st = one_step(d, !checks ? ACM_CHECK_NONE
                                     : (s + r + 1 == nsteps ? ACM_CHECK_NOW : ACM_CHECK_DUE),
                          timed);
        if (runs) /* a recording puts the host's state back: the same steps again */
            st = d->ops->run_end(d, st, &again);
        ACM_TRY(st);
        s += again ? 0 : run;
    }
    return ACM_OK;
}

/* Recordings of one call at most (CUDA: its first run with and without
 * re-sorts, at either parity, before and after the solids' first step, and
 * the last step of an odd call after a loop of the others). */
#define RECORDS_MAX 16

acm_status acm__step_record(acm_domain *d, int64_t nsteps)
{
    ACM_TRY(before_steps(d));
    const bool timed = acm__faces_timed(d);
    if (fluid_alone(d, timed))
        return d->ops->advance_many(d, nsteps, true);
    if (nsteps == 0 || !in_runs(d, false, timed))
        return ACM_OK;
    for (int k = 0; k < RECORDS_MAX; ++k) { /* until the backend has recorded all */
        int64_t run = 0;
        ACM_TRY(d->ops->run_begin(d, nsteps, true, &run));
        if (run == 0)
            return ACM_OK;
        acm_status st = ACM_OK;
        for (int64_t r = 0; r < run && st == ACM_OK; ++r) /* into the recording only */
            st = one_step(d, ACM_CHECK_NONE, false);
        bool again = false;
        ACM_TRY(d->ops->run_end(d, st, &again));
    }
    return ACM_OK;
}

acm_status acm__step_check(acm_domain *d, int64_t nsteps)
{
    if (nsteps < 0)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "nsteps=%lld must be >= 0", (long long)nsteps);
    if (d->diverged)
        return acm__domain_fail_diverged(d);
    return acm__domain_check_faces(d);
}

acm_status acm__domain_fail_diverged(acm_domain *d)
{
    /* the step is the one the ACM_ERR_DIVERGED message named (diverged_step) */
    if (d->diverged_step > 0)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE,
                        "the domain diverged at step %lld; re-initialise it first "
                        "(acm_domain_init_uniform, acm_domain_init_fields or "
                        "acm_domain_set_field with ACM_FIELD_POPULATIONS)",
                        (long long)d->diverged_step);
    return ACM_FAIL(d, ACM_ERR_BAD_STATE,
                    "the domain holds no valid state; re-initialise it first "
                    "(acm_domain_init_uniform, acm_domain_init_fields or "
                    "acm_domain_set_field with ACM_FIELD_POPULATIONS)");
}

acm_status acm__domain_check_faces(acm_domain *d)
{
    const int32_t size[3] = {d->nx, d->ny, d->nz};
    for (int axis = 0; axis < 3; ++axis) {
        const acm_face_bc *lo = &d->setup.face[2 * axis], *hi = &d->setup.face[2 * axis + 1];
        if ((lo->type == ACM_BOUNDARY_PERIODIC) != (hi->type == ACM_BOUNDARY_PERIODIC))
            return ACM_FAIL(d, ACM_ERR_INVALID_ARG,
                            "faces %s (%s) and %s (%s): both or neither must be periodic",
                            acm__face_name((acm_face)(2 * axis)), acm__boundary_name(lo->type),
                            acm__face_name((acm_face)(2 * axis + 1)),
                            acm__boundary_name(hi->type));
        bool layer = acm_face_is_layer(lo->type) || acm_face_is_layer(hi->type);
        if (layer && size[axis] < 3)
            return ACM_FAIL(d, ACM_ERR_INVALID_ARG,
                            "axis %c has %d cells; inlet/outlet faces need at least 3",
                            "xyz"[axis], size[axis]);
    }
    return ACM_OK;
}

/* The safety net's bound on the adaptive high-order rates at viscosity nu:
 * an artificial high-order viscosity of at least nu / 8, i.e. rates at most
 * 1 / (3 nu / 8 + 1/2) (never below 1). Rates near 2 with a slow shear rate
 * grow a noise that the positivity fallback cannot stop: measured stable
 * limits of the grouped rate (docs/physics.md) were 1.9-1.95 at nu = 0.06,
 * 1.85-1.9 at 0.16, under 1.8 at 0.5. Below nu = 0.026 the bound exceeds the
 * default clamp of 1.95 and changes nothing. */
static double acm__rate_cap(double nu) { return fmax(1.0, 1.0 / (0.375 * nu + 0.5)); }

void acm__domain_collide_params(const acm_domain *d, acm_collide_params *p)
{
    const acm_collision_options *c = &d->setup.coll;
    memset(p, 0, sizeof *p);
    p->model = c->model;
    p->safety_net = c->safety_net != 0;
    p->floor_ratio = ACM_SAFETY_FLOOR;
    p->hermite_high_orders = c->safety_net && acm_is_adaptive(c->model);
    p->omega = d->setup.omega;
    p->rate_h = c->high_order_rate;
    p->rate_b = c->bulk_follows_high_order ? c->high_order_rate : c->bulk_rate;
    p->rate_min = c->safety_net ? 1.0 : 0.0;
    p->rate_max = c->safety_net ? fmin(c->max_high_order_rate, acm__rate_cap(d->setup.viscosity)) : 2.0;
    for (int o = 0; o < 4; ++o) {
        p->li2018_nu0[o] = c->li2018_nu0[o];
        p->li2020_theta[o] = c->li2020_theta[o];
    }
    if (d->layout.storage == ACM_STORAGE_MOMENTS && acm_is_adaptive(c->model)) {
        /* moment storage keeps no order above 2: the high orders relax at rate
         * 1 in the Hermite basis, the ACM's face rule everywhere (docs/physics.md,
         * "Moment storage"), so that a cell without force keeps exactly the
         * populations it collided to */
        p->hermite_high_orders = 1;
        p->rate_min = p->rate_max = 1.0;
    }
    p->inv_umax = d->prev.max_u > 0.0 ? 1.0 / d->prev.max_u : 0.0;
    p->inv_mean_rho = d->prev.mean_rho > 0.0 ? 1.0 / d->prev.mean_rho : 0.0;
    p->inv_mean_j = d->prev.mean_j > 0.0 ? 1.0 / d->prev.mean_j : 0.0;
    p->inv_mean_pi = d->prev.mean_pi > 0.0 ? 1.0 / d->prev.mean_pi : 0.0;
}

/* Parameters of the cells next to a non-periodic face (acm_face_params);
 * false (and *face = *p) when they are the interior parameters. */
bool acm__face_collide_params(const acm_collide_params *p, acm_collide_params *face)
{
    *face = *p;
    acm_face_params(face);
    return face->rate_max != p->rate_max || face->rate_min != p->rate_min;
}
