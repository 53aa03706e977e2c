package org.mq;

import java.time.Duration;

/**
 * A broker clock that moves only when told, for tests (give it to
 * {@link BrokerOptions.Builder#clock}). It lives in native memory: the library reads it with
 * partition locks held, so it never calls into Java. Thread-safe.
 */
public final class ManualClock {
    final NativeClock clock;

    private ManualClock(long startNanos) {
        NativeClock c = new NativeClock(startNanos);
        Resources.CLEANER.register(this, c::delete);  // brokers keep their own reference
        this.clock = c;
    }

    /** A clock reading {@code startNanos}. */
    public static ManualClock startingAt(long startNanos) {
        return new ManualClock(startNanos);
    }

    /** The current reading, in nanoseconds. */
    public long nanos() {
        return clock.now();
    }

    /** Sets the reading (a monotonic clock should not go back). */
    public void set(long nanos) {
        clock.set(nanos);
    }

    /** Moves the clock forward. */
    public void advance(Duration d) {
        clock.advance(Waits.nanos(d, "d"));
    }
}
