package org.mq.conformance;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;
import org.mq.BatchResult;
import org.mq.Broker;
import org.mq.BrokerOptions;
import org.mq.Cursor;
import org.mq.GroupOptions;
import org.mq.HandlerContext;
import org.mq.Header;
import org.mq.ManualClock;
import org.mq.Member;
import org.mq.MemberOptions;
import org.mq.Message;
import org.mq.MqException;
import org.mq.PartitionAssignor;
import org.mq.PartitionInfo;
import org.mq.Publisher;
import org.mq.PublishRecord;
import org.mq.PublishResult;
import org.mq.Retention;
import org.mq.SettleAction;
import org.mq.ShareMode;
import org.mq.StartPosition;
import org.mq.SubscribeOptions;
import org.mq.Subscription;
import org.mq.TopicConfig;
import org.mq.TopicInfo;
import org.mq.GroupInfo;

/**
 * The Java binding's conformance testee: executes the runner's requests (tests/conformance/
 * FORMAT.md, "The testee protocol") through the binding's public API only, one reply line per
 * request. It checks nothing; the runner compares. Cancellation is Java's: a background call
 * (async=) is cancelled by interrupting its thread, an asynchronous one (start=, a
 * CompletableFuture of Broker's and Member's *Async calls) by CompletableFuture.cancel.
 */
public final class Testee {
    /** The requests start=NAME may start (subscribe's start= is its start position). */
    private static final Set<String> STARTABLE = Set.of("publish", "publish_batch", "poll", "ack_poll", "member_poll",
            "member_ack_poll");
    private final ManualClock clock = ManualClock.startingAt(1_000_000_000L);
    private Broker broker;
    // Named objects in creation order (end() closes them in that order).
    private final Map<String, Push> pushes = new LinkedHashMap<>();
    private final Map<String, Joined> members = new LinkedHashMap<>();
    private final Map<String, Background> calls = new LinkedHashMap<>();
    // ABI 1.7's publishers and cursors by name; end() closes them after the broker.
    private final Map<String, AutoCloseable> handles = new LinkedHashMap<>();
    // The Kafka backend (FORMAT.md, "On the Kafka backend"): the cluster's address, or null for
    // the in-process log; and the topics this scenario created there, deleted by end().
    private final String kafkaBootstrap = kafkaBootstrap();
    private final List<String> kafkaTopics = new ArrayList<>();

    /**
     * With MQ_CONFORMANCE_BACKEND=kafka, MQ_KAFKA_BOOTSTRAP (a name no host has when that is
     * unset, so broker_new fails and says so, as the C testee does); else null.
     */
    static String kafkaBootstrap() {
        if (!"kafka".equals(System.getenv("MQ_CONFORMANCE_BACKEND"))) {
            return null;
        }
        String b = System.getenv("MQ_KAFKA_BOOTSTRAP");
        return b != null && !b.isEmpty() ? b : "MQ_KAFKA_BOOTSTRAP-is-not-set";
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.ISO_8859_1));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.ISO_8859_1);
        Testee t = new Testee();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            String reply;
            try {
                Fields r = new Fields(line);
                reply = r.has("async") ? t.startBackground(r)
                        : r.has("start") && STARTABLE.contains(r.verb) ? t.startAsync(r) : t.run(r);
            } catch (Throwable e) {
                reply = testeeError("the request failed in the testee: " + e);
            }
            out.print(reply + "\n");
            out.flush();
        }
    }

    // ---- replies ---------------------------------------------------------------------------

    static String testeeError(String detail) {
        return "testee_error detail=" + Fields.encode(detail);
    }

    static String status(MqException e) {
        return e.status().constantName() + " error=" + Fields.encode(e.getMessage());
    }

    /** A Java exception that is not the binding's reported as such: it broke its own contract. */
    static String unexpected(RuntimeException e) {
        return testeeError("the binding threw " + e);
    }

    static void putMessage(StringBuilder sb, Message m) {
        sb.append(" message=").append(m.partition()).append(':').append(m.offset());
        sb.append(" payload=").append(Fields.encode(m.value()));
        if (m.key() != null) {
            sb.append(" key=").append(Fields.encode(m.key()));
        }
        sb.append(" delivery_count=").append(Integer.toUnsignedLong(m.deliveryCount()));
        sb.append(" timestamp_ns=").append(m.timestampNanos());
        sb.append(" lost=").append(m.lost());
        for (Header h : m.headers()) {
            sb.append(" header=").append(Fields.encode(h.nameBytes())).append(':').append(Fields.encode(h.value()));
        }
        m.deadLetter().ifPresent(d -> sb.append(" dead_letter=").append(Fields.encode(d.topic())).append(':')
                .append(Fields.encode(d.group())).append(':').append(d.partition()).append(':').append(d.offset())
                .append(':').append(Integer.toUnsignedLong(d.deliveryCount())));
    }

    static Duration waitOf(Fields r) {
        long ms = r.integer("wait", 0);
        return ms == -1 ? Broker.FOREVER : Duration.ofMillis(ms);
    }

    static int i32(Fields r, String name) {
        return (int) r.integer(name, 0);
    }

    static int[] intList(String raw) {
        if (raw.isEmpty()) {
            return new int[0];
        }
        return Arrays.stream(raw.split(",", -1)).mapToInt(Integer::parseInt).toArray();
    }

    static String joinInts(List<Integer> xs) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < xs.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(xs.get(i));
        }
        return sb.toString();
    }

    // ---- scripted handlers, members, background calls -------------------------------------

    /** A push subscription with its scripted handler's uses and the calls it recorded. */
    static final class Push {
        final List<byte[]> fails;
        final List<byte[]> extends_;
        final Long nackDelayMs;
        final StringBuilder calls = new StringBuilder();
        Subscription sub;

        Push(Fields r) {
            fails = new ArrayList<>(r.all("fail"));
            extends_ = new ArrayList<>(r.all("extend"));
            nackDelayMs = r.has("nack_delay_ms") ? r.integer("nack_delay_ms", 0) : null;
        }

        private static boolean take(List<byte[]> uses, byte[] payload) {
            for (int i = 0; i < uses.size(); i++) {
                if (Arrays.equals(uses.get(i), payload)) {
                    uses.remove(i);
                    return true;
                }
            }
            return false;
        }

        private static String statusOf(Runnable call) {
            try {
                call.run();
                return "MQ_OK";
            } catch (MqException e) {
                return e.status().constantName();
            }
        }

        synchronized void handle(Message m, HandlerContext ctx) {
            boolean fails = take(this.fails, m.value());
            String extended = take(extends_, m.value()) ? statusOf(ctx::extendLease) : null;
            String delayed = fails && nackDelayMs != null
                    ? statusOf(() -> ctx.nackDelay(Duration.ofMillis(nackDelayMs))) : null;
            putMessage(calls, m);
            calls.append(" outcome=").append(fails ? "fail" : "ok");
            if (extended != null) {
                calls.append(" extend_lease=").append(extended);
            }
            if (delayed != null) {
                calls.append(" nack_delay=").append(delayed);
            }
            if (fails) {
                ctx.nack();
            }
        }

        synchronized String recorded() {
            return "MQ_OK" + calls;
        }
    }

    /** A member (null if its join failed) and the rebalances its listener recorded. */
    static final class Joined {
        volatile Member member;
        final StringBuilder rebalances = new StringBuilder();

        synchronized void record(Member m, long generation) {
            rebalances.append(" rebalance=").append(generation).append(':').append(Fields.encode(m.id()));
        }

        synchronized String recorded() {
            return "MQ_OK" + rebalances;
        }
    }

    static final class Background {
        Thread thread;  // an async= call's thread, else null
        volatile CompletableFuture<?> futureOf;  // a start= call's future, else null
        volatile String reply;
    }

    static PartitionAssignor assignor(String name) {
        switch (name) {
            case "all_to_last":
                return (partitions, ids) -> {
                    int[] owners = new int[partitions];
                    Arrays.fill(owners, ids.size() - 1);
                    return owners;
                };
            case "by_id":
                return (partitions, ids) -> {
                    Integer[] order = new Integer[ids.size()];
                    for (int i = 0; i < order.length; i++) {
                        order[i] = i;
                    }
                    // Byte-wise: the ids are ASCII, so UTF-16 order is byte order.
                    Arrays.sort(order, (a, b) -> ids.get(a).compareTo(ids.get(b)));
                    int[] owners = new int[partitions];
                    for (int p = 0; p < partitions; p++) {
                        owners[p] = order[p % order.length];
                    }
                    return owners;
                };
            case "none":
                return (partitions, ids) -> {
                    int[] owners = new int[partitions];
                    Arrays.fill(owners, ids.size());
                    return owners;
                };
            default:
                return null;  // round_robin: the library's default
        }
    }

    private String startBackground(Fields r) {
        String name = r.string("async");
        Background bg = new Background();
        synchronized (calls) {
            calls.put(name, bg);
        }
        bg.thread = new Thread(() -> {
            String reply;
            try {
                reply = run(r);
            } catch (Throwable e) {
                reply = testeeError("the background call failed in the testee: " + e);
            }
            bg.reply = reply;
        }, "background " + name);
        bg.thread.setDaemon(true);
        bg.thread.start();
        return "MQ_OK";
    }

    /**
     * A start=NAME request: the call through the binding's CompletableFuture form (no thread of
     * the testee's waits for it); its reply is built where the future completes. Its
     * cancellation is CompletableFuture.cancel, which triggers the call's own token.
     */
    private String startAsync(Fields r) {
        String name = r.string("start");
        Member member = null;
        if (r.verb.startsWith("member_")) {
            Joined j = member(r);
            if (j == null || j.member == null) {
                return testeeError("no such member");
            }
            member = j.member;
        }
        Background bg = new Background();
        synchronized (calls) {
            calls.put(name, bg);
        }
        try {
            switch (r.verb) {
                case "publish": {
                    PublishRecord rec = records(r).get(0);
                    track(bg, rec.delay().isZero()
                            ? broker.publishAsync(r.string("topic"), rec.key(), rec.value(), rec.headers(), waitOf(r))
                            : broker.publishDelayedAsync(r.string("topic"), rec.key(), rec.value(), rec.headers(),
                                    rec.delay(), waitOf(r)),
                            (v, e) -> e != null ? failure(e, "") : "MQ_OK partition=" + v.partition() + " offset=" + v.offset());
                    break;
                }
                case "publish_batch":
                    track(bg, broker.publishBatchAsync(r.string("topic"), records(r), waitOf(r)),
                            (v, e) -> e != null ? batchFailure(e) : batch("MQ_OK", v));
                    break;
                case "poll":
                    track(bg, broker.pollAsync(r.string("topic"), r.string("group"), i32(r, "partition"), i32(r, "max"),
                            waitOf(r)), (v, e) -> e != null ? failure(e, " count=0") : pollReply(() -> v));
                    break;
                case "member_poll":
                    track(bg, member.pollAsync(i32(r, "max"), waitOf(r)),
                            (v, e) -> e != null ? failure(e, " count=0") : pollReply(() -> v));
                    break;
                case "member_ack_poll":
                    track(bg, member.ackPollAsync(i32(r, "partition"), r.integer("offset", 0), i32(r, "max"),
                            waitOf(r)),
                            (v, e) -> e != null ? failure(e, " count=0") : pollReply(() -> v));
                    break;
                default:  // ack_poll
                    track(bg, broker.ackPollAsync(r.string("topic"), r.string("group"), i32(r, "partition"),
                            r.integer("offset", 0), i32(r, "max"), waitOf(r)),
                            (v, e) -> e != null ? failure(e, " count=0") : pollReply(() -> v));
                    break;
            }
        } catch (RuntimeException e) {
            bg.reply = unexpected(e);  // the binding broke its contract: failures go through the future
        }
        return "MQ_OK";
    }

    /** Keeps the binding's future (cancel cancels it) and builds the reply where it completes. */
    private static <T> void track(Background bg, CompletableFuture<T> f, BiFunction<T, Throwable, String> reply) {
        bg.futureOf = f;
        f.whenComplete((v, e) -> {
            String text;
            try {
                text = reply.apply(v, e);
            } catch (RuntimeException x) {
                text = testeeError("building the reply failed: " + x);
            }
            bg.reply = text;
        });
    }

    /** The reply of a failed CompletableFuture (cancelled: the binding's CancellationException). */
    private static String failure(Throwable e, String suffix) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof MqException) {
            return status((MqException) cause) + suffix;
        }
        if (cause instanceof CancellationException) {
            return "MQ_CANCELLED error=" + Fields.encode("cancelled (CompletableFuture.cancel)") + suffix;
        }
        return testeeError("the future failed with " + cause);
    }

    private static String batchFailure(Throwable e) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        return cause instanceof MqException ? batch(status((MqException) cause), ((MqException) cause).partialBatch())
                : failure(e, "");
    }

    private Background background(Fields r) {
        synchronized (calls) {
            return calls.get(r.string("call"));
        }
    }

    private Joined member(Fields r) {
        synchronized (members) {
            return members.get(r.string("member"));
        }
    }

    private Push push(Fields r) {
        synchronized (pushes) {
            return pushes.get(r.string("subscription"));
        }
    }

    // ---- requests ---------------------------------------------------------------------------

    private String run(Fields r) {
        try {
            return dispatch(r);
        } catch (MqException e) {
            return status(e);
        } catch (RuntimeException e) {
            return unexpected(e);
        }
    }

    private String dispatch(Fields r) {
        switch (r.verb) {
            case "hello":
                return r.integer("protocol", 0) == 1 ? "MQ_OK protocol=1" : testeeError("protocol 1 only");
            case "broker_new": {
                BrokerOptions.Builder o = BrokerOptions.builder();
                if (kafkaBootstrap != null) {
                    o.kafkaBootstrap(kafkaBootstrap);  // Kafka's time is the cluster's: no manual clock
                } else {
                    o.clock(clock);
                }
                if (r.has("max_message_bytes")) {
                    o.maxMessageBytes(r.integer("max_message_bytes", 0));
                }
                broker = Broker.create(o.build());
                return "MQ_OK";
            }
            case "clock":
                if (kafkaBootstrap != null) {
                    return testeeError("no manual clock on the Kafka backend");
                }
                clock.advance(Duration.ofNanos(r.integer("advance_ns", 0)));
                return "MQ_OK";
            case "topic_create": {
                TopicConfig.Builder c = TopicConfig.builder();
                if (r.has("partitions")) {
                    c.partitions(i32(r, "partitions"));
                }
                if (r.has("capacity")) {
                    c.capacity(r.integer("capacity", 0));
                }
                if (r.has("max_bytes")) {
                    c.maxBytes(r.integer("max_bytes", 0));
                }
                if (r.has("ack_timeout_ms")) {
                    c.ackTimeout(Duration.ofMillis(r.integer("ack_timeout_ms", 0)));
                }
                if (r.has("max_age_ms")) {
                    c.maxAge(Duration.ofMillis(r.integer("max_age_ms", 0)));
                }
                if (r.has("retention")) {
                    c.retention(r.raw("retention").equals("bounded") ? Retention.BOUNDED : Retention.UNTIL_ACKED);
                }
                broker.createTopic(r.string("topic"), c.build());
                if (kafkaBootstrap != null) {
                    kafkaTopics.add(r.string("topic"));
                }
                return "MQ_OK";
            }
            case "subscribe": {
                GroupOptions.Builder o = GroupOptions.builder();
                if (r.has("start")) {
                    o.start(r.raw("start").equals("earliest") ? StartPosition.EARLIEST : StartPosition.LATEST);
                }
                if (r.has("max_deliveries")) {
                    o.maxDeliveries(r.integer("max_deliveries", 0));
                }
                if (r.has("dead_letter_topic")) {
                    o.deadLetterTopic(r.string("dead_letter_topic"));
                }
                if (r.has("share")) {
                    String share = r.raw("share");
                    o.share(share.equals("all") ? ShareMode.ALL : share.equals("key") ? ShareMode.KEY : ShareMode.NONE);
                }
                if (r.has("max_acquired")) {
                    o.maxAcquired(r.integer("max_acquired", 0));
                }
                broker.subscribeGroup(r.string("topic"), r.string("group"), o.build());
                return "MQ_OK";
            }
            case "unsubscribe":
                broker.unsubscribeGroup(r.string("topic"), r.string("group"));
                return "MQ_OK";
            case "topic_delete":
                broker.deleteTopic(r.string("topic"));
                return "MQ_OK";
            case "broker_close":
                broker.shutdown();
                return "MQ_OK";
            case "publish":
                return publish(r);
            case "publish_batch":
                return publishBatch(r);
            case "poll": {
                Cursor c = handle(r, "cursor", Cursor.class);
                return pollReply(() -> c != null ? c.poll(i32(r, "max"), waitOf(r))
                        : broker.poll(r.string("topic"), r.string("group"), i32(r, "partition"), i32(r, "max"),
                                waitOf(r)));
            }
            case "ack_poll": {
                Cursor c = handle(r, "cursor", Cursor.class);
                return pollReply(() -> c != null ? c.ackPoll(r.integer("offset", 0), i32(r, "max"), waitOf(r))
                        : broker.ackPoll(r.string("topic"), r.string("group"), i32(r, "partition"),
                                r.integer("offset", 0), i32(r, "max"), waitOf(r)));
            }
            case "ack": {
                Cursor c = handle(r, "cursor", Cursor.class);
                if (c != null) {
                    c.ack(r.integer("offset", 0));
                } else {
                    broker.ack(r.string("topic"), r.string("group"), i32(r, "partition"), r.integer("offset", 0));
                }
                return "MQ_OK";
            }
            case "publisher_open":
                putHandle(r.string("publisher"), broker.publisher(r.string("topic")));
                return "MQ_OK";
            case "cursor_open":
                putHandle(r.string("cursor"), broker.cursor(r.string("topic"), r.string("group"), i32(r, "partition")));
                return "MQ_OK";
            case "publisher_close":
            case "cursor_close": {
                AutoCloseable h = handle(r, r.verb.startsWith("publisher") ? "publisher" : "cursor", AutoCloseable.class);
                if (h == null) {
                    return testeeError("no such handle");
                }
                closeHandle(h);
                return "MQ_OK";
            }
            case "nack":
                broker.nackDelayed(r.string("topic"), r.string("group"), i32(r, "partition"),
                        Duration.ofMillis(r.integer("delay_ms", 0)));
                return "MQ_OK";
            case "extend_lease":
                broker.extendLease(r.string("topic"), r.string("group"), i32(r, "partition"));
                return "MQ_OK";
            case "settle": {
                String a = r.raw("action");
                SettleAction action = a.equals("accept") ? SettleAction.ACCEPT
                        : a.equals("release") ? SettleAction.RELEASE
                        : a.equals("reject") ? SettleAction.REJECT : SettleAction.RENEW;
                broker.settle(r.string("topic"), r.string("group"), i32(r, "partition"), r.integer("offset", 0),
                        r.integer("delivery_count", 0), action, Duration.ofMillis(r.integer("delay_ms", 0)));
                return "MQ_OK";
            }
            case "seek": {
                String to = r.raw("offset");
                long offset = to.equals("earliest") ? Broker.OFFSET_EARLIEST
                        : to.equals("end") ? Broker.OFFSET_END : Long.parseLong(to);
                broker.seek(r.string("topic"), r.string("group"), i32(r, "partition"), offset);
                return "MQ_OK";
            }
            case "partition_describe":
                return "MQ_OK text=" + Fields.encode(broker.describe(r.string("topic"), i32(r, "partition")));
            case "topic_list":
                return names(broker.topics());
            case "group_list":
                return names(broker.groups(r.string("topic")));
            case "topic_get_info": {
                TopicInfo t = broker.topicInfo(r.string("topic"));
                return "MQ_OK partitions=" + t.partitions() + " capacity=" + t.capacity() + " max_bytes="
                        + t.maxBytes() + " ack_timeout_ms=" + t.ackTimeout().toMillis() + " retention="
                        + (t.retention() == Retention.BOUNDED ? "bounded" : "until_acked") + " max_age_ms="
                        + t.maxAge().toMillis();
            }
            case "partition_get_info": {
                PartitionInfo i = broker.partitionInfo(r.string("topic"), i32(r, "partition"));
                return "MQ_OK start=" + i.start() + " end=" + i.end() + " backlog=" + i.backlog() + " capacity="
                        + i.capacity() + " retained_bytes=" + i.retainedBytes() + " max_bytes=" + i.maxBytes()
                        + " producer_waits=" + i.producerWaits() + " max_backlog=" + i.maxBacklog() + " dropped="
                        + i.dropped() + " oldest_timestamp_ns=" + i.oldestTimestampNanos() + " oldest_age_ns="
                        + i.oldestAgeNanos();
            }
            case "group_get_info": {
                GroupInfo g = broker.groupInfo(r.string("topic"), r.string("group"), i32(r, "partition"));
                return "MQ_OK committed=" + g.committed() + " next=" + g.next() + " lag=" + g.lag() + " in_flight="
                        + g.inFlight() + " lost=" + g.lost() + " dead_lettered=" + g.deadLettered()
                        + " next_age_ns=" + g.nextAgeNanos() + " paused_until_ns=" + g.pausedUntilNanos()
                        + " acquired=" + g.acquired() + " available=" + g.available() + " delayed=" + g.delayed()
                        + " rejected=" + g.rejected() + " oldest_unsettled_age_ns=" + g.oldestUnsettledAgeNanos()
                        + " delivered=" + g.deliveredOnce() + "," + g.deliveredTwice() + "," + g.deliveredThrice()
                        + "," + g.deliveredMore();
            }
            case "key_murmur2":
                return "MQ_OK hash=" + Broker.murmur2(r.bytes("key"));
            case "key_partition":
                return "MQ_OK partition=" + Broker.partitionFor(r.bytes("key"), i32(r, "partitions"));
            case "assignment_round_robin":
                return "MQ_OK owned=" + joinInts(Broker.roundRobin(i32(r, "partitions"), i32(r, "members"),
                        i32(r, "member")));
            case "subscription_open":
                return subscriptionOpen(r);
            case "subscription_close": {
                Push p = push(r);
                if (p == null) {
                    return testeeError("no such subscription");
                }
                try {
                    if (p.sub != null) {
                        p.sub.close();
                    }
                } catch (MqException e) {
                    return status(e) + " frees=-";
                }
                return "MQ_OK frees=-";
            }
            case "calls": {
                Push p = push(r);
                return p == null ? testeeError("no such subscription") : p.recorded();
            }
            case "frees":
                // Java releases the handler at close; no public API observes it (the binding's
                // own tests show the release happens once).
                return push(r) == null ? testeeError("no such subscription") : "MQ_OK frees=-";
            case "handler_extend_lease":
                HandlerContext.current().extendLease();
                return "MQ_OK";
            case "handler_set_nack_delay":
                HandlerContext.current().nackDelay(Duration.ofMillis(r.integer("delay_ms", 0)));
                return "MQ_OK";
            case "member_join":
                return memberJoin(r);
            case "rebalances": {
                Joined j = member(r);
                return j == null ? testeeError("no such member") : j.recorded();
            }
            case "await": {
                Background bg = background(r);
                if (bg == null) {
                    return testeeError("no such call");
                }
                String reply = bg.reply;
                return reply == null ? "pending" : reply;
            }
            case "cancel": {
                Background bg = background(r);
                if (bg == null) {
                    return testeeError("no such call");
                }
                if (bg.thread != null) {
                    bg.thread.interrupt();  // Java's cancellation of a blocking call
                } else if (bg.futureOf != null) {
                    bg.futureOf.cancel(true);  // the CompletableFuture's: triggers the call's token
                }
                return "MQ_OK";
            }
            case "end":
                return end();
            default:
                if (r.verb.startsWith("member_")) {
                    return memberCall(r);
                }
                return testeeError("unknown verb " + r.verb);
        }
    }

    private static String names(List<String> names) {
        StringBuilder sb = new StringBuilder("MQ_OK");
        for (String n : names) {
            sb.append(" name=").append(Fields.encode(n));
        }
        return sb.toString();
    }

    private static List<Header> headersOf(String raw) {
        int colon = raw.indexOf(':');
        return List.of(Header.ofBytes(Fields.decode(raw.substring(0, colon)), Fields.decode(raw.substring(colon + 1))));
    }

    /** The payload=/key=/header=/delay_ms= runs of a request. */
    private static List<PublishRecord> records(Fields r) {
        List<PublishRecord> out = new ArrayList<>();
        byte[] key = null;
        byte[] payload = null;
        List<Header> headers = new ArrayList<>();
        Duration delay = Duration.ZERO;
        for (String[] f : r.fields) {
            switch (f[0]) {
                case "payload":
                    if (payload != null) {
                        out.add(new PublishRecord(key, payload, headers).withDelay(delay));
                    }
                    payload = Fields.decode(f[1]);
                    key = null;
                    headers = new ArrayList<>();
                    delay = Duration.ZERO;
                    break;
                case "key":
                    key = Fields.decode(f[1]);
                    break;
                case "header":
                    headers.addAll(headersOf(f[1]));
                    break;
                case "delay_ms":
                    delay = Duration.ofMillis(Long.parseLong(f[1]));
                    break;
                default:
                    break;
            }
        }
        if (payload != null) {
            out.add(new PublishRecord(key, payload, headers).withDelay(delay));
        }
        return out;
    }

    private String publish(Fields r) {
        PublishRecord rec = records(r).get(0);
        Publisher p = handle(r, "publisher", Publisher.class);
        // A delayed single message goes through the binding's delayed publish.
        PublishResult res;
        if (p != null) {
            res = rec.delay().isZero() ? p.publish(rec.key(), rec.value(), rec.headers(), waitOf(r))
                    : p.publishDelayed(rec.key(), rec.value(), rec.headers(), rec.delay(), waitOf(r));
        } else {
            res = rec.delay().isZero()
                    ? broker.publish(r.string("topic"), rec.key(), rec.value(), rec.headers(), waitOf(r))
                    : broker.publishDelayed(r.string("topic"), rec.key(), rec.value(), rec.headers(), rec.delay(),
                            waitOf(r));
        }
        return "MQ_OK partition=" + res.partition() + " offset=" + res.offset();
    }

    /**
     * The handle a request names in field {@code field} (publisher= or cursor=), or null when it
     * names none; a name that is no open handle of that kind is the testee's error.
     */
    private <T> T handle(Fields r, String field, Class<T> kind) {
        if (!r.has(field)) {
            return null;
        }
        AutoCloseable h;
        synchronized (handles) {
            h = handles.get(r.string(field));
        }
        if (!kind.isInstance(h)) {
            throw new IllegalStateException("no open " + field + " named " + r.string(field));
        }
        return kind.cast(h);
    }

    private void putHandle(String name, AutoCloseable h) {
        synchronized (handles) {
            handles.put(name, h);
        }
    }

    private static void closeHandle(AutoCloseable h) {
        try {
            h.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing a handle threw " + e, e);  // they never throw
        }
    }

    private static String batch(String status, BatchResult b) {
        StringBuilder sb = new StringBuilder(status);
        if (b != null) {
            sb.append(" published=").append(b.published());
            for (PublishResult p : b.results()) {
                sb.append(" result=").append(p.partition()).append(':').append(p.offset());
            }
        }
        return sb.toString();
    }

    private String publishBatch(Fields r) {
        Publisher p = handle(r, "publisher", Publisher.class);
        try {
            return batch("MQ_OK", p != null ? p.publishBatch(records(r), waitOf(r))
                    : broker.publishBatch(r.string("topic"), records(r), waitOf(r)));
        } catch (MqException e) {
            return batch(status(e), e.partialBatch());
        }
    }

    private interface PollCall {
        List<Message> poll();
    }

    private static String pollReply(PollCall call) {
        List<Message> got;
        try {
            got = call.poll();
        } catch (MqException e) {
            return status(e) + " count=0";
        }
        if (got.isEmpty()) {
            return "MQ_TIMEOUT error= count=0";  // the binding's empty list: the wait ended with nothing
        }
        StringBuilder sb = new StringBuilder("MQ_OK count=").append(got.size());
        for (Message m : got) {
            putMessage(sb, m);
        }
        return sb.toString();
    }

    private String subscriptionOpen(Fields r) {
        Push p = new Push(r);
        synchronized (pushes) {
            pushes.put(r.string("subscription"), p);
        }
        SubscribeOptions.Builder o = SubscribeOptions.builder();
        if (r.has("prefetch")) {
            o.prefetch(i32(r, "prefetch"));
        }
        if (r.has("partitions")) {
            o.partitions(intList(r.raw("partitions")));
        }
        try {
            p.sub = broker.subscribe(r.string("topic"), r.string("group"), p::handle, o.build());
        } catch (MqException e) {
            return status(e) + " frees=-";
        }
        return "MQ_OK frees=-";
    }

    private String memberJoin(Fields r) {
        Joined j = new Joined();
        synchronized (members) {
            members.put(r.string("member"), j);
        }
        MemberOptions.Builder o = MemberOptions.builder().rebalanceListener(j::record);
        if (r.has("id")) {
            o.memberId(r.string("id"));
        }
        if (r.has("session_timeout_ms")) {
            o.sessionTimeout(Duration.ofMillis(r.integer("session_timeout_ms", 0)));
        }
        if (r.has("assignor")) {
            PartitionAssignor a = assignor(r.raw("assignor"));
            if (a != null) {
                o.assignor(a);
            }
        }
        j.member = broker.join(r.string("topic"), r.string("group"), o.build());
        return "MQ_OK id=" + Fields.encode(j.member.id());
    }

    private String memberCall(Fields r) {
        Joined j = member(r);
        if (j == null || j.member == null) {
            return testeeError("no such member");
        }
        Member m = j.member;
        switch (r.verb) {
            case "member_close":
                m.close();
                return "MQ_OK";
            case "member_get_assignment": {
                var a = m.assignment();
                return "MQ_OK generation=" + a.generation() + " partitions=" + joinInts(a.partitions());
            }
            case "member_poll":
                return pollReply(() -> m.poll(i32(r, "max"), waitOf(r)));
            case "member_ack_poll":
                return pollReply(() -> m.ackPoll(i32(r, "partition"), r.integer("offset", 0), i32(r, "max"),
                        waitOf(r)));
            case "member_ack":
                m.ack(i32(r, "partition"), r.integer("offset", 0));
                return "MQ_OK";
            case "member_nack":
                m.nackDelayed(i32(r, "partition"), Duration.ofMillis(r.integer("delay_ms", 0)));
                return "MQ_OK";
            case "member_extend_lease":
                m.extendLease(i32(r, "partition"));
                return "MQ_OK";
            default:
                return testeeError("unknown verb " + r.verb);
        }
    }

    private String end() {
        boolean good = true;
        if (broker != null) {
            try {
                broker.shutdown();  // wakes the background calls still waiting
            } catch (MqException e) {
                good = false;
            }
        }
        List<Background> bgs;
        synchronized (calls) {
            bgs = new ArrayList<>(calls.values());
        }
        for (Background bg : bgs) {
            if (bg.thread == null) {
                // A start= call: the broker's close completed it (MQ_CLOSED) before returning.
                good &= bg.futureOf == null || bg.futureOf.isDone();
                continue;
            }
            try {
                bg.thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            good &= !bg.thread.isAlive();
        }
        List<Push> ps;
        synchronized (pushes) {
            ps = new ArrayList<>(pushes.values());
        }
        for (Push p : ps) {
            try {
                if (p.sub != null) {
                    p.sub.close();
                }
            } catch (RuntimeException e) {
                good = false;
            }
        }
        List<Joined> js;
        synchronized (members) {
            js = new ArrayList<>(members.values());
        }
        for (Joined j : js) {
            try {
                if (j.member != null) {
                    j.member.close();
                }
            } catch (RuntimeException e) {
                good = false;
            }
        }
        if (broker != null) {
            broker.close();
            broker = null;
        }
        List<AutoCloseable> hs;
        synchronized (handles) {
            hs = new ArrayList<>(handles.values());
            handles.clear();
        }
        for (AutoCloseable h : hs) {  // after the broker: a handle outlives it
            try {
                closeHandle(h);
            } catch (RuntimeException e) {
                good = false;
            }
        }
        deleteKafkaTopics();
        return good ? "MQ_OK" : testeeError("closing what the scenario left open failed");
    }

    /**
     * The next scenario starts on a clean cluster: the topics this one created are deleted
     * through a second broker (the scenario's own may be closed, or its handle unusable). A
     * topic the scenario deleted itself is not there any more: that refusal is fine.
     */
    private void deleteKafkaTopics() {
        if (kafkaTopics.isEmpty()) {
            return;
        }
        try (Broker b = Broker.create(BrokerOptions.builder().kafkaBootstrap(kafkaBootstrap).build())) {
            for (String t : kafkaTopics) {
                try {
                    b.deleteTopic(t);
                } catch (MqException e) {
                    // gone already (the scenario deleted it), or the cluster refused: as in the C testee
                }
            }
        } catch (MqException e) {
            // no second broker: the C testee leaves the topics too
        }
        kafkaTopics.clear();
    }
}
