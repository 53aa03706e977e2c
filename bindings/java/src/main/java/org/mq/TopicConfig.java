package org.mq;

import java.time.Duration;
import java.util.Objects;

/**
 * A topic's configuration ({@code mq_topic_config}). Start from {@link #builder()}, whose
 * values are the library's defaults (1 partition, capacity 1024, no byte budget, 30 s ack
 * timeout, retention until acked, no maximum age); the library checks every value when the
 * topic is created.
 */
public final class TopicConfig {
    final int partitions;
    final long capacity;
    final long maxBytes;
    final long ackTimeoutMs;
    final Retention retention;
    final long maxAgeMs;

    private TopicConfig(Builder b) {
        this.partitions = b.partitions;
        this.capacity = b.capacity;
        this.maxBytes = b.maxBytes;
        this.ackTimeoutMs = b.ackTimeoutMs;
        this.retention = b.retention;
        this.maxAgeMs = b.maxAgeMs;
    }

    /** The library's defaults. */
    public static TopicConfig defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link TopicConfig}. */
    public static final class Builder {
        private int partitions = Defaults.PARTITIONS;
        private long capacity = Defaults.CAPACITY;
        private long maxBytes = Defaults.MAX_BYTES;
        private long ackTimeoutMs = Defaults.ACK_TIMEOUT_MS;
        private Retention retention = Retention.of(Defaults.RETENTION);
        private long maxAgeMs = Defaults.MAX_AGE_MS;

        private Builder() {}

        /** Partitions, 1 to 65536. */
        public Builder partitions(int partitions) {
            this.partitions = partitions;
            return this;
        }

        /** Messages retained per partition, at least 1. */
        public Builder capacity(long capacity) {
            this.capacity = capacity;
            return this;
        }

        /** Key, value and header bytes retained per partition; 0 = no budget. */
        public Builder maxBytes(long maxBytes) {
            this.maxBytes = maxBytes;
            return this;
        }

        /** The lease: in-flight messages not acked within it are delivered again. */
        public Builder ackTimeout(Duration ackTimeout) {
            this.ackTimeoutMs = Waits.millis(ackTimeout, "ackTimeout");
            return this;
        }

        /** What a full partition does. */
        public Builder retention(Retention retention) {
            this.retention = Objects.requireNonNull(retention, "retention");
            return this;
        }

        /** Trim messages older than this whatever the groups' cursors; {@link Duration#ZERO} = no limit. */
        public Builder maxAge(Duration maxAge) {
            this.maxAgeMs = Waits.millis(maxAge, "maxAge");
            return this;
        }

        /** The config. */
        public TopicConfig build() {
            return new TopicConfig(this);
        }
    }
}
