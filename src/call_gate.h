// Counts the calls inside a broker so that mq_broker_free can wait for them to leave.
//
// Every API call enters and leaves, so the count is spread over cache-line-sized shards picked
// per thread: publishers on different cores do not bounce one shared counter between them.
//
// The gate is destroyed as soon as drain() returns (the broker's memory may go then), so a
// leaving call must not touch it once its decrement may have let drain return. Hence drain
// marks every shard with a flag bit, and leave learns of it from its own decrement (one atomic
// read-modify-write, totally ordered with the marking): a call that leaves while the gate
// drains wakes it through a process-wide condition variable, never through the gate.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace mq {

class CallGate {
public:
    void enter() noexcept { shard().count.fetch_add(1, std::memory_order_seq_cst); }
    void leave() noexcept {
        const int64_t before = shard().count.fetch_sub(1, std::memory_order_seq_cst);
        if (before & kDraining) wake_drainers();  // touches no member: the gate may be gone
    }
    // Returns once no call is inside. Calls that enter afterwards are the caller's bug.
    void drain();

    // How many calls are inside (for drain, and tests).
    int64_t inside() const noexcept {
        int64_t n = 0;
        for (const Shard &s : shards_) n += s.count.load(std::memory_order_seq_cst) & ~kDraining;
        return n;
    }

private:
    static constexpr int64_t kDraining = int64_t{1} << 62;
    struct alignas(64) Shard {
        std::atomic<int64_t> count{0};
    };
    static constexpr unsigned kShards = 16;

    Shard &shard() noexcept {
        if (tl_shard_ == 0) tl_shard_ = assign_shard();
        return shards_[tl_shard_ - 1];
    }
    static unsigned assign_shard() noexcept;  // 1..kShards, round-robin over threads
    static void wake_drainers() noexcept;
    // initial-exec: one load from the thread pointer on the hot path instead of a call to
    // __tls_get_addr (the variable is tiny, so it fits the static TLS surplus even when the
    // library is loaded with dlopen by a language runtime).
    [[gnu::tls_model("initial-exec")]] static inline thread_local unsigned tl_shard_ = 0;
    Shard shards_[kShards];
};

// Enter on construction, leave on destruction.
class GateScope {
public:
    explicit GateScope(CallGate &g) noexcept : g_(g) { g_.enter(); }
    ~GateScope() { g_.leave(); }
    GateScope(const GateScope &) = delete;
    GateScope &operator=(const GateScope &) = delete;

private:
    CallGate &g_;
};

}  // namespace mq
