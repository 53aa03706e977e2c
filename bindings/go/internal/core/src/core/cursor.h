// Consumer groups, and one group's position on one partition.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <algorithm>
#include <new>

#include "core/delivery_counts.h"
#include "core/share_state.h"

namespace mq {

class Topic;
class Membership;

struct GroupConfig {
    uint32_t max_deliveries = 0;   // 0 = no limit
    Topic *dead_letter = nullptr;  // where messages go after max_deliveries (the group holds a
                                   // reference: a deleted dead-letter topic stays until it goes)
    // The dead letters' origin names (mq.h: they live as long as the broker), interned by it.
    const char *origin_topic = nullptr;
    const char *origin_group = nullptr;
    // Share groups (SPEC rule 16): mq_share_mode, and at most this many messages acquired per
    // partition.
    int32_t share = 0;
    uint32_t max_acquired = 0;
};

// A group's memory is reference-counted: its topic's group list holds one reference while it
// is subscribed (dropped after a grace period once it is unsubscribed, or when the topic goes),
// and so does every member and push subscription of it. The last release frees it; a group
// never reaches back to its topic when it goes.
struct Group : GroupConfig {
    Group(std::string n, uint64_t i, const GroupConfig &cfg);
    ~Group();
    Group(const Group &) = delete;
    Group &operator=(const Group &) = delete;

    void add_ref() const noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
    void release() const noexcept {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    static int64_t alive_for_testing() noexcept;  // groups whose memory has not gone

    std::string name;
    uint64_t id;  // unique for the broker's life: a re-subscribed name is new
    std::unique_ptr<Membership> membership;  // live members (set by the topic)
    // Set once the topic unlinks the group: its members' calls fail from then on, as SPEC rule 13
    // has them fail once their topic is deleted (their handles stay valid until closed).
    mutable std::atomic<bool> unsubscribed{false};

private:
    mutable std::atomic<int64_t> refs{1};
};

// A group's position on one partition, and every change to it: the rules of SPEC.md that touch
// one cursor are written here once (what an ack does, a drop, a rewind, a seek, a lease), and
// the partition applies them under its lock.
//
// Views: the group may hold views of messages from `view_floor` on (mq.h: until it acks or
// seeks past them, or, for messages dropped from under it, until its next poll, ack or seek).
// Handing out a view lowers the floor to it; the group's own poll, ack and seek raise it to
// `committed`. Below the lowest floor of all groups the partition reuses the bytes.
struct Cursor {
    const Group *group;
    int64_t committed;
    int64_t next;
    int64_t lease_deadline = 0;    // broker clock; meaningful while next > committed
    int64_t not_before = 0;        // broker clock; a delayed nack holds the group until then
    uint64_t owner = 0;            // the subscription or member owning this partition, 0 = none
    int64_t owner_generation = 0;  // the group generation that gave it to owner
    int64_t view_floor;            // lowest offset whose view the group may still hold
    int64_t lost_unreported = 0;   // dropped before acked, not yet told to the group
    int64_t lost = 0;
    int64_t dead_lettered = 0;
    bool dead_lettering = false;  // a poll is moving the head to the dead-letter topic
    DeliveryCounts counts;
    // A share group's per-message state (share_state.h); null for an ordered group.
    std::unique_ptr<ShareState> share;
    // Owners the partition was taken from while they held views, with the lowest offset they
    // may hold: kept until that owner calls again (see Partition::reassign).
    std::vector<std::pair<uint64_t, int64_t>> fenced_floors;

    Cursor(const Group *g, int64_t at) : group(g), committed(at), next(at), view_floor(at) {
        counts.reset(at);
        if (g->share) {
            share = std::make_unique<ShareState>(at, g->max_acquired, g->share == 2);
        }
    }

    bool in_flight() const noexcept { return next > committed; }

    // Everything below `to` is done for the group: the one effect of an ack, shared by an ack,
    // a drop and a dead letter. Views below `to` are not ended here (see end_views).
    void commit(int64_t to) noexcept {
        committed = to;
        next = std::max(next, to);
        counts.ack(to);
    }
    // The log now starts at `start`: what the group had not acked below it is lost, and the
    // loss is told by the next message it is handed.
    void skip_to(int64_t start) noexcept {
        if (committed >= start) return;
        lost += start - committed;
        lost_unreported += start - committed;
        commit(start);
    }
    // The group's own poll, ack or seek: its views below committed end. True if any did.
    bool end_views() noexcept {
        if (view_floor >= committed) return false;
        view_floor = committed;
        return true;
    }
    // Rule 7: a lease that ran out rewinds the group so its in-flight messages come again.
    void expire_lease(int64_t now) noexcept {
        if (in_flight() && now >= lease_deadline) next = committed;
    }
    bool paused(int64_t now) const noexcept { return not_before > now; }
    // Rule 4: [next, to) is handed out under a new lease; the first message carries the loss
    // not yet told. f(offset, delivery count) is called for each (DeliveryCounts::deliver).
    template <class F>
    int64_t hand_out(int64_t to, int64_t lease_until, F &&f) {
        const int64_t from = next;
        view_floor = std::min(view_floor, from);  // a replay below the floor holds it too
        counts.deliver(from, to, f);
        next = to;
        not_before = 0;
        lease_deadline = lease_until;
        const int64_t told = lost_unreported;
        lost_unreported = 0;
        return told;
    }
    // Rule 6 (and a delayed nack: `until` > 0 holds the group until then). False if nothing
    // was in flight, which changes nothing.
    bool rewind(int64_t until) noexcept {
        if (!in_flight()) return false;
        next = committed;
        if (until > 0) not_before = until;
        return true;
    }
    // A push loop giving back the part of its batch from `from` on that no handler saw (after a
    // failure, or when it stops): a rewind, and those messages' deliveries are taken back, so
    // delivery_count counts handler calls (mq.h). Out of memory the counts stay as they were.
    bool give_back(int64_t from, int64_t until) noexcept {
        if (!in_flight()) return false;
        try {
            counts.undeliver(std::max(from, committed), next);
        } catch (const std::bad_alloc &) {  // a split run of equal counts is still valid
        }
        return rewind(until);
    }
    // committed = next = `to`: in flight forgotten, a pause cancelled, counts start over. Views
    // the seek moves past end, and so do views of dropped messages; those it moves back over
    // are in the log, at or above the new floor. Loss not yet told is kept.
    void seek(int64_t to) noexcept {
        view_floor = to;
        committed = next = to;
        not_before = 0;
        counts.reset(to);
    }
    // The broker-clock time at which the cursor changes by itself, or INT64_MAX.
    int64_t next_change() const noexcept {
        int64_t at = in_flight() ? lease_deadline : INT64_MAX;
        if (not_before) at = std::min(at, not_before);
        return at;
    }
    // The lowest offset any holder of this group's views may read.
    int64_t floor() const noexcept {
        int64_t f = view_floor;
        for (const auto &e : fenced_floors) f = std::min(f, e.second);
        return f;
    }
};

}  // namespace mq
