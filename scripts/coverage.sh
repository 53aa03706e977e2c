#!/usr/bin/env bash
# Line and branch coverage of src/ from the test suite plus the fuzz corpus replay
# (docs/RELIABILITY.md has the last run's table and what stays uncovered).
#
#   scripts/coverage.sh        build build-coverage/ with gcc --coverage -O0, run ctest (which
#                              includes fuzz_corpus_replay), print per-file tables (lines, then
#                              branches) and write build-coverage/coverage/index.html
#
# Installs gcovr (Debian package) if missing. Branches the compiler adds for exceptions
# (--exclude-throw-branches) and branches it can prove unreachable are not counted: they are not
# decisions of mq's code. MQ_TEST_JOBS sets ctest's parallelism (default 2).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh
ensure_tools cmake ninja g++ gtest

if ! command -v gcovr > /dev/null; then
    section "installing gcovr"
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    if ! "${sudo_cmd[@]}" apt-get install -y gcovr; then
        "${sudo_cmd[@]}" apt-get update
        "${sudo_cmd[@]}" apt-get install -y gcovr
    fi
fi

dir=build-coverage
section "configure + build ($dir/)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMQ_SANITIZE= \
    -DCMAKE_C_FLAGS="--coverage -O0 -fprofile-update=atomic" \
    -DCMAKE_CXX_FLAGS="--coverage -O0 -fprofile-update=atomic" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
    -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF > /dev/null
cmake --build "$dir"

section "ctest (counters reset first)"
find "$dir" -name '*.gcda' -delete
# install_consumers links the installed static library into programs built without --coverage
# (pkg-config): it cannot link here, and it exercises packaging, not src/.
(cd "$dir" && ctest --output-on-failure -j "${MQ_TEST_JOBS:-2}" -E '^install_consumers$')

section "coverage of src/"
mkdir -p "$dir/coverage"
common=(--root . --filter 'src/' --object-directory "$dir" --exclude-throw-branches
    --exclude-unreachable-branches)
# Read the counters once (into a tracefile), then report from it.
gcovr "${common[@]}" --json "$dir/coverage/trace.json"
from=(--root . --add-tracefile "$dir/coverage/trace.json")
gcovr "${from[@]}" --txt "$dir/coverage/lines.txt" --json-summary-pretty \
    --json-summary "$dir/coverage/summary.json" --html-details "$dir/coverage/index.html"
gcovr "${from[@]}" --branches --txt "$dir/coverage/branches.txt"
cat "$dir/coverage/lines.txt" "$dir/coverage/branches.txt"
echo "(HTML: $dir/coverage/index.html; JSON summary: $dir/coverage/summary.json)"
