package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The specification's reference stress through the Java API, and a push variant with failing
 * handlers: every group gets every message (at-least-once), every key in publish order.
 */
class StressTest {
    static final int PRODUCERS = 4;
    static final int PER_PRODUCER = 2500;
    static final int KEYS = 40;
    static final int PARTITIONS = 4;
    static final int TOTAL = PRODUCERS * PER_PRODUCER;
    static final int PER_KEY = TOTAL / KEYS;

    static byte[] key(int k) {
        return String.format("key-%02d", k).getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] payload(int k, int seq) {
        return ByteBuffer.allocate(8).putInt(k).putInt(seq).array();
    }

    /** Key k is owned by producer k % PRODUCERS; each publishes its keys' sequences in order. */
    static List<Thread> producers(Broker broker, String topic, ConcurrentLinkedQueue<Throwable> errors) {
        List<Thread> out = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            int producer = p;
            Thread t = new Thread(() -> {
                try {
                    for (int i = 0; i < PER_PRODUCER; i++) {
                        int k = producer + PRODUCERS * (i % (KEYS / PRODUCERS));
                        int seq = i / (KEYS / PRODUCERS);
                        broker.publish(topic, key(k), payload(k, seq), Broker.FOREVER);
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }, "producer-" + p);
            out.add(t);
        }
        return out;
    }

    /** Per-key order check of one group: each key's next expected sequence number. */
    static final class OrderCheck {
        final AtomicIntegerArray next = new AtomicIntegerArray(KEYS);
        final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        final AtomicLong received = new AtomicLong();
        final AtomicLong duplicates = new AtomicLong();

        /** A message handled to completion. Redeliveries of what was done before are allowed. */
        void done(Message m) {
            ByteBuffer b = ByteBuffer.wrap(m.value());
            int k = b.getInt();
            int seq = b.getInt();
            if (!java.util.Arrays.equals(m.key(), key(k))) {
                violations.add("key does not match payload at " + m);
                return;
            }
            received.incrementAndGet();
            int want = next.get(k);  // one owner per key's partition: no race on a key
            if (seq == want) {
                next.set(k, want + 1);
            } else if (seq < want) {
                duplicates.incrementAndGet();
            } else {
                violations.add("key-" + k + ": seq " + seq + " after " + (want - 1));
            }
        }

        void assertComplete(String group) {
            assertTrue(violations.isEmpty(), group + ": " + violations);
            for (int k = 0; k < KEYS; k++) {
                assertEquals(PER_KEY, next.get(k), group + ": key-" + k + " ended early");
            }
        }
    }

    @Test
    void referenceStressPull() throws Exception {
        try (Broker broker = Broker.create()) {
            broker.createTopic("stress", TopicConfig.builder().partitions(PARTITIONS).capacity(64).build());
            String[] groups = {"billing", "email"};
            OrderCheck[] checks = {new OrderCheck(), new OrderCheck()};
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int g = 0; g < 2; g++) {
                broker.subscribeGroup("stress", groups[g]);
            }
            for (int g = 0; g < 2; g++) {
                for (int c = 0; c < 2; c++) {
                    String group = groups[g];
                    OrderCheck check = checks[g];
                    boolean slow = g == 1;
                    List<Integer> mine = Broker.roundRobin(PARTITIONS, 2, c);
                    threads.add(new Thread(() -> {
                        try {
                            long deadline = System.nanoTime() + 60_000_000_000L;
                            while (check.received.get() < TOTAL && System.nanoTime() < deadline) {
                                for (int p : mine) {
                                    List<Message> got = broker.poll("stress", group, p, 10, Duration.ofMillis(1));
                                    if (got.isEmpty()) {
                                        continue;
                                    }
                                    got.forEach(check::done);
                                    broker.ack("stress", group, p, got.get(got.size() - 1).offset());
                                    if (slow) {
                                        Thread.sleep(0, 200_000);
                                    }
                                }
                            }
                        } catch (Throwable e) {
                            errors.add(e);
                        }
                    }, group + "-" + c));
                }
            }
            threads.addAll(producers(broker, "stress", errors));
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(90_000);
                assertTrue(!t.isAlive(), t.getName() + " did not finish");
            }
            assertTrue(errors.isEmpty(), errors.toString());
            for (int g = 0; g < 2; g++) {
                checks[g].assertComplete(groups[g]);
                assertEquals(TOTAL, checks[g].received.get(), "pull without failures delivers exactly once");
            }
            long waits = 0;
            long largest = 0;
            for (int p = 0; p < PARTITIONS; p++) {
                PartitionInfo info = broker.partitionInfo("stress", p);
                waits += info.producerWaits();
                largest = Math.max(largest, info.maxBacklog());
            }
            assertTrue(waits > 0, "producers blocked on back-pressure");
            assertEquals(64, largest, "the backlog reached capacity and never exceeded it");
        }
    }

    @Test
    void pushWithFailingHandlersIsAtLeastOnceInKeyOrder() throws Exception {
        try (Broker broker = Broker.create()) {
            broker.createTopic("stress", TopicConfig.builder().partitions(PARTITIONS).capacity(64).build());
            OrderCheck check = new OrderCheck();
            AtomicLong failures = new AtomicLong();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<Subscription> subs = new ArrayList<>();
            for (int i = 0; i < 2; i++) {  // two members of one group share the partitions
                subs.add(broker.subscribe("stress", "push", (m, c) -> {
                    if (ThreadLocalRandom.current().nextInt(50) == 0) {
                        failures.incrementAndGet();
                        throw new IllegalStateException("a transient failure");
                    }
                    check.done(m);
                }, SubscribeOptions.builder().prefetch(8).onHandlerError((t, e) -> {}).build()));
            }
            List<Thread> producers = producers(broker, "stress", errors);
            producers.forEach(Thread::start);
            for (Thread t : producers) {
                t.join(90_000);
            }
            Await.until("every key handled to its end", 60_000, () -> {
                for (int k = 0; k < KEYS; k++) {
                    if (check.next.get(k) < PER_KEY) {
                        return !check.violations.isEmpty();
                    }
                }
                return true;
            });
            subs.forEach(Subscription::close);
            assertTrue(errors.isEmpty(), errors.toString());
            check.assertComplete("push");
            assertTrue(failures.get() > 0, "some handler calls failed");
        }
    }
}
