package org.mq;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Member} joins its group ({@code mq_member_options}). Start from
 * {@link #builder()}, whose values are the library's defaults (a generated id, a 10 s session
 * timeout, round-robin assignment, no listener).
 */
public final class MemberOptions {
    final String memberId;
    final long sessionTimeoutMs;
    final PartitionAssignor assignor;
    final RebalanceListener listener;
    final Thread.UncaughtExceptionHandler onCallbackError;

    private MemberOptions(Builder b) {
        this.memberId = b.memberId;
        this.sessionTimeoutMs = b.sessionTimeoutMs;
        this.assignor = b.assignor;
        this.listener = b.listener;
        this.onCallbackError = b.onCallbackError;
    }

    /** The library's defaults. */
    public static MemberOptions defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link MemberOptions}. */
    public static final class Builder {
        private String memberId;
        private long sessionTimeoutMs = Defaults.SESSION_TIMEOUT_MS;
        private PartitionAssignor assignor;
        private RebalanceListener listener;
        private Thread.UncaughtExceptionHandler onCallbackError;

        private Builder() {}

        /** The member's id (a legal name, unique in the group); default: generated. */
        public Builder memberId(String memberId) {
            this.memberId = memberId;
            return this;
        }

        /** A member that makes no call for this long is removed as if it had left. */
        public Builder sessionTimeout(Duration timeout) {
            this.sessionTimeoutMs = Waits.millis(timeout, "sessionTimeout");
            return this;
        }

        /**
         * The assignment strategy (default round-robin). The group uses the strategy of its
         * first member.
         */
        public Builder assignor(PartitionAssignor assignor) {
            this.assignor = Objects.requireNonNull(assignor, "assignor");
            return this;
        }

        /** Told after every rebalance of the group. */
        public Builder rebalanceListener(RebalanceListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Where an exception of the assignor or the listener goes (default: the thread's
         * uncaught-exception handler).
         */
        public Builder onCallbackError(Thread.UncaughtExceptionHandler handler) {
            this.onCallbackError = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** The options. */
        public MemberOptions build() {
            return new MemberOptions(this);
        }
    }
}
