/*
 * libacmlbm -- smoke benchmark: what tracer particles cost. A periodic box
 * with a shear flow; the step time without smoke and with N particles (the
 * difference: particle updates per second), the density projection and the
 * exports (ms per frame). On the default backend (the GPU if there is one).
 * Every line gives ms per step, MLUPS and bytes per cell.
 *
 *   acm-bench-smoke [--size N] [--particles 1000000,4000000] [--steps S] [--out DIR]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <acmlbm/acmlbm.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void check(acm_status st, const char *what, const char *msg)
{
    if (st != ACM_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, acm_status_string(st), msg);
        exit(1);
    }
}

/* Seconds per step over `steps` steps. */
static double per_step(acm_domain *d, int steps)
{
    const double t = now();
    check(acm_step(d, steps), "acm_step", acm_domain_last_error(d));
    return (now() - t) / steps;
}

int main(int argc, char **argv)
{
    int n = 256, steps = 50;
    long counts[8] = {1000000, 4000000};
    int ncounts = 2;
    const char *out = "/tmp";
    for (int i = 1; i < argc; ++i) {
        const char *next = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--size") && ++i)
            n = atoi(next);
        else if (!strcmp(argv[i], "--steps") && ++i)
            steps = atoi(next);
        else if (!strcmp(argv[i], "--out") && ++i)
            out = next;
        else if (!strcmp(argv[i], "--particles") && ++i) {
            ncounts = 0;
            for (const char *p = next; *p && ncounts < 8; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
                counts[ncounts++] = atol(p);
        } else {
            fprintf(stderr, "usage: %s [--size N] [--particles N,...] [--steps S] [--out DIR]\n",
                    argv[0]);
            return 2;
        }
    }
    char err[256] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = n;
    o.viscosity = 1e-3;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    check(acm_domain_create(&d, &o), "acm_domain_create", err);
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    acm_domain_get_info(d, &info);
    const double cells = (double)n * n * n;
    double *u = malloc(3 * (size_t)cells * sizeof(double));
    for (size_t k = 0; k < (size_t)cells; ++k) { /* a shear flow with some swirl */
        const double y = (double)(k / (size_t)n % (size_t)n), z = (double)(k / ((size_t)n * n));
        u[3 * k] = 0.05 * sin(2 * M_PI * y / n);
        u[3 * k + 1] = 0.02 * cos(2 * M_PI * z / n);
        u[3 * k + 2] = 0.0;
    }
    check(acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, (size_t)cells), "init", acm_domain_last_error(d));
    free(u);
    time_t tt = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&tt));
    printf("libacmlbm %s, %s; backend %s, %d^3 FP32, %.1f B/cell\n", acm_version_string(), date,
           info.backend == ACM_BACKEND_CUDA ? "cuda" : "cpu", n, info.bytes_per_cell);
    per_step(d, 3);
    const double base = per_step(d, steps);
    printf("no smoke: %.3f ms/step, %.0f MLUPS\n", 1e3 * base, cells / base / 1e6);
    printf("%10s %10s %10s %12s %11s %11s %11s\n", "particles", "ms/step", "smoke ms", "Mparticle/s",
           "density ms", "ply ms", "vti ms");
    for (int c = 0; c < ncounts; ++c) {
        acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
        so.capacity = (uint64_t)counts[c];
        acm_smoke *s = NULL;
        check(acm_smoke_create(&s, d, &so), "acm_smoke_create", acm_domain_last_error(d));
        acm_emitter e = ACM_EMITTER_INIT;
        e.shape = ACM_EMITTER_BOX;
        e.hi[0] = e.hi[1] = e.hi[2] = n - 1;
        e.rate = (double)counts[c]; /* full after one step */
        check(acm_smoke_add_emitter(s, &e), "acm_smoke_add_emitter", acm_smoke_last_error(s));
        per_step(d, 3);
        const double t = per_step(d, steps), extra = t - base;
        float *rho = malloc((size_t)cells * sizeof(float));
        double t0 = now();
        check(acm_smoke_density(s, 1, rho, (size_t)cells), "density", acm_smoke_last_error(s));
        const double dens = now() - t0;
        free(rho);
        char path[512];
        snprintf(path, sizeof path, "%s/bench-smoke.ply", out);
        t0 = now();
        check(acm_smoke_export(s, path, ACM_PARTICLES_PLY), "ply", acm_smoke_last_error(s));
        const double ply = now() - t0;
        remove(path);
        snprintf(path, sizeof path, "%s/bench-smoke.vti", out);
        t0 = now();
        check(acm_smoke_export_density(s, path, 1), "vti", acm_smoke_last_error(s));
        const double vti = now() - t0;
        remove(path);
        printf("%10ld %10.3f %10.3f %12.1f %11.1f %11.1f %11.1f\n", counts[c], 1e3 * t, 1e3 * extra,
               extra > 0 ? (double)counts[c] / extra / 1e6 : 0.0, 1e3 * dens, 1e3 * ply, 1e3 * vti);
        acm_smoke_destroy(s);
    }
    acm_domain_destroy(d);
    return 0;
}
