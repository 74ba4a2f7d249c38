/*
 * libacmlbm -- the partitioner of a decomposed domain (lib/multi/decomp.c): slabs
 * of whole planes, as equal in weight as the planes' prefix sums allow.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "partition.h"

static double plane_weight(const double *weight, int32_t z)
{
    return weight != NULL ? weight[z] : 1.0;
}

bool acm__partition(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                    int32_t *cuts)
{
    if (parts < 1 || min_planes < 1 || n < (int64_t)parts * min_planes)
        return false;
    double total = 0.0;
    for (int32_t z = 0; z < n; ++z)
        total += plane_weight(weight, z);
    cuts[0] = 0;
    double sum = 0.0;
    int32_t z = 0;
    for (int32_t p = 1; p < parts; ++p) {
        /* the first plane where the prefix sum reaches p / parts of the total,
         * kept where every slab gets min_planes */
        const double goal = total * p / parts;
        const int32_t lo = cuts[p - 1] + min_planes, hi = n - (parts - p) * min_planes;
        while (z < n && sum + 0.5 * plane_weight(weight, z) < goal) /* past half the plane */
            sum += plane_weight(weight, z++);
        cuts[p] = z < lo ? lo : (z > hi ? hi : z);
    }
    cuts[parts] = n;
    return true;
}
