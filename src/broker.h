// The broker: the topic registry, the closed flag every wait checks, and the push
// subscriptions it must stop before it goes. It holds no rule about messages: those live in
// Partition.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "call_gate.h"
#include "clock.h"
#include "topic_table.h"

struct mq_broker {
    mq_broker(const mq_broker_options &opts);
    ~mq_broker();

    // MQ_OK with *out set, or a status with the message set.
    mq_status topic(const char *name, mq::Topic **out) noexcept;
    mq_status create_topic(const char *name, const mq_topic_config &cfg);
    std::vector<std::string> topic_names() const;

    void close();  // Wakes every waiter; idempotent.
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

    uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    void add_subscription(mq_subscription *s);
    void remove_subscription(mq_subscription *s) noexcept;
    std::vector<mq_subscription *> take_subscriptions();
    // Members still open when the broker is freed are freed with it.
    void add_member(mq_member *m);
    void remove_member(mq_member *m) noexcept;
    std::vector<mq_member *> take_members();

    mq::Clock clock;
    size_t max_message_bytes;
    int64_t spin_ns;
    mq::CallGate gate;

private:
    const uint64_t uid_;  // never reused, unlike the broker's address
    std::atomic<bool> closed_{false};
    std::atomic<uint64_t> next_id_{1};
    mq::TopicTable table_;
    mutable std::mutex admin_mu_;  // topic creation and the creation-order list
    std::vector<std::unique_ptr<mq::Topic>> topics_;
    std::mutex subs_mu_;
    std::set<mq_subscription *> subs_;
    std::set<mq_member *> members_;  // guarded by subs_mu_
};
