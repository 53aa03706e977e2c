package org.mq;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Objects;

/** Java's durations in the C API's milliseconds. */
final class Waits {
    static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();
    /** The C API's largest duration (mq.h, "the duration rule"). */
    static final long MAX_DURATION_MS = 1L << 40;

    private Waits() {}

    /**
     * A wait: {@link #FOREVER} is the C API's -1, {@link Duration#ZERO} its 0 (do not block); a
     * wait of less than a millisecond rounds up, so a positive wait waits. A wait longer than
     * the library's limit for durations (2^40 ms, about 34 years) waits without limit, as in
     * the Go and Rust bindings: no process outlives it, and the library refuses the number.
     * Negative waits have no C spelling (-1 means forever there) and are refused here.
     */
    static long waitMillis(Duration wait) {
        Objects.requireNonNull(wait, "wait (use Duration.ZERO not to wait, Broker.FOREVER to wait without limit)");
        if (wait.equals(FOREVER)) {
            return -1;
        }
        if (wait.isNegative()) {
            throw new MqInvalidArgumentException("wait is negative (" + wait + "); use Duration.ZERO"
                    + " not to wait or Broker.FOREVER to wait without limit");
        }
        long ms = ceilMillis(wait);
        return ms > MAX_DURATION_MS ? -1 : ms;
    }

    /** A length of time (lease, age, delay, timeout): whole milliseconds, saturated; the library checks the range. */
    static long millis(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative()) {
            try {
                return d.toMillis();
            } catch (ArithmeticException e) {
                return Long.MIN_VALUE;
            }
        }
        return ceilMillis(d);
    }

    private static long ceilMillis(Duration d) {
        try {
            long ms = d.toMillis();
            return d.minusMillis(ms).isZero() ? ms : ms + 1;
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;  // beyond the library's limit: it refuses with its message
        }
    }

    /** Nanoseconds, saturated. */
    static long nanos(Duration d, String what) {
        Objects.requireNonNull(d, what);
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }
}
