/*
 * libacmlbm -- checkpoint save (acm_checkpoint.h): a domain's whole state
 * (lib/engine/state.h) written beside its path in the format of
 * lib/io/checkpoint_format.h (docs/checkpoint.md) and renamed over it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>  /* errno, EIO */
#include <stdio.h>  /* FILE, fwrite, fseeko, fflush, fclose */
#include <string.h> /* memcpy, memset */
#include <unistd.h> /* fsync */

#include "alloc.h"
#include "checkpoint_format.h"
#include "decomp.h" /* acm__decomp_writes */
#include "file.h"   /* acm__temp_name, acm__temp_fopen, acm__temp_finish */
#include "guard.h"  /* ACM_GUARDED */
#include "halo.h"   /* acm__halo_agree */
#include "moments.h" /* acm_mom_encode_f64 */
#include "smoke.h"
#include "solid.h"
#include "state.h"

typedef struct writer {
    FILE *f;
    uint64_t pos;
    ckpt_entry *table;
    uint32_t nsections, cap; /* the table's entries written, and its room */
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
    if (w->nsections == w->cap) { /* section_count and the writers disagree: the write fails */
        if (w->e == 0)
            w->e = EOVERFLOW;
        w->cur = NULL; /* w_bytes then counts into no entry */
        return;
    }
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
    ckpt_put(r, ckpt_magic, 8);
    ckpt_put_u32(r, CKPT_VERSION);
    ckpt_put_u32(r, CKPT_ENDIAN_MARK);
    ckpt_put_u32(r, CKPT_HEADER_SIZE);
    ckpt_put_u32(r, nsections);
    ckpt_put_u64(r, file_size);
    ckpt_put_u32(r, acm_version_number());
}

/* Header and table at the start, once the sections are written. */
static void w_table(writer *w)
{
    if (w->e != 0)
        return;
    rec h = {.n = 0};
    header_put(&h, w->nsections, w->pos);
    ckpt_put_u32(&h, ckpt_table_crc(&h, w->table, w->nsections));
    if (fseeko(w->f, 0, SEEK_SET) != 0) {
        w->e = errno ? errno : EIO;
        return;
    }
    w->cur = NULL;
    const uint64_t end = w->pos;
    w_bytes(w, h.b, h.n);
    for (uint32_t i = 0; i < w->nsections; ++i) {
        rec r = {.n = 0};
        ckpt_entry_put(&r, &w->table[i]);
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
    s->storage = (int32_t)l.storage;
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
    ckpt_solid_head_put(&r, s, c);
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
    ckpt_put(stage, p, n);
}

/* The number of an emitter's solid in the domain's list; -1: none (another
 * shape, or a solid emitter whose solid was destroyed). */
static int32_t emitter_solid(const acm_domain *d, const smoke_emitter *se)
{
    if (se->e.shape != ACM_EMITTER_SOLID || se->e.solid == NULL)
        return -1; /* e.solid may hold anything the caller left there */
    const int32_t i = acm__solid_index(se->e.solid);
    return i < d->nsolids ? i : -1;
}

/* A smoke as synchronised (acm__smoke_sync): head, emitters and their points,
 * the map of the slots that hold a particle, then those particles' positions,
 * ages and lifetimes in slot order. */
static void write_smoke(writer *w, uint32_t index, const acm_domain *d, const acm_smoke *s)
{
    rec r = {.n = 0};
    ckpt_smoke_head_put(&r, s);
    w_begin(w, SEC_SMOKE, index);
    w_bytes(w, r.b, r.n);
    for (int32_t i = 0; i < s->nemitters; ++i) {
        const smoke_emitter *se = &s->emitters[i];
        r.n = 0;
        ckpt_emitter_put(&r, se, emitter_solid(d, se));
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

/* Whether the state has the immersed-boundary force and its support (saved together). */
static bool has_ib(const acm_state *st) { return st->ib_force != NULL && st->ib_mask != NULL; }

/* How many sections the file holds: settings, counters, populations, the
 * optional per-cell arrays, one per solid and one per smoke. */
static uint32_t section_count(const acm_domain *d, const acm_snapshot *snap)
{
    const acm_state *st = &snap->backend;
    uint32_t faces = 0;
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        faces += (d->face_values[f] != NULL) + (d->setup.absorber[f].cells > 0);
    return 3u + (st->mom_bits != 0) + (st->force != NULL) + (st->tau != NULL) + 2u * has_ib(st) +
           (uint32_t)snap->nsolids + (uint32_t)d->nsmokes + faces;
}

/* A section per face with values (acm_domain_set_face_values) and one per face
 * with an absorbing layer, their index the face. */
static void write_faces(writer *w, const acm_domain *d)
{
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        const acm_absorber *a = &d->setup.absorber[f];
        if (a->cells > 0) {
            const double v[6] = {(double)a->cells, a->strength, a->rho, a->u[0], a->u[1], a->u[2]};
            w_array(w, SEC_ABSORBER, (uint32_t)f, v, sizeof v);
        }
        if (d->face_values[f] == NULL)
            continue;
        int lo, hi;
        acm_face_axes(f, &lo, &hi);
        const size_t count = (size_t)acm_face_value_count(d->setup.face[f].type) *
                             (size_t)n[lo] * (size_t)n[hi];
        w_array(w, SEC_FACE_VALUES, (uint32_t)f, d->face_values[f], count * sizeof(double));
    }
}

/* The section table allocated and the temporary created (its name into
 * tmp[size]); the message in msg. */
static acm_status open_writer(writer *w, const char *path, char *tmp, size_t size, uint32_t cap,
                              char *msg, size_t n)
{
    w->table = acm__calloc(cap, sizeof *w->table);
    w->cap = cap;
    if (w->table == NULL) {
        acm__format(msg, n, "cannot allocate the section table of %s", path);
        return ACM_ERR_NO_MEMORY;
    }
    if ((w->f = acm__temp_fopen(tmp, size, path, msg, n)) == NULL) {
        acm__free(w->table);
        return ACM_ERR_IO;
    }
    return ACM_OK;
}

/* Room for the header and the table, written last. */
static void reserve_table(writer *w, uint32_t cap)
{
    static const unsigned char zero[CKPT_HEADER_SIZE]; /* >= CKPT_ENTRY_SIZE */
    w_bytes(w, zero, CKPT_HEADER_SIZE);
    for (uint32_t i = 0; i < cap; ++i)
        w_bytes(w, zero, CKPT_ENTRY_SIZE);
}

/* The settings and counters sections, a fixed record each. */
static void write_records(writer *w, const acm_domain *d, const acm_snapshot *snap)
{
    rec r = {.n = 0};
    ckpt_settings s;
    settings_of(d, &s);
    ckpt_settings_put(&r, &s);
    w_array(w, SEC_SETTINGS, 0, r.b, r.n);
    r.n = 0;
    ckpt_counters_put(&r, snap);
    w_array(w, SEC_COUNTERS, 0, r.b, r.n);
}

/* Moment storage's moments: as the GPU stores them (st->mom), else those of
 * the saved populations (the CPU keeps populations): a GPU loads them back
 * bit for bit instead of encoding the populations again. */
static void write_moments(writer *w, const acm_domain *d, const acm_state *st)
{
    const size_t cells = (size_t)d->ncells;
    if (st->mom != NULL) {
        w_array(w, SEC_MOMENTS, 0, st->mom, ACM_MOMENTS * cells * sizeof(double));
        return;
    }
    rec stage = {.n = 0};
    w_begin(w, SEC_MOMENTS, 0);
    for (size_t k = 0; k < cells; ++k) {
        double m[ACM_MOMENTS];
        acm_mom_encode_f64(st->f + k * ACM_Q, m);
        w_piece(w, &stage, m, sizeof m);
    }
    w_bytes(w, stage.b, stage.n);
    w_end(w);
}

/* The per-cell arrays: the populations (and moment storage's moments), then
 * the force field, tau and the immersed-boundary force and support where the
 * state has them. */
static void write_fields(writer *w, const acm_domain *d, const acm_state *st)
{
    const size_t cells = (size_t)d->ncells;
    w_array(w, SEC_POPULATIONS, 0, st->f, (size_t)ACM_Q * cells * sizeof(double));
    if (st->mom_bits != 0)
        write_moments(w, d, st);
    if (st->force != NULL)
        w_array(w, SEC_FORCE, 0, st->force, 3 * cells * sizeof(double));
    if (st->tau != NULL)
        w_array(w, SEC_TAU, 0, st->tau, cells * sizeof(double));
    if (has_ib(st)) {
        w_array(w, SEC_IB_FORCE, 0, st->ib_force, 3 * cells * sizeof(double));
        w_array(w, SEC_IB_MASK, 0, st->ib_mask,
                acm_state_mask_words(d->ncells) * sizeof(uint32_t));
    }
}

/* A section per solid, then one per smoke. */
static void write_objects(writer *w, const acm_domain *d, const acm_snapshot *snap)
{
    for (int32_t i = 0; i < snap->nsolids; ++i)
        write_solid(w, (uint32_t)i, d->solids[i], &snap->solids[i]);
    for (int32_t i = 0; i < d->nsmokes; ++i)
        write_smoke(w, (uint32_t)i, d, d->smokes[i]);
}

/* The temporary flushed to the disk and closed: the errno of the first
 * failure of the whole write, 0: none. */
static int close_writer(writer *w)
{
    int e = w->e;
    if (e == 0 && (fflush(w->f) != 0 || ferror(w->f) || fsync(fileno(w->f)) != 0))
        e = errno ? errno : EIO;
    if (fclose(w->f) != 0 && e == 0)
        e = errno ? errno : EIO;
    return e;
}

/* The whole file into a temporary, renamed over path when complete. */
static acm_status write_file(acm_domain *d, const char *path, const acm_snapshot *snap,
                             char *msg, size_t n)
{
    writer w = {0};
    char tmp[4096];
    const uint32_t cap = section_count(d, snap);
    ACM_TRY(open_writer(&w, path, tmp, sizeof tmp, cap, msg, n));
    reserve_table(&w, cap);
    write_records(&w, d, snap);
    write_fields(&w, d, &snap->backend);
    write_objects(&w, d, snap);
    write_faces(&w, d);
    w_table(&w); /* every byte of the file is now under a checksum */
    const int e = close_writer(&w);
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
    for (int32_t i = 0; st == ACM_OK && i < domain->nsmokes; ++i) /* on a GPU, to the host */
        if ((st = acm__smoke_sync(domain->smokes[i])) != ACM_OK)
            ACM_FAIL(domain, st, "cannot save %s: smoke %d: %s", path ? path : "the checkpoint",
                     (int)i, domain->smokes[i]->error);
    if (domain->decomp != NULL) /* every rank takes part in the snapshot's gather, or none */
        st = acm__halo_agree(domain, st);
    if (st != ACM_OK)
        return st;
    acm_snapshot snap;
    ACM_TRY(acm__snapshot_take(domain, &snap, false));
    if (writes)
        st = write_file(domain, path, &snap, msg, sizeof msg);
    acm__snapshot_free(&snap);
    if (st != ACM_OK)
        ACM_FAIL(domain, st, "%s", msg);
    return domain->decomp != NULL ? acm__halo_agree(domain, st) : st;
}

ACM_API acm_status acm_domain_save(acm_domain *domain, const char *path)
{
    ACM_GUARDED(domain, domain_save_unguarded(domain, path));
}
