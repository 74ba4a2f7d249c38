/*
 * libacmlbm examples and benchmarks -- reading option values from the
 * command line, for the programs that do not link solid_common (whose
 * table-driven sc_parse_args comes with libpng): the benchmarks and
 * game_loop. Each reader takes the program's name (for the message), the
 * option's name and its text; on a bad value it prints "PROG: NAME 'TEXT':
 * expected ..." to stderr and returns -1, else stores the value and returns 0.
 * cli_failed reports a failed library call the same way.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_CLI_H
#define ACMLBM_EXAMPLES_CLI_H

#include <errno.h>  /* errno */
#include <stdint.h> /* int32_t */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* strtol, strtod */
#include <string.h> /* strcmp */

#include <acmlbm/acmlbm.h> /* acm_backend */

/* An integer in [lo, hi]. */
static inline int cli_long(const char *prog, const char *name, const char *text, long lo, long hi,
                           long *out)
{
    char *end = NULL;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s '%s': expected an integer in [%ld, %ld]\n", prog, name, text, lo,
                hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A comma-separated list of 1 to cap integers, each in [lo, hi]: out[0 .. *n). */
static inline int cli_long_list(const char *prog, const char *name, const char *text, long lo,
                                long hi, long *out, int cap, int *n)
{
    const char *p = text;
    for (int k = 0; k < cap; ++k) {
        char *end = NULL;
        errno = 0;
        const long v = strtol(p, &end, 10);
        if (errno != 0 || end == p || v < lo || v > hi || (*end != ',' && *end != '\0'))
            break;
        out[k] = v;
        if (*end == '\0') {
            *n = k + 1;
            return 0;
        }
        p = end + 1;
    }
    fprintf(stderr, "%s: %s '%s': expected 1 to %d comma-separated integers in [%ld, %ld]\n",
            prog, name, text, cap, lo, hi);
    return -1;
}

/* A number in [lo, hi] (not NaN). */
static inline int cli_real(const char *prog, const char *name, const char *text, double lo,
                           double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "%s: %s '%s': expected a number in [%g, %g]\n", prog, name, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A grid: "N" (a cube) or "X<sep>Y<sep>Z", each in [lo, hi]. */
static inline int cli_dims(const char *prog, const char *name, const char *text, char sep,
                           long lo, long hi, int32_t n[3])
{
    const char *p = text;
    for (int axis = 0; axis < 3; ++axis) {
        char *end = NULL;
        errno = 0;
        const long v = strtol(p, &end, 10);
        if (errno != 0 || end == p || v < lo || v > hi)
            break;
        n[axis] = (int32_t)v;
        if (*end == '\0' && (axis == 0 || axis == 2)) {
            if (axis == 0)
                n[1] = n[2] = n[0];
            return 0;
        }
        if (*end != sep)
            break;
        p = end + 1;
    }
    fprintf(stderr, "%s: %s '%s': expected N or X%cY%cZ, each in [%ld, %ld]\n", prog, name, text,
            sep, sep, lo, hi);
    return -1;
}

/* auto, cpu or cuda. */
static inline int cli_backend(const char *prog, const char *name, const char *text,
                              acm_backend *out)
{
    static const char *const names[] = {"auto", "cpu", "cuda"};
    static const acm_backend values[] = {ACM_BACKEND_AUTO, ACM_BACKEND_CPU, ACM_BACKEND_CUDA};
    for (int k = 0; k < 3; ++k)
        if (strcmp(text, names[k]) == 0) {
            *out = values[k];
            return 0;
        }
    fprintf(stderr, "%s: %s '%s': expected auto, cpu or cuda\n", prog, name, text);
    return -1;
}

/* A library call's failure: 1 after "PROG: WHAT: STATUS: MESSAGE" on stderr, 0 for ACM_OK. */
static inline int cli_failed(const char *prog, acm_status st, const char *what,
                             const char *message)
{
    if (st == ACM_OK)
        return 0;
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, acm_status_string(st),
            message != NULL ? message : "");
    return 1;
}

/* The loop over "--name value" pairs (and value-less flags) of a program's
 * command line. option(name, value, ctx) takes one pair and returns 0 or -1
 * (having said why); flag(name, ctx), or NULL, returns 1 when name is a flag it
 * set. Returns 1 after --help (usage on stdout), 2 on an error (usage on
 * stderr), else 0. */
typedef int (*cli_option_fn)(const char *name, const char *value, void *ctx);
typedef int (*cli_flag_fn)(const char *name, void *ctx);

static inline int cli_parse(const char *prog, int argc, char **argv, cli_option_fn option,
                            cli_flag_fn flag, void (*usage)(FILE *), void *ctx)
{
    for (int k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (flag != NULL && flag(argv[k], ctx))
            continue;
        if (k + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, argv[k]);
            usage(stderr);
            return 2;
        }
        if (option(argv[k], argv[k + 1], ctx) != 0) {
            usage(stderr);
            return 2;
        }
        ++k;
    }
    return 0;
}

#endif /* ACMLBM_EXAMPLES_CLI_H */
