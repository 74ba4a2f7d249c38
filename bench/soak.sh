#!/usr/bin/env bash
# The long soaks of docs/reliability.md ("Soak"), one log per run in LOGDIR:
#   - CPU, 1e6 steps of a 16^3 box, FP64 and FP32, one after the other on one
#     thread (OMP_NUM_THREADS=1: 25-40 min each on a 2-core machine);
#   - when nvidia-smi finds a GPU: CUDA, 1e7 steps of a 64^3 box, FP32 then FP64.
# Every run has the spinning torus and the smoke. The script ends with the
# machine-readable "soak: ..." line of each run and exits 1 if any failed.
#
#   bench/soak.sh LOGDIR [BUILDDIR]    (BUILDDIR: holds bench/acm-soak; default build)
#
# SOAK_CPU_STEPS, SOAK_GPU_STEPS, SOAK_CPU_SIZE, SOAK_GPU_SIZE override the
# figures above (a quick trial of the script: SOAK_CPU_STEPS=2000 SOAK_GPU_STEPS=20000).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || $1 == -h || $1 == --help ]]; then
    echo "usage: $0 LOGDIR [BUILDDIR]" >&2
    exit 2
fi
logdir=$1
build=${2:-build}
soak=$build/bench/acm-soak
if [[ ! -x $soak ]]; then
    echo "$0: $soak not found: build it first (meson compile -C $build acm-soak)" >&2
    exit 2
fi
mkdir -p "$logdir"

failed=0
# run NAME ARGS...: one soak, its log in LOGDIR/soak-NAME.log
run() {
    local name=$1 log="$logdir/soak-$1.log"
    shift
    echo "== $name: $soak $* (log $log)"
    if ! "$soak" --smoke "$@" >"$log" 2>&1; then
        failed=1
    fi
    tail -n 1 "$log"
}

cpu_steps=${SOAK_CPU_STEPS:-1000000}
cpu_size=${SOAK_CPU_SIZE:-16}
for precision in fp64 fp32; do
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \
        run "cpu-$precision" --backend cpu --precision "$precision" --size "$cpu_size" \
        --steps "$cpu_steps"
done

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    gpu_steps=${SOAK_GPU_STEPS:-10000000}
    gpu_size=${SOAK_GPU_SIZE:-64}
    for precision in fp32 fp64; do
        run "cuda-$precision" --backend cuda --precision "$precision" --size "$gpu_size" \
            --steps "$gpu_steps"
    done
else
    echo "== no GPU (nvidia-smi found none): the CUDA soaks were not run"
fi

echo "== summary"
grep -h '^soak:' "$logdir"/soak-*.log || true
exit "$failed"
