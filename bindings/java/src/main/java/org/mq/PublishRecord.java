package org.mq;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * One message of a {@link Broker#publishBatch batch}. The arrays are read when the batch is
 * published (the library copies them); do not change them while it runs.
 *
 * @param key the key, or {@code null} for none (round-robin over partitions); an empty array is
 *     a present, empty key
 * @param value the payload ({@code null} is the empty payload)
 * @param headers the headers, in order (never null; may be empty)
 * @param delay how long after the publish, by the broker clock, the message is handed to a
 *     group (never null; {@link Duration#ZERO}, the default, hands it out at once); see
 *     {@link #withDelay(Duration)} (since 1.5)
 */
public record PublishRecord(byte[] key, byte[] value, List<Header> headers, Duration delay) {
    /** Checks the headers list and copies it, and checks the delay. */
    public PublishRecord {
        headers = List.copyOf(Objects.requireNonNull(headers, "headers"));
        Objects.requireNonNull(delay, "delay (use Duration.ZERO for none)");
    }

    /** A record handed out at once (no delay). */
    public PublishRecord(byte[] key, byte[] value, List<Header> headers) {
        this(key, value, headers, Duration.ZERO);
    }

    /** A record without headers. */
    public static PublishRecord of(byte[] key, byte[] value) {
        return new PublishRecord(key, value, List.of());
    }

    /**
     * This record, delayed (ABI 1.5): it is appended (and counted) at once, but no group is
     * handed it before the broker clock reaches its publish time + {@code delay}, whole
     * milliseconds (a fraction of one rounds up). A group hands out its partition in offset
     * order, so the message holds the ones behind it in its partition until it is due. The
     * library refuses a delay below zero or above 2^40 ms with {@link MqInvalidArgumentException}
     * (its message names the record), the Kafka backend any delay with
     * {@link MqUnsupportedException}.
     *
     * @param delay the delay ({@link Duration#ZERO}: none)
     * @return a copy of this record with that delay
     * @since 1.5
     */
    public PublishRecord withDelay(Duration delay) {
        return new PublishRecord(key, value, headers, delay);
    }
}
