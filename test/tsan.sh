#!/bin/sh
# libacmlbm tests -- the 'threads' suite under ThreadSanitizer (docs/api.md,
# "Threads"). Builds the library and test-threads only (not the whole tree)
# in a TSan build directory, then runs that one test:
#
#   test/tsan.sh [BUILD_DIR]        (default: build-tsan)
#
# CPU backend only (the CUDA runtime is not instrumented). The test's domains
# run on one OpenMP thread (ACM_PARAM_THREADS=1, grids under the library's
# parallel threshold, and OMP_NUM_THREADS=1 here): libgomp is not built with
# TSan, so its barriers would be reported as races that are not there; the
# threads under test are the caller's pthreads. No suppressions are needed.
# halt_on_error: the first report fails the test; CK_FORK=no: the report and
# the Check result come from one process.
# SPDX-License-Identifier: Apache-2.0
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-tsan}

if [ ! -d "$build" ]; then
    meson setup "$build" -Dcuda=disabled -Dopenvdb=disabled -Dexamples=disabled \
        -Db_sanitize=thread -Dbuildtype=debug
fi
meson compile -C "$build" test-threads
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
CK_FORK=no OMP_NUM_THREADS=1 \
    meson test -C "$build" --no-rebuild --print-errorlogs --suite threads
