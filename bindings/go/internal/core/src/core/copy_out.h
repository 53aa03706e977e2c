// The copying poll's writer (mq.h, "copying poll"): messages copied into a caller's buffer in
// layout 1, while the engine still holds the lock that keeps their bytes alive, so a binding
// never reads a view another thread can end.
//
// Entries grow from the front, right after the mq_copy_header; the bytes they point to grow
// from the back (a slotted page, as SQLite's b-tree pages are), so one pass places each message
// without knowing how many will follow. Every position is a byte offset from the buffer's
// start: the buffer can be moved or copied whole (a managed runtime's byte array) and stays
// readable. Structs in the byte region (header arrays, dead letters) are 8-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mq.h"

namespace mq {

class CopyOut {
public:
    // buf is 8-byte aligned and cap >= sizeof(mq_copy_header) (the boundary checks both).
    CopyOut(void *buf, size_t cap) noexcept
        : base_(static_cast<unsigned char *>(buf)),
          cap_(cap),
          front_(sizeof(mq_copy_header)),
          back_(cap & ~size_t{7}) {}

    // The room one message needs alone, in a buffer of its own (header included): what a
    // poll reports when even the first message does not fit.
    static size_t alone(const mq_message &m) noexcept {
        return sizeof(mq_copy_header) + sizeof(mq_copied_message) + extent(m) + 8;
    }

    // Copies m as the next entry, or returns false (and writes nothing) if it does not fit.
    bool put(const mq_message &m) noexcept {
        if (m.header_count || m.dead_letter) [[unlikely]]
            return put_with_extras(m);
        // The common case: key and payload only. The key lands right before the payload, so a
        // key and payload adjacent at the source (the in-memory log stores them so) take one
        // copy; the entry is written in place.
        const size_t key_len = m.key ? m.key_len : 0;
        const size_t n = key_len + m.payload_len;
        if (back_ < front_ || back_ - front_ < sizeof(mq_copied_message) + n) return false;
        back_ -= n;
        const auto *key = static_cast<const unsigned char *>(m.key);
        if (key_len && key + key_len == m.payload) {
            std::memcpy(base_ + back_, key, n);
        } else {
            if (key_len) std::memcpy(base_ + back_, key, key_len);
            if (m.payload_len) std::memcpy(base_ + back_ + key_len, m.payload, m.payload_len);
        }
        auto *e = reinterpret_cast<mq_copied_message *>(base_ + front_);
        e->offset = m.offset;
        e->partition = m.partition;
        e->delivery_count = m.delivery_count;
        e->timestamp_ns = m.timestamp_ns;
        e->lost = m.lost;
        e->key_at = m.key ? back_ : MQ_COPY_ABSENT;
        e->key_len = key_len;
        e->payload_at = back_ + key_len;
        e->payload_len = m.payload_len;
        e->headers_at = MQ_COPY_ABSENT;
        e->header_count = 0;
        e->dead_letter_at = MQ_COPY_ABSENT;
        front_ += sizeof(mq_copied_message);
        count_++;
        return true;
    }

    // Entry i's delivery count and partition, set after the engine counted the delivery.
    void set_delivery(size_t i, int32_t partition, uint32_t count) noexcept {
        mq_copied_message *e = entry(i);
        e->partition = partition;
        e->delivery_count = count;
    }
    void set_lost(size_t i, int64_t lost) noexcept { entry(i)->lost = lost; }
    void add_lost(size_t i, int64_t lost) noexcept { entry(i)->lost += lost; }

    size_t count() const noexcept { return count_; }
    // Bytes a caller must keep: the header and entries, and the byte region from back_ on.
    size_t used() const noexcept { return front_ + (cap_ - back_); }

    // Writes the header; called once, when the poll is over (whatever it returns).
    void finish() noexcept {
        mq_copy_header h;
        h.layout = MQ_COPY_LAYOUT_1;
        h.count = static_cast<uint32_t>(count_);
        h.bytes_at = back_;
        std::memcpy(base_, &h, sizeof h);
    }

    // Set when the first message did not fit: the room it needs alone (alone()).
    size_t too_large_need = 0;

private:
    // put() for a message with headers or a dead-letter origin.
    bool put_with_extras(const mq_message &m) noexcept {
        const size_t need = sizeof(mq_copied_message) + extent(m);
        if (back_ < front_ || back_ - front_ < need) return false;
        mq_copied_message e;
        e.offset = m.offset;
        e.partition = m.partition;
        e.delivery_count = m.delivery_count;
        e.timestamp_ns = m.timestamp_ns;
        e.lost = m.lost;
        e.key_len = m.key ? m.key_len : 0;
        e.key_at = m.key ? bytes(m.key, m.key_len) : MQ_COPY_ABSENT;
        e.payload_len = m.payload_len;
        e.payload_at = bytes(m.payload, m.payload_len);
        e.header_count = m.header_count;
        e.headers_at = MQ_COPY_ABSENT;
        if (m.header_count) {
            const size_t at = aligned(m.header_count * sizeof(mq_copied_header));
            e.headers_at = at;
            for (size_t i = 0; i < m.header_count; i++) {
                const mq_header &h = m.headers[i];
                mq_copied_header c;
                c.name_len = h.name_len;
                c.name_at = bytes(h.name, h.name_len);
                c.value_len = h.value_len;
                c.value_at = bytes(h.value, h.value_len);
                std::memcpy(base_ + at + i * sizeof c, &c, sizeof c);
            }
        }
        e.dead_letter_at = MQ_COPY_ABSENT;
        if (const mq_dead_letter *d = m.dead_letter) {
            mq_copied_dead_letter c;
            c.topic_len = std::strlen(d->topic);
            c.topic_at = bytes(d->topic, c.topic_len);
            c.group_len = std::strlen(d->group);
            c.group_at = bytes(d->group, c.group_len);
            c.offset = d->offset;
            c.partition = d->partition;
            c.delivery_count = d->delivery_count;
            e.dead_letter_at = aligned(sizeof c);
            std::memcpy(base_ + e.dead_letter_at, &c, sizeof c);
        }
        std::memcpy(base_ + front_, &e, sizeof e);
        front_ += sizeof e;
        count_++;
        return true;
    }

    // The bytes m needs in the byte region, padding for its aligned structs included.
    static size_t extent(const mq_message &m) noexcept {
        size_t n = (m.key ? m.key_len : 0) + m.payload_len;
        if (m.header_count) {
            n += m.header_count * sizeof(mq_copied_header) + 7;
            for (size_t i = 0; i < m.header_count; i++)
                n += m.headers[i].name_len + m.headers[i].value_len;
        }
        if (m.dead_letter) {
            n += sizeof(mq_copied_dead_letter) + 7 + std::strlen(m.dead_letter->topic) +
                 std::strlen(m.dead_letter->group);
        }
        return n;
    }
    uint64_t bytes(const void *p, size_t n) noexcept {
        back_ -= n;
        if (n) std::memcpy(base_ + back_, p, n);
        return back_;
    }
    uint64_t aligned(size_t n) noexcept {
        back_ = (back_ - n) & ~size_t{7};
        return back_;
    }
    mq_copied_message *entry(size_t i) noexcept {
        return reinterpret_cast<mq_copied_message *>(base_ + sizeof(mq_copy_header)) + i;
    }

    unsigned char *base_;
    size_t cap_;
    size_t front_;  // end of the entries
    size_t back_;   // start of the byte region
    size_t count_ = 0;
};

}  // namespace mq
