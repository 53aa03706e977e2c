#!/usr/bin/env bash
# Soak test (not part of CI; docs/RELIABILITY.md): 100,000,000 messages through a 4-partition
# topic with 2 groups, sampling resident memory; fails if RSS grows after warm-up. Writes the
# RSS curve as a PNG.
#
#   scripts/soak.sh [--messages N] [--samples S]     (default 100,000,000 messages)
#
# Builds the library in build-soak/ (MQ_SOAK_BUILD_DIR overrides), compiles bench/soak.c
# against it, and writes build-soak/soak_rss.csv and build-soak/soak_rss.png. Installs gnuplot
# (Debian's gnuplot-nox) if it is missing.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
dir=${MQ_SOAK_BUILD_DIR:-build-soak}

source scripts/lib/setup.sh
ensure_tools cmake ninja g++ gnuplot

echo "== build ($dir/)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMQ_SANITIZE= \
    -DMQ_BUILD_TESTS=OFF -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF > /dev/null
cmake --build "$dir" --target mq_static
cc -O2 -std=c11 -Wall -Wextra -DMQ_STATIC -Iinclude bench/soak.c "$dir/libmq.a" -lstdc++ -lpthread \
    -o "$dir/mq_soak"

echo "== soak"
set +e
"$dir/mq_soak" --csv "$dir/soak_rss.csv" "$@"
status=$?
set -e

gnuplot <<GNUPLOT
set terminal png size 1000,500
set output "$dir/soak_rss.png"
set title "mq soak: resident memory (4 partitions, 2 groups)"
set xlabel "messages consumed (per group)"
set ylabel "RSS (MiB)"
set grid
set yrange [0:*]
set format x "%.0s%c"
plot "$dir/soak_rss.csv" using 1:(\$2/1024.0) with linespoints title "RSS"
GNUPLOT
echo "== RSS curve: $dir/soak_rss.png"
exit $status
