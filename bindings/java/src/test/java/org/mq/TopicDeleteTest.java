package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Broker.deleteTopic (ABI 1.1): what waits on the topic wakes with MqNoSuchTopicException, the
 * binding's objects on it (members, subscriptions) keep working as handles and close in any
 * order, and the name is free for a new, empty topic.
 */
class TopicDeleteTest {
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("other");
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(UTF_8);
    }

    /** Runs call on its own thread; the future holds what it threw (null if it returned). */
    private static CompletableFuture<Throwable> inBackground(Supplier<Object> call, AtomicReference<Thread> thread) {
        CompletableFuture<Throwable> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                call.get();
                f.complete(null);
            } catch (Throwable e) {
                f.complete(e);
            }
        });
        thread.set(t);
        t.start();
        return f;
    }

    @Test
    void waitingPublishesAndPollsWakeWithNoSuchTopic() throws Exception {
        broker.publish("t", null, bytes("a"), Duration.ZERO);  // capacity 1: full now
        broker.subscribeGroup("t", "h");
        broker.poll("t", "h", 0, 1, Duration.ZERO);  // h has nothing left to poll
        AtomicReference<Thread> publisher = new AtomicReference<>();
        AtomicReference<Thread> poller = new AtomicReference<>();
        CompletableFuture<Throwable> published = inBackground(
                () -> broker.publish("t", null, bytes("b"), Broker.FOREVER), publisher);
        CompletableFuture<Throwable> polled = inBackground(
                () -> broker.poll("t", "h", 0, 10, Broker.FOREVER), poller);
        Await.until("both calls to block", () -> broker.partitionInfo("t", 0).producerWaits() == 1
                && InterruptTest.inNativeCall(publisher.get()) && InterruptTest.inNativeCall(poller.get()));
        broker.deleteTopic("t");
        assertInstanceOf(MqNoSuchTopicException.class, published.get(10, TimeUnit.SECONDS));
        assertInstanceOf(MqNoSuchTopicException.class, polled.get(10, TimeUnit.SECONDS));
        assertFalse(publisher.get().isInterrupted(), "not an interrupt: the flag stays clear");
    }

    @Test
    void theNameIsFreeAndANewTopicOfItSharesNothing() {
        broker.publish("t", null, bytes("a"), Duration.ZERO);
        broker.deleteTopic("t");
        assertEquals(List.of("other"), broker.topics());
        assertThrows(MqNoSuchTopicException.class, () -> broker.publish("t", null, bytes("b"), Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> broker.poll("t", "g", 0, 1, Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> broker.ackPoll("t", "g", 0, 0, 1, Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> broker.partitionInfo("t", 0));
        assertThrows(MqNoSuchTopicException.class, () -> broker.groups("t"));
        assertThrows(MqNoSuchTopicException.class, () -> broker.deleteTopic("t"));

        broker.createTopic("t", TopicConfig.builder().partitions(2).build());
        assertEquals(List.of("other", "t"), broker.topics());
        assertEquals(List.of(), broker.groups("t"));
        assertEquals(0, broker.partitionInfo("t", 0).end());
        assertThrows(MqNoSuchGroupException.class, () -> broker.poll("t", "g", 0, 1, Duration.ZERO));
        broker.subscribeGroup("t", "g");
        assertEquals(0, broker.publish("t", bytes("k"), bytes("d"), Duration.ZERO).offset());
    }

    @Test
    void badNamesAndAShutDownBroker() {
        assertThrows(MqInvalidArgumentException.class, () -> broker.deleteTopic(null));
        assertThrows(MqInvalidArgumentException.class, () -> broker.deleteTopic("bad/name"));
        assertThrows(MqNoSuchTopicException.class, () -> broker.deleteTopic("nope"));
        assertEquals(List.of("other", "t"), broker.topics(), "nothing changed");
        broker.shutdown();
        assertThrows(MqClosedException.class, () -> broker.deleteTopic("t"));
        assertEquals(List.of("other", "t"), broker.topics());
        broker.close();
        assertThrows(MqClosedException.class, () -> broker.deleteTopic("t"));
    }

    @Test
    void membersOfADeletedTopicThrowNoSuchTopicAndStillClose() throws Exception {
        List<Long> generations = new CopyOnWriteArrayList<>();
        Member m = broker.join("t", "members", MemberOptions.builder().memberId("m")
                .rebalanceListener((member, generation) -> generations.add(generation)).build());
        Await.until("the first rebalance", () -> !generations.isEmpty());
        AtomicReference<Thread> poller = new AtomicReference<>();
        Member waiting = broker.join("t", "waiters");
        CompletableFuture<Throwable> polled = inBackground(() -> waiting.poll(10, Broker.FOREVER), poller);
        Await.until("the member's poll to block", () -> InterruptTest.inNativeCall(poller.get()));

        broker.deleteTopic("t");
        assertInstanceOf(MqNoSuchTopicException.class, polled.get(10, TimeUnit.SECONDS));
        assertThrows(MqNoSuchTopicException.class, () -> m.poll(1, Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> m.assignment());
        assertThrows(MqNoSuchTopicException.class, () -> m.ack(0, 0));
        assertThrows(MqNoSuchTopicException.class, () -> m.ackPoll(0, 0, 1, Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> m.nack(0));
        assertEquals("m", m.id(), "the id stays readable");
        int seen = generations.size();
        // A new topic of the name is not the old one's: the old member does not rebalance.
        broker.createTopic("t");
        Member fresh = broker.join("t", "members", MemberOptions.builder().memberId("m").build());
        assertEquals(List.of(0), fresh.assignment().partitions());
        m.close();
        waiting.close();
        assertTrue(m.isClosed());
        assertEquals(seen, generations.size(), "no listener call after the deletion");
        fresh.close();
    }

    @Test
    void aPushSubscriptionStopsAndClosesAsUsual() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        Subscription sub = broker.subscribe("t", "push", (msg, ctx) -> handled.incrementAndGet());
        broker.publish("t", null, bytes("a"), Broker.FOREVER);
        Await.until("the handler to run", () -> handled.get() == 1);
        broker.deleteTopic("t");
        broker.createTopic("t");
        broker.subscribeGroup("t", "push");
        broker.publish("t", null, bytes("b"), Duration.ZERO);
        assertFalse(sub.isClosed(), "the handle stays until closed");
        sub.close();
        assertTrue(sub.isClosed());
        assertEquals(1, handled.get(), "the old subscription never sees the new topic");
        assertEquals(1, broker.poll("t", "push", 0, 10, Duration.ZERO).size(), "the new topic's message is there");
    }

    @Test
    void aHandlerMayDeleteItsOwnTopic() throws Exception {
        CompletableFuture<Throwable> deleted = new CompletableFuture<>();
        Subscription sub = broker.subscribe("t", "push", (msg, ctx) -> {
            try {
                broker.deleteTopic("t");
                deleted.complete(null);
            } catch (Throwable e) {
                deleted.complete(e);
            }
        });
        broker.publish("t", null, bytes("a"), Broker.FOREVER);
        assertNull(deleted.get(10, TimeUnit.SECONDS), "deleteTopic returned inside the handler");
        assertEquals(List.of("other"), broker.topics());
        sub.close();
    }

    @Test
    void deadLetteringIntoADeletedTopicKeepsTheMessage() {
        broker.createTopic("dlq");
        broker.createTopic("work");
        broker.subscribeGroup("work", "w", GroupOptions.builder().maxDeliveries(1).deadLetterTopic("dlq").build());
        broker.publish("work", null, bytes("x"), Duration.ZERO);
        assertEquals(1, broker.poll("work", "w", 0, 1, Duration.ZERO).size());
        broker.nack("work", "w", 0);
        broker.deleteTopic("dlq");
        assertThrows(MqNoSuchTopicException.class, () -> broker.poll("work", "w", 0, 1, Duration.ZERO));
        GroupInfo g = broker.groupInfo("work", "w", 0);
        assertEquals(0, g.committed(), "the message stays at the head");
        assertEquals(0, g.deadLettered());
    }

    @Test
    void everyCloseOrderWithObjectsOfADeletedTopic() {
        for (int order = 0; order < 3; order++) {
            Broker b = Broker.create();
            b.createTopic("t");
            Member m = b.join("t", "members");
            Subscription s = b.subscribe("t", "push", (msg, ctx) -> {});
            b.deleteTopic("t");
            switch (order) {
                case 0 -> {
                    m.close();
                    s.close();
                    b.close();
                }
                case 1 -> {
                    b.close();  // closes both
                    assertTrue(m.isClosed() && s.isClosed());
                    m.close();
                    s.close();
                }
                default -> {
                    s.close();
                    b.shutdown();
                    m.close();
                    b.close();
                }
            }
        }
    }

    @Test
    void aDroppedMemberOfADeletedTopicIsReleasedByItsCleaner() {
        WeakReference<Member> ref = joinAndDrop();
        broker.deleteTopic("t");
        Await.until("the member to be collected", () -> {
            System.gc();
            return ref.get() == null;
        });
        broker.createTopic("t");  // the broker carries on; its close (tearDown) must not hang
    }

    private WeakReference<Member> joinAndDrop() {
        Member m = broker.join("t", "members");
        m.poll(1, Duration.ZERO);
        return new WeakReference<>(m);
    }
}
