// Model-checked (the member poll's Notifier wait): tests/model/wake.pml, MemberPoller with
// -DMEMBER (ack_poll's ack riding with the first look: -DACK_POLL; the asynchronous form
// parking on the Notifier's key: -DASYNC); names mapped in tests/model/README.md.
#include "capi/member.h"

#include <algorithm>

#include "capi/broker.h"
#include "util/cancel.h"
#include "util/error.h"
#include "core/group_poll.h"

mq_status mq_member::join(mq::BrokerRef broker, mq::Ref<mq::Topic> topic, const char *group,
                          const Options &o, mq_member **out) {
    mq::Topic *t = topic.get();
    if (t->deleted()) {
        return mq::fail(MQ_ERR_NO_TOPIC, "topic %s was deleted while joining", t->name().c_str());
    }
    bool created = false;
    mq::Ref<const mq::Group> group_ref =
        mq::Ref<const mq::Group>::adopt(t->find_or_subscribe(group, broker->new_id(), &created));
    const mq::Group *g = group_ref.get();
    if (!g) return mq::fail(MQ_ERR_NO_GROUP, "group %s was unsubscribed while joining", group);
    if (g->share) {
        return mq::fail(MQ_ERR_INVALID,
                        "group %s of topic %s is a share group: poll it with mq_group_poll "
                        "(mq_member_join takes partitions for one consumer alone)",
                        group, t->name().c_str());
    }
    // A failure from here on leaves no trace: not even the group it subscribed. The handle
    // made below takes the references over, so these keep topic and group while it unwinds.
    t->add_ref();
    g->add_ref();
    const auto keep_topic = mq::Ref<mq::Topic>::adopt(t);
    const auto keep_group = mq::Ref<const mq::Group>::adopt(g);
    mq::GroupRollback rollback{t, g, created};
    auto state = std::make_shared<mq::MemberState>();
    state->id = broker->new_id();
    state->member_id = o.member_id ? std::string(o.member_id)
                                   : std::string(group) + "-" + std::to_string(state->id);
    state->session_timeout_ns = o.session_timeout_ns;
    state->on_rebalance = o.on_rebalance;
    state->on_rebalance_user = o.on_rebalance_user;
    std::unique_ptr<mq_member> m(new mq_member{mq::BrokerRef(broker.get()), t, g, state,
                                               std::move(topic), std::move(group_ref), nullptr});
    state->handle = m.get();
    state->notifier.async = &m->broker->async();  // its asynchronous polls park on it
    if (mq_status st = g->membership->join(state, o.assignor, o.assignor_user); st != MQ_OK)
        return st;
    rollback.armed = false;
    *out = m.release();
    return MQ_OK;
}

void mq_member::close(mq_member *m) noexcept {
    if (m->backend) {
        m->backend->close();
        delete m;
        return;
    }
    m->state->begin_close();
    // Pending asynchronous polls run again, see `closing` and complete with MQ_CLOSED: after
    // the member has left, so that their callbacks see the group without it.
    m->closing.store(true);
    m->membership().leave(*m->state);
    m->state->notifier.signal();
    {
        std::unique_lock lk(m->pending_mu);
        if (m->broker->async().in_completer()) {  // a callback: its completer cannot wait here
            if (m->pending_calls > 0) {
                m->free_when_idle = true;  // the last Pending frees the handle
                return;
            }
        } else {
            while (m->pending_calls > 0) m->pending_cv.wait(lk);
        }
    }
    delete m;  // may drop the broker's last reference
}

mq_member::Pending::Pending(mq_member &m) : m_(m) {
    m_.state->in_calls.fetch_add(1);
    std::lock_guard lk(m_.pending_mu);
    m_.pending_calls++;
}

mq_member::Pending::~Pending() {
    for (int32_t p : watched_) m_.topic->partition(p).unwatch(&m_.state->notifier);
    m_.state->last_seen.store(m_.broker->clock.now());
    m_.state->in_calls.fetch_sub(1);
    bool free = false;
    {
        std::lock_guard lk(m_.pending_mu);
        free = --m_.pending_calls == 0 && m_.free_when_idle;
        m_.pending_cv.notify_all();
    }
    if (free) delete &m_;
}

// A member is alive while it calls (and while a call of it blocks), so a session timeout is
// measured from the end of its last call.
class mq_member::Call {
public:
    explicit Call(mq_member &m) : m_(m) { m_.state->in_calls.fetch_add(1); }
    ~Call() {
        m_.state->last_seen.store(m_.broker->clock.now());
        m_.state->in_calls.fetch_sub(1);
    }

private:
    mq_member &m_;
};

mq_status mq_member::check_removed() const noexcept {
    if (topic->deleted()) {
        return mq::fail(MQ_ERR_NO_TOPIC,
                        "topic %s of member %s was deleted; close the member (a topic created "
                        "anew under that name is a new topic: join it again)",
                        topic->name().c_str(), state->member_id.c_str());
    }
    if (group->unsubscribed.load(std::memory_order_acquire)) {
        return mq::fail(MQ_ERR_NO_GROUP,
                        "group %s is no longer subscribed to topic %s; close member %s (subscribe "
                        "the group again and join anew to go on)",
                        group->name.c_str(), topic->name().c_str(), state->member_id.c_str());
    }
    return MQ_OK;
}

mq_status mq_member::check(bool check_generation) {
    if (closed()) return mq::fail_fixed(MQ_CLOSED, "the broker is closed");
    if (mq_status st = check_removed(); st != MQ_OK) return st;
    // Views of partitions taken from this member stayed valid until now: its next call.
    if (state->has_fenced.load()) membership().release_fenced(*state);
    membership().reap(broker->clock.now());
    if (state->removed.load()) {
        return mq::fail(MQ_ERR_FENCED,
                        "member %s was removed from group %s (no call within its session "
                        "timeout, or its group was unsubscribed); close it and join again",
                        state->member_id.c_str(), group->name.c_str());
    }
    const int64_t gen = membership().generation();
    if (check_generation && state->seen_generation.load() != gen) {
        return mq::fail(MQ_REBALANCED,
                        "group %s rebalanced to generation %lld; fetch the new assignment with "
                        "mq_member_get_assignment",
                        group->name.c_str(), static_cast<long long>(gen));
    }
    return MQ_OK;
}

// Spins up to the broker's spin_ns (never past the wait's deadline) until the member is
// signalled (a watched partition changed, a rebalance, close) or cancelled.
void mq_member::spin_for_signal(mq::Notifier &n, uint64_t seen, const mq::Wait &wait,
                                const mq::CancelScope &scope) {
    mq::spin_until_changed(n.signals, seen,
                           wait.spin_until_ns(mq::steady_now_ns(), broker->spin_ns),
                           [&] { return broker->closed() || scope.triggered(); });
}

namespace {
// The partitions a member poll's notifier watches: none for its first look, so that a poll that
// finds messages at once (or does not wait) locks each partition it looks at once; from the
// second look on, all of them, registered before that look so that a change between the look
// and the sleep wakes it.
// An asynchronous poll's runs share one registration (mq_member::Pending): a run that parks
// keeps it, so that a change before the next run wakes that run.
class Watching {
public:
    Watching(mq::Topic &t, mq::Notifier &n, std::vector<int32_t> &on, bool active = false)
        : t_(t), n_(n), on_(on), active_(active) {}
    ~Watching() {
        if (!kept_) clear();
    }
    bool active() const noexcept { return active_; }
    void start() noexcept { active_ = true; }
    void keep() noexcept { kept_ = true; }
    void set(const std::vector<int32_t> &parts) {
        if (parts == on_) return;
        clear();
        on_.reserve(parts.size());  // so that what is registered is always listed
        for (int32_t p : parts) {
            t_.partition(p).watch(&n_);
            on_.push_back(p);
        }
    }

private:
    void clear() noexcept {
        for (int32_t p : on_) t_.partition(p).unwatch(&n_);
        on_.clear();
    }
    mq::Topic &t_;
    mq::Notifier &n_;
    std::vector<int32_t> &on_;
    bool active_ = false;
    bool kept_ = false;
};
}  // namespace

mq_status mq_member::poll(mq_message *out, size_t max, mq::Wait wait, mq_cancel *cancel,
                          size_t *count, mq::CopyOut *copy, Pending *pending) {
    return poll_after(nullptr, out, max, wait, cancel, count, copy, pending);
}

mq_status mq_member::ack_poll(int32_t partition, int64_t offset, mq_message *out, size_t max,
                              mq::Wait wait, mq_cancel *cancel, size_t *count, mq::CopyOut *copy) {
    const Ack ack{partition, offset};
    return poll_after(&ack, out, max, wait, cancel, count, copy, nullptr);
}

mq_status mq_member::poll_after(const Ack *ack, mq_message *out, size_t max, mq::Wait wait,
                                mq_cancel *cancel, size_t *count, mq::CopyOut *copy,
                                Pending *pending) {
    Call call(*this);
    mq::Notifier &n = state->notifier;
    mq::CancelScope scope(cancel, n);
    thread_local std::vector<int32_t> parts, watched;  // reused: polling does not allocate
    Watching watching(*topic, n, pending ? pending->watched_ : watched,
                      pending && pending->watching_);
    bool spun = false;
    for (;;) {
        if (watching.active()) {  // before the checks: a signal from here on is kept
            std::lock_guard g(n.mu);
            n.signalled = false;
        }
        if (closing.load()) return mq::fail_fixed(MQ_CLOSED, "the member was closed");
        if (mq_status st = check(true); st != MQ_OK) return st;
        {
            std::lock_guard f(state->fetched_mu);
            parts.assign(state->fetched.begin(), state->fetched.end());
        }
        if (watching.active()) watching.set(parts);
        const uint64_t seen = n.signals.load(std::memory_order_acquire);
        const size_t k = parts.size();
        const uint32_t first = state->rotate.fetch_add(1, std::memory_order_relaxed);
        const int64_t *with_ack = nullptr;  // the ack rides with the first look if it can
        if (ack) {
            if (k && parts[first % k] == ack->partition) {
                with_ack = &ack->offset;
            } else if (mq_status st =
                           topic->partition(ack->partition).ack(group, caller(), ack->offset);
                       st != MQ_OK) {
                return st;
            }
            ack = nullptr;  // done (or riding): later rounds only poll
        }
        for (size_t i = 0; i < k; i++) {
            const int32_t p = parts[(first + i) % k];
            const mq_status st = mq::poll_group(topic->partition(p), group, caller(), out, max,
                                                mq::Wait{mq::Wait::kNone}, nullptr, count,
                                                i == 0 ? with_ack : nullptr, copy);
            if (i == 0 && with_ack && st != MQ_OK && st != MQ_TIMEOUT) return st;  // ack refused
            if (st == MQ_ERR_TOO_LARGE) return st;  // the copying poll's buffer: nothing fits
            if (st == MQ_OK) return st;
            if (st == MQ_TIMEOUT || st == MQ_ERR_FENCED) continue;  // fenced: a rebalance is on
            return st;
        }
        if (wait.over()) {
            *count = 0;
            return mq::fail_fixed(MQ_TIMEOUT, "nothing to hand out within the wait");
        }
        if (scope.triggered())
            return mq::fail_fixed(MQ_CANCELLED, "poll cancelled by its mq_cancel token");
        if (!watching.active()) {  // look once more, watching, before spinning or sleeping
            watching.start();
            continue;
        }
        if (wait.async) {
            int64_t change = INT64_MAX;  // before n.mu: the lock order is partition, notifier
            for (int32_t p : parts)
                change = std::min(change, topic->partition(p).next_change(group));
            std::lock_guard lk(n.mu);
            mq_status st = MQ_PENDING;
            if (!park(n, wait, change, &st)) continue;
            if (st == MQ_PENDING) {
                watching.keep();
                pending->watching_ = true;
            }
            return st;
        }
        if (!spun && broker->spin_ns > 0) {  // the wait strategy: spin once, then block
            spun = true;
            spin_for_signal(n, seen, wait, scope);
            continue;
        }
        // Sleep until a watched partition changes, or a lease / delayed nack of one runs out.
        const int64_t now = broker->clock.now();
        int64_t change = INT64_MAX;
        for (int32_t p : parts) change = std::min(change, topic->partition(p).next_change(group));
        bool timed = wait.kind == mq::Wait::kUntil;
        auto wake = wait.at;
        if (change != INT64_MAX) {
            auto t = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(std::max<int64_t>(change - now, 0));
            if (!timed || t < wake) wake = t;
            timed = true;
        }
        std::unique_lock lk(n.mu);
        while (!n.signalled && !scope.triggered() && !broker->closed() && !topic->deleted()) {
            state->sleeping++;
            bool timed_out = false;
            if (!timed) {
                n.not_empty.wait(lk);
            } else {
                timed_out = n.not_empty.wait_until(lk, wake) == std::cv_status::timeout;
            }
            state->sleeping--;
            if (timed_out) break;
        }
    }
}

bool mq_member::park(mq::Notifier &n, const mq::Wait &wait, int64_t change, mq_status *st) {
    if (n.signalled || broker->closed() || topic->deleted() || closing.load()) return false;
    if (change != INT64_MAX) change -= broker->clock.now();
    if (!wait.async->park(&n.not_empty, &n.parked, wait.wake_at_ns(change))) {
        *st = mq::fail_fixed(MQ_CLOSED, "the broker is closed");
    }
    return true;
}

mq_status mq_member::ack(int32_t partition, int64_t offset) {
    Call call(*this);
    if (mq_status st = check(true); st != MQ_OK) return st;
    return topic->partition(partition).ack(group, caller(), offset);
}

mq_status mq_member::nack(int32_t partition, int64_t delay_ns) {
    Call call(*this);
    if (mq_status st = check(true); st != MQ_OK) return st;
    return topic->partition(partition).nack(group, caller(), delay_ns);
}

mq_status mq_member::extend_lease(int32_t partition) {
    Call call(*this);
    if (mq_status st = check(true); st != MQ_OK) return st;
    return topic->partition(partition).extend_lease(group, caller());
}

mq_status mq_member::assignment(int64_t *generation, std::vector<int32_t> &out) {
    Call call(*this);
    if (mq_status st = check(false); st != MQ_OK) return st;
    return membership().fetch(*state, generation, out, true);
}
