/*
 * libacmlbm tests -- a free body's implicit-coupling velocity change and its
 * Newton-Euler step computed on the GPU (cuda/kernels/rigid.cu) have the
 * host's bits (lib/core/rigid.h acm_body_coupled_velocity,
 * acm_body_advance_free), for random bodies, coupling sums, forces and
 * torques: the CUDA backend computes them on the device so that a step does
 * not wait for the host, and the results stay those of the host. Linked with the library's kernel objects (the launcher is private).
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
cudaError_t acm_launch_body_advance(const struct acm_body *bodies, const double *ft, int n,
                                    struct acm_body *out, cudaStream_t s);

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

/* The velocity changes of CASES random bodies solved on the device against
 * the host's: 0 when every value has the host's bits. */
static int compare_couple(void)
{
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
           differ == 0 ? "pass" : "FAIL", CASES, differ, 6 * CASES, worst, largest);
    cudaFree(dsums);
    cudaFree(dout);
    free(bodies);
    free(sums);
    free(got);
    free(want);
    return differ == 0 ? 0 : 1;
}

/* Turns of the step's mean angular velocity: a realistic body's (|w| r_max
 * below the surface-speed limit, half-angles far below 1/2), up to the
 * series' end (half-angle 1/2) and past it, where the host's and the
 * device's sine and cosine may round apart. */
enum { TURN_SLOW, TURN_FAST, TURN_PAST, TURN_KINDS };

/* Half the angle of the step's mean angular velocity, as the integrator
 * forms it (acm_body_advance_free on a copy, its w before and after). */
static double half_angle(const acm_body *before, const acm_body *after)
{
    double m2 = 0.0;
    for (int a = 0; a < 3; ++a) {
        const double w = 0.5 * (before->w[a] + after->w[a]);
        m2 += w * w;
    }
    return 0.5 * sqrt(m2);
}

/* CASES random free bodies and step forces advanced on the device against the
 * host: every value of the new pose and velocities bitwise where the turn's
 * half-angle is at most 1/2 (the shared series); within 1e-13 of the
 * orientation's scale past it, where the libraries' sine and cosine may differ in
 * the last bit (1.8e-15 on an H100, 2026-12-06). 0 when so. */
static int compare_advance(void)
{
    acm_body *bodies = (acm_body *)calloc(CASES, sizeof *bodies);
    acm_body *want = (acm_body *)calloc(CASES, sizeof *want);
    acm_body *got = (acm_body *)calloc(CASES, sizeof *got);
    double *ft = (double *)calloc(6 * CASES, sizeof *ft);
    int *kind = (int *)calloc(CASES, sizeof *kind);
    acm_body *dbodies = NULL;
    double *dft = NULL;
    if (bodies == NULL || want == NULL || got == NULL || ft == NULL || kind == NULL ||
        cudaMalloc((void **)&dbodies, CASES * sizeof *dbodies) != cudaSuccess ||
        cudaMalloc((void **)&dft, 6 * CASES * sizeof *dft) != cudaSuccess) {
        printf("FAIL: out of memory\n");
        return 1;
    }
    int count[TURN_KINDS] = {0}, differ[TURN_KINDS] = {0};
    double worst_past = 0.0;
    for (int i = 0; i < CASES; ++i) {
        acm_coupling c;
        random_case(&bodies[i], &c);
        const double spin = i % 8 == 0 ? 1.5 : i % 8 == 1 ? 0.4 : 0.01;
        for (int a = 0; a < 3; ++a) {
            bodies[i].w[a] = uniform(-spin, spin);
            ft[6 * i + a] = c.F[a];
            ft[6 * i + 3 + a] = c.T[a];
        }
        want[i] = bodies[i];
        acm_body_advance_free(&want[i], ft + 6 * i, ft + 6 * i + 3);
        const double h = half_angle(&bodies[i], &want[i]);
        kind[i] = h <= 0.5 ? (spin < 0.1 ? TURN_SLOW : TURN_FAST) : TURN_PAST;
        count[kind[i]]++;
    }
    cudaError_t e = cudaMemcpy(dbodies, bodies, CASES * sizeof *dbodies, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMemcpy(dft, ft, 6 * CASES * sizeof *dft, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = acm_launch_body_advance(dbodies, dft, CASES, dbodies, 0);
    if (e == cudaSuccess)
        e = cudaMemcpy(got, dbodies, CASES * sizeof *got, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("FAIL: CUDA error %s\n", cudaGetErrorString(e));
        return 1;
    }
    for (int i = 0; i < CASES; ++i) {
        const double *g = got[i].x, *w = want[i].x; /* x, q, v, w: 13 doubles in a row */
        bool same = true;
        for (int k = 0; k < 13; ++k) {
            same = same && memcmp(&g[k], &w[k], sizeof w[k]) == 0;
            if (kind[i] == TURN_PAST)
                worst_past = fmax(worst_past, fabs(g[k] - w[k]) / fmax(1.0, fabs(w[k])));
        }
        differ[kind[i]] += !same;
    }
    const bool ok = differ[TURN_SLOW] == 0 && differ[TURN_FAST] == 0 && worst_past <= 1e-13;
    printf("%s: %d free bodies advanced one step; bodies whose pose or velocities differ from "
           "the host's in any bit: %d of %d turning slowly (|w| <= 0.017), %d of %d turning by "
           "up to a radian (the shared series), %d of %d turning more (the libraries' sine "
           "and cosine; largest difference %.3g)\n",
           ok ? "pass" : "FAIL", CASES, differ[TURN_SLOW], count[TURN_SLOW], differ[TURN_FAST],
           count[TURN_FAST], differ[TURN_PAST], count[TURN_PAST], worst_past);
    cudaFree(dbodies);
    cudaFree(dft);
    free(bodies);
    free(want);
    free(got);
    free(ft);
    free(kind);
    return ok ? 0 : 1;
}

int main(void)
{
    const char *req = getenv("ACM_REQUIRE_GPU");
    const bool required = req != NULL && strcmp(req, "1") == 0;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("%s: no CUDA device here, so the device's rigid-body arithmetic was not "
               "compared with the host's\n", required ? "FAIL" : "SKIP");
        return required ? 1 : 77;
    }
    const int failed = compare_couple() + compare_advance();
    printf("%s\n", failed == 0 ? "PASS" : "FAIL");
    return failed == 0 ? 0 : 1;
}
