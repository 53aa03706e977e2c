#include "topic.h"

#include <vector>

#include "cancel.h"
#include "error.h"
#include "membership.h"
#include "murmur2.h"
#include "record.h"

namespace mq {

Topic::Topic(std::string name, const mq_topic_config &cfg, const Clock &clock, int64_t spin_ns,
             const std::atomic<bool> &closed)
    : clock_(clock),
      closed_(closed),
      name_(std::move(name)),
      settings_{&name_,
                cfg.capacity,
                cfg.max_bytes,
                cfg.ack_timeout_ms * 1000000,
                cfg.retention == MQ_RETAIN_BOUNDED,
                cfg.max_age_ms * 1000000,
                spin_ns} {
    partitions_.reserve(static_cast<size_t>(cfg.partitions));
    for (int32_t p = 0; p < cfg.partitions; p++) {
        partitions_.push_back(std::make_unique<Partition>(p, settings_, clock, closed));
    }
    publish_groups({});
}

const Group *Topic::find_group(std::string_view name) const noexcept {
    const GroupList *list = groups_.load(std::memory_order_acquire);
    for (const Group *g : *list) {
        if (g->name == name) return g;
    }
    return nullptr;
}

void Topic::publish_groups(GroupList list) {
    group_lists_.reserve(group_lists_.size() + 1);  // so the push_back below cannot throw
    auto owned = std::make_unique<const GroupList>(std::move(list));
    groups_.store(owned.get(), std::memory_order_release);
    group_lists_.push_back(std::move(owned));
}

Topic::~Topic() = default;

mq_status Topic::subscribe(std::string_view name, mq_start start, uint64_t id,
                           const GroupConfig &cfg, const Group **out) {
    std::lock_guard lk(groups_mu_);
    if (find_group(name)) {
        return fail(MQ_ERR_EXISTS, "group %.*s is already subscribed to topic %s",
                    static_cast<int>(name.size()), name.data(), name_.c_str());
    }
    // Everything that can fail is done before the first partition learns of the group.
    all_groups_.reserve(all_groups_.size() + 1);
    auto group = std::make_unique<Group>(std::string(name), id, cfg);
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
    *out = group.get();
    all_groups_.push_back(std::move(group));
    return MQ_OK;
}

const Group *Topic::find_or_subscribe(std::string_view name, uint64_t id, bool *created) {
    *created = false;
    if (const Group *g = find_group(name)) return g;
    const Group *g = nullptr;
    if (subscribe(name, MQ_START_LATEST, id, GroupConfig{}, &g) == MQ_OK) {
        *created = true;
        return g;
    }
    return find_group(name);  // subscribed meanwhile by another thread
}

void Topic::rollback_subscribe(const Group *g) noexcept {
    try {
        std::lock_guard lk(groups_mu_);
        if (find_group(g->name) != g || g->membership->has_members()) return;
        for (auto &p : partitions_) {
            if (p->owner(g)) return;
        }
        GroupList next;
        for (const Group *other : *groups_.load(std::memory_order_relaxed)) {
            if (other != g) next.push_back(other);
        }
        publish_groups(std::move(next));
        for (auto &p : partitions_) p->remove_group(g);
    } catch (...) {
        // Out of memory again: the group stays subscribed, as if the caller had subscribed it.
    }
}

mq_status Topic::unsubscribe(std::string_view name) {
    std::lock_guard lk(groups_mu_);
    const Group *g = find_group(name);
    if (!g) {
        return fail(MQ_ERR_NO_GROUP, "group %.*s is not subscribed to topic %s",
                    static_cast<int>(name.size()), name.data(), name_.c_str());
    }
    GroupList next;
    next.reserve(groups_.load(std::memory_order_relaxed)->size());
    for (const Group *other : *groups_.load(std::memory_order_relaxed)) {
        if (other != g) next.push_back(other);
    }
    publish_groups(std::move(next));                 // new calls no longer find the group...
    for (auto &p : partitions_) p->remove_group(g);  // ...and calls in flight find no cursor
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

mq_status Topic::publish_dead_letter(const mq_record &r, const mq_dead_letter &origin, Wait wait,
                                     mq_cancel *cancel) {
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
    for (const Group *g : *groups_.load(std::memory_order_acquire)) g->membership->wake_all();
}

std::vector<std::string> Topic::group_names() const {
    std::vector<std::string> names;
    for (const Group *g : *groups_.load(std::memory_order_acquire)) names.push_back(g->name);
    return names;
}

}  // namespace mq
