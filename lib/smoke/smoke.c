/*
 * libacmlbm -- tracer particles ("smoke", acm_smoke.h): emitters, slots and
 * their recycling, advection by the explicit midpoint rule on the fluid
 * velocity interpolated trilinearly between cell centres (docs/smoke.md).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* floor, isfinite */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, free, malloc, realloc */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "guard.h" /* acm__domain_require_storage */
#include "options.h"
#include "smoke.h"
#include "smoke_math.h"

_Static_assert(ACM_EMITTER_BOX == ACM_SMOKE_BOX && ACM_EMITTER_SPHERE == ACM_SMOKE_SPHERE &&
                   ACM_EMITTER_POINTS == ACM_SMOKE_POINTS && ACM_EMITTER_SOLID == ACM_SMOKE_SOLID,
               "the sources' shapes are the emitters'");
#include "solid.h" /* acm__ib_grid */

acm_status acm__smoke_fail(acm_smoke *s, acm_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(s->error, ACM_ERROR_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- lifecycle --------------------------------------------------------------------- */

ACM_API acm_status acm_smoke_options_init(acm_smoke_options *opts, uint32_t version)
{
    const acm_smoke_options def = ACM_SMOKE_OPTIONS_INIT;
    return acm__options_init(opts, &def, version == ACM_SMOKE_OPTIONS_VERSION ? sizeof def : 0,
                             version);
}

static void free_emitter(acm_domain *d, smoke_emitter *se)
{
    if (se->dev_points != NULL) /* (the domain's storage need not exist) */
        d->ops->release(d, se->dev_points);
    acm__free(se->points);
}

static void free_smoke(acm_smoke *s)
{
    if (s->dev != NULL)
        s->domain->ops->smoke_detach(s);
    for (int32_t i = 0; i < s->nemitters; ++i)
        free_emitter(s->domain, &s->emitters[i]);
    acm__free(s->emitters);
    acm__free(s->sources);
    acm__free(s->x);
    acm__free(s->age);
    acm__free(s->life);
    acm__free(s->free_list);
    acm__free(s);
}

/* ACM_OK, or the refusal of acm__domain_require_storage on the smoke. */
static acm_status smoke_require_storage(acm_smoke *s)
{
    const acm_status st = acm__domain_require_storage(s->domain);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(s, st, "%s", s->domain->error);
}

/* A solid is going away (d->solid_removed, called by acm_solid_destroy): its
 * emitters stop. */
static void forget_solid(acm_domain *d, const acm_solid *solid)
{
    for (int32_t i = 0; i < d->nsmokes; ++i)
        for (int32_t k = 0; k < d->smokes[i]->nemitters; ++k) {
            smoke_emitter *se = &d->smokes[i]->emitters[k];
            if (se->e.shape == ACM_EMITTER_SOLID && se->e.solid == solid) {
                se->e.solid = NULL; /* stops emitting */
                se->e.rate = 0.0;
            }
        }
}

/* The domain's list of smokes and, for the host's moves, its velocity buffer. */
static acm_status join_domain(acm_domain *d, acm_smoke *s)
{
    if (d->ops->smoke_step == NULL && d->smoke_velocity == NULL &&
        (d->smoke_velocity = acm__malloc(3 * (size_t)d->ncells * sizeof(float))) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the smoke's velocity field");
    if (d->nsmokes == d->smokes_cap) {
        int32_t cap = d->smokes_cap ? 2 * d->smokes_cap : 4;
        acm_smoke **p = acm__realloc(d->smokes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot grow the list of smokes");
        d->smokes = p;
        d->smokes_cap = cap;
    }
    d->smokes[d->nsmokes++] = s;
    d->solid_removed = forget_solid;
    return ACM_OK;
}

ACM_API acm_status acm_smoke_create(acm_smoke **out, acm_domain *domain,
                                    const acm_smoke_options *opts)
{
    if (domain == NULL)
        return ACM_ERR_NULL_POINTER;
    if (out == NULL || opts == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "%s is NULL", out == NULL ? "out" : "opts");
    if (opts->version != ACM_SMOKE_OPTIONS_VERSION)
        return ACM_FAIL(domain, ACM_ERR_BAD_VERSION, "acm_smoke_options version %u is not "
                        "supported (%d)", opts->version, ACM_SMOKE_OPTIONS_VERSION);
    if (opts->capacity < 1 || opts->capacity >= ACM_SMOKE_CAPACITY_MAX)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "capacity=%llu must be in [1, 2^31)",
                        (unsigned long long)opts->capacity);
    ACM_TRY(acm__callback_check(domain, ACM_CALL_STATE));
    ACM_TRY(acm__domain_require_storage(domain));
    acm_smoke *s = acm__calloc(1, sizeof *s);
    const size_t n = (size_t)opts->capacity;
    if (s != NULL) {
        s->domain = domain;
        s->x = acm__malloc(3 * n * sizeof(double));
        s->age = acm__malloc(n * sizeof(int32_t));
        s->life = acm__calloc(n, sizeof(int32_t));
        s->free_list = acm__malloc(n * sizeof(uint32_t));
    }
    if (s == NULL || s->x == NULL || s->age == NULL || s->life == NULL || s->free_list == NULL) {
        if (s != NULL)
            free_smoke(s);
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate a smoke of %zu particles", n);
    }
    s->capacity = opts->capacity;
    s->seed = opts->seed;
    for (size_t k = 0; k < n; ++k)
        s->age[k] = -1;
    s->fetched = true;
    /* the solids' insides for its particles, now rather than in a first step's frame */
    acm_status st = acm__smokes_prepare(domain);
    if (st == ACM_OK && domain->ops->smoke_attach != NULL)
        st = domain->ops->smoke_attach(domain, s);
    if (st == ACM_OK)
        st = join_domain(domain, s);
    if (st != ACM_OK) {
        free_smoke(s);
        return st;
    }
    *out = s;
    return ACM_OK;
}

ACM_API void acm_smoke_destroy(acm_smoke *smoke)
{
    if (smoke == NULL)
        return;
    acm_domain *d = smoke->domain;
    if (d->in_callback != ACM_CALLBACK_NONE) { /* the call that runs it destroys it */
        smoke->doomed = d->handles_doomed = true;
        return;
    }
    for (int32_t i = 0; i < d->nsmokes; ++i)
        if (d->smokes[i] == smoke) {
            memmove(d->smokes + i, d->smokes + i + 1, (size_t)(d->nsmokes - i - 1) * sizeof *d->smokes);
            d->nsmokes--;
            break;
        }
    free_smoke(smoke);
}

void acm__smokes_destroy_all(acm_domain *d)
{
    while (d->nsmokes > 0)
        acm_smoke_destroy(d->smokes[d->nsmokes - 1]);
    acm__free(d->smokes);
    acm__free(d->smoke_velocity);
    acm__free(d->smoke_obstacles);
    d->smokes = NULL;
    d->smoke_velocity = NULL;
    d->smoke_obstacles = NULL;
    d->smoke_obstacles_cap = 0;
    d->smokes_cap = 0;
}

ACM_API const char *acm_smoke_last_error(const acm_smoke *smoke)
{
    return smoke == NULL ? "smoke is NULL" : smoke->error;
}

/* ---- emitters ---------------------------------------------------------------------- */

#define ACM_EMITTER_OFFSET_MAX 4.0

static bool finite3(const double v[3])
{
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

static acm_status check_points(acm_smoke *s, const acm_emitter *e)
{
    if (e->points == NULL)
        return acm__smoke_fail(s, ACM_ERR_NULL_POINTER, "points emitter: points is NULL");
    if (e->point_count == 0 || e->point_count > SIZE_MAX / (3 * sizeof(double)))
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "points emitter: point_count=%zu",
                               e->point_count);
    for (size_t p = 0; p < e->point_count; ++p)
        if (!finite3(e->points + 3 * p))
            return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "points emitter: point %zu is not "
                                   "finite", p);
    return ACM_OK;
}

static acm_status check_solid(acm_smoke *s, const acm_emitter *e)
{
    if (e->solid == NULL)
        return acm__smoke_fail(s, ACM_ERR_NULL_POINTER, "solid emitter: solid is NULL");
    if (e->solid->domain != s->domain)
        return acm__smoke_fail(s, ACM_ERR_INVALID_ARG, "solid emitter: the solid belongs to "
                               "another domain");
    if (!(isfinite(e->offset) && e->offset >= 0.0 && e->offset <= ACM_EMITTER_OFFSET_MAX))
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "solid emitter: offset=%g must be in "
                               "[0, %g] cells", e->offset, ACM_EMITTER_OFFSET_MAX);
    return ACM_OK;
}

static acm_status check_emitter(acm_smoke *s, const acm_emitter *e)
{
    if (!(isfinite(e->rate) && e->rate >= 0.0) || e->lifetime < 0 || e->lifetime > INT32_MAX)
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "rate=%g must be finite and >= 0, "
                               "lifetime=%lld in [0, 2^31) (0: unlimited)", e->rate,
                               (long long)e->lifetime);
    switch (e->shape) {
    case ACM_EMITTER_BOX:
        if (!finite3(e->lo) || !finite3(e->hi) || e->lo[0] > e->hi[0] || e->lo[1] > e->hi[1] ||
            e->lo[2] > e->hi[2])
            return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "box emitter: lo and hi must be finite, "
                              "lo <= hi on every axis");
        return ACM_OK;
    case ACM_EMITTER_SPHERE:
        if (!finite3(e->centre) || !(isfinite(e->radius) && e->radius >= 0.0))
            return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "sphere emitter: the centre must be "
                              "finite and radius=%g finite and >= 0", e->radius);
        return ACM_OK;
    case ACM_EMITTER_POINTS:
        return check_points(s, e);
    case ACM_EMITTER_SOLID:
        return check_solid(s, e);
    default:
        return acm__smoke_fail(s, ACM_ERR_BAD_ENUM, "unknown emitter shape %d", (int)e->shape);
    }
}

/* The caller's emitter of either version as a version 2 one. */
static acm_status read_emitter(acm_smoke *s, const acm_emitter *in, acm_emitter *e)
{
    if (in->version != 1 && in->version != ACM_EMITTER_VERSION)
        return acm__smoke_fail(s, ACM_ERR_BAD_VERSION, "acm_emitter version %u is not supported "
                               "(1 to %d)", in->version, ACM_EMITTER_VERSION);
    const acm_emitter init = ACM_EMITTER_INIT;
    *e = init;
    memcpy(e, in, in->version == 1 ? offsetof(acm_emitter, solid) : sizeof *e);
    if (e->shape == ACM_EMITTER_SOLID && in->version < 2)
        return acm__smoke_fail(s, ACM_ERR_BAD_VERSION, "solid emitters need acm_emitter "
                               "version 2");
    return ACM_OK;
}

/* The emitter's own points: the caller's, or the solid's surface pushed out. */
static acm_status emitter_points(acm_smoke *s, smoke_emitter *se)
{
    const acm_emitter *e = &se->e;
    if (e->shape == ACM_EMITTER_SOLID) {
        const acm_status st = acm__solid_surface_points(e->solid, e->offset, &se->points,
                                                        &se->npoints);
        return st == ACM_OK ? ACM_OK
                            : acm__smoke_fail(s, st, "cannot list the solid's surface points");
    }
    if (e->shape != ACM_EMITTER_POINTS)
        return ACM_OK;
    const size_t bytes = 3 * e->point_count * sizeof(double);
    if ((se->points = acm__malloc(bytes)) == NULL)
        return acm__smoke_fail(s, ACM_ERR_NO_MEMORY, "cannot copy %zu points", e->point_count);
    memcpy(se->points, e->points, bytes);
    se->npoints = e->point_count;
    return ACM_OK;
}

/* The points where the backend reads them. */
static acm_status upload_points(acm_smoke *s, smoke_emitter *se)
{
    acm_domain *d = s->domain;
    if (se->points == NULL || d->ops->upload == NULL)
        return ACM_OK;
    ACM_TRY(smoke_require_storage(s));
    const acm_status st = d->ops->upload(d, se->points, 3 * se->npoints * sizeof(double),
                                         &se->dev_points);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(s, st, "%s", d->error);
}

/* A checked emitter with its own points into the smoke's list; freed on failure. */
static acm_status append_emitter(acm_smoke *smoke, smoke_emitter *se)
{
    acm_status st = upload_points(smoke, se);
    if (st == ACM_OK) {
        smoke_emitter *p = acm__realloc(smoke->emitters, ((size_t)smoke->nemitters + 1) * sizeof *p);
        if (p != NULL)
            smoke->emitters = p;
        acm_smoke_source *src =
            acm__realloc(smoke->sources, ((size_t)smoke->nemitters + 1) * sizeof *src);
        if (src != NULL)
            smoke->sources = src;
        if (p == NULL || src == NULL)
            st = acm__smoke_fail(smoke, ACM_ERR_NO_MEMORY, "cannot grow the list of emitters");
    }
    if (st != ACM_OK) {
        free_emitter(smoke->domain, se);
        return st;
    }
    smoke->emitters[smoke->nemitters++] = *se;
    return ACM_OK;
}

ACM_API acm_status acm_smoke_add_emitter(acm_smoke *smoke, const acm_emitter *emitter)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (emitter == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "emitter is NULL");
    smoke_emitter se;
    memset(&se, 0, sizeof se);
    ACM_TRY(read_emitter(smoke, emitter, &se.e));
    ACM_TRY(check_emitter(smoke, &se.e));
    const acm_status st = emitter_points(smoke, &se);
    se.e.points = NULL; /* the copy is se.points */
    if (st != ACM_OK) {
        free_emitter(smoke->domain, &se);
        return st;
    }
    return append_emitter(smoke, &se);
}

/* ---- checkpoints --------------------------------------------------------------------- */

/* A saved emitter's points and progress, as acm_smoke_add_emitter and the
 * steps since could have left them. */
static acm_status check_progress(acm_smoke *s, const smoke_emitter *se)
{
    const bool listed = se->e.shape == ACM_EMITTER_POINTS || se->e.shape == ACM_EMITTER_SOLID;
    if (listed != (se->npoints > 0))
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "%llu points for an emitter of shape %d",
                               (unsigned long long)se->npoints, (int)se->e.shape);
    for (uint64_t p = 0; p < se->npoints; ++p)
        if (!finite3(se->points + 3 * p))
            return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "emitter point %llu is not finite",
                                   (unsigned long long)p);
    if (!(isfinite(se->carry) && se->carry >= 0.0 && se->carry < 1.0) ||
        se->next >= (se->npoints > 0 ? se->npoints : 1))
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "emitter progress out of range: "
                               "carry=%g must be in [0, 1), the next point %llu below %llu",
                               se->carry, (unsigned long long)se->next,
                               (unsigned long long)(se->npoints > 0 ? se->npoints : 1));
    return ACM_OK;
}

acm_status acm__smoke_add_saved_emitter(acm_smoke *s, smoke_emitter *se)
{
    se->dev_points = NULL;
    se->e.version = ACM_EMITTER_VERSION;
    se->e.points = se->points; /* what check_points reads */
    se->e.point_count = (size_t)se->npoints;
    acm_status st = ACM_OK;
    /* forget_solid stopped it for good: it never reads its solid again */
    if (se->e.shape == ACM_EMITTER_SOLID && se->e.solid == NULL)
        st = se->e.rate == 0.0 ? ACM_OK
                               : acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "a solid emitter "
                                                 "without its solid must have rate 0");
    else
        st = check_emitter(s, &se->e);
    if (st == ACM_OK)
        st = check_progress(s, se);
    se->e.points = NULL;
    if (st != ACM_OK) {
        acm__free(se->points);
        return st;
    }
    return append_emitter(s, se);
}

acm_status acm__smoke_restore(acm_smoke *s, const acm_smoke_counts *counts)
{
    acm_domain *d = s->domain;
    s->counts = *counts;
    s->fetched = true;
    if (d->ops->smoke_upload == NULL) /* the host's arrays are the particles */
        return ACM_OK;
    const acm_status st = d->ops->smoke_upload(d, s);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(s, st, "%s", d->error);
}

/* ---- a step's plan ----------------------------------------------------------------- */

/* This step's particles of one emitter (its fraction carried over); those
 * beyond the smoke's capacity are dropped at once. */
static uint32_t emitter_count(acm_smoke *s, smoke_emitter *se)
{
    se->carry += se->e.rate;
    const double whole = floor(se->carry);
    se->carry -= whole;
    if (whole > (double)s->capacity) {
        s->dropped_planned += (uint64_t)fmin(whole - (double)s->capacity, 1e19);
        return (uint32_t)s->capacity;
    }
    return (uint32_t)whole;
}

static void source_of(const smoke_emitter *se, bool device, acm_smoke_source *src)
{
    const acm_emitter *e = &se->e;
    memset(src, 0, sizeof *src);
    src->shape = (int32_t)e->shape;
    src->lifetime = (int32_t)e->lifetime;
    src->serial = se->serial;
    src->points = device ? (const double *)se->dev_points : se->points;
    src->npoints = se->npoints;
    src->next = se->next;
    for (int a = 0; a < 3; ++a) {
        src->a[a] = e->shape == ACM_EMITTER_SPHERE ? e->centre[a] : e->lo[a];
        src->b[a] = e->shape == ACM_EMITTER_SPHERE ? (a == 0 ? e->radius : 0.0) : e->hi[a];
    }
    if (e->shape == ACM_EMITTER_SOLID) {
        memcpy(src->x, e->solid->body.x, sizeof src->x);
        memcpy(src->q, e->solid->body.q, sizeof src->q);
        src->body = acm__solid_index(e->solid);
    }
}

/* The emitters with particles this step, in order; advances their counters. */
static uint32_t plan_sources(acm_smoke *s, bool device, int32_t *nsrc)
{
    uint32_t total = 0;
    *nsrc = 0;
    for (int32_t i = 0; i < s->nemitters; ++i) {
        smoke_emitter *se = &s->emitters[i];
        uint32_t n = emitter_count(s, se);
        if (n > s->capacity - total) { /* more than the smoke can hold in all */
            s->dropped_planned += n - (s->capacity - total);
            n = (uint32_t)(s->capacity - total);
        }
        if (n == 0)
            continue;
        acm_smoke_source *src = &s->sources[(*nsrc)++];
        source_of(se, device, src);
        src->first = total;
        src->count = n;
        total += n;
        se->serial += n;
        if (se->npoints > 0)
            se->next = (se->next + n) % se->npoints;
    }
    return total;
}

/* ---- the host's step (the CPU backend, and the oracle) ------------------------------ */

static void advect_host(acm_smoke *s, const float *u, const acm_smoke_plan *p)
{
    const acm_ib_grid g = acm__ib_grid(s->domain);
    uint64_t left = 0, expired = 0, absorbed = 0;
#pragma omp parallel for schedule(static) reduction(+ : left, expired, absorbed) \
    if (s->capacity >= 65536)
    for (int64_t k = 0; k < (int64_t)s->capacity; ++k) {
        if (s->age[k] < 0)
            continue;
        const int what = acm_smoke_step(&g, u, p->obstacles, p->nobstacles, s->x + 3 * k,
                                        &s->age[k], s->life[k]);
        left += what == ACM_SMOKE_LEFT;
        expired += what == ACM_SMOKE_EXPIRED;
        absorbed += what == ACM_SMOKE_ABSORBED;
        if (what != ACM_SMOKE_ALIVE)
            s->age[k] = -1;
    }
    s->counts.left += left;
    s->counts.expired += expired;
    s->counts.absorbed += absorbed;
}

/* The step's emissions into the lowest free slots, in emission order. */
static void emit_host(acm_smoke *s, const acm_smoke_plan *p)
{
    uint64_t nfree = 0;
    for (uint64_t k = 0; k < s->capacity && nfree < p->emissions; ++k)
        if (s->age[k] < 0)
            s->free_list[nfree++] = (uint32_t)k;
    for (uint32_t e = 0; e < p->emissions; ++e) {
        if (e >= nfree) {
            s->counts.dropped += p->emissions - e;
            break;
        }
        const acm_smoke_source *src = p->sources + acm_smoke_source_of(p->sources, p->nsources, e);
        const uint32_t k = s->free_list[e];
        acm_smoke_source_point(src, p->seed, e - src->first, s->x + 3 * (size_t)k);
        s->age[k] = 0;
        s->life[k] = src->lifetime;
        s->counts.emitted++;
    }
}

/* ---- the step ------------------------------------------------------------------------ */

acm_status acm__smokes_prepare(acm_domain *d)
{
    const bool device = d->ops->smoke_step != NULL;
    if (d->nsolids > d->smoke_obstacles_cap) {
        acm_smoke_obstacle *o = acm__realloc(d->smoke_obstacles, (size_t)d->nsolids * sizeof *o);
        if (o == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot list the solids for the smoke");
        d->smoke_obstacles = o;
        d->smoke_obstacles_cap = d->nsolids;
    }
    for (int32_t i = 0; i < d->nsolids; ++i)
        ACM_TRY(acm__solid_obstacle_ready(d->solids[i], device));
    return ACM_OK;
}

/* The insides of the solids made from closed meshes, at their current poses
 * (acm__smokes_prepare made room). */
static int32_t plan_obstacles(acm_domain *d, bool device)
{
    int32_t n = 0;
    for (int32_t i = 0; i < d->nsolids; ++i)
        n += acm__solid_obstacle(d->solids[i], i, device, &d->smoke_obstacles[n]);
    return n;
}

static acm_status advance_one(acm_domain *d, acm_smoke *s, const acm_smoke_obstacle *obs,
                              int32_t nobs)
{
    const bool device = d->ops->smoke_step != NULL;
    acm_smoke_plan p;
    p.sources = s->sources;
    p.emissions = plan_sources(s, device, &p.nsources);
    p.obstacles = obs;
    p.nobstacles = nobs;
    p.seed = s->seed;
    s->fetched = !device;
    if (device)
        return d->ops->smoke_step(d, s, &p);
    advect_host(s, d->smoke_velocity, &p);
    if (p.emissions > 0)
        emit_host(s, &p);
    return ACM_OK;
}

acm_status acm__smokes_velocity(acm_domain *d)
{
    if (d->ops->smoke_velocity != NULL)
        return d->ops->smoke_velocity(d);
    return d->ops->get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT32, d->smoke_velocity);
}

acm_status acm__smokes_advance(acm_domain *d)
{
    const bool device = d->ops->smoke_step != NULL;
    const int32_t nobs = plan_obstacles(d, device);
    acm_status st = ACM_OK;
    for (int32_t i = 0; i < d->nsmokes && st == ACM_OK; ++i)
        st = advance_one(d, d->smokes[i], d->smoke_obstacles, nobs);
    return st;
}

acm_status acm__smoke_sync(acm_smoke *s)
{
    acm_domain *d = s->domain;
    if (s->fetched)
        return ACM_OK;
    ACM_TRY(smoke_require_storage(s));
    const acm_status st = d->ops->smoke_fetch(d, s);
    if (st != ACM_OK)
        return acm__smoke_fail(s, st, "%s", d->error);
    s->fetched = true;
    return ACM_OK;
}

/* ---- queries ------------------------------------------------------------------------ */

ACM_API acm_status acm_smoke_get_info(acm_smoke *smoke, acm_smoke_info *info)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (info == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "info is NULL");
    if (info->version != 1 && info->version != ACM_SMOKE_INFO_VERSION)
        return acm__smoke_fail(smoke, ACM_ERR_BAD_VERSION, "acm_smoke_info version %u is not "
                               "supported (1 to %d)", info->version, ACM_SMOKE_INFO_VERSION);
    acm_domain *d = smoke->domain;
    if (d->ops->smoke_counts != NULL) {
        ACM_TRY(smoke_require_storage(smoke));
        const acm_status st = d->ops->smoke_counts(d, smoke);
        if (st != ACM_OK)
            return acm__smoke_fail(smoke, st, "%s", d->error);
    }
    const acm_smoke_counts *c = &smoke->counts;
    info->capacity = smoke->capacity;
    info->alive = acm__smoke_alive(smoke);
    info->emitted = c->emitted;
    info->left = c->left;
    info->expired = c->expired;
    info->dropped = c->dropped + smoke->dropped_planned;
    info->emitters = smoke->nemitters;
    if (info->version >= 2)
        info->absorbed = c->absorbed;
    return ACM_OK;
}

acm_status acm__smoke_grid(acm_smoke *s, int32_t subdivisions, int32_t dims[3])
{
    const acm_domain *d = s->domain;
    if (subdivisions < 1 || subdivisions > ACM_SMOKE_SUBDIVISIONS_MAX)
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE, "subdivisions=%d must be in [1, %d]",
                               (int)subdivisions, ACM_SMOKE_SUBDIVISIONS_MAX);
    dims[0] = d->nx * subdivisions;
    dims[1] = d->ny * subdivisions;
    dims[2] = d->nz * subdivisions;
    return ACM_OK;
}

/* The grid's size, checked against the caller's count. */
static acm_status density_grid(acm_smoke *s, int32_t subdivisions, size_t count, int32_t m[3])
{
    ACM_TRY(acm__smoke_grid(s, subdivisions, m));
    const size_t voxels = (size_t)m[0] * (size_t)m[1] * (size_t)m[2];
    if (count != voxels)
        return acm__smoke_fail(s, ACM_ERR_BUFFER_SIZE, "count=%zu but the grid has %zu voxels "
                               "(%dx%dx%d)", count, voxels, m[0], m[1], m[2]);
    return ACM_OK;
}

/* The host's projection of the particles as last synchronised. */
static void density_host(acm_smoke *s, int32_t subdivisions, const int32_t m[3], float *dst)
{
    const acm_ib_grid g = acm__ib_grid(s->domain);
    memset(dst, 0, (size_t)m[0] * (size_t)m[1] * (size_t)m[2] * sizeof(float));
    for (uint64_t k = 0; k < s->capacity; ++k) {
        if (s->age[k] < 0)
            continue;
        size_t voxel[8];
        float w[8];
        acm_smoke_cic(&g, m, subdivisions, s->x + 3 * k, voxel, w);
        for (int q = 0; q < 8; ++q)
            dst[voxel[q]] += w[q];
    }
}

ACM_API acm_status acm_smoke_density(acm_smoke *smoke, int32_t subdivisions, float *dst,
                                     size_t count)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "dst is NULL");
    int32_t m[3] = {0, 0, 0};
    ACM_TRY(density_grid(smoke, subdivisions, count, m));
    acm_domain *d = smoke->domain;
    if (d->ops->smoke_density != NULL) { /* projected on the device, then copied */
        ACM_TRY(smoke_require_storage(smoke));
        const acm_status st = d->ops->smoke_density(d, smoke, subdivisions, dst, count, false);
        return st == ACM_OK ? ACM_OK : acm__smoke_fail(smoke, st, "%s", d->error);
    }
    ACM_TRY(acm__smoke_sync(smoke));
    density_host(smoke, subdivisions, m, dst);
    return ACM_OK;
}

acm_status acm__smoke_density_device(acm_smoke *smoke, int32_t subdivisions, float *device_dst,
                                     size_t count)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (device_dst == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "device_dst is NULL");
    int32_t m[3] = {0, 0, 0};
    ACM_TRY(density_grid(smoke, subdivisions, count, m));
    acm_domain *d = smoke->domain;
    if (d->ops->smoke_density == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_UNSUPPORTED, "the smoke's domain runs on the %s "
                               "backend: no device memory", d->ops->name);
    ACM_TRY(smoke_require_storage(smoke));
    const acm_status st = d->ops->smoke_density(d, smoke, subdivisions, device_dst, count, true);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(smoke, st, "%s", d->error);
}

ACM_API acm_status acm_smoke_get_particles(acm_smoke *smoke, double *dst, size_t count,
                                           size_t *written)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "dst is NULL");
    ACM_TRY(acm__smoke_sync(smoke));
    const uint64_t alive = acm__smoke_alive(smoke);
    if (count < alive)
        return acm__smoke_fail(smoke, ACM_ERR_BUFFER_SIZE, "room for %zu particles, %llu are alive",
                               count, (unsigned long long)alive);
    size_t n = 0;
    for (uint64_t k = 0; k < smoke->capacity; ++k)
        if (smoke->age[k] >= 0)
            memcpy(dst + 3 * n++, smoke->x + 3 * k, 3 * sizeof(double));
    if (written != NULL)
        *written = n;
    return ACM_OK;
}
