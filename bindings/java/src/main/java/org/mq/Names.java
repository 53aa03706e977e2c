package org.mq;

import java.nio.charset.StandardCharsets;

/**
 * Names (topics, groups, member ids) as the native side takes them: NUL-terminated bytes,
 * made once per name and kept in a small cache, so a hot path does not convert the same
 * String on every call. Legal names are ASCII; anything else is encoded as UTF-8 with an
 * embedded NUL written as the two bytes C0 80 (so a name is never cut short), for the
 * library to refuse.
 */
final class Names {
    private static final int SLOTS = 256;  // a power of two

    private record Entry(String name, byte[] bytes) {}

    // Benign races: entries are immutable; a lost store only costs a conversion later.
    private static final Entry[] CACHE = new Entry[SLOTS];

    private Names() {}

    static byte[] encode(String name) {
        if (name == null) {
            return null;
        }
        int slot = name.hashCode() & (SLOTS - 1);
        Entry e = CACHE[slot];
        if (e != null && (e.name == name || e.name.equals(name))) {
            return e.bytes;
        }
        byte[] bytes = convert(name);
        if (name.length() < 250) {  // cache only what could be legal
            CACHE[slot] = new Entry(name, bytes);
        }
        return bytes;
    }

    private static byte[] convert(String name) {
        int n = name.length();
        boolean plain = true;
        for (int i = 0; i < n && plain; i++) {
            char c = name.charAt(i);
            plain = c != 0 && c < 0x80;
        }
        if (plain) {
            byte[] out = new byte[n + 1];
            for (int i = 0; i < n; i++) {
                out[i] = (byte) name.charAt(i);
            }
            return out;
        }
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        int zeros = 0;
        for (byte b : utf8) {
            zeros += b == 0 ? 1 : 0;
        }
        byte[] out = new byte[utf8.length + zeros + 1];
        int o = 0;
        for (byte b : utf8) {
            if (b == 0) {
                out[o++] = (byte) 0xC0;
                out[o++] = (byte) 0x80;
            } else {
                out[o++] = b;
            }
        }
        return out;
    }
}
