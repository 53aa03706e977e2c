package org.mq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * What each thread that calls into mq keeps between calls (one ThreadLocal lookup per call):
 * its waiter for interruptible waits, its poll buffer, its buffer for publishes, a slot for out-parameters,
 * and, on a library thread, the subscription or member whose callback it is running.
 */
final class PerThread {
    /** A poll buffer's first size; it grows with the messages (to GROW_LIMIT for batches). */
    private static final int INITIAL_POLL = 64 * 1024;
    private static final int GROW_LIMIT = 16 * 1024 * 1024;
    private static final ThreadLocal<PerThread> CURRENT = ThreadLocal.withInitial(PerThread::new);

    private Waiter waiter;
    /** Where the copying polls of this thread write (layout 1): 8-byte aligned, direct. */
    private ByteBuffer poll;
    private long pollAddress;
    private int pollCap;
    private ByteBuffer out;  // what goes in (a publish, a batch), read in place by the native side
    long outAddress;  // out's native address
    int outUsed;  // the bytes of out the last encoded publish or batch takes
    final long[] longOut = new long[1];
    /** The subscription or member state whose callback runs on this thread, else null. */
    Object callbackOf;
    /** The push handler call running on this thread, else null. */
    PushSink.Call call;

    static PerThread get() {
        return CURRENT.get();
    }

    Waiter waiter() {
        if (waiter == null) {
            waiter = new Waiter();
        }
        return waiter;
    }

    /** After an interrupt closed the waiter. */
    void replaceWaiter() {
        waiter = new Waiter();
    }

    /** A native call that waits with a cancel token. */
    @FunctionalInterface
    interface Waiting {
        long call(NativeCancel token);
    }

    /**
     * Runs a call that waits with this thread's waiter's token, inside g's gate: an interrupt
     * ends it ({@link MqInterruptedException}, the flag left set), and so does the close of a
     * handle whose waits register ({@link Guarded#closedWhileWaiting()}).
     */
    long await(Guarded g, Waiting call) {
        Waiter w = waiter();
        String closedText = g.closedWhileWaiting();
        Gate gate = g.gate();
        if (closedText != null) {
            gate.startWait(w);
        }
        w.enter();
        try {
            return call.call(w.token);
        } catch (MqInterruptedException e) {
            if (closedText != null && gate.isClosed() && !Thread.currentThread().isInterrupted()) {
                throw new MqClosedException(closedText, null);
            }
            throw e;
        } finally {
            if (closedText != null) {
                gate.endWait(w);
            }
            if (w.exit()) {
                replaceWaiter();
            } else if (closedText != null && w.token.triggered()) {
                w.token.reset();  // triggered by the close, not by an interrupt
            }
        }
    }

    /** One copying poll into the thread's buffer: how many it copied, or minus the room needed. */
    @FunctionalInterface
    interface CopyPoll {
        long poll(long address, long cap, int max);
    }

    /** Runs a copying poll into the thread's buffer (made on the first poll). */
    long poll(CopyPoll call, int max) {
        if (poll == null) {
            growPoll(INITIAL_POLL);
        }
        return call.poll(pollAddress, pollCap, max);
    }

    /**
     * The messages of a copying poll that returned n. When the first message did not fit (n
     * negative), the buffer grows to hold it and {@code again} (the same poll without waiting,
     * and without an ack) runs; when a poll ends short of max in a buffer more than half
     * full, the buffer may be what ended it: it doubles and the poll goes on. Either way the
     * buffer keeps its size, so later polls need neither.
     */
    List<Message> copied(long n, int max, String topic, CopyPoll again) {
        List<Message> got = List.of();
        int want = max;
        for (;;) {
            while (n < 0) {
                growPoll(-n);
                n = again.poll(pollAddress, pollCap, want);
            }
            if (n == 0) {
                return got;
            }
            int count = (int) n;
            List<Message> more = Wire.read(poll, count, topic);
            got = got.isEmpty() ? more : Wire.concat(got, more);
            want -= count;
            if (want <= 0 || pollCap >= GROW_LIMIT || Wire.used(poll, count, pollCap) <= pollCap / 2) {
                return got;
            }
            growPoll(2L * pollCap);
            n = again.poll(pollAddress, pollCap, want);
        }
    }

    private void growPoll(long needed) {
        long cap = Math.max((needed + 7) & ~7L, 2L * pollCap);
        if (cap > Integer.MAX_VALUE - 16) {
            if (needed > Integer.MAX_VALUE - 16) {
                throw new MqTooLargeException("a message needs " + needed
                        + " bytes to be copied out, more than one buffer holds");
            }
            cap = (needed + 7) & ~7L;
        }
        // The copying poll wants 8-byte alignment, which allocateDirect does not promise.
        ByteBuffer b = ByteBuffer.allocateDirect((int) cap + 8).alignedSlice(8).order(ByteOrder.nativeOrder());
        poll = b;
        pollAddress = NativeBroker.addressOf(b);
        pollCap = (int) cap;
    }

    /** The thread's outgoing buffer, cleared, with room for {@code size} bytes. */
    ByteBuffer outBuffer(int size) {
        if (out == null || out.capacity() < size) {
            // The C structs written there want 8-byte alignment, which allocateDirect does not promise.
            out = ByteBuffer.allocateDirect(Math.max(size, 16 * 1024) + 8).alignedSlice(8)
                    .order(ByteOrder.nativeOrder());
            outAddress = NativeBroker.addressOf(out);
        }
        out.clear();
        outUsed = size;
        return out;
    }
}
