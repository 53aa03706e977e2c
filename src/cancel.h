// The cancel token (mq_cancel): wakes the one blocking call it was given.
//
// Lock order is token -> partition in both directions: a waiter registers the partition it is
// about to wait on *before* taking that partition's lock, and a trigger holds the token's lock
// while it notifies, so the partition it names cannot be left (and the broker freed) under it.
#pragma once

#include <atomic>
#include <mutex>

#include "waitable.h"

struct mq_cancel {
    std::mutex mu;
    std::atomic<bool> triggered{false};
    mq::Waitable *where = nullptr;  // guarded by mu: the waitable the call may be sleeping on

    void trigger() {
        std::lock_guard token(mu);
        triggered.store(true);
        if (where) where->wake_all();
    }
    bool is_triggered() const noexcept { return triggered.load(); }
};

namespace mq {

// Registers a call's token on a waitable for the scope of the call (no-op without a token).
class CancelScope {
public:
    // Scopes nest (a poll that dead-letters publishes with the same token): the inner one
    // restores the outer one's waitable when it ends.
    CancelScope(mq_cancel *token, Waitable &w) : token_(token) {
        if (!token_) return;
        std::lock_guard g(token_->mu);
        outer_ = token_->where;
        token_->where = &w;
    }
    ~CancelScope() {
        if (!token_) return;
        std::lock_guard g(token_->mu);
        token_->where = outer_;
    }
    CancelScope(const CancelScope &) = delete;
    CancelScope &operator=(const CancelScope &) = delete;

    bool triggered() const noexcept { return token_ && token_->is_triggered(); }

private:
    mq_cancel *token_;
    Waitable *outer_ = nullptr;
};

}  // namespace mq
