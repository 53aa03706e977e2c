package org.mq;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Broker} is made ({@code mq_broker_options}). Start from {@link #builder()},
 * whose values are the library's defaults; the library checks every value when the broker is
 * created.
 */
public final class BrokerOptions {
    final long maxMessageBytes;
    final long spinNanos;
    final ManualClock clock;

    private BrokerOptions(Builder b) {
        this.maxMessageBytes = b.maxMessageBytes;
        this.spinNanos = b.spinNanos;
        this.clock = b.clock;
    }

    /** The library's defaults. */
    public static BrokerOptions defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link BrokerOptions}. */
    public static final class Builder {
        private long maxMessageBytes = Defaults.MAX_MESSAGE_BYTES;
        private long spinNanos = Defaults.SPIN_NS;
        private ManualClock clock;

        private Builder() {}

        /** The largest key, value and headers accepted, in bytes (default 1 MiB, at most 1 GiB). */
        public Builder maxMessageBytes(long bytes) {
            this.maxMessageBytes = bytes;
            return this;
        }

        /**
         * The wait strategy of polls and push loops: before a poll with nothing to hand out
         * blocks, it spins up to this long watching for a publish (default zero: block at once).
         * Spinning shortens the wake-up at the price of a busy core.
         */
        public Builder spin(Duration spin) {
            this.spinNanos = Waits.nanos(spin, "spin");
            return this;
        }

        /** A manual clock for tests, instead of the system's monotonic clock. */
        public Builder clock(ManualClock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** The options. */
        public BrokerOptions build() {
            return new BrokerOptions(this);
        }
    }
}
