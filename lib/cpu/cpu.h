/*
 * libacmlbm -- the CPU backend, the oracle every other backend is checked
 * against (docs/conventions.md, "Backends"). SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CPU_H
#define ACMLBM_CPU_H

#include "backend.h" /* struct acm_backend_ops */

ACM_BEGIN_DECLS

extern const struct acm_backend_ops acm_backend_cpu;

ACM_END_DECLS

#endif /* ACMLBM_CPU_H */
