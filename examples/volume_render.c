/*
 * libacmlbm examples -- emission-absorption volume renderer (see volume_render.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "volume_render.h"

#include <math.h>   /* exp, floor, sqrt, tan, pow, fabs, isfinite, INFINITY */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memcpy */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define VR_MAX_SIDE 16384u
#define VR_MIN_TRANSMITTANCE 1e-3 /* a ray that lets less through stops */
#define BRICK 4                   /* edge of the bricks of empty-space skipping, voxels */

/* ---- small vector helpers ------------------------------------------------------------ */

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(double out[3], const double a[3], const double b[3])
{
    const double r[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]};
    memcpy(out, r, sizeof r);
}

/* Normalise in place; 0, or -1 for a (near) zero vector. */
static int normalize3(double v[3])
{
    const double len = sqrt(dot3(v, v));
    if (!(len > 1e-12) || !isfinite(len))
        return -1;
    for (int k = 0; k < 3; ++k)
        v[k] /= len;
    return 0;
}

static double clamp01(double x)
{
    return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

/* A value in [0, 1) from a pixel position: the ray-start jitter (no state, so any
 * thread order gives the same image). */
static double pixel_hash(uint32_t x, uint32_t y)
{
    uint32_t h = x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    h ^= h >> 16;
    return (double)h / 4294967296.0;
}

/* ---- defaults and checks ------------------------------------------------------------- */

void vr_params_default(vr_params *p)
{
    const vr_params d = {
        .width = 640,
        .height = 360,
        .camera = {{0.0, 0.0, 100.0}, {0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, 40.0},
        .light_dir = {-0.7, 1.0, -0.2},
        .light = {1.6f, 1.55f, 1.45f},
        .ambient = {0.24f, 0.27f, 0.34f},
        .smoke_albedo = {0.92f, 0.92f, 0.92f},
        .extinction = 0.5,
        .solid_extinction = 4.0,
        .step = 0.5,
        .sky_top = {0.20f, 0.27f, 0.40f},
        .sky_bottom = {0.62f, 0.66f, 0.72f},
        .floor = 0,
        .floor_y = 0.0,
        .floor_albedo = {0.42f, 0.41f, 0.39f},
        .exposure = 1.6,
        .gamma = 2.2,
    };
    *p = d;
}

static int finite3(const double v[3])
{
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

/* The first broken rule of p, volume and splats, or NULL. */
static const char *check(const vr_params *p, const vr_volume *v, const vr_splats *s, size_t ns)
{
    if (p->width < 1 || p->height < 1 || p->width > VR_MAX_SIDE || p->height > VR_MAX_SIDE)
        return "the image must be 1 to 16384 pixels on each side";
    if (!finite3(p->camera.eye) || !finite3(p->camera.look_at) || !finite3(p->camera.up) ||
        !(p->camera.fov_deg > 0.0 && p->camera.fov_deg < 180.0))
        return "the camera needs finite points and a field of view in (0, 180) degrees";
    if (!finite3(p->light_dir))
        return "the light direction is not finite";
    if (!(p->extinction >= 0.0) || !(p->solid_extinction >= 0.0) || !isfinite(p->extinction) ||
        !isfinite(p->solid_extinction))
        return "extinctions must be finite and >= 0";
    if (!(p->step > 0.0 && p->step <= 4.0))
        return "the ray step must be in (0, 4] voxels";
    if (!(p->exposure > 0.0) || !(p->gamma > 0.0) || !isfinite(p->exposure) ||
        !isfinite(p->gamma))
        return "exposure and gamma must be finite and > 0";
    if (v == NULL || v->n[0] < 1 || v->n[1] < 1 || v->n[2] < 1 || !(v->voxel > 0.0) ||
        !isfinite(v->voxel) || !finite3(v->origin))
        return "the volume needs a size >= 1 voxel per axis, a voxel edge > 0 and an origin";
    for (size_t k = 0; k < ns; ++k)
        if ((s[k].xyz == NULL && s[k].count > 0) || !(s[k].radius > 0.0) ||
            !isfinite(s[k].radius))
            return "a point set needs its points and a radius > 0";
    return NULL;
}

/* ---- frame state --------------------------------------------------------------------- */

typedef struct frame {
    const vr_params *p;
    const vr_volume *v;
    const vr_splats *splats;
    size_t cells;
    double fwd[3], right[3], up[3], focal; /* camera frame; focal length in pixels */
    double light[3];                       /* unit direction towards the light */
    double lo[3], hi[3];                   /* the grid's box in world units */
    float *trans;                          /* transmittance to the light, per voxel */
    uint8_t *brick;                        /* 1 where a brick of BRICK^3 voxels may hold smoke */
    int32_t nb[3];                         /* bricks per axis */
    float *trans_smoke;                    /* the same through the smoke alone: lights the
                                              solids, which would shadow themselves */
    float *depth;                          /* view depth of the nearest solid, per pixel */
    float *normal;                         /* unit normal of that solid, 3 per pixel */
    uint32_t *owner;                       /* which point set drew the pixel */
} frame;

static void frame_free(frame *f)
{
    free(f->trans);
    free(f->trans_smoke);
    free(f->brick);
    free(f->depth);
    free(f->normal);
    free(f->owner);
}

static int frame_camera(frame *f)
{
    const vr_camera *c = &f->p->camera;
    for (int k = 0; k < 3; ++k)
        f->fwd[k] = c->look_at[k] - c->eye[k];
    if (normalize3(f->fwd) != 0)
        return -1;
    cross3(f->right, f->fwd, c->up);
    if (normalize3(f->right) != 0)
        return -1;
    cross3(f->up, f->right, f->fwd);
    f->focal = 0.5 * f->p->height / tan(0.5 * c->fov_deg * M_PI / 180.0);
    return 0;
}

/* Unit direction of the ray through the centre of pixel (x, y). */
static void pixel_ray(const frame *f, double x, double y, double dir[3])
{
    const double sx = x + 0.5 - 0.5 * f->p->width, sy = 0.5 * f->p->height - y - 0.5;
    for (int k = 0; k < 3; ++k)
        dir[k] = f->focal * f->fwd[k] + sx * f->right[k] + sy * f->up[k];
    normalize3(dir);
}

static size_t voxel_index(const vr_volume *v, int32_t i, int32_t j, int32_t k)
{
    return (size_t)i + (size_t)v->n[0] * ((size_t)j + (size_t)v->n[1] * (size_t)k);
}

/* Grid coordinates of a world point (voxel centres at integers). */
static void grid_coords(const vr_volume *v, const double p[3], double g[3])
{
    for (int k = 0; k < 3; ++k)
        g[k] = (p[k] - v->origin[k]) / v->voxel;
}

/* Trilinear interpolation of a voxel array at grid coordinates g, clamped to the
 * outermost centres. */
static double trilinear(const vr_volume *v, const float *a, const double g[3])
{
    int32_t i0[3], i1[3];
    double w[3];
    for (int k = 0; k < 3; ++k) {
        double x = g[k];
        if (x < 0.0)
            x = 0.0;
        if (x > v->n[k] - 1)
            x = v->n[k] - 1;
        i0[k] = (int32_t)x;
        i1[k] = i0[k] + 1 < v->n[k] ? i0[k] + 1 : i0[k];
        w[k] = x - i0[k];
    }
    double r = 0.0;
    for (int c = 0; c < 8; ++c) {
        const double wc = ((c & 1) ? w[0] : 1.0 - w[0]) * ((c & 2) ? w[1] : 1.0 - w[1]) *
                          ((c & 4) ? w[2] : 1.0 - w[2]);
        if (wc > 0.0)
            r += wc * a[voxel_index(v, (c & 1) ? i1[0] : i0[0], (c & 2) ? i1[1] : i0[1],
                                    (c & 4) ? i1[2] : i0[2])];
    }
    return r;
}

static int inside_box(const frame *f, const double p[3])
{
    for (int k = 0; k < 3; ++k)
        if (p[k] < f->lo[k] || p[k] > f->hi[k])
            return 0;
    return 1;
}

/* Transmittance towards the light at a world point (1 outside the grid). */
static double light_at(const frame *f, const float *trans, const double p[3])
{
    if (!inside_box(f, p))
        return 1.0;
    double g[3];
    grid_coords(f->v, p, g);
    return trilinear(f->v, trans, g);
}

/* ---- 1. solids: normals of the points, discs in a depth buffer ------------------------ */

/* Eigenvector of the smallest eigenvalue of the symmetric 3x3 matrix
 * c = (xx, yy, zz, xy, xz, yz), by Jacobi rotations. */
static void smallest_eigenvector(const double c[6], double n[3])
{
    double a[3][3] = {{c[0], c[3], c[4]}, {c[3], c[1], c[5]}, {c[4], c[5], c[2]}};
    double v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int sweep = 0; sweep < 12; ++sweep)
        for (int pq = 0; pq < 3; ++pq) {
            const int p = pq == 2 ? 1 : 0, q = pq == 0 ? 1 : 2;
            if (fabs(a[p][q]) < 1e-300)
                continue;
            const double theta = 0.5 * (a[q][q] - a[p][p]) / a[p][q];
            const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
            const double cs = 1.0 / sqrt(t * t + 1.0), sn = t * cs;
            for (int k = 0; k < 3; ++k) { /* A <- A J, V <- V J */
                const double akp = a[k][p], akq = a[k][q];
                a[k][p] = cs * akp - sn * akq;
                a[k][q] = sn * akp + cs * akq;
                const double vkp = v[k][p], vkq = v[k][q];
                v[k][p] = cs * vkp - sn * vkq;
                v[k][q] = sn * vkp + cs * vkq;
            }
            for (int k = 0; k < 3; ++k) { /* A <- J^T A */
                const double apk = a[p][k], aqk = a[q][k];
                a[p][k] = cs * apk - sn * aqk;
                a[q][k] = sn * apk + cs * aqk;
            }
        }
    const int m = a[0][0] <= a[1][1] && a[0][0] <= a[2][2] ? 0 : (a[1][1] <= a[2][2] ? 1 : 2);
    for (int k = 0; k < 3; ++k)
        n[k] = v[k][m];
}

/* Points bucketed by a hash of their cell (edge h): the neighbours of a point are in
 * the buckets of the 27 cells around it. */
typedef struct point_hash {
    double h;
    size_t mask;     /* buckets - 1, a power of two minus one */
    size_t *start;   /* buckets + 1 offsets into order */
    size_t *order;   /* point indices, by bucket */
} point_hash;

static size_t cell_bucket(const point_hash *ph, int64_t i, int64_t j, int64_t k)
{
    const uint64_t h = (uint64_t)i * UINT64_C(73856093) ^ (uint64_t)j * UINT64_C(19349663) ^
                       (uint64_t)k * UINT64_C(83492791);
    return (size_t)(h ^ (h >> 29)) & ph->mask;
}

static size_t point_bucket(const point_hash *ph, const double *q)
{
    return cell_bucket(ph, (int64_t)floor(q[0] / ph->h), (int64_t)floor(q[1] / ph->h),
                       (int64_t)floor(q[2] / ph->h));
}

static int hash_build(point_hash *ph, const vr_splats *s)
{
    size_t buckets = 1024;
    while (buckets < 2 * s->count)
        buckets *= 2;
    ph->h = s->radius;
    ph->mask = buckets - 1;
    ph->start = calloc(buckets + 1, sizeof *ph->start);
    ph->order = malloc((s->count + 1) * sizeof *ph->order);
    if (ph->start == NULL || ph->order == NULL)
        return -1;
    for (size_t k = 0; k < s->count; ++k) /* counting sort by bucket */
        ph->start[point_bucket(ph, s->xyz + 3 * k) + 1]++;
    for (size_t b = 0; b < buckets; ++b)
        ph->start[b + 1] += ph->start[b];
    for (size_t k = 0; k < s->count; ++k) {
        const size_t b = point_bucket(ph, s->xyz + 3 * k);
        ph->order[ph->start[b]++] = k;
    }
    for (size_t b = buckets; b > 0; --b) /* the loop above moved each start to its end */
        ph->start[b] = ph->start[b - 1];
    ph->start[0] = 0;
    return 0;
}

/* Normal of point k: the direction of least spread of its neighbours within the splat
 * radius (weighted by closeness); 0 if it has fewer than 3. */
static void point_normal(const vr_splats *s, const point_hash *ph, size_t k, float out[3])
{
    const double *q = s->xyz + 3 * k;
    const double r2 = s->radius * s->radius;
    const int64_t ci[3] = {(int64_t)floor(q[0] / ph->h), (int64_t)floor(q[1] / ph->h),
                           (int64_t)floor(q[2] / ph->h)};
    double sum[3] = {0, 0, 0}, c[6] = {0, 0, 0, 0, 0, 0}, n = 0.0;
    size_t count = 0;
    for (int cell = 0; cell < 27; ++cell) {
        const size_t b = cell_bucket(ph, ci[0] + cell % 3 - 1, ci[1] + cell / 3 % 3 - 1,
                                     ci[2] + cell / 9 - 1);
        int dup = 0; /* two of the 27 cells may share a bucket: visit it once */
        for (int e = 0; e < cell && !dup; ++e)
            dup = cell_bucket(ph, ci[0] + e % 3 - 1, ci[1] + e / 3 % 3 - 1, ci[2] + e / 9 - 1) == b;
        for (size_t m = ph->start[b]; !dup && m < ph->start[b + 1]; ++m) {
            const double *o = s->xyz + 3 * ph->order[m];
            const double d[3] = {o[0] - q[0], o[1] - q[1], o[2] - q[2]};
            const double d2 = dot3(d, d);
            if (d2 > r2)
                continue;
            /* nearer neighbours weigh more: a sample near an edge of a box leans less
             * towards the other face */
            const double w = exp(-4.0 * d2 / r2);
            for (int a = 0; a < 3; ++a)
                sum[a] += w * d[a];
            c[0] += w * d[0] * d[0];
            c[1] += w * d[1] * d[1];
            c[2] += w * d[2] * d[2];
            c[3] += w * d[0] * d[1];
            c[4] += w * d[0] * d[2];
            c[5] += w * d[1] * d[2];
            n += w;
            ++count;
        }
    }
    out[0] = out[1] = out[2] = 0.0f;
    if (count < 3)
        return;
    const double mean[3] = {sum[0] / n, sum[1] / n, sum[2] / n};
    const double cov[6] = {c[0] / n - mean[0] * mean[0], c[1] / n - mean[1] * mean[1],
                           c[2] / n - mean[2] * mean[2], c[3] / n - mean[0] * mean[1],
                           c[4] / n - mean[0] * mean[2], c[5] / n - mean[1] * mean[2]};
    double nv[3];
    smallest_eigenvector(cov, nv);
    if (normalize3(nv) == 0)
        for (int a = 0; a < 3; ++a)
            out[a] = (float)nv[a];
}

/* Normals of every point set, 3 floats per point (0 where unknown); NULL if out of memory. */
static float *point_normals(const vr_splats *splats, size_t nsplats, size_t *offsets)
{
    size_t total = 0;
    for (size_t s = 0; s < nsplats; ++s) {
        offsets[s] = total;
        total += splats[s].count;
    }
    float *normals = malloc((3 * total + 1) * sizeof *normals);
    if (normals == NULL)
        return NULL;
    for (size_t s = 0; s < nsplats; ++s) {
        point_hash ph = {0};
        if (hash_build(&ph, &splats[s]) != 0) {
            free(ph.start);
            free(ph.order);
            free(normals);
            return NULL;
        }
        const int64_t count = (int64_t)splats[s].count;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t k = 0; k < count; ++k)
            point_normal(&splats[s], &ph, (size_t)k, normals + 3 * (offsets[s] + (size_t)k));
        free(ph.start);
        free(ph.order);
    }
    return normals;
}

/* Draw point q of set `id` as a disc of radius r across its normal n (facing the
 * camera if n is 0): per pixel, the ray meets the disc's plane; the nearest wins. */
static void splat_point(frame *f, const double q[3], const float n[3], double r, uint32_t id)
{
    const double *eye = f->p->camera.eye;
    const double d[3] = {q[0] - eye[0], q[1] - eye[1], q[2] - eye[2]};
    const double z = dot3(d, f->fwd);
    if (!(z > r))
        return;
    const double sx = f->focal * dot3(d, f->right) / z + 0.5 * f->p->width,
                 sy = 0.5 * f->p->height - f->focal * dot3(d, f->up) / z;
    if (!(fabs(sx) < 1e6 && fabs(sy) < 1e6)) /* far off the image (or not finite) */
        return;
    double nn[3] = {n[0], n[1], n[2]};
    if (normalize3(nn) != 0)
        for (int k = 0; k < 3; ++k)
            nn[k] = -f->fwd[k];
    const double rpx = f->focal * r / z, cover = rpx > 0.75 ? rpx : 0.75; /* no holes far away */
    const int64_t x0 = (int64_t)floor(sx - cover), x1 = (int64_t)floor(sx + cover);
    const int64_t y0 = (int64_t)floor(sy - cover), y1 = (int64_t)floor(sy + cover);
    const double dn = dot3(d, nn), r2 = (rpx > 0.75 ? r * r : r * r * (0.75 / rpx) * (0.75 / rpx));
    for (int64_t y = y0 < 0 ? 0 : y0; y <= y1 && y < (int64_t)f->p->height; ++y)
        for (int64_t x = x0 < 0 ? 0 : x0; x <= x1 && x < (int64_t)f->p->width; ++x) {
            double dir[3];
            pixel_ray(f, (double)x, (double)y, dir);
            const double facing = dot3(dir, nn);
            if (fabs(facing) < 1e-3)
                continue; /* edge on */
            const double t = dn / facing;
            const double off[3] = {t * dir[0] - d[0], t * dir[1] - d[1], t * dir[2] - d[2]};
            if (!(t > 0.0) || dot3(off, off) > r2)
                continue;
            const float zz = (float)(t * dot3(dir, f->fwd));
            const size_t pix = (size_t)y * f->p->width + (size_t)x;
            if (zz < f->depth[pix]) {
                f->depth[pix] = zz;
                f->owner[pix] = id;
                for (int k = 0; k < 3; ++k)
                    f->normal[3 * pix + k] = (float)(facing > 0.0 ? -nn[k] : nn[k]);
            }
        }
}

static int splat_all(frame *f, size_t nsplats)
{
    const size_t pixels = (size_t)f->p->width * f->p->height;
    for (size_t k = 0; k < pixels; ++k)
        f->depth[k] = INFINITY;
    size_t offsets[64];
    size_t done = 0;
    while (done < nsplats) { /* in groups of 64 point sets */
        const size_t group = nsplats - done < 64 ? nsplats - done : 64;
        float *normals = point_normals(f->splats + done, group, offsets);
        if (normals == NULL)
            return -1;
        for (size_t s = 0; s < group; ++s) {
            const vr_splats *sp = &f->splats[done + s];
            for (size_t k = 0; k < sp->count; ++k)
                splat_point(f, sp->xyz + 3 * k, normals + 3 * (offsets[s] + k), sp->radius,
                            (uint32_t)(done + s));
        }
        free(normals);
        done += group;
    }
    return 0;
}

/* ---- 2. light: transmittance to the light, one sweep over the slices ----------------- */

/* Extinction per world unit of every voxel: the smoke's plus the solids' samples. */
static float *extinction_grid(const frame *f, size_t nsplats, int with_solids)
{
    const vr_volume *v = f->v;
    float *sig = malloc(f->cells * sizeof *sig);
    if (sig == NULL)
        return NULL;
    for (size_t k = 0; k < f->cells; ++k)
        sig[k] = v->density != NULL ? (float)(f->p->extinction * v->density[k]) : 0.0f;
    const float solid = with_solids ? (float)(f->p->solid_extinction / v->voxel) : 0.0f;
    for (size_t s = 0; s < nsplats && solid > 0.0f; ++s)
        for (size_t k = 0; k < f->splats[s].count; ++k) {
            /* into the 8 voxels around the point, so that the shell is closed to
             * light that crosses it obliquely */
            double g[3];
            grid_coords(v, f->splats[s].xyz + 3 * k, g);
            if (!(g[0] > -1.0 && g[1] > -1.0 && g[2] > -1.0 && g[0] < v->n[0] &&
                  g[1] < v->n[1] && g[2] < v->n[2]))
                continue; /* outside the grid (or not finite) */
            for (int c = 0; c < 8; ++c) {
                int32_t i[3];
                int ok = 1;
                for (int a = 0; a < 3; ++a) {
                    i[a] = (int32_t)floor(g[a]) + ((c >> a) & 1);
                    ok = ok && i[a] >= 0 && i[a] < v->n[a];
                }
                if (ok && sig[voxel_index(v, i[0], i[1], i[2])] < solid)
                    sig[voxel_index(v, i[0], i[1], i[2])] = solid;
            }
        }
    return sig;
}

/* Bilinear read of a slice (b, c plane at index s of axis a) at (u, w); outside
 * the slice the light arrives untouched: transmittance 1, no extinction. */
typedef struct slice_geom {
    int32_t n[3];
    size_t stride[3];
    int a, b, c;
} slice_geom;

static void slice_read(const slice_geom *sg, const float *trans, const float *sig, int32_t s,
                       double u, double w, double *t_out, double *sig_out)
{
    const double fu = floor(u), fw = floor(w);
    const int32_t u0 = (int32_t)fu, w0 = (int32_t)fw;
    const double au = u - fu, aw = w - fw;
    double t = 0.0, e = 0.0;
    for (int corner = 0; corner < 4; ++corner) {
        const int32_t uu = u0 + (corner & 1), ww = w0 + (corner >> 1);
        const double wt = ((corner & 1) ? au : 1.0 - au) * ((corner >> 1) ? aw : 1.0 - aw);
        if (s < 0 || s >= sg->n[sg->a] || uu < 0 || uu >= sg->n[sg->b] || ww < 0 ||
            ww >= sg->n[sg->c]) {
            t += wt;
            continue;
        }
        const size_t idx = (size_t)s * sg->stride[sg->a] + (size_t)uu * sg->stride[sg->b] +
                           (size_t)ww * sg->stride[sg->c];
        t += wt * trans[idx];
        e += wt * sig[idx];
    }
    *t_out = t;
    *sig_out = e;
}

/* T(voxel) = T(the point one slice towards the light) exp(-ds (sigma + sigma') / 2),
 * slices in order from the light's side. */
static void sweep_light(const frame *f, const float *sig, float *trans)
{
    const vr_volume *v = f->v;
    slice_geom sg = {{v->n[0], v->n[1], v->n[2]},
                     {1, (size_t)v->n[0], (size_t)v->n[0] * (size_t)v->n[1]},
                     0, 1, 2};
    const double *L = f->light;
    sg.a = fabs(L[0]) >= fabs(L[1]) && fabs(L[0]) >= fabs(L[2]) ? 0
           : fabs(L[1]) >= fabs(L[2])                         ? 1
                                                              : 2;
    sg.b = (sg.a + 1) % 3;
    sg.c = (sg.a + 2) % 3;
    const double la = fabs(L[sg.a]), du = L[sg.b] / la, dw = L[sg.c] / la;
    const double ds = v->voxel / la;
    const int32_t towards = L[sg.a] > 0.0 ? 1 : -1, na = sg.n[sg.a];
    for (int32_t step = 0; step < na; ++step) {
        const int32_t s = towards > 0 ? na - 1 - step : step, prev = s + towards;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int32_t w = 0; w < sg.n[sg.c]; ++w)
            for (int32_t u = 0; u < sg.n[sg.b]; ++u) {
                const size_t idx = (size_t)s * sg.stride[sg.a] + (size_t)u * sg.stride[sg.b] +
                                   (size_t)w * sg.stride[sg.c];
                double t_prev, sig_prev;
                slice_read(&sg, trans, sig, prev, u + du, w + dw, &t_prev, &sig_prev);
                trans[idx] = (float)(t_prev * exp(-0.5 * ds * (sig[idx] + sig_prev)));
            }
    }
}

/* ---- empty-space skipping ------------------------------------------------------------ */

/* Mark the bricks that a trilinear sample of smoke may read: a voxel with smoke
 * is read from anywhere within one voxel of it. 0, or -1 if out of memory. */
static int build_bricks(frame *f)
{
    const vr_volume *v = f->v;
    for (int a = 0; a < 3; ++a)
        f->nb[a] = (v->n[a] + BRICK - 1) / BRICK;
    f->brick = calloc((size_t)f->nb[0] * (size_t)f->nb[1] * (size_t)f->nb[2], 1);
    if (f->brick == NULL)
        return -1;
    if (v->density == NULL)
        return 0;
    for (int32_t k = 0; k < v->n[2]; ++k)
        for (int32_t j = 0; j < v->n[1]; ++j)
            for (int32_t i = 0; i < v->n[0]; ++i) {
                if (!(v->density[voxel_index(v, i, j, k)] > 0.0f))
                    continue;
                const int32_t at[3] = {i, j, k};
                int32_t lo[3], hi[3];
                for (int a = 0; a < 3; ++a) {
                    lo[a] = (at[a] > 0 ? at[a] - 1 : 0) / BRICK;
                    hi[a] = (at[a] + 1 < v->n[a] ? at[a] + 1 : at[a]) / BRICK;
                }
                for (int32_t bz = lo[2]; bz <= hi[2]; ++bz)
                    for (int32_t by = lo[1]; by <= hi[1]; ++by)
                        for (int32_t bx = lo[0]; bx <= hi[0]; ++bx)
                            f->brick[(size_t)bx + (size_t)f->nb[0] * ((size_t)by +
                                                                      (size_t)f->nb[1] * bz)] = 1;
            }
    return 0;
}

/* Whether the trilinear sample at grid coordinates g may see smoke. */
static int brick_has_smoke(const frame *f, const double g[3])
{
    size_t b[3];
    for (int a = 0; a < 3; ++a) {
        const double x = g[a] < 0.0 ? 0.0 : (g[a] > f->v->n[a] - 1 ? f->v->n[a] - 1 : g[a]);
        b[a] = (size_t)x / BRICK;
    }
    return f->brick[b[0] + (size_t)f->nb[0] * (b[1] + (size_t)f->nb[1] * b[2])];
}

/* ---- 3. and 4. rays ------------------------------------------------------------------ */

/* Entry and exit of the ray in the grid's box; 0, or -1 if it misses. */
static int box_span(const frame *f, const double o[3], const double d[3], double *t0, double *t1)
{
    double lo = 0.0, hi = INFINITY;
    for (int k = 0; k < 3; ++k) {
        if (fabs(d[k]) < 1e-15) {
            if (o[k] < f->lo[k] || o[k] > f->hi[k])
                return -1;
            continue;
        }
        double a = (f->lo[k] - o[k]) / d[k], b = (f->hi[k] - o[k]) / d[k];
        if (a > b) {
            const double tmp = a;
            a = b;
            b = tmp;
        }
        lo = a > lo ? a : lo;
        hi = b < hi ? b : hi;
    }
    *t0 = lo;
    *t1 = hi;
    return lo < hi ? 0 : -1;
}

/* Colour of what the ray meets behind the smoke: solid, floor or sky. */
static void background(const frame *f, const double dir[3], int64_t x, int64_t y, double t_solid,
                       double t_floor, double col[3])
{
    const vr_params *p = f->p;
    if (isfinite(t_solid)) {
        double q[3], n[3];
        for (int k = 0; k < 3; ++k)
            q[k] = p->camera.eye[k] + t_solid * dir[k];
        const float *pn = f->normal + 3 * ((size_t)y * p->width + (size_t)x);
        for (int k = 0; k < 3; ++k)
            n[k] = pn[k];
        const double diffuse =
            dot3(n, f->light) > 0.0 ? dot3(n, f->light) * light_at(f, f->trans_smoke, q) : 0.0;
        const double sky = 0.7 + 0.3 * n[1];
        const float *alb = f->splats[f->owner[(size_t)y * p->width + (size_t)x]].albedo;
        for (int k = 0; k < 3; ++k)
            col[k] = alb[k] * (p->ambient[k] * sky + p->light[k] * diffuse);
        return;
    }
    if (isfinite(t_floor)) {
        double q[3];
        for (int k = 0; k < 3; ++k)
            q[k] = p->camera.eye[k] + t_floor * dir[k];
        const int check = ((int64_t)floor(q[0] / 16.0) + (int64_t)floor(q[2] / 16.0)) & 1;
        double g[3]; /* the floor lies under the grid: its lowest layer's shadow, clamped */
        grid_coords(f->v, q, g);
        const double diffuse = f->light[1] > 0.0 ? f->light[1] * trilinear(f->v, f->trans, g) : 0.0;
        for (int k = 0; k < 3; ++k)
            col[k] = p->floor_albedo[k] * (check ? 0.92 : 1.0) *
                     (p->ambient[k] + p->light[k] * diffuse);
        return;
    }
    const double up = clamp01(0.5 + 1.2 * dir[1]);
    for (int k = 0; k < 3; ++k)
        col[k] = p->sky_bottom[k] + (p->sky_top[k] - p->sky_bottom[k]) * up;
}

/* March [t0, t_end) through the smoke: the light it scatters towards the eye into
 * col, what it lets through into *tr. */
static void march(const frame *f, const double dir[3], double t0, double t_end, double jitter,
                  double col[3], double *tr)
{
    const vr_params *p = f->p;
    const double h = p->step * f->v->voxel;
    double T = 1.0;
    for (double t = t0 + jitter * h; t < t_end && T > VR_MIN_TRANSMITTANCE; t += h) {
        double q[3], g[3];
        for (int k = 0; k < 3; ++k)
            q[k] = p->camera.eye[k] + t * dir[k];
        grid_coords(f->v, q, g);
        if (!brick_has_smoke(f, g))
            continue; /* empty space: no interpolation */
        const double rho = trilinear(f->v, f->v->density, g);
        if (!(rho > 0.0))
            continue;
        const double len = t + h < t_end ? h : t_end - t;
        const double alpha = 1.0 - exp(-p->extinction * rho * len);
        const double lit = trilinear(f->v, f->trans, g);
        for (int k = 0; k < 3; ++k)
            col[k] += T * alpha * p->smoke_albedo[k] * (p->light[k] * lit + p->ambient[k]);
        T *= 1.0 - alpha;
    }
    *tr = T;
}

static uint8_t to_byte(double linear, const vr_params *p)
{
    /* a soft shoulder instead of clipping: 1 - exp(-exposure c) */
    const double mapped = 1.0 - exp(-p->exposure * (linear > 0.0 ? linear : 0.0));
    return (uint8_t)(255.0 * pow(clamp01(mapped), 1.0 / p->gamma) + 0.5);
}

static void shade_pixel(const frame *f, uint32_t x, uint32_t y, uint8_t *out)
{
    const vr_params *p = f->p;
    double dir[3];
    pixel_ray(f, x, y, dir);
    const float zs = f->depth[(size_t)y * p->width + x];
    const double t_solid = isfinite(zs) ? zs / dot3(dir, f->fwd) : INFINITY;
    double t_floor = INFINITY;
    if (p->floor && dir[1] < -1e-9 && p->camera.eye[1] > p->floor_y) {
        t_floor = (p->floor_y - p->camera.eye[1]) / dir[1];
        const double fx = p->camera.eye[0] + t_floor * dir[0],
                     fz = p->camera.eye[2] + t_floor * dir[2];
        if (fx < f->lo[0] || fx > f->hi[0] || fz < f->lo[2] || fz > f->hi[2])
            t_floor = INFINITY; /* the floor is the grid's footprint */
    }
    if (t_floor > t_solid)
        t_floor = INFINITY;
    double col[3] = {0.0, 0.0, 0.0}, T = 1.0, t0, t1;
    if (f->v->density != NULL && box_span(f, p->camera.eye, dir, &t0, &t1) == 0) {
        const double t_end = t1 < t_solid ? (t1 < t_floor ? t1 : t_floor) : t_solid;
        if (t0 < t_end)
            march(f, dir, t0, t_end, pixel_hash(x, y), col, &T);
    }
    double back[3];
    background(f, dir, x, y, t_solid, t_floor, back);
    for (int k = 0; k < 3; ++k)
        out[k] = to_byte(col[k] + T * back[k], p);
}

/* ---- entry point --------------------------------------------------------------------- */

static int frame_init(frame *f, const vr_params *p, const vr_volume *v, const vr_splats *s)
{
    memset(f, 0, sizeof *f);
    f->p = p;
    f->v = v;
    f->splats = s;
    f->cells = (size_t)v->n[0] * (size_t)v->n[1] * (size_t)v->n[2];
    memcpy(f->light, p->light_dir, sizeof f->light);
    if (frame_camera(f) != 0 || normalize3(f->light) != 0)
        return -2;
    for (int k = 0; k < 3; ++k) {
        f->lo[k] = v->origin[k] - 0.5 * v->voxel;
        f->hi[k] = v->origin[k] + (v->n[k] - 0.5) * v->voxel;
    }
    const size_t pixels = (size_t)p->width * p->height;
    f->trans = malloc(f->cells * sizeof *f->trans);
    f->depth = malloc(pixels * sizeof *f->depth);
    f->normal = malloc(3 * pixels * sizeof *f->normal);
    f->owner = calloc(pixels, sizeof *f->owner);
    return f->trans != NULL && f->depth != NULL && f->normal != NULL && f->owner != NULL ? 0
                                                                                          : -1;
}

/* The transmittance grids: through smoke and solids (lights the smoke and the floor),
 * through the smoke alone (lights the solids). 0, or -1 if out of memory. */
static int light_grids(frame *f, size_t nsplats)
{
    const int solids = nsplats > 0 && f->p->solid_extinction > 0.0;
    f->trans_smoke = malloc(f->cells * sizeof *f->trans_smoke);
    float *sig = extinction_grid(f, nsplats, 1);
    if (sig == NULL || f->trans_smoke == NULL) {
        free(sig);
        return -1;
    }
    sweep_light(f, sig, f->trans);
    free(sig);
    if (!solids) {
        memcpy(f->trans_smoke, f->trans, f->cells * sizeof *f->trans_smoke);
        return 0;
    }
    if ((sig = extinction_grid(f, nsplats, 0)) == NULL)
        return -1;
    sweep_light(f, sig, f->trans_smoke);
    free(sig);
    return 0;
}

int vr_render(uint8_t *rgb, const vr_params *p, const vr_volume *volume, const vr_splats *splats,
              size_t nsplats, char *err, size_t err_size)
{
    const char *bad = rgb == NULL || p == NULL     ? "NULL image or parameters"
                      : nsplats > 0 && splats == NULL ? "NULL point sets"
                                                      : check(p, volume, splats, nsplats);
    if (bad != NULL) {
        snprintf(err, err_size, "volume renderer: %s", bad);
        return -1;
    }
    frame f;
    const int init = frame_init(&f, p, volume, splats);
    if (init != 0 || light_grids(&f, nsplats) != 0 || build_bricks(&f) != 0) {
        snprintf(err, err_size, "volume renderer: %s",
                 init == -2 ? "the camera's up vector or the light direction is degenerate"
                            : "out of memory");
        frame_free(&f);
        return -1;
    }
    if (splat_all(&f, nsplats) != 0) {
        snprintf(err, err_size, "volume renderer: out of memory");
        frame_free(&f);
        return -1;
    }
    const int64_t height = p->height;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 2)
#endif
    for (int64_t y = 0; y < height; ++y)
        for (uint32_t x = 0; x < p->width; ++x)
            shade_pixel(&f, x, (uint32_t)y, rgb + 3 * ((size_t)y * p->width + x));
    frame_free(&f);
    return 0;
}
