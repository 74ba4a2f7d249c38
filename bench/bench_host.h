/*
 * libacmlbm benchmarks -- what every benchmark needs of the host: a clock,
 * the processor's name, and the host's copy bandwidth measured in the same
 * run (acm-bench-cpu, acm-bench-decomp; bench_gpu_common.h takes the clock).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BENCH_HOST_H
#define ACMLBM_BENCH_HOST_H

#include <stdio.h>  /* fopen, fgets, snprintf */
#include <stdlib.h> /* aligned_alloc, free */
#include <string.h> /* memcpy, memset, strchr, strcspn, strncmp */
#include <time.h>   /* clock_gettime */

#ifdef _OPENMP
#  include <omp.h>
#endif /* _OPENMP */

#define BENCH_COPY_REPS 5 /* timed copies of the copy-bandwidth test; the best counts */

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The "model name" of the first processor in /proc/cpuinfo, or "unknown". */
static inline void bench_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (fp == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, fp) != NULL) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || colon == NULL)
            continue;
        colon += colon[1] == ' ' ? 2 : 1;
        snprintf(buf, size, "%.*s", (int)strcspn(colon, "\n"), colon);
        break;
    }
    fclose(fp);
}

/* dst = src (memcpy), or every byte of dst = value when src is NULL (memset),
 * each of n threads taking one contiguous slice: the fill first touches the
 * pages in the same slices that the copy then uses. */
static inline void bench_parallel_bytes(char *dst, const char *src, int value, size_t bytes, int n)
{
#ifdef _OPENMP
#  pragma omp parallel num_threads(n)
    {
        const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        const size_t slice = (bytes / nt + 63) & ~(size_t)63;
        const size_t begin = t * slice < bytes ? t * slice : bytes;
        const size_t end = begin + slice < bytes ? begin + slice : bytes;
        if (src != NULL)
            memcpy(dst + begin, src + begin, end - begin);
        else
            memset(dst + begin, value, end - begin);
    }
#else
    (void)n;
    if (src != NULL)
        memcpy(dst, src, bytes);
    else
        memset(dst, value, bytes);
#endif /* _OPENMP */
}

/* Best host copy bandwidth over n threads in GB/s (bytes read + bytes
 * written), or -1 without the memory. */
static inline double bench_host_copy_bandwidth(size_t bytes, int threads)
{
    bytes = (bytes + 63) & ~(size_t)63; /* aligned_alloc wants a multiple of the alignment */
    char *src = aligned_alloc(64, bytes), *dst = aligned_alloc(64, bytes);
    double best = -1.0;
    if (src != NULL && dst != NULL) {
        bench_parallel_bytes(src, NULL, 1, bytes, threads);
        bench_parallel_bytes(dst, NULL, 0, bytes, threads);
        bench_parallel_bytes(dst, src, 0, bytes, threads); /* untimed: page-table and TLB warm-up */
        for (int r = 0; r < BENCH_COPY_REPS; ++r) {
            const double t0 = bench_now();
            bench_parallel_bytes(dst, src, 0, bytes, threads);
            const double gbs = 2.0 * (double)bytes / (bench_now() - t0) / 1e9;
            best = gbs > best ? gbs : best;
        }
    }
    free(src);
    free(dst);
    return best;
}

#endif /* ACMLBM_BENCH_HOST_H */
