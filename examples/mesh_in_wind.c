/*
 * libacmlbm example -- any STL or OBJ mesh in a wind tunnel: drag and lift.
 * SPDX-License-Identifier: Apache-2.0
 *
 *   mesh_in_wind FILE [--cells N] [--speed U] [--re RE] [--steps S] ...
 *
 * The mesh is read with acm_mesh_load(), turned (--roll about x, then --pitch
 * about z, then --yaw about y) and scaled so that its largest extent spans N
 * cells. The tunnel is 4N x 2N x 2N cells: wind (U, 0, 0) enters through a
 * velocity inlet on the x-min face, leaves through an outlet on x-max, each
 * behind an absorbing layer of --absorber cells (N / 4 by default) that relaxes
 * the flow to the wind, so that neither sends sound or the wake back; y is
 * up; z is periodic. The floor (y-min) is a wall moving with the wind, the
 * road-vehicle convention (no boundary layer grows on it ahead of the object);
 * the ceiling (y-max) moves with the wind too, as the nearest thing to a free
 * stream. The object is fixed with its front 1.5 N behind the inlet and its
 * lowest point --clearance cells above the floor. Re = U N / nu.
 *
 * The collision model is the library's default ACM (--model picks another).
 * Until its safety net relaxed the high orders as Hermite moments, walls
 * moving at U next to an inlet and an outlet turned even the exact uniform
 * flow unstable with the ACM models at nu = 0.003 and below, and this example
 * used CM-MRT (docs/physics.md, "Hermite high orders").
 *
 * Every --every steps the program prints the mean over those steps of the
 * force of the wind on the object F (cells, steps, fluid density 1), of the
 * drag and lift coefficients C_D = F_x / (U^2 A / 2) and C_L = F_y / (U^2 A / 2)
 * with A the frontal area (the occupied cells projected on the y-z plane), and
 * of the torque about the centre of mass; at the end, the coefficients over
 * the second half of the run. Then it writes PREFIX.png (|u| on the plane z
 * through the object's middle, 0 to 1.5 U on viridis, outline in red) and
 * PREFIX.vti.
 */
#include <math.h>   /* ceil, floor, fabs, lround */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memset, memcpy */

#include <acmlbm/acmlbm.h>

#include "solid_common.h"

static const char *const prog = "mesh_in_wind";

typedef struct wind_args {
    const char *file;
    int64_t cells, steps, every; /* steps 0: 4 N / U; every 0: N / (2 U) */
    int64_t absorber;             /* cells in front of the inlet and outlet; -1: N / 4 */
    double speed, re, density, yaw, pitch, roll, clearance;
    int backend, precision, model;
    const char *out;
} wind_args;

static int parse(int argc, char **argv, wind_args *a)
{
    const wind_args defaults = {NULL, 32, 0, 0, -1, 0.05, 1000.0, 16.0, 0.0, 0.0, 0.0, 1.0,
                                ACM_BACKEND_AUTO, ACM_PRECISION_FP32, ACM_COLLISION_ACM_LI2018, "wind"};
    *a = defaults;
    const sc_option opts[] = {
        {"--cells", "N", SC_INT, &a->cells, 4, 2048, 0, NULL, 0,
         "cells across the object's largest extent (default 32)"},
        {"--speed", "U", SC_REAL, &a->speed, 0, 0.15, 1, NULL, 0,
         "wind speed, cells per step (default 0.05)"},
        {"--re", "RE", SC_REAL, &a->re, 0, 1e6, 1, NULL, 0, "Reynolds number U N / nu (default 1000)"},
        {"--steps", "S", SC_INT, &a->steps, 1, 1e12, 0, NULL, 0, "time steps (default 4 N / U)"},
        {"--every", "K", SC_INT, &a->every, 1, 1e12, 0, NULL, 0,
         "print the forces every K steps (default N / (2 U))"},
        {"--density", "D", SC_REAL, &a->density, 1, 400, 0, NULL, 0,
         "surface samples per cell^2 (default 16)"},
        {"--yaw", "DEG", SC_REAL, &a->yaw, -360, 360, 0, NULL, 0,
         "turn about the vertical y axis (default 0)"},
        {"--pitch", "DEG", SC_REAL, &a->pitch, -360, 360, 0, NULL, 0,
         "turn about the z axis, positive lifts the +x end (default 0)"},
        {"--roll", "DEG", SC_REAL, &a->roll, -360, 360, 0, NULL, 0,
         "turn about x, first (-90 stands a z-up model upright; default 0)"},
        {"--absorber", "A", SC_INT, &a->absorber, 0, 1e5, 0, NULL, 0,
         "absorbing cells in front of the inlet and the outlet, 0 for none (default N / 4)"},
        {"--clearance", "C", SC_REAL, &a->clearance, 0, 1e4, 0, NULL, 0,
         "gap between the floor and the object, cells (default 1)"},
        SC_RUN_OPTIONS(a, "acm"),
        {"--out", "PREFIX", SC_TEXT, &a->out, 0, 0, 0, NULL, 0,
         "write PREFIX.png and PREFIX.vti (default wind)"},
    };
    int rc = sc_parse_args(prog, "FILE.stl|FILE.obj [options]", argc, argv, opts,
                           SC_COUNT_OF(opts), &a->file);
    if (rc != 0)
        return rc;
    if (a->steps == 0)
        a->steps = (int64_t)ceil(4.0 * (double)a->cells / a->speed);
    if (a->every == 0)
        a->every = (int64_t)ceil(0.5 * (double)a->cells / a->speed);
    if (a->absorber < 0)
        a->absorber = a->cells / 4;
    return 0;
}

/* ---- the mesh ------------------------------------------------------------------------------ */

typedef struct wind_run {
    acm_mesh *mesh;
    acm_mesh_info info;
    double q[4], scale, position[3], area; /* area: frontal, cells^2 */
    int32_t n[3];
    acm_domain *d;
    acm_solid *s;
} wind_run;

static int load_mesh(const wind_args *a, wind_run *w)
{
    char err[512] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_status st = acm_mesh_load(&w->mesh, a->file, &mo);
    if (st != ACM_OK) {
        fprintf(stderr, "%s: cannot load %s: %s: %s\n", prog, a->file, acm_status_string(st), err);
        return -1;
    }
    w->info.version = ACM_MESH_INFO_VERSION;
    st = acm_mesh_get_info(w->mesh, &w->info);
    if (sc_failed(prog, st, "acm_mesh_get_info", acm_mesh_last_error(w->mesh)))
        return -1;
    const acm_mesh_info *i = &w->info;
    printf("%s: %llu triangles (%llu degenerate dropped), %llu vertices, %s\n", a->file,
           (unsigned long long)i->triangle_count, (unsigned long long)i->degenerate_triangles,
           (unsigned long long)i->vertex_count, i->closed ? "closed" : "NOT closed (open edges)");
    printf("  file units: box %.4g x %.4g x %.4g, area %.5g, volume %.5g%s\n",
           i->bbox_max[0] - i->bbox_min[0], i->bbox_max[1] - i->bbox_min[1],
           i->bbox_max[2] - i->bbox_min[2], i->area, i->volume,
           i->closed ? "" : " (meaningless: the surface is open)");
    if (i->closed && i->volume < 0.0)
        printf("  warning: the triangles face inwards (negative volume): the samples are inset "
               "outwards\n");
    if (!i->closed)
        printf("  warning: an open surface is sampled without inset and has no inside; the "
               "frontal area comes from the samples\n");
    return 0;
}

/* Turn the mesh, scale its largest extent to N cells and place it: the
 * library puts the mesh centroid at the solid's position. */
static int place(const wind_args *a, wind_run *w)
{
    const double x[3] = {1, 0, 0}, y[3] = {0, 1, 0}, z[3] = {0, 0, 1};
    double qr[4], qp[4], qy[4], t[4];
    sc_quat_axis_angle(qr, x, a->roll);
    sc_quat_axis_angle(qp, z, a->pitch);
    sc_quat_axis_angle(qy, y, a->yaw);
    sc_quat_mul(t, qp, qr);
    sc_quat_mul(w->q, qy, t);
    const size_t nv = (size_t)w->info.vertex_count;
    double *v = malloc(3 * nv * sizeof *v), lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL},
           hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    if (v == NULL) {
        fprintf(stderr, "%s: out of memory for %zu vertices\n", prog, nv);
        return -1;
    }
    acm_status st = acm_mesh_get_vertices(w->mesh, v, nv);
    if (sc_failed(prog, st, "acm_mesh_get_vertices", acm_mesh_last_error(w->mesh))) {
        free(v);
        return -1;
    }
    for (size_t k = 0; k < nv; ++k) {
        double p[3], r[3];
        for (int c = 0; c < 3; ++c)
            p[c] = v[3 * k + (size_t)c] - w->info.centroid[c];
        sc_quat_rotate(r, w->q, p);
        for (int c = 0; c < 3; ++c) {
            lo[c] = r[c] < lo[c] ? r[c] : lo[c];
            hi[c] = r[c] > hi[c] ? r[c] : hi[c];
        }
    }
    free(v);
    double extent = 0.0;
    for (int c = 0; c < 3; ++c)
        extent = hi[c] - lo[c] > extent ? hi[c] - lo[c] : extent;
    const double N = (double)a->cells;
    w->scale = N / extent;
    w->n[0] = (int32_t)(4 * a->cells);
    w->n[1] = w->n[2] = (int32_t)(2 * a->cells);
    w->position[0] = 1.5 * N - w->scale * lo[0];
    w->position[1] = -0.5 + a->clearance - w->scale * lo[1]; /* the floor wall is at y = -0.5 */
    w->position[2] = 0.5 * (w->n[2] - 1) - 0.5 * w->scale * (lo[2] + hi[2]);
    printf("  turned (roll %g, pitch %g, yaw %g deg) and scaled by %.4g: %.1f x %.1f x %.1f "
           "cells, centroid at (%.1f, %.1f, %.1f)\n",
           a->roll, a->pitch, a->yaw, w->scale, w->scale * (hi[0] - lo[0]),
           w->scale * (hi[1] - lo[1]), w->scale * (hi[2] - lo[2]), w->position[0],
           w->position[1], w->position[2]);
    if (w->scale * (hi[1] - lo[1]) + a->clearance > w->n[1] - 2) {
        fprintf(stderr, "%s: --clearance %g lifts the object into the ceiling of the %d-cell "
                        "tunnel\n", prog, a->clearance, (int)w->n[1]);
        return -1;
    }
    return 0;
}

/* ---- tunnel and object ------------------------------------------------------------------------ */

static int create_tunnel(const wind_args *a, wind_run *w)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = w->n[0];
    o.ny = w->n[1];
    o.nz = w->n[2];
    o.viscosity = a->speed * (double)a->cells / a->re;
    o.collision = (acm_collision)a->model;
    o.backend = (acm_backend)a->backend;
    o.precision = (acm_precision)a->precision;
    o.initial_velocity[0] = a->speed;
    if ((w->d = sc_domain_create(prog, &o)) == NULL)
        return -1;
    const double wind[3] = {a->speed, 0.0, 0.0};
    const struct {
        acm_face face;
        acm_boundary type;
    } faces[] = {{ACM_FACE_X_MIN, ACM_BOUNDARY_INLET}, {ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET},
                 {ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL},  {ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL}};
    for (size_t k = 0; k < SC_COUNT_OF(faces); ++k) { /* z stays periodic */
        acm_status st = acm_domain_set_face(w->d, faces[k].face, faces[k].type, wind);
        if (st == ACM_OK && faces[k].face <= ACM_FACE_X_MAX && a->absorber > 0)
            st = acm_domain_set_face_absorber(w->d, faces[k].face, (int32_t)a->absorber, 0.5,
                                              1.0, wind);
        if (sc_failed(prog, st, "the faces", acm_domain_last_error(w->d)))
            return -1;
    }
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT; /* static */
    so.mesh = w->mesh;
    so.scale = w->scale;
    so.samples_per_cell = a->density;
    memcpy(so.position, w->position, sizeof so.position);
    memcpy(so.orientation, w->q, sizeof so.orientation);
    acm_solid_info si;
    if (sc_add_solid(prog, w->d, &so, &w->s, &si) != 0)
        return -1;
    printf("object: %llu surface samples (%g per cell^2), area %.1f cells^2\n",
           (unsigned long long)si.sample_count, a->density, si.area);
    return 0;
}

/* Shadow of the occupied cells on the y-z plane (a closed mesh). */
static acm_status shadow_of_cells(const wind_run *w, uint8_t *shadow)
{
    const size_t nx = (size_t)w->n[0], cells = nx * (size_t)w->n[1] * (size_t)w->n[2];
    uint8_t *occ = calloc(cells, 1);
    if (occ == NULL)
        return ACM_ERR_NO_MEMORY;
    acm_status st = acm_solid_mark_occupancy(w->s, occ, cells);
    for (size_t k = 0; st == ACM_OK && k < cells; ++k)
        shadow[k / nx] |= occ[k];
    free(occ);
    return st;
}

/* Shadow of the surface samples (an open mesh, which has no inside). */
static acm_status shadow_of_samples(const wind_run *w, uint8_t *shadow)
{
    const long ny = w->n[1], nz = w->n[2];
    acm_solid_info si;
    memset(&si, 0, sizeof si);
    si.version = ACM_SOLID_INFO_VERSION;
    acm_status st = acm_solid_get_info(w->s, &si);
    double *p = st == ACM_OK ? malloc(3 * si.sample_count * sizeof *p) : NULL;
    if (st == ACM_OK && p == NULL)
        st = ACM_ERR_NO_MEMORY;
    if (st == ACM_OK)
        st = acm_solid_get_samples(w->s, p, si.sample_count);
    for (size_t k = 0; st == ACM_OK && k < si.sample_count; ++k) {
        long y = lround(p[3 * k + 1]), z = lround(p[3 * k + 2]);
        y = y < 0 ? 0 : (y >= ny ? ny - 1 : y);
        z = ((z % nz) + nz) % nz; /* z is periodic */
        shadow[y + ny * z] = 1;
    }
    free(p);
    return st;
}

/* Frontal area A: cells of the y-z plane in the object's shadow. */
static int frontal_area(wind_run *w)
{
    const size_t plane = (size_t)w->n[1] * (size_t)w->n[2];
    uint8_t *shadow = calloc(plane, 1);
    acm_status st = ACM_ERR_NO_MEMORY;
    if (shadow != NULL)
        st = w->info.closed ? shadow_of_cells(w, shadow) : shadow_of_samples(w, shadow);
    size_t count = 0;
    for (size_t k = 0; st == ACM_OK && k < plane; ++k)
        count += shadow[k];
    free(shadow);
    if (sc_failed(prog, st, "frontal area", acm_solid_last_error(w->s)))
        return -1;
    w->area = (double)count;
    printf("frontal area A = %.0f cells^2 (%s projected on the y-z plane)\n", w->area,
           w->info.closed ? "occupied cells" : "samples");
    if (count == 0)
        fprintf(stderr, "%s: the object covers no cell: try a larger --cells\n", prog);
    return count > 0 ? 0 : -1;
}

/* ---- stepping ------------------------------------------------------------------------------- */

/* Sums of the force and torque samples. */
typedef struct wind_sums {
    double F[3], T[3];
    int64_t count;
} wind_sums;

static void add_sample(wind_sums *p, const double F[3], const double T[3])
{
    if (p == NULL)
        return;
    for (int c = 0; c < 3; ++c) {
        p->F[c] += F[c];
        p->T[c] += T[c];
    }
    p->count++;
}

/* Step n steps, sampling force and torque every `stride` steps into both sums
 * (total may be NULL). */
static int step_sampled(const wind_run *w, int64_t n, int64_t stride, wind_sums *interval,
                        wind_sums *total, double *seconds)
{
    for (int64_t done = 0; done < n; done += stride) {
        double F[3], T[3];
        if (sc_step(prog, w->d, n - done < stride ? n - done : stride, seconds) != 0)
            return -1;
        acm_status st = acm_solid_get_force(w->s, F, T);
        if (sc_failed(prog, st, "acm_solid_get_force", acm_solid_last_error(w->s)))
            return -1;
        add_sample(interval, F, T);
        add_sample(total, F, T);
    }
    return 0;
}

/* The forces are sampled every few steps and printed as means over each
 * interval: the start-up pressure waves, which the inlet and the outlet
 * reflect, swing the instantaneous force far more than the wake does. */
static int run(const wind_args *a, const wind_run *w, double *seconds)
{
    const double cells = (double)w->n[0] * w->n[1] * w->n[2], q = 0.5 * a->speed * a->speed * w->area;
    int64_t stride = a->every / 16 > 1 ? a->every / 16 : 1;
    while (a->every % stride != 0)
        --stride;
    wind_sums total;
    memset(&total, 0, sizeof total);
    *seconds = 0.0;
    printf("means over each interval of the force F and the torque T (about the centre of mass) "
           "on the object, sampled every %lld steps\n", (long long)stride);
    printf("%8s %11s %11s %11s %8s %8s %11s %11s %11s %6s\n", "step", "F_x", "F_y", "F_z", "C_D",
           "C_L", "T_x", "T_y", "T_z", "MLUPS");
    for (int64_t done = 0; done < a->steps;) {
        const int64_t n = a->steps - done < a->every ? a->steps - done : a->every;
        wind_sums in;
        memset(&in, 0, sizeof in);
        double dt = 0.0;
        if (step_sampled(w, n, stride, &in, 2 * (done + n) > a->steps ? &total : NULL, &dt) != 0)
            return -1;
        done += n;
        *seconds += dt;
        const double k = 1.0 / (double)in.count;
        printf("%8lld %11.4e %11.4e %11.4e %8.4f %8.4f %11.4e %11.4e %11.4e %6.1f\n",
               (long long)done, k * in.F[0], k * in.F[1], k * in.F[2], k * in.F[0] / q,
               k * in.F[1] / q, k * in.T[0], k * in.T[1], k * in.T[2], cells * (double)n / dt / 1e6);
        fflush(stdout);
    }
    if (total.count > 0)
        printf("\nover the second half: C_D = %.4f, C_L = %.4f, C_side = %.4f (A = %.0f cells^2, "
               "Re = %g)\n", total.F[0] / (double)total.count / q,
               total.F[1] / (double)total.count / q, total.F[2] / (double)total.count / q, w->area,
               a->re);
    return 0;
}

static int write_outputs(const wind_args *a, const wind_run *w)
{
    char png[4096], vti[4096];
    sc_fields f;
    if (sc_path(prog, png, sizeof png, a->out, ".png") != 0 ||
        sc_path(prog, vti, sizeof vti, a->out, ".vti") != 0 ||
        sc_fields_read(prog, w->d, &w->s, 1, &f) != 0)
        return -1;
    const double z = 0.5 * (w->n[2] - 1);
    int rc = sc_write_slice_png(prog, png, &f, z, 1.5 * a->speed);
    if (rc == 0)
        printf("wrote %s (|u| on the plane z = %g, 0 to 1.5 U on viridis%s)\n", png, z,
               f.occupancy != NULL ? ", outline red" : "");
    if (rc == 0 && (rc = sc_write_vti(prog, vti, &f)) == 0)
        printf("wrote %s (velocity, density%s)\n", vti, f.occupancy != NULL ? ", occupancy" : "");
    sc_fields_free(&f);
    return rc;
}

int main(int argc, char **argv)
{
    wind_args a;
    int parsed = parse(argc, argv, &a);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    wind_run w;
    memset(&w, 0, sizeof w);
    int rc = load_mesh(&a, &w);
    if (rc == 0)
        rc = place(&a, &w);
    if (rc == 0) {
        printf("wind tunnel, lattice units: U = %g cells/step (Mach %.3f), Re = U N / nu = %g "
               "with N = %lld; floor and ceiling move with the wind, z periodic; %lld absorbing "
               "cells in front of the inlet and the outlet\n",
               a.speed, a.speed * sqrt(3.0), a.re, (long long)a.cells, (long long)a.absorber);
        rc = create_tunnel(&a, &w);
    }
    if (rc == 0)
        rc = sc_print_domain(prog, w.d);
    if (rc == 0)
        rc = frontal_area(&w);
    double seconds = 0.0;
    if (rc == 0) {
        printf("%lld steps (%.1f N/U), forces on the object every %lld\n", (long long)a.steps,
               (double)a.steps * a.speed / (double)a.cells, (long long)a.every);
        rc = run(&a, &w, &seconds);
    }
    if (rc == 0) {
        printf("run time %.1f s\n", seconds);
        rc = write_outputs(&a, &w);
    }
    acm_domain_destroy(w.d);
    acm_mesh_destroy(w.mesh);
    return rc == 0 ? 0 : 1;
}
