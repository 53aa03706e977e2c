#include "capi/subscription.h"

#include <algorithm>

#include "capi/broker.h"
#include "util/duration.h"
#include "util/error.h"
#include "core/group_poll.h"

namespace {
// What the calling thread is doing, when it is one of a subscription's loops.
struct LoopContext {
    const mq_subscription *sub = nullptr;
    mq::Partition *partition = nullptr;
    const mq::Group *group = nullptr;
    uint64_t owner = 0;
    int64_t nack_delay_ns = 0;  // set by mq_handler_set_nack_delay during one handler call
};
thread_local LoopContext tl_loop;

mq_status not_in_handler() {
    return mq::fail(MQ_ERR_INVALID, "this function must be called from inside a push handler");
}
}  // namespace

mq_status mq_subscription::extend_current_lease() {
    if (mq::BackendHandler *h = mq::current_backend_handler()) return h->extend_lease();
    if (!tl_loop.sub) return not_in_handler();
    return tl_loop.partition->extend_lease(tl_loop.group, mq::Caller{tl_loop.owner});
}

mq_status mq_subscription::delay_current_nack(int64_t delay_ms) {
    if (mq::BackendHandler *h = mq::current_backend_handler()) {
        if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
        h->set_nack_delay(delay_ms);
        return MQ_OK;
    }
    if (!tl_loop.sub) return not_in_handler();
    if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
    tl_loop.nack_delay_ns = delay_ms * 1000000;
    return MQ_OK;
}

mq_subscription::mq_subscription(mq::BrokerRef broker, mq::Ref<mq::Topic> topic,
                                 mq::Ref<const mq::Group> group, uint64_t id, int32_t prefetch,
                                 std::vector<int32_t> partitions, mq_handler handler, void *user)
    : broker_(std::move(broker)),
      topic_ref_(std::move(topic)),
      group_ref_(std::move(group)),
      topic_(topic_ref_.get()),
      group_(group_ref_.get()),
      id_(id),
      prefetch_(prefetch),
      static_partitions_(std::move(partitions)),
      handler_(handler),
      user_(user) {}

mq_subscription::~mq_subscription() = default;

mq_status mq_subscription::open(mq::BrokerRef broker, mq::Ref<mq::Topic> topic, const char *group,
                                int32_t prefetch, std::vector<int32_t> partitions,
                                mq_handler handler, void *user, mq_user_free user_free,
                                mq_subscription **out) {
    // user_free runs exactly once: here if opening fails in any way, else at close. (`broker`,
    // a parameter, outlives these locals: the topic stays valid while they unwind.)
    struct FreeOnFailure {
        mq_user_free f;
        void *user;
        bool armed = true;
        ~FreeOnFailure() {
            if (armed && f) f(user);
        }
    } free_on_failure{user_free, user};
    mq::Topic *t = topic.get();
    if (t->deleted()) {
        return mq::fail(MQ_ERR_NO_TOPIC, "topic %s was deleted while subscribing",
                        t->name().c_str());
    }
    bool created = false;
    mq::Ref<const mq::Group> group_ref =
        mq::Ref<const mq::Group>::adopt(t->find_or_subscribe(group, broker->new_id(), &created));
    const mq::Group *g = group_ref.get();
    if (!g) return mq::fail(MQ_ERR_NO_GROUP, "group %s was unsubscribed while subscribing", group);
    if (g->share) {
        return mq::fail(MQ_ERR_INVALID,
                        "group %s of topic %s is a share group: poll it with mq_group_poll "
                        "(mq_subscription_open takes partitions for one consumer alone)",
                        group, t->name().c_str());
    }
    // A failure from here on leaves no trace: not even the group it subscribed. The handle
    // made below takes the references over, so these keep topic and group while it unwinds.
    t->add_ref();
    g->add_ref();
    const auto keep_topic = mq::Ref<mq::Topic>::adopt(t);
    const auto keep_group = mq::Ref<const mq::Group>::adopt(g);
    mq::GroupRollback rollback{t, g, created};
    std::unique_ptr<mq_subscription> sub(
        new mq_subscription(mq::BrokerRef(broker.get()), std::move(topic), std::move(group_ref),
                            broker->new_id(), prefetch, std::move(partitions), handler, user));
    if (mq_status st = sub->attach(); st != MQ_OK) return st;
    try {
        sub->start();
    } catch (...) {
        sub->stop();  // joins what started and detaches
        throw;
    }
    rollback.armed = false;
    free_on_failure.armed = false;
    sub->user_free_ = user_free;
    *out = sub.release();
    return MQ_OK;
}

mq_subscription *mq_subscription::wrap(mq::BrokerRef broker,
                                       std::unique_ptr<mq::BackendSubscription> backend, void *user,
                                       mq_user_free user_free) {
    auto *sub = new mq_subscription(std::move(broker), {}, {}, 0, 1, {}, nullptr, user);
    sub->backend_ = std::move(backend);
    sub->user_free_ = user_free;
    return sub;
}

void mq_subscription::close(mq_subscription *sub) noexcept {
    if (sub->backend_) {
        sub->backend_->close();
        if (sub->user_free_) sub->user_free_(sub->user_);
        delete sub;
        return;
    }
    sub->stop();
    if (sub->user_free_) sub->user_free_(sub->user_);
    delete sub;  // may drop the broker's last reference
}

bool mq_subscription::is_current_thread() const noexcept {
    return backend_ ? backend_->is_current_thread() : tl_loop.sub == this;
}

mq_status mq_subscription::attach() {
    if (member_mode()) {
        auto m = std::make_shared<mq::MemberState>();
        m->id = id_;
        m->member_id = group_->name + "-push-" + std::to_string(id_);
        m->library_owned = true;
        m->hook = [this] {
            std::lock_guard lk(sup_mu_);
            rebalance_pending_ = true;
            sup_cv_.notify_all();
        };
        if (mq_status st = group_->membership->join(m, nullptr, nullptr); st != MQ_OK) return st;
        member_ = std::move(m);
        return MQ_OK;
    }
    // Rule 11: checking and claiming under the topic's group lock makes the pair atomic
    // against another subscription (or member) of the same group doing the same.
    std::lock_guard lk(topic_->groups_mutex());
    if (group_->membership->has_members()) {
        return mq::fail(MQ_ERR_OWNED,
                        "group %s has live members on topic %s; a subscription with an explicit "
                        "partition list cannot share it",
                        group_->name.c_str(), topic_->name().c_str());
    }
    for (int32_t p : static_partitions_) {
        if (topic_->partition(p).owned_by_other(group_, id_)) {
            return mq::fail(MQ_ERR_OWNED,
                            "partition %d of topic %s is owned by another live subscription of "
                            "group %s; close it first or subscribe to other partitions",
                            p, topic_->name().c_str(), group_->name.c_str());
        }
    }
    for (int32_t p : static_partitions_) topic_->partition(p).set_owner(group_, id_);
    return MQ_OK;
}

void mq_subscription::detach() noexcept {
    if (member_) {
        member_->begin_close();
        group_->membership->leave(*member_);
        member_.reset();
        return;
    }
    std::lock_guard lk(topic_->groups_mutex());
    for (int32_t p : static_partitions_) topic_->partition(p).release_owner(group_, id_);
}

void mq_subscription::start() {
    if (member_mode()) {
        supervisor_ = std::thread([this] { supervise(); });
    } else {
        for (int32_t p : static_partitions_) start_loop(p);
    }
}

void mq_subscription::start_loop(int32_t partition) {
    loops_.reserve(loops_.size() + 1);
    auto loop = std::make_unique<Loop>();
    loop->partition = partition;
    Loop &l = *loop;
    l.thread = std::thread([this, &l] { run_loop(l); });
    loops_.push_back(std::move(loop));
}

void mq_subscription::stop_loops(const std::vector<int32_t> *keep) {
    auto going = [&](const std::unique_ptr<Loop> &l) {
        return !keep || std::find(keep->begin(), keep->end(), l->partition) == keep->end();
    };
    for (auto &l : loops_) {
        if (!going(l)) continue;
        l->stop.store(true, std::memory_order_release);
        l->waker.trigger();
    }
    for (auto &l : loops_) {
        if (going(l) && l->thread.joinable()) l->thread.join();
    }
    loops_.erase(std::remove_if(loops_.begin(), loops_.end(), going), loops_.end());
}

// Rule 10 with coalesced acks: the acks of one polled batch become one, the last handled
// offset, sent with the next poll (one critical section, mq_group_ack_poll's) or on its own
// before a handler could find the lease run out, before a nack (the successes first) and when
// the loop ends. A handled message is thus redelivered only after a crash or when a handler
// outran the lease; publishers blocked on a full partition are woken once per batch, not once
// per message.
void mq_subscription::run_loop(Loop &loop) {
    mq::Partition &part = topic_->partition(loop.partition);
    std::vector<mq_message> batch(static_cast<size_t>(prefetch_));
    tl_loop = LoopContext{this, &part, group_, id_, 0};
    const mq::Caller me{id_};
    const mq::Clock &clock = broker_->clock;
    // Half the lease: a pending ack older than this is sent before the next handler runs, so
    // a later handler's time does not count against messages already handled.
    const int64_t flush_after = topic_->settings().ack_timeout_ns / 2;
    int64_t pending = -1;  // the last handled offset not acked yet; -1: none
    // Stopped with messages of a batch not handed to the handler: the first of them (-1: none).
    int64_t unfinished = -1;
    bool fenced = false;  // the partition moved away (it may be back already)
    auto flush = [&] {
        const bool ok = pending < 0 || part.ack(group_, me, pending) == MQ_OK;
        pending = -1;
        return ok;
    };
    while (!loop.stop.load(std::memory_order_acquire)) {
        size_t n = 0;
        const int64_t *ack = pending >= 0 ? &pending : nullptr;
        const mq_status st = mq::poll_group(part, group_, me, batch.data(), batch.size(),
                                            mq::Wait{mq::Wait::kForever}, &loop.waker, &n, ack);
        pending = -1;                              // acked, or refused (then nothing was polled)
        if (st == MQ_ERR_NOT_IN_FLIGHT) continue;  // the ack was refused: poll again
        if (st != MQ_OK) {  // closed, stopped, fenced (the partition moved), group gone
            fenced = st == MQ_ERR_FENCED;
            break;
        }
        const int64_t polled_at = clock.coarse();
        for (size_t k = 0; k < n; k++) {
            // After a close no handler is called, also for the rest of a batch polled before.
            if (loop.stop.load(std::memory_order_acquire) || topic_->closed()) {
                unfinished = batch[k].offset;
                break;
            }
            if (pending >= 0 && clock.coarse() - polled_at >= flush_after && !flush()) break;
            tl_loop.nack_delay_ns = 0;
            if (handler_(user_, &batch[k]) != 0) {
                // Rule 10: the successes are acked, then the rest of the batch is not attempted;
                // it comes again after the nack, and only the failed message counted a delivery.
                if (flush()) part.nack(group_, me, tl_loop.nack_delay_ns, batch[k].offset + 1);
                break;
            }
            pending = batch[k].offset;
        }
    }
    // What was handled is acked, then the rest of the batch goes back to the group at once.
    // The partition may still be this subscription's (a rebalance stops a loop whose partition
    // moved, and it may have moved back and been polled since): a loop started for it later
    // polls past what is in flight, and its cumulative ack would cover messages nobody handled.
    flush();
    if (unfinished >= 0) part.nack(group_, me, 0, unfinished);  // no-op if fenced or closed
    tl_loop = LoopContext{};
    loop.exited.store(true, std::memory_order_release);
    if (fenced) {
        // The supervisor may have acted on the partition's return before this loop ended, and
        // kept it as live: it looks again, or the partition would stay unconsumed.
        std::lock_guard lk(sup_mu_);
        rebalance_pending_ = true;
        sup_cv_.notify_all();
    }
}

void mq_subscription::supervise() {
    std::unique_lock lk(sup_mu_);
    for (;;) {
        sup_cv_.wait(lk, [this] { return rebalance_pending_ || stopping_; });
        // A closed broker ends the loops (their polls return MQ_CLOSED): so does the supervisor
        // (the close runs its hook), rather than restart them.
        if (stopping_ || topic_->closed()) break;
        rebalance_pending_ = false;
        lk.unlock();
        try {
            std::vector<int32_t> parts;
            int64_t generation = 0;
            if (group_->membership->fetch(*member_, &generation, parts, false) == MQ_OK) {
                stop_loops(&parts);
                // A loop fenced while its partition was away and back has ended: start it anew.
                std::vector<int32_t> live;
                for (const auto &l : loops_) {
                    if (!l->exited.load(std::memory_order_acquire)) live.push_back(l->partition);
                }
                stop_loops(&live);
                // The loops of moved partitions have finished their handlers: let go of views.
                group_->membership->release_fenced(*member_);
                for (int32_t p : parts) {
                    const bool running =
                        std::any_of(loops_.begin(), loops_.end(),
                                    [p](const auto &l) { return l->partition == p; });
                    if (!running) start_loop(p);
                }
            }
        } catch (...) {
            // Out of memory or threads: try again shortly rather than leave partitions idle.
            lk.lock();
            rebalance_pending_ = true;
            sup_cv_.wait_for(lk, std::chrono::milliseconds(10), [this] { return stopping_; });
            continue;
        }
        lk.lock();
    }
    lk.unlock();
    stop_loops(nullptr);
}

void mq_subscription::stop() noexcept {
    {
        std::lock_guard lk(sup_mu_);
        stopping_ = true;
        sup_cv_.notify_all();
    }
    if (supervisor_.joinable()) supervisor_.join();
    stop_loops(nullptr);  // each gives back what it was handed and did not finish (run_loop)
    detach();             // a member leaving rebalances the others; its partitions rewind for them
}
