/*
 * libacmlbm fuzz target -- the Wavefront OBJ reader: every input through
 * acm_mesh_load_memory() with ACM_MESH_FORMAT_OBJ.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "fuzz_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return acm_fuzz_mesh(data, size, ACM_MESH_FORMAT_OBJ);
}
