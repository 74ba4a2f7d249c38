/*
 * libacmlbm -- what the GPU benchmarks share: a clock and the device's copy
 * bandwidth, the yardstick every table is given against.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BENCH_GPU_COMMON_H
#define ACMLBM_BENCH_GPU_COMMON_H

#include <stdio.h>  /* fprintf, printf */
#include <stdlib.h> /* exit, getenv */
#include <time.h>   /* clock_gettime */

#include <cuda_runtime.h>

#include <acmlbm/acmlbm.h> /* acm_version_string */

#include "bench_host.h" /* bench_now */

/* Exit status without a usable GPU: 77 ("skipped"), or 1 when
 * ACM_REQUIRE_GPU=1 is set (bench/device-check.sh sets it). */
static inline int bench_no_gpu(const char *program)
{
    const char *require = getenv("ACM_REQUIRE_GPU");
    const int fail = require != NULL && require[0] == '1' && require[1] == '\0';
    printf("%s: %s runs on the GPU and no usable CUDA device was found\n",
           fail ? "FAIL (ACM_REQUIRE_GPU=1)" : "SKIP", program);
    return fail ? 1 : 77;
}

/* Device-to-device copy bandwidth (bytes read + written per second) of two
 * buffers of `bytes`, best of 10 copies after 2 warm-ups. */
static inline double bench_copy_bandwidth(int device, size_t bytes)
{
    void *a = NULL, *b = NULL;
    cudaSetDevice(device);
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
        fprintf(stderr, "copy bandwidth: cannot allocate 2 x %zu bytes\n", bytes);
        exit(1);
    }
    cudaMemset(a, 1, bytes);
    cudaMemset(b, 2, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double best = 0;
    for (int rep = 0; rep < 12; ++rep) {
        cudaEventRecord(e0, 0);
        cudaMemcpyAsync(rep % 2 ? a : b, rep % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep >= 2 && 2.0 * (double)bytes / (ms * 1e-3) > best)
            best = 2.0 * (double)bytes / (ms * 1e-3);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return best;
}

/* Print "device: <name>, libacmlbm <version>, <date>; copy bandwidth <GB/s>"
 * for device 0 and return the bandwidth (bytes per second). */
static inline double bench_banner(void)
{
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    time_t tt = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&tt));
    const double bw = bench_copy_bandwidth(0, (size_t)1 << 30);
    printf("device: %s, libacmlbm %s, %s; copy bandwidth %.0f GB/s\n", prop.name,
           acm_version_string(), date, bw / 1e9);
    return bw;
}

#endif /* ACMLBM_BENCH_GPU_COMMON_H */
