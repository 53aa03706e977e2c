package org.mq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ABI 1.2: the Kafka backend's broker options and its two statuses. The binding's own build of
 * the library has no Kafka backend, so what can be tested here is how the options reach the
 * library (its refusal proves the bootstrap arrived), what the binding refuses itself, and the
 * statuses' exceptions.
 */
class KafkaOptionsTest {
    private static String text(byte[] utf8) {
        return utf8 == null ? null : new String(utf8, StandardCharsets.UTF_8);
    }

    /** {@code -Dmq.use.installed=ON}: the CMake boolean Maven passed to the native build. */
    private static boolean linksAnInstalledLibrary() {
        String v = System.getProperty("mq.use.installed", "OFF").trim().toUpperCase(Locale.ROOT);
        return !List.of("", "OFF", "0", "FALSE", "NO", "N", "IGNORE").contains(v);
    }

    @Test
    void aKafkaBootstrapOnTheBindingsOwnLibraryIsUnsupportedAndSaysHowToRebuild() {
        MqUnsupportedException e = assertThrows(MqUnsupportedException.class,
                () -> Broker.create(BrokerOptions.builder().kafkaBootstrap("127.0.0.1:9092").build()).close());
        assertEquals(Status.UNSUPPORTED, e.status());
        // The binding's native build names its own switch (MQ_KAFKA_HINT): a Maven user has the
        // profile, not the core's CMake option. A libmq linked from the system says its own.
        if (linksAnInstalledLibrary()) {
            assertTrue(e.getMessage().contains("MQ_KAFKA"), e.getMessage());
        } else {
            assertEquals("this mq library was built without the Kafka backend; rebuild it with"
                    + " the Maven profile -Pkafka (needs librdkafka) to use kafka_bootstrap",
                    e.getMessage());
        }
        assertTrue(e.toString().contains("MQ_ERR_UNSUPPORTED"), e.toString());

        // With settings too (the library without the backend never reads them).
        assertThrows(MqUnsupportedException.class, () -> Broker.create(BrokerOptions.builder()
                .kafkaBootstrap("127.0.0.1:9092").kafkaSetting("client.id", "billing").build()).close());
    }

    @Test
    void settingsWithoutABootstrapAreIgnoredAsInC() {
        try (Broker b = Broker.create(BrokerOptions.builder().kafkaSetting("client.id", "billing").build())) {
            b.createTopic("t");
            assertEquals(List.of("t"), b.topics());
        }
    }

    @Test
    void settingsAreJoinedIntoTheLibrarysText() {
        BrokerOptions none = BrokerOptions.defaults();
        assertNull(none.kafkaBootstrap, "default: the in-process log (NULL)");
        assertNull(none.kafkaConfig, "default: no settings (NULL)");

        Map<String, String> more = new LinkedHashMap<>();
        more.put("sasl.password", "a=b");  // '=' is fine in a value
        more.put("client.id", "billing-é");
        BrokerOptions o = BrokerOptions.builder()
                .kafkaBootstrap("k1:9092,k2:9092")
                .kafkaSetting("client.id", "first")
                .kafkaSetting("security.protocol", "ssl")
                .kafkaSettings(more)
                .build();
        assertEquals("k1:9092,k2:9092", text(o.kafkaBootstrap));
        // A later value replaces the earlier one in the first one's place; UTF-8 bytes.
        assertArrayEquals("client.id=billing-é\nsecurity.protocol=ssl\nsasl.password=a=b"
                .getBytes(StandardCharsets.UTF_8), o.kafkaConfig);
    }

    @Test
    void settingsTheTextCannotExpressAreRefusedByTheBinding() {
        BrokerOptions.Builder b = BrokerOptions.builder().kafkaSetting("client.id", "ok");
        for (String name : new String[] {"", "a=b", "=", "a\nb", "a\0b"}) {
            MqInvalidArgumentException e = assertThrows(MqInvalidArgumentException.class,
                    () -> b.kafkaSetting(name, "v"), name);
            assertTrue(e.getMessage().contains("kafka_config"), e.getMessage());
        }
        for (String value : new String[] {"x\ny", "\n", "x\0"}) {
            MqInvalidArgumentException e = assertThrows(MqInvalidArgumentException.class,
                    () -> b.kafkaSetting("client.id", value));
            assertTrue(e.getMessage().contains("client.id"), e.getMessage());
        }
        Map<String, String> mixed = new LinkedHashMap<>();
        mixed.put("acks", "all");
        mixed.put("bad=name", "v");
        assertThrows(MqInvalidArgumentException.class, () -> b.kafkaSettings(mixed));
        assertThrows(MqInvalidArgumentException.class, () -> b.kafkaBootstrap("k1:9092\0k2:9092"));
        assertThrows(NullPointerException.class, () -> b.kafkaSetting(null, "v"));
        assertThrows(NullPointerException.class, () -> b.kafkaSetting("client.id", null));
        assertThrows(NullPointerException.class, () -> b.kafkaSettings(null));
        assertThrows(NullPointerException.class, () -> b.kafkaBootstrap(null));

        BrokerOptions o = b.build();
        assertEquals("client.id=ok", text(o.kafkaConfig), "a refused setting (or map of them) adds nothing");
        assertNull(o.kafkaBootstrap);
    }

    @Test
    void theNativeSideRefusesANulItselfToo() {
        // For a caller other than the builder: a NUL would cut the C string short.
        byte[] cut = "k1:9092\0k2:9092".getBytes(StandardCharsets.UTF_8);
        assertThrows(MqInvalidArgumentException.class,
                () -> new NativeBroker(Defaults.MAX_MESSAGE_BYTES, 0, null, cut, null).delete());
        assertThrows(MqInvalidArgumentException.class,
                () -> new NativeBroker(Defaults.MAX_MESSAGE_BYTES, 0, null, null, cut).delete());
    }

    @Test
    void theNewStatusesHaveTheirOwnExceptions() {
        MqException u = MqException.create(23, "no backend");
        assertSame(MqUnsupportedException.class, u.getClass());
        assertSame(Status.UNSUPPORTED, u.status());
        assertEquals("no backend", u.getMessage());
        MqException k = MqException.create(24, "cluster down");
        assertSame(MqBackendException.class, k.getClass());
        assertSame(Status.BACKEND, k.status());
        assertEquals("cluster down", k.getMessage());
        // A status from a newer library is still an MqException.
        MqException f = MqException.create(25, "new");
        assertSame(MqException.class, f.getClass());
        assertSame(Status.UNKNOWN, f.status());
    }

    @Test
    void everyStatusNameIsTheLibrarys() {
        for (int code = -2; code <= 64; code++) {
            assertEquals(NativeBroker.statusName(code), Status.of(code).constantName(), "status " + code);
        }
        for (Status s : Status.values()) {
            if (s != Status.UNKNOWN) {
                assertSame(s, Status.of(s.code()));
            }
        }
    }

    @Test
    void theLibraryIsAbi12() {
        int v = Broker.versionNumber();
        assertTrue(v >= 1_002_000 && v < 2_000_000, "version " + v);
        assertEquals(v / 1_000_000 + "." + v / 1000 % 1000 + "." + v % 1000, Broker.version());
    }
}
