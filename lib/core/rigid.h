/*
 * libacmlbm -- rigid-body kinematics and dynamics of immersed solids
 * (physics-spec 9.2). The placement of a sample is shared with the CUDA
 * kernels, and so are the implicit coupling's velocity change and the time
 * integration (which runs on the host for both backends so far).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_RIGID_H
#define ACMLBM_RIGID_H

#include <math.h>   /* sqrt, fabs, sin, cos */
#include <string.h> /* memcpy */

#include "acmlbm/acm_solid.h" /* acm_motion */
#include "lattice.h"          /* ACM_HD */

ACM_BEGIN_DECLS

/* out = q r q* : rotate r (body) into the world frame by the unit quaternion
 * q = (w, x, y, z). */
ACM_HD void acm_quat_rotate(const double q[4], const double r[3], double out[3])
{
    /* t = 2 (q_v x r); out = r + w t + q_v x t */
    const double t0 = 2.0 * (q[2] * r[2] - q[3] * r[1]);
    const double t1 = 2.0 * (q[3] * r[0] - q[1] * r[2]);
    const double t2 = 2.0 * (q[1] * r[1] - q[2] * r[0]);
    out[0] = r[0] + q[0] * t0 + (q[2] * t2 - q[3] * t1);
    out[1] = r[1] + q[0] * t1 + (q[3] * t0 - q[1] * t2);
    out[2] = r[2] + q[0] * t2 + (q[1] * t1 - q[2] * t0);
}

/* World position X and rigid velocity U_b = v + w x (X - x_c) of a sample with
 * body-frame offset r from the centre of mass (spec 9.2, last item). */
ACM_HD void acm_rigid_place(const double xc[3], const double q[4], const double v[3],
                            const double w[3], const double r[3], double X[3], double ub[3])
{
    double d[3];
    acm_quat_rotate(q, r, d);
    X[0] = xc[0] + d[0];
    X[1] = xc[1] + d[1];
    X[2] = xc[2] + d[2];
    ub[0] = v[0] + w[1] * d[2] - w[2] * d[1];
    ub[1] = v[1] + w[2] * d[0] - w[0] * d[2];
    ub[2] = v[2] + w[0] * d[1] - w[1] * d[0];
}

/* Pose, velocities and mass properties of a solid. */
typedef struct acm_body {
    acm_motion motion;
    double x[3], q[4];    /* centre of mass, orientation (body -> world) */
    double v[3], w[3];    /* linear velocity, angular velocity (world frame) */
    double mass, volume;  /* volume: displaced fluid (fluid density 1) */
    double inertia[6];    /* body frame about the centre of mass: xx yy zz xy xz yz */
    double gravity[3];
    double load_f[3], load_t[3]; /* caller's extra force and torque */
    double r_max;         /* largest |r| of a sample: bounds surface speeds */
} acm_body;

/* Sums over a free body's samples after the first interpolation of a step,
 * with a_l = alpha rho_l dV_l and r_l = X_l - x_c: what the implicit coupling
 * needs (docs/physics.md, "Free bodies"). */
typedef struct acm_coupling {
    double F[3], T[3]; /* -sum G dV and -sum r x G dV at the current velocities */
    double k;          /* sum a */
    double s[3];       /* sum a r */
    double J[6];       /* sum a (|r|^2 I - r r^T): xx yy zz xy xz yz */
} acm_coupling;

/* Add sample l's terms (G: its penalty force density; a = alpha rho dV). */
ACM_HD void acm_coupling_add(acm_coupling *c, const double r[3], const double G[3], double dv,
                             double a)
{
    const double g[3] = {G[0] * dv, G[1] * dv, G[2] * dv};
    c->F[0] -= g[0];
    c->F[1] -= g[1];
    c->F[2] -= g[2];
    c->T[0] -= r[1] * g[2] - r[2] * g[1];
    c->T[1] -= r[2] * g[0] - r[0] * g[2];
    c->T[2] -= r[0] * g[1] - r[1] * g[0];
    c->k += a;
    c->s[0] += a * r[0];
    c->s[1] += a * r[1];
    c->s[2] += a * r[2];
    const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    c->J[0] += a * (r2 - r[0] * r[0]);
    c->J[1] += a * (r2 - r[1] * r[1]);
    c->J[2] += a * (r2 - r[2] * r[2]);
    c->J[3] -= a * r[0] * r[1];
    c->J[4] -= a * r[0] * r[2];
    c->J[5] -= a * r[1] * r[2];
}

/* The parts of one body's sums (one per z-plane of its samples' stencil
 * bases, lib/core/ib.h acm_ib_owner_plane) added in plane order: what every backend
 * and a decomposed domain's planes give alike. */
ACM_HD void acm_coupling_fold(const acm_coupling *planes, int32_t n, acm_coupling *out)
{
    double t[16] = {0.0};
    for (int32_t p = 0; p < n; ++p) {
        const double *v = (const double *)&planes[p];
        for (int i = 0; i < 16; ++i)
            t[i] += v[i];
    }
    memcpy(out, t, sizeof t);
}

/* Velocity change of a sample's target for a body velocity change (dv, dw). */
ACM_HD void acm_coupling_target(const double dv[3], const double dw[3], const double r[3],
                                double du[3])
{
    du[0] = dv[0] + dw[1] * r[2] - dw[2] * r[1];
    du[1] = dv[1] + dw[2] * r[0] - dw[0] * r[2];
    du[2] = dv[2] + dw[0] * r[1] - dw[1] * r[0];
}

/* y = I x for a symmetric tensor packed xx yy zz xy xz yz. */
ACM_HD void acm_sym_apply(const double I[6], const double x[3], double y[3])
{
    y[0] = I[0] * x[0] + I[3] * x[1] + I[4] * x[2];
    y[1] = I[3] * x[0] + I[1] * x[1] + I[5] * x[2];
    y[2] = I[4] * x[0] + I[5] * x[1] + I[2] * x[2];
}

/* y = R(q) T_body R(q)^T x: a body-frame tensor applied to a world vector. */
ACM_HD void acm_world_apply(const double q[4], const double T[6], const double x[3], double y[3])
{
    const double qc[4] = {q[0], -q[1], -q[2], -q[3]};
    double xb[3], yb[3];
    acm_quat_rotate(qc, x, xb);
    acm_sym_apply(T, xb, yb);
    acm_quat_rotate(q, yb, y);
}

/* Solve the 6 x 6 system A x = b in place (Gaussian elimination with partial
 * pivoting); A is row-major. */
ACM_HD void acm_solve6(double *A, double *b)
{
    const int n = 6;
    for (int c = 0; c < n; ++c) {
        int p = c;
        for (int r = c + 1; r < n; ++r)
            if (fabs(A[r * n + c]) > fabs(A[p * n + c]))
                p = r;
        for (int k = 0; k < n; ++k) {
            const double t = A[c * n + k];
            A[c * n + k] = A[p * n + k];
            A[p * n + k] = t;
        }
        const double t = b[c];
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
 * The velocity change (dv, dw) a free body makes in this step when its
 * reaction to the penalty forces is taken implicitly: the forces are then
 * computed for the new velocities, which keeps the explicit Newton-Euler
 * update (acm__body_advance) stable for any size and density ratio.
 *
 * With a_l = alpha rho_l dV_l, the reaction of the fluid on the body depends
 * on the body's velocities through U_b = v + w x r:
 *     dF/dv = -k I,  dF/dw = [s]x,  dT/dv = -[s]x,  dT/dw = -J.
 * Taking that dependence at the end of the step (backward Euler in the
 * coupling only) gives the 6 x 6 system
 *     (m - V + k) dv - [s]x dw           = F + F_user + (m - V) g
 *     [s]x dv + ((1 - V/m) I_world + J) dw = T + T_user
 * whose solution is the velocity change; the penalty forces are then
 * recomputed for the new velocities (a linear correction of each sample's G),
 * and acm__body_advance integrates with exactly those forces, so fluid plus
 * body momentum stays conserved.
 *
 * Shared by the host and the CUDA backend, which solves it on the device
 * (cuda/kernels/rigid.cu, compiled without contracted multiply-adds: the
 * same bits as the host's).
 */
ACM_HD void acm_body_coupled_velocity(const acm_body *b, const acm_coupling *c, double dv[3],
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
        acm_world_apply(b->q, b->inertia, e, col);
        acm_sym_apply(c->J, e, jc);
        for (int i = 0; i < 3; ++i)
            A[(3 + i) * 6 + 3 + j] = scale * col[i] + jc[i];
    }
    acm_solve6(A, x);
    for (int i = 0; i < 3; ++i) {
        dv[i] = x[i];
        dw[i] = x[3 + i];
    }
}

/* ---- time integration (physics-spec 9.2), shared by the host and the device --------
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
 * angular velocity of the step. Every operation is one the host and a device
 * unit compiled without contracted multiply-adds (cuda/kernels/rigid.cu) round
 * alike: + - * / and sqrt, no library sine. */

/* out = a (x) b, Hamilton product (out may be a or b). */
ACM_HD void acm_quat_mul(const double a[4], const double b[4], double out[4])
{
    double r[4];
    r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    memcpy(out, r, sizeof r);
}

/* cos(x) and sin(x) / x for |x| <= 1/2 by their Taylor series to x^18 and
 * x^18 (the first term left out is below 1e-20 of the sum: double precision),
 * in Horner form: the same bits on the host and the device, which glibc's and
 * CUDA's sin and cos are not at every argument. The half-angle of a step's
 * turn is |w| / 2 and |w| r_max stays below the divergence speed limit. */
ACM_HD void acm_half_turn(double x, double *c, double *s_over_x)
{
    const double y = x * x;
    double cs = 1.0, sn = 1.0;
    for (int k = 9; k >= 1; --k) { /* cos: 1 - y/(1 2) (1 - y/(3 4) (...)) */
        cs = 1.0 - y / (double)((2 * k - 1) * (2 * k)) * cs;
        sn = 1.0 - y / (double)((2 * k) * (2 * k + 1)) * sn;
    }
    *c = cs;
    *s_over_x = sn;
}

/* q <- rotation by the angle |w| about w (one time step) (x) q, normalised.
 * Beyond a half-angle of 1/2 (a turn of more than a radian a step) the
 * library's sine and cosine, which the host and the device may round apart. */
ACM_HD void acm_quat_turn(double q[4], const double w[3])
{
    const double angle = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    if (angle == 0.0)
        return;
    const double h = 0.5 * angle;
    double c, s;
    if (h <= 0.5) {
        acm_half_turn(h, &c, &s);
        s *= 0.5; /* sin(h) / angle = (sin(h) / h) / 2 */
    } else {
        c = cos(h);
        s = sin(h) / angle;
    }
    const double dq[4] = {c, s * w[0], s * w[1], s * w[2]};
    acm_quat_mul(dq, q, q);
    const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i)
        q[i] /= n;
}

/* Inverse of a symmetric 3x3 tensor (positive definite for a real body). */
ACM_HD void acm_sym_inverse(const double I[6], double out[6])
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

/* One Newton-Euler step of a free body with the step's hydrodynamic force F_h
 * and torque T_h (the scheme above). */
ACM_HD void acm_body_advance_free(acm_body *b, const double F_h[3], const double T_h[3])
{
    const double excess = b->mass - b->volume; /* > 0: density ratio >= 1.2 */
    for (int a = 0; a < 3; ++a) {
        const double v_new = b->v[a] + (F_h[a] + b->load_f[a]) / excess + b->gravity[a];
        b->x[a] += 0.5 * (b->v[a] + v_new);
        b->v[a] = v_new;
    }
    double inv[6], L[3], w_new[3], w_mid[3];
    acm_sym_inverse(b->inertia, inv);
    acm_world_apply(b->q, b->inertia, b->w, L);
    const double scale = 1.0 / (1.0 - b->volume / b->mass);
    for (int a = 0; a < 3; ++a)
        L[a] += (T_h[a] + b->load_t[a]) * scale;
    acm_world_apply(b->q, inv, L, w_new);
    for (int a = 0; a < 3; ++a)
        w_mid[a] = 0.5 * (b->w[a] + w_new[a]);
    acm_quat_turn(b->q, w_mid);
    acm_world_apply(b->q, inv, L, b->w);
}

/* Largest surface speed |v| + |w| r_max. */
ACM_HD double acm_body_surface_speed(const acm_body *b)
{
    return sqrt(b->v[0] * b->v[0] + b->v[1] * b->v[1] + b->v[2] * b->v[2]) +
           sqrt(b->w[0] * b->w[0] + b->w[1] * b->w[1] + b->w[2] * b->w[2]) * b->r_max;
}

/* Largest displacement of any sample (|r| <= r_max) between two poses: the
 * centre's shift plus the relative rotation's angle times r_max. */
ACM_HD double acm_body_displacement(const double x0[3], const double q0[4], const double x1[3],
                                    const double q1[4], double r_max)
{
    const double d[3] = {x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]};
    /* relative rotation q1 q0*: its scalar part is cos(angle / 2) */
    const double c = fabs(q1[0] * q0[0] + q1[1] * q0[1] + q1[2] * q0[2] + q1[3] * q0[3]);
    const double angle = 2.0 * acos(c < 1.0 ? c : 1.0);
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) + angle * r_max;
}

/* A step of a free body that the fluid can follow: b advanced by one step
 * with the force F_h and torque T_h (acm_body_advance_free) unless its
 * surface speed would then reach `limit` (ACM_SOLID_MAX_SPEED), in which case
 * b keeps its state. Returns that surface speed (>= limit: refused). The
 * host's step and the device's (free bodies in runs) both take it. */
ACM_HD double acm_body_advance_limited(acm_body *b, const double F_h[3], const double T_h[3],
                                       double limit)
{
    acm_body next = *b;
    acm_body_advance_free(&next, F_h, T_h);
    const double speed = acm_body_surface_speed(&next);
    if (speed < limit)
        *b = next;
    return speed;
}

/* Advance the body by one time step: PRESCRIBED integrates its constant
 * velocities exactly; FREE integrates Newton-Euler with the hydrodynamic force
 * F_h and torque T_h of the step (acm_body_advance_free); STATIC does nothing. */
void acm__body_advance(acm_body *b, const double F_h[3], const double T_h[3]);

/* q = normalise(q); returns 0 when |q| is not within 1e-3 of 1 (or not finite). */
int acm__quat_normalise(double q[4]);

ACM_END_DECLS

#endif /* ACMLBM_RIGID_H */
