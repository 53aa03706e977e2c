// A partition's access rule (the lock and the maximum age), its cursors, and what it keeps:
// trimming to the slowest group (rule 8), dropping the oldest (bounded retention, max age), and
// giving storage back once no view can reach it.
#include "core/partition.h"

#include <algorithm>

namespace mq {

Partition::Partition(int32_t index, const TopicSettings &settings, const Clock &clock,
                     const std::atomic<bool> &closed)
    : waiting_(closed, settings.spin_ns, settings.async),
      index_(index),
      settings_(settings),
      clock_(clock),
      log_(settings.capacity) {}

void Partition::expire(int64_t now) noexcept {
    const int64_t s = log_.start_after_age(now, settings_.max_age_ns);
    if (s > log_.start()) drop_head(s);
}

mq_status Partition::no_group(Deferred &err, const Group *g) const noexcept {
    return err.fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s",
                    g->name.c_str(), settings_.topic->c_str());
}

Cursor *Partition::find(const Group *g) noexcept {
    for (Cursor &c : cursors_) {
        if (c.group == g) return &c;
    }
    return nullptr;
}

Cursor *Partition::find_owned(const Group *g, Caller who, Deferred &err, mq_status *st) noexcept {
    Cursor *c = find(g);
    if (!c) {
        *st = no_group(err, g);
        return nullptr;
    }
    if (!who.owner) return c;
    if (c->owner != who.owner) {
        *st = err.fail(MQ_ERR_FENCED,
                       "partition %d of topic %s is not assigned to this consumer of group %s "
                       "any more (the group rebalanced); fetch the new assignment",
                       index_, settings_.topic->c_str(), g->name.c_str());
        return nullptr;
    }
    if (c->owner_generation > who.seen_generation) {  // it moved away and back meanwhile
        *st = err.fail(MQ_REBALANCED,
                       "group %s rebalanced to generation %lld; fetch the new assignment with "
                       "mq_member_get_assignment",
                       g->name.c_str(), static_cast<long long>(c->owner_generation));
        return nullptr;
    }
    return c;
}

// Moves the start past messages that not every group acked; the groups behind skip forward
// and learn how many they lost. Their views of the dropped messages stay valid (their view
// floors hold the bytes) until their next poll, ack or seek.
void Partition::drop_head(int64_t new_start) noexcept {
    for (Cursor &c : cursors_) {
        if (c.share) {  // accepted messages are not lost; the frontier may move past new_start
            if (c.committed >= new_start) continue;
            const int64_t lost = c.share->drop_below(new_start);
            c.lost += lost;
            c.lost_unreported += lost;
            c.commit(c.share->base());
            continue;
        }
        c.skip_to(new_start);
    }
    const int64_t freed = log_.advance(new_start);
    dropped_ += freed;
    // A share group's frontier may have moved past new_start (settled messages behind the
    // dropped ones): what every group has settled goes too, as an ack would trim it.
    const int64_t trimmed = trim();
    release_views();
    wake_publishers(freed + trimmed);
}

int64_t Partition::trim() noexcept {
    int64_t slowest = log_.end();
    for (const Cursor &c : cursors_) slowest = std::min(slowest, c.committed);
    const int64_t freed = log_.advance(slowest);
    release_views();
    return freed;
}

void Partition::release_views() noexcept {
    int64_t floor = log_.start();
    for (const Cursor &c : cursors_) floor = std::min(floor, c.floor());
    log_.release(floor);
}

}  // namespace mq
