// Live consumer groups: who the members of a group are, which partitions each owns, and the
// generation that numbers each division. Rebalances run on the thread that causes them (join,
// leave, or the call that notices a timed-out member): there is no coordinator thread.
//
// Lock order: topic groups_mu, then Membership::mu_, then partition locks (and a push
// subscription's supervisor lock, taken by its hook). Member callbacks run after every lock is
// released, and never after the broker is closed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/clock.h"
#include "mq.h"
#include "util/waitable.h"

namespace mq {

class Topic;
struct Group;

struct MemberState {
    uint64_t id = 0;  // the owner id written into cursors
    std::string member_id;
    int64_t session_timeout_ns = 0;
    bool library_owned = false;   // a push subscription's member: never times out
    mq_member *handle = nullptr;  // passed to on_rebalance
    mq_rebalance_fn on_rebalance = nullptr;
    void *on_rebalance_user = nullptr;
    std::function<void()> hook;  // push subscriptions: wake their supervisor

    std::atomic<int64_t> last_seen{0};
    std::atomic<int> in_calls{0};
    std::atomic<int64_t> seen_generation{0};  // the generation the member last fetched
    std::atomic<bool> removed{false};
    std::atomic<uint32_t> rotate{0};  // where the next poll starts, for fairness
    Notifier notifier;                // what mq_member_poll sleeps on
    int sleeping = 0;  // guarded by notifier.mu: polls asleep on it (what tests wait for)

    std::mutex fetched_mu;  // the assignment as the member last fetched it
    std::vector<int32_t> fetched;

    std::vector<int32_t> assignment;      // guarded by Membership::mu_
    std::vector<int32_t> fenced;          // guarded by Membership::mu_: partitions taken
    std::atomic<bool> has_fenced{false};  // from it while it held views there

    // Keeps callbacks from running once the member is closing, and lets close wait for them.
    std::mutex cb_mu;
    std::condition_variable cb_cv;
    int callbacks_running = 0;
    bool closing = false;
    void begin_close();
};

class Membership {
public:
    Membership(Topic &topic, const Group &group, const Clock &clock);

    // Adds the member and rebalances. MQ_ERR_EXISTS (id taken), MQ_ERR_OWNED (partitions
    // claimed by explicit-list subscriptions: checked under the topic's groups_mu, which is
    // released before the callbacks run).
    mq_status join(const std::shared_ptr<MemberState> &m, mq_assignor assignor, void *user);
    // Removes the member and rebalances. If that runs out of memory the member is marked
    // expired instead, so the next reap (any join or member call) removes it.
    void leave(MemberState &m) noexcept;
    // Fetches the member's assignment and marks its generation seen. MQ_ERR_FENCED if removed.
    // With `redeliver`, a member that missed generations gets back what it had in flight on the
    // partitions it keeps: acks from the old generation were refused, so otherwise those
    // messages would wait for their lease to run out.
    mq_status fetch(MemberState &m, int64_t *generation, std::vector<int32_t> &out, bool redeliver);
    // Removes members whose session timed out (checked at most a few times per timeout).
    void reap(int64_t now);
    bool has_members();
    // Lets go of views the member held on partitions taken from it (on its next call).
    void release_fenced(MemberState &m);
    // On close: wakes the members waiting in mq_member_poll and the supervisors of push
    // subscriptions (so their threads end). Runs no user code.
    void wake_all();

    int64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }

private:
    struct Notice {
        std::shared_ptr<MemberState> member;
        int64_t generation;
    };
    // A rebalance is planned (allocating, may throw, changes nothing) then applied (noexcept).
    struct Plan {
        std::vector<std::shared_ptr<MemberState>> members;  // the group after the change
        std::vector<int32_t> owner;                         // member index per partition
    };
    Plan plan_locked(std::vector<std::shared_ptr<MemberState>> next, mq_assignor assignor,
                     void *user, size_t departing, std::vector<Notice> &notices);
    void apply_locked(Plan &plan, std::vector<Notice> &notices) noexcept;
    // Runs the callbacks, with no lock held; none once the broker is closed.
    void notify(std::vector<Notice> &notices);

    Topic &topic_;
    const Group &group_;
    const Clock &clock_;
    std::mutex mu_;
    std::atomic<int64_t> generation_{0};
    MemberState *find_any(uint64_t id) noexcept;          // a member or a departed one
    std::vector<std::shared_ptr<MemberState>> members_;   // in join order
    std::vector<std::shared_ptr<MemberState>> departed_;  // removed, views not yet released
    mq_assignor assignor_ = nullptr;
    void *assignor_user_ = nullptr;
    std::atomic<int64_t> next_reap_ns_{INT64_MAX};
};

// The calling thread runs this member's on_rebalance (for MQ_ERR_DEADLOCK).
bool in_rebalance_callback_of(const MemberState *m) noexcept;

}  // namespace mq
