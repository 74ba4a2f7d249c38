/*
 * libacmlbm -- the CPU reference backend: memory, threads, and the ops table.
 * The per-type work is in lbm_cpu_tmpl.h, the row collision in cpu_kernel.c.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt */
#include <stdlib.h> /* calloc, free, aligned_alloc */
#include <string.h> /* memcpy, memset */

#ifdef _OPENMP
#  include <omp.h>
#endif /* _OPENMP */

#include "backend.h"
#include "boundary.h"
#include "collide.h"
#include "cpu_kernel.h"

/* Domains smaller than this run on one thread: the fork/join of a parallel
 * region costs more than it saves, and small domains are typical of games
 * that step many of them. */
#define ACM_CPU_PARALLEL_MIN 16384

static int acm_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif /* _OPENMP */
}

static int acm_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif /* _OPENMP */
}

/* Diagnostic sums of one thread. */
typedef struct acm_cpu_sums {
    double mass, momentum[3], energy, max_u2, sum_j, sum_pi;
} acm_cpu_sums;

/* Collision reductions of one thread. */
typedef struct acm_row_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
    int64_t fallbacks;
    int64_t first_bad; /* smallest linear index of a diverged cell, -1 if none */
} acm_row_sums;

typedef struct cpu_impl {
    size_t elem;        /* bytes per population value: 4 or 8 */
    void *f[2];         /* CSoA population arrays */
    int cur;            /* f[cur] holds the current post-collision state */
    void *force;        /* per-cell force, 3 planes of ncells, or NULL */
    void *zeros;        /* nx zeros: force rows when there is no field */
    void *tau;          /* ACM_LI2020 per-cell tau*, or NULL until needed */
    int nthreads;       /* threads of the parallel loops */
    void **scratch;     /* per thread: 2 * 27 * nx + 5 * nx values */
    acm_cpu_sums *sums; /* per thread */
    acm_row_sums *row_sums;
    const acm_cpu_kernels *kernels;
} cpu_impl;

static void acm_cpu_sums_reduce(const acm_cpu_sums *s, int n, acm_cpu_sums *out)
{
    memset(out, 0, sizeof *out);
    for (int t = 0; t < n; ++t) {
        out->mass += s[t].mass;
        for (int a = 0; a < 3; ++a)
            out->momentum[a] += s[t].momentum[a];
        out->energy += s[t].energy;
        out->max_u2 = s[t].max_u2 > out->max_u2 ? s[t].max_u2 : out->max_u2;
        out->sum_j += s[t].sum_j;
        out->sum_pi += s[t].sum_pi;
    }
}

static void acm_row_sums_clear(acm_row_sums *s)
{
    memset(s, 0, sizeof *s);
    s->first_bad = -1;
}

static void acm_row_sums_add(acm_row_sums *s, const acm_row_diag *d, int64_t row)
{
    s->max_u2 = d->max_u2 > s->max_u2 ? d->max_u2 : s->max_u2;
    s->sum_rho += d->sum_rho;
    s->sum_j += d->sum_j;
    s->sum_pi += d->sum_pi;
    s->fallbacks += d->fallbacks;
    if (d->first_bad >= 0 && (s->first_bad < 0 || row + d->first_bad < s->first_bad))
        s->first_bad = row + d->first_bad;
}

static void acm_row_sums_reduce(const acm_row_sums *s, int n, acm_row_sums *out)
{
    acm_row_sums_clear(out);
    for (int t = 0; t < n; ++t) {
        out->max_u2 = s[t].max_u2 > out->max_u2 ? s[t].max_u2 : out->max_u2;
        out->sum_rho += s[t].sum_rho;
        out->sum_j += s[t].sum_j;
        out->sum_pi += s[t].sum_pi;
        out->fallbacks += s[t].fallbacks;
        if (s[t].first_bad >= 0 && (out->first_bad < 0 || s[t].first_bad < out->first_bad))
            out->first_bad = s[t].first_bad;
    }
}

static void *alloc_zeroed(size_t bytes) { return calloc(1, bytes ? bytes : 1); }

static acm_status acm_cpu_ensure_tau(acm_domain *d, cpu_impl *m);
static void acm_cpu_reset_tau(const acm_domain *d, cpu_impl *m);
static acm_status acm_cpu_report_divergence(acm_domain *d, cpu_impl *m, int64_t cell);

#define ACM_R float
#define ACM_SFX(name) name##_f32
#include "lbm_cpu_tmpl.h"
#undef ACM_R
#undef ACM_SFX

#define ACM_R double
#define ACM_SFX(name) name##_f64
#include "lbm_cpu_tmpl.h"
#undef ACM_R
#undef ACM_SFX

#define IMPL(d) ((cpu_impl *)(d)->impl)
#define FP64(m) ((m)->elem == sizeof(double))

/* ---- memory --------------------------------------------------------------- */

static void free_scratch(cpu_impl *m)
{
    if (m->scratch != NULL)
        for (int t = 0; t < m->nthreads; ++t)
            free(m->scratch[t]);
    free(m->scratch);
    free(m->sums);
    free(m->row_sums);
    m->scratch = NULL;
    m->sums = NULL;
    m->row_sums = NULL;
}

/* Per-thread buffers for n threads. */
static acm_status alloc_scratch(acm_domain *d, cpu_impl *m, int n)
{
    free_scratch(m);
    m->nthreads = n;
    m->scratch = calloc((size_t)n, sizeof(void *));
    m->sums = calloc((size_t)n, sizeof(acm_cpu_sums));
    m->row_sums = calloc((size_t)n, sizeof(acm_row_sums));
    if (m->scratch == NULL || m->sums == NULL || m->row_sums == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate per-thread buffers");
    size_t per = (size_t)(2 * ACM_Q + 5) * (size_t)d->nx * m->elem;
    for (int t = 0; t < n; ++t)
        if ((m->scratch[t] = alloc_zeroed(per)) == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate per-thread row buffers");
    return ACM_OK;
}

/* Bytes held by the domain, for acm_domain_get_info(). */
static void account(acm_domain *d, const cpu_impl *m)
{
    uint64_t pops = acm_csoa_size(d->csoa, (uint64_t)d->ncells) * m->elem;
    uint64_t per_cell = (m->force ? 3 : 0) + (m->tau ? 1 : 0);
    uint64_t scratch = (uint64_t)m->nthreads * (uint64_t)(2 * ACM_Q + 5) * (uint64_t)d->nx;
    d->memory_bytes = 2 * pops + (per_cell * (uint64_t)d->ncells + scratch + (uint64_t)d->nx) * m->elem;
}

/* Match the thread count to ACM_PARAM_THREADS before a parallel pass. */
static acm_status sync_threads(acm_domain *d, cpu_impl *m)
{
    int want = d->threads > 0 ? (int)d->threads : acm_max_threads();
    if (want != m->nthreads)
        ACM_TRY(alloc_scratch(d, m, want));
    account(d, m);
    return ACM_OK;
}

static acm_status cpu_domain_init(acm_domain *d)
{
    cpu_impl *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the CPU backend state");
    d->impl = m;
    m->elem = d->precision == ACM_PRECISION_FP64 ? sizeof(double) : sizeof(float);
    m->kernels = acm_cpu_kernels_select();
    uint64_t n = acm_csoa_size(d->csoa, (uint64_t)d->ncells);
    if (n > SIZE_MAX / m->elem)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "population storage does not fit in memory");
    for (int b = 0; b < 2; ++b)
        if ((m->f[b] = alloc_zeroed((size_t)n * m->elem)) == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                            "cannot allocate %.3g GB of populations for %dx%dx%d cells",
                            2.0 * (double)n * (double)m->elem / 1e9, d->nx, d->ny, d->nz);
    if ((m->zeros = alloc_zeroed((size_t)d->nx * m->elem)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a row buffer");
    return sync_threads(d, m);
}

static void cpu_domain_fini(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    free(m->f[0]);
    free(m->f[1]);
    free(m->force);
    free(m->zeros);
    free(m->tau);
    free_scratch(m);
    free(m);
    d->impl = NULL;
}

static void acm_cpu_reset_tau(const acm_domain *d, cpu_impl *m)
{
    for (int64_t k = 0; k < d->ncells; ++k) {
        if (FP64(m))
            ((double *)m->tau)[k] = d->coll.li2020_tau0;
        else
            ((float *)m->tau)[k] = (float)d->coll.li2020_tau0;
    }
}

static acm_status acm_cpu_ensure_tau(acm_domain *d, cpu_impl *m)
{
    if (m->tau != NULL)
        return ACM_OK;
    if ((m->tau = alloc_zeroed((size_t)d->ncells * m->elem)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the ACM_LI2020 state");
    acm_cpu_reset_tau(d, m);
    account(d, m);
    return ACM_OK;
}

/* ---- ops ----------------------------------------------------------------------- */

static bool cpu_probe(void) { return true; }

static acm_status cpu_init_equilibrium(acm_domain *d, const acm_init_source *src)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    if (FP64(m))
        init_equilibrium_f64(d, m, src);
    else
        init_equilibrium_f32(d, m, src);
    return ACM_OK;
}

static acm_status acm_cpu_report_divergence(acm_domain *d, cpu_impl *m, int64_t cell)
{
    int32_t x = (int32_t)(cell % d->nx), y = (int32_t)(cell / d->nx % d->ny),
            z = (int32_t)(cell / ((int64_t)d->nx * d->ny));
    double rho, u[3];
    if (FP64(m))
        probe_f64(d, m, x, y, z, &rho, u);
    else
        probe_f32(d, m, x, y, z, &rho, u);
    d->diverged = true;
    return ACM_FAIL(d, ACM_ERR_DIVERGED,
                    "diverged at step %lld: cell (%d, %d, %d) has density %g and velocity "
                    "(%g, %g, %g), speed limit %g; the state before that step is kept",
                    (long long)d->step + 1, x, y, z, rho, u[0], u[1], u[2], d->max_speed);
}

static acm_status cpu_step(acm_domain *d, int64_t nsteps)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    return FP64(m) ? step_f64(d, m, nsteps) : step_f32(d, m, nsteps);
}

static acm_status cpu_get_field(acm_domain *d, acm_field field, acm_dtype dtype, void *dst)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    if (FP64(m))
        get_field_f64(d, m, field, dtype, dst);
    else
        get_field_f32(d, m, field, dtype, dst);
    return ACM_OK;
}

static acm_status cpu_set_field(acm_domain *d, acm_field field, acm_dtype dtype, const void *src)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    if (field == ACM_FIELD_FORCE) {
        if (src == NULL) {
            free(m->force);
            m->force = NULL;
            account(d, m);
            return ACM_OK;
        }
        if (m->force == NULL && (m->force = alloc_zeroed(3 * (size_t)d->ncells * m->elem)) == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the force field");
        if (FP64(m))
            set_force_f64(d, m, dtype, src);
        else
            set_force_f32(d, m, dtype, src);
        account(d, m);
        return ACM_OK;
    }
    if (FP64(m))
        set_populations_f64(d, m, dtype, src);
    else
        set_populations_f32(d, m, dtype, src);
    return ACM_OK;
}

static acm_status cpu_probe_cell(acm_domain *d, int32_t x, int32_t y, int32_t z, double *rho,
                                 double u[3])
{
    cpu_impl *m = IMPL(d);
    if (FP64(m))
        probe_f64(d, m, x, y, z, rho, u);
    else
        probe_f32(d, m, x, y, z, rho, u);
    return ACM_OK;
}

static acm_status cpu_stats(acm_domain *d, acm_domain_stats *out)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    acm_cpu_sums s;
    if (FP64(m))
        diagnose_f64(d, m, &s);
    else
        diagnose_f32(d, m, &s);
    out->mass = s.mass;
    memcpy(out->momentum, s.momentum, sizeof s.momentum);
    out->kinetic_energy = s.energy;
    out->max_speed = sqrt(s.max_u2);
    return ACM_OK;
}

const struct acm_backend_ops acm_backend_cpu = {
    .name = "cpu",
    .kind = ACM_BACKEND_CPU,
    .probe = cpu_probe,
    .domain_init = cpu_domain_init,
    .domain_fini = cpu_domain_fini,
    .init_equilibrium = cpu_init_equilibrium,
    .step = cpu_step,
    .get_field = cpu_get_field,
    .set_field = cpu_set_field,
    .probe_cell = cpu_probe_cell,
    .stats = cpu_stats,
};
