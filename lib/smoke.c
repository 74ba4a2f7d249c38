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

#include "backend.h"
#include "smoke.h"
#include "smoke_math.h"
#include "solid.h" /* acm__ib_grid */

#define ACM_SMOKE_CAPACITY_MAX (UINT64_C(1) << 31)

acm_status acm__smoke_fail(acm_smoke *s, acm_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(s->error, ACM_ERROR_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- random numbers: splitmix64, a uniform double in [0, 1) ------------------------ */

static double uniform(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- lifecycle --------------------------------------------------------------------- */

ACM_API acm_status acm_smoke_options_init(acm_smoke_options *opts, uint32_t version)
{
    if (opts == NULL)
        return ACM_ERR_NULL_POINTER;
    if (version != ACM_SMOKE_OPTIONS_VERSION)
        return ACM_ERR_BAD_VERSION;
    const acm_smoke_options init = ACM_SMOKE_OPTIONS_INIT;
    *opts = init;
    return ACM_OK;
}

static void free_smoke(acm_smoke *s)
{
    if (s->dev != NULL)
        s->domain->ops->smoke_detach(s);
    free(s->died);
    free(s->new_slots);
    for (int32_t i = 0; i < s->nemitters; ++i)
        free(s->emitters[i].points);
    free(s->emitters);
    free(s->x);
    free(s->age);
    free(s->life);
    free(s->free_slot);
    free(s);
}

/* Every slot free; the top of the stack is slot 0, so slots fill in order. */
static void reset_slots(acm_smoke *s)
{
    s->nfree = s->capacity;
    for (uint64_t k = 0; k < s->capacity; ++k) {
        s->free_slot[k] = (uint32_t)(s->capacity - 1 - k);
        s->age[k] = -1;
    }
}

/* The domain's list of smokes and its velocity buffer. */
static acm_status join_domain(acm_domain *d, acm_smoke *s)
{
    if (d->ops->smoke_advect == NULL && d->smoke_velocity == NULL && /* the host's moves */
        (d->smoke_velocity = malloc(3 * (size_t)d->ncells * sizeof(float))) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the smoke's velocity field");
    if (d->nsmokes == d->smokes_cap) {
        int32_t cap = d->smokes_cap ? 2 * d->smokes_cap : 4;
        acm_smoke **p = realloc(d->smokes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot grow the list of smokes");
        d->smokes = p;
        d->smokes_cap = cap;
    }
    d->smokes[d->nsmokes++] = s;
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
    acm_smoke *s = calloc(1, sizeof *s);
    const size_t n = (size_t)opts->capacity;
    if (s != NULL) {
        s->x = malloc(3 * n * sizeof(double));
        s->age = malloc(n * sizeof(int64_t));
        s->life = calloc(n, sizeof(int64_t));
        s->free_slot = malloc(n * sizeof(uint32_t));
        s->died = malloc(n);
        s->new_slots = malloc(n * sizeof(uint32_t));
    }
    if (s == NULL || s->x == NULL || s->age == NULL || s->life == NULL || s->free_slot == NULL ||
        s->died == NULL || s->new_slots == NULL) {
        if (s != NULL)
            free_smoke(s);
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate a smoke of %zu particles", n);
    }
    s->domain = domain;
    s->capacity = opts->capacity;
    s->rng = opts->seed;
    reset_slots(s);
    acm_status st = domain->ops->smoke_attach != NULL ? domain->ops->smoke_attach(domain, s) : ACM_OK;
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
    free(d->smokes);
    free(d->smoke_velocity);
    d->smokes = NULL;
    d->smoke_velocity = NULL;
    d->smokes_cap = 0;
}

ACM_API const char *acm_smoke_last_error(const acm_smoke *smoke)
{
    return smoke == NULL ? "smoke is NULL" : smoke->error;
}

/* ---- emitters ---------------------------------------------------------------------- */

static bool finite3(const double v[3])
{
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

static acm_status check_emitter(acm_smoke *s, const acm_emitter *e)
{
    if (!(isfinite(e->rate) && e->rate >= 0.0) || e->lifetime < 0)
        return acm__smoke_fail(s, ACM_ERR_OUT_OF_RANGE,
                          "rate=%g must be finite and >= 0, lifetime=%lld >= 0 (0: unlimited)",
                          e->rate, (long long)e->lifetime);
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
    default:
        return acm__smoke_fail(s, ACM_ERR_BAD_ENUM, "unknown emitter shape %d", (int)e->shape);
    }
}

ACM_API acm_status acm_smoke_add_emitter(acm_smoke *smoke, const acm_emitter *emitter)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (emitter == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "emitter is NULL");
    if (emitter->version != ACM_EMITTER_VERSION)
        return acm__smoke_fail(smoke, ACM_ERR_BAD_VERSION, "acm_emitter version %u is not supported "
                          "(%d)", emitter->version, ACM_EMITTER_VERSION);
    ACM_TRY(check_emitter(smoke, emitter));
    smoke_emitter se;
    memset(&se, 0, sizeof se);
    se.e = *emitter;
    if (emitter->shape == ACM_EMITTER_POINTS) {
        const size_t bytes = 3 * emitter->point_count * sizeof(double);
        if ((se.points = malloc(bytes)) == NULL)
            return acm__smoke_fail(smoke, ACM_ERR_NO_MEMORY, "cannot copy %zu points",
                              emitter->point_count);
        memcpy(se.points, emitter->points, bytes);
        se.e.points = se.points;
    } else {
        se.e.points = NULL;
        se.e.point_count = 0;
    }
    smoke_emitter *p = realloc(smoke->emitters, ((size_t)smoke->nemitters + 1) * sizeof *p);
    if (p == NULL) {
        free(se.points);
        return acm__smoke_fail(smoke, ACM_ERR_NO_MEMORY, "cannot grow the list of emitters");
    }
    smoke->emitters = p;
    smoke->emitters[smoke->nemitters++] = se;
    return ACM_OK;
}

/* A position of emitter se. */
static void emit_position(acm_smoke *s, smoke_emitter *se, double X[3])
{
    const acm_emitter *e = &se->e;
    switch (e->shape) {
    case ACM_EMITTER_BOX:
        for (int a = 0; a < 3; ++a)
            X[a] = e->lo[a] + (e->hi[a] - e->lo[a]) * uniform(&s->rng);
        return;
    case ACM_EMITTER_SPHERE: {
        double v[3], r2;
        do { /* uniform in the ball: rejection from the cube, 1.9 tries on average */
            for (int a = 0; a < 3; ++a)
                v[a] = 2.0 * uniform(&s->rng) - 1.0;
            r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        } while (r2 > 1.0);
        for (int a = 0; a < 3; ++a)
            X[a] = e->centre[a] + e->radius * v[a];
        return;
    }
    default:
        memcpy(X, e->points + 3 * se->next, 3 * sizeof(double));
        se->next = (se->next + 1) % e->point_count;
        return;
    }
}

/* This step's particles of every emitter, into free slots (listed in new_slots). */
static void emit(acm_smoke *s)
{
    s->nnew = 0;
    for (int32_t i = 0; i < s->nemitters; ++i) {
        smoke_emitter *se = &s->emitters[i];
        se->carry += se->e.rate;
        const double whole = floor(se->carry);
        se->carry -= whole;
        for (uint64_t k = 0; k < (uint64_t)whole; ++k) {
            if (s->nfree == 0) {
                s->dropped += (uint64_t)whole - k;
                break;
            }
            const uint32_t slot = s->free_slot[--s->nfree];
            s->new_slots[s->nnew++] = slot;
            emit_position(s, se, s->x + 3 * (size_t)slot);
            s->age[slot] = 0;
            s->life[slot] = se->e.lifetime;
            s->emitted++;
        }
    }
}

/* ---- advection --------------------------------------------------------------------- */

static void recycle(acm_smoke *s, uint32_t slot)
{
    s->age[slot] = -1;
    s->free_slot[s->nfree++] = slot;
}

/* The bookkeeping of a step: died[k] says what became of slot k's particle. */
static void account_step(acm_smoke *s, const uint8_t *died)
{
    for (uint64_t k = 0; k < s->capacity; ++k) {
        if (s->age[k] < 0)
            continue;
        s->age[k]++;
        if (died[k] == ACM_SMOKE_LEFT)
            s->left++;
        else if (died[k] == ACM_SMOKE_EXPIRED)
            s->expired++;
        if (died[k] != ACM_SMOKE_ALIVE)
            recycle(s, (uint32_t)k);
    }
}

/* The host's step of every live particle (the CPU backend, and the oracle). */
static void advect_host(acm_smoke *s, const float *u, uint8_t *died)
{
    const acm_ib_grid g = acm__ib_grid(s->domain);
#pragma omp parallel for schedule(static) if (s->capacity >= 65536)
    for (int64_t k = 0; k < (int64_t)s->capacity; ++k) {
        int64_t age = s->age[k];
        died[k] = age < 0 ? ACM_SMOKE_ALIVE
                          : (uint8_t)acm_smoke_step(&g, u, s->x + 3 * k, &age, s->life[k]);
    }
}

acm_status acm__smokes_advance(acm_domain *d)
{
    const struct acm_backend_ops *ops = d->ops;
    const bool device = ops->smoke_advect != NULL;
    if (device)
        ACM_TRY(ops->smoke_velocity(d));
    else
        ACM_TRY(ops->get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT32, d->smoke_velocity));
    for (int32_t i = 0; i < d->nsmokes; ++i) {
        acm_smoke *s = d->smokes[i];
        if (device)
            ACM_TRY(ops->smoke_advect(d, s, s->died));
        else
            advect_host(s, d->smoke_velocity, s->died);
        account_step(s, s->died);
        emit(s);
        if (device && s->nnew > 0)
            ACM_TRY(ops->smoke_emitted(d, s, s->new_slots, s->nnew));
    }
    return ACM_OK;
}

acm_status acm__smoke_positions(acm_smoke *s)
{
    acm_domain *d = s->domain;
    if (d->ops->smoke_fetch == NULL)
        return ACM_OK;
    const acm_status st = d->ops->smoke_fetch(d, s);
    return st == ACM_OK ? ACM_OK : acm__smoke_fail(s, st, "%s", d->error);
}

/* ---- queries ------------------------------------------------------------------------ */

ACM_API acm_status acm_smoke_get_info(acm_smoke *smoke, acm_smoke_info *info)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (info == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "info is NULL");
    if (info->version != ACM_SMOKE_INFO_VERSION)
        return acm__smoke_fail(smoke, ACM_ERR_BAD_VERSION, "acm_smoke_info version %u is not "
                          "supported (%d)", info->version, ACM_SMOKE_INFO_VERSION);
    info->capacity = smoke->capacity;
    info->alive = smoke->capacity - smoke->nfree;
    info->emitted = smoke->emitted;
    info->left = smoke->left;
    info->expired = smoke->expired;
    info->dropped = smoke->dropped;
    info->emitters = smoke->nemitters;
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

ACM_API acm_status acm_smoke_density(acm_smoke *smoke, int32_t subdivisions, float *dst,
                                     size_t count)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "dst is NULL");
    int32_t m[3] = {0, 0, 0};
    ACM_TRY(acm__smoke_grid(smoke, subdivisions, m));
    const size_t voxels = (size_t)m[0] * (size_t)m[1] * (size_t)m[2];
    if (count != voxels)
        return acm__smoke_fail(smoke, ACM_ERR_BUFFER_SIZE, "count=%zu but the grid has %zu "
                               "voxels (%dx%dx%d)", count, voxels, m[0], m[1], m[2]);
    ACM_TRY(acm__smoke_positions(smoke));
    const acm_ib_grid g = acm__ib_grid(smoke->domain);
    const double w = (double)subdivisions * subdivisions * subdivisions; /* per cell volume */
    memset(dst, 0, voxels * sizeof(float));
    for (uint64_t k = 0; k < smoke->capacity; ++k) {
        if (smoke->age[k] < 0)
            continue;
        int32_t c[3][2];
        double f[3];
        for (int a = 0; a < 3; ++a)
            /* voxel i is centred at (i + 1/2) / s - 1/2: in voxel units, the particle
             * lies between voxel centres as it lies between cell centres */
            acm_smoke_axis((smoke->x[3 * k + (uint64_t)a] + 0.5) * subdivisions - 0.5, m[a],
                           g.periodic[a], &c[a][0], &c[a][1], &f[a]);
        for (int q = 0; q < 8; ++q) {
            const int dx = q & 1, dy = (q >> 1) & 1, dz = q >> 2;
            const double wq = (dx ? f[0] : 1.0 - f[0]) * (dy ? f[1] : 1.0 - f[1]) *
                              (dz ? f[2] : 1.0 - f[2]);
            dst[(size_t)c[0][dx] + (size_t)m[0] * ((size_t)c[1][dy] + (size_t)m[1] * (size_t)c[2][dz])] +=
                (float)(w * wq);
        }
    }
    return ACM_OK;
}

ACM_API acm_status acm_smoke_get_particles(acm_smoke *smoke, double *dst, size_t count,
                                           size_t *written)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "dst is NULL");
    const uint64_t alive = smoke->capacity - smoke->nfree;
    if (count < alive)
        return acm__smoke_fail(smoke, ACM_ERR_BUFFER_SIZE, "room for %zu particles, %llu are alive",
                          count, (unsigned long long)alive);
    ACM_TRY(acm__smoke_positions(smoke));
    size_t n = 0;
    for (uint64_t k = 0; k < smoke->capacity; ++k)
        if (smoke->age[k] >= 0)
            memcpy(dst + 3 * n++, smoke->x + 3 * k, 3 * sizeof(double));
    if (written != NULL)
        *written = n;
    return ACM_OK;
}
