#!/usr/bin/env bash
# Builds and runs mq's benchmark suite (docs/BENCHMARKS.md) beside its peers, and writes
# bench/results/results.md (the table, the machine described at the top) and
# bench/results/chart.png. On a fresh Debian/Ubuntu machine it first installs what it needs
# (cmake, ninja, g++, pkg-config, libzmq3-dev for the ZeroMQ peer, gnuplot-nox for the chart).
#
#   scripts/bench.sh               5 rounds; each figure is the median (2-3 minutes on 2 cores)
#   scripts/bench.sh --runs N      N rounds instead
#   scripts/bench.sh --scale F     multiply every message count by F (0.05 for a quick look)
#
# Builds in build-bench/ (Release). Exits non-zero if a benchmark received anything other than
# what was sent. Missing a performance target is reported in the table, not as a failure.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh

runs=5
scale=1
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=${2:?--runs needs a number}; shift 2 ;;
        --scale) scale=${2:?--scale needs a number}; shift 2 ;;
        -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done

# Libraries and the chart tool, which setup.sh's ensure_tools (commands only) does not cover.
ensure_packages() {
    local missing=()
    pkg-config --exists libzmq 2>/dev/null || missing+=(libzmq3-dev)
    command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox)
    [ ${#missing[@]} -eq 0 ] && return 0
    section "installing ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 && sudo=(sudo) || {
            echo "not root and no sudo: install ${missing[*]} for the ZeroMQ peer and the chart" >&2
            return 0
        }
    fi
    command -v apt-get >/dev/null 2>&1 || {
        echo "no apt-get: install ${missing[*]} (Debian names) for the ZeroMQ peer and the chart" >&2
        return 0
    }
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}

ensure_tools cmake ninja g++ pkg-config
ensure_packages

section "build (build-bench/, Release)"
mkdir -p build-bench
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=OFF >build-bench/cmake.log 2>&1 || { cat build-bench/cmake.log; exit 1; }
grep 'mq_bench_suite' build-bench/cmake.log || true  # says whether the ZeroMQ peer is built
cmake --build build-bench --target mq_bench_suite

raw=build-bench/results-raw
mkdir -p "$raw" bench/results
load=$(cut -d' ' -f1-3 /proc/loadavg)
section "run ($runs rounds, scale $scale)"
build-bench/bench/suite/mq_bench_suite --runs "$runs" --scale "$scale" --out "$raw"

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
zmq=$(pkg-config --modversion libzmq 2>/dev/null || echo "not installed (peer skipped)")
{
    echo "# mq benchmark results"
    echo
    echo "An example run of \`scripts/bench.sh --runs $runs --scale $scale\`."
    echo "Absolute figures are noise on a shared machine; the ratios within one run are the result."
    echo
    echo "| machine | |"
    echo "|---|---|"
    echo "| CPU | ${cpu:-unknown} |"
    echo "| cores | $(nproc) online |"
    echo "| kernel | $(uname -sr) |"
    echo "| compiler | $(c++ --version | head -n 1) |"
    echo "| ZeroMQ | $zmq |"
    echo "| load average at start | $load |"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
    echo
    echo "Chart: [chart.png](chart.png)."
    echo
    cat "$raw/tables.md"
} >bench/results/results.md

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "dir='$raw'; out='bench/results/chart.png'" bench/suite/chart.gp
    echo "wrote bench/results/results.md and bench/results/chart.png"
else
    echo "wrote bench/results/results.md (no gnuplot: no chart)"
fi
