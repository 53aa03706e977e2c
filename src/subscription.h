// Push subscriptions (SPEC rule 10): one library thread per owned partition runs
// poll -> handler -> ack. No library lock is held while a handler runs.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "cancel.h"
#include "topic.h"

struct mq_subscription {
    mq_subscription(mq_broker *broker, mq::Topic *topic, const mq::Group *group, uint64_t id,
                    int32_t prefetch, std::vector<int32_t> partitions, mq_handler handler,
                    void *user, mq_user_free user_free);

    // Claims the partitions within the group. MQ_ERR_OWNED if another subscription owns one.
    mq_status claim();
    void unclaim() noexcept;
    // Starts one loop per partition; on failure stops the ones started and rethrows.
    void start();
    // Stops the loops and waits for them, hands unfinished messages back, releases the
    // partitions and calls user_free. The caller then deletes the object.
    void stop();

    // True when the calling thread is running one of this subscription's handlers.
    bool is_current_thread() const noexcept;

    // For mq_handler_*: act on the loop the calling thread runs. MQ_ERR_INVALID off a loop.
    static mq_status extend_current_lease();
    static mq_status delay_current_nack(int64_t delay_ms);

    mq_broker *const broker;

private:
    void loop(size_t i);

    mq::Topic *topic_;
    const mq::Group *group_;
    const uint64_t id_;
    const int32_t prefetch_;
    const std::vector<int32_t> partitions_;
    const mq_handler handler_;
    void *const user_;
    const mq_user_free user_free_;

    std::atomic<bool> stopping_{false};
    std::vector<std::unique_ptr<mq_cancel>> wakers_;  // one per loop, to wake its poll
    std::vector<std::thread> threads_;
};
