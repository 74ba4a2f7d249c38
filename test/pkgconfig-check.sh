#!/bin/sh
# libacmlbm tests -- the installed tree works for a pkg-config user: stage an
# install with DESTDIR, then build a small C and a small C++ program with
# `pkg-config --cflags --libs acmlbm` against the staged tree only, run them,
# and check what they print. Also checks that the .pc file carries the
# version and acm_has_cuda, and that no private header is installed.
#
#   pkgconfig-check.sh MESON BUILD_ROOT VERSION HAS_CUDA SANITIZE CC [CXX]
#
# SANITIZE is the b_sanitize option ("none" or e.g. "address,undefined"): a
# sanitized library needs sanitized programs. CXX may be empty (no C++
# compiler: the C++ half is skipped, and says so).
# SPDX-License-Identifier: Apache-2.0
set -eu

usage="usage: pkgconfig-check.sh MESON BUILD_ROOT VERSION HAS_CUDA SANITIZE CC [CXX]"
meson_cmd=${1?$usage}
build=${2:?$usage}
version=${3:?$usage}
has_cuda=${4:?$usage}
sanitize=${5:?$usage}
cc=${6:?$usage}
cxx=${7:-}

PKG_CONFIG=${PKG_CONFIG:-pkg-config}
if ! command -v "$PKG_CONFIG" >/dev/null 2>&1; then
    echo "SKIP: $PKG_CONFIG not found"
    exit 77
fi
# shellcheck source=test/stage-install.sh
. "$(dirname "$0")/stage-install.sh" # fail, $tmp, stage_install
stage=$tmp/stage

# ---- stage the install --------------------------------------------------------
stage_install "$meson_cmd" "$build" "$stage"

pcs=$(find "$stage" -name acmlbm.pc)
[ -n "$pcs" ] || fail "no acmlbm.pc was installed"
[ "$(echo "$pcs" | wc -l)" -eq 1 ] || fail "several acmlbm.pc installed: $pcs"
for h in acmlbm.h acm_common.h acm_domain.h acm_layout.h acm_solid.h acm_version.h; do
    [ -n "$(find "$stage" -path "*/include/acmlbm/$h")" ] || fail "header acmlbm/$h not installed"
done
for h in acm_private.h backend.h collide.h csoa_index.h lattice.h boundary.h cpu/kernel.h; do
    [ -z "$(find "$stage" -name "$h")" ] || fail "private header $h was installed"
done

# Only the staged .pc is visible; its paths are rebased onto the stage.
PKG_CONFIG_LIBDIR=$(dirname "$pcs")
PKG_CONFIG_PATH=
PKG_CONFIG_SYSROOT_DIR=$stage
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

got=$("$PKG_CONFIG" --modversion acmlbm) || fail "pkg-config does not find acmlbm"
[ "$got" = "$version" ] || fail "pkg-config --modversion: '$got', expected '$version'"
got=$("$PKG_CONFIG" --variable=acm_has_cuda acmlbm)
[ "$got" = "$has_cuda" ] || fail "acm_has_cuda='$got', expected '$has_cuda'"

cflags=$("$PKG_CONFIG" --cflags acmlbm)
libs=$("$PKG_CONFIG" --libs acmlbm)
libdir=$("$PKG_CONFIG" --libs-only-L acmlbm | sed 's/^[[:space:]]*-L//; s/[[:space:]].*//')
echo "Cflags: $cflags"
echo "Libs:   $libs"
case "$cflags" in
    *"-I$stage"*) ;;
    *) fail "Cflags do not point into the staged tree" ;;
esac
[ -e "$libdir/libacmlbm.so" ] || fail "no libacmlbm.so in the Libs directory '$libdir'"

san=
if [ "$sanitize" != none ] && [ -n "$sanitize" ]; then
    san="-fsanitize=$sanitize"
fi

# ---- the programs: the same checks in C and in C++ -----------------------------
cat > "$tmp/prog.c" <<'PROG'
#include <acmlbm/acmlbm.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    acm_domain *d = NULL;
    acm_domain_stats s;
    o.nx = o.ny = o.nz = 3;
    o.viscosity = 0.05;
    o.backend = ACM_BACKEND_CPU;
    if (strcmp(acm_version_string(), ACM_VERSION_STRING) != 0 ||
        acm_version_number() != ACM_VERSION_NUMBER) {
        printf("header %s, library %s\n", ACM_VERSION_STRING, acm_version_string());
        return 1;
    }
    if (acm_domain_create(&d, &o) != ACM_OK)
        return 1;
    memset(&s, 0, sizeof s);
    s.version = ACM_DOMAIN_STATS_VERSION;
    if (acm_step(d, 2) != ACM_OK || acm_domain_get_stats(d, &s) != ACM_OK) {
        printf("%s\n", acm_domain_last_error(d));
        acm_domain_destroy(d);
        return 1;
    }
    acm_domain_destroy(d);
    printf("acmlbm %s cuda=%d steps=%d mass=%.3f\n", acm_version_string(), ACM_HAVE_CUDA,
           (int)s.step, s.mass);
    return 0;
}
PROG
cp "$tmp/prog.c" "$tmp/prog.cc"
expect="acmlbm $version cuda=$has_cuda steps=2 mass=27.000"

run_prog() { # name compiler flags...
    name=$1
    compiler=$2
    shift 2
    # shellcheck disable=SC2086 # the pkg-config output is a list of words
    if ! $compiler "$@" $san -o "$tmp/$name" "$tmp/$name.src" $cflags $libs > "$tmp/$name.log" 2>&1; then
        cat "$tmp/$name.log"
        fail "$name does not compile and link with pkg-config's flags"
    fi
    if command -v ldd >/dev/null 2>&1; then
        LD_LIBRARY_PATH=$libdir ldd "$tmp/$name" | grep -q "libacmlbm.so.* => $libdir/" ||
            fail "$name does not load libacmlbm from the staged tree"
    fi
    out=$(LD_LIBRARY_PATH=$libdir "$tmp/$name") || fail "$name failed: $out"
    [ "$out" = "$expect" ] || fail "$name printed '$out', expected '$expect'"
    echo "ok: $name: $out"
}

mv "$tmp/prog.c" "$tmp/prog-c.src"
run_prog prog-c "$cc" -x c -std=c99 -Wall -Wextra -Werror
if [ -n "$cxx" ]; then
    mv "$tmp/prog.cc" "$tmp/prog-cxx.src"
    run_prog prog-cxx "$cxx" -x c++ -Wall -Wextra -Werror
else
    echo "note: no C++ compiler configured, the C++ program was not built"
fi

# ---- the build tree, uninstalled: meson-uninstalled/acmlbm-uninstalled.pc ------
PKG_CONFIG_LIBDIR=$build/meson-uninstalled
PKG_CONFIG_SYSROOT_DIR=
export PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
cflags=$("$PKG_CONFIG" --cflags acmlbm-uninstalled) || fail "no acmlbm-uninstalled.pc in $build/meson-uninstalled"
libs=$("$PKG_CONFIG" --libs acmlbm-uninstalled)
libdir=$("$PKG_CONFIG" --libs-only-L acmlbm-uninstalled | sed 's/^[[:space:]]*-L//; s/[[:space:]].*//')
echo "uninstalled Cflags: $cflags"
cp "$tmp/prog-c.src" "$tmp/prog-build-tree.src"
run_prog prog-build-tree "$cc" -x c -std=c99 -Wall -Wextra -Werror
