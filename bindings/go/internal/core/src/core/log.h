// The log of one partition: its messages at offsets [start, end), kept in a store.
//
// The log knows nothing of groups: the partition decides what to keep (its cursors, retention)
// and tells the log where it now starts and below which offset no view can reach any more. The
// log keeps the offsets, the retained bytes and the timestamps' order; where the messages live
// is its store's business (log_store.h: in memory today).
// Not thread-safe: the partition's lock guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/log_store.h"
#include "core/memory_store.h"
#include "mq.h"

namespace mq {

class Log {
public:
    explicit Log(int64_t capacity);  // in memory
    // On another store, empty. (A store that reopens what it holds would pass its offsets too.)
    explicit Log(std::unique_ptr<LogStore> store);
    Log(const Log &) = delete;
    Log &operator=(const Log &) = delete;

    int64_t start() const noexcept { return start_; }
    int64_t end() const noexcept { return end_; }
    bool empty() const noexcept { return start_ == end_; }
    int64_t size() const noexcept { return end_ - start_; }
    int64_t bytes() const noexcept { return bytes_; }  // record_bytes of [start, end)
    int64_t max_size() const noexcept { return max_size_; }
    int64_t timestamp(int64_t offset) const noexcept {
        return other_ ? other_->timestamp(offset) : memory_.timestamp(offset);
    }

    // When the message at `offset` may be handed out (mq_record.delay_ms; INT64_MIN if at once).
    int64_t due(int64_t offset) const noexcept {
        return other_ ? other_->due(offset) : memory_.due(offset);
    }
    // The first offset in [from, to) not due at `now`, or `to`. Without a delayed message still
    // pending in the log this is one comparison: the poll path pays nothing for the feature.
    int64_t latest_due() const noexcept {
        return other_ ? other_->latest_due() : memory_.latest_due();
    }
    int64_t first_not_due(int64_t from, int64_t to, int64_t now) const noexcept {
        if (latest_due() <= now) [[likely]]
            return to;
        for (int64_t o = from; o < to; o++)
            if (due(o) > now) return o;
        return to;
    }

    // Appends one record that passed its size checks (`bytes` is its record_bytes; `origin` is
    // set for a dead letter) and returns its offset. May throw bad_alloc: nothing changes then.
    int64_t append(const mq_record &r, size_t bytes, const mq_dead_letter *origin, int64_t now);
    // Appends records[idx[k]] (records[k] if !kIndexed) for k < n, writing each one's offset to
    // results (if not null) at the same index. Each record is committed as it is written, so if
    // the store cannot grow (bad_alloc) the records before it stay appended, counted in
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
    void release(int64_t floor) noexcept {
        if (!other_) [[likely]] {
            memory_.release(floor);
        } else {
            other_->release(floor);
        }
    }

    // A view of the message at `offset` (start <= offset < end, or a dropped one not yet
    // released): offset, key, payload, headers, dead-letter origin and timestamp.
    void view(mq_message &m, int64_t offset) const noexcept {
        if (!other_) [[likely]] {
            memory_.view(m, offset);  // direct and inlined: MemoryStore is final
        } else {
            other_->view(m, offset);
        }
    }

private:
    // Calls f with the store: as a MemoryStore when it is the in-memory one, so that path is
    // direct code; through the interface otherwise. (The hot paths below spell the branch out:
    // gcc does not inline the lambda into them.)
    template <class F>
    decltype(auto) on_store(F &&f) {
        if (!other_) [[likely]]
            return f(memory_);
        return f(*other_);
    }
    template <class F>
    decltype(auto) on_store(F &&f) const {
        if (!other_) [[likely]]
            return f(memory_);
        return f(std::as_const(*other_));
    }
    // The timestamp of the next append: `now`, or the previous one's if the clock read earlier.
    int64_t stamp(int64_t now) noexcept { return last_timestamp_ = std::max(now, last_timestamp_); }

    // The in-memory store is a member, not behind a pointer: its hot calls are direct, inlined
    // code on the log's own fields (a pointer between them cost 10 to 15 instructions a call).
    MemoryStore memory_;
    std::unique_ptr<LogStore> other_;  // the store when it is not memory_, else null
    int64_t start_ = 0;
    int64_t end_ = 0;
    int64_t bytes_ = 0;
    int64_t max_size_ = 0;  // largest end - start seen
    // Clocks are read before the lock is taken (a read is slow, the lock contended), so two
    // publishers can read them in one order and append in the other: timestamps are clamped to
    // stay non-decreasing along the log, which expiry by age relies on.
    int64_t last_timestamp_ = INT64_MIN;
};

// The hot paths, inline: every publish appends, every poll views, every ack advances.

// Always inlined into its one caller, Partition::append: a call boundary costs a tenth of it.
[[gnu::always_inline]] inline int64_t Log::append(const mq_record &r, size_t bytes,
                                                  const mq_dead_letter *origin, int64_t now) {
    const int64_t offset = end_;
    const int64_t timestamp = std::max(now, last_timestamp_);
    if (!other_) [[likely]] {
        memory_.reserve(start_, end_, 1);
        memory_.put(offset, r, bytes, origin, timestamp, bytes_);
    } else {
        other_->reserve(start_, end_, 1);
        other_->put(offset, r, bytes, origin, timestamp, bytes_);
    }
    last_timestamp_ = timestamp;
    bytes_ += static_cast<int64_t>(bytes);
    end_++;
    max_size_ = std::max(max_size_, end_ - start_);
    return offset;
}

inline int64_t Log::advance(int64_t new_start) noexcept {
    new_start = std::min(new_start, end_);
    if (new_start <= start_) return 0;
    int64_t gone_bytes = 0;
    if (!other_) [[likely]] {
        for (int64_t o = start_; o < new_start; o++)
            gone_bytes += static_cast<int64_t>(memory_.weight(o));
    } else {
        for (int64_t o = start_; o < new_start; o++)
            gone_bytes += static_cast<int64_t>(other_->weight(o));
    }
    bytes_ -= gone_bytes;
    const int64_t gone = new_start - start_;
    start_ = new_start;
    return gone;
}

}  // namespace mq
