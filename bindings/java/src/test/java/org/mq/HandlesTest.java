package org.mq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * ABI 1.7's handles: {@link Publisher} and {@link Cursor} do what the named calls do, on the
 * same log and group position; they hold their topic and group; every order of closing them
 * and their broker (and collection) is safe; their blocked calls end on a publish, the broker's
 * close, their own close and an interrupt.
 */
class HandlesTest {
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().partitions(2).capacity(4).build());
        broker.subscribeGroup("t", "g");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static List<String> values(List<Message> ms) {
        List<String> out = new ArrayList<>();
        for (Message m : ms) {
            out.add(m.valueAsString());
        }
        return out;
    }

    static PublishRecord rec(byte[] key, String value) {
        return new PublishRecord(key, b(value), List.of());
    }

    @Test
    void theLibraryIsOneSevenOrLater() {
        assertTrue(Broker.versionNumber() >= 1_007_000, Broker.version());
    }

    @Test
    void aRoundTripThroughHandles() {
        try (Publisher p = broker.publisher("t"); Cursor c0 = broker.cursor("t", "g", 0)) {
            assertEquals("t", p.topic());
            assertSame(broker, p.broker());
            assertEquals("g", c0.group());
            assertEquals(0, c0.partition());
            PublishResult r = p.publish(b("k"), b("v0"), List.of(Header.of("h", "x")), Duration.ZERO);
            assertEquals(Broker.partitionFor("k", 2), r.partition());
            try (Cursor c = broker.cursor("t", "g", r.partition())) {
                List<Message> got = c.poll(10, Duration.ZERO);
                assertEquals(1, got.size());
                Message m = got.get(0);
                assertEquals("t", m.topic());
                assertEquals(r.offset(), m.offset());
                assertArrayEquals(b("k"), m.key());
                assertEquals("v0", m.valueAsString());
                assertEquals(List.of(Header.of("h", "x")), m.headers());
                c.ack(m.offset());
                assertEquals(m.offset() + 1, broker.groupInfo("t", "g", r.partition()).committed());
            }
            // Keyless records go round-robin, as named batches do; ackPoll acks and polls on.
            BatchResult br = p.publishBatch(List.of(rec(null, "a"), rec(null, "b"),
                    rec(null, "c")), Duration.ZERO);
            assertEquals(3, br.published());
            List<Message> first = c0.poll(1, Duration.ZERO);
            int want = (int) br.results().stream().filter(x -> x.partition() == 0).count();
            List<Message> rest = c0.ackPoll(first.get(0).offset(), 10, Duration.ZERO);
            assertEquals(want, first.size() + rest.size());
            assertEquals(0, broker.groupInfo("t", "g", 0).inFlight() - rest.size());
            // A delayed publish is held back as the named one is.
            PublishResult d = p.publishDelayed(null, b("later"), Duration.ofHours(1), Duration.ZERO);
            try (Cursor c = broker.cursor("t", "g", d.partition())) {
                assertEquals(List.of(), c.poll(10, Duration.ZERO).stream()
                        .filter(x -> x.offset() == d.offset()).toList());
            }
        }
    }

    @Test
    void theCursorAndTheNamedCallsShareOneGroupPosition() {
        try (Publisher p = broker.publisher("t"); Cursor c = broker.cursor("t", "g", 1)) {
            for (String v : List.of("m0", "m1", "m2", "m3")) {
                broker.publish("t", null, b(v), Duration.ZERO);  // alternates 0, 1, 0, 1 (keyless)
            }
            p.publishBatch(List.of(rec(b("same"), "p0"), rec(b("same"), "p1")),
                    Duration.ZERO);
            int keyed = Broker.partitionFor("same", 2);
            List<Message> viaCursor = c.poll(1, Duration.ZERO);
            List<Message> named = broker.poll("t", "g", 1, 1, Duration.ZERO);
            assertEquals(viaCursor.get(0).offset() + 1, named.get(0).offset());
            broker.ack("t", "g", 1, named.get(0).offset());
            assertThrows(MqNotInFlightException.class, () -> c.ack(named.get(0).offset()));
            List<Message> more = c.poll(10, Duration.ZERO);
            assertEquals(keyed == 1 ? List.of("p0", "p1") : List.of(), values(more));
            assertEquals(broker.groupInfo("t", "g", 1).next(), broker.partitionInfo("t", 1).end());
        }
    }

    @Test
    void errorsMapAsTheNamedCallsDo() {
        assertThrows(MqInvalidArgumentException.class, () -> broker.publisher("bad name"));
        assertThrows(MqInvalidArgumentException.class, () -> broker.publisher(null));
        assertThrows(MqNoSuchTopicException.class, () -> broker.publisher("nothing"));
        assertThrows(MqNoSuchTopicException.class, () -> broker.cursor("nothing", "g", 0));
        assertThrows(MqInvalidArgumentException.class, () -> broker.cursor("t", "bad name", 0));
        assertThrows(MqNoSuchGroupException.class, () -> broker.cursor("t", "nobody", 0));
        assertThrows(MqNoSuchPartitionException.class, () -> broker.cursor("t", "g", 2));
        try (Publisher p = broker.publisher("t"); Cursor c = broker.cursor("t", "g", 0)) {
            assertThrows(MqInvalidArgumentException.class, () -> c.poll(-1, Duration.ZERO));
            assertThrows(MqInvalidArgumentException.class, () -> c.poll(1, Duration.ofMillis(-1)));
            assertThrows(NullPointerException.class, () -> p.publish(null, b("x"), null, Duration.ZERO));
            assertThrows(MqTooLargeException.class, () -> p.publish(null, new byte[2 << 20], Duration.ZERO));
            MqNotInFlightException e = assertThrows(MqNotInFlightException.class, () -> c.ack(7));
            assertTrue(e.getMessage().contains("not in flight"), e.getMessage());
            for (int i = 0; i < 4; i++) {
                p.publish(b("k"), b("x"), Duration.ZERO);
            }
            assertThrows(MqFullException.class, () -> p.publish(b("k"), b("x"), Duration.ZERO));
            MqFullException full = assertThrows(MqFullException.class, () -> p.publishBatch(
                    List.of(rec(b("k"), "y")), Duration.ZERO));
            assertEquals(0, full.partialBatch().published());
        }
    }

    @Test
    void aCursorHoldsItsGroupAndAPublisherItsTopic() {
        Publisher p = broker.publisher("t");
        Cursor c = broker.cursor("t", "g", 0);
        broker.unsubscribeGroup("t", "g");
        assertThrows(MqNoSuchGroupException.class, () -> c.poll(1, Duration.ZERO));
        assertThrows(MqNoSuchGroupException.class, () -> c.ack(0));
        broker.subscribeGroup("t", "g");  // a new group of the old name
        assertThrows(MqNoSuchGroupException.class, () -> c.ackPoll(0, 1, Duration.ZERO));
        p.publish(null, b("still"), Duration.ZERO);
        broker.deleteTopic("t");
        assertThrows(MqNoSuchTopicException.class, () -> p.publish(null, b("x"), Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> p.publishBatch(List.of(rec(null, "x")),
                Duration.ZERO));
        assertThrows(MqNoSuchTopicException.class, () -> c.poll(1, Duration.ZERO));
        broker.createTopic("t");
        assertThrows(MqNoSuchTopicException.class, () -> p.publish(null, b("x"), Duration.ZERO));
        try (Publisher fresh = broker.publisher("t")) {
            assertEquals(0, fresh.publish(null, b("y"), Duration.ZERO).offset());
        }
        p.close();
        c.close();
    }

    // ---- closing -----------------------------------------------------------------------------

    /** Every order of closing (and shutting down) the broker, a publisher and a cursor. */
    @TestFactory
    Stream<DynamicTest> everyOrderOfClosing() {
        return Stream.of("bpc", "bcp", "pbc", "pcb", "cbp", "cpb", "sbpc", "spcb").map(order ->
                DynamicTest.dynamicTest(order, () -> {
                    Broker br = Broker.create();
                    br.createTopic("t");
                    br.subscribeGroup("t", "g");
                    Publisher p = br.publisher("t");
                    Cursor c = br.cursor("t", "g", 0);
                    p.publish(null, b("x"), Duration.ZERO);
                    assertEquals(1, c.poll(1, Duration.ZERO).size());
                    boolean brokerDown = false;
                    boolean pDown = false;
                    boolean cDown = false;
                    for (int round = 0; round < 2; round++) {  // the second: every close again
                        for (char k : order.toCharArray()) {
                            switch (k) {
                                case 's' -> brokerDown |= round == 0 && run(br::shutdown);
                                case 'b' -> brokerDown |= run(br::close);
                                case 'p' -> pDown |= run(p::close);
                                default -> cDown |= run(c::close);
                            }
                            // What is closed by now (a handle, or its broker) says so; the rest works.
                            assertEquals(brokerDown || pDown, closed(() -> p.publish(null, b("y"), Duration.ZERO)));
                            assertEquals(brokerDown || cDown, closed(() -> c.poll(1, Duration.ZERO)));
                            assertEquals(brokerDown || cDown, closed(() -> c.ack(0)));
                        }
                    }
                    assertTrue(p.isClosed() && c.isClosed());
                    assertThrows(MqClosedException.class, () -> br.publisher("t"));
                }));
    }

    private static boolean run(Runnable r) {
        r.run();
        return true;
    }

    /** Whether call throws MqClosedException; other outcomes of an open handle are fine. */
    private static boolean closed(Runnable call) {
        try {
            call.run();
            return false;
        } catch (MqClosedException e) {
            return true;
        } catch (MqException e) {
            return false;  // e.g. the ack of an offset not in flight
        }
    }

    @Test
    void aHandleAnswersClosedAfterItsBrokerWasClosedAndOutlivesIt() {
        Broker br = Broker.create();
        br.createTopic("t");
        br.subscribeGroup("t", "g");
        Publisher p = br.publisher("t");
        Cursor c = br.cursor("t", "g", 0);
        br.close();
        MqClosedException e = assertThrows(MqClosedException.class, () -> p.publish(null, b("x"), Duration.ZERO));
        assertTrue(e.getMessage().contains("broker"), e.getMessage());
        assertThrows(MqClosedException.class, () -> c.ackPoll(0, 1, Broker.FOREVER));
        assertTrue(!p.isClosed() && !c.isClosed(), "the handles stay open until closed");
        p.close();
        c.close();
        MqClosedException own = assertThrows(MqClosedException.class, () -> c.poll(1, Duration.ZERO));
        assertTrue(own.getMessage().contains("Cursor.close()"), own.getMessage());
    }

    @Test
    void unclosedHandlesAreReleasedByTheCleanerBeforeOrAfterTheirBroker() {
        WeakReference<Broker> b1 = dropAll(true);
        WeakReference<Broker> b2 = dropAll(false);
        Await.until("the brokers and handles to be collected", () -> {
            System.gc();
            return b1.get() == null && b2.get() == null;
        });
    }

    /** A broker with a publisher and a cursor, all dropped (the broker closed first, or not). */
    private static WeakReference<Broker> dropAll(boolean closeBroker) {
        Broker br = Broker.create();
        br.createTopic("t");
        br.subscribeGroup("t", "g");
        br.publisher("t").publish(null, b("x"), Duration.ZERO);
        br.cursor("t", "g", 0).poll(1, Duration.ZERO);
        if (closeBroker) {
            br.close();
        }
        return new WeakReference<>(br);
    }

    @Test
    void aHandleKeepsItsBrokerReachable() {
        Cursor c = cursorOfADroppedBroker();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Broker br = c.broker();
        assertNotNull(br);
        br.publish("t", null, b("x"), Duration.ZERO);
        assertEquals(List.of("x"), values(c.poll(1, Duration.ZERO)), "its broker was not cleaned");
        c.close();
        br.close();
    }

    private static Cursor cursorOfADroppedBroker() {
        Broker br = Broker.create();
        br.createTopic("t");
        br.subscribeGroup("t", "g");
        return br.cursor("t", "g", 0);
    }

    // ---- blocked calls ------------------------------------------------------------------------

    /** Whether t waits inside a handle's (or named) call: in native code under PerThread.await. */
    static boolean waiting(Thread t) {
        if (!InterruptTest.inNativeCall(t)) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals("org.mq.PerThread") && e.getMethodName().equals("await")) {
                return true;
            }
        }
        return false;
    }

    /** Runs call on a thread until it waits; the future completes with its result or failure. */
    static <T> CompletableFuture<Object> blocked(Supplier<T> call, Thread[] thread) {
        CompletableFuture<Object> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                done.complete(call.get());
            } catch (Throwable e) {
                done.complete(e);
            }
        });
        thread[0] = t;
        t.start();
        Await.until("the call to wait", () -> waiting(t));
        return done;
    }

    @Test
    void aBlockedCursorPollWakesOnAPublishThroughAPublisher() throws Exception {
        int part = Broker.partitionFor("k", 2);
        try (Publisher p = broker.publisher("t"); Cursor c = broker.cursor("t", "g", part)) {
            Thread[] t = new Thread[1];
            CompletableFuture<Object> done = blocked(() -> c.poll(10, Broker.FOREVER), t);
            p.publish(b("k"), b("woke"), Duration.ZERO);
            assertEquals(List.of("woke"), values(cast(done.get(10, TimeUnit.SECONDS))));
            t[0].join();
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Message> cast(Object o) {
        if (o instanceof Throwable e) {
            throw new AssertionError("the call threw", e);
        }
        return (List<Message>) o;
    }

    @Test
    void aBlockedCursorPollEndsOnTheBrokersClose() throws Exception {
        Broker br = Broker.create();
        br.createTopic("t");
        br.subscribeGroup("t", "g");
        try (Cursor c = br.cursor("t", "g", 0)) {
            Thread[] t = new Thread[1];
            CompletableFuture<Object> done = blocked(() -> c.poll(10, Broker.FOREVER), t);
            br.close();
            assertInstanceOf(MqClosedException.class, done.get(10, TimeUnit.SECONDS));
            t[0].join();
        }
    }

    @Test
    void aBlockedCallEndsOnItsHandlesCloseAndOnAnInterrupt() throws Exception {
        Cursor c = broker.cursor("t", "g", 0);
        Thread[] t = new Thread[1];
        CompletableFuture<Object> polled = blocked(() -> c.poll(10, Broker.FOREVER), t);
        c.close();
        MqClosedException closed = assertInstanceOf(MqClosedException.class, polled.get(10, TimeUnit.SECONDS));
        assertTrue(closed.getMessage().contains("cursor was closed"), closed.getMessage());
        t[0].join();

        Publisher p = broker.publisher("t");
        for (int i = 0; i < 4; i++) {
            p.publish(b("k"), b("fill"), Duration.ZERO);
        }
        CompletableFuture<Object> interrupted = blocked(() -> p.publish(b("k"), b("x"), Broker.FOREVER), t);
        t[0].interrupt();
        assertInstanceOf(MqInterruptedException.class, interrupted.get(10, TimeUnit.SECONDS));
        t[0].join();
        CompletableFuture<Object> batch = blocked(() -> p.publishBatch(List.of(rec(b("k"), "x")), Broker.FOREVER), t);
        p.close();
        MqClosedException e = assertInstanceOf(MqClosedException.class, batch.get(10, TimeUnit.SECONDS));
        assertEquals(0, e.partialBatch().published());
        t[0].join();
    }

    // ---- share groups -------------------------------------------------------------------------

    @Test
    void aShareGroupWorksThroughCursors() {
        broker.createTopic("jobs");
        broker.subscribeGroup("jobs", "w", GroupOptions.builder().share(ShareMode.ALL).build());
        try (Publisher p = broker.publisher("jobs"); Cursor a = broker.cursor("jobs", "w", 0);
                Cursor other = broker.cursor("jobs", "w", 0)) {
            p.publishBatch(List.of(rec(null, "j0"), rec(null, "j1"),
                    rec(null, "j2")), Duration.ZERO);
            List<Message> got = a.poll(2, Duration.ZERO);
            assertEquals(List.of("j0", "j1"), values(got));
            assertEquals(List.of("j2"), values(other.poll(10, Duration.ZERO)), "a second worker gets the rest");
            a.ack(got.get(1).offset());  // accepts j1 alone
            broker.settle("w", got.get(0), SettleAction.RELEASE);  // settling stays by name
            List<Message> again = other.poll(10, Duration.ZERO);
            assertEquals(List.of("j0"), values(again));
            assertEquals(2, again.get(0).deliveryCount());
            GroupInfo g = broker.groupInfo("jobs", "w", 0);
            assertEquals(0, g.committed());
            assertEquals(2, g.acquired());
        }
    }
}
