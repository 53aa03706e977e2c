package org.mq;

/** A push subscription's native handle and its reference to the broker. */
final class SubscriptionState {
    final BrokerState broker;
    final String topic;
    final String group;
    final NativeSubscription ns = new NativeSubscription();
    private final Object closeLock = new Object();  // never taken by a handler
    private volatile boolean closed;

    SubscriptionState(BrokerState broker, String topic, String group) {
        this.broker = broker;
        this.topic = topic;
        this.group = group;
    }

    /** Stops the loops, waits for running handlers, releases the handle (idempotent). */
    void close() {
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            ns.close();  // waits for running handlers; MQ_ERR_DEADLOCK leaves it open
            closed = true;
            ns.delete();
        }
        broker.subscriptions.remove(this);
        broker.release();
    }

    /** After a failed open: the library released the sink; drop the rest. */
    void abandon() {
        synchronized (closeLock) {
            closed = true;
            ns.delete();
        }
        broker.subscriptions.remove(this);
        broker.release();
    }

    boolean isClosed() {
        return closed;
    }
}
