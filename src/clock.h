// The broker's clock: injectable for leases and timestamps, so tests move time by hand. Waits
// themselves always run on the real steady clock (a manual clock never advances by itself).
#pragma once

#include <chrono>
#include <cstdint>

#include "mq.h"

namespace mq {

inline int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Clock {
    mq_clock_fn fn = nullptr;
    void *user = nullptr;
    int64_t now() const noexcept { return fn ? fn(user) : steady_now_ns(); }
};

}  // namespace mq
