#!/bin/sh
# Thread instructions per cell of the fused kernel (two arrays and both
# in-place parities) for every collision model and storage precision, with
# Nsight Compute on a 128^3 domain. Run from a CUDA build directory on a GPU
# machine:   sh ../bench/instructions.sh
# Three launches are skipped, so the in-place launches profiled are step 4, an
# odd step (parity 1: swapped pull, push), and step 5, an even one.
cells=2097152
printf "%-10s %-5s %-8s %12s %10s\n" model prec variant "inst/cell" "regs"
for model in bgk rm cm acm acm-li2020; do
  for prec in fp32 fp16; do
    for variant in fused inplace; do
      count=1; [ "$variant" = inplace ] && count=2
      ncu --kernel-name regex:acm_lbm_kernel --launch-skip 3 --launch-count $count \
          --metrics smsp__thread_inst_executed.sum,launch__registers_per_thread \
          ./bench/acm-bench-gpu --sizes 128 --variants $variant --precisions $prec \
          --models $model --seconds 0.05 2>/dev/null |
        awk -v m=$model -v p=$prec -v v=$variant -v n=$cells '
          /acm_lbm_kernel</ { k++; name = (v == "fused") ? v : (k == 1 ? "odd" : "even") }
          /launch__registers_per_thread/ { r = $NF }
          /smsp__thread_inst_executed.sum/ { gsub(",", "", $NF);
            printf "%-10s %-5s %-8s %12.0f %10s\n", m, p, name, $NF / n, r }'
    done
  done
done
