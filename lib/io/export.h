/*
 * libacmlbm -- what the file exporters share (lib/io/export.c, lib/io/vdb.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXPORT_H
#define ACMLBM_EXPORT_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* At least one field, each known and given once (`name` names one in the
 * message); the message goes to the domain. */
acm_status acm__export_check_fields(acm_domain *d, const acm_field *fields, size_t count,
                                    const char *(*name)(acm_field));

ACM_END_DECLS

#endif /* ACMLBM_EXPORT_H */
