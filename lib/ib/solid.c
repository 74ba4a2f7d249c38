/*
 * libacmlbm -- the public acm_solid API: validate, build the samples (mesh
 * sampling or the caller's points), sort them into the Morton-block order,
 * keep the rigid body, and hand the samples to the backend.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* isfinite, sqrt, fabs */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, free, malloc, qsort */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "guard.h"   /* acm__domain_require_storage */
#include "mesh.h"
#include "options.h"
#include "morton.h"
#include "sampling.h"
#include "smoke_math.h" /* acm_smoke_obstacle */
#include "solid.h"

#define ACM_DENSITY_RATIO_MIN 1.2 /* explicit coupling limit (spec 9.2) */

static acm_status solid_fail(const acm_solid *s, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static acm_status solid_fail(const acm_solid *s, acm_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(((acm_solid *)(uintptr_t)s)->error, ACM_ERROR_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

static size_t solid_options_size(uint32_t version)
{
    return version == 1 ? sizeof(acm_solid_options) : 0;
}

ACM_API acm_status acm_solid_options_init(acm_solid_options *opts, uint32_t version)
{
    const acm_solid_options def = ACM_SOLID_OPTIONS_INIT;
    return acm__options_init(opts, &def, solid_options_size(version), version);
}

acm_ib_grid acm__ib_grid(const acm_domain *d)
{
    acm_ib_grid g;
    memset(&g, 0, sizeof g); /* its padding too: the CUDA backend's graph keys compare bytes */
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    for (int a = 0; a < 3; ++a) {
        g.n[a] = g.whole[a] = n[a];
        g.lo[a] = 0;
        g.periodic[a] = d->setup.face[2 * a].type == ACM_BOUNDARY_PERIODIC &&
                        d->setup.face[2 * a + 1].type == ACM_BOUNDARY_PERIODIC;
    }
    if (d->whole_nz > 0) { /* a slab: its ghost ends are walls, the whole domain's are not */
        g.lo[2] = d->origin_z;
        g.whole[2] = d->whole_nz;
        g.periodic[2] = d->whole_periodic_z;
    }
    return g;
}

/* ---- validation -------------------------------------------------------------------- */

static bool finite_n(const double *v, int n)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(v[i]))
            return false;
    return true;
}

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* Everything of the options that needs no geometry. */
static acm_status check_options(acm_domain *d, const acm_solid_options *o)
{
    if ((o->mesh == NULL) == (o->sample_count == 0))
        return ACM_FAIL(d, ACM_ERR_INVALID_ARG,
                        "give either a mesh or sample points (mesh %s, sample_count %zu)",
                        o->mesh ? "set" : "NULL", o->sample_count);
    if (o->mesh == NULL && (o->sample_points == NULL || o->sample_areas == NULL))
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "sample_points or sample_areas is NULL");
    if ((unsigned)o->motion > ACM_MOTION_FREE)
        return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown motion %d", (int)o->motion);
    if (!(isfinite(o->scale) && o->scale > 0.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "scale=%g must be positive and finite", o->scale);
    if (!finite_n(o->position, 3) || !finite_n(o->orientation, 4) || !finite_n(o->velocity, 3) ||
        !finite_n(o->angular_velocity, 3) || !finite_n(o->gravity, 3) || !finite_n(o->inertia, 6))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "position, orientation, velocities, gravity and inertia must be finite");
    if (o->mesh != NULL && !(o->samples_per_cell >= 1.0 && o->samples_per_cell <= 400.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "samples_per_cell=%g must lie in [1, 400]",
                        o->samples_per_cell);
    if (!(o->surface_inset >= 0.0 && o->surface_inset <= 2.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "surface_inset=%g must lie in [0, 2]",
                        o->surface_inset);
    if (!(o->ib_alpha > 0.0 && o->ib_alpha <= 2.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "ib_alpha=%g must lie in (0, 2]", o->ib_alpha);
    if (!(isfinite(o->density) && o->density >= 0.0) || !(isfinite(o->mass) && o->mass >= 0.0) ||
        !(isfinite(o->volume) && o->volume >= 0.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "density=%g, mass=%g and volume=%g must be finite and >= 0", o->density,
                        o->mass, o->volume);
    if (o->motion == ACM_MOTION_STATIC && (norm3(o->velocity) != 0.0 || norm3(o->angular_velocity) != 0.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "a static solid cannot have a velocity");
    return ACM_OK;
}

/* ---- samples ------------------------------------------------------------------------ */

/* The mesh's surface in cells^2 underflows at this scale (its area in its own
 * units is positive: acm_mesh_create refuses less). */
static acm_status surface_underflows(acm_domain *d, const acm_solid_options *o)
{
    return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                    "scale=%g: the surface of the mesh (area %g) underflows in cells^2, beyond "
                    "the range of a double; give a larger scale or the mesh in larger units",
                    o->scale, o->mesh->info.area);
}

/* The mesh at o->scale keeps a surface and, closed, its volume (computed as
 * mass_properties computes it). */
static acm_status check_mesh_scale(acm_domain *d, const acm_solid_options *o)
{
    const acm_mesh_info *in = &o->mesh->info;
    const double k3 = o->scale * o->scale * o->scale;
    if (!(in->area * o->scale * o->scale > 0.0))
        return surface_underflows(d, o);
    if (in->closed && in->volume > 0.0 && !(in->volume * k3 > 0.0))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "scale=%g: the volume of the closed mesh (%g) underflows to 0 cells^3, "
                        "leaving it no volume; give a larger scale or the mesh in larger units",
                        o->scale, in->volume);
    return ACM_OK;
}

/* Body-frame samples of a mesh: vertices moved to the centroid and scaled. */
static acm_status samples_from_mesh(acm_domain *d, acm_solid *s, const acm_solid_options *o,
                                    uint64_t max_samples)
{
    const acm_mesh *mesh = o->mesh;
    ACM_TRY(check_mesh_scale(d, o));
    const double *c = mesh->info.centroid;
    double *v = acm__malloc(3 * mesh->nverts * sizeof(double));
    if (v == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot copy a mesh of %zu vertices", mesh->nverts);
    for (size_t i = 0; i < mesh->nverts; ++i)
        for (int a = 0; a < 3; ++a)
            v[3 * i + (size_t)a] = (mesh->v[3 * i + (size_t)a] - c[a]) * o->scale;
    acm_surface_samples smp;
    acm_status st = acm__sample_surface(v, mesh->t, mesh->ntris, o->samples_per_cell, o->seed,
                                        max_samples, &smp, d->error, sizeof d->error);
    if (st != ACM_OK) {
        acm__free(v);
        /* the triangles have an area (acm_mesh_create), so none in cells is the scale's doing:
         * their areas underflow triangle by triangle */
        return st == ACM_ERR_INVALID_ARG ? surface_underflows(d, o) : st;
    }
    s->count = smp.count;
    s->r = smp.pos;
    smp.pos = NULL;
    if (mesh->info.closed && mesh->info.volume > 0.0) { /* outward normals: move inside */
        s->inset = o->surface_inset;
        for (uint64_t l = 0; l < s->count; ++l)
            for (int a = 0; a < 3; ++a)
                s->r[3 * l + (uint64_t)a] -= o->surface_inset * smp.normal[3 * l + (uint64_t)a];
    }
    s->normal = smp.normal; /* kept for solid emitters */
    smp.normal = NULL;
    s->dv = acm__malloc(smp.count * sizeof(double));
    s->area = smp.area * (double)smp.count;
    s->spacing = smp.min_distance;
    acm__surface_samples_free(&smp);
    if (s->dv == NULL) {
        acm__free(v);
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %zu sample weights", (size_t)s->count);
    }
    for (uint64_t l = 0; l < s->count; ++l)
        s->dv[l] = s->area / (double)s->count; /* dV = A dx with dx = 1 (spec 8.1) */
    if (mesh->info.closed) { /* kept for inside tests */
        s->mt = acm__malloc(3 * mesh->ntris * sizeof(uint32_t));
        if (s->mt == NULL) {
            acm__free(v);
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot copy a mesh of %zu triangles", mesh->ntris);
        }
        memcpy(s->mt, mesh->t, 3 * mesh->ntris * sizeof(uint32_t));
        s->mv = v;
        s->mnv = mesh->nverts;
        s->mnt = mesh->ntris;
    } else {
        acm__free(v);
    }
    return ACM_OK;
}

static acm_status samples_from_points(acm_domain *d, acm_solid *s, const acm_solid_options *o,
                                      uint64_t max_samples)
{
    if (o->sample_count > max_samples)
        return ACM_FAIL(d, ACM_ERR_LIMIT, "%zu samples exceed max_samples=%llu", o->sample_count,
                        (unsigned long long)max_samples);
    const size_t n = o->sample_count;
    for (size_t l = 0; l < n; ++l) {
        const double *p = o->sample_points + 3 * l, A = o->sample_areas[l];
        if (!finite_n(p, 3) || !(isfinite(A) && A > 0.0))
            return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                            "sample %zu: point (%g, %g, %g) must be finite and its area %g "
                            "positive and finite",
                            l, p[0], p[1], p[2], A);
    }
    s->r = acm__malloc(3 * n * sizeof(double));
    s->dv = acm__malloc(n * sizeof(double));
    if (s->r == NULL || s->dv == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %zu samples", n);
    s->count = n;
    s->area = 0.0;
    for (size_t l = 0; l < n; ++l) {
        for (int a = 0; a < 3; ++a)
            s->r[3 * l + (size_t)a] = o->sample_points[3 * l + (size_t)a] * o->scale;
        s->dv[l] = o->sample_areas[l] * o->scale * o->scale;
        s->area += s->dv[l];
    }
    return ACM_OK;
}

/* ---- mass properties ------------------------------------------------------------------ */

static acm_status mass_properties(acm_domain *d, acm_solid *s, const acm_solid_options *o)
{
    const double k3 = o->scale * o->scale * o->scale, k5 = k3 * o->scale * o->scale;
    const bool mesh_closed = o->mesh != NULL && o->mesh->info.closed && o->mesh->info.volume > 0.0;
    double volume = o->volume > 0.0 ? o->volume : (mesh_closed ? o->mesh->info.volume * k3 : 0.0);
    double mass = o->mass;
    if (mass == 0.0 && o->density > 0.0)
        mass = o->density * volume;
    bool given_inertia = false;
    for (int i = 0; i < 6; ++i)
        given_inertia |= o->inertia[i] != 0.0;
    s->body.volume = volume;
    s->body.mass = mass;
    s->has_mass = false;
    if (given_inertia)
        memcpy(s->body.inertia, o->inertia, sizeof o->inertia);
    else if (mesh_closed && volume > 0.0)
        for (int i = 0; i < 6; ++i) /* unit-density inertia scaled by the mean density */
            s->body.inertia[i] = o->mesh->info.inertia[i] * k5 * mass / volume;
    if (volume > 0.0 && mass > 0.0 && (given_inertia || mesh_closed)) {
        const double I[6] = {s->body.inertia[0], s->body.inertia[1], s->body.inertia[2],
                             s->body.inertia[3], s->body.inertia[4], s->body.inertia[5]};
        const double det = I[0] * (I[1] * I[2] - I[5] * I[5]) - I[3] * (I[3] * I[2] - I[5] * I[4]) +
                           I[4] * (I[3] * I[5] - I[1] * I[4]);
        if (!(I[0] > 0.0 && I[1] > 0.0 && I[2] > 0.0 && det > 0.0 && isfinite(det)))
            return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                            "the inertia tensor (%g, %g, %g, %g, %g, %g) is not positive definite "
                            "(or its determinant overflows)",
                            I[0], I[1], I[2], I[3], I[4], I[5]);
        if (!(isfinite(mass) && isfinite(volume)))
            return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "mass %g and volume %g must be finite",
                            mass, volume);
        s->has_mass = true;
    }
    if (o->motion != ACM_MOTION_FREE)
        return ACM_OK;
    if (!s->has_mass)
        return ACM_FAIL(d, ACM_ERR_INVALID_ARG,
                        "a free solid needs its mass properties: a closed mesh with density or "
                        "mass, or volume, mass (or density) and inertia");
    if (mass < ACM_DENSITY_RATIO_MIN * volume)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "a free solid must be at least %.1f times as dense as the fluid (mass %g, "
                        "volume %g): the explicit coupling is unstable for lighter bodies",
                        ACM_DENSITY_RATIO_MIN, mass, volume);
    return ACM_OK;
}

/* ---- placement checks ----------------------------------------------------------------- */

/* Farthest a solid's centre may lie from the origin along a periodic axis,
 * cells: positions are taken modulo the axis, and beyond this the samples'
 * offsets from the centre would be lost to rounding. */
#define ACM_SOLID_PERIODIC_REACH 0x1p24

/* Every sample within the domain ([-1/2, n - 1/2]) along non-periodic axes;
 * the samples' extent along every axis into lo and hi. */
static bool inside_domain(const acm_domain *d, const acm_solid *s, const acm_body *b,
                          uint64_t *bad, double X[3], double lo[3], double hi[3])
{
    const acm_ib_grid g = acm__ib_grid(d);
    const double zero[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < 3; ++a) {
        lo[a] = s->count > 0 ? INFINITY : b->x[a];
        hi[a] = s->count > 0 ? -INFINITY : b->x[a];
    }
    for (uint64_t l = 0; l < s->count; ++l) {
        double ub[3];
        acm_rigid_place(b->x, b->q, zero, zero, s->r + 3 * l, X, ub);
        for (int a = 0; a < 3; ++a) {
            if (!g.periodic[a] && !(X[a] >= -0.5 && X[a] <= (double)g.n[a] - 0.5)) {
                *bad = l;
                return false;
            }
            lo[a] = fmin(lo[a], X[a]);
            hi[a] = fmax(hi[a], X[a]);
        }
    }
    return true;
}

/* Along every periodic axis: the centre and every sample within reach, and
 * the solid shorter than the axis (else it would reach around onto itself). */
static acm_status check_periodic(const acm_domain *d, const acm_body *b, const double lo[3],
                                 const double hi[3], char *msg, size_t n)
{
    const acm_ib_grid g = acm__ib_grid(d);
    for (int a = 0; a < 3; ++a) {
        if (!g.periodic[a])
            continue;
        const double far = fmax(fabs(b->x[a]), fmax(fabs(lo[a]), fabs(hi[a])));
        if (!(far <= ACM_SOLID_PERIODIC_REACH)) {
            acm__format(msg, n, "the solid reaches %c=%g, farther than 2^24 cells from the origin "
                        "along a periodic axis (positions are used modulo the %d cells there)",
                        "xyz"[a], far, g.whole[a]);
            return ACM_ERR_OUT_OF_RANGE;
        }
        if (!(hi[a] - lo[a] < (double)g.whole[a])) {
            acm__format(msg, n, "the solid spans %g cells along periodic axis %c, which has %d: "
                        "it would reach around the axis onto itself", hi[a] - lo[a], "xyz"[a],
                        g.whole[a]);
            return ACM_ERR_OUT_OF_RANGE;
        }
    }
    return ACM_OK;
}

static double largest_offset(const acm_solid *s)
{
    double r2 = 0.0;
    for (uint64_t l = 0; l < s->count; ++l) {
        const double *r = s->r + 3 * l, q = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        r2 = q > r2 ? q : r2;
    }
    return sqrt(r2);
}

/* A body state that may be used: finite, unit quaternion, slow enough, inside. */
/* Whether the sphere of radius r_max around the centre, which holds every
 * sample, passes both checks (with a margin for the rounding of the
 * samples' placement): then no sample needs placing. A game setting a
 * 10-cell ball's state every frame had spent 0.48 ms of host time a frame
 * placing its samples (docs/performance.md, "Real time"). */
static bool sphere_fits(const acm_domain *d, const acm_body *b, char *msg, size_t n)
{
    const acm_ib_grid g = acm__ib_grid(d);
    const double r = b->r_max + 1e-9 * (1.0 + b->r_max);
    double lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
        lo[a] = b->x[a] - r;
        hi[a] = b->x[a] + r;
        if (!g.periodic[a] && !(lo[a] >= -0.5 && hi[a] <= (double)g.n[a] - 0.5))
            return false;
    }
    return check_periodic(d, b, lo, hi, msg, n) == ACM_OK;
}

static acm_status check_body(acm_domain *d, const acm_solid *s, acm_body *b, char *msg, size_t n)
{
    if (!acm__quat_normalise(b->q)) {
        acm__format(msg, n, "orientation (%g, %g, %g, %g) is not a unit quaternion", b->q[0],
                    b->q[1], b->q[2], b->q[3]);
        return ACM_ERR_OUT_OF_RANGE;
    }
    double speed = acm_body_surface_speed(b);
    if (!(speed < ACM_SOLID_MAX_SPEED)) {
        acm__format(msg, n,
                    "surface speed %g (|v| + |w| r_max with r_max = %g) must stay below %g",
                    speed, b->r_max, ACM_SOLID_MAX_SPEED);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (sphere_fits(d, b, msg, n))
        return ACM_OK;
    uint64_t bad = 0;
    double X[3], lo[3], hi[3];
    if (!inside_domain(d, s, b, &bad, X, lo, hi)) {
        acm__format(msg, n,
                    "sample %llu at (%g, %g, %g) lies outside the %dx%dx%d domain along a "
                    "non-periodic axis (cells span [-0.5, n - 0.5])",
                    (unsigned long long)bad, X[0], X[1], X[2], d->nx, d->ny, d->nz);
        return ACM_ERR_OUT_OF_RANGE;
    }
    return check_periodic(d, b, lo, hi, msg, n);
}

/* ---- the Morton-block order (paper Sec. 4.1.2) ---------------------------------------- */

typedef struct sort_item {
    uint64_t key, index;
} sort_item;

#define ACM_RADIX_BITS 16
#define ACM_RADIX (1u << ACM_RADIX_BITS)

/* Sort items by key, stably (equal keys keep their order): least significant
 * digit first, 16 bits a pass, as many passes as the keys have bits. tmp
 * holds n items; returns the buffer that holds the result (items or tmp), or
 * NULL without memory for the counts. (With qsort and a full re-attach a
 * re-sort of 1.2M samples cost ~0.3 s, with this ~75 ms: docs/performance.md,
 * "Autotuning".) */
static sort_item *radix_sort(sort_item *items, sort_item *tmp, size_t n)
{
    size_t *count = acm__malloc((ACM_RADIX + 1) * sizeof *count);
    if (count == NULL)
        return NULL;
    uint64_t bits = 0;
    for (size_t i = 0; i < n; ++i)
        bits |= items[i].key;
    for (unsigned shift = 0; shift < 64 && (bits >> shift) != 0; shift += ACM_RADIX_BITS) {
        memset(count, 0, (ACM_RADIX + 1) * sizeof *count);
        for (size_t i = 0; i < n; ++i)
            count[((items[i].key >> shift) & (ACM_RADIX - 1)) + 1]++;
        for (size_t b = 0; b < ACM_RADIX; ++b)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; ++i)
            tmp[count[(items[i].key >> shift) & (ACM_RADIX - 1)]++] = items[i];
        sort_item *t = items;
        items = tmp;
        tmp = t;
    }
    acm__free(count);
    return items;
}

static bool in_sampling_order(const acm_solid *s)
{
    for (uint64_t l = 0; l < s->count; ++l)
        if (s->origin[l] != l)
            return false;
    return true;
}

/* Put sample from[l] of the current order at place l (r, dv and origin). */
static acm_status reorder(acm_domain *d, acm_solid *s, const uint64_t *from)
{
    const size_t n = (size_t)s->count;
    double *r = acm__malloc(3 * n * sizeof(double)), *dv = acm__malloc(n * sizeof(double));
    uint64_t *origin = acm__malloc(n * sizeof(uint64_t));
    if (r == NULL || dv == NULL || origin == NULL) {
        acm__free(r);
        acm__free(dv);
        acm__free(origin);
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot reorder %zu samples", n);
    }
    for (size_t l = 0; l < n; ++l) {
        memcpy(r + 3 * l, s->r + 3 * from[l], 3 * sizeof(double));
        dv[l] = s->dv[from[l]];
        origin[l] = s->origin[from[l]];
    }
    acm__free(s->r);
    acm__free(s->dv);
    acm__free(s->origin);
    s->r = r;
    s->dv = dv;
    s->origin = origin;
    return ACM_OK;
}

/* The order a backend re-sort (ib_resort) gave the samples, into the host's
 * copies: the backend's sampling indices say which sample now stands where. */
static acm_status order_home(acm_domain *d, acm_solid *s)
{
    if (!s->order_on_device)
        return ACM_OK;
    const size_t n = (size_t)s->count;
    uint64_t *origin = acm__malloc(n * sizeof(uint64_t)), *at = acm__malloc(n * sizeof(uint64_t));
    acm_status st = origin == NULL || at == NULL
                        ? ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot reorder %zu samples", n)
                        : d->ops->ib_order(d, s, origin);
    for (size_t l = 0; st == ACM_OK && l < n; ++l)
        at[s->origin[l]] = (uint64_t)l; /* where sample origin[l] stands here */
    for (size_t l = 0; st == ACM_OK && l < n; ++l) {
        if (origin[l] >= n)
            st = ACM_FAIL(d, ACM_ERR_INTERNAL, "sample %zu of the device order has index %llu",
                          l, (unsigned long long)origin[l]);
        else
            origin[l] = at[origin[l]]; /* from here */
    }
    if (st == ACM_OK)
        st = reorder(d, s, origin);
    s->order_on_device = st != ACM_OK;
    acm__free(origin);
    acm__free(at);
    return st;
}

/* Put the samples in the domain's order at the current pose and remember the
 * pose: the Morton-block order by key (stable: ties keep the current order),
 * or the sampling order (by origin). The origins move with the samples. */
static acm_status sort_samples(acm_domain *d, acm_solid *s)
{
    ACM_TRY(order_home(d, s));
    memcpy(s->sort_x, s->body.x, sizeof s->sort_x);
    memcpy(s->sort_q, s->body.q, sizeof s->sort_q);
    const bool morton = d->layout.ib.sample_order == ACM_SAMPLE_ORDER_MORTON_BLOCK;
    const size_t n = (size_t)s->count;
    if (n < 2 || (!morton && in_sampling_order(s)))
        return ACM_OK;
    const acm_ib_grid g = acm__ib_grid(d);
    sort_item *items = acm__malloc(2 * n * sizeof *items), *sorted = NULL;
    uint64_t *from = acm__malloc(n * sizeof(uint64_t));
    if (items != NULL && from != NULL) {
        const double zero[3] = {0.0, 0.0, 0.0};
#pragma omp parallel for schedule(static) if (n >= 16384)
        for (int64_t l = 0; l < (int64_t)n; ++l) {
            double X[3], ub[3];
            acm_rigid_place(s->body.x, s->body.q, zero, zero, s->r + 3 * l, X, ub);
            items[l].key = morton ? acm_sample_key(X, g.n, g.periodic, d->layout.ib.sample_block)
                                  : s->origin[l];
            items[l].index = (uint64_t)l;
        }
        sorted = radix_sort(items, items + n, n);
    }
    acm_status st = sorted == NULL ? ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot sort %zu samples", n)
                                   : ACM_OK;
    for (size_t l = 0; st == ACM_OK && l < n; ++l)
        from[l] = sorted[l].index;
    if (st == ACM_OK)
        st = reorder(d, s, from);
    acm__free(items);
    acm__free(from);
    ACM_TRY(st);
    s->resorts++;
    return ACM_OK;
}

/* ---- domain membership ---------------------------------------------------------------- */

static void renumber(acm_domain *d)
{
    uint64_t offset = 0;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        d->solids[i]->offset = offset;
        offset += d->solids[i]->count;
    }
    d->nsamples = offset;
}

static void free_solid(acm_solid *s)
{
    if (s == NULL)
        return;
    if (s->occ.dev != NULL) /* (the domain's storage need not exist) */
        s->domain->ops->release(s->domain, s->occ.dev);
    acm__free(s->occ.bits);
    acm__free(s->normal);
    acm__free(s->r);
    acm__free(s->dv);
    acm__free(s->origin);
    acm__free(s->mv);
    acm__free(s->mt);
    acm__free(s);
}

/* Hand the current sample set to the backend. The solids' forces of the
 * last step must have been fetched (the backend forgets them). */
static acm_status attach(acm_domain *d)
{
    if (d->impl != NULL)
        ACM_TRY(acm__solids_home(d));
    for (int32_t i = 0; i < d->nsolids; ++i) /* the upload takes the host's order */
        ACM_TRY(order_home(d, d->solids[i]));
    renumber(d);
    if (d->impl == NULL) { /* a failed re-layout left nothing to attach to */
        d->ib_dirty = true;
        return acm__domain_require_storage(d);
    }
    for (int32_t i = 0; i < d->nsolids; ++i)
        d->solids[i]->placed = d->solids[i]->body;
    acm_status st = d->ops->ib_attach(d);
    d->ib_dirty = st != ACM_OK;
    d->forces_stale = false;
    return st;
}

static acm_status add_to_domain(acm_domain *d, acm_solid *s)
{
    ACM_TRY(acm__solids_fetch(d));
    if (d->nsmokes > 0) /* its inside for the smokes, now rather than in a step's frame */
        ACM_TRY(acm__solid_obstacle_ready(s, d->ops->smoke_step != NULL));
    if (d->nsolids == d->solids_cap) {
        int32_t cap = d->solids_cap ? 2 * d->solids_cap : 4;
        acm_solid **p = acm__realloc(d->solids, (size_t)cap * sizeof *p);
        if (p == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot grow the list of solids");
        d->solids = p;
        d->solids_cap = cap;
    }
    d->solids[d->nsolids++] = s;
    d->config_serial++; /* a divergence snapshot without this solid is dropped */
    char keep[ACM_ERROR_SIZE];
    acm_status st = attach(d);
    if (st != ACM_OK) { /* leave the domain as it was */
        memcpy(keep, d->error, sizeof keep);
        d->nsolids--;
        (void)attach(d);
        memcpy(d->error, keep, sizeof keep);
    }
    return st;
}

/* ---- lifecycle ------------------------------------------------------------------------- */

static acm_status build_solid(acm_domain *d, acm_solid *s, const acm_solid_options *o)
{
    const uint64_t max_samples = o->max_samples ? o->max_samples : ACM_SOLID_DEFAULT_MAX_SAMPLES;
    if (o->mesh != NULL)
        ACM_TRY(samples_from_mesh(d, s, o, max_samples));
    else
        ACM_TRY(samples_from_points(d, s, o, max_samples));
    s->alpha = o->ib_alpha;
    acm_body *b = &s->body;
    b->motion = o->motion;
    memcpy(b->x, o->position, sizeof b->x);
    memcpy(b->q, o->orientation, sizeof b->q);
    memcpy(b->v, o->velocity, sizeof b->v);
    memcpy(b->w, o->angular_velocity, sizeof b->w);
    memcpy(b->gravity, o->gravity, sizeof b->gravity);
    b->r_max = largest_offset(s);
    ACM_TRY(mass_properties(d, s, o));
    ACM_TRY(check_body(d, s, b, d->error, sizeof d->error));
    if ((s->origin = acm__malloc((s->count ? s->count : 1) * sizeof(uint64_t))) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %zu sample origins", (size_t)s->count);
    for (uint64_t l = 0; l < s->count; ++l)
        s->origin[l] = l;
    ACM_TRY(sort_samples(d, s));
    s->moved = true;
    return ACM_OK;
}

ACM_API acm_status acm_solid_create(acm_solid **out, acm_domain *domain,
                                    const acm_solid_options *opts)
{
    if (domain == NULL)
        return ACM_ERR_NULL_POINTER;
    if (out == NULL || opts == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "%s is NULL", out == NULL ? "out" : "opts");
    size_t size = solid_options_size(opts->version);
    if (size == 0)
        return ACM_FAIL(domain, ACM_ERR_BAD_VERSION,
                        "acm_solid_options version %u is not supported (1..%d)", opts->version,
                        ACM_SOLID_OPTIONS_VERSION);
    acm_solid_options o = ACM_SOLID_OPTIONS_INIT;
    memcpy(&o, opts, size);
    ACM_TRY(acm__callback_check(domain, ACM_CALL_STATE));
    ACM_TRY(check_options(domain, &o));
    if (domain->ops->ib_attach == NULL)
        return ACM_FAIL(domain, ACM_ERR_UNSUPPORTED, "the %s backend has no immersed boundary",
                        domain->ops->name);
    acm_solid *s = acm__calloc(1, sizeof *s);
    if (s == NULL)
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate the solid handle");
    s->domain = domain;
    acm_status st = build_solid(domain, s, &o);
    if (st == ACM_OK)
        st = add_to_domain(domain, s);
    if (st != ACM_OK) {
        free_solid(s);
        return st;
    }
    *out = s;
    return ACM_OK;
}

ACM_API void acm_solid_destroy(acm_solid *solid)
{
    if (solid == NULL)
        return;
    acm_domain *d = solid->domain;
    if (d->in_callback != ACM_CALLBACK_NONE) { /* the call that runs it destroys it */
        solid->doomed = d->handles_doomed = true;
        return;
    }
    if (acm__solids_fetch(d) != ACM_OK) /* the others' forces; a device fault shows later */
        d->forces_stale = false;
    int32_t j = 0;
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (d->solids[i] != solid)
            d->solids[j++] = d->solids[i];
    d->nsolids = j;
    d->config_serial++;
    if (d->solid_removed != NULL) /* its smoke emitters stop */
        d->solid_removed(d, solid);
    free_solid(solid);
    (void)attach(d); /* on failure ib_dirty is left set and the next step retries */
}

void acm__solids_destroy_all(acm_domain *d)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        free_solid(d->solids[i]);
    acm__free(d->solids);
    d->solids = NULL;
    d->nsolids = d->solids_cap = 0;
    d->nsamples = 0;
}

ACM_API const char *acm_solid_last_error(const acm_solid *solid)
{
    return solid == NULL ? "solid is NULL" : solid->error;
}

/* ---- the step ------------------------------------------------------------------------- */

acm_status acm__solids_attach(acm_domain *d) { return attach(d); }

acm_status acm__solids_reattach(acm_domain *d)
{
    acm_body *now = acm__malloc(((size_t)d->nsolids + 1) * sizeof *now);
    if (now == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold %d poses", (int)d->nsolids);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        now[i] = d->solids[i]->body;
        d->solids[i]->body = d->solids[i]->placed;
    }
    acm_status st = attach(d);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        d->solids[i]->placed = d->solids[i]->body;
        d->solids[i]->body = now[i];
    }
    acm__free(now);
    return st;
}

acm_status acm__solids_resort(acm_domain *d)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        ACM_TRY(sort_samples(d, d->solids[i]));
    return ACM_OK;
}

acm_status acm__solids_home(acm_domain *d)
{
    return d->bodies_on_backend && d->ops->ib_home != NULL ? d->ops->ib_home(d) : ACM_OK;
}

/* A query or change of one solid: the free bodies home first. A free body
 * that reached the speed limit on the backend marked the domain diverged
 * there (its steps say so from now on); the solid's state is still read. */
static acm_status solid_home(acm_solid *s)
{
    const acm_status st = acm__solids_home(s->domain);
    return st == ACM_OK || st == ACM_ERR_DIVERGED ? ACM_OK
                                                  : solid_fail(s, st, "%s", s->domain->error);
}

acm_status acm__solids_fetch(acm_domain *d)
{
    ACM_TRY(acm__domain_require_storage(d));
    ACM_TRY(acm__solids_home(d));
    for (int32_t i = 0; i < d->nsolids; ++i)
        ACM_TRY(order_home(d, d->solids[i]));
    if (!d->forces_stale)
        return ACM_OK;
    return d->ops->ib_fetch(d);
}

bool acm__solids_any_free(const acm_domain *d)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (d->solids[i]->body.motion == ACM_MOTION_FREE)
            return true;
    return false;
}

void acm__solids_coupled_velocities(const acm_domain *d, const acm_coupling *planes,
                                    int32_t nplanes, double *dvdw)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (d->solids[i]->body.motion == ACM_MOTION_FREE) {
            acm_coupling c;
            acm_coupling_fold(planes + (size_t)i * (size_t)nplanes, nplanes, &c);
            acm_body_coupled_velocity(&d->solids[i]->body, &c, dvdw + 6 * i, dvdw + 6 * i + 3);
        }
}

/* A free body the backend integrates (d->bodies_on_backend): the host's copy
 * of it waits for acm__solids_home. */
static bool on_backend(const acm_domain *d, const acm_solid *s)
{
    return d->bodies_on_backend && s->body.motion == ACM_MOTION_FREE;
}

/* Whether a moving solid at body b, last sorted at (sort_x, sort_q), may
 * have drifted by a block since. */
static bool drifted(const acm_domain *d, const acm_body *b, const double sort_x[3],
                    const double sort_q[4])
{
    return b->motion != ACM_MOTION_STATIC && d->layout.ib.sample_order == ACM_SAMPLE_ORDER_MORTON_BLOCK &&
           acm_body_displacement(sort_x, sort_q, b->x, b->q, b->r_max) >= d->layout.ib.sample_block;
}

/* A moving solid whose samples may have drifted by a block since its last sort. */
static bool needs_resort(const acm_domain *d, const acm_solid *s)
{
    return drifted(d, &s->body, s->sort_x, s->sort_q);
}

void acm__solids_plan(const acm_domain *d, int steps, acm_body *poses, uint32_t *resort)
{
    const int32_t n = d->nsolids;
    const double zero[3] = {0.0, 0.0, 0.0};
    memset(resort, 0, (size_t)steps * sizeof *resort);
    for (int32_t i = 0; i < n; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion == ACM_MOTION_FREE) /* the backend's to move */
            continue;
        acm_body b = s->body; /* the pose and the last sort's: what drifted reads */
        double sort_x[3], sort_q[4];
        memcpy(sort_x, s->sort_x, sizeof sort_x);
        memcpy(sort_q, s->sort_q, sizeof sort_q);
        poses[i] = b;
        for (int j = 0; j < steps; ++j) {
            acm__body_advance(&b, zero, zero); /* not free: no force enters */
            poses[(size_t)(j + 1) * (size_t)n + (size_t)i] = b;
            if (drifted(d, &b, sort_x, sort_q)) {
                resort[j] |= UINT32_C(1) << i;
                memcpy(sort_x, b.x, sizeof sort_x);
                memcpy(sort_q, b.q, sizeof sort_q);
            }
        }
    }
}

/* The re-sorts of the solids that need one by the backend. Every solid then
 * counts as placed at its pose, as after the attach of the host's re-sort
 * (acm_solid_get_samples places them there on the host, the next step on the
 * backend: moved), so that the samples stand where they would after it; the
 * backend keeps the last step's positions for its forces' torques. */
static acm_status resort_on_backend(acm_domain *d)
{
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        s->resort_due = !on_backend(d, s) && needs_resort(d, s) && s->count > 1;
    }
    const acm_status st = d->ops->ib_resort(d);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        if (on_backend(d, s)) { /* placed at its pose too: taken home as so (ib_home) */
            s->moved |= st == ACM_OK;
            continue;
        }
        if (st == ACM_OK && needs_resort(d, s)) {
            s->order_on_device |= s->resort_due;
            s->resorts += s->resort_due;
            memcpy(s->sort_x, s->body.x, sizeof s->sort_x);
            memcpy(s->sort_q, s->body.q, sizeof s->sort_q);
        }
        if (st == ACM_OK) {
            s->placed = s->body;
            s->moved = true;
        }
        s->resort_due = false;
    }
    return st;
}

acm_status acm__solids_after_step(acm_domain *d)
{
    if (acm__solids_any_free(d) && !d->bodies_on_backend)
        ACM_TRY(acm__solids_fetch(d));
    bool resort = false;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        if (on_backend(d, s)) /* moved and re-sorted by the backend's run */
            continue;
        acm_body *b = &s->body;
        s->placed = *b; /* the step placed the samples there */
        double speed = 0.0; /* a free body's after the step (kept from before at the limit) */
        if (b->motion == ACM_MOTION_FREE)
            speed = acm_body_advance_limited(b, s->force, s->torque, ACM_SOLID_MAX_SPEED);
        else
            acm__body_advance(b, s->force, s->torque);
        if (!(speed < ACM_SOLID_MAX_SPEED)) {
            d->diverged = true;
            d->diverged_step = d->step; /* the step that moved it has completed */
            return ACM_FAIL(d, ACM_ERR_DIVERGED,
                            "solid %d reached the surface speed %g at step %lld (limit %g): "
                            "the fluid cannot follow it (its pose is kept from before); "
                            "re-initialise and set its state",
                            (int)i, speed, (long long)d->step, ACM_SOLID_MAX_SPEED);
        }
        resort |= needs_resort(d, s);
    }
    if (!resort)
        return ACM_OK;
    if (d->ops->ib_resort != NULL) /* on the backend's side: nothing comes home */
        return resort_on_backend(d);
    ACM_TRY(acm__solids_fetch(d)); /* re-attaching forgets them (a backend without
                                      ib_resort keeps no bodies: ib_home) */
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (needs_resort(d, d->solids[i]))
            ACM_TRY(sort_samples(d, d->solids[i]));
    return attach(d);
}

/* ---- state and queries ---------------------------------------------------------------- */

static acm_status check_version(const acm_solid *s, const void *p, const uint32_t *version,
                                uint32_t supported, const char *name)
{
    if (p == NULL)
        return solid_fail(s, ACM_ERR_NULL_POINTER, "%s is NULL", name);
    if (*version != supported)
        return solid_fail(s, ACM_ERR_BAD_VERSION, "%s version %u is not supported (%u)", name,
                          *version, supported);
    return ACM_OK;
}

ACM_API acm_status acm_solid_get_state(acm_solid *solid, acm_solid_state *state)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    ACM_TRY(check_version(solid, state, state ? &state->version : NULL, ACM_SOLID_STATE_VERSION,
                          "acm_solid_state"));
    ACM_TRY(solid_home(solid));
    const acm_body *b = &solid->body;
    memcpy(state->position, b->x, sizeof b->x);
    memcpy(state->orientation, b->q, sizeof b->q);
    memcpy(state->velocity, b->v, sizeof b->v);
    memcpy(state->angular_velocity, b->w, sizeof b->w);
    return ACM_OK;
}

ACM_API acm_status acm_solid_set_state(acm_solid *solid, const acm_solid_state *state)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    ACM_TRY(check_version(solid, state, state ? &state->version : NULL, ACM_SOLID_STATE_VERSION,
                          "acm_solid_state"));
    if (!finite_n(state->position, 3) || !finite_n(state->orientation, 4) ||
        !finite_n(state->velocity, 3) || !finite_n(state->angular_velocity, 3))
        return solid_fail(solid, ACM_ERR_OUT_OF_RANGE, "the state has a non-finite value");
    ACM_TRY(solid_home(solid));
    if (solid->body.motion == ACM_MOTION_STATIC &&
        (norm3(state->velocity) != 0.0 || norm3(state->angular_velocity) != 0.0))
        return solid_fail(solid, ACM_ERR_OUT_OF_RANGE,
                          "a static solid cannot have a velocity (acm_solid_set_motion first)");
    acm_body b = solid->body;
    memcpy(b.x, state->position, sizeof b.x);
    memcpy(b.q, state->orientation, sizeof b.q);
    memcpy(b.v, state->velocity, sizeof b.v);
    memcpy(b.w, state->angular_velocity, sizeof b.w);
    ACM_TRY(check_body(solid->domain, solid, &b, solid->error, sizeof solid->error));
    solid->body = b;
    solid->moved = true;
    return ACM_OK;
}

ACM_API acm_status acm_solid_set_motion(acm_solid *solid, acm_motion motion)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    if ((unsigned)motion > ACM_MOTION_FREE)
        return solid_fail(solid, ACM_ERR_BAD_ENUM, "unknown motion %d", (int)motion);
    if (motion == ACM_MOTION_FREE && !solid->has_mass)
        return solid_fail(solid, ACM_ERR_INVALID_ARG,
                          "this solid was created without mass properties and cannot move freely");
    if (motion == ACM_MOTION_FREE && solid->body.mass < ACM_DENSITY_RATIO_MIN * solid->body.volume)
        return solid_fail(solid, ACM_ERR_OUT_OF_RANGE,
                          "a free solid must be at least %.1f times as dense as the fluid",
                          ACM_DENSITY_RATIO_MIN);
    ACM_TRY(solid_home(solid));
    if (motion == ACM_MOTION_STATIC) {
        memset(solid->body.v, 0, sizeof solid->body.v);
        memset(solid->body.w, 0, sizeof solid->body.w);
        solid->moved = true;
    }
    solid->body.motion = motion;
    return ACM_OK;
}

ACM_API acm_status acm_solid_set_load(acm_solid *solid, const double force[3],
                                      const double torque[3])
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    const double zero[3] = {0.0, 0.0, 0.0};
    const double *f = force != NULL ? force : zero, *t = torque != NULL ? torque : zero;
    if (!finite_n(f, 3) || !finite_n(t, 3))
        return solid_fail(solid, ACM_ERR_OUT_OF_RANGE, "the load has a non-finite value");
    ACM_TRY(solid_home(solid));
    memcpy(solid->body.load_f, f, sizeof solid->body.load_f);
    memcpy(solid->body.load_t, t, sizeof solid->body.load_t);
    return ACM_OK;
}

ACM_API acm_status acm_solid_get_force(acm_solid *solid, double force[3], double torque[3])
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    if (force == NULL && torque == NULL)
        return solid_fail(solid, ACM_ERR_NULL_POINTER, "force and torque are both NULL");
    acm_status st = acm__solids_fetch(solid->domain);
    if (st != ACM_OK)
        return solid_fail(solid, st, "%s", solid->domain->error);
    if (force != NULL)
        memcpy(force, solid->force, sizeof solid->force);
    if (torque != NULL)
        memcpy(torque, solid->torque, sizeof solid->torque);
    return ACM_OK;
}

ACM_API acm_status acm_solid_get_info(acm_solid *solid, acm_solid_info *info)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    ACM_TRY(check_version(solid, info, info ? &info->version : NULL, ACM_SOLID_INFO_VERSION,
                          "acm_solid_info"));
    ACM_TRY(solid_home(solid));
    acm_solid_info i;
    memset(&i, 0, sizeof i);
    i.version = info->version;
    i.sample_count = solid->count;
    i.area = solid->area;
    i.sample_spacing = solid->spacing;
    i.motion = solid->body.motion;
    i.volume = solid->body.volume;
    i.mass = solid->has_mass ? solid->body.mass : 0.0;
    memcpy(i.inertia, solid->body.inertia, sizeof i.inertia);
    i.ib_alpha = solid->alpha;
    i.resorts = solid->resorts;
    *info = i;
    return ACM_OK;
}

/* The samples at the pose they count as placed at, in the backend's order. */
static acm_status place_on_host(acm_domain *d, acm_solid *s, double *dst)
{
    ACM_TRY(order_home(d, s));
    const acm_body *b = &s->placed;
    double ub[3];
    for (uint64_t j = 0; j < s->count; ++j)
        acm_rigid_place(b->x, b->q, b->v, b->w, s->r + 3 * j, dst + 3 * j, ub);
    return ACM_OK;
}

ACM_API acm_status acm_solid_get_samples(acm_solid *solid, double *dst, size_t count)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return solid_fail(solid, ACM_ERR_NULL_POINTER, "dst is NULL");
    if (count != solid->count)
        return solid_fail(solid, ACM_ERR_BUFFER_SIZE, "count=%zu but the solid has %llu samples",
                          count, (unsigned long long)solid->count);
    acm_domain *d = solid->domain;
    ACM_TRY(solid_home(solid));
    acm_status st = d->ib_dirty ? attach(d) : acm__domain_require_storage(d);
    if (st == ACM_OK && solid->moved) /* not placed there on the backend yet */
        st = place_on_host(d, solid, dst);
    else if (st == ACM_OK)
        st = d->ops->ib_positions(d, solid, dst);
    if (st != ACM_OK)
        return solid_fail(solid, st, "%s", d->error);
    return ACM_OK;
}

/* ---- inside tests --------------------------------------------------------------------- */

/* A vertical ray through (px, py) nudged by an irrational offset, so that it
 * misses every vertex and edge of a mesh with probability one. */
#define ACM_RAY_NUDGE_X 3.14159265358979e-7
#define ACM_RAY_NUDGE_Y 2.71828182845905e-7

/* z where the vertical line through (px, py) crosses triangle (a, b, c), if it does. */
static bool column_hit(const double *a, const double *b, const double *c, double px, double py,
                       double *z)
{
    const double d0 = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
    const double d1 = (c[0] - b[0]) * (py - b[1]) - (c[1] - b[1]) * (px - b[0]);
    const double d2 = (a[0] - c[0]) * (py - c[1]) - (a[1] - c[1]) * (px - c[0]);
    if (!((d0 > 0 && d1 > 0 && d2 > 0) || (d0 < 0 && d1 < 0 && d2 < 0)))
        return false;
    const double sum = d0 + d1 + d2; /* barycentric weights: d1 -> a, d2 -> b, d0 -> c */
    *z = (d1 * a[2] + d2 * b[2] + d0 * c[2]) / sum;
    return true;
}

/* World coordinates of the solid's mesh vertices (caller frees). */
static double *world_vertices(const acm_solid *s)
{
    double *w = acm__malloc(3 * s->mnv * sizeof(double));
    if (w == NULL)
        return NULL;
    const double zero[3] = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < s->mnv; ++i) {
        double ub[3];
        acm_rigid_place(s->body.x, s->body.q, zero, zero, s->mv + 3 * i, w + 3 * i, ub);
    }
    return w;
}

static acm_status require_mesh(acm_solid *s)
{
    if (s->mv == NULL)
        return solid_fail(s, ACM_ERR_UNSUPPORTED,
                          "inside tests need a solid made from a closed mesh");
    return ACM_OK;
}

ACM_API acm_status acm_solid_is_inside(acm_solid *solid, const double point[3], int *inside)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    if (point == NULL || inside == NULL)
        return solid_fail(solid, ACM_ERR_NULL_POINTER, "%s is NULL", point ? "inside" : "point");
    if (!finite_n(point, 3))
        return solid_fail(solid, ACM_ERR_OUT_OF_RANGE, "the point is not finite");
    ACM_TRY(solid_home(solid));
    ACM_TRY(require_mesh(solid));
    double *w = world_vertices(solid);
    if (w == NULL)
        return solid_fail(solid, ACM_ERR_NO_MEMORY, "cannot transform the mesh");
    const double px = point[0] + ACM_RAY_NUDGE_X, py = point[1] + ACM_RAY_NUDGE_Y;
    int crossings = 0;
    for (size_t t = 0; t < solid->mnt; ++t) {
        const uint32_t *tri = solid->mt + 3 * t;
        double z;
        if (column_hit(w + 3 * tri[0], w + 3 * tri[1], w + 3 * tri[2], px, py, &z) && z > point[2])
            crossings++;
    }
    acm__free(w);
    *inside = crossings & 1;
    return ACM_OK;
}

/* Crossings of the column lines of a box of cells with the mesh, then parity
 * fill along each column. */
typedef struct column_box {
    int64_t x0, y0, nxb, nyb;
} column_box;

static void triangle_columns(const column_box *cb, const double *a, const double *b,
                             const double *c, int64_t r[4])
{
    const double lo[2] = {fmin(a[0], fmin(b[0], c[0])), fmin(a[1], fmin(b[1], c[1]))};
    const double hi[2] = {fmax(a[0], fmax(b[0], c[0])), fmax(a[1], fmax(b[1], c[1]))};
    r[0] = (int64_t)ceil(lo[0] - ACM_RAY_NUDGE_X) - cb->x0;
    r[1] = (int64_t)floor(hi[0] - ACM_RAY_NUDGE_X) - cb->x0;
    r[2] = (int64_t)ceil(lo[1] - ACM_RAY_NUDGE_Y) - cb->y0;
    r[3] = (int64_t)floor(hi[1] - ACM_RAY_NUDGE_Y) - cb->y0;
    r[0] = r[0] < 0 ? 0 : r[0];
    r[2] = r[2] < 0 ? 0 : r[2];
    r[1] = r[1] >= cb->nxb ? cb->nxb - 1 : r[1];
    r[3] = r[3] >= cb->nyb ? cb->nyb - 1 : r[3];
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y);
}

/* Crossing heights of every column: counts in start (prefix sums), values in z. */
static acm_status column_crossings(const acm_solid *s, const double *w, const column_box *cb,
                                   size_t **start_out, double **z_out)
{
    const size_t ncol = (size_t)(cb->nxb * cb->nyb);
    size_t *start = acm__calloc(ncol + 1, sizeof *start);
    if (start == NULL)
        return ACM_ERR_NO_MEMORY;
    for (int pass = 0; pass < 2; ++pass) {
        double *z = pass ? *z_out : NULL;
        for (size_t t = 0; t < s->mnt; ++t) {
            const double *a = w + 3 * s->mt[3 * t], *b = w + 3 * s->mt[3 * t + 1],
                         *c = w + 3 * s->mt[3 * t + 2];
            int64_t r[4];
            triangle_columns(cb, a, b, c, r);
            for (int64_t j = r[2]; j <= r[3]; ++j)
                for (int64_t i = r[0]; i <= r[1]; ++i) {
                    double h;
                    if (!column_hit(a, b, c, (double)(cb->x0 + i) + ACM_RAY_NUDGE_X,
                                    (double)(cb->y0 + j) + ACM_RAY_NUDGE_Y, &h))
                        continue;
                    const size_t col = (size_t)(i + cb->nxb * j);
                    if (pass == 0)
                        start[col + 1]++;
                    else
                        z[start[col]++] = h;
                }
        }
        if (pass == 0) {
            for (size_t c = 0; c < ncol; ++c)
                start[c + 1] += start[c];
            *z_out = acm__malloc((start[ncol] ? start[ncol] : 1) * sizeof(double));
            if (*z_out == NULL) {
                acm__free(start);
                return ACM_ERR_NO_MEMORY;
            }
        }
    }
    for (size_t c = ncol; c > 0; --c) /* the fill advanced every start by its count */
        start[c] = start[c - 1];
    start[0] = 0;
    *start_out = start;
    return ACM_OK;
}

/* Mark the cells of column (x, y) between crossing pairs. */
static void fill_column(const acm_domain *d, const acm_ib_grid *g, int64_t x, int64_t y,
                        double *z, size_t n, uint8_t *dst)
{
    qsort(z, n, sizeof *z, cmp_double);
    const int64_t coord[2] = {x, y};
    int64_t c[3];
    for (int a = 0; a < 2; ++a) {
        c[a] = coord[a];
        if (g->periodic[a])
            c[a] = ((c[a] % g->n[a]) + g->n[a]) % g->n[a];
        else if (c[a] < 0 || c[a] >= g->n[a])
            return;
    }
    for (size_t p = 0; p + 1 < n; p += 2)
        for (int64_t k = (int64_t)ceil(z[p]); (double)k <= z[p + 1]; ++k) {
            int64_t kz = k;
            if (g->periodic[2])
                kz = ((kz % g->n[2]) + g->n[2]) % g->n[2];
            else if (kz < 0 || kz >= g->n[2])
                continue;
            dst[(size_t)c[0] + (size_t)d->nx * ((size_t)c[1] + (size_t)d->ny * (size_t)kz)] = 1;
        }
}

ACM_API acm_status acm_solid_mark_occupancy(acm_solid *solid, uint8_t *dst, size_t bytes)
{
    if (solid == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return solid_fail(solid, ACM_ERR_NULL_POINTER, "dst is NULL");
    const acm_domain *d = solid->domain;
    if (bytes != (size_t)d->ncells)
        return solid_fail(solid, ACM_ERR_BUFFER_SIZE, "bytes=%zu but the grid has %lld cells",
                          bytes, (long long)d->ncells);
    ACM_TRY(require_mesh(solid));
    ACM_TRY(solid_home(solid));
    const double *x = solid->body.x, r = solid->body.r_max;
    column_box cb = {(int64_t)floor(x[0] - r) - 1, (int64_t)floor(x[1] - r) - 1, 0, 0};
    cb.nxb = (int64_t)ceil(x[0] + r) + 2 - cb.x0;
    cb.nyb = (int64_t)ceil(x[1] + r) + 2 - cb.y0;
    double *w = world_vertices(solid), *z = NULL;
    size_t *start = NULL;
    if (w == NULL || column_crossings(solid, w, &cb, &start, &z) != ACM_OK) {
        acm__free(w);
        return solid_fail(solid, ACM_ERR_NO_MEMORY, "cannot rasterise the solid");
    }
    const acm_ib_grid g = acm__ib_grid(d);
    for (int64_t j = 0; j < cb.nyb; ++j)
        for (int64_t i = 0; i < cb.nxb; ++i) {
            const size_t col = (size_t)(i + cb.nxb * j);
            fill_column(d, &g, cb.x0 + i, cb.y0 + j, z + start[col], start[col + 1] - start[col],
                        dst);
        }
    acm__free(start);
    acm__free(z);
    acm__free(w);
    return ACM_OK;
}

/* ---- what smokes need of a solid ----------------------------------------------------- */

/* Outward unit normal of sample l (sampling order): the mesh's, or for the
 * caller's samples the direction from the centre of mass. */
static void sample_normal(const acm_solid *s, uint64_t l, double n[3])
{
    const double *r = s->r + 3 * l;
    if (s->normal != NULL) {
        memcpy(n, s->normal + 3 * s->origin[l], 3 * sizeof(double));
        return;
    }
    const double len = norm3(r);
    for (int a = 0; a < 3; ++a)
        n[a] = len > 0.0 ? r[a] / len : (a == 2);
}

acm_status acm__solid_surface_points(const acm_solid *s, double offset, double **points,
                                     uint64_t *count)
{
    double *p = acm__malloc(3 * (size_t)s->count * sizeof(double));
    if (p == NULL)
        return ACM_ERR_NO_MEMORY;
    for (uint64_t l = 0; l < s->count; ++l) {
        double n[3];
        sample_normal(s, l, n);
        for (int a = 0; a < 3; ++a)
            p[3 * l + (uint64_t)a] = s->r[3 * l + (uint64_t)a] + (s->inset + offset) * n[a];
    }
    *points = p;
    *count = s->count;
    return ACM_OK;
}

#define ACM_OCCUPANCY_SPACING 0.5
#define ACM_OCCUPANCY_BITS_MAX (UINT64_C(1) << 30)

/* The grid of the inside: spacing 0.5 cells (coarser for huge solids) over
 * the mesh's bounding box and one spacing more. */
static void occupancy_grid(const acm_solid *s, acm_occupancy *o)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < s->mnv; ++i)
        for (int a = 0; a < 3; ++a) {
            lo[a] = fmin(lo[a], s->mv[3 * i + (size_t)a]);
            hi[a] = fmax(hi[a], s->mv[3 * i + (size_t)a]);
        }
    /* counted in doubles: a mesh of any extent coarsens the grid until it fits,
     * and only then become the counts integers */
    for (o->h = ACM_OCCUPANCY_SPACING;; o->h *= 2.0) {
        double n[3], bits = 1.0;
        for (int a = 0; a < 3; ++a) {
            n[a] = ceil((hi[a] - (lo[a] - o->h)) / o->h) + 2.0;
            bits *= n[a];
        }
        if (bits <= (double)ACM_OCCUPANCY_BITS_MAX) {
            for (int a = 0; a < 3; ++a) {
                o->lo[a] = lo[a] - o->h;
                o->n[a] = (int32_t)n[a];
            }
            return;
        }
    }
}

/* Rasterise the closed mesh into o->bits: the column crossings of the
 * inside tests on the grid's own unit-spaced coordinates. */
static acm_status occupancy_fill(const acm_solid *s, acm_occupancy *o)
{
    const uint64_t nbits = (uint64_t)o->n[0] * (uint64_t)o->n[1] * (uint64_t)o->n[2];
    double *w = acm__malloc(3 * s->mnv * sizeof(double)), *z = NULL;
    size_t *start = NULL;
    o->bits = acm__calloc((size_t)(nbits + 31) / 32, sizeof(uint32_t));
    const column_box cb = {0, 0, o->n[0], o->n[1]};
    if (w != NULL)
        for (size_t i = 0; i < 3 * s->mnv; ++i)
            w[i] = (s->mv[i] - o->lo[i % 3]) / o->h;
    if (w == NULL || o->bits == NULL || column_crossings(s, w, &cb, &start, &z) != ACM_OK) {
        acm__free(w);
        acm__free(o->bits);
        o->bits = NULL;
        return ACM_ERR_NO_MEMORY;
    }
    for (int64_t col = 0; col < cb.nxb * cb.nyb; ++col) {
        double *zc = z + start[col];
        const size_t nz = start[col + 1] - start[col];
        qsort(zc, nz, sizeof *zc, cmp_double);
        for (size_t p = 0; p + 1 < nz; p += 2)
            for (int64_t k = (int64_t)fmax(ceil(zc[p]), 0.0); (double)k <= zc[p + 1] && k < o->n[2]; ++k) {
                const uint64_t bit = (uint64_t)col + (uint64_t)(cb.nxb * cb.nyb) * (uint64_t)k;
                o->bits[bit >> 5] |= UINT32_C(1) << (bit & 31u);
            }
    }
    acm__free(start);
    acm__free(z);
    acm__free(w);
    return ACM_OK;
}

acm_status acm__solid_obstacle_ready(acm_solid *s, bool device)
{
    acm_domain *d = s->domain;
    if (s->mv == NULL)
        return ACM_OK;
    acm_occupancy *occ = &s->occ;
    if (occ->bits == NULL) {
        occupancy_grid(s, occ);
        if (occupancy_fill(s, occ) != ACM_OK)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot rasterise a solid for the smoke");
    }
    if (device && occ->dev == NULL) {
        const size_t bytes = ((size_t)occ->n[0] * (size_t)occ->n[1] * (size_t)occ->n[2] + 31) / 32 *
                             sizeof(uint32_t);
        ACM_TRY(d->ops->upload(d, occ->bits, bytes, &occ->dev));
    }
    return ACM_OK;
}

int32_t acm__solid_index(const acm_solid *s)
{
    const acm_domain *d = s->domain;
    int32_t i = 0;
    while (i < d->nsolids && d->solids[i] != s)
        ++i;
    return i;
}

bool acm__solid_obstacle(const acm_solid *s, int32_t index, bool device, acm_smoke_obstacle *o)
{
    const acm_occupancy *occ = &s->occ;
    if (s->mv == NULL || occ->bits == NULL || (device && occ->dev == NULL))
        return false;
    memcpy(o->x, s->body.x, sizeof o->x);
    memcpy(o->q, s->body.q, sizeof o->q);
    memcpy(o->lo, occ->lo, sizeof o->lo);
    o->inv_h = 1.0 / occ->h;
    memcpy(o->n, occ->n, sizeof o->n);
    o->body = index;
    o->bits = device ? (const uint32_t *)occ->dev : occ->bits;
    return true;
}
