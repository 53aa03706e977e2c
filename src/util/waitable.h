// The lock and the two condition variables of one partition (the bounded-buffer pattern), kept
// apart from the partition's rules so that close and cancel can wake it.
// Model-checked: tests/model/wake.pml (mu, nf = not_full, ne = not_empty, wake_all; names mapped in
// tests/model/README.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "util/async_waits.h"
#include "util/sync.h"

namespace mq {

struct Notifier;

struct Waitable {
    Mutex mu;
    CondVar not_full;   // publishers wait here for space
    CondVar not_empty;  // pollers wait here for messages, nacks and leases
    // Group members waiting on several partitions at once; guarded by mu. Signalled whenever
    // not_empty is (lock order: partition, then notifier).
    std::vector<Notifier *> watchers;
    // The broker's asynchronous calls (async_waits.h): those parked here are keyed by the
    // condition variable they would sleep on, and poked wherever it is notified.
    AsyncWaits *async = nullptr;
    // How many of them are parked here now (AsyncCall::park): raised under mu, so a poke
    // under mu that reads 0 has nobody to poke.
    std::atomic<int32_t> parked{0};

    void signal_watchers();  // with mu held
    void wake_all() {
        std::lock_guard g(mu);
        not_full.notify_all();
        not_empty.notify_all();
        signal_watchers();
        if (async) {
            async->poke(&not_full, parked);
            async->poke(&not_empty, parked);
        }
    }
};

// What a member polling several partitions sleeps on: any of them (or a rebalance, close or
// cancel) sets `signalled` and wakes it.
struct Notifier : Waitable {
    bool signalled = false;  // guarded by mu
    // Bumped by every signal: what a member poll spinning before it sleeps watches.
    std::atomic<uint64_t> signals{0};

    void signal() {
        std::lock_guard g(mu);
        signalled = true;
        signals.fetch_add(1, std::memory_order_release);
        not_empty.notify_all();
        if (async) async->poke(&not_empty, parked);  // asynchronous member polls parked here
    }
};

inline void Waitable::signal_watchers() {
    for (Notifier *n : watchers) n->signal();
}

}  // namespace mq
