// The lock and the two condition variables of one partition (the bounded-buffer pattern), kept
// apart from the partition's rules so that close and cancel can wake it.
#pragma once

#include <condition_variable>
#include <mutex>

namespace mq {

struct Waitable {
    std::mutex mu;
    std::condition_variable not_full;   // publishers wait here for space
    std::condition_variable not_empty;  // pollers wait here for messages, nacks and leases

    void wake_all() {
        std::lock_guard g(mu);
        not_full.notify_all();
        not_empty.notify_all();
    }
};

}  // namespace mq
