#!/bin/sh
# A timeline of a CUDA program (bench/trace/acm_trace.c: CUPTI, where Nsight
# Systems cannot make a report): runs the command with the tracer injected and
# writes the Chrome trace to FILE; bench/trace-report.py reads it.
#   bench/trace/acm-trace.sh [--graphs] FILE command [args...]
# --graphs: a graph's execution as one record instead of its kernels.
# The tracer library is looked for beside this script's build output:
# ACM_TRACE_LIB, else build*/bench/trace/libacmtrace.so under the source tree.
set -eu
graphs=0
if [ "${1:-}" = "--graphs" ]; then graphs=1; shift; fi
if [ $# -lt 2 ]; then
    echo "usage: acm-trace.sh [--graphs] FILE command [args...]" >&2
    exit 2
fi
out=$1; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
lib=${ACM_TRACE_LIB:-}
if [ -z "$lib" ]; then
    for c in "$here"/build*/bench/trace/libacmtrace.so; do [ -f "$c" ] && lib=$c && break; done
fi
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "acm-trace.sh: libacmtrace.so not found (build with CUDA, or set ACM_TRACE_LIB)" >&2
    exit 2
fi
# NVTX ranges reach CUPTI through its own injection entry: the libcupti the tracer uses
cupti=$(ldd "$lib" | awk '/libcupti/ {print $3; exit}')
if [ -z "$cupti" ] || [ ! -f "$cupti" ]; then
    echo "acm-trace.sh: $lib does not find libcupti (ldd)" >&2
    exit 2
fi
CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$cupti ACM_TRACE_OUT=$out \
    ACM_TRACE_GRAPHS=$graphs exec "$@"
