package org.mq;

import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.spi.AbstractInterruptibleChannel;

/**
 * Makes a native wait end on {@link Thread#interrupt()}: the JDK's own mechanism for blocking
 * I/O. While a call waits, the thread is "blocked on" this channel; an interrupt closes it,
 * which triggers the call's cancel token, and the library returns {@code MQ_CANCELLED} at
 * once. The interrupt flag stays set. A closed channel cannot be reopened, so the thread then
 * gets a new waiter (and token) for its next call.
 */
final class Waiter extends AbstractInterruptibleChannel {
    final NativeCancel token;

    Waiter() {
        this.token = new NativeCancel();
        NativeToken.clean(this, token);
    }

    /** Marks the thread as waiting here; an interrupt from now on cancels the call. */
    void enter() {
        begin();
    }

    /** Ends the wait. True if an interrupt closed this waiter (the thread needs a new one). */
    boolean exit() {
        try {
            end(true);
        } catch (AsynchronousCloseException e) {
            // ClosedByInterruptException: the interrupt flag is still set for the caller.
        }
        return !isOpen();
    }

    @Override
    protected void implCloseChannel() {
        token.trigger();
    }

    /** Frees native tokens when their waiter is unreachable. */
    static final class NativeToken implements Runnable {
        private final NativeCancel token;

        private NativeToken(NativeCancel token) {
            this.token = token;
        }

        static void clean(Object owner, NativeCancel token) {
            Resources.CLEANER.register(owner, new NativeToken(token));
        }

        @Override
        public void run() {
            token.delete();
        }
    }
}
