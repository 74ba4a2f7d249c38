/*
 * libacmlbm -- the slabs of a decomposed domain (docs/multi-gpu.md): how the
 * domain is cut and where each slab runs, the composite backend's state, and
 * a slab's failure as the domain's. Shared by the composite backend
 * (decomp.c) and the exchange between slabs (halo.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SLAB_H
#define ACMLBM_SLAB_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* Ghost planes at a cut with in-place streaming: the second lets a slab step
 * its first ghost plane exactly (its pull reaches one plane further), whose
 * pushes land in the slab's planes, so the real planes next to the cut pull
 * and receive exactly what one undivided domain would give them. With two
 * arrays one is enough: a pull reaches one plane across the cut, and ghost
 * planes are not stepped (backend.h acm__stepped_planes). */
#define ACM_HALO_PLANES 2

/* With immersed solids, one ghost plane more per multi-direct-forcing
 * iteration: each iteration's spread carries the outer ghost plane's error
 * one plane inwards (docs/multi-gpu.md). A slab steps with every sample whose
 * stencil base lies within this many planes of its own and ghost planes, and
 * chooses them anew when a solid has moved by all but one of them. */
#define ACM_SLAB_SAMPLE_MARGIN 4

/* What an immersed sample costs a slab's step per multi-direct-forcing
 * iteration, in cells' steps (docs/multi-gpu.md, "Balance": 1.5M samples of
 * one iteration added 0.149 ms to a 0.896 ms step of 16M cells and 0.189 ms
 * to 3.52 ms of 64M cells on an H200, 1.8 and 2.3 cells a sample). */
#define ACM_SAMPLE_COST 2.2

/* A re-cut while solids move pays when it lowers the costliest slab's cost by
 * at least this fraction: the state moves between the slabs through the host. */
#define ACM_RECUT_GAIN 0.05

/* How the domain is cut and where its slabs run; kept for the handle's life
 * (a re-layout rebuilds the slabs from it). */
typedef struct acm_decomp {
    const struct acm_backend_ops *slab_ops;
    int32_t nslabs;
    int32_t *cuts;    /* nslabs + 1: slab p holds planes [cuts[p], cuts[p + 1]) */
    int32_t *devices; /* nslabs: CUDA device of each slab */
    int32_t *owner;   /* nslabs: the process (MPI rank) stepping each slab */
    int32_t rank;     /* this process's */
    const struct acm_halo_transport *transport; /* NULL: every slab is in this process */
    void *comm;       /* the transport's (lib/multi/halo_mpi.c) */
    /* immersed solids, allocated when they are attached (no allocation in a
     * step): per solid and plane, the slabs' parts of the forces or of the
     * free bodies' coupling sums (16 doubles each); one slab's own planes of
     * them; the free bodies' velocity changes (6 per solid) */
    double *ib_planes, *ib_mine, *ib_dvdw;
    int32_t ib_nsolids; /* what they hold */
    /* the solids' poses when the cuts were last weighed (7 per solid: x, q),
     * and whether the next reshape weighs them anew (decomp.c, "the cuts") */
    double *ib_weighed;
    bool recut;
    /* true while the slabs hold the uniform equilibrium of `init` (no step,
     * field or loaded state since): a reshape then makes it anew in the new
     * slabs instead of moving the state through the host */
    bool uniform;
    acm_init_source init;
} acm_decomp;

/* One slab of the domain and, where this process steps it, its domain. */
typedef struct acm_slab {
    int32_t z0, z1;  /* its planes [z0, z1) */
    int32_t halo[2]; /* its ghost planes below and above */
    int32_t device;
    bool local;      /* stepped by this process: sub is its domain */
    acm_domain *sub; /* planes [z0 - sub->halo[0], z1 + sub->halo[1]) */
    int64_t fallbacks_before; /* sub->fallback_total before the step under way */
} acm_slab;

/* The composite backend's state (d->impl of a decomposed domain). */
typedef struct acm_slabs {
    int32_t n;
    acm_slab *slab;
    acm_plane_sums *planes; /* nz: every plane's sums of the last step */
    acm_plane_sums total;   /* their fold in plane order */
    int32_t depth;          /* ghost planes at every cut (acm_slab.halo: depth or 0) */
    void **ghost;           /* 2 per slab: the ghost planes in transit (lib/multi/halo.c) */
    void (*ghost_free)(void *p); /* their release (NULL: acm__free) */
    void *peer; /* over MPI: the slabs' own communicator for them (NCCL), or NULL */
    void (*peer_close)(void *peer, bool abort);
    bool posted;            /* an exchange is under way (acm__halo_exchange_begin) */
    /* GPU slabs of one process fold the ACM rules' inputs on their devices
     * (sums_share): shared; on_devices: after the last step they did (every
     * slab's slab_sums_shared); stale: planes and total not yet folded here
     * from that step's sums */
    bool shared, on_devices, stale;
} acm_slabs;

/* st of a call on slab p's domain as d's: its message, naming the slab (ACM_OK
 * passed through). */
acm_status acm__slab_failed(acm_domain *d, int32_t p, acm_status st);
ACM_END_DECLS

#endif /* ACMLBM_SLAB_H */
