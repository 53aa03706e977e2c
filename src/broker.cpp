#include "broker.h"

#include "error.h"
#include "names.h"

mq_broker::mq_broker(const mq_broker_options &opts)
    : clock{opts.clock, opts.clock_user},
      max_message_bytes(opts.max_message_bytes),
      spin_ns(opts.spin_ns) {}

mq_broker::~mq_broker() = default;

mq_status mq_broker::topic(const char *name, mq::Topic **out) noexcept {
    if (!name) return mq::fail(MQ_ERR_INVALID, "topic name is NULL");
    mq::Topic *t = table_.find(name);
    if (!t) {
        // Names are checked only on this slow path: an illegal name can never be found.
        if (mq_status st = mq::check_name(name, "topic"); st != MQ_OK) return st;
        return mq::fail(MQ_ERR_NO_TOPIC, "no topic named \"%s\"", name);
    }
    *out = t;
    return MQ_OK;
}

mq_status mq_broker::create_topic(const char *name, const mq_topic_config &cfg) {
    std::lock_guard lk(admin_mu_);
    if (closed()) return mq::fail(MQ_CLOSED, "the broker is closed");
    if (table_.find(name)) return mq::fail(MQ_ERR_EXISTS, "topic %s already exists", name);
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

void mq_broker::add_subscription(mq_subscription *s) {
    std::lock_guard lk(subs_mu_);
    subs_.insert(s);
}

void mq_broker::remove_subscription(mq_subscription *s) noexcept {
    std::lock_guard lk(subs_mu_);
    subs_.erase(s);
}

void mq_broker::add_member(mq_member *m) {
    std::lock_guard lk(subs_mu_);
    members_.insert(m);
}

void mq_broker::remove_member(mq_member *m) noexcept {
    std::lock_guard lk(subs_mu_);
    members_.erase(m);
}

std::vector<mq_member *> mq_broker::take_members() {
    std::lock_guard lk(subs_mu_);
    std::vector<mq_member *> all(members_.begin(), members_.end());
    members_.clear();
    return all;
}

std::vector<mq_subscription *> mq_broker::take_subscriptions() {
    std::lock_guard lk(subs_mu_);
    std::vector<mq_subscription *> all(subs_.begin(), subs_.end());
    subs_.clear();
    return all;
}
