// Counts the calls inside a broker so that mq_broker_free can wait for them to leave.
//
// Every API call enters and leaves, so the count is spread over cache-line-sized shards picked
// per thread: publishers on different cores do not bounce one shared counter between them.
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
        shard().count.fetch_sub(1, std::memory_order_seq_cst);
        if (draining_.load(std::memory_order_seq_cst)) {
            std::lock_guard g(mu_);
            cv_.notify_all();
        }
    }
    // Returns once no call is inside. Calls that enter afterwards are the caller's bug.
    void drain() {
        draining_.store(true, std::memory_order_seq_cst);
        std::unique_lock lk(mu_);
        cv_.wait(lk, [this] { return inside() == 0; });
    }

    // How many calls are inside (for drain, and tests).
    int64_t inside() const noexcept {
        int64_t n = 0;
        for (const Shard &s : shards_) n += s.count.load(std::memory_order_seq_cst);
        return n;
    }

private:
    struct alignas(64) Shard {
        std::atomic<int64_t> count{0};
    };
    static constexpr unsigned kShards = 16;

    Shard &shard() noexcept {
        if (tl_shard_ == 0) tl_shard_ = assign_shard();
        return shards_[tl_shard_ - 1];
    }
    static unsigned assign_shard() noexcept;  // 1..kShards, round-robin over threads
    // initial-exec: one load from the thread pointer on the hot path instead of a call to
    // __tls_get_addr (the variable is tiny, so it fits the static TLS surplus even when the
    // library is loaded with dlopen by a language runtime).
    [[gnu::tls_model("initial-exec")]] static inline thread_local unsigned tl_shard_ = 0;
    Shard shards_[kShards];
    std::atomic<bool> draining_{false};
    std::mutex mu_;
    std::condition_variable cv_;
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
