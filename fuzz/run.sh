#!/bin/sh
# Fuzz the mesh readers, the layout text reader, the checkpoint loader and the
# public API as a whole (random call sequences, fuzz/fuzz_api.c): build the
# libFuzzer targets with clang (ASan and UBSan) in build-fuzz/, then run each
# one for SECONDS (default 60).
#
#   fuzz/run.sh [SECONDS]
#
# The committed seeds (fuzz/corpus/<target>/) are read only; what the run
# finds goes to build-fuzz/corpus-<target>/ (kept between runs, never
# committed), crashes to build-fuzz/crash-<target>-*. Exit status 1 if any
# target crashed. SPDX-License-Identifier: Apache-2.0
set -eu

secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz

if [ ! -f "$build/build.ninja" ]; then
    CC=${CC:-clang} meson setup "$build" "$root" -Dfuzz=enabled -Dcuda=disabled -Dmpi=disabled \
        -Dtests=disabled -Dexamples=disabled -Dbuildtype=debugoptimized
fi
meson compile -C "$build" fuzz/fuzz_stl fuzz/fuzz_obj fuzz/fuzz_layout fuzz/fuzz_checkpoint \
    fuzz/fuzz_api

# fuzz_api's findings are fixed; their reproducers (fuzz/corpus/api/finding-*) are
# regression seeds. FUZZ_API_IGNORE=kind:op,... would step around an open one.

status=0
for t in stl obj layout checkpoint api; do
    grown=$build/corpus-$t
    mkdir -p "$grown"
    dict=$root/fuzz/$t.dict
    [ -f "$dict" ] || dict=
    # the API target's inputs are programs: a few hundred operations at most
    maxlen=65536
    [ "$t" = api ] && maxlen=4096
    echo "== fuzz_$t: $secs s"
    # -malloc_limit_mb: inputs are at most 64 KiB, so a reader that asks for
    # hundreds of MB has trusted a count it should not have (the API target's
    # domains are at most 12^3 cells)
    if ! "$build/fuzz/fuzz_$t" "$grown" "$root/fuzz/corpus/$t" \
        -max_len="$maxlen" -max_total_time="$secs" -malloc_limit_mb=256 -rss_limit_mb=2048 \
        ${dict:+-dict="$dict"} -artifact_prefix="$build/crash-$t-" \
        -print_final_stats=1; then
        echo "== fuzz_$t: CRASH (see $build/crash-$t-*)"
        status=1
    fi
done
exit "$status"
