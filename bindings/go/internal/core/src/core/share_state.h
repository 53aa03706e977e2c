// A share group's state on one partition (SPEC rule 16; Kafka's share-partition, KIP-932):
// every offset in [frontier, next) is acquired by one poll, available to the next, settled, or
// on its way to the dead-letter topic. The cursor's `committed` is the frontier (the oldest
// unsettled offset, which holds trimming and back-pressure) and its `next` the first offset no
// poll has looked at. Partition applies the rules (partition_share.cpp) under its lock; this
// file only keeps the entries and their counts consistent.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>

namespace mq {

class ShareState {
public:
    enum State : uint8_t {
        kDone,           // accepted, rejected (dropped) or dead-lettered: only waits for the
                         // frontier to pass it
        kAcquired,       // handed out; its lock runs out at `deadline`
        kAvailable,      // may be handed out from `deadline` on (0: now)
        kDoomed,         // rejected or past max_deliveries: the next poll dead-letters it
        kDeadLettering,  // a dead-letter publish of it is under way
    };
    struct Entry {
        int64_t deadline;
        uint32_t count;  // deliveries so far: the fencing token of the acquisition that holds it
        uint32_t key;    // murmur2 of its key (key-shared groups; `keyed` says it has one)
        State state;
        bool keyed;
    };

    ShareState(int64_t at, uint32_t max_acquired, bool key_shared) noexcept
        : base_(at), max_acquired_(max_acquired), key_shared_(key_shared) {}

    int64_t base() const noexcept { return base_; }
    int64_t end() const noexcept { return base_ + static_cast<int64_t>(entries_.size()); }
    bool key_shared() const noexcept { return key_shared_; }
    uint32_t max_acquired() const noexcept { return max_acquired_; }
    int64_t acquired() const noexcept { return acquired_; }
    int64_t available() const noexcept { return available_; }
    int64_t doomed() const noexcept { return doomed_; }
    int64_t room() const noexcept { return std::max<int64_t>(0, max_acquired_ - acquired_); }

    Entry *at(int64_t offset) noexcept {
        if (offset < base_ || offset >= end()) return nullptr;
        return &entries_[static_cast<size_t>(offset - base_)];
    }
    // A new offset at end(), available from `deadline`. May throw bad_alloc: nothing changed.
    Entry &push(int64_t deadline, bool keyed, uint32_t key) {
        entries_.push_back(Entry{deadline, 0, key, kAvailable, keyed});
        available_++;
        min_available_ = std::min(min_available_, deadline);
        return entries_.back();
    }

    // Every state change goes through here, so the counts stay true.
    void set(Entry &e, State to, int64_t deadline = 0) noexcept {
        count(e.state, -1);
        count(to, +1);
        e.state = to;
        e.deadline = deadline;
        if (to == kAcquired) min_lock_ = std::min(min_lock_, deadline);
        if (to == kAvailable) min_available_ = std::min(min_available_, deadline);
    }

    // No available entry may be acquired before this time (a lower bound: a poll skips its
    // scan of the entries until then, so pending delayed messages cost a poll nothing).
    int64_t min_available() const noexcept { return available_ ? min_available_ : INT64_MAX; }
    // After a scan that saw every available entry: the earliest of their times.
    void set_min_available(int64_t at) noexcept { min_available_ = at; }

    // Every acquired entry to `to` (a nack's release, a lease extension's renewal); false if
    // none was acquired.
    bool set_all_acquired(State to, int64_t deadline) noexcept {
        bool any = false;
        for (Entry &e : entries_) {
            if (e.state != kAcquired) continue;
            set(e, to, deadline);
            any = true;
        }
        return any;
    }

    // Locks that ran out by `now` make their messages available again (rule 16's lock expiry).
    void expire(int64_t now) noexcept {
        if (acquired_ == 0 || now < min_lock_) return;
        min_lock_ = INT64_MAX;
        for (Entry &e : entries_) {
            if (e.state != kAcquired) continue;
            if (e.deadline <= now) {
                set(e, kAvailable);
            } else {
                min_lock_ = std::min(min_lock_, e.deadline);
            }
        }
    }
    // The earliest time a lock runs out (INT64_MAX with none acquired).
    int64_t next_lock_expiry() const noexcept { return acquired_ ? min_lock_ : INT64_MAX; }

    // Settled entries at the front leave; returns the new frontier.
    int64_t pop_done() noexcept {
        while (!entries_.empty() && entries_.front().state == kDone) {
            entries_.pop_front();
            base_++;
        }
        return base_;
    }
    // The log dropped everything below `start` (bounded retention, max age). Returns how many
    // unsettled messages went (those no poll had looked at included); the frontier then moves
    // past whatever settled messages follow.
    int64_t drop_below(int64_t start) noexcept {
        int64_t unsettled = 0;
        while (!entries_.empty() && base_ < start) {
            if (entries_.front().state != kDone) unsettled++;
            count(entries_.front().state, -1);
            entries_.pop_front();
            base_++;
        }
        if (base_ < start) {  // never looked at: unsettled too
            unsettled += start - base_;
            base_ = start;
        }
        pop_done();
        return unsettled;
    }
    void reset(int64_t at) noexcept {
        entries_.clear();
        base_ = at;
        acquired_ = available_ = doomed_ = 0;
        min_lock_ = min_available_ = INT64_MAX;
    }

    template <class F>
    void for_each(F &&f) {
        int64_t o = base_;
        for (Entry &e : entries_) f(o++, e);
    }

    int64_t rejected = 0;  // messages settled with MQ_SETTLE_REJECT

private:
    void count(State s, int d) noexcept {
        if (s == kAcquired) acquired_ += d;
        if (s == kAvailable) available_ += d;
        if (s == kDoomed) doomed_ += d;
    }

    std::deque<Entry> entries_;
    int64_t base_;
    uint32_t max_acquired_;
    bool key_shared_;
    int64_t acquired_ = 0, available_ = 0, doomed_ = 0;
    int64_t min_lock_ = INT64_MAX;       // no acquired lock runs out earlier
    int64_t min_available_ = INT64_MAX;  // no available entry is ready earlier
};

}  // namespace mq
