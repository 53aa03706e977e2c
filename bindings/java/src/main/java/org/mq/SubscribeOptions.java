package org.mq;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

/**
 * How a push subscription runs ({@code mq_subscription_options}, plus where handler failures
 * go). Start from {@link #builder()}, whose values are the library's defaults (prefetch 10,
 * the group's members share all partitions, session timeout 10 s).
 */
public final class SubscribeOptions {
    final int prefetch;
    final long sessionTimeoutMs;
    final int[] partitions;
    final Thread.UncaughtExceptionHandler onHandlerError;

    private SubscribeOptions(Builder b) {
        this.prefetch = b.prefetch;
        this.sessionTimeoutMs = b.sessionTimeoutMs;
        this.partitions = b.partitions;
        this.onHandlerError = b.onHandlerError;
    }

    /** The library's defaults. */
    public static SubscribeOptions defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link SubscribeOptions}. */
    public static final class Builder {
        private int prefetch = Defaults.PREFETCH;
        private long sessionTimeoutMs = Defaults.SUBSCRIPTION_SESSION_TIMEOUT_MS;
        private int[] partitions;
        private Thread.UncaughtExceptionHandler onHandlerError;

        private Builder() {}

        /** Messages per poll of each partition's loop, at least 1. */
        public Builder prefetch(int prefetch) {
            this.prefetch = prefetch;
            return this;
        }

        /**
         * Since ABI 1.3 ({@code mq_subscription_options.session_timeout_ms}): the session
         * timeout of the group member that a subscription without a partition list is, as
         * {@link MemberOptions.Builder#sessionTimeout(Duration)}; default 10 s, at most 2^40 ms
         * (below a millisecond rounds up to one).
         *
         * <p>On a Kafka cluster (see {@link BrokerOptions.Builder#kafkaBootstrap(String)}) it is
         * the consumer's {@code session.timeout.ms}: how long the partitions of a process that
         * crashed stay with its subscription before the group moves them to the others (plan for
         * this plus a few seconds; the cluster's {@code group.min.session.timeout.ms} and
         * {@code group.max.session.timeout.ms} bound it). In-process the subscription's place in
         * its group lasts exactly as long as the subscription (a crash ends the whole log with
         * it), so the value is only checked.
         *
         * <p>The value is checked when the subscription opens: {@link Broker#subscribe(String,
         * String, MessageHandler, SubscribeOptions)} throws {@link MqInvalidArgumentException}
         * for zero, a negative duration or more than 2^40 ms.
         */
        public Builder sessionTimeout(Duration timeout) {
            this.sessionTimeoutMs = Waits.millis(timeout, "sessionTimeout");
            return this;
        }

        /**
         * Claims exactly these partitions (no other subscription of the group may own them).
         * Without a list the subscription is a member of its group and owns what the group
         * assigns it.
         */
        public Builder partitions(int... partitions) {
            this.partitions = Arrays.copyOf(Objects.requireNonNull(partitions, "partitions"), partitions.length);
            return this;
        }

        /**
         * Where a handler's exception goes (the message is nacked either way). The default is
         * the handler thread's {@link Thread#getUncaughtExceptionHandler() uncaught-exception
         * handler}, which ends in {@link Thread#getDefaultUncaughtExceptionHandler()} or, without
         * one, a stack trace on {@code System.err}. It receives a {@link HandlerException}
         * naming the message, caused by what the handler threw.
         */
        public Builder onHandlerError(Thread.UncaughtExceptionHandler onHandlerError) {
            this.onHandlerError = Objects.requireNonNull(onHandlerError, "onHandlerError");
            return this;
        }

        /** The options. */
        public SubscribeOptions build() {
            return new SubscribeOptions(this);
        }
    }
}
