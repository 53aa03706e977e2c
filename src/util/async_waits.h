// Calls that wait without a thread (mq.h, "Asynchronous calls").
//
// An asynchronous call runs exactly as its blocking form does, on the caller's thread, until
// the wait loop would spin or sleep. There, still under the lock of what it waits on, it parks
// here (AsyncCall::park) instead and returns MQ_PENDING. Whatever would have woken a sleeping
// caller (a publish, an ack that makes room, a nack, an unsubscribe, a deletion, close, the
// cancel token) pokes the key it parked on instead, and a time it gave (its deadline, a lease
// running out) is kept on a timer. One thread per broker, the completer, then runs the call
// again with the same deadline; a run that ends it (done, timed out, cancelled, closed, failed)
// is followed by the caller's callback, with no lock of the library held.
//
// So a pending call costs a record here and an entry in one or two maps, never a thread; and
// its outcome is the blocking form's, because the same code decides it.
//
// Lock order: a key's lock (partition, member notifier), then this class's; a cancel token's
// lock, then this class's. The completer never holds this class's lock while it runs a call or
// a callback, so a callback may call anything (another asynchronous call, close, free).
// Model-checked: tests/model/wake.pml (-DASYNC, -DASYNC_PUB: the park under the partition
// lock, the pokes of announce, publishers_to_wake and wake_all, due-while-running, close).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "mq.h"

namespace mq {

// What a cancel token (cancel.h) calls when it is triggered during an asynchronous call.
struct AsyncWake {
    virtual void wake(uint64_t call) noexcept = 0;

protected:
    ~AsyncWake() = default;
};

// One pending call, as its wait loop sees it (Wait::async).
class AsyncCall {
public:
    // Under the lock of `key`'s owner, where a blocking call would sleep: the run found nothing
    // to do and waits until `key` is poked or until `wake_at_ns` (steady clock; INT64_MAX:
    // never). `parked` is the owner's count of calls parked on its keys: raised here while the
    // call is parked (the owner's pokes test it under the same lock), lowered when it leaves.
    // False: the broker is closing, and the run ends with MQ_CLOSED.
    virtual bool park(const void *key, std::atomic<int32_t> *parked,
                      int64_t wake_at_ns) noexcept = 0;

    // Set by the first park: a publish that waits is counted once (producer_waits), however
    // many runs it takes.
    bool waited = false;

protected:
    ~AsyncCall() = default;
};

// One run of a pending call: its blocking form's body with the call's wait.
using AsyncRun = std::function<mq_status(AsyncCall &call)>;

class AsyncWaits {
public:
    AsyncWaits();
    ~AsyncWaits();  // closes
    AsyncWaits(const AsyncWaits &) = delete;
    AsyncWaits &operator=(const AsyncWaits &) = delete;

    // Runs `run` once on this thread. If it parked, returns MQ_PENDING and calls done(user, st)
    // exactly once later, on the completer thread, with mq_last_error() set there for the
    // failure statuses (possibly before this returns). Otherwise returns the run's status and
    // never calls done. `cancel` (may be NULL) is held and hooked for the call's life. Throws
    // only before the run (bad_alloc, system_error: no thread), leaving nothing behind.
    mq_status start(AsyncRun run, mq_cancel *cancel, mq_done_fn done, void *user);

    // Under the lock of `key`'s owner, when what its waiters wait for may have happened;
    // `parked` is the owner's count (park): nothing to do, and no lock taken, while no call is
    // parked there, whatever is parked elsewhere on the broker.
    void poke(const void *key, const std::atomic<int32_t> &parked) noexcept {
        if (parked.load(std::memory_order_relaxed) != 0) poke_slow(key);
    }

    // True on this broker's completer thread (in a callback, or a run): there nothing may wait
    // for a pending call of the broker to complete.
    bool in_completer() const noexcept;

    // Every pending call completes with MQ_CLOSED (their runs would find the broker closed),
    // and later runs refuse to park. Waits for the completer to finish them, unless called
    // from a callback (then the completer finishes them after it returns).
    void close() noexcept;

    struct State;

private:
    void poke_slow(const void *key) noexcept;

    std::shared_ptr<State> s_;  // the completer thread holds it too
};

}  // namespace mq
