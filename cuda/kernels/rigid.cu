/*
 * libacmlbm -- the rigid bodies' host-side arithmetic on the device: the
 * implicit coupling's velocity change of a free body (lib/core/rigid.h), so
 * that the step does not wait for the host between the first interpolation
 * and the coupled forces, and its Newton-Euler step. This unit is compiled with --fmad=false: without
 * contracted multiply-adds every operation rounds as the host's (which is
 * compiled for baseline x86-64, no FMA), and the device's velocity change
 * has the host's bits.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "kernels.cuh"
#include "rigid.h"

/* One thread: the body's coupling sums (4 sums, acm_launch_ib_coupling's
 * layout) to its velocity change, out's first 6 values (dv, dw). */
__global__ void acm_body_couple_kernel(const acm_body b, const acm_gpu_sums *sums,
                                       acm_gpu_sums *out)
{
    acm_coupling c;
    double *v = (double *)&c; /* F, T, k, s, J */
    for (int q = 0; q < 4; ++q) {
        v[4 * q] = sums[q].max_u2;
        v[4 * q + 1] = sums[q].sum_rho;
        v[4 * q + 2] = sums[q].sum_j;
        v[4 * q + 3] = sums[q].sum_pi;
    }
    double *dvdw = (double *)out;
    acm_body_coupled_velocity(&b, &c, dvdw, dvdw + 3);
}

cudaError_t acm_launch_body_couple(const acm_body &b, const acm_gpu_sums *sums,
                                   acm_gpu_sums *out, cudaStream_t s)
{
    acm_body_couple_kernel<<<1, 1, 0, s>>>(b, sums, out);
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
