/*
 * libacmlbm tests -- triangle meshes: the array constructor and its
 * geometry, the STL and OBJ readers, and every refusal. A refused input must
 * give the documented status, a message, and leave *out as it was; buffers
 * are passed in heap blocks of exactly their size, so the sanitizer build
 * catches a reader that looks past the end (the input has no NUL).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

#include <stdint.h> /* uintptr_t */
#include <unistd.h> /* close, unlink, write */

/* ---- fixtures ------------------------------------------------------------------ */

/* Unit cube [0,1]^3: vertex x + 2y + 4z, counter-clockwise seen from outside. */
static const double cube_v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                     0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
static const uint32_t cube_t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                        2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};

/* Unit right tetrahedron, outward faces. */
static const double tet_v[4 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
static const uint32_t tet_t[4 * 3] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};

/* The cube as OBJ: quads, several index forms, negative indices, skipped
 * records, CRLF line ends, a byte-order mark, non-UTF-8 bytes in comments. */
static const char cube_obj[] =
    "\xEF\xBB\xBF# cube \xff\xfe caf\xe9\r\n"
    "mtllib cube.mtl\r\n"
    "o cube\r\n"
    "v 0 0 0\r\nv 1 0 0\r\nv 0 1 0\r\nv 1 1 0\r\n"
    "v 0 0 1\r\nv 1 0 1\r\nv 0 1 1\r\nv 1 1 1 1.0\r\n"
    "vt 0 0\r\nvt 1 0\r\nvt 0 1\r\n"
    "vn 0 0 1\r\n"
    "g faces\r\n"
    "usemtl grey\r\n"
    "s off\r\n"
    "\r\n"
    "f 1 3 4 2\r\n"
    "f 5/1 6/2 8/3 7/1\r\n"
    "f 1/1/1 2/2/1 6/3/1 5/1/1\r\n"
    "f 3//1 7//1 8//1 4//1   # trailing comment\r\n"
    "f -8 -4 -2 -6\r\n"         /* relative: vertices 1 5 7 3 */
    "\tf  2 4 8 6\r\n";

/* A square pyramid: a pentagon is split into a fan, so is the base quad. */
static const char pyramid_obj[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 0.5 1\n"
                                  "f 1 4 3 2\n"
                                  "f 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n";

/* ---- helpers ------------------------------------------------------------------- */

/* A pointer value no call may write: *out must keep it on failure. */
#define UNTOUCHED ((acm_mesh *)(uintptr_t)0x5a5a5a50)

static acm_mesh_options options(char *err, size_t size, acm_mesh_format format, uint64_t max)
{
    acm_mesh_options o = ACM_MESH_OPTIONS_INIT;
    o.format = format;
    o.max_triangles = max;
    o.error_buffer = err;
    o.error_buffer_size = size;
    err[0] = '\0';
    return o;
}

/* acm_mesh_load_memory on a heap copy of exactly n bytes. */
static acm_status load_exact(acm_mesh **out, const void *data, size_t n,
                             const acm_mesh_options *o)
{
    void *copy = acm_test_alloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, data, n);
    acm_status st = acm_mesh_load_memory(out, copy, n, o);
    free(copy);
    return st;
}

/* The call gave `expected`, wrote a message and left out untouched. */
#define EXPECT_REFUSED(call, expected, out, err)                                           \
    do {                                                                                   \
        (out) = UNTOUCHED;                                                                 \
        acm_status st_ = (call);                                                           \
        ck_assert_msg(st_ == (expected), "%s -> %s (%d), expected %s: %s", #call,         \
                      acm_status_string(st_), (int)st_, acm_status_string(expected), err); \
        ck_assert_msg((err)[0] != '\0', "%s left no message", #call);                      \
        ck_assert_msg((out) == UNTOUCHED, "%s wrote *out on failure", #call);              \
    } while (0)

/* Load text (its strlen) with a format; expect a refusal whose message
 * contains `where` (a line number or byte offset). */
static void expect_load_refused(const char *text, size_t n, acm_mesh_format format,
                                uint64_t max, acm_status expected, const char *where)
{
    char err[512];
    acm_mesh_options o = options(err, sizeof err, format, max);
    acm_mesh *m;
    EXPECT_REFUSED(load_exact(&m, text, n, &o), expected, m, err);
    if (where != NULL)
        ck_assert_msg(strstr(err, where) != NULL, "message '%s' does not say '%s'", err, where);
}

#define REFUSE_TEXT(text, format, expected, where)                                         \
    expect_load_refused(text, sizeof(text) - 1, format, 0, expected, where)

static acm_mesh_info mesh_info(const acm_mesh *m)
{
    acm_mesh_info i;
    memset(&i, 0, sizeof i);
    i.version = ACM_MESH_INFO_VERSION;
    acm_status st = acm_mesh_get_info(m, &i);
    ck_assert_msg(st == ACM_OK, "get_info: %s", acm_mesh_last_error(m));
    return i;
}

static acm_mesh *create_ok(const double *v, size_t nv, const uint32_t *t, size_t nt)
{
    char err[512];
    acm_mesh_options o = options(err, sizeof err, ACM_MESH_FORMAT_AUTO, 0);
    acm_mesh *m = NULL;
    acm_status st = acm_mesh_create(&m, v, nv, t, nt, &o);
    ck_assert_msg(st == ACM_OK, "acm_mesh_create: %s: %s", acm_status_string(st), err);
    return m;
}

static acm_mesh *load_ok(const void *data, size_t n, acm_mesh_format format)
{
    char err[512];
    acm_mesh_options o = options(err, sizeof err, format, 0);
    acm_mesh *m = NULL;
    acm_status st = load_exact(&m, data, n, &o);
    ck_assert_msg(st == ACM_OK, "load (format %d): %s: %s", (int)format, acm_status_string(st),
                  err);
    return m;
}

#define TOL 1e-12

/* Volume, area, centroid and inertia of an axis-aligned box of sides s
 * whose low corner is lo, closed and outward. */
static void expect_box(const acm_mesh_info *i, const double lo[3], const double s[3])
{
    double vol = s[0] * s[1] * s[2];
    ck_assert_int_eq(i->closed, 1);
    ck_assert_double_eq_tol(i->volume, vol, TOL);
    ck_assert_double_eq_tol(i->area, 2 * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]), TOL);
    for (int k = 0; k < 3; ++k) {
        ck_assert_double_eq_tol(i->centroid[k], lo[k] + s[k] / 2, TOL);
        ck_assert_double_eq_tol(i->bbox_min[k], lo[k], TOL);
        ck_assert_double_eq_tol(i->bbox_max[k], lo[k] + s[k], TOL);
    }
    ck_assert_double_eq_tol(i->inertia[0], vol * (s[1] * s[1] + s[2] * s[2]) / 12, TOL);
    ck_assert_double_eq_tol(i->inertia[1], vol * (s[0] * s[0] + s[2] * s[2]) / 12, TOL);
    ck_assert_double_eq_tol(i->inertia[2], vol * (s[0] * s[0] + s[1] * s[1]) / 12, TOL);
    for (int k = 3; k < 6; ++k)
        ck_assert_double_eq_tol(i->inertia[k], 0.0, TOL);
}

static void expect_unit_cube(const acm_mesh *m)
{
    acm_mesh_info i = mesh_info(m);
    ck_assert_uint_eq(i.vertex_count, 8);
    ck_assert_uint_eq(i.triangle_count, 12);
    const double lo[3] = {0, 0, 0}, s[3] = {1, 1, 1};
    expect_box(&i, lo, s);
}

/* Binary STL of triangles t over v (float32, little-endian); free() it. */
static unsigned char *stl_binary(const double *v, const uint32_t *t, size_t nt, size_t *size)
{
    *size = 84 + 50 * nt;
    unsigned char *b = acm_test_alloc(*size);
    memcpy(b, "binary STL written by test-mesh", 31);
    for (int k = 0; k < 4; ++k)
        b[80 + k] = (unsigned char)(nt >> (8 * k));
    for (size_t f = 0; f < nt; ++f) {
        unsigned char *p = b + 84 + 50 * f + 12; /* normal left 0 */
        for (int c = 0; c < 3; ++c) {
            for (int k = 0; k < 3; ++k, p += 4) {
                float x = (float)v[3 * t[3 * f + c] + k];
                uint32_t bits;
                memcpy(&bits, &x, sizeof bits);
                for (int j = 0; j < 4; ++j)
                    p[j] = (unsigned char)(bits >> (8 * j));
            }
        }
    }
    return b;
}

/* Set coordinate c (0..8) of facet f of a binary STL. */
static void stl_binary_set(unsigned char *b, size_t f, int c, float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    for (int j = 0; j < 4; ++j)
        b[84 + 50 * f + 12 + 4 * c + j] = (unsigned char)(bits >> (8 * j));
}

/* ASCII STL of triangles [first, last) of t over v, as one solid. */
static void stl_ascii_solid(char *buf, size_t size, const char *name, const char *eol,
                            const double *v, const uint32_t *t, size_t first, size_t last)
{
    size_t n = strlen(buf);
    n += (size_t)snprintf(buf + n, size - n, "solid %s%s", name, eol);
    for (size_t f = first; f < last; ++f) {
        n += (size_t)snprintf(buf + n, size - n, "  FaCeT NoRmAl 0 0 0%s\touter loop%s", eol,
                              eol);
        for (int c = 0; c < 3; ++c) {
            const double *x = v + 3 * t[3 * f + c];
            n += (size_t)snprintf(buf + n, size - n, "    vertex  %.17g %.17g\t%.17g %s", x[0],
                                  x[1], x[2], eol);
        }
        n += (size_t)snprintf(buf + n, size - n, "  endloop%sendfacet%s", eol, eol);
    }
    n += (size_t)snprintf(buf + n, size - n, "endsolid %s%s", name, eol);
    ck_assert_uint_lt(n, size);
}

/* Write data to a fresh temporary file; its name goes to path. */
static void write_temp(const void *data, size_t n, char path[64])
{
    snprintf(path, 64, "/tmp/acm-mesh-test-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
    close(fd);
}

/* ---- options and the array constructor ------------------------------------------ */

START_TEST(options_init)
{
    acm_mesh_options o, def = ACM_MESH_OPTIONS_INIT;
    memset(&o, 0x5a, sizeof o);
    ck_assert_int_eq(acm_mesh_options_init(&o, ACM_MESH_OPTIONS_VERSION), ACM_OK);
    ck_assert_int_eq(memcmp(&o, &def, sizeof o), 0);
    ck_assert_int_eq(acm_mesh_options_init(NULL, 1), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_mesh_options_init(&o, 0), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(acm_mesh_options_init(&o, 2), ACM_ERR_BAD_VERSION);
    acm_mesh_destroy(NULL);
    ck_assert_str_eq(acm_mesh_last_error(NULL), "mesh is NULL");
}
END_TEST

START_TEST(cube_geometry)
{
    acm_mesh *m = create_ok(cube_v, 8, cube_t, 12);
    expect_unit_cube(m);
    ck_assert_uint_eq(mesh_info(m).degenerate_triangles, 0);
    ck_assert_str_eq(acm_mesh_last_error(m), "");
    double v[8 * 3];
    uint32_t t[12 * 3];
    ck_assert_int_eq(acm_mesh_get_vertices(m, v, 8), ACM_OK);
    ck_assert_int_eq(acm_mesh_get_triangles(m, t, 12), ACM_OK);
    ck_assert_int_eq(memcmp(v, cube_v, sizeof v), 0);
    ck_assert_int_eq(memcmp(t, cube_t, sizeof t), 0);
    acm_mesh_destroy(m);

    /* NULL options are the defaults */
    m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, cube_v, 8, cube_t, 12, NULL), ACM_OK);
    acm_mesh_destroy(m);
}
END_TEST

/* A box away from the origin with unequal sides: the reference point and
 * scaling of the sums must not show. */
START_TEST(box_geometry)
{
    const double lo[3] = {1e3, -5.0, 0.25}, s[3] = {2.0, 1.0, 0.5};
    double v[8 * 3];
    for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 3; ++k)
            v[3 * i + k] = lo[k] + s[k] * cube_v[3 * i + k];
    acm_mesh *m = create_ok(v, 8, cube_t, 12);
    acm_mesh_info i = mesh_info(m);
    expect_box(&i, lo, s);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(tetrahedron_geometry)
{
    acm_mesh *m = create_ok(tet_v, 4, tet_t, 4);
    acm_mesh_info i = mesh_info(m);
    ck_assert_int_eq(i.closed, 1);
    ck_assert_double_eq_tol(i.volume, 1.0 / 6, TOL);
    ck_assert_double_eq_tol(i.area, 1.5 + sqrt(3.0) / 2, TOL);
    for (int k = 0; k < 3; ++k)
        ck_assert_double_eq_tol(i.centroid[k], 0.25, TOL);
    /* about the centroid: x^2 -> 1/60 - V/16 = 1/160, xy -> 1/120 - V/16 = -1/480 */
    for (int k = 0; k < 3; ++k)
        ck_assert_double_eq_tol(i.inertia[k], 2.0 / 160, TOL);
    for (int k = 3; k < 6; ++k)
        ck_assert_double_eq_tol(i.inertia[k], 1.0 / 480, TOL);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(reversed_winding)
{
    uint32_t t[12 * 3];
    for (int f = 0; f < 12; ++f) {
        t[3 * f] = cube_t[3 * f];
        t[3 * f + 1] = cube_t[3 * f + 2];
        t[3 * f + 2] = cube_t[3 * f + 1];
    }
    acm_mesh *m = create_ok(cube_v, 8, t, 12);
    acm_mesh_info i = mesh_info(m);
    ck_assert_int_eq(i.closed, 1);
    ck_assert_double_eq_tol(i.volume, -1.0, TOL);
    ck_assert_double_eq_tol(i.area, 6.0, TOL);
    for (int k = 0; k < 3; ++k)
        ck_assert_double_eq_tol(i.centroid[k], 0.5, TOL); /* of the surface */
    for (int k = 0; k < 6; ++k)
        ck_assert_double_eq(i.inertia[k], 0.0);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(open_mesh)
{
    /* without the two top triangles (z = 1) */
    uint32_t t[10 * 3];
    memcpy(t, cube_t, 6 * sizeof *t);
    memcpy(t + 6, cube_t + 12, 24 * sizeof *t);
    acm_mesh *m = create_ok(cube_v, 8, t, 10);
    acm_mesh_info i = mesh_info(m);
    ck_assert_int_eq(i.closed, 0);
    ck_assert_double_eq_tol(i.area, 5.0, TOL);
    ck_assert_double_eq_tol(i.centroid[0], 0.5, TOL);
    ck_assert_double_eq_tol(i.centroid[1], 0.5, TOL);
    ck_assert_double_eq_tol(i.centroid[2], 0.4, TOL); /* 4 sides at 0.5, the bottom at 0 */
    for (int k = 0; k < 6; ++k)
        ck_assert_double_eq(i.inertia[k], 0.0);
    acm_mesh_destroy(m);

    /* an edge shared by three triangles is not closed either */
    uint32_t t3[13 * 3];
    memcpy(t3, cube_t, sizeof cube_t);
    const uint32_t fin[3] = {0, 3, 7};
    memcpy(t3 + 36, fin, sizeof fin);
    m = create_ok(cube_v, 8, t3, 13);
    ck_assert_int_eq(mesh_info(m).closed, 0);
    acm_mesh_destroy(m);
}
END_TEST

/* Degenerate triangles and unused vertices go; a triangle soup (every
 * triangle with its own corners) is closed once welded. */
START_TEST(degenerate_and_soup)
{
    double v[10 * 3];
    memcpy(v, cube_v, sizeof cube_v);
    const double extra[6] = {2, 0, 0, 9, 9, 9}; /* 8: collinear with 0 and 1; 9: unused */
    memcpy(v + 24, extra, sizeof extra);
    uint32_t t[14 * 3];
    memcpy(t, cube_t, sizeof cube_t);
    const uint32_t bad[6] = {0, 0, 1, 0, 1, 8};
    memcpy(t + 36, bad, sizeof bad);
    acm_mesh *m = create_ok(v, 10, t, 14);
    acm_mesh_info i = mesh_info(m);
    ck_assert_uint_eq(i.degenerate_triangles, 2);
    expect_unit_cube(m);
    acm_mesh_destroy(m);

    double soup[36 * 3];
    uint32_t st[36];
    for (int c = 0; c < 36; ++c) {
        memcpy(soup + 3 * c, cube_v + 3 * cube_t[c], 3 * sizeof(double));
        st[c] = (uint32_t)c;
    }
    m = create_ok(soup, 36, st, 12);
    i = mesh_info(m);
    ck_assert_uint_eq(i.vertex_count, 36);
    ck_assert_int_eq(i.closed, 1);
    ck_assert_double_eq_tol(i.volume, 1.0, TOL);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(create_errors)
{
    char err[512];
    acm_mesh_options o = options(err, sizeof err, ACM_MESH_FORMAT_AUTO, 0);
    acm_mesh *m;
    acm_mesh **none = NULL;

    EXPECT_REFUSED(acm_mesh_create(none, cube_v, 8, cube_t, 12, &o), ACM_ERR_NULL_POINTER, m,
                   err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, NULL, 8, cube_t, 12, &o), ACM_ERR_NULL_POINTER, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, NULL, 12, &o), ACM_ERR_NULL_POINTER, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 0, cube_t, 12, &o), ACM_ERR_OUT_OF_RANGE, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 2, cube_t, 1, &o), ACM_ERR_OUT_OF_RANGE, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, cube_t, 0, &o), ACM_ERR_OUT_OF_RANGE, m, err);

    double v[8 * 3];
    const double bad_values[3] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; ++b) {
        memcpy(v, cube_v, sizeof v);
        v[3 * 5 + 1] = bad_values[b];
        err[0] = '\0';
        EXPECT_REFUSED(acm_mesh_create(&m, v, 8, cube_t, 12, &o), ACM_ERR_OUT_OF_RANGE, m, err);
        ck_assert_msg(strstr(err, "vertex 5") != NULL, "message: %s", err);
    }

    uint32_t t[12 * 3];
    memcpy(t, cube_t, sizeof t);
    t[17] = 8;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, t, 12, &o), ACM_ERR_OUT_OF_RANGE, m, err);
    ck_assert_msg(strstr(err, "triangle 5") != NULL, "message: %s", err);

    /* nothing left once the degenerate triangles are gone */
    const uint32_t degenerate[6] = {0, 0, 1, 0, 1, 1};
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, degenerate, 2, &o), ACM_ERR_INVALID_ARG, m,
                   err);
    const double line[9] = {0, 0, 0, 1, 1, 1, 3, 3, 3};
    const uint32_t flat[3] = {0, 1, 2};
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, line, 3, flat, 1, &o), ACM_ERR_INVALID_ARG, m, err);

    /* coordinates whose inertia (fifth power) overflows a double */
    for (int i = 0; i < 24; ++i)
        v[i] = 1e200 * cube_v[i];
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, v, 8, cube_t, 12, &o), ACM_ERR_OUT_OF_RANGE, m, err);
    /* and so small that the area underflows to 0 */
    for (int i = 0; i < 24; ++i)
        v[i] = 1e-200 * cube_v[i];
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, v, 8, cube_t, 12, &o), ACM_ERR_OUT_OF_RANGE, m, err);
    /* tiny but representable: fine */
    for (int i = 0; i < 24; ++i)
        v[i] = 1e-100 * cube_v[i];
    m = create_ok(v, 8, cube_t, 12);
    ck_assert_double_eq_tol(mesh_info(m).area / 6e-200, 1.0, 1e-12);
    acm_mesh_destroy(m);

    o.max_triangles = 11;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, cube_t, 12, &o), ACM_ERR_LIMIT, m, err);
    o.max_triangles = 12;
    m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, cube_v, 8, cube_t, 12, &o), ACM_OK);
    acm_mesh_destroy(m);

    o.version = 2;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, cube_t, 12, &o), ACM_ERR_BAD_VERSION, m, err);
    o.version = 0;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_create(&m, cube_v, 8, cube_t, 12, &o), ACM_ERR_BAD_VERSION, m, err);

    /* a size without a buffer: nowhere to write the message */
    acm_mesh_options nobuf = ACM_MESH_OPTIONS_INIT;
    nobuf.error_buffer_size = 16;
    m = UNTOUCHED;
    ck_assert_int_eq(acm_mesh_create(&m, cube_v, 8, cube_t, 12, &nobuf), ACM_ERR_INVALID_ARG);
    ck_assert_ptr_eq(m, UNTOUCHED);
}
END_TEST

START_TEST(getter_errors)
{
    acm_mesh *m = create_ok(cube_v, 8, cube_t, 12);
    double v[9 * 3];
    uint32_t t[13 * 3];
    ck_assert_int_eq(acm_mesh_get_vertices(m, v, 9), ACM_ERR_BUFFER_SIZE);
    ck_assert_str_ne(acm_mesh_last_error(m), "");
    ck_assert_int_eq(acm_mesh_get_vertices(m, NULL, 8), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_mesh_get_triangles(m, t, 13), ACM_ERR_BUFFER_SIZE);
    ck_assert_int_eq(acm_mesh_get_triangles(m, NULL, 12), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_mesh_get_vertices(NULL, v, 8), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_mesh_get_triangles(NULL, t, 12), ACM_ERR_NULL_POINTER);
    ck_assert_int_eq(acm_mesh_get_info(m, NULL), ACM_ERR_NULL_POINTER);

    acm_mesh_info i, ref;
    memset(&i, 0x5a, sizeof i);
    i.version = 2;
    ref = i;
    ck_assert_int_eq(acm_mesh_get_info(m, &i), ACM_ERR_BAD_VERSION);
    ck_assert_int_eq(memcmp(&i, &ref, sizeof i), 0);
    ck_assert_msg(strstr(acm_mesh_last_error(m), "version 2") != NULL, "%s",
                  acm_mesh_last_error(m));
    ck_assert_int_eq(acm_mesh_get_info(NULL, &i), ACM_ERR_NULL_POINTER);
    acm_mesh_destroy(m);
}
END_TEST

/* ---- STL ------------------------------------------------------------------------ */

START_TEST(stl_binary_round_trip)
{
    size_t n = 0;
    unsigned char *b = stl_binary(cube_v, cube_t, 12, &n);
    const acm_mesh_format formats[2] = {ACM_MESH_FORMAT_AUTO, ACM_MESH_FORMAT_STL};
    for (int f = 0; f < 2; ++f) {
        acm_mesh *m = load_ok(b, n, formats[f]);
        expect_unit_cube(m); /* 36 corners welded to 8 vertices */
        acm_mesh_destroy(m);
    }
    /* a header starting with "solid", as some writers do */
    memcpy(b, "solid cube", 10);
    acm_mesh *m = load_ok(b, n, ACM_MESH_FORMAT_AUTO);
    expect_unit_cube(m);
    acm_mesh_destroy(m);

    /* and from a file */
    char path[64], err[512];
    write_temp(b, n, path);
    acm_mesh_options o = options(err, sizeof err, ACM_MESH_FORMAT_AUTO, 0);
    m = NULL;
    acm_status st = acm_mesh_load(&m, path, &o);
    unlink(path);
    ck_assert_msg(st == ACM_OK, "acm_mesh_load: %s", err);
    expect_unit_cube(m);
    acm_mesh_destroy(m);
    free(b);
}
END_TEST

START_TEST(stl_binary_hostile)
{
    size_t n = 0;
    unsigned char *b = stl_binary(cube_v, cube_t, 12, &n);
    /* truncated: the size no longer matches the count */
    expect_load_refused((const char *)b, n - 7, ACM_MESH_FORMAT_STL, 0, ACM_ERR_BAD_FORMAT,
                        "byte 80");
    expect_load_refused((const char *)b, n - 7, ACM_MESH_FORMAT_AUTO, 0, ACM_ERR_BAD_FORMAT,
                        "binary STL");
    expect_load_refused((const char *)b, 50, ACM_MESH_FORMAT_STL, 0, ACM_ERR_BAD_FORMAT, NULL);
    /* one byte too many */
    unsigned char *longer = acm_test_alloc(n + 1);
    memcpy(longer, b, n);
    expect_load_refused((const char *)longer, n + 1, ACM_MESH_FORMAT_STL, 0,
                        ACM_ERR_BAD_FORMAT, "byte 80");
    free(longer);

    /* an absurd count in a tiny file: refused before any allocation */
    unsigned char tiny[84 + 50];
    memcpy(tiny, b, sizeof tiny);
    memset(tiny + 80, 0xff, 4);
    expect_load_refused((const char *)tiny, sizeof tiny, ACM_MESH_FORMAT_STL, 0,
                        ACM_ERR_BAD_FORMAT, "4294967295");
    expect_load_refused((const char *)tiny, sizeof tiny, ACM_MESH_FORMAT_AUTO, 0,
                        ACM_ERR_BAD_FORMAT, "4294967295");

    /* a count of 0 */
    unsigned char empty[84];
    memset(empty, 0, sizeof empty);
    expect_load_refused((const char *)empty, sizeof empty, ACM_MESH_FORMAT_STL, 0,
                        ACM_ERR_BAD_FORMAT, "byte 80");

    /* NaN and infinite coordinates, with the offset of the bad float */
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; ++k) {
        unsigned char *c = stl_binary(cube_v, cube_t, 12, &n);
        stl_binary_set(c, 3, 4, bad[k]);
        expect_load_refused((const char *)c, n, ACM_MESH_FORMAT_STL, 0, ACM_ERR_BAD_FORMAT,
                            "byte 262"); /* 84 + 3 * 50 + 12 + 4 * 4 */
        free(c);
    }

    /* every facet degenerate */
    unsigned char *d = stl_binary(cube_v, cube_t, 12, &n);
    for (size_t f = 0; f < 12; ++f)
        for (int c = 0; c < 9; ++c)
            stl_binary_set(d, f, c, 1.0f);
    expect_load_refused((const char *)d, n, ACM_MESH_FORMAT_STL, 0, ACM_ERR_BAD_FORMAT,
                        "degenerate");
    free(d);

    /* the limit */
    expect_load_refused((const char *)b, n, ACM_MESH_FORMAT_STL, 11, ACM_ERR_LIMIT, "byte 80");
    free(b);
}
END_TEST

START_TEST(stl_ascii)
{
    static char buf[16384];
    /* two solids of 6 facets each, CRLF, odd whitespace and case, a name with
     * non-UTF-8 bytes */
    buf[0] = '\0';
    stl_ascii_solid(buf, sizeof buf, "half\xff\xfe one", "\r\n", cube_v, cube_t, 0, 6);
    stl_ascii_solid(buf, sizeof buf, "", "\r\n", cube_v, cube_t, 6, 12);
    const acm_mesh_format formats[2] = {ACM_MESH_FORMAT_AUTO, ACM_MESH_FORMAT_STL};
    for (int f = 0; f < 2; ++f) {
        acm_mesh *m = load_ok(buf, strlen(buf), formats[f]);
        expect_unit_cube(m);
        acm_mesh_destroy(m);
    }

    /* upper-case keywords, "facet" without a normal, blank lines, no final newline */
    static const char upper[] =
        "SOLID x\n\n FACET\n OUTER LOOP\n VERTEX 0 0 0\n VERTEX 1 0 0\n VERTEX 0 1 0\n"
        " ENDLOOP\n ENDFACET\n\nENDSOLID";
    acm_mesh *m = load_ok(upper, sizeof upper - 1, ACM_MESH_FORMAT_AUTO);
    acm_mesh_info i = mesh_info(m);
    ck_assert_uint_eq(i.triangle_count, 1);
    ck_assert_int_eq(i.closed, 0);
    ck_assert_double_eq_tol(i.area, 0.5, TOL);
    acm_mesh_destroy(m);
}
END_TEST

#define FACET_HEAD "solid t\nfacet normal 0 0 1\n outer loop\n"
#define FACET_TAIL " endloop\nendfacet\nendsolid t\n"

START_TEST(stl_ascii_hostile)
{
    const acm_mesh_format stl = ACM_MESH_FORMAT_STL;
    /* missing endloop */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendfacet\nendsolid\n", stl,
                ACM_ERR_BAD_FORMAT, "line 7: expected 'endloop', found 'endfacet'");
    /* a fourth vertex */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nvertex 1 1 0\n" FACET_TAIL,
                stl, ACM_ERR_BAD_FORMAT, "line 7");
    /* two vertices */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\n" FACET_TAIL, stl, ACM_ERR_BAD_FORMAT,
                "line 6");
    /* NaN, infinite and overflowing coordinates */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex nan 0 0\nvertex 0 1 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 5: coordinate 'nan' is not finite");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 -inf 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 6");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1e999 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 6");
    /* not a number, a number glued to junk, a missing and an extra coordinate */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 x\nvertex 0 1 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 5");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\xff\nvertex 0 1 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 5");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0\nvertex 0 1 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 5");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 4");
    /* a NUL inside a number (the reader copies tokens, it must not stop early) */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1\0002 0\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "line 6: '1?2' is not a number");
    /* ends inside a facet, or without endsolid */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\n", stl, ACM_ERR_BAD_FORMAT,
                "expected");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n endloop\nendfacet\n",
                stl, ACM_ERR_BAD_FORMAT, "'facet' or 'endsolid'");
    /* junk after endsolid, bad facet and loop lines */
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n" FACET_TAIL "junk\n", stl,
                ACM_ERR_BAD_FORMAT, "line 10");
    REFUSE_TEXT("solid t\nfacet norma 0 0 1\n", stl, ACM_ERR_BAD_FORMAT, "line 2");
    REFUSE_TEXT("solid t\nfacet normal 0 0\n", stl, ACM_ERR_BAD_FORMAT, "line 2");
    REFUSE_TEXT("solid t\nfacet normal 0 0 1\nouter\n", stl, ACM_ERR_BAD_FORMAT, "line 3");
    REFUSE_TEXT("solid t\nfacet normal 0 0 1\nouter loop extra\n", stl, ACM_ERR_BAD_FORMAT,
                "line 3");
    /* no facet at all, and all degenerate */
    REFUSE_TEXT("solid t\nendsolid t\n", stl, ACM_ERR_BAD_FORMAT, "no facet");
    REFUSE_TEXT(FACET_HEAD "vertex 0 0 0\nvertex 1 1 1\nvertex 2 2 2\n" FACET_TAIL, stl,
                ACM_ERR_BAD_FORMAT, "degenerate");
    /* "solid" alone: not ASCII for AUTO, so read as OBJ, which finds no face */
    REFUSE_TEXT("solid t\n", ACM_MESH_FORMAT_AUTO, ACM_ERR_BAD_FORMAT, "OBJ");
    REFUSE_TEXT("solid t\n", stl, ACM_ERR_BAD_FORMAT, "ASCII STL");
    /* not STL at all */
    REFUSE_TEXT("v 0 0 0\n", stl, ACM_ERR_BAD_FORMAT, "binary STL");

    /* the limit */
    static char buf[16384];
    buf[0] = '\0';
    stl_ascii_solid(buf, sizeof buf, "c", "\n", cube_v, cube_t, 0, 12);
    expect_load_refused(buf, strlen(buf), stl, 11, ACM_ERR_LIMIT, "max_triangles=11");
}
END_TEST

/* ---- OBJ ------------------------------------------------------------------------ */

START_TEST(obj_read)
{
    const acm_mesh_format formats[2] = {ACM_MESH_FORMAT_AUTO, ACM_MESH_FORMAT_OBJ};
    for (int f = 0; f < 2; ++f) {
        acm_mesh *m = load_ok(cube_obj, sizeof cube_obj - 1, formats[f]);
        expect_unit_cube(m);
        acm_mesh_destroy(m);
    }
    acm_mesh *m = load_ok(pyramid_obj, sizeof pyramid_obj - 1, ACM_MESH_FORMAT_OBJ);
    acm_mesh_info i = mesh_info(m);
    ck_assert_uint_eq(i.triangle_count, 6);
    ck_assert_int_eq(i.closed, 1);
    ck_assert_double_eq_tol(i.volume, 1.0 / 3, TOL);
    ck_assert_double_eq_tol(i.centroid[2], 0.25, TOL);
    acm_mesh_destroy(m);

    /* forward references, vertex colours, a pentagon fan, unused vertices */
    static const char fwd[] = "f 1 2 3 4 5\n"
                              "v 0 0 0 1 0 0\nv 2 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\nv 7 7 7\n";
    m = load_ok(fwd, sizeof fwd - 1, ACM_MESH_FORMAT_AUTO);
    i = mesh_info(m);
    ck_assert_uint_eq(i.triangle_count, 3);
    ck_assert_uint_eq(i.vertex_count, 5);
    ck_assert_double_eq_tol(i.area, 3.0, TOL);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(obj_hostile)
{
    const acm_mesh_format obj = ACM_MESH_FORMAT_OBJ;
    const acm_mesh_format any = ACM_MESH_FORMAT_AUTO;
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", obj, ACM_ERR_BAD_FORMAT,
                "line 4: vertex index 0");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", obj, ACM_ERR_BAD_FORMAT,
                "line 4: vertex index 4");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999999\n", obj,
                ACM_ERR_BAD_FORMAT, "line 4");
    REFUSE_TEXT("f -1 -2 -3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", obj, ACM_ERR_BAD_FORMAT,
                "line 1: relative vertex index -1");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -4\n", obj, ACM_ERR_BAD_FORMAT, "line 4");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", obj, ACM_ERR_BAD_FORMAT,
                "line 4: a face needs 3");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\nf\n", obj, ACM_ERR_BAD_FORMAT, "line 4");
    static const char *const refs[] = {"1/", "1/2/", "1//", "1/2/3/4", "a", "-", "1x", "/1",
                                       "1/x", "1//x", "+1"};
    for (size_t r = 0; r < sizeof refs / sizeof *refs; ++r) {
        char text[128];
        int n = snprintf(text, sizeof text, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 %s\n", refs[r]);
        expect_load_refused(text, (size_t)n, obj, 0, ACM_ERR_BAD_FORMAT, "line 4");
    }
    REFUSE_TEXT("v 0 0 0\nv 1 0 nan\nv 0 1 0\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT,
                "line 2: coordinate 'nan' is not finite");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv inf 1 0\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT, "line 3");
    REFUSE_TEXT("v 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT, "line 2");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0 1 2\nv 0 1 0\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT, "line 2");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0 1 2 3 4\nv 0 1 0\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT,
                "line 2");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 \xff\xfe\nf 1 2 3\n", obj, ACM_ERR_BAD_FORMAT,
                "line 3");
    /* only comments and other records, with non-UTF-8 bytes */
    REFUSE_TEXT("# a comment \xff\xfe\xfd\n# another\r\n\r\nvn 0 0 1\ng x\xc3\x28\n", any,
                ACM_ERR_BAD_FORMAT, "no face");
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 0 1 0\n", obj, ACM_ERR_BAD_FORMAT, "no face");
    /* degenerate only */
    REFUSE_TEXT("v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\nf 1 1 2\n", obj, ACM_ERR_BAD_FORMAT,
                "degenerate");
    REFUSE_TEXT("v 0 0 0\nf 1 1 1\n", obj, ACM_ERR_BAD_FORMAT, "degenerate");
    /* the limit counts fan triangles: a hexagon makes 4 */
    static const char hexagon[] = "v 0 0 0\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 2 0\nv -1 1 0\n"
                                  "f 1 2 3 4 5 6\n";
    expect_load_refused(hexagon, sizeof hexagon - 1, obj, 3, ACM_ERR_LIMIT, "line 7");
    expect_load_refused(cube_obj, sizeof cube_obj - 1, obj, 11, ACM_ERR_LIMIT, "line 25");
}
END_TEST

/* ---- inputs and files ----------------------------------------------------------- */

START_TEST(load_errors)
{
    char err[512];
    acm_mesh *m;
    acm_mesh_options o = options(err, sizeof err, ACM_MESH_FORMAT_AUTO, 0);
    const acm_mesh_format formats[3] = {ACM_MESH_FORMAT_AUTO, ACM_MESH_FORMAT_STL,
                                        ACM_MESH_FORMAT_OBJ};
    for (int f = 0; f < 3; ++f)
        expect_load_refused("", 0, formats[f], 0, ACM_ERR_BAD_FORMAT, "empty");
    EXPECT_REFUSED(acm_mesh_load_memory(&m, NULL, 10, &o), ACM_ERR_NULL_POINTER, m, err);
    acm_mesh **none = NULL;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load_memory(none, cube_obj, 10, &o), ACM_ERR_NULL_POINTER, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load(&m, NULL, &o), ACM_ERR_NULL_POINTER, m, err);
    o.format = (acm_mesh_format)3;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load_memory(&m, cube_obj, sizeof cube_obj - 1, &o),
                   ACM_ERR_BAD_ENUM, m, err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load(&m, "/nonexistent", &o), ACM_ERR_BAD_ENUM, m, err);
    o.format = ACM_MESH_FORMAT_AUTO;
    o.version = 7;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load_memory(&m, cube_obj, sizeof cube_obj - 1, &o),
                   ACM_ERR_BAD_VERSION, m, err);
    o.version = ACM_MESH_OPTIONS_VERSION;

    /* NULL options: the defaults */
    m = NULL;
    ck_assert_int_eq(acm_mesh_load_memory(&m, cube_obj, sizeof cube_obj - 1, NULL), ACM_OK);
    acm_mesh_destroy(m);
}
END_TEST

START_TEST(file_errors)
{
    char err[512], path[64];
    acm_mesh *m;
    acm_mesh_options o = options(err, sizeof err, ACM_MESH_FORMAT_AUTO, 0);
    EXPECT_REFUSED(acm_mesh_load(&m, "/nonexistent/dir/mesh.stl", &o), ACM_ERR_IO, m, err);
    ck_assert_msg(strstr(err, "mesh.stl") != NULL, "%s", err);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load(&m, "/tmp", &o), ACM_ERR_IO, m, err);

    /* an empty file, and the file name in a format error */
    write_temp("", 0, path);
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load(&m, path, &o), ACM_ERR_BAD_FORMAT, m, err);
    ck_assert_msg(strstr(err, path) != NULL, "%s", err);
    unlink(path);

    /* larger than the bound of max_triangles = 1 (1 MiB + 1 KiB) */
    size_t n = (1u << 20) + 4096;
    char *big = acm_test_alloc(n);
    memset(big, '#', n);
    write_temp(big, n, path);
    free(big);
    o.max_triangles = 1;
    err[0] = '\0';
    EXPECT_REFUSED(acm_mesh_load(&m, path, &o), ACM_ERR_LIMIT, m, err);
    unlink(path);

    /* an OBJ file read back in chunks larger than the first read */
    n = 200000;
    big = acm_test_alloc(n + sizeof pyramid_obj);
    memset(big, ' ', n);
    big[n - 1] = '\n';
    memcpy(big + n, pyramid_obj, sizeof pyramid_obj - 1);
    write_temp(big, n + sizeof pyramid_obj - 1, path);
    free(big);
    o.max_triangles = 0;
    m = NULL;
    acm_status st = acm_mesh_load(&m, path, &o);
    unlink(path);
    ck_assert_msg(st == ACM_OK, "%s", err);
    ck_assert_uint_eq(mesh_info(m).triangle_count, 6);
    acm_mesh_destroy(m);
}
END_TEST

TEST_SUITE(mesh_suite)
{
    Suite *s = suite_create("mesh");
    TCase *tc = acm_tcase("create", 30);
    tcase_add_test(tc, options_init);
    tcase_add_test(tc, cube_geometry);
    tcase_add_test(tc, box_geometry);
    tcase_add_test(tc, tetrahedron_geometry);
    tcase_add_test(tc, reversed_winding);
    tcase_add_test(tc, open_mesh);
    tcase_add_test(tc, degenerate_and_soup);
    tcase_add_test(tc, create_errors);
    tcase_add_test(tc, getter_errors);
    suite_add_tcase(s, tc);

    tc = acm_tcase("readers", 30);
    tcase_add_test(tc, stl_binary_round_trip);
    tcase_add_test(tc, stl_binary_hostile);
    tcase_add_test(tc, stl_ascii);
    tcase_add_test(tc, stl_ascii_hostile);
    tcase_add_test(tc, obj_read);
    tcase_add_test(tc, obj_hostile);
    tcase_add_test(tc, load_errors);
    tcase_add_test(tc, file_errors);
    suite_add_tcase(s, tc);
    return s;
}
