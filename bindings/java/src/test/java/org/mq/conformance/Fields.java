package org.mq.conformance;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One line of the testee protocol (tests/conformance/FORMAT.md, "The testee protocol"): a verb
 * or status, then {@code name=value} fields whose byte strings are percent-encoded.
 */
final class Fields {
    final String verb;
    final String text;
    final List<String[]> fields = new ArrayList<>();  // {name, raw value}, in order

    Fields(String line) {
        this.text = line;
        String[] tokens = line.split(" ", -1);
        verb = tokens[0];
        for (int i = 1; i < tokens.length; i++) {
            int eq = tokens[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not a field: " + tokens[i]);
            }
            fields.add(new String[] {tokens[i].substring(0, eq), tokens[i].substring(eq + 1)});
        }
    }

    String raw(String name) {
        for (String[] f : fields) {
            if (f[0].equals(name)) {
                return f[1];
            }
        }
        return null;
    }

    boolean has(String name) {
        return raw(name) != null;
    }

    long integer(String name, long dflt) {
        String v = raw(name);
        return v == null ? dflt : Long.parseLong(v);
    }

    byte[] bytes(String name) {
        String v = raw(name);
        return v == null ? null : decode(v);
    }

    /** A byte-string field as a Java String (names are ASCII when legal). */
    String string(String name) {
        byte[] b = bytes(name);
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** Every value of a repeated field, decoded. */
    List<byte[]> all(String name) {
        List<byte[]> out = new ArrayList<>();
        for (String[] f : fields) {
            if (f[0].equals(name)) {
                out.add(decode(f[1]));
            }
        }
        return out;
    }

    static byte[] decode(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length()) {
                out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toByteArray();
    }

    static String encode(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length);
        for (byte x : b) {
            int c = x & 0xff;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.'
                    || c == '_' || c == '-') {
                sb.append((char) c);
            } else {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
            }
        }
        return sb.toString();
    }

    static String encode(String s) {
        return encode(s.getBytes(StandardCharsets.UTF_8));
    }
}
