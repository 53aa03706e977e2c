package org.mq;

import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Keeps a native handle alive for the calls inside it: a call enters before it touches the
 * handle and leaves after; closing refuses new calls and waits for those inside, which the
 * native close has already woken. Counting with a LongAdder keeps the calls of different
 * threads off one contended cache line.
 */
final class Gate {
    private final LongAdder inside = new LongAdder();
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
