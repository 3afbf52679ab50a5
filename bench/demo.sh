#!/bin/sh
# The demo's training run, yaten (`yaten train` with the embedded Fashion-MNIST CNN config) against
# the same run written in PyTorch (bench/demo_torch.py), interleaved, at 1 and 2 threads.
# Prints each epoch's training time (without the test-set evaluation), the test accuracy, the peak
# resident memory of each process, and the ratio yaten / PyTorch (target <= 0.8).
# Usage: bench/demo.sh BUILD_DIR [EPOCHS]   (default 1 epoch; the demo itself runs 3)
set -eu
openblas_core=$("$(dirname "$0")/openblas_core.sh")
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/yaten" >&2
epochs=${2:-1}
out=$(mktemp) dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 2; do
    env OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$build/yaten" train --threads $t \
        --epochs "$epochs" --no-plot --out "$dir/t$t" >"$dir/log" 2>&1 || { cat "$dir/log"; exit 1; }
    # "epoch 1/1  train loss .. test acc 89.01%  lr ..  12.3 s (4000 samples/s), eval 1.0 s, peak memory 90 MiB"
    sed -n 's/^epoch \([0-9]*\)\/.*test acc \([0-9.]*\)%.*  \([0-9.]*\) s (.*peak memory \([0-9]*\) MiB$/\1 \2 \3 \4/p' \
        "$dir/log" | while read -r e acc s mib; do
        echo "yaten_demo_epoch${e}_${t}t $s s"
        echo "yaten_demo_acc${e}_${t}t $(echo "$acc" | awk '{printf "%.4f", $1 / 100}') acc"
        echo "yaten_demo_peak_epoch${e}_${t}t $mib MiB"
    done >>"$out"
    env OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$openblas_core \
        MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
        /usr/bin/python3 bench/demo_torch.py $t "$epochs" >>"$out"
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
$1 ~ /_demo_epoch/ { split($1, p, "_demo_epoch"); t[p[1] "_" p[2]] = $2 }
$1 ~ /_demo_acc/ { split($1, p, "_demo_acc"); a[p[1] "_" p[2]] = $2 }
$1 ~ /_demo_peak_epoch/ { split($1, p, "_demo_peak_epoch"); m[p[1] "_" p[2]] = $2 / 1 }
$1 ~ /torch_demo_maxrss/ { split($1, p, "_maxrss_"); tm[p[2]] = $2 / 1024 }
END {
    printf "%-8s %3s %10s %10s %7s %9s %9s %10s %10s\n", "epoch", "thr", "yaten s", "torch s", "ratio",
           "yaten acc", "torch acc", "yaten MiB", "torch MiB"
    for (k in t) if (k ~ /^yaten_/) {
        key = substr(k, 7); split(key, q, "_")
        tk = "torch_" key
        r = t[tk] > 0 ? t[k] / t[tk] : 0
        printf "%-8s %3s %10.2f %10.2f %6.2fx %9.4f %9.4f %10.0f %10.0f\n", q[1], q[2], t[k], t[tk], r,
               a[k], a[tk], m[k], tm[q[2]]
    }
}' "$out" | { IFS= read -r header; printf '%s\n' "$header"; sort -k2,2 -k1,1n; }
