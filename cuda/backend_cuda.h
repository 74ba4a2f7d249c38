/*
 * libacmlbm -- the CUDA backend's C interface to lib/ (the ops table is built
 * in cuda/ops.c). SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BACKEND_CUDA_H
#define ACMLBM_BACKEND_CUDA_H

#include "backend.h" /* acm_check */

ACM_BEGIN_DECLS

extern const struct acm_backend_ops acm_backend_cuda;


bool acm_cuda_probe(void);
acm_status acm_cuda_domain_init(acm_domain *d);
void acm_cuda_domain_fini(acm_domain *d);
acm_status acm_cuda_init_equilibrium(acm_domain *d, const acm_init_source *src);
acm_status acm_cuda_advance(acm_domain *d, acm_check when);
/* The ops table's advance: acm_cuda_advance, or a step of a run (run_begin). */
acm_status acm_cuda_advance_step(acm_domain *d, acm_check when);
acm_status acm_cuda_advance_edges(acm_domain *d);
acm_status acm_cuda_advance_rest(acm_domain *d, acm_check when);
acm_status acm_cuda_advance_many(acm_domain *d, int64_t nsteps, bool record);
acm_status acm_cuda_run_begin(acm_domain *d, int64_t left, bool record, int64_t *run);
acm_status acm_cuda_run_end(acm_domain *d, acm_status st, bool *again);
acm_status acm_cuda_get_field(acm_domain *d, acm_field field, acm_dtype dtype, void *dst);
acm_status acm_cuda_set_field(acm_domain *d, acm_field field, acm_dtype dtype, const void *src);
acm_status acm_cuda_face_values(acm_domain *d, int face);
acm_status acm_cuda_probe_cell(acm_domain *d, int32_t x, int32_t y, int32_t z, double *rho,
                               double u[3]);
acm_status acm_cuda_stats(acm_domain *d, acm_domain_stats *out);
acm_status acm_cuda_check(acm_domain *d, acm_check when);
acm_status acm_cuda_prepare(acm_domain *d);
acm_status acm_cuda_plane_sums(acm_domain *d, acm_plane_sums *out);
acm_status acm_cuda_refresh_sums(acm_domain *d);
acm_status acm_cuda_planes_get(acm_domain *d, int32_t z0, int32_t n, int dz, void *buf);
acm_status acm_cuda_planes_put(acm_domain *d, int32_t z0, int32_t n, int dz, const void *buf);
acm_status acm_cuda_planes_wait(acm_domain *d);
void *acm_cuda_planes_host_alloc(acm_domain *d, size_t bytes);
void acm_cuda_planes_host_free(void *p);
#if ACM_HAVE_NCCL
acm_status acm_cuda_peer_id(acm_domain *d, void *id);
void acm_cuda_peer_device(acm_domain *d, char *key, size_t size);
acm_status acm_cuda_peer_open(acm_domain *d, const void *id, int rank, int nranks, size_t bytes,
                              const acm_peer_join *join, void **peer);
acm_status acm_cuda_peer_exchange(acm_domain *d, void *peer, const acm_peer_msg *msg, int n);
acm_status acm_cuda_peer_wait(acm_domain *d, void *peer, double seconds);
void acm_cuda_peer_close(void *peer, bool abort);
#endif
acm_status acm_cuda_planes_copy(acm_domain *dst, int32_t dst_z, acm_domain *src, int32_t src_z,
                                int32_t n, int dz);
acm_status acm_cuda_planes_join(acm_domain *dst, acm_domain *src);
acm_status acm_cuda_sums_share(acm_domain *d, acm_domain *const *slabs, int32_t n);
void acm_cuda_sums_unshare(acm_domain *d);
acm_status acm_cuda_ib_attach(acm_domain *d);
acm_status acm_cuda_ib_forces(acm_domain *d);
acm_status acm_cuda_ib_fetch(acm_domain *d);
acm_status acm_cuda_ib_plane_forces(acm_domain *d, struct acm_ib_ft *out);
acm_status acm_cuda_ib_begin(acm_domain *d, struct acm_coupling *out);
acm_status acm_cuda_ib_end(acm_domain *d, const double *dvdw);
acm_status acm_cuda_ib_positions(acm_domain *d, const struct acm_solid *s, double *dst);
acm_status acm_cuda_ib_resort(acm_domain *d);
acm_status acm_cuda_ib_order(acm_domain *d, const struct acm_solid *s, uint64_t *origin);
acm_status acm_cuda_ib_home(acm_domain *d);
acm_status acm_cuda_state_save(acm_domain *d, struct acm_state *st, bool park);
acm_status acm_cuda_state_load(acm_domain *d, const struct acm_state *st);

void acm_cuda_device_name(acm_domain *d, char *buf, size_t size);
acm_status acm_cuda_smoke_attach(acm_domain *d, struct acm_smoke *s);
void acm_cuda_smoke_detach(struct acm_smoke *s);
acm_status acm_cuda_smoke_velocity(acm_domain *d);
acm_status acm_cuda_smoke_step(acm_domain *d, struct acm_smoke *s, const struct acm_smoke_plan *p);
acm_status acm_cuda_smoke_fetch(acm_domain *d, struct acm_smoke *s);
acm_status acm_cuda_smoke_counts(acm_domain *d, struct acm_smoke *s);
acm_status acm_cuda_smoke_upload(acm_domain *d, struct acm_smoke *s);
acm_status acm_cuda_smoke_project(acm_domain *d, struct acm_smoke *s, int32_t subdivisions,
                                  float *dst, size_t count, bool on_device);
acm_status acm_cuda_upload(acm_domain *d, const void *src, size_t bytes, void **dev);
void acm_cuda_release(acm_domain *d, void *dev);
acm_status acm_cuda_sample_velocity_begin(acm_domain *d, const double *points, size_t count);
acm_status acm_cuda_sample_velocity_end(acm_domain *d, double *velocity, size_t count);

ACM_END_DECLS

#endif /* ACMLBM_BACKEND_CUDA_H */
