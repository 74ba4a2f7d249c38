#!/bin/sh
# The storage table of docs/performance.md (issue #30): every collision model on
# population and on moment storage, FP32, 16-bit and FP64, at 256^3. MLUPS and the
# fraction of the copy bandwidth from acm-bench-gpu; DRAM bytes, thread
# instructions a cell and registers from Nsight Compute, one launch of the fused
# kernel (acm_lbm_kernel) or of the tiled moment kernel (acm_mom_tile_kernel)
# after 10. Run from a CUDA build directory on a GPU machine with ncu:
#   sh ../bench/storage-table.sh            (logs in $OUT or ./storage-logs)
# About 100 s on an H100. SPDX-License-Identifier: Apache-2.0
set -u
out=${OUT:-storage-logs}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
./bench/acm-bench-gpu --sizes 256 --variants fused --precisions fp32,fp16,fp64 \
    --models bgk,rm,cm,acm,acm-li2020 --storage populations,moments --seconds 0.3 \
    > "$out/bench.log" 2>&1
grep -E "copy bandwidth|^fused" "$out/bench.log"
cells=16777216
printf "%-11s %-5s %-10s %9s %9s %10s %5s\n" storage prec model "rd B/c" "wr B/c" "inst/c" regs
for s in moments populations; do
    kern=acm_mom_tile_kernel
    [ "$s" = populations ] && kern=acm_lbm_kernel
    for p in fp32 fp16 fp64; do
        for m in bgk rm cm acm acm-li2020; do
            # RM-MRT: moments in FP32 and 16-bit only (its populations row: the benchmark's)
            [ "$m" = rm ] && { [ "$p" = fp64 ] || [ "$s" = populations ]; } && continue
            log="$out/ncu-$s-$p-$m.log"
            timeout 60 ncu --print-units base --kernel-name regex:$kern --launch-skip 10 \
                --launch-count 1 --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__thread_inst_executed.sum,launch__registers_per_thread \
                ./bench/acm-bench-gpu --sizes 256 --variants fused --precisions "$p" --models "$m" \
                --storage "$s" --seconds 0.05 > "$log" 2>&1
            awk -v s="$s" -v p="$p" -v m="$m" -v n=$cells '
                { v = $NF; gsub(",", "", v) }
                /dram__bytes_read.sum/ { rd = v } /dram__bytes_write.sum/ { wr = v }
                /smsp__thread_inst_executed.sum/ { ins = v } /launch__registers_per_thread/ { r = v }
                END { printf "%-11s %-5s %-10s %9.1f %9.1f %10.0f %5s\n", s, p, m, rd / n, wr / n, ins / n, r }' "$log"
        done
    done
done
