/*
 * libacmlbm -- the mesh readers: binary STL, ASCII STL and Wavefront OBJ.
 * Every input is hostile: nothing is allocated from a count that the size
 * of the input has not confirmed, every counter is bounded before it grows,
 * a buffer is never read past its size (it need not end in a NUL), and each
 * refusal says where: a line number for text, a byte offset for binary.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>  /* errno */
#include <math.h>   /* isfinite */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* malloc, realloc, free, strtod */
#include <string.h> /* memchr, memcmp, memcpy, memmove, strlen, strerror_r */
#include <unistd.h> /* read, close */

#include "alloc.h"
#include "file.h" /* acm__file_open */
#include "mesh.h"

/* A file may hold this many bytes per allowed triangle, plus a fixed
 * allowance: an ASCII STL facet takes about 250 bytes, an OBJ triangle less;
 * the rest leaves room for comments, normals and texture coordinates. */
#define ACM_MESH_FILE_BYTES_PER_TRIANGLE 1024
#define ACM_MESH_FILE_BYTES_BASE (UINT64_C(1) << 20)

/* Longest number token accepted (strtod reads a NUL-terminated copy). */
#define ACM_MESH_NUMBER_MAX 128
/* Bytes of input quoted in a message, and the size of a quote: the bytes, the
 * quotes, "..." and the length of a token cut, and the NUL. */
#define ACM_MESH_QUOTE 36
#define ACM_MESH_QUOTE_SIZE (ACM_MESH_QUOTE + 40)

#define ACM_STL_HEADER 84 /* 80-byte header and the uint32 facet count */
#define ACM_STL_FACET 50  /* normal, 3 vertices (12 float32) and a uint16 */

/* ---- messages ------------------------------------------------------------------- */

/* The format being read and where its messages go. */
typedef struct reader {
    const char *what; /* "OBJ", "ASCII STL", "binary STL" */
    uint64_t max_triangles;
    char *msg;
    size_t msg_size;
} reader;

static acm_status reader_fail(const reader *r, acm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static acm_status reader_fail(const reader *r, acm_status st, const char *fmt, ...)
{
    char detail[ACM_ERROR_SIZE];
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(detail, sizeof detail, fmt, ap);
    va_end(ap);
    acm__format(r->msg, r->msg_size, "%s: %s", r->what, detail);
    return st;
}

/* ---- text scanning -------------------------------------------------------------- */

/* A piece of the input; never NUL-terminated. */
typedef struct span {
    const char *s;
    size_t n;
} span;

/* Unread text and the number of the last line returned (1-based). */
typedef struct text {
    const char *p, *end;
    size_t line;
} text;

static text text_start(const char *data, size_t size)
{
    text t = {data, data + size, 0};
    /* a UTF-8 byte-order mark is no part of the first keyword */
    if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        t.p += 3;
    return t;
}

/* The next line, without its '\n' (a '\r' before it is whitespace). */
static bool next_line(text *t, span *line)
{
    if (t->p == t->end)
        return false;
    const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
    const char *stop = nl != NULL ? nl : t->end;
    line->s = t->p;
    line->n = (size_t)(stop - t->p);
    t->p = nl != NULL ? nl + 1 : t->end;
    ++t->line;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The next whitespace-separated token of *rest, which then starts after it.
 * Any other byte (NUL and non-ASCII included) belongs to a token. */
static bool next_token(span *rest, span *tok)
{
    size_t i = 0;
    while (i < rest->n && is_space(rest->s[i]))
        ++i;
    size_t j = i;
    while (j < rest->n && !is_space(rest->s[j]))
        ++j;
    tok->s = rest->s + i;
    tok->n = j - i;
    rest->s += j;
    rest->n -= j;
    return tok->n > 0;
}

/* tok equals word (lower case); any_case also accepts upper-case letters. */
static bool token_is(span tok, const char *word, bool any_case)
{
    size_t n = strlen(word);
    if (tok.n != n)
        return false;
    for (size_t i = 0; i < n; ++i) {
        char c = tok.s[i];
        if (any_case && c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return false;
    }
    return true;
}

/* A printable quote of a token for messages, in single quotes: input bytes
 * may be anything, a message must stay plain ASCII. A longer token is cut, and
 * the quote says so with its length: '1234...' (70 bytes). */
static const char *quote(span tok, char buf[ACM_MESH_QUOTE_SIZE])
{
    size_t n = tok.n < ACM_MESH_QUOTE ? tok.n : ACM_MESH_QUOTE, i = 0;
    buf[i++] = '\'';
    for (size_t k = 0; k < n; ++k) {
        unsigned char c = (unsigned char)tok.s[k];
        buf[i++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (tok.n > n)
        acm__format(buf + i, ACM_MESH_QUOTE_SIZE - i, "...' (%zu bytes)", tok.n);
    else
        memcpy(buf + i, "'", 2);
    return buf;
}

typedef enum number_kind { NUMBER_BAD, NUMBER_FINITE, NUMBER_NOT_FINITE } number_kind;

/* A whole token as a number. strtod reads a bounded, NUL-terminated copy:
 * the input itself may end without a NUL or hold NULs inside a token. */
static number_kind parse_number(span tok, double *x)
{
    char buf[ACM_MESH_NUMBER_MAX];
    if (tok.n == 0 || tok.n >= sizeof buf)
        return NUMBER_BAD;
    memcpy(buf, tok.s, tok.n);
    buf[tok.n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + tok.n)
        return NUMBER_BAD;
    *x = v;
    return isfinite(v) ? NUMBER_FINITE : NUMBER_NOT_FINITE;
}

static acm_status line_fail(const reader *r, const text *t, acm_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static acm_status line_fail(const reader *r, const text *t, acm_status st, const char *fmt, ...)
{
    char detail[ACM_ERROR_SIZE];
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(detail, sizeof detail, fmt, ap);
    va_end(ap);
    acm__format(r->msg, r->msg_size, "%s line %zu: %s", r->what, t->line, detail);
    return st;
}

/* n numbers from *rest into x; coordinates (finite = true) must be finite. */
static acm_status read_numbers(const reader *r, const text *t, span *rest, double *x, int n,
                               bool finite, const char *record)
{
    char q[ACM_MESH_QUOTE_SIZE];
    for (int i = 0; i < n; ++i) {
        span tok;
        if (!next_token(rest, &tok))
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "'%s' needs %d numbers, found %d", record,
                             n, i);
        number_kind k = parse_number(tok, &x[i]);
        if (k == NUMBER_BAD)
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "%s is not a number", quote(tok, q));
        if (k == NUMBER_NOT_FINITE && finite)
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "coordinate %s is not finite",
                             quote(tok, q));
    }
    return ACM_OK;
}

/* Nothing may follow on the line. */
static acm_status expect_end(const reader *r, const text *t, span rest, const char *record)
{
    span extra;
    char q[ACM_MESH_QUOTE_SIZE];
    if (next_token(&rest, &extra))
        return line_fail(r, t, ACM_ERR_BAD_FORMAT, "unexpected %s after '%s'",
                         quote(extra, q), record);
    return ACM_OK;
}

/* Room for `need` elements of `size` bytes in p (capacity *cap elements),
 * growing geometrically. NULL when impossible; p is then still valid. */
static void *reserve(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap < 256 ? 256 : *cap;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (c > SIZE_MAX / size)
        return NULL;
    void *q = acm__realloc(p, c * size);
    if (q != NULL)
        *cap = c;
    return q;
}

/* n elements of `size` bytes are addressable (on 64-bit targets, any count
 * the formats can express is). */
static bool array_fits(size_t n, size_t size) { return n <= SIZE_MAX / size; }

/* ---- the common end ------------------------------------------------------------- */

/* Hand the arrays (ownership included) to the constructor. */
static acm_status finish(const reader *r, double *v, size_t nv, uint32_t *t, size_t nt,
                         acm_mesh **out)
{
    char detail[ACM_ERROR_SIZE] = "";
    acm_status st = acm__mesh_adopt(out, v, nv, t, nt, r->max_triangles, detail, sizeof detail);
    if (st == ACM_OK)
        return ACM_OK;
    /* the arrays came from the input: what create calls a bad argument is a bad file here */
    if (st == ACM_ERR_INVALID_ARG || st == ACM_ERR_OUT_OF_RANGE)
        st = ACM_ERR_BAD_FORMAT;
    return reader_fail(r, st, "%s", detail);
}

/* Weld the 3 corner points of each of nf facets at exactly equal positions
 * and hand the mesh over. Takes ownership of pts (9 doubles per facet). */
static acm_status stl_finish(const reader *r, double *pts, size_t nf, acm_mesh **out)
{
    size_t n = 3 * nf, nunique = 0;
    if (n > ACM_MESH_MAX_VERTICES) {
        acm__free(pts);
        return reader_fail(r, ACM_ERR_LIMIT, "%zu facets have more corners than a mesh may hold",
                           nf);
    }
    uint32_t *t = acm__malloc(n * sizeof *t);
    if (t == NULL || acm__mesh_weld(pts, n, t, &nunique) != ACM_OK) {
        acm__free(pts);
        acm__free(t);
        return reader_fail(r, ACM_ERR_NO_MEMORY, "out of memory welding %zu facets", nf);
    }
    if (nunique < 3) {
        acm__free(pts);
        acm__free(t);
        return reader_fail(r, ACM_ERR_BAD_FORMAT,
                           "all %zu facets are degenerate (%zu distinct vertices)", nf, nunique);
    }
    /* ids follow first appearance: the first point numbered k is the k-th
     * distinct one and sits at index >= k, so moving down is safe in place */
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        if (t[i] == k) {
            memmove(pts + 3 * k, pts + 3 * i, 3 * sizeof *pts);
            ++k;
        }
    }
    return finish(r, pts, nunique, t, nf, out);
}

/* ---- binary STL ----------------------------------------------------------------- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

_Static_assert(sizeof(float) == sizeof(uint32_t), "STL stores IEEE float32");

static float le_float(const unsigned char *p)
{
    uint32_t bits = le32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The size is exactly that of the facet count in the header. */
static bool stl_binary_fits(const unsigned char *d, size_t size)
{
    return size >= ACM_STL_HEADER &&
           (uint64_t)(size - ACM_STL_HEADER) == (uint64_t)ACM_STL_FACET * le32(d + 80);
}

/* Why the input is no binary STL. */
static acm_status stl_binary_mismatch(const reader *r, const unsigned char *d, size_t size)
{
    if (size < ACM_STL_HEADER)
        return reader_fail(r, ACM_ERR_BAD_FORMAT,
                           "%zu bytes, fewer than the 84 of the header and facet count", size);
    uint32_t count = le32(d + 80);
    return reader_fail(r, ACM_ERR_BAD_FORMAT,
                       "byte 80: the count of %lu facets needs %llu bytes, the input has %zu",
                       (unsigned long)count,
                       (unsigned long long)ACM_STL_HEADER +
                           (unsigned long long)ACM_STL_FACET * count,
                       size);
}

/* Read the facets; the caller checked stl_binary_fits(). */
static acm_status stl_binary(const reader *r, const unsigned char *d, acm_mesh **out)
{
    uint32_t count = le32(d + 80);
    if (count == 0)
        return reader_fail(r, ACM_ERR_BAD_FORMAT, "byte 80: the facet count is 0");
    if (count > r->max_triangles)
        return reader_fail(r, ACM_ERR_LIMIT, "byte 80: %lu facets exceed max_triangles=%llu",
                           (unsigned long)count, (unsigned long long)r->max_triangles);
    if (!array_fits(count, 9 * sizeof(double)))
        return reader_fail(r, ACM_ERR_LIMIT, "%lu facets cannot be addressed",
                           (unsigned long)count);
    double *pts = acm__malloc((size_t)count * 9 * sizeof *pts);
    if (pts == NULL)
        return reader_fail(r, ACM_ERR_NO_MEMORY, "cannot allocate %lu facets",
                           (unsigned long)count);
    for (size_t f = 0; f < count; ++f) {
        /* skip the 12 bytes of the normal, which the vertices determine */
        const size_t base = ACM_STL_HEADER + ACM_STL_FACET * f + 12;
        for (size_t c = 0; c < 9; ++c) {
            double x = le_float(d + base + 4 * c);
            if (!isfinite(x)) {
                acm__free(pts);
                return reader_fail(r, ACM_ERR_BAD_FORMAT,
                                   "byte %zu: coordinate %c of vertex %zu of facet %zu is not "
                                   "finite",
                                   base + 4 * c, "xyz"[c % 3], c / 3, f);
            }
            pts[9 * f + c] = x;
        }
    }
    return stl_finish(r, pts, count, out);
}

/* ---- ASCII STL ------------------------------------------------------------------ */

/* What the next non-blank line must start with. */
typedef enum stl_state {
    STL_OUTSIDE, /* before a solid or after its endsolid */
    STL_SOLID,   /* between facets */
    STL_FACET,   /* after "facet normal" */
    STL_LOOP,    /* inside "outer loop", before its third vertex */
    STL_ENDLOOP,
    STL_ENDFACET
} stl_state;

static const char *const stl_expected[] = {"'solid'",   "'facet' or 'endsolid'",
                                           "'outer loop'", "'vertex'",
                                           "'endloop'", "'endfacet'"};

typedef struct stl_text {
    stl_state state;
    int corner;      /* vertices read in the current loop */
    size_t facets;   /* complete facets */
    double *pts;     /* 9 per facet */
    size_t npts_cap; /* capacity of pts in doubles */
} stl_text;

/* "facet" may be followed by "normal nx ny nz" (the values are not used, and
 * some writers put NaN in them for degenerate facets). */
static acm_status stl_facet(const reader *r, const text *t, span rest, stl_text *s)
{
    if (s->facets >= r->max_triangles)
        return line_fail(r, t, ACM_ERR_LIMIT, "more than max_triangles=%llu facets",
                         (unsigned long long)r->max_triangles);
    span w;
    char q[ACM_MESH_QUOTE_SIZE];
    if (next_token(&rest, &w)) {
        double n[3];
        if (!token_is(w, "normal", true))
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "expected 'normal' after 'facet', found "
                             "%s", quote(w, q));
        ACM_TRY(read_numbers(r, t, &rest, n, 3, false, "facet normal"));
        ACM_TRY(expect_end(r, t, rest, "facet normal"));
    }
    s->state = STL_FACET;
    return ACM_OK;
}

static acm_status stl_vertex(const reader *r, const text *t, span rest, stl_text *s)
{
    double x[3];
    ACM_TRY(read_numbers(r, t, &rest, x, 3, true, "vertex"));
    ACM_TRY(expect_end(r, t, rest, "vertex"));
    size_t at = 9 * s->facets + 3 * (size_t)s->corner;
    double *p = reserve(s->pts, &s->npts_cap, at + 3, sizeof *p);
    if (p == NULL)
        return line_fail(r, t, ACM_ERR_NO_MEMORY, "out of memory after %zu facets", s->facets);
    s->pts = p;
    memcpy(p + at, x, sizeof x);
    if (++s->corner == 3)
        s->state = STL_ENDLOOP;
    return ACM_OK;
}

/* One non-blank line, in the state machine of the format. */
static acm_status stl_line(const reader *r, const text *t, span kw, span rest, stl_text *s)
{
    char q[ACM_MESH_QUOTE_SIZE];
    switch (s->state) {
    case STL_OUTSIDE:
        if (!token_is(kw, "solid", true))
            break;
        s->state = STL_SOLID; /* the rest is the name: any bytes */
        return ACM_OK;
    case STL_SOLID:
        if (token_is(kw, "facet", true))
            return stl_facet(r, t, rest, s);
        if (!token_is(kw, "endsolid", true))
            break;
        s->state = STL_OUTSIDE;
        return ACM_OK;
    case STL_FACET: {
        span w;
        if (!token_is(kw, "outer", true) || !next_token(&rest, &w) || !token_is(w, "loop", true))
            break;
        s->state = STL_LOOP;
        s->corner = 0;
        return expect_end(r, t, rest, "outer loop");
    }
    case STL_LOOP:
        if (!token_is(kw, "vertex", true))
            break;
        return stl_vertex(r, t, rest, s);
    case STL_ENDLOOP:
        if (!token_is(kw, "endloop", true))
            break;
        s->state = STL_ENDFACET;
        return expect_end(r, t, rest, "endloop");
    case STL_ENDFACET:
        if (!token_is(kw, "endfacet", true))
            break;
        ++s->facets;
        s->state = STL_SOLID;
        return expect_end(r, t, rest, "endfacet");
    }
    return line_fail(r, t, ACM_ERR_BAD_FORMAT, "expected %s, found %s",
                     stl_expected[s->state], quote(kw, q));
}

static acm_status stl_ascii(const reader *r, const char *data, size_t size, acm_mesh **out)
{
    stl_text s = {STL_OUTSIDE, 0, 0, NULL, 0};
    text t = text_start(data, size);
    span line, kw;
    acm_status st = ACM_OK;
    while (st == ACM_OK && next_line(&t, &line)) {
        span rest = line;
        if (next_token(&rest, &kw))
            st = stl_line(r, &t, kw, rest, &s);
    }
    if (st == ACM_OK && s.state != STL_OUTSIDE)
        st = line_fail(r, &t, ACM_ERR_BAD_FORMAT, "the input ends where %s is expected",
                       stl_expected[s.state]);
    if (st == ACM_OK && s.facets == 0)
        st = reader_fail(r, ACM_ERR_BAD_FORMAT, "no facet");
    if (st != ACM_OK) {
        acm__free(s.pts);
        return st;
    }
    return stl_finish(r, s.pts, s.facets, out);
}

/* The first keyword is "solid" (any case); with need_facet, the next
 * non-blank line also starts with "facet" or "endsolid". */
static bool stl_ascii_start(const char *data, size_t size, bool need_facet)
{
    text t = text_start(data, size);
    span line, kw;
    bool solid = false;
    while (next_line(&t, &line)) {
        span rest = line;
        if (!next_token(&rest, &kw))
            continue;
        if (solid)
            return token_is(kw, "facet", true) || token_is(kw, "endsolid", true);
        if (!token_is(kw, "solid", true))
            return false;
        if (!need_facet)
            return true;
        solid = true;
    }
    return false;
}

/* ---- OBJ ------------------------------------------------------------------------ */

/* Indices are read up to this magnitude; anything larger is out of range
 * anyway, and the cap keeps the arithmetic far from overflow. */
#define ACM_OBJ_INDEX_CAP (INT64_C(1) << 40)

typedef struct obj {
    size_t nv_total; /* "v" records in the whole file (first pass) */
    size_t nv;       /* read so far */
    double *v;
    uint32_t *t;
    size_t nt, t_cap; /* triangles, capacity of t in indices */
} obj;

/* The keyword and the rest of a line, the comment removed; false if none. */
static bool obj_record(span line, span *kw, span *rest)
{
    const char *hash = memchr(line.s, '#', line.n);
    if (hash != NULL)
        line.n = (size_t)(hash - line.s);
    *rest = line;
    return next_token(rest, kw);
}

/* First pass: count the vertices, so that positive indices can be checked
 * against the whole file (forward references are legal) and the vertex
 * array is sized by what the input holds. */
static acm_status obj_count(const reader *r, const char *data, size_t size, size_t *nv)
{
    text t = text_start(data, size);
    span line, kw, rest;
    size_t n = 0;
    while (next_line(&t, &line)) {
        if (!obj_record(line, &kw, &rest) || !token_is(kw, "v", false))
            continue;
        if (n == ACM_MESH_MAX_VERTICES)
            return line_fail(r, &t, ACM_ERR_LIMIT, "more than %zu vertices",
                             ACM_MESH_MAX_VERTICES);
        ++n;
    }
    *nv = n;
    return ACM_OK;
}

/* "v x y z", then w (unused) or the r g b colours some writers add. */
static acm_status obj_vertex(const reader *r, const text *t, span rest, obj *o)
{
    double x[3], extra;
    ACM_TRY(read_numbers(r, t, &rest, x, 3, true, "v"));
    span tok;
    int n = 0;
    char q[ACM_MESH_QUOTE_SIZE];
    while (next_token(&rest, &tok)) {
        if (n == 3)
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "'v' takes x y z [w] or x y z r g b; "
                             "this one has more numbers");
        if (parse_number(tok, &extra) == NUMBER_BAD)
            return line_fail(r, t, ACM_ERR_BAD_FORMAT, "%s is not a number", quote(tok, q));
        ++n;
    }
    if (n == 2)
        return line_fail(r, t, ACM_ERR_BAD_FORMAT, "'v' takes x y z [w] or x y z r g b, "
                         "not 5 numbers");
    if (o->nv >= o->nv_total)
        return line_fail(r, t, ACM_ERR_INTERNAL, "more vertices than counted (%zu)",
                         o->nv_total);
    memcpy(o->v + 3 * o->nv, x, sizeof x);
    ++o->nv;
    return ACM_OK;
}

/* An integer from tok at *i: an optional '-', then digits. */
static bool obj_int(span tok, size_t *i, int64_t *value)
{
    bool neg = *i < tok.n && tok.s[*i] == '-';
    if (neg)
        ++*i;
    size_t start = *i;
    int64_t v = 0;
    for (; *i < tok.n && tok.s[*i] >= '0' && tok.s[*i] <= '9'; ++*i)
        if (v <= ACM_OBJ_INDEX_CAP)
            v = 10 * v + (tok.s[*i] - '0');
    *value = neg ? -v : v;
    return *i > start;
}

/* A face corner: v, v/vt, v/vt/vn or v//vn. Only v is used (its text in
 * *vtext, for messages); vt and vn are checked for their form. */
static bool obj_ref(span tok, int64_t *vindex, span *vtext)
{
    size_t i = 0;
    int64_t unused;
    if (!obj_int(tok, &i, vindex))
        return false;
    vtext->s = tok.s;
    vtext->n = i;
    if (i == tok.n)
        return true;
    if (tok.s[i++] != '/')
        return false;
    if (i < tok.n && tok.s[i] == '/') {
        ++i;
        return obj_int(tok, &i, &unused) && i == tok.n;
    }
    if (!obj_int(tok, &i, &unused))
        return false;
    if (i == tok.n)
        return true;
    if (tok.s[i++] != '/')
        return false;
    return obj_int(tok, &i, &unused) && i == tok.n;
}

/* An index for a message: its value, or beyond what obj_int reads, its text
 * whole (digits and a sign), cut after ACM_MESH_QUOTE characters with its
 * length. */
static const char *index_text(int64_t a, span digits, char buf[ACM_MESH_QUOTE_SIZE])
{
    if (a >= -ACM_OBJ_INDEX_CAP && a <= ACM_OBJ_INDEX_CAP)
        acm__format(buf, ACM_MESH_QUOTE_SIZE, "%lld", (long long)a);
    else if (digits.n <= ACM_MESH_QUOTE)
        acm__format(buf, ACM_MESH_QUOTE_SIZE, "%.*s", (int)digits.n, digits.s);
    else
        acm__format(buf, ACM_MESH_QUOTE_SIZE, "%.*s... (%zu characters)", ACM_MESH_QUOTE,
                    digits.s, digits.n);
    return buf;
}

/* A 0-based vertex index (`digits` as the file writes it): positive indices
 * count from the first vertex of the file, negative ones back from the last
 * vertex read so far. */
static acm_status obj_resolve(const reader *r, const text *t, const obj *o, int64_t a,
                              span digits, uint32_t *idx)
{
    char q[ACM_MESH_QUOTE_SIZE];
    if (a == 0)
        return line_fail(r, t, ACM_ERR_BAD_FORMAT, "vertex index 0 (OBJ counts from 1)");
    if (a > 0 && (uint64_t)a > o->nv_total)
        return line_fail(r, t, ACM_ERR_BAD_FORMAT, "vertex index %s, the file has %zu vertices",
                         index_text(a, digits, q), o->nv_total);
    if (a < 0 && (uint64_t)-a > o->nv)
        return line_fail(r, t, ACM_ERR_BAD_FORMAT,
                         "relative vertex index %s, only %zu vertices precede it",
                         index_text(a, digits, q), o->nv);
    *idx = (uint32_t)(a > 0 ? a - 1 : (int64_t)o->nv + a);
    return ACM_OK;
}

static acm_status obj_triangle(const reader *r, const text *t, obj *o, uint32_t a, uint32_t b,
                               uint32_t c)
{
    if (o->nt >= r->max_triangles)
        return line_fail(r, t, ACM_ERR_LIMIT,
                         "more than max_triangles=%llu triangles (a polygon of n vertices "
                         "makes n - 2)",
                         (unsigned long long)r->max_triangles);
    uint32_t *p = reserve(o->t, &o->t_cap, 3 * (o->nt + 1), sizeof *p);
    if (p == NULL)
        return line_fail(r, t, ACM_ERR_NO_MEMORY, "out of memory after %zu triangles", o->nt);
    o->t = p;
    p += 3 * o->nt++;
    p[0] = a;
    p[1] = b;
    p[2] = c;
    return ACM_OK;
}

/* "f a b c ...": a polygon, split into the fan (a, b, c), (a, c, d), ... */
static acm_status obj_face(const reader *r, const text *t, span rest, obj *o)
{
    span tok;
    size_t n = 0;
    uint32_t first = 0, prev = 0;
    char q[ACM_MESH_QUOTE_SIZE];
    while (next_token(&rest, &tok)) {
        int64_t a = 0;
        uint32_t idx = 0;
        span digits;
        if (!obj_ref(tok, &a, &digits))
            return line_fail(r, t, ACM_ERR_BAD_FORMAT,
                             "%s is not a vertex reference (v, v/vt, v/vt/vn or v//vn)",
                             quote(tok, q));
        ACM_TRY(obj_resolve(r, t, o, a, digits, &idx));
        if (n == 0)
            first = idx;
        else if (n >= 2)
            ACM_TRY(obj_triangle(r, t, o, first, prev, idx));
        prev = idx;
        ++n;
    }
    if (n < 3)
        return line_fail(r, t, ACM_ERR_BAD_FORMAT, "a face needs 3 or more vertices, not %zu", n);
    return ACM_OK;
}

/* Second pass: the records. Everything but v and f (vt, vn, o, g, s,
 * usemtl, mtllib, l, p, ...) is skipped. */
static acm_status obj_parse(const reader *r, const char *data, size_t size, obj *o)
{
    text t = text_start(data, size);
    span line, kw, rest;
    while (next_line(&t, &line)) {
        if (!obj_record(line, &kw, &rest))
            continue;
        if (token_is(kw, "v", false))
            ACM_TRY(obj_vertex(r, &t, rest, o));
        else if (token_is(kw, "f", false))
            ACM_TRY(obj_face(r, &t, rest, o));
    }
    if (o->nt == 0)
        return reader_fail(r, ACM_ERR_BAD_FORMAT, "no face ('f' record)");
    if (o->nv_total < 3)
        return reader_fail(r, ACM_ERR_BAD_FORMAT,
                           "%zu vertices: every face is degenerate", o->nv_total);
    return ACM_OK;
}

static acm_status obj_read(const reader *r, const char *data, size_t size, acm_mesh **out)
{
    obj o = {0, 0, NULL, NULL, 0, 0};
    ACM_TRY(obj_count(r, data, size, &o.nv_total));
    /* at most size / 2 vertices ("v\n" per record): bounded by the input */
    o.v = acm__malloc((o.nv_total > 0 ? o.nv_total : 1) * 3 * sizeof *o.v);
    if (o.v == NULL)
        return reader_fail(r, ACM_ERR_NO_MEMORY, "cannot allocate %zu vertices", o.nv_total);
    acm_status st = obj_parse(r, data, size, &o);
    if (st != ACM_OK) {
        acm__free(o.v);
        acm__free(o.t);
        return st;
    }
    return finish(r, o.v, o.nv_total, o.t, o.nt, out);
}

/* ---- format choice -------------------------------------------------------------- */

static bool has_nul(const char *data, size_t size) { return memchr(data, '\0', size) != NULL; }

static acm_status parse_any(const char *data, size_t size, acm_mesh_format format,
                            uint64_t max_triangles, acm_mesh **out, char *msg, size_t msg_size)
{
    const unsigned char *bytes = (const unsigned char *)data;
    reader r = {"binary STL", max_triangles, msg, msg_size};
    if (size == 0) {
        acm__format(msg, msg_size, "the input is empty");
        return ACM_ERR_BAD_FORMAT;
    }
    if (format != ACM_MESH_FORMAT_OBJ && stl_binary_fits(bytes, size))
        return stl_binary(&r, bytes, out);
    /* STL: the text form if it starts like one, or says "solid" and holds no
     * NUL (the ASCII reader then says what is wrong); otherwise tell why it
     * is no binary STL either (a binary header may start with "solid" too) */
    if (format == ACM_MESH_FORMAT_STL) {
        if (!stl_ascii_start(data, size, true) &&
            (!stl_ascii_start(data, size, false) || has_nul(data, size)))
            return stl_binary_mismatch(&r, bytes, size);
        r.what = "ASCII STL";
        return stl_ascii(&r, data, size, out);
    }
    if (format == ACM_MESH_FORMAT_AUTO && stl_ascii_start(data, size, true)) {
        r.what = "ASCII STL";
        return stl_ascii(&r, data, size, out);
    }
    r.what = "OBJ";
    acm_status st = obj_read(&r, data, size, out);
    if (st == ACM_ERR_BAD_FORMAT && format == ACM_MESH_FORMAT_AUTO && has_nul(data, size)) {
        /* text holds no NUL byte: more likely a damaged binary STL, say both */
        char as_obj[ACM_ERROR_SIZE], as_stl[ACM_ERROR_SIZE];
        acm__format(as_obj, sizeof as_obj, "%s", msg);
        reader b = {"binary STL", max_triangles, as_stl, sizeof as_stl};
        stl_binary_mismatch(&b, bytes, size);
        acm__format(msg, msg_size, "neither a binary STL (%s) nor an OBJ (%s)", as_stl, as_obj);
    }
    return st;
}

/* ---- files ---------------------------------------------------------------------- */

static acm_status io_fail(char *msg, size_t msg_size, const char *what, const char *path,
                          int err)
{
    /* strerror_r (POSIX): strerror may share one buffer between threads */
    char reason[160];
    if (strerror_r(err, reason, sizeof reason) != 0)
        acm__format(reason, sizeof reason, "error %d", err);
    acm__format(msg, msg_size, "cannot %s '%s': %s", what, path, reason);
    return ACM_ERR_IO;
}

/* Largest file read for a given triangle limit. */
static size_t file_limit(uint64_t max_triangles)
{
    const uint64_t per = ACM_MESH_FILE_BYTES_PER_TRIANGLE;
    uint64_t bytes = max_triangles > (UINT64_MAX - ACM_MESH_FILE_BYTES_BASE) / per
                         ? UINT64_MAX
                         : ACM_MESH_FILE_BYTES_BASE + per * max_triangles;
    return bytes < SIZE_MAX - 1 ? (size_t)bytes : SIZE_MAX - 1;
}

typedef struct file_buf {
    char *data;
    size_t len;
} file_buf;

static acm_status too_large(char *msg, size_t msg_size, const char *path, size_t limit)
{
    acm__format(msg, msg_size,
                "'%s' is larger than %zu bytes, the bound for max_triangles (raise it to read "
                "larger files)",
                path, limit);
    return ACM_ERR_LIMIT;
}

/* The `size` bytes that fstat gave, in one buffer: no more (a file that grew
 * since is read as it was), fewer if it shrank. */
static acm_status read_bytes(int fd, const char *path, size_t size, file_buf *b, char *msg,
                             size_t msg_size)
{
    b->data = acm__malloc(size > 0 ? size : 1);
    if (b->data == NULL) {
        acm__format(msg, msg_size, "cannot allocate %zu bytes to read '%s'", size, path);
        return ACM_ERR_NO_MEMORY;
    }
    while (b->len < size) {
        ssize_t got = read(fd, b->data + b->len, size - b->len);
        if (got < 0 && errno != EINTR)
            return io_fail(msg, msg_size, "read", path, errno);
        if (got == 0)
            break;
        b->len += got > 0 ? (size_t)got : 0;
    }
    return ACM_OK;
}

/* A regular file only (acm__file_open: a FIFO, a device or a directory is
 * refused before anything is read), no larger than the limit. */
static acm_status read_file(const char *path, size_t limit, file_buf *b, char *msg,
                            size_t msg_size)
{
    int fd = -1;
    uint64_t size = 0;
    char why[160];
    if (acm__file_open(path, &fd, &size, why, sizeof why) != 0) {
        acm__format(msg, msg_size, "cannot open '%s': %s", path, why);
        return ACM_ERR_IO;
    }
    acm_status st = size > limit ? too_large(msg, msg_size, path, limit)
                                 : read_bytes(fd, path, (size_t)size, b, msg, msg_size);
    close(fd);
    return st;
}

/* ---- public --------------------------------------------------------------------- */

ACM_API acm_status acm_mesh_load_memory(acm_mesh **out, const void *data, size_t size,
                                        const acm_mesh_options *opts)
{
    char msg[ACM_ERROR_SIZE] = "";
    acm_mesh_options o;
    acm_status st = acm__mesh_options(opts, true, &o, msg, sizeof msg);
    if (st == ACM_OK && (out == NULL || data == NULL)) {
        acm__format(msg, sizeof msg, "%s is NULL", out == NULL ? "out" : "data");
        st = ACM_ERR_NULL_POINTER;
    }
    acm_mesh *m = NULL;
    if (st == ACM_OK)
        st = parse_any(data, size, o.format, o.max_triangles, &m, msg, sizeof msg);
    if (st != ACM_OK)
        return acm__mesh_report(opts, st, msg);
    *out = m;
    return ACM_OK;
}

ACM_API acm_status acm_mesh_load(acm_mesh **out, const char *path, const acm_mesh_options *opts)
{
    char msg[ACM_ERROR_SIZE] = "";
    acm_mesh_options o;
    acm_status st = acm__mesh_options(opts, true, &o, msg, sizeof msg);
    if (st == ACM_OK && (out == NULL || path == NULL)) {
        acm__format(msg, sizeof msg, "%s is NULL", out == NULL ? "out" : "path");
        st = ACM_ERR_NULL_POINTER;
    }
    file_buf b = {NULL, 0};
    if (st == ACM_OK)
        st = read_file(path, file_limit(o.max_triangles), &b, msg, sizeof msg);
    acm_mesh *m = NULL;
    if (st == ACM_OK) {
        char detail[ACM_ERROR_SIZE] = "";
        st = parse_any(b.data, b.len, o.format, o.max_triangles, &m, detail, sizeof detail);
        if (st != ACM_OK)
            acm__format(msg, sizeof msg, "%s: %s", path, detail);
    }
    acm__free(b.data);
    if (st != ACM_OK)
        return acm__mesh_report(opts, st, msg);
    *out = m;
    return ACM_OK;
}
