package org.mq;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * A message handed out by a poll or to a push handler. Its key, value and headers are copies
 * made when it was handed out: they stay valid whatever the group acks afterwards, and the
 * arrays belong to this object (nothing else holds them), as a Kafka {@code ConsumerRecord}'s
 * do. The copy costs one pass over the bytes per message; the library's own views die with
 * the ack that passes them, which Java cannot enforce.
 */
public final class Message {
    private final String topic;
    private final int partition;
    private final long offset;
    private final int deliveryCount;
    private final long timestampNanos;
    private final long lost;
    private final byte[] key;
    private final byte[] value;
    private final List<Header> headers;
    private final DeadLetter deadLetter;

    Message(String topic, int partition, long offset, int deliveryCount, long timestampNanos,
            long lost, byte[] key, byte[] value, List<Header> headers, DeadLetter deadLetter) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
        this.deliveryCount = deliveryCount;
        this.timestampNanos = timestampNanos;
        this.lost = lost;
        this.key = key;
        this.value = value;
        this.headers = headers;
        this.deadLetter = deadLetter;
    }

    /** The topic it was polled from. */
    public String topic() {
        return topic;
    }

    /** Its partition. */
    public int partition() {
        return partition;
    }

    /** Its offset in the partition. */
    public long offset() {
        return offset;
    }

    /**
     * How many polls have handed this offset to this group, this one included: 1 on first
     * delivery. A nack or an expired lease alone does not count; the poll that hands the message
     * out again does. In a push subscription, the rest of a polled batch that the loop gives back
     * unseen (after a handler throws, or when it stops) does not count, so a failing message
     * never takes the ones behind it to the dead-letter topic before a handler saw them.
     */
    public int deliveryCount() {
        return deliveryCount;
    }

    /** The broker clock (nanoseconds) when it was published. */
    public long timestampNanos() {
        return timestampNanos;
    }

    /**
     * Messages of this partition the group lost (dropped before it acked them, by bounded
     * retention or a maximum age) since the message it was handed before this one.
     */
    public long lost() {
        return lost;
    }

    /** The key, or {@code null} when it was published without one (the array is this message's). */
    public byte[] key() {
        return key;
    }

    /** The payload (the array is this message's; never null). */
    public byte[] value() {
        return value;
    }

    /** The payload decoded as UTF-8. */
    public String valueAsString() {
        return new String(value, StandardCharsets.UTF_8);
    }

    /** The key decoded as UTF-8, or {@code null} without a key. */
    public String keyAsString() {
        return key == null ? null : new String(key, StandardCharsets.UTF_8);
    }

    /** The headers in publish order (unmodifiable). */
    public List<Header> headers() {
        return headers;
    }

    /** Where it came from, if it was dead-lettered into this topic. */
    public Optional<DeadLetter> deadLetter() {
        return Optional.ofNullable(deadLetter);
    }

    @Override
    public String toString() {
        return topic + "/" + partition + "@" + offset + ": " + valueAsString();
    }
}
