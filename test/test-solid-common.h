/*
 * libacmlbm tests -- helpers of the immersed-solid tests: layouts, fields,
 * interpolation, fits, sample sets of simple shapes.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_TEST_SOLID_COMMON_H
#define ACMLBM_TEST_SOLID_COMMON_H

#include "test-common.h"

/* A layout with one parameter set (caller destroys); with
 * ACM_TEST_STORAGE=moments it keeps moment storage unless the parameter is
 * the storage, so that a suite on moment storage stays on it through its
 * re-layouts. */
static inline acm_layout *acm_test_layout(acm_layout_param param, int64_t value)
{
    acm_layout *l = NULL;
    ck_assert_int_eq(acm_layout_create(&l), ACM_OK);
    if (acm_test_moments())
        ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS), ACM_OK);
    ck_assert_msg(acm_layout_set(l, param, value) == ACM_OK, "%s", acm_layout_last_error(l));
    return l;
}

/* The velocity field of a domain (caller frees). */
static inline double *acm_test_velocity(acm_domain *d)
{
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    ACM_CK_OK(d, acm_domain_get_info(d, &info));
    const size_t cells = (size_t)info.nx * (size_t)info.ny * (size_t)info.nz;
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_VELOCITY, ACM_DTYPE_FLOAT64, u,
                                      3 * cells * sizeof(double)));
    return u;
}

/* u_x at (x, y) of an nx x ny x 1 velocity field, bilinear, x periodic. */
static inline double acm_test_interp_x(const double *u, int nx, int ny, double x, double y)
{
    const int x0 = (int)floor(x), y0 = (int)floor(y);
    const double fx = x - x0, fy = y - y0;
    double v = 0.0;
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            const int xi = ((x0 + dx) % nx + nx) % nx, yi = y0 + dy;
            if (yi < 0 || yi >= ny)
                continue;
            v += (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy) * u[3 * (xi + nx * yi)];
        }
    return v;
}

/* n points spread evenly over a sphere of radius R (Fibonacci lattice), each
 * with the area 4 pi R^2 / n (caller frees both arrays). */
static inline void acm_test_sphere_points(int n, double R, double **pts, double **areas)
{
    *pts = acm_test_alloc(3 * (size_t)n * sizeof(double));
    *areas = acm_test_alloc((size_t)n * sizeof(double));
    const double golden = M_PI * (3.0 - sqrt(5.0));
    for (int l = 0; l < n; ++l) {
        const double z = 1.0 - (2.0 * l + 1.0) / n, r = sqrt(1.0 - z * z), phi = golden * l;
        (*pts)[3 * l] = R * r * cos(phi);
        (*pts)[3 * l + 1] = R * r * sin(phi);
        (*pts)[3 * l + 2] = R * z;
        (*areas)[l] = 4.0 * M_PI * R * R / n;
    }
}

/* Total momentum sum f c of the populations (without any half force). */
static inline void acm_test_raw_momentum(acm_domain *d, size_t cells, double j[3])
{
    double *f = acm_test_alloc(27 * cells * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, ACM_FIELD_POPULATIONS, ACM_DTYPE_FLOAT64, f,
                                      27 * cells * sizeof(double)));
    static const int c[27][3] = {{0, 0, 0},   {1, 0, 0},   {-1, 0, 0}, {0, 1, 0},  {0, -1, 0},
                                 {0, 0, 1},   {0, 0, -1},  {1, 1, 0},  {-1, -1, 0}, {1, 0, 1},
                                 {-1, 0, -1}, {0, 1, 1},   {0, -1, -1}, {1, -1, 0}, {-1, 1, 0},
                                 {1, 0, -1},  {-1, 0, 1},  {0, 1, -1}, {0, -1, 1}, {1, 1, 1},
                                 {-1, -1, -1}, {1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {-1, 1, -1},
                                 {-1, 1, 1},  {1, -1, -1}};
    j[0] = j[1] = j[2] = 0.0;
    for (size_t k = 0; k < cells; ++k)
        for (int i = 0; i < 27; ++i)
            for (int a = 0; a < 3; ++a)
                j[a] += c[i][a] * f[27 * k + (size_t)i];
    free(f);
}

/* Largest |a - b| over n values. */
static inline double acm_test_max_diff(const double *a, const double *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; ++i)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* Options of a sphere of radius R from n caller samples at pos, moving at
 * (0.03, 0, 0) and spinning at 0.01 about z (prescribed); *pts and *areas
 * hold the samples until the caller frees them after acm_solid_create. */
static inline acm_solid_options acm_test_moving_sphere(int n, double R, const double pos[3],
                                                       double **pts, double **areas)
{
    acm_test_sphere_points(n, R, pts, areas);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = (size_t)n;
    so.sample_points = *pts;
    so.sample_areas = *areas;
    for (int a = 0; a < 3; ++a)
        so.position[a] = pos[a];
    so.motion = ACM_MOTION_PRESCRIBED;
    so.velocity[0] = 0.03;
    so.angular_velocity[2] = 0.01;
    return so;
}


/* ---- spheres of caller samples ------------------------------------------------------- */

/* What a test sphere is and how it moves. */
typedef struct acm_test_sphere {
    double R;          /* hydrodynamic radius */
    double inset;      /* samples lie this far inside R (docs/physics.md, "effective surface") */
    double per_area;   /* samples per cell^2 */
    double x[3];       /* centre */
    acm_motion motion;
    double v[3], w[3];
    double density;    /* FREE: density ratio */
    double g[3];       /* FREE: gravity */
} acm_test_sphere;

static inline acm_test_sphere acm_test_sphere_default(double R, double x, double y, double z)
{
    acm_test_sphere s;
    memset(&s, 0, sizeof s);
    s.R = R;
    s.inset = 0.3;
    s.per_area = 4.0;
    s.x[0] = x;
    s.x[1] = y;
    s.x[2] = z;
    s.motion = ACM_MOTION_STATIC;
    return s;
}

/* Put a sphere into a domain. */
static inline acm_status acm_test_try_sphere(acm_domain *d, const acm_test_sphere *sp,
                                             acm_solid **out)
{
    const double r = sp->R - sp->inset;
    const int n = (int)ceil(sp->per_area * 4.0 * M_PI * r * r);
    double *pts, *areas;
    acm_test_sphere_points(n, r, &pts, &areas);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = (size_t)n;
    so.sample_points = pts;
    so.sample_areas = areas;
    memcpy(so.position, sp->x, sizeof so.position);
    so.motion = sp->motion;
    memcpy(so.velocity, sp->v, sizeof so.velocity);
    memcpy(so.angular_velocity, sp->w, sizeof so.angular_velocity);
    if (sp->motion == ACM_MOTION_FREE) {
        so.volume = 4.0 / 3.0 * M_PI * sp->R * sp->R * sp->R;
        so.density = sp->density;
        for (int a = 0; a < 3; ++a)
            so.inertia[a] = 0.4 * sp->density * so.volume * sp->R * sp->R;
        memcpy(so.gravity, sp->g, sizeof so.gravity);
    }
    const acm_status st = acm_solid_create(out, d, &so);
    free(pts);
    free(areas);
    return st;
}

static inline acm_solid *acm_test_add_sphere(acm_domain *d, const acm_test_sphere *sp)
{
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_test_try_sphere(d, sp, &s));
    return s;
}

/* A unit cube as a closed mesh, and a solid of it. */
static inline acm_solid *acm_test_cube_solid_dense(acm_domain *d, double side, const double c[3],
                                                   acm_motion motion, double density)
{
    static const double v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
                                    0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
    static const uint32_t t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                       2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
    acm_mesh *m = NULL;
    ck_assert_int_eq(acm_mesh_create(&m, v, 8, t, 12, NULL), ACM_OK);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = m;
    so.scale = side;
    so.samples_per_cell = 2.0;
    so.motion = motion;
    so.density = density;
    memcpy(so.position, c, sizeof so.position);
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_solid_create(&s, d, &so));
    acm_mesh_destroy(m);
    return s;
}

/* A cube of edge `side` cells centred at c, from a closed mesh (no mass). */
static inline acm_solid *acm_test_cube_solid(acm_domain *d, double side, const double c[3],
                                             acm_motion motion)
{
    return acm_test_cube_solid_dense(d, side, c, motion, 0.0);
}

/* Full-size validation runs: on the GPU, or with ACM_TEST_FULL=1. */
static inline int acm_test_full(void)
{
    const char *e = getenv("ACM_TEST_FULL");
    return acm_test_backend() == ACM_BACKEND_CUDA || (e != NULL && atoi(e) > 0);
}

#endif /* ACMLBM_TEST_SOLID_COMMON_H */
