// A partition: its log, every group's cursor on it, and the waiting, composed under one lock
// (the Disruptor's split of its ring: the log holds messages, each cursor its own rules, the
// waiting its one wait loop). Broker and Topic route calls here; dead-lettering, which needs
// another topic, is done one layer up (group_poll.h), so dependencies only point down.
//
// The code lives in four files: partition.cpp (access, retention, trimming), partition_publish
// (append and back-pressure), partition_consume (poll, lease, ack, nack, seek) and
// partition_groups (groups, ownership, introspection).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "util/clock.h"
#include "core/copy_out.h"
#include "core/cursor.h"
#include "core/dead_letter.h"
#include "util/error.h"
#include "core/log.h"
#include "mq.h"
#include "util/wait.h"
#include "core/waiting.h"

namespace mq {

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
    AsyncWaits *async;   // the broker's asynchronous calls (async_waits.h)
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
    //
    // Rule 4. When the group's head has been handed out max_deliveries times, nothing is
    // handed out: *due points at a copy of the head (the calling thread's, valid until its next
    // poll), *count is 0 and the status MQ_OK, and the caller publishes the copy to the
    // dead-letter topic within `wait` (started here), then calls finish_dead_letter. Use
    // poll_group (group_poll.h), which does all of that. *due is left alone otherwise.
    //
    // With `ack` set, first acks *ack as ack() does, in the same critical section (ABI 1.1's
    // ack+poll: one lock round trip instead of two, and the publishers the ack frees are woken
    // with the poll's own unlock). A rejected ack returns its status and polls nothing.
    // With `copy` (the copying poll) the messages go there instead of `out` (then unused):
    // only those that fit are handed out; MQ_ERR_TOO_LARGE if not even the first does.
    mq_status poll(const Group *g, Caller who, mq_message *out, size_t max, Wait &wait,
                   mq_cancel *cancel, size_t *count, const DeadLetter **due,
                   const int64_t *ack = nullptr, CopyOut *copy = nullptr);
    // The dead letter `due` reported is published (`published` is that publish's status):
    // MQ_OK moves the group past it, MQ_ERR_TOO_LARGE too (counted as lost); any other status
    // leaves it at the head. Returns `published`, or MQ_ERR_NO_GROUP if the group went meanwhile.
    mq_status finish_dead_letter(const Group *g, const DeadLetter &due, mq_status published);
    mq_status ack(const Group *g, Caller who, int64_t offset);
    // unhandled_from >= 0: a push loop gives back its batch's messages from that offset on,
    // which no handler saw; their deliveries are taken back (Cursor::give_back).
    mq_status nack(const Group *g, Caller who, int64_t delay_ns, int64_t unhandled_from = -1);
    mq_status extend_lease(const Group *g, Caller who);
    mq_status seek(const Group *g, int64_t offset);
    // Share groups (partition_share.cpp): settles one acquired message (mq_share_settle). A
    // reject in a group with a dead-letter topic sets *due as poll does; the caller publishes
    // it and calls finish_dead_letter (share_settle in group_poll.h does both).
    mq_status share_settle(const Group *g, int64_t offset, uint32_t delivery_count, int32_t action,
                           int64_t delay_ns, const DeadLetter **due);

    // The broker-clock time at which the group's state here changes by itself (its lease runs
    // out, its delayed nack ends), or INT64_MAX.
    int64_t next_change(const Group *g);
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

    // mq_topic_delete: wakes every waiter here; their waits (and every later one) end with
    // MQ_ERR_NO_TOPIC. Cursors and messages stay until the topic's memory goes, so views that
    // members and push handlers hold stay valid until then.
    void mark_deleted();

    Waitable &waitable() noexcept { return waiting_.waitable(); }
    int32_t index() const noexcept { return index_; }

private:
    using Lock = std::unique_lock<Mutex>;

    // Every call that touches the partition enters here: the lock, then the maximum age (the
    // one place it is enforced, so every call sees the same log). `now` is the broker clock
    // read before locking; without it the clock is read only if the topic has a maximum age.
    Lock enter(int64_t now) noexcept {
        Lock lk(waiting_.mutex());
        enforce_max_age(now);
        return lk;
    }
    Lock enter() noexcept { return enter(settings_.max_age_ns ? clock_.now() : 0); }
    // Under the lock, at entry and after each wait. A closed broker changes no state (its info
    // calls keep working and must read the same).
    void enforce_max_age(int64_t now) noexcept {
        if (settings_.max_age_ns && !waiting_.closed()) expire(now);
    }
    void expire(int64_t now) noexcept;

    Cursor *find(const Group *g) noexcept;
    // The group's cursor, checked for ownership; nullptr with the failure status in *st.
    Cursor *find_owned(const Group *g, Caller who, Deferred &err, mq_status *st) noexcept;
    mq_status no_group(Deferred &err, const Group *g) const noexcept;

    // Retention (partition.cpp). Each wakes the publishers it makes room for.
    void drop_head(int64_t new_start) noexcept;  // bounded retention, max age: groups skip
    int64_t trim() noexcept;  // to the slowest committed; returns how many left, waking nobody
    // Trims, and says whom that wakes (consumers too if asked): send it after unlocking.
    Wakeup trim_and_wake(bool consumers) noexcept {
        const bool c = consumers && waiting_.announce();
        return {c, waiting_.publishers_to_wake(trim(), settings_.max_bytes != 0)};
    }
    void release_views() noexcept;  // gives back storage below every group's view floor
    void wake_consumers() noexcept { waiting_.send({waiting_.announce(), 0}); }
    void wake_publishers(int64_t freed) noexcept {
        waiting_.send({false, waiting_.publishers_to_wake(freed, settings_.max_bytes != 0)});
    }

    // Appending (partition_publish.cpp).
    bool has_room(size_t bytes) const noexcept;
    Pending room_for(size_t bytes, int64_t now) const noexcept;  // a publisher's wait step
    size_t room_for_run(size_t want) const noexcept;
    int64_t append(const mq_record &r, size_t bytes, const mq_dead_letter *origin, int64_t now);

    // Consuming (partition_consume.cpp).
    void fill(mq_message &m, int64_t offset, uint32_t count) const noexcept;
    // Rule 5's check and commit, under the lock: MQ_OK, or MQ_ERR_NOT_IN_FLIGHT with nothing
    // changed.
    mq_status commit_ack(Cursor &c, const Group *g, int64_t offset, Deferred &err) noexcept;

    // Share groups (partition_share.cpp), under the lock.
    Pending share_poll(Cursor &c, const Group *g, mq_message *out, size_t max, int64_t now,
                       Wait &wait, const DeadLetter **due, CopyOut *copy, size_t *count);
    bool share_dead_letter(Cursor &c, const Group *g, Wait &wait, const DeadLetter **due);
    bool share_key(int64_t offset, uint32_t *key) const noexcept;
    void share_advance(Cursor &c) noexcept;  // the frontier past settled messages (no trim)
    mq_status share_accept(Cursor &c, const Group *g, int64_t offset, Deferred &err) noexcept;
    void share_finish_dead_letter(Cursor &c, int64_t offset, bool moved, bool too_large) noexcept;
    int64_t share_next_change(Cursor &c) noexcept;
    void share_info(Cursor &c, int64_t now, mq_group_info &out) const noexcept;

    Waiting waiting_;
    const int32_t index_;
    const TopicSettings &settings_;
    const Clock &clock_;
    Log log_;
    std::vector<Cursor> cursors_;  // in subscription order
    int64_t dropped_ = 0;          // messages trimmed before every group acked them
};

}  // namespace mq
