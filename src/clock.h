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

// Converts a wait in milliseconds (-1 = forever) to an absolute steady-clock deadline.
struct Deadline {
    bool forever;
    std::chrono::steady_clock::time_point at;

    static Deadline after_ms(int64_t wait_ms) noexcept {
        if (wait_ms < 0) return {true, {}};
        return {false, std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms)};
    }
    bool passed() const noexcept { return !forever && std::chrono::steady_clock::now() >= at; }
};

}  // namespace mq
