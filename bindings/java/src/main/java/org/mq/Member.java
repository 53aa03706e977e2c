package org.mq;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A member of a consumer group ({@link Broker#join}): the broker divides the topic's
 * partitions among the group's members and numbers each division with a generation. When
 * members join, leave or time out, partitions move; what a member had in flight on a
 * partition it lost goes to the new owner from the group's committed offset. A member learns of
 * a change on its next call ({@link MqRebalancedException}) or through its
 * {@link RebalanceListener}, then fetches its {@link #assignment()}. Its poll, ack and nack of a
 * partition it does not own are {@link MqFencedException}, so a slow old owner can never ack
 * the new owner's messages.
 *
 * <p>Thread-safe. A member that becomes unreachable unclosed leaves its group through a
 * Cleaner; one that makes no call for its session timeout is removed by the group.
 */
public final class Member implements AutoCloseable {
    private final Broker broker;  // keeps the broker reachable while the member is
    private final MemberState state;
    private volatile String id;

    Member(Broker broker, MemberState state) {
        this.broker = broker;
        this.state = state;
    }

    void joined() {
        id = state.nm.id();
        Resources.CLEANER.register(this, state);
    }

    /** The member's id (given in its options, or generated as {@code <group>-<n>}). */
    public String id() {
        String s = id;
        if (s == null) {  // a listener called during the join
            enter();
            try {
                s = state.nm.id();
            } finally {
                state.gate.exit();
            }
        }
        return s;
    }

    /** The group's topic. */
    public String topic() {
        return state.topic;
    }

    /** The member's group. */
    public String group() {
        return state.group;
    }

    /** The broker it joined through. */
    public Broker broker() {
        return broker;
    }

    private void enter() {
        state.enter();
    }

    /**
     * The member's current generation and partitions. Fetching marks the generation as seen:
     * the member's next calls stop throwing {@link MqRebalancedException}.
     *
     * @throws MqFencedException if the member was removed for its session timeout
     */
    public Assignment assignment() {
        enter();
        try {
            PerThread pt = PerThread.get();
            int[] parts = state.nm.assignment(pt.longOut);
            List<Integer> list = new ArrayList<>(parts.length);
            for (int p : parts) {
                list.add(p);
            }
            return new Assignment(pt.longOut[0], list);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Polls the member's partitions (each call starts at the next one, for fairness) and
     * returns messages of one of them ({@link Message#partition()} says which), waiting up to
     * {@code wait} for any.
     *
     * @return the messages; empty if the wait ended with none
     * @throws MqRebalancedException if the group rebalanced (nothing was handed out)
     * @throws MqClosedException if the member was closed (or the broker shut down) meanwhile
     * @throws MqInterruptedException if the thread was interrupted while it waited
     */
    public List<Message> poll(int max, Duration wait) {
        return poll(false, 0, 0, max, Waits.waitMillis(wait));
    }

    /**
     * Exactly {@link #ack ack(partition, offset)} then {@link #poll poll(max, wait)}: when the
     * poll looks at {@code partition} first (always, for a member that owns one partition) the
     * ack and that look share one lock round trip and one call into the native library. The
     * ack stands whatever the poll then finds (nothing before the wait ends, a rebalance
     * during the wait, an interrupt, close). A rejected ack polls nothing.
     *
     * @return the messages; empty if the wait ended with none (the ack was made)
     * @throws MqRebalancedException if the group rebalanced: before the ack (nothing changed)
     *     or during the wait (the ack was made)
     * @throws MqFencedException if the member does not own the partition; nothing changes
     * @throws MqNotInFlightException if the offset is not in flight; nothing changes
     * @throws MqClosedException if the member was closed (or the broker shut down) meanwhile
     * @throws MqInterruptedException if the thread was interrupted while it waited (the ack
     *     was made)
     * @since 1.1
     */
    public List<Message> ackPoll(int partition, long offset, int max, Duration wait) {
        return poll(true, partition, offset, max, Waits.waitMillis(wait));
    }

    private List<Message> poll(boolean ack, int partition, long offset, int max, long ms) {
        enter();
        try {
            PerThread pt = PerThread.get();
            NativeMember nm = state.nm;
            PerThread.CopyPoll again = (buf, cap, m) -> nm.pollCopy(buf, cap, m, 0, null);
            long n = ms == 0
                    ? pt.poll(ack ? (buf, cap, m) -> nm.ackPollCopy(partition, offset, buf, cap, m, 0, null) : again, max)
                    : pt.await(state, t -> pt.poll(ack
                            ? (buf, cap, m) -> nm.ackPollCopy(partition, offset, buf, cap, m, ms, t)
                            : (buf, cap, m) -> nm.pollCopy(buf, cap, m, ms, t), max));
            return pt.copied(n, max, state.topic, again);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * {@link #poll poll}, asynchronously (ABI 1.4): one call waits on every partition the
     * member owns, and no thread waits for it (the broker's completer thread completes it). The
     * future completes with the messages of one of the member's partitions (copies), or an empty
     * list if the wait ended with none, or exceptionally with what the blocking poll throws:
     * {@link MqRebalancedException} when the group rebalances while it waits (nothing was
     * handed out), {@link MqFencedException}, {@link MqClosedException} when the member is
     * closed (or becomes unreachable and is cleaned, or the broker shuts down) while it waits.
     * A pending poll keeps the member alive (its session does not run out). As
     * {@link Broker#pollAsync Broker.pollAsync}: {@link CompletableFuture#cancel cancel} ends
     * the native call before it returns, and this method never throws (every failure
     * completes the future). {@link MqUnsupportedException} on the Kafka backend.
     *
     * @since 1.4
     */
    public CompletableFuture<List<Message>> pollAsync(int max, Duration wait) {
        return new AsyncCall.Poll(state, false, 0, 0, max).start(wait);
    }

    /**
     * {@link #ackPoll ackPoll}, asynchronously: the ack is made before this returns (a rejected
     * ack completes the future with its failure, {@link MqFencedException} or
     * {@link MqNotInFlightException}, and polls nothing), then the poll completes as
     * {@link #pollAsync pollAsync}.
     *
     * @since 1.4
     */
    public CompletableFuture<List<Message>> ackPollAsync(int partition, long offset, int max, Duration wait) {
        return new AsyncCall.Poll(state, true, partition, offset, max).start(wait);
    }

    /** Cumulative ack on a partition the member owns; see {@link Broker#ack}. */
    public void ack(int partition, long offset) {
        enter();
        try {
            state.nm.ack(partition, offset);
        } finally {
            state.gate.exit();
        }
    }

    /** Nack on a partition the member owns; see {@link Broker#nack}. */
    public void nack(int partition) {
        nackDelayed(partition, Duration.ZERO);
    }

    /** Delayed nack on a partition the member owns; see {@link Broker#nackDelayed}. */
    public void nackDelayed(int partition, Duration delay) {
        long ms = Waits.millis(delay, "delay");
        enter();
        try {
            state.nm.nack(partition, ms);
        } finally {
            state.gate.exit();
        }
    }

    /** Lease extension on a partition the member owns; see {@link Broker#extendLease}. */
    public void extendLease(int partition) {
        enter();
        try {
            state.nm.extendLease(partition);
        } finally {
            state.gate.exit();
        }
    }

    /** Whether the member has been closed. */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Leaves the group (the others rebalance; what this member had in flight goes to the new
     * owners) and releases the member. A poll of it blocked on another thread ends with
     * {@link MqClosedException}, and so do its pending {@link #pollAsync asynchronous polls}
     * (completed before this returns; from a completion on the broker's completer thread, it
     * returns at once and they complete after). Idempotent.
     *
     * @throws MqDeadlockException from this member's own rebalance listener (which close waits
     *     for); nothing happens then
     */
    @Override
    public void close() {
        if (PerThread.get().callbackOf == state) {
            throw new MqDeadlockException("Member.close() was called from inside its own rebalance"
                    + " listener, which it would wait for; nothing happened. Close it from another thread.");
        }
        state.close();
    }

    @Override
    public String toString() {
        return "Member[" + id + " of " + state.group + "@" + state.topic + (isClosed() ? ", closed]" : "]");
    }
}
