package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PullTest {
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

    @Test
    void publishPollAckRoundTrip() {
        broker.createTopic("orders", TopicConfig.builder().partitions(2).capacity(3).build());
        broker.subscribeGroup("orders", "billing");
        PublishResult r = broker.publish("orders", b("user-a"), b("o-1"),
                List.of(Header.of("trace", "t-1"), Header.of("empty", "")), Duration.ZERO);
        assertEquals(1, r.partition(), "user-a lands on partition 1 (Kafka's partitioner)");
        assertEquals(0, r.offset());
        List<Message> got = broker.poll("orders", "billing", 1, 10, Duration.ZERO);
        assertEquals(1, got.size());
        Message m = got.get(0);
        assertEquals("o-1", m.valueAsString());
        assertEquals("user-a", m.keyAsString());
        assertEquals(1, m.deliveryCount());
        assertEquals(1, m.partition());
        assertEquals("orders", m.topic());
        broker.ack("orders", "billing", 1, m.offset());
        assertEquals("log empty, next offset 1, backlog 0/3; billing 1/1", broker.describe("orders", 1));
    }

    @Test
    void keylessAndEmptyKeyAreDifferent() {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        broker.publish("t", new byte[0], b("b"), Duration.ZERO);
        List<Message> got = broker.poll("t", "g", 0, 10, Duration.ZERO);
        assertNull(got.get(0).key());
        assertArrayEquals(new byte[0], got.get(1).key());
    }

    @Test
    void pollTimesOutEmpty() {
        broker.createTopic("t");
        broker.subscribeGroup("t", "g");
        long t0 = System.nanoTime();
        assertTrue(broker.poll("t", "g", 0, 10, Duration.ofMillis(50)).isEmpty());
        assertTrue(System.nanoTime() - t0 >= 45_000_000L, "a finite wait waits");
    }

    @Test
    void fullIsAnException() {
        broker.createTopic("t", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("t", "g");
        broker.publish("t", null, b("a"), Duration.ZERO);
        MqFullException e = assertThrows(MqFullException.class,
                () -> broker.publish("t", null, b("b"), Duration.ZERO));
        assertEquals(Status.FULL, e.status());
        assertTrue(!e.getMessage().isEmpty());
    }

    @Test
    void ackRejectionCarriesTheLibraryMessage() {
        broker.createTopic("t");
        broker.subscribeGroup("t", "billing");
        MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                () -> broker.ack("t", "billing", 0, 7));
        assertEquals("offset 7 is not in flight for billing (nothing is)", e.getMessage());
    }
}
