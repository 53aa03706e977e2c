package org.mq;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Not a test: the wake-up of a pending {@link Broker#pollAsync} by a publish, against the same
 * hop made with Java's own pieces (a {@code LinkedBlockingQueue} whose taker thread completes
 * the waiting {@code CompletableFuture}). Both: the main thread makes a future pend, hands a
 * message to another thread's side, and waits for the future. Prints the medians and the ratio.
 *
 * <pre>java -cp target/classes:target/test-classes org.mq.AsyncWakeBench [rounds]</pre>
 */
public final class AsyncWakeBench {
    private AsyncWakeBench() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        long[] mq = new long[rounds];
        long[] jdk = new long[rounds];
        byte[] payload = new byte[64];
        try (Broker broker = Broker.create()) {
            broker.createTopic("bench");
            broker.subscribeGroup("bench", "g");
            for (int pass = 0; pass < 2; pass++) {  // the first pass warms up
                for (int i = 0; i < rounds; i++) {
                    CompletableFuture<List<Message>> f = broker.pollAsync("bench", "g", 0, 1, Broker.FOREVER);
                    long t0 = System.nanoTime();
                    broker.publish("bench", null, payload, Duration.ZERO);
                    List<Message> got = f.join();
                    mq[i] = System.nanoTime() - t0;
                    broker.ack("bench", "g", 0, got.get(0).offset());
                }
            }
        }
        LinkedBlockingQueue<byte[]> queue = new LinkedBlockingQueue<>();
        LinkedBlockingQueue<CompletableFuture<byte[]>> waiting = new LinkedBlockingQueue<>();
        Thread taker = new Thread(() -> {
            try {
                for (;;) {
                    byte[] m = queue.take();
                    waiting.take().complete(m);
                }
            } catch (InterruptedException e) {
                // done
            }
        }, "bench-taker");
        taker.setDaemon(true);
        taker.start();
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < rounds; i++) {
                CompletableFuture<byte[]> f = new CompletableFuture<>();
                waiting.put(f);
                long t0 = System.nanoTime();
                queue.put(payload);
                f.join();
                jdk[i] = System.nanoTime() - t0;
            }
        }
        taker.interrupt();
        long mqMedian = median(mq);
        long jdkMedian = median(jdk);
        System.out.printf("pending pollAsync woken by publish: p50 %.1f us, p99 %.1f us%n", mqMedian / 1e3,
                pct(mq, 0.99) / 1e3);
        System.out.printf("LinkedBlockingQueue + CompletableFuture: p50 %.1f us, p99 %.1f us%n", jdkMedian / 1e3,
                pct(jdk, 0.99) / 1e3);
        System.out.printf("ratio (mq / JDK, p50): %.2f%n", (double) mqMedian / jdkMedian);
    }

    private static long median(long[] v) {
        return pct(v, 0.5);
    }

    private static long pct(long[] v, double p) {
        long[] s = v.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(p * (s.length - 1)))];
    }
}
