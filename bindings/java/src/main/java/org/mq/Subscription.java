package org.mq;

import java.time.Duration;

/**
 * A push subscription: library threads (one per owned partition) poll, call the
 * {@link MessageHandler} for each message in order, and ack it. Made by
 * {@link Broker#subscribe}. It keeps running until closed, and keeps its broker from being
 * collected meanwhile.
 */
public final class Subscription implements AutoCloseable {
    // Outside a handler: the library refuses the calls it checks; nack has nothing to nack.
    private static final HandlerContext OUTSIDE = new HandlerContext() {
        @Override
        public void extendLease() {
            NativeSubscription.extendLease();
        }

        @Override
        public void nackDelay(Duration delay) {
            NativeSubscription.setNackDelay(Waits.millis(delay, "delay"));
        }

        @Override
        public void nack() {}
    };

    private final Broker broker;  // reachable from the handler's thread: the broker stays too
    private final SubscriptionState state;

    Subscription(Broker broker, SubscriptionState state) {
        this.broker = broker;
        this.state = state;
    }

    /** The subscription's topic. */
    public String topic() {
        return state.topic;
    }

    /** The subscription's group. */
    public String group() {
        return state.group;
    }

    /** Whether {@link #close()} has completed (or the broker closed it). */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Stops the loops, waits until no handler of this subscription is running, and releases it
     * (what a handler had not finished is delivered again). Idempotent.
     *
     * @throws MqDeadlockException from one of this subscription's own handlers (which close
     *     would wait for); nothing happens then: close it from another thread
     */
    @Override
    public void close() {
        if (PerThread.get().callbackOf == state) {
            throw new MqDeadlockException("Subscription.close() was called from inside its own handler,"
                    + " which it would wait for; nothing happened. Close it from another thread"
                    + " (for example after the handler signals one).");
        }
        state.close();
    }

    static HandlerContext currentContext() {
        PushSink.Call call = PerThread.get().call;
        return call != null ? call : OUTSIDE;
    }

    /** The broker it was made from. */
    public Broker broker() {
        return broker;
    }

    @Override
    public String toString() {
        return "Subscription[" + state.group + "@" + state.topic + (isClosed() ? ", closed]" : "]");
    }
}
