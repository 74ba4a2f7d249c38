/*
 * libacmlbm -- the CUDA backend's smoke (lib/smoke/smoke.c, docs/smoke.md):
 * the particles on the device, their steps, transfers and density
 * projection, emitter and obstacle data, and the velocity at points.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* ceil, fmin */
#include <string.h> /* memcpy */

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

/* ---- the smokes of runs of steps (backend_impl.cuh cu_run_smoke; backend_graph.cu) -------------
 * A recorded step's smoke kernels read the step's plan from the run's device
 * record: the solids' obstacles, each smoke's emissions, sources' count and
 * sources. A replayed step's host part (lib/smoke/smoke.c plans it as
 * always) writes its plan into the host's copy of that record, sent before
 * the run's graph. The free-slot select runs in every recorded step (a
 * launched step without emissions skips it: it changes nothing), and the
 * emission kernel is as large as the most a step can emit. */

static cuda_smoke *dev_of(const acm_smoke *s) { return (cuda_smoke *)s->dev; }

/* The most particles a step of the smoke emits: each emitter's rate rounded
 * up (lib/smoke/smoke.c plans floor(carry + rate), carry < 1), at most its
 * capacity. */
static uint32_t emission_bound(const acm_smoke *s)
{
    double n = 0.0;
    for (int32_t i = 0; i < s->nemitters; ++i)
        n += ceil(s->emitters[i].e.rate);
    return (uint32_t)fmin(n, fmin((double)s->capacity, (double)UINT32_MAX));
}

static int32_t smoke_index(const acm_domain *d, const acm_smoke *s)
{
    int32_t k = 0;
    while (k < d->nsmokes && d->smokes[k] != s)
        ++k;
    return k;
}

bool cu_smokes_runnable(const acm_domain *d)
{
    if (d->nsmokes > ACM_RUN_SMOKES)
        return false;
    for (int32_t k = 0; k < d->nsmokes; ++k)
        if (d->smokes[k]->dev == NULL)
            return false;
    return true;
}

acm_status cu_smokes_run_ready(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cu_run_smoke &r = m->run_smoke;
    if (m->smoke_u == NULL)
        ACM_TRY(cu_dev_alloc(d, (void **)&m->smoke_u, 3 * (size_t)d->ncells * sizeof(float),
                             "the smoke's velocity"));
    size_t stride = (size_t)d->nsolids * sizeof(acm_smoke_obstacle), kept = 0;
    for (int32_t k = 0; k < d->nsmokes; ++k) {
        const acm_smoke *s = d->smokes[k];
        r.off[k] = stride;
        r.nemitters[k] = s->nemitters;
        stride += 2 * sizeof(uint32_t) + (size_t)s->nemitters * sizeof(acm_smoke_source);
        kept += sizeof(acm_smoke) + (size_t)s->nemitters * sizeof(smoke_emitter);
    }
    r.stride = stride;
    r.nsolids = d->nsolids;
    r.nsmokes = d->nsmokes;
    const size_t bytes = ACM_RUN_STEPS * stride;
    if (bytes > r.bytes) {
        cu_smokes_run_release(d);
        r.host = (unsigned char *)acm__malloc(bytes);
        if (r.host == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the smoke's plans of a run");
        ACM_TRY(cu_dev_alloc(d, (void **)&r.dev, bytes, "the smoke's plans of a run"));
        ACM_TRY(cu_dev_alloc(d, (void **)&r.slots, ACM_LOOP_STEPS * stride,
                             "the smoke's plans of a loop"));
        r.bytes = bytes;
    }
    if (kept > r.kept_bytes) {
        void *p = acm__realloc(r.kept, kept);
        if (p == NULL)
            return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the smoke's state of a run");
        r.kept = p;
        r.kept_bytes = kept;
    }
    return ACM_OK;
}

void cu_smokes_run_release(acm_domain *d)
{
    cu_run_smoke &r = IMPL(d)->run_smoke;
    if (r.dev != NULL)
        cudaFree(r.dev); /* waits for the replays that read it */
    if (r.slots != NULL)
        cudaFree(r.slots);
    acm__free(r.host);
    r.dev = r.host = r.slots = NULL;
    r.bytes = 0;
}

void cu_smokes_run_key(const acm_domain *d, cu_graph_key *k)
{
    const cu_run_smoke &r = IMPL(d)->run_smoke;
    k->smoke_plans = r.dev;
    k->smoke_slots = r.slots;
    k->smoke_stride = r.stride;
    k->nsmokes = d->nsmokes;
    for (int32_t i = 0; i < d->nsmokes; ++i) {
        const acm_smoke *s = d->smokes[i];
        const cuda_smoke *c = dev_of(s);
        cu_smoke_key &sk = k->smoke[i];
        const void *arrays[7] = {c->x, c->age, c->life, c->free_list, c->nfree, c->counts,
                                 c->select_temp};
        memcpy(sk.arrays, arrays, sizeof arrays);
        sk.capacity = s->capacity;
        sk.seed = s->seed;
        sk.select_bytes = c->select_bytes;
        sk.bound = emission_bound(s);
        sk.nemitters = s->nemitters;
    }
    acm_smoke_obstacle o; /* the solids' obstacles: the same in every step */
    for (int32_t i = 0; i < d->nsolids; ++i)
        k->nobstacles += acm__solid_obstacle(d->solids[i], i, true, &o) ? 1 : 0;
}

static_assert(ACM_RUN_SMOKES <= ACM_SMOKE_FOLLOW, "a run's smokes follow its free bodies");
static_assert(sizeof(acm_smoke_obstacle) % 8 == 0 && sizeof(acm_smoke_source) % 8 == 0,
              "a step's plans in 8-byte words (the inbox, acm_run_loop)");

acm_status cu_smokes_follow(acm_domain *d, int j)
{
    cuda_impl *m = IMPL(d);
    const cu_run_smoke &r = m->run_smoke;
    const uint32_t free_bits = cu_ib_bits(d, cu_ib_free);
    int32_t nobs = 0;
    acm_smoke_obstacle o;
    for (int32_t i = 0; i < d->nsolids; ++i)
        nobs += acm__solid_obstacle(d->solids[i], i, true, &o) ? 1 : 0;
    if (free_bits == 0 || d->nsmokes == 0)
        return ACM_OK;
    acm_smoke_layout l;
    memset(&l, 0, sizeof l);
    l.n = d->nsmokes;
    for (int32_t k = 0; k < d->nsmokes; ++k)
        l.off[k] = r.off[k];
    CU_TRY(d, acm_launch_smoke_follow(m->ib.bodies, free_bits, r.dev + (size_t)j * r.stride,
                                      nobs, l, m->stream));
    return ACM_OK;
}

acm_status cu_smokes_send(acm_domain *d, int steps, cu_inbox_fill *f)
{
    const cu_run_smoke &r = IMPL(d)->run_smoke;
    return cu_inbox_add(d, f, r.dev, r.host, (size_t)steps * r.stride);
}

void cu_smokes_keep(acm_domain *d, bool save)
{
    unsigned char *at = (unsigned char *)IMPL(d)->run_smoke.kept;
    for (int32_t k = 0; k < d->nsmokes; ++k) {
        acm_smoke *s = d->smokes[k];
        const size_t ne = (size_t)s->nemitters * sizeof(smoke_emitter);
        if (save) {
            memcpy(at, s, sizeof *s);
            memcpy(at + sizeof *s, s->emitters, ne);
        } else {
            memcpy(s, at, sizeof *s);
            memcpy(s->emitters, at + sizeof *s, ne);
        }
        at += sizeof *s + ne;
    }
}

/* A step of a run: its plan into the host's record (REPLAY), or its kernels
 * reading the device's (RECORD). */
static acm_status run_smoke_step(acm_domain *d, acm_smoke *s, const acm_smoke_plan *p)
{
    cuda_impl *m = IMPL(d);
    const cu_run_smoke &r = m->run_smoke;
    const int32_t k = smoke_index(d, s);
    const size_t base = (size_t)(m->run.step - 1) * r.stride;
    if (m->run.mode == CU_RUN_REPLAY) {
        unsigned char *at = r.host + base;
        if (p->nobstacles > 0)
            memcpy(at, p->obstacles, (size_t)p->nobstacles * sizeof *p->obstacles);
        const uint32_t plan[2] = {p->emissions, (uint32_t)p->nsources};
        memcpy(at + r.off[k], plan, sizeof plan);
        if (p->nsources > 0)
            memcpy(at + r.off[k] + sizeof plan, p->sources,
                   (size_t)p->nsources * sizeof *p->sources);
        return ACM_OK;
    }
    cuda_smoke *c = dev_of(s);
    unsigned char *at = r.dev + base;
    CU_TRY(d, acm_launch_smoke_advect(acm__ib_grid(d), m->smoke_u, (const acm_smoke_obstacle *)at,
                                      p->nobstacles, c->x, c->age, c->life, c->counts,
                                      s->capacity, m->stream));
    CU_TRY(d, acm_launch_smoke_free_slots(c->select_temp, &c->select_bytes, c->age, c->free_list,
                                          c->nfree, s->capacity, m->stream));
    const uint32_t *plan = (const uint32_t *)(at + r.off[k]);
    CU_TRY(d, acm_launch_smoke_emit((const acm_smoke_source *)(plan + 2), 0, emission_bound(s),
                                    plan, p->seed, c->free_list, c->nfree, c->x, c->age, c->life,
                                    c->counts, m->stream));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_smoke_step(acm_domain *d, acm_smoke *s, const acm_smoke_plan *p)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (m->run.mode != CU_RUN_NONE)
        return run_smoke_step(d, s, p);
    cuda_smoke *c = (cuda_smoke *)s->dev;
    CU_TRY(d, plan_upload(&c->obstacles, &c->obstacles_cap, p->obstacles, p->nobstacles, m->stream));
    CU_TRY(d, acm_launch_smoke_advect(acm__ib_grid(d), m->smoke_u, c->obstacles, p->nobstacles,
                                      c->x, c->age, c->life, c->counts, s->capacity, m->stream));
    if (p->emissions == 0)
        return ACM_OK;
    CU_TRY(d, plan_upload(&c->sources, &c->sources_cap, p->sources, p->nsources, m->stream));
    CU_TRY(d, acm_launch_smoke_free_slots(c->select_temp, &c->select_bytes, c->age, c->free_list,
                                          c->nfree, s->capacity, m->stream));
    CU_TRY(d, acm_launch_smoke_emit(c->sources, p->nsources, p->emissions, NULL, p->seed,
                                    c->free_list, c->nfree, c->x, c->age, c->life, c->counts,
                                    m->stream));
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

/* ---- the velocity at points (lib/core/smoke_math.h; acm_domain_sample_velocity,
 * its _begin and _end): a kernel behind the stream's steps reads the points from
 * mapped host memory and writes the velocities there, an event after it ---- */

/* Room for a read of count points in mapped host memory (the last read is
 * done: the API collects a pending one before it begins another). */
static acm_status read_room(acm_domain *d, size_t count)
{
    cuda_impl *m = IMPL(d);
    if (m->read_done == NULL)
        CU_TRY(d, cudaEventCreateWithFlags(&m->read_done, cudaEventDisableTiming));
    if (m->read_cap >= count)
        return ACM_OK;
    if (m->read_host != NULL)
        cudaFreeHost(m->read_host);
    m->read_host = NULL;
    m->read_dev = NULL;
    m->read_cap = 0;
    void *host = NULL, *dev = NULL;
    cudaError_t e = cudaHostAlloc(&host, 6 * count * sizeof(double), cudaHostAllocMapped);
    if (e == cudaSuccess && (e = cudaHostGetDevicePointer(&dev, host, 0)) != cudaSuccess)
        cudaFreeHost(host);
    if (e != cudaSuccess)
        return cu_fail(d, e, "allocating the points of a velocity read (mapped host memory)");
    m->read_host = (double *)host;
    m->read_dev = (const double *)dev;
    m->read_cap = count;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_sample_velocity_begin(acm_domain *d, const double *points,
                                                     size_t count)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (cu_stream_captured(m))
        return ACM_FAIL(d, ACM_ERR_BAD_STATE, "the domain's stream is being captured into a "
                        "graph: a read of the velocity would be captured with it (read after "
                        "the capture)");
    ACM_TRY(read_room(d, count));
    memcpy(m->read_host, points, 3 * count * sizeof(double));
    CU_TRY(d, acm_launch_sample_velocity(cu_step_args(d), acm__ib_grid(d), cu_state_array(m),
                                         m->elem, m->read_dev,
                                         (double *)m->read_dev + 3 * m->read_cap,
                                         (uint32_t)count, m->stream));
    CU_TRY(d, cudaEventRecord(m->read_done, m->stream));
    m->read_queued = true;
    return ACM_OK;
}

extern "C" acm_status acm_cuda_sample_velocity_end(acm_domain *d, double *velocity, size_t count)
{
    ACM_TRY(cu_enter(d));
    cuda_impl *m = IMPL(d);
    if (!m->read_queued || count > m->read_cap)
        return ACM_FAIL(d, ACM_ERR_INTERNAL, "no velocity read of %zu points is queued", count);
    m->read_queued = false;
    CU_TRY(d, cudaEventSynchronize(m->read_done));
    memcpy(velocity, m->read_host + 3 * m->read_cap, 3 * count * sizeof(double));
    return ACM_OK;
}
