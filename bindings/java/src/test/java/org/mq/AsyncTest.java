package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The CompletableFuture calls (ABI 1.4's *_async): completion by a later publish or ack, the
 * deadline, cancellation, close, many pending calls without threads, and abandoned futures.
 * No sleep synchronises anything: futures are awaited with bounded gets.
 */
class AsyncTest {
    private static final long LIMIT_S = 10;
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(LIMIT_S, TimeUnit.SECONDS);
    }

    /** The cause the future failed with. */
    static Throwable failure(CompletableFuture<?> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(LIMIT_S, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void pendingPollCompletedByPublish() throws Exception {
        broker.createTopic("t", TopicConfig.builder().partitions(2).build());
        broker.subscribeGroup("t", "g");
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 1, 10, Broker.FOREVER);
        assertFalse(f.isDone(), "nothing to poll: the call pends");
        broker.publish("t", b("user-a"), b("v"), List.of(Header.of("h", "x")), Duration.ZERO);  // partition 1
        List<Message> got = get(f);
        assertEquals(1, got.size());
        Message m = got.get(0);
        assertEquals("t", m.topic());
        assertEquals(1, m.partition());
        assertEquals(0, m.offset());
        assertEquals("v", m.valueAsString());
        assertEquals("user-a", m.keyAsString());
        assertEquals(List.of(Header.of("h", "x")), m.headers());
        assertEquals(1, m.deliveryCount());
    }

    @Test
    void callThatNeedNotWaitCompletesAtOnce() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        CompletableFuture<PublishResult> p = broker.publishAsync("t", null, b("a"), Duration.ZERO);
        assertTrue(p.isDone(), "room: completed on the calling thread");
        assertEquals(new PublishResult(0, 0), p.join());
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
        assertTrue(f.isDone());
        assertEquals("a", f.join().get(0).valueAsString());
    }

    @Test
    void ackPollAcksBeforeItWaits() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        assertEquals(1, broker.poll("t", "g", 0, 10, Duration.ZERO).size());
        CompletableFuture<List<Message>> f = broker.ackPollAsync("t", "g", 0, 0, 10, Broker.FOREVER);
        assertEquals(1, broker.groupInfo("t", "g", 0).committed(), "acked before the call returned");
        assertFalse(f.isDone());
        broker.publish("t", null, b("b"), Duration.ZERO);
        assertEquals("b", get(f).get(0).valueAsString());
        // A rejected ack: the future fails, nothing is polled.
        Throwable e = failure(broker.ackPollAsync("t", "g", 0, 7, 10, Broker.FOREVER));
        assertInstanceOf(MqNotInFlightException.class, e);
    }

    @Test
    void publishPendingOnFullPartitionCompletedByAck() throws Exception {
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        CompletableFuture<PublishResult> p = broker.publishAsync("t", b("k"), b("b"),
                List.of(Header.of("n", "v")), Broker.FOREVER);
        assertFalse(p.isDone(), "full: the publish pends");
        assertEquals(1, broker.partitionInfo("t", 0).producerWaits());
        broker.ack("t", "g", 0, 0);
        assertEquals(new PublishResult(0, 1), get(p));
        Message m = broker.poll("t", "g", 0, 1, Duration.ZERO).get(0);
        assertEquals("b", m.valueAsString());
        assertEquals("k", m.keyAsString());
        assertEquals(List.of(Header.of("n", "v")), m.headers());
    }

    @Test
    void batchGoesOnAsRoomAppears() throws Exception {
        broker.createTopic("t", TopicConfig.builder().capacity(2).build());
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        broker.publish("t", null, b("b"), Duration.ZERO);
        broker.poll("t", "g", 0, 2, Duration.ZERO);
        CompletableFuture<BatchResult> f = broker.publishBatchAsync("t",
                List.of(new PublishRecord(null, b("c"), List.of()),
                        new PublishRecord(b("k"), b("d"), List.of(Header.of("x", "y")))), Broker.FOREVER);
        assertFalse(f.isDone());
        broker.ack("t", "g", 0, 0);
        broker.ack("t", "g", 0, 1);
        BatchResult r = get(f);
        assertEquals(2, r.published());
        assertEquals(List.of(new PublishResult(0, 2), new PublishResult(0, 3)), r.results());
        List<Message> got = broker.poll("t", "g", 0, 2, Duration.ZERO);
        assertEquals("d", got.get(1).valueAsString());
        assertEquals(List.of(Header.of("x", "y")), got.get(1).headers());
        // A batch that stays full past its wait: MQ_FULL with what was published.
        Throwable e = failure(broker.publishBatchAsync("t",
                List.of(new PublishRecord(null, b("e"), List.of())), Duration.ofMillis(20)));
        assertInstanceOf(MqFullException.class, e);
        assertEquals(0, ((MqException) e).partialBatch().published());
    }

    @Test
    void deadlineEndsAsTheBlockingCallDoes() throws Exception {
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
        assertEquals(List.of(), get(broker.pollAsync("t", "g", 0, 10, Duration.ofMillis(30))),
                "a poll whose wait ends with nothing: an empty list");
        broker.publish("t", null, b("a"), Duration.ZERO);
        Throwable e = failure(broker.publishAsync("t", null, b("b"), Duration.ofMillis(30)));
        assertInstanceOf(MqFullException.class, e);
    }

    @Test
    void cancelTriggersTheToken() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
        assertTrue(f.cancel(true));
        assertTrue(f.isCancelled());
        assertThrows(CancellationException.class, () -> f.get(LIMIT_S, TimeUnit.SECONDS));
        // A timeout of the future's own (orTimeout) ends the native call too.
        CompletableFuture<List<Message>> g = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> g.orTimeout(20, TimeUnit.MILLISECONDS).get(LIMIT_S, TimeUnit.SECONDS));
        assertInstanceOf(TimeoutException.class, e.getCause());
        // cancel returned after the library ended the call: a later publish is not taken by it.
        broker.publish("t", null, b("a"), Duration.ZERO);
        // (orTimeout's future completes before the library has ended g's call, which may still
        // take that message: only the future of a cancel is sure to come after the end.)
        // A future that completed first is not cancelled.
        broker.createTopic("u");
        broker.subscribeGroup("u", "g");
        broker.publish("u", null, b("a"), Duration.ZERO);
        CompletableFuture<List<Message>> h = broker.pollAsync("u", "g", 0, 10, Broker.FOREVER);
        assertEquals(1, get(h).size());
        assertFalse(h.cancel(true));
        assertFalse(h.isCancelled());
        // The cancelled calls have ended natively: a shutdown completes nothing more and
        // closing waits for nobody (tearDown).
    }

    @Test
    void cancelReturnsAfterTheLibraryEndedTheCall() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        for (int i = 0; i < 200; i++) {
            CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
            assertTrue(f.cancel(true));
            broker.publish("t", null, b("m" + i), Duration.ZERO);
            List<Message> got = broker.poll("t", "g", 0, 10, Duration.ZERO);
            assertEquals(1, got.size(), "round " + i + ": the cancelled call took nothing");
            broker.ack("t", "g", 0, got.get(0).offset());
        }
    }

    @Test
    void shutdownCompletesPendingCallsWithClosed() throws Exception {
        broker.createTopic("t", TopicConfig.builder().partitions(2).capacity(1).build());
        broker.subscribeGroup("t", "g");
        byte[] key0 = b("k0");
        for (int i = 1; Broker.partitionFor(key0, 2) != 0; i++) {
            key0 = b("k" + i);
        }
        broker.publish("t", key0, b("full"), Duration.ZERO);  // partition 0 full
        List<CompletableFuture<?>> pending = new ArrayList<>();
        pending.add(broker.pollAsync("t", "g", 1, 10, Broker.FOREVER));
        pending.add(broker.pollAsync("t", "g", 1, 1, Broker.FOREVER));
        pending.add(broker.publishAsync("t", key0, b("x"), Broker.FOREVER));
        pending.add(broker.publishBatchAsync("t", List.of(new PublishRecord(key0, b("y"), List.of())),
                Broker.FOREVER));
        for (CompletableFuture<?> f : pending) {
            assertFalse(f.isDone());
        }
        broker.shutdown();
        // The native close returns after every pending call's completion ran.
        for (CompletableFuture<?> f : pending) {
            assertTrue(f.isDone(), "completed by the close");
            assertInstanceOf(MqClosedException.class, failure(f));
        }
        assertInstanceOf(MqClosedException.class, failure(broker.pollAsync("t", "g", 1, 1, Broker.FOREVER)));
        broker.close();
        assertInstanceOf(MqClosedException.class, failure(broker.publishAsync("t", null, null, Broker.FOREVER)));
    }

    @Test
    void closeCompletesPendingCallsWithClosed() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
        broker.close();
        assertTrue(f.isDone());
        assertInstanceOf(MqClosedException.class, failure(f));
    }

    @Test
    void closeFromADependentStageOnTheCompleter() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        broker.createTopic("u");
        broker.subscribeGroup("u", "h");
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER);
        // Pending on another topic: the close (from f's completion) completes it.
        CompletableFuture<List<Message>> other = broker.pollAsync("u", "h", 0, 10, Broker.FOREVER);
        CompletableFuture<Void> closed = f.thenRun(broker::close);  // runs on the completer thread
        broker.publish("t", null, b("a"), Duration.ZERO);
        get(closed);
        assertInstanceOf(MqClosedException.class, failure(other));
    }

    @Test
    void closeFromADependentStageOfACallThatDidNotWait() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        // Completed on this thread: the stage runs here, outside the broker's gate.
        CompletableFuture<Void> closed = broker.pollAsync("t", "g", 0, 10, Broker.FOREVER).thenRun(broker::close);
        assertTrue(closed.isDone());
        get(closed);
        assertInstanceOf(MqClosedException.class, failure(broker.pollAsync("t", "g", 0, 1, Duration.ZERO)));
    }

    @Test
    void messageLargerThanTheAsyncBuffer() throws Exception {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        CompletableFuture<List<Message>> f = broker.pollAsync("t", "g", 0, 1, Broker.FOREVER);
        byte[] big = new byte[100_000];
        big[99_999] = 7;
        broker.publish("t", null, big, Duration.ZERO);
        broker.publish("t", null, b("small"), Duration.ZERO);
        List<Message> got = get(f);
        assertEquals(1, got.size());
        assertArrayEquals(big, got.get(0).value());
        assertEquals("small", get(broker.ackPollAsync("t", "g", 0, 0, 5, Broker.FOREVER)).get(0).valueAsString());
    }

    @Test
    void failuresGoThroughTheFuture() throws Exception {
        assertInstanceOf(MqNoSuchTopicException.class, failure(broker.pollAsync("nope", "g", 0, 1, Broker.FOREVER)));
        assertInstanceOf(MqInvalidArgumentException.class,
                failure(broker.pollAsync("nope", "g", 0, 1, Duration.ofMillis(-1))));
        assertInstanceOf(MqInvalidArgumentException.class, failure(broker.pollAsync("bad name", "g", 0, 1, Broker.FOREVER)));
        assertInstanceOf(NullPointerException.class, failure(broker.publishAsync("t", null, null, null, Broker.FOREVER)));
    }

    /** Live threads of the process (the OS's count), or -1 where /proc is not there. */
    static int osThreads() {
        String[] tasks = new File("/proc/self/task").list();
        return tasks == null ? -1 : tasks.length;
    }

    @Test
    void thousandPendingCallsAddNoThread() throws Exception {
        int partitions = 50;
        int groups = 20;
        broker.createTopic("t", TopicConfig.builder().partitions(partitions).build());
        for (int g = 0; g < groups; g++) {
            broker.subscribeGroup("t", "g" + g);
        }
        // The completer thread comes with the first pending call (and joins the JVM at its
        // first completion): count after it.
        broker.createTopic("warm");
        broker.subscribeGroup("warm", "warm");
        CompletableFuture<List<Message>> warm = broker.pollAsync("warm", "warm", 0, 1, Broker.FOREVER);
        broker.publish("warm", null, b("w"), Duration.ZERO);
        assertEquals(1, get(warm).size());
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        int javaBefore = mx.getThreadCount();
        int osBefore = osThreads();
        List<CompletableFuture<List<Message>>> pending = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            for (int p = 0; p < partitions; p++) {
                pending.add(broker.pollAsync("t", "g" + g, p, 1, Broker.FOREVER));
            }
        }
        int javaAfter = mx.getThreadCount();
        int osAfter = osThreads();
        System.out.println("AsyncTest: " + pending.size() + " pending polls; Java threads " + javaBefore + " -> "
                + javaAfter + ", OS threads " + osBefore + " -> " + osAfter);
        for (CompletableFuture<List<Message>> f : pending) {
            assertFalse(f.isDone());
        }
        // The JVM's own threads (compiler, GC) may come and go: a thread per call would be 1,000.
        assertTrue(javaAfter - javaBefore <= 2, "Java threads " + javaBefore + " -> " + javaAfter);
        assertTrue(osAfter - osBefore <= 4, "OS threads " + osBefore + " -> " + osAfter);
        // Every one completes: one publish per partition wakes that partition's 20 polls.
        for (int p = 0; p < partitions; p++) {
            broker.publish("t", null, b("m"), Duration.ZERO);
        }
        for (CompletableFuture<List<Message>> f : pending) {
            assertEquals(1, get(f).size());
        }
    }

    @Test
    void racingCompletionsCancelsAndClose() throws Exception {
        broker.createTopic("t", TopicConfig.builder().partitions(4).capacity(8).build());
        broker.subscribeGroup("t", "g");
        List<CompletableFuture<?>> all = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int me = t;
            Thread th = new Thread(() -> {
                for (int i = 0; i < 2_000; i++) {
                    CompletableFuture<List<Message>> poll = broker.pollAsync("t", "g", me, 4, Duration.ofMillis(i % 3));
                    CompletableFuture<PublishResult> pub = broker.publishAsync("t", null, b("x" + i),
                            i % 2 == 0 ? Broker.FOREVER : Duration.ofMillis(1));
                    if (i % 3 == 0) {
                        poll.cancel(true);
                    }
                    if (i % 5 == 0) {
                        pub.cancel(true);
                    }
                    poll.thenAccept(ms -> {
                        if (!ms.isEmpty()) {
                            try {
                                broker.ack("t", "g", me, ms.get(ms.size() - 1).offset());
                            } catch (MqException e) {
                                // closed, or acked past by a later poll's ack
                            }
                        }
                    });
                    all.add(poll);
                    all.add(pub);
                }
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        broker.close();  // whatever is still pending completes now
        for (CompletableFuture<?> f : all) {
            assertTrue(f.isDone());
        }
    }

    /** A broker and a pending call, both dropped; returns a stage that outlives them. */
    private static CompletableFuture<String> abandoned() {
        Broker b = Broker.create();
        b.createTopic("t");
        b.subscribeGroup("t", "g");
        CompletableFuture<List<Message>> f = b.pollAsync("t", "g", 0, 1, Broker.FOREVER);
        // The dependent stage does not reach f or b: only the native call keeps f alive.
        return f.handle((v, e) -> e == null ? "value" : e.getClass().getSimpleName());
    }

    @Test
    void abandonedBrokerWithPendingCallIsCleanedAndCompletes() throws Exception {
        CompletableFuture<String> after = abandoned();
        // The Cleaner closes the unreachable broker, which completes the call (MQ_CLOSED).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String outcome = null;
        while (outcome == null && System.nanoTime() < deadline) {
            System.gc();
            try {
                outcome = after.get(100, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // not collected yet
            }
        }
        assertEquals("MqClosedException", outcome);
    }

    @Test
    void abandonedFuturesAndAnyCloseOrder() throws Exception {
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        for (int i = 0; i < 100; i++) {
            broker.publishAsync("t", null, b("x"), Broker.FOREVER);  // dropped at once
            broker.pollAsync("t", "nobody", 0, 1, Broker.FOREVER);  // fails (no group), dropped
        }
        System.gc();
        broker.shutdown();
        broker.close();
        broker.close();
    }
}
