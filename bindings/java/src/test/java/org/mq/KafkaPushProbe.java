package org.mq;

import java.time.Duration;

/**
 * The child JVM of {@link KafkaBrokerTest}'s crash test: a push subscription on the cluster, with
 * the session timeout it is given, that prints "subscribed" once open and "got VALUE" for each
 * message it handles, until it is killed. If its parent goes first (its stdin closes) it halts
 * without closing anything, as a crash would, so no probe outlives the test run.
 *
 * <pre>KafkaPushProbe BOOTSTRAP TOPIC GROUP SESSION_TIMEOUT_MS</pre>
 */
final class KafkaPushProbe {
    private KafkaPushProbe() {}

    public static void main(String[] args) throws Exception {
        Broker b = Broker.create(BrokerOptions.builder().kafkaBootstrap(args[0])
                .kafkaSetting("client.id", "mq-java-probe").build());
        b.subscribe(args[1], args[2], (m, ctx) -> {
            System.out.println("got " + m.valueAsString());
            System.out.flush();
        }, SubscribeOptions.builder().sessionTimeout(Duration.ofMillis(Long.parseLong(args[3]))).build());
        System.out.println("subscribed");
        System.out.flush();
        while (System.in.read() >= 0) {
            // the parent writes nothing; end of input means it is gone
        }
        Runtime.getRuntime().halt(1);
    }
}
