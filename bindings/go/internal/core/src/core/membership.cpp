#include "core/membership.h"

#include <algorithm>

#include "core/cursor.h"
#include "util/error.h"
#include "core/topic.h"

namespace mq {
namespace {
thread_local const MemberState *tl_in_callback = nullptr;
}

bool in_rebalance_callback_of(const MemberState *m) noexcept { return tl_in_callback == m; }

namespace {
std::atomic<int64_t> groups_alive{0};
}

Group::Group(std::string n, uint64_t i, const GroupConfig &cfg)
    : GroupConfig(cfg), name(std::move(n)), id(i) {
    if (dead_letter) dead_letter->add_ref();
    groups_alive.fetch_add(1, std::memory_order_relaxed);
}

Group::~Group() {
    membership.reset();  // before the dead-letter topic, which may go with our reference
    if (dead_letter) dead_letter->release();
    groups_alive.fetch_sub(1, std::memory_order_relaxed);
}

int64_t Group::alive_for_testing() noexcept { return groups_alive.load(std::memory_order_relaxed); }

void MemberState::begin_close() {
    std::unique_lock lk(cb_mu);
    closing = true;
    cb_cv.wait(lk, [this] { return callbacks_running == 0; });
}

Membership::Membership(Topic &topic, const Group &group, const Clock &clock)
    : topic_(topic), group_(group), clock_(clock) {}

bool Membership::has_members() {
    std::lock_guard lk(mu_);
    return !members_.empty();
}

mq_status Membership::join(const std::shared_ptr<MemberState> &m, mq_assignor assignor,
                           void *user) {
    std::vector<Notice> notices;
    {
        std::lock_guard claims(topic_.groups_mutex());  // against explicit-list claims
        std::lock_guard lk(mu_);
        for (const auto &other : members_) {
            if (other->member_id == m->member_id) {
                return fail(MQ_ERR_EXISTS, "member %s is already in group %s of topic %s",
                            m->member_id.c_str(), group_.name.c_str(), topic_.name().c_str());
            }
        }
        for (int32_t p = 0; p < topic_.partition_count(); p++) {
            const uint64_t owner = topic_.partition(p).owner(&group_);
            if (owner && std::none_of(members_.begin(), members_.end(),
                                      [owner](const auto &o) { return o->id == owner; })) {
                return fail(MQ_ERR_OWNED,
                            "partition %d of topic %s is claimed by a push subscription of group "
                            "%s with an explicit partition list; members cannot share the group",
                            p, topic_.name().c_str(), group_.name.c_str());
            }
        }
        // The group keeps the strategy of its first member.
        const bool first = members_.empty();
        std::vector<std::shared_ptr<MemberState>> next = members_;
        next.push_back(m);
        m->fetched.reserve(static_cast<size_t>(topic_.partition_count()));
        Plan plan = plan_locked(std::move(next), first ? assignor : assignor_,
                                first ? user : assignor_user_, 0, notices);
        if (first) {
            assignor_ = assignor;
            assignor_user_ = user;
        }
        m->last_seen.store(clock_.now());
        apply_locked(plan, notices);
        // The joiner starts out knowing its assignment, so it can poll at once.
        std::lock_guard f(m->fetched_mu);
        m->fetched = m->assignment;  // reserved above: cannot throw
        m->seen_generation.store(generation());
    }
    notify(notices);
    return MQ_OK;
}

void Membership::leave(MemberState &m) noexcept {
    std::vector<Notice> notices;
    {
        std::lock_guard lk(mu_);
        auto it = std::find_if(members_.begin(), members_.end(),
                               [&m](const auto &o) { return o.get() == &m; });
        if (it != members_.end()) {  // else already removed (timed out)
            try {
                std::vector<std::shared_ptr<MemberState>> next;
                next.reserve(members_.size());
                for (const auto &o : members_) {
                    if (o.get() != &m) next.push_back(o);
                }
                Plan plan = plan_locked(std::move(next), assignor_, assignor_user_, 1, notices);
                m.removed.store(true);
                departed_.push_back(*it);  // reserved by the plan; until its views are released
                apply_locked(plan, notices);
            } catch (...) {
                // Out of memory: let the session timeout remove it, at the next reap.
                m.library_owned = false;
                m.session_timeout_ns = 0;
                m.last_seen.store(INT64_MIN / 2);
                next_reap_ns_.store(INT64_MIN, std::memory_order_relaxed);
                return;
            }
        }
    }
    notify(notices);
    try {
        release_fenced(m);
    } catch (...) {
        // release_fenced only swaps and erases: it does not allocate.
    }
}

mq_status Membership::fetch(MemberState &m, int64_t *generation, std::vector<int32_t> &out,
                            bool redeliver) {
    std::lock_guard lk(mu_);
    if (m.removed.load()) {
        return fail(MQ_ERR_FENCED,
                    "member %s was removed from group %s (no call within its session timeout); "
                    "close it and join again",
                    m.member_id.c_str(), group_.name.c_str());
    }
    out = m.assignment;
    {
        std::lock_guard f(m.fetched_mu);
        m.fetched = m.assignment;
    }
    *generation = generation_.load(std::memory_order_acquire);
    if (redeliver && m.seen_generation.load() != *generation) {
        for (int32_t p : m.assignment) topic_.partition(p).rewind_owned(&group_, m.id);
    }
    m.seen_generation.store(*generation);
    return MQ_OK;
}

void Membership::reap(int64_t now) {
    if (now < next_reap_ns_.load(std::memory_order_relaxed)) return;
    std::vector<Notice> notices;
    {
        std::lock_guard lk(mu_);
        int64_t next_check = INT64_MAX;
        std::vector<std::shared_ptr<MemberState>> keep, expired;
        for (const auto &mp : members_) {
            MemberState &m = *mp;
            const bool calling = m.in_calls.load() > 0;
            const int64_t expires =
                calling ? now + m.session_timeout_ns : m.last_seen.load() + m.session_timeout_ns;
            if (!m.library_owned && !calling && now >= expires) {
                expired.push_back(mp);
                continue;
            }
            keep.push_back(mp);
            // Look again a quarter of a timeout later (or at this member's expiry, if sooner).
            if (!m.library_owned) {
                next_check =
                    std::min(next_check, std::min(expires, now + m.session_timeout_ns / 4));
            }
        }
        if (!expired.empty()) {
            Plan plan =
                plan_locked(std::move(keep), assignor_, assignor_user_, expired.size(), notices);
            for (const auto &e : expired) {
                e->removed.store(true);
                departed_.push_back(e);  // its views stay valid until it calls or closes
            }
            apply_locked(plan, notices);
        } else {
            next_reap_ns_.store(next_check, std::memory_order_relaxed);
        }
    }
    notify(notices);
}

// Everything a rebalance allocates happens here, before anything changes, so that running out
// of memory leaves the group as it was.
Membership::Plan Membership::plan_locked(std::vector<std::shared_ptr<MemberState>> next,
                                         mq_assignor assignor, void *user, size_t departing,
                                         std::vector<Notice> &notices) {
    const auto partitions = topic_.partition_count();
    const auto count = static_cast<int32_t>(next.size());
    Plan plan;
    plan.owner.assign(static_cast<size_t>(partitions), -1);
    if (count > 0) {
        if (assignor) {
            std::vector<const char *> ids;
            ids.reserve(next.size());
            for (const auto &m : next) ids.push_back(m->member_id.c_str());
            assignor(user, partitions, ids.data(), count, plan.owner.data());
        } else {
            for (int32_t p = 0; p < partitions; p++) plan.owner[static_cast<size_t>(p)] = p % count;
        }
    }
    notices.reserve(next.size());
    departed_.reserve(departed_.size() + departing);
    for (const auto &m : next) m->assignment.reserve(static_cast<size_t>(partitions));
    for (const auto &m : members_) m->fenced.reserve(static_cast<size_t>(partitions));
    for (const auto &m : departed_) m->fenced.reserve(static_cast<size_t>(partitions));
    for (int32_t p = 0; p < partitions; p++) topic_.partition(p).prepare_reassign(&group_);
    plan.members = std::move(next);
    return plan;
}

void Membership::apply_locked(Plan &plan, std::vector<Notice> &notices) noexcept {
    const int64_t gen = generation_.load() + 1;
    const auto partitions = topic_.partition_count();
    const auto count = static_cast<int32_t>(plan.members.size());
    members_.swap(plan.members);
    for (const auto &m : members_) m->assignment.clear();
    for (int32_t p = 0; p < partitions; p++) {
        const int32_t who = plan.owner[static_cast<size_t>(p)];
        const bool valid = who >= 0 && who < count;
        Partition &part = topic_.partition(p);
        const uint64_t before = part.owner(&group_);
        if (part.reassign(&group_, valid ? members_[static_cast<size_t>(who)]->id : 0, gen)) {
            if (MemberState *old = find_any(before)) {
                old->fenced.push_back(p);
                old->has_fenced.store(true);
            }
        }
        if (valid) members_[static_cast<size_t>(who)]->assignment.push_back(p);
    }
    generation_.store(gen, std::memory_order_release);
    int64_t next = INT64_MAX;
    for (const auto &m : members_) {
        m->notifier.signal();  // a member waiting in poll learns of the new generation
        if (m->on_rebalance || m->hook) notices.push_back({m, gen});
        if (!m->library_owned) next = std::min(next, m->last_seen.load() + m->session_timeout_ns);
    }
    next_reap_ns_.store(next, std::memory_order_relaxed);
}

void Membership::notify(std::vector<Notice> &notices) {
    for (Notice &n : notices) {
        // A deleted topic or an unsubscribed group rebalances nobody (mq.h): checked before
        // each call, so one that a callback brought about is seen by the next.
        if (topic_.closed() || group_.unsubscribed.load(std::memory_order_acquire)) return;
        MemberState &m = *n.member;
        {
            std::lock_guard lk(m.cb_mu);
            if (m.closing) continue;
            m.callbacks_running++;
        }
        const MemberState *outer = tl_in_callback;
        tl_in_callback = &m;
        if (m.hook) m.hook();
        if (m.on_rebalance) m.on_rebalance(m.on_rebalance_user, m.handle, n.generation);
        tl_in_callback = outer;
        std::lock_guard lk(m.cb_mu);
        m.callbacks_running--;
        m.cb_cv.notify_all();
    }
}

MemberState *Membership::find_any(uint64_t id) noexcept {
    for (const auto &m : members_) {
        if (m->id == id) return m.get();
    }
    for (const auto &m : departed_) {
        if (m->id == id) return m.get();
    }
    return nullptr;
}

void Membership::release_fenced(MemberState &m) {
    std::vector<int32_t> parts;
    {
        std::lock_guard lk(mu_);
        m.has_fenced.store(false);
        parts.swap(m.fenced);
        // A departed member that has let go of everything is forgotten.
        departed_.erase(std::remove_if(departed_.begin(), departed_.end(),
                                       [&m](const auto &d) { return d.get() == &m; }),
                        departed_.end());
    }
    for (int32_t p : parts) topic_.partition(p).release_fenced(&group_, m.id);
}

void Membership::wake_all() {
    std::lock_guard lk(mu_);
    for (const auto &m : members_) {
        m->notifier.signal();
        // A member is in members_ until it leaves, which its subscription does before it goes.
        if (m->hook) m->hook();
    }
}

}  // namespace mq
