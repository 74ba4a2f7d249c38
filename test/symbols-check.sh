#!/bin/sh
# libacmlbm tests -- the exported symbols are exactly those of the linker map
# (style guide R13), each in the version node the map gives it, and each is
# declared ACM_API in a public header.
#
#   symbols-check.sh LIBRARY MAP_FILE [PUBLIC_HEADER_DIR]
#
# Fails on any difference in any direction and prints it.
# SPDX-License-Identifier: Apache-2.0
set -eu

lib=${1:?usage: symbols-check.sh LIBRARY MAP_FILE [PUBLIC_HEADER_DIR]}
map=${2:?usage: symbols-check.sh LIBRARY MAP_FILE [PUBLIC_HEADER_DIR]}
headers=${3:-}

NM=${NM:-nm}
if ! command -v "$NM" >/dev/null 2>&1; then
    echo "SKIP: $NM not found, cannot list the exported symbols"
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "name node" for every global of the map (comments removed first).
awk '
    {
        line = $0
        out = ""
        while (line != "") {
            if (incomment) {
                p = index(line, "*/")
                if (p == 0) { line = ""; break }
                line = substr(line, p + 2); incomment = 0
            } else {
                p = index(line, "/*")
                if (p == 0) { out = out line; line = ""; break }
                out = out substr(line, 1, p - 1); line = substr(line, p + 2); incomment = 1
            }
        }
        sub(/#.*/, "", out)
        text = text " " out
    }
    END {
        gsub(/[{};:]/, " & ", text)
        n = split(text, tok, /[ \t]+/)
        node = ""; section = ""
        for (i = 1; i <= n; ++i) {
            t = tok[i]
            if (t == "") continue
            if (t == "{") { node = last; section = ""; continue }
            if (t == "}") { node = ""; section = ""; continue }
            if (t == ":") { section = last; continue }
            if (t == ";") {
                if (node != "" && section == "global" && last != "")
                    print last, node
                last = ""
                continue
            }
            last = t
        }
    }
' "$map" | sort -u > "$tmp/map"

if [ ! -s "$tmp/map" ]; then
    echo "FAIL: no global symbols found in $map"
    exit 1
fi

# "name node" for every defined dynamic symbol; version-node symbols (type A)
# are not functions or data. node is "-" when nm prints no version.
"$NM" -D --defined-only "$lib" > "$tmp/nm.raw"
awk '$(NF-1) != "A" {
        s = $NF; node = "-"
        if (index(s, "@@")) { node = substr(s, index(s, "@@") + 2); s = substr(s, 1, index(s, "@@") - 1) }
        else if (index(s, "@")) { node = substr(s, index(s, "@") + 1); s = substr(s, 1, index(s, "@") - 1) }
        print s, node
    }' "$tmp/nm.raw" | sort -u > "$tmp/lib"

status=0
if awk '$2 != "-" { found = 1 } END { exit !found }' "$tmp/lib"; then
    cmp_map=$tmp/map
    cmp_lib=$tmp/lib
    what="name and version node"
else
    # an nm that prints no versions: compare the names only
    cut -d' ' -f1 "$tmp/map" | sort -u > "$tmp/map.names"
    cut -d' ' -f1 "$tmp/lib" | sort -u > "$tmp/lib.names"
    cmp_map=$tmp/map.names
    cmp_lib=$tmp/lib.names
    what="name"
fi

extra=$(comm -13 "$cmp_map" "$cmp_lib")
missing=$(comm -23 "$cmp_map" "$cmp_lib")
if [ -n "$extra" ]; then
    echo "FAIL: exported by $lib but not in $map ($what):"
    echo "$extra" | sed 's/^/    /'
    status=1
fi
if [ -n "$missing" ]; then
    echo "FAIL: in $map but not exported by $lib ($what):"
    echo "$missing" | sed 's/^/    /'
    status=1
fi

if [ -n "$headers" ]; then
    # names declared as "ACM_API <return type> name(" in the public headers
    # (preprocessor lines, such as the definition of ACM_API, are skipped)
    grep -hv '^[[:space:]]*#' "$headers"/*.h | tr '\n' ' ' | grep -oE 'ACM_API[^;(]*\(' |
        sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' |
        sort -u > "$tmp/hdr"
    cut -d' ' -f1 "$tmp/map" | sort -u > "$tmp/map.names"
    undeclared=$(comm -13 "$tmp/hdr" "$tmp/map.names")
    unmapped=$(comm -23 "$tmp/hdr" "$tmp/map.names")
    if [ -n "$undeclared" ]; then
        echo "FAIL: in $map but declared ACM_API in no header of $headers:"
        echo "$undeclared" | sed 's/^/    /'
        status=1
    fi
    if [ -n "$unmapped" ]; then
        echo "FAIL: declared ACM_API in $headers but not in $map:"
        echo "$unmapped" | sed 's/^/    /'
        status=1
    fi
fi

if [ "$status" -eq 0 ]; then
    echo "ok: $(wc -l < "$cmp_lib") exported symbols match $map ($what)"
fi
exit "$status"
