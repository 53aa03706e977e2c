package org.mq.bench;

import static org.mq.bench.Messages.BATCH;
import static org.mq.bench.Messages.N;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/** Workloads 1 and 2 of the C suite: mq 1 producer to 1 group, batch 64 and single. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
public class MqPull extends MqPipe {
    @Setup(Level.Trial)
    public void setUp() {
        open("g0");
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        close();
    }

    /** Workload 1: publishBatch 64, poll up to 64, one cumulative ack. ns per message. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void w1Batch64() {
        Future<?> p = produceBatches();
        consume(0, BATCH);
        Messages.join(p);
    }

    /** Workload 1 with the ack of each batch travelling with the next poll (ackPoll). */
    @Benchmark
    @OperationsPerInvocation(N)
    public void w1aBatch64AckPoll() {
        Future<?> p = produceBatches();
        consumeAckPoll(0, BATCH);
        Messages.join(p);
    }

    /** Workload 2 with the ack travelling with the next poll (ackPoll). */
    @Benchmark
    @OperationsPerInvocation(N)
    public void w2aSingleAckPoll() {
        Future<?> p = produceSingles();
        consumeAckPoll(0, 1);
        Messages.join(p);
    }

    /** Workload 2: publish one, poll one, ack one. ns per message. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void w2Single() {
        Future<?> p = produceSingles();
        consume(0, 1);
        Messages.join(p);
    }
}

