// Cross-core ping-pong between two threads pinned to CPUs 0 and 1, to put latencies in context:
// spinning (a cache line bouncing between cores) and blocking (a futex sleep and wake each way,
// the price of a consumer that parks for every message). Each figure is one round trip.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "benches.h"

namespace suite {
namespace {

// Both sides share one word: the ping side writes odd values, the pong side even ones.
struct alignas(64) Ball {
    std::atomic<uint32_t> v{0};
};

void futex_wait(std::atomic<uint32_t> &w, uint32_t old) {
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&w), FUTEX_WAIT_PRIVATE, old, nullptr, nullptr,
            0);
}
void futex_wake(std::atomic<uint32_t> &w) {
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&w), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
            0);
}

template <bool kBlocking>
Latency run(uint64_t rounds) {
    Ball ball;
    std::vector<int64_t> rtt(rounds);
    std::thread pong([&] {
        pin_to_cpu(1);
        for (uint32_t i = 0; i < rounds; ++i) {
            uint32_t want = 2 * i + 1;
            unsigned spins = 0;
            while (ball.v.load(std::memory_order_acquire) != want) {
                if constexpr (kBlocking) {
                    futex_wait(ball.v, 2 * i);
                } else if (++spins % 4096 == 0) {
                    sched_yield();  // the peer was descheduled: do not burn the slice
                } else {
                    __builtin_ia32_pause();
                }
            }
            ball.v.store(want + 1, std::memory_order_release);
            if constexpr (kBlocking) futex_wake(ball.v);
        }
    });
    pin_to_cpu(0);
    for (uint32_t i = 0; i < rounds; ++i) {
        int64_t t0 = now_ns();
        ball.v.store(2 * i + 1, std::memory_order_release);
        if constexpr (kBlocking) futex_wake(ball.v);
        unsigned spins = 0;
        while (ball.v.load(std::memory_order_acquire) != 2 * i + 2) {
            if constexpr (kBlocking) {
                futex_wait(ball.v, 2 * i + 1);
            } else if (++spins % 4096 == 0) {
                sched_yield();
            } else {
                __builtin_ia32_pause();
            }
        }
        rtt[i] = now_ns() - t0;
    }
    pong.join();
    pin_to_cpu(-1);
    if (ball.v.load() != 2 * rounds) fail("ping-pong", "lost a round trip");
    return percentiles(rtt);
}

}  // namespace

Latency bench_pingpong_spin(uint64_t rounds) { return run<false>(rounds); }
Latency bench_pingpong_blocking(uint64_t rounds) { return run<true>(rounds); }

}  // namespace suite
