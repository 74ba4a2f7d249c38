/*
 * libacmlbm -- the runtime version.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "acm_private.h"

ACM_API unsigned acm_version_number(void) { return ACM_VERSION_NUMBER; }

ACM_API const char *acm_version_string(void) { return ACM_VERSION_STRING; }
