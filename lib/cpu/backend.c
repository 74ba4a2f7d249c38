/*
 * libacmlbm -- the CPU reference backend: memory, threads, and the ops table.
 * The per-type work is in cpu/lbm_tmpl.h, the row collision in cpu/kernel.c.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt */
#include <stdio.h>  /* fopen, fgets */
#include <stdlib.h> /* calloc, free, aligned_alloc */
#include <string.h> /* memcpy, memset */
#include <unistd.h> /* sysconf */

#ifdef _OPENMP
#  include <omp.h>
#endif /* _OPENMP */

#include "alloc.h"
#include "backend.h"
#include "boundary.h"
#include "collide.h"
#include "cpu.h"
#include "ib.h"
#include "kernel.h"
#include "moments.h"
#include "pipeline.h" /* acm__domain_collide_params */
#include "reduce.h"   /* acm__plane_sums_add, acm__prev_from_planes */
#include "solid.h"
#include "state.h"

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

/* Collision reductions of one row. */
typedef struct acm_row_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
    int64_t fallbacks;
    int64_t first_bad; /* smallest linear index of a diverged cell, -1 if none */
    double bad_rho, bad_u2; /* its rho and |u|^2 in the collision */
} acm_row_sums;

/* Immersed-boundary state: the samples of every solid, concatenated in the
 * order of d->solids, and the per-cell planes of the IB phase. */
typedef struct cpu_ib {
    uint64_t n;              /* samples */
    double *X, *ub;          /* 3n: world positions, rigid-body velocities */
    double *dv, *alpha;      /* n: volume weights, penalty gains */
    double *G, *Gsum;        /* 3n: penalty force density of the iteration, and their sum */
    double *rho;             /* n: density interpolated at the sample */
    void *macro;             /* 4 planes of ncells (storage type): rho, u* */
    void *force;             /* 3 planes of ncells: the IB force of the last step */
    uint32_t *mask;          /* one bit per cell: the support of the last step */
    uint32_t *cell_start;    /* gather: cell list of one solid's region */
    uint64_t *cell_samples;
    uint64_t list_cells;     /* capacity of cell_start - 1 */
    acm_ib_ft *ft;           /* per solid and own plane: the last step's force and torque */
    acm_coupling *cp;        /* per solid and own plane: the free bodies' coupling sums */
    double *dvdw;            /* 6 per solid: the free bodies' velocity changes */
} cpu_ib;

typedef struct cpu_impl {
    size_t elem;        /* bytes per population value: 4 or 8 */
    void *f[2];         /* CSoA population arrays (f[1] NULL when in place) */
    int cur;            /* two arrays: f[cur] holds the current post-collision state */
    bool in_place;      /* ACM_STREAMING_IN_PLACE: f[0] only, the AA pattern */
    int mom_bits;       /* moment storage: every post-collision cell projected on its
                           moments as stored with 16, 32 or 64 bits (lib/core/moments.h);
                           0 for population storage */
    int mom_closure;    /* moment storage: the closure (acm_mom_closure) the state's
                           populations were projected with; a step under a model of
                           the other closure projects them again first */
    int parity;         /* in place: 0 = f[0] holds the physical (streamed) state,
                           1 = the post-collision state of an even step, each
                           population in its opposite slot (cpu/lbm_tmpl.h) */
    void *force;        /* per-cell force, 3 planes of ncells, or NULL */
    void *zeros;        /* nx zeros: force rows when there is no field */
    void *tau;          /* ACM_LI2020 per-cell tau*, or NULL until needed */
    int nthreads;       /* threads of the parallel loops */
    void **scratch;     /* per thread: 2 * 27 * nx + 5 * nx values */
    acm_cpu_sums *sums; /* per row (y, z): diagnostics, folded in row order */
    acm_plane_sums *planes; /* per plane: the ACM rules' sums of the last advance or
                               initialisation (backend.h plane_sums) */
    acm_row_sums *row_sums; /* per row (y, z) of the last advance, folded in row order */
    const acm_cpu_kernels *kernels;
    bool split;         /* advance_edges stepped the edges: advance_rest steps the rest */
    cpu_ib ib;
} cpu_impl;

/* The diagnostic sums of the rows (m->sums, one per row) of the planes
 * [halo[0], nz - halo[1]), folded in row order into *out, and each plane's
 * sums of the ACM rules into m->planes. Ghost planes are left out. */
static void acm_cpu_sums_fold(const acm_domain *d, cpu_impl *m, acm_cpu_sums *out)
{
    memset(out, 0, sizeof *out);
    for (int32_t z = d->halo[0]; z < d->nz - d->halo[1]; ++z) {
        acm_cpu_sums p;
        memset(&p, 0, sizeof p);
        for (int32_t y = 0; y < d->ny; ++y) {
            const acm_cpu_sums *r = &m->sums[(int64_t)z * d->ny + y];
            p.mass += r->mass;
            for (int a = 0; a < 3; ++a)
                p.momentum[a] += r->momentum[a];
            p.energy += r->energy;
            p.max_u2 = r->max_u2 > p.max_u2 ? r->max_u2 : p.max_u2;
            p.sum_j += r->sum_j;
            p.sum_pi += r->sum_pi;
        }
        const acm_plane_sums ps = {p.max_u2, p.mass, p.sum_j, p.sum_pi};
        m->planes[z - d->halo[0]] = ps;
        out->mass += p.mass;
        for (int a = 0; a < 3; ++a)
            out->momentum[a] += p.momentum[a];
        out->energy += p.energy;
        out->max_u2 = p.max_u2 > out->max_u2 ? p.max_u2 : out->max_u2;
        out->sum_j += p.sum_j;
        out->sum_pi += p.sum_pi;
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
    if (d->first_bad >= 0 && (s->first_bad < 0 || row + d->first_bad < s->first_bad)) {
        s->first_bad = row + d->first_bad;
        s->bad_rho = d->bad_rho;
        s->bad_u2 = d->bad_u2;
    }
}

/* The planes [halo[0], nz - halo[1]) of the last advance: each plane's sums
 * (a fold of its rows in y order) into planes[] when not NULL, and in total
 * the fallbacks and the first diverged cell. Ghost planes are left out. */
static void acm_cpu_fold_rows(const acm_domain *d, const cpu_impl *m, acm_plane_sums *planes,
                              acm_row_sums *total)
{
    acm_row_sums_clear(total);
    for (int32_t z = d->halo[0]; z < d->nz - d->halo[1]; ++z) {
        acm_plane_sums p = {0.0, 0.0, 0.0, 0.0};
        for (int32_t y = 0; y < d->ny; ++y) {
            const acm_row_sums *r = &m->row_sums[(int64_t)z * d->ny + y];
            const acm_plane_sums rs = {r->max_u2, r->sum_rho, r->sum_j, r->sum_pi};
            acm__plane_sums_add(&p, &rs);
            total->fallbacks += r->fallbacks;
            if (r->first_bad >= 0 && (total->first_bad < 0 || r->first_bad < total->first_bad)) {
                total->first_bad = r->first_bad;
                total->bad_rho = r->bad_rho;
                total->bad_u2 = r->bad_u2;
            }
        }
        if (planes != NULL)
            planes[z - d->halo[0]] = p;
    }
}

static void *alloc_zeroed(size_t bytes) { return acm__calloc(1, bytes ? bytes : 1); }

static acm_status acm_cpu_ensure_tau(acm_domain *d, cpu_impl *m);
static void acm_cpu_reset_tau(const acm_domain *d, cpu_impl *m);
static acm_status acm_cpu_report_divergence(acm_domain *d, cpu_impl *m, const acm_row_sums *bad);
static void acm__cpu_ib_place(const acm_domain *d, cpu_ib *ib, bool all);
static acm_status acm__cpu_ib_cell_list(cpu_ib *ib, const acm_ib_grid *g, const acm_ib_region *rg,
                                        uint64_t first, uint64_t count);
static void acm__cpu_ib_sum_forces(acm_domain *d, cpu_ib *ib);
static void acm__cpu_ib_couple(const acm_domain *d, cpu_ib *ib, const double *dvdw);

#define ACM_R float
#define ACM_SFX(name) name##_f32
#include "lbm_tmpl.h"
#include "ib_tmpl.h"
#undef ACM_R
#undef ACM_SFX

#define ACM_R double
#define ACM_SFX(name) name##_f64
#include "lbm_tmpl.h"
#include "ib_tmpl.h"
#undef ACM_R
#undef ACM_SFX

#define IMPL(d) ((cpu_impl *)(d)->impl)
#define FP64(m) ((m)->elem == sizeof(double))

/* ---- memory --------------------------------------------------------------- */

static void free_scratch(cpu_impl *m)
{
    if (m->scratch != NULL)
        for (int t = 0; t < m->nthreads; ++t)
            acm__free(m->scratch[t]);
    acm__free(m->scratch);
    acm__free(m->sums);
    acm__free(m->row_sums);
    acm__free(m->planes);
    m->scratch = NULL;
    m->sums = NULL;
    m->row_sums = NULL;
    m->planes = NULL;
}

/* Per-thread buffers for n threads, and the per-row and per-plane sums. */
static acm_status alloc_scratch(acm_domain *d, cpu_impl *m, int n)
{
    free_scratch(m);
    m->nthreads = n;
    m->scratch = acm__calloc((size_t)n, sizeof(void *));
    const size_t rows = (size_t)d->ny * (size_t)d->nz;
    m->sums = acm__calloc(rows, sizeof(acm_cpu_sums));
    m->row_sums = acm__calloc(rows, sizeof(acm_row_sums));
    m->planes = acm__calloc((size_t)d->nz, sizeof(acm_plane_sums));
    if (m->scratch == NULL || m->sums == NULL || m->row_sums == NULL || m->planes == NULL)
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
    uint64_t pops = acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells) * m->elem;
    uint64_t per_cell = (m->force ? 3 : 0) + (m->tau ? 1 : 0) + (m->ib.force ? 7 : 0);
    uint64_t scratch = (uint64_t)m->nthreads * (uint64_t)(2 * ACM_Q + 5) * (uint64_t)d->nx;
    const cpu_ib *ib = &m->ib;
    uint64_t ib_bytes = ib->mask ? ((uint64_t)d->ncells + 31) / 32 * 4 + ib->n * 15 * sizeof(double) +
                                       ib->list_cells * 4 + (ib->cell_samples ? ib->n * 8 : 0)
                                 : 0;
    d->memory_bytes = (m->in_place ? 1 : 2) * pops + (per_cell * (uint64_t)d->ncells + scratch + (uint64_t)d->nx) * m->elem +
                      ib_bytes;
}

/* Match the thread count to ACM_PARAM_THREADS before a parallel pass. */
static acm_status sync_threads(acm_domain *d, cpu_impl *m)
{
    int want = d->setup.threads > 0 ? (int)d->setup.threads : acm_max_threads();
    if (want != m->nthreads)
        ACM_TRY(alloc_scratch(d, m, want));
    account(d, m);
    return ACM_OK;
}

/* A "Key:   123 kB" line of /proc/meminfo, in bytes; false if absent. */
static bool meminfo_bytes(const char *line, const char *key, uint64_t *out)
{
    const size_t n = strlen(key);
    unsigned long long kb = 0;
    if (strncmp(line, key, n) != 0 || sscanf(line + n, " %llu", &kb) != 1)
        return false;
    *out = (uint64_t)kb * 1024u;
    return true;
}

/* One number from a cgroup v2 file ("max" = no limit); false if absent. */
static bool cgroup_value(const char *path, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    bool ok = f != NULL && fscanf(f, "%llu", &v) == 1;
    if (f != NULL)
        fclose(f);
    *out = (uint64_t)v;
    return ok;
}

/* Memory a new allocation can actually be given, in bytes; false when the
 * system does not say. The rule: MemAvailable + SwapFree of /proc/meminfo
 * (RAM the kernel can hand out without killing anyone, plus free swap: a
 * domain in swap is slow but is not killed), capped by the process's cgroup
 * v2 limit (memory.max - memory.current) where one is set; without
 * /proc/meminfo, the free physical pages of sysconf(_SC_AVPHYS_PAGES).
 * Linux's overcommit grants far more than this and kills the process while
 * the pages are touched, so asking malloc is no test. */
static bool available_memory(uint64_t *out)
{
    uint64_t avail = 0, swap = 0;
    bool have_avail = false, have_swap = false;
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        have_avail |= meminfo_bytes(line, "MemAvailable:", &avail);
        have_swap |= meminfo_bytes(line, "SwapFree:", &swap);
    }
    if (f != NULL)
        fclose(f);
    if (have_avail) {
        avail += have_swap ? swap : 0;
    } else {
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || page <= 0)
            return false;
        avail = (uint64_t)pages * (uint64_t)page;
#else
        return false;
#endif /* _SC_AVPHYS_PAGES && _SC_PAGESIZE */
    }
    uint64_t max = 0, cur = 0; /* the container's own cgroup, as a cgroup namespace shows it */
    if (cgroup_value("/sys/fs/cgroup/memory.max", &max) &&
        cgroup_value("/sys/fs/cgroup/memory.current", &cur)) {
        const uint64_t left = max > cur ? max - cur : 0;
        avail = left < avail ? left : avail;
    }
    *out = avail;
    return true;
}

static acm_status cpu_domain_init(acm_domain *d)
{
    cpu_impl *m = acm__calloc(1, sizeof *m);
    if (m == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the CPU backend state");
    d->impl = m;
    m->elem = d->layout.precision == ACM_PRECISION_FP64 ? sizeof(double) : sizeof(float);
    m->kernels = acm_cpu_kernels_select();
    uint64_t n = acm_csoa_size(d->layout.csoa, (uint64_t)d->ncells);
    if (n > SIZE_MAX / m->elem)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "population storage does not fit in memory");
    m->in_place = d->layout.streaming == ACM_STREAMING_IN_PLACE;
    if (d->layout.storage == ACM_STORAGE_MOMENTS)
        m->mom_bits = d->layout.precision == ACM_PRECISION_FP16 ? 16 : 8 * (int)m->elem;
    m->mom_closure = acm_mom_closure(d->setup.coll.model);
    const int arrays = m->in_place ? 1 : 2;
    /* refuse what the machine cannot hold (available_memory) before the
     * kernel grants it and kills the process on first touch */
    const double need = arrays * (double)n * (double)m->elem +
                        (double)(2 * ACM_Q + 6) * (double)d->nx * (double)m->elem *
                            (double)acm_max_threads();
    uint64_t avail = 0;
    if (available_memory(&avail) && need > (double)avail)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                        "a %dx%dx%d domain needs %.3g GB for its populations but only %.3g GB "
                        "of memory is available (MemAvailable + SwapFree, within the cgroup "
                        "limit)",
                        d->nx, d->ny, d->nz, need / 1e9, (double)avail / 1e9);
    for (int b = 0; b < arrays; ++b)
        if ((m->f[b] = alloc_zeroed((size_t)n * m->elem)) == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                            "cannot allocate %.3g GB of populations for %dx%dx%d cells",
                            arrays * (double)n * (double)m->elem / 1e9, d->nx, d->ny, d->nz);
    if ((m->zeros = alloc_zeroed((size_t)d->nx * m->elem)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a row buffer");
    return sync_threads(d, m);
}

static void ib_free(cpu_ib *ib)
{
    void *bufs[] = {ib->X,    ib->ub,   ib->dv,         ib->alpha,       ib->G,  ib->Gsum,
                    ib->rho,  ib->macro, ib->force,     ib->mask,        ib->cell_start,
                    ib->cell_samples, ib->ft, ib->cp, ib->dvdw};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; ++b)
        acm__free(bufs[b]);
    memset(ib, 0, sizeof *ib);
}

/* The same but for the per-cell planes: a re-attach, even a failed one, must
 * not forget the last step's force. */
static void ib_free_samples(cpu_ib *ib)
{
    void *macro = ib->macro, *force = ib->force;
    uint32_t *mask = ib->mask;
    ib->macro = ib->force = NULL;
    ib->mask = NULL;
    ib_free(ib);
    ib->macro = macro;
    ib->force = force;
    ib->mask = mask;
}

static void cpu_domain_fini(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    ib_free(&m->ib);
    acm__free(m->f[0]);
    acm__free(m->f[1]);
    acm__free(m->force);
    acm__free(m->zeros);
    acm__free(m->tau);
    free_scratch(m);
    acm__free(m);
    d->impl = NULL;
}

static void acm_cpu_reset_tau(const acm_domain *d, cpu_impl *m)
{
    for (int64_t k = 0; k < d->ncells; ++k) {
        if (FP64(m))
            ((double *)m->tau)[k] = d->setup.coll.li2020_tau0;
        else
            ((float *)m->tau)[k] = (float)d->setup.coll.li2020_tau0;
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

/* The cell that went bad, with what it held in the collision that failed
 * (the state kept may look healthy there). */
static acm_status acm_cpu_report_divergence(acm_domain *d, cpu_impl *m, const acm_row_sums *bad)
{
    const int64_t cell = bad->first_bad;
    int32_t x = (int32_t)(cell % d->nx), y = (int32_t)(cell / d->nx % d->ny),
            z = (int32_t)(cell / ((int64_t)d->nx * d->ny));
    d->diverged = true;
    d->diverged_step = d->step + 1; /* the step under way: d->step counts completed ones */
    return ACM_FAIL(d, ACM_ERR_DIVERGED,
                    "diverged at step %lld: cell (%d, %d, %d) had density %g and speed %g in "
                    "that step's collision, speed limit %g; %s",
                    (long long)d->diverged_step, x, y, z + d->origin_z, bad->bad_rho,
                    sqrt(bad->bad_u2), d->setup.max_speed,
                    m->in_place ? "in-place streaming kept no copy of the state before it"
                                : "the state before that step is kept");
}

static acm_status cpu_prepare(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    return d->setup.coll.model == ACM_COLLISION_ACM_LI2020 ? acm_cpu_ensure_tau(d, m) : ACM_OK;
}

/* Moment storage's populations in the closure of the model now set. */
static void cpu_follow_closure(const acm_domain *d, cpu_impl *m)
{
    if (FP64(m))
        follow_closure_f64(d, m);
    else
        follow_closure_f32(d, m);
}

static acm_status cpu_advance(acm_domain *d, acm_check check)
{
    (void)check; /* the CPU checks every step */
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    cpu_follow_closure(d, m);
    return FP64(m) ? advance_f64(d, m) : advance_f32(d, m);
}

static acm_status cpu_advance_edges(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    cpu_follow_closure(d, m);
    return FP64(m) ? advance_edges_f64(d, m) : advance_edges_f32(d, m);
}

static acm_status cpu_advance_rest(acm_domain *d, acm_check check)
{
    (void)check;
    cpu_impl *m = IMPL(d);
    return FP64(m) ? advance_rest_f64(d, m) : advance_rest_f32(d, m);
}

/* ---- immersed boundary ---------------------------------------------------------- */

/* Place the samples of the solids that moved (all of them with `all`). */
static void acm__cpu_ib_place(const acm_domain *d, cpu_ib *ib, bool all)
{
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        if (!all && !s->moved && s->body.motion == ACM_MOTION_STATIC)
            continue;
        const acm_body *b = &s->body;
#pragma omp parallel for schedule(static) if (s->count >= 16384)
        for (int64_t j = 0; j < (int64_t)s->count; ++j) {
            const uint64_t l = s->offset + (uint64_t)j;
            acm_rigid_place(b->x, b->q, b->v, b->w, s->r + 3 * j, ib->X + 3 * l, ib->ub + 3 * l);
        }
        s->moved = false;
    }
}

/* Cell list of samples [first, first + count) over a region: cell_start[slot]
 * .. cell_start[slot + 1] index cell_samples (a counting sort by base cell). */
static acm_status acm__cpu_ib_cell_list(cpu_ib *ib, const acm_ib_grid *g, const acm_ib_region *rg,
                                        uint64_t first, uint64_t count)
{
    if (rg->cells > ib->list_cells) {
        uint32_t *p = acm__realloc(ib->cell_start, (size_t)(rg->cells + 1) * sizeof *p);
        if (p == NULL)
            return ACM_ERR_NO_MEMORY;
        ib->cell_start = p;
        ib->list_cells = rg->cells;
    }
    memset(ib->cell_start, 0, (size_t)(rg->cells + 1) * sizeof *ib->cell_start);
    for (uint64_t l = first; l < first + count; ++l) {
        int64_t b[3];
        uint64_t slot;
        acm_ib_base(ib->X + 3 * l, b);
        if (acm_ib_region_slot(g, rg, b, &slot))
            ib->cell_start[slot + 1]++;
    }
    for (uint64_t c = 0; c < rg->cells; ++c)
        ib->cell_start[c + 1] += ib->cell_start[c];
    for (uint64_t l = first; l < first + count; ++l) {
        int64_t b[3];
        uint64_t slot;
        acm_ib_base(ib->X + 3 * l, b);
        if (acm_ib_region_slot(g, rg, b, &slot))
            ib->cell_samples[ib->cell_start[slot]++] = l;
    }
    for (uint64_t c = rg->cells; c > 0; --c) /* the fill advanced every start by its count */
        ib->cell_start[c] = ib->cell_start[c - 1];
    ib->cell_start[0] = 0;
    return ACM_OK;
}

/* Planes of d whose solids' forces it sums: its own, not a slab's ghosts. */

/* The free bodies' coupling sums after the first interpolation, per own plane
 * of their samples' bases (acm_ib_owner_plane) in sample order, into ib->cp. */
static void acm__cpu_ib_plane_coupling(const acm_domain *d, cpu_ib *ib)
{
    const acm_ib_grid g = acm__ib_grid(d);
    const int32_t own = acm__own_planes(d), first = acm__own_origin(d);
    memset(ib->cp, 0, (size_t)d->nsolids * (size_t)own * sizeof *ib->cp);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion != ACM_MOTION_FREE)
            continue;
        acm_coupling *cp = ib->cp + (size_t)i * (size_t)own;
        for (uint64_t l = s->offset; l < s->offset + s->count; ++l) {
            const double *X = ib->X + 3 * l;
            const int32_t p = acm_ib_owner_plane(&g, X[2]) - first;
            if (p < 0 || p >= own) /* another slab's */
                continue;
            const double r[3] = {X[0] - s->body.x[0], X[1] - s->body.x[1], X[2] - s->body.x[2]};
            acm_coupling_add(&cp[p], r, ib->G + 3 * l, ib->dv[l], ib->alpha[l] * ib->rho[l] * ib->dv[l]);
        }
    }
}

/* Implicit coupling of the free bodies after the first interpolation: with
 * their velocity changes (dvdw, 6 per solid), each sample's penalty force for
 * the new velocity. */
static void acm__cpu_ib_couple(const acm_domain *d, cpu_ib *ib, const double *dvdw)
{
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion != ACM_MOTION_FREE)
            continue;
        const double *dv = dvdw + 6 * i, *dw = dv + 3;
        for (uint64_t l = s->offset; l < s->offset + s->count; ++l) {
            const double *X = ib->X + 3 * l, a = ib->alpha[l] * ib->rho[l];
            const double r[3] = {X[0] - s->body.x[0], X[1] - s->body.x[1], X[2] - s->body.x[2]};
            double du[3];
            acm_coupling_target(dv, dw, r, du);
            for (int k = 0; k < 3; ++k) {
                ib->G[3 * l + (uint64_t)k] += a * du[k];
                ib->Gsum[3 * l + (uint64_t)k] += a * du[k];
                ib->ub[3 * l + (uint64_t)k] += du[k];
            }
        }
    }
}

/* Each solid's force -sum G dV and torque -sum (X - x_c) x G dV (spec 9.1),
 * summed plane by plane (acm_ib_owner_plane) in sample order, the planes then
 * folded in order: a decomposed domain folds its slabs' planes the same way. */
static void acm__cpu_ib_sum_forces(acm_domain *d, cpu_ib *ib)
{
    const acm_ib_grid g = acm__ib_grid(d);
    const int32_t own = acm__own_planes(d), first = acm__own_origin(d);
    memset(ib->ft, 0, (size_t)d->nsolids * (size_t)own * sizeof *ib->ft);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        acm_solid *s = d->solids[i];
        acm_ib_ft *ft = ib->ft + (size_t)i * (size_t)own;
        for (uint64_t l = s->offset; l < s->offset + s->count; ++l) {
            const double *X = ib->X + 3 * l, *G = ib->Gsum + 3 * l;
            const int32_t p = acm_ib_owner_plane(&g, X[2]) - first;
            if (p < 0 || p >= own) /* another slab's */
                continue;
            const double r[3] = {X[0] - s->body.x[0], X[1] - s->body.x[1], X[2] - s->body.x[2]};
            const double dv = ib->dv[l];
            for (int a = 0; a < 3; ++a)
                ft[p].f[a] -= G[a] * dv;
            ft[p].t[0] -= (r[1] * G[2] - r[2] * G[1]) * dv;
            ft[p].t[1] -= (r[2] * G[0] - r[0] * G[2]) * dv;
            ft[p].t[2] -= (r[0] * G[1] - r[1] * G[0]) * dv;
        }
        acm_ib_ft sum;
        acm_ib_ft_fold(ft, own, &sum);
        memcpy(s->force, sum.f, sizeof sum.f);
        memcpy(s->torque, sum.t, sizeof sum.t);
    }
    d->forces_stale = false;
}

static acm_status cpu_ib_attach(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    cpu_ib *ib = &m->ib;
    ib_free_samples(ib);
    if (d->nsamples == 0) {
        ib_free(ib);
        account(d, m);
        return ACM_OK;
    }
    const size_t n = (size_t)d->nsamples, cells = (size_t)d->ncells;
    ib->n = d->nsamples;
    ib->X = acm__malloc(3 * n * sizeof(double));
    ib->ub = acm__malloc(3 * n * sizeof(double));
    ib->dv = acm__malloc(n * sizeof(double));
    ib->alpha = acm__malloc(n * sizeof(double));
    ib->G = acm__calloc(3 * n, sizeof(double));
    ib->Gsum = acm__calloc(3 * n, sizeof(double));
    ib->rho = acm__calloc(n, sizeof(double));
    ib->ft = acm__calloc((size_t)d->nsolids * (size_t)acm__own_planes(d), sizeof *ib->ft);
    ib->cp = acm__calloc((size_t)d->nsolids * (size_t)acm__own_planes(d), sizeof *ib->cp);
    ib->dvdw = acm__calloc(6 * (size_t)d->nsolids, sizeof *ib->dvdw);
    if (d->layout.ib.spread == ACM_IB_SPREAD_GATHER)
        ib->cell_samples = acm__malloc(n * sizeof(uint64_t));
    if (ib->macro == NULL)
        ib->macro = alloc_zeroed(4 * cells * m->elem);
    if (ib->force == NULL)
        ib->force = alloc_zeroed(3 * cells * m->elem);
    if (ib->mask == NULL)
        ib->mask = alloc_zeroed((cells + 31) / 32 * sizeof(uint32_t));
    if (ib->X == NULL || ib->ub == NULL || ib->dv == NULL || ib->alpha == NULL || ib->G == NULL ||
        ib->Gsum == NULL || ib->rho == NULL || ib->ft == NULL || ib->cp == NULL || ib->dvdw == NULL || ib->macro == NULL || ib->force == NULL || ib->mask == NULL ||
        (d->layout.ib.spread == ACM_IB_SPREAD_GATHER && ib->cell_samples == NULL)) {
        ib_free_samples(ib);
        account(d, m);
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY,
                        "cannot allocate the immersed-boundary storage for %llu samples",
                        (unsigned long long)n);
    }
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        for (uint64_t j = 0; j < s->count; ++j) {
            ib->dv[s->offset + j] = s->dv[j];
            ib->alpha[s->offset + j] = s->alpha;
        }
    }
    acm__cpu_ib_place(d, ib, true);
    account(d, m);
    return ACM_OK;
}

static acm_status cpu_ib_begin(acm_domain *d, acm_coupling *out)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    if (FP64(m))
        ib_begin_f64(d, m);
    else
        ib_begin_f32(d, m);
    acm__cpu_ib_plane_coupling(d, &m->ib);
    if (out != NULL)
        memcpy(out, m->ib.cp, (size_t)d->nsolids * (size_t)acm__own_planes(d) * sizeof *out);
    return ACM_OK;
}

static acm_status cpu_ib_end(acm_domain *d, const double *dvdw)
{
    cpu_impl *m = IMPL(d);
    return FP64(m) ? ib_end_f64(d, m, dvdw) : ib_end_f32(d, m, dvdw);
}

/* A whole IB phase: the free bodies' velocity changes from their planes'
 * coupling sums folded in plane order, as a decomposed domain does. */
static acm_status cpu_ib_forces(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(cpu_ib_begin(d, NULL));
    acm__solids_coupled_velocities(d, m->ib.cp, acm__own_planes(d), m->ib.dvdw);
    return cpu_ib_end(d, acm__solids_any_free(d) ? m->ib.dvdw : NULL);
}

static acm_status cpu_ib_fetch(acm_domain *d)
{
    d->forces_stale = false; /* the CPU sums them in ib_forces */
    return ACM_OK;
}

static acm_status cpu_ib_plane_forces(acm_domain *d, acm_ib_ft *out)
{
    const cpu_ib *ib = &IMPL(d)->ib;
    if (ib->ft == NULL)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "solid samples are not attached");
    memcpy(out, ib->ft, (size_t)d->nsolids * (size_t)acm__own_planes(d) * sizeof *out);
    return ACM_OK;
}

static acm_status cpu_ib_positions(acm_domain *d, const acm_solid *s, double *dst)
{
    const cpu_ib *ib = &IMPL(d)->ib;
    if (ib->X == NULL || s->offset + s->count > ib->n)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "solid samples are not attached");
    memcpy(dst, ib->X + 3 * s->offset, (size_t)s->count * 3 * sizeof(double));
    return ACM_OK;
}

static acm_status cpu_get_field(acm_domain *d, acm_field field, acm_dtype dtype, void *dst)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    cpu_follow_closure(d, m);
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
            acm__free(m->force);
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

/* ---- decomposition (lib/multi/decomp.c) ------------------------------------------------ */

static acm_status cpu_plane_sums(acm_domain *d, acm_plane_sums *out)
{
    memcpy(out, IMPL(d)->planes, (size_t)acm__own_planes(d) * sizeof *out);
    return ACM_OK;
}

static acm_status cpu_refresh_sums(acm_domain *d)
{
    cpu_impl *m = IMPL(d);
    if (FP64(m))
        refresh_prev_f64(d, m);
    else
        refresh_prev_f32(d, m);
    return ACM_OK;
}

/* The array holding the state between steps: f[0] in place, else f[cur]. */
static char *cpu_state_bytes(const cpu_impl *m) { return (char *)m->f[m->in_place ? 0 : m->cur]; }

/* The stored values of planes [z0, z0 + n), the slots of acm_moves(dz, i):
 * from `in` into the state when in is not NULL, else from the state into
 * `out` (backend.h planes_get/put). */
static void cpu_planes_move(acm_domain *d, int32_t z0, int32_t n, int dz, const char *in,
                            char *out)
{
    const cpu_impl *m = IMPL(d);
    char *f = cpu_state_bytes(m);
    const size_t e = m->elem, per = (size_t)acm_moved_count(dz);
    const int64_t first = (int64_t)z0 * d->nx * d->ny, count = (int64_t)n * d->nx * d->ny;
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (count >= ACM_CPU_PARALLEL_MIN)
    for (int64_t c = 0; c < count; ++c)
        for (int i = 0, j = 0; i < ACM_Q; ++i) {
            if (!acm_moves(dz, i))
                continue;
            char *slot = f + e * acm_csoa_index(d->layout.csoa, (uint64_t)(first + c), (uint32_t)i);
            const size_t at = e * ((size_t)c * per + (size_t)j++);
            if (in != NULL)
                memcpy(slot, in + at, e);
            else
                memcpy(out + at, slot, e);
        }
}

static acm_status cpu_planes_get(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf)
{
    cpu_planes_move(d, z0, n, dz, NULL, buf);
    return ACM_OK;
}

static acm_status cpu_planes_put(acm_domain *d, int32_t z0, int32_t n, int dz, const void *buf)
{
    cpu_planes_move(d, z0, n, dz, buf, NULL);
    return ACM_OK;
}

static acm_status cpu_planes_copy(acm_domain *dst, int32_t dst_z, acm_domain *src,
                                  int32_t src_z, int32_t n, int dz)
{
    const cpu_impl *ms = IMPL(src);
    const char *from = cpu_state_bytes(ms);
    char *to = cpu_state_bytes(IMPL(dst));
    const size_t e = ms->elem;
    const int64_t plane = (int64_t)src->nx * src->ny, count = n * plane;
    const int64_t s0 = src_z * plane, d0 = dst_z * plane;
#pragma omp parallel for schedule(static) num_threads(ms->nthreads) if (count >= ACM_CPU_PARALLEL_MIN)
    for (int64_t c = 0; c < count; ++c)
        for (int i = 0; i < ACM_Q; ++i)
            if (acm_moves(dz, i))
                memcpy(to + e * acm_csoa_index(dst->layout.csoa, (uint64_t)(d0 + c), (uint32_t)i),
                       from + e * acm_csoa_index(src->layout.csoa, (uint64_t)(s0 + c), (uint32_t)i),
                       e);
    return ACM_OK;
}

/* ---- re-layout ------------------------------------------------------------------ */

static acm_status cpu_state_save(acm_domain *d, acm_state *st, bool park)
{
    (void)park; /* host memory is where the CPU keeps it anyway */
    cpu_impl *m = IMPL(d);
    ACM_TRY(acm__state_alloc(d, st, m->force != NULL, m->tau != NULL, m->ib.force != NULL));
    cpu_follow_closure(d, m);
    if (FP64(m))
        state_save_f64(d, m, st);
    else
        state_save_f32(d, m, st);
    if (st->ib_mask != NULL)
        memcpy(st->ib_mask, m->ib.mask, acm_state_mask_words(d->ncells) * sizeof(uint32_t));
    st->prev_backend = ACM_BACKEND_CPU;
    st->prev[0] = d->prev.max_u;
    st->prev[1] = d->prev.mean_rho;
    st->prev[2] = d->prev.mean_j;
    st->prev[3] = d->prev.mean_pi;
    return ACM_OK;
}

static acm_status cpu_state_load(acm_domain *d, const acm_state *st)
{
    cpu_impl *m = IMPL(d);
    ACM_TRY(sync_threads(d, m));
    if (st->force != NULL && m->force == NULL &&
        (m->force = alloc_zeroed(3 * (size_t)d->ncells * m->elem)) == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the force field");
    if (st->tau != NULL)
        ACM_TRY(acm_cpu_ensure_tau(d, m));
    const bool ib = st->ib_force != NULL && m->ib.force != NULL;
    if (FP64(m)) {
        state_load_populations_f64(d, m, st);
        if (st->force != NULL)
            planes_load_f64(d, m->force, 3, st->force);
        if (st->tau != NULL)
            planes_load_f64(d, m->tau, 1, st->tau);
        if (ib)
            planes_load_f64(d, m->ib.force, 3, st->ib_force);
    } else {
        state_load_populations_f32(d, m, st);
        if (st->force != NULL)
            planes_load_f32(d, m->force, 3, st->force);
        if (st->tau != NULL)
            planes_load_f32(d, m->tau, 1, st->tau);
        if (ib)
            planes_load_f32(d, m->ib.force, 3, st->ib_force);
    }
    if (ib)
        memcpy(m->ib.mask, st->ib_mask, acm_state_mask_words(d->ncells) * sizeof(uint32_t));
    if (st->prev_backend == ACM_BACKEND_CPU) {
        d->prev.max_u = st->prev[0];
        d->prev.mean_rho = st->prev[1];
        d->prev.mean_j = st->prev[2];
        d->prev.mean_pi = st->prev[3];
    } else if (FP64(m)) {
        refresh_prev_f64(d, m);
    } else {
        refresh_prev_f32(d, m);
    }
    account(d, m);
    return ACM_OK;
}

/* "cpu <model name> x<threads>" (the model from /proc/cpuinfo where there is one). */
static void cpu_device_name(acm_domain *d, char *buf, size_t size)
{
    char model[128] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || colon == NULL)
            continue;
        acm__format(model, sizeof model, "%s", colon + 2);
        model[strcspn(model, "\n")] = '\0';
        break;
    }
    if (f != NULL)
        fclose(f);
    acm__format(buf, size, "cpu %s x%d", model, d->setup.threads > 0 ? (int)d->setup.threads : acm_max_threads());
}

const struct acm_backend_ops acm_backend_cpu = {
    .name = "cpu",
    .kind = ACM_BACKEND_CPU,
    .probe = cpu_probe,
    .domain_init = cpu_domain_init,
    .domain_fini = cpu_domain_fini,
    .init_equilibrium = cpu_init_equilibrium,
    .advance = cpu_advance,
    .advance_edges = cpu_advance_edges,
    .advance_rest = cpu_advance_rest,
    .prepare = cpu_prepare,
    .ib_attach = cpu_ib_attach,
    .ib_forces = cpu_ib_forces,
    .ib_fetch = cpu_ib_fetch,
    .ib_plane_forces = cpu_ib_plane_forces,
    .ib_begin = cpu_ib_begin,
    .ib_end = cpu_ib_end,
    .ib_positions = cpu_ib_positions,
    .get_field = cpu_get_field,
    .set_field = cpu_set_field,
    .probe_cell = cpu_probe_cell,
    .stats = cpu_stats,
    .plane_sums = cpu_plane_sums,
    .refresh_sums = cpu_refresh_sums,
    .planes_get = cpu_planes_get,
    .planes_put = cpu_planes_put,
    .planes_copy = cpu_planes_copy,
    .state_save = cpu_state_save,
    .state_load = cpu_state_load,
    .device_name = cpu_device_name,
};
