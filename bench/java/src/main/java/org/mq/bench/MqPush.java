package org.mq.bench;

import static org.mq.bench.Messages.BATCH;
import static org.mq.bench.Messages.N;
import static org.mq.bench.Messages.SIZE;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.mq.Broker;
import org.mq.PublishRecord;
import org.mq.SubscribeOptions;
import org.mq.Subscription;
import org.mq.TopicConfig;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Workload 5 of the C suite: 1 producer (publishBatch 64) to a push subscription whose Java
 * handler is called on the library's thread for every message (bench_mq_push).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
public class MqPush {
    @Param({"10", "64"})
    public int prefetch;

    private Broker broker;
    private Subscription sub;
    private ExecutorService producer;
    private final List<PublishRecord> batch = new ArrayList<>();
    private long nextSeq;
    private long expected;  // the handler's (one partition: one library thread)
    private volatile long handled;
    private volatile long target;
    private volatile Thread waiter;

    @Setup(Level.Trial)
    public void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().capacity(Messages.CAPACITY).build());
        producer = Messages.thread("producer");
        for (int i = 0; i < BATCH; i++) {
            batch.add(PublishRecord.of(null, new byte[SIZE]));
        }
        sub = broker.subscribe("t", "g0", (m, ctx) -> {
            Messages.check(m.value(), expected++);
            long h = handled + 1;
            handled = h;
            if (h == target) {
                LockSupport.unpark(waiter);
            }
        }, SubscribeOptions.builder().prefetch(prefetch).build());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        producer.shutdownNow();
        sub.close();
        broker.close();
    }

    @Benchmark
    @OperationsPerInvocation(N)
    public void w5Push() {
        waiter = Thread.currentThread();
        target = handled + N;
        Future<?> p = producer.submit(() -> {
            for (int i = 0; i < N; i += BATCH) {
                for (PublishRecord r : batch) {
                    Messages.stamp(r.value(), nextSeq++);
                }
                broker.publishBatch("t", batch, Broker.FOREVER);
            }
        });
        while (handled < target) {
            LockSupport.park(this);
        }
        Messages.join(p);
    }
}
