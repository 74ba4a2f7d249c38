/*
 * libacmlbm fuzz target -- the layout text reader, acm_layout_from_string()
 * (tuning caches and configuration files hand it text from disk). A text it
 * accepts must survive acm_layout_to_string() and a second read unchanged.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acmlbm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[4096], once[ACM_LAYOUT_STRING_SIZE], twice[ACM_LAYOUT_STRING_SIZE];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    acm_layout *a = NULL, *b = NULL;
    if (acm_layout_create(&a) != ACM_OK || acm_layout_create(&b) != ACM_OK)
        abort();
    if (acm_layout_from_string(a, text) == ACM_OK) {
        if (acm_layout_to_string(a, once, sizeof once) != ACM_OK ||
            acm_layout_from_string(b, once) != ACM_OK ||
            acm_layout_to_string(b, twice, sizeof twice) != ACM_OK || strcmp(once, twice) != 0)
            abort();
    } else if (acm_layout_last_error(a)[0] == '\0') {
        abort(); /* every refusal says why */
    }
    acm_layout_destroy(a);
    acm_layout_destroy(b);
    return 0;
}
