package org.mq;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The native broker and what keeps it alive: a gate for the calls inside it, and a count of
 * references (the Broker's own, and one per open subscription and member). The native broker
 * goes when the last reference does, so no order of closing (or collection) frees it under a
 * call, a subscription or a member. Holds nothing that reaches the public Broker, so it can be
 * the Broker's Cleaner action.
 */
final class BrokerState implements Guarded, Runnable {
    final NativeBroker nb;
    final Gate gate = new Gate();
    final Set<SubscriptionState> subscriptions = ConcurrentHashMap.newKeySet();
    final Set<MemberState> members = ConcurrentHashMap.newKeySet();
    private final AtomicInteger refs = new AtomicInteger(1);
    private final Object closeLock = new Object();
    private boolean closing;  // guarded by closeLock
    private boolean closed;  // guarded by closeLock

    BrokerState(NativeBroker nb) {
        this.nb = nb;
    }

    /** Enters the gate or throws: the broker was closed with {@link Broker#close()}. */
    @Override
    public void enter() {
        if (!gate.enter()) {
            throw closed();
        }
    }

    @Override
    public Gate gate() {
        return gate;
    }

    static MqClosedException closed() {
        return new MqClosedException("the broker is closed (Broker.close() released it)", null);
    }

    /** One more reference (a subscription or member opened); only from inside the gate. */
    void retain() {
        refs.incrementAndGet();
    }

    void release() {
        if (refs.decrementAndGet() == 0) {
            nb.delete();
        }
    }

    /**
     * Closes the broker and everything made from it, then drops the Broker's reference. From a
     * callback of this broker (a handler, listener or assignor, which the release would have
     * to wait for) the native close happens at once and the rest on a thread of its own.
     */
    void close() {
        boolean inCallback = PerThread.get().callbackOf != null;
        synchronized (closeLock) {
            if (closing) {
                awaitClosed(inCallback);
                return;
            }
            closing = true;
        }
        nb.close();  // wakes every waiting call with MQ_CLOSED; handlers stop being called
        if (inCallback) {
            Thread t = new Thread(this::finishClose, "mq-broker-close");
            t.setDaemon(true);
            t.start();
        } else {
            finishClose();
        }
    }

    private void finishClose() {
        try {
            gate.closeAndDrain();
            // After the drain nothing new can open: these are all there will be.
            for (SubscriptionState s : subscriptions) {
                s.close();
            }
            for (MemberState m : members) {
                m.close();
            }
            release();
        } finally {
            synchronized (closeLock) {
                closed = true;
                closeLock.notifyAll();
            }
        }
    }

    private void awaitClosed(boolean inCallback) {
        if (inCallback) {
            return;  // the close in progress may be waiting for this very callback
        }
        boolean interrupted = false;
        while (!closed) {
            try {
                closeLock.wait();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The Cleaner's action: a Broker that became unreachable without close(). */
    @Override
    public void run() {
        close();
    }
}
