package org.mq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One asynchronous call (ABI 1.4's {@code *_async}) as the {@link CompletableFuture} the
 * caller gets. No thread waits for it: the native side keeps a global reference to this object
 * while the C call is pending and calls {@link #finish} once, on the calling thread when the
 * call did not have to wait, else on the broker's completer thread. The call's own cancel token
 * lives here until then.
 *
 * <p>Completing the future from outside ({@link #cancel}, {@link #complete},
 * {@link #completeExceptionally}, {@link #orTimeout}) triggers the token, so the native call
 * ends at once and its buffers are freed; what it reports then is dropped.
 *
 * <p>Holds the {@link BrokerState} (and a member's poll the {@link MemberState}), never the
 * {@link Broker} or {@link Member}: a pending call does not keep an unreachable Broker or Member
 * from being cleaned (which closes it and so completes the call with {@link MqClosedException}).
 */
abstract class AsyncCall<T> extends CompletableFuture<T> {
    final BrokerState state;
    private final Object tokenLock = new Object();
    private NativeCancel token;  // guarded by tokenLock; null once the native call has finished
    private boolean started;  // guarded by tokenLock: the native call was started (finish will come)
    // A call that ended on the calling thread: its outcome, completed once the call has left
    // the broker's gate (a dependent stage may close the broker, which drains the gate).
    private boolean ended;
    private T endValue;
    private Throwable endFailure;
    /** Whether the calling thread runs a completion (on some broker's completer thread). */
    private static final ThreadLocal<boolean[]> COMPLETING = ThreadLocal.withInitial(() -> new boolean[1]);
    /** How long an outside completion waits for the library to end the call. */
    private static final long END_WAIT_NANOS = 1_000_000_000L;

    AsyncCall(BrokerState state) {
        this.state = state;
    }

    /** Starts the native call (it calls {@link #finish} when it ends); failures throw. */
    abstract void begin(long waitMillis, NativeCancel token);

    /**
     * Enters the gate of the handle the call uses (the broker's; a member's poll the member's),
     * or throws {@link MqClosedException}: the handle stays while the call is inside.
     */
    void enter() {
        state.enter();
    }

    /** Leaves the gate {@link #enter()} entered. */
    void exit() {
        state.gate.exit();
    }

    /** Whether this thread runs a completion of an asynchronous call (on a completer thread). */
    static boolean onCompleter() {
        return COMPLETING.get()[0];
    }

    /** The value for what the native call reported, or the failure thrown. */
    abstract T result(int status, long a, long b, ByteBuffer buffer, String error);

    /** Starts the call; every failure completes the returned future (this) exceptionally. */
    final CompletableFuture<T> start(java.time.Duration wait) {
        try {
            long ms = Waits.waitMillis(wait);
            NativeCancel t = new NativeCancel();
            synchronized (tokenLock) {
                token = t;
            }
            enter();
            try {
                synchronized (tokenLock) {
                    started = true;
                }
                begin(ms, t);
            } finally {
                exit();
            }
            if (ended) {
                if (endFailure != null) {
                    super.completeExceptionally(endFailure);
                } else {
                    super.complete(endValue);
                }
            }
        } catch (RuntimeException | Error e) {
            // The native call did not start (it throws only before it does).
            synchronized (tokenLock) {
                started = false;
            }
            releaseToken();
            super.completeExceptionally(e);
        }
        return this;
    }

    /**
     * Called by the native side exactly once with the call's outcome: the C status, two
     * numbers (poll: count and needed; publish: partition and offset; batch: published and
     * whether the results were written), a direct buffer over native memory valid during this
     * call only (the copied messages, the batch's results), and the library's detail message.
     * Nothing escapes into C.
     */
    final void finish(int status, long a, long b, ByteBuffer buffer, byte[] error, boolean onCompleter) {
        try {
            releaseToken();
            if (!onCompleter) {
                // On the calling thread, inside start(): completed there, after the gate.
                try {
                    endValue = result(status, a, b, buffer == null ? null : buffer.order(ByteOrder.nativeOrder()),
                            error == null ? "" : MqException.fromNative(error));
                } catch (Throwable e) {
                    endFailure = e;
                }
                ended = true;
                return;
            }
            PerThread pt = null;
            Object previous = null;
            boolean[] completing = null;
            if (onCompleter) {
                completing = COMPLETING.get();
                completing[0] = true;
                // Code run from here (dependent stages) is inside a callback of the broker:
                // Broker.close() then does not wait for this very callback.
                pt = PerThread.get();
                previous = pt.callbackOf;
                pt.callbackOf = state;
            }
            try {
                T value;
                try {
                    value = result(status, a, b, buffer == null ? null : buffer.order(ByteOrder.nativeOrder()),
                            error == null ? "" : MqException.fromNative(error));
                } catch (Throwable e) {
                    super.completeExceptionally(e);
                    return;
                }
                super.complete(value);
            } finally {
                if (pt != null) {
                    pt.callbackOf = previous;
                    completing[0] = false;
                }
            }
        } catch (Throwable e) {
            // Never into C (the completer thread goes back into the library from here).
        }
    }

    /**
     * Triggers the token of a call still running in the library and waits (up to a second) for
     * the library to end it, so that nothing published after this returns can go to it. Not on
     * a completer thread, which may be the one that must end the call: there it only triggers.
     */
    private void trigger() {
        boolean wait = !COMPLETING.get()[0];
        synchronized (tokenLock) {
            if (token == null) {
                return;
            }
            token.trigger();
            if (!wait || !started) {
                return;
            }
            long deadline = System.nanoTime() + END_WAIT_NANOS;
            boolean interrupted = false;
            for (long left = END_WAIT_NANOS; token != null && left > 0; left = deadline - System.nanoTime()) {
                try {
                    java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(tokenLock, left);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void releaseToken() {
        NativeCancel t;
        synchronized (tokenLock) {
            t = token;
            token = null;
            tokenLock.notifyAll();
        }
        if (t != null) {
            t.delete();
        }
    }

    /**
     * Cancels the call: completes this future with a
     * {@link java.util.concurrent.CancellationException}, triggers the call's cancel token, and
     * returns once the library has ended the call (microseconds; at most a second when the
     * completer thread is held up, and without that wait on a completer thread), so nothing
     * published after this returns goes to it. If the call had already taken messages or
     * appended the message when the cancel reached it, that result is dropped (polled messages
     * are redelivered when their lease runs out, as for any lost poll).
     * Returns false if the call had completed first.
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean cancelled = super.cancel(mayInterruptIfRunning);  // first: the result is the cancellation
        trigger();
        return cancelled;
    }

    /** Completes the future with value (if not done) and ends the native call (its result is dropped). */
    @Override
    public boolean complete(T value) {
        boolean completed = super.complete(value);
        trigger();
        return completed;
    }

    /** Completes the future with ex (if not done) and ends the native call (its result is dropped). */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean completed = super.completeExceptionally(ex);
        trigger();
        return completed;
    }

    @Override
    public String toString() {
        return "mq " + super.toString();
    }

    // ---- the calls ---------------------------------------------------------------------------

    /** The copy buffer of an asynchronous poll of max messages: room for small messages. */
    static int pollCap(int max) {
        long cap = Wire.COPY_HEADER + (long) Math.max(max, 1) * (Wire.COPIED_MESSAGE + 256);
        return (int) ((Math.min(Math.max(cap, 1024), 64 * 1024) + 7) & ~7L);
    }

    /**
     * pollAsync and ackPollAsync of a group (mq_group_(ack_)poll_copy_async) or of a member
     * (Member's: mq_member_(ack_)poll_copy_async, inside the member's gate).
     */
    static final class Poll extends AsyncCall<List<Message>> {
        private final MemberState member;  // a member's poll, else null (the group's)
        private final String topic;
        private final String group;
        private final int partition;
        private final boolean ack;
        private final long offset;
        private final int max;
        private final int cap;

        /** The group's poll of one partition. */
        Poll(BrokerState state, String topic, String group, int partition, boolean ack, long offset, int max) {
            this(state, null, topic, group, partition, ack, offset, max);
        }

        /** A member's poll of its partitions (partition and offset: the ack's, with ack). */
        Poll(MemberState member, boolean ack, int partition, long offset, int max) {
            this(member.broker, member, member.topic, member.group, partition, ack, offset, max);
        }

        private Poll(BrokerState state, MemberState member, String topic, String group, int partition, boolean ack,
                long offset, int max) {
            super(state);
            this.member = member;
            this.topic = topic;
            this.group = group;
            this.partition = partition;
            this.ack = ack;
            this.offset = offset;
            this.max = max;
            this.cap = pollCap(max);
        }

        @Override
        void enter() {
            if (member == null) {
                super.enter();
            } else {
                member.enter();
            }
        }

        @Override
        void exit() {
            if (member == null) {
                super.exit();
            } else {
                member.gate.exit();
            }
        }

        @Override
        void begin(long waitMillis, NativeCancel token) {
            if (member == null) {
                state.nb.pollAsync(topic, group, partition, ack, offset, cap, max, waitMillis, token, this);
            } else {
                member.nm.pollAsync(ack, partition, offset, cap, max, waitMillis, token, this);
            }
        }

        @Override
        List<Message> result(int status, long count, long needed, ByteBuffer buffer, String error) {
            if (status == Status.OK.code()) {
                return count == 0 ? List.of() : Wire.read(buffer, (int) count, topic);
            }
            if (status == Status.TIMEOUT.code()) {
                return List.of();  // as the blocking poll: the wait ended with nothing
            }
            if (status == Status.TOO_LARGE.code() && needed > cap) {
                // The first message does not fit (nothing was handed out): take it now, without
                // waiting, through the blocking path's growing buffer (the ack, if any, is made).
                // (A member's poll looks at its partitions again from the next one.)
                enter();
                try {
                    PerThread.CopyPoll again = member == null
                            ? (buf, c, m) -> state.nb.pollCopy(topic, group, partition, buf, c, m, 0, null)
                            : (buf, c, m) -> member.nm.pollCopy(buf, c, m, 0, null);
                    return PerThread.get().copied(-needed, max, topic, again);
                } finally {
                    exit();
                }
            }
            throw MqException.create(status, error);
        }
    }

    /** publishAsync: mq_topic_publish_async of the record encoded in the thread's buffer (copied natively). */
    static final class Publish extends AsyncCall<PublishResult> {
        private final String topic;
        private final byte[] key;
        private final byte[] value;
        private final List<Header> headers;

        Publish(BrokerState state, String topic, byte[] key, byte[] value, List<Header> headers) {
            super(state);
            this.topic = topic;
            this.key = key;
            this.value = value;
            this.headers = headers;
        }

        @Override
        void begin(long waitMillis, NativeCancel token) {
            java.util.Objects.requireNonNull(headers, "headers");
            PerThread pt = PerThread.get();
            Wire.encodePublish(key, value, headers, pt);
            state.nb.publishAsync(topic, pt.outAddress, pt.outUsed, 1, false, waitMillis, token, this);
        }

        @Override
        PublishResult result(int status, long partition, long offset, ByteBuffer buffer, String error) {
            if (status == Status.OK.code()) {
                return new PublishResult((int) partition, offset);
            }
            throw MqException.create(status, error);
        }
    }

    /**
     * publishDelayedAsync: mq_topic_publish_batch_async of a batch of one (ABI 1.5: the single
     * publish has no delay), completing as a single publish does.
     */
    static final class DelayedPublish extends AsyncCall<PublishResult> {
        private final String topic;
        private final byte[] key;
        private final byte[] value;
        private final List<Header> headers;
        private final java.time.Duration delay;

        DelayedPublish(BrokerState state, String topic, byte[] key, byte[] value, List<Header> headers,
                java.time.Duration delay) {
            super(state);
            this.topic = topic;
            this.key = key;
            this.value = value;
            this.headers = headers;
            this.delay = delay;
        }

        @Override
        void begin(long waitMillis, NativeCancel token) {
            PublishRecord record = new PublishRecord(key, value, headers, delay);
            PerThread pt = PerThread.get();
            Wire.encodeBatch(List.of(record), pt);
            state.nb.publishAsync(topic, pt.outAddress, pt.outUsed, 1, true, waitMillis, token, this);
        }

        @Override
        PublishResult result(int status, long published, long written, ByteBuffer buffer, String error) {
            if (status == Status.OK.code()) {
                return new PublishResult(buffer.getInt(0), buffer.getLong(8));
            }
            throw MqException.create(status, error);
        }
    }

    /** publishBatchAsync: mq_topic_publish_batch_async of the records (copied natively). */
    static final class Batch extends AsyncCall<BatchResult> {
        private final String topic;
        private final List<PublishRecord> records;

        Batch(BrokerState state, String topic, List<PublishRecord> records) {
            super(state);
            this.topic = topic;
            this.records = records;
        }

        @Override
        void begin(long waitMillis, NativeCancel token) {
            java.util.Objects.requireNonNull(records, "records");
            PerThread pt = PerThread.get();
            Wire.encodeBatch(records, pt);
            state.nb.publishAsync(topic, pt.outAddress, pt.outUsed, records.size(), true, waitMillis, token, this);
        }

        @Override
        BatchResult result(int status, long published, long written, ByteBuffer buffer, String error) {
            long[] places = new long[2 * records.size()];
            if (buffer != null) {
                for (int i = 0; i < records.size(); i++) {
                    places[2 * i] = buffer.getInt(16 * i);
                    places[2 * i + 1] = buffer.getLong(16 * i + 8);
                }
            }
            if (status == Status.OK.code()) {
                return new BatchResult((int) published, places);
            }
            Status s = Status.of(status);
            boolean partial = written != 0 && places.length > 0
                    && (s == Status.FULL || s == Status.CLOSED || s == Status.CANCELLED);
            throw MqException.create(s, error, partial ? Broker.batchResult(places) : null);
        }
    }
}
