/*
 * libacmlbm -- the partitioner of a decomposed domain's planes into slabs.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_PARTITION_H
#define ACMLBM_PARTITION_H

#include <stdbool.h> /* bool */
#include <stdint.h>  /* int32_t */

#include "acmlbm/acm_common.h" /* ACM_BEGIN_DECLS */

ACM_BEGIN_DECLS

/* Cut n planes of the given weights (NULL: all equal) into `parts` slabs of at
 * least `min_planes` each, slab p costing its planes' weights plus extra[p]
 * (NULL: nothing; the ghost planes it steps too), so that the costliest slab
 * costs as little as whole planes allow (where equal slabs are as good, the
 * cuts where the prefix sums reach each slab's share): slab p is planes
 * [cuts[p], cuts[p + 1]), cuts[0] = 0, cuts[parts] = n. Fails (false) when
 * n < parts * min_planes. */
bool acm__partition(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                    const double *extra, int32_t *cuts);

ACM_END_DECLS

#endif /* ACMLBM_PARTITION_H */
