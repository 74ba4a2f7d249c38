/*
 * libacmlbm -- one domain over several slabs (docs/multi-gpu.md): the
 * partitioner, the composite backend that steps the slabs and exchanges their
 * ghost planes, and the reductions every domain folds in the same order.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_DECOMP_H
#define ACMLBM_DECOMP_H

#include <math.h> /* sqrt */

#include "acm_private.h"
#include "lattice.h" /* ACM_HD */

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

/* ---- the reductions' order (every backend, decomposed or not) ------------ */

/* to += p, one fold step: sums in the caller's order, the maximum order-free. */
static inline void acm__plane_sums_add(acm_plane_sums *to, const acm_plane_sums *p)
{
    to->max_u2 = p->max_u2 > to->max_u2 ? p->max_u2 : to->max_u2;
    to->sum_rho += p->sum_rho;
    to->sum_j += p->sum_j;
    to->sum_pi += p->sum_pi;
}

/* The inverses the ACM rules take from a GPU's raw sums (cuda acm_finish_sums),
 * shared so that a decomposed domain's host computes them as a device does. */
ACM_HD double acm__inv_umax(double max_u2) { return max_u2 > 0.0 ? 1.0 / sqrt(max_u2) : 0.0; }
ACM_HD double acm__inv_mean(double sum, double ncells) { return sum > 0.0 ? ncells / sum : 0.0; }

/* The ACM rules' inputs from the fold over all planes, in plane order from
 * zero, of the planes' sums (each a fold over its rows in y order); the fold
 * itself into *total when not NULL (what a GPU slab steps with). */
void acm__prev_from_planes(acm_global_stats *prev, acm_plane_sums *total,
                           const acm_plane_sums *planes, int32_t n, double ncells);

/* ---- the partitioner -------------------------------------------------------- */

/* Cut n planes of the given weights (NULL: all equal) into `parts` slabs of at
 * least `min_planes` each, as equal in weight as the prefix sums allow:
 * slab p is planes [cuts[p], cuts[p + 1]), cuts[0] = 0, cuts[parts] = n.
 * Fails (false) when n < parts * min_planes. */
bool acm__partition(int32_t n, const double *weight, int32_t parts, int32_t min_planes,
                    int32_t *cuts);

/* ---- the decomposed domain ---------------------------------------------------- */

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
    void *comm;       /* the transport's (lib/halo_mpi.c) */
    /* immersed solids, allocated when they are attached (no allocation in a
     * step): per solid and plane, the slabs' parts of the forces or of the
     * free bodies' coupling sums (16 doubles each); one slab's own planes of
     * them; the free bodies' velocity changes (6 per solid) */
    double *ib_planes, *ib_mine, *ib_dvdw;
    int32_t ib_nsolids; /* what they hold */
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
} acm_slab;

/* The composite backend's state (d->impl of a decomposed domain). */
typedef struct acm_slabs {
    int32_t n;
    acm_slab *slab;
    acm_plane_sums *planes; /* nz: every plane's sums of the last step */
    acm_plane_sums total;   /* their fold in plane order */
    int32_t depth;          /* ghost planes at every cut (acm_slab.halo: depth or 0) */
    void **ghost;           /* 2 per slab: the ghost planes in transit (lib/halo.c) */
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

/* Make d, configured like an ordinary domain of the given backend, a
 * decomposed one of `parts` slabs along z in this process (slab p on CUDA
 * device devices[p], or d->device with devices NULL): d->ops becomes the
 * composite's table, d->decomp its slabs. */
acm_status acm__decomp_init(acm_domain *d, const struct acm_backend_ops *slab_ops, int32_t parts,
                            const int32_t *devices);
/* The same over the ranks of an MPI communicator (comm: an MPI_Comm *), one
 * slab per rank (lib/halo_mpi.c; ACM_ERR_NOT_BUILT without MPI). */
acm_status acm__decomp_init_mpi(acm_domain *d, const struct acm_backend_ops *slab_ops,
                                const void *comm);
/* Before a domain is made over comm: every rank's status of its options, the
 * lowest failing rank's in all (its message in msg). */
acm_status acm__mpi_agree_create(const void *comm, acm_status local, char *msg, size_t size);
/* The common part of both: slab p on process owner[p] (NULL: all here). */
acm_status acm__decomp_setup(acm_domain *d, const struct acm_backend_ops *slab_ops,
                             int32_t parts, const int32_t *devices);
/* st of a call on slab p's domain as d's: its message, naming the slab (ACM_OK
 * passed through). */
acm_status acm__slab_failed(acm_domain *d, int32_t p, acm_status st);
/* Whether this process writes d's files: the one of slab 0 over MPI (the
 * others take part in gathering the state, then learn the outcome). */
bool acm__decomp_writes(const acm_domain *d);
/* Release d->decomp (acm_domain_destroy, after the backend's fini). */
void acm__decomp_free(acm_domain *d);

ACM_END_DECLS

#endif /* ACMLBM_DECOMP_H */
