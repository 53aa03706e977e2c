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
//
// A call about to block (a publish waiting for room, a poll waiting for messages) parks: it
// takes references on what it will use when it wakes (its topic and group: the pins its
// GateScope was given), moves from its parity's count to `parked_`, and re-enters under the
// current parity when it wakes. So an idle consumer in a forever poll holds back neither the
// epoch nor the memory churn elsewhere retires, while mq_broker_free still waits for it. A move
// changes two counters one after the other, so drain's check brackets its reads with the
// `migrations_` count and refuses while one is `migrating_` (idle()): it never sees a moving
// call in neither place.
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
    // Returns once no call is inside, parked ones included. Calls that enter afterwards are
    // the caller's bug.
    void drain();

    // A call counted under `parity` leaves its count for the parked one; unpark() returns it
    // to the count of the current parity (the parity to leave with). Between the two it is
    // still inside for drain, but not for the epoch.
    void park(unsigned parity) noexcept {
        migrating_.fetch_add(1, std::memory_order_seq_cst);
        migrations_.fetch_add(1, std::memory_order_seq_cst);
        parked_.fetch_add(1, std::memory_order_seq_cst);
        leave(parity);  // parked_ still counts it: the gate cannot go before the next line
        migrating_.fetch_sub(1, std::memory_order_seq_cst);
    }
    unsigned unpark() noexcept {
        migrating_.fetch_add(1, std::memory_order_seq_cst);
        migrations_.fetch_add(1, std::memory_order_seq_cst);
        const unsigned parity = enter();
        parked_.fetch_sub(1, std::memory_order_seq_cst);
        migrating_.fetch_sub(1, std::memory_order_seq_cst);
        return parity;
    }

    // How many calls are inside, parked ones included (for tests).
    int64_t inside() const noexcept {
        return inside(0) + inside(1) + parked_.load(std::memory_order_seq_cst);
    }
    int64_t parked() const noexcept { return parked_.load(std::memory_order_seq_cst); }

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
    // No call inside, parked or moving between the two. A move that overlaps the reads has
    // bumped `migrations_` after the first read and is still `migrating_` at the second, or
    // bumped it before the first and was `migrating_` when that was read; so a call moving
    // while the counts are read is never missed.
    bool idle() const noexcept {
        const uint64_t moves = migrations_.load(std::memory_order_seq_cst);
        if (migrating_.load(std::memory_order_seq_cst) != 0) return false;
        if (parked_.load(std::memory_order_seq_cst) != 0) return false;
        if (inside(0) + inside(1) != 0) return false;
        return migrations_.load(std::memory_order_seq_cst) == moves;
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
    // Touched only by calls about to block or just woken, and by drain.
    alignas(64) std::atomic<int64_t> parked_{0};
    std::atomic<int64_t> migrating_{0};
    std::atomic<uint64_t> migrations_{0};
};

// Enter on construction, leave on destruction. A call that may block pins what its wait uses
// and hands the scope to the wait (Wait::parks), which parks it while it sleeps (Parked). Every
// call pays for the scope, so it costs two stores more than the gate's counting.
class GateScope {
public:
    // Takes (acquire) or drops the references a parked call holds on what it uses when it
    // wakes: a topic, and a group or NULL.
    using Pins = void (*)(void *topic, void *group, bool acquire) noexcept;

    explicit GateScope(CallGate &g) noexcept : g_(g), parity_(g.enter()) {}
    ~GateScope() {
        if (pinned_) pins_(topic_, group_, false);
        g_.leave(parity_);
    }
    GateScope(const GateScope &) = delete;
    GateScope &operator=(const GateScope &) = delete;

    // What the call's blocking wait uses after it wakes, found (inside the gate) by the call.
    // Without pins a call never parks: it then holds the epoch while it waits.
    void pin(Pins pins, void *topic, void *group) noexcept {
        if (pinned_) return;  // the references taken are for the first pair
        pins_ = pins;
        topic_ = topic;
        group_ = group;
    }
    // Parks for a blocking wait (false: nothing pinned, so it stays counted). With the wait's
    // lock held: a close or deletion that wakes the wait takes that lock to notify.
    bool park() noexcept {
        if (!pins_) return false;
        if (!pinned_) {
            pinned_ = true;
            pins_(topic_, group_, true);  // still inside: what was found cannot have gone yet
        }
        g_.park(parity_);
        return true;
    }
    void unpark() noexcept { parity_ = g_.unpark(); }

private:
    CallGate &g_;
    unsigned parity_;
    bool pinned_ = false;  // the pins' references are taken (dropped on leaving)
    Pins pins_ = nullptr;
    void *topic_;  // set with pins_
    void *group_;
};

// Parks a call, if it has pins, for the life of this object: a blocking wait's sleep.
class Parked {
public:
    explicit Parked(GateScope *s) noexcept : s_(s && s->park() ? s : nullptr) {}
    ~Parked() {
        if (s_) s_->unpark();
    }
    Parked(const Parked &) = delete;
    Parked &operator=(const Parked &) = delete;

private:
    GateScope *const s_;
};

}  // namespace mq
