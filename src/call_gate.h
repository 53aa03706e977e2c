// Counts the calls inside a broker so that mq_broker_free can wait for them to leave, and so that
// memory no call can still see (a deleted topic, an unsubscribed group, a replaced snapshot) is
// reclaimed once every call that might have seen it has left (reclaim.h): a grace period.
//
// Every API call enters and leaves, so the count is spread over cache-line-sized shards picked
// per thread: publishers on different cores do not bounce one shared counter between them.
// Each shard counts twice, once per parity of the gate's epoch (sleepable RCU's two counters): a
// call counts itself under the parity it read at entry, so the epoch can move on when the calls
// counted under the other parity have all left, without ever waiting for calls that entered
// since. Nothing on the way in or out locks or allocates: one relaxed load more than a plain
// counter.
//
// The gate is destroyed as soon as drain() returns (the broker's memory may go then), so a
// leaving call must not touch it once its decrement may have let drain return. Hence drain
// marks every counter with a flag bit, and leave learns of it from its own decrement (one atomic
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
    // Returns the parity to pass to leave.
    unsigned enter() noexcept {
        const unsigned parity = static_cast<unsigned>(epoch_.load(std::memory_order_relaxed) & 1);
        shard().count[parity].fetch_add(1, std::memory_order_seq_cst);
        return parity;
    }
    void leave(unsigned parity) noexcept {
        const int64_t before = shard().count[parity].fetch_sub(1, std::memory_order_seq_cst);
        if (before & kDraining) wake_drainers();  // touches no member: the gate may be gone
    }
    // Returns once no call is inside. Calls that enter afterwards are the caller's bug.
    void drain();

    // How many calls are inside (for drain, and tests).
    int64_t inside() const noexcept { return inside(0) + inside(1); }

    // The grace-period clock (reclaim.h). A call may be counted under either parity, so what
    // was unlinked at epoch e is unseen by every call once the epoch reaches e + 2: both
    // parities have then been seen empty after the unlinking.
    uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_seq_cst); }
    // Moves the epoch on by one if no call counted under the parity it would reuse is inside.
    // One advancer at a time (the reclaimer's lock).
    bool try_advance() noexcept {
        const uint64_t e = epoch_.load(std::memory_order_seq_cst);
        if (inside(static_cast<unsigned>((e + 1) & 1)) != 0) return false;
        epoch_.store(e + 1, std::memory_order_seq_cst);
        return true;
    }

private:
    static constexpr int64_t kDraining = int64_t{1} << 62;
    struct alignas(64) Shard {
        std::atomic<int64_t> count[2] = {0, 0};
    };
    static constexpr unsigned kShards = 16;

    // Acquire: a reclaimer that reads a count of 0 sees everything the calls did before leaving.
    int64_t inside(unsigned parity) const noexcept {
        int64_t n = 0;
        for (const Shard &s : shards_)
            n += s.count[parity].load(std::memory_order_seq_cst) & ~kDraining;
        return n;
    }
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
    alignas(64) std::atomic<uint64_t> epoch_{
        0};  // read by every call, written only by the reclaimer
};

// Enter on construction, leave on destruction.
class GateScope {
public:
    explicit GateScope(CallGate &g) noexcept : g_(g), parity_(g.enter()) {}
    ~GateScope() { g_.leave(parity_); }
    GateScope(const GateScope &) = delete;
    GateScope &operator=(const GateScope &) = delete;

private:
    CallGate &g_;
    const unsigned parity_;
};

}  // namespace mq
