/*
 * libacmlbm -- choice of the CPU row-kernel variant for the running processor.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h> /* getenv */
#include <string.h> /* strcmp */

#include "kernel.h"

const acm_cpu_kernels *acm_cpu_kernels_select(void)
{
    const char *env = getenv("ACMLBM_CPU_ISA");
    if (env != NULL && strcmp(env, "baseline") == 0)
        return &acm_cpu_kernels_baseline;
#if defined(ACM_CPU_HAVE_X86_VARIANTS)
    __builtin_cpu_init();
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (env != NULL && strcmp(env, "x86_64_v3") == 0 && v3)
        return &acm_cpu_kernels_x86_64_v3;
    if (v4 && (env == NULL || strcmp(env, "x86_64_v4") == 0))
        return &acm_cpu_kernels_x86_64_v4;
    if (v3)
        return &acm_cpu_kernels_x86_64_v3;
#endif /* ACM_CPU_HAVE_X86_VARIANTS */
    return &acm_cpu_kernels_baseline;
}
