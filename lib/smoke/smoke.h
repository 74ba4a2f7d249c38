/*
 * libacmlbm -- the private side of acm_smoke: what the step pipeline and the
 * backends see. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SMOKE_H
#define ACMLBM_SMOKE_H

#include "acm_private.h"
#include "smoke_math.h" /* acm_smoke_source, acm_smoke_obstacle, acm_smoke_counts */

ACM_BEGIN_DECLS

/* acm_smoke_options.capacity is below this. */
#define ACM_SMOKE_CAPACITY_MAX (UINT64_C(1) << 31)

/* An emitter as the smoke keeps it. */
typedef struct smoke_emitter {
    acm_emitter e;      /* e.points is not used */
    double *points;     /* owned: POINTS the caller's, SOLID body-frame points */
    uint64_t npoints;
    void *dev_points;   /* the backend's copy (ops->upload), or NULL */
    double carry;       /* fraction of a particle owed to the next step */
    uint64_t next;      /* POINTS: the next point */
    uint64_t serial;    /* particles asked of it so far: its random streams */
} smoke_emitter;

/* What one step does to a smoke (built by lib/smoke/smoke.c for the backend). */
typedef struct acm_smoke_plan {
    const acm_smoke_source *sources; /* the emitters with particles this step */
    int32_t nsources;
    uint32_t emissions;              /* their particles in all */
    const acm_smoke_obstacle *obstacles;
    int32_t nobstacles;
    uint64_t seed;
} acm_smoke_plan;

struct acm_smoke {
    acm_domain *domain;
    uint64_t capacity, seed;
    double *x;           /* 3 per slot; on a device, as last fetched */
    int32_t *age;        /* steps lived; -1: free slot */
    int32_t *life;       /* lifetime of the slot's particle (0: until it leaves) */
    uint32_t *free_list; /* the host's step: this step's free slots */
    acm_smoke_counts counts; /* on a device, as last fetched */
    uint64_t dropped_planned; /* drops decided on the host while planning steps (more
                                 than the capacity at once); a device's counters hold
                                 only its own, so these are added when reported */
    bool fetched;        /* x and age hold the device's particles of this step */
    smoke_emitter *emitters;
    int32_t nemitters;
    acm_smoke_source *sources; /* scratch of the plans, one per emitter */
    void *dev;           /* the backend's particles (ops->smoke_attach), or NULL */
    bool doomed;         /* destroyed inside a callback: gone when its call returns */
    char error[ACM_ERROR_SIZE];
};

/* Particles alive by the counters (on a device: as last fetched). */
static inline uint64_t acm__smoke_alive(const acm_smoke *s)
{
    const acm_smoke_counts *c = &s->counts;
    return c->emitted - c->left - c->expired - c->absorbed;
}

/* Record a message on the smoke and return the status. */
acm_status acm__smoke_fail(acm_smoke *s, acm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The particles (x, age) and counters on the host, from the device where they live there. */
acm_status acm__smoke_sync(acm_smoke *s);

/* acm_cuda_smoke_density: the density into device memory, checked. */
acm_status acm__smoke_density_device(acm_smoke *smoke, int32_t subdivisions, float *device_dst,
                                     size_t count);

/* The voxel counts of the smoke's density grid at a subdivision (checked). */
acm_status acm__smoke_grid(acm_smoke *s, int32_t subdivisions, int32_t dims[3]);

/* Before a step changes anything: allocate what its smoke part needs (the
 * obstacle list, the solids' occupancy grids), so that a step that runs out
 * of memory fails before it starts. */
acm_status acm__smokes_prepare(acm_domain *d);

/* Before the fluid part of a step (after the IB forces): keep the velocity
 * (j + F/2)/rho of the state the step starts from, which the particles move
 * with (on a device, the step's collision kernel writes it). */
acm_status acm__smokes_velocity(acm_domain *d);

/* After the fluid part of a step: move every smoke's particles with that
 * velocity, recycle those that left, expired or entered a solid, emit. */
acm_status acm__smokes_advance(acm_domain *d);

/* Destroy every smoke of a domain (acm_domain_destroy). */
void acm__smokes_destroy_all(acm_domain *d);

/* ---- checkpoints (lib/io/checkpoint_load.c) ---- */

/* Add an emitter as a checkpoint holds it: se->e (its solid resolved, or NULL
 * for a solid emitter whose solid was destroyed: then its rate must be 0),
 * se->points and se->npoints (taken over, freed on failure too), and its
 * progress (carry, next, serial). Checked as acm_smoke_add_emitter checks an
 * emitter, the points and progress as that call would have made them; a
 * refusal is described on the smoke. */
acm_status acm__smoke_add_saved_emitter(acm_smoke *s, smoke_emitter *se);

/* The particles a checkpoint wrote into s->x, s->age and s->life (the free
 * slots' age -1, as acm_smoke_create left them) and its counters become the
 * smoke's state: copied to the backend where the particles live there
 * (ops->smoke_upload). */
acm_status acm__smoke_restore(acm_smoke *s, const acm_smoke_counts *counts);

ACM_END_DECLS

#endif /* ACMLBM_SMOKE_H */
