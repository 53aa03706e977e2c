// Failure reporting: a status plus a thread-local detail message. The message lives in a fixed
// thread-local buffer so that reporting a failure never allocates (it may be reporting one).
//
// Normal outcomes (MQ_TIMEOUT, MQ_FULL, MQ_CLOSED, MQ_CANCELLED) are expected traffic, not
// errors: they carry fixed texts (fail_fixed), which cost a pointer store, not a vsnprintf.
// A failure decided under a partition lock is formatted after the lock is released (Deferred),
// so no caller waits on a lock while another formats a message.
#pragma once

#include <cstring>
#include <new>
#include <tuple>
#include <type_traits>

#include "mq.h"

namespace mq {

// Formats the detail of a failure into the calling thread's message buffer and returns status,
// so call sites read `return fail(MQ_ERR_NO_TOPIC, "no topic named %s", name);`.
[[gnu::format(printf, 2, 3)]] mq_status fail(mq_status status, const char *fmt, ...) noexcept;

// Sets the detail to `text`, a string literal (it is kept by pointer), and returns status.
mq_status fail_fixed(mq_status status, const char *text) noexcept;

const char *last_error() noexcept;

// A failure found under a lock and formatted when this object goes out of scope: declare it
// before the lock guard, so that the guard (destroyed first) has released the lock by then.
// The arguments are captured by value; strings by pointer, so they must outlive the scope (the
// topic and group names, which live as long as the broker).
class Deferred {
public:
    Deferred() noexcept {}
    Deferred(const Deferred &) = delete;
    Deferred &operator=(const Deferred &) = delete;
    ~Deferred() {
        if (format_) format_(status_, fmt_, args_);
    }

    template <class... A>
    mq_status fail(mq_status status, const char *fmt, A... args) noexcept {
        using Args = std::tuple<A...>;
        // Plain values only: the tuple is never destroyed, and reformatting reads it as is.
        static_assert(sizeof(Args) <= sizeof args_ && (std::is_trivially_copyable_v<A> && ...));
        new (args_) Args(args...);
        status_ = status;
        fmt_ = fmt;
        format_ = [](mq_status st, const char *f, const void *a) {
            std::apply([&](auto... x) { format(st, f, x...); },
                       *std::launder(static_cast<const Args *>(a)));
        };
        return status;
    }
    mq_status fail_fixed(mq_status status, const char *text) noexcept {
        format_ = nullptr;
        return mq::fail_fixed(status, text);
    }

private:
    // The same as mq::fail, reached with a format string known only at run time.
    static void format(mq_status status, const char *fmt, ...) noexcept;

    // Only format_ is set up front: a call that does not fail pays one store and one test.
    void (*format_)(mq_status, const char *, const void *) = nullptr;
    mq_status status_;
    const char *fmt_;
    alignas(8) unsigned char args_[64];
};

}  // namespace mq
