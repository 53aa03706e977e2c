package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PushTest {
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("payments", TopicConfig.builder().capacity(10).build());
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    private void publish(String... payloads) {
        for (String p : payloads) {
            broker.publish("payments", null, p.getBytes(UTF_8), Broker.FOREVER);
        }
    }

    private void awaitCommitted(long committed) {
        Await.until("ledger committed " + committed,
                () -> broker.groupInfo("payments", "ledger", 0).committed() == committed);
    }

    @Test
    void theSessionTimeoutReachesTheLibraryWhichChecksIt() {
        assertEquals(10_000, SubscribeOptions.defaults().sessionTimeoutMs, "mq_subscription_options_init's");
        // Refused by the library, so the value reached it; nothing was opened (the group stays free).
        for (Duration bad : List.of(Duration.ZERO, Duration.ofMillis(-5), Duration.ofMillis((1L << 40) + 1))) {
            MqInvalidArgumentException e = assertThrows(MqInvalidArgumentException.class,
                    () -> broker.subscribe("payments", "ledger", (m, ctx) -> { },
                            SubscribeOptions.builder().sessionTimeout(bad).build()), bad.toString());
            assertTrue(e.getMessage().contains("session_timeout_ms"), e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> SubscribeOptions.builder().sessionTimeout(null));

        // In-process the value is only checked: with the shortest one, an hour on the broker's
        // clock with no call from the subscription does not take its partitions away.
        ManualClock clock = ManualClock.startingAt(0);
        try (Broker b = Broker.create(BrokerOptions.builder().clock(clock).build())) {
            b.createTopic("t");
            List<String> got = new CopyOnWriteArrayList<>();
            Subscription sub = b.subscribe("t", "g", (m, ctx) -> got.add(m.valueAsString()),
                    SubscribeOptions.builder().sessionTimeout(Duration.ofNanos(1)).build());
            try {
                clock.advance(Duration.ofHours(1));
                try (Member late = b.join("t", "g", MemberOptions.defaults())) {
                    // The join rebalances: both stay members, the subscription first (it owns p0).
                    assertEquals(List.of(), late.assignment().partitions(), late.assignment().toString());
                }
                b.publish("t", null, "after an hour".getBytes(UTF_8), Broker.FOREVER);
                Await.until("the subscription's handler got the message", () -> got.size() == 1);
                assertEquals(List.of("after an hour"), got);
            } finally {
                sub.close();
            }
        }
    }

    @Test
    void theSpecPushStep() {
        List<String> calls = Collections.synchronizedList(new ArrayList<>());
        boolean[] failedOnce = {false};
        Subscription sub = broker.subscribe("payments", "ledger", (m, ctx) -> {
            boolean fail = m.valueAsString().equals("pay-2") && !failedOnce[0];
            calls.add(m.valueAsString() + "@" + m.offset() + (fail ? " fail" : " ok"));
            if (fail) {
                failedOnce[0] = true;
                ctx.nack();
            }
        });
        publish("pay-1", "pay-2", "pay-3");
        awaitCommitted(3);
        sub.close();
        assertEquals(List.of("pay-1@0 ok", "pay-2@1 fail", "pay-2@1 ok", "pay-3@2 ok"), calls);
        assertEquals("log empty, next offset 3, backlog 0/10; ledger 3/3", broker.describe("payments", 0));
    }

    @Test
    void aThrowingHandlerNacksAndReportsToTheHook() throws Exception {
        List<Throwable> reported = new CopyOnWriteArrayList<>();
        List<Integer> deliveries = new CopyOnWriteArrayList<>();
        RuntimeException boom = new IllegalStateException("boom");
        Subscription sub = broker.subscribe("payments", "ledger", (m, ctx) -> {
            deliveries.add(m.deliveryCount());
            if (m.deliveryCount() == 1) {
                throw boom;
            }
        }, SubscribeOptions.builder().onHandlerError((t, e) -> reported.add(e)).build());
        publish("pay-1");
        awaitCommitted(1);
        sub.close();
        assertEquals(List.of(1, 2), deliveries, "redelivered after the throw");
        assertEquals(1, reported.size());
        HandlerException he = assertInstanceOf(HandlerException.class, reported.get(0));
        assertEquals(boom, he.getCause());
        assertEquals(0, he.offset());
        assertEquals("ledger", he.group());
    }

    @Test
    void errorsAndAThrowingHookCannotCrashTheJvm() {
        List<Integer> deliveries = new CopyOnWriteArrayList<>();
        Subscription sub = broker.subscribe("payments", "ledger", (m, ctx) -> {
            deliveries.add(m.deliveryCount());
            if (m.deliveryCount() == 1) {
                throw new StackOverflowError("an Error, not an Exception");
            }
        }, SubscribeOptions.builder().onHandlerError((t, e) -> {
            throw new IllegalStateException("the hook fails too");
        }).build());
        publish("pay-1");
        awaitCommitted(1);
        sub.close();
        assertEquals(List.of(1, 2), deliveries);
    }

    @Test
    void closeFromItsOwnHandlerThrowsAClearException() throws Exception {
        AtomicReference<Subscription> self = new AtomicReference<>();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        Subscription sub = broker.subscribe("payments", "ledger", (m, ctx) -> {
            ready.await();
            try {
                self.get().close();
            } catch (Throwable t) {
                thrown.set(t);
            }
            done.countDown();
        });
        self.set(sub);
        ready.countDown();
        publish("pay-1");
        assertTrue(done.await(10, TimeUnit.SECONDS));
        MqDeadlockException e = assertInstanceOf(MqDeadlockException.class, thrown.get());
        assertEquals(Status.DEADLOCK, e.status());
        assertTrue(e.getMessage().contains("own handler"), e.getMessage());
        awaitCommitted(1);  // the subscription kept working
        assertTrue(!sub.isClosed());
        sub.close();
        assertTrue(sub.isClosed());
    }

    @Test
    void handlerContextExtendsLeaseAndDelaysNack() {
        List<String> statuses = new CopyOnWriteArrayList<>();
        Subscription sub = broker.subscribe("payments", "ledger", (m, ctx) -> {
            ctx.extendLease();
            if (m.deliveryCount() == 1) {
                ctx.nackDelay(Duration.ofMillis(20));
                statuses.add("delayed");
                ctx.nack();
                return;
            }
            assertThrows(MqInvalidArgumentException.class, () -> ctx.nackDelay(Duration.ofMillis(-1)));
            statuses.add("ok");
        });
        publish("pay-1");
        awaitCommitted(1);
        sub.close();
        assertEquals(List.of("delayed", "ok"), statuses);
        // Outside a handler the library refuses.
        assertThrows(MqInvalidArgumentException.class, () -> HandlerContext.current().extendLease());
    }

    @Test
    void ownershipIsEnforced() {
        Subscription a = broker.subscribe("payments", "ledger", (m, c) -> {},
                SubscribeOptions.builder().partitions(0).build());
        MqOwnedException e = assertThrows(MqOwnedException.class, () -> broker.subscribe("payments",
                "ledger", (m, c) -> {}, SubscribeOptions.builder().partitions(0).build()));
        assertTrue(e.getMessage().contains("owned"), e.getMessage());
        a.close();
        broker.subscribe("payments", "ledger", (m, c) -> {}, SubscribeOptions.builder().partitions(0).build())
                .close();
    }

    @Test
    void handlerThreadsAreDaemonsNamedForTheirGroup() throws Exception {
        AtomicReference<Thread> seen = new AtomicReference<>();
        CountDownLatch called = new CountDownLatch(1);
        Subscription sub = broker.subscribe("payments", "ledger", (m, c) -> {
            seen.set(Thread.currentThread());
            called.countDown();
        });
        publish("pay-1");
        assertTrue(called.await(10, TimeUnit.SECONDS));
        sub.close();
        assertTrue(seen.get().isDaemon(), "a library thread never holds up the JVM's exit");
        assertEquals("mq-push ledger@payments", seen.get().getName());
        // The loop's thread ended with the close and was detached: the JVM forgets it.
        Await.until("the library thread to be detached", () -> !seen.get().isAlive()
                && Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("mq-push ledger@payments")));
    }
}
