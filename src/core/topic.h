// A topic: its partitions, its groups, and the round-robin counter for keyless messages.
//
// Groups are looked up on every poll and ack, so the group list is an immutable snapshot read
// without a lock by calls inside the broker's call gate; subscribe and unsubscribe (rare)
// publish a new snapshot under groups_mu and retire the old one to the broker's reclaimer,
// which frees it once no call can still hold it. Code outside the gate (members, push
// subscriptions, close) reads the list under groups_mu.
//
// Lifetime: a topic's memory is reference-counted. The broker's topic table holds one
// reference while the topic exists (dropped a grace period after mq_topic_delete), and so do
// every member and push subscription on it and every group that dead-letters into it; the
// last release frees it, with its groups' references.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cursor.h"
#include "util/murmur2.h"
#include "core/partition.h"
#include "util/reclaim.h"

namespace mq {

class Topic {
public:
    Topic(std::string name, const mq_topic_config &cfg, const Clock &clock, int64_t spin_ns,
          const std::atomic<bool> &closed, Reclaimer &reclaimer, AsyncWaits *async);
    Topic(const Topic &) = delete;
    Topic &operator=(const Topic &) = delete;

    void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    static int64_t alive_for_testing() noexcept;            // topics whose memory has not gone
    static int64_t snapshots_alive_for_testing() noexcept;  // group lists not yet freed

    // mq_topic_delete (the broker unlinks it first): every later call on it fails with
    // MQ_ERR_NO_TOPIC, and waiting publishes and polls, member polls and push loops wake to it.
    void mark_deleted();
    bool deleted() const noexcept { return deleted_.load(std::memory_order_acquire); }

    const std::string &name() const noexcept { return name_; }
    int32_t partition_count() const noexcept { return static_cast<int32_t>(partitions_.size()); }
    Partition &partition(int32_t p) noexcept { return *partitions_[static_cast<size_t>(p)]; }
    const TopicSettings &settings() const noexcept { return settings_; }
    // The broker is closed or the topic deleted: push loops and rebalance callbacks stop.
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire) || deleted(); }

    // The one router of the topic (single and batch publishes, dead letters): a record with a
    // key goes to Kafka's partition for it, one without takes the next round-robin slot.
    // (Inline, as is publish: they are on the path of every single publish.)
    int32_t route(const mq_record &r) noexcept {
        const auto parts = static_cast<uint64_t>(partitions_.size());
        if (parts == 1) return 0;  // and the shared round-robin counter stays cold
        if (r.key) return partition_for_key(r.key, r.key_len, static_cast<int32_t>(parts));
        return static_cast<int32_t>(round_robin_.fetch_add(1, std::memory_order_relaxed) % parts);
    }

    // Appends one record (it has passed the size checks) to its partition, waiting for room.
    // On MQ_OK *partition and *offset (each may be null) say where it went.
    mq_status publish(const mq_record &r, Wait wait, mq_cancel *cancel, int32_t *partition,
                      int64_t *offset) {
        const int32_t p = route(r);
        int64_t at = -1;
        if (mq_status st = partitions_[static_cast<size_t>(p)]->publish(r, wait, cancel, &at);
            st != MQ_OK)
            return st;
        if (partition) *partition = p;
        if (offset) *offset = at;
        return MQ_OK;
    }
    // Appends records[0..count) (all checked), taking each partition's lock once for all of its
    // records, in input order within a partition, under one deadline. results (may be null)
    // gets every record's partition and offset (-1 if not appended); *published counts the
    // appended records as they are appended, so it is right also if an allocation throws.
    mq_status publish_batch(const mq_record *records, size_t count, Wait wait, mq_cancel *cancel,
                            mq_publish_result *results, size_t *published);
    // An asynchronous batch's two halves: route_all routes every record once (as publish_batch
    // would: offsets -1), and each run of publish_rest appends the records whose offset is still
    // -1 to their partitions, partition by partition, until one has to wait (async, parked:
    // MQ_PENDING) or fails.
    void route_all(const mq_record *records, size_t count, mq_publish_result *results) noexcept;
    mq_status publish_rest(const mq_record *records, size_t count, mq_publish_result *results,
                           Wait wait, mq_cancel *cancel);

    // Inside the call gate only (the snapshot it reads may be retired meanwhile).
    const Group *find_group(std::string_view name) const noexcept;

    // Creates the group's cursors on every partition. MQ_ERR_EXISTS if it is subscribed.
    // `proto` carries the group's settings (its name and id are set here). May throw
    // bad_alloc, in which case nothing changed.
    mq_status subscribe(std::string_view name, mq_start start, uint64_t id, const GroupConfig &cfg,
                        const Group **out);
    mq_status unsubscribe(std::string_view name);
    // The group if subscribed, else subscribes it at the end of the log (push subscriptions,
    // members); *created says which. The caller gets a reference to the group (release it).
    // Safe outside the call gate. May throw bad_alloc.
    const Group *find_or_subscribe(std::string_view name, uint64_t id, bool *created);
    // Undoes find_or_subscribe's subscription after the call that caused it failed, unless
    // someone has started using the group meanwhile.
    void rollback_subscribe(const Group *g) noexcept;

    std::vector<std::string> group_names() const;
    void wake_members();  // on close: members waiting in mq_member_poll

    // Appends a dead letter (routed like any record) with the poll's wait and cancel token.
    mq_status publish_dead_letter(const mq_record &r, const mq_dead_letter &origin, Wait wait,
                                  mq_cancel *cancel);

    // Held by push subscriptions while they check and claim partition ownership.
    std::mutex &groups_mutex() noexcept { return groups_mu_; }

private:
    using GroupList = std::vector<const Group *>;

    // rr: the next of the round-robin slots a batch reserved for its keyless records.
    int32_t route(const mq_record &r, uint64_t &rr) const noexcept;

    ~Topic();  // by release() only

    const Group *find_locked(std::string_view name) const noexcept;
    mq_status subscribe_locked(std::string_view name, mq_start start, uint64_t id,
                               const GroupConfig &cfg, const Group **out);
    // With groups_mu_ held and a reclaimer entry reserved: replaces the snapshot and retires
    // the old one. May throw bad_alloc before anything changed.
    void publish_groups(GroupList list);
    // With groups_mu_ held and two entries reserved: takes g out (new calls no longer find it,
    // calls in flight find no cursor) and drops the list's reference after a grace period.
    // May throw bad_alloc before anything changed.
    void remove_locked(const Group *g);

    const Clock &clock_;
    const std::atomic<bool> &closed_;
    const std::string name_;
    TopicSettings settings_;
    std::vector<std::unique_ptr<Partition>> partitions_;
    // Written by every keyless publish: on a line of its own, away from what lookups read.
    alignas(64) std::atomic<uint64_t> round_robin_{0};

    Reclaimer &reclaimer_;
    std::atomic<int64_t> refs_{1};
    std::atomic<bool> deleted_{false};

    mutable std::mutex groups_mu_;
    std::atomic<const GroupList *> groups_{nullptr};  // each group in it holds a reference
};

// A counted reference to a topic or a group, released on destruction.
template <class T>
class Ref {
public:
    Ref() noexcept = default;
    static Ref adopt(T *p) noexcept {  // takes over a reference the caller holds
        Ref r;
        r.p_ = p;
        return r;
    }
    Ref(Ref &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Ref &operator=(Ref &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    Ref(const Ref &) = delete;
    Ref &operator=(const Ref &) = delete;
    ~Ref() { reset(); }
    void reset() noexcept {
        if (T *p = std::exchange(p_, nullptr)) p->release();
    }
    T *get() const noexcept { return p_; }

private:
    T *p_ = nullptr;
};

// Undoes a group subscription made on the caller's behalf (find_or_subscribe) if the call that
// made it then fails.
struct GroupRollback {
    Topic *topic;
    const Group *group;
    bool armed;
    ~GroupRollback() {
        if (armed) topic->rollback_subscribe(group);
    }
};

}  // namespace mq
