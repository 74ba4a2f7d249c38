/*
 * libacmlbm examples and benchmarks -- named ranges of a timeline (NVTX, from
 * the CUDA toolkit, header only): RANGE_BEGIN("name") ... RANGE_END() show as
 * a range in Nsight Systems or bench/trace/acm-trace.sh; nothing without CUDA,
 * a few nanoseconds without a tool attached.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_EXAMPLES_TIMELINE_H
#define ACMLBM_EXAMPLES_TIMELINE_H

#include <acmlbm/acmlbm.h> /* ACM_HAVE_CUDA */

#if ACM_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#define RANGE_BEGIN(name) nvtxRangePushA(name)
#define RANGE_END() nvtxRangePop()
#else
#define RANGE_BEGIN(name) ((void)0)
#define RANGE_END() ((void)0)
#endif

#endif
