#!/usr/bin/env bash
# The Go binding's benchmarks beside the C suite's, in the same run (docs/BENCHMARKS.md):
#
#   bindings/go/bench.sh [--rounds N] [--scale F]     (defaults: 3 rounds, scale 0.1)
#
# Each round runs the C suite's workloads 1, 2, 3 and 5 once (bench/suite, built in Release
# into bindings/go/build-bench/) and then the Go benchmarks of the same workloads plus the
# buffered-channel peer (go test -bench, package mq), with the same message counts. Figures
# are nanoseconds per message (per receiver). It prints benchstat's tables (C vs Go, by
# benchmark) and the issue's ratios from the medians over rounds:
#   single Publish + Poll + Ack, Go / C cost per message        (target <= 2)
#   batch 64 through mq / the buffered channel, throughput     (target >= 2)
# Raw results go to bindings/go/build-bench/results/{c,go}.txt (benchstat's input format).
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../scripts/lib/setup.sh
source "$root/scripts/lib/setup.sh"

rounds=3
scale=0.1
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done

ensure_tools g++ cmake ninja pkg-config
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
jobs=${MQ_TEST_JOBS:-2}
cd "$here"

section "go bench: the C suite (build-bench/, Release)"
cmake -S "$root" -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=ON >/dev/null
if ! cmake --build build-bench -j "$jobs" --target mq_bench_suite >build-bench/build.log 2>&1; then
    cat build-bench/build.log >&2
    exit 1
fi
suite=build-bench/bench/suite/mq_bench_suite

cmake --build build-bench -j "$jobs" --target mq_static >>build-bench/build.log 2>&1
cc -O2 -I"$root/include" bench/oneloop.c build-bench/libmq.a -lstdc++ -lpthread -o build-bench/oneloop

section "go bench: the Go benchmarks (test binary)"
go test -c -o build-bench/mq.test ./mq

procs=$(go env GOMAXPROCS 2>/dev/null || true)
[ -n "$procs" ] || procs=$(nproc)
# Message counts of the C suite at this scale (bench/suite/main.cpp, counts_for).
count() { awk -v n="$1" -v s="$scale" 'BEGIN { c = int(n * s); if (c < 640) c = 640; print c }'; }
declare -A n=([Batch64]=$(count 1e7) [Batch64Reuse]=$(count 1e7) [Single]=$(count 3e6)
    [SingleReuse]=$(count 3e6) [FanOut2]=$(count 6e6) [PushPrefetch10]=$(count 6e6)
    [PushPrefetch64]=$(count 6e6) [Channel]=$(count 1e7) [SingleOneGoroutine]=$(count 3e6)
    [Batch64OneGoroutine]=$(count 1e7) [Batch64AckPoll]=$(count 1e7) [SingleAckPoll]=$(count 3e6)
    [SingleAckPollOneGoroutine]=$(count 3e6) [Batch64AckPollOneGoroutine]=$(count 1e7))
# The C suite's row for each Go benchmark (the Reuse variants poll into a Batch; the AckPoll
# variants ack with the next poll, AckPollBatch, where the C suite's rows 1 and 2 ack apart).
# The Go pull benchmarks go through a Publisher and a Cursor: rows 1 and 2 "on handles".
declare -A c_row=([Batch64]="1. mq 1→1, batch 64, on handles"
    [Batch64Reuse]="1. mq 1→1, batch 64, on handles" [Batch64AckPoll]="1. mq 1→1, batch 64, on handles"
    [SingleAckPoll]="2. mq 1→1, single, on handles" [Single]="2. mq 1→1, single, on handles"
    [SingleReuse]="2. mq 1→1, single, on handles" [FanOut2]="3. mq 1→2 groups"
    [PushPrefetch10]="5. mq push subscription, prefetch 10"
    [PushPrefetch64]="5. mq push subscription, prefetch 64")
mq_benches=(Batch64 Batch64Reuse Batch64AckPoll Single SingleReuse SingleAckPoll FanOut2
    PushPrefetch10 PushPrefetch64)
one_benches=(SingleOneGoroutine Batch64OneGoroutine SingleAckPollOneGoroutine
    Batch64AckPollOneGoroutine)
declare -A one_mode=([SingleOneGoroutine]=single [Batch64OneGoroutine]=batch
    [SingleAckPollOneGoroutine]=singleackpoll [Batch64AckPollOneGoroutine]=batchackpoll)

out=build-bench/results
mkdir -p "$out"
: >"$out/c.txt"
: >"$out/go.txt"
for header in "$out/c.txt" "$out/go.txt"; do
    printf 'goos: linux\ngoarch: %s\npkg: mq\ncpu: %s\n' "$(go env GOARCH)" \
        "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)" >>"$header"
done

for ((round = 1; round <= rounds; round++)); do
    section "go bench: round $round of $rounds"
    table=$("$suite" --runs 1 --scale "$scale" --only w1h,w2h,w3,w5a,w5b --out "$out/c-suite")
    for b in "${mq_benches[@]}"; do
        # "| 2. mq 1→1, single (publish, poll, ack) | **3.59 M/s** | ..." -> ns per message
        rate=$(grep -F "| ${c_row[$b]}" <<<"$table" | head -n 1 |
            sed -E 's/.*\*\*([0-9.]+) (M|k)\/s\*\*.*/\1 \2/')
        ns=$(awk -v r="$rate" 'BEGIN { split(r, a, " "); m = a[2] == "M" ? 1e6 : 1e3; printf "%.2f", 1e9 / (a[1] * m) }')
        printf 'Benchmark%s-%s\t%s\t%s ns/op\n' "$b" "$procs" "${n[$b]}" "$ns" | tee -a "$out/c.txt"
    done
    for b in "${one_benches[@]}"; do
        build-bench/oneloop "${one_mode[$b]}" "${n[$b]}" "$procs" | tee -a "$out/c.txt"
    done
    for b in Channel "${mq_benches[@]}" "${one_benches[@]}"; do
        build-bench/mq.test -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime "${n[$b]}x" |
            grep "^Benchmark" | tee -a "$out/go.txt"
    done
done

median() { # median ns/op (or the unit $3) of benchmark $2 in file $1
    grep "^Benchmark$2-" "$1" | awk -v unit="${3:-ns/op}" '{ for (i = 4; i <= NF; i++) if ($i == unit) print $(i - 1) }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

section "go bench: benchstat (C suite vs Go binding, ns per message)"
export PATH="$(go env GOPATH)/bin:$PATH"
if command -v benchstat >/dev/null 2>&1 || go install golang.org/x/perf/cmd/benchstat@latest; then
    benchstat C="$out/c.txt" Go="$out/go.txt"
else
    echo "(benchstat not available: raw results in $out/)"
fi

section "go bench: ratios (medians of $rounds rounds, scale $scale)"
printf '%-27s %12s %12s %10s\n' benchmark "C ns/msg" "Go ns/msg" "Go / C"
for b in "${mq_benches[@]}"; do
    c=$(median "$out/c.txt" "$b")
    g=$(median "$out/go.txt" "$b")
    awk -v b="$b" -v c="$c" -v g="$g" 'BEGIN { printf "%-27s %12.1f %12.1f %9.2fx\n", b, c, g, g / c }'
done
for b in "${one_benches[@]}"; do
    c=$(median "$out/c.txt" "$b" cpu-ns/op)
    g=$(median "$out/go.txt" "$b" cpu-ns/op)
    awk -v b="$b" -v c="$c" -v g="$g" 'BEGIN { printf "%-27s %12.1f %12.1f %9.2fx  (CPU ns per message, one thread)\n", b, c, g, g / c }'
done
ch=$(median "$out/go.txt" Channel)
echo
awk -v ch="$ch" 'BEGIN { printf "buffered channel of 64-byte []byte: %.1f ns/msg\n", ch }'
for b in Single SingleReuse SingleAckPoll; do
    awk -v b="$b" -v c="$(median "$out/c.txt" "$b")" -v g="$(median "$out/go.txt" "$b")" 'BEGIN {
        r = g / c; v = "does not hold"; if (r <= 2) v = "holds"
        printf "%-13s Publish+Poll+Ack, Go / C cost per message: %5.2fx (target <= 2): %s\n", b, r, v }'
done
for b in Batch64 Batch64Reuse Batch64AckPoll; do
    awk -v b="$b" -v ch="$ch" -v g="$(median "$out/go.txt" "$b")" 'BEGIN {
        r = ch / g; v = "does not hold"; if (r >= 2) v = "holds"
        printf "%-13s throughput, mq / buffered channel:         %5.2fx (target >= 2): %s\n", b, r, v }'
done
