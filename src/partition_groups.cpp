// A partition's groups: joining, leaving, ownership by push subscriptions, introspection.
#include <algorithm>
#include <cstdio>

#include "error.h"
#include "partition.h"

namespace mq {

void Partition::add_group(const Group *g, mq_start start) {
    std::lock_guard lk(w_.mu);
    if (settings_.max_age_ns) expire(clock_.now());
    cursors_.emplace_back(g, start == MQ_START_EARLIEST ? start_ : end_);
}

void Partition::remove_group(const Group *g) {
    std::lock_guard lk(w_.mu);
    auto it = std::find_if(cursors_.begin(), cursors_.end(),
                           [g](const Cursor &c) { return c.group == g; });
    if (it == cursors_.end()) return;
    cursors_.erase(it);
    trim();            // Rule 12: what only this group held back goes now, and its publishers wake
    wake_consumers();  // its pollers learn it is gone
}

bool Partition::owned_by_other(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    return c && c->owner != 0 && c->owner != owner;
}

uint64_t Partition::owner(const Group *g) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    return c ? c->owner : 0;
}

void Partition::prepare_reassign(const Group *g) {
    std::lock_guard lk(w_.mu);
    if (Cursor *c = find(g)) c->fenced_floors.reserve(c->fenced_floors.size() + 1);
}

bool Partition::reassign(const Group *g, uint64_t owner, int64_t generation) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (!c || c->owner == owner) return false;
    const bool held =
        c->owner != 0 && (c->next > c->committed || c->view_floor < c->committed);
    // The old owner may still hold views of messages dropped from under the group, below
    // committed: its floor is the group's view floor.
    if (held) c->fenced_floors.emplace_back(c->owner, c->view_floor);
    c->owner = owner;
    c->owner_generation = generation;
    c->next = c->committed;
    wake_consumers();
    return held;
}

void Partition::rewind_owned(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (!c || c->owner != owner || c->next == c->committed) return;
    c->next = c->committed;
    wake_consumers();
}

void Partition::release_fenced(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (!c) return;
    auto &f = c->fenced_floors;
    f.erase(std::remove_if(f.begin(), f.end(), [owner](const auto &e) { return e.first == owner; }),
            f.end());
    release_bytes();
}

void Partition::set_owner(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    if (Cursor *c = find(g)) c->owner = owner;
}

void Partition::release_owner(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (c && c->owner == owner) c->owner = 0;
}

void Partition::info(mq_partition_info &out) {
    std::lock_guard lk(w_.mu);
    const int64_t now = clock_.now();
    if (settings_.max_age_ns && !closed_.load(std::memory_order_acquire)) expire(now);
    out.start = start_;
    out.end = end_;
    out.backlog = end_ - start_;
    out.capacity = settings_.capacity;
    out.retained_bytes = bytes_;
    out.max_bytes = settings_.max_bytes;
    out.producer_waits = producer_waits_;
    out.max_backlog = max_backlog_;
    out.dropped = dropped_;
    out.oldest_timestamp_ns = start_ < end_ ? slot(start_).timestamp_ns : -1;
    out.oldest_age_ns = start_ < end_ ? now - slot(start_).timestamp_ns : -1;
}

mq_status Partition::group_info(const Group *g, mq_group_info &out) {
    Deferred err;
    std::lock_guard lk(w_.mu);
    const int64_t now = clock_.now();
    if (settings_.max_age_ns && !closed_.load(std::memory_order_acquire)) expire(now);
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    out.committed = c->committed;
    out.next = c->next;
    out.lag = end_ - c->committed;
    out.in_flight = c->next - c->committed;
    out.lost = c->lost;
    out.dead_lettered = c->dead_lettered;
    out.next_age_ns = c->next < end_ ? now - slot(c->next).timestamp_ns : -1;
    out.paused_until_ns = c->not_before > now ? c->not_before : 0;
    return MQ_OK;
}

void Partition::describe(std::string &out) {
    std::lock_guard lk(w_.mu);
    char buf[128];
    if (end_ > start_) {
        std::snprintf(buf, sizeof buf, "log %lld..%lld, backlog %lld/%lld",
                      static_cast<long long>(start_), static_cast<long long>(end_ - 1),
                      static_cast<long long>(end_ - start_),
                      static_cast<long long>(settings_.capacity));
    } else {
        std::snprintf(buf, sizeof buf, "log empty, next offset %lld, backlog 0/%lld",
                      static_cast<long long>(end_), static_cast<long long>(settings_.capacity));
    }
    out = buf;
    for (const Cursor &c : cursors_) {
        std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(c.committed),
                      static_cast<long long>(c.next));
        out += "; ";
        out += c.group->name;
        out += buf;
    }
}

}  // namespace mq
