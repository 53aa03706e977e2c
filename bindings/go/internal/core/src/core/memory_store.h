// The in-memory log store: each message's slot in a ring, its bytes in an arena.
//
// final, and its hot methods inline: Log calls it through a MemoryStore reference, so the calls
// compile to direct, inlined code (no virtual dispatch on the publish and poll paths).
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/log_store.h"
#include "core/stored_message.h"
#include "util/arena.h"

namespace mq {

class MemoryStore final : public LogStore {
public:
    explicit MemoryStore(int64_t capacity);

    void reserve(int64_t start, int64_t end, size_t n) override {
        while (static_cast<size_t>(end - start) + n > slots_.size()) grow(start, end);
    }
    [[gnu::always_inline]] inline void put(int64_t offset, const mq_record &r, size_t bytes,
                                           const mq_dead_letter *origin, int64_t timestamp,
                                           int64_t retained) override;
    void put_run(int64_t first, const mq_record *records, const uint32_t *idx, size_t n,
                 int64_t timestamp, mq_publish_result *results, size_t *stored,
                 int64_t *retained) override;
    inline void view(mq_message &m, int64_t offset) const noexcept override;
    size_t weight(int64_t offset) const noexcept override { return weight(slot(offset)); }
    int64_t timestamp(int64_t offset) const noexcept override { return slot(offset).timestamp_ns; }
    int64_t latest_due() const noexcept override { return latest_due_; }
    int64_t due(int64_t offset) const noexcept override {
        const Slot &s = slot(offset);
        return (s.payload_len & kExtras) ? read_extras(s.data).deliver_at : INT64_MIN;
    }
    void release(int64_t floor) noexcept override { arena_.trim(floor); }

private:
    // A message's place in the store; its bytes lie in the arena as stored_message.h describes.
    // 24 bytes: what every retained message costs beyond its bytes.
    struct Slot {
        const char *data;      // key bytes then payload bytes, or an Extras block first
        uint32_t key_len;      // low 31 bits: length; kNoKey
        uint32_t payload_len;  // low 31 bits: length; kExtras
        int64_t timestamp_ns;
    };
    static constexpr uint32_t kNoKey = 1u << 31;   // in key_len: published without a key
    static constexpr uint32_t kExtras = 1u << 31;  // in payload_len: headers, dead letter, delay
    static constexpr uint32_t kLenMask = (1u << 31) - 1;
    static size_t weight(const Slot &s) noexcept;

    Slot &slot(int64_t offset) noexcept {
        return slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    }
    const Slot &slot(int64_t offset) const noexcept {
        return slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    }
    void grow(int64_t start, int64_t end);
    template <bool kIndexed>
    void put_run(int64_t first, const mq_record *records, const uint32_t *idx, size_t n,
                 int64_t timestamp, mq_publish_result *results, size_t *stored, int64_t *retained);

    // Offset o lives at slots_[o & (slots_.size() - 1)]; the size is a power of two.
    std::vector<Slot> slots_;
    Arena arena_;
    int64_t latest_due_ = INT64_MIN;
};

inline size_t MemoryStore::weight(const Slot &s) noexcept {
    size_t bytes = (s.key_len & kLenMask) + (s.payload_len & kLenMask);
    if (s.payload_len & kExtras) bytes += read_extras(s.data).header_bytes;
    return bytes;
}

inline void MemoryStore::put(int64_t offset, const mq_record &r, size_t bytes,
                             const mq_dead_letter *origin, int64_t timestamp, int64_t retained) {
    const size_t key_len = r.key ? r.key_len : 0;
    const uint32_t key_field = static_cast<uint32_t>(key_len) | (r.key ? 0 : kNoKey);
    uint32_t payload_field = static_cast<uint32_t>(r.payload_len);
    const char *data = kEmptyBytes;
    if (r.header_count || origin || r.delay_ms) {
        const size_t size =
            extras_message_size(r.header_count, origin != nullptr, bytes, r.delay_ms > 0);
        char *at = arena_.allocate(size, offset, static_cast<size_t>(retained));
        data = write_extras_message(at, r, origin, bytes - key_len - r.payload_len, timestamp);
        if (r.delay_ms > 0) latest_due_ = std::max(latest_due_, deliver_at(timestamp, r.delay_ms));
        payload_field |= kExtras;
    } else if (bytes) {
        char *at = arena_.allocate(bytes, offset, static_cast<size_t>(retained));
        if (key_len) std::memcpy(at, r.key, key_len);
        if (r.payload_len) std::memcpy(at + key_len, r.payload, r.payload_len);
        data = at;
    }
    slot(offset) = Slot{data, key_field, payload_field, timestamp};
}

inline void MemoryStore::view(mq_message &m, int64_t offset) const noexcept {
    const Slot &s = slot(offset);
    const char *key = s.data;
    m.dead_letter = nullptr;
    m.headers = nullptr;
    m.header_count = 0;
    if (s.payload_len & kExtras) [[unlikely]] {
        const ExtrasView ex = read_extras(s.data);
        m.dead_letter = ex.dead_letter;
        m.headers = ex.headers;
        m.header_count = ex.header_count;
        key = ex.key;
    }
    const size_t key_len = s.key_len & kLenMask;
    m.offset = offset;
    m.key = (s.key_len & kNoKey) ? nullptr : key;
    m.key_len = key_len;
    m.payload = key + key_len;
    m.payload_len = s.payload_len & kLenMask;
    m.timestamp_ns = s.timestamp_ns;
}

}  // namespace mq
