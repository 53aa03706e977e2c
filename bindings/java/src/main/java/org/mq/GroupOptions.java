package org.mq;

import java.util.Objects;

/**
 * How a consumer group subscribes ({@code mq_group_options}). Start from {@link #builder()},
 * whose values are the library's defaults (start at the latest offset, no delivery limit).
 */
public final class GroupOptions {
    final StartPosition start;
    final long maxDeliveries;
    final String deadLetterTopic;

    private GroupOptions(Builder b) {
        this.start = b.start;
        this.maxDeliveries = b.maxDeliveries;
        this.deadLetterTopic = b.deadLetterTopic;
    }

    /** The library's defaults. */
    public static GroupOptions defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link GroupOptions}. */
    public static final class Builder {
        private StartPosition start = Defaults.START == StartPosition.EARLIEST.code
                ? StartPosition.EARLIEST : StartPosition.LATEST;
        private long maxDeliveries = Defaults.MAX_DELIVERIES;
        private String deadLetterTopic;

        private Builder() {}

        /** Where the new group starts. */
        public Builder start(StartPosition start) {
            this.start = Objects.requireNonNull(start, "start");
            return this;
        }

        /**
         * Poison messages: a message handed to this group this many times without an ack goes
         * to the {@link #deadLetterTopic dead-letter topic} instead of being handed out again,
         * and counts as acked for this group. 0 (the default) is no limit; a limit needs a
         * dead-letter topic and a dead-letter topic needs a limit.
         */
        public Builder maxDeliveries(long maxDeliveries) {
            this.maxDeliveries = maxDeliveries;
            return this;
        }

        /** Where poison messages go (an existing topic other than this one); default none. */
        public Builder deadLetterTopic(String deadLetterTopic) {
            this.deadLetterTopic = deadLetterTopic;
            return this;
        }

        /** The options. */
        public GroupOptions build() {
            return new GroupOptions(this);
        }
    }
}
