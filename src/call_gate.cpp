#include "call_gate.h"

namespace mq {

CallGate::Shard &CallGate::shard() noexcept {
    static std::atomic<unsigned> next_thread{0};
    thread_local const unsigned index =
        next_thread.fetch_add(1, std::memory_order_relaxed) % kShards;
    return shards_[index];
}

}  // namespace mq
