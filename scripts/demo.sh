#!/usr/bin/env bash
# Runs the mq demo: the reference trace row by row, then the reference stress summary.
# On a fresh Debian/Ubuntu machine it first installs what it needs, then builds the plain
# build in build/ (only what the demo needs) and runs build/examples/mq_demo. Arguments are
# passed to the demo.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh

ensure_tools cmake ninja g++

# Same build directory and build type as scripts/test.sh's plain build; tests and benchmarks
# are left out so the demo needs no GoogleTest (test.sh turns them back on).
section "configure (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_SANITIZE= \
    -DMQ_BUILD_TESTS=OFF -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=OFF
section "build mq_demo"
cmake --build build --target mq_demo
section "build/examples/mq_demo"
exec build/examples/mq_demo "$@"
