// Share groups on a partition (SPEC rule 16): acquisition by polls, per-message settlement
// (accept, release, reject, renew), lock expiry, key-shared order, and the frontier that holds
// trimming. What each state means is in share_state.h; the ordered groups' rules stay in
// partition_consume.cpp, which hands a share group's poll, ack, nack and lease calls here.
#include <algorithm>
#include <vector>

#include "core/partition.h"
#include "util/murmur2.h"
#include "util/thread_scratch.h"

namespace mq {
namespace {

// Key hashes held by unsettled messages earlier in the partition (key-shared groups): an
// open-addressing set stamped with a generation, so starting a poll's set costs nothing and a
// thread's table is reused (a poll allocates nothing once warm). begin(n) sizes it for n adds.
struct Blocked {
    std::vector<uint64_t> slots;  // generation << 32 | key
    uint64_t gen = 0;
    size_t mask = 0, used = 0;
    void begin(size_t n) {  // may throw bad_alloc: call before changing anything
        size_t cap = 16;
        while (cap < 2 * n) cap *= 2;
        if (slots.size() < cap) {
            slots.assign(cap, 0);
            gen = 0;
        }
        if (++gen == (uint64_t{1} << 32)) {
            std::fill(slots.begin(), slots.end(), 0);
            gen = 1;
        }
        mask = slots.size() - 1;
        used = 0;
    }
    // The slot of k, or the empty one where it would go.
    uint64_t *find(uint32_t k) noexcept {
        for (size_t i = k & mask;; i = (i + 1) & mask) {
            if (slots[i] >> 32 != gen || static_cast<uint32_t>(slots[i]) == k) return &slots[i];
        }
    }
    bool has(uint32_t k) noexcept { return *find(k) >> 32 == gen; }
    // Beyond what begin() was sized for (delayed messages past the look-ahead), the table
    // doubles: bad_alloc then, with the poll's entries still consistent.
    void add(uint32_t k) {
        uint64_t *slot = find(k);
        if (*slot >> 32 == gen) return;
        *slot = gen << 32 | k;
        if (++used * 2 > slots.size()) grow();
    }
    void grow() {
        std::vector<uint64_t> old(slots.size() * 2, 0);
        old.swap(slots);
        mask = slots.size() - 1;
        for (uint64_t e : old) {
            if (e >> 32 == gen) *find(static_cast<uint32_t>(e)) = e;
        }
    }
};

constexpr const char *kActionNames[] = {"accept", "release", "reject", "renew"};

}  // namespace

bool Partition::share_key(int64_t offset, uint32_t *key) const noexcept {
    mq_message m;
    log_.view(m, offset);
    if (!m.key) return false;
    *key = static_cast<uint32_t>(murmur2(m.key, m.key_len));
    return true;
}

bool Partition::share_dead_letter(Cursor &c, const Group *g, Wait &wait, const DeadLetter **due) {
    ShareState &s = *c.share;
    if (s.doomed() == 0) return false;
    bool found = false;
    s.for_each([&](int64_t o, ShareState::Entry &e) {
        if (found || e.state != ShareState::kDoomed) return;
        found = true;
        DeadLetter &copy = thread_scratch<DeadLetter>();  // reused: keeps its capacity
        mq_message m;
        fill(m, o, e.count);
        copy.capture(m, mq_dead_letter{g->origin_topic, g->origin_group, index_, e.count, o});
        s.set(e, ShareState::kDeadLettering);
        *due = &copy;
    });
    if (found) wait.start();  // the dead-letter publish waits within this poll's deadline
    return found;
}

Pending Partition::share_poll(Cursor &c, const Group *g, mq_message *out, size_t max, int64_t now,
                              Wait &wait, const DeadLetter **due, CopyOut *copy, size_t *count) {
    ShareState &s = *c.share;
    s.expire(now);
    if (s.doomed() && share_dead_letter(c, g, wait, due)) return Pending::finished(MQ_OK);
    const size_t limit =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(max), s.room()));
    const int64_t lock_until = now + settings_.ack_timeout_ns + clock_.lag();
    const size_t first = copy ? copy->count() : 0;
    size_t taken = 0;
    bool full = false;  // the copying poll's buffer took what it could
    int64_t wake_at = INT64_MAX;
    // Hands `o` out under a new lock; false (nothing changed) when a copying poll's buffer is
    // full.
    auto take = [&](int64_t o, ShareState::Entry &e) {
        if (copy) [[unlikely]] {
            mq_message v;
            fill(v, o, 0);
            if (!copy->put(v)) {
                if (taken == 0) copy->too_large_need = CopyOut::alone(v);
                full = true;
                return false;
            }
            copy->set_delivery(first + taken, index_, e.count + 1);
        } else {
            fill(out[taken], o, e.count + 1);
        }
        e.count++;
        s.set(e, ShareState::kAcquired, lock_until);
        c.view_floor = std::min(c.view_floor, o);
        taken++;
        return true;
    };
    const bool by_key = s.key_shared();
    const int64_t lookahead = by_key ? 4 * static_cast<int64_t>(s.max_acquired()) : INT64_MAX;
    // A thread-local lookup costs a call: only key-shared groups pay it (and only they use it).
    Blocked *const keys = by_key ? &thread_scratch<Blocked>() : nullptr;
    if (by_key) {  // every add is an entry of the window or a message the lookahead may reach
        keys->begin(
            static_cast<size_t>(s.end() - s.base() + std::min(lookahead, log_.end() - c.next) + 1));
    }
    // Released and expired messages first, in offset order; in a key-shared group every
    // unsettled message blocks later ones with its key.
    if (limit > 0 && (by_key || (s.available() > 0 && now >= s.min_available()))) {
        bool whole = true;             // the scan saw every available entry
        int64_t ready_at = INT64_MAX;  // the earliest time one left available can be taken
        s.for_each([&](int64_t o, ShareState::Entry &e) {
            if (full || (!by_key && taken == limit)) {
                whole = false;
                return;
            }
            if (e.state == ShareState::kDone) return;
            const bool is_blocked = by_key && e.keyed && keys->has(e.key);
            if (by_key && e.keyed) keys->add(e.key);
            if (e.state != ShareState::kAvailable) return;
            if (e.deadline > now) {
                wake_at = std::min(wake_at, e.deadline);
                ready_at = std::min(ready_at, e.deadline);
                return;
            }
            if (is_blocked || taken == limit) {
                ready_at = std::min(ready_at, e.deadline);
                return;
            }
            if (g->max_deliveries && e.count >= g->max_deliveries) {
                s.set(e, ShareState::kDoomed);  // the next round dead-letters it
                return;
            }
            if (!take(o, e)) ready_at = std::min(ready_at, e.deadline);
        });
        if (whole) s.set_min_available(ready_at);
    } else if (s.available() > 0) {
        wake_at = std::min(wake_at, s.min_available());
    }
    // Then messages no poll has seen: each becomes an entry; one not yet due (mq_record
    // delay_ms) is skipped and handed out when due. A key-shared group looks at most
    // 4 * max_acquired messages past the frontier for keys that are free.
    try {
        while (limit > 0 && !full && taken < limit && c.next < log_.end()) {
            const int64_t o = c.next;
            uint32_t key = 0;
            const bool keyed = by_key && share_key(o, &key);
            const bool held = keyed && keys->has(key);
            if (held && o - s.base() >= lookahead) break;
            const int64_t due_at = log_.due(o);
            ShareState::Entry &e = s.push(due_at > now ? due_at : 0, keyed, key);
            c.next = s.end();
            if (keyed) keys->add(key);
            if (due_at > now) {
                wake_at = std::min(wake_at, due_at);
                continue;
            }
            if (!held) take(o, e);
        }
    } catch (const std::bad_alloc &) {
        if (taken == 0) throw;  // nothing was handed out: the boundary reports it
    }
    if (taken > 0) {
        const int64_t lost = c.lost_unreported;
        c.lost_unreported = 0;
        if (copy) {
            copy->set_lost(first, lost);
        } else {
            out[0].lost = lost;  // the loss is never silent
        }
        *count = taken;
        return Pending::finished(MQ_OK);
    }
    if (full) {
        return Pending::finished(
            fail_fixed(MQ_ERR_TOO_LARGE, "the buffer cannot hold the next message"));
    }
    if (share_dead_letter(c, g, wait, due)) return Pending::finished(MQ_OK);
    Pending p;
    wake_at = std::min(wake_at, s.next_lock_expiry());
    if (wake_at != INT64_MAX) p.change_in_ns = wake_at - now;
    if (limit == 0) {
        p.timeout_text =
            "nothing to hand out within the wait (max_acquired messages of the share group are "
            "acquired; settle some)";
    }
    return p;
}

mq_status Partition::share_settle(const Group *g, int64_t offset, uint32_t delivery_count,
                                  int32_t action, int64_t delay_ns, const DeadLetter **due) {
    // Coarse, as a poll's is: the locks a poll starts include the clock's lag, so a reading up
    // to one tick behind never ends a lock early, and a renewal or a delayed release adds the
    // lag too, so neither ends early either.
    const int64_t now = clock_.coarse();
    Deferred err;
    Lock lk = enter(now);
    if (waiting_.closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
    Cursor *c = find(g);
    if (!c) return no_group(err, g);
    if (!c->share) {
        return err.fail(MQ_ERR_INVALID,
                        "group %s is not a share group (mq_group_options.share): ack it with "
                        "mq_group_ack",
                        g->name.c_str());
    }
    ShareState &s = *c->share;
    s.expire(now);  // a lock that ran out is no longer the caller's to settle
    ShareState::Entry *e = s.at(offset);
    const char *why = nullptr;
    if (!e || e->state == ShareState::kDone) {
        why = offset < s.base() || (e && e->state == ShareState::kDone) ? "it is settled"
              : offset >= log_.end()                                    ? "it is not published"
                                                                        : "it was never handed out";
    } else if (e->state == ShareState::kAvailable) {
        why = "it is not acquired (its lock ran out, or it was released)";
    } else if (e->state != ShareState::kAcquired) {
        why = "it was rejected and goes to the dead-letter topic";
    } else if (e->count != delivery_count) {
        why = "another poll acquired it since (its delivery count is higher)";
    }
    if (why) {
        return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "cannot %s offset %lld of partition %d for share group %s with delivery "
                        "count %u: %s",
                        kActionNames[action], static_cast<long long>(offset), index_,
                        g->name.c_str(), delivery_count, why);
    }
    Wakeup w{};
    switch (action) {
        case MQ_SETTLE_ACCEPT:
            s.set(*e, ShareState::kDone);
            share_advance(*c);
            // A settled message frees an acquisition slot (max_acquired) and, key-shared, its
            // key: a waiting poll may find work now.
            w.consumers = waiting_.announce();
            w.publishers = waiting_.publishers_to_wake(trim(), settings_.max_bytes != 0);
            break;
        case MQ_SETTLE_RELEASE:
            s.set(*e, ShareState::kAvailable, delay_ns > 0 ? now + delay_ns + clock_.lag() : 0);
            w.consumers = waiting_.announce();
            break;
        case MQ_SETTLE_REJECT:
            s.rejected++;
            if (g->dead_letter) {
                // Published by the layer above, outside the lock (share_settle in group_poll).
                s.set(*e, ShareState::kDoomed);
                Wait none = Wait::from_ms(0);
                share_dead_letter(*c, g, none, due);
                return MQ_OK;
            }
            s.set(*e, ShareState::kDone);
            share_advance(*c);
            // A settled message frees an acquisition slot (max_acquired) and, key-shared, its
            // key: a waiting poll may find work now.
            w.consumers = waiting_.announce();
            w.publishers = waiting_.publishers_to_wake(trim(), settings_.max_bytes != 0);
            break;
        default:  // MQ_SETTLE_RENEW
            s.set(*e, ShareState::kAcquired, now + settings_.ack_timeout_ns + clock_.lag());
            return MQ_OK;
    }
    lk.unlock();
    waiting_.send(w);
    return MQ_OK;
}

void Partition::share_advance(Cursor &c) noexcept {
    const int64_t to = c.share->pop_done();
    if (to <= c.committed) return;
    c.commit(to);
    c.end_views();
}

mq_status Partition::share_accept(Cursor &c, const Group *g, int64_t offset,
                                  Deferred &err) noexcept {
    ShareState &s = *c.share;
    s.expire(clock_.coarse());  // a lock that ran out is no longer the caller's to accept
    ShareState::Entry *e = s.at(offset);
    if (!e || e->state != ShareState::kAcquired) {
        return err.fail(MQ_ERR_NOT_IN_FLIGHT,
                        "offset %lld of partition %d is not acquired by share group %s (an ack "
                        "accepts an acquired message)",
                        static_cast<long long>(offset), index_, g->name.c_str());
    }
    s.set(*e, ShareState::kDone);
    share_advance(c);
    return MQ_OK;
}

void Partition::share_finish_dead_letter(Cursor &c, int64_t offset, bool moved,
                                         bool too_large) noexcept {
    ShareState::Entry *e = c.share->at(offset);
    if (!e || e->state != ShareState::kDeadLettering) return;  // dropped or sought past
    if (!moved) {
        c.share->set(*e, ShareState::kDoomed);  // a later poll tries again within its wait
        return;
    }
    c.share->set(*e, ShareState::kDone);
    if (too_large) {
        c.lost++;
        c.lost_unreported++;
    } else {
        c.dead_lettered++;
    }
}

int64_t Partition::share_next_change(Cursor &c) noexcept {
    int64_t at = c.share->next_lock_expiry();
    c.share->for_each([&](int64_t, ShareState::Entry &e) {
        if (e.state == ShareState::kAvailable && e.deadline > 0) at = std::min(at, e.deadline);
    });
    return at;
}

void Partition::share_info(Cursor &c, int64_t now, mq_group_info &out) const noexcept {
    // Read, not changed (info calls change no state, on a closed broker neither): a lock that
    // ran out counts as available, as the next call on the partition will find it.
    ShareState &s = *c.share;
    out.rejected = s.rejected;
    int64_t oldest = -1;
    s.for_each([&](int64_t o, ShareState::Entry &e) {
        if (e.state == ShareState::kDone) return;
        if (oldest < 0) oldest = o;
        if (e.state == ShareState::kAcquired) (e.deadline > now ? out.acquired : out.available)++;
        if (e.state == ShareState::kAvailable) {
            (e.deadline > now ? out.delayed : out.available)++;
        }
        int64_t *histogram[] = {&out.delivered_once, &out.delivered_twice, &out.delivered_thrice,
                                &out.delivered_more};
        if (e.count > 0) (*histogram[std::min<uint32_t>(e.count, 4) - 1])++;
    });
    // Messages no poll has looked at yet are available too (or delayed, if not due).
    if (log_.latest_due() <= now) {
        out.available += log_.end() - c.next;
    } else {
        for (int64_t o = c.next; o < log_.end(); o++)
            (log_.due(o) > now ? out.delayed : out.available)++;
    }
    if (oldest < 0 && c.next < log_.end()) oldest = c.next;
    out.oldest_unsettled_age_ns = oldest < 0 ? -1 : now - log_.timestamp(oldest);
}

}  // namespace mq
