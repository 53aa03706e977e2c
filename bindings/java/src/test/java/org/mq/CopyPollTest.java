package org.mq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Polls copy into a per-thread buffer that starts small (64 KiB) and grows: a message larger
 * than it, and a batch that does not fit in it, still come whole and in order. Each case runs
 * on a fresh thread, whose buffer has its first size.
 */
class CopyPollTest {
    private static final int BIG = 300 * 1024;

    static byte[] filled(int n, int seed) {
        byte[] a = new byte[n];
        for (int i = 0; i < n; i++) {
            a[i] = (byte) (i * 31 + seed);
        }
        return a;
    }

    /** Runs body on a new thread (a poll buffer of the first size) and rethrows its failure. */
    static void onFreshThread(Runnable body) throws InterruptedException {
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        t.start();
        t.join();
        if (failed.get() instanceof AssertionError e) {
            throw e;
        }
        if (failed.get() != null) {
            throw new AssertionError(failed.get());
        }
    }

    static Broker broker() {
        Broker b = Broker.create(BrokerOptions.builder().maxMessageBytes(1 << 20).build());
        b.createTopic("t", TopicConfig.builder().partitions(1).capacity(1024).build());
        b.subscribeGroup("t", "g");
        return b;
    }

    @Test
    void aMessageLargerThanTheBufferGrowsIt() throws InterruptedException {
        try (Broker b = broker()) {
            List<Header> hs = List.of(Header.of("h", "v"), Header.ofBytes(new byte[0], filled(1000, 3)));
            b.publish("t", filled(5000, 1), filled(BIG, 2), hs, Duration.ZERO);
            onFreshThread(() -> {
                List<Message> got = b.poll("t", "g", 0, 10, Duration.ZERO);
                assertEquals(1, got.size());
                assertArrayEquals(filled(5000, 1), got.get(0).key());
                assertArrayEquals(filled(BIG, 2), got.get(0).value());
                assertEquals(hs, got.get(0).headers());
                assertEquals(1, got.get(0).deliveryCount());
            });
        }
    }

    @Test
    void aBatchBeyondTheBufferComesWholeAndInOrder() throws InterruptedException {
        try (Broker b = broker()) {
            for (int i = 0; i < 40; i++) {
                b.publish("t", null, filled(8 * 1024, i), Duration.ZERO);
            }
            onFreshThread(() -> {
                List<Message> got = b.poll("t", "g", 0, 40, Duration.ZERO);
                assertEquals(40, got.size(), "40 messages of 8 KiB, more than the first buffer holds");
                for (int i = 0; i < 40; i++) {
                    assertEquals(i, got.get(i).offset());
                    assertArrayEquals(filled(8 * 1024, i), got.get(i).value());
                }
            });
        }
    }

    @Test
    void anAckPollWhoseMessageDoesNotFitKeepsItsAck() throws InterruptedException {
        try (Broker b = broker()) {
            b.publish("t", null, new byte[] {1}, Duration.ZERO);
            b.publish("t", null, filled(BIG, 7), Duration.ZERO);
            onFreshThread(() -> {
                assertEquals(0, b.poll("t", "g", 0, 1, Duration.ZERO).get(0).offset());
                List<Message> got = b.ackPoll("t", "g", 0, 0, 10, Duration.ZERO);
                assertEquals(1, got.size());
                assertEquals(1, got.get(0).offset());
                assertArrayEquals(filled(BIG, 7), got.get(0).value());
                assertEquals(1, got.get(0).deliveryCount(), "handed out once, not twice");
                assertEquals(1, b.groupInfo("t", "g", 0).committed(), "the ack stands");
            });
        }
    }

    @Test
    void memberPollsGrowTheBufferToo() throws InterruptedException {
        try (Broker b = broker(); Member m = b.join("t", "members")) {
            b.publish("t", null, new byte[] {1}, Duration.ZERO);
            for (int i = 0; i < 3; i++) {
                b.publish("t", null, filled(BIG, i), Duration.ZERO);
            }
            onFreshThread(() -> {
                List<Message> first = m.poll(1, Duration.ZERO);
                assertEquals(0, first.get(0).offset());
                List<Message> got = new ArrayList<>(m.ackPoll(0, 0, 10, Duration.ZERO));
                while (got.size() < 3) {
                    List<Message> more = m.poll(10, Duration.ZERO);
                    assertTrue(!more.isEmpty(), "the member's messages ran out after " + got.size());
                    got.addAll(more);
                }
                for (int i = 0; i < 3; i++) {
                    assertEquals(i + 1, got.get(i).offset());
                    assertArrayEquals(filled(BIG, i), got.get(i).value());
                }
            });
        }
    }

    /** A pushed message is copied by the binding (the C API copies only polls): same fields. */
    @Test
    void aPushedMessageReadsAsThePolledOne() throws InterruptedException {
        try (Broker b = Broker.create()) {
            b.createTopic("jobs");
            b.createTopic("dlq");
            b.subscribeGroup("jobs", "g", GroupOptions.builder().maxDeliveries(2).deadLetterTopic("dlq").build());
            b.subscribeGroup("dlq", "watcher");
            b.subscribeGroup("dlq", "pusher");
            List<Header> hs = List.of(Header.of("trace", "t-1"), Header.of("", ""));
            b.publish("jobs", new byte[] {'k'}, filled(777, 5), hs, Duration.ZERO);
            for (int i = 0; i < 2; i++) {
                assertEquals(1, b.poll("jobs", "g", 0, 1, Duration.ZERO).size());
                b.nack("jobs", "g", 0);
            }
            assertTrue(b.poll("jobs", "g", 0, 1, Duration.ZERO).isEmpty(), "dead-lettered, nothing left");
            Message polled = b.poll("dlq", "watcher", 0, 1, Duration.ZERO).get(0);
            assertEquals(new DeadLetter("jobs", "g", 0, 0, 2), polled.deadLetter().orElseThrow());
            BlockingQueue<Message> pushed = new ArrayBlockingQueue<>(1);
            Subscription s = b.subscribe("dlq", "pusher", (m, ctx) -> pushed.add(m));
            try {
                Message m = pushed.poll(10, TimeUnit.SECONDS);
                assertEquals(polled.deadLetter(), m.deadLetter());
                assertEquals(polled.headers(), m.headers());
                assertArrayEquals(polled.key(), m.key());
                assertArrayEquals(polled.value(), m.value());
                assertEquals(Arrays.asList(polled.offset(), polled.partition(), polled.timestampNanos()),
                        Arrays.asList(m.offset(), m.partition(), m.timestampNanos()));
            } finally {
                s.close();
            }
        }
    }
}
