#!/bin/sh
# libacmlbm tests -- soname arithmetic (style guide R12): the SONAME of the
# built library is libacmlbm.so.<ABI major>, the ABI major is the
# ACM_VERSION_MAJOR of the generated header, and the soname link next to the
# library leads to it.
#
#   soname-check.sh LIBRARY ABI_MAJOR ACM_VERSION_H
# SPDX-License-Identifier: Apache-2.0
set -eu

lib=${1:?usage: soname-check.sh LIBRARY ABI_MAJOR ACM_VERSION_H}
major=${2:?usage: soname-check.sh LIBRARY ABI_MAJOR ACM_VERSION_H}
version_h=${3:?usage: soname-check.sh LIBRARY ABI_MAJOR ACM_VERSION_H}

READELF=${READELF:-readelf}
if ! command -v "$READELF" >/dev/null 2>&1; then
    echo "SKIP: $READELF not found, cannot read the SONAME"
    exit 77
fi

status=0
soname=$("$READELF" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libacmlbm.so.$major" ]; then
    echo "FAIL: SONAME of $lib is '$soname', expected 'libacmlbm.so.$major'"
    status=1
fi

header_major=$(sed -n 's/^#define ACM_VERSION_MAJOR[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$version_h")
if [ "$header_major" != "$major" ]; then
    echo "FAIL: ACM_VERSION_MAJOR is '$header_major' in $version_h, the ABI major is '$major'"
    status=1
fi

link=$(dirname "$lib")/libacmlbm.so.$major
if [ ! -e "$link" ]; then
    echo "FAIL: $link does not exist"
    status=1
elif [ "$(readlink -f "$link")" != "$(readlink -f "$lib")" ]; then
    echo "FAIL: $link leads to $(readlink -f "$link"), not to $lib"
    status=1
fi

[ "$status" -eq 0 ] && echo "ok: SONAME $soname"
exit "$status"
