#!/bin/sh
# Large outputs stored around the caches against plainly (bench/streaming.c), one thread, in one
# process, batches of the two alternating. Usage: bench/streaming.sh BUILD_DIR
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/streaming" >&2
exec "$build/bench/streaming"
