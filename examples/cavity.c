/*
 * libacmlbm example -- the 3-D lid-driven cavity.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A cube of N^3 cells with no-slip walls on all six faces; the y-max face is
 * a lid sliding with velocity (U, 0, 0). The half-way bounce-back walls lie
 * half a cell outside the grid, so the cavity is exactly N cells wide and
 * Re = U N / nu. The program prints its progress, then writes
 *   PREFIX.vti  velocity and density of every cell (open it in ParaView);
 *   PREFIX.png  a figure of the mid-plane z = N/2: the speed |u|/U in colour,
 *               streamlines of the in-plane velocity, axes, colour bar, title;
 * and, for --re 1000, compares the vertical centreline profile u_x(y) with
 * the spectral solution of Albensoeder & Kuhlmann (2005).
 *
 *   cavity [--size N] [--steps S] [--re RE] [--lid U] [--out PREFIX]
 *          [--backend auto|cpu|cuda] [--model acm|cm|bgk|rm|acm-li2020]
 *
 * Progress columns (explained by the program itself, see print_legend):
 * step, total kinetic energy sum rho |u|^2 / 2, the largest speed over U,
 * the cell updates the ACM safety net has redone so far (always 0 for the
 * other models) and the throughput in MLUPS (million cell updates per
 * second).
 */
#include <errno.h>  /* errno */
#include <math.h>   /* sqrt, isfinite */
#include <stdio.h>  /* printf, fprintf, snprintf */
#include <stdlib.h> /* strtoll, strtod, malloc, free */
#include <string.h> /* strcmp, strerror, memset */
#include <time.h>   /* clock_gettime */

#include <acmlbm/acmlbm.h>

#include "cavity_reference.h"
#include "figure.h"
#include "vti_writer.h"

/* ---- command line --------------------------------------------------------- */

typedef struct cavity_args {
    int32_t size;        /* N: cells along each edge */
    int64_t steps;       /* time steps to run */
    double re;           /* Reynolds number U N / nu */
    double lid;          /* lid speed U (lattice units) */
    const char *out;     /* output prefix */
    acm_backend backend;
    acm_collision model;
} cavity_args;

/* Defaults: about 4.4e8 cell updates: 14-16 s measured on two CPU cores
 * (30-45 MLUPS, 0.5 s of it the output), 40 s while another build shared
 * them; 4000 steps are 6.7 lid travel times N/U, enough for the primary
 * vortex and the lower corner eddy. */
static const cavity_args cavity_defaults = {
    48, 4000, 400.0, 0.08, "cavity", ACM_BACKEND_AUTO, ACM_COLLISION_ACM_LI2018,
};

typedef struct named_value {
    const char *name;
    int value;
} named_value;

static const named_value backend_names[] = {
    {"auto", ACM_BACKEND_AUTO},
    {"cpu", ACM_BACKEND_CPU},
    {"cuda", ACM_BACKEND_CUDA},
};

static const named_value model_names[] = {
    {"acm", ACM_COLLISION_ACM_LI2018},
    {"cm", ACM_COLLISION_CM_MRT},
    {"bgk", ACM_COLLISION_BGK},
    {"rm", ACM_COLLISION_RM_MRT},
    {"acm-li2020", ACM_COLLISION_ACM_LI2020},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *fp)
{
    fprintf(fp, "usage: cavity [--size N] [--steps S] [--re RE] [--lid U] [--out PREFIX]\n"
                "              [--backend auto|cpu|cuda] [--model acm|cm|bgk|rm|acm-li2020]\n"
                "defaults: --size %d --steps %lld --re %g --lid %g --out %s --backend auto "
                "--model acm\n",
            (int)cavity_defaults.size, (long long)cavity_defaults.steps, cavity_defaults.re,
            cavity_defaults.lid, cavity_defaults.out);
}

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_positive(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0.0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_name(const char *s, const named_value *table, size_t n, int *out)
{
    for (size_t k = 0; k < n; ++k)
        if (strcmp(s, table[k].name) == 0) {
            *out = table[k].value;
            return 0;
        }
    return -1;
}

/* Apply one "--key value" pair; returns 0, or -1 for a bad key or value. */
static int apply_option(cavity_args *a, const char *key, const char *val)
{
    long long n = 0;
    int e = 0;
    if (strcmp(key, "--size") == 0 && parse_long(val, 3, 4096, &n) == 0)
        a->size = (int32_t)n;
    else if (strcmp(key, "--steps") == 0 && parse_long(val, 0, INT64_MAX, &n) == 0)
        a->steps = n;
    else if (strcmp(key, "--re") == 0 && parse_positive(val, &a->re) == 0)
        ;
    else if (strcmp(key, "--lid") == 0 && parse_positive(val, &a->lid) == 0)
        ;
    else if (strcmp(key, "--out") == 0 && val[0] != '\0')
        a->out = val;
    else if (strcmp(key, "--backend") == 0 &&
             parse_name(val, backend_names, COUNT_OF(backend_names), &e) == 0)
        a->backend = (acm_backend)e;
    else if (strcmp(key, "--model") == 0 &&
             parse_name(val, model_names, COUNT_OF(model_names), &e) == 0)
        a->model = (acm_collision)e;
    else
        return -1;
    return 0;
}

/* Returns 0 to run, 1 after --help, -1 on a usage error. */
static int parse_args(int argc, char **argv, cavity_args *a)
{
    *a = cavity_defaults;
    for (int k = 1; k < argc; k += 2) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (k + 1 >= argc || apply_option(a, argv[k], argv[k + 1]) != 0) {
            fprintf(stderr, "cavity: bad option or value: %s %s\n", argv[k],
                    k + 1 < argc ? argv[k + 1] : "(missing)");
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* ---- library calls ---------------------------------------------------------- */

/* Print a failed call with the library's status text and the domain's
 * message; returns nonzero on failure. */
static int failed(const acm_domain *d, acm_status st, const char *call)
{
    if (st == ACM_OK)
        return 0;
    fprintf(stderr, "cavity: %s failed: %s: %s\n", call, acm_status_string(st),
            acm_domain_last_error(d));
    return 1;
}

#define CAVITY_TRY(d, call)                                                                \
    do {                                                                                   \
        if (failed((d), (call), #call))                                                    \
            return -1;                                                                     \
    } while (0)

static acm_domain *create_domain(const cavity_args *a)
{
    char err[512] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = a->size;
    o.viscosity = a->lid * a->size / a->re;
    o.collision = a->model;
    o.backend = a->backend;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &o);
    if (st != ACM_OK) {
        fprintf(stderr, "cavity: acm_domain_create failed: %s: %s\n", acm_status_string(st), err);
        return NULL;
    }
    return d;
}

/* Six resting walls, then the y-max face as the moving lid. */
static int set_walls(acm_domain *d, double lid)
{
    const double lid_velocity[3] = {lid, 0.0, 0.0};
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        CAVITY_TRY(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL, NULL));
    CAVITY_TRY(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid_velocity));
    return 0;
}

static const char *name_of(const named_value *table, size_t n, int value)
{
    for (size_t k = 0; k < n; ++k)
        if (table[k].value == value)
            return table[k].name;
    return "?";
}

static int print_setup(acm_domain *d, const cavity_args *a)
{
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    CAVITY_TRY(d, acm_domain_get_info(d, &info));
    printf("lid-driven cavity %d^3, Re = %g, lid U = %g (Mach %.3f), nu = %.6g, tau = %.5f\n",
           (int)a->size, a->re, a->lid, a->lid * sqrt(3.0), info.viscosity, info.tau);
    printf("backend %s, model %s, %s, %lld steps (%.2f lid travel times N/U)\n",
           name_of(backend_names, COUNT_OF(backend_names), info.backend),
           name_of(model_names, COUNT_OF(model_names), info.collision),
           info.precision == ACM_PRECISION_FP64 ? "FP64" : "FP32", (long long)a->steps,
           (double)a->steps * a->lid / a->size);
    return 0;
}

/* ---- time stepping ------------------------------------------------------------ */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int print_progress(acm_domain *d, const cavity_args *a, double mlups,
                          acm_domain_stats *s)
{
    memset(s, 0, sizeof *s);
    s->version = ACM_DOMAIN_STATS_VERSION;
    CAVITY_TRY(d, acm_domain_get_stats(d, s));
    printf("%8lld  %14.6e  %9.4f  %9lld  %8.1f\n", (long long)s->step, s->kinetic_energy,
           s->max_speed / a->lid, (long long)s->fallback_cells_total, mlups);
    fflush(stdout);
    return 0;
}

/* In a resolved cavity flow no fluid moves faster than the lid. */
static void warn_if_implausible(const cavity_args *a, const acm_domain_stats *s)
{
    if (s->max_speed > 1.05 * a->lid)
        printf("warning: the fastest cell moves at %.2f U: the flow is under-resolved or "
               "unstable at this Re; try a larger --size or --model cm\n",
               s->max_speed / a->lid);
}

/* What the progress columns mean, printed once above them. The fallbacks
 * are acm_domain_stats.fallback_cells_total: each cell in each step whose
 * ACM collision produced a negative population and was redone by the safety
 * net with the central-moment MRT rates (every high-order rate 1). */
static void print_legend(void)
{
    printf("\ncolumns:\n"
           "  step            time steps done so far\n"
           "  kinetic energy  sum over all cells of rho |u|^2 / 2 (lattice units)\n"
           "  max|u|/U        the largest speed in the cavity over the lid speed U\n"
           "  fallbacks       cell updates (one cell in one step) since the start that the ACM\n"
           "                  safety net redid: the adaptive collision left a negative\n"
           "                  population, so the cell was collided again as plain CM-MRT\n"
           "                  (every high-order rate 1); always 0 for --model cm, bgk, rm\n"
           "  MLUPS           million cell updates per second over the last chunk of steps\n\n");
}

/* Run all steps in about ten chunks, printing after each. */
static int run(acm_domain *d, const cavity_args *a, double *seconds)
{
    const double cells = (double)a->size * a->size * a->size;
    const int64_t chunk = a->steps >= 10 ? a->steps / 10 : 1;
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    print_legend();
    printf("%8s  %14s  %9s  %9s  %8s\n", "step", "kinetic energy", "max|u|/U", "fallbacks",
           "MLUPS");
    *seconds = 0.0;
    for (int64_t done = 0; done < a->steps;) {
        const int64_t n = a->steps - done < chunk ? a->steps - done : chunk;
        const double t0 = now_seconds();
        CAVITY_TRY(d, acm_step(d, n));
        const double dt = now_seconds() - t0;
        *seconds += dt;
        done += n;
        if (print_progress(d, a, cells * (double)n / dt / 1e6, &s) != 0)
            return -1;
    }
    warn_if_implausible(a, &s);
    return 0;
}

/* ---- fields and output ------------------------------------------------------- */

typedef struct cavity_fields {
    int32_t n;         /* cells per edge */
    float *velocity;   /* 3 per cell, x fastest */
    float *density;    /* 1 per cell */
} cavity_fields;

static void fields_free(cavity_fields *f)
{
    free(f->velocity);
    free(f->density);
    f->velocity = f->density = NULL;
}

static int read_field(acm_domain *d, acm_field field, float **out)
{
    size_t bytes = 0;
    CAVITY_TRY(d, acm_domain_field_size(d, field, ACM_DTYPE_FLOAT32, &bytes));
    if ((*out = malloc(bytes)) == NULL) {
        fprintf(stderr, "cavity: out of memory for a field of %zu bytes\n", bytes);
        return -1;
    }
    CAVITY_TRY(d, acm_domain_get_field(d, field, ACM_DTYPE_FLOAT32, *out, bytes));
    return 0;
}

static int read_fields(acm_domain *d, int32_t n, cavity_fields *f)
{
    f->n = n;
    if (read_field(d, ACM_FIELD_VELOCITY, &f->velocity) != 0 ||
        read_field(d, ACM_FIELD_DENSITY, &f->density) != 0)
        return -1;
    return 0;
}

static int make_path(char *buf, size_t size, const char *prefix, const char *ext)
{
    int len = snprintf(buf, size, "%s%s", prefix, ext);
    if (len < 0 || (size_t)len >= size) {
        fprintf(stderr, "cavity: output prefix too long: %s\n", prefix);
        return -1;
    }
    return 0;
}

/* Cell centres sit at integer positions + 1/2 with the walls at 0 and N. */
static int write_vti(const cavity_args *a, const cavity_fields *f)
{
    char path[4096];
    if (make_path(path, sizeof path, a->out, ".vti") != 0)
        return -1;
    const vti_grid grid = {{f->n, f->n, f->n}, {0.5, 0.5, 0.5}, {1.0, 1.0, 1.0}};
    const vti_field fields[] = {{"velocity", 3, f->velocity}, {"density", 1, f->density}};
    if (vti_write(path, &grid, fields, COUNT_OF(fields)) != 0) {
        fprintf(stderr, "cavity: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    printf("wrote %s: velocity (3 components) and density of all %d^3 cells, for ParaView\n",
           path, (int)f->n);
    return 0;
}

static size_t cell_index(int32_t n, int32_t x, int32_t y, int32_t z)
{
    return (size_t)x + (size_t)n * ((size_t)y + (size_t)n * (size_t)z);
}

/* Velocity component c at (x, y) on the plane z = N/2: the mean of planes
 * (N-1)/2 and N/2, which are the same plane for odd N. */
static double midplane_u(const cavity_fields *f, int32_t x, int32_t y, int c)
{
    const int32_t lo = (f->n - 1) / 2, hi = f->n / 2;
    return 0.5 * (f->velocity[3 * cell_index(f->n, x, y, lo) + (size_t)c] +
                  f->velocity[3 * cell_index(f->n, x, y, hi) + (size_t)c]);
}

/* The mid-plane over U: speed, u_x and u_y, n x n each, row 0 at the bottom. */
typedef struct midplane {
    float *speed, *ux, *uy;
} midplane;

static int midplane_read(const cavity_fields *f, double lid, midplane *m)
{
    const size_t nn = (size_t)f->n * (size_t)f->n;
    if ((m->speed = malloc(3 * nn * sizeof *m->speed)) == NULL) {
        fprintf(stderr, "cavity: out of memory for the mid-plane slice\n");
        return -1;
    }
    m->ux = m->speed + nn;
    m->uy = m->speed + 2 * nn;
    for (int32_t y = 0; y < f->n; ++y)
        for (int32_t x = 0; x < f->n; ++x) {
            const double ux = midplane_u(f, x, y, 0) / lid, uy = midplane_u(f, x, y, 1) / lid,
                         uz = midplane_u(f, x, y, 2) / lid;
            const size_t k = (size_t)y * (size_t)f->n + (size_t)x;
            m->speed[k] = (float)sqrt(ux * ux + uy * uy + uz * uz);
            m->ux[k] = (float)ux;
            m->uy[k] = (float)uy;
        }
    return 0;
}

static int write_png(const cavity_args *a, const cavity_fields *f)
{
    char path[4096], err[512], title0[128], title1[128];
    midplane m;
    if (make_path(path, sizeof path, a->out, ".png") != 0 || midplane_read(f, a->lid, &m) != 0)
        return -1;
    snprintf(title0, sizeof title0, "Lid-driven cavity, Re = %g, %d^3 cells", a->re, (int)f->n);
    snprintf(title1, sizeof title1, "|u|/U on the mid-plane z = N/2, step %lld",
             (long long)a->steps);
    const uint32_t n = (uint32_t)f->n;
    const fig_slice_spec spec = {
        .title = {title0, title1},
        .x_label = "x/N",
        .y_label = "y/N",
        .bar_label = "|u|/U",
        .top_label = "lid, moving at U",
        .caption = {"colour: the speed |u| over the lid speed U (dimensionless)",
                    "white lines: streamlines of the in-plane velocity (u_x, u_y)"},
        .scalar = {n, n, m.speed},
        .vx = {n, n, m.ux},
        .vy = {n, n, m.uy},
        .vmin = 0.0,
        .vmax = 1.0,
        .x_extent = 1.0,
        .y_extent = 1.0,
        .plot_px = 600,
    };
    uint32_t w = 0, h = 0;
    int rc = fig_write_slice(path, &spec, &w, &h, err, sizeof err);
    free(m.speed);
    if (rc != 0) {
        fprintf(stderr, "cavity: %s\n", err);
        return -1;
    }
    printf("wrote %s (%u x %u pixels): the plane z = N/2, x to the right, y up, the lid at\n"
           "  the top moving right; colour: the speed |u|/U from 0 to 1 (viridis); white\n"
           "  lines with arrowheads: streamlines of the in-plane velocity (u_x, u_y)\n",
           path, (unsigned)w, (unsigned)h);
    return 0;
}

/* ---- Re = 1000 centreline comparison ------------------------------------------- */

/* u_x / U at the N cell rows of the vertical centreline x = z = N/2: the mean
 * of the cells around it (four cells for even N, one for odd N). */
static int centreline_rows(const cavity_fields *f, double lid, double **rows)
{
    const int32_t c[2] = {(f->n - 1) / 2, f->n / 2};
    *rows = malloc((size_t)f->n * sizeof **rows);
    if (*rows == NULL) {
        fprintf(stderr, "cavity: cannot allocate the centreline\n");
        return -1;
    }
    for (int32_t y = 0; y < f->n; ++y) {
        double sum = 0.0;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                sum += f->velocity[3 * cell_index(f->n, c[a], y, c[b])];
        (*rows)[y] = sum / 4.0 / lid;
    }
    return 0;
}

/* The vertical centreline against Albensoeder & Kuhlmann (2005), the table of
 * cavity_reference.h (shared with the validation test). */
static int compare_centreline(const cavity_args *a, const cavity_fields *f)
{
    double *rows = NULL;
    if (centreline_rows(f, a->lid, &rows) != 0)
        return -1;
    printf("\nvertical centreline x = z = N/2, Re = 1000\n");
    printf("%8s  %12s  %12s  %10s\n", "y/N", "u/U (A&K)", "u/U (here)", "diff");
    for (size_t k = 0; k < AK2005_POINTS; ++k) {
        const double y = ak2005_re1000[k][0], ref = ak2005_re1000[k][1];
        const double u = ak2005_profile_at(rows, f->n, y) + 0.0; /* + 0.0: print -0 as 0 */
        printf("%8.4f  %12.5f  %12.5f  %10.5f\n", y, ref, u, u - ref);
    }
    printf("rms difference %.4f after %.1f lid travel times N/U (the reference is the "
           "steady state)\n",
           ak2005_rms(rows, f->n), (double)a->steps * a->lid / a->size);
    free(rows);
    return 0;
}

static int write_outputs(acm_domain *d, const cavity_args *a)
{
    cavity_fields f = {0, NULL, NULL};
    int rc = read_fields(d, a->size, &f);
    if (rc == 0)
        rc = write_vti(a, &f);
    if (rc == 0)
        rc = write_png(a, &f);
    if (rc == 0 && a->re == 1000.0)
        rc = compare_centreline(a, &f);
    fields_free(&f);
    return rc;
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    cavity_args args;
    int parsed = parse_args(argc, argv, &args);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;
    acm_domain *d = create_domain(&args);
    if (d == NULL)
        return 1;
    double seconds = 0.0;
    int rc = set_walls(d, args.lid);
    if (rc == 0)
        rc = print_setup(d, &args);
    if (rc == 0)
        rc = run(d, &args, &seconds);
    if (rc == 0) {
        printf("%lld steps in %.2f s: %.1f MLUPS\n", (long long)args.steps, seconds,
               seconds > 0.0 ? (double)args.size * args.size * args.size * (double)args.steps /
                                   seconds / 1e6
                             : 0.0);
        rc = write_outputs(d, &args);
    }
    acm_domain_destroy(d);
    return rc == 0 ? 0 : 1;
}
