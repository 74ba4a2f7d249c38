/*
 * libacmlbm examples -- write the procedural meshes kept in data/meshes:
 * a trefoil-knot tube (binary STL) and a torus (OBJ).
 *
 *   make_shapes [output directory, default data/meshes]
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>  /* printf, fprintf, snprintf */
#include <stdlib.h> /* EXIT_SUCCESS, EXIT_FAILURE */

#include "shapes.h"

/* 180 rings of 12: 4320 triangles, 216 kB of STL, facets about 0.18 long */
#define TREFOIL_RINGS 180
#define TREFOIL_RING_VERTICES 12
/* torus R = 2, r = 0.5 in 48 x 24 quads: 2304 triangles */
#define TORUS_R 2.0
#define TORUS_TUBE 0.5
#define TORUS_NU 48
#define TORUS_NV 24

/* Write one mesh; 0 on success. */
static int write_mesh(const char *dir, const char *name, const shapes_mesh *m, int stl)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        fprintf(stderr, "make_shapes: path too long: %s/%s\n", dir, name);
        return -1;
    }
    if ((stl ? shapes_write_stl_binary(path, m) : shapes_write_obj(path, m)) != 0) {
        fprintf(stderr, "make_shapes: cannot write %s\n", path);
        return -1;
    }
    printf("%s: %zu vertices, %zu triangles, area %.6g, volume %.6g\n", path, m->nv, m->nt,
           shapes_area(m), shapes_volume(m));
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "data/meshes";
    shapes_mesh knot, torus;
    if (shapes_trefoil(&knot, TREFOIL_RINGS, TREFOIL_RING_VERTICES) != 0 ||
        shapes_torus(&torus, TORUS_R, TORUS_TUBE, TORUS_NU, TORUS_NV) != 0) {
        fprintf(stderr, "make_shapes: out of memory\n");
        return EXIT_FAILURE;
    }
    int rc = write_mesh(dir, "trefoil.stl", &knot, 1);
    rc |= write_mesh(dir, "torus.obj", &torus, 0);
    shapes_free(&knot);
    shapes_free(&torus);
    return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
