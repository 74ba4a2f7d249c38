/*
 * libacmlbm -- the checkpoint file format (docs/checkpoint.md), shared by saving
 * (lib/io/checkpoint_save.c) and loading (lib/io/checkpoint_load.c): the
 * CRC-32C, the byte-level records and the fixed records' encodings, the
 * section table's checksum. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h> /* memcpy, memset */

#include "checkpoint_format.h"

const char ckpt_magic[8] = {'A', 'C', 'M', 'L', 'B', 'M', 'C', 'K'};

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

/* Scalars into a record and out of it, in native byte order (struct rec). */
void ckpt_put(rec *r, const void *p, size_t n)
{
    if (r->n + n > sizeof r->b) { /* a programming error: records are small and fixed */
        r->bad = true;
        return;
    }
    memcpy(r->b + r->n, p, n);
    r->n += n;
}
void ckpt_put_u32(rec *r, uint32_t v) { ckpt_put(r, &v, 4); }
static void put_i32(rec *r, int32_t v) { ckpt_put(r, &v, 4); }
static void put_i64(rec *r, int64_t v) { ckpt_put(r, &v, 8); }
void ckpt_put_u64(rec *r, uint64_t v) { ckpt_put(r, &v, 8); }
static void put_f64s(rec *r, const double *v, size_t n) { ckpt_put(r, v, 8 * n); }

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
uint32_t ckpt_get_u32(rec *r) { uint32_t v; get(r, &v, 4); return v; }
static int32_t get_i32(rec *r) { int32_t v; get(r, &v, 4); return v; }
static int64_t get_i64(rec *r) { int64_t v; get(r, &v, 8); return v; }
uint64_t ckpt_get_u64(rec *r) { uint64_t v; get(r, &v, 8); return v; }
static void get_f64s(rec *r, double *v, size_t n) { get(r, v, 8 * n); }

/* The settings: what acm_domain_create and the setters take. */
void ckpt_settings_put(rec *r, const ckpt_settings *s)
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
    put_i32(r, s->storage);
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

void ckpt_settings_get(rec *r, ckpt_settings *s)
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
    s->storage = get_i32(r);
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
void ckpt_counters_put(rec *r, const acm_snapshot *snap)
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
    put_i32(r, snap->backend.mom_bits); /* reserved, 0, before 1.7 */
}

void ckpt_counters_get(rec *r, acm_snapshot *snap, int32_t *diverged, int32_t *form,
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
    snap->backend.mom_bits = get_i32(r);
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
void ckpt_solid_head_put(rec *r, const acm_solid *s, const acm_solid_copy *c)
{
    ckpt_put_u64(r, s->count);
    ckpt_put_u64(r, s->mnv);
    ckpt_put_u64(r, s->mnt);
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

void ckpt_solid_head_get(rec *r, ckpt_solid *h, acm_solid_copy *c)
{
    h->count = ckpt_get_u64(r);
    h->mnv = ckpt_get_u64(r);
    h->mnt = ckpt_get_u64(r);
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
void ckpt_smoke_head_put(rec *r, const acm_smoke *s)
{
    ckpt_put_u64(r, s->capacity);
    ckpt_put_u64(r, s->seed);
    ckpt_put_u64(r, s->counts.emitted);
    ckpt_put_u64(r, s->counts.left);
    ckpt_put_u64(r, s->counts.expired);
    ckpt_put_u64(r, s->counts.absorbed);
    /* loaded into counts (and a device's) */
    ckpt_put_u64(r, s->counts.dropped + s->dropped_planned);
    put_i32(r, s->nemitters);
    put_i32(r, 0);
}

void ckpt_smoke_head_get(rec *r, ckpt_smoke *h)
{
    h->capacity = ckpt_get_u64(r);
    h->seed = ckpt_get_u64(r);
    h->counts.emitted = ckpt_get_u64(r);
    h->counts.left = ckpt_get_u64(r);
    h->counts.expired = ckpt_get_u64(r);
    h->counts.absorbed = ckpt_get_u64(r);
    h->counts.dropped = ckpt_get_u64(r);
    h->nemitters = get_i32(r);
    (void)get_i32(r);
}

/* An emitter's fixed part (its points follow): the acm_emitter's numbers, its
 * solid's number (-1: none) and how far it has got. */
void ckpt_emitter_put(rec *r, const smoke_emitter *se, int32_t solid)
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
    ckpt_put_u64(r, se->next);
    ckpt_put_u64(r, se->serial);
    ckpt_put_u64(r, se->npoints);
}

void ckpt_emitter_get(rec *r, smoke_emitter *se, int32_t *solid)
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
    se->next = ckpt_get_u64(r);
    se->serial = ckpt_get_u64(r);
    se->npoints = ckpt_get_u64(r);
}

/* Sizes of the fixed records, from the writers themselves. */
size_t ckpt_settings_size(void)
{
    rec r = {.n = 0};
    const ckpt_settings s = {0};
    ckpt_settings_put(&r, &s);
    return r.n;
}
size_t ckpt_counters_size(void)
{
    rec r = {.n = 0};
    const acm_snapshot s = {0};
    ckpt_counters_put(&r, &s);
    return r.n;
}
size_t ckpt_solid_head_size(void)
{
    rec r = {.n = 0};
    const acm_solid s = {0};
    const acm_solid_copy c = {0};
    ckpt_solid_head_put(&r, &s, &c);
    return r.n;
}
size_t ckpt_smoke_head_size(void)
{
    rec r = {.n = 0};
    const acm_smoke s = {0};
    ckpt_smoke_head_put(&r, &s);
    return r.n;
}
size_t ckpt_emitter_size(void)
{
    rec r = {.n = 0};
    const smoke_emitter se = {0};
    ckpt_emitter_put(&r, &se, 0);
    return r.n;
}

/* ---- the section table ---------------------------------------------------------------- */

void ckpt_entry_put(rec *r, const ckpt_entry *e)
{
    ckpt_put_u32(r, e->type);
    ckpt_put_u32(r, e->index);
    ckpt_put_u64(r, e->offset);
    ckpt_put_u64(r, e->size);
    ckpt_put_u32(r, e->crc);
    ckpt_put_u32(r, e->reserved); /* 0; under the table's checksum like the rest */
}

/* The table's CRC covers the header's first 36 bytes and every entry. */
uint32_t ckpt_table_crc(const rec *head, const ckpt_entry *t, uint32_t n)
{
    uint32_t crc = acm__crc32c(0, head->b, 36);
    for (uint32_t i = 0; i < n; ++i) {
        rec r = {.n = 0};
        ckpt_entry_put(&r, &t[i]);
        crc = acm__crc32c(crc, r.b, r.n);
    }
    return crc;
}
