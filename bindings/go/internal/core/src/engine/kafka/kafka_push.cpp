// Push subscriptions on the Kafka backend: consumer loops on library threads, built on the
// backend's own polls. Without a partition list the subscription is a member of its group
// (Kafka's group protocol moves partitions between it and the group's other members, in any
// process) and one thread runs the member's loop; with one, a thread per partition polls it
// for the group. A loop hands each message to the handler, coalesces the acks of one polled
// batch (SPEC.md rule 10: it acks the last handled offset before it polls again, and before it
// stops), and on a handler's failure acks the successes, then nacks (with the delay the
// handler set).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "util/error.h"
#include "engine/kafka/kafka_backend.h"

namespace mq::kafka {

namespace {

constexpr int64_t kLoopWaitMs = 100;  // how long a loop's poll waits before it looks at stop

class KafkaPush final : public BackendSubscription {
public:
    KafkaPush(KafkaBackend &b, std::string topic, std::string group, int32_t prefetch,
              int64_t session_timeout_ms, mq_handler handler, void *user)
        : b_(b),
          topic_(std::move(topic)),
          group_(std::move(group)),
          prefetch_(static_cast<size_t>(prefetch)),
          session_timeout_ms_(session_timeout_ms),
          handler_(handler),
          user_(user) {}
    ~KafkaPush() override { close(); }

    mq_status start(std::vector<int32_t> partitions);
    void close() noexcept override;
    bool is_current_thread() const noexcept override {
        const auto me = std::this_thread::get_id();
        for (const auto &id : ids_)
            if (id == me) return true;
        return false;
    }

private:
    // One loop's handler context: mq_handler_extend_lease and set_nack_delay reach it.
    struct Handler final : BackendHandler {
        KafkaPush *push;
        int32_t partition = 0;
        int64_t nack_delay_ms = 0;
        mq_status extend_lease() override {
            return push->member_ ? push->member_->extend_lease(partition)
                                 : push->b_.extend_lease(push->topic_.c_str(), push->group_.c_str(),
                                                         partition);
        }
        void set_nack_delay(int64_t delay_ms) override { nack_delay_ms = delay_ms; }
    };
    // Polls once (the member's partitions, or partition p) and handles what came; false when
    // the loop must end (closed broker, deleted topic, removed member).
    bool step(int32_t p, std::vector<mq_message> &buf);
    mq_status ack(int32_t p, int64_t offset) {
        return member_ ? member_->ack(p, offset)
                       : b_.ack(topic_.c_str(), group_.c_str(), p, offset);
    }
    // Gives the batch back from unhandled_from on (its deliveries taken back: no handler saw
    // those messages).
    mq_status nack(int32_t p, int64_t delay_ms, int64_t unhandled_from) {
        return member_ ? member_->nack(p, delay_ms, unhandled_from)
                       : b_.nack(topic_.c_str(), group_.c_str(), p, delay_ms, unhandled_from);
    }

    KafkaBackend &b_;
    const std::string topic_, group_;
    const size_t prefetch_;
    const int64_t session_timeout_ms_;  // the member's, in member mode (how long a crash holds
                                        // its partitions)
    const mq_handler handler_;
    void *const user_;
    std::unique_ptr<BackendMember> member_;  // member mode
    std::vector<std::thread> threads_;
    std::vector<std::thread::id> ids_;  // set before any handler runs, read-only after
    std::mutex start_mu_;               // held while the threads start
    std::vector<int32_t> claimed_;
    bool claim_held_ = false;
    std::atomic<bool> stop_{false};
    std::mutex stop_mu_;  // with stop_cv_: a loop backing off after an error wakes on close
    std::condition_variable stop_cv_;
    bool closed_ = false;
};

mq_status KafkaPush::start(std::vector<int32_t> partitions) {
    if (mq_status st = b_.claim(topic_, group_, partitions); st) return st;
    claimed_ = partitions;
    claim_held_ = true;
    if (partitions.empty()) {
        const BackendJoin join{nullptr, session_timeout_ms_, nullptr, nullptr, nullptr};
        std::string id;
        if (mq_status st = b_.join(topic_.c_str(), group_.c_str(), join, &id, &member_); st) {
            return st;
        }
        if (mq_status st = member_->begin(); st) return st;
        partitions = {-1};  // one loop for the member's partitions, whichever they are
    } else {
        // The group is this handle's to poll by partition: subscribed now if it is not yet.
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        const mq_status st = b_.subscribe(topic_.c_str(), group_.c_str(), o);
        if (st != MQ_OK && st != MQ_ERR_EXISTS) return st;
    }
    // The threads start once every id is known, so is_current_thread never races a start.
    std::unique_lock ready(start_mu_);
    for (int32_t p : partitions) {
        threads_.emplace_back([this, p] {
            { std::lock_guard wait_for_start(start_mu_); }
            std::vector<mq_message> buf(prefetch_);
            while (!stop_.load(std::memory_order_acquire) && step(p, buf)) {
            }
        });
        ids_.push_back(threads_.back().get_id());
    }
    return MQ_OK;
}

bool KafkaPush::step(int32_t p, std::vector<mq_message> &buf) {
    size_t n = 0;
    mq_status st;
    if (member_) {
        st = member_->poll(nullptr, nullptr, buf.data(), prefetch_, kLoopWaitMs, nullptr, &n);
        if (st == MQ_REBALANCED) {
            int64_t generation;
            std::vector<int32_t> owned;
            return member_->assignment(&generation, owned) == MQ_OK;
        }
    } else {
        st = b_.poll(topic_.c_str(), group_.c_str(), p, nullptr, buf.data(), prefetch_, kLoopWaitMs,
                     nullptr, &n);
    }
    if (st == MQ_TIMEOUT) return true;
    // Closed, unsubscribed or its topic deleted (the group is gone), member removed: the loop
    // ends. Anything else (the cluster refused a request, a dead letter found no topic, no
    // memory) may pass: the loop waits a poll's time and tries again, as a consumer would.
    if (st == MQ_CLOSED || st == MQ_ERR_NO_GROUP || st == MQ_ERR_FENCED) return false;
    // Its own topic deleted ends it; a dead-letter topic missing for now does not.
    if (st == MQ_ERR_NO_TOPIC && member_ && member_->topic_deleted()) return false;
    if (st != MQ_OK) {
        std::unique_lock l(stop_mu_);
        stop_cv_.wait_for(l, std::chrono::milliseconds(kLoopWaitMs),
                          [this] { return stop_.load(std::memory_order_acquire); });
        return true;
    }
    Handler h;
    h.push = this;
    h.partition = buf[0].partition;
    int64_t last_ok = -1;
    bool failed = false;
    size_t i = 0;
    for (; i < n && !stop_.load(std::memory_order_acquire); i++) {
        h.nack_delay_ms = 0;
        current_backend_handler() = &h;
        const int rc = handler_(user_, &buf[i]);
        current_backend_handler() = nullptr;
        if (rc != 0) {
            failed = true;
            break;
        }
        last_ok = buf[i].offset;
    }
    // Coalesced: one ack for the batch's successes; what was not handled comes back by the nack
    // (a failure, or a stop), and only what a handler saw counted a delivery.
    if (last_ok >= 0) ack(h.partition, last_ok);
    if (failed) {
        nack(h.partition, h.nack_delay_ms, buf[i].offset + 1);
    } else if (i < n) {
        nack(h.partition, 0, buf[i].offset);  // stopped before buf[i]
    }
    return true;
}

void KafkaPush::close() noexcept {
    if (closed_) return;
    closed_ = true;
    {
        std::lock_guard l(stop_mu_);  // a loop backing off checks stop_ under it
        stop_.store(true, std::memory_order_release);
    }
    stop_cv_.notify_all();
    for (auto &t : threads_)
        if (t.joinable()) t.join();
    if (member_) member_->close();  // leaves the group: the others rebalance
    if (claim_held_) b_.unclaim(topic_, group_, claimed_);
}

}  // namespace

mq_status KafkaBackend::claim(const std::string &topic, const std::string &group,
                              const std::vector<int32_t> &parts) {
    const std::string key = topic + '\n' + group;
    std::lock_guard g(mu_);
    std::vector<int32_t> &owned = claimed_[key];
    if (parts.empty()) {
        if (!owned.empty()) {
            return fail(MQ_ERR_OWNED,
                        "partitions of group %s are owned by push subscriptions with a partition "
                        "list; members cannot share the group with them",
                        group.c_str());
        }
        return MQ_OK;
    }
    const std::string prefix = key + '\n';
    for (const auto &[k, cursors] : member_ids_) {
        if (k.compare(0, prefix.size(), prefix) == 0) {
            return fail(MQ_ERR_OWNED, "group %s has members; a partition list cannot share it",
                        group.c_str());
        }
    }
    for (int32_t p : parts) {
        if (std::find(owned.begin(), owned.end(), p) != owned.end()) {
            return fail(MQ_ERR_OWNED,
                        "partition %d of topic %s is owned by another subscription of group %s", p,
                        topic.c_str(), group.c_str());
        }
    }
    owned.insert(owned.end(), parts.begin(), parts.end());
    return MQ_OK;
}

void KafkaBackend::unclaim(const std::string &topic, const std::string &group,
                           const std::vector<int32_t> &parts) noexcept {
    std::lock_guard g(mu_);
    auto it = claimed_.find(topic + '\n' + group);
    if (it == claimed_.end()) return;
    for (int32_t p : parts) {
        it->second.erase(std::remove(it->second.begin(), it->second.end(), p), it->second.end());
    }
}

mq_status KafkaBackend::open_push(const char *topic, const char *group, int32_t prefetch,
                                  int64_t session_timeout_ms, std::vector<int32_t> partitions,
                                  mq_handler handler, void *user,
                                  std::unique_ptr<BackendSubscription> *out) {
    auto push = std::make_unique<KafkaPush>(*this, topic, group, prefetch, session_timeout_ms,
                                            handler, user);
    if (mq_status st = push->start(std::move(partitions)); st) return st;
    *out = std::move(push);
    return MQ_OK;
}

}  // namespace mq::kafka
