package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A member's CompletableFuture polls (ABI 1.4's mq_member_(ack_)poll_copy_async): one pending
 * call waits on every partition the member owns; a join ends it with MqRebalancedException;
 * cancel, the deadline, Member.close() (also from a dependent stage on the completer thread),
 * the broker's close and the Cleaner of an unreachable Member complete it. No sleep
 * synchronises anything: futures are awaited with bounded gets.
 */
class MemberAsyncTest {
    private static final int PARTITIONS = 4;
    private static final long LIMIT_S = 10;
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().partitions(PARTITIONS).build());
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    /** A key the default partitioner puts on partition p of the topic. */
    static byte[] keyFor(int p) {
        for (int i = 0; ; i++) {
            byte[] k = b("k" + i);
            if (Broker.partitionFor(k, PARTITIONS) == p) {
                return k;
            }
        }
    }

    private Member join(String id) {
        Member m = broker.join("t", "g", MemberOptions.builder().memberId(id).build());
        m.assignment();  // the generation seen: its polls do not throw MqRebalancedException for it
        return m;
    }

    @Test
    void pendingPollCompletedByAPublishOnAnyOfItsPartitions() throws Exception {
        Member m = join("alpha");
        assertEquals(List.of(0, 1, 2, 3), m.assignment().partitions());
        for (int p : new int[] {3, 1, 2, 0}) {
            CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
            assertFalse(f.isDone(), "nothing to poll: the call pends");
            broker.publish("t", keyFor(p), b("v" + p), List.of(Header.of("h", "x")), Duration.ZERO);
            List<Message> got = AsyncTest.get(f);
            assertEquals(1, got.size());
            Message msg = got.get(0);
            assertEquals("t", msg.topic());
            assertEquals(p, msg.partition(), "woken by the publish on partition " + p);
            assertEquals(0, msg.offset());
            assertEquals("v" + p, msg.valueAsString());
            assertEquals(List.of(Header.of("h", "x")), msg.headers());
            m.ack(p, 0);
        }
    }

    @Test
    void callThatNeedNotWaitCompletesAtOnceAndTheDeadlineEndsWithNothing() throws Exception {
        Member m = join("alpha");
        broker.publish("t", keyFor(2), b("ready"), Duration.ZERO);
        CompletableFuture<List<Message>> now = m.pollAsync(10, Broker.FOREVER);
        assertTrue(now.isDone(), "a message: completed on the calling thread");
        assertEquals("ready", now.join().get(0).valueAsString());
        assertEquals(List.of(), AsyncTest.get(m.pollAsync(10, Duration.ofMillis(30))),
                "a wait that ends with nothing: an empty list");
        assertEquals(List.of(), m.pollAsync(10, Duration.ZERO).join(), "no wait: at once");
    }

    @Test
    void ackPollAcksBeforeItWaits() throws Exception {
        Member m = join("alpha");
        broker.publish("t", keyFor(2), b("a"), Duration.ZERO);
        assertEquals(1, m.poll(10, Duration.ZERO).size());
        CompletableFuture<List<Message>> f = m.ackPollAsync(2, 0, 10, Broker.FOREVER);
        assertEquals(1, broker.groupInfo("t", "g", 2).committed(), "acked before the call returned");
        assertFalse(f.isDone());
        broker.publish("t", keyFor(3), b("b"), Duration.ZERO);
        Message got = AsyncTest.get(f).get(0);
        assertEquals(3, got.partition());
        assertEquals("b", got.valueAsString());
        // A rejected ack: the future fails, nothing is polled.
        assertInstanceOf(MqNotInFlightException.class, AsyncTest.failure(m.ackPollAsync(3, 7, 10, Broker.FOREVER)));
        assertEquals(1, broker.groupInfo("t", "g", 3).inFlight());
    }

    @Test
    void aJoinEndsThePendingPollWithRebalanced() throws Exception {
        Member a = join("alpha");
        CompletableFuture<List<Message>> f = a.pollAsync(10, Broker.FOREVER);
        assertFalse(f.isDone());
        Member b = broker.join("t", "g", MemberOptions.builder().memberId("beta").build());
        assertInstanceOf(MqRebalancedException.class, AsyncTest.failure(f));
        Assignment mine = a.assignment();
        Assignment theirs = b.assignment();
        assertEquals(2, mine.generation());
        assertEquals(List.of(0, 2), mine.partitions());
        assertEquals(List.of(1, 3), theirs.partitions());
        // Only its own partitions wake it: a publish on b's partition is b's.
        CompletableFuture<List<Message>> g = a.pollAsync(10, Broker.FOREVER);
        broker.publish("t", keyFor(1), b("theirs"), Duration.ZERO);
        assertEquals("theirs", b.poll(10, Duration.ZERO).get(0).valueAsString());
        assertFalse(g.isDone());
        broker.publish("t", keyFor(0), b("ours"), Duration.ZERO);
        Message got = AsyncTest.get(g).get(0);
        assertEquals(0, got.partition());
        assertEquals("ours", got.valueAsString());
        // Fenced: an ack of a partition it does not own.
        assertInstanceOf(MqFencedException.class, AsyncTest.failure(a.ackPollAsync(1, 0, 10, Broker.FOREVER)));
        b.close();
    }

    @Test
    void cancelEndsTheCallBeforeItReturns() throws Exception {
        Member m = join("alpha");
        CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
        assertTrue(f.cancel(true));
        assertTrue(f.isCancelled());
        assertThrows(CancellationException.class, () -> f.get(LIMIT_S, TimeUnit.SECONDS));
        // cancel returned after the library ended the call: a later publish is not taken by it.
        for (int i = 0; i < 100; i++) {
            int p = i % PARTITIONS;
            CompletableFuture<List<Message>> g = m.pollAsync(10, Broker.FOREVER);
            assertTrue(g.cancel(true));
            broker.publish("t", keyFor(p), b("m" + i), Duration.ZERO);
            List<Message> got = m.poll(10, Duration.ZERO);
            assertEquals(1, got.size(), "round " + i + ": the cancelled call took nothing");
            m.ack(p, got.get(0).offset());
        }
        // A future that completed first is not cancelled.
        broker.publish("t", keyFor(1), b("x"), Duration.ZERO);
        CompletableFuture<List<Message>> h = m.pollAsync(10, Broker.FOREVER);
        assertEquals(1, AsyncTest.get(h).size());
        assertFalse(h.cancel(true));
    }

    @Test
    void closingTheMemberCompletesItsPendingPollsWithClosed() throws Exception {
        Member m = join("alpha");
        broker.publish("t", keyFor(1), b("a"), Duration.ZERO);
        assertEquals(1, m.poll(1, Duration.ZERO).size());
        CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
        CompletableFuture<List<Message>> g = m.ackPollAsync(1, 0, 10, Broker.FOREVER);
        assertFalse(f.isDone());
        assertFalse(g.isDone());
        m.close();
        assertTrue(f.isDone(), "completed before close returned");
        assertTrue(g.isDone(), "completed before close returned");
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(f));
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(g));
        // A closed member: every later call fails through its future.
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(m.pollAsync(1, Broker.FOREVER)));
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(m.ackPollAsync(1, 0, 1, Broker.FOREVER)));
        m.close();
        // It left the group: a new member owns every partition, and what it had goes on.
        Member n = join("beta");
        assertEquals(List.of(0, 1, 2, 3), n.assignment().partitions());
        broker.publish("t", keyFor(2), b("b"), Duration.ZERO);
        assertEquals("b", AsyncTest.get(n.pollAsync(1, Broker.FOREVER)).get(0).valueAsString());
    }

    @Test
    void closeFromADependentStageOnTheCompleter() throws Exception {
        Member m = join("alpha");
        // Two pending calls: the publish completes one, whose stage (on the completer thread)
        // closes the member, which completes the other; close returns at once there.
        CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
        CompletableFuture<List<Message>> g = m.pollAsync(10, Broker.FOREVER);
        CompletableFuture<Void> closed = CompletableFuture.anyOf(f, g).thenRun(m::close);
        broker.publish("t", keyFor(2), b("a"), Duration.ZERO);
        AsyncTest.get(closed);
        assertTrue(m.isClosed());
        // The other one completes once the stage has returned.
        CompletableFuture.allOf(f, g).handle((v, e) -> null).get(LIMIT_S, TimeUnit.SECONDS);
        CompletableFuture<List<Message>> won = f.isCompletedExceptionally() ? g : f;
        CompletableFuture<List<Message>> lost = won == f ? g : f;
        assertEquals("a", AsyncTest.get(won).get(0).valueAsString());
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(lost));
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(m.pollAsync(1, Broker.FOREVER)));
    }

    @Test
    void aCloseUnderWayIsNotWaitedForOnTheCompleter() throws Exception {
        // The closing thread waits (natively) for the completions of the member's pending
        // polls; a stage of one of them that closes the member too returns at once.
        Member m = join("alpha");
        CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
        CompletableFuture<Boolean> stage = f.handle((v, e) -> {
            m.close();
            return m.isClosed();
        });
        m.close();
        assertTrue(f.isDone());
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(f));
        assertFalse(AsyncTest.get(stage), "the stage's close did not wait for the close under way");
    }

    @Test
    void brokerCloseCompletesMemberPollsWithClosed() throws Exception {
        Member m = join("alpha");
        CompletableFuture<List<Message>> f = m.pollAsync(10, Broker.FOREVER);
        broker.shutdown();
        assertTrue(f.isDone());
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(f));
        assertInstanceOf(MqClosedException.class, AsyncTest.failure(m.pollAsync(10, Broker.FOREVER)));
        broker.close();
        assertTrue(m.isClosed());
    }

    @Test
    void messageLargerThanTheAsyncBuffer() throws Exception {
        Member m = join("alpha");
        CompletableFuture<List<Message>> f = m.pollAsync(1, Broker.FOREVER);
        byte[] big = new byte[100_000];
        big[99_999] = 7;
        broker.publish("t", keyFor(2), big, Duration.ZERO);
        List<Message> got = AsyncTest.get(f);
        assertEquals(1, got.size());
        assertArrayEquals(big, got.get(0).value());
        broker.publish("t", keyFor(2), b("small"), Duration.ZERO);
        assertEquals("small", AsyncTest.get(m.ackPollAsync(2, 0, 5, Broker.FOREVER)).get(0).valueAsString());
    }

    /** A member with a pending poll, dropped; returns a stage that reaches neither. */
    private CompletableFuture<String> abandonedMember() {
        Member m = join("dropped");
        CompletableFuture<List<Message>> f = m.pollAsync(1, Broker.FOREVER);
        return f.handle((v, e) -> e == null ? "value" : e.getClass().getSimpleName());
    }

    @Test
    void anUnreachableMemberWithAPendingPollIsCleanedAndItCompletes() throws Exception {
        CompletableFuture<String> after = abandonedMember();
        // The Cleaner closes the unreachable member, which completes the call (MQ_CLOSED).
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
    void racingPollsCancelsAndCloses() throws Exception {
        for (int round = 0; round < 20; round++) {
            Member m = join("racer-" + round);
            List<CompletableFuture<List<Message>>> all = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int me = t;
                Thread th = new Thread(() -> {
                    for (int i = 0; i < 300; i++) {
                        Duration wait = i % 3 == 0 ? Broker.FOREVER : Duration.ofMillis(i % 4);
                        CompletableFuture<List<Message>> f = m.pollAsync(4, wait);
                        if (i % 2 == me % 2) {
                            f.cancel(true);
                        }
                        f.thenAccept(ms -> {
                            for (Message x : ms) {
                                try {
                                    m.ack(x.partition(), x.offset());
                                } catch (MqException e) {
                                    // closed, or acked past
                                }
                            }
                        });
                        all.add(f);
                        try {
                            broker.publish("t", keyFor(i % PARTITIONS), b("x"), Duration.ZERO);
                        } catch (MqFullException e) {
                            // the default capacity: fine
                        }
                    }
                });
                threads.add(th);
                th.start();
            }
            if (round % 2 == 0) {
                m.close();  // while the threads poll: their later calls fail as closed
            }
            for (Thread th : threads) {
                th.join();
            }
            m.close();
            for (CompletableFuture<List<Message>> f : all) {
                assertTrue(f.isDone());
            }
        }
    }
}
