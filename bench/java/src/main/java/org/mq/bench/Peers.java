package org.mq.bench;

import static org.mq.bench.Messages.BATCH;
import static org.mq.bench.Messages.CAPACITY;
import static org.mq.bench.Messages.N;
import static org.mq.bench.Messages.SIZE;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
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

/**
 * What a Java user would otherwise use, carrying the same 64-byte messages between the same two
 * threads: ArrayBlockingQueue&lt;byte[]&gt; (capacity 1024; single put/take, and batches drained
 * with drainTo) and the LMAX Disruptor (ring of 1024, one producer, blocking wait strategy,
 * single and batch claims). Each consumer gets its own copy of every message, as mq's do.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
public class Peers {
    static final class Event {
        final byte[] data = new byte[SIZE];
    }

    private ExecutorService producer;
    private ArrayBlockingQueue<byte[]> queue;
    private RingBuffer<Event> ring;
    private SequenceBarrier barrier;
    private final Sequence consumed = new Sequence();
    private long nextSeq;
    private long expected;
    private final List<byte[]> drained = new ArrayList<>(BATCH);

    @Setup(Level.Trial)
    public void setUp() {
        producer = Messages.thread("producer");
        queue = new ArrayBlockingQueue<>(CAPACITY);
        ring = RingBuffer.createSingleProducer(Event::new, CAPACITY, new BlockingWaitStrategy());
        barrier = ring.newBarrier();
        ring.addGatingSequences(consumed);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        producer.shutdownNow();
    }

    private Future<?> queueProducer() {
        return producer.submit(() -> {
            for (int i = 0; i < N; i++) {
                byte[] m = new byte[SIZE];  // handed over: a new array per message
                Messages.stamp(m, nextSeq++);
                queue.put(m);
            }
            return null;
        });
    }

    /** ArrayBlockingQueue, single put and take. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void abqSingle() throws InterruptedException {
        Future<?> p = queueProducer();
        for (int i = 0; i < N; i++) {
            Messages.check(queue.take(), expected++);
        }
        Messages.join(p);
    }

    /** ArrayBlockingQueue, the consumer drains batches of up to 64 with drainTo. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void abqDrainTo64() throws InterruptedException {
        Future<?> p = queueProducer();
        for (int got = 0; got < N; ) {
            drained.clear();
            drained.add(queue.take());  // block for the first, then take what is there
            queue.drainTo(drained, BATCH - 1);
            for (byte[] m : drained) {
                Messages.check(m, expected++);
            }
            got += drained.size();
        }
        Messages.join(p);
    }

    private Future<?> ringProducer(int claim) {
        return producer.submit(() -> {
            byte[] m = new byte[SIZE];
            for (int i = 0; i < N; i += claim) {
                long hi = ring.next(claim);
                long lo = hi - claim + 1;
                for (long s = lo; s <= hi; s++) {
                    Messages.stamp(m, nextSeq++);
                    System.arraycopy(m, 0, ring.get(s).data, 0, SIZE);
                }
                ring.publish(lo, hi);
            }
        });
    }

    private void ringConsume() throws Exception {
        for (int got = 0; got < N; ) {
            long next = consumed.get() + 1;
            long available = barrier.waitFor(next);
            for (long s = next; s <= available; s++) {
                Messages.check(ring.get(s).data.clone(), expected++);
            }
            got += (int) (available - next + 1);
            consumed.set(available);
        }
    }

    /** The Disruptor, one claim per message. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void disruptorSingle() throws Exception {
        Future<?> p = ringProducer(1);
        ringConsume();
        Messages.join(p);
    }

    /** The Disruptor, claims of 64. */
    @Benchmark
    @OperationsPerInvocation(N)
    public void disruptorBatch64() throws Exception {
        Future<?> p = ringProducer(BATCH);
        ringConsume();
        Messages.join(p);
    }
}
