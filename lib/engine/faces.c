/*
 * libacmlbm -- what a face takes from the caller: the speed rule, values over a
 * face (acm_domain_set_face_values) checked and handed to the backend, for the
 * public call and the CUDA interop one alike.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "faces.h"

#include <math.h>   /* isfinite, sqrt */
#include <string.h> /* memcpy */

#include "alloc.h"
#include "backend.h"  /* acm_backend_ops */
#include "boundary.h" /* acm_face_axes, acm_face_value_count, acm_face_is_layer */
#include "guard.h"    /* acm__callback_begin */

bool acm__speed_ok(const double u[3], double max_speed)
{
    if (!isfinite(u[0]) || !isfinite(u[1]) || !isfinite(u[2]))
        return false;
    return sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) < max_speed;
}

/* The face's values replaced by v (NULL: the uniform rule), the backend told;
 * on failure the old ones stay and v is freed. */
acm_status acm__swap_face_values(acm_domain *domain, acm_face face, double *v)
{
    double *old = domain->face_values[face];
    domain->face_values[face] = v;
    const acm_status st = domain->ops->face_values != NULL && domain->impl != NULL
                              ? domain->ops->face_values(domain, (int)face)
                              : ACM_OK;
    if (st != ACM_OK) { /* the old ones back where a part took the new (slabs) */
        domain->face_values[face] = old;
        acm__free(v);
        char msg[ACM_ERROR_SIZE];
        memcpy(msg, domain->error, sizeof msg);
        (void)domain->ops->face_values(domain, (int)face);
        memcpy(domain->error, msg, sizeof msg);
        return st;
    }
    acm__free(old);
    return ACM_OK;
}

/* The first bad value of an inlet's velocities (per = 3) or an outlet's
 * densities (per = 1), or -1. */
static int64_t bad_face_value(const double *v, size_t cells, int per, double max_speed)
{
    for (size_t k = 0; k < cells; ++k) {
        const bool ok = per == 3 ? acm__speed_ok(v + 3 * k, max_speed)
                                 : isfinite(v[k]) && v[k] > 0.0 && v[k] <= 10.0;
        if (!ok)
            return (int64_t)k;
    }
    return -1;
}

/* ACM_OK when face is an inlet or an outlet of domain, else the error. */
static acm_status layer_face(acm_domain *domain, acm_face face)
{
    if ((unsigned)face >= ACM_FACE_COUNT)
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown face %d", (int)face);
    const acm_boundary type = domain->setup.face[face].type;
    if (!acm_face_is_layer(type))
        return ACM_FAIL(domain, ACM_ERR_INVALID_ARG,
                        "face %s is %s: values vary over inlet and outlet faces only",
                        acm__face_name(face), acm__boundary_name(type));
    return ACM_OK;
}

/* The checked copy of count values of an inlet's or outlet's face in *out (the
 * library's, freed with the face), or the error. */
static acm_status face_values_made(acm_domain *domain, acm_face face, acm_dtype dtype,
                                   const void *values, size_t count, double **out)
{
    const acm_boundary type = domain->setup.face[face].type;
    if (dtype != ACM_DTYPE_FLOAT32 && dtype != ACM_DTYPE_FLOAT64)
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown dtype %d", (int)dtype);
    const int32_t n[3] = {domain->nx, domain->ny, domain->nz};
    int lo, hi;
    acm_face_axes((int)face, &lo, &hi);
    const size_t cells = (size_t)n[lo] * (size_t)n[hi];
    const int per = acm_face_value_count(type);
    if (count != (size_t)per * cells)
        return ACM_FAIL(domain, ACM_ERR_INVALID_ARG,
                        "face %s (%s) takes %d value%s for each of its %d x %d cells: %zu, not "
                        "%zu",
                        acm__face_name(face), acm__boundary_name(type), per, per > 1 ? "s" : "",
                        (int)n[lo], (int)n[hi], (size_t)per * cells, count);
    double *v = acm__malloc(count * sizeof *v);
    if (v == NULL)
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate %zu face values", count);
    for (size_t k = 0; k < count; ++k)
        v[k] = acm__load(dtype, values, k);
    const int64_t bad = bad_face_value(v, cells, per, domain->setup.max_speed);
    if (bad < 0) {
        *out = v;
        return ACM_OK;
    }
    const int32_t a = (int32_t)(bad % n[lo]), b = (int32_t)(bad / n[lo]);
    double w[3];
    memcpy(w, v + (size_t)per * (size_t)bad, (size_t)per * sizeof *w);
    acm__free(v);
    if (per == 3)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                        "face %s, cell (%c=%d, %c=%d): velocity (%g, %g, %g) must be finite and "
                        "slower than max_speed=%g",
                        acm__face_name(face), "xyz"[lo], (int)a, "xyz"[hi], (int)b, w[0], w[1],
                        w[2], domain->setup.max_speed);
    return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                    "face %s, cell (%c=%d, %c=%d): density %g must be finite and in (0, 10]",
                    acm__face_name(face), "xyz"[lo], (int)a, "xyz"[hi], (int)b, w[0]);
}

acm_status acm__set_face_values(acm_domain *domain, acm_face face, acm_dtype dtype,
                                const void *values, size_t count)
{
    ACM_TRY(layer_face(domain, face));
    if (values == NULL) {
        if (count != 0)
            return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "values is NULL, count=%zu", count);
        return acm__swap_face_values(domain, face, NULL);
    }
    double *v = NULL;
    ACM_TRY(face_values_made(domain, face, dtype, values, count, &v));
    return acm__swap_face_values(domain, face, v);
}

/* ---- face functions (acm_domain_set_face_function) --------------------------------- */

/* The values face f of d takes: 3 or 1 per face cell. */
static size_t face_value_count(const acm_domain *d, int f)
{
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    int lo, hi;
    acm_face_axes(f, &lo, &hi);
    return (size_t)acm_face_value_count(d->setup.face[f].type) * (size_t)n[lo] * (size_t)n[hi];
}

void acm__face_function_drop(acm_domain *d, int face)
{
    acm__free(d->face_fn_values[face]);
    d->face_fn_values[face] = NULL;
    d->face_fn[face] = NULL;
    d->face_fn_user[face] = NULL;
}

acm_status acm__set_face_function(acm_domain *domain, acm_face face, acm_face_values_fn fn,
                                  void *user_data)
{
    ACM_TRY(layer_face(domain, face));
    if (fn == NULL) {
        acm__face_function_drop(domain, (int)face);
        return ACM_OK;
    }
    const size_t count = face_value_count(domain, (int)face);
    double *buf = acm__malloc(count * sizeof *buf);
    if (buf == NULL)
        return ACM_FAIL(domain, ACM_ERR_NO_MEMORY, "cannot allocate %zu face values", count);
    acm__face_function_drop(domain, (int)face);
    domain->face_fn_values[face] = buf;
    domain->face_fn[face] = fn;
    domain->face_fn_user[face] = user_data;
    return ACM_OK;
}

bool acm__faces_timed(const acm_domain *d)
{
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        if (d->face_fn[f] != NULL)
            return true;
    return false;
}

/* Face f's function asked for step's values: their checked copy in *made, or
 * NULL where the function changed the face (the caller checks the faces). */
static acm_status face_ask(acm_domain *d, int f, int64_t step, double **made)
{
    const size_t count = face_value_count(d, f);
    acm_face_values_fn fn = d->face_fn[f];
    const acm_callback outer = acm__callback_begin(d, ACM_CALLBACK_FACE);
    const int rc = fn(d, (acm_face)f, step, d->face_fn_values[f], count, d->face_fn_user[f]);
    acm__callback_end(d, outer);
    if (rc != 0)
        return ACM_FAIL(d, ACM_ERR_CANCELLED,
                        "face %s: its function returned %d for step %lld: stopped before it",
                        acm__face_name((acm_face)f), rc, (long long)step);
    if (d->face_fn[f] != fn || d->face_fn_values[f] == NULL)
        return ACM_OK;
    return face_values_made(d, (acm_face)f, ACM_DTYPE_FLOAT64, d->face_fn_values[f], count,
                            made);
}

acm_status acm__faces_update(acm_domain *d)
{
    const int64_t step = d->step + 1;
    double *made[ACM_FACE_COUNT] = {NULL};
    acm_status st = ACM_OK;
    for (int f = 0; f < ACM_FACE_COUNT && st == ACM_OK; ++f)
        if (d->face_fn[f] != NULL)
            st = face_ask(d, f, step, &made[f]);
    /* the functions ran in this process only; setting the values is collective
     * over MPI ranks: every process goes on, or stops, with the same outcome */
    if (d->ops->agree != NULL)
        st = d->ops->agree(d, st);
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        if (made[f] == NULL)
            continue;
        if (st == ACM_OK)
            st = acm__swap_face_values(d, (acm_face)f, made[f]); /* it frees them on failure */
        else
            acm__free(made[f]);
    }
    return st;
}
