/*
 * libacmlbm examples -- helpers shared by the immersed-solid examples
 * (sphere_drag, rotating_torus, mesh_in_wind): a table-driven command line,
 * reporting of failed library calls, and the output of a run (fields, a PNG
 * of the speed on a z-plane with the solid's outline, a VTI file).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_SOLID_COMMON_H
#define ACMLBM_EXAMPLES_SOLID_COMMON_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, int64_t, uint8_t */
#include <stdio.h>  /* FILE */

#include <acmlbm/acmlbm.h>

#define SC_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The option rows every example shares: backend, precision and model of the
 * struct `a` points to, the model's default named in `model_default`. */
#define SC_RUN_OPTIONS(a, model_default)                                                     \
    {"--backend", "B", SC_CHOICE, &(a)->backend, 0, 0, 0, sc_backends,                        \
     SC_COUNT_OF(sc_backends), "auto|cpu|cuda (default auto)"},                              \
    {"--precision", "P", SC_CHOICE, &(a)->precision, 0, 0, 0, sc_precisions,                  \
     SC_COUNT_OF(sc_precisions), "fp32|fp64 population storage (default fp32)"},             \
    {"--model", "M", SC_CHOICE, &(a)->model, 0, 0, 0, sc_models, SC_COUNT_OF(sc_models),      \
     "acm|cm|bgk|rm|acm-li2020 collision model (default " model_default ")"}

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- command line ---------------------------------------------------------------------- */

/** A name on the command line and the enumeration value it stands for. */
typedef struct sc_choice {
    const char *name;
    int value;
} sc_choice;

extern const sc_choice sc_backends[3];   /* auto, cpu, cuda */
extern const sc_choice sc_models[5];     /* acm, cm, bgk, rm, acm-li2020 */
extern const sc_choice sc_precisions[2]; /* fp32, fp64 */

/** Kinds of option values, and the type their target points to. */
typedef enum sc_kind {
    SC_INT,    /* int64_t, in [lo, hi] */
    SC_REAL,   /* double, finite, in [lo, hi] ((lo, hi] with open_lo) */
    SC_TEXT,   /* const char *, not empty */
    SC_CHOICE, /* int, one of choices */
    SC_SIZE3   /* int32_t[3] written NXxNYxNZ, each in [lo, hi] */
} sc_kind;

typedef struct sc_option {
    const char *name; /* "--re" */
    const char *meta; /* placeholder in the usage: "RE" */
    sc_kind kind;
    void *target;
    double lo, hi;
    int open_lo;
    const sc_choice *choices; /* SC_CHOICE */
    size_t nchoices;
    const char *help; /* one line, with the default */
} sc_option;

/**
 * Parse "--name value" pairs (and at most one positional argument when
 * @p positional is not NULL) into the options' targets; "--help" prints the
 * usage. Every value is checked and a bad one is named with the rule it
 * breaks.
 * @return 0 to run, 1 after --help (exit 0), 2 after a usage error (exit 2)
 */
int sc_parse_args(const char *prog, const char *synopsis, int argc, char **argv,
                  const sc_option *opts, size_t nopts, const char **positional);

/** Name of @p value in a table, "?" if absent. */
const char *sc_name_of(const sc_choice *table, size_t n, int value);

/** Whether a run on @p backend will use the GPU (AUTO: as the library decides). */
int sc_runs_on_gpu(acm_backend backend);

/* ---- library calls ----------------------------------------------------------------------- */

/** Report a failed call: "prog: what: status text: message". Returns nonzero on failure. */
int sc_failed(const char *prog, acm_status st, const char *what, const char *message);

/* Create a solid in d and read its info; 0, or -1 after printing the library's
 * message. */
int sc_add_solid(const char *prog, acm_domain *d, const acm_solid_options *so, acm_solid **out,
                 acm_solid_info *info);

/** Create a domain, reporting a failure; NULL on failure. */
acm_domain *sc_domain_create(const char *prog, acm_domain_options *opts);

/** Print "backend ..., model ..., FP32, nu = ..., tau = ...". 0 or -1. */
int sc_print_domain(const char *prog, acm_domain *d);

/** acm_step(d, n), adding its wall time to *seconds; reports a failure (for a
 *  diverged run, the library's message). 0 or -1. */
int sc_step(const char *prog, acm_domain *d, int64_t n, double *seconds);

/** Monotonic clock, seconds. */
double sc_now(void);

/* Tune the domain's layout within `budget` seconds (acm_domain_autotune; cache:
 * a file of tuned layouts or NULL), print what it found and apply it; -1
 * (with a message) on failure. */
int sc_autotune(const char *prog, acm_domain *d, double budget, const char *cache);

/* ---- rotations (unit quaternions w, x, y, z, as the library's orientations) -------------- */

/** q = rotation by @p degrees about the unit @p axis. */
void sc_quat_axis_angle(double q[4], const double axis[3], double degrees);
/** out = a b (b first, then a). */
void sc_quat_mul(double out[4], const double a[4], const double b[4]);
/** out = q v q^-1. */
void sc_quat_rotate(double out[3], const double q[4], const double v[3]);

/* ---- fields and output ---------------------------------------------------------------------- */

typedef struct sc_fields {
    int32_t n[3];       /* grid size */
    float *velocity;    /* 3 per cell, x fastest */
    float *density;     /* 1 per cell */
    uint8_t *occupancy; /* 1 inside a solid; NULL if no solid has an inside */
} sc_fields;

/** Read velocity, density, and the occupancy of @p nsolids solids. 0 or -1. */
int sc_fields_read(const char *prog, acm_domain *d, acm_solid *const *solids, size_t nsolids,
                   sc_fields *f);
void sc_fields_free(sc_fields *f);

/** PREFIX + SUFFIX into buf; 0, or -1 with a message if it does not fit. */
int sc_path(const char *prog, char *buf, size_t size, const char *prefix, const char *suffix);

/**
 * Write |u| on the plane z = @p z (a half-integer plane is the mean of its two
 * neighbours) as a viridis PNG, 0 to @p vmax, x to the right and y up, with
 * the outline of the occupied cells in red. 0 or -1.
 */
int sc_write_slice_png(const char *prog, const char *path, const sc_fields *f, double z,
                       double vmax);

/** Write velocity, density (and occupancy) as a VTI file; cell (x, y, z) at point (x, y, z). */
int sc_write_vti(const char *prog, const char *path, const sc_fields *f);

#endif /* ACMLBM_EXAMPLES_SOLID_COMMON_H */
