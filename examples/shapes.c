/*
 * libacmlbm examples -- procedural triangle meshes (shapes.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "shapes.h"

#include <math.h>   /* sqrt, cos, sin, atan2 */
#include <stdio.h>  /* fopen, fwrite, fprintf */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memset, memcpy */

#ifndef M_PI
#  define M_PI 3.14159265358979323846
#endif

#define SHAPES_MAX_SUBDIVISIONS 10 /* 21 million triangles */
#define SHAPES_EMPTY_KEY UINT64_MAX

static int mesh_alloc(shapes_mesh *m, size_t nv, size_t nt)
{
    memset(m, 0, sizeof *m);
    if (nv > SIZE_MAX / (3 * sizeof(double)) || nt > SIZE_MAX / (3 * sizeof(uint32_t)) ||
        nv > UINT32_MAX)
        return -1;
    m->v = malloc(3 * nv * sizeof *m->v);
    m->t = malloc(3 * nt * sizeof *m->t);
    if (m->v == NULL || m->t == NULL) {
        shapes_free(m);
        return -1;
    }
    m->nv = nv;
    m->nt = nt;
    return 0;
}

void shapes_free(shapes_mesh *m)
{
    if (m == NULL)
        return;
    free(m->v);
    free(m->t);
    memset(m, 0, sizeof *m);
}

static void set3(double *dst, double x, double y, double z)
{
    dst[0] = x;
    dst[1] = y;
    dst[2] = z;
}

static void tri3(uint32_t *dst, uint32_t a, uint32_t b, uint32_t c)
{
    dst[0] = a;
    dst[1] = b;
    dst[2] = c;
}

static void cross(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void normalize(double a[3])
{
    double n = sqrt(dot(a, a));
    a[0] /= n;
    a[1] /= n;
    a[2] /= n;
}

/* ---- icosphere ---------------------------------------------------------- */

/* Edge -> midpoint vertex, open addressing: each edge of a level is split
 * once, so the two triangles that share it share its midpoint. */
typedef struct edge_map {
    uint64_t *key;
    uint32_t *value;
    size_t mask;
} edge_map;

static uint32_t midpoint(edge_map *em, shapes_mesh *m, uint32_t a, uint32_t b)
{
    uint64_t key = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
    size_t i = (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & em->mask;
    while (em->key[i] != SHAPES_EMPTY_KEY) {
        if (em->key[i] == key)
            return em->value[i];
        i = (i + 1) & em->mask;
    }
    uint32_t id = (uint32_t)m->nv++;
    double *p = m->v + 3 * (size_t)id;
    const double *pa = m->v + 3 * (size_t)a, *pb = m->v + 3 * (size_t)b;
    set3(p, pa[0] + pb[0], pa[1] + pb[1], pa[2] + pb[2]);
    normalize(p); /* on the unit sphere; scaled at the end */
    em->key[i] = key;
    em->value[i] = id;
    return id;
}

/* Split every triangle of m (level with nt triangles) into four. */
static int subdivide(shapes_mesh *m, uint32_t *next)
{
    size_t edges = 3 * m->nt / 2, cap = 16;
    while (cap < 2 * edges)
        cap <<= 1;
    edge_map em = {malloc(cap * sizeof(uint64_t)), malloc(cap * sizeof(uint32_t)), cap - 1};
    if (em.key == NULL || em.value == NULL) {
        free(em.key);
        free(em.value);
        return -1;
    }
    memset(em.key, 0xff, cap * sizeof(uint64_t)); /* all SHAPES_EMPTY_KEY */
    for (size_t k = 0; k < m->nt; ++k) {
        const uint32_t *t = m->t + 3 * k;
        uint32_t ab = midpoint(&em, m, t[0], t[1]), bc = midpoint(&em, m, t[1], t[2]),
                 ca = midpoint(&em, m, t[2], t[0]);
        uint32_t *o = next + 12 * k;
        tri3(o, t[0], ab, ca);
        tri3(o + 3, ab, t[1], bc);
        tri3(o + 6, ca, bc, t[2]);
        tri3(o + 9, ab, bc, ca);
    }
    free(em.key);
    free(em.value);
    memcpy(m->t, next, 12 * m->nt * sizeof *next);
    m->nt *= 4;
    return 0;
}

int shapes_sphere(shapes_mesh *out, unsigned subdivisions, double radius)
{
    memset(out, 0, sizeof *out);
    if (subdivisions > SHAPES_MAX_SUBDIVISIONS || !(radius > 0.0 && isfinite(radius)))
        return -1;
    size_t nt = (size_t)20 << (2 * subdivisions), nv = 10 * ((size_t)1 << (2 * subdivisions)) + 2;
    shapes_mesh m;
    if (mesh_alloc(&m, nv, nt) != 0)
        return -1;
    uint32_t *next = malloc(3 * nt * sizeof *next);
    if (next == NULL) {
        shapes_free(&m);
        return -1;
    }
    /* the icosahedron: the cyclic permutations of (0, +-1, +-g) */
    const double g = (1.0 + sqrt(5.0)) / 2.0;
    const double corner[12][3] = {
        {-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0}, {0, -1, g}, {0, 1, g},
        {0, -1, -g}, {0, 1, -g}, {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    static const uint32_t face[20][3] = {
        {0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
        {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
        {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
    for (int i = 0; i < 12; ++i) {
        set3(m.v + 3 * i, corner[i][0], corner[i][1], corner[i][2]);
        normalize(m.v + 3 * i);
    }
    for (int f = 0; f < 20; ++f)
        tri3(m.t + 3 * f, face[f][0], face[f][1], face[f][2]);
    m.nv = 12;
    m.nt = 20;
    int rc = 0;
    for (unsigned s = 0; s < subdivisions && rc == 0; ++s)
        rc = subdivide(&m, next);
    free(next);
    if (rc != 0) {
        shapes_free(&m);
        return -1;
    }
    for (size_t i = 0; i < 3 * m.nv; ++i)
        m.v[i] *= radius;
    *out = m;
    return 0;
}

unsigned shapes_sphere_subdivisions(double radius, double edge)
{
    /* the icosahedron's edge is 1.0515 radii; each level about halves it */
    double e = 1.0515 * radius;
    unsigned s = 0;
    while (e > edge && s < SHAPES_MAX_SUBDIVISIONS) {
        e *= 0.5;
        ++s;
    }
    return s;
}

/* ---- torus -------------------------------------------------------------- */

/* Quads (i, j) .. (i+1, j+1) of an nu x nv periodic grid as two triangles,
 * each counter-clockwise for the orientation where d/di x d/dj points out
 * (swap = 0) or in (swap = 1). */
static void periodic_quads(uint32_t *t, unsigned nu, unsigned nv, int swap)
{
    size_t k = 0;
    for (unsigned i = 0; i < nu; ++i)
        for (unsigned j = 0; j < nv; ++j) {
            uint32_t a = i * nv + j, b = ((i + 1) % nu) * nv + j,
                     c = ((i + 1) % nu) * nv + (j + 1) % nv, d = i * nv + (j + 1) % nv;
            if (swap) {
                tri3(t + 3 * k++, a, d, c);
                tri3(t + 3 * k++, a, c, b);
            } else {
                tri3(t + 3 * k++, a, b, c);
                tri3(t + 3 * k++, a, c, d);
            }
        }
}

int shapes_torus(shapes_mesh *out, double R, double r, unsigned nu, unsigned nv)
{
    memset(out, 0, sizeof *out);
    if (!(r > 0.0 && R > r && isfinite(R)) || nu < 3 || nv < 3 ||
        (uint64_t)nu * nv > UINT32_MAX / 2)
        return -1;
    shapes_mesh m;
    if (mesh_alloc(&m, (size_t)nu * nv, 2 * (size_t)nu * nv) != 0)
        return -1;
    for (unsigned i = 0; i < nu; ++i) {
        double u = 2.0 * M_PI * i / nu;
        for (unsigned j = 0; j < nv; ++j) {
            double w = 2.0 * M_PI * j / nv;
            set3(m.v + 3 * ((size_t)i * nv + j), (R + r * cos(w)) * cos(u),
                 (R + r * cos(w)) * sin(u), r * sin(w));
        }
    }
    /* d/du x d/dv = (cos u cos v, sin u cos v, sin v): outward */
    periodic_quads(m.t, nu, nv, 0);
    *out = m;
    return 0;
}

/* ---- knot tube ---------------------------------------------------------- */

static void knot_point(int p, int q, double R, double r, double s, double c[3])
{
    double rho = R + r * cos(q * s);
    set3(c, rho * cos(p * s), rho * sin(p * s), r * sin(q * s));
}

static void knot_tangent(int p, int q, double R, double r, double s, double t[3])
{
    double rho = R + r * cos(q * s), drho = -r * q * sin(q * s);
    set3(t, drho * cos(p * s) - rho * p * sin(p * s), drho * sin(p * s) + rho * p * cos(p * s),
         r * q * cos(q * s));
    normalize(t);
}

/* Rotate v about the unit axis k by angle (Rodrigues). */
static void rotate(double v[3], const double k[3], double angle)
{
    double c = cos(angle), s = sin(angle), kv[3], kd = dot(k, v);
    cross(k, v, kv);
    for (int a = 0; a < 3; ++a)
        v[a] = v[a] * c + kv[a] * s + k[a] * kd * (1.0 - c);
}

/* Normals of the rings by parallel transport: project the previous normal
 * onto the next normal plane (rotation-minimising to second order, and no
 * Frenet flip where the curvature vanishes). Going once around, the frame
 * comes back turned by the holonomy angle; turning ring i back by i/nu of it
 * closes the tube without a seam. frame: 6 per ring (tangent, normal). */
static void knot_frames(int p, int q, double R, double r, unsigned nu, double *frame)
{
    double n[3] = {0.0, 0.0, 1.0};
    for (unsigned i = 0; i <= nu; ++i) {
        double t[3];
        knot_tangent(p, q, R, r, 2.0 * M_PI * (i % nu) / nu, t);
        if (i == 0 && fabs(dot(n, t)) > 0.9)
            set3(n, 1.0, 0.0, 0.0);
        double d = dot(n, t);
        n[0] -= d * t[0];
        n[1] -= d * t[1];
        n[2] -= d * t[2];
        normalize(n);
        if (i < nu) {
            memcpy(frame + 6 * i, t, sizeof t);
            memcpy(frame + 6 * i + 3, n, sizeof n);
        }
    }
    /* n is now the first normal transported once around */
    const double *t0 = frame, *n0 = frame + 3;
    double c[3];
    cross(n0, n, c);
    double holonomy = atan2(dot(c, t0), dot(n0, n));
    for (unsigned i = 1; i < nu; ++i)
        rotate(frame + 6 * i + 3, frame + 6 * i, -holonomy * i / nu);
}

int shapes_knot_tube(shapes_mesh *out, int p, int q, double R, double r, double a, unsigned nu,
                     unsigned nv)
{
    memset(out, 0, sizeof *out);
    if (p < 1 || q < 1 || !(a > 0.0 && r > 0.0 && R > r && isfinite(R)) || nu < 8 || nv < 3 ||
        (uint64_t)nu * nv > UINT32_MAX / 2)
        return -1;
    double *frame = malloc(6 * (size_t)nu * sizeof *frame);
    shapes_mesh m;
    if (frame == NULL || mesh_alloc(&m, (size_t)nu * nv, 2 * (size_t)nu * nv) != 0) {
        free(frame);
        return -1;
    }
    knot_frames(p, q, R, r, nu, frame);
    for (unsigned i = 0; i < nu; ++i) {
        double c[3], b[3];
        knot_point(p, q, R, r, 2.0 * M_PI * i / nu, c);
        const double *t = frame + 6 * i, *n = frame + 6 * i + 3;
        cross(t, n, b);
        for (unsigned j = 0; j < nv; ++j) {
            double w = 2.0 * M_PI * j / nv, cw = a * cos(w), sw = a * sin(w);
            set3(m.v + 3 * ((size_t)i * nv + j), c[0] + cw * n[0] + sw * b[0],
                 c[1] + cw * n[1] + sw * b[1], c[2] + cw * n[2] + sw * b[2]);
        }
    }
    free(frame);
    /* d/di x d/dj = t x (-sin w n + cos w b) points into the tube: swap */
    periodic_quads(m.t, nu, nv, 1);
    *out = m;
    return 0;
}

int shapes_trefoil(shapes_mesh *out, unsigned nu, unsigned nv)
{
    /* strands stay >= 1.43 apart and the curvature radius >= 1.43, so a
     * tube of radius 0.35 neither touches itself nor folds */
    return shapes_knot_tube(out, 2, 3, 2.0, 1.0, 0.35, nu, nv);
}

/* ---- box ---------------------------------------------------------------- */

int shapes_box(shapes_mesh *out, const double lo[3], const double hi[3])
{
    memset(out, 0, sizeof *out);
    if (!(lo[0] < hi[0] && lo[1] < hi[1] && lo[2] < hi[2]))
        return -1;
    shapes_mesh m;
    if (mesh_alloc(&m, 8, 12) != 0)
        return -1;
    /* vertex i has x = bit 0, y = bit 1, z = bit 2 */
    for (int i = 0; i < 8; ++i)
        set3(m.v + 3 * i, (i & 1) ? hi[0] : lo[0], (i & 2) ? hi[1] : lo[1],
             (i & 4) ? hi[2] : lo[2]);
    static const uint32_t quad[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4},
                                        {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
    for (int f = 0; f < 6; ++f) {
        tri3(m.t + 6 * f, quad[f][0], quad[f][1], quad[f][2]);
        tri3(m.t + 6 * f + 3, quad[f][0], quad[f][2], quad[f][3]);
    }
    *out = m;
    return 0;
}

/* ---- measures ----------------------------------------------------------- */

static void tri_vectors(const shapes_mesh *m, size_t k, const double **a, double e1[3],
                        double e2[3])
{
    const uint32_t *t = m->t + 3 * k;
    *a = m->v + 3 * (size_t)t[0];
    const double *b = m->v + 3 * (size_t)t[1], *c = m->v + 3 * (size_t)t[2];
    for (int i = 0; i < 3; ++i) {
        e1[i] = b[i] - (*a)[i];
        e2[i] = c[i] - (*a)[i];
    }
}

double shapes_area(const shapes_mesh *m)
{
    double sum = 0.0;
    for (size_t k = 0; k < m->nt; ++k) {
        const double *a;
        double e1[3], e2[3], n[3];
        tri_vectors(m, k, &a, e1, e2);
        cross(e1, e2, n);
        sum += 0.5 * sqrt(dot(n, n));
    }
    return sum;
}

double shapes_volume(const shapes_mesh *m)
{
    /* divergence theorem: sum of a . (e1 x e2) / 6 */
    double sum = 0.0;
    for (size_t k = 0; k < m->nt; ++k) {
        const double *a;
        double e1[3], e2[3], n[3];
        tri_vectors(m, k, &a, e1, e2);
        cross(e1, e2, n);
        sum += dot(a, n) / 6.0;
    }
    return sum;
}

/* ---- files -------------------------------------------------------------- */

static void put_u32(unsigned char *b, uint32_t x)
{
    for (int i = 0; i < 4; ++i)
        b[i] = (unsigned char)(x >> (8 * i));
}

static void put_f32(unsigned char *b, double x)
{
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    put_u32(b, u);
}

int shapes_write_stl_binary(const char *path, const shapes_mesh *m)
{
    if (m->nt > UINT32_MAX)
        return -1;
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    unsigned char head[84] = {0};
    snprintf((char *)head, 80, "libacmlbm shapes.c, %zu triangles", m->nt);
    put_u32(head + 80, (uint32_t)m->nt);
    int ok = fwrite(head, 1, sizeof head, f) == sizeof head;
    for (size_t k = 0; k < m->nt && ok; ++k) {
        /* normal, three corners, attribute bytes: 50 bytes */
        unsigned char rec[50] = {0};
        const double *a;
        double e1[3], e2[3], n[3];
        tri_vectors(m, k, &a, e1, e2);
        cross(e1, e2, n);
        normalize(n);
        for (int i = 0; i < 3; ++i)
            put_f32(rec + 4 * i, n[i]);
        for (int c = 0; c < 3; ++c)
            for (int i = 0; i < 3; ++i)
                put_f32(rec + 12 + 12 * c + 4 * i, m->v[3 * (size_t)m->t[3 * k + c] + i]);
        ok = fwrite(rec, 1, sizeof rec, f) == sizeof rec;
    }
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

int shapes_write_obj(const char *path, const shapes_mesh *m)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    int ok = fprintf(f, "# libacmlbm shapes.c: %zu vertices, %zu triangles\n", m->nv, m->nt) > 0;
    /* 9 significant digits: float precision, as in the STL files */
    for (size_t i = 0; i < m->nv && ok; ++i)
        ok = fprintf(f, "v %.9g %.9g %.9g\n", m->v[3 * i], m->v[3 * i + 1], m->v[3 * i + 2]) > 0;
    for (size_t k = 0; k < m->nt && ok; ++k)
        ok = fprintf(f, "f %u %u %u\n", m->t[3 * k] + 1, m->t[3 * k + 1] + 1,
                     m->t[3 * k + 2] + 1) > 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* ---- several boxes as one mesh ------------------------------------------ */

int shapes_boxes(shapes_mesh *out, const double *lo_hi, size_t count)
{
    memset(out, 0, sizeof *out);
    if (lo_hi == NULL || count == 0 || count > UINT32_MAX / 8)
        return -1;
    shapes_mesh m;
    if (mesh_alloc(&m, 8 * count, 12 * count) != 0)
        return -1;
    for (size_t b = 0; b < count; ++b) {
        shapes_mesh one;
        if (shapes_box(&one, lo_hi + 6 * b, lo_hi + 6 * b + 3) != 0) {
            shapes_free(&m);
            return -1;
        }
        memcpy(m.v + 24 * b, one.v, 24 * sizeof *m.v);
        for (size_t k = 0; k < 36; ++k) /* the box's indices, shifted to its vertices */
            m.t[36 * b + k] = one.t[k] + (uint32_t)(8 * b);
        shapes_free(&one);
    }
    *out = m;
    return 0;
}
