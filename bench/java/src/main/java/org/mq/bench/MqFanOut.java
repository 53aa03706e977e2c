package org.mq.bench;

import static org.mq.bench.Messages.BATCH;
import static org.mq.bench.Messages.N;

import java.util.concurrent.ExecutorService;
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

/** Workload 3 of the C suite: 1 producer to 2 groups, batch 64; ns per message per group. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
public class MqFanOut extends MqPipe {
    private ExecutorService second;

    @Setup(Level.Trial)
    public void setUp() {
        open("g0", "g1");
        second = Messages.thread("consumer-g1");
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        second.shutdownNow();
        close();
    }

    @Benchmark
    @OperationsPerInvocation(N)
    public void w3FanOut2Batch64() {
        Future<?> p = produceBatches();
        Future<?> g1 = second.submit(() -> consume(1, BATCH));
        consume(0, BATCH);
        Messages.join(g1);
        Messages.join(p);
    }
}
