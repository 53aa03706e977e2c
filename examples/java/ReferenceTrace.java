// The specification's reference trace and push step (docs/SPEC.md) through the Java binding,
// printed exactly as the C demo (examples/demo.c) prints its trace section; a test of the
// binding compares the two outputs byte for byte.
//
// Run it against the built binding (bindings/java: mvn package):
//   java -cp bindings/java/target/classes examples/java/ReferenceTrace.java
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.mq.Broker;
import org.mq.BrokerOptions;
import org.mq.ManualClock;
import org.mq.Message;
import org.mq.MqException;
import org.mq.MqFullException;
import org.mq.MqNotInFlightException;
import org.mq.PublishResult;
import org.mq.Subscription;
import org.mq.TopicConfig;

public final class ReferenceTrace {
    private static final String ORDERS = "orders";
    private static final int CALL_W = 46;
    private static int failures;

    public static void main(String[] args) throws Exception {
        System.out.printf("mq %s: the reference scenarios of the specification, checked as they run.%n%n",
                Broker.version());
        ManualClock clock = ManualClock.startingAt(1_000_000_000L);
        try (Broker b = Broker.create(BrokerOptions.builder().clock(clock).build())) {
            trace(b, clock);
            push(b);
        }
        if (failures > 0) {
            System.out.printf("%n%d check(s) differ from the specification%n", failures);
            System.exit(1);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String status(MqException e) {
        return e.status().constantName() + " (" + e.getMessage() + ")";
    }

    private static void expect(String what, String got, String want) {
        if (got.equals(want)) {
            return;
        }
        failures++;
        System.out.printf("     MISMATCH %s%n       got:      %s%n       expected: %s%n", what, got, want);
    }

    private static void row(Broker b, int n, String call, String result, String wantResult, String wantState) {
        String state = b.describe(ORDERS, 1);
        System.out.printf("  %d  %-" + CALL_W + "s %s%n", n, call, result);
        System.out.printf("       partition 1 after: %s%n", state);
        expect("row " + n + " result", result, wantResult);
        expect("row " + n + " partition 1", state, wantState);
    }

    private static String pollRow(Broker b, String group, int max) {
        List<Message> got;
        try {
            got = b.poll(ORDERS, group, 1, max, Duration.ZERO);
        } catch (MqException e) {
            return "poll: " + status(e);
        }
        String res = got.stream().map(m -> m.offset() + ":" + m.valueAsString()).collect(Collectors.joining(", "));
        if (!got.isEmpty() && got.get(0).deliveryCount() > 1) {
            res += " (lease ran out, rewound to " + got.get(0).offset() + ")";
        }
        return res;
    }

    private static String ack(Broker b, String group, long offset) {
        try {
            b.ack(ORDERS, group, 1, offset);
            return "";
        } catch (MqException e) {
            return "; ack " + offset + ": " + status(e);
        }
    }

    private static void trace(Broker b, ManualClock clock) {
        b.createTopic(ORDERS, TopicConfig.builder().partitions(2).capacity(3).ackTimeout(Duration.ofSeconds(30)).build());
        b.subscribeGroup(ORDERS, "billing");
        b.subscribeGroup(ORDERS, "email");
        int pa = Broker.partitionFor("user-a", 2);
        int pb = Broker.partitionFor("user-b", 2);
        System.out.printf("Reference trace: topic orders, 2 partitions, capacity 3, ack timeout 30 s;%n");
        System.out.printf("groups billing and email subscribed first; user-a -> partition %d, user-b -> partition %d.%n"
                + "Rows trace partition 1 (committed/next per group).%n%n", pa, pb);
        if (pa != 1 || pb != 0) {
            failures++;
            System.out.printf("     MISMATCH user-a/user-b should land on partitions 1/0, got %d/%d%n", pa, pb);
        }
        System.out.printf("  #  %-" + CALL_W + "s %s%n", "call", "result");
        System.out.printf("  -  %-" + CALL_W + "s %s%n", "----", "------");

        // 1: three messages for user-a and one for user-b, each fitting without a wait
        String[] keys = {"user-a", "user-a", "user-a", "user-b"};
        String[] pays = {"o-1", "o-2", "o-3", "o-4"};
        List<PublishResult> r = new ArrayList<>();
        String res = "";
        for (int i = 0; i < 4 && res.isEmpty(); i++) {
            try {
                r.add(b.publish(ORDERS, bytes(keys[i]), bytes(pays[i]), Duration.ZERO));
            } catch (MqException e) {
                res = "publish " + pays[i] + ": " + status(e);
            }
        }
        if (res.isEmpty() && r.get(1).partition() == r.get(0).partition() && r.get(2).partition() == r.get(0).partition()) {
            res = String.format("offsets %d, %d, %d on p%d; %d on p%d", r.get(0).offset(), r.get(1).offset(),
                    r.get(2).offset(), r.get(0).partition(), r.get(3).offset(), r.get(3).partition());
        } else if (res.isEmpty()) {
            res = String.format("o-1..o-3 on partitions %d, %d, %d", r.get(0).partition(), r.get(1).partition(),
                    r.get(2).partition());
        }
        row(b, 1, "publish o-1, o-2, o-3 (user-a); o-4 (user-b)", res, "offsets 0, 1, 2 on p1; 0 on p0",
                "log 0..2, backlog 3/3; billing 0/0; email 0/0");

        // 2: the partition is at capacity and the publish may not wait
        try {
            res = "offset " + b.publish(ORDERS, bytes("user-a"), bytes("o-5"), Duration.ZERO).offset();
        } catch (MqFullException e) {
            res = "full";
        } catch (MqException e) {
            res = status(e);
        }
        row(b, 2, "publish o-5 (user-a), wait 0", res, "full", "log 0..2, backlog 3/3; billing 0/0; email 0/0");

        // 3
        res = pollRow(b, "billing", 2) + ack(b, "billing", 0);
        row(b, 3, "billing polls max 2, acks 0", res, "0:o-1, 1:o-2", "log 0..2, backlog 3/3; billing 1/2; email 0/0");

        // 4: email's ack frees offset 0, which billing has already acked
        res = pollRow(b, "email", 10) + ack(b, "email", 2);
        row(b, 4, "email polls max 10, acks 2", res, "0:o-1, 1:o-2, 2:o-3",
                "log 1..2, backlog 2/3; billing 1/2; email 3/3");

        // 5
        try {
            PublishResult p = b.publish(ORDERS, bytes("user-a"), bytes("o-5"), Duration.ZERO);
            res = p.partition() == 1 ? "offset " + p.offset() : "offset " + p.offset() + " on p" + p.partition();
        } catch (MqException e) {
            res = status(e);
        }
        row(b, 5, "publish o-5 again", res, "offset 3", "log 1..3, backlog 3/3; billing 1/2; email 3/3");

        // 6: billing's lease (30 s) from row 3 runs out
        clock.advance(Duration.ofSeconds(31));
        res = pollRow(b, "billing", 10);
        row(b, 6, "clock +31 s; billing polls max 10", res, "1:o-2, 2:o-3, 3:o-5 (lease ran out, rewound to 1)",
                "log 1..3, backlog 3/3; billing 1/4; email 3/3");

        // 7
        try {
            b.ack(ORDERS, "billing", 1, 3);
            res = "ok";
        } catch (MqException e) {
            res = status(e);
        }
        row(b, 7, "billing acks 3", res, "ok", "log 3..3, backlog 1/3; billing 4/4; email 3/3");

        // 8: never delivered, so rejected with a message naming the in-flight range
        try {
            b.ack(ORDERS, "billing", 1, 7);
            res = "ok";
        } catch (MqNotInFlightException e) {
            res = "rejected: " + e.getMessage();
        } catch (MqException e) {
            res = status(e);
        }
        row(b, 8, "billing acks 7", res, "rejected: offset 7 is not in flight for billing (nothing is)",
                "log 3..3, backlog 1/3; billing 4/4; email 3/3");
    }

    record Call(String payload, long offset, boolean ok) {}

    private static void push(Broker b) throws InterruptedException {
        System.out.printf("%nPush: topic payments, 1 partition, capacity 10; group ledger's handler fails "
                + "the first time it sees pay-2.%n%n");
        b.createTopic("payments", TopicConfig.builder().partitions(1).capacity(10).build());
        List<Call> calls = new ArrayList<>();
        boolean[] failedPay2 = {false};
        Subscription sub = b.subscribe("payments", "ledger", (m, ctx) -> {
            synchronized (calls) {
                boolean isPay2 = m.valueAsString().equals("pay-2");
                boolean ok = !(isPay2 && !failedPay2[0]);
                if (isPay2) {
                    failedPay2[0] = true;
                }
                calls.add(new Call(m.valueAsString(), m.offset(), ok));
                calls.notifyAll();
                if (!ok) {
                    ctx.nack();
                }
            }
        });
        for (String p : new String[] {"pay-1", "pay-2", "pay-3"}) {
            b.publish("payments", null, bytes(p), Broker.FOREVER);
        }
        // Four handler calls are expected (pay-2 twice); then the last ack must land.
        long until = System.nanoTime() + 5_000_000_000L;
        synchronized (calls) {
            while (calls.size() < 4 && System.nanoTime() < until) {
                calls.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
            }
        }
        while (b.groupInfo("payments", "ledger", 0).committed() != 3 && System.nanoTime() < until) {
            Thread.sleep(1);  // the interval between looks at observable state
        }
        sub.close();
        Call[] want = {new Call("pay-1", 0, true), new Call("pay-2", 1, false), new Call("pay-2", 1, true),
            new Call("pay-3", 2, true)};
        for (int i = 0; i < calls.size(); i++) {
            Call c = calls.get(i);
            System.out.printf("  handler call %d: %s (offset %d) -> %s%n", i + 1, c.payload(), c.offset(),
                    c.ok() ? "ok, acked" : "failed, nacked");
            if (i >= want.length || !c.equals(want[i])) {
                failures++;
            }
        }
        if (calls.size() != 4) {
            failures++;
        }
        String state = b.describe("payments", 0);
        System.out.printf("  after: %s%n", state);
        expect("push step final state", state, "log empty, next offset 3, backlog 0/10; ledger 3/3");
    }
}
