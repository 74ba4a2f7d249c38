/*
 * libacmlbm -- host-side launchers of the CUDA kernels, one per paper
 * concept and file (C++ inside the backend; lib/ only sees the extern "C"
 * functions of backend_cuda.h). Every launcher enqueues on the given stream
 * and returns cudaGetLastError(). SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CUDA_KERNELS_CUH
#define ACMLBM_CUDA_KERNELS_CUH

#include "cuda_common.cuh"
#include "ib.h" /* acm_ib_grid, acm_ib_region */
#include "rigid.h" /* acm_body */
#include "smoke_math.h" /* acm_smoke_obstacle, acm_smoke_source, acm_smoke_counts */

#include <type_traits> /* std::integral_constant */

/* Storage element of the populations. */
enum acm_gpu_elem { ACM_ELEM_HALF = 2, ACM_ELEM_FLOAT = 4, ACM_ELEM_DOUBLE = 8 };

/* Call f(T()) with T the storage type of elem: the one place that maps the
 * run-time precision to kernel template instances (also of the files compiled
 * once per storage type, through elem_dispatch.cu). */
template <typename F> static inline void acm_with_elem(acm_gpu_elem elem, F &&f)
{
    if (elem == ACM_ELEM_HALF)
        f(__half());
    else if (elem == ACM_ELEM_FLOAT)
        f(float());
    else
        f(double());
}

/* The storage type of an elem known at compile time. */
template <acm_gpu_elem E> struct acm_elem_type;
template <> struct acm_elem_type<ACM_ELEM_HALF> { typedef __half type; };
template <> struct acm_elem_type<ACM_ELEM_FLOAT> { typedef float type; };
template <> struct acm_elem_type<ACM_ELEM_DOUBLE> { typedef double type; };

/* lbm_fused.cu instantiates its kernel for every storage type x model x index
 * width x PULL, the longest compilation of the backend: it is compiled once
 * per storage type instead, in parallel (cuda/meson.build passes
 * -DACM_TU_ELEM=ACM_ELEM_HALF, _FLOAT or _DOUBLE). Each compilation defines
 * the per-type launcher (acm_launch_lbm_elem<T>) of its type only. */
#ifdef ACM_TU_ELEM
typedef acm_elem_type<ACM_TU_ELEM>::type acm_tu_elem;
#endif

/* Call f(std::integral_constant<int, model>()) for a run-time model. */
template <typename F> static inline void acm_with_model(int model, F &&f)
{
    switch (model) {
    case ACM_COLLISION_BGK: f(std::integral_constant<int, ACM_COLLISION_BGK>()); break;
    case ACM_COLLISION_RM_MRT: f(std::integral_constant<int, ACM_COLLISION_RM_MRT>()); break;
    case ACM_COLLISION_CM_MRT: f(std::integral_constant<int, ACM_COLLISION_CM_MRT>()); break;
    case ACM_COLLISION_ACM_LI2018:
        f(std::integral_constant<int, ACM_COLLISION_ACM_LI2018>());
        break;
    default: f(std::integral_constant<int, ACM_COLLISION_ACM_LI2020>()); break;
    }
}

/* Arithmetic type of an elem in a generic lambda: acm_real<T>. */
template <typename T> using acm_real = typename acm_io<T>::R;

/* lbm_fused.cu: one pull-stream-collide pass (pull = true), or the collision
 * of already streamed populations (pull = false, the baseline's kernel).
 * ACM modes also write one acm_gpu_sums per block (pull = true only). win:
 * the L2 window of a pulling launch (acm_read_once), or NULL. */
cudaError_t acm_launch_lbm(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                           cudaStream_t s, const cudaAccessPolicyWindow *win = NULL);
/* elem_dispatch.cu calls this one for storage type T: defined by the
 * compilation of lbm_fused.cu for T (ACM_TU_ELEM) and only there. */
template <typename T>
cudaError_t acm_launch_lbm_elem(const acm_step_args &a, bool pull, unsigned block,
                                cudaStream_t s, const cudaAccessPolicyWindow *win);

/* safety_net.cu: the fallback collision of the cells marked in a.redo (by
 * acm_launch_lbm or acm_launch_outputs), from a.src into a.dst; pull: a.src
 * is the unstreamed source of the fused kernel, else the streamed populations. */
cudaError_t acm_launch_redo(const acm_step_args &a, acm_gpu_elem elem, bool pull, unsigned block,
                            cudaStream_t s);

/* Moment storage (lib/core/moments.h; the grid's state ACM_STATE_MOMENTS, its
 * l the moment arrays' CSoA layout, beta = ACM_MOMENTS).
 * lbm_moments.cu: one fused step from the moments in a.src into a.dst, with
 * the divergence check, the fallback marks and (ACM modes) the plane sums;
 * [a.first, a.end) whole planes (else cudaErrorInvalidValue). */
cudaError_t acm_launch_mom_step(const acm_step_args &a, acm_gpu_elem elem, cudaStream_t s);
/* elem_dispatch.cu calls this one for storage type T: defined by the
 * compilation of lbm_moments.cu for T (ACM_TU_ELEM) and only there. */
template <typename T>
cudaError_t acm_launch_mom_step_elem(const acm_step_args &a, cudaStream_t s);
/* safety_net.cu: the fallback collision of the cells marked in a.redo, pulled
 * again from the moments in a.src, their moments into a.dst. */
cudaError_t acm_launch_mom_redo(const acm_step_args &a, acm_gpu_elem elem, unsigned block,
                                cudaStream_t s);
/* boundary_faces.cu: the inlet/outlet layer of one face on the new moments m:
 * the moments of the equilibrium the CPU's apply_layer sets (lib/cpu/lbm_tmpl.h). */
cudaError_t acm_launch_mom_layer(const acm_gpu_grid &g, void *m, const acm_gate &gate,
                                 acm_gpu_elem elem, int face, cudaStream_t s);
/* fields.cu: the post-collision state whose pull is the physical state in phys
 * (populations of the arithmetic type, grid gp: acm_launch_pull with dir -1),
 * its moments into mom (grid gm), every cell. */
cudaError_t acm_launch_mom_unstream(const acm_gpu_grid &gm, void *mom, const acm_gpu_grid &gp,
                                    const void *phys, acm_gpu_elem elem, unsigned block,
                                    cudaStream_t s);
/* The post-collision populations the moments of cells [k0, k0 + count) stand
 * for, shifted, FP64 in public order (27 per cell), and the inverse: such
 * populations' moments into the cells. */
/* The moments m (a kernel argument) into every cell. */
typedef struct acm_mom_uniform {
    double m[ACM_MOMENTS];
} acm_mom_uniform;
cudaError_t acm_launch_mom_fill(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem,
                                const acm_mom_uniform &u, cudaStream_t s);
cudaError_t acm_launch_mom_get(const acm_gpu_grid &g, const void *mom, acm_gpu_elem elem,
                               double *dst, uint32_t k0, uint32_t count, cudaStream_t s);
/* The stored moments of cells [k0, k0 + count) as FP64, 10 a cell, into buf
 * (to_mom false) or from it (checkpoints' moments section). */
cudaError_t acm_launch_mom_values(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem, double *buf,
                                  bool to_mom, uint32_t k0, uint32_t count, cudaStream_t s);
cudaError_t acm_launch_mom_set(const acm_gpu_grid &g, void *mom, acm_gpu_elem elem,
                               const double *src, uint32_t k0, uint32_t count, cudaStream_t s);

/* step_sums.cu: reduce n block partials into *out (field max_u2 as a
 * maximum when first_max, else as a sum; ncells for the derived means), in
 * a fixed order. scratch: acm_sum_scratch_bytes() of device memory, zeroed
 * once; launches that share it must be ordered (one stream). */
size_t acm_sum_scratch_bytes(void);
cudaError_t acm_launch_sum_partials(const acm_gpu_sums *partials, unsigned n, acm_gpu_sums *out,
                                    bool first_max, double ncells, void *scratch,
                                    cudaStream_t s);

/* step_sums.cu: entry k < n (n <= ACM_IB_BATCH, n sets <= 4 ACM_IB_BATCH) has
 * `sets` sets of partials of equal length from partials + first[k] to
 * partials + first[k + 1]; its set q folded into out[sets slot[k] + q], each
 * as acm_launch_sum_partials folds it alone (a sum), all in one launch.
 * scratch: acm_fold_sets_scratch_bytes(), zeroed once; launches ordered. */
#define ACM_IB_BATCH 16
size_t acm_fold_sets_scratch_bytes(void);
cudaError_t acm_launch_fold_sets(const acm_gpu_sums *partials, const unsigned *first,
                                 const int32_t *slot, int n, int sets, acm_gpu_sums *out,
                                 void *scratch, cudaStream_t s);

/* step_sums.cu: the ACM rules' inputs from the planes [lo, hi) of acm_plane_add,
 * folded in plane order (ncells for the means), unless the gate is shut. */
cudaError_t acm_launch_plane_fold(const acm_plane_fixed *planes, int32_t lo, int32_t hi,
                                  acm_gpu_sums *out, double ncells, const acm_gate &gate,
                                  cudaStream_t s);
/* step_sums.cu: the device's count of a batch's steps (acm_step_args.batch):
 * set to value, or (set false) one more; then, unless out is NULL, the
 * divergence key posted to out as acm_launch_key_post posts it. */
cudaError_t acm_launch_step_count(unsigned long long *batch, bool set, unsigned long long value,
                                  const unsigned long long *key, unsigned long long *out,
                                  cudaStream_t s);
/* step_sums.cu: the divergence key into out[0] of mapped host memory, then
 * `count` (the steps it covers, > 0) into out[1]: the host reads the key once
 * it finds the count. */
cudaError_t acm_launch_key_post(const unsigned long long *key, unsigned long long *out,
                                unsigned long long count, cudaStream_t s);

/* boundary_faces.cu: the per-face domain-boundary kernels.
 * Inlet/outlet equilibrium layer of one face, on the post-collision state:
 * its cells in planes [z0, z1), unless the gate is shut (acm_gate_shut). */
cudaError_t acm_launch_layer(const acm_gpu_grid &g, void *f, const acm_gate &gate,
                             acm_gpu_elem elem, int face, int32_t z0, int32_t z1, cudaStream_t s);
/* The absorbing layer in front of one face (lib/core/boundary.h acm_absorber) on
 * the post-collision state or moments f: its cells in planes [z0, z1), unless
 * the gate is shut. Before the layers. */
cudaError_t acm_launch_absorber(const acm_gpu_grid &g, void *f, const acm_gate &gate,
                                acm_gpu_elem elem, int face, int32_t z0, int32_t z1,
                                cudaStream_t s);
/* Half-way bounce-back of one non-periodic face on freshly streamed
 * populations tmp (the paper's per-face wall kernel, split variant). */
cudaError_t acm_launch_wall_face(const acm_gpu_grid &g, const void *post, void *tmp,
                                 acm_gpu_elem elem, int face, cudaStream_t s);

/* lbm_split.cu: the paper's kernel structure.
 * Streaming: tmp_i(x) = src_i(x - c_i), wrapping at every face (walls are then
 * fixed by acm_launch_wall_face). */
cudaError_t acm_launch_stream(const acm_gpu_grid &g, const void *src, void *tmp,
                              acm_gpu_elem elem, unsigned block, cudaStream_t s);
/* Streaming with the face rules inside (acm_pull: the baseline's branchy
 * stream), dir = 1; dir = -1: its inverse (the stored form of a given state). */
cudaError_t acm_launch_pull(const acm_gpu_grid &g, const void *src, void *dst, acm_gpu_elem elem,
                            int dir, unsigned block, cudaStream_t s);
/* Macroscopic fields of tmp into 4 planes (rho, ux, uy, uz) of the arithmetic
 * type; with the divergence check and, for ACM modes, the block sums. */
cudaError_t acm_launch_macro(const acm_step_args &a, const void *tmp, void *macro,
                             acm_gpu_elem elem, unsigned block, cudaStream_t s);
/* Relaxed moments of every cell of tmp into mom (27 CSoA components). */
cudaError_t acm_launch_moments(const acm_step_args &a, const void *tmp, void *mom,
                               acm_gpu_elem elem, unsigned block, cudaStream_t s);
/* Collision outputs 0-13 (half 0) or 14-26 (half 1) from mom into a.dst;
 * ACM modes mark the cells with a negative population in a.redo. */
cudaError_t acm_launch_outputs(const acm_step_args &a, const void *mom, const void *macro,
                               acm_gpu_elem elem, int half, unsigned block, cudaStream_t s);

/* fields.cu: state transfers.
 * Fields of cells [k0, k0 + count) of the physical state into dst (dtype 4
 * or 8 bytes): field = acm_field. */
cudaError_t acm_launch_field(const acm_step_args &a, const void *cur, acm_gpu_elem elem,
                             int field, void *dst, int dst_elem, uint32_t k0, uint32_t count,
                             cudaStream_t s);
/* Physical state = equilibrium of rho/u arrays (src_elem bytes, may be NULL:
 * uniform rho0/u0) for cells [k0, k0 + count) into phys. */
cudaError_t acm_launch_equilibrium(const acm_gpu_grid &g, void *phys, acm_gpu_elem elem,
                                   const void *rho, const void *u, int src_elem, double rho0,
                                   const double u0[3], uint32_t k0, uint32_t count,
                                   cudaStream_t s);
/* Physical state = full populations f (27 per cell) for cells [k0, k0 + count). */
cudaError_t acm_launch_set_populations(const acm_gpu_grid &g, void *phys, acm_gpu_elem elem,
                                       const void *f, int src_elem, uint32_t k0,
                                       uint32_t count, cudaStream_t s);
/* Per-cell planes (comp of them, arithmetic type: the force, tau*) of cells
 * [k0, k0 + count) from interleaved caller values (comp per cell). */
cudaError_t acm_launch_set_planes(const acm_gpu_grid &g, void *planes, acm_gpu_elem elem,
                                  int comp, const void *src, int src_elem, uint32_t k0,
                                  uint32_t count, cudaStream_t s);
/* The inverse, into interleaved FP64 values (exact). */
cudaError_t acm_launch_get_planes(const acm_gpu_grid &g, const void *planes, acm_gpu_elem elem,
                                  int comp, double *dst, uint32_t k0, uint32_t count,
                                  cudaStream_t s);
/* The stored shifted populations of cells [k0, k0 + count) of arr, unstreamed,
 * as FP64 in public order (27 per cell: exact for every storage type); swap:
 * population i from slot opp(i) (ACM_STATE_AA_SWAP). */
cudaError_t acm_launch_get_stored(const acm_gpu_grid &g, const void *arr, acm_gpu_elem elem,
                                  bool swap, double *dst, uint32_t k0, uint32_t count,
                                  cudaStream_t s);
/* The inverse: such values into the slots of cells [k0, k0 + count). */
cudaError_t acm_launch_set_stored(const acm_gpu_grid &g, void *arr, acm_gpu_elem elem, bool swap,
                                  const double *src, uint32_t k0, uint32_t count, cudaStream_t s);
/* The stored values of cells [k0, k0 + count) as they are, between arr and a
 * canonical buffer of the same type (the slots of acm_moves(dz, i) per cell,
 * 27 with dz 0): to_arr moves them into arr, else out. */
cudaError_t acm_launch_move_stored(const acm_gpu_grid &g, void *arr, acm_gpu_elem elem, bool swap,
                                   void *canon, bool to_arr, int dz, uint32_t k0, uint32_t count,
                                   cudaStream_t s);
/* count cells' stored values (the slots of acm_moves(dz, i)) from src
 * (cells from s0, grid gs) into dst (cells from d0, grid gd), both of type
 * elem and the same CSoA group. */
cudaError_t acm_launch_copy_stored(const acm_gpu_grid &gd, void *dst, uint32_t d0,
                                   const acm_gpu_grid &gs, const void *src, uint32_t s0,
                                   uint32_t count, int dz, acm_gpu_elem elem, cudaStream_t s);
/* fields.cu: the velocity at count points (3 each), trilinear between cell
 * centres (lib/core/smoke_math.h), into out (3 each). */
cudaError_t acm_launch_sample_velocity(const acm_step_args &a, const acm_ib_grid &g,
                                       const void *cur, acm_gpu_elem elem, const double *points,
                                       double *out, uint32_t count, cudaStream_t s);
/* A recorded step's smoke plan at `plan` (backend_smoke.cu, the smokes of
 * runs) made to follow the free bodies the device moves: the obstacles (its
 * first nobs records) and the solid emitters' sources (smoke k's at plan +
 * off[k]: its emissions and source count, then the sources) of solid i take
 * the pose of bodies[i] where bit i of `free_bits` is set. */
#define ACM_SMOKE_FOLLOW 4
struct acm_smoke_layout {
    int32_t n; /* smokes, at most ACM_SMOKE_FOLLOW */
    uint64_t off[ACM_SMOKE_FOLLOW];
};
cudaError_t acm_launch_smoke_follow(const struct acm_free_body *bodies, uint32_t free_bits,
                                    unsigned char *plan, int32_t nobs,
                                    const acm_smoke_layout &l, cudaStream_t s);
/* smoke.cu (lib/core/smoke_math.h): move the live particles of n slots one step,
 * freeing (age -1) and counting those that left, expired or were absorbed. */
cudaError_t acm_launch_smoke_advect(const acm_ib_grid &g, const float *u,
                                    const acm_smoke_obstacle *obs, int32_t nobs, double *x,
                                    int32_t *age, const int32_t *life, acm_smoke_counts *counts,
                                    uint64_t n, cudaStream_t s);
/* The free slots of n in ascending order and their count (a device select;
 * temp NULL asks for *temp_bytes). */
cudaError_t acm_launch_smoke_free_slots(void *temp, size_t *temp_bytes, const int32_t *age,
                                        uint32_t *free_list, uint32_t *nfree, uint64_t n,
                                        cudaStream_t s);
/* A step's emissions into the listed free slots; those beyond *nfree dropped.
 * Where `plan` is not NULL, the emissions and the sources' count are
 * plan[0] and plan[1] in device memory (a recorded step's: written before
 * each replay), and `emissions` only bounds them (the launch's size). */
cudaError_t acm_launch_smoke_emit(const acm_smoke_source *src, int32_t nsrc, uint32_t emissions,
                                  const uint32_t *plan, uint64_t seed, const uint32_t *free_list,
                                  const uint32_t *nfree, double *x, int32_t *age, int32_t *life,
                                  acm_smoke_counts *counts, cudaStream_t s);
/* The live particles' cloud-in-cell density, added into dst (m voxels, s per cell edge). */
cudaError_t acm_launch_smoke_density(const acm_ib_grid &g, const int32_t m[3], int32_t sub,
                                     const double *x, const int32_t *age, uint64_t n, float *dst,
                                     cudaStream_t s);
/* What a replayed run of steps takes from the host (its poses, re-sort flags,
 * step count and smoke plans; backend_device.cu "the inbox"), read by the
 * first kernel of its graph from a ring of ACM_INBOX_SLOTS slots of
 * `slot_words` 8-byte words in mapped host memory: the slot turn[0] %
 * ACM_INBOX_SLOTS (turn in device memory, counted on by the kernel, which then
 * tells the host the slots it has read in read[0], mapped). A slot: word 0
 * holds the count of its segments (low 32 bits) and of its words (high 32),
 * the words follow, then the segments: segment k's `words` words from word
 * `first` go to dst (8-byte aligned), the segments in the order of their
 * words, which they cover. The host only writes host memory (a put launch of
 * 3 kB cost it 3.4-5.3 us, H100), the kernel reads the slot over the bus. */
#define ACM_INBOX_SLOTS 8
#define ACM_INBOX_SEGMENTS 160
struct acm_inbox_segment {
    void *dst;
    uint32_t first, words;
};
cudaError_t acm_launch_inbox(const uint64_t *ring, size_t slot_words, unsigned long long *turn,
                             unsigned long long *read, cudaStream_t s);
/* Zero n 32-bit words, as a kernel: inside a graph a memset node costs the
 * host about 1.5 us at every launch of the graph, a kernel node nothing
 * measurable (H200, CUDA 13; docs/performance.md). */
cudaError_t acm_launch_zero_words(uint32_t *p, size_t n, cudaStream_t s);
/* Fill n values of the arithmetic type with v. */
cudaError_t acm_launch_fill(void *p, acm_gpu_elem elem, uint64_t n, double v, cudaStream_t s);
/* Diagnostics of the physical state: per block (max |u|^2, mass, sum rho|u|,
 * sum |Pi|) into partials[block] and (momentum x, y, z, energy) into
 * partials[n + block], n = the number of blocks, returned in *n. */
cudaError_t acm_launch_diagnostics(const acm_step_args &a, const void *cur, acm_gpu_elem elem,
                                   acm_gpu_sums *partials, unsigned *n, cudaStream_t s);

/* ib.cu: the immersed boundary (spec 8; the CPU's twin is lib/cpu/ib_tmpl.h). */

/* The samples of every solid (concatenated) and the per-cell planes of the IB
 * phase, as device pointers; per-sample values other than positions are of
 * the arithmetic type R of the domain. */
struct acm_ib_args {
    acm_ib_grid ig;
    uint64_t n;        /* samples */
    double *X;         /* 3n: world positions */
    const double *r;   /* 3n: body-frame offsets */
    void *ub;          /* 3n: rigid-body velocity at the sample */
    const void *dv;    /* n: volume weight */
    const void *alpha; /* n: penalty gain */
    void *G, *Gsum;    /* 3n: penalty force density of the iteration, and their sum */
    void *rho;         /* n: density interpolated at the sample */
    void *macro;       /* 4 planes of ncells: rho, u* */
    void *force;       /* 3 planes of ncells: the IB force of this step */
    uint32_t *mask;    /* a bit per cell: the support of this step */
    uint32_t *band;    /* the marked cells (acm_ib_band_bound of them at most) */
    uint32_t *band_count; /* how many */
    int32_t own0, own_n;  /* the domain's own planes (a slab's, without its ghosts), whole-
                             domain z: the sums below take the samples based on them */
};

/* Pose and velocities of a solid, passed by value to the placement kernel. */
struct acm_ib_pose {
    double x[3], q[4], v[3], w[3];
};

/* A body's pose and velocities (host and device alike). */
__host__ __device__ inline acm_ib_pose acm_ib_pose_of(const acm_body &b)
{
    acm_ib_pose p;
    for (int a = 0; a < 3; ++a) {
        p.x[a] = b.x[a];
        p.v[a] = b.v[a];
        p.w[a] = b.w[a];
    }
    for (int a = 0; a < 4; ++a)
        p.q[a] = b.q[a];
    return p;
}

/* Place samples [first, first + count): X = x_c + R r, U_b = v + w x R r,
 * at `pose`, or where `from` is not NULL at the pose it points to in device
 * memory (a recorded step's: acm_launch_ib_poses writes it before each replay). */
cudaError_t acm_launch_ib_place(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t first,
                                uint64_t count, const acm_ib_pose &pose, const acm_ib_pose *from,
                                cudaStream_t s);
/* ib_sort.cu: the samples of up to ACM_IB_BATCH solids re-sorted into the
 * Morton-block order (blocks of edge `block`, keys below bit end_bit) at
 * their poses, in one sort: entry k is solid bit[k], samples [first[k],
 * first[k] + start[k + 1] - start[k]) at pose[k] (or *from[k] where not NULL,
 * as acm_launch_ib_place); it is re-sorted when bit bit[k] of *flags is set
 * (flags NULL: every entry), else left as it is. r, X, dv, Gsum and origin
 * (the sampling indices) move with the samples. Filled with
 * acm_sort_batch_add. */
struct acm_sort_batch {
    int32_t n;
    int32_t bit[ACM_IB_BATCH];
    uint32_t start[ACM_IB_BATCH + 1]; /* each entry's place in the sort; then their sum */
    uint64_t first[ACM_IB_BATCH];
    const acm_ib_pose *from[ACM_IB_BATCH];
    acm_ib_pose pose[ACM_IB_BATCH];
};
/* Add solid `bit` to b (which has room: b->n < ACM_IB_BATCH). */
void acm_sort_batch_add(acm_sort_batch *b, int32_t bit, uint64_t first, uint32_t count,
                        const acm_ib_pose &pose, const acm_ib_pose *from);
/* Scratch of a re-sort of `samples` samples in all. */
cudaError_t acm_ib_resort_scratch_bytes(uint64_t samples, size_t *bytes);
cudaError_t acm_launch_ib_resort(const acm_ib_args &ib, acm_gpu_elem elem,
                                 const acm_sort_batch &b, const uint32_t *flags, int32_t block,
                                 int end_bit, uint64_t *origin, void *scratch, cudaStream_t s);
/* A recorded run re-sorts its solids in the body of a conditional node, one
 * a step: this kernel opens it when *flags & mask is not 0. */
cudaError_t acm_launch_ib_resort_flag(cudaGraphConditionalHandle h, uint32_t mask,
                                      const uint32_t *flags, cudaStream_t s);
/* Mark the support of every sample in ib.mask (cleared first) and list the
 * marked cells in ib.band (their count in *ib.band_count). Only needed when
 * samples moved: the support of static samples stays marked and listed. */
cudaError_t acm_launch_ib_mark(const acm_ib_args &ib, uint32_t ncells, cudaStream_t s);
/* Most cells the band list can hold: 8 per sample, ncells at most. */
uint64_t acm_ib_band_bound(uint64_t samples, uint32_t ncells);
/* rho and u* of every listed cell from a.src, pulled as the fluid step will
 * pull it, and its IB force zeroed. */
cudaError_t acm_launch_ib_band(const acm_step_args &a, const acm_ib_args &ib, acm_gpu_elem elem,
                               cudaStream_t s);
/* One multi-direct-forcing iteration's interpolation: G = alpha rho (U_b - U)
 * with U from u* + F / 2 rho (first: F = 0, and Gsum = G instead of += G);
 * spread: also scatter G dV (first iteration only). */
cudaError_t acm_launch_ib_penalty(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                  bool first, bool spread, cudaStream_t s);
/* Scatter: each sample adds w G dV to its 8 cells with atomics. */
cudaError_t acm_launch_ib_scatter(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                  cudaStream_t s);
/* Gather over one solid's region: a cell list of its samples (counts, scan,
 * fill; scratch from acm_ib_gather_scratch_bytes), then one thread per region
 * cell sums the samples around it. */
size_t acm_ib_gather_scratch_bytes(uint64_t region_cells, uint64_t samples);
cudaError_t acm_launch_ib_gather(const acm_ib_args &ib, acm_gpu_elem elem, uint64_t ncells,
                                 const acm_ib_region &rg, uint64_t first, uint64_t count,
                                 void *scratch, size_t scratch_bytes, cudaStream_t s);
/* The centre of a solid's moments in the sums below: xc from the host, or
 * where `at` is not NULL the 3 doubles it points to in device memory (a
 * free body's pose in a recorded run). */
struct acm_ib_centre {
    double xc[3];
    const double *at;
};
/* Up to ACM_IB_BATCH solids whose sums (or coupled forces) one launch makes:
 * entry k is the solid of index slot[k] (its results at out + sets slot[k]),
 * samples [first[k], first[k] + count[k]), moments about centre[k], and (the
 * velocity change from the host, acm_launch_ib_couple) dvdw[k]. Filled with
 * acm_ib_batch_add; block0 is the launchers'. */
struct acm_ib_batch {
    int32_t n;
    int32_t slot[ACM_IB_BATCH];
    uint32_t block0[ACM_IB_BATCH + 1]; /* first block of each entry's samples; then their sum */
    uint64_t first[ACM_IB_BATCH], count[ACM_IB_BATCH];
    acm_ib_centre centre[ACM_IB_BATCH];
    double dvdw[ACM_IB_BATCH][6];
};
/* Add a solid to b (which has room: b->n < ACM_IB_BATCH); dvdw may be NULL. */
void acm_ib_batch_add(acm_ib_batch *b, int32_t slot, uint64_t first, uint64_t count,
                      const acm_ib_centre &c, const double *dvdw);
/* The sums below: partials of `sets` sets per block of 256 samples of each
 * entry (at most 4 (acm_ib_sum_blocks(samples) + solids) in all), folded by
 * acm_launch_fold_sets (fold_scratch: acm_fold_sets_scratch_bytes()).
 * Each solid's force -sum Gsum dV (x, y, z, then torque x) into out[2 slot] and its
 * torque about its centre (y, z) into out[2 slot + 1] (fields max_u2, sum_rho,
 * sum_j, sum_pi in that order) over those of its samples on the own planes
 * (ib.own0, own_n); partials: 2 per block of 256 samples. Each solid's sums
 * folded in a fixed order, the same in a batch of any size. */
cudaError_t acm_launch_ib_sums(const acm_ib_args &ib, acm_gpu_elem elem, const acm_ib_batch &b,
                               acm_gpu_sums *partials, acm_gpu_sums *out, void *fold_scratch,
                               cudaStream_t s);
/* Free bodies' coupling sums (rigid.h, acm_coupling: F, T, k, s, J in that
 * order, 16 values) over their samples on the own planes into
 * out[4 slot .. 4 slot + 3]; partials: 4 per block. */
cudaError_t acm_launch_ib_coupling(const acm_ib_args &ib, acm_gpu_elem elem,
                                   const acm_ib_batch &b, acm_gpu_sums *partials,
                                   acm_gpu_sums *out, void *fold_scratch, cudaStream_t s);
/* The samples' penalty forces for each body's velocity change: b.dvdw from
 * the host, or the first 6 values of from[slot] on the device when from is
 * not NULL (acm_launch_body_couple's; b.dvdw then unread). */
cudaError_t acm_launch_ib_couple(const acm_ib_args &ib, acm_gpu_elem elem, const acm_ib_batch &b,
                                 const acm_gpu_sums *from, cudaStream_t s);
/* A free body's velocity change (rigid.h acm_body_coupled_velocity) from its
 * coupling sums on the device (acm_launch_ib_coupling's 4) into the first 6
 * values of *out (dv, dw); rigid.cu, the host's rounding. */
cudaError_t acm_launch_body_couple(const struct acm_body &b, const acm_gpu_sums *sums,
                                   acm_gpu_sums *out, cudaStream_t s);
/* A free body integrated on the device in runs of recorded steps (rigid.cu,
 * backend_ib.cu): its body, the pose its samples were last placed at, its
 * last sort's pose, its re-sorts since it came to the device; and the
 * device's step counts of the batch (acm_gate.batch) after the last step
 * whose re-sort test fired (`sorted`) and after the step whose move would
 * have reached ACM_SOLID_MAX_SPEED (`failed`, 0: none; that speed in
 * `speed`; the body then stays where it was). */
struct acm_free_body {
    acm_body body, placed;
    double sort_x[3], sort_q[4];
    double speed;
    unsigned long long resorts, sorted, failed;
};
/* The velocity changes of a batch's free bodies in device memory
 * (bodies[slot].body), as acm_launch_body_couple: sums + 4 slot into out[slot]. */
cudaError_t acm_launch_body_couple_batch(const struct acm_free_body *bodies,
                                         const acm_ib_batch &b, const acm_gpu_sums *sums,
                                         acm_gpu_sums *out, cudaStream_t s);
/* One step of each free body of the batch after the fluid's (a thread a
 * body, the host's rounding: lib/ib/solid.c acm__solids_after_step): for
 * bodies[slot], Newton-Euler with the force and torque ft + 2 slot
 * (acm_launch_ib_sums's), the speed limit, the pose after the step into
 * next[slot], and the re-sort test (a drift of `block` or more since the
 * last sort, block 0: never; then, when bit slot of `sortable` is set, that
 * bit is or-ed into *flags and the re-sort counted). Nothing moves once the
 * gate is shut or the body failed. */
cudaError_t acm_launch_body_run(acm_free_body *bodies, const acm_ib_batch &b,
                                const acm_gpu_sums *ft, acm_ib_pose *next, uint32_t *flags,
                                uint32_t sortable, double block, const acm_gate &gate,
                                cudaStream_t s);
/* The poses of the batch's bodies into out[slot] (the first slot of a recorded run). */
cudaError_t acm_launch_body_pose(const acm_free_body *bodies, const acm_ib_batch &b,
                                 acm_ib_pose *out, cudaStream_t s);
/* step_sums.cu: a run of steps as a device loop (backend_graph.cu, "runs as
 * loops"): a graph's WHILE node whose body is `steps` steps reading their
 * inputs from fixed slots. acm_launch_run_shift (before the loop) moves the
 * run's inputs of its first iteration into them, acm_launch_run_next (last in
 * the body) counts the iteration k = ++iter[0], keeps the loop going while
 * k < iter[1] and then moves the inputs of iteration k, or after the last
 * posts the divergence key with the device's step count *batch to post
 * (unless NULL), as acm_launch_key_post does. The inputs of iteration k: each
 * solid's poses of steps steps * k + s, s = 0 .. steps, into slots[s * n + i]
 * (a free body's, which the device makes: slot 0 from slot `steps`, the pose
 * after the last iteration), their re-sort flags and the smokes' plans
 * (`stride` 8-byte words a step). */
struct acm_run_loop {
    uint32_t *iter;          /* [0] the iteration, [1] the iterations (the run's inputs) */
    const acm_ib_pose *poses; /* the run's: step j's of solid i at j * n + i, or NULL */
    acm_ib_pose *slots;      /* (steps + 1) * n */
    const uint32_t *flags;   /* the run's re-sort flags, a word a step, or NULL */
    uint32_t *slot_flags;    /* steps */
    const uint64_t *plans;   /* the smokes' plans of the run's steps, or NULL */
    uint64_t *slot_plans;    /* steps * stride */
    const unsigned long long *batch, *key;
    unsigned long long *post;
    uint64_t stride;
    int32_t n, steps;
    uint32_t free_bits;      /* the free bodies among the n solids */
};
cudaError_t acm_launch_run_shift(const acm_run_loop &l, cudaStream_t s);
cudaError_t acm_launch_run_next(const acm_run_loop &l, cudaGraphConditionalHandle h,
                                cudaStream_t s);
/* n free bodies' Newton-Euler steps (rigid.h acm_body_advance_free): body i
 * of bodies (device memory) with the force and torque ft[6 i ..] into out[i];
 * rigid.cu, the host's rounding. */
cudaError_t acm_launch_body_advance(const struct acm_body *bodies, const double *ft, int n,
                                    struct acm_body *out, cudaStream_t s);
/* A solid's force and torque as acm_launch_ib_sums lays them out (2 sums),
 * and a free body's coupling sums as acm_launch_ib_coupling does (4), read
 * back on the host or the device. */
__host__ __device__ inline void acm_ib_unpack_ft(const acm_gpu_sums *p, double f[3], double t[3])
{
    f[0] = p[0].max_u2;
    f[1] = p[0].sum_rho;
    f[2] = p[0].sum_j;
    t[0] = p[0].sum_pi;
    t[1] = p[1].max_u2;
    t[2] = p[1].sum_rho;
}
__host__ __device__ inline void acm_ib_unpack_coupling(const acm_gpu_sums *p, acm_coupling *c)
{
    double *v = (double *)c; /* F, T, k, s, J */
    for (int q = 0; q < 4; ++q) {
        v[4 * q] = p[q].max_u2;
        v[4 * q + 1] = p[q].sum_rho;
        v[4 * q + 2] = p[q].sum_j;
        v[4 * q + 3] = p[q].sum_pi;
    }
}
/* Blocks of acm_launch_ib_sums for a count of samples. */
unsigned acm_ib_sum_blocks(uint64_t count);

/* ---- loading ----------------------------------------------------------------------------
 * Each compilation unit of this folder is a CUDA module of its own. One
 * kernel of each (its anchor) lets the host find the modules and load every
 * kernel in them when a domain is made, rather than at each kernel's first
 * launch (CUDA's lazy loading). elem_dispatch.cu: up to max anchors into out,
 * their count. */
size_t acm_kernel_anchors(const void **out, size_t max);
template <typename T> const void *acm_lbm_anchor_elem(void);
template <typename T> const void *acm_mom_anchor_elem(void);
const void *acm_faces_anchor(void);
const void *acm_fields_anchor(void);
const void *acm_ib_anchor(void);
const void *acm_ib_sort_anchor(void);
const void *acm_split_anchor(void);
const void *acm_net_anchor(void);
const void *acm_sums_anchor(void);
const void *acm_smoke_anchor(void);
const void *acm_rigid_anchor(void);

#endif /* ACMLBM_CUDA_KERNELS_CUH */
