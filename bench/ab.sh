#!/bin/sh
# One op timed in this tree's build and in a git revision's, call for call alternately in one
# process (bench/ab.c), for changes smaller than this machine's drift between runs. The
# revision's shared library is built in a temporary worktree, removed afterwards.
# Usage: bench/ab.sh BUILD_DIR REV CASE ROWS COLS [f32|f64]
#   e.g. bench/ab.sh build HEAD~1 prod_dim1 1024 1000
set -eu
[ $# -ge 5 ] || { echo "usage: bench/ab.sh BUILD_DIR REV CASE ROWS COLS [f32|f64]" >&2; exit 2; }
build=$1 rev=$2
shift 2
make -s --no-print-directory BUILD="$build" "$build/bench/ab" "$build/libyaten.so" >&2
base=$(mktemp -d)
trap 'git worktree remove --force "$base/tree" >/dev/null 2>&1; rm -rf "$base"' EXIT
git worktree add --detach -f "$base/tree" "$rev" >/dev/null 2>&1
make -s --no-print-directory -j"$(nproc)" -C "$base/tree" build/libyaten.so >&2
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$build/bench/ab" "$base/tree/build/libyaten.so" \
    "$build/libyaten.so" "$@"
