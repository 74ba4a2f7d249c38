/*
 * libacmlbm examples -- helpers of the immersed-solid examples (see solid_common.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "solid_common.h"

#include <errno.h>  /* errno */
#include <math.h>   /* sqrt, floor, ceil, isfinite, cos, sin */
#include <stdlib.h> /* strtoll, strtod, malloc, calloc, free, getenv */
#include <string.h> /* strcmp, strerror, memset */
#include <time.h>   /* clock_gettime */

#include "png_writer.h"
#include "vti_writer.h"

const sc_choice sc_backends[3] = {
    {"auto", ACM_BACKEND_AUTO}, {"cpu", ACM_BACKEND_CPU}, {"cuda", ACM_BACKEND_CUDA}};
const sc_choice sc_models[5] = {
    {"acm", ACM_COLLISION_ACM_LI2018}, {"cm", ACM_COLLISION_CM_MRT}, {"bgk", ACM_COLLISION_BGK},
    {"rm", ACM_COLLISION_RM_MRT},      {"acm-li2020", ACM_COLLISION_ACM_LI2020}};
const sc_choice sc_precisions[2] = {{"fp32", ACM_PRECISION_FP32}, {"fp64", ACM_PRECISION_FP64}};

/* ---- command line ---------------------------------------------------------------------- */

static void usage(FILE *fp, const char *prog, const char *synopsis, const sc_option *o, size_t n)
{
    fprintf(fp, "usage: %s %s\n", prog, synopsis);
    for (size_t k = 0; k < n; ++k) {
        char left[64];
        snprintf(left, sizeof left, "%s %s", o[k].name, o[k].meta);
        fprintf(fp, "  %-22s %s\n", left, o[k].help);
    }
    fprintf(fp, "  %-22s %s\n", "--help", "print this and exit");
}

static void print_choices(FILE *fp, const sc_choice *c, size_t n)
{
    for (size_t k = 0; k < n; ++k)
        fprintf(fp, "%s%s", k ? "|" : "", c[k].name);
}

/* Check one value against its option; 0, or -1 after a message. */
static int apply(const char *prog, const sc_option *o, const char *val)
{
    char *end = NULL;
    errno = 0;
    if (o->kind == SC_INT) {
        long long v = strtoll(val, &end, 10);
        if (errno != 0 || end == val || *end != '\0' || v < o->lo || v > o->hi) {
            fprintf(stderr, "%s: %s '%s': expected an integer in [%.0f, %.0f]\n", prog, o->name,
                    val, o->lo, o->hi);
            return -1;
        }
        *(int64_t *)o->target = v;
    } else if (o->kind == SC_REAL) {
        double v = strtod(val, &end);
        if (errno != 0 || end == val || *end != '\0' || !isfinite(v) || v > o->hi ||
            (o->open_lo ? !(v > o->lo) : !(v >= o->lo))) {
            fprintf(stderr, "%s: %s '%s': expected a number in %c%g, %g]\n", prog, o->name, val,
                    o->open_lo ? '(' : '[', o->lo, o->hi);
            return -1;
        }
        *(double *)o->target = v;
    } else if (o->kind == SC_TEXT) {
        if (val[0] == '\0') {
            fprintf(stderr, "%s: %s: the value is empty\n", prog, o->name);
            return -1;
        }
        *(const char **)o->target = val;
    } else if (o->kind == SC_CHOICE) {
        for (size_t k = 0; k < o->nchoices; ++k)
            if (strcmp(val, o->choices[k].name) == 0) {
                *(int *)o->target = o->choices[k].value;
                return 0;
            }
        fprintf(stderr, "%s: %s '%s': expected one of ", prog, o->name, val);
        print_choices(stderr, o->choices, o->nchoices);
        fprintf(stderr, "\n");
        return -1;
    } else { /* SC_SIZE3 */
        int32_t n[3];
        const char *p = val;
        for (int a = 0; a < 3; ++a) {
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (errno != 0 || end == p || v < o->lo || v > o->hi || *end != (a < 2 ? 'x' : '\0')) {
                fprintf(stderr, "%s: %s '%s': expected NXxNYxNZ, each in [%.0f, %.0f]\n", prog,
                        o->name, val, o->lo, o->hi);
                return -1;
            }
            n[a] = (int32_t)v;
            p = end + 1;
        }
        memcpy(o->target, n, sizeof n);
    }
    return 0;
}

int sc_parse_args(const char *prog, const char *synopsis, int argc, char **argv,
                  const sc_option *opts, size_t nopts, const char **positional)
{
    int have_positional = 0;
    for (int k = 1; k < argc; ++k) {
        const char *arg = argv[k];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout, prog, synopsis, opts, nopts);
            return 1;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            if (positional == NULL || have_positional) {
                fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, arg);
                return 2;
            }
            *positional = arg;
            have_positional = 1;
            continue;
        }
        const sc_option *o = NULL;
        for (size_t j = 0; j < nopts && o == NULL; ++j)
            if (strcmp(arg, opts[j].name) == 0)
                o = &opts[j];
        if (o == NULL) {
            fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, arg);
            return 2;
        }
        if (k + 1 >= argc) {
            fprintf(stderr, "%s: option %s needs a value %s\n", prog, arg, o->meta);
            return 2;
        }
        if (apply(prog, o, argv[++k]) != 0)
            return 2;
    }
    if (positional != NULL && !have_positional) {
        fprintf(stderr, "%s: missing argument\n", prog);
        usage(stderr, prog, synopsis, opts, nopts);
        return 2;
    }
    return 0;
}

const char *sc_name_of(const sc_choice *table, size_t n, int value)
{
    for (size_t k = 0; k < n; ++k)
        if (table[k].value == value)
            return table[k].name;
    return "?";
}

int sc_runs_on_gpu(acm_backend backend)
{
    if (backend != ACM_BACKEND_AUTO)
        return backend == ACM_BACKEND_CUDA;
    const char *env = getenv("ACMLBM_BACKEND"); /* overrides AUTO in the library too */
    if (env != NULL && strcmp(env, "cpu") == 0)
        return 0;
    return acm_backend_available(ACM_BACKEND_CUDA);
}

/* ---- library calls ----------------------------------------------------------------------- */

int sc_failed(const char *prog, acm_status st, const char *what, const char *message)
{
    if (st == ACM_OK)
        return 0;
    fprintf(stderr, "%s: %s failed: %s: %s\n", prog, what, acm_status_string(st),
            message != NULL ? message : "");
    return 1;
}

acm_domain *sc_domain_create(const char *prog, acm_domain_options *opts)
{
    char err[512] = "";
    opts->error_buffer = err;
    opts->error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, opts);
    opts->error_buffer = NULL;
    opts->error_buffer_size = 0;
    return sc_failed(prog, st, "acm_domain_create", err) ? NULL : d;
}

/* The domain's info; -1 (with a message) on failure. */
static int domain_info(const char *prog, acm_domain *d, acm_domain_info *info)
{
    memset(info, 0, sizeof *info);
    info->version = ACM_DOMAIN_INFO_VERSION;
    acm_status st = acm_domain_get_info(d, info);
    return sc_failed(prog, st, "acm_domain_get_info", acm_domain_last_error(d)) ? -1 : 0;
}

int sc_print_domain(const char *prog, acm_domain *d)
{
    acm_domain_info info;
    if (domain_info(prog, d, &info) != 0)
        return -1;
    printf("grid %dx%dx%d cells (%.2f million), backend %s, model %s, %s, nu = %.4g, tau = "
           "%.5f\n",
           (int)info.nx, (int)info.ny, (int)info.nz,
           (double)info.nx * info.ny * info.nz / 1e6,
           sc_name_of(sc_backends, SC_COUNT_OF(sc_backends), info.backend),
           sc_name_of(sc_models, SC_COUNT_OF(sc_models), info.collision),
           info.precision == ACM_PRECISION_FP64 ? "FP64" : "FP32", info.viscosity, info.tau);
    return 0;
}

int sc_step(const char *prog, acm_domain *d, int64_t n, double *seconds)
{
    const double t0 = sc_now();
    acm_status st = acm_step(d, n);
    *seconds += sc_now() - t0;
    if (st == ACM_ERR_DIVERGED) {
        fprintf(stderr, "%s: the simulation diverged: %s\n", prog, acm_domain_last_error(d));
        return -1;
    }
    return sc_failed(prog, st, "acm_step", acm_domain_last_error(d)) ? -1 : 0;
}

/* One line per measured candidate, on the same terminal line. */
static int tune_progress(const acm_tune_progress *p, void *user)
{
    (void)user;
    fprintf(stderr, "\r  tuning: %-7s %3d candidates, %5.1f s, best %.3f ms/step   ", p->stage,
            (int)p->done, p->elapsed_s, p->best_ms);
    return 0;
}

int sc_autotune(const char *prog, acm_domain *d, double budget, const char *cache)
{
    acm_tune_options o = ACM_TUNE_OPTIONS_INIT;
    o.time_budget_s = budget;
    o.cache_path = cache;
    o.progress = tune_progress;
    acm_layout *best = NULL;
    acm_tune_report *r = NULL;
    acm_status st = acm_layout_create(&best);
    if (st == ACM_OK)
        st = acm_domain_autotune(d, &o, best, &r);
    fprintf(stderr, "\n");
    acm_tune_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.version = ACM_TUNE_SUMMARY_VERSION;
    if (st == ACM_OK)
        st = acm_tune_report_summary(r, &sum);
    if (st == ACM_OK && !sum.cache_hit) {
        acm_tune_entry b, def;
        memset(&b, 0, sizeof b);
        memset(&def, 0, sizeof def);
        b.version = def.version = ACM_TUNE_ENTRY_VERSION;
        acm_tune_report_entry(r, sum.best, &b);
        acm_tune_report_entry(r, sum.default_entry, &def);
        printf("tuned in %.1f s over %d layouts: %.3f ms/step (the default layout: %.3f)\n",
               sum.seconds, (int)sum.entries, b.ms_per_step, def.ms_per_step);
    } else if (st == ACM_OK) {
        printf("layout from the tuning cache %s\n", cache);
    }
    if (st == ACM_OK) {
        printf("layout: %s\n", sum.best_layout);
        st = acm_domain_set_layout(d, best);
    }
    acm_tune_report_destroy(r);
    acm_layout_destroy(best);
    return sc_failed(prog, st, "autotuning", acm_domain_last_error(d)) ? -1 : 0;
}

double sc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- rotations ----------------------------------------------------------------------------- */

void sc_quat_axis_angle(double q[4], const double axis[3], double degrees)
{
    const double h = 0.5 * degrees * M_PI / 180.0;
    q[0] = cos(h);
    for (int a = 0; a < 3; ++a)
        q[a + 1] = sin(h) * axis[a];
}

void sc_quat_mul(double out[4], const double a[4], const double b[4])
{
    const double r[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    memcpy(out, r, sizeof r);
}

void sc_quat_rotate(double out[3], const double q[4], const double v[3])
{
    /* v + 2 w (u x v) + 2 u x (u x v), u the vector part */
    const double *u = q + 1;
    const double t[3] = {2.0 * (u[1] * v[2] - u[2] * v[1]), 2.0 * (u[2] * v[0] - u[0] * v[2]),
                         2.0 * (u[0] * v[1] - u[1] * v[0])};
    const double r[3] = {v[0] + q[0] * t[0] + u[1] * t[2] - u[2] * t[1],
                         v[1] + q[0] * t[1] + u[2] * t[0] - u[0] * t[2],
                         v[2] + q[0] * t[2] + u[0] * t[1] - u[1] * t[0]};
    memcpy(out, r, sizeof r);
}

/* ---- fields ------------------------------------------------------------------------------- */

static int read_field(const char *prog, acm_domain *d, acm_field field, float **out)
{
    size_t bytes = 0;
    acm_status st = acm_domain_field_size(d, field, ACM_DTYPE_FLOAT32, &bytes);
    if (sc_failed(prog, st, "acm_domain_field_size", acm_domain_last_error(d)))
        return -1;
    if ((*out = malloc(bytes)) == NULL) {
        fprintf(stderr, "%s: out of memory for a field of %zu bytes\n", prog, bytes);
        return -1;
    }
    st = acm_domain_get_field(d, field, ACM_DTYPE_FLOAT32, *out, bytes);
    return sc_failed(prog, st, "acm_domain_get_field", acm_domain_last_error(d)) ? -1 : 0;
}

/* Occupancy of the solids that have an inside (closed meshes); NULL if none has. */
static int read_occupancy(const char *prog, acm_solid *const *solids, size_t nsolids, size_t cells,
                          uint8_t **out)
{
    *out = NULL;
    for (size_t k = 0; k < nsolids; ++k) {
        if (*out == NULL && (*out = calloc(cells, 1)) == NULL) {
            fprintf(stderr, "%s: out of memory for the occupancy\n", prog);
            return -1;
        }
        acm_status st = acm_solid_mark_occupancy(solids[k], *out, cells);
        if (st == ACM_ERR_UNSUPPORTED)
            continue; /* an open surface has no inside: no outline */
        if (sc_failed(prog, st, "acm_solid_mark_occupancy", acm_solid_last_error(solids[k])))
            return -1;
    }
    return 0;
}

int sc_fields_read(const char *prog, acm_domain *d, acm_solid *const *solids, size_t nsolids,
                   sc_fields *f)
{
    memset(f, 0, sizeof *f);
    acm_domain_info info;
    if (domain_info(prog, d, &info) != 0)
        return -1;
    f->n[0] = info.nx;
    f->n[1] = info.ny;
    f->n[2] = info.nz;
    const size_t cells = (size_t)info.nx * (size_t)info.ny * (size_t)info.nz;
    if (read_field(prog, d, ACM_FIELD_VELOCITY, &f->velocity) != 0 ||
        read_field(prog, d, ACM_FIELD_DENSITY, &f->density) != 0 ||
        read_occupancy(prog, solids, nsolids, cells, &f->occupancy) != 0) {
        sc_fields_free(f);
        return -1;
    }
    return 0;
}

void sc_fields_free(sc_fields *f)
{
    free(f->velocity);
    free(f->density);
    free(f->occupancy);
    f->velocity = f->density = NULL;
    f->occupancy = NULL;
}

/* ---- output ------------------------------------------------------------------------------- */

int sc_path(const char *prog, char *buf, size_t size, const char *prefix, const char *suffix)
{
    int len = snprintf(buf, size, "%s%s", prefix, suffix);
    if (len < 0 || (size_t)len >= size) {
        fprintf(stderr, "%s: output prefix too long: %s\n", prog, prefix);
        return -1;
    }
    return 0;
}

static size_t cell(const sc_fields *f, int32_t x, int32_t y, int32_t z)
{
    return (size_t)x + (size_t)f->n[0] * ((size_t)y + (size_t)f->n[1] * (size_t)z);
}

/* Speed at (x, y) on the plane between layers z0 and z1 (equal for an integer plane). */
static float plane_speed(const sc_fields *f, int32_t x, int32_t y, int32_t z0, int32_t z1)
{
    const float *a = f->velocity + 3 * cell(f, x, y, z0), *b = f->velocity + 3 * cell(f, x, y, z1);
    double u[3] = {0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])};
    return (float)sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
}

static int plane_occupied(const sc_fields *f, int32_t x, int32_t y, int32_t z0, int32_t z1)
{
    if (f->occupancy == NULL || x < 0 || y < 0 || x >= f->n[0] || y >= f->n[1])
        return 0;
    return f->occupancy[cell(f, x, y, z0)] || f->occupancy[cell(f, x, y, z1)];
}

/* An occupied cell with a free neighbour in the plane draws the outline. */
static int on_outline(const sc_fields *f, int32_t x, int32_t y, int32_t z0, int32_t z1)
{
    return plane_occupied(f, x, y, z0, z1) &&
           (!plane_occupied(f, x - 1, y, z0, z1) || !plane_occupied(f, x + 1, y, z0, z1) ||
            !plane_occupied(f, x, y - 1, z0, z1) || !plane_occupied(f, x, y + 1, z0, z1));
}

int sc_write_slice_png(const char *prog, const char *path, const sc_fields *f, double z,
                       double vmax)
{
    const int32_t nx = f->n[0], ny = f->n[1];
    int32_t z0 = (int32_t)floor(z), z1 = (int32_t)ceil(z);
    z0 = z0 < 0 ? 0 : (z0 >= f->n[2] ? f->n[2] - 1 : z0);
    z1 = z1 < 0 ? 0 : (z1 >= f->n[2] ? f->n[2] - 1 : z1);
    const uint32_t longest = (uint32_t)(nx > ny ? nx : ny);
    uint32_t s = (512 + longest - 1) / longest; /* at least 512 pixels along the longer side */
    while (s > 1 && (uint64_t)longest * s > 65535)
        --s;
    const uint32_t w = (uint32_t)nx * s, h = (uint32_t)ny * s;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    if (rgb == NULL) {
        fprintf(stderr, "%s: out of memory for a %ux%u image\n", prog, (unsigned)w, (unsigned)h);
        return -1;
    }
    static const uint8_t outline[3] = {230, 25, 25};
    for (int32_t y = 0; y < ny; ++y)
        for (int32_t x = 0; x < nx; ++x) {
            uint8_t c[3];
            if (on_outline(f, x, y, z0, z1))
                memcpy(c, outline, 3);
            else
                pngw_viridis(plane_speed(f, x, y, z0, z1) / vmax, c);
            for (uint32_t py = 0; py < s; ++py) /* image rows top down, y up */
                for (uint32_t px = 0; px < s; ++px)
                    memcpy(rgb + 3 * (((size_t)(ny - 1 - y) * s + py) * w + (size_t)x * s + px),
                           c, 3);
        }
    char err[512];
    int rc = pngw_write_rgb(path, w, h, rgb, err, sizeof err);
    free(rgb);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", prog, err);
    return rc;
}

int sc_write_vti(const char *prog, const char *path, const sc_fields *f)
{
    const size_t cells = (size_t)f->n[0] * (size_t)f->n[1] * (size_t)f->n[2];
    float *occ = NULL;
    if (f->occupancy != NULL && (occ = malloc(cells * sizeof *occ)) == NULL) {
        fprintf(stderr, "%s: out of memory for the occupancy field\n", prog);
        return -1;
    }
    for (size_t k = 0; occ != NULL && k < cells; ++k)
        occ[k] = (float)f->occupancy[k];
    const vti_grid grid = {{f->n[0], f->n[1], f->n[2]}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}};
    const vti_field fields[] = {
        {"velocity", 3, f->velocity}, {"density", 1, f->density}, {"occupancy", 1, occ}};
    int rc = vti_write(path, &grid, fields, occ != NULL ? 3 : 2);
    if (rc != 0)
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    free(occ);
    return rc;
}

int sc_add_solid(const char *prog, acm_domain *d, const acm_solid_options *so, acm_solid **out,
                 acm_solid_info *info)
{
    acm_status st = acm_solid_create(out, d, so);
    if (sc_failed(prog, st, "acm_solid_create", acm_domain_last_error(d)))
        return -1;
    memset(info, 0, sizeof *info);
    info->version = ACM_SOLID_INFO_VERSION;
    st = acm_solid_get_info(*out, info);
    return sc_failed(prog, st, "acm_solid_get_info", acm_solid_last_error(*out)) ? -1 : 0;
}
