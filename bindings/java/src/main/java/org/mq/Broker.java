package org.mq;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * An in-process, Kafka-shaped publish-subscribe log: topics of partitions, consumer groups
 * that each receive every message, per-key order, acks and leases for at-least-once delivery,
 * back-pressure when the slowest group falls behind. The whole of the C API ({@code mq.h}) in
 * Java's idioms; every method is thread-safe.
 *
 * <pre>{@code
 * try (Broker broker = Broker.create(BrokerOptions.defaults())) {
 *     broker.createTopic("orders", TopicConfig.builder().partitions(2).build());
 *     broker.subscribeGroup("orders", "billing");
 *     PublishResult r = broker.publish("orders", key, value, Broker.FOREVER);
 *     List<Message> batch = broker.poll("orders", "billing", r.partition(), 10, Duration.ofSeconds(1));
 *     broker.ack("orders", "billing", r.partition(), batch.get(batch.size() - 1).offset());
 * }
 * }</pre>
 *
 * <p><b>Waits</b> are {@link Duration}s: {@link Duration#ZERO} does not block, {@link #FOREVER}
 * waits without limit. Every wait ends when the broker is {@link #shutdown() shut down}
 * ({@link MqClosedException}) and when the waiting thread is {@linkplain Thread#interrupt()
 * interrupted} ({@link MqInterruptedException}, with the interrupt flag left set).
 *
 * <p><b>Errors</b> are unchecked {@link MqException}s, one subclass per status, carrying the
 * library's message. A poll that finds nothing returns an empty list.
 *
 * <p><b>Closing</b>: {@link #close()} closes the subscriptions and members made from this
 * broker and releases it; a broker that becomes unreachable unclosed is released by a Cleaner.
 * Push subscriptions keep their broker reachable while they run. {@link Publisher}s and
 * {@link Cursor}s are not closed with it: their calls then throw {@link MqClosedException}
 * until they are closed.
 */
public final class Broker implements AutoCloseable {
    /** The wait that has no limit (the C API's {@code MQ_WAIT_FOREVER}). */
    public static final Duration FOREVER = Waits.FOREVER;
    /** {@link #seek}: replay everything retained ({@code MQ_OFFSET_EARLIEST}). */
    public static final long OFFSET_EARLIEST = -2;
    /** {@link #seek}: skip everything retained ({@code MQ_OFFSET_END}). */
    public static final long OFFSET_END = -1;

    private final BrokerState state;
    private final NativeBroker nb;
    private final ManualClock clock;  // reachable as long as the broker, for callers' convenience

    private Broker(NativeBroker nb, ManualClock clock) {
        this.nb = nb;
        this.state = new BrokerState(nb);
        this.clock = clock;
        Resources.CLEANER.register(this, state);
    }

    /** A broker with the library's defaults. */
    public static Broker create() {
        return create(BrokerOptions.defaults());
    }

    /**
     * Creates a broker.
     *
     * @throws MqInvalidArgumentException for bad options (e.g. maxMessageBytes 0 or above 1 GiB,
     *     or a Kafka setting librdkafka rejects)
     * @throws MqUnsupportedException for {@link BrokerOptions.Builder#kafkaBootstrap Kafka
     *     bootstrap servers} when the library has no Kafka backend (this binding's own build),
     *     or with a manual clock
     * @throws MqBackendException when the Kafka cluster does not answer within 10 s (the call
     *     blocks until then)
     */
    public static Broker create(BrokerOptions options) {
        Objects.requireNonNull(options, "options");
        NativeClock c = options.clock == null ? null : options.clock.clock;
        return new Broker(new NativeBroker(options.maxMessageBytes, options.spinNanos, c,
                options.kafkaBootstrap, options.kafkaConfig), options.clock);
    }

    /** The manual clock this broker reads, if it was given one. */
    public ManualClock clock() {
        return clock;
    }

    // ---- topics and groups ------------------------------------------------------------------

    /** Creates a topic with the library's default config. */
    public void createTopic(String topic) {
        createTopic(topic, TopicConfig.defaults());
    }

    /**
     * Creates a topic.
     *
     * @throws MqAlreadyExistsException if the name is taken
     * @throws MqInvalidArgumentException for an illegal name or a bad config
     */
    public void createTopic(String topic, TopicConfig config) {
        Objects.requireNonNull(config, "config");
        state.enter();
        try {
            nb.createTopic(topic, config.partitions, config.capacity, config.maxBytes,
                    config.ackTimeoutMs, config.retention.code, config.maxAgeMs);
        } finally {
            state.gate.exit();
        }
    }

    /** Subscribes a consumer group (at the end of the log) with the library's default options. */
    public void subscribeGroup(String topic, String group) {
        subscribeGroup(topic, group, GroupOptions.defaults());
    }

    /**
     * Subscribes a consumer group to a topic: creates its cursor on every partition.
     *
     * @throws MqAlreadyExistsException if the group is already subscribed
     */
    public void subscribeGroup(String topic, String group, GroupOptions options) {
        Objects.requireNonNull(options, "options");
        state.enter();
        try {
            nb.subscribe(topic, group, options.start.code, options.maxDeliveries, options.deadLetterTopic,
                    options.share.code, options.maxAcquired);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Removes a group: its cursors go, and what only it held back is trimmed at once (blocked
     * publishers wake). Its push subscriptions stop calling their handlers (close them as
     * usual). Its members' calls throw {@link MqNoSuchGroupException}, a blocked member poll at
     * once, and their rebalance listeners are not called any more (close them as usual).
     */
    public void unsubscribeGroup(String topic, String group) {
        state.enter();
        try {
            nb.unsubscribe(topic, group);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Deletes a topic; its name is free when this returns ({@link #createTopic} then makes a
     * new, empty topic that shares nothing with the old one). What was using it:
     * <ul>
     * <li>publishes and polls waiting on it end with {@link MqNoSuchTopicException} at once;
     * later calls naming it throw the same;
     * <li>its push {@link Subscription}s stop calling their handlers (a running handler
     * finishes; close them as usual);
     * <li>its {@link Member}s throw {@link MqNoSuchTopicException} from every call but
     * {@link Member#close()} and {@link Member#id()}, and their rebalance listeners are not
     * called any more (close them as usual);
     * <li>{@link Message}s already returned are copies and stay valid;
     * <li>groups of other topics that dead-letter into it: the poll that must dead-letter a
     * message throws {@link MqNoSuchTopicException} and the message stays at the head (a new
     * topic of the name does not take its place: subscribe the group anew).
     * </ul>
     * Never waits for the topic's waiters (it wakes them); may be called from a handler or a
     * listener, also one of this topic.
     *
     * @throws MqNoSuchTopicException if there is no topic of that name
     * @throws MqInvalidArgumentException for an illegal name
     * @since 1.1
     */
    public void deleteTopic(String topic) {
        state.enter();
        try {
            nb.deleteTopic(topic);
        } finally {
            state.gate.exit();
        }
    }

    // ---- publishing ----------------------------------------------------------------------

    /** Publishes a message without headers; see {@link #publish(String, byte[], byte[], List, Duration)}. */
    public PublishResult publish(String topic, byte[] key, byte[] value, Duration wait) {
        return publish(topic, key, value, List.of(), wait);
    }

    /**
     * Appends a message. A key picks the partition as Kafka's default partitioner does; a
     * {@code null} key goes round-robin. Key, value and headers are copied before return.
     *
     * @param key the key, or {@code null} for none ({@code new byte[0]} is a present, empty key)
     * @param value the payload ({@code null} is the empty payload)
     * @param headers name/value pairs, in order (never null)
     * @param wait how long to wait while the partition is full
     * @return where it went
     * @throws MqFullException if the partition was still full when the wait ended
     * @throws MqTooLargeException if key, value and headers exceed the broker's maximum or the
     *     topic's byte budget
     * @throws MqInterruptedException if the thread was interrupted while it waited
     */
    public PublishResult publish(String topic, byte[] key, byte[] value, List<Header> headers,
            Duration wait) {
        return Calls.publish(state, key, value, headers, wait, (rec, ms, t) -> nb.publish(topic, rec, ms, t));
    }

    /**
     * Publishes a delayed message without headers; see
     * {@link #publishDelayed(String, byte[], byte[], List, Duration, Duration)}.
     *
     * @since 1.5
     */
    public PublishResult publishDelayed(String topic, byte[] key, byte[] value, Duration delay,
            Duration wait) {
        return publishDelayed(topic, key, value, List.of(), delay, wait);
    }

    /**
     * Appends a message as {@link #publish(String, byte[], byte[], List, Duration) publish}
     * does, but no group is handed it before the broker clock reaches the publish time +
     * {@code delay} (ABI 1.5; whole milliseconds, a fraction of one rounds up). It is appended,
     * counted and retained at once: only its hand-out waits. A group hands out its partition in
     * offset order, so it holds the messages behind it in its partition (for every group) until
     * it is due; polls waiting on the partition wake when it is. A batch gives each record its
     * own delay: {@link PublishRecord#withDelay(Duration)}.
     *
     * @param delay how long to hold the message back ({@link Duration#ZERO}: not at all)
     * @param wait how long to wait while the partition is full
     * @return where it went
     * @throws MqInvalidArgumentException if the delay is negative or above 2^40 ms (the
     *     library's message says so)
     * @throws MqUnsupportedException on the Kafka backend
     * @throws MqFullException if the partition was still full when the wait ended
     * @since 1.5
     */
    public PublishResult publishDelayed(String topic, byte[] key, byte[] value, List<Header> headers,
            Duration delay, Duration wait) {
        return Calls.publishDelayed(state, new PublishRecord(key, value, headers, delay), wait, batch(topic));
    }

    /**
     * Appends records, taking each partition's lock once for all of its records, within one
     * overall wait. Records of one partition are appended in input order. Every record is
     * checked before anything is appended. A record may carry a delay
     * ({@link PublishRecord#withDelay(Duration)}, ABI 1.5; see
     * {@link #publishDelayed(String, byte[], byte[], List, Duration, Duration) publishDelayed});
     * a bad one fails the batch with the library's message, which names the record.
     *
     * @return where each record went
     * @throws MqFullException when a partition stayed full; {@link MqException#partialBatch()}
     *     then says what was published (likewise for {@link MqClosedException} and
     *     {@link MqInterruptedException})
     */
    public BatchResult publishBatch(String topic, List<PublishRecord> records, Duration wait) {
        return Calls.publishBatch(state, records, wait, batch(topic));
    }

    private Calls.Batch batch(String topic) {
        return (recs, count, ms, t, results) -> nb.publishBatch(topic, recs, count, ms, t, results);
    }

    static BatchResult batchResult(long[] results) {
        int published = 0;
        for (int i = 1; i < results.length; i += 2) {
            if (results[i] >= 0) {
                published++;
            }
        }
        return new BatchResult(published, results);
    }

    // ---- pull consumption -------------------------------------------------------------------

    /**
     * Hands out up to {@code max} messages of one partition to a group, from its next offset
     * on, and starts a new lease covering everything in flight. With nothing to hand out it
     * waits up to {@code wait}; a waiting poll wakes on a publish to its partition, a nack, its
     * lease running out, shutdown and interrupt.
     *
     * @return the messages (copies), in offset order; empty if the wait ended with none
     * @throws MqInterruptedException if the thread was interrupted while it waited
     */
    public List<Message> poll(String topic, String group, int partition, int max, Duration wait) {
        Calls.Poll poll = (buf, cap, m, ms, t) -> nb.pollCopy(topic, group, partition, buf, cap, m, ms, t);
        return Calls.poll(state, topic, max, wait, poll, poll);
    }

    /**
     * Exactly {@link #ack ack(topic, group, partition, offset)} then {@link #poll poll(topic,
     * group, partition, max, wait)}, with one lock round trip (and one call into the native
     * library) instead of two when messages are there: the consumer loop that acks what it
     * handled and asks for more. The ack comes first and stands whatever the poll then finds
     * (nothing before the wait ends, an interrupt, shutdown). A rejected ack polls nothing.
     *
     * <pre>{@code
     * List<Message> batch = broker.poll(topic, group, p, 64, wait);
     * while (!batch.isEmpty()) {
     *     handle(batch);
     *     batch = broker.ackPoll(topic, group, p, batch.get(batch.size() - 1).offset(), 64, wait);
     * }
     * }</pre>
     *
     * @return the messages (copies), in offset order; empty if the wait ended with none (the
     *     ack was made)
     * @throws MqNotInFlightException if the offset is not in flight (the message names the
     *     in-flight range); nothing changes and nothing is polled
     * @throws MqInterruptedException if the thread was interrupted while it waited (the ack
     *     was made)
     * @since 1.1
     */
    public List<Message> ackPoll(String topic, String group, int partition, long offset, int max,
            Duration wait) {
        return Calls.poll(state, topic, max, wait,
                (buf, cap, m, ms, t) -> nb.ackPollCopy(topic, group, partition, offset, buf, cap, m, ms, t),
                (buf, cap, m, ms, t) -> nb.pollCopy(topic, group, partition, buf, cap, m, ms, t));
    }

    /**
     * Acknowledges, cumulatively, every offset up to and including {@code offset} for the
     * group. What every group has acknowledged is trimmed at once.
     *
     * @throws MqNotInFlightException if the offset is not in flight (the message names the
     *     in-flight range); nothing changes
     */
    public void ack(String topic, String group, int partition, long offset) {
        state.enter();
        try {
            nb.ack(topic, group, partition, offset);
        } finally {
            state.gate.exit();
        }
    }

    /** Rewinds the group to its committed offset: the in-flight messages come again at once. */
    public void nack(String topic, String group, int partition) {
        nackDelayed(topic, group, partition, Duration.ZERO);
    }

    /**
     * Rewinds like {@link #nack}, and the group's polls of that partition hand out nothing until
     * {@code delay} has passed by the broker clock (order within the partition is kept).
     */
    public void nackDelayed(String topic, String group, int partition, Duration delay) {
        long ms = Waits.millis(delay, "delay");
        state.enter();
        try {
            nb.nack(topic, group, partition, ms);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Restarts the lease of the group's in-flight messages on a partition ("still working on
     * it").
     *
     * @throws MqNotInFlightException if nothing is in flight
     */
    public void extendLease(String topic, String group, int partition) {
        state.enter();
        try {
            nb.extendLease(topic, group, partition);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Moves the group's cursor on a partition to {@code offset} (committed = next = offset):
     * an offset in the retained range, {@link #OFFSET_EARLIEST} or {@link #OFFSET_END}. What
     * was in flight is forgotten, a delayed nack is cancelled, delivery counts start over.
     *
     * @throws MqOffsetOutOfRangeException outside the retained range (the message names it)
     */
    public void seek(String topic, String group, int partition, long offset) {
        state.enter();
        try {
            nb.seek(topic, group, partition, offset);
        } finally {
            state.gate.exit();
        }
    }

    // ---- share groups (ABI 1.6) -------------------------------------------------------------

    /**
     * Settles one message a poll of share group {@code group} acquired ({@code mq_share_settle},
     * ABI 1.6; see {@link GroupOptions.Builder#share(ShareMode)}). {@code offset} and
     * {@code deliveryCount} are the message's as the poll handed it out: the delivery count is
     * the acquisition's token, so once its lock runs out and another poll acquires the message,
     * this acquisition's settlement is refused. Settlements may come in any order and from any
     * thread; the call never blocks. {@link SettleAction#RELEASE} hands the message out again at
     * once; use {@link #settle(String, String, int, long, long, SettleAction, Duration)} for a
     * release after a delay.
     *
     * @throws MqNotInFlightException if that acquisition does not hold the message (never handed
     *     out, settled, released, its lock ran out, or acquired again since; the message says
     *     which)
     * @throws MqInvalidArgumentException if the group is not a share group
     * @throws MqUnsupportedException on the Kafka backend
     * @since 1.6
     */
    public void settle(String topic, String group, int partition, long offset, long deliveryCount,
            SettleAction action) {
        settle(topic, group, partition, offset, deliveryCount, action, Duration.ZERO);
    }

    /**
     * {@link #settle(String, String, int, long, long, SettleAction) settle} with a delay, which
     * only {@link SettleAction#RELEASE} takes: the released message is not handed out again
     * before {@code delay} has passed by the broker clock (whole milliseconds, a fraction rounds
     * up). Any other action with a delay other than zero is refused
     * ({@link MqInvalidArgumentException}).
     *
     * @since 1.6
     */
    public void settle(String topic, String group, int partition, long offset, long deliveryCount,
            SettleAction action, Duration delay) {
        Objects.requireNonNull(action, "action");
        long ms = Waits.millis(delay, "delay");
        state.enter();
        try {
            nb.shareSettle(topic, group, partition, offset, deliveryCount, action.code, ms);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Settles a message that a poll of share group {@code group} handed out: its topic,
     * partition, offset and delivery count are the message's (ABI 1.6). See
     * {@link #settle(String, String, int, long, long, SettleAction)}.
     *
     * @since 1.6
     */
    public void settle(String group, Message message, SettleAction action) {
        settle(group, message, action, Duration.ZERO);
    }

    /**
     * {@link #settle(String, Message, SettleAction)} with a delay (for
     * {@link SettleAction#RELEASE} only); see
     * {@link #settle(String, String, int, long, long, SettleAction, Duration)}.
     *
     * @since 1.6
     */
    public void settle(String group, Message message, SettleAction action, Duration delay) {
        Objects.requireNonNull(message, "message");
        settle(message.topic(), group, message.partition(), message.offset(),
                Integer.toUnsignedLong(message.deliveryCount()), action, delay);
    }

    // ---- asynchronous calls (ABI 1.4) -------------------------------------------------------

    /**
     * {@link #publish(String, byte[], byte[], Duration)} without a waiting thread; see
     * {@link #publishAsync(String, byte[], byte[], List, Duration)}.
     *
     * @since 1.4
     */
    public CompletableFuture<PublishResult> publishAsync(String topic, byte[] key, byte[] value, Duration wait) {
        return publishAsync(topic, key, value, List.of(), wait);
    }

    /**
     * {@link #publish(String, byte[], byte[], List, Duration) publish}, asynchronously: the
     * future completes with what the blocking call returns, or exceptionally with what it
     * throws ({@link MqFullException} when the wait ended with the partition still full,
     * {@link MqClosedException} on shutdown, ...). Key, value and headers are copied before
     * this returns. See "Asynchronous calls" in the README: no thread waits for the call
     * (the broker's one completer thread completes it), {@link CompletableFuture#cancel
     * cancel} ends it with a {@link java.util.concurrent.CancellationException}, and this
     * method never throws (every failure completes the future).
     *
     * @since 1.4
     */
    public CompletableFuture<PublishResult> publishAsync(String topic, byte[] key, byte[] value,
            List<Header> headers, Duration wait) {
        return new AsyncCall.Publish(state, topic, key, value, headers).start(wait);
    }

    /**
     * {@link #publishDelayed(String, byte[], byte[], Duration, Duration) publishDelayed} without a
     * waiting thread; see {@link #publishDelayedAsync(String, byte[], byte[], List, Duration,
     * Duration)}.
     *
     * @since 1.5
     */
    public CompletableFuture<PublishResult> publishDelayedAsync(String topic, byte[] key, byte[] value,
            Duration delay, Duration wait) {
        return publishDelayedAsync(topic, key, value, List.of(), delay, wait);
    }

    /**
     * {@link #publishDelayed(String, byte[], byte[], List, Duration, Duration) publishDelayed},
     * asynchronously (see {@link #publishAsync(String, byte[], byte[], List, Duration)
     * publishAsync}): the future completes with where the message went, or exceptionally with
     * what the blocking call throws.
     *
     * @since 1.5
     */
    public CompletableFuture<PublishResult> publishDelayedAsync(String topic, byte[] key, byte[] value,
            List<Header> headers, Duration delay, Duration wait) {
        return new AsyncCall.DelayedPublish(state, topic, key, value, headers, delay).start(wait);
    }

    /**
     * {@link #publishBatch publishBatch}, asynchronously (see {@link #publishAsync(String,
     * byte[], byte[], List, Duration) publishAsync}). A batch that stopped part-way completes
     * exceptionally with the exception's {@link MqException#partialBatch()} set.
     *
     * @since 1.4
     */
    public CompletableFuture<BatchResult> publishBatchAsync(String topic, List<PublishRecord> records,
            Duration wait) {
        return new AsyncCall.Batch(state, topic, records).start(wait);
    }

    /**
     * {@link #poll poll}, asynchronously: the future completes with the messages (copies), or
     * an empty list if the wait ended with none, or exceptionally with what the blocking poll
     * throws. See {@link #publishAsync(String, byte[], byte[], List, Duration) publishAsync} for
     * threads, cancellation and failures. A cancelled poll that had already taken messages
     * leaves them in flight (redelivered when the lease runs out).
     *
     * @since 1.4
     */
    public CompletableFuture<List<Message>> pollAsync(String topic, String group, int partition, int max,
            Duration wait) {
        return new AsyncCall.Poll(state, topic, group, partition, false, 0, max).start(wait);
    }

    /**
     * {@link #ackPoll ackPoll}, asynchronously: the ack is made before this returns (a rejected
     * ack completes the future with {@link MqNotInFlightException} and polls nothing), then
     * the poll completes as {@link #pollAsync pollAsync}.
     *
     * @since 1.4
     */
    public CompletableFuture<List<Message>> ackPollAsync(String topic, String group, int partition, long offset,
            int max, Duration wait) {
        return new AsyncCall.Poll(state, topic, group, partition, true, offset, max).start(wait);
    }

    // ---- handles (ABI 1.7) ------------------------------------------------------------------

    /**
     * Opens a {@link Publisher} of {@code topic}: publishes that skip the name's lookup.
     *
     * @throws MqNoSuchTopicException if there is no topic of that name
     * @throws MqInvalidArgumentException for an illegal name
     * @since 1.7
     */
    public Publisher publisher(String topic) {
        state.enter();
        try {
            return new Publisher(this, topic, new NativePublisher(nb, topic));
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Opens a {@link Cursor} on group {@code group}'s partition {@code partition} of
     * {@code topic}: polls and acks that skip the names' lookups.
     *
     * @throws MqNoSuchTopicException if there is no topic of that name
     * @throws MqNoSuchGroupException if the group is not subscribed to it
     * @throws MqNoSuchPartitionException if the topic has no such partition
     * @throws MqInvalidArgumentException for an illegal name
     * @since 1.7
     */
    public Cursor cursor(String topic, String group, int partition) {
        state.enter();
        try {
            return new Cursor(this, topic, group, partition, new NativeCursor(nb, topic, group, partition));
        } finally {
            state.gate.exit();
        }
    }

    // ---- push consumption and members ------------------------------------------------------

    /** A push subscription with the library's default options. */
    public Subscription subscribe(String topic, String group, MessageHandler handler) {
        return subscribe(topic, group, handler, SubscribeOptions.defaults());
    }

    /**
     * Starts a push subscription: for each owned partition a library thread polls
     * ({@code prefetch} messages at a time), calls {@code handler} for each message in order,
     * and acks it (or nacks it when the handler throws or calls {@link HandlerContext#nack()}).
     * Subscribes the group (at the end of the log) if it is not subscribed yet.
     *
     * @throws MqOwnedException if another live subscription of the group owns a listed
     *     partition, or members and a partition list would share the group
     */
    public Subscription subscribe(String topic, String group, MessageHandler handler,
            SubscribeOptions options) {
        Objects.requireNonNull(handler, "handler");
        Objects.requireNonNull(options, "options");
        state.enter();
        try {
            SubscriptionState s = new SubscriptionState(state, topic, group);
            state.retain();
            state.subscriptions.add(s);
            Subscription sub = new Subscription(this, s);
            PushSink sink = new PushSink(s, handler, options.onHandlerError);
            sink.owner = sub;
            sink.swigReleaseOwnership();  // the native side deletes it after its last call
            try {
                s.ns.open(nb, topic, group, options.prefetch, options.sessionTimeoutMs,
                        options.partitions, sink);
            } catch (RuntimeException e) {
                s.abandon();
                throw e;
            }
            return sub;
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Joins a group as a member: the broker divides the topic's partitions among the group's
     * members, and moves them when members join, leave or time out. Subscribes the group (at
     * the end of the log) if needed.
     *
     * @throws MqAlreadyExistsException if the member id is taken in the group
     */
    public Member join(String topic, String group, MemberOptions options) {
        Objects.requireNonNull(options, "options");
        state.enter();
        try {
            MemberState m = new MemberState(state, topic, group);
            state.retain();
            state.members.add(m);
            Member member = new Member(this, m);
            NativeRebalanceSink listener = null;
            if (options.listener != null) {
                listener = new MemberSinks.Listener(m, member, options.listener, options.onCallbackError);
                listener.swigReleaseOwnership();
            }
            NativeAssignorSink assignor = null;
            if (options.assignor != null) {
                assignor = new MemberSinks.Assignor(options.assignor, options.onCallbackError);
                assignor.swigReleaseOwnership();
            }
            try {
                m.nm.join(nb, topic, group, options.memberId, options.sessionTimeoutMs, assignor, listener);
            } catch (RuntimeException e) {
                m.abandon();
                throw e;
            }
            member.joined();
            return member;
        } finally {
            state.gate.exit();
        }
    }

    /** Joins a group as a member with the library's default options. */
    public Member join(String topic, String group) {
        return join(topic, group, MemberOptions.defaults());
    }

    // ---- introspection (works after shutdown) -----------------------------------------------

    /** The topic's config. */
    public TopicInfo topicInfo(String topic) {
        state.enter();
        try {
            long[] v = nb.topicInfo(topic);
            return new TopicInfo((int) v[0], v[1], v[2], Duration.ofMillis(v[3]), Retention.of(v[4]),
                    Duration.ofMillis(v[5]));
        } finally {
            state.gate.exit();
        }
    }

    /** The state of a partition. */
    public PartitionInfo partitionInfo(String topic, int partition) {
        state.enter();
        try {
            long[] v = nb.partitionInfo(topic, partition);
            return new PartitionInfo(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]);
        } finally {
            state.gate.exit();
        }
    }

    /** A group's cursor on a partition. */
    public GroupInfo groupInfo(String topic, String group, int partition) {
        state.enter();
        try {
            long[] v = nb.groupInfo(topic, group, partition);
            return new GroupInfo(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12],
                    v[13], v[14], v[15], v[16]);
        } finally {
            state.gate.exit();
        }
    }

    /**
     * A partition described the way the specification's reference trace prints it, e.g.
     * {@code "log 1..3, backlog 3/3; billing 1/4; email 3/3"} (groups as committed/next).
     */
    public String describe(String topic, int partition) {
        state.enter();
        try {
            return nb.describe(topic, partition);
        } finally {
            state.gate.exit();
        }
    }

    /** The topics, in creation order. */
    public List<String> topics() {
        state.enter();
        try {
            return lines(nb.topics());
        } finally {
            state.gate.exit();
        }
    }

    /** The groups of a topic, in subscription order. */
    public List<String> groups(String topic) {
        state.enter();
        try {
            return lines(nb.groups(topic));
        } finally {
            state.gate.exit();
        }
    }

    private static List<String> lines(String text) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', start)) {
            out.add(text.substring(start, i));
            start = i + 1;
        }
        return List.copyOf(out);
    }

    // ---- partitioning helpers and version -------------------------------------------------

    /** Kafka's default partition for a key: {@code (murmur2(key) & 0x7fffffff) % partitions}. */
    public static int partitionFor(byte[] key, int partitions) {
        return NativeBroker.partitionFor(Objects.requireNonNull(key, "key"), partitions);
    }

    /** {@link #partitionFor(byte[], int)} of a key's UTF-8 bytes. */
    public static int partitionFor(String key, int partitions) {
        return partitionFor(key.getBytes(StandardCharsets.UTF_8), partitions);
    }

    /** Kafka's murmur2 of a key, signed, as Kafka's {@code Utils.murmur2} returns it. */
    public static int murmur2(byte[] key) {
        return NativeBroker.murmur2(Objects.requireNonNull(key, "key"));
    }

    /**
     * Round-robin assignment: the partitions member {@code member} of {@code members} owns
     * (partition p goes to member p % members), in increasing order.
     */
    public static List<Integer> roundRobin(int partitions, int members, int member) {
        int[] parts = NativeBroker.roundRobin(partitions, members, member);
        List<Integer> out = new ArrayList<>(parts.length);
        for (int p : parts) {
            out.add(p);
        }
        return List.copyOf(out);
    }

    /** The native library's version, e.g. {@code "1.2.0"}. */
    public static String version() {
        return NativeBroker.version();
    }

    /** The native library's version as major * 1000000 + minor * 1000 + patch. */
    public static int versionNumber() {
        return NativeBroker.versionNumber();
    }

    // ---- closing -------------------------------------------------------------------------

    /**
     * Shuts the broker down without releasing it: every waiting publish and poll ends with
     * {@link MqClosedException} at once, push subscriptions stop calling their handlers, and
     * every later call throws {@link MqClosedException} except the introspection calls
     * ({@link #describe}, the infos and lists), which keep working until {@link #close()}.
     * Does not wait for handlers; idempotent.
     */
    public void shutdown() {
        state.enter();
        try {
            nb.close();
        } finally {
            state.gate.exit();
        }
    }

    /**
     * Shuts the broker down, closes every subscription and member made from it (waiting for
     * their running handlers and listeners), and releases it; every later call throws
     * {@link MqClosedException}. Idempotent. From inside one of this broker's handlers or
     * listeners the shutdown happens at once and the release completes on another thread once
     * that callback has returned.
     */
    @Override
    public void close() {
        state.close();
    }

    @Override
    public String toString() {
        return "Broker[" + (state.gate.isClosed() ? "closed" : "open") + "]";
    }
}
