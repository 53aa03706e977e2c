#!/usr/bin/env bash
# Model-based fuzzing of the C API (tests/fuzz/, docs/RELIABILITY.md).
#
#   scripts/fuzz.sh [seconds]     build the libFuzzer target in build-fuzz/ (clang) and run it for
#                                 `seconds` (default 60) on a copy of tests/fuzz/corpus
#
# Exits non-zero on any crash, sanitizer report or model mismatch; the failing input is left in
# build-fuzz/artifacts/. To keep it as a regression: copy it to tests/fuzz/regressions/ (ctest's
# fuzz_corpus_replay then replays it in every build). MQ_FUZZ_JOBS runs that many fuzzing
# processes in parallel (default 1). Extra libFuzzer flags can follow the seconds.
# MQ_FUZZ_MERGE=1: after a passing run, add to tests/fuzz/corpus/ the inputs that reach new
# coverage (libFuzzer -merge=1: the committed corpus stays minimal; ctest replays it).
# MQ_FUZZ_SANITIZE: the build's sanitizers, default address,undefined (the CI run); "none" is the
# campaign build, several times faster (what it does not check: docs/RELIABILITY.md), run with
# -entropic=0 and a max_len of 512 unless told otherwise. Each setting builds in its own
# directory (build-fuzz/, build-fuzz-none/, ...).
# MQ_FUZZ_MAX_LEN: libFuzzer's -max_len (default 4096; 512 for the campaign build).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
seconds=${1:-60}
shift || true
case $seconds in
    '' | *[!0-9]*)
        echo "usage: scripts/fuzz.sh [seconds] [libFuzzer flags...]" >&2
        exit 2
        ;;
esac

# clang and its runtime libraries (libFuzzer, the sanitizers). Debian ships the runtime apart from
# the compiler (libclang-rt-<major>-dev), so a machine with clang may still lack it.
apt_install() {
    local sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    echo "== installing $*"
    if ! "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; then
        "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
    fi
}
command -v clang++ > /dev/null || apt_install clang
fuzzer_rt="$(clang++ -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
if [ ! -e "$fuzzer_rt" ]; then
    clang_major=$(clang++ -dumpversion | cut -d. -f1)
    apt_install "libclang-rt-$clang_major-dev"
    [ -e "$fuzzer_rt" ] || { echo "fuzz.sh: no libFuzzer runtime at $fuzzer_rt after installing libclang-rt-$clang_major-dev" >&2; exit 1; }
fi

sanitize=${MQ_FUZZ_SANITIZE:-address,undefined}
default_dir=build-fuzz
[ "$sanitize" != address,undefined ] && default_dir=build-fuzz-${sanitize//,/-}
dir=${MQ_FUZZ_BUILD_DIR:-$default_dir}
campaign=()
default_len=4096
if [ "$sanitize" = none ]; then
    # The entropic scheduler's bookkeeping took a third of the time; the default one does not.
    campaign=(-entropic=0)
    default_len=512
fi
max_len=${MQ_FUZZ_MAX_LEN:-$default_len}
echo "== configure + build ($dir/)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMQ_FUZZ=ON -DMQ_SANITIZE= \
    -DMQ_FUZZ_SANITIZE="$sanitize" \
    -DMQ_WERROR=ON -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF > /dev/null
cmake --build "$dir" --target mq_fuzz_model

# libFuzzer adds what it finds to its first corpus directory: work on a copy so the checked-in
# seeds stay as they are.
work=$dir/corpus
rm -rf "$work" "$dir/artifacts"
mkdir -p "$work" "$dir/artifacts"
cp tests/fuzz/corpus/* "$work/"
[ -d tests/fuzz/regressions ] && cp tests/fuzz/regressions/* "$work/" 2> /dev/null || true

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
jobs=${MQ_FUZZ_JOBS:-1}
echo "== fuzzing for $seconds s ($jobs process(es), sanitizers: $sanitize, max_len $max_len)"
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-fork="$jobs")
set +e
"$dir/tests/fuzz/mq_fuzz_model" "$work" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${campaign[@]}" "${parallel[@]}" "$@" 2>&1 |
    tee "$dir/fuzz.log" | grep -E '^#[0-9]+ +(INITED|DONE)|stat::|ERROR|MISMATCH|SUMMARY'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "== FAILED (exit $status): see $dir/fuzz.log; inputs in $dir/artifacts/" >&2
    ls "$dir/artifacts" >&2
    exit 1
fi
# One process prints its total as a stat; -fork prints none, only a running "#N:" total.
executions=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$dir/fuzz.log" | awk '{s+=$2} END {print s+0}')
if [ "$jobs" -gt 1 ]; then
    executions=$(grep -Eo '^#[0-9]+:' "$dir/fuzz.log" | tail -n 1 | tr -d '#:')
fi
echo "== fuzzing passed: ${executions:-0} executions, corpus $(ls "$work" | wc -l) inputs"
if [ "${MQ_FUZZ_MERGE:-0}" = 1 ]; then
    before=$(ls tests/fuzz/corpus | wc -l)
    "$dir/tests/fuzz/mq_fuzz_model" -merge=1 -max_len="$max_len" -timeout=10 tests/fuzz/corpus "$work" \
        > "$dir/merge.log" 2>&1
    echo "== merged: tests/fuzz/corpus has $(ls tests/fuzz/corpus | wc -l) inputs (was $before)"
fi
