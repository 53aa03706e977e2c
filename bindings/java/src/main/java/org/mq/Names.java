package org.mq;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Names (topics, groups, member ids) as the native side takes them: the address of a
 * NUL-terminated copy in native memory, so a call passes a number instead of copying a string
 * through JNI. Legal names (1 to 249 of {@code [a-zA-Z0-9._-]}) are copied once and kept for
 * the life of the process, up to {@link #MAX_INTERNED} of them; any other name gets a copy
 * made for one call and freed by it (its address is tagged with the low bit). A small cache in
 * front keeps the hot path to a field read.
 */
final class Names {
    static final int MAX_INTERNED = 65536;  // at most 16 MiB of native names, ever
    private static final int SLOTS = 256;  // a power of two

    private record Entry(String name, long handle) {}

    // Benign races: entries are immutable; a lost store only costs a map lookup later.
    private static final Entry[] CACHE = new Entry[SLOTS];
    private static final ConcurrentHashMap<String, Long> INTERNED = new ConcurrentHashMap<>();
    private static final AtomicInteger COUNT = new AtomicInteger();

    private Names() {}

    /** The native name for a call (0 for null, which the library refuses). */
    static long handle(String name) {
        if (name == null) {
            return 0;
        }
        int slot = name.hashCode() & (SLOTS - 1);
        Entry e = CACHE[slot];
        if (e != null && (e.name == name || e.name.equals(name))) {
            return e.handle;
        }
        Long interned = INTERNED.get(name);
        if (interned == null) {
            if (!legal(name) || COUNT.get() >= MAX_INTERNED) {
                return NativeBroker.copyName(encode(name)) | 1;  // freed after the call
            }
            interned = INTERNED.computeIfAbsent(name, n -> {
                COUNT.incrementAndGet();
                return NativeBroker.copyName(encode(n));
            });
        }
        CACHE[slot] = new Entry(name, interned);
        return interned;
    }

    private static boolean legal(String name) {
        int n = name.length();
        if (n < 1 || n > 249) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = name.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
                    || c == '_' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** UTF-8, with an embedded NUL written as C0 80 so the name is never cut short (and stays illegal). */
    static byte[] encode(String name) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        int zeros = 0;
        for (byte b : utf8) {
            zeros += b == 0 ? 1 : 0;
        }
        if (zeros == 0) {
            return utf8;
        }
        byte[] out = new byte[utf8.length + zeros];
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
