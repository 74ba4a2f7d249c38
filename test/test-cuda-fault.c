/*
 * libacmlbm tests -- a device fault that kills the CUDA context (docs/reliability.md,
 * "Device faults"). A kernel of the test's own, given as PTX to the driver
 * (loaded with dlopen, so nothing links against libcuda), writes to an
 * invalid address while a domain lives on the device: the library's next
 * call must report the fault with CUDA's message, mark the domain unusable,
 * refuse every later call the same way, and destroy it without a hang or a
 * crash. A program of its own: the fault poisons the whole process's context.
 * Needs a GPU (exit 77 otherwise), run with CK_FORK=no.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dlfcn.h>

#include <cuda.h> /* driver API types; the functions come from dlsym */

#include "test-common.h"

/* One thread storing to address p. */
static const char poison_ptx[] = ".version 7.0\n"
                                 ".target sm_52\n"
                                 ".address_size 64\n"
                                 ".visible .entry poison(.param .u64 p)\n"
                                 "{\n"
                                 "  .reg .u64 %rd<2>;\n"
                                 "  ld.param.u64 %rd1, [p];\n"
                                 "  st.global.u32 [%rd1], 1;\n"
                                 "  ret;\n"
                                 "}\n";

typedef CUresult (*load_fn)(CUmodule *, const void *);
typedef CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*sync_fn)(void);

/* The driver's function `name` into *fn (a function pointer of the right
 * type): copied from dlsym's object pointer, as POSIX allows. */
static void driver_symbol(void *lib, const char *name, void *fn, size_t fn_size)
{
    void *f = dlsym(lib, name);
    ck_assert_msg(f != NULL, "libcuda.so.1 has no %s", name);
    ck_assert_uint_eq(fn_size, sizeof f);
    memcpy(fn, &f, sizeof f);
}

/* Run the faulting kernel in the current (the runtime's primary) context;
 * returns what the driver said when it finished. */
static CUresult run_poison(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen libcuda.so.1: %s", dlerror());
    load_fn load;
    get_fn get;
    launch_fn launch;
    sync_fn sync;
    driver_symbol(lib, "cuModuleLoadData", &load, sizeof load);
    driver_symbol(lib, "cuModuleGetFunction", &get, sizeof get);
    driver_symbol(lib, "cuLaunchKernel", &launch, sizeof launch);
    driver_symbol(lib, "cuCtxSynchronize", &sync, sizeof sync);
    CUmodule mod;
    CUfunction fn;
    ck_assert_int_eq(load(&mod, poison_ptx), CUDA_SUCCESS);
    ck_assert_int_eq(get(&fn, mod, "poison"), CUDA_SUCCESS);
    unsigned long long where = 16; /* no allocation starts there */
    void *args[] = {&where};
    ck_assert_int_eq(launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    return sync(); /* the library of the process stays loaded: no dlclose */
}

START_TEST(context_fault_marks_the_domain_unusable)
{
    acm_domain_options o = acm_test_options(16, 12, 10, 0.02, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    o.backend = ACM_BACKEND_CUDA;
    acm_domain *d = acm_test_domain(&o);
    ACM_CK_OK(d, acm_step(d, 3));
    const CUresult r = run_poison();
    ck_assert_msg(r == CUDA_ERROR_ILLEGAL_ADDRESS, "the poison kernel gave %d, not an illegal "
                  "address", (int)r);

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
