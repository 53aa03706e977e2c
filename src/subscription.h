// Push subscriptions (SPEC rule 10): one library thread per owned partition runs
// poll -> handler -> ack. No library lock is held while a handler runs.
//
// A subscription either claims an explicit list of partitions (rule 11), or is a member of its
// group (live groups): then a supervisor thread starts and stops partition loops as the group's
// rebalances move partitions to and from it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cancel.h"
#include "membership.h"
#include "topic.h"

struct mq_subscription {
    // `partitions` empty: member mode.
    mq_subscription(mq_broker *broker, mq::Topic *topic, const mq::Group *group, uint64_t id,
                    int32_t prefetch, std::vector<int32_t> partitions, mq_handler handler,
                    void *user, mq_user_free user_free);
    ~mq_subscription();

    // Static mode: claims the partitions. Member mode: joins the group. MQ_ERR_OWNED etc.
    // Callers hold the topic's groups_mu.
    mq_status attach();
    void detach() noexcept;  // undoes attach (after a failed start)
    // Starts the loops (or the supervisor); on failure stops what started and rethrows.
    void start();
    // Stops everything and waits for it, hands unfinished messages back, releases the
    // partitions (or leaves the group) and calls user_free. The caller then deletes the object.
    void stop();

    bool is_current_thread() const noexcept;
    static mq_status extend_current_lease();
    static mq_status delay_current_nack(int64_t delay_ms);

    mq_broker *const broker;

private:
    struct Loop {
        int32_t partition;
        mq_cancel waker;  // wakes its poll when it must stop
        std::atomic<bool> stop{false};
        std::atomic<bool> exited{false};  // its poll failed (fenced, closed): restart if owned
        std::thread thread;
    };
    bool member_mode() const noexcept { return static_partitions_.empty(); }
    void start_loop(int32_t partition);                 // may throw; then no loop was added
    void stop_loops(const std::vector<int32_t> *keep);  // stops all loops not in *keep
    void run_loop(Loop &loop);
    void supervise();

    mq::Topic *topic_;
    const mq::Group *group_;
    const uint64_t id_;  // the owner id written into cursors
    const int32_t prefetch_;
    const std::vector<int32_t> static_partitions_;
    const mq_handler handler_;
    void *const user_;
    const mq_user_free user_free_;

    std::shared_ptr<mq::MemberState> member_;   // member mode
    std::vector<std::unique_ptr<Loop>> loops_;  // touched by start/stop, or by the supervisor
    std::thread supervisor_;
    std::mutex sup_mu_;
    std::condition_variable sup_cv_;
    bool rebalance_pending_ = true;  // guarded by sup_mu_
    bool stopping_ = false;          // guarded by sup_mu_
    bool user_freed_ = false;
};
