package org.mq;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Publishing and polling as the named forms ({@link Broker}) and the handles ({@link Publisher},
 * {@link Cursor}) share them: only the native call and the gate differ, so a handle behaves
 * exactly as its named form (waits, interrupts, buffers, partial batches).
 */
final class Calls {
    private Calls() {}

    /** A single publish of the mq_record at {@code record} (the partition goes over its start). */
    @FunctionalInterface
    interface Publish {
        long call(long record, long ms, NativeCancel token);
    }

    /** A batch publish of {@code count} mq_records at {@code records}. */
    @FunctionalInterface
    interface Batch {
        int call(long records, int count, long ms, NativeCancel token, long[] results);
    }

    /** A copying poll (or ack and poll) into {@code buf}. */
    @FunctionalInterface
    interface Poll {
        long call(long buf, long cap, int max, long ms, NativeCancel token);
    }

    static PublishResult publish(Guarded g, byte[] key, byte[] value, List<Header> headers, Duration wait,
            Publish call) {
        long ms = Waits.waitMillis(wait);
        Objects.requireNonNull(headers, "headers");
        PerThread pt = PerThread.get();
        ByteBuffer in = Wire.encodePublish(key, value, headers, pt);
        g.enter();
        try {
            long offset = ms == 0 ? call.call(pt.outAddress, 0, null)
                    : pt.await(g, t -> call.call(pt.outAddress, ms, t));
            // The native side wrote the partition over the start of the buffer.
            return new PublishResult(in.getInt(0), offset);
        } finally {
            g.gate().exit();
        }
    }

    static BatchResult publishBatch(Guarded g, List<PublishRecord> records, Duration wait, Batch call) {
        long ms = Waits.waitMillis(wait);
        Objects.requireNonNull(records, "records");
        PerThread pt = PerThread.get();
        Wire.encodeBatch(records, pt);
        int count = records.size();
        long[] results = new long[2 * count];
        Arrays.fill(results, Long.MIN_VALUE);  // left so when the library reports no results
        g.enter();
        try {
            int published;
            try {
                published = ms == 0 ? call.call(pt.outAddress, count, 0, null, results)
                        : (int) pt.await(g, t -> call.call(pt.outAddress, count, ms, t, results));
            } catch (MqFullException | MqClosedException | MqInterruptedException e) {
                // The library reports where every record went, or (refused at once) nothing.
                throw results.length > 0 && results[0] == Long.MIN_VALUE ? e
                        : e.withPartialBatch(Broker.batchResult(results));
            }
            return new BatchResult(published, results);
        } finally {
            g.gate().exit();
        }
    }

    /** A delayed publish: the library's single publish has no delay, so a batch of one that fails as a publish. */
    static PublishResult publishDelayed(Guarded g, PublishRecord record, Duration wait, Batch call) {
        try {
            return publishBatch(g, List.of(record), wait, call).result(0);
        } catch (MqException e) {
            throw e.partialBatch() == null ? e : e.withPartialBatch(null);
        }
    }

    /**
     * A poll, or with {@code first} an ack and poll: {@code first} runs without waiting; when it
     * finds nothing (its ack made), the wait is a plain {@code poll}, as is any retry in a grown
     * buffer. Trying first without a wait lets the busy case skip the interruptible wait; a
     * poll that hands out nothing changes nothing, so trying first is invisible.
     */
    static List<Message> poll(Guarded g, String topic, int max, Duration wait, Poll first, Poll poll) {
        long ms = Waits.waitMillis(wait);
        g.enter();
        try {
            PerThread pt = PerThread.get();
            PerThread.CopyPoll again = (buf, cap, m) -> poll.call(buf, cap, m, 0, null);
            long n = pt.poll(first == poll ? again : (buf, cap, m) -> first.call(buf, cap, m, 0, null), max);
            if (n == 0 && ms != 0) {
                n = pt.await(g, t -> pt.poll((buf, cap, m) -> poll.call(buf, cap, m, ms, t), max));
            }
            return pt.copied(n, max, topic, again);
        } finally {
            g.gate().exit();
        }
    }
}
