#!/usr/bin/env bash
# The Kafka backend's overhead beside librdkafka alone (bench/kafka_overhead.cpp), against a
# single-node Kafka that this script starts and stops (scripts/kafka-server.sh). Not part of the
# test command: a benchmark, run by hand.
#
#   scripts/kafka-bench.sh [--messages N] [--batch B] [--runs R] [--size BYTES]
#
# Builds build-kafka-bench/ (Release, MQ_KAFKA=ON) and prints each run and the medians:
# messages per second and CPU time per message (every thread of the process), for publish and
# for poll + ack, mq beside librdkafka.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh
ensure_tools cmake ninja g++ pkg-config rdkafka kcat java mvn

dir=build-kafka-bench
section "build ($dir/)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMQ_KAFKA=ON -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=ON > /dev/null
cmake --build "$dir" --target mq_kafka_overhead

section "Kafka"
kafka_dir=$PWD/$dir/kafka
trap 'scripts/kafka-server.sh stop "$kafka_dir" || true' EXIT
bootstrap=$(scripts/kafka-server.sh start "$kafka_dir" | tail -n 1)

section "mq on Kafka beside librdkafka ($bootstrap)"
"$dir/bench/mq_kafka_overhead" "$bootstrap" "$@" 2> >(grep -v '^%' >&2)
