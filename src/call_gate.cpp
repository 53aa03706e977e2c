#include "call_gate.h"

namespace mq {

unsigned CallGate::assign_shard() noexcept {
    static std::atomic<unsigned> next_thread{0};
    return next_thread.fetch_add(1, std::memory_order_relaxed) % kShards + 1;
}

}  // namespace mq
