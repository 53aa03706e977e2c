// Push subscriptions (SPEC rule 10): one library thread per owned partition runs
// poll -> handler -> ack. No library lock is held while a handler runs.
//
// A subscription either claims an explicit list of partitions (rule 11), or is a member of its
// group (live groups): then a supervisor thread starts and stops partition loops as the group's
// rebalances move partitions to and from it.
//
// Lifecycle: open() subscribes the group if needed, claims or joins, starts the threads; close()
// stops them, gives the partitions back and calls user_free. The subscription holds a reference
// to the broker, so it outlives mq_broker_free as a closed handle: its loops end when the broker
// closes, and no handler is called after they see the close.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/backend.h"
#include "capi/broker.h"
#include "util/cancel.h"
#include "core/membership.h"
#include "core/topic.h"

struct mq_subscription {
    // Everything after the argument checks of mq_subscription_open: `partitions` empty means a
    // member of the group. user_free(user) has run when this returns anything but MQ_OK (also
    // when it throws). Runs outside the broker's call gate, on the broker reference it is given
    // (it may run rebalance callbacks).
    static mq_status open(mq::BrokerRef broker, mq::Ref<mq::Topic> topic, const char *group,
                          int32_t prefetch, std::vector<int32_t> partitions, mq_handler handler,
                          void *user, mq_user_free user_free, mq_subscription **out);
    // Stops everything and waits for it, hands unfinished messages back, releases the
    // partitions (or leaves the group), calls user_free and frees the handle. Not from the
    // subscription's own handler (the caller checks is_current_thread).
    static void close(mq_subscription *sub) noexcept;

    // On a broker whose backend runs it (backend.h): a handle around the backend's loops.
    static mq_subscription *wrap(mq::BrokerRef broker,
                                 std::unique_ptr<mq::BackendSubscription> backend, void *user,
                                 mq_user_free user_free);

    ~mq_subscription();  // after close's stop (or a failed open's)

    bool is_current_thread() const noexcept;
    static mq_status extend_current_lease();
    static mq_status delay_current_nack(int64_t delay_ms);

private:
    mq_subscription(mq::BrokerRef broker, mq::Ref<mq::Topic> topic, mq::Ref<const mq::Group> group,
                    uint64_t id, int32_t prefetch, std::vector<int32_t> partitions,
                    mq_handler handler, void *user);

    struct Loop {
        int32_t partition;
        mq_cancel waker;  // wakes its poll when it must stop
        std::atomic<bool> stop{false};
        std::atomic<bool> exited{false};  // its poll failed (fenced, closed): restart if owned
        std::thread thread;
    };
    bool member_mode() const noexcept { return static_partitions_.empty(); }
    // Static mode: claims the partitions. Member mode: joins the group. MQ_ERR_OWNED etc.
    mq_status attach();
    void detach() noexcept;  // undoes attach
    void start();            // starts the loops (or the supervisor); may throw, then stop()
    void stop() noexcept;    // stops and joins every thread, gives back what they held, detaches
    void start_loop(int32_t partition);                 // may throw; then no loop was added
    void stop_loops(const std::vector<int32_t> *keep);  // stops all loops not in *keep
    void run_loop(Loop &loop);
    void supervise();

    const mq::BrokerRef broker_;  // first: released last
    // Kept until the handle goes, also when the topic is deleted or the group unsubscribed.
    const mq::Ref<mq::Topic> topic_ref_;
    const mq::Ref<const mq::Group> group_ref_;
    mq::Topic *topic_;
    const mq::Group *group_;
    const uint64_t id_;  // the owner id written into cursors
    const int32_t prefetch_;
    const std::vector<int32_t> static_partitions_;
    const mq_handler handler_;
    void *const user_;
    mq_user_free user_free_ = nullptr;  // set once open succeeds: from then on close calls it
    std::unique_ptr<mq::BackendSubscription> backend_;  // set by wrap(): the loops are there

    std::shared_ptr<mq::MemberState> member_;   // member mode
    std::vector<std::unique_ptr<Loop>> loops_;  // touched by start/stop, or by the supervisor
    std::thread supervisor_;
    std::mutex sup_mu_;
    std::condition_variable sup_cv_;
    bool rebalance_pending_ = true;  // guarded by sup_mu_
    bool stopping_ = false;          // guarded by sup_mu_
};
