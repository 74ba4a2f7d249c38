/*
 * libacmlbm -- steps replayed from CUDA graphs (issue #31): a domain whose
 * steps hold only the fluid (backend.h advance_many) captures a run of two
 * steps (and of one, for an odd count) once and replays it, so that the host
 * enqueues a pair of steps with one launch instead of one launch per kernel.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A graph is replayed only when the steps would launch the same kernels with
 * the same arguments: its key is the first step's arguments (the arrays it
 * reads and writes, the sums' ring, the collision and face parameters) and
 * the layout. Two steps bring the arrays and the ring back where they were,
 * so a pair replays as long as nothing changes. The step's index in the batch
 * (the divergence key's, acm_check_divergence) comes from a device counter
 * that each captured step counts on (acm_launch_step_count), set from the
 * host's count before the replays: a divergence names the same step as when
 * the kernels were launched one by one, and the state after N steps is the
 * same (test-cuda, graph_steps_equal_launched_steps).
 */
#include <string.h> /* memcmp, memcpy, memset */

#include "backend_impl.cuh"

/* Steps of the domain's configuration that a graph can hold: the fluid of
 * one undivided domain, its smoke velocity not asked for, on a stream that
 * can be captured and is not being captured by the caller (whose graph then
 * takes the kernels one by one). */
static bool graphable(const acm_domain *d)
{
    const cuda_impl *m = IMPL(d);
    const bool free_stream =
        m->stream != NULL && m->stream != cudaStreamLegacy && !cu_stream_captured(m);
    return free_stream && d->slab_cells == 0.0 && m->npeers == 0 && !m->smoke_capture &&
           !m->split && !m->broken;
}

static void make_key(const acm_domain *d, int steps, cu_graph_key *k)
{
    cuda_impl *m = IMPL(d);
    memset(k, 0, sizeof *k);
    m->capturing = true; /* the arguments a captured step gets */
    k->args = cu_step_args(d);
    m->capturing = false;
    memcpy(&k->layout, &d->layout, sizeof k->layout);
    k->steps = steps;
}

static cu_graph *find(cuda_impl *m, const cu_graph_key &k)
{
    for (int g = 0; g < ACM_GRAPHS; ++g)
        if (m->graphs[g].exec != NULL && memcmp(&m->graphs[g].key, &k, sizeof k) == 0)
            return &m->graphs[g];
    return NULL;
}

/* Capture `steps` steps from the current state into a free (or the oldest)
 * slot. The host's state is put back as it was: the caller replays the
 * graph and counts the steps as every replay does. */
static acm_status capture(acm_domain *d, const cu_graph_key &k, cu_graph **out)
{
    cuda_impl *m = IMPL(d);
    const int cur = m->cur, parity = m->parity, ring = m->ring;
    const int64_t batch = m->batch_step, step = d->step;
    CU_TRY(d, cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal));
    m->capturing = true;
    acm_status st = ACM_OK;
    for (int s = 0; s < k.steps && st == ACM_OK; ++s) {
        st = cu_step(d);
        /* the last step of the run posts the key (acm_cuda_step_async, cu_take_seen) */
        unsigned long long *post = s + 1 == k.steps ? m->seen_dev : NULL;
        const cudaError_t ce = st == ACM_OK ? acm_launch_step_count(m->counters + 2, false, 0,
                                                                    m->counters, post, m->stream)
                                            : cudaSuccess;
        if (ce != cudaSuccess)
            st = cu_fail(d, ce, "counting a captured step");
    }
    m->capturing = false; /* the capture ends on every path */
    cudaGraph_t graph = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->stream, &graph);
    m->cur = cur;
    m->parity = parity;
    m->ring = ring;
    m->batch_step = batch;
    d->step = step;
    if (st == ACM_OK && e != cudaSuccess)
        st = cu_fail(d, e, "capturing a step into a CUDA graph");
    cudaGraphExec_t exec = NULL;
    if (st == ACM_OK) {
        const cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
        if (ie != cudaSuccess)
            st = cu_fail(d, ie, "instantiating the steps' CUDA graph");
    }
    if (graph != NULL)
        cudaGraphDestroy(graph);
    ACM_TRY(st);
    int slot = -1;
    for (int g = 0; g < ACM_GRAPHS && slot < 0; ++g)
        slot = m->graphs[g].exec == NULL ? g : -1;
    if (slot < 0) { /* an in-flight replay of the one it replaces still completes */
        slot = m->graph_next;
        m->graph_next = (m->graph_next + 1) % ACM_GRAPHS;
        cudaGraphExecDestroy(m->graphs[slot].exec);
    }
    m->graphs[slot].exec = exec;
    m->graphs[slot].key = k;
    *out = &m->graphs[slot];
    return ACM_OK;
}

/* Steps launched kernel by kernel, as advance launches them. */
static acm_status launch_steps(acm_domain *d, int64_t nsteps)
{
    for (int64_t s = 0; s < nsteps; ++s)
        ACM_TRY(acm_cuda_advance(d, ACM_CHECK_NONE));
    return ACM_OK;
}

extern "C" acm_status acm_cuda_advance_many(acm_domain *d, int64_t nsteps)
{
    if (!graphable(d))
        return launch_steps(d, nsteps);
    if (nsteps == 0)
        return ACM_OK;
    cuda_impl *m = IMPL(d);
    ACM_TRY(acm_cuda_prepare(d)); /* what a first step allocates, outside any capture */
    CU_TRY(d, acm_launch_step_count(m->counters + 2, true, (unsigned long long)m->batch_step,
                                    NULL, NULL, m->stream));
    for (int64_t left = nsteps; left > 0;) {
        ACM_TRY(cu_bound_batch(d, 2)); /* its check resets the device's count too */
        cu_graph_key k;
        make_key(d, left >= 2 ? 2 : 1, &k);
        cu_graph *g = find(m, k);
        const acm_status st = g == NULL ? capture(d, k, &g) : ACM_OK;
        if (st != ACM_OK) {
            if (m->broken) /* a device fault: it is the steps' error */
                return st;
            (void)cudaGetLastError(); /* a capture this stream or driver refuses: */
            return launch_steps(d, left); /* the kernels one by one, as before graphs */
        }
        CU_TRY(d, cudaGraphLaunch(g->exec, m->stream));
        for (int s = 0; s < k.steps; ++s)
            cu_replayed_step(d);
        left -= k.steps;
    }
    m->posted = true; /* by the last replay's step count */
    return ACM_OK;
}

void cu_graphs_release(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    for (int g = 0; g < ACM_GRAPHS; ++g) {
        if (m->graphs[g].exec != NULL)
            cudaGraphExecDestroy(m->graphs[g].exec);
        m->graphs[g].exec = NULL;
    }
}
