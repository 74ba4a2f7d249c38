/*
 * libacmlbm benchmark -- Poisson-disk surface sampling (lib/ib/sampling.c):
 * samples per second on an icosphere and on the trefoil tube of
 * examples/shapes.c, one thread (the sampler is serial).
 *
 *   acm-bench-sampling [--sizes N[,N...]] [--seed S] [--reference]
 *
 * Default sizes 50 000, 500 000 and 2 000 000 samples. --reference also times
 * the heap-only elimination (same samples, bit for bit). Prints wall and CPU
 * seconds (they differ when the machine is shared), samples per CPU second,
 * min_distance / radius and the peak resident memory of the process.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>        /* printf, fprintf */
#include <stdlib.h>       /* strtod, strtoull, EXIT_* */
#include <string.h>       /* strcmp, strchr */
#include <sys/resource.h> /* getrusage */
#include <time.h>         /* clock_gettime */

#include "sampling.h"
#include "shapes.h"

#define BENCH_MAX_SIZES 16
/* the sphere of the performance goal: area 62 500 (radius 70.52) */
#define SPHERE_RADIUS 70.523
#define SPHERE_SUBDIVISIONS 6 /* 81 920 triangles */
#define TREFOIL_RINGS 1200
#define TREFOIL_RING_VERTICES 48 /* 115 200 triangles */

typedef acm_status (*sampler_fn)(const double *, const uint32_t *, size_t, double, uint64_t,
                                 uint64_t, acm_surface_samples *, char *, size_t);

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_mib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; /* kB on Linux */
}

/* Sample one mesh at one count; 0 on success. */
static int run(const char *name, const shapes_mesh *m, double count, uint64_t seed,
               sampler_fn fn, const char *method)
{
    double density = count / shapes_area(m);
    acm_surface_samples s;
    char msg[256] = "";
    double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    acm_status st = fn(m->v, m->t, m->nt, density, seed, UINT64_MAX, &s, msg, sizeof msg);
    double wall = seconds(CLOCK_MONOTONIC) - w0, cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (st != ACM_OK) {
        fprintf(stderr, "%s, %.0f samples: %s: %s\n", name, count, acm_status_string(st), msg);
        return -1;
    }
    printf("%-8s %-9s %9zu %8.2f %8.2f %12.0f %10.4f %9.0f\n", name, method, s.count, wall, cpu,
           (double)s.count / cpu, s.min_distance / s.radius, peak_mib());
    fflush(stdout);
    acm__surface_samples_free(&s);
    return 0;
}

static int parse_sizes(const char *arg, double *sizes, int *n)
{
    *n = 0;
    while (*arg != '\0' && *n < BENCH_MAX_SIZES) {
        char *end;
        double x = strtod(arg, &end);
        if (end == arg || !(x >= 1.0))
            return -1;
        sizes[(*n)++] = x;
        arg = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return *n > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    double sizes[BENCH_MAX_SIZES] = {5e4, 5e5, 2e6};
    int nsizes = 3;
    uint64_t seed = 1;
    int reference = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            if (parse_sizes(argv[++i], sizes, &nsizes) != 0) {
                fprintf(stderr, "bad --sizes %s\n", argv[i]);
                return EXIT_FAILURE;
            }
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--reference") == 0) {
            reference = 1;
        } else {
            fprintf(stderr, "usage: %s [--sizes N[,N...]] [--seed S] [--reference]\n", argv[0]);
            return EXIT_FAILURE;
        }
    }
    shapes_mesh mesh[2];
    const char *names[2] = {"sphere", "trefoil"};
    if (shapes_sphere(&mesh[0], SPHERE_SUBDIVISIONS, SPHERE_RADIUS) != 0 ||
        shapes_trefoil(&mesh[1], TREFOIL_RINGS, TREFOIL_RING_VERTICES) != 0) {
        fprintf(stderr, "out of memory\n");
        return EXIT_FAILURE;
    }
    for (int k = 0; k < 2; ++k)
        printf("# %s: %zu triangles, area %.6g\n", names[k], mesh[k].nt, shapes_area(&mesh[k]));
    printf("%-8s %-9s %9s %8s %8s %12s %10s %9s\n", "# mesh", "method", "samples", "wall_s",
           "cpu_s", "samples/s", "min/radius", "peak_MiB");
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; ++k)
        for (int i = 0; i < nsizes && rc == 0; ++i) {
            rc = run(names[k], &mesh[k], sizes[i], seed, acm__sample_surface, "bands");
            if (rc == 0 && reference)
                rc = run(names[k], &mesh[k], sizes[i], seed, acm__sample_surface_reference,
                         "heap");
        }
    shapes_free(&mesh[0]);
    shapes_free(&mesh[1]);
    return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
