package org.mq;

import java.util.Arrays;
import java.util.Objects;

/**
 * How a push subscription runs ({@code mq_subscription_options}, plus where handler failures
 * go). Start from {@link #builder()}, whose values are the library's defaults (prefetch 10,
 * the group's members share all partitions).
 */
public final class SubscribeOptions {
    final int prefetch;
    final int[] partitions;
    final Thread.UncaughtExceptionHandler onHandlerError;

    private SubscribeOptions(Builder b) {
        this.prefetch = b.prefetch;
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
        private int[] partitions;
        private Thread.UncaughtExceptionHandler onHandlerError;

        private Builder() {}

        /** Messages per poll of each partition's loop, at least 1. */
        public Builder prefetch(int prefetch) {
            this.prefetch = prefetch;
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
