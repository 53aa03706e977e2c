package org.mq;

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
 */
public record PublishRecord(byte[] key, byte[] value, List<Header> headers) {
    /** Checks the headers list and copies it. */
    public PublishRecord {
        headers = List.copyOf(Objects.requireNonNull(headers, "headers"));
    }

    /** A record without headers. */
    public static PublishRecord of(byte[] key, byte[] value) {
        return new PublishRecord(key, value, List.of());
    }
}
