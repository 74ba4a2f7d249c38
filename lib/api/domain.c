/*
 * libacmlbm -- the public acm_domain API: validate every argument, then
 * dispatch to the backend ops table (backend.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* isfinite, sqrt */
#include <stddef.h> /* offsetof */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend.h"
#include "backends.h"   /* acm__backend_select */
#include "calls.h"
#include "decomp.h"     /* acm__decomp_init */
#include "divergence.h" /* acm__divergence_step */
#include "faces.h"      /* acm__speed_ok, acm__set_face_values */
#include "guard.h"      /* ACM_GUARDED */
#include "options.h"    /* acm__options_init */
#include "pipeline.h"   /* acm__step_check */
#include "smoke.h"      /* acm__smokes_destroy_all */
#include "smoke_math.h" /* the trilinear rule of acm_domain_sample_velocity */
#include "solid.h"      /* acm__solids_destroy_all, acm__ib_grid */
#include "state.h"      /* layouts, acm__domain_relayout */

#define ACM_DIM_MIN 1 /* a 1-cell periodic axis makes a 2-D (or 1-D) simulation */
#define ACM_DIM_MAX 65535
#define ACM_CELLS_MAX (INT64_C(1) << 36)
#define ACM_DEFAULT_MAX_SPEED 0.5

/* ---- options structs ------------------------------------------------- */

/* Bytes of acm_domain_options known to a caller of a given version (0: unknown). */
static size_t domain_options_size(uint32_t version)
{
    if (version == 1)
        return offsetof(acm_domain_options, subdomains);
    return version == 2 ? sizeof(acm_domain_options) : 0;
}

/* Bytes of acm_domain_info known to a caller of a given version (0: unknown). */
static size_t domain_info_size(uint32_t version)
{
    if (version == 1)
        return offsetof(acm_domain_info, memory_bytes) + sizeof(uint64_t);
    return version == 2 ? sizeof(acm_domain_info) : 0;
}

static size_t collision_options_size(uint32_t version)
{
    return version == 1 ? sizeof(acm_collision_options) : 0;
}

ACM_API acm_status acm_domain_options_init(acm_domain_options *opts, uint32_t version)
{
    const acm_domain_options def = ACM_DOMAIN_OPTIONS_INIT;
    return acm__options_init(opts, &def, domain_options_size(version), version);
}

ACM_API acm_status acm_collision_options_init(acm_collision_options *opts, uint32_t version)
{
    const acm_collision_options def = ACM_COLLISION_OPTIONS_INIT;
    return acm__options_init(opts, &def, collision_options_size(version), version);
}

/* ---- validation helpers ---------------------------------------------- */

static bool rate_ok(double w) { return isfinite(w) && w > 0.0 && w < 2.0; }

/* Check a collision-options struct (already copied to full size). */
static acm_status check_collision(const acm_collision_options *c, char *msg, size_t n)
{
    if ((unsigned)c->model > ACM_COLLISION_ACM_LI2020) {
        acm__format(msg, n, "unknown collision model %d", (int)c->model);
        return ACM_ERR_BAD_ENUM;
    }
    if ((c->safety_net != 0 && c->safety_net != 1) ||
        (c->bulk_follows_high_order != 0 && c->bulk_follows_high_order != 1)) {
        acm__format(msg, n, "safety_net=%d and bulk_follows_high_order=%d must be 0 or 1",
                    (int)c->safety_net, (int)c->bulk_follows_high_order);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (!rate_ok(c->high_order_rate) || !rate_ok(c->bulk_rate)) {
        acm__format(msg, n, "high_order_rate=%g and bulk_rate=%g must lie in (0, 2)",
                    c->high_order_rate, c->bulk_rate);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (!(isfinite(c->max_high_order_rate) && c->max_high_order_rate >= 1.0 &&
          c->max_high_order_rate < 2.0)) {
        acm__format(msg, n, "max_high_order_rate=%g must lie in [1, 2)", c->max_high_order_rate);
        return ACM_ERR_OUT_OF_RANGE;
    }
    for (int o = 0; o < 4; ++o) {
        if (!(isfinite(c->li2018_nu0[o]) && c->li2018_nu0[o] > 0.0)) {
            acm__format(msg, n, "li2018_nu0[%d]=%g must be positive and finite", o,
                        c->li2018_nu0[o]);
            return ACM_ERR_OUT_OF_RANGE;
        }
        if (!isfinite(c->li2020_theta[o])) {
            acm__format(msg, n, "li2020_theta[%d] is not finite", o);
            return ACM_ERR_OUT_OF_RANGE;
        }
    }
    if (!(isfinite(c->li2020_tau0) && c->li2020_tau0 > 0.0)) {
        acm__format(msg, n, "li2020_tau0=%g must be positive and finite", c->li2020_tau0);
        return ACM_ERR_OUT_OF_RANGE;
    }
    return ACM_OK;
}

/* A density the storage holds (acm__density_range); msg says why not. */
static acm_status check_density(double rho, acm_precision p, char *msg, size_t n)
{
    double lo, hi;
    acm__density_range(p, &lo, &hi);
    if (rho >= lo && rho <= hi)
        return ACM_OK;
    acm__format(msg, n, "density %g outside [%.2g, %.2g], the densities %s storage holds", rho,
                lo, hi, acm__precision_name(p));
    return ACM_ERR_OUT_OF_RANGE;
}

/* Validate creation options; on success fill nu. */
static acm_status check_options(const acm_domain_options *o, double *nu, char *msg, size_t n)
{
    const int32_t dims[3] = {o->nx, o->ny, o->nz};
    for (int a = 0; a < 3; ++a) {
        if (dims[a] < ACM_DIM_MIN || dims[a] > ACM_DIM_MAX) {
            acm__format(msg, n, "grid size %dx%dx%d: each size must lie in [%d, %d]", o->nx,
                        o->ny, o->nz, ACM_DIM_MIN, ACM_DIM_MAX);
            return ACM_ERR_OUT_OF_RANGE;
        }
    }
    int64_t cells = (int64_t)o->nx * o->ny * o->nz;
    if (cells > ACM_CELLS_MAX) {
        acm__format(msg, n, "grid of %lld cells exceeds the limit of 2^36 cells",
                    (long long)cells);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (isnan(o->viscosity) || isnan(o->tau)) {
        acm__format(msg, n, "viscosity or tau is NaN");
        return ACM_ERR_OUT_OF_RANGE;
    }
    if ((o->viscosity != 0.0) == (o->tau != 0.0)) {
        acm__format(msg, n, "set exactly one of viscosity (%g) and tau (%g)", o->viscosity,
                    o->tau);
        return ACM_ERR_INVALID_ARG;
    }
    double tau = o->tau != 0.0 ? o->tau : 3.0 * o->viscosity + 0.5;
    if (!(tau > 0.5 && tau < 1e6)) {
        acm__format(msg, n, "tau=%g (viscosity %g) must lie in (0.5, 1e6)", tau,
                    (tau - 0.5) / 3.0);
        return ACM_ERR_OUT_OF_RANGE;
    }
    *nu = (tau - 0.5) / 3.0;
    if ((unsigned)o->collision > ACM_COLLISION_ACM_LI2020 ||
        (unsigned)o->backend > ACM_BACKEND_CUDA || (unsigned)o->precision > ACM_PRECISION_FP16) {
        acm__format(msg, n, "unknown enum value (collision %d, backend %d, precision %d)",
                    (int)o->collision, (int)o->backend, (int)o->precision);
        return ACM_ERR_BAD_ENUM;
    }
    if (o->device < -1) {
        acm__format(msg, n, "device=%d must be -1 (default) or a CUDA ordinal", o->device);
        return ACM_ERR_OUT_OF_RANGE;
    }
    double max_speed = o->max_speed == 0.0 ? ACM_DEFAULT_MAX_SPEED : o->max_speed;
    if (!(max_speed > 0.0 && max_speed <= 1.0)) {
        acm__format(msg, n, "max_speed=%g must lie in (0, 1]", o->max_speed);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (!(isfinite(o->initial_density) && o->initial_density > 0.0)) {
        acm__format(msg, n, "initial_density=%g must be positive and finite", o->initial_density);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (!acm__speed_ok(o->initial_velocity, max_speed)) {
        acm__format(msg, n, "initial_velocity must be finite with speed below max_speed=%g",
                    max_speed);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (o->subdomains < 0 || o->subdomains > ACM_DIM_MAX) {
        acm__format(msg, n, "subdomains=%d must lie in [0, %d]", o->subdomains, ACM_DIM_MAX);
        return ACM_ERR_OUT_OF_RANGE;
    }
    for (int32_t p = 0; o->devices != NULL && p < o->subdomains; ++p)
        if (o->devices[p] < 0) {
            acm__format(msg, n, "devices[%d]=%d is not a CUDA ordinal", p, o->devices[p]);
            return ACM_ERR_OUT_OF_RANGE;
        }
    if (o->error_buffer == NULL && o->error_buffer_size != 0) {
        acm__format(msg, n, "error_buffer is NULL but error_buffer_size is %zu",
                    o->error_buffer_size);
        return ACM_ERR_INVALID_ARG;
    }
    return ACM_OK;
}

/* ---- lifecycle -------------------------------------------------------- */

static acm_status create_fail(const acm_domain_options *o, acm_status st, const char *msg)
{
    if (o != NULL && o->error_buffer != NULL && o->error_buffer_size > 0)
        acm__format(o->error_buffer, o->error_buffer_size, "%s", msg);
    return st;
}

/* acm_domain_create, and with comm (an MPI_Comm *) its collective form over MPI
 * ranks (acm_mpi.h): every rank's status is then the same. */
static acm_status domain_create(acm_domain **out, const acm_domain_options *opts,
                                const void *comm)
{
    char msg[ACM_ERROR_SIZE] = "";
    if (opts == NULL)
        return ACM_ERR_NULL_POINTER;
    if (out == NULL)
        return create_fail(opts, ACM_ERR_NULL_POINTER, "out is NULL");
    size_t size = domain_options_size(opts->version);
    if (size == 0) {
        acm__format(msg, sizeof msg, "acm_domain_options version %u is not supported (1..%d)",
                    opts->version, ACM_DOMAIN_OPTIONS_VERSION);
        return create_fail(opts, ACM_ERR_BAD_VERSION, msg);
    }
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    memcpy(&o, opts, size);

    double nu = 0.0;
    acm_status st = check_options(&o, &nu, msg, sizeof msg);
    if (st == ACM_OK) {
        const acm_precision p = o.precision == ACM_PRECISION_DEFAULT ? ACM_PRECISION_FP32
                                                                      : o.precision;
        st = check_density(o.initial_density, acm__layout_precision(o.layout, p), msg,
                           sizeof msg);
    }
    if (st == ACM_OK && comm != NULL && o.subdomains > 1) {
        acm__format(msg, sizeof msg, "subdomains=%d: over MPI each rank steps one slab",
                    o.subdomains);
        st = ACM_ERR_INVALID_ARG;
    }
    if (comm != NULL)
        st = acm__mpi_agree_create(comm, st, msg, sizeof msg);
    if (st != ACM_OK)
        return create_fail(opts, st, msg);
    if (o.precision == ACM_PRECISION_DEFAULT)
        o.precision = ACM_PRECISION_FP32;

    const struct acm_backend_ops *ops = NULL;
    st = acm__backend_select(o.backend, &ops, msg, sizeof msg);
    if (st != ACM_OK)
        return create_fail(opts, st, msg);
    st = acm__layout_check(o.layout, o.precision, ops->kind, msg, sizeof msg);
    if (st != ACM_OK)
        return create_fail(opts, st, msg);

    acm_domain *d = acm__calloc(1, sizeof *d);
    if (d == NULL)
        return create_fail(opts, ACM_ERR_NO_MEMORY, "cannot allocate the domain handle");
    acm__guard_init(d);
    d->nx = o.nx;
    d->ny = o.ny;
    d->nz = o.nz;
    d->ncells = (int64_t)o.nx * o.ny * o.nz;
    d->setup.viscosity = nu;
    d->setup.omega = 1.0 / (3.0 * nu + 0.5);
    d->backend = ops->kind;
    d->device = ops->kind == ACM_BACKEND_CUDA ? (o.device < 0 ? 0 : o.device) : -1;
    d->setup.options_precision = o.precision;
    d->layout.ib.iterations = 1;
    acm__domain_apply_layout(d, o.layout);
    acm_collision_options coll = ACM_COLLISION_OPTIONS_INIT;
    coll.model = o.collision == ACM_COLLISION_DEFAULT ? ACM_COLLISION_ACM_LI2018 : o.collision;
    d->setup.coll = coll;
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        d->setup.face[f].type = ACM_BOUNDARY_PERIODIC;
    d->setup.max_speed = o.max_speed == 0.0 ? ACM_DEFAULT_MAX_SPEED : o.max_speed;
    d->setup.divergence_interval = 1;
    d->setup.halo_overlap = 1;
    d->ops = ops;

    if (comm != NULL)
        st = acm__decomp_init_mpi(d, ops, comm);
    else
        st = o.subdomains >= 2 ? acm__decomp_init(d, ops, o.subdomains, o.devices)
                               : ops->domain_init(d);
    if (st == ACM_OK) {
        acm_init_source src = {ACM_DTYPE_FLOAT64, NULL, NULL, o.initial_density,
                               {o.initial_velocity[0], o.initial_velocity[1],
                                o.initial_velocity[2]}};
        st = d->ops->init_equilibrium(d, &src);
    }
    if (st != ACM_OK) {
        create_fail(opts, st, d->error);
        acm_domain_destroy(d);
        return st;
    }
    acm__guard_forget(d); /* a destroyed domain's address, reused */
    *out = d;
    return ACM_OK;
}

ACM_API acm_status acm_domain_create(acm_domain **out, const acm_domain_options *opts)
{
    return domain_create(out, opts, NULL);
}

ACM_API acm_status acm_domain_create_on_comm(acm_domain **out, const acm_domain_options *opts,
                                             const void *mpi_comm)
{
    if (mpi_comm == NULL)
        return create_fail(opts, ACM_ERR_NULL_POINTER, "mpi_comm is NULL");
    return domain_create(out, opts, mpi_comm);
}

/* A begun velocity read forgotten (acm_domain_sample_velocity_begin). */
static void read_drop(acm_domain *d)
{
    acm__free(d->read_velocity);
    d->read_velocity = NULL;
    d->read_count = 0;
}

static void destroy_now(acm_domain *domain)
{
    acm__solids_destroy_all(domain);
    acm__smokes_destroy_all(domain);
    acm__divergence_forget(domain);
    read_drop(domain);
    if (domain->ops != NULL && domain->impl != NULL)
        domain->ops->domain_fini(domain);
    acm__decomp_free(domain);
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        acm__free(domain->face_values[f]);
        acm__face_function_drop(domain, f);
    }
    acm__free(domain);
}

ACM_API void acm_domain_destroy(acm_domain *domain)
{
    if (domain == NULL)
        return;
    if (domain->in_callback != ACM_CALLBACK_NONE) {
        domain->destroy_deferred = true; /* acm__domain_finish */
        return;
    }
    destroy_now(domain);
}

/* The smokes, then the solids, destroyed inside a callback. */
static void destroy_doomed(acm_domain *d)
{
    d->handles_doomed = false;
    for (int32_t i = d->nsmokes - 1; i >= 0; --i)
        if (d->smokes[i]->doomed)
            acm_smoke_destroy(d->smokes[i]);
    for (int32_t i = d->nsolids - 1; i >= 0; --i)
        if (d->solids[i]->doomed)
            acm_solid_destroy(d->solids[i]);
}

acm_status acm__domain_finish(acm_domain *d, acm_status st)
{
    if (d->guard_depth == 1 && d->handles_doomed)
        destroy_doomed(d);
    if (d->guard_depth == 1 && d->destroy_deferred) {
        destroy_now(d); /* the guard goes with it */
        return st;
    }
    acm__domain_leave(d);
    return st;
}

ACM_API const char *acm_domain_last_error(const acm_domain *domain)
{
    if (domain == NULL)
        return "domain is NULL";
    const char *refusal = acm__guard_refusal(domain);
    return refusal != NULL ? refusal : domain->error;
}

/* ---- stepping --------------------------------------------------------- */

static acm_status step_unguarded(acm_domain *domain, int64_t nsteps)
{
    ACM_TRY(acm__step_check(domain, nsteps));
    return acm__divergence_step(domain, nsteps);
}

/* ---- configuration ---------------------------------------------------- */

static bool face_ok(acm_face face) { return (unsigned)face < ACM_FACE_COUNT; }

static acm_status domain_set_face_unguarded(acm_domain *domain, acm_face face, acm_boundary type,
                                            const double velocity[3])
{
    if (!face_ok(face))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown face %d", (int)face);
    if ((unsigned)type > ACM_BOUNDARY_SLIP)
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown boundary type %d", (int)type);
    if (type == ACM_BOUNDARY_SLIP && velocity != NULL &&
        (velocity[0] != 0.0 || velocity[1] != 0.0 || velocity[2] != 0.0))
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                        "face %s: a slip wall takes no velocity (%g, %g, %g given): nothing "
                        "crosses it and it drags nothing along",
                        acm__face_name(face), velocity[0], velocity[1], velocity[2]);
    double u[3] = {0.0, 0.0, 0.0};
    if (velocity != NULL && (type == ACM_BOUNDARY_WALL || type == ACM_BOUNDARY_INLET)) {
        memcpy(u, velocity, sizeof u);
        if (!acm__speed_ok(u, domain->setup.max_speed))
            return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                            "face %s: velocity (%g, %g, %g) must be finite and slower than "
                            "max_speed=%g",
                            acm__face_name(face), u[0], u[1], u[2], domain->setup.max_speed);
        if (type == ACM_BOUNDARY_WALL && u[face / 2] != 0.0)
            return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                            "face %s: a wall velocity must be tangential (component %c is %g)",
                            acm__face_name(face), "xyz"[face / 2], u[face / 2]);
    }
    if (domain->face_values[face] != NULL) /* the face's values go with its old rule */
        ACM_TRY(acm__swap_face_values(domain, face, NULL));
    memset(&domain->setup.absorber[face], 0, sizeof domain->setup.absorber[face]); /* so do */
    acm__face_function_drop(domain, (int)face); /* its layer and its function */
    domain->setup.face[face].type = type;
    memcpy(domain->setup.face[face].u, u, sizeof u);
    return ACM_OK;
}

/* Why absorber a cannot stand in front of face (a message into msg), or NULL. */
static const char *absorber_refusal(const acm_domain *domain, acm_face face, const acm_absorber *a,
                                    char *msg, size_t size)
{
    const int32_t n[3] = {domain->nx, domain->ny, domain->nz};
    const int32_t whole = n[face / 2], other = domain->setup.absorber[face ^ 1].cells;
    if (a->cells < 1 || a->cells + other > whole - 2) {
        acm__format(msg, size,
                    "face %s: %d absorbing cells (and %d in front of the opposite face) do not "
                    "fit between the layers of an axis of %d cells: 1 to %d",
                    acm__face_name(face), (int)a->cells, (int)other, (int)whole,
                    (int)(whole - 2 - other));
        return msg;
    }
    if (!(a->strength > 0.0 && a->strength <= 1.0)) {
        acm__format(msg, size, "face %s: absorber strength %g must be in (0, 1]",
                    acm__face_name(face), a->strength);
        return msg;
    }
    if (!(isfinite(a->rho) && a->rho > 0.0 && a->rho <= 10.0)) {
        acm__format(msg, size, "face %s: reference density %g must be finite and in (0, 10]",
                    acm__face_name(face), a->rho);
        return msg;
    }
    if (!acm__speed_ok(a->u, domain->setup.max_speed)) {
        acm__format(msg, size,
                    "face %s: reference velocity (%g, %g, %g) must be finite and slower than "
                    "max_speed=%g",
                    acm__face_name(face), a->u[0], a->u[1], a->u[2], domain->setup.max_speed);
        return msg;
    }
    return NULL;
}

static acm_status domain_set_face_absorber_unguarded(acm_domain *domain, acm_face face,
                                                     int32_t cells, double strength,
                                                     double density, const double velocity[3])
{
    if (!face_ok(face))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown face %d", (int)face);
    const acm_boundary type = domain->setup.face[face].type;
    if (!acm_face_is_layer(type))
        return ACM_FAIL(domain, ACM_ERR_INVALID_ARG,
                        "face %s is %s: an absorbing layer stands in front of an inlet or an "
                        "outlet",
                        acm__face_name(face), acm__boundary_name(type));
    acm_absorber a = {cells, strength, density == 0.0 ? 1.0 : density, {0.0, 0.0, 0.0}};
    if (cells == 0) {
        memset(&domain->setup.absorber[face], 0, sizeof a);
        return ACM_OK;
    }
    if (velocity != NULL)
        memcpy(a.u, velocity, sizeof a.u);
    char msg[ACM_ERROR_SIZE];
    if (absorber_refusal(domain, face, &a, msg, sizeof msg) != NULL)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "%s", msg);
    domain->setup.absorber[face] = a;
    return ACM_OK;
}

static acm_status domain_get_face_absorber_unguarded(acm_domain *domain, acm_face face,
                                                     int32_t *cells, double *strength,
                                                     double *density, double velocity[3])
{
    if (cells == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "cells is NULL");
    if (!face_ok(face))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown face %d", (int)face);
    const acm_absorber *a = &domain->setup.absorber[face];
    *cells = a->cells;
    if (strength != NULL)
        *strength = a->strength;
    if (density != NULL)
        *density = a->rho;
    if (velocity != NULL)
        memcpy(velocity, a->u, sizeof a->u);
    return ACM_OK;
}

static acm_status domain_get_face_unguarded(acm_domain *domain, acm_face face, acm_boundary *type,
                                            double velocity[3])
{
    if (type == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "type is NULL");
    if (!face_ok(face))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown face %d", (int)face);
    *type = domain->setup.face[face].type;
    if (velocity != NULL)
        memcpy(velocity, domain->setup.face[face].u, 3 * sizeof(double));
    return ACM_OK;
}

static acm_status domain_set_body_force_unguarded(acm_domain *domain, const double force[3])
{
    if (force == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "force is NULL");
    if (!isfinite(force[0]) || !isfinite(force[1]) || !isfinite(force[2]))
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "body force (%g, %g, %g) is not finite",
                        force[0], force[1], force[2]);
    memcpy(domain->setup.body_force, force, 3 * sizeof(double));
    return ACM_OK;
}

static acm_status domain_set_collision_unguarded(acm_domain *domain, const acm_collision_options *opts)
{
    if (opts == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "collision options are NULL");
    size_t size = collision_options_size(opts->version);
    if (size == 0)
        return ACM_FAIL(domain, ACM_ERR_BAD_VERSION,
                        "acm_collision_options version %u is not supported", opts->version);
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    memcpy(&c, opts, size);
    ACM_TRY(check_collision(&c, domain->error, sizeof domain->error));
    if (c.model == ACM_COLLISION_DEFAULT)
        c.model = ACM_COLLISION_ACM_LI2018;
    c.version = ACM_COLLISION_OPTIONS_VERSION;
    domain->setup.coll = c;
    return ACM_OK;
}

static acm_status domain_get_collision_unguarded(acm_domain *domain, acm_collision_options *opts)
{
    if (opts == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "collision options are NULL");
    size_t size = collision_options_size(opts->version);
    if (size == 0)
        return ACM_FAIL(domain, ACM_ERR_BAD_VERSION,
                        "acm_collision_options version %u is not supported", opts->version);
    uint32_t version = opts->version;
    memcpy(opts, &domain->setup.coll, size);
    opts->version = version;
    return ACM_OK;
}

ACM_API acm_status acm_param_bounds(acm_param param, int64_t *min, int64_t *max)
{
    if (min == NULL || max == NULL)
        return ACM_ERR_NULL_POINTER;
    switch (param) {
    case ACM_PARAM_THREADS:
        *min = 0;
        *max = 4096;
        return ACM_OK;
    case ACM_PARAM_DIVERGENCE_INTERVAL:
        *min = 1;
        *max = INT64_C(1) << 40;
        return ACM_OK;
    case ACM_PARAM_IB_ITERATIONS:
        *min = 1;
        *max = 16;
        return ACM_OK;
    case ACM_PARAM_HALO_OVERLAP:
        *min = 0;
        *max = 2;
        return ACM_OK;
    default:
        return ACM_ERR_BAD_ENUM;
    }
}

static acm_status domain_set_param_unguarded(acm_domain *domain, acm_param param, int64_t value)
{
    int64_t lo, hi;
    if (acm_param_bounds(param, &lo, &hi) != ACM_OK)
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown parameter %d", (int)param);
    if (value < lo || value > hi)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "parameter %d: value %lld outside [%lld, %lld]",
                        (int)param, (long long)value, (long long)lo, (long long)hi);
    if (param == ACM_PARAM_THREADS)
        domain->setup.threads = value;
    else if (param == ACM_PARAM_IB_ITERATIONS)
        domain->layout.ib.iterations = (int32_t)value;
    else if (param == ACM_PARAM_HALO_OVERLAP)
        domain->setup.halo_overlap = (int32_t)value;
    else
        domain->setup.divergence_interval = value;
    return ACM_OK;
}

static acm_status domain_get_param_unguarded(acm_domain *domain, acm_param param, int64_t *value)
{
    if (value == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "value is NULL");
    switch (param) {
    case ACM_PARAM_THREADS: *value = domain->setup.threads; return ACM_OK;
    case ACM_PARAM_DIVERGENCE_INTERVAL: *value = domain->setup.divergence_interval; return ACM_OK;
    case ACM_PARAM_IB_ITERATIONS: *value = domain->layout.ib.iterations; return ACM_OK;
    case ACM_PARAM_HALO_OVERLAP: *value = domain->setup.halo_overlap; return ACM_OK;
    default: return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown parameter %d", (int)param);
    }
}

/* ---- initial conditions ------------------------------------------------ */

static void reset_counters(acm_domain *d)
{
    d->config_serial++; /* a new state: an older divergence snapshot is dropped */
    d->step = 0;
    d->diverged = false;
    d->diverged_step = 0;
    d->fallback_last = 0;
    d->fallback_total = 0;
}

/* Cell k's density, held by the storage; nothing is changed otherwise. */
static acm_status check_cell_density(acm_domain *d, size_t k, double rho)
{
    char msg[ACM_ERROR_SIZE / 2];
    if (check_density(rho, d->layout.precision, msg, sizeof msg) == ACM_OK)
        return ACM_OK;
    const size_t nx = (size_t)d->nx, ny = (size_t)d->ny;
    return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "cell %zu (x=%zu y=%zu z=%zu): %s; nothing was changed",
                    k, k % nx, k / nx % ny, k / (nx * ny), msg);
}

static acm_status domain_init_uniform_unguarded(acm_domain *domain, double density,
                                                const double velocity[3])
{
    double u[3] = {0.0, 0.0, 0.0};
    if (velocity != NULL)
        memcpy(u, velocity, sizeof u);
    if (!(isfinite(density) && density > 0.0))
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "density=%g must be positive and finite",
                        density);
    ACM_TRY(check_density(density, domain->layout.precision, domain->error, sizeof domain->error));
    if (!acm__speed_ok(u, domain->setup.max_speed))
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                        "velocity must be finite with speed below max_speed=%g",
                        domain->setup.max_speed);
    acm_init_source src = {ACM_DTYPE_FLOAT64, NULL, NULL, density, {u[0], u[1], u[2]}};
    ACM_TRY(domain->ops->init_equilibrium(domain, &src));
    reset_counters(domain);
    return ACM_OK;
}

static bool dtype_ok(acm_dtype dtype) { return acm__dtype_size(dtype) != 0; }

static acm_status domain_init_fields_unguarded(acm_domain *domain, acm_dtype dtype,
                                               const void *density, const void *velocity,
                                               size_t cell_count)
{
    if (!dtype_ok(dtype))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown dtype %d", (int)dtype);
    if (cell_count != (size_t)domain->ncells)
        return ACM_FAIL(domain, ACM_ERR_BUFFER_SIZE, "cell_count=%zu but the grid has %lld cells",
                        cell_count, (long long)domain->ncells);
    for (size_t k = 0; k < cell_count; ++k) {
        double rho = density ? acm__load(dtype, density, k) : 1.0;
        double u[3] = {0.0, 0.0, 0.0};
        if (velocity != NULL)
            for (int a = 0; a < 3; ++a)
                u[a] = acm__load(dtype, velocity, 3 * k + (size_t)a);
        if (!(isfinite(rho) && rho > 0.0) || !acm__speed_ok(u, domain->setup.max_speed))
            return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                            "cell %zu (x=%lld y=%lld z=%lld): density %g and velocity (%g, %g, "
                            "%g) must be finite, density > 0, speed < max_speed=%g",
                            k, (long long)(k % (size_t)domain->nx),
                            (long long)(k / (size_t)domain->nx % (size_t)domain->ny),
                            (long long)(k / ((size_t)domain->nx * (size_t)domain->ny)), rho,
                            u[0], u[1], u[2], domain->setup.max_speed);
        ACM_TRY(check_cell_density(domain, k, rho));
    }
    acm_init_source src = {dtype, density, velocity, 1.0, {0.0, 0.0, 0.0}};
    ACM_TRY(domain->ops->init_equilibrium(domain, &src));
    reset_counters(domain);
    return ACM_OK;
}

/* ---- fields ------------------------------------------------------------- */

/* Check field, dtype and size; return the element count. */
static acm_status check_field(acm_domain *d, acm_field field, acm_dtype dtype, size_t bytes,
                              size_t *count)
{
    int comp = acm__field_components(field);
    if (comp == 0)
        return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown field %d", (int)field);
    if (!dtype_ok(dtype))
        return ACM_FAIL(d, ACM_ERR_BAD_ENUM, "unknown dtype %d", (int)dtype);
    *count = (size_t)d->ncells * (size_t)comp;
    size_t want = *count * acm__dtype_size(dtype);
    if (bytes != want)
        return ACM_FAIL(d, ACM_ERR_BUFFER_SIZE, "buffer of %zu bytes; the field needs %zu", bytes,
                        want);
    return ACM_OK;
}

static acm_status domain_field_size_unguarded(acm_domain *domain, acm_field field, acm_dtype dtype,
                                              size_t *bytes)
{
    if (bytes == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "bytes is NULL");
    int comp = acm__field_components(field);
    if (comp == 0 || !dtype_ok(dtype))
        return ACM_FAIL(domain, ACM_ERR_BAD_ENUM, "unknown field %d or dtype %d", (int)field,
                        (int)dtype);
    *bytes = (size_t)domain->ncells * (size_t)comp * acm__dtype_size(dtype);
    return ACM_OK;
}

static acm_status domain_get_field_unguarded(acm_domain *domain, acm_field field, acm_dtype dtype,
                                             void *dst, size_t dst_bytes)
{
    if (dst == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "dst is NULL");
    size_t count = 0;
    ACM_TRY(check_field(domain, field, dtype, dst_bytes, &count));
    return domain->ops->get_field(domain, field, dtype, dst);
}

/* A population state is physical only where every cell's density, the sum of
 * its 27 populations, is positive and finite, as acm_domain_init_fields()
 * demands of the densities it is given. (Single populations may be negative:
 * the safety net and the face rules work with such states.) Checked here, in
 * the public layer, so that both backends refuse the same states. */
static acm_status check_populations(acm_domain *d, acm_dtype dtype, const void *src)
{
    const size_t cells = (size_t)d->ncells, nx = (size_t)d->nx, ny = (size_t)d->ny;
    for (size_t k = 0; k < cells; ++k) {
        double rho = 0.0;
        for (size_t i = 0; i < ACM_Q; ++i) {
            const double f = acm__load(dtype, src, ACM_Q * k + i);
            if (!acm__population_fits(f, d->layout.precision))
                return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                                "cell %zu (x=%zu y=%zu z=%zu): population %zu = %g is beyond what "
                                "%s storage holds; nothing was changed",
                                k, k % nx, k / nx % ny, k / (nx * ny), i, f,
                                acm__precision_name(d->layout.precision));
            rho += f;
        }
        if (!(isfinite(rho) && rho > 0.0))
            return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                            "cell %zu (x=%zu y=%zu z=%zu): density %g (the sum of its 27 "
                            "populations) must be positive and finite; nothing was changed",
                            k, k % nx, k / nx % ny, k / (nx * ny), rho);
        ACM_TRY(check_cell_density(d, k, rho));
    }
    return ACM_OK;
}

static acm_status domain_set_field_unguarded(acm_domain *domain, acm_field field, acm_dtype dtype,
                                             const void *src, size_t src_bytes)
{
    if (field == ACM_FIELD_DENSITY || field == ACM_FIELD_VELOCITY)
        return ACM_FAIL(domain, ACM_ERR_INVALID_ARG,
                        "density and velocity are set with acm_domain_init_fields");
    if (field == ACM_FIELD_FORCE && src == NULL && src_bytes == 0) {
        ACM_TRY(domain->ops->set_field(domain, field, dtype, NULL));
        domain->setup.has_force_field = false;
        return ACM_OK;
    }
    if (src == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "src is NULL");
    size_t count = 0;
    ACM_TRY(check_field(domain, field, dtype, src_bytes, &count));
    for (size_t k = 0; k < count; ++k) {
        double v = acm__load(dtype, src, k);
        if (!isfinite(v))
            return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                            "element %zu (cell %zu) is not finite; nothing was changed", k,
                            k / (size_t)acm__field_components(field));
    }
    if (field == ACM_FIELD_POPULATIONS)
        ACM_TRY(check_populations(domain, dtype, src));
    ACM_TRY(domain->ops->set_field(domain, field, dtype, src));
    if (field == ACM_FIELD_FORCE)
        domain->setup.has_force_field = true;
    else
        reset_counters(domain);
    return ACM_OK;
}

static acm_status domain_probe_unguarded(acm_domain *domain, int32_t x, int32_t y, int32_t z,
                                         double *density, double velocity[3])
{
    if (x < 0 || y < 0 || z < 0 || x >= domain->nx || y >= domain->ny || z >= domain->nz)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE, "cell (%d, %d, %d) outside the %dx%dx%d grid",
                        x, y, z, domain->nx, domain->ny, domain->nz);
    double rho, u[3];
    ACM_TRY(domain->ops->probe_cell(domain, x, y, z, &rho, u));
    if (density != NULL)
        *density = rho;
    if (velocity != NULL)
        memcpy(velocity, u, sizeof u);
    return ACM_OK;
}

#define ACM_SAMPLE_POINTS_MAX (UINT64_C(1) << 24)

/* The sampler without a backend op of its own: the 8 cells around each point
 * through probe_cell (cheap on the CPU, where probes read host memory). */
static acm_status sample_by_probes(acm_domain *d, const double *points, size_t count,
                                   double *velocity)
{
    const acm_ib_grid g = acm__ib_grid(d);
    for (size_t p = 0; p < count; ++p) {
        int32_t c[3][2];
        double f[3], *out = velocity + 3 * p;
        acm_smoke_stencil(&g, points + 3 * p, c, f);
        out[0] = out[1] = out[2] = 0.0;
        for (int q = 0; q < 8; ++q) {
            double rho, u[3];
            ACM_TRY(d->ops->probe_cell(d, c[0][q & 1], c[1][(q >> 1) & 1], c[2][q >> 2], &rho, u));
            const double w = acm_smoke_weight(q, f);
            for (int a = 0; a < 3; ++a)
                out[a] += w * u[a];
        }
    }
    return ACM_OK;
}

/* The points of a velocity read: count in range, every coordinate finite. */
static acm_status check_points(acm_domain *d, const double *points, size_t count)
{
    if (count < 1 || count > ACM_SAMPLE_POINTS_MAX)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "count=%zu must be in [1, 2^24]", count);
    for (size_t k = 0; k < 3 * count; ++k)
        if (!isfinite(points[k]))
            return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "point %zu is not finite", k / 3);
    return ACM_OK;
}

/* At once: through the backend's queued read (a pending one collected first:
 * the backend holds one), else from the cells' probes. */
static acm_status sample_now(acm_domain *d, const double *points, size_t count, double *velocity)
{
    if (d->ops->sample_velocity_begin == NULL)
        return sample_by_probes(d, points, count, velocity);
    ACM_TRY(acm__read_settle(d));
    ACM_TRY(d->ops->sample_velocity_begin(d, points, count));
    return d->ops->sample_velocity_end(d, velocity, count);
}

static acm_status domain_sample_velocity_unguarded(acm_domain *domain, const double *points,
                                                   size_t count, double *velocity)
{
    if (points == NULL || velocity == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "%s is NULL",
                        points == NULL ? "points" : "velocity");
    ACM_TRY(check_points(domain, points, count));
    return sample_now(domain, points, count, velocity);
}

/* Queued by the backend where it can, else made now and kept for the end. */
static acm_status sample_velocity_begin_unguarded(acm_domain *d, const double *points,
                                                  size_t count)
{
    if (points == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "points is NULL");
    ACM_TRY(check_points(d, points, count));
    if (d->read_count > 0)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "a velocity read of %zu points is under way: "
                        "acm_domain_sample_velocity_end() collects it first", d->read_count);
    if (d->ops->sample_velocity_begin != NULL) {
        ACM_TRY(d->ops->sample_velocity_begin(d, points, count));
    } else { /* made now, kept for the end */
        double *u = acm__malloc(3 * count * sizeof(double));
        if (u == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold the velocities of %zu points",
                            count);
        const acm_status st = sample_by_probes(d, points, count, u);
        if (st != ACM_OK) {
            acm__free(u);
            return st;
        }
        d->read_velocity = u;
    }
    d->read_count = count;
    return ACM_OK;
}

static acm_status sample_velocity_end_unguarded(acm_domain *d, double *velocity, size_t count)
{
    if (velocity == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "velocity is NULL");
    if (d->read_count == 0)
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "no velocity read was begun "
                        "(acm_domain_sample_velocity_begin)");
    if (count != d->read_count)
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE, "count=%zu: the read begun has %zu points", count,
                        d->read_count);
    acm_status st = ACM_OK;
    if (d->read_velocity != NULL)
        memcpy(velocity, d->read_velocity, 3 * count * sizeof(double));
    else
        st = d->ops->sample_velocity_end(d, velocity, count);
    read_drop(d); /* ended, also when the device failed */
    return st;
}

/* A caller's versioned output struct: present and of a version we know. */
static acm_status check_out_struct(acm_domain *d, const void *out, const uint32_t *version,
                                   uint32_t supported, const char *name)
{
    if (out == NULL)
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "%s is NULL", name);
    if (*version != supported)
        return ACM_FAIL(d, ACM_ERR_BAD_VERSION, "%s version %u is not supported (%u)", name,
                        *version, supported);
    return ACM_OK;
}

static acm_status domain_get_stats_unguarded(acm_domain *domain, acm_domain_stats *stats)
{
    ACM_TRY(check_out_struct(domain, stats, stats ? &stats->version : NULL,
                             ACM_DOMAIN_STATS_VERSION, "acm_domain_stats"));
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = stats->version;
    ACM_TRY(domain->ops->stats(domain, &s));
    s.step = domain->step;
    s.fallback_cells_last_step = domain->fallback_last;
    s.fallback_cells_total = domain->fallback_total;
    *stats = s;
    return ACM_OK;
}

static acm_status domain_get_info_unguarded(acm_domain *domain, acm_domain_info *info)
{
    if (info == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "acm_domain_info is NULL");
    const size_t size = domain_info_size(info->version);
    if (size == 0)
        return ACM_FAIL(domain, ACM_ERR_BAD_VERSION,
                        "acm_domain_info version %u is not supported (1 or 2)", info->version);
    acm_domain_info i;
    memset(&i, 0, sizeof i);
    i.version = info->version;
    i.nx = domain->nx;
    i.ny = domain->ny;
    i.nz = domain->nz;
    i.backend = domain->backend;
    i.device = domain->device;
    i.precision = domain->layout.precision;
    i.collision = domain->setup.coll.model;
    i.viscosity = domain->setup.viscosity;
    i.tau = 3.0 * domain->setup.viscosity + 0.5;
    i.csoa_group = (int64_t)domain->layout.csoa.alpha;
    i.kernel = domain->layout.kernel;
    i.block_size = domain->layout.block_size;
    i.step = domain->step;
    i.memory_bytes = domain->memory_bytes;
    i.streaming = domain->layout.streaming;
    i.bytes_per_cell = (double)domain->memory_bytes / (double)domain->ncells;
    memcpy(info, &i, size);
    return ACM_OK;
}

/* ---- the domain's solids and smokes -------------------------------------------------- */

/* The domain's first `count` handles of a list (`have`, `nhave` of them; all
 * pointers to structs share one representation, so both lists copy alike)
 * into out, and their number into *n. */
static acm_status get_handles_unguarded(acm_domain *d, const void *have, int32_t nhave, void *out,
                                        size_t count, size_t *n)
{
    if (n == NULL || (out == NULL && count > 0))
        return ACM_FAIL(d, ACM_ERR_NULL_POINTER, "%s is NULL", n == NULL ? "n" : "out");
    const size_t k = count < (size_t)nhave ? count : (size_t)nhave;
    if (k > 0)
        memcpy(out, have, k * sizeof(acm_solid *));
    *n = (size_t)nhave;
    return ACM_OK;
}

ACM_API acm_status acm_domain_get_smokes(acm_domain *domain, acm_smoke **out, size_t count,
                                         size_t *n)
{
    ACM_GUARDED(domain,
                get_handles_unguarded(domain, domain->smokes, domain->nsmokes, out, count, n));
}

ACM_API acm_status acm_domain_get_solids(acm_domain *domain, acm_solid **out, size_t count,
                                         size_t *n)
{
    ACM_GUARDED(domain,
                get_handles_unguarded(domain, domain->solids, domain->nsolids, out, count, n));
}

/* ---- layout ------------------------------------------------------------------ */

static acm_status domain_set_layout_unguarded(acm_domain *domain, const acm_layout *layout)
{
    if (layout == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "layout is NULL");
    return acm__domain_relayout(domain, layout);
}

static acm_status domain_get_layout_unguarded(acm_domain *domain, acm_layout *layout)
{
    if (layout == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "layout is NULL");
    acm__domain_layout(domain, layout);
    return ACM_OK;
}

ACM_API acm_status acm_step(acm_domain *domain, int64_t nsteps)
{
    if (domain == NULL)
        return ACM_ERR_NULL_POINTER;
    ACM_TRY(acm__domain_enter(domain, ACM_CALL_STATE));
    return acm__domain_finish(domain, step_unguarded(domain, nsteps)); /* the divergence callback */
}

ACM_API acm_status acm_domain_set_face(acm_domain *domain, acm_face face, acm_boundary type,
                                       const double velocity[3])
{
    ACM_GUARDED(domain, domain_set_face_unguarded(domain, face, type, velocity));
}

ACM_API acm_status acm_domain_set_face_values(acm_domain *domain, acm_face face, acm_dtype dtype,
                                              const void *values, size_t count)
{
    ACM_GUARDED(domain, acm__set_face_values(domain, face, dtype, values, count));
}

ACM_API acm_status acm_domain_set_face_function(acm_domain *domain, acm_face face,
                                                acm_face_values_fn fn, void *user_data)
{
    ACM_GUARDED(domain, acm__set_face_function(domain, face, fn, user_data));
}

ACM_API acm_status acm_domain_set_face_absorber(acm_domain *domain, acm_face face, int32_t cells,
                                                double strength, double density,
                                                const double velocity[3])
{
    ACM_GUARDED(domain, domain_set_face_absorber_unguarded(domain, face, cells, strength, density,
                                                           velocity));
}

ACM_API acm_status acm_domain_get_face_absorber(acm_domain *domain, acm_face face,
                                                int32_t *cells, double *strength,
                                                double *density, double velocity[3])
{
    ACM_GUARDED(domain, domain_get_face_absorber_unguarded(domain, face, cells, strength, density,
                                                           velocity));
}

ACM_API acm_status acm_domain_get_face(acm_domain *domain, acm_face face, acm_boundary *type,
                                       double velocity[3])
{
    ACM_GUARDED(domain, domain_get_face_unguarded(domain, face, type, velocity));
}

ACM_API acm_status acm_domain_set_body_force(acm_domain *domain, const double force[3])
{
    ACM_GUARDED(domain, domain_set_body_force_unguarded(domain, force));
}

ACM_API acm_status acm_domain_set_collision(acm_domain *domain, const acm_collision_options *opts)
{
    ACM_GUARDED(domain, domain_set_collision_unguarded(domain, opts));
}

ACM_API acm_status acm_domain_get_collision(acm_domain *domain, acm_collision_options *opts)
{
    ACM_GUARDED(domain, domain_get_collision_unguarded(domain, opts));
}

ACM_API acm_status acm_domain_set_param(acm_domain *domain, acm_param param, int64_t value)
{
    ACM_GUARDED(domain, domain_set_param_unguarded(domain, param, value));
}

ACM_API acm_status acm_domain_get_param(acm_domain *domain, acm_param param, int64_t *value)
{
    ACM_GUARDED(domain, domain_get_param_unguarded(domain, param, value));
}

ACM_API acm_status acm_domain_init_uniform(acm_domain *domain, double density,
                                           const double velocity[3])
{
    ACM_GUARDED_STATE(domain, domain_init_uniform_unguarded(domain, density, velocity));
}

ACM_API acm_status acm_domain_init_fields(acm_domain *domain, acm_dtype dtype,
                                          const void *density, const void *velocity,
                                          size_t cell_count)
{
    ACM_GUARDED_STATE(domain, domain_init_fields_unguarded(domain, dtype, density, velocity, cell_count));
}

ACM_API acm_status acm_domain_field_size(acm_domain *domain, acm_field field, acm_dtype dtype,
                                         size_t *bytes)
{
    ACM_GUARDED(domain, domain_field_size_unguarded(domain, field, dtype, bytes));
}

ACM_API acm_status acm_domain_get_field(acm_domain *domain, acm_field field, acm_dtype dtype,
                                        void *dst, size_t dst_bytes)
{
    ACM_GUARDED(domain, domain_get_field_unguarded(domain, field, dtype, dst, dst_bytes));
}

ACM_API acm_status acm_domain_set_field(acm_domain *domain, acm_field field, acm_dtype dtype,
                                        const void *src, size_t src_bytes)
{
    ACM_GUARDED_STATE(domain, domain_set_field_unguarded(domain, field, dtype, src, src_bytes));
}

ACM_API acm_status acm_domain_probe(acm_domain *domain, int32_t x, int32_t y, int32_t z,
                                    double *density, double velocity[3])
{
    ACM_GUARDED(domain, domain_probe_unguarded(domain, x, y, z, density, velocity));
}

ACM_API acm_status acm_domain_sample_velocity(acm_domain *domain, const double *points,
                                              size_t count, double *velocity)
{
    ACM_GUARDED(domain, domain_sample_velocity_unguarded(domain, points, count, velocity));
}

ACM_API acm_status acm_domain_sample_velocity_begin(acm_domain *domain, const double *points,
                                                    size_t count)
{
    ACM_GUARDED(domain, sample_velocity_begin_unguarded(domain, points, count));
}

ACM_API acm_status acm_domain_sample_velocity_end(acm_domain *domain, double *velocity,
                                                  size_t count)
{
    ACM_GUARDED(domain, sample_velocity_end_unguarded(domain, velocity, count));
}

ACM_API acm_status acm_domain_get_stats(acm_domain *domain, acm_domain_stats *stats)
{
    ACM_GUARDED(domain, domain_get_stats_unguarded(domain, stats));
}

ACM_API acm_status acm_domain_get_info(acm_domain *domain, acm_domain_info *info)
{
    ACM_GUARDED(domain, domain_get_info_unguarded(domain, info));
}

static acm_status domain_get_slabs_unguarded(acm_domain *domain, int32_t capacity,
                                             int32_t *nslabs, int32_t *cuts, double *cost)
{
    if (nslabs == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "nslabs is NULL");
    *nslabs = domain->decomp != NULL ? domain->decomp->nslabs : 1;
    if ((cuts != NULL || cost != NULL) && capacity < *nslabs + 1)
        return ACM_FAIL(domain, ACM_ERR_OUT_OF_RANGE,
                        "capacity=%d: %d slabs need %d cuts (and %d costs)", (int)capacity,
                        (int)*nslabs, (int)*nslabs + 1, (int)*nslabs);
    return acm__decomp_slabs(domain, cuts, cost);
}

ACM_API acm_status acm_domain_get_slabs(acm_domain *domain, int32_t capacity, int32_t *nslabs,
                                        int32_t *cuts, double *cost)
{
    ACM_GUARDED(domain, domain_get_slabs_unguarded(domain, capacity, nslabs, cuts, cost));
}

ACM_API acm_status acm_domain_set_layout(acm_domain *domain, const acm_layout *layout)
{
    ACM_GUARDED_STATE(domain, domain_set_layout_unguarded(domain, layout));
}

ACM_API acm_status acm_domain_get_layout(acm_domain *domain, acm_layout *layout)
{
    ACM_GUARDED(domain, domain_get_layout_unguarded(domain, layout));
}
