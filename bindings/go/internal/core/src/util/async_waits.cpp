#include "util/async_waits.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "util/cancel.h"
#include "util/clock.h"
#include "util/error.h"

namespace mq {

struct AsyncWaits::State final : AsyncWake {
    struct Call final : AsyncCall {
        State *s = nullptr;
        uint64_t id = 0;
        AsyncRun run;
        mq_cancel *cancel = nullptr;
        mq_done_fn done = nullptr;
        void *user = nullptr;
        bool running = true;  // a run is under way (the caller's first, or the completer's)
        bool parked = false;  // in by_key (and timers, with a wake_at)
        bool due = false;     // to run again: poked, its time came, cancelled, or closing
        bool queued = false;  // in ready
        const void *key = nullptr;
        std::atomic<int32_t> *count = nullptr;  // its key's owner's parked count
        int64_t wake_at = INT64_MAX;

        bool park(const void *k, std::atomic<int32_t> *n, int64_t at) noexcept override {
            return s->park(*this, k, n, at);
        }
    };

    std::mutex mu;
    std::condition_variable cv;
    std::unordered_map<uint64_t, std::unique_ptr<Call>> calls;  // every call not yet completed
    std::unordered_multimap<const void *, Call *> by_key;
    std::set<std::pair<int64_t, uint64_t>> timers;  // (wake_at, id) of parked calls
    std::deque<Call *> ready;                       // due, not running: for the completer
    uint64_t next_id = 1;
    bool closing = false;
    bool started = false;
    std::thread thread;
    std::thread::id completer;
    std::mutex join_mu;  // close() from two threads at once: one joins

    bool park(Call &c, const void *key, std::atomic<int32_t> *count, int64_t at) noexcept {
        std::lock_guard lk(mu);
        if (closing) return false;
        if (c.due) return true;  // poked while it ran: it runs again as soon as this run ends
        c.parked = true;
        c.key = key;
        c.count = count;
        // Raised under the key owner's lock, which its pokes test the count under: a poke never
        // misses this call. Lowered anywhere (unpark): at worst a poke finds nobody.
        count->fetch_add(1, std::memory_order_relaxed);
        c.wake_at = at;
        by_key.emplace(key, &c);
        if (at != INT64_MAX) {
            const bool first = timers.empty() || at < timers.begin()->first;
            timers.emplace(at, c.id);
            if (first) cv.notify_one();  // the completer may sleep past it
        }
        return true;
    }

    void unpark(Call &c) noexcept {  // under mu
        if (!c.parked) return;
        auto [lo, hi] = by_key.equal_range(c.key);
        for (auto it = lo; it != hi; ++it) {
            if (it->second == &c) {
                by_key.erase(it);
                break;
            }
        }
        if (c.wake_at != INT64_MAX) timers.erase({c.wake_at, c.id});
        c.parked = false;
        // The owner outlives the call's stay: deletion and close poke (unpark) every call
        // parked on a partition before it can go.
        c.count->fetch_sub(1, std::memory_order_relaxed);
    }

    void make_due(Call &c) noexcept {  // under mu
        unpark(c);
        c.due = true;
        if (!c.running && !c.queued) {
            c.queued = true;
            ready.push_back(&c);
            cv.notify_one();
        }
    }

    void poke(const void *key) noexcept {
        std::lock_guard lk(mu);
        for (auto it = by_key.find(key); it != by_key.end(); it = by_key.find(key))
            make_due(*it->second);
    }

    void wake(uint64_t id) noexcept override {  // a cancel token, under its lock
        std::lock_guard lk(mu);
        if (auto it = calls.find(id); it != calls.end()) make_due(*it->second);
    }

    // After a run of `c` returned `st`, without mu: null while the call is still pending, else
    // the call, taken out (its completion is the caller's to deliver).
    std::unique_ptr<Call> after_run(Call &c, mq_status st) noexcept {
        std::lock_guard lk(mu);
        c.running = false;
        if (st == MQ_PENDING) {
            if (c.parked) return nullptr;
            if (c.due) {  // poked during the run: again now
                c.queued = true;
                ready.push_back(&c);
                cv.notify_one();
                return nullptr;
            }
            st = MQ_ERR_INTERNAL;  // a run that neither finished nor parked: never left hanging
            fail_fixed(st, "internal error: an asynchronous call returned pending without waiting");
        }
        return take(c);
    }

    std::unique_ptr<Call> take(Call &c) noexcept {  // under mu
        unpark(c);
        auto it = calls.find(c.id);
        std::unique_ptr<Call> owned = std::move(it->second);
        calls.erase(it);
        return owned;
    }

    void unhook(Call &c) noexcept {
        if (!c.cancel) return;
        {
            std::lock_guard g(c.cancel->mu);
            if (c.cancel->async == this && c.cancel->async_call == c.id) c.cancel->async = nullptr;
        }
        c.cancel->release();
        c.cancel = nullptr;
    }

    void complete(std::unique_ptr<Call> c, mq_status st) noexcept {  // on the completer, no lock
        unhook(*c);
        try {
            c->done(c->user, st);
        } catch (...) {  // a C++ callback that throws: nothing of it may cross into mq
        }
    }

    static thread_local const State *completing;  // the State whose completer this thread is

    void loop() noexcept {
        completing = this;
        std::unique_lock lk(mu);
        for (;;) {
            const int64_t now = steady_now_ns();
            while (!timers.empty() && timers.begin()->first <= now)
                make_due(*calls.at(timers.begin()->second));
            if (!ready.empty()) {
                Call &c = *ready.front();
                ready.pop_front();
                c.queued = false;
                c.due = false;
                if (closing) {  // its run would find the broker closed: no run touches it now
                    std::unique_ptr<Call> owned = take(c);
                    lk.unlock();
                    fail_fixed(MQ_CLOSED, "the broker was closed while the call waited");
                    complete(std::move(owned), MQ_CLOSED);
                    lk.lock();
                    continue;
                }
                c.running = true;
                lk.unlock();
                const mq_status st = c.run(c);
                if (std::unique_ptr<Call> done = after_run(c, st)) complete(std::move(done), st);
                lk.lock();
                continue;
            }
            if (closing && calls.empty()) return;
            if (timers.empty()) {
                cv.wait(lk);
            } else {
                const int64_t at = timers.begin()->first;
                cv.wait_until(lk,
                              std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at)));
            }
        }
    }
};

thread_local const AsyncWaits::State *AsyncWaits::State::completing = nullptr;

AsyncWaits::AsyncWaits() : s_(std::make_shared<State>()) {}

bool AsyncWaits::in_completer() const noexcept { return State::completing == s_.get(); }

AsyncWaits::~AsyncWaits() { close(); }

mq_status AsyncWaits::start(AsyncRun run, mq_cancel *cancel, mq_done_fn done, void *user) {
    State &s = *s_;
    auto owned = std::make_unique<State::Call>();
    State::Call &c = *owned;
    c.s = &s;
    c.run = std::move(run);
    c.done = done;
    c.user = user;
    {
        std::lock_guard lk(s.mu);
        if (!s.started && !s.closing) {
            s.thread = std::thread([keep = s_] { keep->loop(); });
            s.completer = s.thread.get_id();
            s.started = true;
        }
        c.id = s.next_id++;
        s.calls.emplace(c.id, std::move(owned));
    }
    if (cancel) {
        cancel->add_ref();
        c.cancel = cancel;
        std::lock_guard g(cancel->mu);
        cancel->async = &s;
        cancel->async_call = c.id;
    }
    const mq_status st = c.run(c);
    std::unique_ptr<State::Call> finished = s.after_run(c, st);
    if (!finished) return MQ_PENDING;
    s.unhook(*finished);
    return st;
}

void AsyncWaits::poke_slow(const void *key) noexcept { s_->poke(key); }

void AsyncWaits::close() noexcept {
    State &s = *s_;
    {
        std::lock_guard lk(s.mu);
        s.closing = true;
        for (auto &[id, c] : s.calls) s.make_due(*c);
        s.cv.notify_one();
    }
    std::lock_guard j(s.join_mu);
    if (!s.thread.joinable()) return;
    if (std::this_thread::get_id() == s.completer) {
        s.thread.detach();  // a callback closed the broker: the loop ends after it returns
    } else {
        s.thread.join();
    }
}

}  // namespace mq
