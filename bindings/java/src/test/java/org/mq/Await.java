package org.mq;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Waiting for something another thread does: a condition polled up to a deadline, never a fixed sleep. */
final class Await {
    private Await() {}

    static void until(String what, BooleanSupplier condition) {
        until(what, 10_000, condition);
    }

    static void until(String what, long timeoutMs, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(1);  // the interval between looks, not a synchronisation
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted while waiting for " + what);
            }
        }
    }

    static <T> T value(String what, Supplier<T> get, java.util.function.Predicate<T> ok) {
        Object[] last = new Object[1];
        until(what, () -> {
            T v = get.get();
            last[0] = v;
            return ok.test(v);
        });
        @SuppressWarnings("unchecked")
        T v = (T) last[0];
        return v;
    }
}
