#include "capi/broker.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "util/error.h"
#include "util/names.h"

namespace {
// The topic this thread named last, on which broker: most threads publish to or poll one topic,
// and comparing the name with it is cheaper than hashing it. The pointer is used only if the
// broker (by its unique id: a new broker may reuse the address) has deleted no topic since it
// was cached: a topic's memory goes only a grace period after its deletion bumped the count,
// and the call reading the count is inside the gate, so a matching count means the topic is
// still there.
struct LastTopic {
    uint64_t broker = 0;
    uint64_t deletions = 0;
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
    // No call, member or subscription is left: drop the table's references, then whatever
    // waits for a grace period (topics that dead-letter into each other go with the last).
    for (mq::Topic *t : topics_) t->release();
    topics_.clear();
    reclaimer_.free_all();
    brokers_alive.fetch_sub(1, std::memory_order_relaxed);
}

int64_t mq_broker::alive_for_testing() noexcept {
    return brokers_alive.load(std::memory_order_relaxed);
}

mq_status mq_broker::topic(const char *name, mq::Topic **out) noexcept {
    if (!name) return mq::fail(MQ_ERR_INVALID, "topic name is NULL");
    LastTopic &last = tl_last_topic;
    const uint64_t deletions = deletions_.load(std::memory_order_acquire);
    if (last.broker == uid_ && last.deletions == deletions &&
        std::strcmp(name, last.topic->name().c_str()) == 0) {
        *out = last.topic;
        return MQ_OK;
    }
    mq::Topic *t = table_.find(name);
    if (!t) {
        // Names are checked only on this slow path: an illegal name can never be found.
        if (mq_status st = mq::check_name(name, "topic"); st != MQ_OK) return st;
        return mq::fail(MQ_ERR_NO_TOPIC, "no topic named \"%s\"", name);
    }
    last = LastTopic{uid_, deletions, t};
    *out = t;
    return MQ_OK;
}

mq_status mq_broker::create_topic(const char *name, const mq_topic_config &cfg) {
    {
        std::lock_guard lk(admin_mu_);
        if (closed()) return mq::fail_fixed(MQ_CLOSED, "the broker is closed");
        if (table_.find(name)) return mq::fail(MQ_ERR_EXISTS, "topic %s already exists", name);
        if (std::strpbrk(name, "._")) {  // Kafka's collision rule, checked as Kafka does: on create
            for (const mq::Topic *other : topics_) {
                if (!mq::names_collide(name, other->name())) continue;
                return mq::fail(MQ_ERR_INVALID,
                                "topic name \"%s\" collides with existing topic \"%s\" ('.' and "
                                "'_' are the same to Kafka's metrics); pick a name that differs in "
                                "another character",
                                name, other->name().c_str());
            }
        }
        topics_.reserve(topics_.size() + 1);
        std::unique_ptr<mq::Topic, void (*)(mq::Topic *)> t(
            new mq::Topic(name, cfg, clock, spin_ns, closed_, reclaimer_, &async_),
            [](mq::Topic *p) { p->release(); });
        table_.insert(t.get());
        topics_.push_back(t.release());
    }
    reclaimer_.collect();  // a table the insert replaced, and whatever else is due
    return MQ_OK;
}

mq_status mq_broker::delete_topic(const char *name) {
    {
        std::lock_guard lk(admin_mu_);
        if (closed()) return mq::fail_fixed(MQ_CLOSED, "the broker is closed");
        mq::Topic *t = table_.find(name);
        if (!t) return mq::fail(MQ_ERR_NO_TOPIC, "no topic named \"%s\"", name);
        reclaimer_.reserve(1);  // the one thing that can fail, before anything changes
        table_.erase(t);
        topics_.erase(std::find(topics_.begin(), topics_.end(), t));
        deletions_.fetch_add(1, std::memory_order_acq_rel);
        t->mark_deleted();  // wakes what waits on it; all later calls on it fail
        reclaimer_.retire(t, [](void *p) { static_cast<mq::Topic *>(p)->release(); });
    }
    reclaimer_.collect();
    return MQ_OK;
}

const char *mq_broker::intern(const std::string &name) {
    std::lock_guard lk(names_mu_);
    return names_.insert(name).first->c_str();
}

std::vector<std::string> mq_broker::topic_names() const {
    std::lock_guard lk(admin_mu_);
    std::vector<std::string> names;
    names.reserve(topics_.size());
    for (const mq::Topic *t : topics_) names.push_back(t->name());
    return names;
}

void mq_broker::close() {
    if (backend) backend->close();
    {
        std::lock_guard lk(admin_mu_);
        if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    }
    // The flag is set before each partition's lock is taken to notify, and waiters check it
    // under that lock, so no waiter can miss it.
    {
        std::lock_guard lk(admin_mu_);
        for (mq::Topic *t : topics_) {
            for (int32_t p = 0; p < t->partition_count(); p++)
                t->partition(p).waitable().wake_all();
            t->wake_members();
        }
    }
    // Outside every lock: it waits for the completion callbacks of pending asynchronous calls,
    // which may call mq functions.
    async_.close();
}

void mq_broker::free_handle() noexcept {
    close();
    gate.drain();  // blocked calls were woken by the close and are on their way out
    release();
}
