/*
 * libacmlbm tests -- a device fault that kills the process's CUDA context: a
 * kernel of the test's own, given as PTX to the driver, stores to an invalid
 * address. The driver is loaded with dlopen (nothing links against libcuda)
 * and its few types are declared here, so that the programs that use this
 * (test-cuda-fault, test-mpi) build without the CUDA headers.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACM_TEST_CUDA_POISON_H
#define ACM_TEST_CUDA_POISON_H

#include <dlfcn.h>
#include <string.h>

#include <check.h>

/* the driver's values (cuda.h) */
#define POISON_SUCCESS 0
#define POISON_ILLEGAL_ADDRESS 700

typedef int (*poison_load_fn)(void **module, const void *image);
typedef int (*poison_get_fn)(void **function, void *module, const char *name);
typedef int (*poison_launch_fn)(void *f, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, void *stream, void **args, void **extra);
typedef int (*poison_sync_fn)(void);

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

/* The driver's function `name` into *fn (a function pointer of the right
 * type): copied from dlsym's object pointer, as POSIX allows. */
static inline void poison_symbol(void *lib, const char *name, void *fn, size_t fn_size)
{
    void *f = dlsym(lib, name);
    ck_assert_msg(f != NULL, "libcuda.so.1 has no %s", name);
    ck_assert_uint_eq(fn_size, sizeof f);
    memcpy(fn, &f, sizeof f);
}

/* Run the faulting kernel in the current (the runtime's primary) context;
 * returns what the driver said when it finished (POISON_ILLEGAL_ADDRESS). */
static inline int poison_context(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen libcuda.so.1: %s", dlerror());
    poison_load_fn load;
    poison_get_fn get;
    poison_launch_fn launch;
    poison_sync_fn sync;
    poison_symbol(lib, "cuModuleLoadData", &load, sizeof load);
    poison_symbol(lib, "cuModuleGetFunction", &get, sizeof get);
    poison_symbol(lib, "cuLaunchKernel", &launch, sizeof launch);
    poison_symbol(lib, "cuCtxSynchronize", &sync, sizeof sync);
    void *mod, *fn;
    ck_assert_int_eq(load(&mod, poison_ptx), POISON_SUCCESS);
    ck_assert_int_eq(get(&fn, mod, "poison"), POISON_SUCCESS);
    unsigned long long where = 16; /* no allocation starts there */
    void *args[] = {&where};
    ck_assert_int_eq(launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), POISON_SUCCESS);
    return sync(); /* the library of the process stays loaded: no dlclose */
}

#endif /* ACM_TEST_CUDA_POISON_H */
