/*
 * libacmlbm fuzz target -- the STL readers (binary and ASCII): every input
 * through acm_mesh_load_memory() with ACM_MESH_FORMAT_STL.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "fuzz_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return acm_fuzz_mesh(data, size, ACM_MESH_FORMAT_STL);
}
