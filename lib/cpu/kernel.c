/*
 * libacmlbm -- CPU row kernels. This file is compiled several times, once
 * per instruction set, with ACM_CPU_ISA naming the variant (see
 * lib/meson.build); cpu/dispatch.c picks one at run time.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h> /* sqrt */

#include "kernel.h"

#ifndef ACM_CPU_ISA
#  error "compile with -DACM_CPU_ISA=<variant name>"
#endif

#define ACM__CAT2(a, b) a##b
#define ACM__CAT(a, b) ACM__CAT2(a, b)
#define ACM__STR2(a) #a
#define ACM__STR(a) ACM__STR2(a)

#define ACM_R float
#define ACM_SFX(name) name##_f32
#include "row_tmpl.h"
#undef ACM_R
#undef ACM_SFX

#define ACM_R double
#define ACM_SFX(name) name##_f64
#include "row_tmpl.h"
#undef ACM_R
#undef ACM_SFX

const acm_cpu_kernels ACM__CAT(acm_cpu_kernels_, ACM_CPU_ISA) = {
    ACM__STR(ACM_CPU_ISA),
    collide_row_f32,
    collide_row_f64,
};
