/*
 * libacmlbm -- the fold of the planes' sums (reduce.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "reduce.h"

void acm__prev_from_planes(acm_global_stats *prev, acm_plane_sums *total,
                           const acm_plane_sums *planes, int32_t n, double ncells)
{
    acm_plane_sums t = {0.0, 0.0, 0.0, 0.0};
    for (int32_t z = 0; z < n; ++z)
        acm__plane_sums_add(&t, &planes[z]);
    if (total != NULL)
        *total = t;
    prev->max_u = sqrt(t.max_u2);
    prev->mean_rho = t.sum_rho / ncells;
    prev->mean_j = t.sum_j / ncells;
    prev->mean_pi = t.sum_pi / ncells;
}
