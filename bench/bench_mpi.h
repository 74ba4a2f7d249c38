/*
 * libacmlbm benchmark -- the processes of acm-bench-decomp --mpi: one slab
 * per MPI rank (acm_mpi.h), the rows run by the first k ranks while the rest
 * wait, each rank on its own device. Without MPI (ACM_BENCH_MPI 0) the group
 * is this process alone and every call is a no-op.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BENCH_MPI_H
#define ACMLBM_BENCH_MPI_H

#include <stdio.h>  /* snprintf */
#include <string.h> /* memset, strcmp */

#include <acmlbm/acmlbm.h>

#if ACM_BENCH_MPI
#include <acmlbm/acm_mpi.h>
#endif
#if ACM_HAVE_CUDA
#include <cuda_runtime.h> /* cudaDeviceGetPCIBusId, cudaGetDeviceProperties */
#endif

/* What one rank runs on, gathered on every rank. */
typedef struct bench_place {
    char key[96];  /* host and device (PCI bus id), or host alone on the CPU: ranks with the
                      same key share a device */
    char name[96]; /* the device's name */
    double bw;     /* its copy bandwidth, bytes per second */
} bench_place;

/* The processes of the run and, in a row, the ranks that step its domain. */
typedef struct bench_group {
    int mpi;  /* --mpi: the ranks of MPI_COMM_WORLD */
    int rank; /* in the world */
    int size;
#if ACM_BENCH_MPI
    MPI_Comm row; /* the row's ranks (MPI_COMM_NULL on the others) */
#endif
} bench_group;

/* MPI started (with --mpi) and the group's size; 0, or -1 with a message. */
static inline int bench_group_init(bench_group *g, int mpi, int *argc, char ***argv,
                                   const char *prog)
{
    memset(g, 0, sizeof *g);
    g->size = 1;
    if (!mpi)
        return 0;
#if ACM_BENCH_MPI
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "%s: --mpi: MPI_Init failed\n", prog);
        return -1;
    }
    g->mpi = 1;
    g->row = MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &g->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g->size);
    return 0;
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "%s: --mpi: this benchmark is built without MPI\n", prog);
    return -1;
#endif
}

static inline void bench_group_fini(bench_group *g)
{
#if ACM_BENCH_MPI
    if (g->mpi)
        MPI_Finalize();
#else
    (void)g;
#endif
}

/* The lowest of every rank's v (a usage check all ranks must pass). */
static inline int bench_group_min(const bench_group *g, int v)
{
#if ACM_BENCH_MPI
    if (g->mpi)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#else
    (void)g;
#endif
    return v;
}

/* This rank's place: its host and device, the device's copy bandwidth bw. */
static inline void bench_place_here(bench_place *p, int cuda, int device, double bw)
{
    char host[64] = "localhost";
#if ACM_BENCH_MPI
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS)
        snprintf(host, sizeof host, "%.63s", name);
#endif
    memset(p, 0, sizeof *p);
    p->bw = bw;
    snprintf(p->key, sizeof p->key, "%s", host);
    snprintf(p->name, sizeof p->name, "cpu");
#if ACM_HAVE_CUDA
    char bus[32] = "";
    struct cudaDeviceProp prop;
    if (cuda && cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
        snprintf(p->key, sizeof p->key, "%.63s/%.31s", host, bus);
        snprintf(p->name, sizeof p->name, "%.95s", prop.name);
    }
#else
    (void)cuda;
    (void)device;
#endif
}

/* Every rank's place into all[size], in rank order. */
static inline void bench_group_places(const bench_group *g, const bench_place *mine,
                                      bench_place *all)
{
#if ACM_BENCH_MPI
    if (g->mpi) {
        MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE,
                      MPI_COMM_WORLD);
        return;
    }
#else
    (void)g;
#endif
    all[0] = *mine;
}

/* Whether rank r's place is one of ranks [0, r)'s. */
static inline int bench_place_seen(const bench_place *all, int r)
{
    for (int j = 0; j < r; ++j)
        if (strcmp(all[j].key, all[r].key) == 0)
            return 1;
    return 0;
}

/* In turn, rank by rank (ranks sharing a device measure it one at a time). */
static inline void bench_group_turn(const bench_group *g)
{
#if ACM_BENCH_MPI
    if (g->mpi)
        MPI_Barrier(MPI_COMM_WORLD);
#else
    (void)g;
#endif
}

/* The row of k slabs over ranks [0, k): whether this rank takes part. k = 1
 * runs an undivided domain on rank 0. */
static inline int bench_group_row_begin(bench_group *g, int k)
{
#if ACM_BENCH_MPI
    if (g->mpi) {
        g->row = MPI_COMM_NULL;
        if (k > 1)
            MPI_Comm_split(MPI_COMM_WORLD, g->rank < k ? 0 : MPI_UNDEFINED, g->rank, &g->row);
        return g->rank < k;
    }
#endif
    (void)k;
    return g->rank == 0;
}

static inline void bench_group_row_end(bench_group *g)
{
#if ACM_BENCH_MPI
    if (g->mpi) {
        if (g->row != MPI_COMM_NULL)
            MPI_Comm_free(&g->row);
        MPI_Barrier(MPI_COMM_WORLD);
    }
#else
    (void)g;
#endif
}

/* The domain of a row: over its ranks in an MPI row of 2 or more, else here. */
static inline acm_status bench_group_create(const bench_group *g, acm_domain **d,
                                            const acm_domain_options *o)
{
#if ACM_BENCH_MPI
    if (g->mpi && g->row != MPI_COMM_NULL)
        return acm_domain_create_mpi(d, o, g->row);
#else
    (void)g;
#endif
    return acm_domain_create(d, o);
}

/* The largest (max) or the sum of v over the row's ranks (v on one process). */
static inline double bench_group_row_fold(const bench_group *g, double v, int max)
{
#if ACM_BENCH_MPI
    if (g->mpi && g->row != MPI_COMM_NULL)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, g->row);
#else
    (void)g;
    (void)max;
#endif
    return v;
}

#endif /* ACMLBM_BENCH_MPI_H */
