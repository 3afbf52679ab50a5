#!/bin/sh
# One thread against two on small and large work (bench/threads.c), in one process, batches of
# the two alternating. Usage: bench/threads.sh BUILD_DIR [CASE...]
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/threads" >&2
[ $# -gt 0 ] && shift
exec "$build/bench/threads" "$@"
