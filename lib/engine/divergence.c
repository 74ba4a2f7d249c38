/*
 * libacmlbm -- what a step does when the state diverges (acm_domain.h,
 * "Divergence policy"; docs/reliability.md): stop, or rewind to an in-memory
 * snapshot (state.h) taken every snapshot_interval steps; a callback hears
 * of either.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy, strlen */

#include "alloc.h"
#include "backend.h" /* ops->check */
#include "divergence.h"
#include "guard.h"
#include "options.h"
#include "pipeline.h" /* acm__step_pipeline, acm__domain_fail_diverged */
#include "state.h"    /* acm_snapshot */

enum { DEFAULT_INTERVAL = 1000 };
#define ACM_INTERVAL_MAX ((int64_t)1 << 40)

ACM_API acm_status acm_divergence_policy_init(acm_divergence_policy *policy, uint32_t version)
{
    const acm_divergence_policy def = ACM_DIVERGENCE_POLICY_INIT;
    return acm__options_init(policy, &def,
                             version == ACM_DIVERGENCE_POLICY_VERSION ? sizeof def : 0, version);
}

void acm__divergence_forget(acm_domain *d)
{
    if (d->rewind_point == NULL)
        return;
    acm__snapshot_free(d->rewind_point);
    acm__free(d->rewind_point);
    d->rewind_point = NULL;
}

/* A new snapshot in place of the old one (dropped first: two would need
 * twice the memory). */
static acm_status take(acm_domain *d)
{
    if (d->ops->check != NULL) /* steps enqueued unchecked (acm_cuda_step_async) first: a
                                  snapshot never holds a diverged state */
        ACM_TRY(d->ops->check(d, ACM_CHECK_NOW));
    acm__divergence_forget(d);
    acm_snapshot *snap = acm__malloc(sizeof *snap);
    if (snap == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the divergence snapshot");
    const acm_status st = acm__snapshot_take(d, snap, true);
    if (st != ACM_OK) {
        acm__free(snap);
        return st;
    }
    d->rewind_point = snap;
    d->rewind_serial = d->config_serial;
    return ACM_OK;
}

static bool rewinds(const acm_domain *d) { return d->divergence.action == ACM_DIVERGENCE_REWIND; }

static int64_t interval(const acm_domain *d)
{
    return d->divergence.snapshot_interval > 0 ? d->divergence.snapshot_interval
                                                : DEFAULT_INTERVAL;
}

static acm_status set_policy_unguarded(acm_domain *d, const acm_divergence_policy *p)
{
    if (p == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "policy is NULL");
    if (p->version != ACM_DIVERGENCE_POLICY_VERSION)
        return ACM_FAIL(d, ACM_ERR_BAD_VERSION, "acm_divergence_policy version %u is not "
                        "supported (%d)", p->version, ACM_DIVERGENCE_POLICY_VERSION);
    if ((unsigned)p->action > ACM_DIVERGENCE_REWIND)
        return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown divergence action %d", (int)p->action);
    if (p->snapshot_interval < 0 || p->snapshot_interval > ACM_INTERVAL_MAX)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "snapshot_interval=%lld must be in [0, 2^40]",
                        (long long)p->snapshot_interval);
    if (d->diverged)
        return acm__domain_fail_diverged(d);
    const acm_divergence_policy old = d->divergence;
    d->divergence = *p;
    if (!rewinds(d)) {
        acm__divergence_forget(d);
        return ACM_OK;
    }
    const acm_status st = take(d);
    if (st != ACM_OK)
        d->divergence = old; /* its snapshot, if it had one, is gone: the next step retakes it */
    return st;
}

static acm_status get_policy_unguarded(acm_domain *d, acm_divergence_policy *p)
{
    if (p == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "policy is NULL");
    if (p->version != ACM_DIVERGENCE_POLICY_VERSION)
        return ACM_FAIL(d, ACM_ERR_BAD_VERSION, "acm_divergence_policy version %u is not "
                        "supported (%d)", p->version, ACM_DIVERGENCE_POLICY_VERSION);
    *p = d->divergence;
    return ACM_OK;
}

ACM_API acm_status acm_domain_set_divergence_policy(acm_domain *domain,
                                                    const acm_divergence_policy *policy)
{
    ACM_GUARDED_STATE(domain, set_policy_unguarded(domain, policy));
}

ACM_API acm_status acm_domain_get_divergence_policy(acm_domain *domain,
                                                    acm_divergence_policy *policy)
{
    ACM_GUARDED(domain, get_policy_unguarded(domain, policy));
}

/* ACM_ERR_DIVERGED from the pipeline: the policy's action, then the callback. */
static acm_status diverged(acm_domain *d)
{
    acm_divergence_event e = {d->diverged_step, -1, d->error};
    if (rewinds(d) && d->rewind_point != NULL && d->rewind_serial == d->config_serial) {
        char msg[ACM_ERROR_SIZE];
        memcpy(msg, d->error, sizeof msg);
        const acm_status st = acm__snapshot_restore(d, d->rewind_point);
        if (st == ACM_OK) {
            e.rewound_to = d->step;
            acm__format(msg + strlen(msg), sizeof msg - strlen(msg),
                        "; rewound to step %lld, the last snapshot", (long long)d->step);
        } else {
            acm__format(msg + strlen(msg), sizeof msg - strlen(msg),
                        "; rewinding failed as well (%s)", d->error);
        }
        memcpy(d->error, msg, sizeof msg);
    }
    if (d->divergence.callback != NULL) { /* acm_step's message stays, whatever it calls */
        char msg[ACM_ERROR_SIZE];
        memcpy(msg, d->error, sizeof msg);
        e.message = msg;
        const acm_callback outer = acm__callback_begin(d, ACM_CALLBACK_DIVERGENCE);
        d->divergence.callback(d, &e, d->divergence.user_data);
        acm__callback_end(d, outer);
        memcpy(d->error, msg, sizeof msg);
    }
    return ACM_ERR_DIVERGED;
}

/* REWIND: steps in pieces that end where a snapshot is due. */
static acm_status step_rewinding(acm_domain *d, int64_t nsteps)
{
    while (nsteps > 0) {
        if (d->rewind_point == NULL || d->rewind_serial != d->config_serial ||
            d->step - d->rewind_point->step >= interval(d))
            ACM_TRY(take(d));
        int64_t piece = interval(d) - (d->step - d->rewind_point->step);
        piece = piece < nsteps ? piece : nsteps;
        ACM_TRY(acm__step_pipeline(d, piece, true));
        nsteps -= piece;
    }
    return ACM_OK;
}

acm_status acm__divergence_step(acm_domain *d, int64_t nsteps)
{
    const acm_status st = rewinds(d) ? step_rewinding(d, nsteps)
                                     : acm__step_pipeline(d, nsteps, true);
    return st == ACM_ERR_DIVERGED ? diverged(d) : st;
}
