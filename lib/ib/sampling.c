/*
 * libacmlbm -- Poisson-disk sampling of a triangle surface by weighted sample
 * elimination (C. Yuksel, "Sample Elimination for Generating Poisson Disk
 * Sample Sets", Eurographics 2015), adapted to surfaces:
 *
 *   1. N = max(1, round(density * A)) is checked against the limits before
 *      anything is allocated;
 *   2. M = 5N candidates are drawn uniformly by area (binary search in the
 *      cumulative area table, then uniform barycentric coordinates);
 *   3. every candidate gets the weight sum_j (1 - d_ij / 2r_max)^8 over its
 *      neighbours within 2 r_max, with d_ij clamped below at
 *      r_min = r_max (1 - (N/M)^1.5) 0.65 (the paper's weight limiting);
 *   4. the heaviest candidate is removed and its weight subtracted from its
 *      neighbours, until N remain: a binary max-heap with decrease-key,
 *      preceded by "bands" that make most of the same removals in spatial
 *      order (see there). O(M log M) time, O(M) memory (about 80 bytes a
 *      candidate with the output, 400 a sample; docs/performance.md).
 *
 * r_max is the radius of N equal disks packed hexagonally on area A (the
 * paper's 2-D bound): r_max = sqrt(A / (2 sqrt(3) N)); two such samples are
 * 2 r_max apart. Distances are 3-D Euclidean, which on a curved surface is at
 * most the geodesic one.
 *
 * Minimum distance: the method keeps no hard distance, but the elimination
 * removes the most crowded candidates first, and the weight limiting makes
 * it treat every pair closer than r_min alike. Measured min_distance / r_max
 * (seeds 1..50, 5 for N = 50 000): 1.26 to 1.45 on a square, 1.22 to 1.34 on
 * an icosphere, 1.18 to 1.36 on a torus, 1.07 to 1.17 on the trefoil tube at
 * N = 50 (its spacing then exceeds the tube's radius) and 1.23 to 1.27 from
 * N = 500 on, 1.27 to 2.2 on strips down to a tenth of r_max wide; it tends
 * to 1.26 (Yuksel's relative radius 0.63) as N grows. The tests check
 * ACM_SAMPLE_MIN_DISTANCE_RATIO (1.0, sampling.h). Coverage, the distance
 * from a point of a unit square to its nearest sample: at most 2.2 r_max
 * inside, 2.6 r_max at the edges (N = 1000, seeds 1..30).
 *
 * Neighbour search: a uniform grid of cell size 2 r_max. Blocks of 4x4x4
 * cells hash to slots of 64 buckets; the points are sorted by bucket (a
 * counting sort), slot after slot in the Z-order of their blocks, so that the
 * array is in spatial order. Points of a far block sharing a slot are
 * rejected by their distance; a bucket reached through two of the 27 cells
 * is scanned once.
 *
 * Determinism: the random numbers are a counter-based generator (splitmix64
 * of seed and draw number), the weights are integers (exact sums in any
 * order), and every loop is serial and in a fixed order: a seed gives
 * bitwise the same samples whatever the thread count.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt, log, pow, round, isfinite, INFINITY */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */
#include <stdlib.h> /* malloc, aligned_alloc, free, qsort */
#include <string.h> /* memset, memcpy */

#include "morton.h" /* acm_morton3 */
#include "alloc.h"
#include "sampling.h"

/* Candidates per sample: the paper's recommended M = 5N (Sec. 5). */
#define SAMPLE_CANDIDATES_PER_SAMPLE 5u
/* Weight limiting, r_min = r_max (1 - (N/M)^gamma) beta (paper Eq. 6). */
#define SAMPLE_LIMIT_BETA 0.65
#define SAMPLE_LIMIT_GAMMA 1.5
/* Candidate numbers are uint32 (UINT32_MAX is "no hint"). */
#define SAMPLE_MAX_COUNT ((UINT32_MAX - 1u) / SAMPLE_CANDIDATES_PER_SAMPLE)
#define SAMPLE_NO_HINT UINT32_MAX
/* Fixed-point weights: units of 2^-32; the weight of an eliminated one. */
#define SAMPLE_WEIGHT_ONE 4294967296.0
#define SAMPLE_GONE UINT64_MAX
/* Neighbours whose heap nodes are prefetched together during elimination. */
#define SAMPLE_BATCH 32
/* Bands stop when fewer removals than this remain (the heap makes them), or
 * when a band makes less than 1/SAMPLE_BAND_MIN_PROGRESS of its removals. */
#define SAMPLE_HEAP_TAIL 4096u
#define SAMPLE_BAND_MIN_PROGRESS 8u
/* Sweeps of a band (it takes 3 to 9 on spheres, tori and knots) */
#define SAMPLE_MAX_SWEEPS 64

/* A block of 4x4x4 cells hashes to a slot of 64 consecutive buckets and
 * the slot's end. */
#define GRID_BLOCK_SHIFT 2
#define GRID_BLOCK_MASK 3
#define GRID_BLOCK_BUCKETS 64
#define GRID_SLOT_STRIDE 65
#define GRID_POINTS_PER_SLOT 32
#define GRID_FREE UINT64_MAX
/* Cells per axis stay below 2^40 so cell coordinates (and +-1) fit int64
 * exactly; a mesh far larger than its sample spacing gets larger cells. */
#define GRID_MAX_CELLS_PER_AXIS 1099511627776.0
/* 9 rows of 3 cells, at most two runs of buckets each */
#define GRID_MAX_RANGES 18

/* ---- messages ----------------------------------------------------------- */

/* Write a message and return the status. Local (not acm__format) so that this
 * file links on its own into the unit tests, which cannot see the library's
 * hidden symbols. */
static acm_status fail(char *msg, size_t size, acm_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static acm_status fail(char *msg, size_t size, acm_status status, const char *fmt, ...)
{
    if (msg != NULL && size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* malloc of n elements, NULL on overflow of the byte count as well. */
static void *alloc_array(size_t n, size_t elem)
{
    if (elem != 0 && n > SIZE_MAX / elem)
        return NULL;
    return acm__malloc(n * elem == 0 ? 1 : n * elem);
}

/* ---- random numbers ----------------------------------------------------- */

/* splitmix64's output function. Used as a counter-based generator (value i
 * of a stream is mix(seed + i * golden)) so that a candidate can be drawn
 * again from its number alone: the grid is filled in two passes. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform double in [0, 1) with 53 random bits: draw i of the stream seed. */
static double uniform(uint64_t seed, uint64_t i)
{
    uint64_t x = mix64(seed + (i + 1) * UINT64_C(0x9e3779b97f4a7c15));
    return (double)(x >> 11) * 0x1.0p-53;
}

/* ---- triangles ---------------------------------------------------------- */

static const double *vertex(const double *v, const uint32_t *t, size_t tri, int corner)
{
    return v + 3 * (size_t)t[3 * tri + (size_t)corner];
}

/* Cross product of the edges of triangle tri: twice its area along its
 * normal (counter-clockwise seen from the side it points to). */
static void tri_cross(const double *v, const uint32_t *t, size_t tri, double n[3])
{
    const double *a = vertex(v, t, tri, 0), *b = vertex(v, t, tri, 1), *c = vertex(v, t, tri, 2);
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
}

static double tri_area(const double *v, const uint32_t *t, size_t tri)
{
    double n[3];
    tri_cross(v, t, tri, n);
    return 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
}

typedef struct box3 {
    double lo[3], hi[3];
} box3;

static box3 box_empty(void)
{
    box3 b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    return b;
}

static void box_add(box3 *b, const double p[3])
{
    for (int a = 0; a < 3; ++a) {
        b->lo[a] = p[a] < b->lo[a] ? p[a] : b->lo[a];
        b->hi[a] = p[a] > b->hi[a] ? p[a] : b->hi[a];
    }
}

static double box_diagonal(const box3 *b)
{
    double d[3] = {b->hi[0] - b->lo[0], b->hi[1] - b->lo[1], b->hi[2] - b->lo[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* Total area (summed in triangle order, exactly as the cumulative table will
 * be, so both give the same bits) and bounding box, without allocating. */
static void surface_scan(const double *v, const uint32_t *t, size_t ntris, double *area,
                         box3 *box)
{
    double sum = 0.0;
    *box = box_empty();
    for (size_t k = 0; k < ntris; ++k) {
        sum += tri_area(v, t, k);
        for (int c = 0; c < 3; ++c)
            box_add(box, vertex(v, t, k, c));
    }
    *area = sum;
}

/* ---- candidates --------------------------------------------------------- */

typedef struct candidate_source {
    const double *v;
    const uint32_t *t;
    const double *cum; /* cum[k]: area of triangles 0..k */
    size_t ntris;
    double area; /* cum[ntris - 1] */
    uint64_t seed;
    uint32_t m;        /* candidates */
    double total;      /* sum of the m + 1 spacings */
    double run;        /* sum of the spacings drawn so far */
} candidate_source;

/* First triangle whose cumulative area exceeds target: it has positive area
 * whenever target < area, since cum[k-1] <= target < cum[k]. */
static size_t find_triangle(const double *cum, size_t ntris, double target)
{
    size_t lo = 0, hi = ntris - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > target)
            hi = mid;
        else
            lo = mid + 1;
    }
    /* target rounded up to the total: the last triangle of positive area */
    while (lo > 0 && cum[lo] == cum[lo - 1])
        --lo;
    return lo;
}

/* Exponential variate i of the stream (-log of a uniform in (0, 1), never
 * 0 or infinite). */
static double spacing(uint64_t seed, uint64_t i)
{
    return -log(uniform(seed, i) + 0x1.0p-54);
}

/* The triangles of the candidates are chosen from M uniform numbers drawn
 * already sorted: the j-th smallest of M uniforms is distributed as
 * S_j / S_{M+1}, S_j the sum of j independent exponential variates. The
 * candidates then come in triangle order, as a random sample does after
 * sorting: the same distribution (a set of i.i.d. uniform points by area),
 * but the binary searches, and the grid's counting sort after them, walk
 * through memory in order instead of jumping (3x faster for a million
 * samples). Draw 3k serves candidate k's spacing, 3M the last one. */
static void candidate_spacings(candidate_source *src)
{
    double sum = 0.0;
    for (uint64_t k = 0; k <= src->m; ++k)
        sum += spacing(src->seed, 3 * k);
    src->total = sum;
    src->run = 0.0;
}

/* Draw point k of a set. hint is the tag the first draw of k returned, or
 * SAMPLE_NO_HINT. The first pass of grid_fill draws k = 0, 1, ... in order
 * (candidates rely on it); the second passes the tags back as hints. */
typedef void (*point_fn)(void *ctx, uint32_t k, uint32_t hint, double p[3], uint32_t *tag);

/* Candidate k: its triangle (tag = its index) from the k-th sorted uniform
 * (above), unless the hint gives it; then a uniform point in it: barycentric
 * (1 - s, s (1 - r2), s r2) with s = sqrt(r1); the square root makes the
 * density uniform instead of crowded at the first corner. */
static void candidate_point(void *ctx, uint32_t k, uint32_t hint, double p[3], uint32_t *tag)
{
    candidate_source *src = ctx;
    uint64_t draw = 3 * (uint64_t)k;
    size_t tri = hint;
    if (hint == SAMPLE_NO_HINT) {
        src->run += spacing(src->seed, draw);
        tri = find_triangle(src->cum, src->ntris, src->run / src->total * src->area);
    }
    double s = sqrt(uniform(src->seed, draw + 1)), r2 = uniform(src->seed, draw + 2);
    double b0 = 1.0 - s, b1 = s * (1.0 - r2), b2 = s * r2;
    const double *a = vertex(src->v, src->t, tri, 0), *b = vertex(src->v, src->t, tri, 1),
                 *c = vertex(src->v, src->t, tri, 2);
    for (int i = 0; i < 3; ++i)
        p[i] = b0 * a[i] + b1 * b[i] + b2 * c[i];
    *tag = (uint32_t)tri;
}

/* Point k of a plain array (the final samples). */
static void array_point(void *ctx, uint32_t k, uint32_t hint, double p[3], uint32_t *tag)
{
    (void)hint;
    const double *pos = (const double *)ctx + 3 * (size_t)k;
    p[0] = pos[0];
    p[1] = pos[1];
    p[2] = pos[2];
    *tag = k;
}

/* A point sorted into the grid, with the weight of a candidate next to its
 * coordinates: the scans of a neighbourhood read both from one line (32 bytes,
 * two points a cache line). */
typedef struct grid_point {
    double p[3];
    uint64_t w; /* candidates: fixed-point weight, SAMPLE_GONE once eliminated */
} grid_point;

/* ---- grid ---------------------------------------------------------------- */

/* The grid's arrays, allocated once for the candidates and used again for
 * the final samples. */
typedef struct grid_memory {
    uint64_t slots;  /* a power of two */
    uint32_t *start; /* GRID_SLOT_STRIDE per slot */
    uint64_t *claim; /* per slot: the Z-order key of its first block, or GRID_FREE */
} grid_memory;

typedef struct grid {
    double origin[3]; /* two cells below the box (grid_cell) */
    double cell, inv_cell;
    uint64_t slot_mask; /* slots - 1 */
    grid_memory *mem;
} grid;

typedef struct grid_range {
    uint32_t lo, hi;
} grid_range;

/* Slots for n points: a power of two >= n / 32. A block of a surface holds
 * some 90 candidates, so about a third of the slots are used and few blocks
 * share one. O(n) memory: about 8 to 16 bytes a point. */
static uint64_t grid_slots(size_t n)
{
    uint64_t s = 1;
    while (s * GRID_POINTS_PER_SLOT < n)
        s <<= 1;
    return s;
}

static void grid_memory_free(grid_memory *gm)
{
    acm__free(gm->start);
    acm__free(gm->claim);
}

static bool grid_memory_alloc(grid_memory *gm, size_t n)
{
    gm->slots = grid_slots(n);
    size_t slots = (size_t)gm->slots;
    gm->start = slots <= SIZE_MAX / GRID_SLOT_STRIDE
                    ? alloc_array(slots * GRID_SLOT_STRIDE, sizeof *gm->start)
                    : NULL;
    gm->claim = alloc_array(slots, sizeof *gm->claim);
    return gm->start != NULL && gm->claim != NULL;
}

static void grid_setup(grid *g, grid_memory *gm, const box3 *box, double cell)
{
    double extent = 0.0;
    for (int a = 0; a < 3; ++a)
        extent = box->hi[a] - box->lo[a] > extent ? box->hi[a] - box->lo[a] : extent;
    if (extent / cell > GRID_MAX_CELLS_PER_AXIS)
        cell = extent / GRID_MAX_CELLS_PER_AXIS;
    g->cell = cell;
    g->inv_cell = 1.0 / cell;
    for (int a = 0; a < 3; ++a)
        g->origin[a] = box->lo[a] - 2.0 * cell;
    g->slot_mask = gm->slots - 1;
    g->mem = gm;
}

/* Cell of a point. The origin lies two cells below the box, so the scaled
 * coordinate is positive and truncation is floor (and cheaper than a call),
 * and the cells around a point (c - 1) are never negative. */
static void grid_cell(const grid *g, const double p[3], int64_t c[3])
{
    for (int a = 0; a < 3; ++a)
        c[a] = (int64_t)((p[a] - g->origin[a]) * g->inv_cell);
}

/* Slot of block (x, y, z): a hash of its coordinates. */
static uint64_t grid_block_slot(const grid *g, int64_t x, int64_t y, int64_t z)
{
    uint64_t h = (uint64_t)x * UINT64_C(0x9e3779b97f4a7c15) ^
                 (uint64_t)y * UINT64_C(0xc2b2ae3d27d4eb4f) ^
                 (uint64_t)z * UINT64_C(0x165667b19e3779f9);
    return mix64(h) & g->slot_mask;
}

/* Place of a cell in its block: x fastest, so that the cells of a row in x
 * are consecutive buckets. */
static uint64_t grid_local(int64_t x, int64_t y, int64_t z)
{
    return (uint64_t)(x & GRID_BLOCK_MASK) | (uint64_t)(y & GRID_BLOCK_MASK) << 2 |
           (uint64_t)(z & GRID_BLOCK_MASK) << 4;
}

/* Z-order key of a block (21 bits an axis, lib/core/morton.h; beyond, keys repeat and
 * only the locality of the order suffers). */
static uint64_t morton(int64_t x, int64_t y, int64_t z)
{
    return acm_morton3((uint32_t)x, (uint32_t)y, (uint32_t)z);
}

/* Bucket of a point: its slot's stride plus its place in the block. */
static uint64_t grid_point_bucket(const grid *g, const double p[3], uint64_t *block_key)
{
    int64_t c[3];
    grid_cell(g, p, c);
    int64_t bx = c[0] >> GRID_BLOCK_SHIFT, by = c[1] >> GRID_BLOCK_SHIFT,
            bz = c[2] >> GRID_BLOCK_SHIFT;
    *block_key = morton(bx, by, bz);
    return grid_block_slot(g, bx, by, bz) * GRID_SLOT_STRIDE + grid_local(c[0], c[1], c[2]);
}

/* A used slot and the Z-order key of its block, for sorting. */
typedef struct slot_key {
    uint64_t key;
    uint32_t slot;
} slot_key;

static int compare_slot_keys(const void *a, const void *b)
{
    const slot_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->slot < y->slot ? -1 : (x->slot > y->slot);
}

/* Counting sort of n points into buckets, drawing each point twice from fn
 * instead of keeping an unsorted copy. The used slots are laid out in the
 * Z-order of their (first) block, so that the array is in spatial order:
 * passes in array order then find their neighbours in cache. Within a slot,
 * bucket after bucket; the slot's last entry holds its end.
 * start[b] first counts the points of bucket b, then holds the end of the
 * bucket, and each point goes to --start[b]: at the end start[b] is its
 * first point. memo (n, or NULL) keeps the tags of the first pass; tag (n,
 * or NULL) receives them in sorted order. */
static void grid_fill(grid *g, uint32_t n, point_fn fn, void *ctx, uint32_t *memo,
                      grid_point *out, uint32_t *tag)
{
    grid_memory *gm = g->mem;
    memset(gm->start, 0, (size_t)gm->slots * GRID_SLOT_STRIDE * sizeof *gm->start);
    for (uint64_t s = 0; s < gm->slots; ++s)
        gm->claim[s] = GRID_FREE;
    double p[3];
    uint32_t tg;
    uint64_t key;
    for (uint32_t k = 0; k < n; ++k) {
        fn(ctx, k, SAMPLE_NO_HINT, p, &tg);
        if (memo != NULL)
            memo[k] = tg;
        uint64_t b = grid_point_bucket(g, p, &key);
        ++gm->start[b];
        uint64_t slot = b / GRID_SLOT_STRIDE;
        if (gm->claim[slot] == GRID_FREE)
            gm->claim[slot] = key;
    }
    /* the used slots in Z-order; the pairs live in out, unused until pass 2 */
    slot_key *pairs = (slot_key *)out;
    size_t used = 0;
    for (uint64_t s = 0; s < gm->slots; ++s)
        if (gm->claim[s] != GRID_FREE)
            pairs[used++] = (slot_key){gm->claim[s], (uint32_t)s};
    qsort(pairs, used, sizeof *pairs, compare_slot_keys);
    uint32_t end = 0;
    for (size_t u = 0; u < used; ++u) {
        uint32_t *st = gm->start + (size_t)pairs[u].slot * GRID_SLOT_STRIDE;
        for (int b = 0; b < GRID_BLOCK_BUCKETS; ++b) {
            end += st[b];
            st[b] = end;
        }
        st[GRID_BLOCK_BUCKETS] = end;
    }
    for (uint32_t k = 0; k < n; ++k) {
        fn(ctx, k, memo != NULL ? memo[k] : SAMPLE_NO_HINT, p, &tg);
        uint32_t i = --gm->start[grid_point_bucket(g, p, &key)];
        out[i] = (grid_point){{p[0], p[1], p[2]}, 0};
        if (tag != NULL)
            tag[i] = tg;
    }
}

/* Sort ranges by start and merge overlapping ones (a bucket reached twice). */
static int merge_ranges(grid_range *r, int n)
{
    for (int i = 1; i < n; ++i) {
        grid_range x = r[i];
        int k = i;
        while (k > 0 && r[k - 1].lo > x.lo) {
            r[k] = r[k - 1];
            --k;
        }
        r[k] = x;
    }
    int m = 0;
    for (int i = 0; i < n; ++i) {
        if (m > 0 && r[i].lo < r[m - 1].hi)
            r[m - 1].hi = r[i].hi > r[m - 1].hi ? r[i].hi : r[m - 1].hi;
        else
            r[m++] = r[i];
    }
    return m;
}

/* Index ranges holding every point of the 27 cells around cell c (and some
 * far points sharing their buckets), each point once. Returns their number.
 *
 * Along each axis the cells c-1 .. c+1 lie in one block or two (split after
 * the first `first[a]` of them), so at most 8 block hashes are needed, and
 * each row of 3 cells in x is one or two runs of consecutive buckets. Two
 * different blocks in one slot could give a bucket twice: only then are the
 * ranges sorted and merged. */
static int grid_ranges(const grid *g, const int64_t c[3], grid_range r[GRID_MAX_RANGES])
{
    int64_t blk[3];
    int first[3];
    uint64_t lo[3];
    for (int a = 0; a < 3; ++a) {
        blk[a] = (c[a] - 1) >> GRID_BLOCK_SHIFT;
        lo[a] = (uint64_t)((c[a] - 1) & GRID_BLOCK_MASK);
        first[a] = lo[a] >= 2 ? 4 - (int)lo[a] : 3;
    }
    const uint32_t *start = g->mem->start;
    uint64_t base[2][2][2];
    uint64_t seen[8];
    int nseen = 0;
    bool collide = false;
    for (int sz = 0; sz < (first[2] < 3 ? 2 : 1); ++sz)
        for (int sy = 0; sy < (first[1] < 3 ? 2 : 1); ++sy)
            for (int sx = 0; sx < (first[0] < 3 ? 2 : 1); ++sx) {
                uint64_t slot = grid_block_slot(g, blk[0] + sx, blk[1] + sy, blk[2] + sz);
                for (int i = 0; i < nseen; ++i)
                    collide = collide || seen[i] == slot;
                seen[nseen++] = slot;
                base[sz][sy][sx] = slot * GRID_SLOT_STRIDE;
            }
    int n = 0;
    for (int dz = 0; dz < 3; ++dz) {
        int sz = dz >= first[2];
        uint64_t lz = (uint64_t)((c[2] - 1 + dz) & GRID_BLOCK_MASK) << 4;
        for (int dy = 0; dy < 3; ++dy) {
            int sy = dy >= first[1];
            uint64_t lyz = lz | (uint64_t)((c[1] - 1 + dy) & GRID_BLOCK_MASK) << 2;
            /* the cells of the row in the first block, then in the second */
            uint64_t b = base[sz][sy][0] + lyz + lo[0];
            grid_range x = {start[b], start[b + (uint64_t)first[0]]};
            if (x.lo != x.hi)
                r[n++] = x;
            if (first[0] < 3) {
                b = base[sz][sy][1] + lyz;
                grid_range y = {start[b], start[b + 3 - (uint64_t)first[0]]};
                if (y.lo != y.hi)
                    r[n++] = y;
            }
        }
    }
    return collide ? merge_ranges(r, n) : n;
}

/* The ranges of recent cells: passes in array (spatial) order, and the
 * bands' climbs from a candidate to its neighbours, mostly ask for a cell
 * they asked for shortly before. Entry e of a cache of 1 or 64 entries
 * serves the cells whose place in their block is e (no two of a block
 * compete). */
typedef struct range_cache {
    int64_t cell[3];
    int n; /* -1: nothing cached */
    grid_range r[GRID_MAX_RANGES];
} range_cache;

#define RANGE_CACHE_ENTRIES GRID_BLOCK_BUCKETS

static const range_cache *cached_ranges(const grid *g, const double p[3], range_cache *cache,
                                        int entries)
{
    int64_t c[3];
    grid_cell(g, p, c);
    range_cache *rc = cache + (entries == 1 ? 0 : grid_local(c[0], c[1], c[2]));
    if (rc->n < 0 || c[0] != rc->cell[0] || c[1] != rc->cell[1] || c[2] != rc->cell[2]) {
        rc->n = grid_ranges(g, c, rc->r);
        memcpy(rc->cell, c, sizeof c);
    }
    return rc;
}

static double dist2(const double *a, const double *b)
{
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

/* ---- weights -------------------------------------------------------------- */

typedef struct weight_params {
    double d_max2;   /* (2 r_max)^2: neighbours closer than this count */
    double r_min;    /* weight limiting: shorter distances count as r_min */
    double inv_dmax; /* 1 / (2 r_max) */
} weight_params;

/* (1 - d / 2r_max)^8 (paper Eq. 2, alpha = 8) for a squared distance, in
 * units of 2^-32; 0 from 2 r_max on (and a little before: below 2^-32). Integer weights make every sum exact, so a
 * candidate's weight does not depend on the order in which its neighbours
 * are added or removed: the band elimination below relies on it. A pair
 * weighs at most 0.06 (d >= r_min), so 2^32 candidates cannot overflow. */
static uint64_t pair_weight(const weight_params *w, double d2)
{
    double d = sqrt(d2);
    d = d < w->r_min ? w->r_min : d;
    double x = 1.0 - d * w->inv_dmax;
    x = x > 0.0 ? x : 0.0;
    x *= x;
    x *= x;
    return (uint64_t)(x * x * SAMPLE_WEIGHT_ONE);
}

/* Candidate order: heavier first, equal weights by the higher number. A
 * strict total order, so "the heaviest" is always one candidate. */
static bool heavier(uint64_t wa, uint32_t a, uint64_t wb, uint32_t b)
{
    return wa > wb || (wa == wb && a > b);
}

/* Weight of every candidate. Each pair is visited once, from its lower
 * index, and counts for both. */
static void initial_weights(grid_point *pt, const grid *g, uint32_t m, const weight_params *wp)
{
    for (uint32_t i = 0; i < m; ++i)
        pt[i].w = 0;
    range_cache rc = {.n = -1};
    for (uint32_t i = 0; i < m; ++i) {
        const double *p = pt[i].p;
        const range_cache *e = cached_ranges(g, p, &rc, 1);
        uint64_t w = 0;
        for (int k = 0; k < e->n; ++k)
            for (uint32_t j = e->r[k].lo > i + 1 ? e->r[k].lo : i + 1; j < e->r[k].hi; ++j) {
                double d2 = dist2(p, pt[j].p);
                if (d2 < wp->d_max2) { /* skips the root and powers for 3 in 5 */
                    uint64_t wij = pair_weight(wp, d2);
                    w += wij;
                    pt[j].w += wij;
                }
            }
        pt[i].w += w;
    }
}

/* ---- elimination by bands ---------------------------------------------------
 *
 * The heap (below) removes the heaviest candidate M - N times. Its accesses
 * are random over all candidates, some 20 cache misses a removal once they
 * outgrow the caches. Most removals are made here instead, in memory (hence
 * spatial) order, with exactly the heap's result. Candidates are ordered by
 * (weight, number), a strict total order, and "neighbours" are the pairs
 * closer than 2 r_max.
 *
 * Removing a candidate lowers only its neighbours' weights, so the heap's
 * removals come in strictly decreasing order of (weight at removal, number):
 * call that sequence G. For a threshold tau, let P be the prefix of G above
 * tau. Claim: removing, in any order, candidates above tau that are heavier
 * than each of their remaining neighbours (local maxima) ends with exactly P
 * removed, each at its weight in G. Invariant: the removed set F lies in P,
 * and with each member holds its neighbours that precede it in G.
 *  - While P is not all gone, its G-earliest remaining member y is a local
 *    maximum: its G-predecessors are gone (they are in F), no later
 *    neighbour is (invariant), so it weighs what it did when G removed it,
 *    and its neighbours, which have lost at least what they had lost then,
 *    weigh less, as they did then. So the process does not stop early.
 *  - A local maximum x above tau keeps the invariant: were a neighbour z
 *    that precedes x in G still there (take the G-earliest), x would have
 *    lost no more than when G removed z and z no less, so z would be
 *    heavier now as it was then. So x's G-predecessors are gone, x weighs
 *    its G weight, which is above tau: x is in P.
 * The weights are integers, so the order of the subtractions cannot change
 * them either. From any state the process leaves, the heap continues G in
 * order (its heaviest is the G-earliest remaining, by the first point), so
 * handing over at any time is exact.
 *
 * A band picks tau as the R-th heaviest remaining weight, R the removals
 * still to make: fewer than R candidates are heavier, so P is shorter than R
 * and a band never removes too many. Bands run while they make good
 * progress; the heap makes the last removals. The tests compare both ways
 * bit for bit (acm__sample_surface_reference). */

typedef struct band_state {
    grid_point *pt;
    const grid *g;
    const weight_params *wp;
    uint64_t tau;     /* candidates heavier than this may go */
    uint32_t *queued;  /* per candidate: 1 while on the stack */
    uint32_t *stack;   /* candidates to look at again */
    uint32_t *blocker; /* per candidate: the heavier neighbour that kept it, or none */
    size_t depth;
    range_cache rc[RANGE_CACHE_ENTRIES];
} band_state;

/* Remove candidate i if it is a local maximum; then its remaining neighbours
 * weigh less and one of them (or of theirs) may now be one: the neighbours
 * above tau go on the stack. Returns whether i went. */
static bool band_try(band_state *b, uint32_t i)
{
    grid_point *pt = b->pt;
    uint64_t wi = pt[i].w;
    /* the neighbour that kept i last time mostly still does: one look
     * instead of a scan (positions never change, so it is still near) */
    uint32_t kept_by = b->blocker[i];
    if (kept_by != SAMPLE_NO_HINT && pt[kept_by].w != SAMPLE_GONE &&
        heavier(pt[kept_by].w, kept_by, wi, i))
        return false;
    const double *p = pt[i].p;
    const range_cache *e = cached_ranges(b->g, p, b->rc, RANGE_CACHE_ENTRIES);
    int nr = e->n;
    const grid_range *r = e->r;
    /* is a remaining neighbour heavier? (bitwise ands: the only branch is
     * the exit, taken once) */
    for (int k = 0; k < nr; ++k)
        for (uint32_t j = r[k].lo; j < r[k].hi; ++j) {
            uint64_t wj = pt[j].w;
            bool above = (wj > wi) | ((wj == wi) & (j > i));
            if (above & (wj != SAMPLE_GONE) & (dist2(p, pt[j].p) < b->wp->d_max2)) {
                /* climb: j is heavier, and above tau too; when it goes, i
                 * comes back on the stack as its neighbour */
                b->blocker[i] = j;
                if (!b->queued[j]) {
                    b->queued[j] = 1;
                    b->stack[b->depth++] = j;
                }
                return false;
            }
        }
    pt[i].w = SAMPLE_GONE;
    for (int k = 0; k < nr; ++k)
        for (uint32_t j = r[k].lo; j < r[k].hi; ++j) {
            uint64_t wj = pt[j].w;
            double d2 = dist2(p, pt[j].p);
            if ((wj == SAMPLE_GONE) | (d2 >= b->wp->d_max2))
                continue;
            wj -= pair_weight(b->wp, d2);
            pt[j].w = wj;
            /* lighter now: it, or one it kept, may have become a maximum
             * (others are found by the next sweep) */
            if ((wj > b->tau) & !b->queued[j]) {
                b->queued[j] = 1;
                b->stack[b->depth++] = j;
            }
        }
    return true;
}

/* Try candidate i, then whatever its removal put on the stack. */
static uint32_t band_visit(band_state *b, uint32_t i)
{
    uint32_t removed = band_try(b, i) ? 1 : 0;
    while (b->depth > 0) {
        uint32_t j = b->stack[--b->depth];
        b->queued[j] = 0;
        if (b->pt[j].w != SAMPLE_GONE && b->pt[j].w > b->tau)
            removed += band_try(b, j) ? 1 : 0;
    }
    return removed;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : (x > y);
}

/* k-th smallest of a[0..n-1] (0-based; a is reordered): quickselect with a
 * median-of-three pivot, deterministic; after 2 log2(n) + 8 rounds (bad
 * pivots) it sorts what is left, so it stays O(n log n). */
static uint64_t select_kth(uint64_t *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    int budget = 8;
    for (size_t x = n; x > 1; x >>= 1)
        budget += 2;
    while (lo < hi) {
        if (budget-- == 0) {
            qsort(a + lo, hi - lo + 1, sizeof *a, compare_u64);
            return a[k];
        }
        size_t mid = lo + (hi - lo) / 2;
        uint64_t x = a[lo], y = a[mid], z = a[hi];
        uint64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                ++i;
            while (a[j] > pivot)
                --j;
            if (i <= j) {
                uint64_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                ++i;
                if (j == 0)
                    break;
                --j;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

/* One band: tau = the R-th heaviest remaining weight, then sweeps over the
 * candidates above it until one removes nothing (the band is complete), or
 * SAMPLE_MAX_SWEEPS are made (a guard against slow chains: the heap then
 * takes over, which is exact from any state the sweeps leave, see above).
 * scratch holds 3M uint32 (or M uint64). Returns the removals. */
static uint32_t band(band_state *b, uint32_t m, uint32_t live, uint32_t R, void *scratch,
                     bool *complete)
{
    grid_point *pt = b->pt;
    uint64_t *w = scratch;
    size_t n = 0;
    for (uint32_t i = 0; i < m; ++i)
        if (pt[i].w != SAMPLE_GONE)
            w[n++] = pt[i].w;
    b->tau = select_kth(w, n, (size_t)live - R);
    /* the candidates above tau, in memory order; the stack after them */
    uint32_t *list = scratch;
    size_t len = 0;
    for (uint32_t i = 0; i < m; ++i)
        if (pt[i].w != SAMPLE_GONE && pt[i].w > b->tau)
            list[len++] = i;
    b->stack = list + m;
    b->depth = 0;
    b->blocker = list + 2 * (size_t)m;
    for (uint32_t i = 0; i < m; ++i)
        b->blocker[i] = SAMPLE_NO_HINT;
    uint32_t removed = 0, swept, sweeps = 0;
    do {
        if (++sweeps > SAMPLE_MAX_SWEEPS) {
            *complete = false;
            return removed;
        }
        swept = 0;
        size_t keep = 0;
        for (size_t k = 0; k < len; ++k) {
            uint32_t i = list[k];
            if (pt[i].w == SAMPLE_GONE || pt[i].w <= b->tau)
                continue;
            swept += band_visit(b, i);
            if (pt[i].w != SAMPLE_GONE)
                list[keep++] = i;
        }
        len = keep;
        removed += swept;
    } while (swept > 0);
    *complete = true;
    return removed;
}

/* Remove candidates by bands while that pays; returns how many went. */
static uint32_t eliminate_bands(grid_point *pt, const grid *g, const weight_params *wp,
                                uint32_t m, uint32_t n, uint32_t *queued, void *scratch)
{
    band_state b = {.pt = pt, .g = g, .wp = wp, .queued = queued};
    for (int e = 0; e < RANGE_CACHE_ENTRIES; ++e)
        b.rc[e].n = -1;
    memset(queued, 0, (size_t)m * sizeof *queued);
    uint32_t removed = 0;
    bool complete = true;
    while (complete && m - n - removed > SAMPLE_HEAP_TAIL) {
        uint32_t R = m - n - removed;
        uint32_t got = band(&b, m, m - removed, R, scratch, &complete);
        removed += got;
        if (got < R / SAMPLE_BAND_MIN_PROGRESS)
            break;
    }
    return removed;
}

/* ---- elimination by the heap ------------------------------------------- */

typedef struct heap_node {
    uint64_t w;
    uint32_t id;
} heap_node;

/* Max-heap of the remaining candidates; where[id] is the node of candidate
 * id. pt[id].w only tells whether the candidate is still there. */
typedef struct heap {
    heap_node *node;
    uint32_t *where;
    grid_point *pt;
    uint32_t size;
} heap;

static bool node_heavier(const heap_node *a, const heap_node *b)
{
    return heavier(a->w, a->id, b->w, b->id);
}

/* Move node i down after its weight decreased (or for heapify). The walk
 * down is a chain of dependent loads, each a likely cache miss in a large
 * heap: the grandchildren of each node visited (one cache line, see
 * heap_alloc) are prefetched, so that two levels are in flight at once. */
static void heap_sift_down(heap *h, uint32_t i)
{
    heap_node x = h->node[i];
    for (;;) {
        uint64_t c = 2 * (uint64_t)i + 1;
        if (c >= h->size)
            break;
        if (2 * c + 1 < h->size)
            __builtin_prefetch(&h->node[2 * c + 1]);
        if (c + 1 < h->size && node_heavier(&h->node[c + 1], &h->node[c]))
            ++c;
        if (!node_heavier(&h->node[c], &x))
            break;
        h->node[i] = h->node[c];
        h->where[h->node[i].id] = i;
        i = (uint32_t)c;
    }
    h->node[i] = x;
    h->where[x.id] = i;
}

/* The heap over the remaining candidates (bottom-up, O(M)). */
static void heap_build(heap *h, uint32_t m)
{
    uint32_t size = 0;
    for (uint32_t i = 0; i < m; ++i) {
        if (h->pt[i].w == SAMPLE_GONE)
            continue;
        h->node[size] = (heap_node){h->pt[i].w, i};
        h->where[i] = size++;
    }
    h->size = size;
    for (uint32_t i = size / 2; i-- > 0;)
        heap_sift_down(h, i);
}

/* Subtract weights from candidates and move them down the heap. Their nodes
 * were prefetched: the misses of a batch overlap instead of queueing. */
static void heap_decrease(heap *h, const uint32_t *id, const uint64_t *w, int n)
{
    for (int i = 0; i < n; ++i) {
        uint32_t at = h->where[id[i]]; /* read now: earlier moves may change it */
        h->node[at].w -= w[i];
        heap_sift_down(h, at);
    }
}

/* Remove the heaviest candidate; subtract its weight from its neighbours. */
static void heap_eliminate_one(heap *h, const grid *g, const weight_params *wp)
{
    grid_point *pt = h->pt;
    uint32_t top = h->node[0].id;
    pt[top].w = SAMPLE_GONE;
    if (--h->size > 0) {
        h->node[0] = h->node[h->size];
        h->where[h->node[0].id] = 0;
        heap_sift_down(h, 0);
    }
    const double *p = pt[top].p;
    int64_t c[3];
    grid_cell(g, p, c);
    grid_range r[GRID_MAX_RANGES];
    int nr = grid_ranges(g, c, r);
    for (int k = 0; k < nr; ++k) /* every line of the ranges: the misses overlap */
        for (uint32_t j = r[k].lo; j < r[k].hi; j += 2)
            __builtin_prefetch(&pt[j]);
    uint32_t id[SAMPLE_BATCH];
    uint64_t w[SAMPLE_BATCH];
    int n = 0;
    for (int k = 0; k < nr; ++k)
        for (uint32_t j = r[k].lo; j < r[k].hi; ++j) {
            if (pt[j].w == SAMPLE_GONE)
                continue;
            double d2 = dist2(p, pt[j].p);
            if (d2 < wp->d_max2) {
                uint32_t at = h->where[j];
                __builtin_prefetch(&h->node[at]);
                if (2 * (uint64_t)at + 1 < h->size)
                    __builtin_prefetch(&h->node[2 * (uint64_t)at + 1]);
                id[n] = j;
                w[n] = pair_weight(wp, d2);
                if (++n == SAMPLE_BATCH) {
                    heap_decrease(h, id, w, n);
                    n = 0;
                }
            }
        }
    heap_decrease(h, id, w, n);
    if (h->size > 0) /* the next candidate to go: its position is needed first */
        __builtin_prefetch(&pt[h->node[0].id]);
}

/* ---- the smallest distance of the final set ---------------------------- */

/* Smallest distance between two of the n points (INFINITY when n < 2). Pairs
 * closer than the cell size are all found through the 27 cells; if none is,
 * the cell doubles, until it spans the whole box. The grid's memory and
 * sorted (n) are scratch. */
static double min_distance(const double *pts, uint32_t n, double cell, grid_memory *gm,
                           grid_point *sorted)
{
    if (n < 2)
        return INFINITY;
    box3 box = box_empty();
    for (uint32_t i = 0; i < n; ++i)
        box_add(&box, pts + 3 * (size_t)i);
    double diag = box_diagonal(&box);
    for (;;) {
        grid g;
        grid_setup(&g, gm, &box, cell);
        /* array_point only reads: the cast serves point_fn's generality */
        grid_fill(&g, n, array_point, (void *)pts, NULL, sorted, NULL);
        double best = INFINITY;
        range_cache rc = {.n = -1};
        for (uint32_t i = 0; i < n; ++i) {
            const double *p = sorted[i].p;
            const range_cache *e = cached_ranges(&g, p, &rc, 1);
            for (int k = 0; k < e->n; ++k)
                for (uint32_t j = e->r[k].lo > i + 1 ? e->r[k].lo : i + 1; j < e->r[k].hi; ++j) {
                    double d2 = dist2(p, sorted[j].p);
                    best = d2 < best ? d2 : best;
                }
        }
        if (best <= g.cell * g.cell || g.cell >= diag)
            return sqrt(best);
        cell = 2.0 * g.cell;
    }
}

/* ---- the entry point ---------------------------------------------------- */

/* Working memory of one call, all O(M). */
typedef struct sample_work {
    double *cum;       /* ntris */
    grid_point *pt;    /* M candidates, sorted by bucket */
    uint32_t *tri;     /* M: the triangle of each candidate */
    uint32_t *where;   /* M: grid_fill's memo, the bands' flags, the heap's index */
    grid_memory grid;
    heap_node *node;   /* M, see heap_alloc; the bands' scratch before */
    void *node_memory; /* what to free for node */
} sample_work;

static void work_free(sample_work *w)
{
    acm__free(w->cum);
    acm__free(w->pt);
    acm__free(w->tri);
    acm__free(w->where);
    grid_memory_free(&w->grid);
    acm__free(w->node_memory);
}

/* Validate the arguments and compute the sample count, before any
 * allocation. */
static acm_status check_request(const double *v, const uint32_t *t, size_t ntris,
                                double density, uint64_t max_samples,
                                const acm_surface_samples *out, double *area, box3 *box,
                                uint32_t *count, char *msg, size_t msg_size)
{
    if (out == NULL)
        return fail(msg, msg_size, ACM_ERR_NULL_POINTER, "out is NULL");
    if (!(isfinite(density) && density > 0.0))
        return fail(msg, msg_size, ACM_ERR_OUT_OF_RANGE,
                    "density=%g samples per unit area must be positive and finite", density);
    if (ntris == 0)
        return fail(msg, msg_size, ACM_ERR_INVALID_ARG, "no triangles to sample");
    if (v == NULL || t == NULL)
        return fail(msg, msg_size, ACM_ERR_NULL_POINTER, "vertex or triangle array is NULL");
    if (ntris > UINT32_MAX)
        return fail(msg, msg_size, ACM_ERR_LIMIT,
                    "%zu triangles: sampling supports at most 2^32 - 1", ntris);
    surface_scan(v, t, ntris, area, box);
    if (!isfinite(*area) || !isfinite(box->lo[0] + box->lo[1] + box->lo[2]) ||
        !isfinite(box->hi[0] + box->hi[1] + box->hi[2]))
        return fail(msg, msg_size, ACM_ERR_OUT_OF_RANGE,
                    "the surface has a non-finite coordinate or area (%g)", *area);
    if (!(*area > 0.0))
        return fail(msg, msg_size, ACM_ERR_INVALID_ARG,
                    "the %zu triangles have zero total area", ntris);
    double n = round(density * *area);
    n = n < 1.0 ? 1.0 : n;
    if (!(n <= (double)max_samples))
        return fail(msg, msg_size, ACM_ERR_LIMIT,
                    "density %g on area %g asks for %.17g samples; the limit is %llu", density,
                    *area, n, (unsigned long long)max_samples);
    if (!(n <= (double)SAMPLE_MAX_COUNT))
        return fail(msg, msg_size, ACM_ERR_LIMIT,
                    "density %g on area %g asks for %.17g samples; sampling supports at most "
                    "%u (5 candidates each, numbered in 32 bits)",
                    density, *area, n, (unsigned)SAMPLE_MAX_COUNT);
    *count = (uint32_t)n;
    return ACM_OK;
}

/* Heap nodes placed so that the children of node i (2i+1, 2i+2) share a
 * 32-byte pair and its four grandchildren (4i+3 .. 4i+6) one 64-byte line:
 * 64-byte aligned memory, starting one 16-byte node in. */
static heap_node *heap_alloc(uint32_t m, void **memory)
{
    size_t bytes = ((size_t)m + 1) * sizeof(heap_node);
    if ((size_t)m + 1 > SIZE_MAX / sizeof(heap_node) || bytes > SIZE_MAX - 64)
        return NULL;
    *memory = acm__aligned_alloc(64, (bytes + 63) / 64 * 64);
    return *memory != NULL ? (heap_node *)*memory + 1 : NULL;
}

static acm_status work_alloc(sample_work *w, size_t ntris, uint32_t m, char *msg,
                             size_t msg_size)
{
    w->cum = alloc_array(ntris, sizeof *w->cum);
    w->pt = alloc_array(m, sizeof *w->pt);
    w->tri = alloc_array(m, sizeof *w->tri);
    w->where = alloc_array(m, sizeof *w->where);
    bool grid_ok = grid_memory_alloc(&w->grid, m);
    w->node = heap_alloc(m, &w->node_memory);
    if (w->cum == NULL || w->pt == NULL || w->tri == NULL || w->where == NULL || !grid_ok ||
        w->node == NULL)
        return fail(msg, msg_size, ACM_ERR_NO_MEMORY,
                    "cannot allocate the working memory for %u candidates", m);
    return ACM_OK;
}

/* Copy the survivors (in candidate order) to the output arrays. */
static void collect(const sample_work *w, uint32_t m, const double *v, const uint32_t *t,
                    double *pos, double *normal)
{
    size_t s = 0;
    for (uint32_t i = 0; i < m; ++i) {
        if (w->pt[i].w == SAMPLE_GONE)
            continue;
        double n[3];
        tri_cross(v, t, w->tri[i], n);
        double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int a = 0; a < 3; ++a) {
            pos[3 * s + (size_t)a] = w->pt[i].p[a];
            normal[3 * s + (size_t)a] = n[a] / len;
        }
        ++s;
    }
}

/* Both entry points: bands = false makes every removal through the heap
 * (the reference the tests compare with). */
static acm_status sample_surface(const double *v, const uint32_t *t, size_t ntris,
                                 double density, uint64_t seed, uint64_t max_samples,
                                 bool bands, acm_surface_samples *out, char *msg,
                                 size_t msg_size)
{
    double area = 0.0;
    box3 box;
    uint32_t n = 0;
    acm_status st = check_request(v, t, ntris, density, max_samples, out, &area, &box, &n, msg,
                                  msg_size);
    if (st != ACM_OK)
        return st;
    uint32_t m = SAMPLE_CANDIDATES_PER_SAMPLE * n;

    sample_work w = {0};
    acm_surface_samples res = {0};
    res.pos = alloc_array(3 * (size_t)n, sizeof *res.pos);
    res.normal = alloc_array(3 * (size_t)n, sizeof *res.normal);
    st = work_alloc(&w, ntris, m, msg, msg_size);
    if (st == ACM_OK && (res.pos == NULL || res.normal == NULL))
        st = fail(msg, msg_size, ACM_ERR_NO_MEMORY, "cannot allocate %u samples", n);
    if (st != ACM_OK) {
        work_free(&w);
        acm__surface_samples_free(&res);
        return st;
    }

    double sum = 0.0;
    for (size_t k = 0; k < ntris; ++k)
        w.cum[k] = sum += tri_area(v, t, k);
    candidate_source src = {v, t, w.cum, ntris, w.cum[ntris - 1], seed, m, 0.0, 0.0};
    candidate_spacings(&src);

    double r_max = sqrt(area / (2.0 * sqrt(3.0) * (double)n));
    double ratio = (double)n / (double)m;
    const weight_params wp = {
        .d_max2 = 4.0 * r_max * r_max,
        .r_min = r_max * (1.0 - pow(ratio, SAMPLE_LIMIT_GAMMA)) * SAMPLE_LIMIT_BETA,
        .inv_dmax = 0.5 / r_max,
    };
    grid g;
    grid_setup(&g, &w.grid, &box, 2.0 * r_max);
    grid_fill(&g, m, candidate_point, &src, w.where, w.pt, w.tri);
    initial_weights(w.pt, &g, m, &wp);

    if (bands)
        eliminate_bands(w.pt, &g, &wp, m, n, w.where, w.node);
    heap h = {w.node, w.where, w.pt, 0};
    heap_build(&h, m);
    while (h.size > n)
        heap_eliminate_one(&h, &g, &wp);
    collect(&w, m, v, t, res.pos, res.normal);

    res.count = n;
    res.area = area / (double)n;
    res.radius = r_max;
    /* the candidates are copied out: their array is scratch now */
    res.min_distance = min_distance(res.pos, n, 2.0 * r_max, &w.grid, w.pt);
    work_free(&w);
    *out = res;
    return ACM_OK;
}

acm_status acm__sample_surface(const double *v, const uint32_t *t, size_t ntris, double density,
                               uint64_t seed, uint64_t max_samples, acm_surface_samples *out,
                               char *msg, size_t msg_size)
{
    return sample_surface(v, t, ntris, density, seed, max_samples, true, out, msg, msg_size);
}

acm_status acm__sample_surface_reference(const double *v, const uint32_t *t, size_t ntris,
                                         double density, uint64_t seed, uint64_t max_samples,
                                         acm_surface_samples *out, char *msg, size_t msg_size)
{
    return sample_surface(v, t, ntris, density, seed, max_samples, false, out, msg, msg_size);
}

void acm__surface_samples_free(acm_surface_samples *s)
{
    if (s == NULL)
        return;
    acm__free(s->pos);
    acm__free(s->normal);
    memset(s, 0, sizeof *s);
}
