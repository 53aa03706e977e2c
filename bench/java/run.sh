#!/usr/bin/env bash
# The Java binding's benchmarks (JMH): the C suite's workloads 1, 2, 3 and 5 through the Java
# API, beside ArrayBlockingQueue<byte[]> and the LMAX Disruptor, all carrying the same 64-byte
# messages between two threads, in one JMH run; then the C suite on the same workloads, for
# the cost per message of the C API itself. Figures are ns per message (lower is better);
# after the table the script prints mq's throughput ratios over ArrayBlockingQueue and the
# Disruptor on the same workloads.
#
#   bench/java/run.sh                 everything (about 3 minutes)
#   bench/java/run.sh -- JMH-ARGS     the JMH part only, with JMH's own arguments
#                                     (e.g. -- "MqPull|Peers" -wi 1 -i 3)
#
# The machine is shared and noisy: compare ratios within one run.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
root=$(cd "$here/../.." && pwd)

jmh_only=0
if [ "${1:-}" = -- ]; then
    jmh_only=1
    shift
fi

mvn -B -ntp -q -f "$root/bindings/java/pom.xml" install -DskipTests
mvn -B -ntp -q -f "$here/pom.xml" package
cp="$here/target/classes:$(cat "$here/target/classpath.txt")"
echo "==== JMH: mq through Java, ArrayBlockingQueue, Disruptor (ns per message) ===="
csv="$here/target/jmh.csv"
rm -f "$csv"
java -cp "$cp" org.openjdk.jmh.Main -rf csv -rff "$csv" "$@"

# The ratios the performance goals name (issue 33): mq's throughput over the JDK queue's on the
# same workload, in this run (> 1: mq is faster). A row whose benchmarks did not run is left out.
if [ -f "$csv" ]; then
    echo "==== ratios (throughput, mq / peer; from the ns per message above) ===="
    awk -F, '
        { gsub(/"/, ""); n = split($1, part, "."); score[part[n]] = $5 }
        function row(label, mq, peer) {
            if ((mq in score) && (peer in score) && score[mq] > 0)
                printf "%-44s %6.2fx\n", label, score[peer] / score[mq]
        }
        END {
            row("single (poll, ack) / ArrayBlockingQueue", "w2Single", "abqSingle")
            row("single, ack-then-poll / ArrayBlockingQueue", "w2aSingleAckPoll", "abqSingle")
            row("single on handles / ArrayBlockingQueue", "w2hSingle", "abqSingle")
            row("batch 64 / ArrayBlockingQueue drainTo", "w1Batch64", "abqDrainTo64")
            row("batch 64 on handles / drainTo", "w1hBatch64", "abqDrainTo64")
            row("batch 64, ack-then-poll / drainTo", "w1aBatch64AckPoll", "abqDrainTo64")
            row("single / Disruptor", "w2Single", "disruptorSingle")
            row("batch 64 / Disruptor batch", "w1Batch64", "disruptorBatch64")
        }' "$csv"
fi

if [ "$jmh_only" = 1 ]; then
    exit 0
fi
# The C suite's figures for the same workloads (w1 batch 64, w2 single, w3 fan-out, w5 push),
# built from the same sources with the binding's native build settings.
echo "==== the C suite on workloads 1, 2, 3, 5 (messages per second; 1e9 / rate = ns per message) ===="
cbuild="$root/bindings/java/target/bench-core"
cmake -S "$root" -B "$cbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=ON >/dev/null
cmake --build "$cbuild" --target mq_bench_suite -j 2 >/dev/null
suite=$(find "$cbuild" -name mq_bench_suite -type f -perm -u+x | head -n 1)
"$suite" --runs 3 --scale 0.3 --only w1,w2,w3,w5a,w5b
