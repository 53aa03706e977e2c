// The hardware's limit for a hand-off between two threads: a lock-free single-producer
// single-consumer ring of 64-byte slots. Power-of-two slots; head and tail on their own cache
// lines; each side caches the other's index and rereads it only when it seems to have run out;
// the producer publishes its index every 16 messages (and when it would otherwise wait), the
// consumer after each run of messages it drains.
#include <sched.h>

#include <atomic>
#include <thread>

#include "benches.h"

namespace suite {
namespace {

constexpr size_t kSlots = 1024;
constexpr uint64_t kPublishEvery = 16;

struct alignas(64) Ring {
    alignas(64) std::atomic<uint64_t> tail{0};  // written by the producer
    alignas(64) std::atomic<uint64_t> head{0};  // written by the consumer
    alignas(64) Msg slots[kSlots];
};

// Spinning costs a CPU; on a shared 2-core machine the peer thread may be descheduled, so a
// side that has spun for a while yields instead of burning its whole time slice.
inline void relax(unsigned &spins) {
    if (++spins < 64) {
        __builtin_ia32_pause();
    } else {
        spins = 0;
        sched_yield();
    }
}

}  // namespace

double bench_ring(uint64_t n) {
    static Ring ring;  // 64 KiB: not on the stack
    ring.tail.store(0);
    ring.head.store(0);
    Verifier v{"ring"};

    std::thread consumer([&] {
        uint64_t head = 0, tail_cache = 0;
        unsigned spins = 0;
        while (head < n) {
            if (head == tail_cache) {
                tail_cache = ring.tail.load(std::memory_order_acquire);
                if (head == tail_cache) {
                    relax(spins);
                    continue;
                }
            }
            for (; head < tail_cache; ++head) v.take(ring.slots[head & (kSlots - 1)].b, kPayload);
            ring.head.store(head, std::memory_order_release);
        }
    });

    double t0 = now_s();
    uint64_t head_cache = 0;
    unsigned spins = 0;
    for (uint64_t tail = 0; tail < n;) {
        if (tail - head_cache == kSlots) {
            ring.tail.store(tail, std::memory_order_release);  // let the consumer drain
            head_cache = ring.head.load(std::memory_order_acquire);
            if (tail - head_cache == kSlots) {
                relax(spins);
                continue;
            }
        }
        fill(ring.slots[tail & (kSlots - 1)], tail);
        ++tail;
        if (tail % kPublishEvery == 0 || tail == n)
            ring.tail.store(tail, std::memory_order_release);
    }
    consumer.join();
    double elapsed = now_s() - t0;
    v.finish(n, expected_digest(0, n), "consumer");
    return double(n) / elapsed;
}

}  // namespace suite
