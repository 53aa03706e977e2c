#include "util/reclaim.h"

#include <atomic>

namespace mq {

void Reclaimer::reserve(size_t n) {
    std::lock_guard lk(mu_);
    retired_.reserve(retired_.size() + reserved_ + n);
    reserved_ += n;
}

void Reclaimer::retire(void *p, Free free) noexcept {
    // The unlinking store comes before the epoch is read (a full fence), and the epoch is read
    // under the lock that try_advance runs under: an advance checks its parity after the
    // unlinking, or the retirement reads the advanced epoch.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::lock_guard lk(mu_);
    if (reserved_) reserved_--;
    retired_.push_back(Retired{gate_.epoch(), p, free});  // within the reserved capacity
}

void Reclaimer::collect() noexcept {
    std::lock_guard lk(mu_);
    if (retired_.empty()) return;
    const uint64_t oldest = retired_.front().epoch;
    while (gate_.epoch() < oldest + 2 && gate_.try_advance()) {
    }
    const uint64_t now = gate_.epoch();
    size_t n = 0;
    // Under the lock, and without allocating (a call that reclaims must not fail for it): no
    // free takes a lock or retires anything (a topic's or group's destructor only releases).
    for (; n < retired_.size() && retired_[n].epoch + 2 <= now; n++)
        retired_[n].free(retired_[n].p);
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<ptrdiff_t>(n));
}

void Reclaimer::free_all() noexcept {
    for (;;) {
        std::vector<Retired> all;
        {
            std::lock_guard lk(mu_);
            all.swap(retired_);
            reserved_ = 0;
        }
        if (all.empty()) return;
        for (const Retired &r : all) r.free(r.p);  // may not retire: the loop is for safety
    }
}

size_t Reclaimer::pending() const {
    std::lock_guard lk(mu_);
    return retired_.size();
}

}  // namespace mq
