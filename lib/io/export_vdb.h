/*
 * libacmlbm -- the OpenVDB writer module (export_vdb.cc, C++17, built as the
 * loadable module acmlbm-vdb.so) as a table of C functions, for lib/io/vdb.c.
 *
 * libacmlbm does not link OpenVDB: it loads the module when a .vdb file is
 * written. Loading libopenvdb starts log4cplus's thread pool (Debian 12's
 * log4cplus 2.0, at load time), after which a forked child that calls exit()
 * hangs in log4cplus's finaliser; linked into libacmlbm, that would hit every
 * program using the library (Check's forked tests included), not only those
 * that export VDB.
 *
 * No C++ type or exception crosses this header: every failure is a status
 * and a message in the caller's buffer. Never installed.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXPORT_VDB_H
#define ACMLBM_EXPORT_VDB_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

#include "acmlbm/acm_common.h" /* acm_status, ACM_BEGIN_DECLS */

ACM_BEGIN_DECLS

/* One grid, from a dense array. */
typedef struct acm_vdb_grid {
    const char *name;    /* grid name: "density", "vel", ... */
    const float *values; /* components per voxel, x fastest, then y, then z */
    int32_t n[3];        /* voxels along each axis */
    int32_t components;  /* 1: FloatGrid; 3: Vec3SGrid (vector type contravariant relative) */
    double voxel_size;   /* lattice units per voxel edge */
    double origin;       /* centre of voxel (0, 0, 0), the same on each axis */
    int fog;             /* 1 component only: class fog volume, and values <= cutoff
                            stay inactive; 0: every voxel active, class unknown */
    float cutoff;
} acm_vdb_grid;

/* Grids being gathered for one file (C++ objects behind an opaque pointer). */
typedef struct acm_vdb_file acm_vdb_file;

/* What the module offers. */
typedef struct acm_vdb_writer {
    const char *version; /* ACM_VERSION_STRING of the module's build: it must be the library's */
    /* An empty set of grids; creator (the library's name and version) goes into the file. */
    acm_status (*begin)(acm_vdb_file **out, const char *creator, char *msg, size_t size);
    /* Copy a grid into the set (the dense array may be freed afterwards). */
    acm_status (*add)(acm_vdb_file *file, const acm_vdb_grid *grid, char *msg, size_t size);
    /* Write the set as a .vdb file into fd (open for writing, seekable; the
     * caller syncs, closes and renames it); path only names it in messages. */
    acm_status (*write)(acm_vdb_file *file, int fd, const char *path, char *msg, size_t size);
    /* Free the set; NULL is a no-op. */
    void (*end)(acm_vdb_file *file);
} acm_vdb_writer;

/* The module's one exported function, by this name; the number changes with
 * the table. */
#define ACM_VDB_WRITER_ENTRY "acm_vdb_writer_1"
typedef const acm_vdb_writer *(*acm_vdb_writer_entry)(void);

ACM_END_DECLS

#endif /* ACMLBM_EXPORT_VDB_H */
