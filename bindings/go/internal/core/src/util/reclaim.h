// Deferred reclamation (epoch-based, on the broker's call gate): what a lock-free reader may
// still hold (a topic-table generation, a group-list snapshot, the table's reference to a
// deleted topic or a topic's to an unsubscribed group) is retired here once it is unlinked, and
// freed once the gate's epoch has moved two past the retirement (call_gate.h): every call that
// could have seen it has left by then.
//
// Nothing here blocks: collect() moves the epoch on when it can and frees what is due; the
// broker calls it on every change of topics or groups (never on the per-message path), so at
// most a few changes' worth waits at any time. A call asleep in a wait parks (call_gate.h): it
// then holds references on its topic and group instead of the epoch, so it holds nothing else
// back. A call running (not asleep) holds the epoch until it leaves; nothing is freed early.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "util/call_gate.h"

namespace mq {

class Reclaimer {
public:
    using Free = void (*)(void *);

    explicit Reclaimer(CallGate &gate) : gate_(gate) {}
    ~Reclaimer() { free_all(); }
    Reclaimer(const Reclaimer &) = delete;
    Reclaimer &operator=(const Reclaimer &) = delete;

    // After `p` is unlinked (no new call can find it): free(p) once no call can still see it.
    // Cannot fail: space for the entry is reserved by reserve(), called before the unlinking.
    void retire(void *p, Free free) noexcept;
    void reserve(size_t n);  // may throw bad_alloc, then nothing changed
    // Frees what is due, under the reclaimer's lock: a free must take no lock and retire
    // nothing (topic, group, snapshot and table destructors only release references).
    void collect() noexcept;
    // When no call can be inside any more (the broker's memory is going).
    void free_all() noexcept;

    size_t pending() const;  // retired and not yet freed (for tests)

private:
    struct Retired {
        uint64_t epoch;
        void *p;
        Free free;
    };
    CallGate &gate_;
    mutable std::mutex mu_;
    std::vector<Retired> retired_;  // in retirement order, so epochs never decrease
    size_t reserved_ = 0;           // entries reserve() promised retire()
};

}  // namespace mq
