/*
 * libacmlbm -- the CUDA backend's statistics and state transfers: the
 * diagnostics and the ACM rules' sums of the current state, equilibrium
 * initialisation, field and population transfers through the staging
 * buffer, cell probes, and a re-layout's save and load of the state
 * (lib/engine/state.h). SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "backend_impl.cuh"
#include "state.h"

/* ---- statistics ------------------------------------------------------------------ */

/* Diagnostics of the current state into m->sums[2..3] (device). */
static acm_status diagnose(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a = cu_step_args(d);
    unsigned n = 0;
    m->planes_sent = false; /* the planes now hold the current state's sums */
    CU_TRY(d, cudaMemsetAsync(m->planes, 0, cu_planes_bytes(d), m->stream));
    CU_TRY(d, acm_launch_diagnostics(a, cu_state_array(m), m->elem, m->partials, &n, m->stream));
    CU_TRY(d, acm_launch_sum_partials(m->partials, n, m->sums + 2, true, (double)d->ncells,
                                      m->sum_scratch, m->stream));
    CU_TRY(d, acm_launch_sum_partials(m->partials + n, n, m->sums + 3, false, (double)d->ncells,
                                      m->sum_scratch, m->stream));
    return ACM_OK;
}

/* The ACM rules' inputs of the next step into sums[slot]: the planes of
 * acm_plane_add folded in plane order, ghost planes left out; a step's
 * (gated as its state kernels are), or now. */
acm_status cu_fold_planes(acm_domain *d, int slot, bool step)
{
    cuda_impl *m = IMPL(d);
    const int32_t lo = d->halo[0], hi = d->nz - d->halo[1];
    const acm_gate open = {NULL, 0, NULL};
    CU_TRY(d, acm_launch_plane_fold(m->planes, lo, hi, m->sums + slot,
                                    (double)(hi - lo) * d->nx * d->ny,
                                    step ? cu_gate(d) : open, m->stream));
    return ACM_OK;
}

/* The ACM rules' "previous step" from the current state (after a new state). */
static acm_status refresh_ring(acm_domain *d)
{
    ACM_TRY(diagnose(d));
    return cu_fold_planes(d, IMPL(d)->ring, false);
}

/* A slab's plane sums of its state after its ghost planes changed (moment
 * storage: the cells next to a cut pull from them). */
extern "C" acm_status acm_cuda_refresh_sums(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    return diagnose(d);
}

extern "C" acm_status acm_cuda_stats(acm_domain *d, acm_domain_stats *out)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    ACM_TRY(diagnose(d));
    CU_TRY(d, cudaMemcpyAsync(m->host_sums, m->sums + 2, 2 * sizeof(acm_gpu_sums),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    out->mass = m->host_sums[0].sum_rho;
    out->momentum[0] = m->host_sums[1].max_u2;
    out->momentum[1] = m->host_sums[1].sum_rho;
    out->momentum[2] = m->host_sums[1].sum_j;
    out->kinetic_energy = m->host_sums[1].sum_pi;
    out->max_speed = sqrt(m->host_sums[0].max_u2);
    return ACM_OK;
}

/* ---- state transfers ----------------------------------------------------------------- */

/* The array to write a physical state into before adopt_physical_state. */
static void *physical_target(const cuda_impl *m) { return m->f[m->in_place ? 0 : 1 - m->cur]; }

/* Cells per chunk for transfers of `per_cell` bytes per cell. */
static uint32_t chunk_cells(const acm_domain *d, size_t per_cell)
{
    size_t n = ACM_STAGING_BYTES / per_cell;
    return (uint32_t)(n < (size_t)d->ncells ? n : (size_t)d->ncells);
}

acm_status cu_ensure_tau(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->tau != NULL)
        return ACM_OK;
    ACM_TRY(cu_dev_alloc(d, &m->tau, cu_plane_bytes(d), "ACM_LI2020 state"));
    CU_TRY(d, acm_launch_fill(m->tau, m->elem, (uint64_t)d->ncells, d->setup.coll.li2020_tau0, m->stream));
    return ACM_OK;
}

/* A physical state in physical_target() becomes the stored one: two arrays,
 * its inverse pull into f[cur]; in place it is the state (parity 0). */
static acm_status store_physical_state(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    acm_gpu_grid g = cu_grid_of(d);
    if (m->in_place)
        m->parity = 0;
    else
        CU_TRY(d, acm_launch_pull(g, m->f[1 - m->cur], m->f[m->cur], m->elem, -1, m->block,
                                  m->stream));
    return ACM_OK;
}

/* After a new state: reset the ACM state. */
static acm_status restart_state(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    if (m->tau != NULL)
        CU_TRY(d, acm_launch_fill(m->tau, m->elem, (uint64_t)d->ncells, d->setup.coll.li2020_tau0,
                                  m->stream));
    ACM_TRY(refresh_ring(d));
    ACM_TRY(cu_reset_counters(d));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* After a new physical state in physical_target(): store it and reset the
 * ACM state. */
static acm_status adopt_physical_state(acm_domain *d)
{
    ACM_TRY(store_physical_state(d));
    return restart_state(d);
}

/* Moment storage: a physical state that `fill` writes into a temporary
 * population array (the arithmetic type, grid cu_pop_grid) becomes the
 * current moments, its inverse pull encoded: the CPU's unstream and
 * projection (lib/cpu/lbm_tmpl.h adopt_physical, project_state). The
 * temporary array costs one population array's memory, during the call. */
template <typename F> static acm_status mom_from_physical(acm_domain *d, F &&fill)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid gp = cu_pop_grid(d);
    const acm_gpu_elem re = m->real == sizeof(double) ? ACM_ELEM_DOUBLE : ACM_ELEM_FLOAT;
    const size_t bytes = (size_t)acm_csoa_size(gp.l, (uint64_t)d->ncells) * m->real;
    void *phys = NULL;
    ACM_TRY(cu_dev_alloc(d, &phys, bytes, "a physical state to encode"));
    acm_status st = fill(gp, phys, re);
    if (st == ACM_OK) {
        cudaError_t e = acm_launch_mom_unstream(cu_grid_of(d), m->f[m->cur], gp, phys, m->elem,
                                                m->block, m->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(m->stream);
        if (e != cudaSuccess)
            st = cu_fail(d, e, "encoding a physical state");
    }
    cu_dev_free(d, &phys, bytes);
    return st;
}

/* Equilibria of the source into the physical state dst (grid g, storage elem). */
static acm_status equilibrium_into(acm_domain *d, const acm_gpu_grid &g, void *dst,
                                   acm_gpu_elem elem, const acm_init_source *src)
{
    cuda_impl *m = IMPL(d);
    const int de = (int)acm__dtype_size(src->dtype);
    const size_t per_cell = 4 * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        char *rho = NULL, *u = NULL;
        if (src->rho != NULL) {
            rho = (char *)m->staging;
            CU_TRY(d, cudaMemcpyAsync(rho, (const char *)src->rho + (size_t)k0 * de,
                                      (size_t)n * de, cudaMemcpyHostToDevice, m->stream));
        }
        if (src->u != NULL) {
            u = (char *)m->staging + (size_t)n * de;
            CU_TRY(d, cudaMemcpyAsync(u, (const char *)src->u + (size_t)k0 * 3 * de,
                                      (size_t)n * 3 * de, cudaMemcpyHostToDevice, m->stream));
        }
        CU_TRY(d, acm_launch_equilibrium(g, dst, elem, rho, u, de, src->rho0, src->u0, k0, n,
                                         m->stream));
    }
    return ACM_OK;
}

/* Whether moment storage can start from the equilibrium moments of a uniform
 * source in every cell: what the CPU's inverse pull and projection give when
 * no wall adds a term (no wall, or rest everywhere), without a temporary
 * population array (a 1000^3 domain has no room for one). */
static bool uniform_moments(const acm_domain *d, const acm_init_source *src)
{
    if (src->rho != NULL || src->u != NULL)
        return false;
    const bool rest = src->u0[0] == 0.0 && src->u0[1] == 0.0 && src->u0[2] == 0.0;
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        const acm_face_bc *bc = &d->setup.face[f];
        if (bc->type == ACM_BOUNDARY_WALL &&
            (!rest || bc->u[0] != 0.0 || bc->u[1] != 0.0 || bc->u[2] != 0.0))
            return false;
    }
    return true;
}

extern "C" acm_status acm_cuda_init_equilibrium(acm_domain *d, const acm_init_source *src)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (cu_moments(d) && uniform_moments(d, src)) {
        acm_mom_uniform u;
        memset(&u, 0, sizeof u);
        u.m[0] = src->rho0 - 1.0;
        u.m[1] = src->u0[0];
        u.m[2] = src->u0[1];
        u.m[3] = src->u0[2];
        CU_TRY(d, acm_launch_mom_fill(cu_grid_of(d), m->f[m->cur], m->elem, u, m->stream));
        return restart_state(d);
    }
    if (cu_moments(d)) {
        ACM_TRY(mom_from_physical(d, [&](const acm_gpu_grid &gp, void *phys, acm_gpu_elem re) {
            return equilibrium_into(d, gp, phys, re, src);
        }));
        return restart_state(d);
    }
    ACM_TRY(equilibrium_into(d, cu_grid_of(d), physical_target(m), m->elem, src));
    return adopt_physical_state(d);
}

/* Download interleaved per-cell values in chunks, each written into the
 * staging buffer by `fill` first. */
template <typename F>
static acm_status download_chunks(acm_domain *d, int comp, acm_dtype dtype, void *dst, F &&fill)
{
    cuda_impl *m = IMPL(d);
    const int de = (int)acm__dtype_size(dtype);
    const size_t per_cell = (size_t)comp * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        CU_TRY(d, fill(de, k0, n));
        CU_TRY(d, cudaMemcpyAsync((char *)dst + (size_t)k0 * per_cell, m->staging,
                                  (size_t)n * per_cell, cudaMemcpyDeviceToHost, m->stream));
        CU_TRY(d, cudaStreamSynchronize(m->stream)); /* staging is reused */
    }
    return ACM_OK;
}

/* Copy a per-cell field of `comp` values through the staging buffer. */
static acm_status download_field(acm_domain *d, acm_field field, int comp, acm_dtype dtype,
                                 void *dst)
{
    cuda_impl *m = IMPL(d);
    acm_step_args a = cu_step_args(d);
    return download_chunks(d, comp, dtype, dst, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_field(a, cu_state_array(m), m->elem, field, m->staging, de, k0, n,
                                m->stream);
    });
}

/* The per-cell force (uniform + field) as a host array. */
static acm_status download_force(acm_domain *d, acm_dtype dtype, void *dst)
{
    cuda_impl *m = IMPL(d);
    double *planes = NULL;
    if (m->force != NULL) {
        size_t bytes = 3 * cu_plane_bytes(d);
        void *host = acm__malloc(bytes);
        if (host == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate %zu bytes for the force", bytes);
        cudaError_t e = cudaMemcpyAsync(host, m->force, bytes, cudaMemcpyDeviceToHost, m->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(m->stream);
        if (e != cudaSuccess) {
            acm__free(host);
            return cu_fail(d, e, "copying the force field");
        }
        planes = (double *)host;
    }
    for (size_t k = 0; k < (size_t)d->ncells; ++k)
        for (int a = 0; a < 3; ++a) {
            size_t i = (size_t)a * (size_t)d->ncells + k;
            double v = planes == NULL ? 0.0
                       : m->real == sizeof(float) ? (double)((float *)planes)[i]
                                                  : planes[i];
            acm__store(dtype, dst, 3 * k + (size_t)a, d->setup.body_force[a] + v);
        }
    acm__free(planes);
    return ACM_OK;
}

extern "C" acm_status acm_cuda_get_field(acm_domain *d, acm_field field, acm_dtype dtype,
                                         void *dst)
{
    ACM_TRY(cu_enter(d));
    switch (field) {
    case ACM_FIELD_DENSITY: return download_field(d, field, 1, dtype, dst);
    case ACM_FIELD_VELOCITY: return download_field(d, field, 3, dtype, dst);
    case ACM_FIELD_POPULATIONS: return download_field(d, field, ACM_Q, dtype, dst);
    default: return download_force(d, dtype, dst);
    }
}

/* Upload interleaved per-cell values in chunks and run `apply` on each. */
template <typename F>
static acm_status upload_chunks(acm_domain *d, int comp, acm_dtype dtype, const void *src,
                                F &&apply)
{
    cuda_impl *m = IMPL(d);
    const int de = (int)acm__dtype_size(dtype);
    const size_t per_cell = (size_t)comp * (size_t)de;
    const uint32_t chunk = chunk_cells(d, per_cell);
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        CU_TRY(d, cudaMemcpyAsync(m->staging, (const char *)src + (size_t)k0 * per_cell,
                                  (size_t)n * per_cell, cudaMemcpyHostToDevice, m->stream));
        CU_TRY(d, apply(de, k0, n));
        CU_TRY(d, cudaStreamSynchronize(m->stream)); /* staging is reused */
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_set_field(acm_domain *d, acm_field field, acm_dtype dtype,
                                         const void *src)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    acm_gpu_grid g = cu_grid_of(d);
    if (field == ACM_FIELD_FORCE) {
        if (src == NULL) {
            CU_TRY(d, cudaStreamSynchronize(m->stream));
            cu_dev_free(d, &m->force, 3 * cu_plane_bytes(d));
            return ACM_OK;
        }
        if (m->force == NULL)
            ACM_TRY(cu_dev_alloc(d, &m->force, 3 * cu_plane_bytes(d), "the force field"));
        return upload_chunks(d, 3, dtype, src, [&](int de, uint32_t k0, uint32_t n) {
            return acm_launch_set_planes(g, m->force, m->elem, 3, m->staging, de, k0, n,
                                         m->stream);
        });
    }
    if (cu_moments(d)) {
        ACM_TRY(mom_from_physical(d, [&](const acm_gpu_grid &gp, void *phys, acm_gpu_elem re) {
            return upload_chunks(d, ACM_Q, dtype, src, [&](int de, uint32_t k0, uint32_t n) {
                return acm_launch_set_populations(gp, phys, re, m->staging, de, k0, n, m->stream);
            });
        }));
        return restart_state(d);
    }
    ACM_TRY(upload_chunks(d, ACM_Q, dtype, src, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_set_populations(g, physical_target(m), m->elem, m->staging, de, k0, n,
                                          m->stream);
    }));
    return adopt_physical_state(d);
}

extern "C" acm_status acm_cuda_probe_cell(acm_domain *d, int32_t x, int32_t y, int32_t z,
                                          double *rho, double u[3])
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    acm_step_args a = cu_step_args(d);
    uint32_t k = (uint32_t)x + (uint32_t)d->nx * ((uint32_t)y + (uint32_t)d->ny * (uint32_t)z);
    double host[4];
    double *dev = (double *)m->staging;
    CU_TRY(d, acm_launch_field(a, cu_state_array(m), m->elem, ACM_FIELD_DENSITY, dev, 8, k, 1,
                               m->stream));
    CU_TRY(d, acm_launch_field(a, cu_state_array(m), m->elem, ACM_FIELD_VELOCITY, dev + 1, 8, k, 1,
                               m->stream));
    CU_TRY(d, cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    *rho = host[0];
    memcpy(u, host + 1, 3 * sizeof(double));
    return ACM_OK;
}

/* ---- re-layout (lib/engine/state.h) ------------------------------------------------------------- */

static_assert(sizeof(acm_gpu_sums) == ACM_STATE_PREV_SIZE * sizeof(double),
              "acm_state.prev holds the ring's acm_gpu_sums as they are");

/* comp planes of the arithmetic type to and from interleaved host FP64. */
static acm_status save_planes(acm_domain *d, const void *planes, int comp, double *dst)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    return download_chunks(d, comp, ACM_DTYPE_FLOAT64, dst, [&](int, uint32_t k0, uint32_t n) {
        return acm_launch_get_planes(g, planes, m->elem, comp, (double *)m->staging, k0, n,
                                     m->stream);
    });
}

static acm_status load_planes(acm_domain *d, void *planes, int comp, const double *src)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    return upload_chunks(d, comp, ACM_DTYPE_FLOAT64, src, [&](int de, uint32_t k0, uint32_t n) {
        return acm_launch_set_planes(g, planes, m->elem, comp, m->staging, de, k0, n, m->stream);
    });
}

/* Bytes of the IB support mask in a state: a bit per cell, which the device
 * mask (acm_redo_words, 32-bit arithmetic) must hold. */
static acm_status ib_mask_bytes(acm_domain *d, size_t *bytes)
{
    const size_t words = acm_state_mask_words(d->ncells);
    if (words > acm_redo_words((uint32_t)d->ncells))
        return ACM_FAIL(d, ACM_ERR_OUT_OF_RANGE,
                        "the immersed-boundary mask cannot hold a bit for each of %lld cells",
                        (long long)d->ncells);
    *bytes = words * sizeof(uint32_t);
    return ACM_OK;
}

/* The stored populations in canonical order, unstreamed (nothing is
 * rounded): f*_i(x) at (x, i) from f[cur] (two arrays) or the opposite slots
 * (in place, parity 1); in place at parity 0 the physical state. */
static acm_status save_populations(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    if (cu_moments(d)) { /* the post-collision populations the moments stand for */
        st->form = ACM_FORM_POST_COLLISION;
        st->mom_bits = d->layout.precision == ACM_PRECISION_FP16 ? 16 : 8 * (int)m->real;
        return download_chunks(d, ACM_Q, ACM_DTYPE_FLOAT64, st->f,
                               [&](int, uint32_t k0, uint32_t n) {
                                   return acm_launch_mom_get(g, cu_state_array(m), m->elem,
                                                             (double *)m->staging, k0, n,
                                                             m->stream);
                               });
    }
    const bool swap = m->in_place && m->parity == 1;
    st->form = m->in_place && m->parity == 0 ? ACM_FORM_PHYSICAL : ACM_FORM_POST_COLLISION;
    return download_chunks(d, ACM_Q, ACM_DTYPE_FLOAT64, st->f, [&](int, uint32_t k0, uint32_t n) {
        return acm_launch_get_stored(g, cu_state_array(m), m->elem, swap, (double *)m->staging, k0,
                                     n, m->stream);
    });
}

/* A state parked in device memory (acm_state.parked): the populations in
 * canonical order as stored, or moment storage's moment array as it is (mom,
 * then f is NULL), the per-cell planes and the mask as they are. */
struct cuda_parked {
    int device;
    acm_gpu_elem elem;
    acm_state_form form;
    void *f, *mom, *force, *tau, *ib_force;
    uint32_t *ib_mask;
};

static void parked_free(void *p)
{
    cuda_parked *k = (cuda_parked *)p;
    cudaSetDevice(k->device);
    void *bufs[] = {k->f, k->mom, k->force, k->tau, k->ib_force, k->ib_mask};
    for (void *b : bufs)
        if (b != NULL)
            cudaFree(b);
    acm__free(k);
}

/* A device copy of `bytes` at src (NULL src: nothing, *dst stays NULL). */
static acm_status park_copy(acm_domain *d, const void *src, size_t bytes, void **dst)
{
    if (src == NULL)
        return ACM_OK;
    cudaError_t e = cudaMalloc(dst, bytes);
    if (e != cudaSuccess) {
        *dst = NULL;
        (void)cudaGetLastError();
        return ACM_FAIL(d, ACM_ERR_DEVICE_MEMORY, "no device memory to park the state");
    }
    CU_TRY(d, cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyDeviceToDevice, IMPL(d)->stream));
    return ACM_OK;
}

/* The state into device memory, as stored (moment storage: its moments,
 * which a re-layout to moment storage gets back bit for bit). */
static acm_status park(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    cuda_parked *k = (cuda_parked *)acm__calloc(1, sizeof *k);
    if (k == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a parked state");
    k->device = d->device;
    k->elem = m->elem;
    st->parked = k;
    st->parked_free = parked_free;
    if (cu_moments(d)) {
        k->form = ACM_FORM_POST_COLLISION;
        st->mom_bits = d->layout.precision == ACM_PRECISION_FP16 ? 16 : 8 * (int)m->real;
        ACM_TRY(park_copy(d, cu_state_array(m), cu_state_bytes(d), &k->mom));
    } else {
        const bool swap = m->in_place && m->parity == 1;
        k->form = m->in_place && m->parity == 0 ? ACM_FORM_PHYSICAL : ACM_FORM_POST_COLLISION;
        const size_t pops = (size_t)ACM_Q * (size_t)d->ncells * (size_t)m->elem;
        if (cudaMalloc(&k->f, pops) != cudaSuccess) {
            k->f = NULL;
            (void)cudaGetLastError();
            return ACM_FAIL(d, ACM_ERR_DEVICE_MEMORY, "no device memory to park the state");
        }
        CU_TRY(d, acm_launch_move_stored(cu_grid_of(d), cu_state_array(m), m->elem, swap, k->f,
                                         false, 0, 0, (uint32_t)d->ncells, m->stream));
    }
    ACM_TRY(park_copy(d, m->force, 3 * cu_plane_bytes(d), &k->force));
    ACM_TRY(park_copy(d, m->tau, cu_plane_bytes(d), &k->tau));
    if (m->ib.force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        ACM_TRY(park_copy(d, m->ib.force, 3 * cu_plane_bytes(d), &k->ib_force));
        ACM_TRY(park_copy(d, m->ib.mask, bytes, (void **)&k->ib_mask));
    }
    return ACM_OK;
}

/* The state into host memory as FP64. */
static acm_status save_to_host(acm_domain *d, acm_state *st)
{
    cuda_impl *m = IMPL(d);
    ACM_TRY(acm__state_alloc(d, st, m->force != NULL, m->tau != NULL, m->ib.force != NULL));
    ACM_TRY(save_populations(d, st));
    if (cu_moments(d)) { /* the moments as stored, which a load into this storage takes back */
        ACM_TRY(acm__state_alloc_moments(d, st));
        ACM_TRY(download_chunks(d, ACM_MOMENTS, ACM_DTYPE_FLOAT64, st->mom,
                                [&](int, uint32_t k0, uint32_t n) {
                                    return acm_launch_mom_values(cu_grid_of(d), cu_state_array(m),
                                                                 m->elem, (double *)m->staging,
                                                                 false, k0, n, m->stream);
                                }));
    }
    if (st->force != NULL) /* the field only: the uniform part is the handle's */
        ACM_TRY(save_planes(d, m->force, 3, st->force));
    if (st->tau != NULL)
        ACM_TRY(save_planes(d, m->tau, 1, st->tau));
    if (st->ib_force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        ACM_TRY(save_planes(d, m->ib.force, 3, st->ib_force));
        CU_TRY(d, cudaMemcpyAsync(st->ib_mask, m->ib.mask, bytes, cudaMemcpyDeviceToHost,
                                  m->stream));
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_state_save(acm_domain *d, acm_state *st, bool parked)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    memset(st, 0, sizeof *st);
    acm_status s = parked ? park(d, st) : ACM_ERR_UNSUPPORTED;
    if (s == ACM_ERR_DEVICE_MEMORY || s == ACM_ERR_UNSUPPORTED) { /* through the host, then */
        acm__state_free(st);
        s = save_to_host(d, st);
    }
    ACM_TRY(s);
    if (st->parked != NULL)
        st->form = ((cuda_parked *)st->parked)->form;
    st->stream = m->own_stream ? NULL : (void *)m->stream;
    st->prev_backend = ACM_BACKEND_CUDA;
    CU_TRY(d, cudaMemcpyAsync(st->prev, m->sums + m->ring, sizeof(acm_gpu_sums),
                              cudaMemcpyDeviceToHost, m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* Moment storage: a saved state's populations, FP64 in staging chunk by
 * chunk (from the host, or from a parked state: canonical order in the
 * storage type, read as a CSoA array of group 1), encoded: a post-collision
 * state cell by cell, a physical one through its inverse pull (the CPU
 * projects both, lib/cpu/lbm_tmpl.h state_load_populations). */
static acm_status mom_load_populations(acm_domain *d, const acm_state *st)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    const cuda_parked *k = (const cuda_parked *)st->parked;
    if (k != NULL && k->mom != NULL) { /* parked moments: back bit for bit */
        CU_TRY(d, cudaMemcpyAsync(cu_state_array(m), k->mom, cu_state_bytes(d),
                                  cudaMemcpyDeviceToDevice, m->stream));
        return ACM_OK;
    }
    if (k == NULL && st->mom != NULL) /* saved moments (a checkpoint's): as they were */
        return upload_chunks(d, ACM_MOMENTS, ACM_DTYPE_FLOAT64, st->mom,
                             [&](int, uint32_t k0, uint32_t n) {
                                 return acm_launch_mom_values(g, cu_state_array(m), m->elem,
                                                              (double *)m->staging, true, k0, n,
                                                              m->stream);
                             });
    acm_gpu_grid canon = cu_pop_grid(d);
    canon.l = acm_csoa_pow2(0, ACM_Q);
    double *stage = (double *)m->staging;
    auto fetch = [&](uint32_t k0, uint32_t n) {
        return k != NULL ? acm_launch_get_stored(canon, k->f, m->elem, false, stage, k0, n,
                                                 m->stream)
                         : cudaMemcpyAsync(stage, st->f + (size_t)k0 * ACM_Q,
                                           (size_t)n * ACM_Q * sizeof(double),
                                           cudaMemcpyHostToDevice, m->stream);
    };
    auto chunks = [&](auto &&apply) -> acm_status {
        const uint32_t chunk = chunk_cells(d, ACM_Q * sizeof(double));
        for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
            const uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
            CU_TRY(d, fetch(k0, n));
            CU_TRY(d, apply(k0, n));
            CU_TRY(d, cudaStreamSynchronize(m->stream)); /* staging is reused */
        }
        return ACM_OK;
    };
    if (st->form == ACM_FORM_PHYSICAL)
        return mom_from_physical(d, [&](const acm_gpu_grid &gp, void *phys, acm_gpu_elem re) {
            return chunks([&](uint32_t k0, uint32_t n) {
                return acm_launch_set_stored(gp, phys, re, false, stage, k0, n, m->stream);
            });
        });
    return chunks([&](uint32_t k0, uint32_t n) {
        return acm_launch_mom_set(g, cu_state_array(m), m->elem, stage, k0, n, m->stream);
    });
}

/* Parked moments (a re-layout from moment storage) into a population array:
 * the post-collision populations they stand for in the model's closure, FP64
 * in staging chunk by chunk, stored in this layout's type. */
static acm_status unpark_moments_as_populations(acm_domain *d, const cuda_parked *k, void *dst,
                                                bool swap)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    acm_gpu_grid gm = g; /* the parked array's: only its closure is read */
    gm.state = ACM_STATE_MOMENTS;
    gm.closure = acm_mom_closure(d->setup.coll.model);
    double *stage = (double *)m->staging;
    const uint32_t chunk = chunk_cells(d, ACM_Q * sizeof(double));
    for (uint32_t k0 = 0; k0 < (uint32_t)d->ncells; k0 += chunk) {
        const uint32_t n = (uint32_t)d->ncells - k0 < chunk ? (uint32_t)d->ncells - k0 : chunk;
        CU_TRY(d, acm_launch_mom_get(gm, k->mom, m->elem, stage, k0, n, m->stream));
        CU_TRY(d, acm_launch_set_stored(g, dst, m->elem, swap, stage, k0, n, m->stream));
    }
    return ACM_OK;
}

/* A saved state's populations into this layout: a post-collision state into
 * f[cur] (two arrays) or the opposite slots of f[0] (in place, parity 1); a
 * physical state into f[0] (in place, parity 0) or, with two arrays, through
 * the inverse pull (exact but for the moving-wall terms it subtracts). */
static acm_status load_populations(acm_domain *d, const acm_state *st)
{
    cuda_impl *m = IMPL(d);
    const acm_gpu_grid g = cu_grid_of(d);
    const bool physical = st->form == ACM_FORM_PHYSICAL;
    const bool swap = m->in_place && !physical;
    void *dst = physical ? physical_target(m) : cu_state_array(m);
    const cuda_parked *k = (const cuda_parked *)st->parked;
    if (k != NULL && k->mom != NULL)
        ACM_TRY(unpark_moments_as_populations(d, k, dst, swap));
    else if (k != NULL)
        CU_TRY(d, acm_launch_move_stored(g, dst, m->elem, swap, k->f, true, 0, 0,
                                         (uint32_t)d->ncells, m->stream));
    else
        ACM_TRY(upload_chunks(d, ACM_Q, ACM_DTYPE_FLOAT64, st->f,
                              [&](int, uint32_t k0, uint32_t n) {
                                  return acm_launch_set_stored(g, dst, m->elem, swap,
                                                               (const double *)m->staging, k0, n,
                                                               m->stream);
                              }));
    if (physical)
        return store_physical_state(d);
    if (m->in_place)
        m->parity = 1;
    return ACM_OK;
}

/* The last immersed-boundary force and its support, which the fluid kernels
 * and the field read-back add until the next step's IB phase. */
static acm_status load_ib(acm_domain *d, const acm_state *st)
{
    cuda_impl *m = IMPL(d);
    size_t bytes = 0;
    ACM_TRY(ib_mask_bytes(d, &bytes));
    ACM_TRY(load_planes(d, m->ib.force, 3, st->ib_force));
    CU_TRY(d, cudaMemcpyAsync(m->ib.mask, st->ib_mask, bytes, cudaMemcpyHostToDevice,
                              m->stream));
    m->ib.band_valid = false; /* the band list is not loaded: the next step marks anew */
    return ACM_OK;
}

/* The per-cell planes of a parked state back (the same storage type). */
static acm_status unpark_planes(acm_domain *d, const cuda_parked *k)
{
    cuda_impl *m = IMPL(d);
    const size_t plane = cu_plane_bytes(d);
    if (k->force != NULL) {
        if (m->force == NULL)
            ACM_TRY(cu_dev_alloc(d, &m->force, 3 * plane, "the force field"));
        CU_TRY(d, cudaMemcpyAsync(m->force, k->force, 3 * plane, cudaMemcpyDeviceToDevice,
                                  m->stream));
    }
    if (k->tau != NULL) {
        ACM_TRY(cu_ensure_tau(d));
        CU_TRY(d, cudaMemcpyAsync(m->tau, k->tau, plane, cudaMemcpyDeviceToDevice, m->stream));
    }
    if (k->ib_force != NULL && m->ib.force != NULL) {
        size_t bytes = 0;
        ACM_TRY(ib_mask_bytes(d, &bytes));
        CU_TRY(d, cudaMemcpyAsync(m->ib.force, k->ib_force, 3 * plane, cudaMemcpyDeviceToDevice,
                                  m->stream));
        CU_TRY(d, cudaMemcpyAsync(m->ib.mask, k->ib_mask, bytes, cudaMemcpyDeviceToDevice,
                                  m->stream));
        m->ib.band_valid = false; /* the next step marks the band anew */
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_state_load(acm_domain *d, const acm_state *st)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (st->stream != NULL) { /* the caller's stream, as before the re-layout */
        CU_TRY(d, cudaStreamDestroy(m->stream));
        m->stream = (cudaStream_t)st->stream;
        m->own_stream = false;
    }
    const cuda_parked *k = (const cuda_parked *)st->parked;
    if (k != NULL && k->elem != m->elem)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "a state parked with %d-byte populations loaded "
                        "into %d-byte storage", (int)k->elem, (int)m->elem);
    ACM_TRY(cu_moments(d) ? mom_load_populations(d, st) : load_populations(d, st));
    if (k != NULL) {
        ACM_TRY(unpark_planes(d, k));
    } else {
        if (st->force != NULL) {
            if (m->force == NULL)
                ACM_TRY(cu_dev_alloc(d, &m->force, 3 * cu_plane_bytes(d), "the force field"));
            ACM_TRY(load_planes(d, m->force, 3, st->force));
        }
        if (st->tau != NULL) {
            ACM_TRY(cu_ensure_tau(d));
            ACM_TRY(load_planes(d, m->tau, 1, st->tau));
        }
        if (st->ib_force != NULL && m->ib.force != NULL)
            ACM_TRY(load_ib(d, st));
    }
    if (st->prev_backend == ACM_BACKEND_CUDA)
        CU_TRY(d, cudaMemcpyAsync(m->sums + m->ring, st->prev, sizeof(acm_gpu_sums),
                                  cudaMemcpyHostToDevice, m->stream));
    else /* another backend's reductions: recompute ours, after the IB force is back */
        ACM_TRY(refresh_ring(d));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}
