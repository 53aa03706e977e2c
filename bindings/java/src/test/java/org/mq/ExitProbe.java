package org.mq;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * Run in a child JVM by {@link JvmExitTest}: leaves live subscriptions, a member, a handler
 * that is running and calls blocked in the library, then lets the JVM end in the way the
 * argument says. Prints "ready" just before.
 */
public final class ExitProbe {
    private ExitProbe() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Broker broker = Broker.create();
        broker.createTopic("busy", TopicConfig.builder().partitions(2).capacity(4).build());
        broker.createTopic("full", TopicConfig.builder().capacity(1).build());
        broker.subscribeGroup("full", "stuck");
        CountDownLatch handling = new CountDownLatch(1);
        // A handler that is always inside a call (it sleeps in it), on two partitions.
        broker.subscribe("busy", "slow", (m, c) -> {
            handling.countDown();
            Thread.sleep(5);
            if (mode.equals("exit-from-handler")) {
                System.out.println("ready");
                System.out.flush();
                System.exit(3);
            }
        });
        // A handler that keeps publishing into the same broker.
        broker.subscribe("busy", "echo", (m, c) -> broker.publish("full", null, m.value(), Duration.ZERO),
                SubscribeOptions.builder().onHandlerError((t, e) -> {}).build());
        Member member = broker.join("busy", "members");
        member.poll(1, Duration.ZERO);
        // Calls blocked in the library on threads of their own (daemon and not).
        broker.publish("full", null, new byte[1], Duration.ZERO);
        Thread blockedPublisher = new Thread(() -> broker.publish("full", null, new byte[1], Broker.FOREVER));
        blockedPublisher.setDaemon(true);
        blockedPublisher.start();
        Thread blockedPoller = new Thread(() -> member.poll(10, Broker.FOREVER));
        blockedPoller.setDaemon(true);
        blockedPoller.start();
        // Asynchronous calls pending in the library (ABI 1.4), their futures dropped at once:
        // no thread waits for them, the native side holds them until the broker completes them.
        broker.createTopic("quiet");
        broker.subscribeGroup("quiet", "waiting");
        for (int i = 0; i < 10; i++) {
            broker.pollAsync("quiet", "waiting", 0, 1, Broker.FOREVER);
            broker.publishAsync("full", null, new byte[1], Broker.FOREVER);
        }
        Thread feeder = new Thread(() -> {
            for (long i = 0;; i++) {
                broker.publish("busy", Long.toString(i).getBytes(), new byte[8], Broker.FOREVER);
            }
        });
        feeder.setDaemon(true);
        feeder.start();
        handling.await();
        System.out.println("ready");
        System.out.flush();
        switch (mode) {
            case "return":
                return;  // main ends: only daemon threads are left
            case "exit":
                System.exit(0);
                break;
            case "exit-from-handler":
                Thread.sleep(60_000);  // the handler exits the JVM
                break;
            case "runtime-halt":
                Runtime.getRuntime().halt(0);
                break;
            default:
                throw new IllegalArgumentException(mode);
        }
    }
}
