/*
 * libacmlbm tests -- one runner for every test executable. It runs all the
 * suites linked in (see TEST_SUITE in test-common.h), or those named on the
 * command line. Executables built with ACM_TEST_REQUIRES_CUDA, and any run
 * with ACM_TEST_BACKEND=cuda, exit with 77 ("skipped") when no CUDA device is
 * usable, and say why -- or fail (exit 1) when ACM_REQUIRE_GPU=1 is set, so
 * that a broken driver on a GPU machine cannot pass as "skipped". CUDA runs
 * need CK_FORK=no (no CUDA in forked children).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"

extern const struct acm_test_suite *const __start_acm_test_suites[];
extern const struct acm_test_suite *const __stop_acm_test_suites[];

static int wanted(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* Why the CUDA backend cannot run here, in the library's words: the message
 * of a domain that fails to be created on it. */
static void gpu_reason(char *why, size_t size)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = 4;
    o.viscosity = 0.1;
    o.backend = ACM_BACKEND_CUDA;
    o.error_buffer = why;
    o.error_buffer_size = size;
    acm_domain *d = NULL;
    if (acm_domain_create(&d, &o) == ACM_OK) {
        acm_domain_destroy(d);
        snprintf(why, size, "acm_backend_available(ACM_BACKEND_CUDA) answered 0");
    }
}

/* Exit status of a GPU test program on a machine without a usable GPU. */
static int no_gpu(const char *program)
{
    char why[256] = "";
    gpu_reason(why, sizeof why);
    const char *require = getenv("ACM_REQUIRE_GPU");
    if (require != NULL && strcmp(require, "1") == 0) {
        printf("FAIL: %s runs on the GPU, ACM_REQUIRE_GPU=1 is set, and the CUDA backend "
               "cannot run: %s\n", program, why);
        return 1;
    }
    printf("SKIP: %s runs on the GPU and the CUDA backend cannot run here: %s\n", program, why);
    return 77;
}

int main(int argc, char **argv)
{
#ifdef ACM_TEST_REQUIRES_CUDA
    const int needs_cuda = 1;
#else
    const int needs_cuda = acm_test_backend() == ACM_BACKEND_CUDA; /* ACM_TEST_BACKEND=cuda */
#endif /* ACM_TEST_REQUIRES_CUDA */
    if (needs_cuda && !acm_backend_available(ACM_BACKEND_CUDA))
        return no_gpu(argv[0]);
    SRunner *sr = NULL;
    for (const struct acm_test_suite *const *s = __start_acm_test_suites;
         s < __stop_acm_test_suites; ++s) {
        if (!wanted((*s)->name, argc, argv))
            continue;
        if (sr == NULL)
            sr = srunner_create((*s)->make());
        else
            srunner_add_suite(sr, (*s)->make());
    }
    if (sr == NULL) {
        fprintf(stderr, "no test suite matched\n");
        return 1;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
