/*
 * libacmlbm -- checkpoint load (acm_checkpoint.h): a file in the format of
 * lib/io/checkpoint_format.h (docs/checkpoint.md), every size, offset, count
 * and checksum checked before it is used, read back into a new domain.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>    /* errno */
#include <inttypes.h> /* PRIu64 */
#include <math.h>     /* floor, isfinite, fabs, sqrt */
#include <stdarg.h>   /* va_list */
#include <stdio.h>    /* FILE, fread, fseeko */
#include <string.h>   /* memcmp, memcpy, memset, strerror */

#include "alloc.h"
#include "backend.h" /* acm_backend_ops */
#include "checkpoint_format.h"
#include "file.h"     /* acm__file_fopen */
#include "moments.h"  /* ACM_MOMENTS, acm_mom16_half, acm_mom16_scale */
#include "options.h"  /* acm__options_init */
#include "pipeline.h" /* acm__domain_check_faces */
#include "smoke.h"
#include "solid.h"
#include "state.h"

/* fuzz/fuzz_checkpoint.c: checksums computed but not enforced, so that the
 * fuzzer's mutations reach the checks behind them */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#  define ACM_CKPT_FUZZING 1
#else
#  define ACM_CKPT_FUZZING 0
#endif /* FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION */

static const char *section_name(uint32_t type)
{
    static const char *const names[] = {"?",   "settings", "counters", "populations", "force",
                                        "tau", "ib-force", "ib-mask",  "solid",       "smoke",
                                        "face-values", "absorber", "moments"};
    return type >= 1 && type <= SEC_LAST ? names[type] : "unknown";
}

typedef struct loader {
    FILE *f;
    const char *path;
    uint64_t size; /* of the file */
    ckpt_entry *table;
    uint32_t nsections;
    const ckpt_entry *settings, *counters, *pops, *mom, *force, *tau, *ib_force, *ib_mask;
    const ckpt_entry *faces[ACM_FACE_COUNT];     /* face-values sections, by face */
    const ckpt_entry *absorbers[ACM_FACE_COUNT]; /* absorber sections, by face */
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
    if (e->type == SEC_SOLID || e->type == SEC_SMOKE || e->type == SEC_FACE_VALUES ||
        e->type == SEC_ABSORBER)
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

/* The header's bytes into h (no more than the file holds): the magic, then
 * the header whole; h->n past the magic. */
static acm_status read_magic(loader *l, rec *h)
{
    const size_t want = l->size < CKPT_HEADER_SIZE ? (size_t)l->size : CKPT_HEADER_SIZE;
    h->end = fread(h->b, 1, want, l->f);
    if (h->end < 8 || memcmp(h->b, ckpt_magic, 8) != 0)
        return lfail(l, ACM_ERR_BAD_FORMAT, "not a libacmlbm checkpoint (no ACMLBMCK magic)");
    if (h->end < CKPT_HEADER_SIZE)
        return lfail(l, ACM_ERR_BAD_FORMAT, "truncated: %zu bytes, shorter than the header",
                     h->end);
    h->n = 8;
    return ACM_OK;
}

/* The format version and the byte-order mark: the mark checked first. */
static acm_status check_version(loader *l, rec *h)
{
    const uint32_t version = ckpt_get_u32(h), mark = ckpt_get_u32(h);
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
    return ACM_OK;
}

/* The rest of the header: its size, the file's and the table's, checked;
 * the table's length and CRC out. */
static acm_status check_sizes(loader *l, rec *h, uint32_t *nsections_out, uint32_t *crc)
{
    const uint32_t header_size = ckpt_get_u32(h), nsections = ckpt_get_u32(h);
    const uint64_t file_size = ckpt_get_u64(h);
    (void)ckpt_get_u32(h); /* the writer's library version: information only */
    *crc = ckpt_get_u32(h);
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
    *nsections_out = nsections;
    return ACM_OK;
}

/* The section table's entries into l->table. */
static acm_status read_table(loader *l, uint32_t nsections)
{
    l->table = acm__calloc(nsections, sizeof *l->table);
    if (l->table == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate the section table");
    l->nsections = nsections;
    for (uint32_t i = 0; i < nsections; ++i) {
        rec r = {.n = 0};
        r.end = fread(r.b, 1, CKPT_ENTRY_SIZE, l->f);
        ckpt_entry *e = &l->table[i];
        e->type = ckpt_get_u32(&r);
        e->index = ckpt_get_u32(&r);
        e->offset = ckpt_get_u64(&r);
        e->size = ckpt_get_u64(&r);
        e->crc = ckpt_get_u32(&r);
        e->reserved = ckpt_get_u32(&r);
        if (r.bad)
            return lfail(l, ACM_ERR_BAD_FORMAT, "truncated section table");
    }
    return ACM_OK;
}

/* The header and the section table, checked against the file and their CRC. */
static acm_status read_header(loader *l)
{
    rec h = {.n = 0};
    uint32_t nsections = 0, crc = 0;
    ACM_TRY(read_magic(l, &h));
    ACM_TRY(check_version(l, &h));
    ACM_TRY(check_sizes(l, &h, &nsections, &crc));
    ACM_TRY(read_table(l, nsections));
    if (ckpt_table_crc(&h, l->table, nsections) != crc && !ACM_CKPT_FUZZING)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section table: checksum mismatch (corrupted header)");
    return ACM_OK;
}

/* The sections every checkpoint has, and ib-force and ib-mask both or neither. */
static acm_status check_required(loader *l)
{
    if (l->settings == NULL || l->counters == NULL || l->pops == NULL)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s missing",
                     l->settings == NULL ? "settings" : l->counters == NULL ? "counters"
                                                                           : "populations");
    if ((l->ib_force == NULL) != (l->ib_mask == NULL))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section %s missing (ib-force and ib-mask go together)",
                     l->ib_force == NULL ? "ib-force" : "ib-mask");
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
        case SEC_MOMENTS: slot = &l->mom; break;
        case SEC_FORCE: slot = &l->force; break;
        case SEC_TAU: slot = &l->tau; break;
        case SEC_IB_FORCE: slot = &l->ib_force; break;
        case SEC_IB_MASK: slot = &l->ib_mask; break;
        case SEC_SMOKE: ++l->nsmokes; continue;
        case SEC_FACE_VALUES:
        case SEC_ABSORBER: {
            if (e->index >= ACM_FACE_COUNT)
                return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: no such face (entry %u)",
                             entry_name(e, name, sizeof name), i);
            const ckpt_entry **by_face = e->type == SEC_ABSORBER ? l->absorbers : l->faces;
            if (by_face[e->index] != NULL)
                return lfail(l, ACM_ERR_BAD_FORMAT, "section %s given twice (entry %u)",
                             entry_name(e, name, sizeof name), i);
            by_face[e->index] = e;
            continue;
        }
        default: continue; /* solids: index_solids */
        }
        if (*slot != NULL || e->index != 0)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s given twice (entry %u)",
                         entry_name(e, name, sizeof name), i);
        *slot = e;
    }
    return check_required(l);
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

/* A solid section opened and its head read into h and c; its arrays follow. */
static acm_status read_solid_head(loader *l, int32_t index, ckpt_solid *h, acm_solid_copy *c)
{
    const ckpt_entry *e = l->solids[index];
    const size_t head = ckpt_solid_head_size();
    if (e->size < head)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section solid %d: %" PRIu64 " bytes, shorter than "
                     "its %zu-byte head", (int)index, e->size, head);
    ACM_TRY(sec_open(l, e));
    rec r = {.n = 0};
    ACM_TRY(sec_read(l, r.b, head));
    r.end = head;
    ckpt_solid_head_get(&r, h, c);
    return ACM_OK;
}

/* The head checked: every array fits the section before anything is
 * allocated, the body and the parameters in range. */
static acm_status check_solid_head(loader *l, const acm_domain *d, int32_t index,
                                   const ckpt_solid *h, const acm_solid_copy *c)
{
    const ckpt_entry *e = l->solids[index];
    const uint64_t room = e->size - ckpt_solid_head_size();
    if (h->count == 0 || h->count > room / 40 || h->mnv > room / 24 || h->mnt > room / 12 ||
        h->count * (40 + (h->has_normal ? 24 : 0)) + h->mnv * 24 + h->mnt * 12 != room)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section solid %d: %" PRIu64 " samples, %" PRIu64 " vertices and %" PRIu64
                     " triangles do not fill its %" PRIu64 " bytes",
                     (int)index, h->count, h->mnv, h->mnt, e->size);
    if (!body_ok(d, &c->body) || !body_ok(d, &c->placed) || !finite_all(c->sort_x, 3) ||
        !finite_all(c->sort_q, 4) || !finite_all(c->force, 3) || !finite_all(c->torque, 3) ||
        !(h->alpha > 0.0 && h->alpha <= 2.0) || !isfinite(h->area) || !isfinite(h->spacing) ||
        !isfinite(h->inset) || (h->mnt > 0) != (h->mnv > 0))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section solid %d: body or parameters out of range",
                     (int)index);
    return ACM_OK;
}

/* A new, empty solid at the end of d's list. */
static acm_status append_solid(loader *l, acm_domain *d, int32_t index, acm_solid **out)
{
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
    *out = s;
    return ACM_OK;
}

/* The head's numbers into the solid. */
static void set_solid(acm_solid *s, acm_domain *d, const ckpt_solid *h)
{
    s->domain = d;
    s->count = h->count;
    s->alpha = h->alpha;
    s->has_mass = h->has_mass != 0;
    s->area = h->area;
    s->spacing = h->spacing;
    s->inset = h->inset;
    s->mnv = (size_t)h->mnv;
    s->mnt = (size_t)h->mnt;
}

/* The arrays of the solid and of its snapshot copy allocated. */
static acm_status alloc_samples(loader *l, int32_t index, const ckpt_solid *h, acm_solid *s,
                                acm_solid_copy *c)
{
    const size_t n = (size_t)h->count;
    s->r = acm__malloc(3 * n * sizeof(double));
    s->dv = acm__malloc(n * sizeof(double));
    s->origin = acm__malloc(n * sizeof(uint64_t));
    c->r = acm__malloc(3 * n * sizeof(double));
    c->dv = acm__malloc(n * sizeof(double));
    c->origin = acm__malloc(n * sizeof(uint64_t));
    if (h->has_normal)
        s->normal = acm__malloc(3 * n * sizeof(double));
    if (h->mnv > 0) {
        s->mv = acm__malloc(3 * s->mnv * sizeof(double));
        s->mt = acm__malloc(3 * s->mnt * sizeof(uint32_t));
    }
    if (s->r == NULL || s->dv == NULL || s->origin == NULL || c->r == NULL || c->dv == NULL ||
        c->origin == NULL || (h->has_normal && s->normal == NULL) ||
        (h->mnv > 0 && (s->mv == NULL || s->mt == NULL)))
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate the %zu samples of solid %d", n,
                     (int)index);
    return ACM_OK;
}

/* The rest of the section into those arrays, and the section closed. */
static acm_status read_samples(loader *l, const ckpt_solid *h, acm_solid *s, acm_solid_copy *c)
{
    const size_t n = (size_t)h->count;
    ACM_TRY(sec_read(l, c->r, 3 * n * sizeof(double)));
    ACM_TRY(sec_read(l, c->dv, n * sizeof(double)));
    ACM_TRY(sec_read(l, c->origin, n * sizeof(uint64_t)));
    if (h->has_normal)
        ACM_TRY(sec_read(l, s->normal, 3 * n * sizeof(double)));
    if (h->mnv > 0) {
        ACM_TRY(sec_read(l, s->mv, 3 * s->mnv * sizeof(double)));
        ACM_TRY(sec_read(l, s->mt, 3 * s->mnt * sizeof(uint32_t)));
    }
    return sec_close(l);
}

/* The samples finite and within the body's reach, the normals finite, the
 * mesh within reach, the origins a permutation (seen: n bytes, zero). */
static bool samples_ok(const ckpt_solid *h, const acm_solid *s, const acm_solid_copy *c,
                       unsigned char *seen)
{
    const size_t n = (size_t)h->count;
    bool ok = finite_all(c->r, 3 * n) && finite_all(c->dv, n) &&
              (!h->has_normal || finite_all(s->normal, 3 * n)) &&
              (h->mnv == 0 || within(s->mv, 3 * s->mnv, CKPT_MESH_REACH));
    for (size_t k = 0; ok && k < n; ++k) {
        ok = c->origin[k] < h->count && !seen[c->origin[k]] &&
             sqrt(c->r[3 * k] * c->r[3 * k] + c->r[3 * k + 1] * c->r[3 * k + 1] +
                  c->r[3 * k + 2] * c->r[3 * k + 2]) <= c->body.r_max * (1.0 + 1e-9) + 1e-9;
        if (ok)
            seen[c->origin[k]] = 1;
    }
    return ok;
}

/* The triangles' vertices within the mesh. */
static bool triangles_ok(const acm_solid *s)
{
    bool ok = true;
    for (size_t k = 0; ok && k < 3 * s->mnt; ++k)
        ok = s->mt[k] < s->mnv;
    return ok;
}

/* What indexes arrays: the origins a permutation, the triangles' vertices. */
static acm_status check_samples(loader *l, int32_t index, const ckpt_solid *h,
                                const acm_solid *s, const acm_solid_copy *c)
{
    unsigned char *seen = acm__calloc((size_t)h->count, 1);
    if (seen == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot check the samples of solid %d", (int)index);
    bool ok = samples_ok(h, s, c, seen);
    acm__free(seen);
    ok = ok && triangles_ok(s);
    if (!ok)
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section solid %d: samples, sample order or mesh out of range", (int)index);
    return ACM_OK;
}

/* One solid: its section into a snapshot copy and a new handle added to d. */
static acm_status load_solid(loader *l, acm_domain *d, int32_t index, acm_solid_copy *c)
{
    ckpt_solid h;
    acm_solid *s = NULL;
    ACM_TRY(read_solid_head(l, index, &h, c));
    ACM_TRY(check_solid_head(l, d, index, &h, c));
    ACM_TRY(append_solid(l, d, index, &s));
    set_solid(s, d, &h);
    ACM_TRY(alloc_samples(l, index, &h, s, c));
    ACM_TRY(read_samples(l, &h, s, c));
    return check_samples(l, index, &h, s, c);
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
    if (!cut_rec(c, &r, ckpt_smoke_head_size()))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: %" PRIu64 " bytes, shorter than "
                     "its %zu-byte head", index, c->left, ckpt_smoke_head_size());
    ckpt_smoke_head_get(&r, h);
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
        (uint64_t)h->nemitters > (c->left - 32 * *alive - map) / ckpt_emitter_size())
        return lfail(l, ACM_ERR_BAD_FORMAT,
                     "section smoke %u: %" PRIu64 " slots, %" PRIu64 " particles and %d emitters "
                     "do not fit its %" PRIu64 " bytes",
                     index, h->capacity, *alive, (int)h->nemitters,
                     c->left + ckpt_smoke_head_size());
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
    if (c->left - tail < ckpt_emitter_size() || !cut_rec(c, &r, ckpt_emitter_size()))
        return lfail(l, ACM_ERR_BAD_FORMAT, "section smoke %u: emitter %d: truncated (the slot "
                     "map and particles take the last %" PRIu64 " bytes)", index, (int)i, tail);
    ckpt_emitter_get(&r, &se, &solid);
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

/* The checkpoint's layout as a handle, less what the CPU has no use for or
 * cannot store when it loads there; *precision the same way. */
static acm_status saved_layout(loader *l, const ckpt_settings *s, acm_backend backend,
                               acm_layout **out, int32_t *precision)
{
    acm_layout *layout = NULL;
    if (acm_layout_create(&layout) != ACM_OK)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate a layout");
    int64_t values[8];
    memcpy(values, s->layout, sizeof values);
    *precision = s->options_precision;
    if (backend == ACM_BACKEND_CPU) { /* what the CPU has no use for, or cannot store */
        values[1] = values[2] = 0;
        const bool moments = s->storage == ACM_STORAGE_MOMENTS; /* the CPU emulates FP16 */
        if (values[7] == ACM_PRECISION_FP16 && !moments)
            values[7] = ACM_PRECISION_FP32;
        if (*precision == ACM_PRECISION_FP16 && !moments)
            *precision = ACM_PRECISION_FP32;
    }
    if (s->storage != 0 && acm_layout_set(layout, ACM_LAYOUT_STORAGE, s->storage) != ACM_OK) {
        acm_layout_destroy(layout);
        return lfail(l, ACM_ERR_BAD_FORMAT, "section settings: storage %d is not one",
                     (int)s->storage);
    }
    for (int i = 0; i < 8; ++i)
        if (acm_layout_set(layout, (acm_layout_param)(i + 1), values[i]) != ACM_OK) {
            acm_status st = lfail(l, ACM_ERR_BAD_FORMAT, "section settings: layout: %s",
                                  acm_layout_last_error(layout));
            acm_layout_destroy(layout);
            return st;
        }
    *out = layout;
    return ACM_OK;
}

/* acm_domain_create with the settings' grid, viscosity, model and speed on
 * that backend, in that precision and layout (o->layout if given); the layout
 * handle is destroyed. */
static acm_status create_domain(loader *l, const ckpt_settings *s, const acm_load_options *o,
                                acm_backend backend, int32_t precision, acm_layout *layout,
                                acm_domain **out)
{
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
    *out = d;
    return ACM_OK;
}

/* The rest of the settings through the setters, which validate them: d is
 * destroyed when one refuses. */
static acm_status apply_settings(loader *l, const ckpt_settings *s, acm_domain *d)
{
    acm_status st = acm_domain_set_collision(d, &s->coll);
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
    return ACM_OK;
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
    int32_t precision = 0;
    ACM_TRY(saved_layout(l, s, backend, &layout, &precision));
    acm_domain *d = NULL;
    ACM_TRY(create_domain(l, s, o, backend, precision, layout, &d));
    ACM_TRY(apply_settings(l, s, d));
    *out = d;
    return ACM_OK;
}

/* The settings section. */
static acm_status read_settings(loader *l, ckpt_settings *s)
{
    rec r;
    ACM_TRY(read_record(l, l->settings, &r, ckpt_settings_size()));
    ckpt_settings_get(&r, s);
    return ACM_OK;
}

/* The counters section into a cleared snapshot, checked; its number of
 * solids out, the snapshot's 0 (solids are counted in as they are read). */
static acm_status read_counters(loader *l, acm_snapshot *snap, int32_t *nsolids)
{
    rec r;
    memset(snap, 0, sizeof *snap);
    int32_t diverged, form, prev_backend;
    ACM_TRY(read_record(l, l->counters, &r, ckpt_counters_size()));
    ckpt_counters_get(&r, snap, &diverged, &form, &prev_backend);
    *nsolids = snap->nsolids;
    snap->nsolids = 0; /* solids are counted in as they are read */
    if ((form != ACM_FORM_POST_COLLISION && form != ACM_FORM_PHYSICAL) ||
        (prev_backend != ACM_BACKEND_CPU && prev_backend != ACM_BACKEND_CUDA) ||
        (unsigned)diverged > 1 || snap->step < 0 || snap->fallback_last < 0 ||
        (snap->backend.mom_bits != 0 && snap->backend.mom_bits != 16 &&
         snap->backend.mom_bits != 32 && snap->backend.mom_bits != 64) ||
        snap->fallback_total < 0)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section counters: values out of range");
    snap->diverged = diverged != 0;
    snap->backend.form = (acm_state_form)form;
    snap->backend.prev_backend = (acm_backend)prev_backend;
    return ACM_OK;
}

/* The grid's size, and the per-cell sections' sizes against it, before the
 * grid is allocated: the file bounds it. *cells: the grid's cells. */
static acm_status check_grid(loader *l, const ckpt_settings *s, uint64_t *cells_out)
{
    if (s->nx < 1 || s->ny < 1 || s->nz < 1 || s->nx > 65535 || s->ny > 65535 || s->nz > 65535)
        return lfail(l, ACM_ERR_BAD_FORMAT, "section settings: grid %d x %d x %d", (int)s->nx,
                     (int)s->ny, (int)s->nz);
    const uint64_t cells = (uint64_t)s->nx * (uint64_t)s->ny * (uint64_t)s->nz;
    char name[32];
    const struct { const ckpt_entry *e; uint64_t bytes; } want[] = {
        {l->pops, cells * ACM_Q * 8},    {l->mom, cells * ACM_MOMENTS * 8},
        {l->force, cells * 3 * 8},
        {l->tau, cells * 8},             {l->ib_force, cells * 3 * 8},
        {l->ib_mask, (cells + 31) / 32 * 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
        if (want[i].e != NULL && want[i].e->size != want[i].bytes)
            return lfail(l, ACM_ERR_BAD_FORMAT,
                         "section %s holds %" PRIu64 " bytes, %" PRIu64 " expected for a %d x "
                         "%d x %d grid",
                         entry_name(want[i].e, name, sizeof name), want[i].e->size,
                         want[i].bytes, (int)s->nx, (int)s->ny, (int)s->nz);
    *cells_out = cells;
    return ACM_OK;
}

/* The state's arrays for d, as the file has them; what the counters put in
 * the backend's part survives acm__state_alloc, which clears it. */
static acm_status alloc_state(loader *l, acm_domain *d, acm_snapshot *snap)
{
    const acm_state_form form = snap->backend.form;
    const int mom_bits = snap->backend.mom_bits;
    const acm_backend prev_backend = snap->backend.prev_backend;
    double prev[ACM_STATE_PREV_SIZE];
    memcpy(prev, snap->backend.prev, sizeof prev);
    acm_status st = acm__state_alloc(d, &snap->backend, l->force != NULL, l->tau != NULL,
                                     l->ib_force != NULL);
    if (st != ACM_OK)
        st = lfail(l, st, "%s", d->error);
    snap->backend.form = form; /* acm__state_alloc cleared them */
    snap->backend.mom_bits = mom_bits;
    snap->backend.prev_backend = prev_backend;
    memcpy(snap->backend.prev, prev, sizeof prev);
    return st;
}

/* The per-cell sections into the state: populations, then the force field,
 * tau and the immersed-boundary force and support where the file has them. */
static acm_status read_fields(loader *l, acm_snapshot *snap, uint64_t cells)
{
    acm_state *st = &snap->backend;
    ACM_TRY(sec_whole(l, l->pops, st->f, cells * ACM_Q * 8));
    if (l->mom != NULL) {
        if (st->mom_bits == 0)
            return lfail(l, ACM_ERR_BAD_FORMAT,
                         "section moments in a checkpoint of population storage");
        if ((st->mom = acm__malloc(cells * ACM_MOMENTS * sizeof(double))) == NULL)
            return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate %.3g GB for the moments",
                         (double)cells * ACM_MOMENTS * sizeof(double) / 1e9);
        ACM_TRY(sec_whole(l, l->mom, st->mom, cells * ACM_MOMENTS * 8));
    }
    if (l->force != NULL)
        ACM_TRY(sec_whole(l, l->force, st->force, cells * 3 * 8));
    if (l->tau != NULL)
        ACM_TRY(sec_whole(l, l->tau, st->tau, cells * 8));
    if (l->ib_force != NULL)
        ACM_TRY(sec_whole(l, l->ib_force, st->ib_force, cells * 3 * 8));
    if (l->ib_mask != NULL) {
        ACM_TRY(sec_whole(l, l->ib_mask, st->ib_mask, (cells + 31) / 32 * 4));
        if (cells % 32 != 0) /* no cell past the grid */
            st->ib_mask[cells / 32] &= (UINT32_C(1) << (cells % 32)) - 1;
    }
    return ACM_OK;
}

/* Whether moments m fit the storage of precision p: finite, and for 16-bit
 * storage rho - 1 and the A inside what its scaled FP16 holds (moments.h; the
 * velocity's format saturates). */
static bool moments_fit(const double *m, acm_precision p)
{
    for (int n = 0; n < ACM_MOMENTS; ++n)
        if (!isfinite(m[n]) ||
            (p == ACM_PRECISION_FP16 && acm_mom16_half(n) &&
             !(fabs(m[n] * acm_mom16_scale(n)) <= 65504.0)))
            return false;
    return true;
}

/* The per-cell values, hostile until checked: populations that the loaded
 * domain's storage holds (acm__population_fits), moments likewise, finite
 * forces and tau*. */
static acm_status check_fields(loader *l, const acm_domain *d, const acm_state *st,
                               uint64_t cells)
{
    const acm_precision p = d->layout.precision;
    for (uint64_t k = 0; st->mom != NULL && k < cells; ++k)
        if (!moments_fit(st->mom + k * ACM_MOMENTS, p))
            return lfail(l, ACM_ERR_BAD_FORMAT, "section moments: the moments of cell %llu are "
                         "not finite or beyond what %s moment storage holds",
                         (unsigned long long)k, acm__precision_name(p));
    for (uint64_t i = 0; i < cells * ACM_Q; ++i)
        if (!acm__population_fits(st->f[i], p))
            return lfail(l, ACM_ERR_BAD_FORMAT, "section populations: population %llu of cell "
                         "%llu is %g, beyond what %s storage holds",
                         (unsigned long long)(i % ACM_Q), (unsigned long long)(i / ACM_Q),
                         st->f[i], acm__precision_name(p));
    const struct {
        const char *name;
        const double *v;
        uint64_t n;
    } rest[] = {{"force", st->force, 3 * cells}, {"tau", st->tau, cells},
                {"ib_force", st->ib_force, 3 * cells}};
    for (size_t s = 0; s < sizeof rest / sizeof rest[0]; ++s)
        for (uint64_t i = 0; rest[s].v != NULL && i < rest[s].n; ++i)
            if (!isfinite(rest[s].v[i]))
                return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: value %llu is not finite",
                             rest[s].name, (unsigned long long)i);
    return ACM_OK;
}

/* The solids' sections, each into the snapshot and a new handle of d; a
 * backend without an immersed boundary refuses them. */
static acm_status load_solids(loader *l, acm_domain *d, acm_snapshot *snap, int32_t nsolids)
{
    if (nsolids > 0 &&
        (snap->solids = acm__calloc((size_t)nsolids, sizeof *snap->solids)) == NULL)
        return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate %d solids", (int)nsolids);
    for (int32_t i = 0; i < nsolids; ++i) {
        snap->nsolids = i + 1;
        ACM_TRY(load_solid(l, d, i, &snap->solids[i]));
    }
    if (nsolids > 0 && d->ops->ib_attach == NULL)
        return lfail(l, ACM_ERR_UNSUPPORTED, "the %s backend has no immersed boundary",
                     d->ops->name);
    return ACM_OK;
}

/* The snapshot put into d. */
static acm_status restore_state(loader *l, acm_domain *d, acm_snapshot *snap)
{
    snap->precision = d->layout.precision; /* host arrays: any precision loads */
    const acm_status st = acm__snapshot_restore(d, snap);
    return st == ACM_OK ? ACM_OK : lfail(l, st, "restoring the state: %s", d->error);
}

/* The state and the solids into d; the snapshot freed whatever happens. */
static acm_status load_state(loader *l, acm_domain *d, acm_snapshot *snap, int32_t nsolids,
                             uint64_t cells)
{
    acm_status st = alloc_state(l, d, snap);
    if (st == ACM_OK)
        st = read_fields(l, snap, cells);
    if (st == ACM_OK)
        st = check_fields(l, d, &snap->backend, cells);
    if (st == ACM_OK)
        st = load_solids(l, d, snap, nsolids);
    if (st == ACM_OK)
        st = restore_state(l, d, snap);
    acm__snapshot_free(snap);
    return st;
}

/* The smokes' sections, each a new smoke of d (their solids are in). */
static acm_status load_smokes(loader *l, acm_domain *d)
{
    for (uint32_t i = 0; i < l->nsmokes; ++i)
        ACM_TRY(load_smoke(l, d, i));
    return ACM_OK;
}

/* The whole file into a new domain; on failure nothing is left of it. */
/* The faces' values, through acm_domain_set_face_values (which checks the
 * face's type, the count and every value). */
static acm_status load_faces(loader *l, acm_domain *d)
{
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        const ckpt_entry *e = l->faces[f];
        if (e == NULL)
            continue;
        char name[32];
        if (e->size % sizeof(double) != 0 || e->size > (uint64_t)64 * d->ncells * sizeof(double))
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %" PRIu64 " bytes",
                         entry_name(e, name, sizeof name), e->size);
        double *v = acm__malloc(e->size > 0 ? (size_t)e->size : 1);
        if (v == NULL)
            return lfail(l, ACM_ERR_NO_MEMORY, "cannot allocate %" PRIu64 " bytes of face values",
                         e->size);
        acm_status st = sec_whole(l, e, v, e->size);
        if (st == ACM_OK &&
            acm_domain_set_face_values(d, (acm_face)f, ACM_DTYPE_FLOAT64, v,
                                       (size_t)(e->size / sizeof(double))) != ACM_OK)
            st = lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %s", entry_name(e, name, sizeof name),
                       d->error);
        acm__free(v);
        ACM_TRY(st);
    }
    return ACM_OK;
}

/* The faces' absorbing layers, through acm_domain_set_face_absorber (which
 * checks the face's type and every value). */
static acm_status load_absorbers(loader *l, acm_domain *d)
{
    for (int f = 0; f < ACM_FACE_COUNT; ++f) {
        const ckpt_entry *e = l->absorbers[f];
        if (e == NULL)
            continue;
        char name[32];
        double v[6];
        if (e->size != sizeof v)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %" PRIu64 " bytes, not %zu",
                         entry_name(e, name, sizeof name), e->size, sizeof v);
        ACM_TRY(sec_whole(l, e, v, sizeof v));
        if (!(v[0] >= 1.0 && v[0] <= (double)INT32_MAX && v[0] == floor(v[0])))
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %g cells",
                         entry_name(e, name, sizeof name), v[0]);
        if (acm_domain_set_face_absorber(d, (acm_face)f, (int32_t)v[0], v[1], v[2], v + 3) !=
            ACM_OK)
            return lfail(l, ACM_ERR_BAD_FORMAT, "section %s: %s", entry_name(e, name, sizeof name),
                         d->error);
    }
    return ACM_OK;
}

static acm_status load(loader *l, const acm_load_options *o, acm_domain **out)
{
    ckpt_settings s;
    acm_snapshot snap;
    int32_t nsolids = 0;
    uint64_t cells = 0;
    ACM_TRY(read_header(l));
    ACM_TRY(check_table(l));
    ACM_TRY(read_settings(l, &s));
    ACM_TRY(read_counters(l, &snap, &nsolids));
    ACM_TRY(index_solids(l, nsolids));
    ACM_TRY(index_entries(l, SEC_SMOKE, l->nsmokes, &l->smokes));
    ACM_TRY(check_grid(l, &s, &cells));
    acm_domain *d = NULL;
    ACM_TRY(make_domain(l, &s, o, &d));
    acm_status st = load_faces(l, d);
    if (st == ACM_OK)
        st = load_absorbers(l, d);
    if (st == ACM_OK)
        st = load_state(l, d, &snap, nsolids, cells);
    if (st == ACM_OK)
        st = load_smokes(l, d);
    if (st != ACM_OK) {
        acm_domain_destroy(d);
        return st;
    }
    d->error[0] = '\0';
    *out = d;
    return ACM_OK;
}

/* The file opened and loaded; what the loader allocated freed. */
static acm_status load_file(const char *path, const acm_load_options *o, acm_domain **out,
                            char *msg, size_t n)
{
    loader l = {.path = path, .msg = msg, .n = n};
    acm_status st;
    char why[160];
    int err = 0;
    /* a regular file only, its size (the header must give it) the bound of every read */
    if ((l.f = acm__file_fopen(path, &l.size, &err, why, sizeof why)) == NULL) {
        st = lfail(&l, ACM_ERR_IO, "cannot open: %s", why);
    } else {
        st = load(&l, o, out);
        fclose(l.f);
    }
    acm__free(l.table);
    acm__free(l.solids);
    acm__free(l.smokes);
    return st;
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
        st = load_file(path, &o, out, msg, sizeof msg);
    }
    if (st != ACM_OK && o.error_buffer != NULL && o.error_buffer_size > 0)
        acm__format(o.error_buffer, o.error_buffer_size, "%s", msg);
    return st;
}
