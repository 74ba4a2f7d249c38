/*
 * libacmlbm tests -- a device fault that kills the CUDA context (docs/reliability.md,
 * "Device faults"). A kernel of the test's own (cuda-poison.h) writes to an
 * invalid address while a domain lives on the device: the library's next
 * call must report the fault with CUDA's message, mark the domain unusable,
 * refuse every later call the same way, and destroy it without a hang or a
 * crash. A program of its own: the fault poisons the whole process's context.
 * Needs a GPU (exit 77 otherwise), run with CK_FORK=no.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cuda-poison.h"
#include "test-common.h"

START_TEST(context_fault_marks_the_domain_unusable)
{
    acm_domain_options o = acm_test_options(16, 12, 10, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_step(d, 3));
    const int r = poison_context();
    ck_assert_msg(r == POISON_ILLEGAL_ADDRESS, "the poison kernel gave %d, not an illegal "
                  "address", r);

    const acm_status st = acm_step(d, 1);
    const char *msg = acm_domain_last_error(d);
    ck_assert_msg(st == ACM_ERR_DEVICE, "after the fault acm_step gave %s (%s)",
                  acm_status_string(st), msg);
    ck_assert_msg(strstr(msg, "illegal memory access") != NULL && strstr(msg, "destroy") != NULL,
                  "message: '%s'", msg);
    /* every later call on the domain is refused the same way, without touching the device */
    double rho[16 * 12 * 10];
    ACM_CK_FAIL(d, acm_step(d, 1), ACM_ERR_DEVICE);
    ACM_CK_FAIL(d, acm_domain_get_field(d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, rho, sizeof rho),
                ACM_ERR_DEVICE);
    ck_assert_msg(strstr(acm_domain_last_error(d), "unusable") != NULL, "message: '%s'",
                  acm_domain_last_error(d));
    acm_domain_destroy(d);

    /* the process's context is gone: a new domain is refused with a status */
    char err[256] = "";
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *again = NULL;
    const acm_status created = acm_domain_create(&again, &o);
    ck_assert_msg(created != ACM_OK && again == NULL, "a domain was created on a dead context");
    ck_assert_msg(err[0] != '\0', "no message for %s", acm_status_string(created));
    printf("after the fault: acm_domain_create gave %s: %s\n", acm_status_string(created), err);
}
END_TEST

TEST_SUITE(cuda_fault_suite)
{
    Suite *s = suite_create("cuda_fault");
    TCase *tc = acm_tcase("context", 120);
    tcase_add_test(tc, context_fault_marks_the_domain_unusable);
    suite_add_tcase(s, tc);
    return s;
}
