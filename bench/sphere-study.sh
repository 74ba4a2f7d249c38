#!/bin/sh
# Resolution study of the sphere drag (docs/physics.md): examples/sphere_drag
# at several diameters D and Reynolds numbers in the box of the validation
# test (25 D long, inlet 10 D upstream, periodic sides 12 D, U = 0.05), on the
# GPU. Run from a CUDA build directory; prints one line per run.
#   STUDY="100:8,12,16,24 25:8,12,16" sh bench/sphere-study.sh
study=${STUDY:-"100:8,12,16,24 25:8,12,16"}
for item in $study; do
    re=${item%%:*}
    for D in $(echo "${item#*:}" | tr ',' ' '); do
        printf 'Re %s D %s: ' "$re" "$D"
        ./examples/sphere_drag --re "$re" --diameter "$D" --length 25 --upstream 10 --side 12 \
            --speed 0.05 --tol 5e-4 --backend cuda | grep -E "^C_D|error|diverged" | tr '\n' ' '
        echo
    done
done
