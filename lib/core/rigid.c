/*
 * libacmlbm -- time integration of rigid bodies (physics-spec 9.2): the
 * host's entry points; the scheme is in rigid.h (acm_body_advance_free),
 * shared with the device.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt, acos, isfinite */
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

void acm__body_advance(acm_body *b, const double F_h[3], const double T_h[3])
{
    switch (b->motion) {
    case ACM_MOTION_PRESCRIBED:
        for (int a = 0; a < 3; ++a)
            b->x[a] += b->v[a];
        acm_quat_turn(b->q, b->w);
        break;
    case ACM_MOTION_FREE:
        acm_body_advance_free(b, F_h, T_h);
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
