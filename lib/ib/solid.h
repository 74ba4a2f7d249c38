/*
 * libacmlbm -- the private side of acm_solid: what the domain pipeline and
 * the backends read. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SOLID_H
#define ACMLBM_SOLID_H

#include "acm_private.h"
#include "ib.h"    /* acm_ib_grid */
#include "rigid.h" /* acm_body */

ACM_BEGIN_DECLS

#define ACM_SOLID_DEFAULT_MAX_SAMPLES (UINT64_C(1) << 24)
#define ACM_SAMPLE_BLOCK_DEFAULT 2 /* the paper's most frequent choice (its Table 2) */

/* A solid's inside on a body-frame grid of points lo + h (i, j, k). */
typedef struct acm_occupancy {
    double lo[3], h;
    int32_t n[3];
    uint32_t *bits;       /* NULL until built */
    void *dev;            /* the backend's copy (ops->upload), or NULL */
} acm_occupancy;

struct acm_solid {
    acm_domain *domain;
    uint64_t count;       /* samples */
    uint64_t offset;      /* first sample in the domain's concatenated arrays */
    double *r;            /* 3 per sample: body-frame offset from the centre of mass */
    double *dv;           /* per sample: volume weight dV = area x 1 cell (spec 8.1) */
    uint64_t *origin;     /* per sample: its index in the sampling order */
    double alpha;         /* penalty gain */
    acm_body body;        /* pose and velocities the next step uses */
    acm_body placed;      /* the pose the backend last placed the samples at */
    bool has_mass;        /* mass properties known: may move freely */
    bool moved;           /* pose changed since the backend placed the samples */
    double force[3], torque[3]; /* fluid on the solid, last step (spec 9.1) */
    double sort_x[3], sort_q[4]; /* pose at the last Morton-block sort */
    bool order_on_device; /* re-sorted by the backend (ib_resort): r, dv and origin here
                             hold an older order until acm__solid_order_home */
    bool resort_due;      /* the backend's ib_resort puts it in order now */
    int64_t resorts;
    double area, spacing;
    /* body-frame surface for inside tests (closed meshes only) */
    double *mv;
    uint32_t *mt;
    size_t mnv, mnt;
    double *normal;       /* 3 per sample in sampling order (origin): outward unit normal */
    double inset;         /* how far the samples lie inside the surface, cells */
    acm_occupancy occ;    /* the inside as a body-frame bit grid, built when a smoke asks */
    bool doomed;          /* destroyed inside a callback: gone when its call returns */
    char error[ACM_ERROR_SIZE];
};

/* The stencil grid of a domain: its size and periodic axes. */
acm_ib_grid acm__ib_grid(const acm_domain *d);

/* After the fluid part of a step: move the bodies with their forces (spec
 * 9.2), refuse runaway speeds, re-sort samples that drifted by a block. */
acm_status acm__solids_after_step(acm_domain *d);

/* What the next `steps` steps do to the solids of d that do not move freely
 * (no force enters their motion), as acm__solids_after_step does it:
 * poses[j * nsolids + i], the pose solid i is placed at in step j (j = steps:
 * after the last, where a re-sort after it sorts), and resort[j], the solids
 * (bit i, i < 32) that need a re-sort after step j. A free body's poses are
 * left as they are and its bit clear (the backend moves it: CUDA runs). */
void acm__solids_plan(const acm_domain *d, int steps, acm_body *poses, uint32_t *resort);

/* Whether a solid of d moves freely. */
bool acm__solids_any_free(const acm_domain *d);

/* The free bodies' velocity changes of this step's implicit coupling (6 per
 * solid: dv, dw; others untouched) from their coupling sums per plane (nplanes
 * per solid), folded in plane order: one domain and its slabs alike. */
void acm__solids_coupled_velocities(const acm_domain *d, const acm_coupling *planes,
                                    int32_t nplanes, double *dvdw);

/* Destroy every solid of a domain (acm_domain_destroy). */
void acm__solids_destroy_all(acm_domain *d);

/* The free bodies that the backend integrates (d->bodies_on_backend) into
 * the host's copies (ops->ib_home); ACM_ERR_DIVERGED when one of them reached
 * the speed limit there. */
acm_status acm__solids_home(acm_domain *d);

/* Fetch the solids' forces from the backend if the last step's are not in
 * (the free bodies home first). */
acm_status acm__solids_fetch(acm_domain *d);

/* Hand the current sample set to the backend (the solids' forces fetched). */
acm_status acm__solids_attach(acm_domain *d);

/* The same at the poses the samples were last placed at (a re-layout: what
 * acm_solid_get_samples reports stays; the next step places moving solids
 * anew from their bodies, as always). */
acm_status acm__solids_reattach(acm_domain *d);

/* Sort every solid's samples into the domain's sample order (d->layout.ib) at its
 * current pose; acm__solids_attach must follow. */
acm_status acm__solids_resort(acm_domain *d);

/* Points where a solid emitter puts particles: every sample moved out along
 * its surface normal to `offset` cells outside the surface (body frame;
 * caller frees). */
acm_status acm__solid_surface_points(const acm_solid *s, double offset, double **points,
                                     uint64_t *count);

/* The solid's inside for smokes to recycle particles that enter it: its
 * occupancy bits built (and, when `device`, copied to device memory) at first
 * use; a solid without a closed mesh has none. Allocates: called before a
 * step changes anything (acm__smokes_prepare). */
acm_status acm__solid_obstacle_ready(acm_solid *s, bool device);
/* That inside at the solid's current pose; false for a solid without one.
 * `index`: the solid's in its domain. */
bool acm__solid_obstacle(const acm_solid *s, int32_t index, bool device,
                         struct acm_smoke_obstacle *o);
/* The index of solid s in its domain's list (nsolids: not in it). */
int32_t acm__solid_index(const acm_solid *s);

ACM_END_DECLS

#endif /* ACMLBM_SOLID_H */
