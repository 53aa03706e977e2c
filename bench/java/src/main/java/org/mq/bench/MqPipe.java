package org.mq.bench;

import static org.mq.bench.Messages.BATCH;
import static org.mq.bench.Messages.N;
import static org.mq.bench.Messages.SIZE;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.mq.Broker;
import org.mq.Cursor;
import org.mq.Message;
import org.mq.Publisher;
import org.mq.PublishRecord;
import org.mq.TopicConfig;

/**
 * One topic (one partition, capacity 1024) with a producer thread, as the C suite's
 * bench_mq_pull sets it up; consumers poll and ack through the public API: by name, or on a
 * Publisher and Cursors (ABI 1.7) when {@code handles} is set.
 */
abstract class MqPipe {
    Broker broker;
    ExecutorService producer;
    boolean handles;  // set before open
    private Publisher publisher;
    private final Cursor[] cursors = new Cursor[4];
    private long nextSeq;  // the producer's; read by nobody else
    private final long[] expected = new long[4];
    private final byte[] single = new byte[SIZE];
    private final List<PublishRecord> batch = new ArrayList<>();

    void open(String... groups) {
        broker = Broker.create();
        broker.createTopic("t", TopicConfig.builder().capacity(Messages.CAPACITY).build());
        for (String g : groups) {
            broker.subscribeGroup("t", g);
        }
        if (handles) {
            publisher = broker.publisher("t");
            for (int g = 0; g < groups.length; g++) {
                cursors[g] = broker.cursor("t", groups[g], 0);
            }
        }
        producer = Messages.thread("producer");
        for (int i = 0; i < BATCH; i++) {
            batch.add(PublishRecord.of(null, new byte[SIZE]));
        }
    }

    void close() {
        producer.shutdownNow();
        if (publisher != null) {
            publisher.close();
        }
        for (Cursor c : cursors) {
            if (c != null) {
                c.close();
            }
        }
        broker.close();
    }

    Future<?> produceSingles() {
        return producer.submit(() -> {
            for (int i = 0; i < N; i++) {
                Messages.stamp(single, nextSeq++);
                if (publisher != null) {
                    publisher.publish(null, single, Broker.FOREVER);
                } else {
                    broker.publish("t", null, single, Broker.FOREVER);
                }
            }
        });
    }

    Future<?> produceBatches() {
        return producer.submit(() -> {
            for (int i = 0; i < N; i += BATCH) {
                for (PublishRecord r : batch) {
                    Messages.stamp(r.value(), nextSeq++);
                }
                if (publisher != null) {
                    publisher.publishBatch(batch, Broker.FOREVER);
                } else {
                    broker.publishBatch("t", batch, Broker.FOREVER);
                }
            }
        });
    }

    /** Polls N messages for group number g, at most max at a time, one cumulative ack per poll. */
    void consume(int g, int max) {
        String group = "g" + g;
        Cursor c = cursors[g];
        for (int got = 0; got < N; ) {
            List<Message> ms = c != null ? c.poll(max, Broker.FOREVER)
                    : broker.poll("t", group, 0, max, Broker.FOREVER);
            for (Message m : ms) {
                Messages.check(m.value(), expected[g]++);
            }
            long last = ms.get(ms.size() - 1).offset();
            if (c != null) {
                c.ack(last);
            } else {
                broker.ack("t", group, 0, last);
            }
            got += ms.size();
        }
    }

    /**
     * As consume, with each batch's ack travelling with the next poll (Broker.ackPoll, ABI
     * 1.1): one native call and one lock round trip per batch instead of two.
     */
    void consumeAckPoll(int g, int max) {
        String group = "g" + g;
        List<Message> ms = broker.poll("t", group, 0, max, Broker.FOREVER);
        for (int got = 0; ; ) {
            for (Message m : ms) {
                Messages.check(m.value(), expected[g]++);
            }
            got += ms.size();
            long last = ms.get(ms.size() - 1).offset();
            if (got >= N) {
                broker.ack("t", group, 0, last);
                return;
            }
            ms = broker.ackPoll("t", group, 0, last, max, Broker.FOREVER);
        }
    }
}
