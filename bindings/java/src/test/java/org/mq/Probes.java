package org.mq;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/** What the core in this build can do, for tests of behaviour still landing in it. */
final class Probes {
    private Probes() {}

    /** Whether the core stores message headers (main landed header storage after ABI 1.0). */
    static boolean coreStoresHeaders() {
        try (Broker b = Broker.create()) {
            b.createTopic("probe");
            b.subscribeGroup("probe", "g");
            b.publish("probe", null, new byte[0],
                    List.of(Header.of("h", "v".getBytes(StandardCharsets.UTF_8))), Duration.ZERO);
            return !b.poll("probe", "g", 0, 1, Duration.ZERO).get(0).headers().isEmpty();
        }
    }
}
