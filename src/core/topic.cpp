#include "core/topic.h"

#include <vector>

#include "util/cancel.h"
#include "util/error.h"
#include "core/membership.h"
#include "util/murmur2.h"
#include "core/record.h"

namespace mq {

namespace {
std::atomic<int64_t> topics_alive{0};
std::atomic<int64_t> snapshots_alive{0};

void free_snapshot(void *p) {
    delete static_cast<const std::vector<const Group *> *>(p);
    snapshots_alive.fetch_sub(1, std::memory_order_relaxed);
}
}  // namespace

int64_t Topic::alive_for_testing() noexcept { return topics_alive.load(std::memory_order_relaxed); }
int64_t Topic::snapshots_alive_for_testing() noexcept {
    return snapshots_alive.load(std::memory_order_relaxed);
}

Topic::Topic(std::string name, const mq_topic_config &cfg, const Clock &clock, int64_t spin_ns,
             const std::atomic<bool> &closed, Reclaimer &reclaimer, AsyncWaits *async)
    : clock_(clock),
      closed_(closed),
      name_(std::move(name)),
      settings_{&name_,
                cfg.capacity,
                cfg.max_bytes,
                cfg.ack_timeout_ms * 1000000,
                cfg.retention == MQ_RETAIN_BOUNDED,
                cfg.max_age_ms * 1000000,
                spin_ns,
                async},
      reclaimer_(reclaimer) {
    partitions_.reserve(static_cast<size_t>(cfg.partitions));
    for (int32_t p = 0; p < cfg.partitions; p++) {
        partitions_.push_back(std::make_unique<Partition>(p, settings_, clock, closed));
    }
    groups_.store(new GroupList(), std::memory_order_release);
    snapshots_alive.fetch_add(1, std::memory_order_relaxed);
    topics_alive.fetch_add(1, std::memory_order_relaxed);
}

// No call can see the topic any more: its groups lose the list's references (a group held by a
// member or subscription stays until that handle is released; it never touches the topic).
Topic::~Topic() {
    const GroupList *list = groups_.load(std::memory_order_relaxed);
    for (const Group *g : *list) g->release();
    free_snapshot(const_cast<GroupList *>(list));
    topics_alive.fetch_sub(1, std::memory_order_relaxed);
}

const Group *Topic::find_group(std::string_view name) const noexcept {
    const GroupList *list = groups_.load(std::memory_order_acquire);
    for (const Group *g : *list) {
        if (g->name == name) return g;
    }
    return nullptr;
}

const Group *Topic::find_locked(std::string_view name) const noexcept {
    for (const Group *g : *groups_.load(std::memory_order_relaxed)) {
        if (g->name == name) return g;
    }
    return nullptr;
}

void Topic::publish_groups(GroupList list) {
    auto owned = std::make_unique<const GroupList>(std::move(list));
    snapshots_alive.fetch_add(1, std::memory_order_relaxed);
    const GroupList *old = groups_.exchange(owned.release(), std::memory_order_acq_rel);
    reclaimer_.retire(const_cast<GroupList *>(old), free_snapshot);
}

void Topic::remove_locked(const Group *g) {
    GroupList next;  // may throw here and in publish_groups, before anything changed
    for (const Group *other : *groups_.load(std::memory_order_relaxed)) {
        if (other != g) next.push_back(other);
    }
    publish_groups(std::move(next));  // new calls no longer find the group...
    g->unsubscribed.store(true, std::memory_order_release);  // ...its members' calls fail...
    for (auto &p : partitions_) p->remove_group(g);  // ...and calls in flight find no cursor
    reclaimer_.retire(const_cast<Group *>(g),
                      [](void *p) { static_cast<const Group *>(p)->release(); });
}

void Topic::mark_deleted() {
    deleted_.store(true, std::memory_order_release);
    for (auto &p : partitions_) p->mark_deleted();
    std::lock_guard lk(groups_mu_);
    for (const Group *g : *groups_.load(std::memory_order_relaxed)) g->membership->wake_all();
}

mq_status Topic::subscribe(std::string_view name, mq_start start, uint64_t id,
                           const GroupConfig &cfg, const Group **out) {
    mq_status st;
    {
        std::lock_guard lk(groups_mu_);
        st = subscribe_locked(name, start, id, cfg, out);
    }
    reclaimer_.collect();
    return st;
}

mq_status Topic::subscribe_locked(std::string_view name, mq_start start, uint64_t id,
                                  const GroupConfig &cfg, const Group **out) {
    if (find_locked(name)) {
        return fail(MQ_ERR_EXISTS, "group %.*s is already subscribed to topic %s",
                    static_cast<int>(name.size()), name.data(), name_.c_str());
    }
    // Everything that can fail is done before the first partition learns of the group.
    reclaimer_.reserve(1);
    std::unique_ptr<Group, void (*)(Group *)> group(new Group(std::string(name), id, cfg),
                                                    [](Group *g) { g->release(); });
    group->membership = std::make_unique<Membership>(*this, *group, clock_);
    GroupList next = *groups_.load(std::memory_order_relaxed);
    next.push_back(group.get());
    size_t added = 0;
    try {
        for (; added < partitions_.size(); added++)
            partitions_[added]->add_group(group.get(), start);
        publish_groups(std::move(next));
    } catch (...) {
        for (size_t p = 0; p < added; p++) partitions_[p]->remove_group(group.get());
        throw;
    }
    *out = group.release();  // the list's reference
    return MQ_OK;
}

const Group *Topic::find_or_subscribe(std::string_view name, uint64_t id, bool *created) {
    *created = false;
    const Group *g = nullptr;
    {
        std::lock_guard lk(groups_mu_);
        g = find_locked(name);
        if (!g && subscribe_locked(name, MQ_START_LATEST, id, GroupConfig{}, &g) == MQ_OK) {
            *created = true;
        }
        if (g) g->add_ref();  // the caller's
    }
    reclaimer_.collect();
    return g;
}

void Topic::rollback_subscribe(const Group *g) noexcept {
    try {
        {
            std::lock_guard lk(groups_mu_);
            if (find_locked(g->name) != g || g->membership->has_members()) return;
            for (auto &p : partitions_) {
                if (p->owner(g)) return;
            }
            reclaimer_.reserve(2);
            remove_locked(g);
        }
        reclaimer_.collect();
    } catch (...) {
        // Out of memory again: the group stays subscribed, as if the caller had subscribed it.
    }
}

mq_status Topic::unsubscribe(std::string_view name) {
    {
        std::lock_guard lk(groups_mu_);
        const Group *g = find_locked(name);
        if (!g) {
            return fail(MQ_ERR_NO_GROUP, "group %.*s is not subscribed to topic %s",
                        static_cast<int>(name.size()), name.data(), name_.c_str());
        }
        reclaimer_.reserve(2);
        remove_locked(g);
    }
    reclaimer_.collect();
    return MQ_OK;
}

int32_t Topic::route(const mq_record &r, uint64_t &rr) const noexcept {
    const auto parts = static_cast<uint64_t>(partitions_.size());
    if (r.key) return partition_for_key(r.key, r.key_len, static_cast<int32_t>(parts));
    return static_cast<int32_t>(rr++ % parts);
}

mq_status Topic::publish_batch(const mq_record *records, size_t count, Wait wait, mq_cancel *cancel,
                               mq_publish_result *results, size_t *published) {
    wait.start();                   // one deadline for the whole batch
    const CancelHold hold(cancel);  // between the partitions' waits too
    const auto parts = static_cast<size_t>(partition_count());
    if (parts == 1) {
        if (results) {
            for (size_t i = 0; i < count; i++) results[i] = mq_publish_result{0, -1};
        }
        if (count == 0) return MQ_OK;
        return partitions_[0]->publish_many(records, nullptr, count, wait, cancel, results,
                                            published);
    }
    // Order the records by partition (stably) so each partition's lock is taken once. The
    // scratch space is per thread and reused, so steady-state batches do not allocate.
    struct Scratch {
        std::vector<int32_t> part;
        std::vector<uint32_t> order, first, at;
    };
    thread_local Scratch s;
    s.part.resize(count);
    // Keyless records take consecutive round-robin slots, reserved with one atomic add.
    size_t keyless = 0;
    for (size_t i = 0; i < count; i++) keyless += records[i].key == nullptr;
    uint64_t rr = keyless ? round_robin_.fetch_add(keyless, std::memory_order_relaxed) : 0;
    bool same = true;
    for (size_t i = 0; i < count; i++) {
        s.part[i] = route(records[i], rr);
        same = same && s.part[i] == s.part[0];
        if (results) results[i] = mq_publish_result{s.part[i], -1};
    }
    if (count == 0) return MQ_OK;
    if (same) {  // the common case (one key): input order, no sorting
        return partition(s.part[0]).publish_many(records, nullptr, count, wait, cancel, results,
                                                 published);
    }
    // A counting sort by partition.
    s.order.resize(count);
    s.first.assign(parts + 1, 0);
    for (size_t i = 0; i < count; i++) s.first[static_cast<size_t>(s.part[i]) + 1]++;
    for (size_t p = 1; p < s.first.size(); p++) s.first[p] += s.first[p - 1];
    s.at.assign(s.first.begin(), s.first.end() - 1);
    for (size_t i = 0; i < count; i++)
        s.order[s.at[static_cast<size_t>(s.part[i])]++] = static_cast<uint32_t>(i);
    mq_status st = MQ_OK;
    for (size_t p = 0; p < parts && st == MQ_OK; p++) {
        const size_t lo = s.first[p], hi = s.first[p + 1];
        if (lo == hi) continue;
        st = partitions_[p]->publish_many(records, s.order.data() + lo, hi - lo, wait, cancel,
                                          results, published);
    }
    return st;
}

void Topic::route_all(const mq_record *records, size_t count, mq_publish_result *results) noexcept {
    size_t keyless = 0;
    for (size_t i = 0; i < count; i++) keyless += records[i].key == nullptr;
    uint64_t rr = keyless ? round_robin_.fetch_add(keyless, std::memory_order_relaxed) : 0;
    for (size_t i = 0; i < count; i++) results[i] = mq_publish_result{route(records[i], rr), -1};
}

mq_status Topic::publish_rest(const mq_record *records, size_t count, mq_publish_result *results,
                              Wait wait, mq_cancel *cancel) {
    const CancelHold hold(cancel);
    std::vector<uint32_t> idx;
    for (int32_t p = 0; p < partition_count(); p++) {
        idx.clear();
        for (size_t i = 0; i < count; i++) {
            if (results[i].partition == p && results[i].offset < 0)
                idx.push_back(static_cast<uint32_t>(i));
        }
        if (idx.empty()) continue;
        size_t n = 0;
        const mq_status st = partitions_[static_cast<size_t>(p)]->publish_many(
            records, idx.data(), idx.size(), wait, cancel, results, &n);
        if (st != MQ_OK) return st;
    }
    return MQ_OK;
}

mq_status Topic::publish_dead_letter(const mq_record &r, const mq_dead_letter &origin, Wait wait,
                                     mq_cancel *cancel) {
    if (deleted()) {
        return fail(MQ_ERR_NO_TOPIC,
                    "dead-letter topic %s was deleted; the message stays at the head of group %s "
                    "(unsubscribe the group, or subscribe it anew with another dead-letter topic)",
                    name_.c_str(), origin.group);
    }
    // Its origin headers weigh like any others: a copy they push over the budget is too large.
    const auto bytes = static_cast<int64_t>(record_bytes(r));
    if (settings_.max_bytes && bytes > settings_.max_bytes) {
        return fail(MQ_ERR_TOO_LARGE, "dead letter of %lld bytes exceeds topic %s's byte budget",
                    static_cast<long long>(bytes), name_.c_str());
    }
    const int32_t p = route(r);
    int64_t offset;
    return partition(p).publish(r, wait, cancel, &offset, &origin);
}

void Topic::wake_members() {
    std::lock_guard lk(groups_mu_);
    for (const Group *g : *groups_.load(std::memory_order_relaxed)) g->membership->wake_all();
}

std::vector<std::string> Topic::group_names() const {
    std::vector<std::string> names;
    std::lock_guard lk(groups_mu_);
    for (const Group *g : *groups_.load(std::memory_order_relaxed)) names.push_back(g->name);
    return names;
}

}  // namespace mq
