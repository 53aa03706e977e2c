#!/usr/bin/env bash
# Runs every test of mq. On a fresh Debian/Ubuntu machine it first installs what it needs.
#
#   scripts/test.sh           plain build (build/, with the Kafka backend, its tests run against a
#                             single-node Kafka that scripts/kafka-server.sh starts and stops),
#                             then AddressSanitizer+UBSan (build-asan/) and ThreadSanitizer
#                             (build-tsan/), without the backend; each configured, built, ctest'd
#   scripts/test.sh --quick   the plain build only (also: MQ_TEST_QUICK=1)
#
# The full run then runs the model-based fuzzer for MQ_FUZZ_SECONDS (default 60), spin on the wake
# model (scripts/check-model.sh), and every binding's bindings/<language>/test.sh, also --quick.
#
# Exits non-zero as soon as a step fails. Build directories are relative to the repository root,
# whatever directory it is started from. MQ_TEST_JOBS sets ctest's parallelism (default 2).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh

quick=${MQ_TEST_QUICK:-0}
for arg in "$@"; do
    case $arg in
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,10p' "$0"
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done
jobs=${MQ_TEST_JOBS:-2}

ensure_tools cmake ninja g++ pkg-config nm readelf gtest rdkafka kcat java mvn
section "toolchain"
g++ --version | head -n 1
cmake --version | head -n 1
echo "ninja $(ninja --version)"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# gcc 12's ThreadSanitizer expects the address-space layout of kernels with at most 28 bits of
# mmap randomisation; on kernels with more (vm.mmap_rnd_bits = 32, common since 6.x) every
# instrumented program dies at start with "FATAL: ThreadSanitizer: unexpected memory mapping".
# Running without address randomisation (setarch -R, inherited by child processes) avoids it.
# The build needs it too: gtest_discover_tests runs the test binary to list its tests.
tsan_run=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
    tsan_run=(setarch "$(uname -m)" -R)
fi

timings=()
phase="setup"
# set -e stops at the first failing step; say which one, after whatever output it printed.
kafka_dir=$PWD/build-kafka
kafka_started=0
stop_kafka() {
    if [ "$kafka_started" = 1 ]; then
        scripts/kafka-server.sh stop "$kafka_dir" || true
        kafka_started=0
    fi
}
trap 'rc=$?; stop_kafka; if [ "$rc" -ne 0 ]; then section "FAILED: $phase (exit $rc)"; fi' EXIT

# build_and_test <title> <build dir> [cmake -D options...] [-- prefix command for build+ctest]
build_and_test() {
    local title=$1 dir=$2
    shift 2
    local options=() runner=()
    while [ $# -gt 0 ]; do
        if [ "$1" = -- ]; then
            shift
            runner=("$@")
            break
        fi
        options+=("$1")
        shift
    done

    local start=$SECONDS
    phase="$title: configure ($dir/)"
    section "$phase"
    cmake -S . -B "$dir" -G Ninja "${options[@]}"
    phase="$title: build"
    section "$phase"
    "${runner[@]}" cmake --build "$dir"
    local built=$SECONDS
    echo "($title: configure + build took $((built - start)) s)"
    phase="$title: ctest"
    section "$phase"
    (cd "$dir" && "${runner[@]}" ctest --output-on-failure -j "$jobs")
    echo "($title: ctest took $((SECONDS - built)) s)"
    timings+=("$(printf '%-12s configure + build %4d s   ctest %4d s' "$title" $((built - start)) $((SECONDS - built)))")
}

phase="format check (scripts/format.sh --check)"
section "$phase"
scripts/format.sh --check

# The plain build's ctest includes the Kafka backend's suites (label kafka: docs/KAFKA.md),
# against a real single-node cluster started here and stopped on exit.
phase="kafka: start a single-node cluster (scripts/kafka-server.sh)"
section "$phase"
kafka_start=$SECONDS
kafka_started=1
MQ_KAFKA_BOOTSTRAP=$(scripts/kafka-server.sh start "$kafka_dir" | tail -n 1)
export MQ_KAFKA_BOOTSTRAP
echo "Kafka at $MQ_KAFKA_BOOTSTRAP ($((SECONDS - kafka_start)) s)"

build_and_test "plain" build \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_SANITIZE= -DMQ_WERROR=ON \
    -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=ON \
    -DMQ_KAFKA=ON -DMQ_KAFKA_TESTS=ON
# The cluster stays up for the bindings (each runs tests/conformance/kafka_scenarios.txt on it)
# and stops on exit.

if [ "$quick" != 1 ]; then
    # The sanitizer builds run the tests (and build the demo they may run); no benchmarks.
    build_and_test "asan+ubsan" build-asan \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_SANITIZE=address,undefined -DMQ_WERROR=ON \
        -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=OFF

    build_and_test "tsan" build-tsan \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_SANITIZE=thread -DMQ_WERROR=ON \
        -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=OFF \
        -- "${tsan_run[@]}"

    # The model-based fuzzer (clang, libFuzzer) for a bounded time; longer runs:
    # scripts/fuzz.sh SECONDS (docs/RELIABILITY.md).
    phase="fuzz (${MQ_FUZZ_SECONDS:-60} s)"
    section "$phase"
    fuzz_start=$SECONDS
    scripts/fuzz.sh "${MQ_FUZZ_SECONDS:-60}"
    timings+=("$(printf '%-12s build + run %4d s' fuzz $((SECONDS - fuzz_start)))")

    # The wake protocol's model (tests/model/): exhaustive search plus mutants, with spin.
    phase="model check (spin)"
    section "$phase"
    model_start=$SECONDS
    scripts/check-model.sh
    timings+=("$(printf '%-12s check %4d s' model $((SECONDS - model_start)))")
fi

# ---- bindings: every bindings/<language>/ has a test.sh that installs what it needs, builds the
# core its own way (cargo, pip, cgo, Maven) and runs the binding's tests, lints and examples.
# A binding directory without one fails the run: no binding is skipped silently.
# Each binding runs tests/conformance/*.mqs through this runner (tests/conformance/FORMAT.md).
export MQ_CONFORMANCE_RUNNER="$PWD/build/tests/conformance/mq_conformance"
for dir in bindings/*/; do
    [ -d "$dir" ] || continue
    lang=$(basename "$dir")
    phase="binding $lang"
    section "$phase: $dir/test.sh"
    if [ ! -f "$dir/test.sh" ]; then
        echo "bindings/$lang has no test.sh" >&2
        exit 1
    fi
    binding_start=$SECONDS
    bash "$dir/test.sh"
    timings+=("$(printf '%-12s test.sh %4d s' "$lang" $((SECONDS - binding_start)))")
done
# ---- end of bindings ------------------------------------------------------------------------

phase="summary"
section "all tests passed"
printf '%s\n' "${timings[@]}"
if [ "$quick" = 1 ]; then
    echo "(quick: sanitizer builds skipped; run scripts/test.sh without --quick for them)"
fi
