package org.mq;

import java.util.Objects;

/**
 * How a consumer group subscribes ({@code mq_group_options}). Start from {@link #builder()},
 * whose values are the library's defaults (start at the latest offset, no delivery limit, an
 * ordered group).
 */
public final class GroupOptions {
    final StartPosition start;
    final long maxDeliveries;
    final String deadLetterTopic;
    final ShareMode share;
    final long maxAcquired;

    private GroupOptions(Builder b) {
        this.start = b.start;
        this.maxDeliveries = b.maxDeliveries;
        this.deadLetterTopic = b.deadLetterTopic;
        this.share = b.share;
        this.maxAcquired = b.maxAcquired;
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
        private ShareMode share = shareOf(Defaults.SHARE);
        private long maxAcquired = Defaults.MAX_ACQUIRED;

        private Builder() {}

        private static ShareMode shareOf(int code) {
            for (ShareMode m : ShareMode.values()) {
                if (m.code == code) {
                    return m;
                }
            }
            return ShareMode.NONE;
        }

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

        /**
         * What kind of group (ABI 1.6): {@link ShareMode#NONE} (the default) an ordered group,
         * {@link ShareMode#ALL} a share group (a task queue: any number of consumers poll the
         * same partition, each message is acquired by one poll under its own lock and settled
         * on its own with {@link Broker#settle(String, String, int, long, long, SettleAction)
         * Broker.settle}), {@link ShareMode#KEY} a share group that keeps per-key order. In a
         * share group {@link Broker#ack} accepts one acquired message, {@link Broker#nack}
         * releases every message the group acquired on the partition and
         * {@link Broker#extendLease} renews all their locks. Push subscriptions and members
         * take partitions whole and refuse a share group ({@link MqInvalidArgumentException});
         * the Kafka backend refuses one ({@link MqUnsupportedException}).
         *
         * @since 1.6
         */
        public Builder share(ShareMode share) {
            this.share = Objects.requireNonNull(share, "share");
            return this;
        }

        /**
         * Share groups only (ABI 1.6): at most this many messages of one partition are acquired
         * at once; a poll that finds the limit reached waits until a message is settled or a
         * lock runs out. 0 (the default) is the library's 2000; at most 1,000,000. An ordered
         * group refuses any other value than 0 ({@link MqInvalidArgumentException}).
         *
         * @since 1.6
         */
        public Builder maxAcquired(long maxAcquired) {
            this.maxAcquired = maxAcquired;
            return this;
        }

        /** The options. */
        public GroupOptions build() {
            return new GroupOptions(this);
        }
    }
}
