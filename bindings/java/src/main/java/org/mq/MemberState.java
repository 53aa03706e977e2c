package org.mq;

import java.util.HashSet;
import java.util.Set;

/**
 * A member's native handle, its gate, and the waiters of its blocked polls (the C API has no
 * other way to wake a member's poll than its cancel token, and the handle must not be freed
 * under one). Holds nothing that reaches the public Member: it is the Member's Cleaner action.
 */
final class MemberState implements Runnable {
    final BrokerState broker;
    final String topic;
    final String group;
    final NativeMember nm = new NativeMember();
    final Gate gate = new Gate();
    private final Set<Waiter> waiting = new HashSet<>();  // guarded by itself
    private final Object closeLock = new Object();
    private volatile boolean closed;

    MemberState(BrokerState broker, String topic, String group) {
        this.broker = broker;
        this.topic = topic;
        this.group = group;
    }

    void startWait(Waiter w) {
        synchronized (waiting) {
            waiting.add(w);
        }
    }

    /** After the poll returned: no close can trigger w any more, and its token is clean. */
    void endWait(Waiter w) {
        synchronized (waiting) {
            waiting.remove(w);
        }
    }

    boolean isClosed() {
        return closed;
    }

    /** Leaves the group and releases the handle (idempotent). */
    void close() {
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            gate.shut();
            synchronized (waiting) {
                for (Waiter w : waiting) {
                    w.token.trigger();  // the polls inside return; the gate drains
                }
            }
            gate.drain();
            nm.close();
            closed = true;
            nm.delete();
        }
        broker.members.remove(this);
        broker.release();
    }

    /** After a failed join. */
    void abandon() {
        synchronized (closeLock) {
            closed = true;
            gate.shut();
            nm.delete();
        }
        broker.members.remove(this);
        broker.release();
    }

    /** The Cleaner's action: a Member that became unreachable while joined. */
    @Override
    public void run() {
        close();
    }
}
