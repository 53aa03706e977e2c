// The broker: the topic registry and the closed flag every wait checks. It holds no rule about
// messages: those live in Partition.
//
// Lifetime (mq.h, "Lifetimes"): the broker's memory is reference-counted. The broker handle
// holds one reference, and so does every subscription and member made from it, so handles can
// be released in any order: mq_broker_free closes the broker, waits for the calls made
// through the handle (the call gate) and drops the handle's reference; whichever release drops
// the last one frees the topics, partitions and message views.
//
// Topics, groups and group-list snapshots that go while the broker lives (mq_topic_delete,
// mq_group_unsubscribe, every subscribe) are unlinked first and reclaimed once no call can
// still see them (reclaim.h, on the call gate's epochs), and once no member or subscription
// holds them (their reference counts, topic.h and cursor.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "util/async_waits.h"
#include "util/call_gate.h"
#include "util/clock.h"
#include "util/reclaim.h"
#include "core/topic_table.h"

struct mq_broker {
    explicit mq_broker(const mq_broker_options &opts);

    // MQ_OK with *out set, or a status with the message set.
    mq_status topic(const char *name, mq::Topic **out) noexcept;
    mq_status create_topic(const char *name, const mq_topic_config &cfg);
    mq_status delete_topic(const char *name);
    // A broker-lifetime copy of a name (dead letters' origins, which mq.h says live as long as
    // the broker): one per distinct name, however often it comes back. May throw bad_alloc.
    const char *intern(const std::string &name);
    mq::Reclaimer &reclaimer() noexcept { return reclaimer_; }
    std::vector<std::string> topic_names() const;

    // Wakes every waiter, and completes every pending asynchronous call (MQ_CLOSED), waiting
    // for their callbacks unless called from one; idempotent.
    void close();
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

    // The calls started asynchronously (async_waits.h), and their completer thread.
    mq::AsyncWaits &async() noexcept { return async_; }

    mq::Clock clock;
    size_t max_message_bytes;
    int64_t spin_ns;
    mq::CallGate gate;  // the calls made through the broker handle
    // Set when the broker was opened on a Kafka cluster (backend.h): every call goes there.
    std::unique_ptr<mq::Backend> backend;

    // Drops the references of topics deleted meanwhile, of groups and of snapshots: for tests.
    void collect_for_testing() noexcept { reclaimer_.collect(); }

private:
    ~mq_broker();  // by release() only

    const uint64_t uid_;            // never reused, unlike the broker's address
    std::atomic<int64_t> refs_{1};  // the handle's, and one per subscription and member
    std::atomic<bool> closed_{false};
    mq::AsyncWaits async_;
    std::atomic<uint64_t> next_id_{1};
    // Bumped by every deletion: a thread's cached topic (broker.cpp) is used only if no topic
    // was deleted since it was cached.
    std::atomic<uint64_t> deletions_{0};
    mq::Reclaimer reclaimer_{gate};
    mq::TopicTable table_{reclaimer_};
    mutable std::mutex admin_mu_;      // topic creation and deletion, the creation-order list
    std::vector<mq::Topic *> topics_;  // each holds the table's reference to its topic
    std::mutex names_mu_;
    std::set<std::string, std::less<>> names_;  // intern()'s
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
