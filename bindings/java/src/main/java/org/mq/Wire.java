package org.mq;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * The C structs Java reads and writes in direct buffers, by offset, native byte order (the
 * native facade checks these sizes and offsets at build time): messages coming out in the
 * copying poll's layout 1 (mq.h), and {@code mq_record}s and {@code mq_header}s going in,
 * pointing into the same buffer, which the library reads in place.
 */
final class Wire {
    private static final byte[] EMPTY = new byte[0];
    /** MQ_COPY_LAYOUT_1's sizes: mq_copy_header, mq_copied_message, mq_copied_header. */
    static final int COPY_HEADER = 16;
    static final int COPIED_MESSAGE = 88;
    private static final int COPIED_HEADER = 32;
    private static final long ABSENT = -1L;  // MQ_COPY_ABSENT
    /** sizeof(mq_record) (ABI 1.5: delay_ms last, at DELAY) and sizeof(mq_header) on LP64. */
    private static final int RECORD = 56;
    private static final int DELAY = 48;
    private static final int HEADER = 32;

    private Wire() {}

    /** The messages a copying poll wrote in b (layout 1); count is what it returned. */
    static List<Message> read(ByteBuffer b, int count, String topic) {
        if (count == 1) {
            return List.of(readOne(b, 0, topic));
        }
        Message[] out = new Message[count];
        for (int i = 0; i < count; i++) {
            out[i] = readOne(b, i, topic);
        }
        return new Messages(out);
    }

    /** The bytes of b a copying poll of count messages used (header, entries, byte region). */
    static long used(ByteBuffer b, int count, int cap) {
        return COPY_HEADER + (long) COPIED_MESSAGE * count + (cap - b.getLong(8));
    }

    /** Entry i of the layout-1 copy in b. */
    static Message readOne(ByteBuffer b, int i, String topic) {
        int e = COPY_HEADER + i * COPIED_MESSAGE;
        long offset = b.getLong(e);
        int partition = b.getInt(e + 8);
        int deliveryCount = b.getInt(e + 12);
        long timestamp = b.getLong(e + 16);
        long lost = b.getLong(e + 24);
        long keyAt = b.getLong(e + 32);
        byte[] key = keyAt == ABSENT ? null : bytes(b, keyAt, b.getLong(e + 40));
        byte[] value = bytes(b, b.getLong(e + 48), b.getLong(e + 56));
        List<Header> headers = List.of();
        int headerCount = (int) b.getLong(e + 72);
        if (headerCount > 0) {
            int at = (int) b.getLong(e + 64);
            Header[] hs = new Header[headerCount];
            for (int h = 0; h < headerCount; h++, at += COPIED_HEADER) {
                hs[h] = Header.wrap(bytes(b, b.getLong(at), b.getLong(at + 8)),
                        bytes(b, b.getLong(at + 16), b.getLong(at + 24)));
            }
            headers = List.of(hs);
        }
        DeadLetter dl = null;
        long dlAt = b.getLong(e + 80);
        if (dlAt != ABSENT) {
            int d = (int) dlAt;
            String dlTopic = new String(bytes(b, b.getLong(d), b.getLong(d + 8)), StandardCharsets.UTF_8);
            String dlGroup = new String(bytes(b, b.getLong(d + 16), b.getLong(d + 24)), StandardCharsets.UTF_8);
            dl = new DeadLetter(dlTopic, dlGroup, b.getInt(d + 40), b.getLong(d + 32), b.getInt(d + 44));
        }
        return new Message(topic, partition, offset, deliveryCount, timestamp, lost, key, value,
                headers, dl);
    }

    /** An immutable list over the read array (one object, no copy). */
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

    /** Two polls' messages as one list (a poll continued in a grown buffer). */
    static List<Message> concat(List<Message> a, List<Message> b) {
        Message[] out = Arrays.copyOf(a.toArray(new Message[0]), a.size() + b.size());
        for (int i = 0; i < b.size(); i++) {
            out[a.size() + i] = b.get(i);
        }
        return new Messages(out);
    }

    private static byte[] bytes(ByteBuffer b, long at, long n) {
        if (n == 0) {
            return EMPTY;
        }
        byte[] out = new byte[(int) n];
        b.get((int) at, out);
        return out;
    }

    /**
     * One publish as an mq_record at the start of the thread's direct buffer, its header array
     * and bytes after it. Returns the buffer.
     */
    static ByteBuffer encodePublish(byte[] key, byte[] value, List<Header> headers, PerThread pt) {
        long size = RECORD + (long) length(key) + length(value);
        for (Header h : headers) {
            Objects.requireNonNull(h, "headers must not contain null");
            size += HEADER + h.rawName().length + h.rawValue().length;
        }
        ByteBuffer b = pt.outBuffer(checked(size, "the message adds up to "));
        putRecord(b, pt.outAddress, 0, RECORD, RECORD + HEADER * headers.size(), key, value, headers);
        b.putLong(DELAY, 0);
        return b;
    }

    /**
     * A batch as an array of mq_records at the start of the thread's direct buffer, then their
     * header arrays, then the bytes (the library reads them in place: no copy through JNI).
     */
    static void encodeBatch(List<PublishRecord> records, PerThread pt) {
        long size = (long) RECORD * records.size();
        int headerCount = 0;
        for (PublishRecord r : records) {
            Objects.requireNonNull(r, "records must not contain null");
            size += length(r.key()) + length(r.value());
            for (Header h : r.headers()) {
                size += HEADER + h.rawName().length + h.rawValue().length;
                headerCount++;
            }
        }
        ByteBuffer b = pt.outBuffer(checked(size, "the batch's records add up to "));
        int headerAt = RECORD * records.size();
        int bytesAt = headerAt + HEADER * headerCount;
        int rec = 0;
        for (PublishRecord r : records) {
            bytesAt = putRecord(b, pt.outAddress, rec, headerAt, bytesAt, r.key(), r.value(), r.headers());
            b.putLong(rec + DELAY, Waits.millis(r.delay(), "delay"));
            headerAt += HEADER * r.headers().size();
            rec += RECORD;
        }
    }

    private static int checked(long size, String what) {
        if (size > Integer.MAX_VALUE - 16) {
            throw new MqTooLargeException(what + size
                    + " bytes, more than one buffer holds; publish less at a time");
        }
        return (int) size;
    }

    /** The mq_record at rec, its headers at headerAt, its bytes from bytesAt; returns their end. */
    private static int putRecord(ByteBuffer b, long base, int rec, int headerAt, int bytesAt,
            byte[] key, byte[] value, List<Header> headers) {
        if (key == null) {
            b.putLong(rec, 0).putLong(rec + 8, 0);  // no key: NULL
        } else {
            bytesAt = putBytes(b, base, rec, bytesAt, key);
        }
        bytesAt = putBytes(b, base, rec + 16, bytesAt, value == null ? EMPTY : value);
        if (headers.isEmpty()) {
            b.putLong(rec + 32, 0).putLong(rec + 40, 0);
            return bytesAt;
        }
        b.putLong(rec + 32, base + headerAt).putLong(rec + 40, headers.size());
        for (Header h : headers) {
            bytesAt = putBytes(b, base, headerAt, bytesAt, h.rawName());
            bytesAt = putBytes(b, base, headerAt + 16, bytesAt, h.rawValue());
            headerAt += HEADER;
        }
        return bytesAt;
    }

    /** Copies a to at and writes its (pointer, length) into the struct fields at field. */
    private static int putBytes(ByteBuffer b, long base, int field, int at, byte[] a) {
        b.putLong(field, base + at).putLong(field + 8, a.length);
        b.put(at, a);
        return at + a.length;
    }

    private static int length(byte[] a) {
        return a == null ? 0 : a.length;
    }
}
