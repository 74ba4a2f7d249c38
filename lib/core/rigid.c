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

/* y = I x for a symmetric tensor packed xx yy zz xy xz yz. */
static void sym_apply(const double I[6], const double x[3], double y[3])
{
    y[0] = I[0] * x[0] + I[3] * x[1] + I[4] * x[2];
    y[1] = I[3] * x[0] + I[1] * x[1] + I[5] * x[2];
    y[2] = I[4] * x[0] + I[5] * x[1] + I[2] * x[2];
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

/* y = R(q) T_body R(q)^T x: a body-frame tensor applied to a world vector. */
static void world_apply(const double q[4], const double T[6], const double x[3], double y[3])
{
    const double qc[4] = {q[0], -q[1], -q[2], -q[3]};
    double xb[3], yb[3];
    acm_quat_rotate(qc, x, xb);
    sym_apply(T, xb, yb);
    acm_quat_rotate(q, yb, y);
}

/* Solve the n x n system A x = b in place (Gaussian elimination with partial
 * pivoting); A is row-major. */
static void solve_dense(int n, double *A, double *b)
{
    for (int c = 0; c < n; ++c) {
        int p = c;
        for (int r = c + 1; r < n; ++r)
            if (fabs(A[r * n + c]) > fabs(A[p * n + c]))
                p = r;
        for (int k = 0; k < n; ++k) {
            double t = A[c * n + k];
            A[c * n + k] = A[p * n + k];
            A[p * n + k] = t;
        }
        double t = b[c];
        b[c] = b[p];
        b[p] = t;
        for (int r = c + 1; r < n; ++r) {
            const double f = A[r * n + c] / A[c * n + c];
            for (int k = c; k < n; ++k)
                A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; --c) {
        for (int k = c + 1; k < n; ++k)
            b[c] -= A[c * n + k] * b[k];
        b[c] /= A[c * n + c];
    }
}

/*
 * Implicit coupling. With a_l = alpha rho_l dV_l, the reaction of the fluid on
 * the body depends on the body's velocities through U_b = v + w x r:
 *     dF/dv = -k I,  dF/dw = [s]x,  dT/dv = -[s]x,  dT/dw = -J.
 * Taking that dependence at the end of the step (backward Euler in the
 * coupling only) gives the 6 x 6 system
 *     (m - V + k) dv - [s]x dw           = F + F_user + (m - V) g
 *     [s]x dv + ((1 - V/m) I_world + J) dw = T + T_user
 * whose solution is the velocity change; the penalty forces are then
 * recomputed for the new velocities (a linear correction of each sample's G),
 * and acm__body_advance integrates with exactly those forces, so fluid plus
 * body momentum stays conserved.
 */
void acm__body_coupled_velocity(const acm_body *b, const acm_coupling *c, double dv[3],
                                double dw[3])
{
    const double excess = b->mass - b->volume, scale = 1.0 - b->volume / b->mass;
    double A[36] = {0}, x[6];
    for (int i = 0; i < 3; ++i) {
        A[i * 6 + i] = excess + c->k;
        x[i] = c->F[i] + b->load_f[i] + excess * b->gravity[i];
        x[3 + i] = c->T[i] + b->load_t[i];
    }
    /* [s]x = [[0, -s_z, s_y], [s_z, 0, -s_x], [-s_y, s_x, 0]] */
    const double S[9] = {0, -c->s[2], c->s[1], c->s[2], 0, -c->s[0], -c->s[1], c->s[0], 0};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            A[i * 6 + 3 + j] = -S[i * 3 + j];
            A[(3 + i) * 6 + j] = S[i * 3 + j];
        }
    for (int j = 0; j < 3; ++j) { /* columns of (1 - V/m) I_world + J */
        double e[3] = {0, 0, 0}, col[3], jc[3];
        e[j] = 1.0;
        world_apply(b->q, b->inertia, e, col);
        sym_apply(c->J, e, jc);
        for (int i = 0; i < 3; ++i)
            A[(3 + i) * 6 + 3 + j] = scale * col[i] + jc[i];
    }
    solve_dense(6, A, x);
    memcpy(dv, x, 3 * sizeof(double));
    memcpy(dw, x + 3, 3 * sizeof(double));
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
    world_apply(b->q, b->inertia, b->w, L);
    const double scale = 1.0 / (1.0 - b->volume / b->mass);
    for (int a = 0; a < 3; ++a)
        L[a] += (T_h[a] + b->load_t[a]) * scale;
    world_apply(b->q, inv, L, w_new);
    for (int a = 0; a < 3; ++a)
        w_mid[a] = 0.5 * (b->w[a] + w_new[a]);
    quat_turn(b->q, w_mid);
    world_apply(b->q, inv, L, b->w);
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
