/*
 * libacmlbm -- the choice of a backend's ops table (style guide R15).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_BACKENDS_H
#define ACMLBM_BACKENDS_H

#include "backend.h" /* struct acm_backend_ops */

ACM_BEGIN_DECLS

/* The table for a requested backend (AUTO resolved; ACMLBM_BACKEND honoured).
 * Fails with a message in msg. */
acm_status acm__backend_select(acm_backend requested, const struct acm_backend_ops **out,
                               char *msg, size_t msg_size);

ACM_END_DECLS

#endif /* ACMLBM_BACKENDS_H */
