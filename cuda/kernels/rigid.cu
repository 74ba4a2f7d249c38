/*
 * libacmlbm -- the rigid bodies' host-side arithmetic on the device: the
 * implicit coupling's velocity change of a free body (lib/core/rigid.h), so
 * that the step does not wait for the host between the first interpolation
 * and the coupled forces, and its Newton-Euler step with the speed limit and
 * the re-sort test (free bodies in runs of recorded steps). This unit is
 * compiled with --fmad=false: without contracted multiply-adds every
 * operation rounds as the host's (which is compiled for baseline x86-64, no
 * FMA), and the device's velocity change and poses have the host's bits.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"
#include "rigid.h"

/* The body's coupling sums (4 sums, acm_launch_ib_coupling's layout) to its
 * velocity change, out's first 6 values (dv, dw). */
__device__ static void couple(const acm_body &b, const acm_gpu_sums *sums, acm_gpu_sums *out)
{
    acm_coupling c;
    acm_ib_unpack_coupling(sums, &c);
    double *dvdw = (double *)out;
    acm_body_coupled_velocity(&b, &c, dvdw, dvdw + 3);
}

/* One thread: couple() for the body b. */
__global__ void acm_body_couple_kernel(const acm_body b, const acm_gpu_sums *sums,
                                       acm_gpu_sums *out)
{
    couple(b, sums, out);
}

cudaError_t acm_launch_body_couple(const acm_body &b, const acm_gpu_sums *sums,
                                   acm_gpu_sums *out, cudaStream_t s)
{
    acm_body_couple_kernel<<<1, 1, 0, s>>>(b, sums, out);
    return cudaGetLastError();
}

/* A thread a body of the batch: couple() for bodies[slot].body. */
__global__ void acm_body_couple_batch_kernel(const acm_free_body *bodies, const acm_ib_batch bt,
                                             const acm_gpu_sums *sums, acm_gpu_sums *out)
{
    const int k = (int)threadIdx.x;
    if (k < bt.n)
        couple(bodies[bt.slot[k]].body, sums + 4 * bt.slot[k], out + bt.slot[k]);
}

cudaError_t acm_launch_body_couple_batch(const acm_free_body *bodies, const acm_ib_batch &b,
                                         const acm_gpu_sums *sums, acm_gpu_sums *out,
                                         cudaStream_t s)
{
    if (b.n <= 0)
        return cudaSuccess;
    acm_body_couple_batch_kernel<<<1, ACM_IB_BATCH, 0, s>>>(bodies, b, sums, out);
    return cudaGetLastError();
}

/* One body's step after the fluid (acm_launch_body_run): the host's
 * (lib/ib/solid.c acm__solids_after_step), and the re-sort test. */
__device__ static void body_run(acm_free_body *f, const acm_gpu_sums *ft, uint32_t *flags,
                                uint32_t bit, double block, unsigned long long count)
{
    double F[3], T[3];
    acm_ib_unpack_ft(ft, F, T);
    f->placed = f->body; /* the step placed the samples there */
    const double speed = acm_body_advance_limited(&f->body, F, T, ACM_SOLID_MAX_SPEED);
    if (!(speed < ACM_SOLID_MAX_SPEED)) { /* the pose is kept from before */
        f->failed = count;
        f->speed = speed;
        return;
    }
    const acm_body *b = &f->body;
    if (block > 0.0 && acm_body_displacement(f->sort_x, f->sort_q, b->x, b->q, b->r_max) >= block) {
        memcpy(f->sort_x, b->x, sizeof f->sort_x);
        memcpy(f->sort_q, b->q, sizeof f->sort_q);
        f->sorted = count;
        if (bit != 0) {
            atomicOr(flags, bit); /* the bodies' bits of the step's word */
            f->resorts++;
        }
    }
}

/* A thread a body of the batch: acm_launch_body_run (kernels.cuh). */
__global__ void acm_body_run_kernel(acm_free_body *bodies, const acm_ib_batch bt,
                                    const acm_gpu_sums *ft, acm_ib_pose *next, uint32_t *flags,
                                    uint32_t sortable, double block, acm_gate gate)
{
    const int k = (int)threadIdx.x;
    if (k >= bt.n)
        return;
    const int32_t i = bt.slot[k];
    acm_free_body *f = bodies + i;
    const unsigned long long count = gate.batch != NULL ? *gate.batch : 1ull;
    if (f->failed == 0 && !acm_gate_shut(gate))
        body_run(f, ft + 2 * i, flags, sortable & (UINT32_C(1) << i), block, count);
    next[i] = acm_ib_pose_of(f->body);
}

cudaError_t acm_launch_body_run(acm_free_body *bodies, const acm_ib_batch &b,
                                const acm_gpu_sums *ft, acm_ib_pose *next, uint32_t *flags,
                                uint32_t sortable, double block, const acm_gate &gate,
                                cudaStream_t s)
{
    if (b.n <= 0)
        return cudaSuccess;
    acm_body_run_kernel<<<1, ACM_IB_BATCH, 0, s>>>(bodies, b, ft, next, flags, sortable, block,
                                                   gate);
    return cudaGetLastError();
}

__global__ void acm_body_pose_kernel(const acm_free_body *bodies, const acm_ib_batch bt,
                                     acm_ib_pose *out)
{
    const int k = (int)threadIdx.x;
    if (k < bt.n)
        out[bt.slot[k]] = acm_ib_pose_of(bodies[bt.slot[k]].body);
}

cudaError_t acm_launch_body_pose(const acm_free_body *bodies, const acm_ib_batch &b,
                                 acm_ib_pose *out, cudaStream_t s)
{
    if (b.n <= 0)
        return cudaSuccess;
    acm_body_pose_kernel<<<1, ACM_IB_BATCH, 0, s>>>(bodies, b, out);
    return cudaGetLastError();
}

/* One thread a body: bodies[i] advanced by one Newton-Euler step with the
 * force and torque ft[6 i .. 6 i + 5] into out[i] (out may be bodies). */
__global__ void acm_body_advance_kernel(const acm_body *bodies, const double *ft, int n,
                                        acm_body *out)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n)
        return;
    acm_body b = bodies[i];
    acm_body_advance_free(&b, ft + 6 * i, ft + 6 * i + 3);
    out[i] = b;
}

cudaError_t acm_launch_body_advance(const acm_body *bodies, const double *ft, int n,
                                    acm_body *out, cudaStream_t s)
{
    if (n <= 0)
        return cudaSuccess;
    acm_body_advance_kernel<<<(unsigned)(n + 63) / 64, 64, 0, s>>>(bodies, ft, n, out);
    return cudaGetLastError();
}

const void *acm_rigid_anchor(void) { return (const void *)acm_body_couple_kernel; }
