// The log of one partition: its messages at offsets [start, end), their slots and their bytes.
//
// The log knows nothing of groups: the partition decides what to keep (its cursors, retention)
// and tells the log where it now starts and below which offset no view can reach any more.
// Not thread-safe: the partition's lock guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/arena.h"
#include "mq.h"
#include "core/stored_message.h"

namespace mq {

class Log {
public:
    explicit Log(int64_t capacity);
    Log(const Log &) = delete;
    Log &operator=(const Log &) = delete;

    int64_t start() const noexcept { return start_; }
    int64_t end() const noexcept { return end_; }
    bool empty() const noexcept { return start_ == end_; }
    int64_t size() const noexcept { return end_ - start_; }
    int64_t bytes() const noexcept { return bytes_; }  // record_bytes of [start, end)
    int64_t max_size() const noexcept { return max_size_; }
    int64_t timestamp(int64_t offset) const noexcept { return slot(offset).timestamp_ns; }

    // Appends one record that passed its size checks (`bytes` is its record_bytes; `origin` is
    // set for a dead letter) and returns its offset. May throw bad_alloc: nothing changes then.
    int64_t append(const mq_record &r, size_t bytes, const mq_dead_letter *origin, int64_t now);
    // Appends records[idx[k]] (records[k] if !kIndexed) for k < n, writing each one's offset to
    // results (if not null) at the same index. Each record is committed as it is written, so if
    // the arena cannot grow (bad_alloc) the records before it stay appended, counted in
    // *appended.
    template <bool kIndexed>
    void append_run(const mq_record *records, const uint32_t *idx, size_t n, int64_t now,
                    mq_publish_result *results, size_t *appended);
    // Rule 8: n messages appended and trimmed at once (no group keeps anything). Returns the
    // first one's offset.
    int64_t pass(size_t n) noexcept;

    // Where the log must start for `incoming` more bytes and one more message to fit `capacity`
    // messages and `max_bytes` bytes (0: no budget): bounded retention drops up to there.
    int64_t start_to_fit(size_t incoming, int64_t capacity, int64_t max_bytes) const noexcept;
    // Where the log must start for no message to be `max_age` old or older at `now`.
    int64_t start_after_age(int64_t now, int64_t max_age) const noexcept;
    // Moves the start up to `new_start` (at most end) and returns how many messages left. Their
    // bytes stay readable until release() passes them.
    int64_t advance(int64_t new_start) noexcept;
    // No view reaches below `floor` any more: their storage may be reused.
    void release(int64_t floor) noexcept { arena_.trim(floor); }

    // A view of the message at `offset` (start <= offset < end, or a dropped one not yet
    // released): offset, key, payload, headers, dead-letter origin and timestamp.
    void view(mq_message &m, int64_t offset) const noexcept;

private:
    // A message's place in the log; its bytes lie in the arena as stored_message.h describes.
    // 24 bytes: what every retained message costs beyond its bytes.
    struct Slot {
        const char *data;      // key bytes then payload bytes, or an Extras block first
        uint32_t key_len;      // low 31 bits: length; kNoKey
        uint32_t payload_len;  // low 31 bits: length; kExtras
        int64_t timestamp_ns;
    };
    static constexpr uint32_t kNoKey = 1u << 31;   // in key_len: published without a key
    static constexpr uint32_t kExtras = 1u << 31;  // in payload_len: headers or a dead letter
    static constexpr uint32_t kLenMask = (1u << 31) - 1;
    static size_t weight(const Slot &s) noexcept;  // its record_bytes

    Slot &slot(int64_t offset) noexcept {
        return slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    }
    const Slot &slot(int64_t offset) const noexcept {
        return slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    }
    void grow_slots();
    // The timestamp of the next append: `now`, or the previous one's if the clock read earlier.
    int64_t stamp(int64_t now) noexcept { return last_timestamp_ = std::max(now, last_timestamp_); }

    int64_t start_ = 0;
    int64_t end_ = 0;
    // Offset o lives at slots_[o & (slots_.size() - 1)]; the size is a power of two.
    std::vector<Slot> slots_;
    Arena arena_;
    int64_t bytes_ = 0;
    int64_t max_size_ = 0;  // largest end - start seen
    // Clocks are read before the lock is taken (a read is slow, the lock contended), so two
    // publishers can read them in one order and append in the other: timestamps are clamped to
    // stay non-decreasing along the log, which expiry by age relies on.
    int64_t last_timestamp_ = INT64_MIN;
};

// The hot paths, inline: every publish appends, every poll views, every ack advances.

inline size_t Log::weight(const Slot &s) noexcept {
    size_t bytes = (s.key_len & kLenMask) + (s.payload_len & kLenMask);
    if (s.payload_len & kExtras) bytes += read_extras(s.data).header_bytes;
    return bytes;
}

// Always inlined into its one caller, Partition::append: a call boundary costs a tenth of it.
[[gnu::always_inline]] inline int64_t Log::append(const mq_record &r, size_t bytes,
                                                  const mq_dead_letter *origin, int64_t now) {
    if (static_cast<size_t>(end_ - start_) == slots_.size()) grow_slots();
    const int64_t offset = end_;
    const size_t key_len = r.key ? r.key_len : 0;
    const uint32_t key_field = static_cast<uint32_t>(key_len) | (r.key ? 0 : kNoKey);
    uint32_t payload_field = static_cast<uint32_t>(r.payload_len);
    const char *data = kEmptyBytes;
    if (r.header_count || origin) {
        const size_t size = extras_message_size(r.header_count, origin != nullptr, bytes);
        char *at = arena_.allocate(size, offset, static_cast<size_t>(bytes_));
        data = write_extras_message(at, r, origin, bytes - key_len - r.payload_len);
        payload_field |= kExtras;
    } else if (bytes) {
        char *at = arena_.allocate(bytes, offset, static_cast<size_t>(bytes_));
        if (key_len) std::memcpy(at, r.key, key_len);
        if (r.payload_len) std::memcpy(at + key_len, r.payload, r.payload_len);
        data = at;
    }
    slot(offset) = Slot{data, key_field, payload_field, stamp(now)};
    bytes_ += static_cast<int64_t>(bytes);
    end_++;
    max_size_ = std::max(max_size_, end_ - start_);
    return offset;
}

inline int64_t Log::advance(int64_t new_start) noexcept {
    new_start = std::min(new_start, end_);
    if (new_start <= start_) return 0;
    for (int64_t o = start_; o < new_start; o++) bytes_ -= static_cast<int64_t>(weight(slot(o)));
    const int64_t gone = new_start - start_;
    start_ = new_start;
    return gone;
}

inline void Log::view(mq_message &m, int64_t offset) const noexcept {
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
