// Consuming a partition: poll (rule 4), leases (rule 7), ack (rule 5), nack (rule 6, delayed
// too), the dead-letter hand-over, and seek. What each does to a cursor is written in cursor.h.
// Model-checked: tests/model/wake.pml (Poller = poll then ack/nack, or with -DACK_POLL poll with
// `ack` (its `owed` = freed); Admin's seek = seek; names mapped in tests/model/README.md).
#include <algorithm>

#include "core/partition.h"
#include "util/thread_scratch.h"

namespace mq {
namespace {

constexpr const char *kClosed = "the broker is closed";

}  // namespace

void Partition::fill(mq_message &m, int64_t offset, uint32_t count) const noexcept {
    log_.view(m, offset);
    m.partition = index_;
    m.delivery_count = count;
    m.lost = 0;
}

mq_status Partition::poll(const Group *g, Caller who, mq_message *out, size_t max, Wait &wait,
                          mq_cancel *cancel, size_t *count, const DeadLetter **due,
                          const int64_t *ack, CopyOut *copy) {
    CancelScope scope(cancel, waiting_.waitable());
    *count = 0;
    // Read before the lock, and coarse: a precise reading costs tens of nanoseconds, a
    // noticeable share of a single-message poll. What poll does with it may come late but
    // never early (a lease runs out, a delayed nack ends, a message ages out), so a reading
    // up to one clock tick behind is enough, and the lease it starts is longer by a tick.
    int64_t now = clock_.coarse();
    Deferred err;  // declared before the lock: formats after it is released
    Lock lk = enter(now);
    // The publishers the ack makes room for: woken once the lock is released, on every way out
    // (an allocation failing in the poll after the ack included), or they sleep next to room.
    struct Owed {
        Wakeup freed;
        Lock &lk;
        Waiting &waiting;
        ~Owed() {
            if (!freed.publishers && !freed.consumers) return;
            if (lk.owns_lock()) lk.unlock();
            waiting.send(freed);
        }
    } owed{Wakeup{}, lk, waiting_};
    Wakeup &freed = owed.freed;
    if (ack) {
        if (waiting_.closed()) return fail_fixed(MQ_CLOSED, kClosed);
        mq_status st;
        Cursor *c = find_owned(g, who, err, &st);
        if (!c) return st;
        if (mq_status r = commit_ack(*c, g, *ack, err); r != MQ_OK) return r;
        freed = trim_and_wake(c->share != nullptr);
    }
    bool again = false, unused = false;
    auto step = [&]() -> Pending {
        if (again) {  // the lock was released meanwhile
            now = clock_.coarse();
            enforce_max_age(now);
        }
        again = true;
        mq_status st;  // found anew each round: the group may have gone or moved meanwhile
        Cursor *c = find_owned(g, who, err, &st);
        if (!c) return Pending::finished(st);
        if (c->end_views()) release_views();  // views of messages dropped from under it
        // A coarse reading may be a tick (4 ms) behind a due time: read the clock precisely
        // while a delayed message may still be pending, so it is handed out when due.
        if (log_.latest_due() > now) [[unlikely]]
            now = clock_.now();
        if (c->share) [[unlikely]]
            return share_poll(*c, g, out, max, now, wait, due, copy, count);
        c->expire_lease(now);
        const bool paused = c->paused(now);
        // Delayed delivery holds the partition at its first message not yet due (mq.h,
        // mq_record.delay_ms): offsets are handed out in order, so per-key order survives.
        const int64_t due_end =
            paused || c->dead_lettering ? c->next : log_.first_not_due(c->next, log_.end(), now);
        if (!paused && !c->dead_lettering && c->next < due_end) {
            if (g->max_deliveries && c->next == c->committed &&
                c->counts.head_count() >= g->max_deliveries) {
                // Copied: the message may be dropped while the dead letter is published.
                // `dead_lettering` keeps the group's other polls away from the head meanwhile.
                DeadLetter &head_copy = thread_scratch<DeadLetter>();  // reused: keeps its capacity
                mq_message head;
                fill(head, c->committed, c->counts.head_count());
                head_copy.capture(head, mq_dead_letter{g->origin_topic, g->origin_group, index_,
                                                       c->counts.head_count(), c->committed});
                *due = &head_copy;
                c->dead_lettering = true;
                wait.start();  // the dead-letter publish waits within this poll's deadline
                return Pending::finished(MQ_OK);
            }
            int64_t to = c->next + std::min<int64_t>(static_cast<int64_t>(max), due_end - c->next);
            c->counts.reserve();
            size_t i = 0;
            if (copy) [[unlikely]] {
                // Copied before they are handed out: only what fits is delivered. The counts
                // are set by hand_out below, in the same critical section.
                const size_t first = copy->count();
                for (int64_t o = c->next; o < to; o++) {
                    mq_message v;
                    fill(v, o, 0);
                    if (!copy->put(v)) {
                        if (o == c->next) copy->too_large_need = CopyOut::alone(v);
                        to = o;
                        break;
                    }
                }
                if (to == c->next) {
                    return Pending::finished(
                        fail_fixed(MQ_ERR_TOO_LARGE, "the buffer cannot hold the next message"));
                }
                const int64_t lost = c->hand_out(
                    to, now + settings_.ack_timeout_ns + clock_.lag(),
                    [&](int64_t, uint32_t n) { copy->set_delivery(first + i++, index_, n); });
                copy->set_lost(first, lost);
                *count = i;
                return Pending::finished(MQ_OK);
            }
            const int64_t lost = c->hand_out(to, now + settings_.ack_timeout_ns + clock_.lag(),
                                             [&](int64_t o, uint32_t n) { fill(out[i++], o, n); });
            out[0].lost = lost;  // the loss is never silent
            *count = i;
            return Pending::finished(MQ_OK);
        }
        // Also wake when the lease runs out or the delayed nack ends: a waiting poll must
        // notice both.
        Pending p;
        if (c->in_flight()) p.change_in_ns = c->lease_deadline - now;
        if (paused) {
            p.change_in_ns = std::min(p.change_in_ns, c->not_before - now);
            p.timeout_text =
                "nothing to hand out within the wait (the group is paused by a "
                "delayed nack)";
        } else if (due_end < log_.end()) {
            p.change_in_ns = std::min(p.change_in_ns, log_.due(due_end) - now);
            p.timeout_text =
                "nothing to hand out within the wait (the next message is delayed: mq_record "
                "delay_ms)";
        }
        return p;
    };
    try {  // one call site, so the wait is inlined here as before
        return waiting_.wait(lk, Waiting::kConsumer, wait, scope, unused, step, &freed);
    } catch (const std::bad_alloc &) {
        if (!ack) throw;  // nothing changed: the boundary says so
        return fail_fixed(MQ_ERR_NO_MEMORY,
                          "out of memory in the poll after the ack: the ack stands, nothing was "
                          "handed out");
    }
}

mq_status Partition::finish_dead_letter(const Group *g, const DeadLetter &due,
                                        mq_status published) {
    Deferred err;
    Lock lk = enter();
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    c->dead_lettering = false;
    const int64_t off = due.origin().offset;
    const bool too_large = published == MQ_ERR_TOO_LARGE;
    int64_t freed = 0;
    if (c->share) {
        share_finish_dead_letter(*c, off, published == MQ_OK || too_large, too_large);
        share_advance(*c);
        freed = trim();
    } else if ((published == MQ_OK || too_large) && c->committed == off) {
        // Treated as acked for this group, so the partition moves on. A message the
        // dead-letter topic can never take is lost instead, and said so like any other loss.
        c->commit(off + 1);
        if (too_large) {
            c->lost++;
            c->lost_unreported++;
        } else {
            c->dead_lettered++;
        }
        freed = trim();
    }
    const Wakeup w{waiting_.announce(),
                   waiting_.publishers_to_wake(freed, settings_.max_bytes != 0)};
    lk.unlock();
    waiting_.send(w);
    return too_large ? MQ_OK : published;
}

mq_status Partition::commit_ack(Cursor &cur, const Group *g, int64_t offset,
                                Deferred &err) noexcept {
    Cursor *c = &cur;
    if (c->share) [[unlikely]] {  // a share group's ack accepts one acquired message
        return share_accept(*c, g, offset, err);
    }
    // Rule 5: only an in-flight offset can be acked; a rejected ack changes nothing.
    if (offset < c->committed || offset >= c->next) {
        if (!c->in_flight()) {
            return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                            "offset %lld is not in flight for %s (nothing is)",
                            static_cast<long long>(offset), g->name.c_str());
        }
        return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "offset %lld is not in flight for %s (in flight: %lld..%lld)",
                        static_cast<long long>(offset), g->name.c_str(),
                        static_cast<long long>(c->committed), static_cast<long long>(c->next - 1));
    }
    c->commit(offset + 1);
    c->end_views();
    return MQ_OK;
}

mq_status Partition::ack(const Group *g, Caller who, int64_t offset) {
    Deferred err;
    Lock lk = enter();
    if (waiting_.closed()) return fail_fixed(MQ_CLOSED, kClosed);
    mq_status st;
    Cursor *c = find_owned(g, who, err, &st);
    if (!c) return st;
    if (mq_status r = commit_ack(*c, g, offset, err); r != MQ_OK) return r;
    // A share group's ack frees an acquisition slot and a key: waiting polls look again.
    const Wakeup w = trim_and_wake(c->share != nullptr);
    lk.unlock();
    waiting_.send(w);
    return MQ_OK;
}

mq_status Partition::nack(const Group *g, Caller who, int64_t delay_ns, int64_t unhandled_from) {
    const int64_t now = delay_ns > 0 || settings_.max_age_ns ? clock_.now() : 0;
    Deferred err;
    Lock lk = enter(now);
    if (waiting_.closed()) return fail_fixed(MQ_CLOSED, kClosed);
    mq_status st;
    Cursor *c = find_owned(g, who, err, &st);
    if (!c) return st;
    const int64_t until = delay_ns > 0 ? now + delay_ns : 0;
    if (c->share) {  // a share group's nack releases every message it has acquired
        c->share->expire(clock_.now());  // those whose lock ran out are available already
        if (!c->share->set_all_acquired(ShareState::kAvailable, until)) return MQ_OK;
    } else if (!(unhandled_from >= 0 ? c->give_back(unhandled_from, until) : c->rewind(until))) {
        return MQ_OK;
    }
    const bool wake = waiting_.announce();
    lk.unlock();
    waiting_.send({wake, 0});
    return MQ_OK;
}

mq_status Partition::extend_lease(const Group *g, Caller who) {
    const int64_t now = clock_.now();
    Deferred err;
    Lock lk = enter(now);
    if (waiting_.closed()) return fail_fixed(MQ_CLOSED, kClosed);
    mq_status st;
    Cursor *c = find_owned(g, who, err, &st);
    if (!c) return st;
    if (c->share) {  // renews the lock of every message the group has acquired here
        c->share->expire(now);
        if (c->share->set_all_acquired(ShareState::kAcquired, now + settings_.ack_timeout_ns))
            return MQ_OK;
        return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "share group %s has nothing acquired on partition %d of topic %s; "
                        "nothing to extend",
                        g->name.c_str(), index_, settings_.topic->c_str());
    }
    // A lease that already ran out but whose messages no poll has taken back is restarted too.
    if (!c->in_flight()) {
        return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "nothing is in flight for group %s on partition %d of topic %s; nothing "
                        "to extend",
                        g->name.c_str(), index_, settings_.topic->c_str());
    }
    c->lease_deadline = now + settings_.ack_timeout_ns;
    return MQ_OK;
}

mq_status Partition::seek(const Group *g, int64_t offset) {
    Deferred err;
    Lock lk = enter();
    if (waiting_.closed()) return fail_fixed(MQ_CLOSED, kClosed);
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    const int64_t start = log_.start(), end = log_.end();
    if (offset == MQ_OFFSET_END) offset = end;
    if (offset == MQ_OFFSET_EARLIEST) offset = start;
    if (offset < start || offset > end) {
        if (start == end) {
            return err.fail(MQ_ERR_OUT_OF_RANGE,
                            "offset %lld is outside partition %d of topic %s: the partition is "
                            "empty; the only offset to seek to is %lld",
                            static_cast<long long>(offset), index_, settings_.topic->c_str(),
                            static_cast<long long>(end));
        }
        return err.fail(MQ_ERR_OUT_OF_RANGE,
                        "offset %lld is outside partition %d of topic %s: retained %lld..%lld "
                        "(seek to %lld for the end)",
                        static_cast<long long>(offset), index_, settings_.topic->c_str(),
                        static_cast<long long>(start), static_cast<long long>(end - 1),
                        static_cast<long long>(end));
    }
    c->seek(offset);
    if (c->share) c->share->reset(offset);
    const Wakeup w = trim_and_wake(true);
    lk.unlock();
    waiting_.send(w);
    return MQ_OK;
}

int64_t Partition::next_change(const Group *g) {
    Lock lk(waiting_.mutex());
    Cursor *c = find(g);
    if (!c) return INT64_MAX;
    int64_t at = c->share ? share_next_change(*c) : c->next_change();
    // A delayed message at the group's next offset changes what a poll finds when it is due.
    if (c->next < log_.end()) {
        const int64_t due = log_.due(c->next);
        if (due != INT64_MIN) at = std::min(at, due);
    }
    return at;
}

void Partition::watch(Notifier *n) {
    Lock lk(waiting_.mutex());
    waitable().watchers.push_back(n);
}

void Partition::unwatch(Notifier *n) {
    Lock lk(waiting_.mutex());
    auto &w = waitable().watchers;
    if (auto it = std::find(w.begin(), w.end(), n); it != w.end()) w.erase(it);
}

}  // namespace mq
