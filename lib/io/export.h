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

/* The temporary beside `path` that an export writes (`path.tmp.<pid>`); a
 * path too long is ACM_ERR_IO with a message in error[n]. */
acm_status acm__temp_name(char *tmp, size_t size, const char *path, char *error, size_t n);

/* The end of an export, its temporary flushed and closed with error e (0:
 * none): renamed over `path`, or removed and the reason in error[n]. */
acm_status acm__temp_finish(const char *tmp, const char *path, int e, char *error, size_t n);

ACM_END_DECLS

#endif /* ACMLBM_EXPORT_H */
