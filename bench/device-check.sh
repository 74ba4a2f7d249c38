#!/bin/sh
# One device session: every GPU test program, compute-sanitizer (memcheck and
# racecheck), and the benchmark table. Run from a CUDA build directory; logs
# go to $OUT (or ./device-logs). Used to produce docs/performance.md.
out=${OUT:-device-logs}
mkdir -p "$out"
export CK_FORK=no ACM_TEST_BACKEND=cuda OMP_WAIT_POLICY=PASSIVE
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for t in test-cuda test-api test-physics test-stability; do
    timeout 400 ./test/$t > "$out/$t.log" 2>&1
    echo "$t: exit $? -- $(grep -E '^[0-9]+%: Checks' "$out/$t.log")"
done
# --report-api-errors no: test-cuda provokes an out-of-memory error on purpose
ACM_TEST_STEPS=8 timeout 400 compute-sanitizer --tool memcheck --leak-check full --report-api-errors no \
    --error-exitcode 9 \
    ./test/test-cuda > "$out/memcheck.log" 2>&1
echo "memcheck: exit $? -- $(grep -E 'ERROR SUMMARY|Checks' "$out/memcheck.log" | tr '\n' ' ')"
ACM_TEST_STEPS=3 CK_RUN_CASE=interop timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
    ./test/test-cuda > "$out/racecheck.log" 2>&1
echo "racecheck (interop): exit $? -- $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|Checks' "$out/racecheck.log" | tr '\n' ' ')"
ACM_TEST_STEPS=3 CK_RUN_CASE=agreement timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
    ./test/test-cuda > "$out/racecheck2.log" 2>&1
echo "racecheck (agreement): exit $? -- $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|Checks' "$out/racecheck2.log" | tr '\n' ' ')"
./bench/acm-bench-gpu --seconds 0.5 > "$out/bench.log" 2>&1
./bench/acm-bench-gpu --sizes 256 --variants fused --precisions fp32,fp16 --models bgk,cm,acm-li2020 --seconds 0.5 | grep -E '^fused' >> "$out/bench.log"
cat "$out/bench.log"
