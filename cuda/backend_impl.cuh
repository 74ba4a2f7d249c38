/*
 * libacmlbm -- what the CUDA backend's host units share (backend.cu,
 * backend_device.cu, backend_state.cu, backend_step.cu, backend_slab.cu, backend_ib.cu,
 * backend_smoke.cu, interop.cu): a domain's device state, the constants, the
 * error mapping and the helpers that more than one unit calls, each defined
 * in the unit named above its declaration. All of it is hidden
 * (-fvisibility=hidden); lib/ sees only the extern "C" functions of
 * cuda/backend_cuda.h. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CUDA_BACKEND_IMPL_CUH
#define ACMLBM_CUDA_BACKEND_IMPL_CUH

#include <nvtx3/nvToolsExt.h> /* nvtxRangePushA, nvtxRangePop (header only) */

#include "backend_cuda.h"
#include "kernels.cuh"
#include "rigid.h" /* acm_body */

/* A named range of the host's work, from here to the end of the scope, for
 * a timeline (NVTX: bench/trace/acm-trace.sh, Nsight Systems); without a
 * tool attached a call costs a few nanoseconds. */
struct cu_range {
    explicit cu_range(const char *name) { nvtxRangePushA(name); }
    ~cu_range() { nvtxRangePop(); }
    cu_range(const cu_range &) = delete;
    cu_range &operator=(const cu_range &) = delete;
};

/* Field transfers go in chunks of this: 64 MiB moves at full PCIe speed and
 * costs 4 B/cell at 256^3 (256 MiB cost 16, docs/performance.md). */
#define ACM_STAGING_BYTES ((size_t)64 << 20)

/* Immersed-boundary storage (see acm_ib_args); host_ft is pinned. */
struct cuda_ib {
    uint64_t n;
    double *X, *r;
    void *ub, *dv, *alpha, *G, *Gsum, *rho;
    void *macro, *force;
    uint32_t *mask;
    uint32_t *band;       /* the marked cells, then their count (band[band_cap]) */
    uint64_t band_cap;
    bool band_valid;      /* mask and band hold the support of the samples' positions */
    acm_gpu_sums *partials, *ft, *host_ft; /* ft: 2 per solid, 4 of coupling, 1 velocity change */
    void *fold;           /* the sums' stage (acm_launch_fold_sets) */
    size_t partial_bytes, ft_bytes;
    double *centre;       /* host, 3 per solid: the torque centres of the last step */
    void *scratch;        /* gather cell lists */
    size_t scratch_bytes;
    uint64_t *origin;     /* n: each sample's index in its solid's sampling order */
    void *sort_scratch;   /* re-sorts (acm_launch_ib_resort), made at the first one */
    size_t sort_bytes;
    uint64_t sort_samples; /* the samples it sorts at once: the solids the device may re-sort */
    int32_t nsolids, spread;  /* what the storage was sized for, with n ... */
    uint64_t region, most;    /* ... and ib_extents */
    acm_ib_pose *poses;   /* a recorded run's poses (ACM_RUN_STEPS + 1 per solid), or NULL */
    uint32_t *resort_flags; /* a run's re-sorts: after step j, solid i (bit i of word j) */
    acm_ib_pose *slots;   /* with `poses`: ACM_LOOP_STEPS + 1 per solid, a loop's
                             (acm_run_loop) */
    uint32_t *slot_flags; /* ... and ACM_LOOP_STEPS re-sort words */
    acm_free_body *bodies;  /* with `poses`, one per solid: the free bodies of runs (on the
                               device while d->bodies_on_backend) */
    acm_free_body *host_bodies; /* pinned, one per solid: their way to and from the host */
    struct acm_solid *saved; /* the solids as before a run being recorded (host, nsolids) */
};

/* Runs of steps recorded into a graph (backend_graph.cu; backend.h
 * advance_many, run_begin): at most this many steps a run (the fluid's and,
 * with at most ACM_RUN_SOLIDS solids, the solids'), so that a frame of up to
 * 16 steps enqueues one graph. */
#define ACM_RUN_STEPS 16
#define ACM_RUN_SOLIDS 16
/* The steps of a loop's body (backend_graph.cu, "runs as loops"): a loop
 * serves runs of any multiple of them; each iteration costs the device a
 * kernel and the WHILE node's turn (about 4 us, H100). */
#define ACM_LOOP_STEPS 4
#define ACM_RUN_SMOKES 4

/* A captured run of 1 to ACM_RUN_STEPS steps (backend_graph.cu) and what it was captured
 * from: replayed only when the steps would launch the same kernels with the
 * same arguments. */
#define ACM_GRAPHS 24
struct cu_solid_key {          /* what a solid's kernels in a run depend on */
    uint64_t offset, count;
    int32_t motion, placed;
    double x[3], r_max;        /* gathered forces: the centre and reach of its region */
};
struct cu_smoke_key {          /* what a smoke's kernels in a run depend on */
    const void *arrays[7];     /* its particles, free list, counters, select scratch */
    uint64_t capacity, seed, select_bytes;
    uint32_t bound;            /* the most particles a step emits (the launch's size) */
    int32_t nemitters;
};
struct cu_graph_key {
    acm_step_args args;         /* of the first step (step_key 0: the device counts) */
    acm_resolved_layout layout; /* the kernel structure, block size, precision, storage */
    int steps;                  /* a loop's: the steps of its body (ACM_LOOP_STEPS) */
    int32_t loop;               /* a run of any multiple of ACM_LOOP_STEPS as a device loop */
    /* a run with solids (zero without): their arrays, whether the band holds
     * their support, each solid's samples, motion and placement */
    acm_ib_args ib;
    const void *ib_more[11]; /* the other arrays its kernels read: poses and re-sort flags
                                (a loop's slots of them too), re-sort scratch, sampling
                                indices, gather lists, free bodies, the sums' partials,
                                results and stage */
    size_t sort_bytes, scratch_bytes;
    int32_t nsolids, band_valid;
    int32_t resorts; /* the run's steps hold their re-sorts (conditional nodes) */
    int32_t redo_apart; /* the safety net's redo pass is a kernel of its own */
    cu_solid_key solid[ACM_RUN_SOLIDS];
    /* a run with smoke (zero without): the plans' device record, each smoke's */
    const void *smoke_plans, *smoke_slots; /* a run's plans and a loop's slots of them */
    size_t smoke_stride;
    int32_t nsmokes, nobstacles;
    cu_smoke_key smoke[ACM_RUN_SMOKES];
    const void *inbox; /* the ring its first kernel reads the inputs from, its slots' words */
    size_t inbox_words;
};
struct cu_graph {
    cudaGraphExec_t exec; /* NULL: a free slot */
    cu_graph_key key;
};

/* The run between run_begin and run_end: its steps launched one by one
 * (NONE), enqueued into a capture (RECORD: the host's state is put back at its
 * end) or made by a graph's replay (REPLAY: the host's part only, then the graph). */
enum cu_run_mode { CU_RUN_NONE, CU_RUN_RECORD, CU_RUN_REPLAY };
struct cu_run {
    cu_run_mode mode;
    int steps, step;   /* the run's steps; the one being made (its pose slot) */
    bool loop;         /* the run is a device loop (a recording's steps: its body's) */
    bool looping;      /* RECORD: the loop's body is being captured on loop_stream */
    cudaStream_t main; /* ... and the domain's stream while it is */
    cudaGraphConditionalHandle handle; /* ... the loop's condition */
    acm_run_loop inputs;               /* ... and what its kernels move */
    bool place_all;    /* a solid of the run may be re-sorted: every step places every
                          solid (as after a re-sort; the same positions for a static one) */
    cu_graph_key key;
    cu_graph *graph;   /* REPLAY */
    /* the host's plan of the run: the solids' poses (solid i of step j at
     * j * nsolids + i; after the run at steps * nsolids + i), their re-sorts
     * (bit i of word j: after step j), the device's step count before it */
    acm_body poses[(ACM_RUN_STEPS + 1) * ACM_RUN_SOLIDS];
    uint32_t resort[ACM_RUN_STEPS];
    unsigned long long count0;
    /* a recording for a later state (acm_cuda_step_prepare): the host's state
     * turned to it for the recording (cu_variant), put back at its end */
    int variant;
    bool moved[ACM_RUN_SOLIDS], band_valid;
};

/* The inbox (backend_device.cu; kernels.cuh acm_launch_inbox): the ring of
 * slots in mapped host memory that a replayed run's inputs are written into,
 * and the slots the host has filled (the device's turn in counters[5], the
 * slots it has read in seen[2]). */
struct cu_inbox {
    uint64_t *host;       /* ACM_INBOX_SLOTS slots of slot_words; NULL before the first run */
    const uint64_t *dev;  /* the same, for the device */
    size_t slot_words;
    unsigned long long sent;
};

/* A slot being filled: its words, its segments, kept on the host until closed. */
struct cu_inbox_fill {
    uint64_t *slot;
    size_t room;          /* words for the inputs */
    uint32_t nseg, words;
    acm_inbox_segment seg[ACM_INBOX_SEGMENTS];
};

/* The smokes of runs (backend_smoke.cu): what each step of a replay takes
 * from the host, laid out as on the device, a step after the other (`stride`
 * bytes each: the solids' obstacles, then each smoke's plan words and
 * sources at off[k]); and the smokes' planning state kept around a recording. */
struct cu_run_smoke {
    unsigned char *host, *dev; /* ACM_RUN_STEPS steps of `stride` bytes */
    unsigned char *slots;      /* with dev: a loop's ACM_LOOP_STEPS (acm_run_loop) */
    size_t stride, bytes;
    int32_t nsolids, nsmokes;  /* what they were laid out for */
    size_t off[ACM_RUN_SMOKES];
    int32_t nemitters[ACM_RUN_SMOKES];
    void *kept;                /* the smokes' records and emitters (cu_smokes_keep) */
    size_t kept_bytes;
};

/* The host's state before steps are recorded, put back after (backend_graph.cu,
 * keep_state; the solids' records in cuda_ib.saved). */
struct cu_kept {
    int cur, parity, ring;
    int64_t batch_step, domain_step;
    bool batch_mixed, posted, forces_stale, band_valid, smoke_capture;
    double centre[3 * ACM_RUN_SOLIDS];
};

struct cuda_impl {
    double *face_dev[ACM_FACE_COUNT]; /* the faces' values (acm_cuda_face_values), or NULL */
    size_t face_dev_n[ACM_FACE_COUNT];
    acm_gpu_elem elem;
    size_t real;          /* bytes of the arithmetic type: 4 or 8 */
    unsigned block;       /* threads per block of the per-cell kernels */
    void *f[2];           /* stored populations (CSoA), or with moment storage the cells'
                             moments (cu_state_layout); f[1] NULL in place */
    int cur;              /* two arrays: f[cur] holds the current post-collision state */
    bool in_place;        /* ACM_STREAMING_IN_PLACE: f[0] only, the AA pattern */
    size_t read_once;     /* bytes of the source a fused two-array step reads evict-first
                             (acm_read_once: the whole array where it fits in L2), or 0 */
    int parity;           /* in place: 0 = physical state (ACM_STATE_AA_OWN), 1 = swapped */
    void *tmp, *mom;      /* split/baseline: streamed populations, relaxed moments */
    void *macro;          /* split/baseline: rho - 1, ux, uy, uz planes */
    uint32_t *redo;       /* cells the safety net must redo, a bit each (acm_redo_words) */
    void *force;          /* per-cell force planes (arithmetic type) or NULL */
    void *tau;            /* ACM_LI2020 per-cell tau* or NULL */
    acm_gpu_sums *sums;   /* [0..1]: ring of step sums; [2..3]: diagnostics */
    int ring;             /* sums[ring] holds the previous step's sums */
    acm_gpu_sums *partials;
    acm_plane_fixed *planes; /* nz: the ACM rules' sums of each plane (acm_plane_add) */
    acm_plane_fixed *host_planes; /* pinned copy (acm_cuda_plane_sums) */
    acm_plane_fixed *fold_planes; /* nz, then the count of acm_fold_last: an undivided
                                     domain's fused steps add their plane sums here, and
                                     their launch's last block folds and zeroes them;
                                     then the list of cells it redoes (fold_redo) */
    bool redo_apart;      /* the last check found many fallbacks a step: the redo pass
                             takes them rather than the fused launch's last block */
    bool recording_step;  /* record_step's step: its last kernel may count it (fold_count) */
    bool step_counted;    /* ... and did */
    unsigned long long *count_post; /* record_step's step: where the count posts the key */
    bool planes_sent;     /* the last step enqueued that copy */
    /* GPU slabs of one process (acm_cuda_sums_share): the first slab's, every
     * slab's plane sums of a step, by its parity; the events after which this
     * slab's are there; the slabs (this one among them), 0 when not shared */
    acm_plane_fixed *whole[2];
    cudaEvent_t pushed[2];
    acm_domain **peers;
    int32_t npeers;
    void *sum_scratch;    /* acm_launch_sum_partials' stage and counter */
    unsigned long long *counters;      /* [0] divergence key, [1] fallbacks, [2] the
                                          steps of a batch replayed from graphs, [3]
                                          fallbacks before the step a check follows,
                                          [4] loop_iter, [5] the inbox's turn */
    unsigned long long *host_counters; /* pinned copy of the check's [0..3] */
    unsigned long long *seen;     /* mapped host memory: the divergence key [0] as the
                                     device last posted it, and the steps it covers [1]
                                     (acm_launch_key_post; 0: none since the reset), the
                                     inbox's slots the device has read [2] */
    unsigned long long *seen_dev; /* the same, for the device */
    bool posted;          /* the last step enqueued posts the key (a graph's does) */
    acm_gpu_sums *host_sums;           /* pinned [2] */
    void *staging;        /* device buffer of ACM_STAGING_BYTES for field transfers */
    float *vis;           /* acm_cuda_domain_map_fields: rho, then u interleaved */
    float *smoke_u;       /* the velocity smoke particles move with, 3 per cell */
    bool smoke_capture;   /* the next step writes it (acm_cuda_smoke_velocity) */
    /* acm_domain_sample_velocity (and _begin): mapped host memory read and written
     * by its kernel (read_cap points, then their velocities), done at read_done */
    double *read_host;
    const double *read_dev;
    size_t read_cap;
    cudaEvent_t read_done;
    bool read_queued;
    cudaStream_t stream;
    cudaEvent_t marker;   /* orders work between this domain's stream and another's */
    cudaStream_t side;    /* a slab's: the copies into its ghost planes (planes_copy) */
    cudaStream_t loop_stream; /* a recording's: the body of a run's loop */
    uint32_t *loop_iter;  /* in counters[4]: a loop's iteration and iterations
                             (acm_run_loop.iter) */
    cudaEvent_t side_done;
    bool split;           /* advance_edges stepped the edges of part: advance_rest the rest */
    acm_step_args part;
    bool own_stream;
    bool broken;          /* a sticky device error: the context is unusable */
    int64_t batch_step;   /* steps since the divergence key was reset */
    bool batch_mixed;     /* a step of them moved solids or smoke (host state the gate
                             of the state kernels does not hold back) */
    cuda_ib ib;
    bool capturing;       /* the steps enqueued now go into a graph (backend_graph.cu) */
    int64_t graphs_recorded; /* since the domain was made (acm_cuda_graphs_recorded) */
    bool graphs_refused;  /* a run's capture failed: runs go kernel by kernel */
    cu_run run;
    cu_inbox inbox;
    cu_run_smoke run_smoke;
    cu_kept kept;
    cu_graph graphs[ACM_GRAPHS];
    int graph_next;       /* the slot the next capture replaces when none is free */
};

#define IMPL(d) ((cuda_impl *)(d)->impl)

/* ---- errors and device memory (backend_device.cu) --------------------------- */

/* A CUDA error as ACM_ERR_DEVICE, ACM_ERR_DEVICE_MEMORY or ACM_ERR_NO_DEVICE
 * on d; a sticky one marks d's context broken. */
acm_status cu_fail(acm_domain *d, cudaError_t e, const char *what);

#define CU_TRY(d, call)                                                                    \
    do {                                                                                   \
        cudaError_t cu_e_ = (call);                                                        \
        if (cu_e_ != cudaSuccess)                                                          \
            return cu_fail((d), cu_e_, #call);                                             \
    } while (0)

acm_status cu_enter(acm_domain *d);
acm_status cu_dev_alloc(acm_domain *d, void **p, size_t bytes, const char *what);
void cu_dev_free(acm_domain *d, void **p, size_t bytes);
/* Every kernel of the library loaded on d's device now (kernels.cuh,
 * "loading"): no step pays CUDA's lazy loading. Best effort: a driver
 * without the calls it needs keeps loading kernels at their first launch. */
acm_status cu_load_kernels(acm_domain *d);

/* ---- sizes and kernel arguments (backend_device.cu) ------------------------- */

/* Moment storage (lib/core/moments.h): the state arrays hold each cell's
 * ACM_MOMENTS moments (kernels.cuh, ACM_STATE_MOMENTS). */
static inline bool cu_moments(const acm_domain *d)
{
    return d->layout.storage == ACM_STORAGE_MOMENTS;
}

size_t cu_plane_bytes(const acm_domain *d);
acm_csoa cu_state_layout(const acm_domain *d);
size_t cu_state_bytes(const acm_domain *d);
size_t cu_planes_bytes(const acm_domain *d);
acm_gpu_grid cu_grid_of(const acm_domain *d);
acm_gpu_grid cu_pop_grid(const acm_domain *d);
void *cu_state_array(const cuda_impl *m);
acm_step_args cu_step_args(const acm_domain *d);
acm_gate cu_gate(const acm_domain *d);
bool cu_stream_captured(const cuda_impl *m);

/* ---- counters (backend_device.cu) -------------------------------------------- */

acm_status cu_reset_counters(acm_domain *d);

/* ---- statistics and state transfers (backend_state.cu) ----------------------- */

acm_status cu_fold_planes(acm_domain *d, int slot, bool step);
acm_status cu_ensure_tau(acm_domain *d);

/* ---- time stepping (backend_step.cu) ----------------------------------------- */

acm_status cu_copy_planes_home(acm_domain *d, const acm_plane_fixed *src);
acm_status cu_send_planes(acm_domain *d);
acm_plane_fixed *cu_shared_planes(const acm_domain *d, int64_t step);
acm_status cu_check(acm_domain *d);
/* The most steps between two looks at the divergence key (its step index
 * has 64 - ACM_KEY_CELL_BITS bits); cu_bound_batch looks (cu_check) when
 * `steps` more would go past it. */
#define ACM_BATCH_STEPS_MAX ((int64_t)1 << (63 - ACM_KEY_CELL_BITS))
acm_status cu_bound_batch(acm_domain *d, int64_t steps);
/* acm_cuda_step_async: the key the device last posted to mapped memory (a
 * graph's last step posts it, cu_send_seen after steps launched kernel by
 * kernel), read without waiting; a divergence found is then reported as
 * cu_check reports it. */
acm_status cu_take_seen(acm_domain *d);
acm_status cu_send_seen(acm_domain *d);
/* One step enqueued (no check), as advance enqueues it. */
acm_status cu_step(acm_domain *d);
/* The host's part of a step whose kernels a graph replays. */
void cu_replayed_step(acm_domain *d);

/* ---- steps replayed from CUDA graphs (backend_graph.cu) ---------------------- */

void cu_graphs_release(acm_domain *d);
/* Room in every slot of the inbox for `words` words of inputs (a larger ring:
 * the graphs recorded with the old one are no longer found). */
acm_status cu_inbox_ready(acm_domain *d, size_t words);
/* The next slot, once the device has read what it held (waits for the stream
 * when the host is ACM_INBOX_SLOTS replays ahead). */
acm_status cu_inbox_open(acm_domain *d, cu_inbox_fill *f);
/* `bytes` (a multiple of 8) from src to dst on the device, at the next replay. */
acm_status cu_inbox_add(acm_domain *d, cu_inbox_fill *f, void *dst, const void *src, size_t bytes);
/* The slot's counts and segments written: the next graph launched reads it. */
void cu_inbox_close(acm_domain *d, cu_inbox_fill *f);


/* ---- decomposition (backend_slab.cu) and immersed boundary (backend_ib.cu) --- */

void cu_share_release(acm_domain *d);
void cu_ib_release(acm_domain *d, bool cells);
acm_ib_args cu_ib_args(const acm_domain *d);
/* What a run's re-sorts need, made before it is recorded: the sort's scratch. */
acm_status cu_ib_ready(acm_domain *d);
/* Whether the device may re-sort solid i's samples (a moving solid of more
 * than one sample in the Morton-block order). */
bool cu_ib_sortable(const acm_domain *d, int32_t i);
/* The samples of the solids i that want(d, i) picks re-sorted on stream s, in
 * one sort for each ACM_IB_BATCH of them, at their poses (a recorded run's:
 * slot `slot` of its poses); among them, those whose bit of *flags is set
 * when the sort runs (flags NULL: all). */
acm_status cu_ib_resort(acm_domain *d, bool (*want)(const acm_domain *, int32_t),
                        const uint32_t *flags, int slot, cudaStream_t s);
/* Whether solid i is a free body that a run integrates on the device. */
bool cu_ib_free(const acm_domain *d, int32_t i);
/* The solids i that want(d, i) picks, bit i each (at most ACM_RUN_SOLIDS). */
uint32_t cu_ib_bits(const acm_domain *d, bool (*want)(const acm_domain *, int32_t));
/* Before a run with free bodies: the host's bodies to the device, unless
 * they are there (d->bodies_on_backend). */
acm_status cu_ib_bodies_send(acm_domain *d);
/* Into the run being recorded, before its first step: each free body's
 * pose, as the device holds it, into slot 0 of the run's poses. */
acm_status cu_ib_bodies_pose(acm_domain *d);
/* Into the run being recorded, after the fluid of its step j: each free
 * body's force, Newton-Euler step and re-sort test (kernels/rigid.cu). */
acm_status cu_ib_bodies_step(acm_domain *d, int j);

/* ---- the smokes of runs of steps (backend_smoke.cu) ------------------------------- */

/* Whether the domain's smokes can be stepped in a recorded run. */
bool cu_smokes_runnable(const acm_domain *d);
/* Before a run (outside any capture): the smokes' velocity and the run's
 * plan records allocated and laid out. */
acm_status cu_smokes_run_ready(acm_domain *d);
/* The smokes' part of a run's key. */
void cu_smokes_run_key(const acm_domain *d, cu_graph_key *k);
/* The plans of a replayed run's `steps` steps, into the run's inputs. */
acm_status cu_smokes_send(acm_domain *d, int steps, cu_inbox_fill *f);
/* Into the run being recorded, after its step j's free bodies: that step's
 * plan made to follow them (the host plans their obstacles and solid
 * emitters at the poses it last had). */
acm_status cu_smokes_follow(acm_domain *d, int j);
/* The smokes' planning state (emitters' counters, drops planned) kept or put back. */
void cu_smokes_keep(acm_domain *d, bool save);
/* The run's smoke records freed. */
void cu_smokes_run_release(acm_domain *d);

#endif /* ACMLBM_CUDA_BACKEND_IMPL_CUH */
