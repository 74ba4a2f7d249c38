/*
 * libacmlbm -- checkpoint and restart (acm_checkpoint.h): a domain's whole
 * state (lib/engine/state.h) in one file, written beside its path and renamed over
 * it, read back into a new domain. The format is docs/checkpoint.md.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>    /* errno */
#include <inttypes.h> /* PRIu64 */
#include <math.h>     /* isfinite, fabs, sqrt */
#include <stdio.h>    /* FILE, fopen, fread, fwrite, fseeko */
#include <stdlib.h>   /* calloc, free, malloc, realloc */
#include <string.h>   /* memcpy, memset, strerror */
#include <sys/stat.h> /* fstat */
#include <unistd.h>   /* fsync */

#include "alloc.h"
#include "backend.h"
#include "guard.h"
#include "options.h"
#include "pipeline.h" /* acm__domain_check_faces */
#include "decomp.h" /* acm__decomp_writes */
#include "export.h" /* acm__temp_name, acm__temp_finish */
#include "halo.h"   /* acm__halo_agree */
#include "smoke.h"
#include "solid.h"
#include "state.h"

/* ---- the format (docs/checkpoint.md) -------------------------------------------------- */

static const char ckpt_magic[8] = {'A', 'C', 'M', 'L', 'B', 'M', 'C', 'K'};
#define CKPT_VERSION 1u
#define CKPT_ENDIAN_MARK 0x01020304u
#define CKPT_HEADER_SIZE 40u
#define CKPT_ENTRY_SIZE 32u
#define CKPT_MAX_SECTIONS (1u << 20)

/* fuzz/fuzz_checkpoint.c: checksums computed but not enforced, so that the
 * fuzzer's mutations reach the checks behind them */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#  define ACM_CKPT_FUZZING 1
#else
#  define ACM_CKPT_FUZZING 0
#endif /* FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION */

enum ckpt_section {
    SEC_SETTINGS = 1,
    SEC_COUNTERS = 2,
    SEC_POPULATIONS = 3,
    SEC_FORCE = 4,
    SEC_TAU = 5,
    SEC_IB_FORCE = 6,
    SEC_IB_MASK = 7,
    SEC_SOLID = 8,
    SEC_SMOKE = 9,
    SEC_LAST = SEC_SMOKE
};

static const char *section_name(uint32_t type)
{
    static const char *const names[] = {"?",   "settings", "counters", "populations", "force",
                                        "tau", "ib-force", "ib-mask",  "solid",       "smoke"};
    return type >= 1 && type <= SEC_LAST ? names[type] : "unknown";
}

typedef struct ckpt_entry {
    uint32_t type, index;
    uint64_t offset, size;
    uint32_t crc, reserved;
} ckpt_entry;

/* ---- CRC-32C (Castagnoli, reflected 0x82F63B78; the iSCSI/ext4 checksum) ---------- */

static uint32_t crc_table[256];
static int crc_ready; /* set once; the table is the same whoever fills it */

static void crc_init(void)
{
    if (__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
        return;
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        __atomic_store_n(&crc_table[i], c, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
    while (n--)
        c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The SSE4.2 instruction computes the same polynomial, 8 bytes at a time. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *p,
                                                         size_t n)
{
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

/* Continue a CRC-32C: crc32c(a b) = acm__crc32c(acm__crc32c(0, a), b). */
uint32_t acm__crc32c(uint32_t crc, const void *data, size_t n);
uint32_t acm__crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t c = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(c, p, n);
#endif
    crc_init();
    return ~crc_soft(c, p, n);
}

/* ---- small fixed-layout records ------------------------------------------------------- */

/* A record of scalars in native byte order (the header's mark says which). */
typedef struct rec {
    unsigned char b[1024];
    size_t n;   /* written, or read so far */
    size_t end; /* reading: bytes present */
    bool bad;   /* reading: past the end */
} rec;

static void put(rec *r, const void *p, size_t n)
{
    if (r->n + n > sizeof r->b) { /* a programming error: records are small and fixed */
        r->bad = true;
        return;
    }
    memcpy(r->b + r->n, p, n);
    r->n += n;
}
static void put_u32(rec *r, uint32_t v) { put(r, &v, 4); }
static void put_i32(rec *r, int32_t v) { put(r, &v, 4); }
static void put_i64(rec *r, int64_t v) { put(r, &v, 8); }
static void put_u64(rec *r, uint64_t v) { put(r, &v, 8); }
static void put_f64s(rec *r, const double *v, size_t n) { put(r, v, 8 * n); }

static void get(rec *r, void *p, size_t n)
{
    if (r->bad || r->n + n > r->end) {
        r->bad = true;
        memset(p, 0, n);
        return;
    }
    memcpy(p, r->b + r->n, n);
    r->n += n;
}
static uint32_t get_u32(rec *r) { uint32_t v; get(r, &v, 4); return v; }
static int32_t get_i32(rec *r) { int32_t v; get(r, &v, 4); return v; }
static int64_t get_i64(rec *r) { int64_t v; get(r, &v, 8); return v; }
static uint64_t get_u64(rec *r) { uint64_t v; get(r, &v, 8); return v; }
static void get_f64s(rec *r, double *v, size_t n) { get(r, v, 8 * n); }

/* The settings: what acm_domain_create and the setters take. */
typedef struct ckpt_settings {
    int32_t nx, ny, nz;
    double viscosity, max_speed;
    int32_t backend, device, options_precision;
    int64_t layout[8]; /* acm_layout_param 1..8 */
    acm_collision_options coll;
    int32_t face_type[ACM_FACE_COUNT];
    double face_u[ACM_FACE_COUNT][3];
    double body_force[3];
    int32_t has_force_field;
    int64_t threads, divergence_interval, ib_iterations;
} ckpt_settings;

static void settings_put(rec *r, const ckpt_settings *s)
{
    put_i32(r, s->nx);
    put_i32(r, s->ny);
    put_i32(r, s->nz);
    put_i32(r, s->backend);
    put_f64s(r, &s->viscosity, 1);
    put_f64s(r, &s->max_speed, 1);
    put_i32(r, s->device);
    put_i32(r, s->options_precision);
    for (int i = 0; i < 8; ++i)
        put_i64(r, s->layout[i]);
    put_i32(r, (int32_t)s->coll.model);
    put_i32(r, s->coll.bulk_follows_high_order);
    put_f64s(r, &s->coll.high_order_rate, 1);
    put_f64s(r, &s->coll.bulk_rate, 1);
    put_i32(r, s->coll.safety_net);
    put_i32(r, 0);
    put_f64s(r, &s->coll.max_high_order_rate, 1);
    put_f64s(r, s->coll.li2018_nu0, 4);
    put_f64s(r, s->coll.li2020_theta, 4);
    put_f64s(r, &s->coll.li2020_tau0, 1);
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        put_i32(r, s->face_type[f]);
        put_i32(r, 0);
        put_f64s(r, s->face_u[f], 3);
    }
    put_f64s(r, s->body_force, 3);
    put_i32(r, s->has_force_field);
    put_i32(r, 0);
    put_i64(r, s->threads);
    put_i64(r, s->divergence_interval);
    put_i64(r, s->ib_iterations);
}

static void settings_get(rec *r, ckpt_settings *s)
{
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    s->nx = get_i32(r);
    s->ny = get_i32(r);
    s->nz = get_i32(r);
    s->backend = get_i32(r);
    get_f64s(r, &s->viscosity, 1);
    get_f64s(r, &s->max_speed, 1);
    s->device = get_i32(r);
    s->options_precision = get_i32(r);
    for (int i = 0; i < 8; ++i)
        s->layout[i] = get_i64(r);
    c.model = (acm_collision)get_i32(r);
    c.bulk_follows_high_order = get_i32(r);
    get_f64s(r, &c.high_order_rate, 1);
    get_f64s(r, &c.bulk_rate, 1);
    c.safety_net = get_i32(r);
    (void)get_i32(r);
    get_f64s(r, &c.max_high_order_rate, 1);
    get_f64s(r, c.li2018_nu0, 4);
    get_f64s(r, c.li2020_theta, 4);
    get_f64s(r, &c.li2020_tau0, 1);
    s->coll = c;
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        s->face_type[f] = get_i32(r);
        (void)get_i32(r);
        get_f64s(r, s->face_u[f], 3);
    }
    get_f64s(r, s->body_force, 3);
    s->has_force_field = get_i32(r);
    (void)get_i32(r);
    s->threads = get_i64(r);
    s->divergence_interval = get_i64(r);
    s->ib_iterations = get_i64(r);
}

/* The counters: the handle's state and the backend's previous-step sums. */
static void counters_put(rec *r, const acm_snapshot *snap)
{
    put_i64(r, snap->step);
    put_i64(r, snap->fallback_last);
    put_i64(r, snap->fallback_total);
    put_i32(r, snap->diverged);
    put_i32(r, (int32_t)snap->backend.form);
    put_f64s(r, &snap->prev.max_u, 1);
    put_f64s(r, &snap->prev.mean_rho, 1);
    put_f64s(r, &snap->prev.mean_j, 1);
    put_f64s(r, &snap->prev.mean_pi, 1);
    put_i32(r, (int32_t)snap->backend.prev_backend);
    put_i32(r, snap->nsolids);
    put_f64s(r, snap->backend.prev, ACM_STATE_PREV_SIZE);
    put_i32(r, snap->ib.sample_block);
    put_i32(r, snap->ib.sample_order);
    put_i32(r, snap->ib.spread);
    put_i32(r, snap->ib.iterations);
    put_i32(r, (int32_t)snap->precision);
    put_i32(r, 0);
}

static void counters_get(rec *r, acm_snapshot *snap, int32_t *diverged, int32_t *form,
                         int32_t *prev_backend)
{
    snap->step = get_i64(r);
    snap->fallback_last = get_i64(r);
    snap->fallback_total = get_i64(r);
    *diverged = get_i32(r);
    *form = get_i32(r);
    get_f64s(r, &snap->prev.max_u, 1);
    get_f64s(r, &snap->prev.mean_rho, 1);
    get_f64s(r, &snap->prev.mean_j, 1);
    get_f64s(r, &snap->prev.mean_pi, 1);
    *prev_backend = get_i32(r);
    snap->nsolids = get_i32(r);
    get_f64s(r, snap->backend.prev, ACM_STATE_PREV_SIZE);
    snap->ib.sample_block = get_i32(r);
    snap->ib.sample_order = get_i32(r);
    snap->ib.spread = get_i32(r);
    snap->ib.iterations = get_i32(r);
    snap->precision = (acm_precision)get_i32(r);
    (void)get_i32(r);
}

/* A body: 31 doubles and the motion. */
static void body_put(rec *r, const acm_body *b)
{
    put_i32(r, (int32_t)b->motion);
    put_i32(r, 0);
    put_f64s(r, b->x, 3);
    put_f64s(r, b->q, 4);
    put_f64s(r, b->v, 3);
    put_f64s(r, b->w, 3);
    put_f64s(r, &b->mass, 1);
    put_f64s(r, &b->volume, 1);
    put_f64s(r, b->inertia, 6);
    put_f64s(r, b->gravity, 3);
    put_f64s(r, b->load_f, 3);
    put_f64s(r, b->load_t, 3);
    put_f64s(r, &b->r_max, 1);
}

static void body_get(rec *r, acm_body *b)
{
    memset(b, 0, sizeof *b);
    b->motion = (acm_motion)get_i32(r);
    (void)get_i32(r);
    get_f64s(r, b->x, 3);
    get_f64s(r, b->q, 4);
    get_f64s(r, b->v, 3);
    get_f64s(r, b->w, 3);
    get_f64s(r, &b->mass, 1);
    get_f64s(r, &b->volume, 1);
    get_f64s(r, b->inertia, 6);
    get_f64s(r, b->gravity, 3);
    get_f64s(r, b->load_f, 3);
    get_f64s(r, b->load_t, 3);
    get_f64s(r, &b->r_max, 1);
}

/* A solid's fixed part; its arrays follow in the section. */
typedef struct ckpt_solid {
    uint64_t count, mnv, mnt;
    int32_t has_mass, has_normal, moved;
    double alpha, area, spacing, inset;
} ckpt_solid;

static void solid_head_put(rec *r, const acm_solid *s, const acm_solid_copy *c)
{
    put_u64(r, s->count);
    put_u64(r, s->mnv);
    put_u64(r, s->mnt);
    put_i32(r, s->has_mass);
    put_i32(r, s->normal != NULL);
    put_i32(r, c->moved);
    put_i32(r, 0);
    put_f64s(r, &s->alpha, 1);
    put_f64s(r, &s->area, 1);
    put_f64s(r, &s->spacing, 1);
    put_f64s(r, &s->inset, 1);
    body_put(r, &c->body);
    body_put(r, &c->placed);
    put_f64s(r, c->sort_x, 3);
    put_f64s(r, c->sort_q, 4);
    put_i64(r, c->resorts);
    put_f64s(r, c->force, 3);
    put_f64s(r, c->torque, 3);
}

static void solid_head_get(rec *r, ckpt_solid *h, acm_solid_copy *c)
{
    h->count = get_u64(r);
    h->mnv = get_u64(r);
    h->mnt = get_u64(r);
    h->has_mass = get_i32(r);
    h->has_normal = get_i32(r);
    h->moved = get_i32(r);
    (void)get_i32(r);
    get_f64s(r, &h->alpha, 1);
    get_f64s(r, &h->area, 1);
    get_f64s(r, &h->spacing, 1);
    get_f64s(r, &h->inset, 1);
    body_get(r, &c->body);
    body_get(r, &c->placed);
    get_f64s(r, c->sort_x, 3);
    get_f64s(r, c->sort_q, 4);
    c->resorts = get_i64(r);
    get_f64s(r, c->force, 3);
    get_f64s(r, c->torque, 3);
    c->moved = h->moved != 0;
}

/* A smoke's fixed part: its options, counters and number of emitters. */
typedef struct ckpt_smoke {
    uint64_t capacity, seed;
    acm_smoke_counts counts;
    int32_t nemitters;
} ckpt_smoke;

static void smoke_head_put(rec *r, const acm_smoke *s)
{
    put_u64(r, s->capacity);
    put_u64(r, s->seed);
    put_u64(r, s->counts.emitted);
    put_u64(r, s->counts.left);
    put_u64(r, s->counts.expired);
    put_u64(r, s->counts.absorbed);
    put_u64(r, s->counts.dropped + s->dropped_planned); /* loaded into counts (and a device's) */
    put_i32(r, s->nemitters);
    put_i32(r, 0);
}

static void smoke_head_get(rec *r, ckpt_smoke *h)
{
    h->capacity = get_u64(r);
    h->seed = get_u64(r);
    h->counts.emitted = get_u64(r);
    h->counts.left = get_u64(r);
    h->counts.expired = get_u64(r);
    h->counts.absorbed = get_u64(r);
    h->counts.dropped = get_u64(r);
    h->nemitters = get_i32(r);
    (void)get_i32(r);
}

/* An emitter's fixed part (its points follow): the acm_emitter's numbers, its
 * solid's number (-1: none) and how far it has got. */
static void emitter_put(rec *r, const smoke_emitter *se, int32_t solid)
{
    const acm_emitter *e = &se->e;
    put_i32(r, (int32_t)e->shape);
    put_i32(r, solid);
    put_f64s(r, e->lo, 3);
    put_f64s(r, e->hi, 3);
    put_f64s(r, e->centre, 3);
    put_f64s(r, &e->radius, 1);
    put_f64s(r, &e->offset, 1);
    put_f64s(r, &e->rate, 1);
    put_i64(r, e->lifetime);
    put_f64s(r, &se->carry, 1);
    put_u64(r, se->next);
    put_u64(r, se->serial);
    put_u64(r, se->npoints);
}

static void emitter_get(rec *r, smoke_emitter *se, int32_t *solid)
{
    const acm_emitter init = ACM_EMITTER_INIT;
    memset(se, 0, sizeof *se);
    se->e = init;
    acm_emitter *e = &se->e;
    e->shape = (acm_emitter_shape)get_i32(r);
    *solid = get_i32(r);
    get_f64s(r, e->lo, 3);
    get_f64s(r, e->hi, 3);
    get_f64s(r, e->centre, 3);
    get_f64s(r, &e->radius, 1);
    get_f64s(r, &e->offset, 1);
    get_f64s(r, &e->rate, 1);
    e->lifetime = get_i64(r);
    get_f64s(r, &se->carry, 1);
    se->next = get_u64(r);
    se->serial = get_u64(r);
    se->npoints = get_u64(r);
}

/* Sizes of the fixed records, from the writers themselves. */
static size_t settings_size(void)
{
    rec r = {.n = 0};
    const ckpt_settings s = {0};
    settings_put(&r, &s);
    return r.n;
}
static size_t counters_size(void)
{
    rec r = {.n = 0};
    const acm_snapshot s = {0};
    counters_put(&r, &s);
    return r.n;
}
static size_t solid_head_size(void)
{
    rec r = {.n = 0};
    const acm_solid s = {0};
    const acm_solid_copy c = {0};
    solid_head_put(&r, &s, &c);
    return r.n;
}
static size_t smoke_head_size(void)
{
    rec r = {.n = 0};
    const acm_smoke s = {0};
    smoke_head_put(&r, &s);
    return r.n;
}
static size_t emitter_size(void)
{
    rec r = {.n = 0};
    const smoke_emitter se = {0};
    emitter_put(&r, &se, 0);
    return r.n;
}

/* ---- save ------------------------------------------------------------------------------ */

typedef struct writer {
    FILE *f;
    const char *path;
    uint64_t pos;
    ckpt_entry *table;
    uint32_t nsections, cap;
    ckpt_entry *cur;
    int e; /* errno of the first failure, 0: none */
} writer;

static void w_bytes(writer *w, const void *p, size_t n)
{
    if (w->e != 0 || n == 0)
        return;
    if (fwrite(p, n, 1, w->f) != 1) {
        w->e = errno ? errno : EIO;
        return;
    }
    w->pos += n;
    if (w->cur != NULL) {
        w->cur->crc = acm__crc32c(w->cur->crc, p, n);
        w->cur->size += n;
    }
}

static void w_begin(writer *w, uint32_t type, uint32_t index)
{
    w->cur = &w->table[w->nsections++];
    memset(w->cur, 0, sizeof *w->cur);
    w->cur->type = type;
    w->cur->index = index;
    w->cur->offset = w->pos;
}

static void w_end(writer *w) { w->cur = NULL; }

static void w_array(writer *w, uint32_t type, uint32_t index, const void *p, size_t bytes)
{
    w_begin(w, type, index);
    w_bytes(w, p, bytes);
    w_end(w);
}

static void header_put(rec *r, uint32_t nsections, uint64_t file_size)
{
    put(r, ckpt_magic, 8);
    put_u32(r, CKPT_VERSION);
    put_u32(r, CKPT_ENDIAN_MARK);
    put_u32(r, CKPT_HEADER_SIZE);
    put_u32(r, nsections);
    put_u64(r, file_size);
    put_u32(r, acm_version_number());
}

static void entry_put(rec *r, const ckpt_entry *e)
{
    put_u32(r, e->type);
    put_u32(r, e->index);
    put_u64(r, e->offset);
    put_u64(r, e->size);
    put_u32(r, e->crc);
    put_u32(r, e->reserved); /* 0; under the table's checksum like the rest */
}

/* The table's CRC covers the header's first 36 bytes and every entry. */
static uint32_t table_crc(const rec *head, const ckpt_entry *t, uint32_t n)
{
    uint32_t crc = acm__crc32c(0, head->b, 36);
    for (uint32_t i = 0; i < n; ++i) {
        rec r = {.n = 0};
        entry_put(&r, &t[i]);
        crc = acm__crc32c(crc, r.b, r.n);
    }
    return crc;
}

/* Header and table at the start, once the sections are written. */
static void w_table(writer *w)
{
    if (w->e != 0)
        return;
    rec h = {.n = 0};
    header_put(&h, w->nsections, w->pos);
    put_u32(&h, table_crc(&h, w->table, w->nsections));
    if (fseeko(w->f, 0, SEEK_SET) != 0) {
        w->e = errno ? errno : EIO;
        return;
    }
    w->cur = NULL;
    const uint64_t end = w->pos;
    w_bytes(w, h.b, h.n);
    for (uint32_t i = 0; i < w->nsections; ++i) {
        rec r = {.n = 0};
        entry_put(&r, &w->table[i]);
        w_bytes(w, r.b, r.n);
    }
    w->pos = end;
}

static void settings_of(const acm_domain *d, ckpt_settings *s)
{
    memset(s, 0, sizeof *s);
    s->nx = d->nx;
    s->ny = d->ny;
    s->nz = d->nz;
    s->viscosity = d->setup.viscosity;
    s->max_speed = d->setup.max_speed;
    s->backend = (int32_t)d->backend;
    s->device = d->device;
    s->options_precision = (int32_t)d->setup.options_precision;
    acm_layout l;
    acm__domain_layout(d, &l);
    const int64_t values[8] = {l.csoa_group, l.kernel,    l.block_size, l.sample_block,
                               l.sample_order, l.ib_spread, l.streaming,  l.precision};
    memcpy(s->layout, values, sizeof values);
    s->coll = d->setup.coll;
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        s->face_type[f] = (int32_t)d->setup.face[f].type;
        memcpy(s->face_u[f], d->setup.face[f].u, sizeof s->face_u[f]);
    }
    memcpy(s->body_force, d->setup.body_force, sizeof s->body_force);
    s->has_force_field = d->setup.has_force_field;
    s->threads = d->setup.threads;
    s->divergence_interval = d->setup.divergence_interval;
    s->ib_iterations = d->layout.ib.iterations;
}

static void write_solid(writer *w, uint32_t index, const acm_solid *s, const acm_solid_copy *c)
{
    rec r = {.n = 0};
    solid_head_put(&r, s, c);
    const size_t n = (size_t)s->count;
    w_begin(w, SEC_SOLID, index);
    w_bytes(w, r.b, r.n);
    w_bytes(w, c->r, 3 * n * sizeof(double));
    w_bytes(w, c->dv, n * sizeof(double));
    w_bytes(w, c->origin, n * sizeof(uint64_t));
    if (s->normal != NULL)
        w_bytes(w, s->normal, 3 * n * sizeof(double));
    w_bytes(w, s->mv, 3 * s->mnv * sizeof(double));
    w_bytes(w, s->mt, 3 * s->mnt * sizeof(uint32_t));
    w_end(w);
}

/* Small pieces through a record: fewer writes and checksum calls. */
static void w_piece(writer *w, rec *stage, const void *p, size_t n)
{
    if (stage->n + n > sizeof stage->b) {
        w_bytes(w, stage->b, stage->n);
        stage->n = 0;
    }
    put(stage, p, n);
}

/* The number of an emitter's solid in the domain's list; -1: none (another
 * shape, or a solid emitter whose solid was destroyed). */
static int32_t emitter_solid(const acm_domain *d, const smoke_emitter *se)
{
    if (se->e.shape != ACM_EMITTER_SOLID)
        return -1; /* e.solid may hold anything the caller left there */
    for (int32_t i = 0; i < d->nsolids; ++i)
        if (d->solids[i] == se->e.solid)
            return i;
    return -1;
}

/* A smoke as synchronised (acm__smoke_sync): head, emitters and their points,
 * the map of the slots that hold a particle, then those particles' positions,
 * ages and lifetimes in slot order. */
static void write_smoke(writer *w, uint32_t index, const acm_domain *d, const acm_smoke *s)
{
    rec r = {.n = 0};
    smoke_head_put(&r, s);
    w_begin(w, SEC_SMOKE, index);
    w_bytes(w, r.b, r.n);
    for (int32_t i = 0; i < s->nemitters; ++i) {
        const smoke_emitter *se = &s->emitters[i];
        r.n = 0;
        emitter_put(&r, se, emitter_solid(d, se));
        w_bytes(w, r.b, r.n);
        w_bytes(w, se->points, 3 * (size_t)se->npoints * sizeof(double));
    }
    rec stage = {.n = 0};
    for (uint64_t k0 = 0; k0 < s->capacity; k0 += 32) {
        uint32_t word = 0;
        for (uint64_t k = k0; k < k0 + 32 && k < s->capacity; ++k)
            word |= (uint32_t)(s->age[k] >= 0) << (k - k0);
        w_piece(w, &stage, &word, sizeof word);
    }
    for (uint64_t k = 0; k < s->capacity; ++k)
        if (s->age[k] >= 0)
            w_piece(w, &stage, s->x + 3 * k, 3 * sizeof(double));
    for (uint64_t k = 0; k < s->capacity; ++k)
        if (s->age[k] >= 0)
            w_piece(w, &stage, &s->age[k], sizeof(int32_t));
    for (uint64_t k = 0; k < s->capacity; ++k)
        if (s->age[k] >= 0)
            w_piece(w, &stage, &s->life[k], sizeof(int32_t));
    w_bytes(w, stage.b, stage.n);
    w_end(w);
}

static acm_status write_file(acm_domain *d, const char *path, const char *tmp,
                             const acm_snapshot *snap, char *msg, size_t n)
{
    writer w = {.path = path};
    const acm_state *st = &snap->backend;
    const bool ib = st->ib_force != NULL && st->ib_mask != NULL;
    const uint32_t cap = 3u + (st->force != NULL) + (st->tau != NULL) + 2u * ib +
                         (uint32_t)snap->nsolids + (uint32_t)d->nsmokes;
    w.table = acm__calloc(cap, sizeof *w.table);
    if (w.table == NULL) {
        acm__format(msg, n, "cannot allocate the section table of %s", path);
        return ACM_ERR_NO_MEMORY;
    }
    if ((w.f = fopen(tmp, "wb")) == NULL) {
        acm__format(msg, n, "cannot create %s: %s", tmp, strerror(errno));
        acm__free(w.table);
        return ACM_ERR_IO;
    }
    /* room for the header and the table, written last */
    static const unsigned char zero[CKPT_HEADER_SIZE]; /* >= CKPT_ENTRY_SIZE */
    w_bytes(&w, zero, CKPT_HEADER_SIZE);
    for (uint32_t i = 0; i < cap; ++i)
        w_bytes(&w, zero, CKPT_ENTRY_SIZE);

    rec r = {.n = 0};
    ckpt_settings s;
    settings_of(d, &s);
    settings_put(&r, &s);
    w_array(&w, SEC_SETTINGS, 0, r.b, r.n);
    r.n = 0;
    counters_put(&r, snap);
    w_array(&w, SEC_COUNTERS, 0, r.b, r.n);
    const size_t cells = (size_t)d->ncells;
    w_array(&w, SEC_POPULATIONS, 0, st->f, (size_t)ACM_Q * cells * sizeof(double));
    if (st->force != NULL)
        w_array(&w, SEC_FORCE, 0, st->force, 3 * cells * sizeof(double));
    if (st->tau != NULL)
        w_array(&w, SEC_TAU, 0, st->tau, cells * sizeof(double));
    if (ib) {
        w_array(&w, SEC_IB_FORCE, 0, st->ib_force, 3 * cells * sizeof(double));
        w_array(&w, SEC_IB_MASK, 0, st->ib_mask,
                acm_state_mask_words(d->ncells) * sizeof(uint32_t));
    }
    for (int32_t i = 0; i < snap->nsolids; ++i)
        write_solid(&w, (uint32_t)i, d->solids[i], &snap->solids[i]);
    for (int32_t i = 0; i < d->nsmokes; ++i)
        write_smoke(&w, (uint32_t)i, d, d->smokes[i]);
    w_table(&w); /* every byte of the file is now under a checksum */

    int e = w.e;
    if (e == 0 && (fflush(w.f) != 0 || ferror(w.f) || fsync(fileno(w.f)) != 0))
        e = errno ? errno : EIO;
    if (fclose(w.f) != 0 && e == 0)
        e = errno ? errno : EIO;
    acm__free(w.table);
    return acm__temp_finish(tmp, path, e, msg, n);
}

/* Over MPI the rank of slab 0 alone checks its path and writes; every rank
 * takes part in gathering the state and returns that rank's outcome. */
static acm_status domain_save_unguarded(acm_domain *domain, const char *path)
{
    const bool writes = acm__decomp_writes(domain);
    char tmp[4096], msg[ACM_ERROR_SIZE] = "";
    acm_status st = ACM_OK;
    if (writes && path == NULL)
        st = ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "path is NULL");
    else if (writes && (st = acm__temp_name(tmp, sizeof tmp, path, msg, sizeof msg)) != ACM_OK)
        ACM_FAIL(domain, st, "%s", msg);
    if (domain->decomp != NULL)
        st = acm__halo_agree(domain, st);
    if (st != ACM_OK)
        return st;
    for (int32_t i = 0; i < domain->nsmokes; ++i) /* on a GPU, the particles to the host */
        if ((st = acm__smoke_sync(domain->smokes[i])) != ACM_OK)
            return ACM_FAIL(domain, st, "cannot save %s: smoke %d: %s", path, (int)i,
                            domain->smokes[i]->error);
    acm_snapshot snap;
    ACM_TRY(acm__snapshot_take(domain, &snap, false));
    if (writes)
        st = write_file(domain, path, tmp, &snap, msg, sizeof msg);
    acm__snapshot_free(&snap);
    if (st != ACM_OK)
        ACM_FAIL(domain, st, "%s", msg);
    return domain->decomp != NULL ? acm__halo_agree(domain, st) : st;
}

ACM_API acm_status acm_domain_save(acm_domain *domain, const char *path)
{
    ACM_GUARDED(domain, domain_save_unguarded(domain, path));
}

/* ---- load ------------------------------------------------------------------------------ */

typedef struct loader {
    FILE *f;
    const char *path;
    uint64_t size; /* of the file */
    ckpt_entry *table;
    uint32_t nsections;
    const ckpt_entry *settings, *counters, *pops, *force, *tau, *ib_force, *ib_mask;
    const ckpt_entry **solids, **smokes; /* by index */
    uint32_t nsmokes;
    char *msg;
    size_t n;
    /* reading one section */
    const ckpt_entry *sec;
    uint64_t left;
    uint32_t crc;
} loader;

static acm_status lfail(loader *l, acm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static acm_status lfail(loader *l, acm_status st, const char *fmt, ...)
{
    char what[ACM_ERROR_SIZE];
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(what, sizeof what, fmt, ap);
    va_end(ap);
    acm__format(l->msg, l->n, "checkpoint %s: %s", l->path, what);
    return st;
}

static const char *entry_name(const ckpt_entry *e, char *buf, size_t n)
{
    if (e->type == SEC_SOLID || e->type == SEC_SMOKE)
        acm__format(buf, n, "%s %u", section_name(e->type), e->index);
    else
        acm__format(buf, n, "%s", section_name(e->type));
    return buf;
}

/* Start reading a section. */
static acm_status sec_open(loader *l, const ckpt_entry *e)
{
    char name[32];
    if (fseeko(l->f, (off_t)e->offset, SEEK_SET) != 0)
        return lfail(l, ACM_ERR_IO, "section %s: cannot seek to %" PRIu64 ": %s",
                     entry_name(e, name, sizeof name), e->offset, strerror(errno));
    l->sec = e;
    l->left = e->size;
    l->crc = 0;
    return ACM_OK;
}

static acm_status sec_read(loader *l, void *dst, uint64_t bytes)
{
    char name[32];
    if (bytes > l->left)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section %s: %" PRIu64 " bytes needed, %" PRIu64 " left in its %" PRIu64,
                     entry_name(l->sec, name, sizeof name), bytes, l->left, l->sec->size);
    unsigned char *p = dst;
    while (bytes > 0) { /* in pieces: fread's count is a size_t, and a CRC pass per piece
                           keeps the data in cache */
        const size_t piece = bytes > (UINT64_C(1) << 24) ? (size_t)1 << 24 : (size_t)bytes;
        if (fread(p, 1, piece, l->f) != piece)
            return ferror(l->f)
                       ? lfail(l, ACM_ERR_IO, "section %s: read error: %s",
                               entry_name(l->sec, name, sizeof name), strerror(errno))
                       : lfail(l, ACM_ERR_BAD_FORMAT, "section %s: truncated",
                               entry_name(l->sec, name, sizeof name));
        l->crc = acm__crc32c(l->crc, p, piece);
        p += piece;
        bytes -= piece;
        l->left -= piece;
    }
    return ACM_OK;
}

static acm_status sec_close(loader *l)
{
    char name[32];
    if (l->left != 0)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %" PRIu64 " bytes more than its content",
                     entry_name(l->sec, name, sizeof name), l->left);
    if (l->crc != l->sec->crc && !ACM_CKPT_FUZZING)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section %s: checksum mismatch (CRC-32C %08x, the table says %08x): "
                     "the file is corrupted",
                     entry_name(l->sec, name, sizeof name), l->crc, l->sec->crc);
    return ACM_OK;
}

/* A whole section of known size into dst. */
static acm_status sec_whole(loader *l, const ckpt_entry *e, void *dst, uint64_t bytes)
{
    char name[32];
    if (e->size != bytes)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section %s holds %" PRIu64 " bytes, %" PRIu64 " expected for this grid",
                     entry_name(e, name, sizeof name), e->size, bytes);
    ACM_TRY(sec_open(l, e));
    ACM_TRY(sec_read(l, dst, bytes));
    return sec_close(l);
}

static acm_status read_header(loader *l)
{
    struct stat sb;
    if (fstat(fileno(l->f), &sb) != 0)
        return lfail(l, ACM_ERR_IO, "cannot stat: %s", strerror(errno));
    l->size = (uint64_t)sb.st_size;
    rec h = {.n = 0};
    h.end = fread(h.b, 1, CKPT_HEADER_SIZE, l->f);
    if (h.end < 8 || memcmp(h.b, ckpt_magic, 8) != 0)
        return lfail(l, ACM_ERR_BAD_FORMAT, "not a libacmlbm checkpoint (no ACMLBMCK magic)");
    if (h.end < CKPT_HEADER_SIZE)
        return lfail(l, ACM_ERR_BAD_FORMAT, "truncated: %zu bytes, shorter than the header",
                     h.end);
    h.n = 8;
    const uint32_t version = get_u32(&h), mark = get_u32(&h);
    if (mark == 0x04030201u) {
        const uint16_t probe = 1;
        return lfail(l, ACM_ERR_UNSUPPORTED,
                     "written on a machine of the other byte order (mark %08x); this build "
                     "reads %s-endian checkpoints only",
                     mark, *(const unsigned char *)&probe == 1 ? "little" : "big");
    }
    if (mark != CKPT_ENDIAN_MARK)
        return lfail(l, ACM_ERR_BAD_FORMAT, "bad byte-order mark %08x in the header", mark);
    if (version != CKPT_VERSION)
        return lfail(l, ACM_ERR_BAD_VERSION,
                     "format version %u; this library (%s) reads version %u", version,
                     acm_version_string(), CKPT_VERSION);
    const uint32_t header_size = get_u32(&h), nsections = get_u32(&h);
    const uint64_t file_size = get_u64(&h);
    (void)get_u32(&h); /* the writer's library version: information only */
    const uint32_t crc = get_u32(&h);
    if (header_size != CKPT_HEADER_SIZE)
        return lfail(l, ACM_ERR_BAD_FORMAT, "header size %u, expected %u", header_size,
                     CKPT_HEADER_SIZE);
    if (file_size != l->size)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "truncated or extended: %" PRIu64 " bytes, the header says %" PRIu64,
                     l->size, file_size);
    if (nsections == 0 || nsections > CKPT_MAX_SECTIONS ||
        (uint64_t)nsections * CKPT_ENTRY_SIZE > l->size - CKPT_HEADER_SIZE)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section table of %u entries does not fit the file",
                     nsections);
    l->table = acm__calloc(nsections, sizeof *l->table);
    if (l->table == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate the section table");
    l->nsections = nsections;
    for (uint32_t i = 0; i < nsections; ++i) {
        rec r = {.n = 0};
        r.end = fread(r.b, 1, CKPT_ENTRY_SIZE, l->f);
        ckpt_entry *e = &l->table[i];
        e->type = get_u32(&r);
        e->index = get_u32(&r);
        e->offset = get_u64(&r);
        e->size = get_u64(&r);
        e->crc = get_u32(&r);
        e->reserved = get_u32(&r);
        if (r.bad)
            return lfail(l, ACM_ERR_BAD_FORMAT, "truncated section table");
    }
    if (table_crc(&h, l->table, nsections) != crc && !ACM_CKPT_FUZZING)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section table: checksum mismatch (corrupted header)");
    return ACM_OK;
}

/* Every entry within the file, known, and given once. */
static acm_status check_table(loader *l)
{
    const uint64_t data = CKPT_HEADER_SIZE + (uint64_t)l->nsections * CKPT_ENTRY_SIZE;
    char name[32];
    for (uint32_t i = 0; i < l->nsections; ++i) {
        const ckpt_entry *e = &l->table[i];
        if (e->type < 1 || e->type > SEC_LAST)
            return lfail(l, ACM_ERR_BAD_FORMAT,
                         "unknown section type %u (entry %u): written by a newer library?",
                         e->type, i);
        if (e->offset < data || e->offset > l->size || e->size > l->size - e->offset)
            return lfail(l, ACM_ERR_BAD_FORMAT,
                         "section %s: bytes %" PRIu64 "+%" PRIu64 " outside the file (%" PRIu64
                         " bytes; data from %" PRIu64 ")",
                         entry_name(e, name, sizeof name), e->offset, e->size, l->size, data);
        const ckpt_entry **slot = NULL;
        switch (e->type) {
        case SEC_SETTINGS: slot = &l->settings; break;
        case SEC_COUNTERS: slot = &l->counters; break;
        case SEC_POPULATIONS: slot = &l->pops; break;
        case SEC_FORCE: slot = &l->force; break;
        case SEC_TAU: slot = &l->tau; break;
        case SEC_IB_FORCE: slot = &l->ib_force; break;
        case SEC_IB_MASK: slot = &l->ib_mask; break;
        case SEC_SMOKE: ++l->nsmokes; continue;
        default: continue; /* solids: index_solids */
        }
        if (*slot != NULL || e->index != 0)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s given twice (entry %u)",
                         entry_name(e, name, sizeof name), i);
        *slot = e;
    }
    if (l->settings == NULL || l->counters == NULL || l->pops == NULL)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s missing",
                     l->settings == NULL ? "settings" : l->counters == NULL ? "counters"
                                                                           : "populations");
    if ((l->ib_force == NULL) != (l->ib_mask == NULL))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s missing (ib-force and ib-mask go together)",
                     l->ib_force == NULL ? "ib-force" : "ib-mask");
    return ACM_OK;
}

/* The entries of a numbered type (solid, smoke) by index: exactly 0..n-1. */
static acm_status index_entries(loader *l, uint32_t type, uint32_t n, const ckpt_entry ***out)
{
    const char *what = section_name(type);
    const ckpt_entry **by = acm__calloc((size_t)n + 1, sizeof *by);
    if (by == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot index %u %s sections", n, what);
    *out = by; /* freed by acm_domain_load */
    for (uint32_t i = 0; i < l->nsections; ++i) {
        const ckpt_entry *e = &l->table[i];
        if (e->type != type)
            continue;
        if (e->index >= n || by[e->index] != NULL)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s %u: %s (%u %s sections expected)",
                         what, e->index, e->index >= n ? "index out of range" : "given twice",
                         n, what);
        by[e->index] = e;
    }
    for (uint32_t i = 0; i < n; ++i)
        if (by[i] == NULL)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s %u missing", what, i);
    return ACM_OK;
}

/* The solids' entries by index: as many as the counters say. */
static acm_status index_solids(loader *l, int32_t nsolids)
{
    if (nsolids < 0 || (uint32_t)nsolids > l->nsections)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section counters: %d solids for %u sections",
                     (int)nsolids, l->nsections);
    return index_entries(l, SEC_SOLID, (uint32_t)nsolids, &l->solids);
}

static acm_status read_record(loader *l, const ckpt_entry *e, rec *r, size_t size)
{
    char name[32];
    if (e->size != size)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s holds %" PRIu64 " bytes, %zu expected",
                     entry_name(e, name, sizeof name), e->size, size);
    memset(r, 0, sizeof *r);
    ACM_TRY(sec_whole(l, e, r->b, size));
    r->end = size;
    return ACM_OK;
}

static bool finite_all(const double *v, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* How far a solid's mesh may reach from its centre, cells: more than twice
 * the diagonal of the largest grid, and little enough that the grid a smoke
 * rasterises the mesh's inside on (lib/ib/solid.c, 0.5-cell spacing to begin
 * with) counts its points in int32 per axis and in 64 bits in all. */
#define CKPT_MESH_REACH 2.5e5

static bool within(const double *v, size_t n, double reach)
{
    for (size_t i = 0; i < n; ++i)
        if (!(fabs(v[i]) <= reach))
            return false;
    return true;
}

/* A point finite and near the grid (periodic axes wrap, but far-off values
 * would overflow the stencil's integer cell). */
static bool near_grid(const acm_domain *d, const double x[3])
{
    const double dims[3] = {d->nx, d->ny, d->nz};
    for (int a = 0; a < 3; ++a)
        if (!(fabs(x[a]) <= 4.0 * dims[a] + 1e6))
            return false;
    return true;
}

/* A body's numbers finite, its centre near the grid, a unit quaternion. */
static bool body_ok(const acm_domain *d, const acm_body *b)
{
    if ((unsigned)b->motion > ACM_MOTION_FREE || !near_grid(d, b->x) || !finite_all(b->q, 4) ||
        !finite_all(b->v, 3) || !finite_all(b->w, 3) || !finite_all(b->inertia, 6) ||
        !finite_all(b->gravity, 3) || !finite_all(b->load_f, 3) || !finite_all(b->load_t, 3) ||
        !isfinite(b->mass) || !isfinite(b->volume) || !(b->r_max >= 0.0 && b->r_max < 1e6))
        return false;
    const double qq = b->q[0] * b->q[0] + b->q[1] * b->q[1] + b->q[2] * b->q[2] + b->q[3] * b->q[3];
    return fabs(qq - 1.0) < 2e-3; /* acm__quat_normalise: |q| within 1e-3 of 1 */
}

/* One solid: its section into a snapshot copy and a new handle added to d. */
static acm_status load_solid(loader *l, acm_domain *d, int32_t index, acm_solid_copy *c)
{
    const ckpt_entry *e = l->solids[index];
    const size_t head = solid_head_size();
    if (e->size < head)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section solid %d: %" PRIu64 " bytes, shorter than "
                     "its %zu-byte head", (int)index, e->size, head);
    ACM_TRY(sec_open(l, e));
    rec r = {.n = 0};
    ACM_TRY(sec_read(l, r.b, head));
    r.end = head;
    ckpt_solid h;
    solid_head_get(&r, &h, c);
    /* every array fits the section before anything is allocated */
    const uint64_t room = e->size - head;
    if (h.count == 0 || h.count > room / 40 || h.mnv > room / 24 || h.mnt > room / 12 ||
        h.count * (40 + (h.has_normal ? 24 : 0)) + h.mnv * 24 + h.mnt * 12 != room)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section solid %d: %" PRIu64 " samples, %" PRIu64 " vertices and %" PRIu64
                     " triangles do not fill its %" PRIu64 " bytes",
                     (int)index, h.count, h.mnv, h.mnt, e->size);
    if (!body_ok(d, &c->body) || !body_ok(d, &c->placed) || !finite_all(c->sort_x, 3) ||
        !finite_all(c->sort_q, 4) || !finite_all(c->force, 3) || !finite_all(c->torque, 3) ||
        !(h.alpha > 0.0 && h.alpha <= 2.0) || !isfinite(h.area) || !isfinite(h.spacing) ||
        !isfinite(h.inset) || (h.mnt > 0) != (h.mnv > 0))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section solid %d: body or parameters out of range",
                     (int)index);
    const size_t n = (size_t)h.count;
    acm_solid *s = acm__calloc(1, sizeof *s);
    if (s == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate solid %d", (int)index);
    /* into the domain at once, so that acm_domain_destroy frees it on any failure */
    if (d->nsolids == d->solids_cap) {
        const int32_t cap = d->solids_cap ? 2 * d->solids_cap : 4;
        acm_solid **p = acm__realloc(d->solids, (size_t)cap * sizeof *p);
        if (p == NULL) {
            acm__free(s);
            return lfail(l, ACM_ERR_NO_MEMORY, "cannot grow the list of solids");
        }
        d->solids = p;
        d->solids_cap = cap;
    }
    d->solids[d->nsolids++] = s;
    s->domain = d;
    s->count = h.count;
    s->alpha = h.alpha;
    s->has_mass = h.has_mass != 0;
    s->area = h.area;
    s->spacing = h.spacing;
    s->inset = h.inset;
    s->mnv = (size_t)h.mnv;
    s->mnt = (size_t)h.mnt;
    s->r = acm__malloc(3 * n * sizeof(double));
    s->dv = acm__malloc(n * sizeof(double));
    s->origin = acm__malloc(n * sizeof(uint64_t));
    c->r = acm__malloc(3 * n * sizeof(double));
    c->dv = acm__malloc(n * sizeof(double));
    c->origin = acm__malloc(n * sizeof(uint64_t));
    if (h.has_normal)
        s->normal = acm__malloc(3 * n * sizeof(double));
    if (h.mnv > 0) {
        s->mv = acm__malloc(3 * s->mnv * sizeof(double));
        s->mt = acm__malloc(3 * s->mnt * sizeof(uint32_t));
    }
    if (s->r == NULL || s->dv == NULL || s->origin == NULL || c->r == NULL || c->dv == NULL ||
        c->origin == NULL || (h.has_normal && s->normal == NULL) ||
        (h.mnv > 0 && (s->mv == NULL || s->mt == NULL)))
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate the %zu samples of solid %d", n,
                     (int)index);
    ACM_TRY(sec_read(l, c->r, 3 * n * sizeof(double)));
    ACM_TRY(sec_read(l, c->dv, n * sizeof(double)));
    ACM_TRY(sec_read(l, c->origin, n * sizeof(uint64_t)));
    if (h.has_normal)
        ACM_TRY(sec_read(l, s->normal, 3 * n * sizeof(double)));
    if (h.mnv > 0) {
        ACM_TRY(sec_read(l, s->mv, 3 * s->mnv * sizeof(double)));
        ACM_TRY(sec_read(l, s->mt, 3 * s->mnt * sizeof(uint32_t)));
    }
    ACM_TRY(sec_close(l));
    /* what indexes arrays: the origins a permutation, the triangles' vertices */
    unsigned char *seen = acm__calloc(n, 1);
    if (seen == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot check the samples of solid %d", (int)index);
    bool ok = finite_all(c->r, 3 * n) && finite_all(c->dv, n) &&
              (!h.has_normal || finite_all(s->normal, 3 * n)) &&
              (h.mnv == 0 || within(s->mv, 3 * s->mnv, CKPT_MESH_REACH));
    for (size_t k = 0; ok && k < n; ++k) {
        ok = c->origin[k] < h.count && !seen[c->origin[k]] &&
             sqrt(c->r[3 * k] * c->r[3 * k] + c->r[3 * k + 1] * c->r[3 * k + 1] +
                  c->r[3 * k + 2] * c->r[3 * k + 2]) <= c->body.r_max * (1.0 + 1e-9) + 1e-9;
        if (ok)
            seen[c->origin[k]] = 1;
    }
    acm__free(seen);
    for (size_t k = 0; ok && k < 3 * s->mnt; ++k)
        ok = s->mt[k] < s->mnv;
    if (!ok)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section solid %d: samples, sample order or mesh out of range", (int)index);
    return ACM_OK;
}

/* ---- smokes ---- */

/* A section read whole, its checksum checked. */
static acm_status read_whole(loader *l, const ckpt_entry *e, unsigned char **out)
{
    char name[32];
    unsigned char *b = acm__malloc(e->size > 0 ? (size_t)e->size : 1);
    if (b == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "section %s: cannot allocate its %" PRIu64 " bytes",
                     entry_name(e, name, sizeof name), e->size);
    *out = b;
    ACM_TRY(sec_open(l, e));
    ACM_TRY(sec_read(l, b, e->size));
    return sec_close(l);
}

/* Such a section parsed front to back. */
typedef struct cursor {
    const unsigned char *p;
    uint64_t left;
} cursor;

/* The next n bytes, which the caller knows are there. */
static const unsigned char *cut(cursor *c, uint64_t n)
{
    const unsigned char *p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

/* The next n bytes as a record; false when the section ends first. */
static bool cut_rec(cursor *c, rec *r, size_t n)
{
    if (n > c->left)
        return false;
    memset(r, 0, sizeof *r);
    memcpy(r->b, cut(c, n), n);
    r->end = n;
    return true;
}

/* A smoke's head, checked: the particles alive by its counters, and the bytes
 * of the slot map and the particles at the section's end (`tail`). */
static acm_status smoke_head(loader *l, uint32_t index, cursor *c, ckpt_smoke *h,
                             uint64_t *alive, uint64_t *tail)
{
    rec r;
    if (!cut_rec(c, &r, smoke_head_size()))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: %" PRIu64 " bytes, shorter than "
                     "its %zu-byte head", index, c->left, smoke_head_size());
    smoke_head_get(&r, h);
    const acm_smoke_counts *n = &h->counts;
    const bool sums = n->left <= UINT64_MAX - n->expired &&
                      n->left + n->expired <= UINT64_MAX - n->absorbed &&
                      n->left + n->expired + n->absorbed <= n->emitted;
    *alive = sums ? n->emitted - (n->left + n->expired + n->absorbed) : 0;
    if (h->capacity < 1 || h->capacity >= ACM_SMOKE_CAPACITY_MAX || !sums ||
        *alive > h->capacity || h->nemitters < 0)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section smoke %u: capacity %" PRIu64 ", %d emitters, or counters out of "
                     "range (emitted %" PRIu64 ", left %" PRIu64 ", expired %" PRIu64
                     ", absorbed %" PRIu64 ")",
                     index, h->capacity, (int)h->nemitters, n->emitted, n->left, n->expired,
                     n->absorbed);
    /* the slots are allocated from the capacity: its map must be in the file */
    const uint64_t map = 4 * ((h->capacity + 31) / 32);
    if (*alive > c->left / 32 || map > c->left - 32 * *alive ||
        (uint64_t)h->nemitters > (c->left - 32 * *alive - map) / emitter_size())
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section smoke %u: %" PRIu64 " slots, %" PRIu64 " particles and %d emitters "
                     "do not fit its %" PRIu64 " bytes",
                     index, h->capacity, *alive, (int)h->nemitters, c->left + smoke_head_size());
    *tail = map + 32 * *alive;
    return ACM_OK;
}

/* Emitter i of a smoke: its record and points, its solid by number. */
static acm_status load_emitter(loader *l, acm_domain *d, acm_smoke *s, uint32_t index, int32_t i,
                               cursor *c, uint64_t tail)
{
    rec r;
    smoke_emitter se;
    int32_t solid = -1;
    if (c->left - tail < emitter_size() || !cut_rec(c, &r, emitter_size()))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: emitter %d: truncated (the slot "
                     "map and particles take the last %" PRIu64 " bytes)", index, (int)i, tail);
    emitter_get(&r, &se, &solid);
    if (se.npoints > (c->left - tail) / 24)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: emitter %d: %" PRIu64 " points "
                     "do not fit the section (the slot map and particles take the last %" PRIu64
                     " bytes)", index, (int)i, se.npoints, tail);
    if (solid < -1 || solid >= d->nsolids || (solid >= 0 && se.e.shape != ACM_EMITTER_SOLID))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: emitter %d: solid %d out of range "
                     "(%d solids; -1: none)", index, (int)i, (int)solid, (int)d->nsolids);
    se.e.solid = solid >= 0 ? d->solids[solid] : NULL;
    const size_t bytes = 3 * (size_t)se.npoints * sizeof(double);
    if (bytes > 0 && (se.points = acm__malloc(bytes)) == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "section smoke %u: emitter %d: cannot allocate %" PRIu64
                     " points", index, (int)i, se.npoints);
    if (bytes > 0)
        memcpy(se.points, cut(c, bytes), bytes);
    const acm_status st = acm__smoke_add_saved_emitter(s, &se);
    if (st == ACM_OK)
        return ACM_OK;
    /* the public checks' refusals are the file's; the rest keep their status */
    const bool file = st == ACM_ERR_OUT_OF_RANGE || st == ACM_ERR_BAD_ENUM ||
                      st == ACM_ERR_INVALID_ARG || st == ACM_ERR_NULL_POINTER;
    return lfail(l, file ? ACM_ERR_BAD_FORMAT : st, "section smoke %u: emitter %d: %s", index,
                 (int)i, s->error);
}

/* Whether slot k holds a particle by a slot map (bit k % 32 of word k / 32). */
static bool slot_held(const unsigned char *map, uint64_t k)
{
    uint32_t word;
    memcpy(&word, map + 4 * (k / 32), 4);
    return (word >> (k % 32)) & 1u;
}

/* The particles into their slots: the slot map, then positions, ages and
 * lifetimes in slot order (bits past the last slot are ignored). */
static acm_status load_particles(loader *l, acm_domain *d, acm_smoke *s, uint32_t index,
                                 cursor *c, uint64_t alive)
{
    const unsigned char *map = cut(c, 4 * ((s->capacity + 31) / 32));
    const unsigned char *x = cut(c, 24 * alive), *age = cut(c, 4 * alive),
                        *life = cut(c, 4 * alive);
    uint64_t held = 0;
    for (uint64_t k = 0; k < s->capacity; ++k)
        held += slot_held(map, k);
    if (held != alive)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: %" PRIu64 " slots hold particles, "
                     "the counters say %" PRIu64 " are alive", index, held, alive);
    for (uint64_t k = 0, j = 0; k < s->capacity; ++k) {
        if (!slot_held(map, k))
            continue;
        memcpy(s->x + 3 * k, x + 24 * j, 3 * sizeof(double));
        memcpy(&s->age[k], age + 4 * j, sizeof(int32_t));
        memcpy(&s->life[k], life + 4 * j, sizeof(int32_t));
        ++j;
        /* as a step leaves them: younger than their lifetime, near the grid */
        if (!near_grid(d, s->x + 3 * k) || s->age[k] < 0 || s->life[k] < 0 ||
            (s->life[k] > 0 && s->age[k] >= s->life[k]))
            return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: the particle of slot %" PRIu64
                         " out of range (position %g %g %g, age %d, lifetime %d)",
                         index, k, s->x[3 * k], s->x[3 * k + 1], s->x[3 * k + 2],
                         (int)s->age[k], (int)s->life[k]);
    }
    return ACM_OK;
}

/* Smoke `index`: a new smoke of d with the section's emitters and particles. */
static acm_status parse_smoke(loader *l, acm_domain *d, uint32_t index, cursor *c)
{
    ckpt_smoke h;
    uint64_t alive = 0, tail = 0;
    ACM_TRY(smoke_head(l, index, c, &h, &alive, &tail));
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = h.capacity;
    so.seed = h.seed;
    acm_smoke *s = NULL; /* in d's list at once: acm_domain_destroy frees it on any failure */
    acm_status st = acm_smoke_create(&s, d, &so);
    if (st != ACM_OK)
        return lfail(l, st, "section smoke %u: %s", index, d->error);
    for (int32_t i = 0; i < h.nemitters; ++i)
        ACM_TRY(load_emitter(l, d, s, index, i, c, tail));
    if (c->left != tail)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: %" PRIu64 " bytes more than its "
                     "content", index, c->left - tail);
    ACM_TRY(load_particles(l, d, s, index, c, alive));
    st = acm__smoke_restore(s, &h.counts);
    return st == ACM_OK ? ACM_OK : lfail(l, st, "section smoke %u: %s", index, s->error);
}

static acm_status load_smoke(loader *l, acm_domain *d, uint32_t index)
{
    const ckpt_entry *e = l->smokes[index];
    unsigned char *b = NULL;
    acm_status st = read_whole(l, e, &b);
    if (st == ACM_OK) {
        cursor c = {b, e->size};
        st = parse_smoke(l, d, index, &c);
    }
    acm__free(b);
    return st;
}

/* The settings into a fresh domain (the setters validate them). */
static acm_status make_domain(loader *l, const ckpt_settings *s, const acm_load_options *o,
                              acm_domain **out)
{
    acm_backend backend = o->backend == ACM_BACKEND_AUTO ? (acm_backend)s->backend : o->backend;
    if (s->backend != ACM_BACKEND_CPU && s->backend != ACM_BACKEND_CUDA)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section settings: unknown backend %d",
                     (int)s->backend);
    acm_layout *layout = NULL;
    if (acm_layout_create(&layout) != ACM_OK)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate a layout");
    int64_t values[8];
    memcpy(values, s->layout, sizeof values);
    int32_t precision = s->options_precision;
    if (backend == ACM_BACKEND_CPU) { /* what the CPU has no use for, or cannot store */
        values[1] = values[2] = 0;
        if (values[7] == ACM_PRECISION_FP16)
            values[7] = ACM_PRECISION_FP32;
        if (precision == ACM_PRECISION_FP16)
            precision = ACM_PRECISION_FP32;
    }
    for (int i = 0; i < 8; ++i)
        if (acm_layout_set(layout, (acm_layout_param)(i + 1), values[i]) != ACM_OK) {
            acm_status st = lfail(l, ACM_ERR_BAD_FORMAT, "section settings: layout: %s",
                                  acm_layout_last_error(layout));
            acm_layout_destroy(layout);
            return st;
        }
    char err[ACM_ERROR_SIZE] = "";
    acm_domain_options opts = ACM_DOMAIN_OPTIONS_INIT;
    opts.nx = s->nx;
    opts.ny = s->ny;
    opts.nz = s->nz;
    opts.viscosity = s->viscosity;
    opts.collision = s->coll.model;
    opts.backend = backend;
    opts.device = o->device;
    opts.precision = (acm_precision)precision;
    opts.layout = o->layout != NULL ? o->layout : layout;
    opts.max_speed = s->max_speed;
    opts.error_buffer = err;
    opts.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    acm_status st = acm_domain_create(&d, &opts);
    acm_layout_destroy(layout);
    if (st != ACM_OK) {
        /* the backend's own failures keep their status; bad numbers are the file's */
        const bool file = st == ACM_ERR_OUT_OF_RANGE || st == ACM_ERR_BAD_ENUM ||
                          st == ACM_ERR_INVALID_ARG;
        return lfail(l, file ? ACM_ERR_BAD_FORMAT : st, "%s%s", file ? "section settings: " : "",
                     err);
    }
    st = acm_domain_set_collision(d, &s->coll);
    for (int f = 0; st == ACM_OK && f < ACM_FACE_COUNT; ++f)
        st = acm_domain_set_face(d, (acm_face)f, (acm_boundary)s->face_type[f], s->face_u[f]);
    if (st == ACM_OK)
        st = acm_domain_set_body_force(d, s->body_force);
    if (st == ACM_OK)
        st = acm_domain_set_param(d, ACM_PARAM_THREADS, s->threads);
    if (st == ACM_OK)
        st = acm_domain_set_param(d, ACM_PARAM_DIVERGENCE_INTERVAL, s->divergence_interval);
    if (st == ACM_OK)
        st = acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, s->ib_iterations);
    if (st == ACM_OK && acm__domain_check_faces(d) != ACM_OK)
        st = ACM_ERR_INVALID_ARG;
    if (st != ACM_OK) {
        st = lfail(l, ACM_ERR_BAD_FORMAT, "section settings: %s", d->error);
        acm_domain_destroy(d);
        return st;
    }
    d->setup.has_force_field = s->has_force_field != 0;
    *out = d;
    return ACM_OK;
}

static acm_status load(loader *l, const acm_load_options *o, acm_domain **out)
{
    ACM_TRY(read_header(l));
    ACM_TRY(check_table(l));
    rec r;
    ckpt_settings s;
    ACM_TRY(read_record(l, l->settings, &r, settings_size()));
    settings_get(&r, &s);
    acm_snapshot snap;
    memset(&snap, 0, sizeof snap);
    int32_t diverged, form, prev_backend;
    ACM_TRY(read_record(l, l->counters, &r, counters_size()));
    counters_get(&r, &snap, &diverged, &form, &prev_backend);
    const int32_t nsolids = snap.nsolids;
    snap.nsolids = 0; /* solids are counted in as they are read */
    if ((form != ACM_FORM_POST_COLLISION && form != ACM_FORM_PHYSICAL) ||
        (prev_backend != ACM_BACKEND_CPU && prev_backend != ACM_BACKEND_CUDA) ||
        (unsigned)diverged > 1 || snap.step < 0 || snap.fallback_last < 0 ||
        snap.fallback_total < 0)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section counters: values out of range");
    snap.diverged = diverged != 0;
    snap.backend.form = (acm_state_form)form;
    snap.backend.prev_backend = (acm_backend)prev_backend;
    ACM_TRY(index_solids(l, nsolids));
    ACM_TRY(index_entries(l, SEC_SMOKE, l->nsmokes, &l->smokes));
    /* sizes against the grid before the grid is allocated: the file bounds it */
    if (s.nx < 1 || s.ny < 1 || s.nz < 1 || s.nx > 65535 || s.ny > 65535 || s.nz > 65535)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section settings: grid %d x %d x %d", (int)s.nx,
                     (int)s.ny, (int)s.nz);
    const uint64_t cells = (uint64_t)s.nx * (uint64_t)s.ny * (uint64_t)s.nz;
    char name[32];
    const struct { const ckpt_entry *e; uint64_t bytes; } want[] = {
        {l->pops, cells * ACM_Q * 8},    {l->force, cells * 3 * 8},
        {l->tau, cells * 8},             {l->ib_force, cells * 3 * 8},
        {l->ib_mask, (cells + 31) / 32 * 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
        if (want[i].e != NULL && want[i].e->size != want[i].bytes)
            return lfail(l, ACM_ERR_BAD_FORMAT,
                         "section %s holds %" PRIu64 " bytes, %" PRIu64 " expected for a %d x "
                         "%d x %d grid",
                         entry_name(want[i].e, name, sizeof name), want[i].e->size,
                         want[i].bytes, (int)s.nx, (int)s.ny, (int)s.nz);

    acm_domain *d = NULL;
    ACM_TRY(make_domain(l, &s, o, &d));
    double prev[ACM_STATE_PREV_SIZE];
    memcpy(prev, snap.backend.prev, sizeof prev);
    acm_status st = acm__state_alloc(d, &snap.backend, l->force != NULL, l->tau != NULL,
                                     l->ib_force != NULL);
    if (st != ACM_OK)
        st = lfail(l, st, "%s", d->error);
    snap.backend.form = (acm_state_form)form; /* acm__state_alloc cleared them */
    snap.backend.prev_backend = (acm_backend)prev_backend;
    memcpy(snap.backend.prev, prev, sizeof prev);
    if (st == ACM_OK)
        st = sec_whole(l, l->pops, snap.backend.f, cells * ACM_Q * 8);
    if (st == ACM_OK && l->force != NULL)
        st = sec_whole(l, l->force, snap.backend.force, cells * 3 * 8);
    if (st == ACM_OK && l->tau != NULL)
        st = sec_whole(l, l->tau, snap.backend.tau, cells * 8);
    if (st == ACM_OK && l->ib_force != NULL)
        st = sec_whole(l, l->ib_force, snap.backend.ib_force, cells * 3 * 8);
    if (st == ACM_OK && l->ib_mask != NULL) {
        st = sec_whole(l, l->ib_mask, snap.backend.ib_mask, (cells + 31) / 32 * 4);
        if (st == ACM_OK && cells % 32 != 0) /* no cell past the grid */
            snap.backend.ib_mask[cells / 32] &= (UINT32_C(1) << (cells % 32)) - 1;
    }
    if (st == ACM_OK && nsolids > 0 &&
        (snap.solids = acm__calloc((size_t)nsolids, sizeof *snap.solids)) == NULL)
        st = lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate %d solids", (int)nsolids);
    for (int32_t i = 0; st == ACM_OK && i < nsolids; ++i) {
        snap.nsolids = i + 1;
        st = load_solid(l, d, i, &snap.solids[i]);
    }
    if (st == ACM_OK && nsolids > 0 && d->ops->ib_attach == NULL)
        st = lfail(l, ACM_ERR_UNSUPPORTED, "the %s backend has no immersed boundary",
                   d->ops->name);
    if (st == ACM_OK) {
        snap.precision = d->layout.precision; /* host arrays: any precision loads */
        st = acm__snapshot_restore(d, &snap);
        if (st != ACM_OK)
            st = lfail(l, st, "restoring the state: %s", d->error);
    }
    acm__snapshot_free(&snap);
    for (uint32_t i = 0; st == ACM_OK && i < l->nsmokes; ++i) /* their solids are in */
        st = load_smoke(l, d, i);
    if (st != ACM_OK) {
        acm_domain_destroy(d);
        return st;
    }
    d->error[0] = '\0';
    *out = d;
    return ACM_OK;
}

ACM_API acm_status acm_load_options_init(acm_load_options *opts, uint32_t version)
{
    const acm_load_options def = ACM_LOAD_OPTIONS_INIT; /* version 1 is the whole struct */
    const bool known = version >= 1 && version <= ACM_LOAD_OPTIONS_VERSION;
    return acm__options_init(opts, &def, known ? sizeof def : 0, version);
}

ACM_API acm_status acm_domain_load(acm_domain **out, const char *path,
                                   const acm_load_options *opts)
{
    acm_load_options o = ACM_LOAD_OPTIONS_INIT;
    if (opts != NULL) {
        if (opts->version < 1 || opts->version > ACM_LOAD_OPTIONS_VERSION) {
            if (opts->error_buffer != NULL && opts->error_buffer_size > 0)
                acm__format(opts->error_buffer, opts->error_buffer_size,
                            "acm_load_options version %u is not supported (1..%d)",
                            opts->version, ACM_LOAD_OPTIONS_VERSION);
            return ACM_ERR_BAD_VERSION;
        }
        o = *opts; /* version 1 is the whole struct */
    }
    char msg[ACM_ERROR_SIZE] = "";
    acm_status st = ACM_OK;
    if (out == NULL || path == NULL) {
        acm__format(msg, sizeof msg, "%s is NULL", out == NULL ? "out" : "path");
        st = ACM_ERR_NULL_POINTER;
    } else if ((unsigned)o.backend > ACM_BACKEND_CUDA) {
        acm__format(msg, sizeof msg, "unknown backend %d", (int)o.backend);
        st = ACM_ERR_BAD_ENUM;
    } else if (o.error_buffer == NULL && o.error_buffer_size != 0) {
        acm__format(msg, sizeof msg, "error_buffer is NULL but error_buffer_size is %zu",
                    o.error_buffer_size);
        st = ACM_ERR_INVALID_ARG;
    } else {
        loader l = {.path = path, .msg = msg, .n = sizeof msg};
        if ((l.f = fopen(path, "rb")) == NULL) {
            st = lfail(&l, ACM_ERR_IO, "cannot open: %s", strerror(errno));
        } else {
            st = load(&l, &o, out);
            fclose(l.f);
        }
        acm__free(l.table);
        acm__free(l.solids);
        acm__free(l.smokes);
    }
    if (st != ACM_OK && o.error_buffer != NULL && o.error_buffer_size > 0)
        acm__format(o.error_buffer, o.error_buffer_size, "%s", msg);
    return st;
}
