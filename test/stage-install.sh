# shellcheck shell=sh
# libacmlbm tests -- what the scripts that stage an install share, sourced by
# pkgconfig-check.sh and relocate.sh (POSIX sh): fail, a temporary folder $tmp
# removed on exit, and stage_install.
# SPDX-License-Identifier: Apache-2.0

fail() {
    echo "FAIL: $*"
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# stage_install MESON BUILD_ROOT DESTDIR: the build's install under DESTDIR, as
# built (meson test builds what the test depends on); SKIP (77) where there is
# no meson to run, FAIL with its log where the install fails.
stage_install() {
    if [ -z "$1" ] || ! command -v "$1" >/dev/null 2>&1; then
        echo "SKIP: meson not found, cannot stage an install"
        exit 77
    fi
    if ! "$1" install -C "$2" --no-rebuild --quiet --destdir "$3" > "$tmp/install.log" 2>&1; then
        cat "$tmp/install.log"
        fail "meson install --destdir failed"
    fi
}
