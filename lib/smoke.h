/*
 * libacmlbm -- the private side of acm_smoke: what the step pipeline calls.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SMOKE_H
#define ACMLBM_SMOKE_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* An emitter as the smoke keeps it. */
typedef struct smoke_emitter {
    acm_emitter e;    /* e.points points at `points` */
    double *points;   /* owned copy */
    double carry;     /* fraction of a particle owed to the next step */
    size_t next;      /* next point of a POINTS emitter */
} smoke_emitter;

struct acm_smoke {
    acm_domain *domain;
    uint64_t capacity;
    double *x;           /* 3 per slot */
    int64_t *age;        /* steps lived; -1: free slot */
    int64_t *life;       /* lifetime of the slot's particle (0: until it leaves) */
    uint32_t *free_slot; /* stack of free slots */
    uint64_t nfree;
    smoke_emitter *emitters;
    int32_t nemitters;
    uint64_t rng;
    uint64_t emitted, left, expired, dropped;
    uint8_t *died;       /* per slot: what the last step did to it (smoke_math.h) */
    uint32_t *new_slots; /* the slots this step's emission filled */
    uint64_t nnew;
    void *dev;           /* the backend's copy of the particles (ops->smoke_attach), or NULL */
    char error[ACM_ERROR_SIZE];
};

/* Record a message on the smoke and return the status. */
acm_status acm__smoke_fail(acm_smoke *s, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The particles' positions in s->x, from the device where they live there. */
acm_status acm__smoke_positions(acm_smoke *s);

/* The voxel counts of the smoke's density grid at a subdivision (checked). */
acm_status acm__smoke_grid(acm_smoke *s, int32_t subdivisions, int32_t dims[3]);

/* After the fluid part of a step: move every smoke's particles with the
 * velocity of the new state, recycle those that left or expired, emit. */
acm_status acm__smokes_advance(acm_domain *d);

/* Destroy every smoke of a domain (acm_domain_destroy). */
void acm__smokes_destroy_all(acm_domain *d);

ACM_END_DECLS

#endif /* ACMLBM_SMOKE_H */
