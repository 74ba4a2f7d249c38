/*
 * libacmlbm tests -- a free body's implicit-coupling velocity change solved
 * on the GPU (cuda/kernels/rigid.cu) has the host's bits
 * (lib/core/rigid.h acm_body_coupled_velocity), for random bodies and
 * coupling sums: the CUDA backend solves it on the device so that a step
 * does not wait for the host, and the results stay those of the host's
 * solve. Linked with the library's kernel objects (the launcher is private).
 * Exit 77 (skipped) without a GPU, unless ACM_REQUIRE_GPU=1.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "rigid.h"

/* the kernels' sums (cuda/kernels/cuda_common.cuh): 8 doubles, the first 4 summed */
struct acm_gpu_sums {
    double max_u2, sum_rho, sum_j, sum_pi;
    double inv_umax, inv_mean_rho, inv_mean_j, inv_mean_pi;
};
cudaError_t acm_launch_body_couple(const struct acm_body &b, const acm_gpu_sums *sums,
                                   acm_gpu_sums *out, cudaStream_t s);

enum { CASES = 4000 };

static uint64_t state = 0x2545f4914f6cdd1dULL;
static double uniform(double lo, double hi) /* xorshift64*, deterministic */
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545f4914f6cdd1dULL;
    return lo + (hi - lo) * (double)(r >> 11) * (1.0 / 9007199254740992.0);
}

/* A body of radius R about 1-40 cells with density ratio 1.2-20, any pose, and
 * coupling sums of the sizes its samples give. */
static void random_case(acm_body *b, acm_coupling *c)
{
    memset(b, 0, sizeof *b);
    memset(c, 0, sizeof *c);
    b->motion = ACM_MOTION_FREE;
    const double R = uniform(1.0, 40.0), V = 4.18879 * R * R * R;
    b->volume = V;
    b->mass = V * uniform(1.2, 20.0);
    double q[4], n = 0.0;
    for (int i = 0; i < 4; ++i) {
        q[i] = uniform(-1.0, 1.0);
        n += q[i] * q[i];
    }
    for (int i = 0; i < 4; ++i)
        b->q[i] = q[i] / sqrt(n);
    for (int i = 0; i < 3; ++i) {
        b->x[i] = uniform(0.0, 200.0);
        b->v[i] = uniform(-0.05, 0.05);
        b->w[i] = uniform(-0.01, 0.01);
        b->inertia[i] = 0.4 * b->mass * R * R * uniform(0.5, 2.0);
        b->inertia[3 + i] = 0.05 * b->mass * R * R * uniform(-1.0, 1.0);
        b->gravity[i] = uniform(-1e-4, 1e-4);
        b->load_f[i] = uniform(-1e-2, 1e-2) * V;
        b->load_t[i] = uniform(-1e-2, 1e-2) * V * R;
        c->F[i] = uniform(-1e-3, 1e-3) * V;
        c->T[i] = uniform(-1e-3, 1e-3) * V * R;
        c->s[i] = uniform(-0.1, 0.1) * V * R;
        c->J[i] = uniform(0.5, 1.5) * V * R * R;
        c->J[3 + i] = uniform(-0.1, 0.1) * V * R * R;
    }
    c->k = uniform(0.5, 2.0) * V;
}

int main(void)
{
    const char *req = getenv("ACM_REQUIRE_GPU");
    const bool required = req != NULL && strcmp(req, "1") == 0;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("%s: no CUDA device here, so the device's solve was not compared with the "
               "host's\n", required ? "FAIL" : "SKIP");
        return required ? 1 : 77;
    }
    acm_body *bodies = (acm_body *)calloc(CASES, sizeof *bodies);
    acm_gpu_sums *sums = (acm_gpu_sums *)calloc(4 * CASES, sizeof *sums);
    acm_gpu_sums *got = (acm_gpu_sums *)calloc(CASES, sizeof *got);
    double *want = (double *)calloc(6 * CASES, sizeof *want);
    acm_gpu_sums *dsums = NULL, *dout = NULL;
    if (bodies == NULL || sums == NULL || got == NULL || want == NULL ||
        cudaMalloc((void **)&dsums, 4 * CASES * sizeof *dsums) != cudaSuccess ||
        cudaMalloc((void **)&dout, CASES * sizeof *dout) != cudaSuccess) {
        printf("FAIL: out of memory\n");
        return 1;
    }
    for (int i = 0; i < CASES; ++i) {
        acm_coupling c;
        random_case(&bodies[i], &c);
        const double *v = (const double *)&c; /* acm_launch_ib_coupling's layout */
        for (int q = 0; q < 4; ++q) {
            sums[4 * i + q].max_u2 = v[4 * q];
            sums[4 * i + q].sum_rho = v[4 * q + 1];
            sums[4 * i + q].sum_j = v[4 * q + 2];
            sums[4 * i + q].sum_pi = v[4 * q + 3];
        }
        acm_body_coupled_velocity(&bodies[i], &c, want + 6 * i, want + 6 * i + 3);
    }
    cudaError_t e = cudaMemcpy(dsums, sums, 4 * CASES * sizeof *dsums, cudaMemcpyHostToDevice);
    for (int i = 0; i < CASES && e == cudaSuccess; ++i)
        e = acm_launch_body_couple(bodies[i], dsums + 4 * i, dout + i, 0);
    if (e == cudaSuccess)
        e = cudaMemcpy(got, dout, CASES * sizeof *dout, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("FAIL: CUDA error %s\n", cudaGetErrorString(e));
        return 1;
    }
    int differ = 0;
    double worst = 0.0, largest = 0.0;
    for (int i = 0; i < CASES; ++i) {
        const double *g = (const double *)&got[i];
        for (int k = 0; k < 6; ++k) {
            const double w = want[6 * i + k];
            if (memcmp(&g[k], &w, sizeof w) != 0) {
                ++differ;
                const double r = fabs(g[k] - w) / fabs(w);
                worst = r > worst ? r : worst;
            }
            largest = fabs(w) > largest ? fabs(w) : largest;
        }
    }
    printf("%s: %d bodies, %d of %d velocity-change values differ from the host's "
           "(largest relative difference %.3g; largest |value| %.3g)\n",
           differ == 0 ? "PASS" : "FAIL", CASES, differ, 6 * CASES, worst, largest);
    cudaFree(dsums);
    cudaFree(dout);
    free(bodies);
    free(sums);
    free(got);
    free(want);
    return differ == 0 ? 0 : 1;
}
