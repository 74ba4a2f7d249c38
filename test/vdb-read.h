/*
 * libacmlbm tests -- a reader of .vdb files through OpenVDB itself
 * (vdb-read.cc, C++17), for test-vdb.c: what a grid holds, as C data.
 * Built only with the meson option openvdb on. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_TEST_VDB_READ_H
#define ACMLBM_TEST_VDB_READ_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint64_t */

#ifdef __cplusplus
extern "C" {
#endif

/* One grid of a file, as OpenVDB reads it. */
typedef struct vdb_test_grid {
    char value_type[32];  /* GridBase::valueType(): "float", "vec3s", ... */
    char grid_class[32];  /* GridBase::gridClassToString(): "fog volume", "unknown", ... */
    char vector_type[48]; /* GridBase::vecTypeToString(): "contravariant relative", ... */
    char creator[64];     /* the grid's creator metadata */
    int linear;           /* the transform is linear with a uniform scale */
    double voxel_size[3];
    double origin[3];     /* world position of the centre of voxel (0, 0, 0) */
    double centre[3];     /* world position of the centre of voxel (1, 2, 3) */
    float background[3];
    uint64_t active;      /* active voxels (a tile counts as its voxels) */
    uint64_t outside;     /* of them outside [0, n) */
} vdb_test_grid;

/* The names of the file's grids, sorted by name, separated by ","; and the
 * file's "creator" metadata. 0, or -1 with msg. */
int vdb_test_names(const char *path, char *names, size_t size, char *creator, size_t creator_size,
                   char *msg, size_t msg_size);

/* Grid `name` of the file: its properties into *info; each active voxel
 * inside [0, n) as comps floats into values (x fastest) and 1 into active
 * (values and active as the caller left them elsewhere). 0, or -1 with msg. */
int vdb_test_read(const char *path, const char *name, const int32_t n[3], int comps,
                  float *values, unsigned char *active, vdb_test_grid *info, char *msg,
                  size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif /* ACMLBM_TEST_VDB_READ_H */
