// How long a blocking call may wait.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace mq {

class AsyncCall;
class GateScope;

// A wait in milliseconds, turned into a deadline the first time the call would block (most
// calls never block, and reading the clock is not free). Once started, copies share the
// deadline: a poll that dead-letters hands its wait to the dead-letter publish, and the whole
// poll still ends by the one deadline.
struct Wait {
    enum Kind { kNone, kUntil, kForever } kind;
    int64_t ms = 0;
    std::chrono::steady_clock::time_point at{};
    bool started = false;
    // The broker call that sleeps in this wait, to park while it sleeps (call_gate.h); NULL for
    // member and push-loop waits, which are outside the gate.
    GateScope *parks = nullptr;
    // Set for an asynchronous call (async_waits.h): where it would spin or sleep, it parks there
    // and the call returns MQ_PENDING.
    AsyncCall *async = nullptr;

    static Wait from_ms(int64_t wait_ms, GateScope *parks = nullptr) noexcept {
        if (wait_ms == 0) return {kNone, 0, {}, false, parks};
        if (wait_ms < 0) return {kForever, 0, {}, false, parks};
        return {kUntil, wait_ms, {}, false, parks};
    }
    // Fixes the deadline now (a batch shares one deadline across its partitions).
    void start() noexcept {
        if (kind == kUntil && !started) {
            at = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
            started = true;
        }
    }
    // Where a spin of spin_ns starting now must stop: no later than the deadline.
    int64_t spin_until_ns(int64_t now_ns, int64_t spin_ns) const noexcept {
        const int64_t until = now_ns + spin_ns;
        if (kind != kUntil || !started) return until;
        const int64_t at_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
        return std::min(until, at_ns);
    }
    // When a wait that must also end `change_in_ns` from now (INT64_MAX: no such change) is
    // over, on steady_now_ns()'s scale; INT64_MAX: never.
    int64_t wake_at_ns(int64_t change_in_ns) const noexcept {
        int64_t at_ns = INT64_MAX;
        if (kind == kUntil && started) {
            at_ns =
                std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
        }
        if (change_in_ns != INT64_MAX) {
            const auto t = std::chrono::steady_clock::now() +
                           std::chrono::nanoseconds(std::max<int64_t>(change_in_ns, 0));
            at_ns = std::min<int64_t>(
                at_ns,
                std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
        }
        return at_ns;
    }
    bool over() noexcept {
        if (kind != kUntil) return kind == kNone;
        if (!started) {
            start();
            return false;
        }
        return std::chrono::steady_clock::now() >= at;
    }
};

}  // namespace mq
