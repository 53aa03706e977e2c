package org.mq;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.ref.WeakReference;
import org.junit.jupiter.api.Test;

/**
 * The library's hold on a handler (a global reference from its director) is released when the
 * subscription closes, or when opening it fails: the handler then becomes collectable. (The
 * conformance testee cannot observe this release, so it answers frees=-; this is where it is
 * shown.)
 */
class HandlerReleaseTest {
    static final class Handler implements MessageHandler {
        @Override
        public void handle(Message message, HandlerContext context) {}
    }

    private static void awaitCollected(String what, WeakReference<?> ref) {
        Await.until(what, () -> {
            System.gc();
            return ref.get() == null;
        });
    }

    @Test
    void closeReleasesTheHandler() {
        try (Broker b = Broker.create()) {
            b.createTopic("t");
            Handler h = new Handler();
            WeakReference<Handler> ref = new WeakReference<>(h);
            Subscription s = b.subscribe("t", "g", h);
            h = null;
            System.gc();
            assertNotNull(ref.get(), "held while the subscription is open");
            s.close();
            s = null;
            awaitCollected("the handler to be released by close", ref);
        }
    }

    @Test
    void aFailedOpenReleasesTheHandler() {
        try (Broker b = Broker.create()) {
            b.createTopic("t");
            Subscription owner = b.subscribe("t", "g", new Handler(), SubscribeOptions.builder().partitions(0).build());
            WeakReference<Handler> ref = refusedSubscription(b);
            awaitCollected("the handler of a failed open to be released", ref);
            owner.close();
        }
    }

    private static WeakReference<Handler> refusedSubscription(Broker b) {
        Handler h = new Handler();
        assertThrows(MqOwnedException.class,
                () -> b.subscribe("t", "g", h, SubscribeOptions.builder().partitions(0).build()));
        return new WeakReference<>(h);
    }

    @Test
    void brokerCloseReleasesTheHandlersOfItsSubscriptions() {
        Broker b = Broker.create();
        b.createTopic("t");
        WeakReference<Handler> ref = subscribe(b);
        b.close();
        awaitCollected("the handler to be released by the broker's close", ref);
    }

    private static WeakReference<Handler> subscribe(Broker b) {
        Handler h = new Handler();
        b.subscribe("t", "g", h);
        return new WeakReference<>(h);
    }
}
