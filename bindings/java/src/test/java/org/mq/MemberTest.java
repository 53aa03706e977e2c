package org.mq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class MemberTest {
    private Broker broker;

    @BeforeEach
    void setUp() {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().partitions(4).build());
    }

    @AfterEach
    void tearDown() {
        broker.close();
    }

    @Test
    void joinsSplitThePartitionsAndTheListenerSeesEveryGeneration() {
        List<String> events = new CopyOnWriteArrayList<>();
        AtomicReference<Member> firstSeen = new AtomicReference<>();
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("a").rebalanceListener((m, gen) -> {
            firstSeen.compareAndSet(null, m);
            events.add("a:" + gen + ":" + m.assignment().partitions());
        }).build());
        assertSame(a, firstSeen.get(), "the listener gets the member join returns, even during the join");
        assertEquals("a", a.id());
        assertEquals(new Assignment(1, List.of(0, 1, 2, 3)), a.assignment());
        Member b = broker.join("t", "g", MemberOptions.builder().memberId("b").build());
        assertEquals(List.of(1, 3), b.assignment().partitions());
        assertEquals(List.of("a:1:[0, 1, 2, 3]", "a:2:[0, 2]"), events);
        // a has not fetched generation 2 through its own calls... the listener did: no REBALANCED.
        a.poll(10, Duration.ZERO);
        b.close();
        assertEquals("a:3:[0, 1, 2, 3]", events.get(2));
        a.close();
    }

    @Test
    void aMemberLearnsOfARebalanceAndIsFencedFromPartitionsItLost() {
        broker.subscribeGroup("t", "g");
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("a").build());
        for (int p = 0; p < 4; p++) {
            broker.publish("t", ("k" + p).getBytes(UTF_8), "m".getBytes(UTF_8), Duration.ZERO);
        }
        Member b = broker.join("t", "g", MemberOptions.builder().memberId("b").build());
        assertThrows(MqRebalancedException.class, () -> a.poll(10, Duration.ZERO));
        Assignment as = a.assignment();
        assertEquals(List.of(0, 2), as.partitions());
        MqFencedException e = assertThrows(MqFencedException.class, () -> a.ack(1, 0));
        assertTrue(!e.getMessage().isEmpty());
        List<Message> got = new ArrayList<>();
        for (int i = 0; i < 4 && got.size() < 4; i++) {
            got.addAll(b.poll(10, Duration.ZERO));
        }
        for (Message m : got) {
            assertTrue(m.partition() == 1 || m.partition() == 3, "b only gets its partitions: " + m);
            b.ack(m.partition(), m.offset());
        }
        a.close();
        b.close();
    }

    @Test
    void aCustomAssignorDecidesAndItsFailureIsReported() {
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        PartitionAssignor allToLast = (partitions, ids) -> {
            int[] owners = new int[partitions];
            java.util.Arrays.fill(owners, ids.size() - 1);
            return owners;
        };
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("a").assignor(allToLast).build());
        Member b = broker.join("t", "g", MemberOptions.builder().memberId("b").build());
        assertEquals(List.of(0, 1, 2, 3), b.assignment().partitions());
        assertEquals(List.of(), a.assignment().partitions());
        a.close();
        b.close();
        Member c = broker.join("t", "h", MemberOptions.builder().assignor((p, ids) -> {
            throw new IllegalStateException("assignor failed");
        }).onCallbackError((t, e) -> errors.add(e)).build());
        assertEquals(List.of(), c.assignment().partitions(), "a failed assignment leaves partitions unowned");
        assertEquals(1, errors.size());
        assertEquals("assignor failed", errors.get(0).getMessage());
        c.close();
    }

    @Test
    void closeFromItsOwnListenerThrowsAndAnotherMembersWorks() {
        AtomicReference<Throwable> own = new AtomicReference<>();
        AtomicReference<Member> other = new AtomicReference<>();
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("a").rebalanceListener((m, gen) -> {
            if (gen == 2) {
                try {
                    m.close();
                } catch (Throwable e) {
                    own.set(e);
                }
            }
        }).build());
        Member b = broker.join("t", "g", MemberOptions.builder().memberId("b").build());
        assertInstanceOf(MqDeadlockException.class, own.get());
        assertTrue(!a.isClosed());
        other.set(b);
        a.close();
        b.close();
    }

    @Test
    void closeWakesAPollBlockedOnAnotherThread() throws Exception {
        Member a = broker.join("t", "g");
        CompletableFuture<Throwable> polled = CompletableFuture.supplyAsync(() -> {
            try {
                a.poll(10, Broker.FOREVER);
                return null;
            } catch (Throwable e) {
                return e;
            }
        });
        Await.until("the poll to block", () -> !polled.isDone());
        a.close();
        assertInstanceOf(MqClosedException.class, polled.get(10, TimeUnit.SECONDS));
        assertThrows(MqClosedException.class, () -> a.poll(1, Duration.ZERO));
    }

    @Test
    void aDuplicateIdIsRefused() {
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("same").build());
        List<Long> calls = new CopyOnWriteArrayList<>();
        assertThrows(MqAlreadyExistsException.class, () -> broker.join("t", "g",
                MemberOptions.builder().memberId("same").rebalanceListener((m, g) -> calls.add(g)).build()));
        assertEquals(List.of(), calls, "a failed join never calls its listener");
        a.close();
    }

    @Test
    void pushSubscriptionsAreMembersToo() throws Exception {
        broker.subscribeGroup("t", "g");
        List<Integer> partitions = new CopyOnWriteArrayList<>();
        Member a = broker.join("t", "g", MemberOptions.builder().memberId("a").build());
        Subscription s = broker.subscribe("t", "g", (m, c) -> partitions.add(m.partition()));
        Await.until("the push member to get partitions", () -> {
            try {
                return a.assignment().partitions().size() == 2;
            } catch (MqRebalancedException e) {
                return false;
            }
        });
        List<Integer> mine = a.assignment().partitions();
        for (int i = 0; i < 40; i++) {
            broker.publish("t", ("key-" + i).getBytes(UTF_8), new byte[] {1}, Broker.FOREVER);
        }
        Await.until("the subscription to handle its share", () -> {
            long total = 0;
            for (int p = 0; p < 4; p++) {
                if (!mine.contains(p)) {
                    total += broker.partitionInfo("t", p).end();
                }
            }
            return partitions.size() == total;
        });
        for (int p : partitions) {
            assertTrue(!mine.contains(p), "the subscription only handles its own partitions");
        }
        s.close();
        a.close();
    }
}
