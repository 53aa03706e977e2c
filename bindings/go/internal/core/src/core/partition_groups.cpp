// A partition's groups: joining, leaving, ownership by push subscriptions and members,
// introspection.
// Model-checked: tests/model/wake.pml (Admin's unsubscribe = remove_group; see
// tests/model/README.md).
#include <algorithm>
#include <cstdio>

#include "core/partition.h"

namespace mq {

void Partition::add_group(const Group *g, mq_start start) {
    Lock lk = enter();
    cursors_.emplace_back(g, start == MQ_START_EARLIEST ? log_.start() : log_.end());
}

void Partition::remove_group(const Group *g) {
    Lock lk = enter();
    auto it = std::find_if(cursors_.begin(), cursors_.end(),
                           [g](const Cursor &c) { return c.group == g; });
    if (it == cursors_.end()) return;
    cursors_.erase(it);
    // Rule 12: what only this group held back goes now, and its publishers wake; its pollers
    // learn it is gone.
    Wakeup w = trim_and_wake(true);
    // Without cursors every publisher has room (rule 8), however few messages the trim freed.
    if (cursors_.empty()) w.publishers = INT64_MAX;
    lk.unlock();
    waiting_.send(w);
}

void Partition::mark_deleted() {
    {
        Lock lk(waiting_.mutex());
        waiting_.mark_deleted();
    }
    waiting_.waitable().wake_all();
}

bool Partition::owned_by_other(const Group *g, uint64_t owner) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    return c && c->owner != 0 && c->owner != owner;
}

uint64_t Partition::owner(const Group *g) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    return c ? c->owner : 0;
}

void Partition::prepare_reassign(const Group *g) {
    Lock lk(waiting_.mutex());
    if (Cursor *c = find(g)) c->fenced_floors.reserve(c->fenced_floors.size() + 1);
}

bool Partition::reassign(const Group *g, uint64_t owner, int64_t generation) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    if (!c || c->owner == owner) return false;
    // The old owner may hold views of what it has in flight, and of messages dropped from under
    // the group (below committed): its floor is the group's view floor.
    const bool held = c->owner != 0 && (c->in_flight() || c->view_floor < c->committed);
    if (held) c->fenced_floors.emplace_back(c->owner, c->view_floor);
    c->owner = owner;
    c->owner_generation = generation;
    c->rewind(0);
    const bool wake = waiting_.announce();
    lk.unlock();
    waiting_.send({wake, 0});
    return held;
}

void Partition::rewind_owned(const Group *g, uint64_t owner) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    if (!c || c->owner != owner || !c->rewind(0)) return;
    const bool wake = waiting_.announce();
    lk.unlock();
    waiting_.send({wake, 0});
}

void Partition::release_fenced(const Group *g, uint64_t owner) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    if (!c) return;
    std::erase_if(c->fenced_floors, [owner](const auto &e) { return e.first == owner; });
    release_views();
}

void Partition::set_owner(const Group *g, uint64_t owner) {
    Lock lk(waiting_.mutex());
    if (Cursor *c = find(g)) c->owner = owner;
}

void Partition::release_owner(const Group *g, uint64_t owner) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    if (c && c->owner == owner) c->owner = 0;
}

void Partition::info(mq_partition_info &out) {
    const int64_t now = clock_.now();
    Lock lk = enter(now);
    out.start = log_.start();
    out.end = log_.end();
    out.backlog = log_.size();
    out.capacity = settings_.capacity;
    out.retained_bytes = log_.bytes();
    out.max_bytes = settings_.max_bytes;
    out.producer_waits = waiting_.producer_waits();
    out.max_backlog = log_.max_size();
    out.dropped = dropped_;
    out.oldest_timestamp_ns = log_.empty() ? -1 : log_.timestamp(log_.start());
    out.oldest_age_ns = log_.empty() ? -1 : now - log_.timestamp(log_.start());
}

mq_status Partition::group_info(const Group *g, mq_group_info &out) {
    const int64_t now = clock_.now();
    Deferred err;
    Lock lk = enter(now);
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    out.committed = c->committed;
    out.next = c->next;
    out.lag = log_.end() - c->committed;
    out.in_flight = c->next - c->committed;
    out.lost = c->lost;
    out.dead_lettered = c->dead_lettered;
    out.next_age_ns = c->next < log_.end() ? now - log_.timestamp(c->next) : -1;
    out.paused_until_ns = c->paused(now) ? c->not_before : 0;
    out.oldest_unsettled_age_ns = -1;
    if (c->share) share_info(*c, now, out);
    return MQ_OK;
}

void Partition::describe(std::string &out) {
    struct Row {
        const std::string *group;  // lives as long as the topic
        int64_t committed, next;
    };
    thread_local std::vector<Row> rows;  // reused: describing does not allocate once warm
    int64_t start, end;
    {
        Lock lk = enter();
        start = log_.start();
        end = log_.end();
        rows.clear();
        for (const Cursor &c : cursors_) rows.push_back({&c.group->name, c.committed, c.next});
    }
    // Formatted after the lock is released, like every message.
    char buf[128];
    if (end > start) {
        std::snprintf(buf, sizeof buf, "log %lld..%lld, backlog %lld/%lld",
                      static_cast<long long>(start), static_cast<long long>(end - 1),
                      static_cast<long long>(end - start),
                      static_cast<long long>(settings_.capacity));
    } else {
        std::snprintf(buf, sizeof buf, "log empty, next offset %lld, backlog 0/%lld",
                      static_cast<long long>(end), static_cast<long long>(settings_.capacity));
    }
    out = buf;
    for (const Row &r : rows) {
        std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(r.committed),
                      static_cast<long long>(r.next));
        out += "; ";
        out += *r.group;
        out += buf;
    }
}

}  // namespace mq
