// A group member handle (mq_member): the calls a member makes, each checked against the
// group's generation and the partition's owner so that a stale member is fenced.
//
// The member holds a reference to the broker, so it outlives mq_broker_free as a closed handle
// (its calls return MQ_CLOSED, its id stays readable) until mq_member_close.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/backend.h"
#include "capi/broker.h"
#include "util/cancel.h"
#include "core/membership.h"
#include "core/partition.h"
#include "core/topic.h"

struct mq_member {
    // What mq_member_join takes, after its argument checks.
    struct Options {
        const char *member_id;  // NULL: "<group>-<n>"
        int64_t session_timeout_ns;
        mq_assignor assignor;
        void *assignor_user;
        mq_rebalance_fn on_rebalance;
        void *on_rebalance_user;
    };
    // Subscribes the group if needed, joins and rebalances (the callbacks, this member's
    // included, run before it returns). Runs outside the broker's call gate, on the reference
    // it is given. A failure leaves no trace, not even the group it subscribed.
    static mq_status join(mq::BrokerRef broker, mq::Ref<mq::Topic> topic, const char *group,
                          const Options &opts, mq_member **out);
    // Leaves the group (the others rebalance) and frees the handle. Not from this member's own
    // rebalance callback (the caller checks).
    static void close(mq_member *m) noexcept;

    const mq::BrokerRef broker;  // first: released last
    mq::Topic *const topic;
    const mq::Group *const group;
    const std::shared_ptr<mq::MemberState> state;
    // What keeps topic and group (deleted or unsubscribed meanwhile) until the handle goes.
    const mq::Ref<mq::Topic> topic_ref;
    const mq::Ref<const mq::Group> group_ref;
    // Set for a member of a broker on Kafka (backend.h): every call goes there, and topic and
    // group above are NULL.
    std::unique_ptr<mq::BackendMember> backend;

    // Set by mq_member_close before it completes the member's pending asynchronous polls.
    std::atomic<bool> closing{false};
    // The member's pending asynchronous polls (Pending): close waits for them, or, called
    // from the completer (a callback), leaves the handle to the last of them to free.
    std::mutex pending_mu{};
    std::condition_variable pending_cv{};
    int pending_calls = 0;        // guarded by pending_mu
    bool free_when_idle = false;  // guarded by pending_mu

    // MQ_ERR_NO_TOPIC once the topic was deleted, MQ_ERR_NO_GROUP once the group was
    // unsubscribed (after the closed check of every member call).
    mq_status check_removed() const noexcept;

    mq::Membership &membership() const noexcept { return *group->membership; }

    // MQ_CLOSED once the broker is closed (the first check of every member call).
    bool closed() const noexcept { return broker->closed(); }

    // What an asynchronous poll of the member (mq_member_poll_async) keeps while it is
    // pending: the member counts as calling (its session does not run out), its handle stays
    // (mq_member_close completes the call and waits for it), and the partitions its notifier
    // watches stay watched between its runs, so that no change between them is missed.
    class Pending {
    public:
        explicit Pending(mq_member &m);
        ~Pending();  // unwatches; the last one of a member closed from a callback frees it
        Pending(const Pending &) = delete;
        Pending &operator=(const Pending &) = delete;
        mq_member &member() const noexcept { return m_; }

    private:
        friend struct mq_member;
        mq_member &m_;
        std::vector<int32_t> watched_;  // registered on the notifier; valid between runs
        bool watching_ = false;         // its first run looked without watching
    };

    // copy: the copying poll's buffer (then out is unused), as Partition::poll. pending: the
    // asynchronous poll whose run this is (wait.async set), else NULL.
    mq_status poll(mq_message *out, size_t max, mq::Wait wait, mq_cancel *cancel, size_t *count,
                   mq::CopyOut *copy = nullptr, Pending *pending = nullptr);
    // ack(partition, offset), then poll: in one critical section when the poll's rotation
    // looks at `partition` first, else the ack alone first. A rejected ack polls nothing.
    mq_status ack_poll(int32_t partition, int64_t offset, mq_message *out, size_t max,
                       mq::Wait wait, mq_cancel *cancel, size_t *count,
                       mq::CopyOut *copy = nullptr);
    mq_status ack(int32_t partition, int64_t offset);
    mq_status nack(int32_t partition, int64_t delay_ns);
    mq_status extend_lease(int32_t partition);
    mq_status assignment(int64_t *generation, std::vector<int32_t> &out);

private:
    struct Ack {
        int32_t partition;
        int64_t offset;
    };
    mq_status poll_after(const Ack *ack, mq_message *out, size_t max, mq::Wait wait,
                         mq_cancel *cancel, size_t *count, mq::CopyOut *copy, Pending *pending);
    // An asynchronous poll's run, where a blocking one would sleep (n.mu held): parks it until
    // the notifier is signalled or `change` (the broker clock's time of the next lease or
    // delayed nack to run out; INT64_MAX: none) or the deadline comes. False: look again now.
    bool park(mq::Notifier &n, const mq::Wait &wait, int64_t change, mq_status *st);
    // Counts the call as a sign of life; then MQ_OK, MQ_ERR_FENCED or MQ_REBALANCED.
    class Call;
    mq_status check(bool check_generation);
    mq::Caller caller() const noexcept { return {state->id, state->seen_generation.load()}; }
    void spin_for_signal(mq::Notifier &n, uint64_t seen, const mq::Wait &wait,
                         const mq::CancelScope &scope);
    void watch(const std::vector<int32_t> &parts);  // the notifier, on parts (and only them)
    void unwatch();
    int64_t next_change(const std::vector<int32_t> &parts);
};
