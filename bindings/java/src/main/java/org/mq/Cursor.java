package org.mq;

import java.time.Duration;
import java.util.List;

/**
 * One group's position on one partition, looked up once ({@link Broker#cursor(String, String,
 * int)}, ABI 1.7's {@code mq_cursor}): its calls are exactly {@link Broker#poll Broker.poll},
 * {@link Broker#ack Broker.ack} and {@link Broker#ackPoll Broker.ackPoll} on that group and
 * partition (same arguments, waits, interrupts, results and exceptions; messages are copies)
 * without looking the names up on every call. The cursor and the named calls move one and the
 * same group position. Thread-safe. A share group's cursor polls and acks (accepts) as the
 * named calls do; settle by name ({@link Broker#settle(String, Message, SettleAction)}).
 *
 * <p>It holds its topic and group, not their names: once the topic is deleted its calls throw
 * {@link MqNoSuchTopicException}, once the group is unsubscribed {@link MqNoSuchGroupException},
 * also after one of that name comes back (open a new cursor for it). After its broker is shut
 * down or closed its calls throw {@link MqClosedException} (a waiting poll at once).
 * {@link #close()} ends a poll waiting on another thread ({@link MqClosedException}) and releases
 * the handle; a cursor that becomes unreachable unclosed is released by a Cleaner. Any order of
 * closing it and its broker is safe.
 *
 * @since 1.7
 */
public final class Cursor implements AutoCloseable {
    private final Broker broker;  // keeps the broker reachable (and open) while the cursor is
    private final String topic;
    private final String group;
    private final int partition;
    private final NativeCursor nc;
    private final HandleState state;
    private final Calls.Poll poll;

    Cursor(Broker broker, String topic, String group, int partition, NativeCursor nc) {
        this.broker = broker;
        this.topic = topic;
        this.group = group;
        this.partition = partition;
        this.nc = nc;
        this.poll = nc::pollCopy;
        this.state = new HandleState("cursor", "Cursor.close()", nc::delete);
        Resources.CLEANER.register(this, state);
    }

    /** The topic's name, as it was opened. */
    public String topic() {
        return topic;
    }

    /** The group's name, as it was opened. */
    public String group() {
        return group;
    }

    /** The partition. */
    public int partition() {
        return partition;
    }

    /** The broker it was opened on. */
    public Broker broker() {
        return broker;
    }

    /**
     * {@link Broker#poll Broker.poll} of the cursor's group and partition.
     *
     * @return the messages (copies), in offset order; empty if the wait ended with none
     * @throws MqNoSuchTopicException once the topic was deleted
     * @throws MqNoSuchGroupException once the group was unsubscribed
     * @throws MqClosedException once the broker or this cursor was closed
     */
    public List<Message> poll(int max, Duration wait) {
        return Calls.poll(state, topic, max, wait, poll, poll);
    }

    /** {@link Broker#ack Broker.ack} of the cursor's group and partition. */
    public void ack(long offset) {
        state.enter();
        try {
            nc.ack(offset);
        } finally {
            state.gate().exit();
        }
    }

    /** {@link Broker#ackPoll Broker.ackPoll} of the cursor's group and partition. */
    public List<Message> ackPoll(long offset, int max, Duration wait) {
        return Calls.poll(state, topic, max, wait,
                (buf, cap, m, ms, t) -> nc.ackPollCopy(offset, buf, cap, m, ms, t), poll);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Releases the cursor: a poll of it waiting on another thread ends with
     * {@link MqClosedException}, and later calls throw the same. Idempotent.
     */
    @Override
    public void close() {
        state.close();
    }

    @Override
    public String toString() {
        return "Cursor[" + group + "@" + topic + "/" + partition + (isClosed() ? ", closed]" : "]");
    }
}
