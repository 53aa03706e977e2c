// How callers wait on one partition: the one wait loop that publishers (waiting for room) and
// polls (waiting for messages) share, the counters spinning pollers watch, and the wake-ups.
// The partition's lock is the Waitable's mutex; everything here is guarded by it except
// `changes_`, which spinning pollers read without it.
// Model-checked: tests/model/wake.pml (names mapped in tests/model/README.md: Waiting::wait is
// publisher_wait and the poll loop, block() sleeps on nf/ne, `pending` is the poll's `owed`, send
// and publishers_to_wake keep their names).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "util/async_waits.h"
#include "util/call_gate.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/sync.h"
#include "util/wait.h"
#include "util/waitable.h"

namespace mq {

// Who to wake once the lock is released: waking is decided under the lock and, on the hot
// paths (publish, ack), sent after it, so a woken thread does not at once block on a lock its
// waker still holds.
struct Wakeup {
    bool consumers = false;
    int64_t publishers = 0;  // notify_one this many times; INT64_MAX: notify_all
};

// What a waiting call's check found, each time the loop runs it (under the lock).
struct Pending {
    bool done = false;
    mq_status status = MQ_OK;  // when done
    // Broker-clock nanoseconds until the caller's state changes by itself (a lease runs out, a
    // delayed nack ends, the oldest message ages out), so the wait ends by then; INT64_MAX: no
    // such change.
    int64_t change_in_ns = INT64_MAX;
    const char *timeout_text = nullptr;  // the fixed text if the wait ends now (else the side's)

    static Pending finished(mq_status st) noexcept { return {true, st}; }
};

class Waiting {
public:
    enum Side { kPublisher, kConsumer };

    Waiting(const std::atomic<bool> &closed, int64_t spin_ns, AsyncWaits *async)
        : closed_(closed), spin_ns_(spin_ns) {
        w_.async = async;
    }

    Waitable &waitable() noexcept { return w_; }
    Mutex &mutex() noexcept { return w_.mu; }
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    // Under the lock: the topic was deleted (mq_topic_delete). Every wait loop ends with
    // MQ_ERR_NO_TOPIC from then on; the caller wakes the waiters.
    void mark_deleted() noexcept {
        deleted_ = true;
        announce();
    }

    // Under the lock: something a waiting consumer may want happened (a publish, a nack, a
    // group gone). True if a poll is blocked and must be sent a wake-up.
    bool announce() noexcept {
        changes_.store(changes_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        if (!w_.watchers.empty()) w_.signal_watchers();
        if (w_.async) w_.async->poke(&w_.not_empty, w_.parked);
        return pollers_waiting_ > 0;
    }
    // Under the lock: how many blocked publishers to wake when `freed` messages left. One per
    // message is enough when only the count limits them; a byte budget (`by_bytes`) may let any
    // of them (or none) fit, so then all of them look.
    int64_t publishers_to_wake(int64_t freed, bool by_bytes) const noexcept {
        if (freed > 0 && w_.async) w_.async->poke(&w_.not_full, w_.parked);
        if (!publishers_waiting_ || freed <= 0) return 0;
        if (by_bytes || freed >= publishers_waiting_) return INT64_MAX;
        return freed;
    }
    void send(const Wakeup &w) noexcept {  // without the lock
        if (w.consumers) w_.not_empty.notify_all();
        if (w.publishers == INT64_MAX) {
            w_.not_full.notify_all();
        } else {
            for (int64_t i = 0; i < w.publishers; i++) w_.not_full.notify_one();
        }
    }
    int64_t producer_waits() const noexcept { return producer_waits_; }

    // The wait loop. Each round, under the lock: closed? then `step()` (the caller's check, which
    // reads the clock and enforces the partition's rules); if it is not done, the wait's end
    // (MQ_FULL or MQ_TIMEOUT with a fixed text), the cancel token, one spin (consumers, with the
    // broker's spin_ns), else block until woken, the deadline, or the step's change_in_ns.
    // `waited` is set (and producer_waits counted) the first time a publisher blocks.
    //
    // `pending` (may be null): wake-ups the caller owes from before the loop (an ack+poll's
    // freed room). They are sent, without the lock, before the loop first spins or blocks, so
    // no publisher sleeps through the room while the caller waits; otherwise the caller sends
    // them after unlocking.
    template <class Step>
    mq_status wait(std::unique_lock<Mutex> &lk, Side side, Wait &wait, const CancelScope &cancel,
                   bool &waited, Step &&step, Wakeup *pending = nullptr) {
        bool spun = false;
        for (;;) {
            if (closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
            if (deleted_) {
                return fail_fixed(MQ_ERR_NO_TOPIC,
                                  "the topic was deleted (mq_topic_delete) during the call");
            }
            const Pending p = step();
            if (p.done) return p.status;
            if (wait.over()) {
                if (side == kConsumer) {
                    return fail_fixed(MQ_TIMEOUT, p.timeout_text ? p.timeout_text
                                                                 : "nothing to hand out within "
                                                                   "the wait");
                }
                return fail_fixed(MQ_FULL,
                                  "the partition stayed full for the whole wait (its backlog at "
                                  "capacity, or its byte budget used)");
            }
            if (cancel.triggered()) {
                return fail_fixed(MQ_CANCELLED, side == kConsumer
                                                    ? "poll cancelled by its mq_cancel token"
                                                    : "publish cancelled by its mq_cancel token");
            }
            if (pending && (pending->publishers || pending->consumers)) {  // owed first
                const Wakeup w = *pending;
                *pending = Wakeup{};
                lk.unlock();
                send(w);
                lk.lock();
                continue;
            }
            if (wait.async) [[unlikely]]
                return park(side, wait, waited, p.change_in_ns);
            if (side == kConsumer && !spun && spin_ns_ > 0) {  // spin once, then block
                spun = true;
                spin(lk, wait);
                continue;
            }
            if (side == kPublisher && !waited) {
                waited = true;
                producer_waits_++;
            }
            block(lk, side, wait, p.change_in_ns);
        }
    }

private:
    // An asynchronous call, where a blocking one would spin or sleep: parked on the condition
    // variable it would sleep on (what wakes that pokes it), or MQ_CLOSED if the broker closes.
    mq_status park(Side side, const Wait &wait, bool &waited, int64_t change_in_ns) {
        waited = true;
        if (side == kPublisher && !wait.async->waited) producer_waits_++;
        wait.async->waited = true;
        const CondVar &cv = side == kConsumer ? w_.not_empty : w_.not_full;
        if (!wait.async->park(&cv, &w_.parked, wait.wake_at_ns(change_in_ns)))
            return fail_fixed(MQ_CLOSED, "the broker is closed");
        return MQ_PENDING;
    }

    // Spins without the lock up to spin_ns, never past the wait's deadline, until `changes_`
    // moves (or the broker closes).
    void spin(std::unique_lock<Mutex> &lk, const Wait &wait) noexcept {
        const uint64_t seen = changes_.load(std::memory_order_acquire);
        lk.unlock();
        spin_until_changed(changes_, seen, wait.spin_until_ns(steady_now_ns(), spin_ns_),
                           [&] { return closed_.load(std::memory_order_relaxed); });
        lk.lock();
    }
    void block(std::unique_lock<Mutex> &lk, Side side, const Wait &wait, int64_t change_in_ns) {
        CondVar &cv = side == kConsumer ? w_.not_empty : w_.not_full;
        int &waiting = side == kConsumer ? pollers_waiting_ : publishers_waiting_;
        bool timed = wait.kind == Wait::kUntil;
        auto wake = wait.at;
        if (change_in_ns != INT64_MAX) {
            const auto t = std::chrono::steady_clock::now() +
                           std::chrono::nanoseconds(std::max<int64_t>(change_in_ns, 0));
            if (!timed || t < wake) wake = t;
            timed = true;
        }
        waiting++;
        {
            // The sleep holds back no reclamation (call_gate.h); the lock is held while the
            // call parks, so a close or deletion (which notify under it) cannot slip past.
            const Parked parked(wait.parks);
            if (timed) {
                cv.wait_until(lk, wake);
            } else {
                cv.wait(lk);
            }
        }
        waiting--;
    }

    Waitable w_;
    const std::atomic<bool> &closed_;
    const int64_t spin_ns_;
    // Bumped (under the lock) whenever a waiting consumer may have something new: what spinning
    // pollers watch instead of the condition variable. On a cache line of its own, so the
    // fields written on every call do not make the spinners' line bounce.
    alignas(64) std::atomic<uint64_t> changes_{0};
    alignas(64) int pollers_waiting_ = 0;
    int publishers_waiting_ = 0;
    int64_t producer_waits_ = 0;
    bool deleted_ = false;
};

}  // namespace mq
