package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Share groups (ABI 1.6): {@link GroupOptions.Builder#share(ShareMode)},
 * {@link GroupOptions.Builder#maxAcquired(long)}, {@link Broker#settle} and the share-group
 * fields of {@link GroupInfo}. Any number of polls share a partition; each acquires messages no
 * other poll holds, each under its own lock (the topic's ack timeout, 1 s here, on the manual
 * clock), settled one by one with the delivery count as the acquisition's token.
 */
class ShareGroupTest {
    private static final Duration LOCK = Duration.ofSeconds(1);
    private ManualClock clock;
    private Broker broker;

    @BeforeEach
    void setUp() {
        clock = ManualClock.startingAt(1_000_000_000L);
        broker = Broker.create(BrokerOptions.builder().clock(clock).build());
        broker.createTopic("t", TopicConfig.builder().capacity(100).ackTimeout(LOCK).build());
        broker.createTopic("dlt");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    private void share(String group, ShareMode mode) {
        broker.subscribeGroup("t", group, GroupOptions.builder().share(mode).build());
    }

    private void publish(String... values) {
        for (String v : values) {
            broker.publish("t", null, b(v), Duration.ZERO);
        }
    }

    private void publishKeyed(String key, String value) {
        broker.publish("t", b(key), b(value), Duration.ZERO);
    }

    private List<Message> poll(String group, int max) {
        return broker.poll("t", group, 0, max, Duration.ZERO);
    }

    private static List<Long> offsets(List<Message> ms) {
        List<Long> out = new ArrayList<>();
        for (Message m : ms) {
            out.add(m.offset());
        }
        return out;
    }

    private static List<Integer> counts(List<Message> ms) {
        List<Integer> out = new ArrayList<>();
        for (Message m : ms) {
            out.add(m.deliveryCount());
        }
        return out;
    }

    @Test
    void theLibraryIsOneSixOrLater() {
        assertTrue(Broker.versionNumber() >= 1_006_000, Broker.version());
    }

    @Test
    void pollsOfOnePartitionAcquireWhatNoOtherPollHolds() {
        share("w", ShareMode.ALL);
        broker.subscribeGroup("t", "ordered");
        publish("a", "b", "c", "d");
        List<Message> first = poll("w", 2);
        List<Message> second = poll("w", 2);
        assertEquals(List.of(0L, 1L), offsets(first));
        assertEquals(List.of(2L, 3L), offsets(second));
        assertEquals(List.of(1, 1), counts(second));
        assertEquals(List.of(), offsets(poll("w", 10)), "everything is held");
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(0, g.committed());
        assertEquals(4, g.next());
        assertEquals(4, g.acquired());
        assertEquals(0, g.available());
        assertEquals(4, g.deliveredOnce());
        assertEquals(0, g.deliveredTwice() + g.deliveredThrice() + g.deliveredMore());
        // The ordered group beside it is untouched, and reports no share-group state.
        assertEquals(List.of(0L, 1L, 2L, 3L), offsets(poll("ordered", 10)));
        GroupInfo o = broker.groupInfo("t", "ordered", 0);
        assertEquals(0, o.acquired());
        assertEquals(0, o.deliveredOnce());
    }

    @Test
    void twoWorkerThreadsShareOnePartitionWithoutOverlap() throws Exception {
        try (Broker real = Broker.create()) {
            real.createTopic("jobs", TopicConfig.builder().capacity(1000).build());
            real.subscribeGroup("jobs", "w", GroupOptions.builder().share(ShareMode.ALL).build());
            final int n = 300;
            for (int i = 0; i < n; i++) {
                real.publish("jobs", null, b("job" + i), Duration.ZERO);
            }
            Set<Long> seen = ConcurrentHashMap.newKeySet();
            AtomicInteger duplicates = new AtomicInteger();
            AtomicInteger done = new AtomicInteger();
            CyclicBarrier start = new CyclicBarrier(2);
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                List<Future<Integer>> workers = new ArrayList<>();
                for (int w = 0; w < 2; w++) {
                    workers.add(pool.submit(() -> {
                        start.await(10, TimeUnit.SECONDS);
                        int mine = 0;
                        while (done.get() < n) {
                            for (Message m : real.poll("jobs", "w", 0, 7, Duration.ofMillis(50))) {
                                if (!seen.add(m.offset())) {
                                    duplicates.incrementAndGet();
                                }
                                real.settle("w", m, SettleAction.ACCEPT);
                                done.incrementAndGet();
                                mine++;
                            }
                        }
                        return mine;
                    }));
                }
                int total = 0;
                for (Future<Integer> f : workers) {
                    total += f.get(60, TimeUnit.SECONDS);
                }
                assertEquals(n, total);
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, duplicates.get(), "a message was acquired by two polls");
            assertEquals(n, seen.size());
            GroupInfo g = real.groupInfo("jobs", "w", 0);
            assertEquals(n, g.committed());
            assertEquals(0, g.acquired());
            assertEquals(-1, g.oldestUnsettledAgeNanos());
            assertEquals(0, real.partitionInfo("jobs", 0).backlog(), "accepted messages are trimmed");
        }
    }

    @Test
    void acceptsComeInAnyOrderAndCommittedIsTheOldestUnsettled() {
        share("w", ShareMode.ALL);
        publish("a", "b", "c");
        List<Message> got = poll("w", 10);
        broker.settle("t", "w", 0, 2, 1, SettleAction.ACCEPT);
        broker.settle("w", got.get(1), SettleAction.ACCEPT);
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(0, g.committed(), "offset 0 is still unsettled");
        assertEquals(1, g.acquired());
        broker.settle("w", got.get(0), SettleAction.ACCEPT);
        g = broker.groupInfo("t", "w", 0);
        assertEquals(3, g.committed());
        assertEquals(0, g.acquired());
        MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                () -> broker.settle("w", got.get(0), SettleAction.ACCEPT));
        assertTrue(e.getMessage().contains("it is settled"), e.getMessage());
        assertEquals(Status.NOT_IN_FLIGHT, e.status());
    }

    @Test
    void aReleaseHandsTheMessageOutAgainAndTheOldTokenIsRefused() {
        share("w", ShareMode.ALL);
        publish("a", "b");
        List<Message> got = poll("w", 10);
        broker.settle("w", got.get(0), SettleAction.RELEASE);
        assertEquals(1, broker.groupInfo("t", "w", 0).available());
        List<Message> again = poll("w", 10);
        assertEquals(List.of(0L), offsets(again));
        assertEquals(List.of(2), counts(again));
        MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                () -> broker.settle("w", got.get(0), SettleAction.ACCEPT));
        assertTrue(e.getMessage().contains("another poll acquired it since"), e.getMessage());
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(1, g.deliveredOnce());
        assertEquals(1, g.deliveredTwice());
        broker.settle("w", again.get(0), SettleAction.ACCEPT);
        broker.settle("w", got.get(1), SettleAction.ACCEPT);
        assertEquals(2, broker.groupInfo("t", "w", 0).committed());
    }

    @Test
    void aDelayedReleaseWaitsOnTheBrokerClock() {
        share("w", ShareMode.ALL);
        publish("a");
        Message m = poll("w", 1).get(0);
        broker.settle("w", m, SettleAction.RELEASE, Duration.ofMillis(500));
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(0, g.acquired());
        assertEquals(1, g.delayed());
        assertEquals(0, g.available());
        clock.advance(Duration.ofMillis(499));
        assertEquals(List.of(), offsets(poll("w", 10)));
        clock.advance(Duration.ofMillis(1));
        List<Message> again = poll("w", 10);
        assertEquals(List.of(0L), offsets(again));
        assertEquals(List.of(2), counts(again));
        // The primitive form takes the delay as well.
        broker.settle("t", "w", 0, 0, 2, SettleAction.RELEASE, Duration.ofNanos(1));  // rounds up to 1 ms
        assertEquals(List.of(), offsets(poll("w", 10)));
        clock.advance(Duration.ofMillis(1));
        assertEquals(List.of(3), counts(poll("w", 10)));
    }

    @Test
    void aLockRunsOutUnlessRenewed() {
        share("w", ShareMode.ALL);
        publish("a", "b");
        List<Message> got = poll("w", 10);
        clock.advance(Duration.ofMillis(400));
        assertEquals(400_000_000L, broker.groupInfo("t", "w", 0).oldestUnsettledAgeNanos());
        broker.settle("w", got.get(0), SettleAction.RENEW);  // a's lock starts over
        clock.advance(Duration.ofMillis(700));  // b's lock ran out at 1000 ms; a's runs to 1400
        MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                () -> broker.settle("w", got.get(1), SettleAction.ACCEPT));
        assertTrue(e.getMessage().contains("its lock ran out"), e.getMessage());
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(1, g.acquired());
        assertEquals(1, g.available());
        List<Message> again = poll("w", 10);
        assertEquals(List.of(1L), offsets(again));
        assertEquals(List.of(2), counts(again));
        broker.settle("w", got.get(0), SettleAction.ACCEPT);  // still held: renewed
        broker.settle("w", again.get(0), SettleAction.ACCEPT);
        g = broker.groupInfo("t", "w", 0);
        assertEquals(2, g.committed());
        assertEquals(-1, g.oldestUnsettledAgeNanos());
    }

    @Test
    void keySharedKeepsPerKeyOrder() {
        share("k", ShareMode.KEY);
        share("all", ShareMode.ALL);
        publishKeyed("a", "a1");
        publishKeyed("a", "a2");
        publishKeyed("b", "b1");
        publish("n1");
        List<Message> got = poll("k", 10);
        assertEquals(List.of(0L, 2L, 3L), offsets(got), "a2 waits behind a1");
        assertEquals(List.of(), offsets(poll("k", 10)));
        broker.settle("k", got.get(0), SettleAction.RELEASE);
        List<Message> again = poll("k", 10);
        assertEquals(List.of(0L), offsets(again), "a1 again, still before a2");
        broker.settle("k", again.get(0), SettleAction.ACCEPT);
        assertEquals(List.of(1L), offsets(poll("k", 10)));
        // A plain share group has no such rule.
        assertEquals(List.of(0L, 1L, 2L, 3L), offsets(poll("all", 10)));
    }

    @Test
    void aRejectGoesToTheDeadLetterTopicOrIsDropped() {
        broker.subscribeGroup("t", "w", GroupOptions.builder().share(ShareMode.ALL).maxDeliveries(5)
                .deadLetterTopic("dlt").build());
        broker.subscribeGroup("dlt", "reader", GroupOptions.builder().start(StartPosition.EARLIEST).build());
        share("nodlt", ShareMode.ALL);
        publishKeyed("k", "poison");
        Message m = poll("w", 1).get(0);
        broker.settle("w", m, SettleAction.REJECT);
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(1, g.rejected());
        assertEquals(1, g.deadLettered());
        assertEquals(1, g.committed());
        List<Message> dead = broker.poll("dlt", "reader", 0, 10, Duration.ZERO);
        assertEquals(1, dead.size());
        assertEquals("poison", dead.get(0).valueAsString());
        assertEquals("k", dead.get(0).keyAsString());
        assertEquals(new DeadLetter("t", "w", 0, 0, 1), dead.get(0).deadLetter().orElseThrow());
        // Without a dead-letter topic a reject drops the message, and counts it.
        broker.settle("nodlt", poll("nodlt", 1).get(0), SettleAction.REJECT);
        GroupInfo n = broker.groupInfo("t", "nodlt", 0);
        assertEquals(1, n.rejected());
        assertEquals(0, n.deadLettered());
        assertEquals(List.of(), offsets(poll("nodlt", 10)));
    }

    @Test
    void maxDeliveriesDeadLettersARepeatedlyReleasedMessage() {
        broker.subscribeGroup("t", "w", GroupOptions.builder().share(ShareMode.ALL).maxDeliveries(2)
                .deadLetterTopic("dlt").build());
        broker.subscribeGroup("dlt", "reader", GroupOptions.builder().start(StartPosition.EARLIEST).build());
        publish("flaky");
        broker.settle("w", poll("w", 1).get(0), SettleAction.RELEASE);
        Message second = poll("w", 1).get(0);
        assertEquals(2, second.deliveryCount());
        broker.settle("w", second, SettleAction.RELEASE);
        assertEquals(List.of(), offsets(poll("w", 10)), "a third hand-out dead-letters it instead");
        Message dead = broker.poll("dlt", "reader", 0, 10, Duration.ZERO).get(0);
        assertEquals(new DeadLetter("t", "w", 0, 0, 2), dead.deadLetter().orElseThrow());
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(1, g.deadLettered());
        assertEquals(0, g.rejected());
    }

    @Test
    void maxAcquiredBoundsWhatIsHeldAtOnce() {
        broker.subscribeGroup("t", "w", GroupOptions.builder().share(ShareMode.ALL).maxAcquired(2).build());
        publish("a", "b", "c");
        List<Message> got = poll("w", 10);
        assertEquals(List.of(0L, 1L), offsets(got));
        assertEquals(List.of(), offsets(poll("w", 10)), "at the limit");
        broker.settle("w", got.get(1), SettleAction.ACCEPT);
        assertEquals(List.of(2L), offsets(poll("w", 10)));
    }

    @Test
    void ackAcceptsNackReleasesAllAndExtendLeaseRenewsAll() {
        share("w", ShareMode.ALL);
        publish("a", "b", "c");
        poll("w", 10);
        broker.ack("t", "w", 0, 1);  // accepts offset 1 alone: not cumulative
        GroupInfo g = broker.groupInfo("t", "w", 0);
        assertEquals(2, g.acquired());
        assertEquals(0, g.committed());
        clock.advance(Duration.ofMillis(900));
        broker.extendLease("t", "w", 0);
        clock.advance(Duration.ofMillis(900));
        assertEquals(2, broker.groupInfo("t", "w", 0).acquired(), "both locks renewed");
        broker.nack("t", "w", 0);
        List<Message> again = poll("w", 10);
        assertEquals(List.of(0L, 2L), offsets(again));
        assertEquals(List.of(2, 2), counts(again));
    }

    @Test
    void theAsynchronousPollAcquiresToo() throws Exception {
        share("w", ShareMode.ALL);
        publish("a", "b");
        List<Message> first = broker.pollAsync("t", "w", 0, 1, Duration.ZERO).get(10, TimeUnit.SECONDS);
        List<Message> second = broker.pollAsync("t", "w", 0, 1, Duration.ZERO).get(10, TimeUnit.SECONDS);
        assertEquals(List.of(0L), offsets(first));
        assertEquals(List.of(1L), offsets(second));
        broker.settle("w", second.get(0), SettleAction.ACCEPT);
        broker.settle("w", first.get(0), SettleAction.ACCEPT);
        assertEquals(2, broker.groupInfo("t", "w", 0).committed());
    }

    @Test
    void misuseIsRefused() {
        broker.subscribeGroup("t", "ordered");
        share("w", ShareMode.ALL);
        publish("a");
        poll("ordered", 1);
        MqInvalidArgumentException e = assertThrows(MqInvalidArgumentException.class,
                () -> broker.settle("t", "ordered", 0, 0, 1, SettleAction.ACCEPT));
        assertTrue(e.getMessage().contains("group ordered is not a share group"), e.getMessage());
        Message m = poll("w", 1).get(0);
        e = assertThrows(MqInvalidArgumentException.class,
                () -> broker.settle("w", m, SettleAction.RENEW, Duration.ofMillis(5)));
        assertTrue(e.getMessage().contains("only MQ_SETTLE_RELEASE takes a delay"), e.getMessage());
        e = assertThrows(MqInvalidArgumentException.class,
                () -> broker.subscribeGroup("t", "bad", GroupOptions.builder().maxAcquired(5).build()));
        assertTrue(e.getMessage().contains("max_acquired is 5 but the group is not a share group"), e.getMessage());
        assertThrows(MqInvalidArgumentException.class, () -> broker.subscribeGroup("t", "big",
                GroupOptions.builder().share(ShareMode.ALL).maxAcquired(1_000_001).build()));
        assertThrows(MqInvalidArgumentException.class, () -> broker.subscribeGroup("t", "huge",
                GroupOptions.builder().share(ShareMode.ALL).maxAcquired(1L << 32).build()));
        assertThrows(MqInvalidArgumentException.class,
                () -> broker.settle("t", "w", 0, 0, -1, SettleAction.ACCEPT));
        assertThrows(MqNotInFlightException.class, () -> broker.settle("t", "w", 0, 9, 1, SettleAction.ACCEPT));
        assertThrows(MqNoSuchGroupException.class, () -> broker.settle("t", "nope", 0, 0, 1, SettleAction.ACCEPT));
        assertThrows(MqNoSuchPartitionException.class, () -> broker.settle("t", "w", 7, 0, 1, SettleAction.ACCEPT));
        assertThrows(NullPointerException.class, () -> broker.settle("w", m, null));
        assertThrows(NullPointerException.class, () -> GroupOptions.builder().share(null));
        // Push subscriptions and members take partitions whole: a share group is refused.
        assertThrows(MqInvalidArgumentException.class, () -> broker.subscribe("t", "w", (msg, ctx) -> { }));
        assertThrows(MqInvalidArgumentException.class, () -> broker.join("t", "w"));
        // None of this disturbed the acquisition.
        broker.settle("w", m, SettleAction.ACCEPT);
        assertEquals(0, broker.groupInfo("t", "w", 0).acquired());
    }

    @Test
    void settleAfterCloseThrowsClosed() {
        share("w", ShareMode.ALL);
        publish("a");
        Message m = poll("w", 1).get(0);
        broker.shutdown();
        assertThrows(MqClosedException.class, () -> broker.settle("w", m, SettleAction.ACCEPT));
    }

    @Test
    void theOldGroupInfoConstructorHasNoShareState() {
        GroupInfo g = new GroupInfo(1, 2, 3, 4, 5, 6, 7, 8);
        assertEquals(List.of(0L, 0L, 0L, 0L, -1L, 0L, 0L, 0L, 0L), List.of(g.acquired(), g.available(),
                g.delayed(), g.rejected(), g.oldestUnsettledAgeNanos(), g.deliveredOnce(), g.deliveredTwice(),
                g.deliveredThrice(), g.deliveredMore()));
        assertEquals(8, g.pausedUntilNanos());
    }

    @Test
    void theEnumsCarryTheCApisValues() {
        assertEquals(List.of(0, 1, 2), List.of(ShareMode.NONE.code, ShareMode.ALL.code, ShareMode.KEY.code));
        assertEquals(List.of(0, 1, 2, 3), List.of(SettleAction.ACCEPT.code, SettleAction.RELEASE.code,
                SettleAction.REJECT.code, SettleAction.RENEW.code));
        assertEquals(ShareMode.NONE, GroupOptions.defaults().share, "the library's default");
        assertEquals(0, GroupOptions.defaults().maxAcquired, "the library's default");
    }
}
