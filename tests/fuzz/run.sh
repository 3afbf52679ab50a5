#!/bin/sh
# Runs the loader fuzz targets (libFuzzer + ASan/UBSan on the loaders, built by `make fuzz`) for SECONDS each,
# starting from the seed files in tests/fuzz/corpus/ (copied, so new inputs stay out of the tree).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS] (make fuzz FUZZ_SECONDS=N runs it). A crash, leak or failed check stops the run with
# the input saved as BUILD_DIR/fuzz/crash-*; replay it with BUILD_DIR/fuzz/fuzz_<loader> FILE.
set -eu
build=${1:-build}
secs=${2:-60}
for loader in safetensors npy; do
    work="$build/fuzz/corpus-$loader"
    mkdir -p "$work"
    cp tests/fuzz/corpus/$loader/* "$work/"
    echo "  FUZZ    $loader for ${secs}s"
    "$build/fuzz/fuzz_$loader" -max_total_time="$secs" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -dict="tests/fuzz/$loader.dict" -artifact_prefix="$build/fuzz/" \
        -print_final_stats=1 "$work" 2>&1 | grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|.*check failed)' || true
    # libFuzzer exits non-zero on a finding; the artifact is the evidence.
    if ls "$build"/fuzz/crash-* "$build"/fuzz/leak-* "$build"/fuzz/timeout-* "$build"/fuzz/oom-* >/dev/null 2>&1; then
        echo "fuzz_$loader found a problem: see $build/fuzz/" >&2
        exit 1
    fi
done
