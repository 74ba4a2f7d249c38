/*
 * libacmlbm -- time integration of rigid bodies (physics-spec 9.2): the
 * host's entry points; the scheme is in rigid.h (acm_body_advance_free),
 * shared with the device.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>   /* sqrt, acos, isfinite */
#include <string.h> /* memcpy */

#include "rigid.h"

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
