/*
 * libacmlbm -- the low-viscosity scenes of docs/physics.md ("Very low
 * viscosity"), shared by bench/bench_lowvisc.c and the tests: a cubic
 * lid-driven cavity, an inlet/outflow channel with walls, a periodic jet, the
 * TGV, and the jet through open faces.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_LOWVISC_SCENES_H
#define ACMLBM_LOWVISC_SCENES_H

#include <math.h>   /* tanh, sqrt, sin, cos */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strcmp */

#include <acmlbm/acmlbm.h>

typedef enum lv_scene {
    LV_CAVITY,  /* six walls, the y-max face a lid sliding with (U, 0, 0), fluid at rest */
    LV_CHANNEL, /* inlet (U, 0, 0) at x-min, outlet at x-max, walls on y and z, fluid at U */
    LV_JET,     /* periodic, a round jet along x, no force */
    LV_TGV,     /* periodic, the 3-D Taylor-Green vortex of physics-spec 11.8 (amplitude U) */
    LV_OPEN     /* the jet fed by an inlet of its profile at x-min, leaving through an outlet
                   behind N/8 absorbing cells (reference: the inflow's mean) at x-max, slip
                   walls on y and z */
} lv_scene;

/* Name of a scene, as the bench's --scene takes it. */
static inline const char *lv_scene_name(lv_scene scene)
{
    return scene == LV_CAVITY    ? "cavity"
           : scene == LV_CHANNEL ? "channel"
           : scene == LV_JET     ? "jet"
           : scene == LV_TGV     ? "tgv"
                                 : "open";
}

/* Scene by name; -1 if unknown. */
static inline int lv_scene_by_name(const char *name)
{
    for (int i = LV_CAVITY; i <= LV_OPEN; ++i)
        if (strcmp(name, lv_scene_name((lv_scene)i)) == 0)
            return i;
    return -1;
}

/* The jet's initial velocity on an n^3 grid (x fastest): u_x = U (1 +
 * tanh((R - r)/d))/2 with R = n/4, d = n/32, r the distance from the x axis
 * through the centre, with a 1 % wavy perturbation in all three components. */
static inline void lv_jet_velocity(int n, double U, double *vel)
{
    const double R = n / 4.0, d = n / 32.0, c = (n - 1) / 2.0, k = 2.0 * 3.14159265358979 / n;
    for (int z = 0; z < n; ++z)
        for (int y = 0; y < n; ++y)
            for (int x = 0; x < n; ++x) {
                double r = sqrt((y - c) * (y - c) + (z - c) * (z - c));
                double *u = vel + 3 * ((size_t)x + (size_t)n * ((size_t)y + (size_t)n * z));
                u[0] = U * 0.5 * (1.0 + tanh((R - r) / d)) * (1.0 + 0.01 * sin(3 * k * x));
                u[1] = 0.01 * U * sin(2 * k * x) * cos(k * z);
                u[2] = 0.01 * U * cos(k * x) * sin(k * y);
            }
}

/* The Taylor-Green vortex of physics-spec 11.8 on n^3 (x fastest): velocity
 * and the matching pressure (density). */
static inline void lv_tgv_fields(int n, double U, double *vel, double *rho)
{
    const double k = 2.0 * 3.14159265358979 / n;
    for (size_t i = 0; i < (size_t)n * n * n; ++i) {
        double x = k * (double)(i % n), y = k * (double)(i / n % n), z = k * (double)(i / n / n);
        vel[3 * i] = U * sin(x) * cos(y) * cos(z);
        vel[3 * i + 1] = -U * cos(x) * sin(y) * cos(z);
        vel[3 * i + 2] = 0;
        rho[i] = 1 + 3 * (U * U / 16) * (cos(2 * x) + cos(2 * y)) * (cos(2 * z) + 2);
    }
}

/* The open jet's faces: the inlet takes the jet's profile at x = 0 (vel, the
 * jet's field), cell by cell; the outlet an absorber whose reference is the
 * inflow's mean velocity (so that what comes in can leave); slip walls around. */
static inline acm_status lv_open_faces(acm_domain *d, int n, const double *vel)
{
    acm_status st = acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, NULL);
    if (st == ACM_OK)
        st = acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL);
    for (int f = ACM_FACE_Y_MIN; f <= ACM_FACE_Z_MAX && st == ACM_OK; ++f)
        st = acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_SLIP, NULL);
    double *in = malloc(3 * (size_t)n * (size_t)n * sizeof *in), mean[3] = {0, 0, 0};
    if (in == NULL)
        return st == ACM_OK ? ACM_ERR_NO_MEMORY : st;
    for (size_t k = 0; k < (size_t)n * (size_t)n; ++k) /* (y, z) of the x = 0 plane */
        for (int a = 0; a < 3; ++a) {
            in[3 * k + (size_t)a] = vel[3 * (k * (size_t)n) + (size_t)a];
            mean[a] += in[3 * k + (size_t)a] / ((double)n * n);
        }
    if (st == ACM_OK)
        st = acm_domain_set_face_absorber(d, ACM_FACE_X_MAX, n / 8, 0.5, 1.0, mean);
    if (st == ACM_OK)
        st = acm_domain_set_face_values(d, ACM_FACE_X_MIN, ACM_DTYPE_FLOAT64, in,
                                        3 * (size_t)n * (size_t)n);
    free(in);
    return st;
}

/* Faces and initial state of a scene on an n^3 domain, speed U. */
static inline acm_status lv_scene_setup(acm_domain *d, lv_scene scene, int n, double U)
{
    const double lid[3] = {U, 0, 0};
    const size_t cells = (size_t)n * n * n;
    acm_status st = ACM_OK;
    const int periodic = scene == LV_JET || scene == LV_TGV || scene == LV_OPEN;
    for (int f = 0; f < ACM_FACE_COUNT && !periodic && st == ACM_OK; ++f) {
        acm_boundary type = ACM_BOUNDARY_WALL;
        const double *v = NULL;
        if (scene == LV_CHANNEL && f == ACM_FACE_X_MIN)
            type = ACM_BOUNDARY_INLET, v = lid;
        else if (scene == LV_CHANNEL && f == ACM_FACE_X_MAX)
            type = ACM_BOUNDARY_OUTLET;
        else if (scene == LV_CAVITY && f == ACM_FACE_Y_MAX)
            v = lid;
        st = acm_domain_set_face(d, (acm_face)f, type, v);
    }
    if (st != ACM_OK || scene == LV_CAVITY)
        return st;
    double *vel = malloc(3 * cells * sizeof *vel), *rho = NULL;
    if (scene == LV_TGV && vel != NULL)
        rho = malloc(cells * sizeof *rho);
    if (vel == NULL || (scene == LV_TGV && rho == NULL)) {
        free(vel);
        return ACM_ERR_NO_MEMORY;
    }
    if (scene == LV_JET || scene == LV_OPEN)
        lv_jet_velocity(n, U, vel);
    else if (scene == LV_TGV)
        lv_tgv_fields(n, U, vel, rho);
    else
        for (size_t i = 0; i < cells; ++i)
            vel[3 * i] = U, vel[3 * i + 1] = vel[3 * i + 2] = 0;
    if (scene == LV_OPEN)
        st = lv_open_faces(d, n, vel);
    if (st == ACM_OK)
        st = acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, rho, vel, cells);
    free(rho);
    free(vel);
    return st;
}

/* Acoustic energy c_s^2/2 sum (rho - <rho>)^2 / <rho> (rho: a buffer of the
 * domain's cell count): with the kinetic energy the mechanical energy of the
 * weakly compressible fluid. NAN if the density cannot be read. */
static inline double lv_acoustic_energy(acm_domain *d, double *rho, size_t cells)
{
    if (acm_domain_get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, rho,
                             cells * sizeof *rho) != ACM_OK)
        return NAN;
    double mean = 0, var = 0;
    for (size_t i = 0; i < cells; ++i)
        mean += rho[i];
    mean /= (double)cells;
    for (size_t i = 0; i < cells; ++i)
        var += (rho[i] - mean) * (rho[i] - mean);
    return var / (6.0 * mean);
}

#endif /* ACMLBM_LOWVISC_SCENES_H */
