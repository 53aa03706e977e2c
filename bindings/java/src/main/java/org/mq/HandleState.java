package org.mq;

/**
 * A publisher's or cursor's gate and the release of its native handle. The C handle holds its
 * broker's memory, so it may outlive the broker (its calls then fail with MQ_CLOSED) and needs
 * no reference of BrokerState; what must not happen is its release under a call, which the gate
 * prevents: close ends the waits inside (their tokens), drains, then releases, once. Holds
 * nothing that reaches the public object, so it is that object's Cleaner action.
 */
final class HandleState implements Guarded, Runnable {
    private final Gate gate = new Gate();
    private final String closedText;
    private final String closedWhileWaiting;
    private final Runnable release;
    private boolean released;  // guarded by this

    /** {@code name}: "publisher" or "cursor"; {@code release} frees the native handle. */
    HandleState(String name, String closeCall, Runnable release) {
        this.closedText = "the " + name + " is closed (" + closeCall + ")";
        this.closedWhileWaiting = "the " + name + " was closed while a call on it waited";
        this.release = release;
    }

    @Override
    public void enter() {
        if (!gate.enter()) {
            throw new MqClosedException(closedText, null);
        }
    }

    @Override
    public Gate gate() {
        return gate;
    }

    @Override
    public String closedWhileWaiting() {
        return closedWhileWaiting;
    }

    boolean isClosed() {
        return gate.isClosed();
    }

    /** Idempotent; a second close waits for the first. */
    synchronized void close() {
        if (released) {
            return;
        }
        gate.closeAndWake();
        released = true;
        release.run();
    }

    /** The Cleaner's action: the public object became unreachable unclosed. */
    @Override
    public void run() {
        close();
    }
}
