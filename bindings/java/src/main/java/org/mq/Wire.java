package org.mq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;
import java.util.Objects;

/**
 * The encodings shared with the native facade (native/facade/wire.h describes them): messages
 * coming out, headers and batch records going in. Native byte order throughout.
 */
final class Wire {
    private static final byte[] EMPTY = new byte[0];
    private static final int FIXED = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 4;

    private Wire() {}

    /** Decodes a poll's or a handler call's messages from buf[0, length). */
    static List<Message> decode(ByteBuffer buf, int length, String topic) {
        int count = buf.getInt(0);
        if (count == 1) {
            return List.of(decodeOne(buf, 4, topic, null));
        }
        Message[] out = new Message[count];
        int[] pos = {4};
        for (int i = 0; i < count; i++) {
            out[i] = decodeOne(buf, pos[0], topic, pos);
        }
        return new Messages(out);
    }

    /** Decodes the message at pos; stores the position after it in next[0] when given. */
    static Message decodeOne(ByteBuffer b, int pos, String topic, int[] next) {
        int partition = b.getInt(pos);
        int deliveryCount = b.getInt(pos + 4);
        long offset = b.getLong(pos + 8);
        long timestamp = b.getLong(pos + 16);
        long lost = b.getLong(pos + 24);
        int keyLen = b.getInt(pos + 32);
        int valueLen = b.getInt(pos + 36);
        int headerCount = b.getInt(pos + 40);
        boolean hasDeadLetter = b.getInt(pos + 44) != 0;
        int p = pos + FIXED;
        byte[] key = null;
        if (keyLen >= 0) {
            key = bytes(b, p, keyLen);
            p += keyLen;
        }
        byte[] value = bytes(b, p, valueLen);
        p += valueLen;
        List<Header> headers = List.of();
        if (headerCount > 0) {
            Header[] hs = new Header[headerCount];
            for (int h = 0; h < headerCount; h++) {
                int n = b.getInt(p);
                byte[] name = bytes(b, p + 4, n);
                p += 4 + n;
                int v = b.getInt(p);
                byte[] val = bytes(b, p + 4, v);
                p += 4 + v;
                hs[h] = Header.wrap(name, val);
            }
            headers = List.of(hs);
        }
        DeadLetter dl = null;
        if (hasDeadLetter) {
            int n = b.getInt(p);
            String dlTopic = new String(bytes(b, p + 4, n), StandardCharsets.UTF_8);
            p += 4 + n;
            n = b.getInt(p);
            String dlGroup = new String(bytes(b, p + 4, n), StandardCharsets.UTF_8);
            p += 4 + n;
            dl = new DeadLetter(dlTopic, dlGroup, b.getInt(p), b.getLong(p + 8), b.getInt(p + 4));
            p += 16;
        }
        if (next != null) {
            next[0] = p;
        }
        return new Message(topic, partition, offset, deliveryCount, timestamp, lost, key, value,
                headers, dl);
    }

    /** An immutable list over the decoded array (one object, no copy). */
    private static final class Messages extends AbstractList<Message> implements RandomAccess {
        private final Message[] items;

        Messages(Message[] items) {
            this.items = items;
        }

        @Override
        public Message get(int i) {
            return items[i];
        }

        @Override
        public int size() {
            return items.length;
        }
    }

    private static byte[] bytes(ByteBuffer b, int pos, int n) {
        if (n == 0) {
            return EMPTY;
        }
        byte[] out = new byte[n];
        b.get(pos, out);
        return out;
    }

    /**
     * One publish's key, value and headers, in that order, into the thread's direct buffer
     * (read in place by the native side). Returns the buffer; its position is the end.
     */
    static ByteBuffer encodePublish(byte[] key, byte[] value, List<Header> headers, PerThread pt) {
        long size = (long) length(key) + length(value);
        if (!headers.isEmpty()) {
            size += 4;
            for (Header h : headers) {
                Objects.requireNonNull(h, "headers must not contain null");
                size += 8 + h.rawName().length + h.rawValue().length;
            }
        }
        if (size > Integer.MAX_VALUE - 16) {
            throw new MqTooLargeException("the message adds up to " + size + " bytes, more than one buffer holds");
        }
        ByteBuffer b = pt.outBuffer((int) size);
        if (key != null) {
            b.put(key);
        }
        if (value != null) {
            b.put(value);
        }
        if (!headers.isEmpty()) {
            b.putInt(headers.size());
            putHeaders(b, headers);
        }
        return b;
    }

    /**
     * Encodes the records of a batch into the thread's direct buffer (the native side reads
     * them in place: no copy through JNI). Returns the buffer, its position at the end.
     */
    static ByteBuffer encodeBatch(List<PublishRecord> records, PerThread pt) {
        long size = 4;
        for (PublishRecord r : records) {
            Objects.requireNonNull(r, "records must not contain null");
            size += 12 + length(r.key()) + length(r.value());
            for (Header h : r.headers()) {
                size += 8 + h.rawName().length + h.rawValue().length;
            }
        }
        if (size > Integer.MAX_VALUE - 16) {
            throw new MqTooLargeException("the batch's records add up to " + size
                    + " bytes, more than one buffer holds; publish it in smaller batches");
        }
        ByteBuffer b = pt.outBuffer((int) size);
        b.putInt(records.size());
        for (PublishRecord r : records) {
            b.putInt(r.key() == null ? -1 : r.key().length);
            b.putInt(length(r.value()));
            b.putInt(r.headers().size());
            if (r.key() != null) {
                b.put(r.key());
            }
            if (r.value() != null) {
                b.put(r.value());
            }
            putHeaders(b, r.headers());
        }
        return b;
    }

    private static void putHeaders(ByteBuffer b, List<Header> headers) {
        for (Header h : headers) {
            b.putInt(h.rawName().length).put(h.rawName());
            b.putInt(h.rawValue().length).put(h.rawValue());
        }
    }

    private static int length(byte[] a) {
        return a == null ? 0 : a.length;
    }
}
