package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Delayed delivery (ABI 1.5): {@link Broker#publishDelayed}, {@link PublishRecord#withDelay} and
 * their asynchronous forms. The message is appended at once; no group is handed it before the
 * broker clock reaches its publish time + delay, and it holds its partition's later messages
 * until then.
 */
class DelayTest {
    private ManualClock clock;
    private Broker broker;

    @BeforeEach
    void setUp() {
        clock = ManualClock.startingAt(1_000_000_000L);
        broker = Broker.create(BrokerOptions.builder().clock(clock).build());
        broker.createTopic("t", TopicConfig.builder().capacity(100).build());
        broker.subscribeGroup("t", "g");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    private List<Long> offsets(String group) {
        List<Long> out = new ArrayList<>();
        for (Message m : broker.poll("t", group, 0, 100, Duration.ZERO)) {
            out.add(m.offset());
        }
        return out;
    }

    @Test
    void theLibraryIsOneFiveOrLater() {
        assertTrue(Broker.versionNumber() >= 1_005_000, Broker.version());
    }

    @Test
    void aDelayedMessageWaitsForItsTimeAndComesAtIt() {
        PublishResult r = broker.publishDelayed("t", null, b("later"), Duration.ofSeconds(5), Duration.ZERO);
        assertEquals(new PublishResult(0, 0), r);
        assertEquals(1, broker.partitionInfo("t", 0).end(), "appended at once: only its hand-out waits");
        assertEquals(List.of(), offsets("g"));
        clock.advance(Duration.ofMillis(4999));
        assertEquals(List.of(), offsets("g"));
        clock.advance(Duration.ofMillis(1));
        List<Message> got = broker.poll("t", "g", 0, 10, Duration.ZERO);
        assertEquals(1, got.size());
        assertEquals("later", new String(got.get(0).value(), UTF_8));
        assertEquals(1, got.get(0).deliveryCount());
    }

    @Test
    void aDelayedMessageHoldsTheOnesBehindItForEveryGroup() {
        broker.subscribeGroup("t", "h");
        broker.publish("t", null, b("a"), Duration.ZERO);
        broker.publishDelayed("t", null, b("b"), List.of(Header.of("h", "v")), Duration.ofMillis(100),
                Duration.ZERO);
        broker.publish("t", null, b("c"), Duration.ZERO);
        assertEquals(List.of(0L), offsets("g"));
        assertEquals(List.of(0L), offsets("h"));
        clock.advance(Duration.ofMillis(99));
        assertEquals(List.of(), offsets("g"));
        clock.advance(Duration.ofMillis(1));
        assertEquals(List.of(1L, 2L), offsets("g"));
        assertEquals(List.of(1L, 2L), offsets("h"));
    }

    @Test
    void batchRecordsCarryTheirOwnDelays() {
        BatchResult r = broker.publishBatch("t", List.of(
                PublishRecord.of(null, b("x")),
                PublishRecord.of(null, b("y")).withDelay(Duration.ofMillis(50)),
                new PublishRecord(b("k"), b("z"), List.of(), Duration.ofMillis(10))), Duration.ZERO);
        assertEquals(3, r.published());
        assertEquals(new PublishResult(0, 2), r.result(2));
        assertEquals(List.of(0L), offsets("g"));
        clock.advance(Duration.ofMillis(10));
        assertEquals(List.of(), offsets("g"), "z is due, but waits behind y");
        clock.advance(Duration.ofMillis(40));
        assertEquals(List.of(1L, 2L), offsets("g"));
    }

    @Test
    void aFractionOfAMillisecondRoundsUp() {
        broker.publishDelayed("t", null, b("a"), Duration.ofNanos(1), Duration.ZERO);
        assertEquals(List.of(), offsets("g"));
        clock.advance(Duration.ofMillis(1));
        assertEquals(List.of(0L), offsets("g"));
    }

    @Test
    void aBadDelayIsRefusedWithTheLibrarysMessage() {
        MqInvalidArgumentException e = assertThrows(MqInvalidArgumentException.class,
                () -> broker.publishDelayed("t", null, b("bad"), Duration.ofMillis(-1), Duration.ZERO));
        assertTrue(e.getMessage().endsWith(
                "record 0: delay_ms is -1; it must be 0 to 1099511627776 ms (2^40 ms)"), e.getMessage());
        assertNull(e.partialBatch());
        e = assertThrows(MqInvalidArgumentException.class, () -> broker.publishBatch("t", List.of(
                PublishRecord.of(null, b("ok")),
                PublishRecord.of(null, b("bad")).withDelay(Duration.ofMillis((1L << 40) + 1))), Duration.ZERO));
        assertTrue(e.getMessage().contains(
                "record 1: delay_ms is 1099511627777; it must be 0 to 1099511627776 ms"), e.getMessage());
        // Beyond what a long of milliseconds holds: saturated, and refused by the library.
        assertThrows(MqInvalidArgumentException.class, () -> broker.publishDelayed("t", null, b("bad"),
                Duration.ofSeconds(Long.MAX_VALUE), Duration.ZERO));
        assertThrows(NullPointerException.class, () -> PublishRecord.of(null, b("x")).withDelay(null));
        assertEquals(0, broker.partitionInfo("t", 0).end(), "nothing was appended");
    }

    @Test
    void theAsynchronousFormsTakeDelays() throws Exception {
        assertEquals(new PublishResult(0, 0), broker.publishDelayedAsync("t", null, b("a"), Duration.ofSeconds(1),
                Duration.ZERO).get(10, TimeUnit.SECONDS));
        BatchResult r = broker.publishBatchAsync("t", List.of(
                PublishRecord.of(null, b("b")).withDelay(Duration.ofSeconds(2)),
                PublishRecord.of(null, b("c")).withDelay(Duration.ofSeconds(3))), Duration.ZERO)
                .get(10, TimeUnit.SECONDS);
        assertEquals(2, r.published());
        ExecutionException e = assertThrows(ExecutionException.class, () -> broker.publishDelayedAsync("t", null,
                b("bad"), Duration.ofMillis(-5), Duration.ZERO).get(10, TimeUnit.SECONDS));
        assertInstanceOf(MqInvalidArgumentException.class, e.getCause());
        assertTrue(e.getCause().getMessage().contains("record 0: delay_ms is -5;"), e.getCause().getMessage());
        for (long due = 0; due < 3; due++) {
            assertEquals(List.of(), offsets("g"));
            clock.advance(Duration.ofSeconds(1));
            assertEquals(List.of(due), offsets("g"));
        }
    }

    @Test
    void aBlockingPollWakesWhenADelayedMessageIsDue() {
        try (Broker real = Broker.create()) {
            real.createTopic("t");
            real.subscribeGroup("t", "g");
            long start = System.nanoTime();
            real.publishDelayed("t", null, b("soon"), Duration.ofMillis(50), Duration.ZERO);
            List<Message> got = real.poll("t", "g", 0, 10, Duration.ofSeconds(10));
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(1, got.size());
            assertTrue(tookMs >= 50, "returned after " + tookMs + " ms, before the message was due");
            assertTrue(tookMs < 5000, "returned after " + tookMs + " ms, not when the message was due");
        }
    }

    @Test
    void aPendingPollAsyncWakesWhenADelayedMessageIsDue() throws Exception {
        try (Broker real = Broker.create()) {
            real.createTopic("t");
            real.subscribeGroup("t", "g");
            long start = System.nanoTime();
            real.publishDelayedAsync("t", null, b("soon"), Duration.ofMillis(50), Duration.ZERO)
                    .get(10, TimeUnit.SECONDS);
            List<Message> got = real.pollAsync("t", "g", 0, 10, Duration.ofSeconds(10)).get(10, TimeUnit.SECONDS);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(1, got.size());
            assertTrue(tookMs >= 50 && tookMs < 5000, "returned after " + tookMs + " ms");
        }
    }
}
