/*
 * libacmlbm -- acm_mesh: the immutable triangle mesh. Every creator (the
 * array constructor and the file readers of mesh_io.c) ends in
 * acm__mesh_adopt(), which checks the arrays, drops degenerate triangles and
 * unused vertices, and computes the geometry once (area, volume, centroid,
 * inertia, closedness).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* isfinite, frexp, ldexp, sqrt */
#include <stdarg.h> /* va_list */
#include <stdlib.h> /* calloc, malloc, realloc, free, qsort */
#include <string.h> /* memcpy, memset */

#include "alloc.h"
#include "mesh.h"
#include "options.h"

/* A triangle whose area is at most this fraction of the squared diagonal of
 * the mesh's bounding box counts as degenerate: relative, so that the test
 * means the same in millimetres and in kilometres. */
#define ACM_MESH_DEGENERATE_REL 1e-12

/* ---- options -------------------------------------------------------------------- */

/* Bytes of acm_mesh_options known to a caller of a given version. */
static size_t mesh_options_size(uint32_t version)
{
    return version == 1 ? sizeof(acm_mesh_options) : 0;
}

ACM_API acm_status acm_mesh_options_init(acm_mesh_options *opts, uint32_t version)
{
    const acm_mesh_options def = ACM_MESH_OPTIONS_INIT;
    return acm__options_init(opts, &def, mesh_options_size(version), version);
}

acm_status acm__mesh_options(const acm_mesh_options *opts, bool loader, acm_mesh_options *o,
                             char *msg, size_t msg_size)
{
    const acm_mesh_options def = ACM_MESH_OPTIONS_INIT;
    *o = def;
    if (opts != NULL) {
        size_t size = mesh_options_size(opts->version);
        if (size == 0) {
            acm__format(msg, msg_size, "acm_mesh_options version %u is not supported (1..%d)",
                        opts->version, ACM_MESH_OPTIONS_VERSION);
            return ACM_ERR_BAD_VERSION;
        }
        memcpy(o, opts, size);
    }
    if (o->error_buffer == NULL && o->error_buffer_size != 0) {
        acm__format(msg, msg_size, "error_buffer is NULL but error_buffer_size is %zu",
                    o->error_buffer_size);
        return ACM_ERR_INVALID_ARG;
    }
    if (loader && (unsigned)o->format > ACM_MESH_FORMAT_OBJ) {
        acm__format(msg, msg_size, "unknown mesh format %d", (int)o->format);
        return ACM_ERR_BAD_ENUM;
    }
    if (o->max_triangles == 0)
        o->max_triangles = ACM_MESH_DEFAULT_MAX_TRIANGLES;
    return ACM_OK;
}

acm_status acm__mesh_report(const acm_mesh_options *opts, acm_status st, const char *msg)
{
    /* the buffer sits at the same offset in every version of the struct */
    if (opts != NULL && opts->error_buffer != NULL && opts->error_buffer_size > 0)
        acm__format(opts->error_buffer, opts->error_buffer_size, "%s", msg);
    return st;
}

/* ---- welding -------------------------------------------------------------------- */

/* Hash of a point's coordinate bits. -0.0 and 0.0 compare equal, so they
 * must hash equal too. */
static uint64_t point_hash(const double *p)
{
    uint64_t h = UINT64_C(0x2545F4914F6CDD1D);
    for (int k = 0; k < 3; ++k) {
        double x = p[k] == 0.0 ? 0.0 : p[k];
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        h = (h ^ bits) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 31;
    }
    return h * UINT64_C(0xD6E8FEB86659FD93);
}

static bool same_point(const double *a, const double *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

acm_status acm__mesh_weld(const double *v, size_t n, uint32_t *id, size_t *nunique)
{
    /* open addressing at load factor <= 1/2; a slot holds the index of the
     * first point seen at its position, UINT32_MAX when empty */
    if (n > ACM_MESH_MAX_VERTICES || n > SIZE_MAX / 4)
        return ACM_ERR_NO_MEMORY;
    unsigned bits = 1;
    while (((size_t)1 << bits) < 2 * n)
        ++bits;
    size_t mask = ((size_t)1 << bits) - 1;
    uint32_t *slot = acm__malloc((mask + 1) * sizeof *slot);
    if (slot == NULL)
        return ACM_ERR_NO_MEMORY;
    memset(slot, 0xff, (mask + 1) * sizeof *slot);
    size_t next = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t h = (size_t)(point_hash(v + 3 * i) >> (64 - bits));
        for (;;) {
            uint32_t j = slot[h];
            if (j == UINT32_MAX) {
                slot[h] = (uint32_t)i;
                id[i] = (uint32_t)next++;
                break;
            }
            if (same_point(v + 3 * (size_t)j, v + 3 * i)) {
                id[i] = id[j];
                break;
            }
            h = (h + 1) & mask;
        }
    }
    acm__free(slot);
    *nunique = next;
    return ACM_OK;
}

/* ---- checks --------------------------------------------------------------------- */

static acm_status check_counts(size_t nverts, size_t ntris, uint64_t max_triangles, char *msg,
                               size_t msg_size)
{
    if (nverts < 3 || ntris < 1) {
        acm__format(msg, msg_size,
                    "%zu vertices and %zu triangles: a mesh needs at least 3 and 1", nverts,
                    ntris);
        return ACM_ERR_OUT_OF_RANGE;
    }
    if (ntris > max_triangles) {
        acm__format(msg, msg_size, "%zu triangles exceed max_triangles=%llu", ntris,
                    (unsigned long long)max_triangles);
        return ACM_ERR_LIMIT;
    }
    /* the first bound keeps indices in uint32_t, the second keeps 3 * ntris
     * indices addressable (only a caller-raised max_triangles can reach it) */
    if (nverts > ACM_MESH_MAX_VERTICES || ntris > SIZE_MAX / (3 * sizeof(uint64_t))) {
        acm__format(msg, msg_size, "%zu vertices and %zu triangles exceed the limits (%zu, %zu)",
                    nverts, ntris, ACM_MESH_MAX_VERTICES, SIZE_MAX / (3 * sizeof(uint64_t)));
        return ACM_ERR_LIMIT;
    }
    return ACM_OK;
}

static acm_status check_values(const double *v, size_t nverts, const uint32_t *t, size_t ntris,
                               char *msg, size_t msg_size)
{
    for (size_t i = 0; i < 3 * nverts; ++i) {
        if (!isfinite(v[i])) {
            acm__format(msg, msg_size, "vertex %zu: coordinate %c is %g (not finite)", i / 3,
                        "xyz"[i % 3], v[i]);
            return ACM_ERR_OUT_OF_RANGE;
        }
    }
    for (size_t i = 0; i < 3 * ntris; ++i) {
        if (t[i] >= nverts) {
            acm__format(msg, msg_size,
                        "triangle %zu: vertex index %u is out of range (%zu vertices)", i / 3,
                        t[i], nverts);
            return ACM_ERR_OUT_OF_RANGE;
        }
    }
    return ACM_OK;
}

/* ---- geometry ------------------------------------------------------------------- */

/* Coordinates relative to the bounding-box centre, divided by a power of two
 * no smaller than the largest half-extent: every normalised coordinate lies
 * in [-1, 1], which limits cancellation in the volume sums and keeps the
 * powers of the inertia from overflowing before the final (exact) rescale. */
typedef struct frame {
    double centre[3];
    double inv_scale; /* 2^-exponent */
    int exponent;
} frame;

static frame make_frame(const double lo[3], const double hi[3])
{
    frame f;
    double half = 0.0;
    for (int k = 0; k < 3; ++k) {
        /* halves first: hi - lo may overflow, hi/2 - lo/2 cannot */
        f.centre[k] = lo[k] / 2 + hi[k] / 2;
        double h = hi[k] / 2 - lo[k] / 2;
        half = h > half ? h : half;
    }
    f.exponent = 0;
    if (half > 0.0)
        frexp(half, &f.exponent);
    f.inv_scale = ldexp(1.0, -f.exponent);
    return f;
}

static void to_frame(const frame *f, const double *x, double p[3])
{
    for (int k = 0; k < 3; ++k)
        p[k] = (x[k] - f->centre[k]) * f->inv_scale;
}

static void cross(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* The three corners of triangle i in the frame. */
static void corners(const frame *f, const double *v, const uint32_t *t, size_t i, double p[3][3])
{
    for (int c = 0; c < 3; ++c)
        to_frame(f, v + 3 * (size_t)t[3 * i + c], p[c]);
}

/* Twice the area of a triangle given in the frame. */
static double twice_area(double p[3][3])
{
    double e1[3], e2[3], n[3];
    for (int k = 0; k < 3; ++k) {
        e1[k] = p[1][k] - p[0][k];
        e2[k] = p[2][k] - p[0][k];
    }
    cross(e1, e2, n);
    return sqrt(dot(n, n));
}

/* Bounding box of the vertices the triangles use. */
static void triangle_bbox(const double *v, const uint32_t *t, size_t ntris, double lo[3],
                          double hi[3])
{
    for (int k = 0; k < 3; ++k) {
        lo[k] = v[3 * (size_t)t[0] + k];
        hi[k] = lo[k];
    }
    for (size_t i = 0; i < 3 * ntris; ++i) {
        const double *x = v + 3 * (size_t)t[i];
        for (int k = 0; k < 3; ++k) {
            lo[k] = x[k] < lo[k] ? x[k] : lo[k];
            hi[k] = x[k] > hi[k] ? x[k] : hi[k];
        }
    }
}

/* ---- clean-up ------------------------------------------------------------------- */

/* Remove triangles with a repeated index or a (relatively) zero area, in
 * place, keeping the order of the others. */
static size_t drop_degenerate(acm_mesh *m)
{
    double lo[3], hi[3];
    triangle_bbox(m->v, m->t, m->ntris, lo, hi);
    frame f = make_frame(lo, hi);
    double d[3], p[3][3];
    for (int k = 0; k < 3; ++k)
        d[k] = (hi[k] - f.centre[k]) * f.inv_scale - (lo[k] - f.centre[k]) * f.inv_scale;
    /* area <= rel * diag^2, i.e. twice the area <= 2 * rel * diag^2 */
    const double tol = 2.0 * ACM_MESH_DEGENERATE_REL * dot(d, d);
    size_t kept = 0;
    for (size_t i = 0; i < m->ntris; ++i) {
        const uint32_t *c = m->t + 3 * i;
        if (c[0] == c[1] || c[1] == c[2] || c[0] == c[2])
            continue;
        corners(&f, m->v, m->t, i, p);
        if (!(twice_area(p) > tol))
            continue;
        memmove(m->t + 3 * kept, c, 3 * sizeof *c);
        ++kept;
    }
    size_t dropped = m->ntris - kept;
    m->ntris = kept;
    return dropped;
}

/* Remove vertices no triangle uses, keeping the order of the others, and
 * renumber the triangles. */
static acm_status drop_unused(acm_mesh *m)
{
    uint32_t *map = acm__malloc(m->nverts * sizeof *map);
    if (map == NULL)
        return ACM_ERR_NO_MEMORY;
    memset(map, 0xff, m->nverts * sizeof *map);
    for (size_t i = 0; i < 3 * m->ntris; ++i)
        map[m->t[i]] = 0;
    size_t kept = 0;
    for (size_t i = 0; i < m->nverts; ++i) {
        if (map[i] == UINT32_MAX)
            continue;
        memmove(m->v + 3 * kept, m->v + 3 * i, 3 * sizeof(double));
        map[i] = (uint32_t)kept++;
    }
    for (size_t i = 0; i < 3 * m->ntris; ++i)
        m->t[i] = map[m->t[i]];
    acm__free(map);
    m->nverts = kept;
    /* give back what the dropped elements held; keep the larger block if the
     * system cannot shrink it */
    double *v = acm__realloc(m->v, 3 * kept * sizeof *v);
    if (v != NULL)
        m->v = v;
    uint32_t *t = acm__realloc(m->t, 3 * m->ntris * sizeof *t);
    if (t != NULL)
        m->t = t;
    return ACM_OK;
}

/* ---- closedness ----------------------------------------------------------------- */

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* 1 when every undirected edge, between welded vertices (points at equal
 * positions are one vertex), belongs to exactly two triangles. The edges are
 * sorted rather than hashed: O(n log n) whatever the input. */
static acm_status mesh_closed(const acm_mesh *m, int32_t *closed)
{
    size_t nedges = 3 * m->ntris, nunique = 0;
    uint32_t *id = acm__malloc(m->nverts * sizeof *id);
    uint64_t *e = acm__malloc(nedges * sizeof *e);
    acm_status st = id != NULL && e != NULL ? ACM_OK : ACM_ERR_NO_MEMORY;
    if (st == ACM_OK)
        st = acm__mesh_weld(m->v, m->nverts, id, &nunique);
    if (st == ACM_OK) {
        for (size_t i = 0; i < m->ntris; ++i) {
            for (int c = 0; c < 3; ++c) {
                uint64_t a = id[m->t[3 * i + c]], b = id[m->t[3 * i + (c + 1) % 3]];
                e[3 * i + (size_t)c] = a < b ? (a << 32 | b) : (b << 32 | a);
            }
        }
        qsort(e, nedges, sizeof *e, compare_u64);
        *closed = 1;
        for (size_t i = 0; i < nedges;) {
            size_t j = i + 1;
            while (j < nedges && e[j] == e[i])
                ++j;
            if (j - i != 2) {
                *closed = 0;
                break;
            }
            i = j;
        }
    }
    acm__free(id);
    acm__free(e);
    return st;
}

/* ---- mass properties ------------------------------------------------------------ */

/* Sums over the triangles, in frame units. The volume integrals come from
 * the signed tetrahedra (frame origin, p0, p1, p2), the divergence theorem
 * in discrete form: with v6 = p0 . (p1 x p2) (six times the signed volume)
 * and s = p0 + p1 + p2,
 *   volume              = sum v6 / 6
 *   integral of x_i     = sum v6 s_i / 24
 *   integral of x_i x_j = sum v6 (sum_c p_c,i p_c,j + s_i s_j) / 120. */
typedef struct mass_sums {
    double area2;      /* sum of twice the areas */
    double surface[3]; /* sum of twice the area times the triangle centre */
    double v6;
    double first[3];
    double second[3][3];
} mass_sums;

static void add_triangle(mass_sums *ms, double p[3][3])
{
    double a2 = twice_area(p), n[3], s[3];
    cross(p[1], p[2], n);
    double v6 = dot(p[0], n);
    for (int i = 0; i < 3; ++i)
        s[i] = p[0][i] + p[1][i] + p[2][i];
    ms->area2 += a2;
    ms->v6 += v6;
    for (int i = 0; i < 3; ++i) {
        ms->surface[i] += a2 * s[i] / 3.0;
        ms->first[i] += v6 * s[i];
        for (int j = i; j < 3; ++j)
            ms->second[i][j] +=
                v6 * (p[0][i] * p[0][j] + p[1][i] * p[1][j] + p[2][i] * p[2][j] + s[i] * s[j]);
    }
}

/* Fill area, volume, centroid and inertia of the info from the sums. */
static void mass_properties(const mass_sums *ms, const frame *f, bool closed, acm_mesh_info *in)
{
    const int e = f->exponent;
    double volume = ms->v6 / 6.0;
    in->area = ldexp(ms->area2 / 2.0, 2 * e);
    in->volume = ldexp(volume, 3 * e);
    memset(in->inertia, 0, sizeof in->inertia);
    if (!(closed && volume > 0.0)) {
        for (int k = 0; k < 3; ++k)
            in->centroid[k] = f->centre[k] + ldexp(ms->surface[k] / ms->area2, e);
        return;
    }
    double g[3], c[3][3];
    for (int k = 0; k < 3; ++k)
        g[k] = ms->first[k] / 24.0 / volume;
    /* second moments about the centroid (parallel-axis shift) */
    for (int i = 0; i < 3; ++i)
        for (int j = i; j < 3; ++j)
            c[i][j] = ms->second[i][j] / 120.0 - volume * g[i] * g[j];
    const double tensor[6] = {c[1][1] + c[2][2], c[0][0] + c[2][2], c[0][0] + c[1][1],
                              -c[0][1],          -c[0][2],          -c[1][2]};
    for (int k = 0; k < 6; ++k)
        in->inertia[k] = ldexp(tensor[k], 5 * e);
    for (int k = 0; k < 3; ++k)
        in->centroid[k] = f->centre[k] + ldexp(g[k], e);
}

/* Every value representable: finite, and an area that did not underflow to
 * 0 (the triangles are not degenerate, so only a tiny scale makes it so). */
static bool info_representable(const acm_mesh_info *in)
{
    bool ok = isfinite(in->area) && in->area > 0.0 && isfinite(in->volume);
    for (int k = 0; k < 3; ++k)
        ok = ok && isfinite(in->centroid[k]);
    for (int k = 0; k < 6; ++k)
        ok = ok && isfinite(in->inertia[k]);
    return ok;
}

static acm_status compute_info(acm_mesh *m, char *msg, size_t msg_size)
{
    acm_mesh_info *in = &m->info;
    in->vertex_count = m->nverts;
    in->triangle_count = m->ntris;
    triangle_bbox(m->v, m->t, m->ntris, in->bbox_min, in->bbox_max);
    ACM_TRY(mesh_closed(m, &in->closed));
    frame f = make_frame(in->bbox_min, in->bbox_max);
    mass_sums ms;
    memset(&ms, 0, sizeof ms);
    double p[3][3];
    for (size_t i = 0; i < m->ntris; ++i) {
        corners(&f, m->v, m->t, i, p);
        add_triangle(&ms, p);
    }
    mass_properties(&ms, &f, in->closed != 0, in);
    if (!info_representable(in)) {
        acm__format(msg, msg_size,
                    "the mesh spans 2^%d units: its area, volume or inertia is out of the range "
                    "of a double",
                    f.exponent + 1);
        return ACM_ERR_OUT_OF_RANGE;
    }
    /* a closed surface that encloses a volume must say so: 0 would call it flat */
    if (in->closed && ms.v6 != 0.0 && in->volume == 0.0) {
        acm__format(msg, msg_size,
                    "the closed mesh spans 2^%d units: its volume underflows to 0 in a double "
                    "(give its coordinates in larger units)",
                    f.exponent + 1);
        return ACM_ERR_OUT_OF_RANGE;
    }
    return ACM_OK;
}

/* ---- creation ------------------------------------------------------------------- */

static acm_status mesh_build(acm_mesh *m, uint64_t max_triangles, char *msg, size_t msg_size)
{
    if (max_triangles == 0)
        max_triangles = ACM_MESH_DEFAULT_MAX_TRIANGLES;
    ACM_TRY(check_counts(m->nverts, m->ntris, max_triangles, msg, msg_size));
    ACM_TRY(check_values(m->v, m->nverts, m->t, m->ntris, msg, msg_size));
    size_t total = m->ntris;
    m->info.degenerate_triangles = drop_degenerate(m);
    if (m->ntris == 0) {
        acm__format(msg, msg_size,
                    "all %zu triangles are degenerate (a repeated vertex or zero area)", total);
        return ACM_ERR_INVALID_ARG;
    }
    if (drop_unused(m) != ACM_OK) {
        acm__format(msg, msg_size, "out of memory renumbering %zu vertices", m->nverts);
        return ACM_ERR_NO_MEMORY;
    }
    acm_status st = compute_info(m, msg, msg_size);
    if (st == ACM_ERR_NO_MEMORY)
        acm__format(msg, msg_size, "out of memory checking the edges of %zu triangles",
                    m->ntris);
    return st;
}

acm_status acm__mesh_adopt(acm_mesh **out, double *v, size_t nverts, uint32_t *t, size_t ntris,
                           uint64_t max_triangles, char *msg, size_t msg_size)
{
    acm_mesh *m = acm__calloc(1, sizeof *m);
    if (m == NULL) {
        acm__free(v);
        acm__free(t);
        acm__format(msg, msg_size, "cannot allocate the mesh handle");
        return ACM_ERR_NO_MEMORY;
    }
    /* the handle owns the arrays from here on: destroy frees them on any failure */
    m->v = v;
    m->t = t;
    m->nverts = nverts;
    m->ntris = ntris;
    acm_status st = mesh_build(m, max_triangles, msg, msg_size);
    if (st != ACM_OK) {
        acm_mesh_destroy(m);
        return st;
    }
    *out = m;
    return ACM_OK;
}

static acm_status check_create_args(acm_mesh **out, const double *vertices, size_t nverts,
                                    const uint32_t *triangles, size_t ntris,
                                    uint64_t max_triangles, char *msg, size_t msg_size)
{
    if (out == NULL || vertices == NULL || triangles == NULL) {
        acm__format(msg, msg_size, "%s is NULL",
                    out == NULL ? "out" : (vertices == NULL ? "vertices" : "triangles"));
        return ACM_ERR_NULL_POINTER;
    }
    ACM_TRY(check_counts(nverts, ntris, max_triangles, msg, msg_size));
    return check_values(vertices, nverts, triangles, ntris, msg, msg_size);
}

ACM_API acm_status acm_mesh_create(acm_mesh **out, const double *vertices, size_t vertex_count,
                                   const uint32_t *triangles, size_t triangle_count,
                                   const acm_mesh_options *opts)
{
    char msg[ACM_ERROR_SIZE] = "";
    acm_mesh_options o;
    acm_status st = acm__mesh_options(opts, false, &o, msg, sizeof msg);
    if (st == ACM_OK)
        st = check_create_args(out, vertices, vertex_count, triangles, triangle_count,
                               o.max_triangles, msg, sizeof msg);
    if (st != ACM_OK)
        return acm__mesh_report(opts, st, msg);
    double *v = acm__malloc(3 * vertex_count * sizeof *v);
    uint32_t *t = acm__malloc(3 * triangle_count * sizeof *t);
    if (v == NULL || t == NULL) {
        acm__free(v);
        acm__free(t);
        acm__format(msg, sizeof msg, "cannot copy %zu vertices and %zu triangles", vertex_count,
                    triangle_count);
        return acm__mesh_report(opts, ACM_ERR_NO_MEMORY, msg);
    }
    memcpy(v, vertices, 3 * vertex_count * sizeof *v);
    memcpy(t, triangles, 3 * triangle_count * sizeof *t);
    acm_mesh *m = NULL;
    st = acm__mesh_adopt(&m, v, vertex_count, t, triangle_count, o.max_triangles, msg,
                         sizeof msg);
    if (st != ACM_OK)
        return acm__mesh_report(opts, st, msg);
    *out = m;
    return ACM_OK;
}

ACM_API void acm_mesh_destroy(acm_mesh *mesh)
{
    if (mesh == NULL)
        return;
    acm__free(mesh->v);
    acm__free(mesh->t);
    acm__free(mesh);
}

/* ---- queries -------------------------------------------------------------------- */

static acm_status mesh_fail(const acm_mesh *m, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static acm_status mesh_fail(const acm_mesh *m, acm_status code, const char *fmt, ...)
{
    /* the message buffer is logically mutable state of an immutable mesh;
     * concurrent readers that fail at once may interleave their messages,
     * never their geometry */
    va_list ap;
    va_start(ap, fmt);
    acm__vformat(((acm_mesh *)(uintptr_t)m)->error, ACM_ERROR_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

ACM_API acm_status acm_mesh_get_info(const acm_mesh *mesh, acm_mesh_info *info)
{
    if (mesh == NULL)
        return ACM_ERR_NULL_POINTER;
    if (info == NULL)
        return mesh_fail(mesh, ACM_ERR_NULL_POINTER, "info is NULL");
    if (info->version != ACM_MESH_INFO_VERSION)
        return mesh_fail(mesh, ACM_ERR_BAD_VERSION,
                         "acm_mesh_info version %u is not supported (%d)", info->version,
                         ACM_MESH_INFO_VERSION);
    acm_mesh_info i = mesh->info;
    i.version = info->version;
    *info = i;
    return ACM_OK;
}

ACM_API acm_status acm_mesh_get_vertices(const acm_mesh *mesh, double *dst, size_t count)
{
    if (mesh == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return mesh_fail(mesh, ACM_ERR_NULL_POINTER, "dst is NULL");
    if (count != mesh->nverts)
        return mesh_fail(mesh, ACM_ERR_BUFFER_SIZE, "count=%zu, the mesh has %zu vertices", count,
                         mesh->nverts);
    memcpy(dst, mesh->v, 3 * count * sizeof *dst);
    return ACM_OK;
}

ACM_API acm_status acm_mesh_get_triangles(const acm_mesh *mesh, uint32_t *dst, size_t count)
{
    if (mesh == NULL)
        return ACM_ERR_NULL_POINTER;
    if (dst == NULL)
        return mesh_fail(mesh, ACM_ERR_NULL_POINTER, "dst is NULL");
    if (count != mesh->ntris)
        return mesh_fail(mesh, ACM_ERR_BUFFER_SIZE, "count=%zu, the mesh has %zu triangles",
                         count, mesh->ntris);
    memcpy(dst, mesh->t, 3 * count * sizeof *dst);
    return ACM_OK;
}

ACM_API const char *acm_mesh_last_error(const acm_mesh *mesh)
{
    return mesh == NULL ? "mesh is NULL" : mesh->error;
}
