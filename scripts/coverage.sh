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
#
#   MQ_COVERAGE_KAFKA=1 scripts/coverage.sh
#                              the same with the Kafka backend built in (build-coverage-kafka/):
#                              starts a single-node cluster (scripts/kafka-server.sh) for the
#                              label-kafka suites, so the C boundary's backend dispatch and
#                              src/engine/kafka/ are measured too; stops it on exit
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh
kafka=${MQ_COVERAGE_KAFKA:-0}
dir=build-coverage
backend=()
if [ "$kafka" = 1 ]; then
    ensure_tools cmake ninja g++ gtest rdkafka kcat java
    dir=build-coverage-kafka
    backend=(-DMQ_KAFKA=ON -DMQ_KAFKA_TESTS=ON)
else
    ensure_tools cmake ninja g++ gtest
fi

if ! command -v gcovr > /dev/null; then
    section "installing gcovr"
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    if ! "${sudo_cmd[@]}" apt-get install -y gcovr; then
        "${sudo_cmd[@]}" apt-get update
        "${sudo_cmd[@]}" apt-get install -y gcovr
    fi
fi

section "configure + build ($dir/)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMQ_SANITIZE= "${backend[@]}" \
    -DCMAKE_C_FLAGS="--coverage -O0 -fprofile-update=atomic" \
    -DCMAKE_CXX_FLAGS="--coverage -O0 -fprofile-update=atomic" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
    -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF > /dev/null
cmake --build "$dir"

if [ "$kafka" = 1 ]; then
    section "kafka: start a single-node cluster (scripts/kafka-server.sh)"
    kafka_dir=$PWD/$dir/kafka
    trap 'scripts/kafka-server.sh stop "$kafka_dir" || true' EXIT
    MQ_KAFKA_BOOTSTRAP=$(scripts/kafka-server.sh start "$kafka_dir" | tail -n 1)
    export MQ_KAFKA_BOOTSTRAP
fi

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
