/*
 * libacmlbm -- steps replayed from CUDA graphs (issue #31): a domain whose
 * steps hold only the fluid (backend.h advance_many) captures a run of up to
 * ACM_RUN_STEPS steps once and replays it, so that the host enqueues a
 * frame's steps with one launch instead of one launch per kernel.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A graph is replayed only when the steps would launch the same kernels with
 * the same arguments: its key is the first step's arguments (the arrays it
 * reads and writes, the sums' ring, the collision and face parameters), the
 * layout and the run's length. An even run brings the arrays and the ring
 * back where they were, so it replays as long as nothing changes (an odd one
 * alternates between two graphs). The step's index in the batch
 * (the divergence key's, acm_check_divergence) comes from a device counter
 * that each captured step counts on (acm_launch_step_count, or the last
 * block of its fused launch: acm_fold_last), set from the
 * host's count before the replays: a divergence names the same step as when
 * the kernels were launched one by one, and the state after N steps is the
 * same (test-cuda, graph_steps_equal_launched_steps).
 */
#include <string.h> /* memcmp, memcpy, memset */
#include <utility>  /* std::swap */

#include "backend_impl.cuh"
#include "solid.h" /* acm__solids_plan, struct acm_solid */

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
    k->redo_apart = m->redo_apart;
}

static cu_graph *find(cuda_impl *m, const cu_graph_key &k)
{
    for (int g = 0; g < ACM_GRAPHS; ++g)
        if (m->graphs[g].exec != NULL && memcmp(&m->graphs[g].key, &k, sizeof k) == 0)
            return &m->graphs[g];
    return NULL;
}

/* A graph kept under its key in a free (or the oldest) slot. */
static cu_graph *keep(cuda_impl *m, cudaGraphExec_t exec, const cu_graph_key &k)
{
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
    m->graphs_recorded += 1;
    return &m->graphs[slot];
}

/* The host's state that recording steps changes, kept (save) or put back:
 * the counts, the arrays and the sums' ring, the solids' (their records,
 * the band's state, the torque centres) and the smokes' plans. */
static void keep_state(acm_domain *d, bool save)
{
    cuda_impl *m = IMPL(d);
    cu_kept &k = m->kept;
    auto keep = [save](auto &kept, auto &live) {
        if (save)
            kept = live;
        else
            live = kept;
    };
    keep(k.cur, m->cur);
    keep(k.parity, m->parity);
    keep(k.ring, m->ring);
    keep(k.batch_step, m->batch_step);
    keep(k.domain_step, d->step);
    keep(k.batch_mixed, m->batch_mixed);
    keep(k.posted, m->posted);
    keep(k.forces_stale, d->forces_stale);
    keep(k.band_valid, m->ib.band_valid);
    for (int32_t i = 0; i < d->nsolids; ++i) {
        for (int a = 0; a < 3; ++a)
            keep(k.centre[3 * i + a], m->ib.centre[3 * i + a]);
        keep(m->ib.saved[i], *d->solids[i]);
    }
    keep(k.smoke_capture, m->smoke_capture);
    if (d->nsmokes > 0) /* a run's (cu_smokes_run_ready made room) */
        cu_smokes_keep(d, save);
}

/* One step enqueued into a capture; it counts on the device, and the last
 * step of a recording posts the key (acm_cuda_step_async, cu_take_seen): in
 * the step's last kernel where it can (enqueue_fused), else a kernel of
 * its own. */
static acm_status record_step(acm_domain *d, bool last)
{
    cuda_impl *m = IMPL(d);
    m->recording_step = true;
    m->step_counted = false;
    m->count_post = last ? m->seen_dev : NULL;
    const acm_status st = cu_step(d);
    m->recording_step = false;
    ACM_TRY(st);
    if (!m->step_counted)
        CU_TRY(d, acm_launch_step_count(m->counters + 2, false, 0, m->counters, m->count_post,
                                        m->stream));
    return ACM_OK;
}

/* A captured graph instantiated and uploaded to the device (the first
 * launch then pays no upload: a frame after a recording is as fast as the next). */
static cudaError_t instantiate(cuda_impl *m, cudaGraph_t graph, cudaGraphExec_t *exec)
{
    cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
    if (e == cudaSuccess)
        e = cudaGraphUpload(*exec, m->stream);
    if (e != cudaSuccess && *exec != NULL) {
        cudaGraphExecDestroy(*exec);
        *exec = NULL;
    }
    return e;
}

/* Capture `steps` steps from the current state into a free (or the oldest)
 * slot. The host's state is put back as it was: the caller replays the
 * graph and counts the steps as every replay does. */
static acm_status capture(acm_domain *d, const cu_graph_key &k, cu_graph **out)
{
    cuda_impl *m = IMPL(d);
    keep_state(d, true);
    CU_TRY(d, cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal));
    m->capturing = true;
    acm_status st = ACM_OK;
    for (int s = 0; s < k.steps && st == ACM_OK; ++s)
        st = record_step(d, s + 1 == k.steps);
    m->capturing = false; /* the capture ends on every path */
    cudaGraph_t graph = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->stream, &graph);
    keep_state(d, false);
    if (st == ACM_OK && e != cudaSuccess)
        st = cu_fail(d, e, "capturing a step into a CUDA graph");
    cudaGraphExec_t exec = NULL;
    if (st == ACM_OK) {
        const cudaError_t ie = instantiate(m, graph, &exec);
        if (ie != cudaSuccess)
            st = cu_fail(d, ie, "instantiating the steps' CUDA graph");
    }
    if (graph != NULL)
        cudaGraphDestroy(graph);
    ACM_TRY(st);
    *out = keep(m, exec, k);
    return ACM_OK;
}

/* Steps launched kernel by kernel, as advance launches them. */
static acm_status launch_steps(acm_domain *d, int64_t nsteps)
{
    for (int64_t s = 0; s < nsteps; ++s)
        ACM_TRY(acm_cuda_advance(d, ACM_CHECK_NONE));
    return ACM_OK;
}

/* The host's state turned as a step turns it: the other array (or parity)
 * and the other slot of the sums' ring (undone by turning it again). The
 * graphs of a run of odd length alternate between the two. */
static void turn_parity(cuda_impl *m)
{
    if (m->in_place)
        m->parity = 1 - m->parity;
    else
        m->cur = 1 - m->cur;
    m->ring = 1 - m->ring;
}

/* The graph of the next run of at most `left` steps: found, or captured. */
static acm_status next_graph(acm_domain *d, int64_t left, cu_graph **g)
{
    const int steps = left >= ACM_RUN_STEPS ? ACM_RUN_STEPS : (int)left;
    ACM_TRY(cu_bound_batch(d, steps)); /* its check resets the device's count too */
    cu_graph_key k;
    make_key(d, steps, &k);
    *g = find(IMPL(d), k);
    return *g == NULL ? capture(d, k, g) : ACM_OK;
}

/* The graphs of a call of `nsteps` steps of the fluid alone, recorded
 * without a step (acm_cuda_step_prepare): each of its runs and, when the
 * call turns the parity (odd nsteps), each of the next call's too. */
static acm_status record_calls(acm_domain *d, int64_t nsteps)
{
    cuda_impl *m = IMPL(d);
    acm_status st = ACM_OK;
    for (int turn = 0; turn < 1 + (int)(nsteps & 1) && st == ACM_OK; ++turn) {
        if (turn == 1)
            turn_parity(m);
        int64_t left = nsteps; /* runs of ACM_RUN_STEPS (even) and the rest */
        while (left > 0 && st == ACM_OK) {
            cu_graph *g = NULL;
            st = next_graph(d, left, &g);
            left -= left >= ACM_RUN_STEPS ? ACM_RUN_STEPS : left;
        }
        if (turn == 1)
            turn_parity(m);
    }
    return st;
}

extern "C" acm_status acm_cuda_advance_many(acm_domain *d, int64_t nsteps, bool record)
{
    if (!graphable(d))
        return record ? ACM_OK : launch_steps(d, nsteps);
    if (nsteps == 0)
        return ACM_OK;
    cuda_impl *m = IMPL(d);
    ACM_TRY(acm_cuda_prepare(d)); /* what a first step allocates, outside any capture */
    if (record) { /* the call's graphs, nothing launched */
        const acm_status st = record_calls(d, nsteps);
        if (st != ACM_OK && !m->broken)
            (void)cudaGetLastError(); /* refused: the steps will go kernel by kernel */
        return m->broken ? st : ACM_OK;
    }
    CU_TRY(d, acm_launch_step_count(m->counters + 2, true, (unsigned long long)m->batch_step,
                                    NULL, NULL, m->stream));
    for (int64_t left = nsteps; left > 0;) {
        cu_graph *g = NULL;
        const acm_status st = next_graph(d, left, &g);
        if (st != ACM_OK) {
            if (m->broken) /* a device fault: it is the steps' error */
                return st;
            (void)cudaGetLastError(); /* a capture this stream or driver refuses: */
            return launch_steps(d, left); /* the kernels one by one, as before graphs */
        }
        CU_TRY(d, cudaGraphLaunch(g->exec, m->stream));
        for (int s = 0; s < g->key.steps; ++s)
            cu_replayed_step(d);
        left -= g->key.steps;
    }
    m->posted = true; /* by the last replay's step count */
    return ACM_OK;
}

/* ---- runs of steps with solids (backend.h run_begin) -------------------------------------
 * The pipeline makes a run's steps as always; the IB and fluid kernels they
 * launch go into a capture (RECORD), which is instantiated into a graph,
 * the host's state put back, and the pipeline makes the steps again: now a
 * replay (REPLAY), in which the steps do their host part only (the bodies'
 * moves, the counts) and run_end launches the graph. A graph is replayed only
 * when its key matches: the fluid's as for advance_many, the IB's arrays,
 * each solid's samples, motion and whether it is placed (with the forces
 * gathered, the pose its region is cut around), and whether the band
 * holds the samples' support (moot when a solid is placed in the run's first
 * step: that marks it anew). What changes from run to run comes from device
 * memory, written by the graph's first kernel from the slot of the inbox the
 * host filled before the launch (backend_device.cu; the host makes no call
 * for it): solid i's pose of
 * step j at slot j * nsolids + i (slot steps * nsolids + i: after the run),
 * the re-sorts the host's plan makes after each step (acm__solids_plan), the
 * device's step count and the smokes' plans (backend_smoke.cu). A run in
 * which the plan re-sorts a solid replays a graph whose steps each hold a
 * conditional node whose body re-sorts, in one sort, the solids whose flags
 * of the step are set (a kernel a step opens it when any is); a run without
 * re-sorts replays one without those nodes (a conditional node costs the
 * host about 1.1-1.8 us at every launch, a kernel node far less: one a
 * solid made the enqueue grow with the solids). So a moving solid changes
 * no graph: a configuration records at most two per run length. Every step
 * of a run with a solid that may be re-sorted places every solid, as the
 * step after a re-sort does. Free bodies move on the device
 * (backend_ib.cu, "free bodies in runs"), all of a step's in one launch of
 * each of their kernels; the smokes' plans follow them (cu_smokes_follow).
 * Moving solids that gather their forces (regions on the host) and more
 * than ACM_RUN_SOLIDS solids are stepped kernel by kernel.
 *
 * Runs as loops: a run whose steps all make the host's choices of its first
 * (uniform_steps) is recorded as a device loop over its multiple of
 * ACM_LOOP_STEPS steps, a WHILE node whose body is ACM_LOOP_STEPS steps
 * reading their inputs from fixed slots (trade_slots: poses, re-sort words,
 * smoke plans); a kernel before the loop and the body's last fill them from
 * the run's inputs of each iteration (acm_launch_run_shift, _next: the
 * iterations come with the inputs). One graph then serves a run of any
 * multiple of ACM_LOOP_STEPS steps, and its launch costs the host the same
 * for 4 or 16 of them (about 4 us, H100), where each of the unrolled steps'
 * conditional re-sort nodes cost it about 1.5 us; the steps left over make
 * a run of their own, unrolled. */

static_assert(ACM_RUN_SOLIDS <= 32, "a solid a bit of a re-sort flag");
static_assert(ACM_RUN_SOLIDS <= ACM_IB_BATCH, "a step's free bodies, and its re-sorts, in one batch");
static_assert(sizeof(acm_ib_pose) % 8 == 0 && ACM_RUN_STEPS * sizeof(uint32_t) % 8 == 0,
              "the run's inputs in 8-byte words");

static bool runnable(const acm_domain *d)
{
    const cuda_impl *m = IMPL(d);
    if (!graphable(d) || m->graphs_refused || d->nsolids > ACM_RUN_SOLIDS ||
        !cu_smokes_runnable(d))
        return false;
    if (d->nsolids == 0 ? d->nsmokes == 0 : m->ib.poses == NULL || d->nsolids != m->ib.nsolids)
        return false;
    for (int32_t i = 0; i < d->nsolids; ++i) /* a gathering solid's region is an argument */
        if (d->solids[i]->body.motion != ACM_MOTION_STATIC &&
            d->layout.ib.spread == ACM_IB_SPREAD_GATHER)
            return false;
    return true;
}

/* Whether the domain has a free body (integrated on the device in runs);
 * `sortable`: one that the device may re-sort at any step of a run. */
static bool any_free(const acm_domain *d, bool sortable)
{
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (cu_ib_free(d, i) && (!sortable || cu_ib_sortable(d, i)))
            return true;
    return false;
}

/* Whether every step of a run makes the host's choices of its first: the
 * same solids placed (a static solid moved by the caller is placed in the
 * first step only, unless every step places every solid) and the band of
 * their support marked alike (in every step when a solid is placed in
 * each, else in none: the first marks it when it is not valid). */
static bool uniform_steps(const acm_domain *d)
{
    const cuda_impl *m = IMPL(d);
    bool placed = m->run.place_all;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        if (s->body.motion != ACM_MOTION_STATIC)
            placed = true;
        else if (s->moved && !m->run.place_all)
            return false;
    }
    return placed || d->nsolids == 0 || m->ib.band_valid;
}

/* The steps of the next run of at most `left` (and ACM_RUN_STEPS): with
 * uniform steps its multiple of ACM_LOOP_STEPS, as a device loop (*loop:
 * "runs as loops" below), else all of them unrolled. */
static int run_steps(const acm_domain *d, int64_t left, bool *loop)
{
    static_assert(ACM_RUN_STEPS % ACM_LOOP_STEPS == 0 && ACM_LOOP_STEPS % 2 == 0,
                  "a loop's body leaves the parity as it was");
    const int most = left >= ACM_RUN_STEPS ? ACM_RUN_STEPS : (int)left;
    *loop = most >= ACM_LOOP_STEPS && uniform_steps(d);
    return *loop ? most - most % ACM_LOOP_STEPS : most;
}

static void run_key(const acm_domain *d, int steps, bool loop, bool resorts, cu_graph_key *k)
{
    const cuda_impl *m = IMPL(d);
    make_key(d, loop ? ACM_LOOP_STEPS : steps, k);
    k->loop = loop;
    k->resorts = resorts;
    const acm_ib_args a = cu_ib_args(d);
    memcpy(&k->ib, &a, sizeof a);
    const cuda_ib &ib = m->ib;
    const void *more[11] = {ib.poses,  ib.resort_flags, ib.slots, ib.slot_flags, ib.sort_scratch,
                            ib.origin, ib.scratch,      ib.bodies, ib.partials,  ib.ft, ib.fold};
    memcpy(k->ib_more, more, sizeof more);
    k->sort_bytes = ib.sort_bytes;
    k->scratch_bytes = ib.scratch_bytes;
    k->nsolids = d->nsolids;
    bool placed = false; /* a solid placed in the first step marks the band anew */
    for (int32_t i = 0; i < d->nsolids; ++i) {
        const acm_solid *s = d->solids[i];
        k->solid[i].offset = s->offset;
        k->solid[i].count = s->count;
        k->solid[i].motion = (int32_t)s->body.motion;
        k->solid[i].placed = s->moved || s->body.motion != ACM_MOTION_STATIC || m->run.place_all;
        placed |= k->solid[i].placed != 0;
        if (d->layout.ib.spread == ACM_IB_SPREAD_GATHER) { /* the region is an argument */
            memcpy(k->solid[i].x, s->body.x, sizeof k->solid[i].x);
            k->solid[i].r_max = s->body.r_max;
        }
    }
    k->band_valid = placed || m->ib.band_valid;
    if (d->nsmokes > 0)
        cu_smokes_run_key(d, k);
    k->inbox = m->inbox.dev;
    k->inbox_words = m->inbox.slot_words;
}

/* What a replay takes from the host, written into the next slot of the inbox
 * before its graph is launched: the device's step count as the host's was
 * before the run (the replayed steps count on from it), the re-sort flags (of
 * the solids the device may re-sort), the poses into their slots, the smokes'
 * plans of the steps just made, a loop's iterations. */
static acm_status send_inputs(acm_domain *d)
{
    const cu_range range("acm: inputs");
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    cu_inbox_fill f;
    ACM_TRY(cu_inbox_open(d, &f));
    ACM_TRY(cu_inbox_add(d, &f, m->counters + 2, &r.count0, sizeof r.count0));
    if (d->nsolids > 0) {
        uint32_t flags[ACM_RUN_STEPS] = {0}; /* a free body's come from the device */
        const uint32_t sortable = cu_ib_bits(d, cu_ib_sortable) & ~cu_ib_bits(d, cu_ib_free);
        for (int j = 0; j < r.steps; ++j)
            flags[j] = r.resort[j] & sortable;
        ACM_TRY(cu_inbox_add(d, &f, m->ib.resort_flags, flags, sizeof flags));
        const size_t n = (size_t)d->nsolids;
        for (size_t k = 0; k < (size_t)(r.steps + 1) * n; ++k) {
            if (cu_ib_free(d, (int32_t)(k % n))) /* its poses are the device's */
                continue;
            const acm_ib_pose pose = acm_ib_pose_of(r.poses[k]);
            ACM_TRY(cu_inbox_add(d, &f, m->ib.poses + k, &pose, sizeof pose));
        }
    }
    if (d->nsmokes > 0)
        ACM_TRY(cu_smokes_send(d, r.steps, &f));
    if (r.loop) { /* the first iteration and the count (acm_run_loop.iter) */
        const uint32_t iter[2] = {0u, (uint32_t)(r.steps / ACM_LOOP_STEPS)};
        ACM_TRY(cu_inbox_add(d, &f, m->loop_iter, iter, sizeof iter));
    }
    cu_inbox_close(d, &f);
    return ACM_OK;
}

/* The most words send_inputs writes for a run of the domain (of any length:
 * one ring for every run of its configuration). */
static size_t inputs_words(const acm_domain *d)
{
    size_t bytes = sizeof(unsigned long long) + ACM_RUN_STEPS * sizeof(uint32_t) +
                   (ACM_RUN_STEPS + 1) * (size_t)d->nsolids * sizeof(acm_ib_pose) +
                   2 * sizeof(uint32_t);
    if (d->nsmokes > 0)
        bytes += ACM_RUN_STEPS * IMPL(d)->run_smoke.stride;
    return bytes / 8;
}

/* The forms of a run beside the one the host's state gives now
 * (cu_run::variant; acm_cuda_step_prepare records each): TURNED, the parity a
 * call of odd length leaves to the next call (turn_parity); STEADY, the
 * solids as after their first step (placed, the band of their support
 * marked), as every later call finds them. */
enum { CU_FORM_TURNED = 1, CU_FORM_STEADY = 2 };

/* The host's state turned to form v, or (undo) back from it. */
static void turn_form(acm_domain *d, int v, bool undo)
{
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    if (v & CU_FORM_TURNED)
        turn_parity(m);
    if ((v & CU_FORM_STEADY) == 0)
        return;
    if (!undo)
        r.band_valid = m->ib.band_valid;
    m->ib.band_valid = undo ? r.band_valid : true;
    for (int32_t i = 0; i < d->nsolids; ++i) {
        if (!undo)
            r.moved[i] = d->solids[i]->moved;
        d->solids[i]->moved = undo ? r.moved[i] : false;
    }
}

/* Whether a form of the run of r.steps steps has no graph yet (with and
 * without re-sorts where the run may re-sort; the parity of the next call
 * when this one is of odd length, `turns`): then the host's state is left
 * turned to it (r.variant) and r.key is its key. */
static bool missing_form(acm_domain *d, int64_t left, bool resorts)
{
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    const bool turns = (left & 1) != 0;
    bool steady = true;
    for (int32_t i = 0; i < d->nsolids; ++i)
        steady = steady && !d->solids[i]->moved;
    steady = steady && (d->nsolids == 0 || m->ib.band_valid);
    for (int v = 0; v < 4; ++v) {
        if (((v & CU_FORM_TURNED) && !turns) || ((v & CU_FORM_STEADY) && steady) ||
            (v == CU_FORM_TURNED && !steady)) /* a later call finds the solids steady */
            continue;
        /* the call's first run; the steps after its loops, which find the
           solids steady and the parity of the call's start */
        const int rest = (int)(left % ACM_LOOP_STEPS);
        for (int part = 0; part < 1 + (int)(rest > 0 && left > ACM_LOOP_STEPS); ++part) {
            if (part == 1 && !steady && (v & CU_FORM_STEADY) == 0)
                continue;
            /* with and without re-sorts (a free body's run always has them) */
            const bool both = r.place_all && !any_free(d, true);
            for (int other = 0; other < 1 + (int)both; ++other) {
                turn_form(d, v, false);
                r.steps = part == 1 ? rest : run_steps(d, left, &r.loop);
                r.loop = part == 0 && r.loop;
                run_key(d, r.steps, r.loop, resorts != (other != 0), &r.key);
                r.graph = find(m, r.key);
                if (r.graph == NULL) {
                    r.variant = v;
                    return true;
                }
                turn_form(d, v, true);
            }
        }
    }
    return false;
}

/* Into the capture of the domain's stream: a conditional node of `type` on
 * handle h after what it captured so far, whose body is then captured on
 * stream `body` (until that capture ends). */
static acm_status open_conditional(acm_domain *d, cudaGraphConditionalHandle h,
                                   cudaGraphConditionalNodeType type, cudaStream_t body)
{
    cuda_impl *m = IMPL(d);
    cudaGraph_t graph = NULL;
    const cudaGraphNode_t *deps = NULL;
    const cudaGraphEdgeData *edges = NULL;
    size_t ndeps = 0;
    cudaStreamCaptureStatus status;
    CU_TRY(d, cudaStreamGetCaptureInfo(m->stream, &status, NULL, &graph, &deps, &edges, &ndeps));
    cudaGraphNodeParams p{}; /* zero */
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = 1;
    cudaGraphNode_t node;
    CU_TRY(d, cudaGraphAddNode(&node, graph, deps, edges, ndeps, &p));
    CU_TRY(d, cudaStreamUpdateCaptureDependencies(m->stream, &node, NULL, 1,
                                                  cudaStreamSetCaptureDependencies));
    CU_TRY(d, cudaStreamBeginCaptureToGraph(body, p.conditional.phGraph_out[0], NULL, NULL, 0,
                                            cudaStreamCaptureModeThreadLocal));
    return ACM_OK;
}

/* The run's arrays of poses, re-sort flags and smoke plans and a loop's
 * slots, traded (twice: as they were). While a loop is recorded its steps
 * read and write the slots, as the steps of a run of ACM_LOOP_STEPS do its
 * arrays. */
static void trade_slots(cuda_impl *m)
{
    std::swap(m->ib.poses, m->ib.slots);
    std::swap(m->ib.resort_flags, m->ib.slot_flags);
    std::swap(m->run_smoke.dev, m->run_smoke.slots);
}

/* What a loop's kernels move (before trade_slots). */
static acm_run_loop loop_of(const acm_domain *d)
{
    const cuda_impl *m = IMPL(d);
    acm_run_loop l;
    memset(&l, 0, sizeof l);
    l.iter = m->loop_iter;
    l.steps = ACM_LOOP_STEPS;
    l.batch = m->counters + 2;
    l.key = m->counters;
    l.post = m->seen_dev;
    if (d->nsolids > 0) {
        l.poses = m->ib.poses;
        l.slots = m->ib.slots;
        l.flags = m->ib.resort_flags;
        l.slot_flags = m->ib.slot_flags;
        l.n = d->nsolids;
        l.free_bits = cu_ib_bits(d, cu_ib_free);
    }
    if (d->nsmokes > 0) {
        l.plans = (const uint64_t *)m->run_smoke.dev;
        l.slot_plans = (uint64_t *)m->run_smoke.slots;
        l.stride = m->run_smoke.stride / 8;
    }
    return l;
}

/* The start of a recording, its capture begun: the free bodies' poses into
 * slot 0 and, for a loop, the first iteration's inputs into the slots and
 * its WHILE node, opened at every launch (the condition's default), whose
 * body the steps are then captured into on loop_stream (the domain's stream
 * until end_record). */
static acm_status begin_record(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    const cu_inbox &b = m->inbox;
    CU_TRY(d, acm_launch_inbox(b.dev, b.slot_words, m->counters + 5, m->seen_dev + 2, m->stream));
    if (r.loop) {
        r.inputs = loop_of(d);
        trade_slots(m);
    }
    ACM_TRY(cu_ib_bodies_pose(d));
    if (!r.loop)
        return ACM_OK;
    CU_TRY(d, acm_launch_run_shift(r.inputs, m->stream));
    cudaStreamCaptureStatus status;
    cudaGraph_t graph = NULL;
    CU_TRY(d, cudaStreamGetCaptureInfo(m->stream, &status, NULL, &graph, NULL, NULL, NULL));
    CU_TRY(d, cudaGraphConditionalHandleCreate(&r.handle, graph, 1, cudaGraphCondAssignDefault));
    ACM_TRY(open_conditional(d, r.handle, cudaGraphCondTypeWhile, m->loop_stream));
    r.main = m->stream;
    m->stream = m->loop_stream;
    r.looping = true;
    return ACM_OK;
}

/* The end of a loop's body: the kernel that counts its iteration and moves
 * the next one's inputs (or posts the divergence key after the last), the
 * body's capture ended, the domain's stream back. */
static acm_status end_loop(acm_domain *d, acm_status st)
{
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    if (st == ACM_OK) {
        const cudaError_t e = acm_launch_run_next(r.inputs, r.handle, m->stream);
        st = e == cudaSuccess ? ACM_OK : cu_fail(d, e, "recording a loop of steps");
    }
    cudaGraph_t body = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->stream, &body); /* ends on every path */
    m->stream = r.main;
    r.looping = false;
    return st == ACM_OK && e != cudaSuccess ? cu_fail(d, e, "recording a loop of steps") : st;
}

static acm_status end_record(acm_domain *d, acm_status st);

extern "C" acm_status acm_cuda_run_begin(acm_domain *d, int64_t left, bool record, int64_t *run)
{
    const cu_range range("acm: run begin");
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    *run = record ? 0 : 1;
    r.mode = CU_RUN_NONE;
    if (!runnable(d)) /* steps launched one by one, on the host's bodies */
        return record ? ACM_OK : acm_cuda_ib_home(d);
    ACM_TRY(acm_cuda_prepare(d)); /* what a step allocates, outside any capture */
    ACM_TRY(cu_ib_ready(d));
    if (d->nsmokes > 0)
        ACM_TRY(cu_smokes_run_ready(d));
    ACM_TRY(cu_inbox_ready(d, inputs_words(d)));
    r.place_all = false;
    for (int32_t i = 0; i < d->nsolids; ++i)
        r.place_all |= cu_ib_sortable(d, i);
    const int steps = run_steps(d, left, &r.loop);
    ACM_TRY(cu_bound_batch(d, steps));
    r.count0 = (unsigned long long)m->batch_step;
    acm__solids_plan(d, steps, r.poses, r.resort);
    bool resorts = false;
    for (int j = 0; j < steps; ++j)
        resorts |= r.resort[j] != 0;
    resorts = (resorts || any_free(d, true)) && r.place_all; /* a free body may re-sort
                                                                 at any step */
    if (any_free(d, false))
        ACM_TRY(cu_ib_bodies_send(d)); /* before any capture */
    r.steps = steps;
    r.step = 0;
    r.variant = 0;
    if (record) { /* each form the call's first run and the next call's may take */
        if (!missing_form(d, left, resorts))
            return ACM_OK; /* all recorded before: nothing to make */
    } else {
        run_key(d, steps, r.loop, resorts, &r.key);
        r.graph = find(m, r.key);
    }
    if (r.graph != NULL) {
        r.mode = CU_RUN_REPLAY;
        *run = steps;
        return ACM_OK;
    }
    if (r.loop)
        r.steps = ACM_LOOP_STEPS; /* the body's */
    keep_state(d, true);
    const cudaError_t e = cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        turn_form(d, r.variant, true);
        return cu_fail(d, e, "beginning the capture of a run of steps");
    }
    m->capturing = true;
    r.mode = CU_RUN_RECORD;
    const acm_status st = begin_record(d);
    if (st != ACM_OK) { /* refused (or a device fault): steps launched one by one */
        r.mode = CU_RUN_NONE;
        ACM_TRY(end_record(d, st));
        return record ? ACM_OK : acm_cuda_ib_home(d);
    }
    *run = r.steps;
    return ACM_OK;
}

/* Into the run being recorded, after its step j: the re-sort of the solids
 * that may be re-sorted, as the body of a conditional node opened when any
 * of their flags of step j is set, each solid at its pose after the step
 * (slot j + 1) when its flag is set (one sort: acm_launch_ib_resort). The
 * body is captured on the side stream. */
static acm_status record_resorts(acm_domain *d, int j)
{
    cuda_impl *m = IMPL(d);
    const uint32_t mask = cu_ib_bits(d, cu_ib_sortable);
    if (mask == 0)
        return ACM_OK;
    cudaStreamCaptureStatus status;
    cudaGraph_t graph = NULL;
    CU_TRY(d, cudaStreamGetCaptureInfo(m->stream, &status, NULL, &graph, NULL, NULL, NULL));
    cudaGraphConditionalHandle h; /* no default value: the flag kernel sets it at every launch */
    CU_TRY(d, cudaGraphConditionalHandleCreate(&h, graph, 0, 0));
    const uint32_t *flags = m->ib.resort_flags + j;
    CU_TRY(d, acm_launch_ib_resort_flag(h, mask, flags, m->stream));
    ACM_TRY(open_conditional(d, h, cudaGraphCondTypeIf, m->side));
    const acm_status st = cu_ib_resort(d, cu_ib_sortable, flags, j + 1, m->side);
    cudaGraph_t body = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->side, &body); /* ends on every path */
    ACM_TRY(st);
    CU_TRY(d, e);
    return ACM_OK;
}

/* The fluid part of a step of a run: enqueued into its capture, or the
 * host's part of a replayed one; never checked. */
static acm_status run_step(acm_domain *d)
{
    cuda_impl *m = IMPL(d);
    cu_run &r = m->run;
    const int j = r.step++;
    if (r.mode == CU_RUN_REPLAY) {
        cu_replayed_step(d);
        m->smoke_capture = false; /* the graph's step writes the smokes' velocity */
        return ACM_OK;
    }
    ACM_TRY(record_step(d, !r.loop && r.step == r.steps)); /* a loop posts after its last */
    if (any_free(d, false)) {
        ACM_TRY(cu_ib_bodies_step(d, j));
        if (d->nsmokes > 0)
            ACM_TRY(cu_smokes_follow(d, j));
    }
    return r.key.resorts ? record_resorts(d, j) : ACM_OK;
}

/* A recorded run: its capture ended, the host's state put back, the graph kept. */
static acm_status end_record(acm_domain *d, acm_status st)
{
    const cu_range range("acm: graph made");
    cuda_impl *m = IMPL(d);
    if (m->run.looping)
        st = end_loop(d, st);
    if (m->run.loop)
        trade_slots(m);
    m->capturing = false; /* the capture ends on every path */
    cudaGraph_t graph = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->stream, &graph);
    keep_state(d, false);
    turn_form(d, m->run.variant, true);
    m->run.variant = 0;
    cudaGraphExec_t exec = NULL;
    cudaError_t ie = cudaSuccess;
    if (st == ACM_OK && e == cudaSuccess)
        ie = instantiate(m, graph, &exec);
    if (graph != NULL)
        cudaGraphDestroy(graph);
    if (m->broken) /* a device fault: it is the steps' error */
        return st != ACM_OK ? st : cu_fail(d, e != cudaSuccess ? e : ie, "recording a run of steps");
    if (st != ACM_OK || e != cudaSuccess || ie != cudaSuccess || exec == NULL) {
        (void)cudaGetLastError(); /* a capture the stream or driver refused: */
        m->graphs_refused = true; /* the steps go kernel by kernel, now and later */
        return ACM_OK;
    }
    (void)keep(m, exec, m->run.key);
    return ACM_OK;
}

extern "C" acm_status acm_cuda_advance_step(acm_domain *d, acm_check when)
{
    return IMPL(d)->run.mode != CU_RUN_NONE ? run_step(d) : acm_cuda_advance(d, when);
}

extern "C" acm_status acm_cuda_run_end(acm_domain *d, acm_status st, bool *again)
{
    const cu_range range("acm: run end");
    cuda_impl *m = IMPL(d);
    const cu_run_mode mode = m->run.mode;
    m->run.mode = CU_RUN_NONE;
    *again = false;
    if (mode == CU_RUN_RECORD) {
        ACM_TRY(end_record(d, st));
        *again = true; /* the same steps, replayed or (refused) kernel by kernel */
        return ACM_OK;
    }
    if (mode == CU_RUN_NONE || st != ACM_OK)
        return st;
    ACM_TRY(send_inputs(d));
    const cudaError_t e = cudaGraphLaunch(m->run.graph->exec, m->stream);
    if (e != cudaSuccess) {
        --m->inbox.sent; /* its slot unread: the next replay fills it */
        return cu_fail(d, e, "launching a run of steps");
    }
    m->posted = true; /* by the run's last step */
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
