package org.mq;

import java.time.Duration;
import java.util.List;

/**
 * A topic looked up once ({@link Broker#publisher(String)}, ABI 1.7's {@code mq_publisher}): its
 * publishes are exactly {@link Broker#publish(String, byte[], byte[], List, Duration)
 * Broker.publish} and {@link Broker#publishBatch Broker.publishBatch} on that topic (same
 * arguments, waits, interrupts, results and exceptions) without looking the name up on every
 * call. Thread-safe: share one or open one per thread.
 *
 * <p>It holds its topic, not the name: once the topic is {@linkplain Broker#deleteTopic deleted}
 * every publish throws {@link MqNoSuchTopicException}, also after a topic of that name is
 * created again (open a new publisher for it). After its broker is shut down or closed every
 * publish throws {@link MqClosedException}. {@link #close()} ends a publish waiting on another
 * thread ({@link MqClosedException}) and releases the handle; a publisher that becomes
 * unreachable unclosed is released by a Cleaner. Any order of closing it and its broker is safe.
 *
 * @since 1.7
 */
public final class Publisher implements AutoCloseable {
    private final Broker broker;  // keeps the broker reachable (and open) while the publisher is
    private final String topic;
    private final NativePublisher np;
    private final HandleState state;

    Publisher(Broker broker, String topic, NativePublisher np) {
        this.broker = broker;
        this.topic = topic;
        this.np = np;
        this.state = new HandleState("publisher", "Publisher.close()", np::delete);
        Resources.CLEANER.register(this, state);
    }

    /** The topic's name, as it was opened. */
    public String topic() {
        return topic;
    }

    /** The broker it was opened on. */
    public Broker broker() {
        return broker;
    }

    /** Publishes a message without headers; see {@link #publish(byte[], byte[], List, Duration)}. */
    public PublishResult publish(byte[] key, byte[] value, Duration wait) {
        return publish(key, value, List.of(), wait);
    }

    /**
     * {@link Broker#publish(String, byte[], byte[], List, Duration) Broker.publish} on the
     * publisher's topic.
     *
     * @throws MqNoSuchTopicException once the topic was deleted
     * @throws MqClosedException once the broker or this publisher was closed
     */
    public PublishResult publish(byte[] key, byte[] value, List<Header> headers, Duration wait) {
        return Calls.publish(state, key, value, headers, wait, np::publish);
    }

    /**
     * {@link Broker#publishBatch Broker.publishBatch} on the publisher's topic: a batch that
     * stopped part-way throws with {@link MqException#partialBatch()} set; records may carry a
     * delay ({@link PublishRecord#withDelay(Duration)}).
     */
    public BatchResult publishBatch(List<PublishRecord> records, Duration wait) {
        return Calls.publishBatch(state, records, wait, np::publishBatch);
    }

    /**
     * A delayed publish without headers; see
     * {@link #publishDelayed(byte[], byte[], List, Duration, Duration)}.
     */
    public PublishResult publishDelayed(byte[] key, byte[] value, Duration delay, Duration wait) {
        return publishDelayed(key, value, List.of(), delay, wait);
    }

    /**
     * {@link Broker#publishDelayed(String, byte[], byte[], List, Duration, Duration)
     * Broker.publishDelayed} on the publisher's topic.
     */
    public PublishResult publishDelayed(byte[] key, byte[] value, List<Header> headers, Duration delay,
            Duration wait) {
        return Calls.publishDelayed(state, new PublishRecord(key, value, headers, delay), wait, np::publishBatch);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Releases the publisher: a publish of it waiting on another thread ends with
     * {@link MqClosedException}, and later calls throw the same. Idempotent.
     */
    @Override
    public void close() {
        state.close();
    }

    @Override
    public String toString() {
        return "Publisher[" + topic + (isClosed() ? ", closed]" : "]");
    }
}
