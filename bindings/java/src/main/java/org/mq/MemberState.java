package org.mq;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A member's native handle and its gate, with which its blocked polls register (the C API has
 * no other way to wake a member's poll than its cancel token, and the handle must not be freed
 * under one). Holds nothing that reaches the public Member: it is the Member's Cleaner action,
 * and what a pending asynchronous poll of the member ({@link AsyncCall.Poll}) holds, so an
 * unreachable Member is cleaned (and its pending polls complete with MQ_CLOSED).
 */
final class MemberState implements Guarded, Runnable {
    final BrokerState broker;
    final String topic;
    final String group;
    final NativeMember nm = new NativeMember();
    final Gate gate = new Gate();
    private final Object closeLock = new Object();
    private final AtomicBoolean closeStarted = new AtomicBoolean();
    private volatile boolean closed;

    MemberState(BrokerState broker, String topic, String group) {
        this.broker = broker;
        this.topic = topic;
        this.group = group;
    }

    /** Enters the gate or throws: the member was closed. */
    @Override
    public void enter() {
        if (!gate.enter()) {
            throw new MqClosedException("the member has left its group (Member.close())", null);
        }
    }

    @Override
    public Gate gate() {
        return gate;
    }

    @Override
    public String closedWhileWaiting() {
        return "the member was closed while it polled";
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Leaves the group and releases the handle (idempotent). The native close completes the
     * member's pending asynchronous polls (MQ_CLOSED) and waits for their completions, which
     * run on the broker's completer thread: there (a completion, or a stage depending on one)
     * a close that another thread has begun is not waited for, as it may be waiting for this
     * very completion. A close begun there returns at once natively, and the handle goes when
     * the last pending poll has completed.
     */
    void close() {
        if (!closeStarted.compareAndSet(false, true) && AsyncCall.onCompleter()) {
            return;
        }
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            gate.closeAndWake();  // the polls inside return; the gate drains
            nm.close();
            closed = true;
            nm.delete();
        }
        broker.members.remove(this);
        broker.release();
    }

    /** After a failed join. */
    void abandon() {
        closeStarted.set(true);
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
