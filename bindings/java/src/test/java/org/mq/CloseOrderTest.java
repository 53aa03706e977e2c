package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every order of closing a broker, a push subscription and a member (and closes from inside
 * callbacks, twice, concurrently, or never): none crashes, hangs, or leaves a handler running.
 */
class CloseOrderTest {
    /** A broker with a running push subscription and a member, messages flowing. */
    static final class World {
        final Broker broker = Broker.create();
        final AtomicInteger handled = new AtomicInteger();
        final Subscription sub;
        final Member member;

        World() {
            broker.createTopic("t", TopicConfig.builder().partitions(2).build());
            broker.createTopic("u");
            sub = broker.subscribe("t", "push", (m, c) -> handled.incrementAndGet());
            member = broker.join("u", "pull");
            for (int i = 0; i < 20; i++) {
                broker.publish("t", null, new byte[] {(byte) i}, Broker.FOREVER);
            }
            Await.until("some handler calls", () -> handled.get() > 0);
        }

        Runnable closer(char c) {
            return c == 'b' ? broker::close : c == 's' ? sub::close : member::close;
        }
    }

    @TestFactory
    Stream<DynamicTest> everyOrderOfClosing() {
        List<String> orders = List.of("bsm", "bms", "sbm", "smb", "mbs", "msb");
        return orders.stream().map(order -> DynamicTest.dynamicTest("close " + order.replace("b", "broker ")
                .replace("s", "subscription ").replace("m", "member ").trim(), () -> {
                    World w = new World();
                    for (char c : order.toCharArray()) {
                        w.closer(c).run();
                    }
                    assertTrue(w.sub.isClosed());
                    assertTrue(w.member.isClosed());
                    int after = w.handled.get();
                    assertThrows(MqClosedException.class, () -> w.broker.publish("t", null, new byte[1], Duration.ZERO));
                    assertThrows(MqClosedException.class, () -> w.member.poll(1, Duration.ZERO));
                    assertEquals(after, w.handled.get(), "no handler runs after close");
                    for (char c : order.toCharArray()) {
                        w.closer(c).run();  // again: idempotent
                    }
                }));
    }

    @Test
    void brokerCloseFromInsideAHandlerFinishesOnceTheHandlerReturns() throws Exception {
        Broker broker = Broker.create();
        broker.createTopic("t");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch inHandler = new CountDownLatch(1);
        Subscription sub = broker.subscribe("t", "g", (m, c) -> {
            try {
                broker.close();
            } catch (Throwable e) {
                thrown.set(e);
            }
            inHandler.countDown();
        });
        broker.publish("t", null, new byte[1], Broker.FOREVER);
        assertTrue(inHandler.await(10, TimeUnit.SECONDS));
        assertEquals(null, thrown.get(), "Broker.close() is allowed in a handler");
        Await.until("the subscription to be closed by the broker's close", sub::isClosed);
        assertThrows(MqClosedException.class, () -> broker.publish("t", null, new byte[1], Duration.ZERO));
        broker.close();  // waits for the close in progress, which has finished
    }

    @Test
    void brokerCloseFromARebalanceListener() throws Exception {
        Broker broker = Broker.create();
        broker.createTopic("t");
        Member a = broker.join("t", "g", MemberOptions.builder().rebalanceListener((m, gen) -> {
            if (gen == 2) {
                m.broker().close();
            }
        }).build());
        Member b = broker.join("t", "g");  // its join runs a's listener, which closes the broker
        Await.until("both members closed by the broker's close", () -> a.isClosed() && b.isClosed());
        assertThrows(MqClosedException.class, () -> a.assignment());
    }

    @Test
    void concurrentClosesAllReturnAfterTheRelease() throws Exception {
        for (int round = 0; round < 20; round++) {
            World w = new World();
            List<CompletableFuture<Void>> closers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                int k = i;
                closers.add(CompletableFuture.runAsync(() -> w.closer("bsmb".charAt(k)).run()));
            }
            for (CompletableFuture<Void> c : closers) {
                c.get(10, TimeUnit.SECONDS);
            }
            assertTrue(w.sub.isClosed(), "subscription closed");
            assertTrue(w.member.isClosed(), "member closed");
        }
    }

    @Test
    void closeWhileCallsAreBlockedInsideWakesThem() throws Exception {
        Broker broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, new byte[1], Duration.ZERO);
        CompletableFuture<Throwable> publisher = CompletableFuture.supplyAsync(() -> {
            try {
                broker.publish("t", null, new byte[1], Broker.FOREVER);
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        Await.until("the publisher to block", () -> broker.partitionInfo("t", 0).producerWaits() == 1);
        broker.close();
        assertTrue(publisher.get(10, TimeUnit.SECONDS) instanceof MqClosedException);
    }

    @Test
    void anUnclosedBrokerIsReleasedByTheCleaner() throws Exception {
        WeakReference<Broker> ref = dropABroker();
        Await.until("the broker to be collected", () -> {
            System.gc();
            return ref.get() == null;
        });
        // Its Cleaner closes and releases it on the cleaner thread; nothing to observe but that
        // the process carries on (and the JVM-exit test shows exit is not held up).
    }

    private static WeakReference<Broker> dropABroker() {
        Broker b = Broker.create();
        b.createTopic("t");
        b.subscribeGroup("t", "g");
        b.publish("t", null, new byte[1], Duration.ZERO);
        Member m = b.join("t", "h");
        m.poll(1, Duration.ZERO);
        return new WeakReference<>(b);
    }

    @Test
    void aRunningSubscriptionKeepsItsBrokerReachable() {
        AtomicInteger handled = new AtomicInteger();
        WeakReference<Broker> ref = subscribeAndDrop(handled);
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Broker b = ref.get();
        assertTrue(b != null, "a broker with a live subscription is not collected");
        b.publish("t", null, new byte[1], Broker.FOREVER);
        Await.until("the dropped subscription still handles", () -> handled.get() == 1);
        b.close();
    }

    private static WeakReference<Broker> subscribeAndDrop(AtomicInteger handled) {
        Broker b = Broker.create();
        b.createTopic("t");
        b.subscribe("t", "g", (m, c) -> handled.incrementAndGet());
        return new WeakReference<>(b);
    }
}
