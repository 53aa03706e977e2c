package org.mq;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Keeps a native handle alive for the calls inside it: a call enters before it touches the
 * handle and leaves after; closing refuses new calls and waits for those inside, which the
 * native close has already woken. Counting with a LongAdder keeps the calls of different
 * threads off one contended cache line. A handle whose native close does not end the waits in
 * it (a member, a publisher, a cursor) registers them here, so that its close can end them
 * through their cancel tokens before it drains.
 */
final class Gate {
    private final LongAdder inside = new LongAdder();
    private final Set<Waiter> waiting = new HashSet<>();  // guarded by itself
    private volatile boolean closed;

    /** False once closed (the caller then reports the handle as closed). */
    boolean enter() {
        inside.increment();
        if (closed) {
            inside.decrement();
            return false;
        }
        return true;
    }

    void exit() {
        inside.decrement();
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Refuses new calls, then waits until no call is inside. The handle's native close must
     * come first: it wakes the calls that wait in the library, so the wait here is short.
     */
    void closeAndDrain() {
        shut();
        drain();
    }

    /**
     * Refuses new calls, ends the registered waits, then waits until no call is inside: the
     * handle's native close may come next.
     */
    void closeAndWake() {
        shut();
        synchronized (waiting) {
            for (Waiter w : waiting) {
                w.token.trigger();
            }
        }
        drain();
    }

    /** Registers a wait of a call inside, for {@link #closeAndWake()}. */
    void startWait(Waiter w) {
        synchronized (waiting) {
            waiting.add(w);
        }
        if (closed) {
            // The close's wake-up may have run before the add: end the wait here instead.
            w.token.trigger();
        }
    }

    /** After the wait returned: no close triggers w any more. */
    void endWait(Waiter w) {
        synchronized (waiting) {
            waiting.remove(w);
        }
    }

    /** Refuses new calls. */
    void shut() {
        closed = true;
    }

    /** Waits until no call is inside (after {@link #shut()} and waking those that wait). */
    void drain() {
        for (int spins = 0; inside.sum() != 0; spins++) {
            if (spins < 100) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(100_000);  // a woken call is leaving; look again soon
            }
        }
    }
}
