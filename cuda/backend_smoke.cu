/*
 * libacmlbm -- the CUDA backend's smoke (lib/smoke/smoke.c, docs/smoke.md):
 * the particles on the device, their steps, transfers and density
 * projection, emitter and obstacle data, and the velocity at points.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "alloc.h"
#include "backend_impl.cuh"
#include "smoke.h"
#include "solid.h" /* acm__ib_grid */

/* ---- smoke (lib/smoke/smoke.c, docs/smoke.md) ----------------------------------------------------- */

/* A smoke's particles on the device (acm_smoke.dev): the slots, the list of
 * free slots a step emits into, the counters, and the step's plan. */
struct cuda_smoke {
    int device;
    double *x;
    int32_t *age, *life;
    uint32_t *free_list, *nfree;
    acm_smoke_counts *counts;
    void *select_temp;              /* the free-slot select's scratch */
    size_t select_bytes;
    acm_smoke_source *sources;      /* the step's plan, grown as needed */
    int32_t sources_cap;
    acm_smoke_obstacle *obstacles;
    int32_t obstacles_cap;
};

extern "C" void acm_cuda_smoke_detach(acm_smoke *s)
{
    cuda_smoke *c = (cuda_smoke *)s->dev;
    cudaSetDevice(c->device); /* cudaFree waits for the device */
    void *bufs[] = {c->x,      c->age,         c->life,    c->free_list, c->nfree,
                    c->counts, c->select_temp, c->sources, c->obstacles};
    for (void *b : bufs)
        if (b != NULL)
            cudaFree(b);
    acm__free(c);
    s->dev = NULL;
}

extern "C" acm_status acm_cuda_smoke_attach(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(cu_enter(d));
    cuda_smoke *c = (cuda_smoke *)acm__calloc(1, sizeof *c);
    if (c == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate a smoke's device record");
    s->dev = c;
    c->device = d->device;
    const size_t n = (size_t)s->capacity;
    cudaStream_t st = IMPL(d)->stream;
    cudaError_t e = acm_launch_smoke_free_slots(NULL, &c->select_bytes, c->age, c->free_list,
                                                c->nfree, n, st);
    struct {
        void **p;
        size_t bytes;
    } want[] = {{(void **)&c->x, 3 * n * sizeof(double)}, {(void **)&c->age, n * sizeof(int32_t)},
                {(void **)&c->life, n * sizeof(int32_t)},
                {(void **)&c->free_list, n * sizeof(uint32_t)},
                {(void **)&c->nfree, sizeof(uint32_t)},
                {(void **)&c->counts, sizeof(acm_smoke_counts)},
                {(void **)&c->select_temp, c->select_bytes}};
    for (size_t k = 0; k < sizeof want / sizeof want[0] && e == cudaSuccess; ++k)
        e = cudaMalloc(want[k].p, want[k].bytes ? want[k].bytes : 1);
    if (e == cudaSuccess) /* every slot free: age -1 */
        e = cudaMemsetAsync(c->age, 0xff, n * sizeof(int32_t), st);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(c->counts, 0, sizeof(acm_smoke_counts), st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        acm_cuda_smoke_detach(s);
        return cu_fail(d, e, "allocating a smoke's particles");
    }
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_velocity(acm_domain *d)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (m->smoke_u == NULL)
        ACM_TRY(cu_dev_alloc(d, (void **)&m->smoke_u, 3 * (size_t)d->ncells * sizeof(float),
                          "the smoke's velocity"));
    m->smoke_capture = true; /* enqueue_step writes it */
    return ACM_OK;
}

/* Room for n records of a plan in device memory (grown, never shrunk). */
template <typename T>
static cudaError_t plan_room(T **p, int32_t *cap, int32_t n)
{
    if (n <= *cap)
        return cudaSuccess;
    if (*p != NULL)
        cudaFree(*p); /* waits for the kernels that read it */
    *p = NULL;
    *cap = 0;
    const cudaError_t e = cudaMalloc((void **)p, (size_t)n * sizeof(T));
    if (e == cudaSuccess)
        *cap = n;
    return e;
}

/* Copy a plan's records (pageable: staged before the call returns, so the
 * host may reuse them at once). */
template <typename T>
static cudaError_t plan_upload(T **p, int32_t *cap, const T *src, int32_t n, cudaStream_t st)
{
    if (n == 0)
        return cudaSuccess;
    cudaError_t e = plan_room(p, cap, n);
    return e != cudaSuccess ? e
                            : cudaMemcpyAsync(*p, src, (size_t)n * sizeof(T), cudaMemcpyHostToDevice, st);
}

extern "C" acm_status acm_cuda_smoke_step(acm_domain *d, acm_smoke *s, const acm_smoke_plan *p)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, plan_upload(&c->obstacles, &c->obstacles_cap, p->obstacles, p->nobstacles, m->stream));
    CU_TRY(d, acm_launch_smoke_advect(acm__ib_grid(d), m->smoke_u, c->obstacles, p->nobstacles,
                                      c->x, c->age, c->life, c->counts, s->capacity, m->stream));
    if (p->emissions == 0)
        return ACM_OK;
    CU_TRY(d, plan_upload(&c->sources, &c->sources_cap, p->sources, p->nsources, m->stream));
    CU_TRY(d, acm_launch_smoke_free_slots(c->select_temp, &c->select_bytes, c->age, c->free_list,
                                          c->nfree, s->capacity, m->stream));
    CU_TRY(d, acm_launch_smoke_emit(c->sources, p->nsources, p->emissions, p->seed, c->free_list,
                                    c->nfree, c->x, c->age, c->life, c->counts, m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_counts(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, cudaMemcpyAsync(&s->counts, c->counts, sizeof s->counts, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

/* The particles (positions, ages, lifetimes) between the host's arrays and
 * the device's, either way, on the domain's stream. */
static acm_status smoke_copy(acm_domain *d, acm_smoke *s, cudaMemcpyKind kind)
{
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    const bool up = kind == cudaMemcpyHostToDevice;
    const size_t n = (size_t)s->capacity;
    const struct {
        void *host, *dev;
        size_t bytes;
    } part[3] = {{s->x, c->x, 3 * n * sizeof(double)},
                 {s->age, c->age, n * sizeof(int32_t)},
                 {s->life, c->life, n * sizeof(int32_t)}};
    for (int i = 0; i < 3; ++i)
        CU_TRY(d, cudaMemcpyAsync(up ? part[i].dev : part[i].host, up ? part[i].host : part[i].dev,
                                  part[i].bytes, kind, m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_fetch(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(cu_enter(d));
    ACM_TRY(smoke_copy(d, s, cudaMemcpyDeviceToHost));
    return acm_cuda_smoke_counts(d, s);
}

extern "C" acm_status acm_cuda_smoke_upload(acm_domain *d, acm_smoke *s)
{
    ACM_TRY(cu_enter(d));
    ACM_TRY(smoke_copy(d, s, cudaMemcpyHostToDevice));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, cudaMemcpyAsync(c->counts, &s->counts, sizeof s->counts, cudaMemcpyHostToDevice,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_project(acm_domain *d, acm_smoke *s, int32_t sub, float *dst,
                                             size_t count, bool on_device)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    int32_t g[3];
    ACM_TRY(acm__smoke_grid(s, sub, g));
    float *grid = dst;
    if (!on_device) {
        const cudaError_t e = cudaMalloc((void **)&grid, count * sizeof(float));
        if (e != cudaSuccess)
            return cu_fail(d, e, "allocating the density grid");
    }
    cudaError_t e = cudaMemsetAsync(grid, 0, count * sizeof(float), m->stream);
    if (e == cudaSuccess)
        e = acm_launch_smoke_density(acm__ib_grid(d), g, sub, c->x, c->age, s->capacity, grid,
                                     m->stream);
    if (e == cudaSuccess && !on_device)
        e = cudaMemcpyAsync(dst, grid, count * sizeof(float), cudaMemcpyDeviceToHost, m->stream);
    if (e == cudaSuccess && !on_device)
        e = cudaStreamSynchronize(m->stream);
    if (!on_device)
        cudaFree(grid);
    return e == cudaSuccess ? ACM_OK : cu_fail(d, e, "projecting the smoke's density");
}

extern "C" acm_status acm_cuda_upload(acm_domain *d, const void *src, size_t bytes, void **dev)
{
    ACM_TRY(cu_enter(d));
    cudaError_t e = cudaMalloc(dev, bytes ? bytes : 1);
    if (e == cudaSuccess)
        e = cudaMemcpy(*dev, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        if (*dev != NULL)
            cudaFree(*dev);
        *dev = NULL;
        return cu_fail(d, e, "copying emitter or obstacle data to the device");
    }
    return ACM_OK;
}

extern "C" void acm_cuda_release(acm_domain *d, void *dev)
{
    cudaSetDevice(d->device);
    cudaFree(dev);
}

/* Velocity at points (lib/core/smoke_math.h): the points up, one thread each, the values down. */
extern "C" acm_status acm_cuda_sample_velocity(acm_domain *d, const double *points, size_t count,
                                               double *velocity)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    const size_t bytes = 3 * count * sizeof(double);
    if (m->probe_bytes < 2 * bytes) {
        cu_dev_free(d, (void **)&m->probe, m->probe_bytes); /* and off memory_bytes */
        m->probe_bytes = 0;
        ACM_TRY(cu_dev_alloc(d, (void **)&m->probe, 2 * bytes, "velocity probes"));
        m->probe_bytes = 2 * bytes;
    }
    CU_TRY(d, cudaMemcpyAsync(m->probe, points, bytes, cudaMemcpyHostToDevice, m->stream));
    CU_TRY(d, acm_launch_sample_velocity(cu_step_args(d), acm__ib_grid(d), cu_state_array(m), m->elem,
                                         m->probe, m->probe + 3 * count, (uint32_t)count,
                                         m->stream));
    CU_TRY(d, cudaMemcpyAsync(velocity, m->probe + 3 * count, bytes, cudaMemcpyDeviceToHost,
                              m->stream));
    CU_TRY(d, cudaStreamSynchronize(m->stream));
    return ACM_OK;
}
