// Consuming a partition: poll, leases, ack, nack (immediate and delayed), dead letters, seek.
#include <algorithm>
#include <string>

#include "cancel.h"
#include "dead_letter.h"
#include "error.h"
#include "partition.h"
#include "stored_message.h"
#include "topic.h"

namespace mq {

void Partition::fill(mq_message &m, int64_t offset, uint32_t count) const noexcept {
    const Slot &s = slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
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
    m.partition = index_;
    m.delivery_count = count;
    m.offset = offset;
    m.key = (s.key_len & kNoKey) ? nullptr : key;
    m.key_len = key_len;
    m.payload = key + key_len;
    m.payload_len = s.payload_len & kLenMask;
    m.timestamp_ns = s.timestamp_ns;
    m.lost = 0;
}

mq_status Partition::poll(const Group *g, Caller who, mq_message *out, size_t max, Wait wait,
                          mq_cancel *cancel, size_t *count) {
    CancelScope scope(cancel, w_);
    // Read before the lock, and coarse: a precise reading costs tens of nanoseconds, a
    // noticeable share of a single-message poll. What poll does with it may come late but
    // never early (a lease runs out, a delayed nack ends, a message ages out), so a reading
    // up to one clock tick behind is enough, and the lease it starts is longer by a tick.
    int64_t now = clock_.coarse();
    Deferred err;  // before the lock: formats after it is released
    std::unique_lock lk(w_.mu);
    bool spun = false;
    for (bool first = true;; first = false) {
        if (closed_.load(std::memory_order_acquire)) return closed_status();
        if (!first) now = clock_.coarse();  // the lock was released meanwhile
        if (settings_.max_age_ns) expire(now);
        mq_status st;  // found anew after every wait: the group may have gone or moved meanwhile
        Cursor *c = find_owned(g, who, err, &st);
        if (!c) return st;
        if (c->view_floor < c->committed) {  // a new poll releases views of dropped messages
            c->view_floor = c->committed;
            release_bytes();
        }
        // Rule 7: a lease that ran out rewinds the group so its in-flight messages come again.
        if (c->next > c->committed && now >= c->lease_deadline) c->next = c->committed;
        const bool paused = c->not_before > now;  // a delayed nack holds the group
        if (!paused && !c->dead_lettering && c->next < end_) {
            if (g->max_deliveries && c->next == c->committed &&
                c->counts.head_count() >= g->max_deliveries) {
                if (mq_status dl = dead_letter_head(lk, err, c, wait, cancel); dl != MQ_OK)
                    return dl;
                continue;  // the cursor moved on; look again
            }
            const int64_t from = c->next;
            const int64_t to = from + std::min<int64_t>(static_cast<int64_t>(max), end_ - from);
            c->counts.reserve();
            // A view handed out holds the floor, whatever brought the group here (a first
            // delivery, a redelivery, or a replay after a seek back below the old floor).
            c->view_floor = std::min(c->view_floor, from);
            size_t i = 0;
            c->counts.deliver(from, to, [&](int64_t o, uint32_t n) { fill(out[i++], o, n); });
            out[0].lost = c->lost_unreported;  // the loss is never silent
            c->lost_unreported = 0;
            c->next = to;
            c->not_before = 0;
            c->lease_deadline = now + settings_.ack_timeout_ns + clock_.lag();
            *count = i;
            return MQ_OK;
        }
        if (wait.over()) {
            return fail_fixed(MQ_TIMEOUT, paused ? "nothing to hand out within the wait (the "
                                                   "group is paused by a delayed nack)"
                                                 : "nothing to hand out within the wait");
        }
        if (scope.triggered())
            return fail_fixed(MQ_CANCELLED, "poll cancelled by its mq_cancel token");
        if (!spun && settings_.spin_ns > 0) {  // the wait strategy: spin once, then block
            spun = true;
            spin_for_change(lk, wait);
            continue;
        }
        // Also wake when the lease runs out or the delayed nack ends: an already-waiting poll
        // must notice both.
        bool timed = wait.kind == Wait::kUntil;
        auto wake = wait.at;
        auto consider = [&](int64_t clock_ns) {
            auto t = real_time_of(clock_ns, now);
            if (!timed || t < wake) wake = t;
            timed = true;
        };
        if (c->next > c->committed) consider(c->lease_deadline);
        if (paused) consider(c->not_before);
        pollers_waiting_++;
        if (timed) {
            w_.not_empty.wait_until(lk, wake);
        } else {
            w_.not_empty.wait(lk);
        }
        pollers_waiting_--;
    }
}

// Moves the message at the group's head to its dead-letter topic and acks it for the group.
// The dead-letter publish runs without this partition's lock (it may wait for room, and the
// dead-letter topic's partitions have locks of their own); meanwhile `dead_lettering` keeps the
// group's other polls of this partition away from the head.
mq_status Partition::dead_letter_head(std::unique_lock<Mutex> &lk, Deferred &err, Cursor *c,
                                      Wait &wait, mq_cancel *cancel) {
    const Group *g = c->group;
    const int64_t off = c->committed;
    // Copied: the message may be dropped while the lock is released.
    thread_local DeadLetter copy;
    mq_message head;
    fill(head, off, c->counts.head_count());
    copy.capture(head, mq_dead_letter{settings_.topic->c_str(), g->name.c_str(), index_,
                                      c->counts.head_count(), off});
    c->dead_lettering = true;
    // The poll's wait is one deadline: the dead-letter publish waits within it, not anew.
    wait.start();
    lk.unlock();
    mq_status st;
    try {
        st = g->dead_letter->publish_dead_letter(copy.record(), copy.origin(), wait, cancel);
    } catch (...) {
        lk.lock();
        if (Cursor *again = find(g)) again->dead_lettering = false;
        wake_consumers();
        throw;
    }
    lk.lock();
    Cursor *again = find(g);
    if (!again) return no_group(err, g);
    again->dead_lettering = false;
    wake_consumers();
    const bool too_large = st == MQ_ERR_TOO_LARGE;
    if ((st == MQ_OK || too_large) && again->committed == off) {
        // Treated as acked for this group, so the partition moves on. A message the dead-letter
        // topic can never take is lost instead, and said so like any other loss.
        again->committed = off + 1;
        again->next = std::max(again->next, again->committed);
        again->counts.ack(again->committed);
        again->view_floor = std::min(again->view_floor, off);
        if (too_large) {
            again->lost++;
            again->lost_unreported++;
        } else {
            again->dead_lettered++;
        }
        trim();
    }
    if (st == MQ_OK || too_large) return MQ_OK;
    if (st == MQ_FULL) {
        return err.fail(MQ_TIMEOUT,
                    "dead-letter topic %s stayed full; offset %lld of partition %d waits at the "
                    "head of group %s",
                    g->dead_letter->name().c_str(), static_cast<long long>(off), index_,
                    g->name.c_str());
    }
    return st;
}

mq_status Partition::ack(const Group *g, Caller who, int64_t offset) {
    int64_t wake = 0;
    Deferred err;
    const mq_status st = [&] {
        std::lock_guard lk(w_.mu);
        if (closed_.load(std::memory_order_acquire)) return closed_status();
        if (settings_.max_age_ns) expire(clock_.now());
        mq_status found;
        Cursor *c = find_owned(g, who, err, &found);
        if (!c) return found;
        // Rule 5: only an in-flight offset can be acked; a rejected ack changes nothing.
        if (offset < c->committed || offset >= c->next) {
            if (c->next == c->committed) {
                return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                            "offset %lld is not in flight for %s (nothing is)",
                            static_cast<long long>(offset), g->name.c_str());
            }
            return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "offset %lld is not in flight for %s (in flight: %lld..%lld)",
                        static_cast<long long>(offset), g->name.c_str(),
                        static_cast<long long>(c->committed), static_cast<long long>(c->next - 1));
        }
        c->committed = offset + 1;
        c->view_floor = c->committed;
        c->counts.ack(c->committed);
        wake = publishers_to_wake(trim_quiet());
        return MQ_OK;
    }();
    send({false, wake});
    return st;
}

mq_status Partition::nack(const Group *g, Caller who, int64_t delay_ns) {
    Deferred err;
    std::lock_guard lk(w_.mu);
    if (closed_.load(std::memory_order_acquire)) return closed_status();
    mq_status st;
    Cursor *c = find_owned(g, who, err, &st);
    if (!c) return st;
    if (c->next != c->committed) {
        c->next = c->committed;
        if (delay_ns > 0) c->not_before = clock_.now() + delay_ns;
        wake_consumers();
    }
    return MQ_OK;
}

mq_status Partition::extend_lease(const Group *g, Caller who) {
    Deferred err;
    std::lock_guard lk(w_.mu);
    if (closed_.load(std::memory_order_acquire)) return closed_status();
    mq_status st;
    Cursor *c = find_owned(g, who, err, &st);
    if (!c) return st;
    if (c->next == c->committed) {
        return err.fail(
            MQ_ERR_NOT_IN_FLIGHT,
            "nothing is in flight for group %s on partition %d of topic %s; nothing to extend",
            g->name.c_str(), index_, settings_.topic->c_str());
    }
    c->lease_deadline = clock_.now() + settings_.ack_timeout_ns;
    return MQ_OK;
}

mq_status Partition::seek(const Group *g, int64_t offset) {
    Deferred err;
    std::lock_guard lk(w_.mu);
    if (closed_.load(std::memory_order_acquire)) return closed_status();
    if (settings_.max_age_ns) expire(clock_.now());
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    if (offset == MQ_OFFSET_END) offset = end_;
    if (offset == MQ_OFFSET_EARLIEST) offset = start_;
    if (offset < start_ || offset > end_) {
        if (start_ == end_) {
            return err.fail(MQ_ERR_OUT_OF_RANGE,
                            "offset %lld is outside partition %d of topic %s: the partition is "
                            "empty; the only offset to seek to is %lld",
                            static_cast<long long>(offset), index_, settings_.topic->c_str(),
                            static_cast<long long>(end_));
        }
        return err.fail(MQ_ERR_OUT_OF_RANGE,
                        "offset %lld is outside partition %d of topic %s: retained %lld..%lld "
                        "(seek to %lld for the end)",
                        static_cast<long long>(offset), index_, settings_.topic->c_str(),
                        static_cast<long long>(start_), static_cast<long long>(end_ - 1),
                        static_cast<long long>(end_));
    }
    // Views the group holds of messages dropped from under it end here, and so do those the
    // seek moves past; those it moves back over are in the log, above the new floor.
    c->view_floor = offset;
    c->committed = c->next = offset;
    c->not_before = 0;
    c->counts.reset(offset);
    trim();
    wake_consumers();
    return MQ_OK;
}

int64_t Partition::next_change(const Group *g) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    int64_t at = INT64_MAX;
    if (!c) return at;
    if (c->next > c->committed) at = c->lease_deadline;
    if (c->not_before) at = std::min(at, c->not_before);
    return at;
}

void Partition::watch(Notifier *n) {
    std::lock_guard lk(w_.mu);
    w_.watchers.push_back(n);
}

void Partition::unwatch(Notifier *n) {
    std::lock_guard lk(w_.mu);
    auto it = std::find(w_.watchers.begin(), w_.watchers.end(), n);
    if (it != w_.watchers.end()) w_.watchers.erase(it);
}

}  // namespace mq
