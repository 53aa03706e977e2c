#!/usr/bin/env bash
# Churn soak (not part of CI; docs/RELIABILITY.md): 1,000,000 cycles each of group
# subscribe/unsubscribe, member join/leave, push subscription open/close and topic
# create/delete, with traffic flowing through a steady topic, sampling resident memory; fails if
# RSS grows after warm-up. Writes the RSS curve as a PNG. (ctest runs a short version under
# LeakSanitizer: tests/test_churn.cpp.)
#
#   scripts/churn_soak.sh [--cycles N] [--samples S]     (default 1,000,000 cycles)
#
# Builds the library in build-soak/ (MQ_SOAK_BUILD_DIR overrides), compiles bench/churn_soak.c
# against it, and writes build-soak/churn_rss.csv and build-soak/churn_rss.png. Installs gnuplot
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
cc -O2 -std=c11 -Wall -Wextra -DMQ_STATIC -Iinclude bench/churn_soak.c "$dir/libmq.a" -lstdc++ \
    -lpthread -o "$dir/mq_churn_soak"

echo "== churn soak"
set +e
"$dir/mq_churn_soak" --csv "$dir/churn_rss.csv" "$@"
status=$?
set -e

gnuplot <<GNUPLOT
set terminal png size 1000,500
set output "$dir/churn_rss.png"
set title "mq churn soak: resident memory (subscribe, member, push subscription, topic churn)"
set xlabel "cycles"
set ylabel "RSS (MiB)"
set grid
set yrange [0:*]
set format x "%.0s%c"
plot "$dir/churn_rss.csv" using 1:(\$2/1024.0) with linespoints title "RSS"
GNUPLOT
echo "== RSS curve: $dir/churn_rss.png"
exit $status
