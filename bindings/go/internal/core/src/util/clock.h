// The broker's clock: injectable for leases and timestamps, so tests move time by hand. Waits
// themselves always run on the real steady clock (a manual clock never advances by itself).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

#include "mq.h"

namespace mq {

inline int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The system's monotonic clock as of its last tick: a few nanoseconds to read instead of
// tens, never ahead of steady_now_ns() and behind it by less than coarse_tick_ns().
inline int64_t coarse_now_ns() noexcept {
#if defined(CLOCK_MONOTONIC_COARSE)
    timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#endif
    return steady_now_ns();
}
// Its resolution, read once (0 where there is no coarse clock).
inline int64_t coarse_tick_ns() noexcept {
    static const int64_t tick = [] {
#if defined(CLOCK_MONOTONIC_COARSE)
        timespec res;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
            return static_cast<int64_t>(res.tv_sec) * 1000000000 + res.tv_nsec;
#endif
        return int64_t{0};
    }();
    return tick;
}

struct Clock {
    mq_clock_fn fn = nullptr;
    void *user = nullptr;
    int64_t now() const noexcept { return fn ? fn(user) : steady_now_ns(); }
    // For deadlines that may come late but never early (leases, delayed nacks, expiry): a
    // reading at most `lag()` behind now(). The caller adds lag() to a deadline it sets.
    int64_t coarse() const noexcept { return fn ? fn(user) : coarse_now_ns(); }
    int64_t lag() const noexcept { return fn ? 0 : coarse_tick_ns(); }
};

}  // namespace mq
