/*
 * libacmlbm -- time integration of rigid bodies (physics-spec 9.2).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Free bodies follow Uhlmann's explicit scheme (J. Comput. Phys. 209, 2005):
 * the fluid that the immersed boundary keeps inside the body is taken to move
 * rigidly with it, so its momentum rate rho_f V dv/dt (and rho_f/rho_s of the
 * angular momentum rate) joins the left-hand side:
 *     (m - V) dv/dt = F_h + F_user + (m - V) g
 *     (1 - V/m) dL/dt = T_h + T_user,   L = I_world w
 * with F_h = -sum G dV, T_h = -sum r x G dV. It is stable for m/V >= 1.2
 * (checked at creation). Translation uses the trapezoidal rule on x; rotation
 * advances the world angular momentum and turns the orientation by the mean
 * angular velocity of the step.
 */
#include <math.h>   /* sqrt, cos, sin, acos, isfinite */
#include <string.h> /* memcpy */

#include "rigid.h"

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

double acm__body_surface_speed(const acm_body *b)
{
    return sqrt(dot3(b->v, b->v)) + sqrt(dot3(b->w, b->w)) * b->r_max;
}

int acm__quat_normalise(double q[4])
{
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!isfinite(n) || fabs(n - 1.0) > 1e-3)
        return 0;
    for (int i = 0; i < 4; ++i)
        q[i] /= n;
    return 1;
}

/* out = a (x) b, Hamilton product. */
static void quat_mul(const double a[4], const double b[4], double out[4])
{
    double r[4];
    r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    memcpy(out, r, sizeof r);
}

/* q <- rotation by the angle |w| about w (one time step) (x) q. */
static void quat_turn(double q[4], const double w[3])
{
    const double angle = sqrt(dot3(w, w));
    if (angle == 0.0)
        return;
    const double s = sin(0.5 * angle) / angle;
    const double dq[4] = {cos(0.5 * angle), s * w[0], s * w[1], s * w[2]};
    quat_mul(dq, q, q);
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i)
        q[i] /= n;
}

/* Inverse of a symmetric 3x3 tensor (positive definite for a real body). */
static void sym_inverse(const double I[6], double out[6])
{
    const double a = I[0], b = I[1], c = I[2], d = I[3], e = I[4], f = I[5];
    const double c00 = b * c - f * f, c11 = a * c - e * e, c22 = a * b - d * d;
    const double c01 = e * f - d * c, c02 = d * f - e * b, c12 = d * e - a * f;
    const double det = a * c00 + d * c01 + e * c02;
    out[0] = c00 / det;
    out[1] = c11 / det;
    out[2] = c22 / det;
    out[3] = c01 / det;
    out[4] = c02 / det;
    out[5] = c12 / det;
}

static void advance_free(acm_body *b, const double F_h[3], const double T_h[3])
{
    const double excess = b->mass - b->volume; /* > 0: density ratio >= 1.2 */
    for (int a = 0; a < 3; ++a) {
        const double v_new = b->v[a] + (F_h[a] + b->load_f[a]) / excess + b->gravity[a];
        b->x[a] += 0.5 * (b->v[a] + v_new);
        b->v[a] = v_new;
    }
    double inv[6], L[3], w_new[3], w_mid[3];
    sym_inverse(b->inertia, inv);
    acm_world_apply(b->q, b->inertia, b->w, L);
    const double scale = 1.0 / (1.0 - b->volume / b->mass);
    for (int a = 0; a < 3; ++a)
        L[a] += (T_h[a] + b->load_t[a]) * scale;
    acm_world_apply(b->q, inv, L, w_new);
    for (int a = 0; a < 3; ++a)
        w_mid[a] = 0.5 * (b->w[a] + w_new[a]);
    quat_turn(b->q, w_mid);
    acm_world_apply(b->q, inv, L, b->w);
}

void acm__body_advance(acm_body *b, const double F_h[3], const double T_h[3])
{
    switch (b->motion) {
    case ACM_MOTION_PRESCRIBED:
        for (int a = 0; a < 3; ++a)
            b->x[a] += b->v[a];
        quat_turn(b->q, b->w);
        break;
    case ACM_MOTION_FREE:
        advance_free(b, F_h, T_h);
        break;
    default:
        break;
    }
}

double acm__body_displacement(const double x0[3], const double q0[4], const double x1[3],
                              const double q1[4], double r_max)
{
    const double d[3] = {x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]};
    /* relative rotation q1 q0*: its scalar part is cos(angle / 2) */
    double c = fabs(q1[0] * q0[0] + q1[1] * q0[1] + q1[2] * q0[2] + q1[3] * q0[3]);
    double angle = 2.0 * acos(c < 1.0 ? c : 1.0);
    return sqrt(dot3(d, d)) + angle * r_max;
}
