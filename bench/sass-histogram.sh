#!/bin/sh
# Instruction histogram of one kernel in a CUDA object: sass-histogram.sh OBJ SYMBOL
# (needs cuobjdump from the CUDA toolkit). Used to read what the compiler made of a kernel.
cuobjdump -sass -fun "$2" "$1" |
    grep -oE '^ +/\*[0-9a-f]{4}\*/ +(@!?U?P[0-9T] +)?[A-Z][A-Z0-9_]*' |
    awk '{print $NF}' | sort | uniq -c | sort -rn | head -"${3:-25}"
