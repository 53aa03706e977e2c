// The broker: the topic registry and the closed flag every wait checks. It holds no rule about
// messages: those live in Partition.
//
// Lifetime (mq.h, "Lifetimes"): the broker's memory is reference-counted. The broker handle
// holds one reference, and so does every subscription and member made from it, so handles can
// be released in any order: mq_broker_free closes the broker, waits for the calls made
// through the handle (the call gate) and drops the handle's reference; whichever release drops
// the last one frees the topics, partitions and message views.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_gate.h"
#include "clock.h"
#include "topic_table.h"

struct mq_broker {
    explicit mq_broker(const mq_broker_options &opts);

    // MQ_OK with *out set, or a status with the message set.
    mq_status topic(const char *name, mq::Topic **out) noexcept;
    mq_status create_topic(const char *name, const mq_topic_config &cfg);
    std::vector<std::string> topic_names() const;

    void close();  // Wakes every waiter; idempotent.
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

    // mq_broker_free: closes, waits until no call made through the handle is inside, and
    // drops the handle's reference. Never waits for a subscription or member: they hold
    // references of their own (and no user code runs inside the gate, so a handler or callback
    // that frees the broker does not wait for itself).
    void free_handle() noexcept;

    uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    // Brokers whose memory has not gone yet, in this process (for tests).
    static int64_t alive_for_testing() noexcept;

    mq::Clock clock;
    size_t max_message_bytes;
    int64_t spin_ns;
    mq::CallGate gate;  // the calls made through the broker handle

private:
    ~mq_broker();  // by release() only

    const uint64_t uid_;            // never reused, unlike the broker's address
    std::atomic<int64_t> refs_{1};  // the handle's, and one per subscription and member
    std::atomic<bool> closed_{false};
    std::atomic<uint64_t> next_id_{1};
    mq::TopicTable table_;
    mutable std::mutex admin_mu_;  // topic creation and the creation-order list
    std::vector<std::unique_ptr<mq::Topic>> topics_;
};

namespace mq {

// A counted reference to a broker: what a subscription or member holds so that the broker's
// memory outlives the broker handle.
class BrokerRef {
public:
    BrokerRef() noexcept = default;
    explicit BrokerRef(mq_broker *b) noexcept : b_(b) {
        if (b_) b_->add_ref();
    }
    BrokerRef(BrokerRef &&o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
    BrokerRef &operator=(BrokerRef &&o) noexcept {
        if (this != &o) {
            reset();
            b_ = std::exchange(o.b_, nullptr);
        }
        return *this;
    }
    BrokerRef(const BrokerRef &) = delete;
    BrokerRef &operator=(const BrokerRef &) = delete;
    ~BrokerRef() { reset(); }

    void reset() noexcept {
        if (mq_broker *b = std::exchange(b_, nullptr)) b->release();
    }
    mq_broker *get() const noexcept { return b_; }
    mq_broker *operator->() const noexcept { return b_; }
    mq_broker &operator*() const noexcept { return *b_; }

private:
    mq_broker *b_ = nullptr;
};

}  // namespace mq
