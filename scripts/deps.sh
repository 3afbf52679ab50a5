#!/bin/sh
# Installs the Debian packages yaten needs for the given purpose, when they are missing.
# Usage: scripts/deps.sh build|test|bench|demo
# As root it runs apt-get; otherwise it prints the exact command to run and fails.
set -eu

build="gcc make pkg-config libblis-serial-dev libyaml-dev zlib1g-dev libjansson-dev python3-jinja2 python3-yaml clang-format-14"
test_pkgs="libcriterion-dev python3-pytest python3-torch python3-numpy dataset-fashion-mnist"
bench_pkgs="libtorch-dev python3-torch libopenblas0-pthread dataset-fashion-mnist"
demo_pkgs="dataset-fashion-mnist gnuplot-nox"

case "${1:-build}" in
build) want="$build" ;;
test) want="$build $test_pkgs" ;;
bench) want="$build $bench_pkgs" ;;
demo) want="$build $demo_pkgs" ;;
*) echo "deps.sh: unknown purpose '$1' (expected build, test, bench or demo)" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    echo "deps.sh: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true
    apt-get install -y -qq --no-install-recommends $missing
else
    echo "deps.sh: missing Debian packages:$missing" >&2
    echo "deps.sh: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
