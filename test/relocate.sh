#!/bin/bash
# libacmlbm tests -- a moved install finds its own OpenVDB writer module
# (lib/io/vdb.c, module_load; acm_export.h says the order): stage an install
# with DESTDIR, move the tree to another folder name, and run relocated-vdb
# (relocated-vdb.c) against the moved libacmlbm, which writes a .vdb and says
# which libacmlbm and which acmlbm-vdb.so it mapped. Checked, each with a file
# written: the installed layout (<libdir>/acmlbm/acmlbm-vdb.so); both files side
# by side in one folder (a Python wheel, a game's folder); ACMLBM_VDB_MODULE
# naming a copy in a third folder; ACMLBM_VDB_MODULE naming no file (the
# moved tree's module still loads). The build tree's module must never be
# the one mapped, though the library would load it last.
#
#   relocate.sh MESON BUILD_ROOT LIBDIR PROGRAM
#
# LIBDIR is the installed library folder (prefix/libdir), PROGRAM relocated-vdb.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

usage="usage: relocate.sh MESON BUILD_ROOT LIBDIR PROGRAM"
meson_cmd=${1?$usage}
build=${2:?$usage}
libdir=${3:?$usage}
prog=${4:?$usage}

# shellcheck source=test/stage-install.sh
. "$(dirname "$0")/stage-install.sh" # fail, $tmp, stage_install
tmp=$(realpath "$tmp") # /proc/self/maps names files by their real paths

# ---- an install, moved --------------------------------------------------------
stage_install "$meson_cmd" "$build" "$tmp/stage"
mv "$tmp/stage" "$tmp/moved"
lib=$tmp/moved$libdir
for f in libacmlbm.so.1 acmlbm/acmlbm-vdb.so; do
    [ -e "$lib/$f" ] || fail "the install has no $libdir/$f"
done

# side by side: the library (under its soname) and the module in one folder
side=$tmp/wheel/acmlbm
mkdir -p "$side"
cp -L "$lib/libacmlbm.so.1" "$lib/acmlbm/acmlbm-vdb.so" "$side/"
# a copy of the module elsewhere, for ACMLBM_VDB_MODULE
mkdir "$tmp/third"
cp "$lib/acmlbm/acmlbm-vdb.so" "$tmp/third/"

# ---- the runs -------------------------------------------------------------------
# check NAME LIBRARY_FOLDER EXPECTED_MODULE [VAR=VALUE...]: relocated-vdb run
# with LD_LIBRARY_PATH=LIBRARY_FOLDER (and the variables), ACMLBM_VDB_MODULE
# unset unless given.
check() {
    local name=$1 dir=$2 want=$3
    shift 3
    local out=$tmp/$name.vdb printed got_lib got_module
    printed=$(env -u ACMLBM_VDB_MODULE "$@" LD_LIBRARY_PATH="$dir" "$prog" "$out") ||
        fail "$name: relocated-vdb failed: $printed"
    got_lib=$(sed -n 's/^lib //p' <<< "$printed")
    got_module=$(sed -n 's/^module //p' <<< "$printed")
    # the program's RUNPATH names the build tree: LD_LIBRARY_PATH must win
    case "$got_lib" in
        "$dir"/libacmlbm.so*) ;;
        *) fail "$name: libacmlbm mapped from '$got_lib', not from the moved '$dir'" ;;
    esac
    [ "$got_module" = "$want" ] || fail "$name: the module mapped is '$got_module', expected '$want'"
    [ -s "$out" ] || fail "$name: $out was not written or is empty"
    echo "ok: $name: $got_module"
}

check installed "$lib" "$lib/acmlbm/acmlbm-vdb.so"
check side-by-side "$side" "$side/acmlbm-vdb.so"
check variable "$lib" "$tmp/third/acmlbm-vdb.so" ACMLBM_VDB_MODULE="$tmp/third/acmlbm-vdb.so"
check variable-wrong "$lib" "$lib/acmlbm/acmlbm-vdb.so" \
    ACMLBM_VDB_MODULE="$tmp/nowhere/acmlbm-vdb.so"
