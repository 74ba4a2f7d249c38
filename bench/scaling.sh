#!/bin/sh
# The multi-GPU scaling tables of docs/multi-gpu.md in one device call: strong
# scaling at 200x400x200 and 400^3 (fluid only and with a 1.5M-sample sphere),
# weak scaling at 256^3 per GPU, the teaser scene (1200x250x840, 3.7M samples),
# in one process (slab k on GPU k) and over MPI ranks (a GPU each), with a
# divergence check every step and every 50 steps. Run from a CUDA build
# directory built with MPI; logs and CSV go to $OUT (or ./scaling-logs).
#   sh ../bench/scaling.sh [strong|weak|teaser|mpi|all]
# On 4 H200s "all" should take about 5 minutes (most of it making the sphere's
# samples and measuring copy bandwidth once per row). ACM_SCALING_DEVICES=0,0
# (a list of CUDA ordinals) overrides the GPUs found: a dry run on one GPU.
part=${1:-all}
case "$part" in all|strong|weak|teaser|mpi) ;;
  *) echo "usage: scaling.sh [strong|weak|teaser|mpi|all]" >&2; exit 2;; esac
out=${OUT:-scaling-logs}
mkdir -p "$out"
export OMP_WAIT_POLICY=PASSIVE ACM_REQUIRE_GPU=1
if [ -n "$ACM_SCALING_DEVICES" ]; then
    devices=$ACM_SCALING_DEVICES
    ngpu=$(echo "$devices" | tr ',' '\n' | wc -l)
else
    ngpu=$(nvidia-smi -L | wc -l)
    if [ "$ngpu" -lt 2 ]; then
        echo "scaling.sh: $ngpu GPU here; the scaling rows need 2 or more" >&2
        exit 77
    fi
    devices=$(seq -s, 0 $((ngpu - 1)))
fi
slabs=1
n=2
while [ "$n" -le "$ngpu" ]; do slabs="$slabs,$n"; n=$((n * 2)); done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/devices.txt"
nvidia-smi topo -m >> "$out/devices.txt" 2>&1
B=./bench/acm-bench-decomp
row() { # log name, then the benchmark's arguments
    name=$1
    shift
    echo "== $name: $*" | tee -a "$out/scaling.log"
    timeout 300 $B --backend cuda --devices "$devices" --slabs "$slabs" --csv "$out/$name.csv" "$@" \
        2>&1 | tee -a "$out/scaling.log" | grep -E '^ +[0-9]+ |failed|error'
}
if [ "$part" = all ] || [ "$part" = strong ]; then
    for check in 1 50; do
        row "strong-200x400x200-c$check" --size 200x400x200 --steps 400 --exchange both --check-every $check
        row "strong-200x400x200-1.5M-c$check" --size 200x400x200 --steps 400 --samples 1500000 --check-every $check
        row "strong-400-c$check" --size 400x400x400 --steps 100 --exchange both --check-every $check
        row "strong-400-1.5M-c$check" --size 400x400x400 --steps 100 --samples 1500000 --check-every $check
    done
fi
if [ "$part" = all ] || [ "$part" = weak ]; then
    for check in 1 50; do
        row "weak-256-c$check" --size 256x256x256 --weak --steps 200 --exchange both --check-every $check
    done
fi
if [ "$part" = all ] || [ "$part" = teaser ]; then
    for p in fp32 fp16; do
        row "teaser-$p" --size 1200x250x840 --precision $p --steps 50 --samples 3700000 --check-every 50
    done
fi
if [ "$part" = all ] || [ "$part" = mpi ]; then
    for size in 200x400x200 400x400x400; do
        echo "== mpi-$size: mpiexec -n $ngpu $B --mpi" | tee -a "$out/scaling.log"
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_DEBUG=INFO timeout 300 \
            mpiexec -n "$ngpu" $B --mpi --backend cuda --devices "$devices" --slabs "$slabs" \
            --size $size --steps 200 --exchange both --csv "$out/mpi-$size.csv" \
            > "$out/mpi-$size.log" 2>&1
        grep -E '^ +[0-9]+ |failed|error' "$out/mpi-$size.log" | tee -a "$out/scaling.log"
        echo "NCCL members made: $(grep -c 'Init COMPLETE' "$out/mpi-$size.log")" | tee -a "$out/scaling.log"
    done
fi
exit 0
