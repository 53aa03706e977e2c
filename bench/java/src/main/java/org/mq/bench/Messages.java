package org.mq.bench;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What every benchmark shares: 64-byte messages carrying their sequence number (checked on
 * arrival, so every run verifies count and order), and helper threads that run one side of a
 * transfer per invocation.
 */
final class Messages {
    /** Messages per benchmark invocation (JMH divides the time by it: ns per message). */
    static final int N = 1 << 16;
    static final int SIZE = 64;
    static final int BATCH = 64;
    static final int CAPACITY = 1024;

    private Messages() {}

    static void stamp(byte[] m, long seq) {
        for (int i = 0; i < 8; i++) {
            m[i] = (byte) (seq >>> (8 * i));
        }
    }

    static long seqOf(byte[] m) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (m[i] & 0xff);
        }
        return v;
    }

    /** Checks that m is the expected next message. */
    static void check(byte[] m, long expected) {
        if (m.length != SIZE || seqOf(m) != expected) {
            throw new IllegalStateException("expected message " + expected + ", got " + seqOf(m)
                    + " (" + m.length + " bytes)");
        }
    }

    static ExecutorService thread(String name) {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    static void join(Future<?> f) {
        try {
            f.get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
