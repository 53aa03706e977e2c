package org.mq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What each thread that calls into mq keeps between calls (one ThreadLocal lookup per call):
 * its waiter for interruptible waits, its poll buffer and view, a slot for out-parameters,
 * and, on a library thread, the subscription or member whose callback it is running.
 */
final class PerThread {
    private static final ThreadLocal<PerThread> CURRENT = ThreadLocal.withInitial(PerThread::new);

    private Waiter waiter;
    private NativePollBuffer pollBuffer;
    private ByteBuffer view;
    private ByteBuffer out;  // what goes in (a publish, a batch), read in place by the native side
    long outAddress;  // out's native address
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

    NativePollBuffer pollBuffer() {
        if (pollBuffer == null) {
            NativePollBuffer b = new NativePollBuffer();
            Resources.CLEANER.register(this, b::delete);
            pollBuffer = b;
        }
        return pollBuffer;
    }

    /** The thread's outgoing buffer, cleared, with room for {@code size} bytes. */
    ByteBuffer outBuffer(int size) {
        if (out == null || out.capacity() < size) {
            out = ByteBuffer.allocateDirect(Math.max(size, 16 * 1024)).order(ByteOrder.nativeOrder());
            outAddress = NativeBroker.addressOf(out);
        }
        out.clear();
        return out;
    }

    /** A view of the poll buffer holding at least {@code length} valid bytes. */
    ByteBuffer view(int length) {
        if (view == null || length > view.capacity()) {
            // The native storage moved to hold more: the old view is stale.
            view = pollBuffer.view().order(ByteOrder.nativeOrder());
        }
        return view;
    }
}
