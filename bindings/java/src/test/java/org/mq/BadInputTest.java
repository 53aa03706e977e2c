package org.mq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Bad input of Java's own kinds: nulls, negative sizes and durations, illegal names, closed
 * objects. Each is a clear exception, never a crash, and changes nothing.
 */
class BadInputTest {
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().capacity(4).build());
        broker.subscribeGroup("t", "g");
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    private static <T extends MqException> T refused(Class<T> type, Executable call) {
        T e = assertThrows(type, call);
        assertFalse(e.getMessage().isEmpty(), "every error says what went wrong");
        return e;
    }

    @Test
    void nullNamesGoToTheLibraryWhichRefusesThem() {
        refused(MqInvalidArgumentException.class, () -> broker.createTopic(null));
        refused(MqInvalidArgumentException.class, () -> broker.publish(null, null, new byte[1], Duration.ZERO));
        refused(MqInvalidArgumentException.class, () -> broker.poll("t", null, 0, 1, Duration.ZERO));
        refused(MqInvalidArgumentException.class, () -> broker.ack(null, "g", 0, 0));
        refused(MqInvalidArgumentException.class, () -> broker.subscribe("t", null, (m, c) -> {}));
        assertEquals(List.of("t"), broker.topics(), "nothing changed");
    }

    @Test
    void nullJavaArgumentsAreNullPointerExceptions() {
        assertThrows(NullPointerException.class, () -> broker.publish("t", null, new byte[1], null));
        assertThrows(NullPointerException.class, () -> broker.publish("t", null, new byte[1], null, Duration.ZERO));
        assertThrows(NullPointerException.class, () -> broker.publish("t", null, new byte[1],
                Arrays.asList((Header) null), Duration.ZERO));
        assertThrows(NullPointerException.class, () -> broker.publishBatch("t", null, Duration.ZERO));
        assertThrows(NullPointerException.class, () -> broker.subscribe("t", "g", null));
        assertThrows(NullPointerException.class, () -> broker.createTopic("u", null));
        assertThrows(NullPointerException.class, () -> Broker.create(null));
        assertEquals(0, broker.partitionInfo("t", 0).end(), "nothing was published");
    }

    @Test
    void nullValueIsTheEmptyPayload() {
        broker.publish("t", null, null, Duration.ZERO);
        assertEquals(0, broker.poll("t", "g", 0, 1, Duration.ZERO).get(0).value().length);
    }

    @Test
    void negativeSizesAndDurations() {
        refused(MqInvalidArgumentException.class, () -> broker.poll("t", "g", 0, -1, Duration.ZERO));
        refused(MqInvalidArgumentException.class, () -> broker.poll("t", "g", 0, 0, Duration.ZERO));
        refused(MqInvalidArgumentException.class, () -> broker.poll("t", "g", 0, 1, Duration.ofMillis(-1)));
        refused(MqInvalidArgumentException.class, () -> broker.publish("t", null, new byte[1], Duration.ofSeconds(-5)));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("u", TopicConfig.builder().partitions(-1).build()));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("u", TopicConfig.builder().capacity(-3).build()));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("u", TopicConfig.builder().maxBytes(-1).build()));
        refused(MqInvalidArgumentException.class,
                () -> broker.createTopic("u", TopicConfig.builder().ackTimeout(Duration.ofMillis(-1)).build()));
        refused(MqInvalidArgumentException.class, () -> broker.nackDelayed("t", "g", 0, Duration.ofMillis(-1)));
        refused(MqInvalidArgumentException.class,
                () -> broker.subscribeGroup("t", "h", GroupOptions.builder().maxDeliveries(-1).build()));
        refused(MqInvalidArgumentException.class,
                () -> Broker.create(BrokerOptions.builder().maxMessageBytes(-1).build()).close());
        refused(MqInvalidArgumentException.class,
                () -> broker.subscribe("t", "g", (m, c) -> {}, SubscribeOptions.builder().prefetch(-1).build()));
        refused(MqInvalidArgumentException.class, () -> Broker.partitionFor(new byte[1], -1));
        refused(MqInvalidArgumentException.class, () -> Broker.roundRobin(4, -2, 0));
        assertEquals(List.of("t"), broker.topics());
        assertEquals(List.of("g"), broker.groups("t"));
    }

    @Test
    void hugeWaitsSaturateInsteadOfOverflowing() {
        // Duration.ofSeconds(Long.MAX_VALUE) has no long of milliseconds: it must not wrap to
        // a negative (invalid) wait; beyond the library's 2^40 ms it waits without limit.
        // With a message there, no wait is needed.
        broker.publish("t", null, new byte[1], Duration.ZERO);
        assertEquals(1, broker.poll("t", "g", 0, 1, Duration.ofSeconds(Long.MAX_VALUE)).size());
    }

    @Test
    void illegalAndUnknownNames() {
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("bad name"));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic(""));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("x".repeat(250)));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("nul\0inside"));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("caf\u00e9"));
        refused(MqInvalidArgumentException.class, () -> broker.createTopic("\ud83d\ude00"));
        refused(MqNoSuchTopicException.class, () -> broker.publish("nope", null, new byte[1], Duration.ZERO));
        refused(MqNoSuchGroupException.class, () -> broker.poll("t", "nope", 0, 1, Duration.ZERO));
        refused(MqNoSuchPartitionException.class, () -> broker.poll("t", "g", 7, 1, Duration.ZERO));
        refused(MqAlreadyExistsException.class, () -> broker.createTopic("t"));
        broker.createTopic("x".repeat(249));
        assertEquals(List.of("t", "x".repeat(249)), broker.topics());
    }

    @Test
    void tooLargeMessages() {
        try (Broker small = Broker.create(BrokerOptions.builder().maxMessageBytes(16).build())) {
            small.createTopic("t");
            small.publish("t", new byte[8], new byte[8], Duration.ZERO);
            refused(MqTooLargeException.class, () -> small.publish("t", new byte[8], new byte[9], Duration.ZERO));
            refused(MqTooLargeException.class, () -> small.publish("t", null, new byte[1],
                    List.of(Header.of("name", new byte[20])), Duration.ZERO));
        }
        byte[] big = new byte[100_000];  // above the stack buffer: the copy goes to the heap
        big[99_999] = 7;
        broker.publish("t", null, big, Duration.ZERO);
        assertEquals(7, broker.poll("t", "g", 0, 1, Duration.ZERO).get(0).value()[99_999]);
    }

    @Test
    void closedBrokerRefusesEverything() {
        Broker b = Broker.create();
        b.createTopic("t");
        b.subscribeGroup("t", "g");
        b.shutdown();
        refused(MqClosedException.class, () -> b.publish("t", null, new byte[1], Duration.ZERO));
        refused(MqClosedException.class, () -> b.poll("t", "g", 0, 1, Duration.ZERO));
        refused(MqClosedException.class, () -> b.subscribe("t", "g", (m, c) -> {}));
        refused(MqClosedException.class, () -> b.join("t", "g"));
        assertEquals("log empty, next offset 0, backlog 0/1024; g 0/0", b.describe("t", 0),
                "introspection works after shutdown");
        b.close();
        b.close();  // idempotent
        refused(MqClosedException.class, () -> b.publish("t", null, new byte[1], Duration.ZERO));
        refused(MqClosedException.class, () -> b.describe("t", 0));
        refused(MqClosedException.class, () -> b.shutdown());
        assertTrue(b.toString().contains("closed"));
    }

    @Test
    void handlerContextOutsideAHandlerIsRefused() {
        refused(MqInvalidArgumentException.class, () -> HandlerContext.current().extendLease());
        refused(MqInvalidArgumentException.class, () -> HandlerContext.current().nackDelay(Duration.ofMillis(1)));
        HandlerContext.current().nack();  // nothing to nack: no effect
    }
}
