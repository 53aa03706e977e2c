package org.mq;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How a {@link Broker} is made ({@code mq_broker_options}). Start from {@link #builder()},
 * whose values are the library's defaults; the library checks every value when the broker is
 * created.
 */
public final class BrokerOptions {
    final long maxMessageBytes;
    final long spinNanos;
    final ManualClock clock;
    /** UTF-8 of {@code kafka_bootstrap}; null: the in-process log. */
    final byte[] kafkaBootstrap;
    /** UTF-8 of {@code kafka_config} ("name=value" lines joined by '\n'); null: no settings. */
    final byte[] kafkaConfig;

    private BrokerOptions(Builder b) {
        this.maxMessageBytes = b.maxMessageBytes;
        this.spinNanos = b.spinNanos;
        this.clock = b.clock;
        this.kafkaBootstrap = b.kafkaBootstrap == null ? null : b.kafkaBootstrap.getBytes(StandardCharsets.UTF_8);
        this.kafkaConfig = b.kafkaSettings.isEmpty() ? null : configText(b.kafkaSettings).getBytes(StandardCharsets.UTF_8);
    }

    /** The library's defaults. */
    public static BrokerOptions defaults() {
        return builder().build();
    }

    /** A builder holding the library's defaults. */
    public static Builder builder() {
        return new Builder();
    }

    private static String configText(Map<String, String> settings) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, String> e : settings.entrySet()) {
            if (sb.length() > 0) {
                sb.append('\n');
            }
            sb.append(e.getKey()).append('=').append(e.getValue());
        }
        return sb.toString();
    }

    /** Builds {@link BrokerOptions}. */
    public static final class Builder {
        private long maxMessageBytes = Defaults.MAX_MESSAGE_BYTES;
        private long spinNanos = Defaults.SPIN_NS;
        private ManualClock clock;
        private String kafkaBootstrap;
        private final Map<String, String> kafkaSettings = new LinkedHashMap<>();

        private Builder() {}

        /** The largest key, value and headers accepted, in bytes (default 1 MiB, at most 1 GiB). */
        public Builder maxMessageBytes(long bytes) {
            this.maxMessageBytes = bytes;
            return this;
        }

        /**
         * The wait strategy of polls and push loops: before a poll with nothing to hand out
         * blocks, it spins up to this long watching for a publish (default zero: block at once).
         * Spinning shortens the wake-up at the price of a busy core.
         */
        public Builder spin(Duration spin) {
            this.spinNanos = Waits.nanos(spin, "spin");
            return this;
        }

        /**
         * A manual clock for tests, instead of the system's monotonic clock. (A broker on a
         * Kafka cluster refuses one: its clock is the cluster's.)
         */
        public Builder clock(ManualClock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Since ABI 1.2 ({@code kafka_bootstrap}): the broker works on a Kafka cluster's topics,
         * consumer groups and committed offsets instead of the in-process log. {@code servers}
         * is the cluster's bootstrap list, {@code "host:port,..."}. Without this call (the
         * default) the broker is the in-process log.
         *
         * <p>The library must have been built with the Kafka backend. <b>This binding's default
         * build has none</b>: {@link Broker#create(BrokerOptions)} then throws
         * {@link MqUnsupportedException}, whose message names the switch: the Maven profile
         * {@code -Pkafka} (which needs librdkafka) builds the jar with it (see the README, "The
         * Kafka variant"); a libmq built with the core's CMake option {@code -DMQ_KAFKA=ON} can
         * be linked instead ("Against an installed libmq").
         *
         * @throws MqInvalidArgumentException if {@code servers} contains a NUL character,
         *     which the C string cannot hold
         */
        public Builder kafkaBootstrap(String servers) {
            Objects.requireNonNull(servers, "servers");
            if (servers.indexOf('\0') >= 0) {
                throw new MqInvalidArgumentException("the Kafka bootstrap servers contain a NUL character");
            }
            this.kafkaBootstrap = servers;
            return this;
        }

        /**
         * Since ABI 1.2 ({@code kafka_config}): one Kafka client setting passed to librdkafka as
         * it is, e.g. {@code kafkaSetting("security.protocol", "ssl")}. A later value for the
         * same name replaces the earlier one; the settings reach the library in the order their
         * names were first set. Ignored without {@link #kafkaBootstrap}; librdkafka checks names
         * and values when the broker is created ({@link MqInvalidArgumentException} naming the
         * setting).
         *
         * <p>The library receives the settings as {@code "name=value"} lines joined by
         * {@code '\n'}, so a name that is empty or contains {@code '='}, {@code '\n'} or NUL,
         * and a value that contains {@code '\n'} or NUL, cannot be expressed: this method
         * refuses them. (A value may contain {@code '='}.)
         *
         * @throws MqInvalidArgumentException for a name or value that the library's text cannot express
         */
        public Builder kafkaSetting(String name, String value) {
            check(name, value);
            kafkaSettings.put(name, value);
            return this;
        }

        /**
         * {@link #kafkaSetting(String, String)} for every entry of {@code settings}, in its
         * iteration order. Nothing is added when one of them is refused.
         *
         * @throws MqInvalidArgumentException for a name or value that the library's text cannot express
         */
        public Builder kafkaSettings(Map<String, String> settings) {
            Objects.requireNonNull(settings, "settings");
            Map<String, String> copy = new LinkedHashMap<>(settings);
            copy.forEach(Builder::check);
            kafkaSettings.putAll(copy);
            return this;
        }

        private static void check(String name, String value) {
            Objects.requireNonNull(name, "Kafka setting name");
            Objects.requireNonNull(value, "Kafka setting value (for " + name + ")");
            String why = null;
            if (name.isEmpty()) {
                why = "is empty";
            } else if (name.indexOf('=') >= 0) {
                why = "contains '='";
            } else if (name.indexOf('\n') >= 0) {
                why = "contains a newline";
            } else if (name.indexOf('\0') >= 0) {
                why = "contains a NUL character";
            }
            if (why != null) {
                throw new MqInvalidArgumentException("Kafka setting name '" + printable(name) + "' " + why
                        + "; the library's kafka_config text (name=value lines) cannot express it");
            }
            if (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
                throw new MqInvalidArgumentException("the value of Kafka setting " + name + " contains a "
                        + (value.indexOf('\n') >= 0 ? "newline" : "NUL character")
                        + "; the library's kafka_config text (name=value lines) cannot express it");
            }
        }

        private static String printable(String s) {
            return s.replace("\n", "\\n").replace("\0", "\\0");
        }

        /** The options. */
        public BrokerOptions build() {
            return new BrokerOptions(this);
        }
    }
}
