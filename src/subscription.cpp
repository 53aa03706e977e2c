#include "subscription.h"

#include "broker.h"
#include "error.h"

namespace {
// What the calling thread is doing, when it is one of a subscription's loops.
struct LoopContext {
    const mq_subscription *sub = nullptr;
    mq::Partition *partition = nullptr;
    const mq::Group *group = nullptr;
    int64_t nack_delay_ns = 0;  // set by mq_handler_nack_delay during one handler call
};
thread_local LoopContext tl_loop;

mq_status not_in_handler() {
    return mq::fail(MQ_ERR_INVALID, "this function must be called from inside a push handler");
}
}  // namespace

mq_status mq_subscription::extend_current_lease() {
    if (!tl_loop.sub) return not_in_handler();
    return tl_loop.partition->extend_lease(tl_loop.group);
}

mq_status mq_subscription::delay_current_nack(int64_t delay_ms) {
    if (!tl_loop.sub) return not_in_handler();
    if (delay_ms < 0) {
        return mq::fail(MQ_ERR_INVALID, "delay_ms is %lld; it must be 0 or more",
                        static_cast<long long>(delay_ms));
    }
    tl_loop.nack_delay_ns = delay_ms * 1000000;
    return MQ_OK;
}

mq_subscription::mq_subscription(mq_broker *b, mq::Topic *topic, const mq::Group *group,
                                 uint64_t id, int32_t prefetch, std::vector<int32_t> partitions,
                                 mq_handler handler, void *user, mq_user_free user_free)
    : broker(b), topic_(topic), group_(group), id_(id), prefetch_(prefetch),
      partitions_(std::move(partitions)), handler_(handler), user_(user), user_free_(user_free) {}

bool mq_subscription::is_current_thread() const noexcept { return tl_loop.sub == this; }

mq_status mq_subscription::claim() {
    // Checking and claiming under the topic's group lock makes the pair atomic against
    // another subscription of the same group claiming at the same time (rule 11).
    std::lock_guard lk(topic_->groups_mutex());
    for (int32_t p : partitions_) {
        if (topic_->partition(p).owned_by_other(group_, id_)) {
            return mq::fail(MQ_ERR_OWNED,
                            "partition %d of topic %s is owned by another live subscription of "
                            "group %s; close it first or subscribe to other partitions",
                            p, topic_->name().c_str(), group_->name.c_str());
        }
    }
    for (int32_t p : partitions_) topic_->partition(p).set_owner(group_, id_);
    return MQ_OK;
}

void mq_subscription::unclaim() noexcept {
    std::lock_guard lk(topic_->groups_mutex());
    for (int32_t p : partitions_) topic_->partition(p).release_owner(group_, id_);
}

void mq_subscription::start() {
    try {
        wakers_.reserve(partitions_.size());
        for (size_t i = 0; i < partitions_.size(); i++) wakers_.push_back(std::make_unique<mq_cancel>());
        threads_.reserve(partitions_.size());
        for (size_t i = 0; i < partitions_.size(); i++) threads_.emplace_back([this, i] { loop(i); });
    } catch (...) {
        stop();
        throw;
    }
}

void mq_subscription::loop(size_t i) {
    mq::Partition &part = topic_->partition(partitions_[i]);
    std::vector<mq_message> batch(static_cast<size_t>(prefetch_));
    tl_loop = LoopContext{this, &part, group_, 0};
    while (!stopping_.load(std::memory_order_acquire)) {
        size_t n = 0;
        if (part.poll(group_, batch.data(), batch.size(), mq::Wait{mq::Wait::kForever},
                      wakers_[i].get(), &n) != MQ_OK) {
            break;  // closed, stopped, or the group was unsubscribed
        }
        for (size_t k = 0; k < n; k++) {
            if (stopping_.load(std::memory_order_acquire)) break;
            tl_loop.nack_delay_ns = 0;
            if (handler_(user_, &batch[k]) != 0) {
                part.nack(group_, tl_loop.nack_delay_ns);  // the rest of the batch is not
                break;                                      // attempted (rule 10)
            }
            if (part.ack(group_, batch[k].offset) != MQ_OK) break;
        }
    }
    tl_loop = LoopContext{};
}

void mq_subscription::stop() {
    stopping_.store(true, std::memory_order_release);
    for (auto &w : wakers_) w->trigger();
    for (auto &t : threads_) {
        if (t.joinable()) t.join();
    }
    // Whatever a loop was handed and did not finish goes back to the group at once rather
    // than waiting out the lease (a no-op when nothing is in flight or the broker is closed).
    for (size_t i = 0; i < threads_.size(); i++) topic_->partition(partitions_[i]).nack(group_, 0);
    unclaim();
    if (user_free_) user_free_(user_);
}
