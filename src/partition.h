// A partition: the log, every group's cursor on it, and every rule that touches them (publish,
// back-pressure, retention, poll, lease, ack, nack, dead letters, seek, trim, ownership). One
// lock guards all of it; Broker and Topic only route calls here.
//
// The rules live in three files: partition.cpp (the log: append, back-pressure, retention,
// trim), partition_consume.cpp (poll, lease, ack, nack, dead letters, seek) and
// partition_groups.cpp (groups, ownership, introspection).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "arena.h"
#include "clock.h"
#include "cursor.h"
#include "error.h"
#include "mq.h"
#include "waitable.h"

namespace mq {

class CancelScope;

// A wait in milliseconds, turned into a deadline the first time the call would block (most
// calls never block, and reading the clock is not free).
struct Wait {
    enum Kind { kNone, kUntil, kForever } kind;
    int64_t ms = 0;
    std::chrono::steady_clock::time_point at{};
    bool started = false;

    static Wait from_ms(int64_t wait_ms) noexcept {
        if (wait_ms == 0) return {kNone};
        if (wait_ms < 0) return {kForever};
        return {kUntil, wait_ms};
    }
    // Fixes the deadline now (a batch shares one deadline across its partitions).
    void start() noexcept {
        if (kind == kUntil && !started) {
            at = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
            started = true;
        }
    }
    // Where a spin of spin_ns starting now must stop: no later than the deadline.
    int64_t spin_until_ns(int64_t now_ns, int64_t spin_ns) const noexcept {
        const int64_t until = now_ns + spin_ns;
        if (kind != kUntil || !started) return until;
        const int64_t at_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
        return std::min(until, at_ns);
    }
    bool over() noexcept {
        if (kind != kUntil) return kind == kNone;
        if (!started) {
            start();
            return false;
        }
        return std::chrono::steady_clock::now() >= at;
    }
};

// Who is calling, for fencing. The plain API is nobody in particular; a subscription or group
// member must own the partition, and a member must have seen the generation that gave it the
// partition (a partition can move away and back between a member's checks).
struct Caller {
    uint64_t owner = 0;                   // 0: not fenced
    int64_t seen_generation = INT64_MAX;  // members: the generation they last fetched
};

struct TopicSettings {
    const std::string *topic;  // for messages
    int64_t capacity;
    int64_t max_bytes;  // 0 = no byte budget
    int64_t ack_timeout_ns;
    bool bounded;        // MQ_RETAIN_BOUNDED: drop the oldest instead of waiting
    int64_t max_age_ns;  // 0 = no limit
    int64_t spin_ns;     // polls spin this long before blocking (broker option)
};

class Partition {
public:
    Partition(int32_t index, const TopicSettings &settings, const Clock &clock,
              const std::atomic<bool> &closed);
    Partition(const Partition &) = delete;
    Partition &operator=(const Partition &) = delete;

    // Rules 2 and 3: append one record, waiting for room. The record has passed size checks.
    // `origin` is set when the record is a dead letter.
    mq_status publish(const mq_record &r, Wait wait, mq_cancel *cancel, int64_t *offset,
                      const mq_dead_letter *origin = nullptr);
    // Batch publish of records[idx[0..n)] (records[0..n) if idx is null) under one lock
    // acquisition; results[idx[i]] (results[i]) filled.
    mq_status publish_many(const mq_record *records, const uint32_t *idx, size_t n, Wait wait,
                           mq_cancel *cancel, mq_publish_result *results, size_t *published);

    // A caller that owns nothing (the plain API) may call; a fenced one must own the partition
    // (else MQ_ERR_FENCED) in a generation it has seen (else MQ_REBALANCED).
    mq_status poll(const Group *g, Caller who, mq_message *out, size_t max, Wait wait,
                   mq_cancel *cancel, size_t *count);
    mq_status ack(const Group *g, Caller who, int64_t offset);
    mq_status nack(const Group *g, Caller who, int64_t delay_ns);
    mq_status extend_lease(const Group *g, Caller who);
    mq_status seek(const Group *g, int64_t offset);

    // The broker-clock time at which the group's state here changes by itself (its lease runs
    // out, its delayed nack ends), or INT64_MAX.
    int64_t next_change(const Group *g);
    // Spins (without the lock) up to the broker's spin_ns, and never past the wait's deadline,
    // until something a consumer may wait for changes; returns at once when spinning is off.
    // Called with lk held; returns with it.
    void spin_for_change(std::unique_lock<Mutex> &lk, const Wait &wait) noexcept;
    void watch(Notifier *n);
    void unwatch(Notifier *n);

    void add_group(const Group *g, mq_start start);  // may throw bad_alloc: nothing changes
    void remove_group(const Group *g);

    // Ownership of this partition within a group, for push subscriptions.
    bool owned_by_other(const Group *g, uint64_t owner);
    uint64_t owner(const Group *g);
    void set_owner(const Group *g, uint64_t owner);
    void release_owner(const Group *g, uint64_t owner);
    // A rebalance moved the partition: a new owner resumes from committed, so what the old
    // owner had in flight is rewound for it; waiting polls of the old owner wake and are fenced.
    // Returns true when the old owner may still hold views here: they stay valid until it calls
    // release_fenced (its next call, or its close).
    bool reassign(const Group *g, uint64_t owner, int64_t generation);  // cannot throw after
                                                                        // prepare_reassign
    void prepare_reassign(const Group *g);                              // may throw bad_alloc
    void release_fenced(const Group *g, uint64_t owner);
    void rewind_owned(const Group *g, uint64_t owner);  // next = committed, if owner owns it

    void info(mq_partition_info &out);
    mq_status group_info(const Group *g, mq_group_info &out);
    void describe(std::string &out);  // may throw bad_alloc

    Waitable &waitable() noexcept { return w_; }
    int32_t index() const noexcept { return index_; }

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
    static size_t slot_bytes(const Slot &s) noexcept;  // its weight in the byte budget

    Slot &slot(int64_t offset) noexcept {
        return slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    }
    Cursor *find(const Group *g) noexcept;
    // The group's cursor, checked for ownership; nullptr with the failure status in *st.
    Cursor *find_owned(const Group *g, Caller who, Deferred &err, mq_status *st) noexcept;
    mq_status no_group(Deferred &err, const Group *g) const noexcept;
    // Waking is decided under the lock and, on the hot paths (publish, ack), sent after it is
    // released, so a woken thread does not at once block on a lock its waker still holds.
    struct Wakeup {
        bool consumers = false;
        int64_t publishers = 0;  // notify_one this many times; INT64_MAX: notify_all
    };
    void send(const Wakeup &w) noexcept;  // without the lock
    bool announce() noexcept;             // new work: true if a poller waits to be woken
    int64_t publishers_to_wake(int64_t freed) const noexcept;
    void wake_consumers() noexcept { send({announce(), 0}); }
    void wake_publishers(int64_t freed) noexcept { send({false, publishers_to_wake(freed)}); }
    mq_status closed_status() const noexcept;

    // The log (partition.cpp).
    bool has_room(size_t bytes) const noexcept;
    mq_status wait_for_room(std::unique_lock<Mutex> &lk, size_t bytes, Wait wait,
                            const CancelScope &cancel, bool &waited);
    // Appends without waking consumers (the caller wakes them once for all it appended).
    int64_t append(const mq_record &r, size_t bytes, const mq_dead_letter *origin, int64_t now);
    size_t room_for_run(size_t want) const noexcept;
    template <bool kIndexed>
    void append_run(const mq_record *records, const uint32_t *idx, size_t n, int64_t now,
                    mq_publish_result *results, size_t *published);
    // The timestamp of the next append: `now`, or the previous one's if the clock read earlier.
    int64_t stamp(int64_t now) noexcept { return last_timestamp_ = std::max(now, last_timestamp_); }
    void make_room(size_t bytes) noexcept;  // bounded retention: drop the oldest
    void expire(int64_t now) noexcept;      // max age
    void drop_head(int64_t new_start) noexcept;
    int64_t trim_quiet() noexcept;  // returns how many slots it freed, waking nobody
    void trim() noexcept { wake_publishers(trim_quiet()); }
    void release_bytes() noexcept;
    void grow_slots();
    std::chrono::steady_clock::time_point real_time_of(int64_t clock_ns,
                                                       int64_t now) const noexcept;

    // Consuming (partition_consume.cpp).
    void fill(mq_message &m, int64_t offset, uint32_t count) const noexcept;
    mq_status dead_letter_head(std::unique_lock<Mutex> &lk, Deferred &err, Cursor *c, Wait &wait,
                               mq_cancel *cancel);

    Waitable w_;
    const int32_t index_;
    const TopicSettings &settings_;
    const Clock &clock_;
    const std::atomic<bool> &closed_;

    // The log: offsets [start_, end_), slot of offset o at slots_[o & (slots_.size() - 1)].
    int64_t start_ = 0;
    int64_t end_ = 0;
    std::vector<Slot> slots_;
    Arena arena_;
    int64_t bytes_ = 0;  // key + payload bytes of [start_, end_)
    // Clocks are read before the lock is taken (a read is slow, the lock contended), so two
    // publishers can read them in one order and append in the other: timestamps are clamped to
    // stay non-decreasing along the log, which expiry by age relies on.
    int64_t last_timestamp_ = INT64_MIN;

    std::vector<Cursor> cursors_;  // in subscription order

    // Bumped (under the lock) whenever a waiting consumer may have something new: what
    // spinning pollers watch instead of the condition variable.
    std::atomic<uint64_t> changes_{0};
    int pollers_waiting_ = 0;
    int publishers_waiting_ = 0;
    int64_t producer_waits_ = 0;
    int64_t max_backlog_ = 0;
    int64_t dropped_ = 0;
};

}  // namespace mq
