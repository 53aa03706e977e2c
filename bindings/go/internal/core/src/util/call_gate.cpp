#include "util/call_gate.h"

namespace mq {
namespace {
// Shared by every gate, and never destroyed: a leaving call may still signal it after the gate
// it left (and the broker around it) has gone.
struct Drainers {
    std::mutex mu;
    std::condition_variable cv;
};
Drainers &drainers() noexcept {
    static Drainers *d = new Drainers;
    return *d;
}
}  // namespace

unsigned CallGate::assign_shard() noexcept {
    static std::atomic<unsigned> next_thread{0};
    return next_thread.fetch_add(1, std::memory_order_relaxed) % kShards + 1;
}

void CallGate::wake_drainers() noexcept {
    Drainers &d = drainers();
    std::lock_guard g(d.mu);  // so a drainer between its check and its wait cannot miss it
    d.cv.notify_all();
}

void CallGate::drain() {
    Drainers &d = drainers();  // constructed before any call can need it
    for (Shard &s : shards_) {
        for (auto &c : s.count) c.fetch_or(kDraining, std::memory_order_seq_cst);
    }
    std::unique_lock lk(d.mu);
    d.cv.wait(lk, [this] { return idle(); });
}

}  // namespace mq
