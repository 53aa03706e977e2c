package org.mq;

import java.time.Duration;

/**
 * What a push handler can do about the message it is handling. Valid during that handler call,
 * on its thread only: called elsewhere, the library refuses with
 * {@link MqInvalidArgumentException}.
 */
public interface HandlerContext {
    /**
     * Restarts the lease of the messages this handler's loop holds ("still working on it"),
     * for work that outlives the ack timeout.
     */
    void extendLease();

    /** If this call then nacks (by {@link #nack()} or by throwing), redeliver no sooner than after {@code delay}. */
    void nackDelay(Duration delay);

    /** Nacks the message when the handler returns, without an exception to report. */
    void nack();

    /**
     * The context of the handler running on the calling thread, for code that does not have the
     * parameter at hand. Outside a handler its {@link #extendLease()} and {@link #nackDelay}
     * throw {@link MqInvalidArgumentException} (the library's check) and {@link #nack()} does
     * nothing.
     */
    static HandlerContext current() {
        return Subscription.currentContext();
    }
}
