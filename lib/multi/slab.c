/*
 * libacmlbm -- the slabs of a decomposed domain (slab.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "slab.h"

acm_status acm__slab_failed(acm_domain *d, int32_t p, acm_status st)
{
    if (st == ACM_OK)
        return ACM_OK;
    const acm_slabs *m = d->impl;
    const acm_slab *sl = &m->slab[p];
    return ACM_FAIL(d, st, "slab %d of %d (planes %d..%d): %s", (int)p, (int)m->n, (int)sl->z0,
                    (int)sl->z1 - 1, sl->sub->error);
}
