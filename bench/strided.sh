#!/bin/sh
# yaten's strided and broadcast pointwise cases against its own contiguous ones (bench/strided.c),
# one thread. Usage: bench/strided.sh BUILD_DIR [CASE...]
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/strided" >&2
[ $# -gt 0 ] && shift
OMP_NUM_THREADS=1 exec "$build/bench/strided" "$@"
