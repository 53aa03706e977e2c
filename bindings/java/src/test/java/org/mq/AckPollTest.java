package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Broker.ackPoll and Member.ackPoll (ABI 1.1): exactly the ack, then the poll. The ack stands
 * whatever the poll finds; a rejected ack polls nothing and changes nothing.
 */
class AckPollTest {
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

    private void publish(String topic, String... payloads) {
        for (String p : payloads) {
            broker.publish(topic, null, p.getBytes(UTF_8), Duration.ZERO);
        }
    }

    /** The group's cursor on partition 0 of t: committed/next/in flight. */
    private String cursor(String group) {
        GroupInfo g = broker.groupInfo("t", group, 0);
        return g.committed() + "/" + g.next() + "/" + g.inFlight();
    }

    private static List<String> values(List<Message> ms) {
        List<String> out = new ArrayList<>();
        for (Message m : ms) {
            out.add(m.offset() + ":" + m.valueAsString());
        }
        return out;
    }

    private static CompletableFuture<Object> inBackground(Supplier<Object> call) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return call.get();
            } catch (Throwable e) {
                return e;
            }
        }, r -> new Thread(r).start());
    }

    @Test
    void equalsAckThenPoll() {
        broker.subscribeGroup("t", "pair");
        publish("t", "m-0", "m-1", "m-2");
        assertEquals(values(broker.poll("t", "g", 0, 2, Duration.ZERO)),
                values(broker.poll("t", "pair", 0, 2, Duration.ZERO)));
        List<Message> combined = broker.ackPoll("t", "g", 0, 1, 2, Duration.ZERO);
        broker.ack("t", "pair", 0, 1);
        List<Message> pair = broker.poll("t", "pair", 0, 2, Duration.ZERO);
        assertEquals(List.of("2:m-2"), values(combined));
        assertEquals(values(pair), values(combined));
        assertEquals(cursor("pair"), cursor("g"));
        assertEquals(2, broker.groupInfo("t", "g", 0).committed());
        assertEquals("log 2..2, backlog 1/4; g 2/3; pair 2/3", broker.describe("t", 0));
    }

    @Test
    void aRejectedAckPollsNothingAndChangesNothing() {
        publish("t", "m-0", "m-1");
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        String before = cursor("g");
        MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                () -> broker.ackPoll("t", "g", 0, 5, 10, Duration.ofSeconds(10)));
        assertEquals("offset 5 is not in flight for g (in flight: 0..0)", e.getMessage());
        assertEquals(before, cursor("g"), "nothing was acked or handed out");
        assertThrows(MqNoSuchPartitionException.class, () -> broker.ackPoll("t", "g", 7, 0, 10, Duration.ZERO));
        assertThrows(MqNoSuchGroupException.class, () -> broker.ackPoll("t", "nope", 0, 0, 10, Duration.ZERO));
        assertThrows(MqInvalidArgumentException.class, () -> broker.ackPoll("t", "g", 0, 0, 0, Duration.ZERO));
        assertThrows(MqInvalidArgumentException.class, () -> broker.ackPoll("t", "g", 0, 0, -1, Duration.ZERO));
        assertThrows(MqInvalidArgumentException.class, () -> broker.ackPoll("t", "g", 0, 0, 1, Duration.ofMillis(-1)));
        assertThrows(NullPointerException.class, () -> broker.ackPoll("t", "g", 0, 0, 1, null));
        assertEquals(before, cursor("g"));
    }

    @Test
    void theAckStandsWhenThePollFindsNothing() {
        publish("t", "m-0");
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        assertTrue(broker.ackPoll("t", "g", 0, 0, 10, Duration.ofMillis(20)).isEmpty());
        GroupInfo g = broker.groupInfo("t", "g", 0);
        assertEquals(1, g.committed());
        assertEquals(0, g.inFlight());
        assertEquals(0, broker.partitionInfo("t", 0).backlog(), "the acked message was trimmed");
    }

    @Test
    void aWaitingAckPollHasAckedAndWakesOnAPublish() throws Exception {
        publish("t", "m-0");
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        CompletableFuture<Object> polled = inBackground(() -> broker.ackPoll("t", "g", 0, 0, 10, Broker.FOREVER));
        Await.until("the ack", () -> broker.groupInfo("t", "g", 0).committed() == 1);
        assertTrue(!polled.isDone());
        publish("t", "m-1");
        Object got = polled.get(10, TimeUnit.SECONDS);
        assertTrue(got instanceof List, "returned " + got);
        assertEquals(List.of("1:m-1"), values(castMessages(got)));
    }

    @Test
    void theRoomTheAckMakesLetsABlockedPublisherIn() throws Exception {
        broker.createTopic("small", TopicConfig.builder().capacity(2).build());
        broker.subscribeGroup("small", "g");
        publish("small", "a", "b");
        broker.poll("small", "g", 0, 1, Duration.ZERO);
        CompletableFuture<Object> publisher = inBackground(
                () -> broker.publish("small", null, "c".getBytes(UTF_8), Broker.FOREVER));
        Await.until("the publisher to block", () -> broker.partitionInfo("small", 0).producerWaits() == 1);
        assertEquals(List.of("1:b"), values(broker.ackPoll("small", "g", 0, 0, 1, Duration.ZERO)));
        assertEquals(new PublishResult(0, 2), publisher.get(10, TimeUnit.SECONDS));
    }

    @Test
    void shutdownEndsAWaitingAckPollAfterItsAck() throws Exception {
        publish("t", "m-0");
        broker.poll("t", "g", 0, 1, Duration.ZERO);
        CompletableFuture<Object> polled = inBackground(() -> broker.ackPoll("t", "g", 0, 0, 10, Broker.FOREVER));
        Await.until("the ack", () -> broker.groupInfo("t", "g", 0).committed() == 1);
        broker.shutdown();
        assertInstanceOf(MqClosedException.class, polled.get(10, TimeUnit.SECONDS));
    }

    @Test
    void memberAckPollIsTheAckThenTheMembersPoll() {
        broker.createTopic("u");
        try (Member a = broker.join("u", "members")) {
            assertEquals(List.of(0), a.assignment().partitions());
            publish("u", "x-0", "x-1");
            assertEquals(List.of("0:x-0"), values(a.poll(1, Duration.ZERO)));
            assertEquals(List.of("1:x-1"), values(a.ackPoll(0, 0, 10, Duration.ZERO)));
            MqNotInFlightException e = assertThrows(MqNotInFlightException.class,
                    () -> a.ackPoll(0, 0, 10, Duration.ofSeconds(10)));
            assertEquals("offset 0 is not in flight for members (in flight: 1..1)", e.getMessage());
            assertThrows(MqNoSuchPartitionException.class, () -> a.ackPoll(3, 1, 10, Duration.ZERO));
            assertThrows(MqInvalidArgumentException.class, () -> a.ackPoll(0, 1, -1, Duration.ZERO));
            assertEquals(1, broker.groupInfo("u", "members", 0).committed(), "the rejections changed nothing");
            assertTrue(a.ackPoll(0, 1, 10, Duration.ofMillis(20)).isEmpty());
            GroupInfo g = broker.groupInfo("u", "members", 0);
            assertEquals(2, g.committed());
            assertEquals(0, g.inFlight());
        }
    }

    @Test
    void aMemberFencedFromAPartitionCannotAckPollIt() {
        broker.createTopic("two", TopicConfig.builder().partitions(2).build());
        Member a = broker.join("two", "members", MemberOptions.builder().memberId("a").build());
        Member b = broker.join("two", "members", MemberOptions.builder().memberId("b").build());
        assertThrows(MqRebalancedException.class, () -> a.ackPoll(1, 0, 10, Duration.ZERO));
        List<Integer> mine = a.assignment().partitions();
        assertEquals(List.of(0), mine);
        publish("two", "p", "q");  // round-robin: one on each partition
        assertEquals(1, a.poll(10, Duration.ZERO).size());
        assertThrows(MqFencedException.class, () -> a.ackPoll(1, 0, 10, Duration.ZERO));
        assertEquals(0, broker.groupInfo("two", "members", 0).committed(), "nothing was acked");
        b.close();
        a.close();
    }

    @Test
    void closingAMemberEndsItsWaitingAckPollAfterTheAck() throws Exception {
        broker.createTopic("u");
        Member a = broker.join("u", "members");
        a.assignment();
        publish("u", "x-0");
        a.poll(1, Duration.ZERO);
        CompletableFuture<Object> polled = inBackground(() -> a.ackPoll(0, 0, 10, Broker.FOREVER));
        Await.until("the ack", () -> broker.groupInfo("u", "members", 0).committed() == 1);
        a.close();
        assertInstanceOf(MqClosedException.class, polled.get(10, TimeUnit.SECONDS));
    }

    @SuppressWarnings("unchecked")
    private static List<Message> castMessages(Object o) {
        return (List<Message>) o;
    }
}
