/*
 * libacmlbm -- the partitioner of a decomposed domain (lib/multi/decomp.c): slabs
 * of whole planes whose costs (their planes' weights plus a cost of their own)
 * are as equal as whole planes allow.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "partition.h"

static double plane_weight(const double *weight, int32_t z)
{
    return weight != NULL ? weight[z] : 1.0;
}

static double own_cost(const double *extra, int32_t p) { return extra != NULL ? extra[p] : 0.0; }

/* The costliest slab at the cuts. */
static double costliest(const double *weight, int32_t parts, const double *extra,
                        const int32_t *cuts)
{
    double most = 0.0;
    for (int32_t p = 0; p < parts; ++p) {
        double c = own_cost(extra, p);
        for (int32_t z = cuts[p]; z < cuts[p + 1]; ++z)
            c += plane_weight(weight, z);
        most = c > most ? c : most;
    }
    return most;
}

/* Cuts where the prefix sums reach each slab's share of the total: equal
 * slabs for equal weights, the split of old. */
static void prefix_cuts(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                        const double *extra, int32_t *cuts)
{
    double total = 0.0;
    for (int32_t z = 0; z < n; ++z)
        total += plane_weight(weight, z);
    for (int32_t p = 0; p < parts; ++p)
        total += own_cost(extra, p);
    cuts[0] = 0;
    double sum = 0.0, goal = 0.0;
    int32_t z = 0;
    for (int32_t p = 1; p < parts; ++p) {
        /* the first plane where the prefix sum reaches the first p slabs'
         * shares, kept where every slab gets min_planes */
        goal += total / parts - own_cost(extra, p - 1);
        const int32_t lo = cuts[p - 1] + min_planes, hi = n - (parts - p) * min_planes;
        while (z < n && sum + 0.5 * plane_weight(weight, z) < goal) /* past half the plane */
            sum += plane_weight(weight, z++);
        cuts[p] = z < lo ? lo : (z > hi ? hi : z);
    }
    cuts[parts] = n;
}

/* Whether slabs that each cost at most `bound` (and hold at least min_planes)
 * cover the n planes: each takes as many planes as fit, leaving min_planes
 * for every later one. Their cuts if so. */
static bool fits(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                 const double *extra, double bound, int32_t *cuts)
{
    int32_t z = 0;
    cuts[0] = 0;
    for (int32_t p = 0; p < parts; ++p) {
        const bool last = p + 1 == parts; /* takes the rest */
        const int32_t most = last ? n : n - (parts - 1 - p) * min_planes, start = z;
        double c = own_cost(extra, p);
        while (z < most &&
               (last || z - start < min_planes || c + plane_weight(weight, z) <= bound))
            c += plane_weight(weight, z++);
        if (c > bound)
            return false;
        cuts[p + 1] = z;
    }
    return true;
}

bool acm__partition(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                    const double *extra, int32_t *cuts)
{
    if (parts < 1 || min_planes < 1 || n < (int64_t)parts * min_planes)
        return false;
    prefix_cuts(n, weight, parts, min_planes, extra, cuts);
    const double prefix = costliest(weight, parts, extra, cuts);
    /* the least bound on the costliest slab that whole planes allow, bisected
     * (cuts as scratch); the prefix split where it is as good */
    double lo = 0.0, hi = prefix;
    for (int it = 0; it < 64 && hi - lo > 1e-9 * hi; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (fits(n, weight, parts, min_planes, extra, mid, cuts))
            hi = mid;
        else
            lo = mid;
    }
    if (hi >= prefix * (1.0 - 1e-9) || !fits(n, weight, parts, min_planes, extra, hi, cuts))
        prefix_cuts(n, weight, parts, min_planes, extra, cuts);
    return true;
}
