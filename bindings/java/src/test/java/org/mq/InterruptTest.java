package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Thread.interrupt() ends a blocked call within 100 ms, with the interrupt flag left set. */
class InterruptTest {
    private static final long LIMIT_NS = 100_000_000L;
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    /** What a blocked call's thread saw when it was interrupted. */
    record Outcome(Throwable thrown, boolean flagSet, long nanosAfterInterrupt) {}

    /**
     * Runs call on a thread, waits until it is blocked (waiting() says so), interrupts it, and
     * reports how it ended.
     */
    private Outcome interruptWhileBlocked(Runnable call, java.util.function.BooleanSupplier waiting)
            throws Exception {
        CompletableFuture<Outcome> done = new CompletableFuture<>();
        long[] interruptedAt = new long[1];
        Thread t = new Thread(() -> {
            Throwable thrown = null;
            try {
                call.run();
            } catch (Throwable e) {
                thrown = e;
            }
            long now = System.nanoTime();
            done.complete(new Outcome(thrown, Thread.currentThread().isInterrupted(), now - interruptedAt[0]));
        });
        t.start();
        Await.until("the call to block", () -> waiting.getAsBoolean() && inNativeCall(t));
        interruptedAt[0] = System.nanoTime();  // read by t after it sees the interrupt
        t.interrupt();
        Outcome o = done.get(10, TimeUnit.SECONDS);
        t.join();
        return o;
    }

    /** Whether t is inside one of the binding's native calls (where a blocked call waits). */
    static boolean inNativeCall(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        return stack.length > 0 && stack[0].isNativeMethod()
                && stack[0].getClassName().equals("org.mq.NativeMqJNI");
    }

    private static void assertInterrupted(Outcome o) {
        MqInterruptedException e = assertInstanceOf(MqInterruptedException.class, o.thrown());
        assertEquals(Status.CANCELLED, e.status());
        assertTrue(o.flagSet(), "the interrupt flag stays set");
        assertTrue(o.nanosAfterInterrupt() < LIMIT_NS, "ended " + o.nanosAfterInterrupt() / 1e6 + " ms after the interrupt");
    }

    @Test
    void interruptEndsABlockedPoll() throws Exception {
        Outcome o = interruptWhileBlocked(() -> broker.poll("t", "g", 0, 10, Broker.FOREVER), () -> true);
        assertInterrupted(o);
    }

    @Test
    void interruptEndsABlockedPublish() throws Exception {
        broker.publish("t", null, new byte[] {1}, Duration.ZERO);  // capacity 1: full now
        Outcome o = interruptWhileBlocked(() -> broker.publish("t", null, new byte[] {2}, Broker.FOREVER),
                () -> broker.partitionInfo("t", 0).producerWaits() == 1);
        assertInterrupted(o);
        assertEquals(1, broker.partitionInfo("t", 0).end(), "nothing was appended");
    }

    @Test
    void interruptEndsABlockedBatchPublishWithItsPartialResult() throws Exception {
        Outcome o = interruptWhileBlocked(() -> broker.publishBatch("t",
                List.of(PublishRecord.of(null, new byte[] {1}), PublishRecord.of(null, new byte[] {2})),
                Broker.FOREVER), () -> broker.partitionInfo("t", 0).producerWaits() == 1);
        assertInterrupted(o);
        BatchResult partial = ((MqException) o.thrown()).partialBatch();
        assertEquals(1, partial.published());
        assertEquals(List.of(new PublishResult(0, 0), new PublishResult(0, -1)), partial.results());
    }

    @Test
    void interruptEndsABlockedMemberPoll() throws Exception {
        try (Member m = broker.join("t", "members")) {
            Outcome o = interruptWhileBlocked(() -> m.poll(10, Broker.FOREVER), () -> true);
            assertInterrupted(o);
        }
    }

    @Test
    void interruptEndsABlockedAckPollAfterItsAck() throws Exception {
        broker.publish("t", null, new byte[] {1}, Duration.ZERO);
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        Outcome o = interruptWhileBlocked(() -> broker.ackPoll("t", "g", 0, 0, 10, Broker.FOREVER),
                () -> broker.groupInfo("t", "g", 0).committed() == 1);
        assertInterrupted(o);
        assertEquals(0, broker.groupInfo("t", "g", 0).inFlight(), "the ack stands");
    }

    @Test
    void interruptEndsABlockedMemberAckPollAfterItsAck() throws Exception {
        try (Member m = broker.join("t", "members")) {
            m.assignment();
            broker.publish("t", null, new byte[] {1}, Duration.ZERO);
            assertEquals(1, m.poll(1, Duration.ZERO).size());
            Outcome o = interruptWhileBlocked(() -> m.ackPoll(0, 0, 10, Broker.FOREVER),
                    () -> broker.groupInfo("t", "members", 0).committed() == 1);
            assertInterrupted(o);
            assertEquals(0, broker.groupInfo("t", "members", 0).inFlight(), "the ack stands");
        }
    }

    @Test
    void anInterruptedThreadStillCompletesWhatNeedsNoWait() throws Exception {
        runOnFreshThread(t -> {
            Thread.currentThread().interrupt();
            broker.publish("t", null, new byte[] {1}, Broker.FOREVER);  // room: no wait needed
            List<Message> got = broker.poll("t", "g", 0, 10, Broker.FOREVER);  // a message: no wait
            assertEquals(1, got.size());
            assertTrue(Thread.currentThread().isInterrupted());
            // A wait that must block ends at once.
            long t0 = System.nanoTime();
            try {
                broker.poll("t", "g", 0, 10, Broker.FOREVER);
                fail("an interrupted thread's blocking poll must end");
            } catch (MqInterruptedException expected) {
                assertTrue(System.nanoTime() - t0 < LIMIT_NS);
            }
            // Cleared, the thread waits normally again (its waiter was renewed).
            assertTrue(Thread.interrupted());
            assertTrue(broker.poll("t", "g", 0, 10, Duration.ofMillis(20)).isEmpty());
        });
    }

    @Test
    void shutdownWakesBlockedCallsWithClosed() throws Exception {
        CompletableFuture<Throwable> polled = CompletableFuture.supplyAsync(() -> {
            try {
                broker.poll("t", "g", 0, 10, Broker.FOREVER);
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        Await.until("the poll to start", () -> !polled.isDone());
        broker.shutdown();
        assertInstanceOf(MqClosedException.class, polled.get(10, TimeUnit.SECONDS));
    }

    private static void runOnFreshThread(Consumer<Thread> body) throws Exception {
        CompletableFuture<Void> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                body.accept(Thread.currentThread());
                f.complete(null);
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        t.start();
        f.get(10, TimeUnit.SECONDS);
    }
}
