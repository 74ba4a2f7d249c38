/*
 * libacmlbm tests -- immersed solids against known answers: the IB plane in
 * Couette flow (physics-spec 11.7), the conservative spreading identity,
 * independence of sample order, sampling density and spreading variant.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"
#include "test-solid-common.h"

#include "shapes.h"

/* ---- 11.7 immersed-boundary plane in Couette flow ------------------------------------ */

typedef struct plane_result {
    double slip;     /* mean u_x at the samples / U */
    double below;    /* max |u_x| below the plane (y < y_p - 2) / U */
    double force;    /* force per unit area on the plane / (nu U / (H - 1/2 - y_p)) */
    double y_shift;  /* effective no-slip position - y_p */
} plane_result;

/* Box 8 x H x 1 between a resting wall (y = -1/2) and one moving at U (y = H -
 * 1/2), tau = 0.8, CM(1); a static plane of samples at y = y_p, `per_cell`
 * samples per cell; steady state after 5 H^2 / nu steps. */
static plane_result ib_plane(double y_p, int per_cell, int iterations, acm_ib_spread spread)
{
    const int nx = 8, H = 24;
    const double U = 0.02, tau = 0.8, nu = (tau - 0.5) / 3.0;
    acm_layout *layout = acm_test_layout(ACM_LAYOUT_IB_SPREAD, spread);
    acm_domain_options o = acm_test_options(nx, H, 1, nu, ACM_COLLISION_CM_MRT, ACM_PRECISION_FP64);
    o.layout = layout;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(layout);
    acm_test_set_cm(d, 1.0);
    const double zero[3] = {0, 0, 0}, lid[3] = {U, 0, 0};
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, zero));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid));
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, iterations));
    const int n = nx * per_cell;
    double *pts = acm_test_alloc(3 * (size_t)n * sizeof(double));
    double *areas = acm_test_alloc((size_t)n * sizeof(double));
    for (int l = 0; l < n; ++l) {
        pts[3 * l] = (double)l / per_cell;
        areas[l] = 1.0 / per_cell;
    }
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = (size_t)n;
    so.sample_points = pts;
    so.sample_areas = areas;
    so.position[1] = y_p;
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_solid_create(&s, d, &so));
    ACM_CK_OK(d, acm_step(d, (int64_t)(5.0 * H * H / nu)));

    double *u = acm_test_velocity(d);
    plane_result r = {0, 0, 0, 0};
    /* slip: u_x interpolated at the samples (trilinear in x, y) */
    double *X = acm_test_alloc(3 * (size_t)n * sizeof(double));
    ACM_CK_OK(d, acm_solid_get_samples(s, X, (size_t)n));
    for (int l = 0; l < n; ++l)
        r.slip += acm_test_interp_x(u, nx, H, X[3 * l], X[3 * l + 1]) / (n * U);
    /* profile: mean over x */
    double prof[64], ys[64], ps[64];
    int m = 0;
    for (int y = 0; y < H; ++y) {
        prof[y] = 0;
        for (int x = 0; x < nx; ++x)
            prof[y] += u[3 * (x + nx * y)] / nx;
        if (y < y_p - 2 && fabs(prof[y]) / U > r.below)
            r.below = fabs(prof[y]) / U;
        if (y > y_p + 2) {
            ys[m] = y;
            ps[m++] = prof[y];
        }
    }
    double slope, icpt;
    acm_test_line_fit(ys, ps, m, &slope, &icpt);
    r.y_shift = -icpt / slope - y_p;
    double F[3];
    ACM_CK_OK(d, acm_solid_get_force(s, F, NULL));
    r.force = F[0] / nx / (nu * U / (H - 0.5 - y_p));
    free(X);
    free(u);
    free(pts);
    free(areas);
    acm_domain_destroy(d);
    return r;
}

START_TEST(ib_plane_couette_matches_reference)
{
    /* physics-spec 11.7 (our y = the reference's y - 1): alpha = 2, m = 1 */
    plane_result r = ib_plane(7.3, 2, 1, ACM_IB_SPREAD_SCATTER);
    printf("IB plane m=1: slip %.3e below %.3e force %.4f shift %.3f\n", r.slip, r.below,
           r.force, r.y_shift);
    ck_assert_msg(fabs(r.slip) < 2e-3, "slip %g U", r.slip);
    ck_assert_msg(fabs(r.force - 1.055) < 0.005, "force ratio %g, reference 1.055", r.force);
    ck_assert_msg(fabs(r.y_shift - 0.29) < 0.03, "effective plane shift %g, reference 0.29",
                  r.y_shift);
    ck_assert_msg(fabs(r.below - 1.3e-2) < 2e-3, "flow below the plane %g U, reference 1.3e-2",
                  r.below);
}
END_TEST

START_TEST(ib_plane_multi_direct_forcing)
{
    plane_result r = ib_plane(7.3, 2, 5, ACM_IB_SPREAD_SCATTER);
    printf("IB plane m=5: slip %.3e below %.3e force %.4f shift %.3f\n", r.slip, r.below,
           r.force, r.y_shift);
    ck_assert_msg(fabs(r.slip) < 1e-4, "slip %g U with 5 iterations", r.slip);
    ck_assert_msg(fabs(r.force - 1.060) < 0.005, "force ratio %g, reference 1.060", r.force);
    ck_assert_msg(fabs(r.y_shift) < 0.5, "effective plane shift %g", r.y_shift);
}
END_TEST

START_TEST(ib_plane_independent_of_density_and_spreading)
{
    plane_result a = ib_plane(7.3, 2, 1, ACM_IB_SPREAD_SCATTER);
    plane_result b = ib_plane(7.3, 4, 1, ACM_IB_SPREAD_SCATTER);
    plane_result c = ib_plane(7.3, 2, 1, ACM_IB_SPREAD_GATHER);
    /* 2 and 4 samples per cell: identical up to round-off (spec 11.7) */
    ck_assert_msg(fabs(a.slip - b.slip) < 1e-10 && fabs(a.force - b.force) < 1e-10,
                  "2/cell: slip %.15g force %.15g; 4/cell: slip %.15g force %.15g", a.slip,
                  a.force, b.slip, b.force);
    ck_assert_msg(fabs(a.slip - c.slip) < 1e-12 && fabs(a.force - c.force) < 1e-12,
                  "scatter: slip %.15g force %.15g; gather: slip %.15g force %.15g", a.slip,
                  a.force, c.slip, c.force);
}
END_TEST

TEST_SUITE(solids_plane)
{
    Suite *s = suite_create("solids_plane");
    TCase *tc = acm_tcase("plane", 600);
    tcase_add_test(tc, ib_plane_couette_matches_reference);
    tcase_add_test(tc, ib_plane_multi_direct_forcing);
    tcase_add_test(tc, ib_plane_independent_of_density_and_spreading);
    suite_add_tcase(s, tc);
    return s;
}

/* ---- a sphere of caller samples in a periodic box ------------------------------------- */

typedef struct sphere_case {
    int n;                   /* box edge */
    double R;                /* sphere radius */
    int samples;
    acm_motion motion;
    double v[3], w[3];       /* sphere velocities */
    double u0[3];            /* initial fluid velocity */
    acm_sample_order order;
    acm_ib_spread spread;
    int block;               /* l; 0 = default */
    int iterations;
} sphere_case;

static sphere_case sphere_defaults(void)
{
    sphere_case c;
    memset(&c, 0, sizeof c);
    c.n = 16;
    c.R = 3.5;
    c.samples = 600;
    c.motion = ACM_MOTION_STATIC;
    c.u0[0] = 0.03;
    c.u0[1] = 0.01;
    c.order = ACM_SAMPLE_ORDER_MORTON_BLOCK;
    c.spread = ACM_IB_SPREAD_SCATTER;
    c.iterations = 1;
    return c;
}

/* The domain and solid of a case (FP64, tau = 0.8). */
static acm_domain *sphere_domain(const sphere_case *c, acm_solid **solid)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_SAMPLE_ORDER, c->order);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_IB_SPREAD, c->spread), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_SAMPLE_BLOCK, c->block), ACM_OK);
    acm_domain_options o = acm_test_options(c->n, c->n, c->n, 0.1, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP64);
    o.layout = l;
    memcpy(o.initial_velocity, c->u0, sizeof c->u0);
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    ACM_CK_OK(d, acm_domain_set_param(d, ACM_PARAM_IB_ITERATIONS, c->iterations));
    double *pts, *areas;
    acm_test_sphere_points(c->samples, c->R, &pts, &areas);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = (size_t)c->samples;
    so.sample_points = pts;
    so.sample_areas = areas;
    so.position[0] = so.position[1] = so.position[2] = 0.5 * c->n - 0.3;
    so.motion = c->motion;
    memcpy(so.velocity, c->v, sizeof c->v);
    memcpy(so.angular_velocity, c->w, sizeof c->w);
    ACM_CK_OK(d, acm_solid_create(solid, d, &so));
    free(pts);
    free(areas);
    return d;
}

/* Run a case for `steps` steps; its force, torque and velocity field. */
static double *sphere_run(const sphere_case *c, int steps, double F[3], double T[3])
{
    acm_solid *s = NULL;
    acm_domain *d = sphere_domain(c, &s);
    ACM_CK_OK(d, acm_step(d, steps));
    ACM_CK_OK(d, acm_solid_get_force(s, F, T));
    double *u = acm_test_velocity(d);
    acm_domain_destroy(d);
    return u;
}

/* Two cases give the same forces and flow up to round-off. */
static void expect_same_run(const sphere_case *a, const sphere_case *b, int steps, double tol,
                            const char *what)
{
    double Fa[3], Ta[3], Fb[3], Tb[3];
    double *ua = sphere_run(a, steps, Fa, Ta), *ub = sphere_run(b, steps, Fb, Tb);
    const double scale = fmax(1e-6, sqrt(Fa[0] * Fa[0] + Fa[1] * Fa[1] + Fa[2] * Fa[2]));
    ck_assert_msg(acm_test_max_diff(Fa, Fb, 3) < tol * scale && acm_test_max_diff(Ta, Tb, 3) < tol * scale * a->R,
                  "%s: force (%.15g, %.15g, %.15g) vs (%.15g, %.15g, %.15g)", what, Fa[0], Fa[1],
                  Fa[2], Fb[0], Fb[1], Fb[2]);
    const size_t cells = (size_t)a->n * a->n * a->n;
    const double du = acm_test_max_diff(ua, ub, 3 * cells);
    ck_assert_msg(du < tol * 0.03, "%s: velocity fields differ by %g", what, du);
    free(ua);
    free(ub);
}

START_TEST(sample_order_does_not_change_forces)
{
    sphere_case a = sphere_defaults(), b = a;
    b.order = ACM_SAMPLE_ORDER_AS_SAMPLED;
    expect_same_run(&a, &b, 20, 1e-12, "Morton-block vs as sampled");
    b = a;
    b.block = 8;
    expect_same_run(&a, &b, 20, 1e-12, "l = 2 vs l = 8");
}
END_TEST

START_TEST(scatter_equals_gather)
{
    sphere_case a = sphere_defaults(), b = a;
    a.iterations = b.iterations = 2;
    b.spread = ACM_IB_SPREAD_GATHER;
    expect_same_run(&a, &b, 20, 1e-12, "scatter vs gather");
    /* a moving sphere: the gather boxes follow it */
    a.motion = b.motion = ACM_MOTION_PRESCRIBED;
    a.v[0] = b.v[0] = -0.04;
    a.w[2] = b.w[2] = 0.005;
    expect_same_run(&a, &b, 40, 1e-12, "scatter vs gather, moving");
}
END_TEST

START_TEST(moving_solid_resorts_without_changing_forces)
{
    sphere_case a = sphere_defaults(), b = a;
    a.motion = b.motion = ACM_MOTION_PRESCRIBED;
    a.v[0] = b.v[0] = 0.05;
    a.v[2] = b.v[2] = -0.02;
    a.w[1] = b.w[1] = 0.01;
    a.block = 1;
    b.order = ACM_SAMPLE_ORDER_AS_SAMPLED;
    acm_solid *s = NULL;
    acm_domain *d = sphere_domain(&a, &s);
    ACM_CK_OK(d, acm_step(d, 60));
    acm_solid_info info = {ACM_SOLID_INFO_VERSION, 0, 0, 0, 0, 0, 0, {0}, 0, 0};
    ACM_CK_OK(d, acm_solid_get_info(s, &info));
    /* 60 steps at |v| + |w| r_max = 0.089 move a sample by up to 5.4 cells: a re-sort
     * per cell of l = 1, plus the sort at creation */
    ck_assert_msg(info.resorts >= 5, "%lld re-sorts", (long long)info.resorts);
    acm_domain_destroy(d);
    expect_same_run(&a, &b, 60, 1e-12, "re-sorted every cell vs never");
}
END_TEST

/* Sum_x F_IB = sum_l G_l dV_l: over one step the fluid gains exactly the
 * momentum the solid reports losing (fully periodic box, no other force). */
START_TEST(spreading_conserves_momentum)
{
    static const acm_ib_spread spreads[] = {ACM_IB_SPREAD_SCATTER, ACM_IB_SPREAD_GATHER};
    sphere_case c = sphere_defaults();
    c.motion = ACM_MOTION_PRESCRIBED;
    c.v[0] = 0.02;
    c.v[1] = -0.01;
    c.w[0] = 0.004;
    c.iterations = 3;
    c.spread = spreads[_i];
    acm_solid *s = NULL;
    acm_domain *d = sphere_domain(&c, &s);
    const size_t cells = (size_t)c.n * c.n * c.n;
    ACM_CK_OK(d, acm_step(d, 5));
    double j0[3], j1[3], F[3];
    acm_test_raw_momentum(d, cells, j0);
    ACM_CK_OK(d, acm_step(d, 1));
    acm_test_raw_momentum(d, cells, j1);
    ACM_CK_OK(d, acm_solid_get_force(s, F, NULL));
    const double scale = sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2]);
    ck_assert_msg(scale > 1e-4, "the solid feels a force (%g)", scale);
    for (int a = 0; a < 3; ++a)
        ck_assert_msg(fabs(j1[a] - j0[a] + F[a]) < 1e-11 * scale,
                      "axis %d: fluid gained %.17g, solid force %.17g", a, j1[a] - j0[a], F[a]);
    acm_domain_destroy(d);
}
END_TEST

/* Two-way coupling: in a periodic box whose fluid carries the opposite of the
 * body's net weight, fluid momentum plus the body's excess momentum (m - V) v
 * stays constant (spec 9.2, Uhlmann's scheme). */
START_TEST(free_body_conserves_total_momentum)
{
    const int n = 16;
    const double R = 3.0, ratio = 3.0, V = 4.0 / 3.0 * M_PI * R * R * R, m = ratio * V;
    const double g[3] = {0.0, -2e-5, 1e-5};
    acm_domain_options o = acm_test_options(n, n, n, 0.1, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    acm_domain *d = acm_test_domain(&o);
    const double fb[3] = {-(m - V) * g[0] / (n * n * n), -(m - V) * g[1] / (n * n * n),
                          -(m - V) * g[2] / (n * n * n)};
    ACM_CK_OK(d, acm_domain_set_body_force(d, fb));
    double *pts, *areas;
    acm_test_sphere_points(500, R, &pts, &areas);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.sample_count = 500;
    so.sample_points = pts;
    so.sample_areas = areas;
    so.position[0] = so.position[1] = so.position[2] = 7.6;
    so.motion = ACM_MOTION_FREE;
    so.volume = V;
    so.mass = m;
    so.inertia[0] = so.inertia[1] = so.inertia[2] = 0.4 * m * R * R;
    memcpy(so.gravity, g, sizeof g);
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_solid_create(&s, d, &so));
    free(pts);
    free(areas);
    const size_t cells = (size_t)n * n * n;
    double p0[3], p1[3];
    acm_solid_state st = {ACM_SOLID_STATE_VERSION, {0}, {0}, {0}, {0}};
    acm_test_raw_momentum(d, cells, p0);
    ACM_CK_OK(d, acm_step(d, 300));
    acm_test_raw_momentum(d, cells, p1);
    ACM_CK_OK(d, acm_solid_get_state(s, &st));
    const double speed = sqrt(st.velocity[0] * st.velocity[0] + st.velocity[1] * st.velocity[1] +
                              st.velocity[2] * st.velocity[2]);
    ck_assert_msg(speed > 1e-4, "the body sinks (speed %g)", speed);
    for (int a = 0; a < 3; ++a) {
        const double total0 = p0[a], total1 = p1[a] + (m - V) * st.velocity[a];
        ck_assert_msg(fabs(total1 - total0) < 1e-10 * (m - V) * speed,
                      "axis %d: total momentum %.17g -> %.17g", a, total0, total1);
    }
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(solids_sphere)
{
    Suite *s = suite_create("solids_sphere");
    TCase *tc = acm_tcase("sphere", 600);
    tcase_add_test(tc, sample_order_does_not_change_forces);
    tcase_add_test(tc, scatter_equals_gather);
    tcase_add_test(tc, moving_solid_resorts_without_changing_forces);
    tcase_add_loop_test(tc, spreading_conserves_momentum, 0, 2);
    tcase_add_test(tc, free_body_conserves_total_momentum);
    suite_add_tcase(s, tc);
    return s;
}

/* ---- solids from meshes ----------------------------------------------------------------- */

static acm_mesh *icosphere(double radius)
{
    shapes_mesh m;
    ck_assert_int_eq(shapes_sphere(&m, 4, radius), 0);
    acm_mesh *mesh = NULL;
    ck_assert_int_eq(acm_mesh_create(&mesh, m.v, m.nv, m.t, m.nt, NULL), ACM_OK);
    shapes_free(&m);
    return mesh;
}

START_TEST(mesh_solid_is_sampled_inset_and_knows_its_inside)
{
    const int n = 24;
    acm_domain_options o = acm_test_options(n, n, n, 0.05, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&o);
    acm_mesh *mesh = icosphere(1.0);
    acm_mesh_info mi;
    memset(&mi, 0, sizeof mi);
    mi.version = ACM_MESH_INFO_VERSION;
    ck_assert_int_eq(acm_mesh_get_info(mesh, &mi), ACM_OK);
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = mesh;
    so.scale = 6.0; /* radius 6 cells */
    so.position[0] = 11.3;
    so.position[1] = 12.1;
    so.position[2] = 11.7;
    so.motion = ACM_MOTION_FREE;
    so.density = 2.0;
    acm_solid *s = NULL;
    ACM_CK_OK(d, acm_solid_create(&s, d, &so));
    acm_mesh_destroy(mesh); /* the solid keeps what it needs */
    acm_solid_info info = {ACM_SOLID_INFO_VERSION, 0, 0, 0, 0, 0, 0, {0}, 0, 0};
    ACM_CK_OK(d, acm_solid_get_info(s, &info));
    const double area = mi.area * 36.0, volume = mi.volume * 216.0;
    /* count = round(density x area); the samples' areas add up to the area */
    ck_assert_msg(fabs((double)info.sample_count - 16.0 * area) <= 1.0, "%llu samples for area %g",
                  (unsigned long long)info.sample_count, area);
    ck_assert_double_eq_tol(info.area, area, 1e-9 * area);
    ck_assert_msg(info.sample_spacing > 0.1, "spacing %g", info.sample_spacing);
    ck_assert_double_eq_tol(info.volume, volume, 1e-9 * volume);
    ck_assert_double_eq_tol(info.mass, 2.0 * volume, 1e-9 * volume);
    /* a sphere's inertia 2/5 m r^2 (the icosphere's, within its faceting) */
    ck_assert_msg(fabs(info.inertia[0] / (0.4 * info.mass * 36.0) - 1.0) < 0.02, "inertia %g",
                  info.inertia[0]);
    /* samples lie surface_inset = 0.3 inside the mesh surface (within the faceting) */
    double *X = acm_test_alloc(3 * info.sample_count * sizeof(double));
    ACM_CK_OK(d, acm_solid_get_samples(s, X, info.sample_count));
    for (uint64_t l = 0; l < info.sample_count; ++l) {
        const double dx = X[3 * l] - 11.3, dy = X[3 * l + 1] - 12.1, dz = X[3 * l + 2] - 11.7;
        const double r = sqrt(dx * dx + dy * dy + dz * dz);
        ck_assert_msg(r > 5.6 && r < 5.71, "sample %llu at radius %g", (unsigned long long)l, r);
    }
    free(X);
    int inside = -1;
    const double centre[3] = {11.3, 12.1, 11.7}, near_out[3] = {11.3, 12.1, 17.9},
                 near_in[3] = {11.3, 12.1, 17.5};
    ACM_CK_OK(d, acm_solid_is_inside(s, centre, &inside));
    ck_assert_int_eq(inside, 1);
    ACM_CK_OK(d, acm_solid_is_inside(s, near_out, &inside));
    ck_assert_int_eq(inside, 0);
    ACM_CK_OK(d, acm_solid_is_inside(s, near_in, &inside));
    ck_assert_int_eq(inside, 1);
    /* occupancy: as many cells as the volume, give or take a shell */
    uint8_t *occ = acm_test_alloc((size_t)n * n * n);
    ACM_CK_OK(d, acm_solid_mark_occupancy(s, occ, (size_t)n * n * n));
    size_t cells = 0;
    for (size_t k = 0; k < (size_t)n * n * n; ++k)
        cells += occ[k];
    ck_assert_msg(fabs((double)cells - volume) < 0.05 * volume, "%zu cells inside, volume %g",
                  cells, volume);
    free(occ);
    ACM_CK_OK(d, acm_step(d, 5));
    acm_domain_destroy(d);
}
END_TEST

TEST_SUITE(solids_mesh)
{
    Suite *s = suite_create("solids_mesh");
    TCase *tc = acm_tcase("mesh", 120);
    tcase_add_test(tc, mesh_solid_is_sampled_inset_and_knows_its_inside);
    suite_add_tcase(s, tc);
    return s;
}
