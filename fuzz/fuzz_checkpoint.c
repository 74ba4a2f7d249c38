/*
 * libacmlbm fuzz target -- the checkpoint loader, acm_domain_load()
 * (docs/checkpoint.md): whatever the file, a status and a message, no crash,
 * no leak, no read outside what was allocated. Built with
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, under which the loader does not
 * refuse checksum mismatches (it still computes them), so that mutations reach
 * the parsing behind them. A file it accepts must step and save again.
 * Seeds: fuzz/corpus/checkpoint, made by fuzz/checkpoint_seeds.c.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acmlbm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (path[0] == '\0')
        snprintf(path, sizeof path, "/tmp/fuzz-checkpoint-%ld.ckpt", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (f == NULL || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    char err[512] = "";
    acm_load_options lo = ACM_LOAD_OPTIONS_INIT;
    lo.backend = ACM_BACKEND_CPU;
    lo.error_buffer = err;
    lo.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    const acm_status st = acm_domain_load(&d, path, &lo);
    if (st != ACM_OK) {
        if (d != NULL || err[0] == '\0')
            abort(); /* nothing on failure, and every refusal says why */
        return 0;
    }
    (void)acm_domain_set_param(d, ACM_PARAM_THREADS, 1);
    (void)acm_step(d, 1); /* may diverge on garbage numbers: a status, not a crash */
    char again[80];
    snprintf(again, sizeof again, "%s.again", path);
    (void)acm_domain_save(d, again);
    remove(again);
    acm_domain_destroy(d);
    return 0;
}
