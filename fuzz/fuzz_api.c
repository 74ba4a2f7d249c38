/*
 * libacmlbm fuzz target -- random call sequences over the public API.
 *
 * The input is a program: a header that makes a small domain (each axis 1-12
 * cells, viscosity or tau from a table with bad entries, collision model,
 * precision, slabs, faces, layout), then operations, each an opcode byte and
 * its argument bytes (read past the end as 0): steps, faces, forces,
 * collision options, tunables, initial states, fields in and out, probes,
 * statistics, layouts, divergence policies (with a callback that makes calls
 * of its own), immersed solids from caller samples or small meshes, smokes
 * and emitters, checkpoints saved and loaded (the loaded domain may replace
 * the current one), exports, the autotuner, NULL handles, wrong sizes and
 * non-finite numbers. Only public calls; handles the program destroyed are
 * never used again (the caller's bug, not the library's).
 *
 * After every call the target checks what the API promises, and aborts
 * (a libFuzzer crash) when it does not hold:
 *   - the status is one of acm_status's values (ACM_ERR_INTERNAL counts as
 *     a bug: "please report");
 *   - a failure leaves a message on its handle (acm_domain_last_error,
 *     acm_solid_last_error, acm_smoke_last_error, acm_layout_last_error, the
 *     error buffer of the creators) that is neither empty nor stale: before
 *     each call the target plants a known message on the handle with a call
 *     that must fail (an unknown parameter, motion or emitter version), and a
 *     failure that leaves that message in place has said nothing;
 *   - a call on a NULL handle does not succeed;
 *   - mass is finite after a successful step and, while the domain holds a
 *     valid state, after every call that changes it (acm_domain_get_stats);
 *   - a domain that diverged under ACM_DIVERGENCE_STOP does not step again
 *     before it is re-initialised, and the divergence callback cannot step,
 *     re-initialise or re-lay its domain or create solids and smokes in it;
 *   - state the API says it keeps is kept bitwise: across acm_domain_set_layout
 *     at the same precision and streaming (or when it fails),
 *     acm_domain_save + acm_domain_load, and acm_domain_autotune;
 *   - acm_domain_get_solids/get_smokes list exactly the live handles.
 * Work is capped per input (200k cell updates, 64 samples a solid, 4096
 * particles a smoke) so that one input runs in milliseconds.
 *
 * Seeds: fuzz/corpus/api, written by fuzz/api_seeds.py with the dictionary
 * fuzz/api.dict (whole operations); the finding-* files there reproduce what
 * the campaigns found (docs/reliability.md). FUZZ_API_TRACE=1 prints every
 * checked call with its status and message; FUZZ_API_IGNORE (below) lets a
 * campaign, and fuzz/run.sh, step around findings still open.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acmlbm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 300
#define MAX_SOLIDS 8
#define MAX_SMOKES 4
#define WORK_BUDGET 200000 /* cell updates (and their equivalent) per input */
#define MAX_CAPACITY 4096  /* particles of a smoke */

/* ---- input ------------------------------------------------------------------------------ */

typedef struct reader {
    const uint8_t *p;
    size_t n, i;
} reader;

static uint8_t u8(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static uint16_t u16(reader *r) { return (uint16_t)(u8(r) | (u8(r) << 8)); }

static double raw_double(reader *r)
{
    uint64_t b = 0;
    for (int k = 0; k < 8; ++k)
        b |= (uint64_t)u8(r) << (8 * k);
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const double ANY[] = {
    0.0,     1.0,      -1.0,     0.5,     -0.5,     0.1,       -0.1,     0.01,     -0.01,
    0.05,    0.19,     0.2,      0.3,     0.49,     0.51,      2.0,      3.0,      5.5,
    11.0,    12.0,     -3.0,     100.0,   -100.0,   1e6,       1e-30,    -1e-30,   1e39,
    -1e39,   1e300,    -1e300,   DBL_MAX, -DBL_MAX, DBL_MIN,   4.9e-324, -0.0,     NAN,
    INFINITY, -INFINITY, 0x1p24, 0x1p24 + 1, 1e-14, 7e13,     1.3e5,    7.6e-6,   65536.0,
    2e9,     -2e9,     1e18,     1e-7,    0.999,    1.001,     1e20,     -1e20,
};
#define NANY ((int)COUNT(ANY))

/* Any double: the table, a raw one (255), or a small number in [-4, 8). */
static double dv(reader *r)
{
    const int b = u8(r);
    if (b < NANY)
        return ANY[b];
    if (b == 255)
        return raw_double(r);
    return (b - NANY) * 0.0625 - 4.0;
}

/* A velocity: mostly small, sometimes anything. */
static double vel(reader *r)
{
    const int b = u8(r);
    return b < 0x80 ? (b - 64) * 0.004 : dv(r);
}

/* A coordinate along an axis of n cells: mostly in [-1, n + 1], sometimes anything. */
static double coord(reader *r, int32_t n)
{
    const int b = u8(r);
    return b < 200 ? b * (n + 2) / 200.0 - 1.0 : dv(r);
}

static const double DENS[] = {1.0,   1.0,  0.5,    2.0,    0.0,   -1.0,   1e-30,  1e39,
                              NAN,   INFINITY, 1e-14, 1.4e-14, 7e13, 7.1e13, 7.6e-6, 7.5e-6,
                              1.3e5, 1.4e5, 1e-5,  0.9,    1.1,   1e10,   -0.0,   DBL_MIN,
                              1.02,  0.98, 3.0,    1e-3};

static double dens(reader *r)
{
    const int b = u8(r);
    return b == 255 ? raw_double(r) : DENS[b % COUNT(DENS)];
}

static const int64_t I64[] = {0,  1,  2,  3,  5,  8,  16,  17,  64,  4096, 4097, -1,
                              -2, INT64_C(1) << 40, (INT64_C(1) << 40) + 1, INT64_MAX,
                              INT64_MIN, 1000, INT64_C(1) << 30, INT64_C(1) << 31, 65, 256, 32,
                              33, 4, 128, 257, 1024};

static int64_t i64(reader *r) { return I64[u8(r) % COUNT(I64)]; }

/* ---- program state ------------------------------------------------------------------------ */

typedef struct prog {
    acm_domain *d;
    int64_t cells;
    int32_t n[3];
    acm_solid *solids[MAX_SOLIDS];
    int nsolids;
    acm_smoke *smokes[MAX_SMOKES];
    int nsmokes;
    int64_t budget;
    bool maybe_bad;     /* the state may hold non-finite values (a divergence) */
    bool diverged_stop; /* the domain said it diverged and keeps the diverged state */
    bool ckpt_exists, ckpt_maybe_bad;
    int op;
    const char *opname;
    /* divergence callback */
    uint8_t cb_mode, cb_destroy;
    bool domain_doomed; /* a callback destroyed the domain: gone when its call returns */
    int cb_calls;
    /* autotuner progress callback */
    int tune_calls, tune_cancel_after;
    uint8_t tune_destroy;
    char sentinel[600];
} prog;

static char dir[64];
static char p_ckpt[128], p_vti[128], p_ply[128], p_dens[128], p_csv[128], p_cache[128],
    p_missing[128];

static void die(const prog *P, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\n==fuzz_api== invariant broken at op %d (%s): ", P->op,
            P->opname ? P->opname : "?");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static int trace = -1; /* FUZZ_API_TRACE=1: every checked call on stderr */

/* FUZZ_API_IGNORE=kind:op,...: broken invariants already reported (kind mass,
 * nomsg, stale, kept or internal, op as in op_names, or the kind alone for every op) are
 * let pass, so that a campaign looks past them for other findings; csoa leaves
 * out the CSoA groups above 2^20 (gigabytes of populations for a small grid),
 * reach the caller samples farther than 2^20 cells from their centre, nanpose
 * the inside tests of a solid whose pose is not finite. */
static bool known(const prog *P, const char *kind)
{
    const char *list = getenv("FUZZ_API_IGNORE");
    if (list == NULL)
        return false;
    char tag[96];
    snprintf(tag, sizeof tag, "%s:%s", kind, P->opname ? P->opname : "?");
    for (const char *p = list; *p != '\0';) {
        const size_t n = strcspn(p, ",");
        if ((n == strlen(tag) && strncmp(p, tag, n) == 0) ||
            (n == strlen(kind) && strncmp(p, kind, n) == 0))
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static void check_known(const prog *P, acm_status st, const char *what)
{
    if (trace < 0)
        trace = getenv("FUZZ_API_TRACE") != NULL;
    if (trace)
        fprintf(stderr, "op %d %-18s %-60.60s -> %d\n", P->op, P->opname ? P->opname : "?", what,
                (int)st);
    switch ((int)st) {
#define KNOWN(name, value, text) case value:
        ACM_STATUS_MAP(KNOWN)
#undef KNOWN
        break;
    default:
        die(P, "%s returned %d, not an acm_status", what, (int)st);
    }
    if (st == ACM_ERR_INTERNAL && !known(P, "internal"))
        die(P, "%s returned ACM_ERR_INTERNAL", what);
}

static void check_internal(const prog *P, acm_status st, const char *what, const char *msg)
{
    if (st == ACM_ERR_INTERNAL && !known(P, "internal"))
        die(P, "%s returned ACM_ERR_INTERNAL: \"%s\"", what, msg ? msg : "(no message)");
}

/* ---- handles and their messages ----------------------------------------------------------- */

/* Plant a known message on d (a call that must fail with ACM_ERR_BAD_ENUM). */
static void plant_domain(prog *P, acm_domain *d)
{
    P->sentinel[0] = '\0';
    if (d == NULL)
        return;
    const acm_status st = acm_domain_set_param(d, (acm_param)0x7e57, 0);
    if (st == ACM_ERR_BAD_STATE) /* a domain that lost its storage: every call says so */
        return;
    if (st != ACM_ERR_BAD_ENUM)
        die(P, "acm_domain_set_param(unknown parameter) returned %d", (int)st);
    snprintf(P->sentinel, sizeof P->sentinel, "%s", acm_domain_last_error(d));
}

static void check_message(prog *P, const char *msg, acm_status st, const char *what,
                          const char *handle)
{
    if (trace)
        fprintf(stderr, "      %s\n", msg ? msg : "(null)");
    if ((msg == NULL || msg[0] == '\0') && !known(P, "nomsg"))
        die(P, "%s failed with %d (%s) and left no message on its %s", what, (int)st,
            acm_status_string(st), handle);
    if (msg != NULL && P->sentinel[0] != '\0' && strcmp(msg, P->sentinel) == 0 && !known(P, "stale"))
        die(P, "%s failed with %d (%s) but left the %s's message of an earlier call (\"%s\")",
            what, (int)st, acm_status_string(st), handle, msg);
}

/* After a call whose message goes to domain d. */
static acm_status dpost(prog *P, acm_domain *d, acm_status st, const char *what)
{
    if (P->domain_doomed && d == P->d) { /* destroyed by a callback of this call */
        check_known(P, st, what);
        P->sentinel[0] = '\0';
        return st;
    }
    check_internal(P, st, what, acm_domain_last_error(d));
    check_known(P, st, what);
    if (d == NULL && st == ACM_OK)
        die(P, "%s succeeded on a NULL domain", what);
    if (st != ACM_OK)
        check_message(P, acm_domain_last_error(d), st, what, "domain");
    P->sentinel[0] = '\0';
    return st;
}

#define DCALL(d, expr) (plant_domain(P, (d)), dpost(P, (d), (expr), #expr))

static void plant_solid(prog *P, acm_solid *s)
{
    P->sentinel[0] = '\0';
    if (s == NULL)
        return;
    const acm_status st = acm_solid_set_motion(s, (acm_motion)77);
    if (st != ACM_ERR_BAD_ENUM)
        die(P, "acm_solid_set_motion(77) returned %d", (int)st);
    snprintf(P->sentinel, sizeof P->sentinel, "%s", acm_solid_last_error(s));
}

static acm_status spost(prog *P, acm_solid *s, acm_status st, const char *what)
{
    check_internal(P, st, what, acm_solid_last_error(s));
    check_known(P, st, what);
    if (s == NULL && st == ACM_OK)
        die(P, "%s succeeded on a NULL solid", what);
    if (st != ACM_OK)
        check_message(P, acm_solid_last_error(s), st, what, "solid");
    P->sentinel[0] = '\0';
    return st;
}

#define SCALL(s, expr) (plant_solid(P, (s)), spost(P, (s), (expr), #expr))

static void plant_smoke(prog *P, acm_smoke *s)
{
    P->sentinel[0] = '\0';
    if (s == NULL)
        return;
    acm_emitter e = ACM_EMITTER_INIT;
    e.version = 77;
    const acm_status st = acm_smoke_add_emitter(s, &e);
    if (st != ACM_ERR_BAD_VERSION)
        die(P, "acm_smoke_add_emitter(version 77) returned %d", (int)st);
    snprintf(P->sentinel, sizeof P->sentinel, "%s", acm_smoke_last_error(s));
}

static acm_status kpost(prog *P, acm_smoke *s, acm_status st, const char *what)
{
    check_internal(P, st, what, acm_smoke_last_error(s));
    check_known(P, st, what);
    if (s == NULL && st == ACM_OK)
        die(P, "%s succeeded on a NULL smoke", what);
    if (st != ACM_OK)
        check_message(P, acm_smoke_last_error(s), st, what, "smoke");
    P->sentinel[0] = '\0';
    return st;
}

#define KCALL(s, expr) (plant_smoke(P, (s)), kpost(P, (s), (expr), #expr))

/* A layout with up to 3 parameters set from the input (each set checked). */
static acm_layout *make_layout(prog *P, reader *r)
{
    static const int64_t values[] = {0, 1, 2, 3, 4, 8, 16, 32, 64, 65, 128, 256, 257, 1024,
                                     INT64_C(1) << 30, (INT64_C(1) << 30) + 1, -1,
                                     INT64_C(1) << 31, INT64_MAX, 5, 2, 1, 1, 2,
                                     INT64_C(1) << 20, INT64_C(1) << 24, INT64_C(1) << 26};
    acm_layout *l = NULL;
    acm_status st = acm_layout_create(&l);
    if (st != ACM_OK || l == NULL)
        die(P, "acm_layout_create returned %d", (int)st);
    const int k = u8(r) % 4;
    for (int i = 0; i < k; ++i) {
        const acm_layout_param key = (acm_layout_param)(u8(r) % 11); /* 0 and 10: unknown */
        const int64_t value = values[u8(r) % COUNT(values)];
        if (key == ACM_LAYOUT_CSOA_GROUP && value > (INT64_C(1) << 20) && known(P, "csoa"))
            continue; /* FUZZ_API_IGNORE=csoa: no groups that allocate gigabytes */
        st = acm_layout_set(l, key, value);
        check_known(P, st, "acm_layout_set");
        if (st != ACM_OK) {
            const char *m = acm_layout_last_error(l);
            if (m == NULL || m[0] == '\0')
                die(P, "acm_layout_set(%d, %lld) failed with %d and no message", (int)key,
                    (long long)value, (int)st);
        }
    }
    return l;
}

static void forget_handles(prog *P)
{
    P->nsolids = P->nsmokes = 0;
    memset(P->solids, 0, sizeof P->solids);
    memset(P->smokes, 0, sizeof P->smokes);
}

static void destroy_domain(prog *P)
{
    acm_domain_destroy(P->d); /* its solids and smokes with it */
    P->d = NULL;
    P->cells = 0;
    forget_handles(P);
    P->maybe_bad = P->diverged_stop = false;
}

/* Grid of the current domain (after a creation or a load). */
static void adopt(prog *P, acm_domain *d)
{
    P->d = d;
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    const acm_status st = DCALL(d, acm_domain_get_info(d, &info));
    if (st != ACM_OK)
        die(P, "acm_domain_get_info of a new domain returned %d", (int)st);
    P->n[0] = info.nx;
    P->n[1] = info.ny;
    P->n[2] = info.nz;
    P->cells = (int64_t)info.nx * info.ny * info.nz;
}

/* The handles of d as the library lists them, into the tables (a loaded domain). */
static void take_handles(prog *P)
{
    size_t n = 0;
    forget_handles(P);
    if (DCALL(P->d, acm_domain_get_solids(P->d, P->solids, MAX_SOLIDS, &n)) != ACM_OK)
        die(P, "acm_domain_get_solids failed on a loaded domain");
    if (n > MAX_SOLIDS)
        die(P, "a loaded domain has %zu solids; at most %d were saved", n, MAX_SOLIDS);
    P->nsolids = (int)n;
    if (DCALL(P->d, acm_domain_get_smokes(P->d, P->smokes, MAX_SMOKES, &n)) != ACM_OK)
        die(P, "acm_domain_get_smokes failed on a loaded domain");
    if (n > MAX_SMOKES)
        die(P, "a loaded domain has %zu smokes; at most %d were saved", n, MAX_SMOKES);
    P->nsmokes = (int)n;
}

/* The populations of d as FP64 (caller frees), or NULL when they cannot be read. */
static double *populations(prog *P, acm_domain *d, int64_t cells)
{
    if (d == NULL || cells <= 0)
        return NULL;
    const size_t bytes = (size_t)cells * 27 * sizeof(double);
    double *f = malloc(bytes);
    if (f == NULL)
        abort();
    if (DCALL(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f, bytes)) !=
        ACM_OK) {
        free(f);
        return NULL;
    }
    return f;
}

static int64_t step_of(prog *P, acm_domain *d)
{
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    if (DCALL(d, acm_domain_get_info(d, &info)) != ACM_OK)
        return -1;
    return info.step;
}

/* Mass finite whenever the domain holds a valid state. */
static void check_state(prog *P, const char *after)
{
    if (P->d == NULL || P->maybe_bad)
        return;
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    if (DCALL(P->d, acm_domain_get_stats(P->d, &s)) != ACM_OK)
        return;
    if (!isfinite(s.mass) && known(P, "mass"))
        P->maybe_bad = true;
    else if (!isfinite(s.mass))
        die(P, "mass %g after %s, with no divergence reported (step %lld)", s.mass, after,
            (long long)s.step);
}

/* ---- the domain --------------------------------------------------------------------------- */

static const struct {
    double viscosity, tau;
} VISC[] = {{0.01, 0}, {0.1, 0}, {0, 0.6}, {0, 1.0},  {0.05, 0},  {0, 0.51},  {0, 0},
            {0.1, 0.6}, {-0.1, 0}, {0, 0.5}, {NAN, 0}, {0, 1e6},  {1e-9, 0},  {0, 0.5000001},
            {1e5, 0},  {0, 2.0},  {0, INFINITY}, {0.001, 0}, {0.3, 0}, {0, 1.9}};

static void set_face(prog *P, acm_domain *d, acm_face f, acm_boundary b, const double *u)
{
    (void)DCALL(d, acm_domain_set_face(d, f, b, u));
}

/* Destroy the current domain and make one from the header bytes. */
static void op_create(prog *P, reader *r)
{
    destroy_domain(P);
    const uint8_t f = u8(r);
    acm_domain_options o;
    if (acm_domain_options_init(&o, ACM_DOMAIN_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_domain_options_init failed");
    o.nx = 1 + u8(r) % 12;
    o.ny = 1 + u8(r) % 12;
    o.nz = 1 + u8(r) % 12;
    if ((f & 0xE0) == 0xE0) { /* grids refused for their size: the checks before any allocation */
        static const int32_t big[][3] = {{0, 4, 4},       {4, -1, 4},          {4, 4, 65536},
                                         {INT32_MIN, 1, 1}, {65535, 65535, 16}, {65535, 65535, 65535}};
        const int k = u8(r) % 6;
        o.nx = big[k][0];
        o.ny = big[k][1];
        o.nz = big[k][2];
    }
    const uint8_t v = u8(r);
    o.viscosity = VISC[v % COUNT(VISC)].viscosity;
    o.tau = VISC[v % COUNT(VISC)].tau;
    o.collision = (acm_collision)(u8(r) % 7);
    o.precision = (acm_precision)(u8(r) % 5);
    o.subdomains = u8(r) % 4;
    static const double speeds[] = {0, 0, 0.5, 0.1, 0.2, 1.0, 1.5, -1, NAN, 0.05};
    o.max_speed = speeds[u8(r) % COUNT(speeds)];
    const uint8_t g = u8(r);
    o.backend = (g & 0x80) ? (acm_backend)(g % 4) : ACM_BACKEND_CPU;
    if (f & 1)
        o.initial_density = dens(r);
    if (f & 2)
        for (int a = 0; a < 3; ++a)
            o.initial_velocity[a] = vel(r);
    acm_layout *layout = (f & 4) ? make_layout(P, r) : NULL;
    o.layout = layout;
    if (f & 8)
        o.version = (f & 16) ? 1 : 3;
    static const int32_t devices[4] = {0, -1, 0, 0};
    if ((g & 0x40) && o.subdomains > 0)
        o.devices = devices;
    char err[512] = "";
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    if ((g & 0x30) == 0x30) {
        o.error_buffer = NULL;
        o.error_buffer_size = (g & 1) ? 8 : 0;
    }
    acm_domain *d = NULL;
    const acm_status st = acm_domain_create(&d, &o);
    acm_layout_destroy(layout);
    check_internal(P, st, "acm_domain_create", err);
    check_known(P, st, "acm_domain_create");
    if (st != ACM_OK) {
        if (d != NULL)
            die(P, "acm_domain_create failed with %d but wrote a domain", (int)st);
        if (o.error_buffer != NULL && err[0] == '\0')
            die(P, "acm_domain_create failed with %d (%s) and wrote no message", (int)st,
                acm_status_string(st));
        return;
    }
    if (d == NULL)
        die(P, "acm_domain_create succeeded without a domain");
    if ((int64_t)o.nx * o.ny * o.nz > 12 * 12 * 12)
        die(P, "acm_domain_create accepted a grid of %dx%dx%d cells", o.nx, o.ny, o.nz);
    adopt(P, d);
    /* faces: per axis 0 periodic, 1 walls, 2 inlet and outlet, 3 a wall and a periodic face */
    const uint8_t faces = u8(r);
    for (int a = 0; a < 3; ++a) {
        const int kind = (faces >> (2 * a)) & 3;
        const acm_face lo = (acm_face)(2 * a), hi = (acm_face)(2 * a + 1);
        double u[3] = {0, 0, 0};
        if (kind == 1) {
            set_face(P, d, lo, ACM_BOUNDARY_WALL, NULL);
            set_face(P, d, hi, ACM_BOUNDARY_WALL, NULL);
        } else if (kind == 2) {
            u[a] = vel(r);
            set_face(P, d, lo, ACM_BOUNDARY_INLET, u);
            set_face(P, d, hi, ACM_BOUNDARY_OUTLET, NULL);
        } else if (kind == 3) {
            set_face(P, d, lo, ACM_BOUNDARY_WALL, NULL);
        }
    }
}

/* ---- the divergence callback -------------------------------------------------------------- */

/* Destroys inside a callback of the library (cb_destroy bits: 1 a smoke, 2 a
 * solid, 4 the domain): the library defers them to the end of the call that
 * ran the callback; the tables forget the handles at once. */
static void destroy_in_callback(prog *P, acm_domain *d, uint8_t what)
{
    if ((what & 1) && P->nsmokes > 0) {
        acm_smoke_destroy(P->smokes[P->nsmokes - 1]);
        P->smokes[--P->nsmokes] = NULL;
    }
    if ((what & 2) && P->nsolids > 0) {
        acm_solid_destroy(P->solids[0]);
        memmove(P->solids, P->solids + 1, (size_t)(P->nsolids - 1) * sizeof *P->solids);
        P->solids[--P->nsolids] = NULL;
    }
    if ((what & 4) && d == P->d && !P->domain_doomed) {
        acm_domain_destroy(d);
        P->domain_doomed = true;
    }
}

/* After a call that may have run a callback: a domain destroyed there is gone. */
static bool domain_gone(prog *P)
{
    if (!P->domain_doomed)
        return false;
    P->domain_doomed = false;
    P->d = NULL; /* destroyed with its solids and smokes when the call returned */
    P->cells = 0;
    forget_handles(P);
    P->maybe_bad = P->diverged_stop = false;
    return true;
}

static void divergence_cb(acm_domain *d, const acm_divergence_event *e, void *user_data)
{
    prog *P = user_data;
    const char *name = P->opname;
    char outer[sizeof P->sentinel]; /* the message planted before acm_step */
    memcpy(outer, P->sentinel, sizeof outer);
    P->opname = "divergence callback";
    if (e == NULL || e->message == NULL || e->message[0] == '\0')
        die(P, "the divergence event has no message");
    if (e->step < 1)
        die(P, "the divergence event names step %lld", (long long)e->step);
    if (++P->cb_calls > 64) {
        P->opname = name;
        return;
    }
    if (e->step > 0 && e->rewound_to >= e->step)
        die(P, "the divergence at step %lld rewound to step %lld", (long long)e->step,
            (long long)e->rewound_to);
    const uint8_t m = P->cb_mode;
    if (m & 1) {
        acm_domain_stats s;
        memset(&s, 0, sizeof s);
        s.version = ACM_DOMAIN_STATS_VERSION;
        (void)DCALL(d, acm_domain_get_stats(d, &s));
        double rho, u[3];
        (void)DCALL(d, acm_domain_probe(d, 0, 0, 0, &rho, u));
    }
    if (m & 2) {
        const acm_status st = DCALL(d, acm_step(d, 1));
        if (st == ACM_OK)
            die(P, "acm_step inside the divergence callback succeeded");
    }
    if (m & 4) {
        const acm_status st = DCALL(d, acm_domain_init_uniform(d, 1.0, NULL));
        if (st == ACM_OK)
            die(P, "acm_domain_init_uniform inside the divergence callback succeeded");
    }
    if (m & 8) {
        acm_layout *l = NULL;
        if (acm_layout_create(&l) != ACM_OK)
            abort();
        const acm_status st = DCALL(d, acm_domain_set_layout(d, l));
        acm_layout_destroy(l);
        if (st == ACM_OK)
            die(P, "acm_domain_set_layout inside the divergence callback succeeded");
    }
    if (m & 16) {
        acm_solid_options o;
        (void)acm_solid_options_init(&o, ACM_SOLID_OPTIONS_VERSION);
        const double pt[3] = {0, 0, 0}, area = 1.0;
        o.sample_count = 1;
        o.sample_points = pt;
        o.sample_areas = &area;
        o.position[0] = P->n[0] / 2.0;
        o.position[1] = P->n[1] / 2.0;
        o.position[2] = P->n[2] / 2.0;
        acm_solid *s = NULL;
        const acm_status st = DCALL(d, acm_solid_create(&s, d, &o));
        if (st == ACM_OK)
            die(P, "acm_solid_create inside the divergence callback succeeded");
    }
    if (m & 32) {
        acm_smoke_options o;
        (void)acm_smoke_options_init(&o, ACM_SMOKE_OPTIONS_VERSION);
        o.capacity = 4;
        acm_smoke *s = NULL;
        const acm_status st = DCALL(d, acm_smoke_create(&s, d, &o));
        if (st == ACM_OK)
            die(P, "acm_smoke_create inside the divergence callback succeeded");
    }
    if (m & 64) { /* settings are allowed */
        const double force[3] = {0, 0, 0};
        (void)DCALL(d, acm_domain_set_body_force(d, force));
        acm_divergence_policy pol = ACM_DIVERGENCE_POLICY_INIT;
        (void)DCALL(d, acm_domain_set_divergence_policy(d, &pol));
    }
    if (m & 128) {
        (void)DCALL(d, acm_domain_save(d, p_ckpt));
        P->ckpt_exists = false; /* what it holds is not known */
    }
    destroy_in_callback(P, d, P->cb_destroy);
    memcpy(P->sentinel, outer, sizeof outer);
    P->opname = name;
}

static int tune_cb(const acm_tune_progress *p, void *user_data)
{
    prog *P = user_data;
    if (p == NULL || p->stage == NULL || p->candidate == NULL)
        die(P, "the autotuner's progress has NULL fields");
    ++P->tune_calls;
    if (P->tune_calls == 1 && P->tune_destroy != 0 && P->d != NULL)
        destroy_in_callback(P, P->d, P->tune_destroy);
    return P->tune_calls > P->tune_cancel_after;
}

/* ---- operations --------------------------------------------------------------------------- */

static void op_step(prog *P, reader *r, acm_domain *d)
{
    const uint8_t b = u8(r);
    int64_t n = b == 255 ? -1 : b % 9;
    if (d != NULL && n > 0 && P->cells * n > P->budget)
        n = P->budget / P->cells;
    if (d != NULL && n > 0)
        P->budget -= P->cells * n;
    const acm_status st = DCALL(d, acm_step(d, n));
    if (d == NULL || domain_gone(P))
        return;
    if (st == ACM_OK && P->diverged_stop)
        die(P, "acm_step(%lld) succeeded on a domain that diverged and was not re-initialised",
            (long long)n);
    if (st == ACM_ERR_DIVERGED) {
        const bool was_bad = P->maybe_bad; /* a snapshot of a bad state rewinds to it */
        P->maybe_bad = true;
        /* kept (a further step is refused) or rewound (it is not)? */
        const acm_status again = DCALL(d, acm_step(d, 0));
        P->diverged_stop = again == ACM_ERR_BAD_STATE;
        if (again == ACM_OK) {
            P->maybe_bad = was_bad;
            check_state(P, "a divergence that rewound");
        }
        return;
    }
    if (st == ACM_OK && n > 0) {
        P->maybe_bad = false;
        check_state(P, "a successful acm_step");
    }
}

static const double *maybe_vec(reader *r, double u[3], uint8_t flag)
{
    if (flag & 1)
        return NULL;
    for (int a = 0; a < 3; ++a)
        u[a] = (flag & 2) ? vel(r) : 0.0;
    if (flag & 4) /* one component from anywhere */
        u[u8(r) % 3] = dv(r);
    return u;
}

static void op_set_face(prog *P, reader *r, acm_domain *d)
{
    const uint8_t a = u8(r), b = u8(r), c = u8(r);
    const acm_face face = (acm_face)(a < 250 ? a % 7 : (a == 250 ? -1 : 0x7fffffff));
    const acm_boundary type = (acm_boundary)(b % 5);
    double u[3];
    const double *up = maybe_vec(r, u, c);
    (void)DCALL(d, acm_domain_set_face(d, face, type, up));
    /* the other face of the axis too, most of the time, so that steps can run */
    if ((c & 0x18) != 0x18 && a % 7 < 6) {
        const acm_face other = (acm_face)((a % 7) ^ 1);
        acm_boundary t2 = type;
        if (type == ACM_BOUNDARY_INLET)
            t2 = ACM_BOUNDARY_OUTLET;
        else if (type == ACM_BOUNDARY_OUTLET)
            t2 = (c & 0x20) ? ACM_BOUNDARY_INLET : ACM_BOUNDARY_WALL;
        (void)DCALL(d, acm_domain_set_face(d, other, t2, (t2 == type) ? up : NULL));
    }
    acm_boundary got;
    double gu[3];
    (void)DCALL(d, acm_domain_get_face(d, face, (c & 0x40) ? NULL : &got, (c & 0x80) ? NULL : gu));
    if (a >= 128 && a < 250) { /* an absorber in front of it: any depth, strength, state */
        const int32_t cells = (int32_t)(int8_t)u8(r);
        const double strength = dv(r), density = dv(r);
        double w[3], gs, gd;
        const double *wp = maybe_vec(r, w, u8(r));
        (void)DCALL(d, acm_domain_set_face_absorber(d, face, cells, strength, density, wp));
        int32_t gc;
        (void)DCALL(d, acm_domain_get_face_absorber(d, face, (c & 0x40) ? NULL : &gc, &gs, &gd,
                                                    (c & 0x80) ? NULL : w));
    }
}

static void op_body_force(prog *P, reader *r, acm_domain *d)
{
    double u[3];
    const double *f = maybe_vec(r, u, u8(r));
    (void)DCALL(d, acm_domain_set_body_force(d, f));
}

static void op_collision(prog *P, reader *r, acm_domain *d)
{
    const uint8_t f = u8(r);
    acm_collision_options c;
    if (acm_collision_options_init(&c, ACM_COLLISION_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_collision_options_init failed");
    if (f & 1) /* start from the options in effect */
        (void)DCALL(d, acm_domain_get_collision(d, &c));
    c.model = (acm_collision)(u8(r) % 7);
    const int k = u8(r) % 4;
    for (int i = 0; i < k; ++i) {
        const uint8_t which = u8(r) % 14;
        switch (which) {
        case 0: c.high_order_rate = dv(r); break;
        case 1: c.bulk_rate = dv(r); break;
        case 2: c.bulk_follows_high_order = (int32_t)(u8(r) % 3); break;
        case 3: c.safety_net = (int32_t)(u8(r) % 3); break;
        case 4: c.max_high_order_rate = dv(r); break;
        case 5: case 6: case 7: case 8: c.li2018_nu0[which - 5] = dv(r); break;
        case 9: case 10: case 11: case 12: c.li2020_theta[which - 9] = dv(r); break;
        default: c.li2020_tau0 = dv(r); break;
        }
    }
    if (f & 2)
        c.version = (f & 4) ? 0 : 2;
    (void)DCALL(d, acm_domain_set_collision(d, (f & 8) && (f & 16) ? NULL : &c));
    acm_collision_options got;
    memset(&got, 0, sizeof got);
    got.version = (f & 32) ? 5 : ACM_COLLISION_OPTIONS_VERSION;
    (void)DCALL(d, acm_domain_get_collision(d, (f & 64) && (f & 128) ? NULL : &got));
}

static void op_param(prog *P, reader *r, acm_domain *d)
{
    const acm_param p = (acm_param)(u8(r) % 6);
    const int64_t v = i64(r);
    (void)DCALL(d, acm_domain_set_param(d, p, v));
    int64_t got, lo, hi;
    (void)DCALL(d, acm_domain_get_param(d, p, (v & 1) ? NULL : &got));
    check_known(P, acm_param_bounds(p, &lo, &hi), "acm_param_bounds");
}

static void reinitialised(prog *P)
{
    P->maybe_bad = false;
    P->diverged_stop = false;
}

static void op_init_uniform(prog *P, reader *r, acm_domain *d)
{
    const double rho = dens(r);
    double u[3];
    const double *up = maybe_vec(r, u, u8(r));
    if (DCALL(d, acm_domain_init_uniform(d, rho, up)) == ACM_OK && d != NULL) {
        reinitialised(P);
        if (step_of(P, d) != 0)
            die(P, "acm_domain_init_uniform did not reset the step counter");
    }
}

/* An array of n elements of dtype (1 float, 2 double, else double), value v, caller frees. */
static void *array_of(acm_dtype dtype, size_t n, double v)
{
    const size_t es = dtype == ACM_DTYPE_FLOAT32 ? sizeof(float) : sizeof(double);
    void *a = malloc(n * es + 8);
    if (a == NULL)
        abort();
    for (size_t k = 0; k < n; ++k) {
        if (dtype == ACM_DTYPE_FLOAT32)
            ((float *)a)[k] = (float)(isfinite(v) && fabs(v) > FLT_MAX ? copysign(INFINITY, v) : v);
        else
            ((double *)a)[k] = v;
    }
    return a;
}

static void put(acm_dtype dtype, void *a, size_t k, double v)
{
    if (dtype == ACM_DTYPE_FLOAT32)
        ((float *)a)[k] = (float)(isfinite(v) && fabs(v) > FLT_MAX ? copysign(INFINITY, v) : v);
    else
        ((double *)a)[k] = v;
}

static acm_dtype pick_dtype(reader *r)
{
    static const acm_dtype t[] = {ACM_DTYPE_FLOAT64, ACM_DTYPE_FLOAT32, ACM_DTYPE_FLOAT64,
                                  ACM_DTYPE_FLOAT32, (acm_dtype)0,      (acm_dtype)3};
    return t[u8(r) % COUNT(t)];
}

/* A size n, or a wrong one (n +- 1, 0) when flag says so. */
static size_t maybe_wrong(size_t n, uint8_t flag)
{
    switch (flag % 8) {
    case 5: return n + 1;
    case 6: return n > 0 ? n - 1 : 1;
    case 7: return 0;
    default: return n;
    }
}

static void op_init_fields(prog *P, reader *r, acm_domain *d)
{
    const acm_dtype dtype = pick_dtype(r);
    const uint8_t f = u8(r);
    const size_t cells = d != NULL ? (size_t)P->cells : 8;
    void *rho = NULL, *u = NULL;
    if (!(f & 1)) {
        rho = array_of(dtype, cells, (f & 2) ? dens(r) : 1.0);
        const int k = u8(r) % 4;
        for (int i = 0; i < k; ++i)
            put(dtype, rho, u16(r) % cells, dens(r));
    }
    if (!(f & 4)) {
        u = array_of(dtype, 3 * cells, (f & 8) ? vel(r) : 0.0);
        const int k = u8(r) % 4;
        for (int i = 0; i < k; ++i)
            put(dtype, u, u16(r) % (3 * cells), vel(r));
    }
    /* wrong cell counts only with arrays that hold them */
    size_t count = maybe_wrong(cells, f >> 4);
    if (count > cells && (rho != NULL || u != NULL))
        count = cells - (cells > 1);
    if (DCALL(d, acm_domain_init_fields(d, dtype, rho, u, count)) == ACM_OK && d != NULL)
        reinitialised(P);
    free(rho);
    free(u);
}

static int field_components(acm_field f)
{
    switch (f) {
    case ACM_FIELD_DENSITY: return 1;
    case ACM_FIELD_VELOCITY: return 3;
    case ACM_FIELD_FORCE: return 3;
    case ACM_FIELD_POPULATIONS: return 27;
    default: return 1;
    }
}

static void op_set_field(prog *P, reader *r, acm_domain *d)
{
    const acm_field field = (acm_field)(u8(r) % 6);
    const acm_dtype dtype = pick_dtype(r);
    const uint8_t f = u8(r);
    const size_t cells = d != NULL ? (size_t)P->cells : 8;
    const size_t n = cells * (size_t)field_components(field);
    const size_t es = dtype == ACM_DTYPE_FLOAT32 ? 4 : 8;
    if ((f & 7) == 7) { /* NULL, 0 bytes: removes the force field; refused for others */
        (void)DCALL(d, acm_domain_set_field(d, field, dtype, NULL, 0));
        return;
    }
    void *src = array_of(dtype, n, field == ACM_FIELD_POPULATIONS ? 1.0 / 27.0 : 0.0);
    if (field == ACM_FIELD_POPULATIONS && d != NULL && !(f & 8)) { /* the state as it is */
        double *now = populations(P, d, P->cells);
        if (now != NULL)
            for (size_t k = 0; k < n; ++k)
                put(dtype, src, k, now[k]);
        free(now);
    }
    if (field == ACM_FIELD_FORCE && (f & 8)) {
        const double v = vel(r);
        for (size_t k = 0; k < n; ++k)
            put(dtype, src, k, v);
    }
    const int k = u8(r) % 5;
    for (int i = 0; i < k; ++i) {
        const size_t at = u16(r) % n, at2 = u16(r) % n;
        const double v = dv(r);
        const double old = dtype == ACM_DTYPE_FLOAT32 ? ((float *)src)[at] : ((double *)src)[at];
        const double old2 = dtype == ACM_DTYPE_FLOAT32 ? ((float *)src)[at2] : ((double *)src)[at2];
        switch (u8(r) % 3) {
        case 0: put(dtype, src, at, v); break;
        case 1: put(dtype, src, at, old + v); break;
        default: /* a pair that cancels in the cell's sum */
            put(dtype, src, at, old + v);
            put(dtype, src, at2, old2 - v);
            break;
        }
    }
    size_t bytes = maybe_wrong(n, f >> 4) * es;
    if (bytes > n * es)
        bytes = (n - 1) * es; /* never claim more than the buffer holds */
    const acm_status st = DCALL(d, acm_domain_set_field(d, field, dtype, (f & 0x40) && (f & 8) ? NULL : src, bytes));
    free(src);
    if (st == ACM_OK && d != NULL && field == ACM_FIELD_POPULATIONS)
        reinitialised(P);
}

static void op_get_field(prog *P, reader *r, acm_domain *d)
{
    const acm_field field = (acm_field)(u8(r) % 6);
    const acm_dtype dtype = pick_dtype(r);
    const uint8_t f = u8(r);
    const size_t cells = d != NULL ? (size_t)P->cells : 8;
    const size_t es = dtype == ACM_DTYPE_FLOAT32 ? 4 : 8;
    const size_t n = cells * (size_t)field_components(field);
    size_t bytes = 0;
    (void)DCALL(d, acm_domain_field_size(d, field, dtype, (f & 1) && (f & 2) ? NULL : &bytes));
    void *dst = malloc(n * es + 8);
    if (dst == NULL)
        abort();
    size_t claim = maybe_wrong(n, f >> 4) * es;
    if (claim > n * es)
        claim = (n - 1) * es;
    (void)DCALL(d, acm_domain_get_field(d, field, dtype, (f & 4) && (f & 8) ? NULL : dst, claim));
    free(dst);
}

static int32_t cell_coord(reader *r, int32_t n)
{
    static const int32_t odd[] = {-1, INT32_MIN, INT32_MAX, 65535, -65536};
    const uint8_t b = u8(r);
    if (b < 200)
        return b % (n + 1); /* n: one past the grid */
    return odd[b % COUNT(odd)];
}

static void op_probe(prog *P, reader *r, acm_domain *d)
{
    const int32_t *n = P->n;
    const int32_t x = cell_coord(r, d ? n[0] : 4), y = cell_coord(r, d ? n[1] : 4),
                  z = cell_coord(r, d ? n[2] : 4);
    const uint8_t f = u8(r);
    double rho, u[3];
    (void)DCALL(d, acm_domain_probe(d, x, y, z, (f & 1) ? NULL : &rho, (f & 2) ? NULL : u));
}

static void op_sample_velocity(prog *P, reader *r, acm_domain *d)
{
    const uint8_t f = u8(r);
    const size_t count = f % 6; /* 0: refused */
    double pts[15], out[15];
    for (size_t k = 0; k < count; ++k)
        for (int a = 0; a < 3; ++a)
            pts[3 * k + (size_t)a] = coord(r, d ? P->n[a] : 4);
    if (f & 0x10) { /* queued, and collected or left (a count one too many: refused) */
        (void)DCALL(d, acm_domain_sample_velocity_begin(d, (f & 0x40) && (f & 0x80) ? NULL : pts,
                                                        count));
        if (f & 0x08) /* a begun read has at most 5 points: out holds them */
            (void)DCALL(d, acm_domain_sample_velocity_end(d, (f & 0x20) && (f & 0x80) ? NULL : out,
                                                          count + (f & 1)));
        return;
    }
    (void)DCALL(d, acm_domain_sample_velocity(d, (f & 0x40) && (f & 0x80) ? NULL : pts, count,
                                              (f & 0x20) && (f & 0x80) ? NULL : out));
}

static void op_stats(prog *P, reader *r, acm_domain *d)
{
    const uint8_t f = u8(r);
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = (f & 1) ? (f & 2 ? 0 : 2) : ACM_DOMAIN_STATS_VERSION;
    (void)DCALL(d, acm_domain_get_stats(d, (f & 4) && (f & 8) ? NULL : &s));
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    static const uint32_t versions[] = {ACM_DOMAIN_INFO_VERSION, 1, 0, 3};
    info.version = versions[(f >> 4) % 4];
    (void)DCALL(d, acm_domain_get_info(d, (f & 0x40) && (f & 0x80) ? NULL : &info));
}

/* Whether d's faces can step: opposite faces both periodic or both not (a pull
 * that wraps one way and bounces the other is no permutation, so no re-layout
 * can carry its state bitwise; acm_step refuses such faces). */
static bool faces_step(acm_domain *d)
{
    for (int a = 0; a < 3; ++a) {
        acm_boundary lo, hi;
        if (acm_domain_get_face(d, (acm_face)(2 * a), &lo, NULL) != ACM_OK ||
            acm_domain_get_face(d, (acm_face)(2 * a + 1), &hi, NULL) != ACM_OK ||
            (lo == ACM_BOUNDARY_PERIODIC) != (hi == ACM_BOUNDARY_PERIODIC))
            return false;
    }
    return true;
}

/* What d stores (ACM_STORAGE_*), 0 if it cannot say. */
static int64_t storage_of(acm_domain *d)
{
    acm_layout *l = NULL;
    int64_t v = 0;
    if (d != NULL && acm_layout_create(&l) == ACM_OK && acm_domain_get_layout(d, l) == ACM_OK)
        (void)acm_layout_get(l, ACM_LAYOUT_STORAGE, &v);
    acm_layout_destroy(l);
    return v;
}

/* set_layout: the state of a domain whose faces can step must come through
 * bitwise at the same precision, storage and streaming (and two arrays -> in
 * place), and be untouched when it fails. Across storages it need not: population storage going to moment
 * storage keeps what 10 moments a cell hold of it, and an inlet's or outlet's
 * layer cells hold other outward populations in each (lib/core/boundary.h). */
static void op_set_layout(prog *P, reader *r, acm_domain *d)
{
    const uint8_t f = u8(r);
    acm_layout *l = (f & 1) && (f & 2) ? NULL : make_layout(P, r);
    acm_domain_info before, after;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    before.version = after.version = ACM_DOMAIN_INFO_VERSION;
    double *f0 = NULL;
    const int64_t cells = P->cells;
    if (d != NULL && !P->maybe_bad && faces_step(d) &&
        DCALL(d, acm_domain_get_info(d, &before)) == ACM_OK)
        f0 = populations(P, d, cells);
    const int64_t stored_before = storage_of(d);
    const acm_status st = DCALL(d, acm_domain_set_layout(d, l));
    acm_layout_destroy(l);
    if (f0 != NULL && st != ACM_ERR_BAD_STATE && DCALL(d, acm_domain_get_info(d, &after)) == ACM_OK) {
        const bool other_storage = stored_before != storage_of(d);
        const bool same = st != ACM_OK || (before.precision == after.precision && !other_storage &&
                                           (before.streaming == after.streaming ||
                                            (before.streaming == ACM_STREAMING_TWO_ARRAYS &&
                                             after.streaming == ACM_STREAMING_IN_PLACE)));
        double *f1 = same ? populations(P, d, cells) : NULL;
        if (f1 != NULL && memcmp(f0, f1, (size_t)cells * 27 * sizeof(double)) != 0 &&
            !known(P, "kept"))
            die(P, "acm_domain_set_layout (status %d, precision %d -> %d, streaming %d -> %d) "
                   "changed the populations", (int)st, (int)before.precision,
                (int)after.precision, (int)before.streaming, (int)after.streaming);
        if (after.step != before.step)
            die(P, "acm_domain_set_layout changed the step counter");
        free(f1);
    }
    free(f0);
    if (d != NULL && (f & 4)) {
        acm_layout *got = NULL;
        if (acm_layout_create(&got) != ACM_OK)
            abort();
        (void)DCALL(d, acm_domain_get_layout(d, (f & 8) && (f & 16) ? NULL : got));
        char text[ACM_LAYOUT_STRING_SIZE];
        check_known(P, acm_layout_to_string(got, text, sizeof text), "acm_layout_to_string");
        acm_layout_destroy(got);
    }
}

static void op_policy(prog *P, reader *r, acm_domain *d)
{
    static const int64_t intervals[] = {0, 1, 2, 3, 5, 1, 2, -1, INT64_C(1) << 40,
                                        (INT64_C(1) << 40) + 1, 1000};
    const uint8_t f = u8(r);
    acm_divergence_policy pol;
    if (acm_divergence_policy_init(&pol, ACM_DIVERGENCE_POLICY_VERSION) != ACM_OK)
        die(P, "acm_divergence_policy_init failed");
    pol.action = (acm_divergence_action)(u8(r) % 3);
    pol.snapshot_interval = intervals[u8(r) % COUNT(intervals)];
    if (f & 1) {
        pol.callback = divergence_cb;
        pol.user_data = P;
        P->cb_mode = u8(r);
        const uint8_t k = u8(r);
        P->cb_destroy = (k & 0xF8) == 0xF8 ? k & 7 : 0; /* now and then */
    }
    if ((f & 6) == 6)
        pol.version = 2;
    (void)DCALL(d, acm_domain_set_divergence_policy(d, (f & 0x18) == 0x18 ? NULL : &pol));
    acm_divergence_policy got;
    memset(&got, 0, sizeof got);
    got.version = (f & 0x20) && (f & 0x40) ? 0 : ACM_DIVERGENCE_POLICY_VERSION;
    (void)DCALL(d, acm_domain_get_divergence_policy(d, (f & 0x80) && (f & 0x40) ? NULL : &got));
}

/* ---- solids ------------------------------------------------------------------------------- */

static acm_solid *pick_solid(prog *P, reader *r)
{
    const int i = u8(r) % (P->nsolids + 1);
    return i < P->nsolids ? P->solids[i] : NULL;
}

static void solid_options(prog *P, reader *r, acm_solid_options *o)
{
    static const double scales[] = {1, 1, 0.5, 2, 3, 1e-3, 10, 0, -1, NAN, 1e10, 0.25};
    static const double spc[] = {16, 1, 2, 4, 0.5, 400, 401, NAN, 1};
    static const double insets[] = {0.3, 0, 2, 2.1, -0.1, NAN, 1};
    static const double alphas[] = {2, 1, 0.5, 0, 2.1, NAN, 1e-9, 2};
    static const double masses[] = {0, 1, 1.2, 2, 1.19, 10, -1, NAN, 1e300, 0.5, 5, 100};
    if (acm_solid_options_init(o, ACM_SOLID_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_solid_options_init failed");
    const uint8_t f = u8(r), g = u8(r);
    if (f & 1)
        o->scale = scales[u8(r) % COUNT(scales)];
    for (int a = 0; a < 3; ++a)
        o->position[a] = coord(r, P->d ? P->n[a] : 4);
    if (f & 2)
        for (int a = 0; a < 4; ++a)
            o->orientation[a] = (u8(r) & 1) ? dv(r) : (a == 0 ? 0.0 : 1.0);
    o->samples_per_cell = spc[u8(r) % COUNT(spc)];
    if (g & 1)
        o->surface_inset = insets[u8(r) % COUNT(insets)];
    o->seed = u8(r);
    if (g & 2)
        o->ib_alpha = alphas[u8(r) % COUNT(alphas)];
    o->motion = (acm_motion)(u8(r) % 4);
    if (f & 4)
        for (int a = 0; a < 3; ++a) {
            o->velocity[a] = vel(r) / 4;
            o->angular_velocity[a] = vel(r) / 8;
        }
    if (f & 8) {
        o->density = masses[u8(r) % COUNT(masses)];
        o->mass = masses[u8(r) % COUNT(masses)];
        o->volume = masses[u8(r) % COUNT(masses)];
    }
    if (f & 16)
        for (int a = 0; a < 3; ++a)
            o->inertia[a] = masses[u8(r) % COUNT(masses)];
    if (f & 32)
        o->inertia[3 + u8(r) % 3] = dv(r);
    if (g & 4)
        for (int a = 0; a < 3; ++a)
            o->gravity[a] = vel(r) / 100;
    o->max_samples = 1 + u8(r) % 64;
    if ((f & 0xC0) == 0xC0)
        o->version = (g & 8) ? 0 : 2;
}

static void solid_created(prog *P, acm_domain *d, acm_status st, acm_solid *s, size_t before)
{
    if (d == NULL)
        return;
    size_t n = 0;
    if (DCALL(d, acm_domain_get_solids(d, NULL, 0, &n)) != ACM_OK)
        return;
    if (st == ACM_OK) {
        if (s == NULL)
            die(P, "acm_solid_create succeeded without a solid");
        if (P->nsolids < MAX_SOLIDS)
            P->solids[P->nsolids++] = s;
        else
            acm_solid_destroy(s);
        if (n != before + 1)
            die(P, "acm_solid_create succeeded but the domain lists %zu solids (%zu before)", n,
                before);
    } else if (n != before) {
        die(P, "acm_solid_create failed with %d but the domain lists %zu solids (%zu before)",
            (int)st, n, before);
    }
}

static void op_solid_samples(prog *P, reader *r, acm_domain *d)
{
    static const double areas[] = {1, 0.5, 0.1, 2, 0, -1, NAN, 1e300, 1};
    acm_solid_options o;
    solid_options(P, r, &o);
    const uint8_t f = u8(r);
    const size_t n = 1 + f % 8;
    double pts[24], ar[8];
    for (size_t k = 0; k < n; ++k) {
        for (int a = 0; a < 3; ++a) {
            const uint8_t b = u8(r);
            pts[3 * k + (size_t)a] = b < 240 ? (b % 33 - 16) / 8.0 : dv(r);
        }
        ar[k] = areas[u8(r) % COUNT(areas)];
    }
    if (known(P, "reach")) /* FUZZ_API_IGNORE=reach: no samples beyond 2^20 cells */
        for (size_t k = 0; k < 3 * n; ++k)
            if (!(fabs(pts[k]) <= 0x1p20))
                return;
    o.sample_count = (f & 0x18) == 0x18 ? 0 : n;
    o.sample_points = (f & 0x60) == 0x60 ? NULL : pts;
    o.sample_areas = ar;
    acm_solid *s = NULL;
    const size_t before = (size_t)P->nsolids;
    const acm_status st = DCALL(d, acm_solid_create((f & 0x80) && (f & 1) ? NULL : &s, d,
                                                    (f & 0x80) && (f & 2) ? NULL : &o));
    solid_created(P, d, st, s, before);
}

/* Small meshes: a few closed ones, an open one, and one from the input. */
static acm_mesh *make_mesh(prog *P, reader *r)
{
    static const double cube_v[] = {-.5, -.5, -.5, .5, -.5, -.5, .5, .5, -.5, -.5, .5, -.5,
                                    -.5, -.5, .5,  .5, -.5, .5,  .5, .5, .5,  -.5, .5, .5};
    static const uint32_t cube_t[] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                                      1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
    static const uint32_t cube_inv[] = {0, 1, 2, 0, 2, 3, 4, 6, 5, 4, 7, 6, 0, 5, 1, 0, 4, 5,
                                        1, 6, 2, 1, 5, 6, 2, 7, 3, 2, 6, 7, 3, 4, 0, 3, 7, 4};
    static const double tet_v[] = {1, 1, 1, 1, -1, -1, -1, 1, -1, -1, -1, 1};
    static const uint32_t tet_t[] = {0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 3, 2};
    static const double tri_v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    static const uint32_t tri_t[] = {0, 1, 2};
    static const uint64_t max_tris[] = {0, 0, 1, 4, 100};
    const uint8_t kind = u8(r), f = u8(r);
    double v[24];
    uint32_t t[24];
    const double *vp;
    const uint32_t *tp;
    size_t nv, nt;
    switch (kind % 5) {
    case 0: vp = cube_v; tp = cube_t; nv = 8; nt = 12; break;
    case 1: vp = cube_v; tp = cube_inv; nv = 8; nt = 12; break;
    case 2: vp = tet_v; tp = tet_t; nv = 4; nt = 4; break;
    case 3: vp = tri_v; tp = tri_t; nv = 3; nt = 1; break;
    default:
        nv = 3 + u8(r) % 6;
        nt = 1 + u8(r) % 8;
        for (size_t k = 0; k < 3 * nv; ++k) {
            const uint8_t b = u8(r);
            v[k] = b < 240 ? (b % 9 - 4) * 0.5 : dv(r);
        }
        for (size_t k = 0; k < 3 * nt; ++k)
            t[k] = u8(r) % (uint32_t)(nv + (k % 7 == 6)); /* now and then one past the end */
        vp = v;
        tp = t;
        break;
    }
    char err[256] = "";
    acm_mesh_options mo;
    if (acm_mesh_options_init(&mo, ACM_MESH_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_mesh_options_init failed");
    mo.max_triangles = max_tris[f % COUNT(max_tris)];
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    if ((f & 0x18) == 0x18)
        mo.version = 0;
    acm_mesh *m = NULL;
    const acm_status st = acm_mesh_create((f & 0x60) == 0x60 ? NULL : &m, (f & 0x80) && (f & 4) ? NULL : vp,
                                          nv, tp, nt, (f & 0x80) && (f & 2) ? NULL : &mo);
    check_internal(P, st, "acm_mesh_create", err);
    check_known(P, st, "acm_mesh_create");
    if (st != ACM_OK) {
        if (m != NULL)
            die(P, "acm_mesh_create failed with %d but wrote a mesh", (int)st);
        if (!((f & 0x80) && (f & 2)) && err[0] == '\0' && mo.version == ACM_MESH_OPTIONS_VERSION)
            die(P, "acm_mesh_create failed with %d (%s) and wrote no message", (int)st,
                acm_status_string(st));
        return NULL;
    }
    acm_mesh_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_MESH_INFO_VERSION;
    if (acm_mesh_get_info(m, &info) != ACM_OK)
        die(P, "acm_mesh_get_info failed on a new mesh");
    if (info.vertex_count <= 8 && info.triangle_count <= 12) {
        double gv[24];
        uint32_t gt[36];
        if (acm_mesh_get_vertices(m, gv, (size_t)info.vertex_count) != ACM_OK ||
            acm_mesh_get_triangles(m, gt, (size_t)info.triangle_count) != ACM_OK)
            die(P, "acm_mesh_get_vertices/triangles failed with the mesh's counts");
        const acm_status wrong = acm_mesh_get_vertices(m, gv, (size_t)info.vertex_count - 1);
        check_known(P, wrong, "acm_mesh_get_vertices");
        if (wrong == ACM_OK)
            die(P, "acm_mesh_get_vertices took a wrong count");
    } else {
        die(P, "a mesh of %zu vertices and %zu triangles has %llu and %llu", nv, nt,
            (unsigned long long)info.vertex_count, (unsigned long long)info.triangle_count);
    }
    return m;
}

static void op_solid_mesh(prog *P, reader *r, acm_domain *d)
{
    acm_mesh *m = make_mesh(P, r);
    acm_solid_options o;
    solid_options(P, r, &o);
    const uint8_t f = u8(r);
    o.mesh = m;
    if (m == NULL || (f & 3) == 3) { /* both a mesh and samples, or neither */
        static const double pt[3] = {0, 0, 0}, area = 1.0;
        o.sample_count = (f & 4) ? 1 : 0;
        o.sample_points = pt;
        o.sample_areas = &area;
    }
    acm_solid *s = NULL;
    const size_t before = (size_t)P->nsolids;
    const acm_status st = DCALL(d, acm_solid_create(&s, d, &o));
    acm_mesh_destroy(m); /* the solid keeps what it needs */
    solid_created(P, d, st, s, before);
}

static void op_solid_destroy(prog *P, reader *r)
{
    acm_solid *s = pick_solid(P, r);
    acm_solid_destroy(s);
    for (int i = 0; i < P->nsolids; ++i)
        if (P->solids[i] == s) {
            memmove(P->solids + i, P->solids + i + 1, (size_t)(P->nsolids - i - 1) * sizeof *P->solids);
            P->nsolids--;
            break;
        }
}

static void op_solid_state(prog *P, reader *r)
{
    acm_solid *s = pick_solid(P, r);
    const uint8_t f = u8(r);
    acm_solid_state st;
    memset(&st, 0, sizeof st);
    st.version = ACM_SOLID_STATE_VERSION;
    (void)SCALL(s, acm_solid_get_state(s, &st));
    if (s == NULL)
        st.orientation[0] = 1.0;
    const int k = 1 + u8(r) % 3;
    for (int i = 0; i < k; ++i) {
        const uint8_t which = u8(r) % 4, a = u8(r) % 3;
        switch (which) {
        case 0: st.position[a] = coord(r, P->d ? P->n[a] : 4); break;
        case 1: st.orientation[u8(r) % 4] = dv(r); break;
        case 2: st.velocity[a] = vel(r); break;
        default: st.angular_velocity[a] = vel(r) / 4; break;
        }
    }
    if ((f & 3) == 3)
        st.version = 2;
    (void)SCALL(s, acm_solid_set_state(s, (f & 0xC) == 0xC ? NULL : &st));
    if (f & 0x10) {
        acm_solid_state got;
        memset(&got, 0, sizeof got);
        got.version = (f & 0x20) ? 0 : ACM_SOLID_STATE_VERSION;
        (void)SCALL(s, acm_solid_get_state(s, (f & 0x40) && (f & 0x80) ? NULL : &got));
    }
}

/* FUZZ_API_IGNORE=nanpose: no inside tests on a solid whose pose is not finite
 * (a free body that diverged). */
static bool nan_pose(prog *P, acm_solid *s)
{
    if (s == NULL || !known(P, "nanpose"))
        return false;
    acm_solid_state st;
    memset(&st, 0, sizeof st);
    st.version = ACM_SOLID_STATE_VERSION;
    if (acm_solid_get_state(s, &st) != ACM_OK)
        return false;
    for (int a = 0; a < 4; ++a)
        if (!isfinite(st.orientation[a]) || (a < 3 && !isfinite(st.position[a])))
            return true;
    return false;
}

static void op_solid_misc(prog *P, reader *r)
{
    acm_solid *s = pick_solid(P, r);
    const uint8_t what = u8(r), f = u8(r);
    if ((what % 7 == 4 || what % 7 == 5) && nan_pose(P, s))
        return;
    switch (what % 7) {
    case 0:
        (void)SCALL(s, acm_solid_set_motion(s, (acm_motion)(f % 4)));
        break;
    case 1: {
        double force[3], torque[3];
        const double *fp = maybe_vec(r, force, f), *tp = maybe_vec(r, torque, f >> 3);
        (void)SCALL(s, acm_solid_set_load(s, fp, tp));
        break;
    }
    case 2: {
        double force[3], torque[3];
        (void)SCALL(s, acm_solid_get_force(s, (f & 1) ? NULL : force, (f & 2) ? NULL : torque));
        break;
    }
    case 3: {
        acm_solid_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_SOLID_INFO_VERSION;
        uint64_t count = 0;
        if (SCALL(s, acm_solid_get_info(s, &info)) == ACM_OK)
            count = info.sample_count;
        if (count > 4096)
            die(P, "a solid of at most 64 samples has %llu", (unsigned long long)count);
        double *dst = malloc(3 * sizeof(double) * ((size_t)count + 1));
        if (dst == NULL)
            abort();
        size_t claim = maybe_wrong((size_t)count, f);
        if (claim > count)
            claim = count > 0 ? (size_t)count - 1 : 0;
        (void)SCALL(s, acm_solid_get_samples(s, (f & 8) && (f & 16) ? NULL : dst, claim));
        free(dst);
        break;
    }
    case 4: {
        double pt[3];
        for (int a = 0; a < 3; ++a)
            pt[a] = coord(r, P->d ? P->n[a] : 4);
        int inside;
        (void)SCALL(s, acm_solid_is_inside(s, (f & 3) == 3 ? NULL : pt, (f & 12) == 12 ? NULL : &inside));
        break;
    }
    case 5: {
        const size_t cells = P->d ? (size_t)P->cells : 8;
        uint8_t *occ = calloc(cells + 1, 1);
        if (occ == NULL)
            abort();
        size_t claim = maybe_wrong(cells, f);
        if (claim > cells)
            claim = cells - (cells > 1);
        (void)SCALL(s, acm_solid_mark_occupancy(s, (f & 8) && (f & 16) ? NULL : occ, claim));
        free(occ);
        break;
    }
    default: {
        acm_solid_info info;
        memset(&info, 0, sizeof info);
        info.version = (f & 1) ? 2 : ACM_SOLID_INFO_VERSION;
        (void)SCALL(s, acm_solid_get_info(s, (f & 6) == 6 ? NULL : &info));
        break;
    }
    }
}

/* ---- smokes ------------------------------------------------------------------------------- */

static acm_smoke *pick_smoke(prog *P, reader *r)
{
    const int i = u8(r) % (P->nsmokes + 1);
    return i < P->nsmokes ? P->smokes[i] : NULL;
}

static void op_smoke_create(prog *P, reader *r, acm_domain *d)
{
    static const uint64_t caps[] = {1, 2, 16, 100, MAX_CAPACITY, 0, UINT64_C(1) << 31, UINT64_MAX, 7, 64};
    const uint8_t f = u8(r);
    acm_smoke_options o;
    if (acm_smoke_options_init(&o, ACM_SMOKE_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_smoke_options_init failed");
    o.capacity = caps[u8(r) % COUNT(caps)];
    o.seed = u8(r);
    if ((f & 3) == 3)
        o.version = 2;
    acm_smoke *s = NULL;
    const acm_status st = DCALL(d, acm_smoke_create((f & 0x30) == 0x30 ? NULL : &s, d,
                                                    (f & 0xC0) == 0xC0 ? NULL : &o));
    if (st == ACM_OK) {
        if (s == NULL)
            die(P, "acm_smoke_create succeeded without a smoke");
        if (P->nsmokes < MAX_SMOKES)
            P->smokes[P->nsmokes++] = s;
        else
            acm_smoke_destroy(s);
    }
}

static void op_smoke_destroy(prog *P, reader *r)
{
    acm_smoke *s = pick_smoke(P, r);
    acm_smoke_destroy(s);
    for (int i = 0; i < P->nsmokes; ++i)
        if (P->smokes[i] == s) {
            memmove(P->smokes + i, P->smokes + i + 1, (size_t)(P->nsmokes - i - 1) * sizeof *P->smokes);
            P->nsmokes--;
            break;
        }
}

static void op_emitter(prog *P, reader *r)
{
    static const double radii[] = {0, 1, 3, -1, NAN, 1e300, 0.5};
    static const double rates[] = {0, 0.5, 1, 3, 50, 1e9, 1e30, INFINITY, NAN, -1, 4096, 0.25};
    static const int64_t lifetimes[] = {0, 1, 5, 100, -1, INT32_MAX, (int64_t)INT32_MAX + 1, INT64_MIN, 3};
    static const double offsets[] = {0, 1, 4, 4.1, -1, NAN, 0.5};
    static const uint32_t versions[] = {2, 2, 2, 1, 0, 3};
    acm_smoke *s = pick_smoke(P, r);
    acm_emitter e = ACM_EMITTER_INIT;
    e.version = versions[u8(r) % COUNT(versions)];
    e.shape = (acm_emitter_shape)(u8(r) % 6);
    const int32_t *n = P->n;
    const bool dom = P->d != NULL;
    for (int a = 0; a < 3; ++a) {
        e.lo[a] = coord(r, dom ? n[a] : 4);
        e.hi[a] = coord(r, dom ? n[a] : 4);
        if (e.lo[a] > e.hi[a] && (u8(r) & 1)) {
            const double t = e.lo[a];
            e.lo[a] = e.hi[a];
            e.hi[a] = t;
        }
        e.centre[a] = coord(r, dom ? n[a] : 4);
    }
    e.radius = radii[u8(r) % COUNT(radii)];
    double pts[12];
    const uint8_t f = u8(r);
    e.point_count = f % 5; /* 0: refused */
    for (size_t k = 0; k < e.point_count; ++k)
        for (int a = 0; a < 3; ++a)
            pts[3 * k + (size_t)a] = coord(r, dom ? n[a] : 4);
    e.points = (f & 0x18) == 0x18 ? NULL : pts;
    e.rate = rates[u8(r) % COUNT(rates)];
    e.lifetime = lifetimes[u8(r) % COUNT(lifetimes)];
    e.solid = pick_solid(P, r);
    e.offset = offsets[u8(r) % COUNT(offsets)];
    (void)KCALL(s, acm_smoke_add_emitter(s, (f & 0xE0) == 0xE0 ? NULL : &e));
}

static void op_smoke_query(prog *P, reader *r)
{
    acm_smoke *s = pick_smoke(P, r);
    const uint8_t what = u8(r), f = u8(r);
    acm_smoke_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SMOKE_INFO_VERSION;
    const bool have = s != NULL && KCALL(s, acm_smoke_get_info(s, &info)) == ACM_OK;
    if (have && info.alive > info.capacity)
        die(P, "a smoke of capacity %llu has %llu particles alive",
            (unsigned long long)info.capacity, (unsigned long long)info.alive);
    switch (what % 5) {
    case 0: {
        acm_smoke_info i2;
        memset(&i2, 0, sizeof i2);
        i2.version = (f & 1) ? 1 : (f & 2 ? 3 : ACM_SMOKE_INFO_VERSION);
        (void)KCALL(s, acm_smoke_get_info(s, (f & 12) == 12 ? NULL : &i2));
        break;
    }
    case 1: {
        size_t count = have ? (size_t)info.alive : 4;
        switch (f % 4) {
        case 1: count = count > 0 ? count - 1 : 0; break;
        case 2: count = have ? (size_t)info.capacity : count; break;
        default: break;
        }
        double *dst = malloc(3 * sizeof(double) * (count + 1));
        if (dst == NULL)
            abort();
        size_t written = 0;
        const acm_status st = KCALL(s, acm_smoke_get_particles(s, (f & 0x30) == 0x30 ? NULL : dst,
                                                               count, (f & 4) ? NULL : &written));
        if (st == ACM_OK && !(f & 4) && written > count)
            die(P, "acm_smoke_get_particles wrote %zu particles into room for %zu", written, count);
        free(dst);
        break;
    }
    case 2: {
        static const int32_t subs[] = {1, 2, 3, 8, 0, 9, -1, 1};
        const int32_t sub = subs[(f >> 2) % COUNT(subs)];
        const int32_t k = sub >= 1 && sub <= 8 ? sub : 1;
        const size_t cells = P->d ? (size_t)P->cells : 8;
        size_t voxels = cells * (size_t)(k * k * k);
        if (voxels > 200000) /* keep it cheap */
            break;
        P->budget -= (int64_t)voxels / 8;
        float *dst = malloc(sizeof(float) * (voxels + 1));
        if (dst == NULL)
            abort();
        size_t claim = maybe_wrong(voxels, f >> 5);
        if (claim > voxels)
            claim = voxels - (voxels > 1);
        (void)KCALL(s, acm_smoke_density(s, sub, (f & 3) == 3 ? NULL : dst, claim));
        free(dst);
        break;
    }
    case 3: {
        static const char *const paths[] = {p_ply, p_ply, NULL, "", p_missing, dir};
        const acm_particle_format fmt = (acm_particle_format)(f % 4);
        (void)KCALL(s, acm_smoke_export(s, paths[(f >> 2) % COUNT(paths)], fmt));
        break;
    }
    default: {
        static const int32_t subs[] = {1, 2, 0, 9, 1};
        const int32_t sub = subs[f % COUNT(subs)];
        const size_t cells = P->d ? (size_t)P->cells : 8;
        if (cells * (size_t)(sub * sub * sub) > 20000)
            break;
        static const char *const paths[] = {p_dens, p_dens, NULL, p_missing};
        (void)KCALL(s, acm_smoke_export_density(s, paths[(f >> 4) % COUNT(paths)], sub));
        break;
    }
    }
}

/* The domain's lists of solids and smokes are exactly the live handles. */
static void op_lists(prog *P, reader *r, acm_domain *d)
{
    const uint8_t f = u8(r);
    acm_solid *solids[MAX_SOLIDS + 2];
    acm_smoke *smokes[MAX_SMOKES + 2];
    size_t n = 0;
    const size_t room = (f & 1) ? 1 : MAX_SOLIDS + 2;
    if (DCALL(d, acm_domain_get_solids(d, (f & 6) == 6 ? NULL : solids, (f & 8) ? 0 : room,
                                       (f & 0x30) == 0x30 ? NULL : &n)) == ACM_OK &&
        !(f & 8) && (f & 6) != 6 && (f & 0x30) != 0x30) {
        if (n != (size_t)P->nsolids)
            die(P, "acm_domain_get_solids lists %zu solids; %d are alive", n, P->nsolids);
        for (size_t i = 0; i < n && i < room; ++i)
            if (solids[i] != P->solids[i])
                die(P, "acm_domain_get_solids: solid %zu is not the one created %zu-th", i, i);
    }
    const size_t room2 = (f & 1) ? 1 : MAX_SMOKES + 2;
    if (DCALL(d, acm_domain_get_smokes(d, (f & 0x40) ? NULL : smokes, (f & 0x40) ? 0 : room2,
                                       (f & 0x80) && (f & 0x20) ? NULL : &n)) == ACM_OK &&
        !(f & 0x40) && !((f & 0x80) && (f & 0x20))) {
        if (n != (size_t)P->nsmokes)
            die(P, "acm_domain_get_smokes lists %zu smokes; %d are alive", n, P->nsmokes);
        for (size_t i = 0; i < n && i < room2; ++i)
            if (smokes[i] != P->smokes[i])
                die(P, "acm_domain_get_smokes: smoke %zu is not the one created %zu-th", i, i);
    }
}

/* ---- checkpoints, exports, the autotuner -------------------------------------------------- */

static acm_status load(prog *P, const char *path, uint8_t f, acm_domain **out)
{
    char err[512] = "";
    acm_load_options lo;
    if (acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_load_options_init failed");
    lo.backend = (acm_backend)((f >> 1) % 4);
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    if ((f & 0x30) == 0x30) {
        lo.error_buffer = NULL;
        lo.error_buffer_size = (f & 0x40) ? 16 : 0;
    }
    if ((f & 0x48) == 0x48)
        lo.version = 2;
    const acm_status st = acm_domain_load(out, path, (f & 0x81) == 0x81 ? NULL : &lo);
    check_internal(P, st, "acm_domain_load", err);
    check_known(P, st, "acm_domain_load");
    if (st != ACM_OK) {
        if (*out != NULL)
            die(P, "acm_domain_load failed with %d but wrote a domain", (int)st);
        if ((f & 0x81) != 0x81 && lo.error_buffer != NULL && err[0] == '\0')
            die(P, "acm_domain_load failed with %d (%s) and wrote no message", (int)st,
                acm_status_string(st));
    } else if (*out == NULL) {
        die(P, "acm_domain_load succeeded without a domain");
    }
    return st;
}

static void op_save(prog *P, reader *r, acm_domain *d)
{
    static const char *const paths[] = {p_ckpt, p_ckpt, p_ckpt, NULL, "", p_missing, dir};
    const uint8_t f = u8(r);
    const char *path = paths[f % COUNT(paths)];
    P->budget -= P->cells * 2;
    const acm_status st = DCALL(d, acm_domain_save(d, path));
    if (d == NULL)
        return;
    if (path == p_ckpt && st == ACM_OK) {
        P->ckpt_exists = true;
        P->ckpt_maybe_bad = P->maybe_bad;
    }
    if (path != p_ckpt || st != ACM_OK || (f & 0x80))
        return;
    /* the round trip: the same populations, step, solids and smokes */
    acm_domain *e = NULL;
    P->budget -= P->cells * 2;
    if (load(P, p_ckpt, (uint8_t)(ACM_BACKEND_CPU << 1), &e) != ACM_OK)
        return;
    double *f0 = P->maybe_bad ? NULL : populations(P, d, P->cells);
    double *f1 = f0 != NULL ? populations(P, e, P->cells) : NULL;
    if (f0 != NULL && f1 != NULL && memcmp(f0, f1, (size_t)P->cells * 27 * sizeof(double)) != 0 &&
            !known(P, "kept"))
        die(P, "the domain loaded from a checkpoint has other populations than the one saved");
    free(f0);
    free(f1);
    if (step_of(P, d) != step_of(P, e))
        die(P, "the domain loaded from a checkpoint has another step counter");
    size_t ns = 0, nk = 0;
    if (DCALL(e, acm_domain_get_solids(e, NULL, 0, &ns)) == ACM_OK && ns != (size_t)P->nsolids)
        die(P, "the loaded domain has %zu solids; %d were saved", ns, P->nsolids);
    if (DCALL(e, acm_domain_get_smokes(e, NULL, 0, &nk)) == ACM_OK && nk != (size_t)P->nsmokes)
        die(P, "the loaded domain has %zu smokes; %d were saved", nk, P->nsmokes);
    acm_domain_destroy(e);
}

static void op_load(prog *P, reader *r)
{
    const uint8_t f = u8(r), g = u8(r);
    const char *path;
    switch (g % 6) {
    case 0: case 1: case 2: path = P->ckpt_exists ? p_ckpt : p_vti; break;
    case 3: path = p_vti; break;
    case 4: path = (g & 8) ? NULL : p_missing; break;
    default: path = dir; break;
    }
    acm_domain *e = NULL;
    acm_layout *layout = NULL;
    P->budget -= (P->cells > 0 ? P->cells : 100) * 2;
    acm_status st;
    if (g & 0x40) { /* with a layout */
        char err[512] = "";
        acm_load_options lo;
        (void)acm_load_options_init(&lo, ACM_LOAD_OPTIONS_VERSION);
        lo.backend = ACM_BACKEND_CPU;
        layout = make_layout(P, r);
        lo.layout = layout;
        lo.error_buffer = err;
        lo.error_buffer_size = sizeof err;
        st = acm_domain_load((g & 0x80) && (g & 0x20) ? NULL : &e, path, &lo);
        check_internal(P, st, "acm_domain_load", err);
    check_known(P, st, "acm_domain_load");
        if (st != ACM_OK && err[0] == '\0')
            die(P, "acm_domain_load with a layout failed with %d and wrote no message", (int)st);
    } else {
        st = load(P, path, f, &e);
    }
    acm_layout_destroy(layout);
    if (st != ACM_OK)
        return;
    const bool bad = path == p_ckpt && P->ckpt_maybe_bad;
    if (g & 0x10) { /* it replaces the current domain */
        destroy_domain(P);
        adopt(P, e);
        take_handles(P);
        P->maybe_bad = bad;
        return;
    }
    /* else: a step and a look, then away */
    (void)DCALL(e, acm_step(e, 1));
    acm_domain_stats s;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    (void)DCALL(e, acm_domain_get_stats(e, &s));
    acm_domain_destroy(e);
}

static void op_export(prog *P, reader *r, acm_domain *d)
{
    static const char *const paths[] = {p_vti, p_vti, p_vti, NULL, "", p_missing, dir};
    const uint8_t f = u8(r);
    acm_field fields[6];
    const size_t count = f % 6; /* 0: refused */
    for (size_t k = 0; k < count; ++k) {
        const uint8_t b = u8(r);
        fields[k] = (acm_field)(b < 250 ? 1 + b % 4 : b % 7);
    }
    P->budget -= P->cells;
    (void)DCALL(d, acm_domain_export_vti(d, paths[(f >> 3) % COUNT(paths)],
                                         (f & 0xC0) == 0xC0 ? NULL : fields, count));
}

static void op_autotune(prog *P, reader *r, acm_domain *d)
{
    static const double budgets[] = {0.001, 0.002, -1, NAN, 0.001, 1e-9};
    static const int64_t windows[] = {1, 2, 3, -1, 1};
    static const uint32_t flags[] = {0, ACM_TUNE_STREAMING, ACM_TUNE_EXHAUSTIVE, 1u << 6,
                                     ACM_TUNE_PRECISION, ACM_TUNE_REFRESH, ACM_TUNE_STORAGE, 0};
    const uint8_t f = u8(r), g = u8(r);
    if (d != NULL && P->cells * 40 > P->budget)
        return;
    P->budget -= P->cells * 40;
    acm_tune_options to;
    if (acm_tune_options_init(&to, ACM_TUNE_OPTIONS_VERSION) != ACM_OK)
        die(P, "acm_tune_options_init failed");
    to.time_budget_s = budgets[f % COUNT(budgets)];
    to.window_steps = windows[(f >> 3) % COUNT(windows)];
    to.flags = flags[g % COUNT(flags)];
    to.cache_path = (g & 0x10) ? p_cache : NULL;
    to.progress = tune_cb; /* always: it ends the search after a few candidates */
    to.user_data = P;
    P->tune_calls = 0;
    P->tune_cancel_after = (g >> 5) % 3;
    P->tune_destroy = (f & 0x38) == 0x38 ? (f & 7) : 0;
    if (g & 0x80)
        to.version = 2;
    acm_layout *best = NULL;
    if (acm_layout_create(&best) != ACM_OK)
        abort();
    double *f0 = P->maybe_bad ? NULL : populations(P, d, P->cells);
    const int64_t step0 = d ? step_of(P, d) : 0;
    acm_tune_report *rep = NULL;
    const acm_status st = DCALL(d, acm_domain_autotune(d, &to, (f & 0xC0) == 0xC0 ? NULL : best,
                                                       (f & 0x40) ? NULL : &rep));
    const bool gone = domain_gone(P);
    if (f0 != NULL && !gone && st != ACM_ERR_BAD_STATE) {
        double *f1 = populations(P, d, P->cells);
        if (f1 != NULL && memcmp(f0, f1, (size_t)P->cells * 27 * sizeof(double)) != 0 &&
            !known(P, "kept"))
            die(P, "acm_domain_autotune (status %d) did not put the populations back", (int)st);
        free(f1);
        if (step_of(P, d) != step0)
            die(P, "acm_domain_autotune did not put the step counter back");
    }
    free(f0);
    if (rep != NULL) {
        acm_tune_summary sum;
        memset(&sum, 0, sizeof sum);
        sum.version = ACM_TUNE_SUMMARY_VERSION;
        check_known(P, acm_tune_report_summary(rep, &sum), "acm_tune_report_summary");
        acm_tune_entry e;
        memset(&e, 0, sizeof e);
        e.version = ACM_TUNE_ENTRY_VERSION;
        check_known(P, acm_tune_report_entry(rep, 0, &e), "acm_tune_report_entry");
        if (acm_tune_report_entry(rep, -1, &e) == ACM_OK ||
            acm_tune_report_entry(rep, sum.entries, &e) == ACM_OK)
            die(P, "acm_tune_report_entry took an index outside [0, %d)", sum.entries);
        check_known(P, acm_tune_report_write_csv(rep, p_csv), "acm_tune_report_write_csv");
        acm_tune_report_destroy(rep);
    } else if (st == ACM_OK && !(f & 0x40)) {
        die(P, "acm_domain_autotune succeeded without a report");
    }
    acm_layout_destroy(best);
}

/* ---- the program -------------------------------------------------------------------------- */

static void clean_files(void);

/* The directory goes with the process (not after a crash: its files may help). */
static void remove_dir(void)
{
    clean_files();
    (void)rmdir(dir);
}

static void setup_paths(void)
{
    if (dir[0] != '\0')
        return;
    snprintf(dir, sizeof dir, "/tmp/fuzz-api-%ld", (long)getpid());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0)
        abort();
    snprintf(p_ckpt, sizeof p_ckpt, "%s/a.ckpt", dir);
    snprintf(p_vti, sizeof p_vti, "%s/a.vti", dir);
    snprintf(p_ply, sizeof p_ply, "%s/p.ply", dir);
    snprintf(p_dens, sizeof p_dens, "%s/d.vti", dir);
    snprintf(p_csv, sizeof p_csv, "%s/t.csv", dir);
    snprintf(p_cache, sizeof p_cache, "%s/cache.txt", dir);
    snprintf(p_missing, sizeof p_missing, "%s/no/such/dir/x", dir);
    atexit(remove_dir);
}

/* Every input starts from an empty directory: no file of an earlier input shows. */
static void clean_files(void)
{
    const char *files[] = {p_ckpt, p_vti, p_ply, p_dens, p_csv, p_cache};
    for (size_t k = 0; k < COUNT(files); ++k)
        remove(files[k]);
}

enum {
    OP_STEP, OP_FACE, OP_FORCE, OP_COLLISION, OP_PARAM, OP_INIT_UNIFORM, OP_INIT_FIELDS,
    OP_SET_FIELD, OP_GET_FIELD, OP_PROBE, OP_SAMPLE, OP_STATS, OP_LAYOUT, OP_POLICY, OP_LISTS,
    OP_SAVE, /* 0-15 can also run on a NULL domain */
    OP_EXPORT, OP_AUTOTUNE, OP_SOLID_SAMPLES, OP_SOLID_MESH, OP_SOLID_DESTROY, OP_SOLID_STATE,
    OP_SOLID_MISC, OP_SMOKE_CREATE, OP_SMOKE_DESTROY, OP_EMITTER, OP_SMOKE_QUERY, OP_LOAD,
    OP_CREATE, OP_DESTROY, OP_STEP2, OP_SOLID_MISC2, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "step", "set_face", "set_body_force", "set_collision", "set_param", "init_uniform",
    "init_fields", "set_field", "get_field", "probe", "sample_velocity", "get_stats/info",
    "set_layout", "divergence_policy", "get_solids/smokes", "save", "export_vti", "autotune",
    "solid_create(samples)", "solid_create(mesh)", "solid_destroy", "solid_state",
    "solid_misc", "smoke_create", "smoke_destroy", "smoke_add_emitter", "smoke_query", "load",
    "create", "destroy", "step", "solid_misc"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static prog P0;
    prog *P = &P0;
    setup_paths();
    clean_files();
    memset(P, 0, sizeof *P);
    P->budget = WORK_BUDGET;
    reader rd = {data, size, 0}, *r = &rd;
    P->opname = "header";
    op_create(P, r);
    for (P->op = 1; P->op <= MAX_OPS && r->i < r->n && P->budget > 0; ++P->op) {
        const uint8_t b = u8(r);
        const bool null_domain = b >= 240; /* ops 0-15 on a NULL domain */
        const int op = null_domain ? b - 240 : b % OP_COUNT;
        acm_domain *d = null_domain ? NULL : P->d;
        P->opname = op_names[op];
        P->budget -= 50; /* every call costs something */
        switch (op) {
        case OP_STEP: case OP_STEP2: op_step(P, r, d); break;
        case OP_FACE: op_set_face(P, r, d); break;
        case OP_FORCE: op_body_force(P, r, d); break;
        case OP_COLLISION: op_collision(P, r, d); break;
        case OP_PARAM: op_param(P, r, d); break;
        case OP_INIT_UNIFORM: op_init_uniform(P, r, d); break;
        case OP_INIT_FIELDS: op_init_fields(P, r, d); break;
        case OP_SET_FIELD: op_set_field(P, r, d); break;
        case OP_GET_FIELD: op_get_field(P, r, d); break;
        case OP_PROBE: op_probe(P, r, d); break;
        case OP_SAMPLE: op_sample_velocity(P, r, d); break;
        case OP_STATS: op_stats(P, r, d); break;
        case OP_LAYOUT: op_set_layout(P, r, d); break;
        case OP_POLICY: op_policy(P, r, d); break;
        case OP_LISTS: op_lists(P, r, d); break;
        case OP_SAVE: op_save(P, r, d); break;
        case OP_EXPORT: op_export(P, r, d); break;
        case OP_AUTOTUNE: op_autotune(P, r, d); break;
        case OP_SOLID_SAMPLES: op_solid_samples(P, r, d); break;
        case OP_SOLID_MESH: op_solid_mesh(P, r, d); break;
        case OP_SOLID_DESTROY: op_solid_destroy(P, r); break;
        case OP_SOLID_STATE: op_solid_state(P, r); break;
        case OP_SOLID_MISC: case OP_SOLID_MISC2: op_solid_misc(P, r); break;
        case OP_SMOKE_CREATE: op_smoke_create(P, r, d); break;
        case OP_SMOKE_DESTROY: op_smoke_destroy(P, r); break;
        case OP_EMITTER: op_emitter(P, r); break;
        case OP_SMOKE_QUERY: op_smoke_query(P, r); break;
        case OP_LOAD: op_load(P, r); break;
        case OP_CREATE: op_create(P, r); break;
        default: destroy_domain(P); break;
        }
        switch (op) { /* the calls that change the state (a pass over the domain each) */
        case OP_INIT_UNIFORM: case OP_INIT_FIELDS: case OP_SET_FIELD: case OP_LAYOUT:
        case OP_AUTOTUNE: case OP_LOAD: case OP_CREATE: case OP_POLICY:
            check_state(P, op_names[op]);
            break;
        default: break;
        }
    }
    P->opname = "end";
    destroy_domain(P);
    return 0;
}
