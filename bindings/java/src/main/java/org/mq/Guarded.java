package org.mq;

/**
 * A native handle's gate as {@link Calls} and {@link PerThread#await} use it: the broker's (named
 * forms), a member's, a publisher's or a cursor's.
 */
interface Guarded {
    /** Enters the gate or throws the handle's "closed" error. */
    void enter();

    Gate gate();

    /**
     * Null when the handle's native close ends the waits in it (the broker's). Else the message of
     * the {@link MqClosedException} that a wait its close ended throws: such waits register with
     * the gate, whose {@link Gate#closeAndWake()} ends them.
     */
    default String closedWhileWaiting() {
        return null;
    }
}
