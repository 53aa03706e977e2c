#!/usr/bin/env bash
# Runs every test, lint and check of the Go binding; on a fresh Debian/Ubuntu machine it first
# installs what it needs (g++, cmake, ninja, pkg-config; Go if there is none).
#
#   bindings/go/test.sh
#
# Steps: gofmt, go vet, go test -race ./... (the default build: cgo compiles the module's copy
# of the core), the module alone (a copy of bindings/go without the rest of the repository, as
# `go get` fetches it: go build ./... and go test -short ./mq), the benchmarks once each, a build with CGO_ENABLED=0 (must fail, readably), the core
# built and installed with CMake (bindings/go/build-core/), go test -tags mq_system against
# that installed libmq, examples/go (the reference trace compared with the C demo's), then the
# Kafka variant (-tags mq_kafka: the core with its Kafka backend, librdkafka) against a cluster:
# $MQ_KAFKA_BOOTSTRAP when set (scripts/test.sh keeps one up), else one started here with
# scripts/kafka-server.sh in build-core/kafka/ and stopped on exit.
# Exits non-zero as soon as a step fails.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../scripts/lib/setup.sh
source "$root/scripts/lib/setup.sh"

phase="setup"
kafka_dir=$here/build-core/kafka
kafka_started=0
alone_dir=""
stop_kafka() {
    if [ "$kafka_started" = 1 ]; then
        "$root/scripts/kafka-server.sh" stop "$kafka_dir" || true
        kafka_started=0
    fi
}
trap 'rc=$?; stop_kafka; [ -z "$alone_dir" ] || rm -rf "$alone_dir"; if [ "$rc" -ne 0 ]; then section "FAILED: go: $phase (exit $rc)"; fi' EXIT
timings=()
step_start=$SECONDS
step() {
    [ "$phase" = setup ] || timings+=("$(printf '%4d s  %s' $((SECONDS - step_start)) "$phase")")
    phase=$*
    step_start=$SECONDS
    section "go: $*"
}

# Go 1.21 or later fetches the toolchain go.mod asks for (go 1.24) through the module proxy.
ensure_go() {
    if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
        export PATH="/usr/local/go/bin:$PATH"
    fi
    if ! command -v go >/dev/null 2>&1; then
        section "installing golang-go"
        local sudo=()
        [ "$(id -u)" -ne 0 ] && sudo=(sudo)
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends golang-go
    fi
    local v minor
    v=$(go env GOVERSION)
    minor=$(echo "$v" | sed -E 's/^go1\.([0-9]+).*/\1/')
    if ! [[ "$minor" =~ ^[0-9]+$ ]] || [ "$minor" -lt 21 ]; then
        echo "go: $v is too old to fetch the toolchain go.mod needs; install Go 1.24 or later" >&2
        exit 1
    fi
    export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
}

ensure_tools g++ cmake ninja pkg-config
ensure_go
export CGO_ENABLED=1
jobs=${MQ_TEST_JOBS:-2}
start=$SECONDS

cd "$here"
step "toolchain"
go version
g++ --version | head -n 1

step "gofmt"
unformatted=$(gofmt -l . "$root/examples/go")
if [ -n "$unformatted" ]; then
    echo "not gofmt'ed:" >&2
    echo "$unformatted" >&2
    exit 1
fi

step "go vet"
go vet ./...

# The check that the module's copy of the core is the repository's always runs: go test caches
# results against the files inside the module only. (With -race, as the next steps, so that
# the core is compiled once for all three.)
step "internal/core's copy is current with src/ and include/ (else: go generate ./...)"
go test -race -count=1 -run TestGeneratedFilesAreCurrent ./internal/core

step "go test -race ./... (cgo compiles the module's copy of the core)"
go test -race -count=1 ./...

# What `go get` gives a user is the module's folder alone: nothing of ../../ may be needed.
# The files are those git tracks or would track (not build-core/), as in a module zip made
# from a commit.
step "the module alone: go build ./... and go test -short ./mq in a copy of bindings/go"
alone_dir=$(mktemp -d)
mkdir "$alone_dir/mq-go"
if git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$here" ls-files -z --cached --others --exclude-standard --deduplicate . |
        while IFS= read -r -d '' f; do
            if [ -f "$here/$f" ]; then
                mkdir -p "$alone_dir/mq-go/$(dirname "$f")"
                cp "$here/$f" "$alone_dir/mq-go/$f"
            fi
        done
else
    tar -C "$here" --exclude=./build-core -cf - . | tar -C "$alone_dir/mq-go" -xf -
fi
(
    cd "$alone_dir/mq-go"
    GOWORK=off go build ./...
    GOWORK=off go test -short -count=1 ./mq
)
rm -rf "$alone_dir"
alone_dir=""

step "benchmarks, once each (under the race detector: that they run, not how fast)"
go test -race -run '^$' -bench . -benchtime 200x ./mq

step "a build without cgo fails with a readable message"
if out=$(CGO_ENABLED=0 go build ./mq 2>&1); then
    echo "CGO_ENABLED=0 go build ./mq succeeded; it must fail" >&2
    exit 1
fi
echo "$out"
grep -q 'mq_requires_cgo' <<<"$out"

step "the core with CMake (build-core/): C demo and an installed libmq"
# Debug (-O0): this build is for linking and the trace, not for speed, and compiles faster.
cmake -S "$root" -B build-core -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=OFF >/dev/null
# The core's own warnings are the core's business: its log is shown only when the build fails.
if ! cmake --build build-core -j "$jobs" --target mq mq_static mq_demo >build-core/build.log 2>&1; then
    cat build-core/build.log >&2
    exit 1
fi
cmake --install build-core --prefix "$here/build-core/prefix" >/dev/null

step "go test -tags mq_system (links the installed libmq through pkg-config)"
libdir=$(dirname "$(find "$here/build-core/prefix" -name mq.pc | head -n 1)")
PKG_CONFIG_PATH="$libdir" LD_LIBRARY_PATH="$(dirname "$libdir")" \
    go test -tags mq_system -count=1 ./...

step "examples/go (the default build, no race detector): the reference trace, byte for byte against the C demo"
(
    cd "$root/examples/go"
    go vet ./...
    MQ_DEMO="$here/build-core/examples/mq_demo" go test -count=1 ./...
    go run . >/dev/null
)

step "Kafka: librdkafka and a cluster"
ensure_tools rdkafka
if [ -z "${MQ_KAFKA_BOOTSTRAP:-}" ]; then
    kafka_started=1
    MQ_KAFKA_BOOTSTRAP=$("$root/scripts/kafka-server.sh" start "$kafka_dir" | tail -n 1)
    export MQ_KAFKA_BOOTSTRAP
fi
echo "Kafka at $MQ_KAFKA_BOOTSTRAP"

# Without the race detector, so that the core is compiled once with its backend for both test
# binaries and the testee these tests build. Only the tests of the variant: the rest of the
# suite is the default build's, already run.
step "go test -tags mq_kafka -run Kafka (kafka_scenarios.txt one at a time, the cluster test)"
kafka_log=build-core/go-test-kafka.log
if ! go test -tags mq_kafka -count=1 -v -run Kafka ./mq ./internal/conformance >"$kafka_log" 2>&1; then
    cat "$kafka_log" >&2
    exit 1
fi
grep -E '^(\s*--- |ok|PASS)' "$kafka_log"
go vet -tags mq_kafka ./...

step "done"
printf '%s\n' "${timings[@]}"
section "go: all steps passed in $((SECONDS - start)) s"
