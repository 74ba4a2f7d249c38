/*
 * libacmlbm -- the CUDA backend's ops table, built in C so that designated
 * initialisers keep it readable (style guide R16).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "backend.h"
#include "backend_cuda.h"

const struct acm_backend_ops acm_backend_cuda = {
    .name = "cuda",
    .kind = ACM_BACKEND_CUDA,
    .probe = acm_cuda_probe,
    .domain_init = acm_cuda_domain_init,
    .domain_fini = acm_cuda_domain_fini,
    .init_equilibrium = acm_cuda_init_equilibrium,
    .advance = acm_cuda_advance,
    .advance_edges = acm_cuda_advance_edges,
    .advance_rest = acm_cuda_advance_rest,
    .check = acm_cuda_check,
    .prepare = acm_cuda_prepare,
    .get_field = acm_cuda_get_field,
    .set_field = acm_cuda_set_field,
    .probe_cell = acm_cuda_probe_cell,
    .stats = acm_cuda_stats,
    .plane_sums = acm_cuda_plane_sums,
    .planes_get = acm_cuda_planes_get,
    .planes_put = acm_cuda_planes_put,
    .planes_wait = acm_cuda_planes_wait,
    .planes_host_alloc = acm_cuda_planes_host_alloc,
    .planes_host_free = acm_cuda_planes_host_free,
#if ACM_HAVE_NCCL
    .peer_id = acm_cuda_peer_id,
    .peer_device = acm_cuda_peer_device,
    .peer_open = acm_cuda_peer_open,
    .peer_exchange = acm_cuda_peer_exchange,
    .peer_wait = acm_cuda_peer_wait,
    .peer_close = acm_cuda_peer_close,
#endif
    .planes_copy = acm_cuda_planes_copy,
    .planes_join = acm_cuda_planes_join,
    .sums_share = acm_cuda_sums_share,
    .sums_unshare = acm_cuda_sums_unshare,
    .ib_attach = acm_cuda_ib_attach,
    .ib_forces = acm_cuda_ib_forces,
    .ib_fetch = acm_cuda_ib_fetch,
    .ib_plane_forces = acm_cuda_ib_plane_forces,
    .ib_begin = acm_cuda_ib_begin,
    .ib_end = acm_cuda_ib_end,
    .ib_positions = acm_cuda_ib_positions,
    .state_save = acm_cuda_state_save,
    .state_load = acm_cuda_state_load,
    .device_name = acm_cuda_device_name,
    .smoke_attach = acm_cuda_smoke_attach,
    .smoke_detach = acm_cuda_smoke_detach,
    .smoke_velocity = acm_cuda_smoke_velocity,
    .smoke_step = acm_cuda_smoke_step,
    .smoke_fetch = acm_cuda_smoke_fetch,
    .smoke_counts = acm_cuda_smoke_counts,
    .smoke_upload = acm_cuda_smoke_upload,
    .smoke_density = acm_cuda_smoke_project,
    .upload = acm_cuda_upload,
    .release = acm_cuda_release,
    .sample_velocity = acm_cuda_sample_velocity,
};
