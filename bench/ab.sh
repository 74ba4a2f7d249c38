#!/bin/sh
# A/B of two builds of libacmlbm on one device, in one session: the digest of a
# few scenes' final states (bench/digest.c; the same lines mean a bitwise-neutral
# change) and the fused and immersed-boundary benchmarks, alternating the two
# libraries so that a drift of the device's clock hits both alike. The test and
# benchmark programs of the current build run against either library through
# LD_LIBRARY_PATH (the ABI is the same).
#   sh bench/ab.sh OLD_LIBDIR NEW_LIBDIR [ROUNDS]     (from a build directory)
# OLD_LIBDIR and NEW_LIBDIR hold a libacmlbm.so.1 each. SPDX-License-Identifier: Apache-2.0
set -u
old=$1
new=$2
rounds=${3:-2}
out=${OUT:-ab-logs}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for lib in old new; do
    dir=$old
    [ "$lib" = new ] && dir=$new
    for backend in cpu cuda; do
        LD_LIBRARY_PATH=$dir ./bench/acm-digest --backend $backend --steps 200 \
            > "$out/digest-$backend-$lib.txt" 2>&1
    done
done
for backend in cpu cuda; do
    if cmp -s "$out/digest-$backend-old.txt" "$out/digest-$backend-new.txt"; then
        echo "digest $backend: the same lines"
    else
        echo "digest $backend: differs"
        diff "$out/digest-$backend-old.txt" "$out/digest-$backend-new.txt"
    fi
done
r=1
while [ "$r" -le "$rounds" ]; do
    for lib in old new; do
        dir=$old
        [ "$lib" = new ] && dir=$new
        echo "== round $r, $lib"
        LD_LIBRARY_PATH=$dir ./bench/acm-bench-gpu --sizes 256 --variants fused \
            --precisions fp32,fp16 --seconds 1 2>&1 | tee -a "$out/bench-$lib.log"
        LD_LIBRARY_PATH=$dir ./bench/acm-bench-ib --quick --samples 1000000 --seconds 0.5 2>&1 |
            tee -a "$out/bench-ib-$lib.log"
    done
    r=$((r + 1))
done
