// The cancel token (mq_cancel): wakes the one blocking call it was given.
//
// Lock order is token -> partition in both directions: a waiter registers the partition it is
// about to wait on *before* taking that partition's lock, and a trigger holds the token's lock
// while it notifies, so the partition it names cannot be left (and the broker freed) under it.
//
// Lifetime: the token is reference-counted. mq_cancel_new's reference belongs to the user
// (mq_cancel_free drops it); a call waiting with the token holds another for the call's scope,
// so the token may be freed while a call waits with it (that call then cannot be cancelled).
// Model-checked: tests/model/wake.pml (cancelled[w] = triggered, registered[w] = where; see
// tests/model/README.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "util/async_waits.h"
#include "util/waitable.h"

struct mq_cancel {
    std::mutex mu;
    std::atomic<bool> triggered{false};
    mq::Waitable *where = nullptr;  // guarded by mu: the waitable the call may be sleeping on
    // Guarded by mu: the asynchronous call holding the token (async_waits.h), if any.
    mq::AsyncWake *async = nullptr;
    uint64_t async_call = 0;
    std::atomic<int32_t> refs{1};

    void trigger() {
        std::lock_guard token(mu);
        triggered.store(true);
        if (where) where->wake_all();
        if (async) async->wake(async_call);
    }
    bool is_triggered() const noexcept { return triggered.load(); }

    void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
    // Tokens made by mq_cancel_new only (a token embedded in another object holds its first
    // reference for the object's life, so it never reaches 0 here).
    void release() noexcept {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
};

namespace mq {

// Keeps a token alive for a call that waits with it more than once (a batch publish waits
// partition by partition).
class CancelHold {
public:
    explicit CancelHold(mq_cancel *token) noexcept : token_(token) {
        if (token_) token_->add_ref();
    }
    ~CancelHold() {
        if (token_) token_->release();
    }
    CancelHold(const CancelHold &) = delete;
    CancelHold &operator=(const CancelHold &) = delete;

private:
    mq_cancel *token_;
};

// Registers a call's token on a waitable for the scope of the call (no-op without a token),
// and keeps the token alive meanwhile.
class CancelScope {
public:
    // Scopes nest (a poll that dead-letters publishes with the same token): the inner one
    // restores the outer one's waitable when it ends.
    CancelScope(mq_cancel *token, Waitable &w) : token_(token) {
        if (!token_) return;
        token_->add_ref();
        std::lock_guard g(token_->mu);
        outer_ = token_->where;
        token_->where = &w;
    }
    ~CancelScope() {
        if (!token_) return;
        {
            std::lock_guard g(token_->mu);
            token_->where = outer_;
        }
        token_->release();  // may be the last reference (freed while this call waited)
    }
    CancelScope(const CancelScope &) = delete;
    CancelScope &operator=(const CancelScope &) = delete;

    bool triggered() const noexcept { return token_ && token_->is_triggered(); }

private:
    mq_cancel *token_;
    Waitable *outer_ = nullptr;
};

}  // namespace mq
