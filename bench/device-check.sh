#!/bin/sh
# One device session: every GPU test program, compute-sanitizer (memcheck and
# racecheck), the fluid benchmark table and the immersed-boundary benchmark.
# Run from a CUDA build directory; logs go to $OUT (or ./device-logs). Used to
# produce docs/performance.md. PART=tests|bench|all (default all): the two
# halves fit a 10-minute call each.
out=${OUT:-device-logs}
part=${PART:-all}
mkdir -p "$out"
export CK_FORK=no ACM_TEST_BACKEND=cuda OMP_WAIT_POLICY=PASSIVE
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ "$part" != bench ]; then
    for t in test-cuda test-api test-physics test-stability test-solids test-validation; do
        timeout 400 ./test/$t > "$out/$t.log" 2>&1
        echo "$t: exit $? -- $(grep -E '^[0-9]+%: Checks' "$out/$t.log")"
    done
    grep -E "C_D|Galilean|spinning|heavy" "$out/test-validation.log"
    # --report-api-errors no: test-cuda provokes an out-of-memory error on purpose
    ACM_TEST_STEPS=8 timeout 400 compute-sanitizer --tool memcheck --leak-check full --report-api-errors no \
        --error-exitcode 9 ./test/test-cuda > "$out/memcheck.log" 2>&1
    echo "memcheck: exit $? -- $(grep -E 'ERROR SUMMARY|Checks' "$out/memcheck.log" | tr '\n' ' ')"
    CK_RUN_SUITE=solids_sphere timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
        ./test/test-solids > "$out/memcheck-solids.log" 2>&1
    echo "memcheck (solids): exit $? -- $(grep -E 'ERROR SUMMARY|Checks' "$out/memcheck-solids.log" | tr '\n' ' ')"
    ACM_TEST_STEPS=3 CK_RUN_CASE=interop timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
        ./test/test-cuda > "$out/racecheck.log" 2>&1
    echo "racecheck (interop): exit $? -- $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|Checks' "$out/racecheck.log" | tr '\n' ' ')"
    ACM_TEST_STEPS=3 CK_RUN_CASE=solids timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
        ./test/test-cuda > "$out/racecheck-solids.log" 2>&1
    echo "racecheck (solids): exit $? -- $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|Checks' "$out/racecheck-solids.log" | tr '\n' ' ')"
fi
if [ "$part" != tests ]; then
    ./bench/acm-bench-gpu --seconds 0.5 > "$out/bench.log" 2>&1
    ./bench/acm-bench-gpu --sizes 256 --variants fused --precisions fp32,fp16 --models bgk,cm,acm-li2020 --seconds 0.5 | grep -E '^fused' >> "$out/bench.log"
    cat "$out/bench.log"
    ./bench/acm-bench-ib --quick --samples 50000,1000000,2000000 --seconds 0.3 > "$out/bench-ib.log" 2>&1
    ./bench/acm-bench-ib --samples 500000 --shapes sphere,knot --seconds 0.3 | grep -vE '^(device|domain|shape|$)' >> "$out/bench-ib.log"
    cat "$out/bench-ib.log"
fi
