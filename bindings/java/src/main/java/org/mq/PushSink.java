package org.mq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;

/**
 * The Java end of a push subscription's handler calls (a SWIG director): decodes the message,
 * runs the user's handler and turns its outcome into ack (0) or nack (1). Nothing it meets
 * escapes into the library thread: exceptions go to the error hook, and a hook that throws
 * is ignored.
 */
final class PushSink extends NativeMessageSink {
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final SubscriptionState state;
    private final MessageHandler handler;
    private final Thread.UncaughtExceptionHandler hook;
    // Strong: the library's reference to this sink keeps the Subscription, and through it the
    // Broker, reachable while the subscription runs (as a running thread keeps its objects).
    Subscription owner;

    PushSink(SubscriptionState state, MessageHandler handler, Thread.UncaughtExceptionHandler hook) {
        this.state = state;
        this.handler = handler;
        this.hook = hook;
    }

    @Override
    public int deliver(ByteBuffer buffer, int length) {
        Call call = null;
        PerThread pt = null;
        Message m = null;
        try {
            pt = PerThread.get();
            pt.callbackOf = state;  // a loop thread serves this subscription all its life
            if (buffer.order() != NATIVE) {
                buffer.order(NATIVE);  // the same buffer object comes back while it fits
            }
            m = Wire.readOne(buffer, 0, state.topic);
            call = new Call();
            pt.call = call;
            handler.handle(m, call);
            return call.nack ? 1 : 0;
        } catch (Throwable t) {
            report(m, t);
            return 1;
        } finally {
            if (pt != null) {
                pt.call = null;
            }
        }
    }

    private void report(Message m, Throwable t) {
        try {
            Thread self = Thread.currentThread();
            HandlerException e = new HandlerException(state.topic, state.group,
                    m == null ? -1 : m.partition(), m == null ? -1 : m.offset(), t);
            (hook != null ? hook : self.getUncaughtExceptionHandler()).uncaughtException(self, e);
        } catch (Throwable ignored) {
            // The hook failed too; the message is nacked all the same.
        }
    }

    /** One handler call's context. */
    static final class Call implements HandlerContext {
        boolean nack;

        @Override
        public void extendLease() {
            NativeSubscription.extendLease();
        }

        @Override
        public void nackDelay(Duration delay) {
            NativeSubscription.setNackDelay(Waits.millis(delay, "delay"));
        }

        @Override
        public void nack() {
            nack = true;
        }
    }
}
