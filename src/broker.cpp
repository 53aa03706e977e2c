#include "broker.h"

#include <cstring>

#include "error.h"
#include "names.h"

namespace {
// The topic this thread named last, on which broker: most threads publish to or poll one topic,
// and comparing the name with it is cheaper than hashing it. Topics are never removed, so the
// pointer stays valid as long as the broker (whose unique id guards against a new broker at
// the same address).
struct LastTopic {
    uint64_t broker = 0;
    mq::Topic *topic = nullptr;
};
[[gnu::tls_model("initial-exec")]] thread_local LastTopic tl_last_topic;
std::atomic<uint64_t> next_broker_uid{1};
std::atomic<int64_t> brokers_alive{0};
}  // namespace

mq_broker::mq_broker(const mq_broker_options &opts)
    : clock{opts.clock, opts.clock_user},
      max_message_bytes(opts.max_message_bytes),
      spin_ns(opts.spin_ns),
      uid_(next_broker_uid.fetch_add(1, std::memory_order_relaxed)) {
    brokers_alive.fetch_add(1, std::memory_order_relaxed);
}

mq_broker::~mq_broker() {
    brokers_alive.fetch_sub(1, std::memory_order_relaxed);
}

int64_t mq_broker::alive_for_testing() noexcept {
    return brokers_alive.load(std::memory_order_relaxed);
}

mq_status mq_broker::topic(const char *name, mq::Topic **out) noexcept {
    if (!name) return mq::fail(MQ_ERR_INVALID, "topic name is NULL");
    LastTopic &last = tl_last_topic;
    if (last.broker == uid_ && std::strcmp(name, last.topic->name().c_str()) == 0) {
        *out = last.topic;
        return MQ_OK;
    }
    mq::Topic *t = table_.find(name);
    if (!t) {
        // Names are checked only on this slow path: an illegal name can never be found.
        if (mq_status st = mq::check_name(name, "topic"); st != MQ_OK) return st;
        return mq::fail(MQ_ERR_NO_TOPIC, "no topic named \"%s\"", name);
    }
    last = LastTopic{uid_, t};
    *out = t;
    return MQ_OK;
}

mq_status mq_broker::create_topic(const char *name, const mq_topic_config &cfg) {
    std::lock_guard lk(admin_mu_);
    if (closed()) return mq::fail_fixed(MQ_CLOSED, "the broker is closed");
    if (table_.find(name)) return mq::fail(MQ_ERR_EXISTS, "topic %s already exists", name);
    if (std::strpbrk(name, "._")) {  // Kafka's collision rule, checked as Kafka does: on create
        for (const auto &other : topics_) {
            if (!mq::names_collide(name, other->name())) continue;
            return mq::fail(MQ_ERR_INVALID,
                            "topic name \"%s\" collides with existing topic \"%s\" ('.' and '_' "
                            "are the same to Kafka's metrics); pick a name that differs in "
                            "another character",
                            name, other->name().c_str());
        }
    }
    topics_.reserve(topics_.size() + 1);
    auto t = std::make_unique<mq::Topic>(name, cfg, clock, spin_ns, closed_);
    table_.insert(t.get());
    topics_.push_back(std::move(t));
    return MQ_OK;
}

std::vector<std::string> mq_broker::topic_names() const {
    std::lock_guard lk(admin_mu_);
    std::vector<std::string> names;
    names.reserve(topics_.size());
    for (const auto &t : topics_) names.push_back(t->name());
    return names;
}

void mq_broker::close() {
    {
        std::lock_guard lk(admin_mu_);
        if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    }
    // The flag is set before each partition's lock is taken to notify, and waiters check it
    // under that lock, so no waiter can miss it.
    std::lock_guard lk(admin_mu_);
    for (auto &t : topics_) {
        for (int32_t p = 0; p < t->partition_count(); p++) t->partition(p).waitable().wake_all();
        t->wake_members();
    }
}

void mq_broker::free_handle() noexcept {
    close();
    gate.drain();  // blocked calls were woken by the close and are on their way out
    release();
}
