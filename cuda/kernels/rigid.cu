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

/* One thread: couple() for the body b, or *from where from is not NULL. */
__global__ void acm_body_couple_kernel(const acm_body b, const acm_body *from,
                                       const acm_gpu_sums *sums, acm_gpu_sums *out)
{
    couple(from != NULL ? *from : b, sums, out);
}

cudaError_t acm_launch_body_couple(const acm_body &b, const acm_gpu_sums *sums,
                                   acm_gpu_sums *out, cudaStream_t s)
{
    acm_body_couple_kernel<<<1, 1, 0, s>>>(b, NULL, sums, out);
    return cudaGetLastError();
}

cudaError_t acm_launch_body_couple_at(const acm_body *from, const acm_gpu_sums *sums,
                                      acm_gpu_sums *out, cudaStream_t s)
{
    acm_body b;
    memset(&b, 0, sizeof b);
    acm_body_couple_kernel<<<1, 1, 0, s>>>(b, from, sums, out);
    return cudaGetLastError();
}

/* One thread: acm_launch_body_run (kernels.cuh). */
__global__ void acm_body_run_kernel(acm_free_body *f, const acm_gpu_sums *ft, acm_ib_pose *next,
                                    uint32_t *flags, uint32_t bit, double block, acm_gate gate)
{
    const unsigned long long count = gate.batch != NULL ? *gate.batch : 1ull;
    if (f->failed == 0 && !acm_gate_shut(gate)) {
        double F[3], T[3];
        acm_ib_unpack_ft(ft, F, T);
        acm_body b = f->body;
        f->placed = b; /* the step placed the samples there */
        acm_body_advance_free(&b, F, T);
        const double speed = acm_body_surface_speed(&b);
        if (!(speed < ACM_SOLID_MAX_SPEED)) { /* the pose is kept from before */
            f->failed = count;
            f->speed = speed;
        } else {
            f->body = b;
            if (block > 0.0 &&
                acm_body_displacement(f->sort_x, f->sort_q, b.x, b.q, b.r_max) >= block) {
                for (int a = 0; a < 3; ++a)
                    f->sort_x[a] = b.x[a];
                for (int a = 0; a < 4; ++a)
                    f->sort_q[a] = b.q[a];
                f->sorted = count;
                if (bit != 0) {
                    *flags |= bit; /* one thread a step writes the word: the bodies in turn */
                    f->resorts++;
                }
            }
        }
    }
    *next = acm_ib_pose_of(f->body);
}

cudaError_t acm_launch_body_run(acm_free_body *f, const acm_gpu_sums *ft, acm_ib_pose *next,
                                uint32_t *flags, uint32_t bit, double block,
                                const acm_gate &gate, cudaStream_t s)
{
    acm_body_run_kernel<<<1, 1, 0, s>>>(f, ft, next, flags, bit, block, gate);
    return cudaGetLastError();
}

__global__ void acm_body_pose_kernel(const acm_free_body *f, acm_ib_pose *out)
{
    *out = acm_ib_pose_of(f->body);
}

cudaError_t acm_launch_body_pose(const acm_free_body *f, acm_ib_pose *out, cudaStream_t s)
{
    acm_body_pose_kernel<<<1, 1, 0, s>>>(f, out);
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
