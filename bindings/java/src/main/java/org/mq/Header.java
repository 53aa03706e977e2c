package org.mq;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * A message header: a name and a value, both byte strings (either may be empty). A message
 * carries an ordered list of them, duplicates allowed, as Kafka's records do. Instances are
 * immutable: the arrays are copied in and out.
 */
public final class Header {
    private final byte[] name;
    private final byte[] value;

    private Header(byte[] name, byte[] value) {
        this.name = name;
        this.value = value;
    }

    /** A header with the UTF-8 bytes of {@code name} and the given value (copied). */
    public static Header of(String name, byte[] value) {
        return new Header(name.getBytes(StandardCharsets.UTF_8), value.clone());
    }

    /** A header with the UTF-8 bytes of both strings. */
    public static Header of(String name, String value) {
        return new Header(name.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }

    /** A header of raw bytes (both copied). */
    public static Header ofBytes(byte[] name, byte[] value) {
        return new Header(name.clone(), value.clone());
    }

    static Header wrap(byte[] name, byte[] value) {
        return new Header(name, value);
    }

    /** The name decoded as UTF-8. */
    public String name() {
        return new String(name, StandardCharsets.UTF_8);
    }

    /** A copy of the name's bytes. */
    public byte[] nameBytes() {
        return name.clone();
    }

    /** A copy of the value. */
    public byte[] value() {
        return value.clone();
    }

    /** The value decoded as UTF-8. */
    public String valueAsString() {
        return new String(value, StandardCharsets.UTF_8);
    }

    byte[] rawName() {
        return name;
    }

    byte[] rawValue() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Header && Arrays.equals(name, ((Header) o).name)
                && Arrays.equals(value, ((Header) o).value);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(name), Arrays.hashCode(value));
    }

    @Override
    public String toString() {
        return name() + "=" + valueAsString();
    }
}
