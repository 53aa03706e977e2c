// Shared by the C boundary files: the exception barrier, the call gate, argument checks, and
// the element-size rule for arrays.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <type_traits>
#include <vector>

#include "capi/broker.h"
#include "core/copy_out.h"
#include "util/duration.h"
#include "core/topic.h"
#include "util/error.h"

namespace mq {

template <class F>
inline mq_status guarded(F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return fail(MQ_ERR_NO_MEMORY, "out of memory; nothing was changed");
    } catch (const std::system_error &e) {
        return fail(MQ_ERR_NO_MEMORY, "the system refused a resource (%s); nothing was changed",
                    e.what());
    } catch (const std::exception &e) {
        return fail(MQ_ERR_INTERNAL, "internal error: %s", e.what());
    } catch (...) {
        return fail(MQ_ERR_INTERNAL, "internal error: unknown exception");
    }
}

// A call on a live broker: counted by the gate (mq_broker_free waits for it), refused once the
// broker is closed. No user code runs inside the gate, or a callback that frees the broker would
// wait for its own call: calls that run callbacks (mq_subscription_open, mq_member_join) take a
// reference to the broker inside and do the rest outside.
// A call that may block takes the scope (f(scope)), to pin what its wait uses (call_gate.h).
template <class F>
inline mq_status on_broker(mq_broker *b, F &&f) noexcept {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    GateScope scope(b->gate);
    if (b->closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
    if constexpr (std::is_invocable_v<F &, GateScope &>) {
        return guarded([&] { return f(scope); });
    } else {
        return guarded([&] { return f(); });
    }
}

// Introspection keeps working after close.
template <class F>
inline mq_status on_broker_any(mq_broker *b, F &&f) noexcept {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    GateScope scope(b->gate);
    return guarded([&] { return f(); });
}

// ---- the growth rule for arrays (mq.h) --------------------------------------------------------
// The caller passes the element size it was compiled with: a smaller one than the struct's 1.0
// size is refused; one between that and ours comes from an older header (the fields it lacks
// read as zero, their default); a larger one comes from a newer header, whose extra fields are
// ignored on input and zeroed on output. The common case (our size) copies nothing.

inline mq_status check_elem_size(size_t got, size_t ours, const char *what, size_t v1 = 0) {
    if (got < (v1 ? v1 : ours)) {
        return fail(MQ_ERR_INVALID, "%s is %zu; pass sizeof the struct (%zu in this library)", what,
                    got, ours);
    }
    return MQ_OK;
}

// mq_record's size in 1.0 to 1.4, before delay_ms (1.5).
inline constexpr size_t kRecordSizeV1 = offsetof(mq_record, delay_ms);

// Writes n elements of ours at the caller's stride, zeroing the bytes past our struct.
template <class T>
inline void spread(const T *ours, size_t n, void *theirs, size_t stride) noexcept {
    auto *dst = static_cast<unsigned char *>(theirs);
    for (size_t i = 0; i < n; i++, dst += stride) {
        std::memcpy(dst, &ours[i], sizeof(T));
        std::memset(dst + sizeof(T), 0, stride - sizeof(T));
    }
}

// The caller's input array at our stride: itself, or a per-thread copy.
template <class T>
inline const T *gather(const T *theirs, size_t stride, size_t n) {
    if (stride == sizeof(T) || n == 0) return theirs;
    thread_local std::vector<T> copy;
    copy.resize(n);
    const auto *src = reinterpret_cast<const unsigned char *>(theirs);
    const size_t fit = std::min(stride, sizeof(T));
    for (size_t i = 0; i < n; i++, src += stride) {
        copy[i] = T{};  // an older caller's struct: the fields it does not have are zero
        std::memcpy(&copy[i], src, fit);
    }
    return copy.data();
}

// An output array at our stride: the caller's own, or per-thread scratch spread into it by
// flush(), which the caller runs once the library has written what it will write.
template <class T>
class OutArray {
public:
    OutArray(T *theirs, size_t stride, size_t n) : theirs_(theirs), stride_(stride), n_(n) {
        if (!theirs || stride == sizeof(T)) {
            ours_ = theirs;
            return;
        }
        thread_local std::vector<T> scratch;
        scratch.resize(n);
        ours_ = scratch.data();
    }
    T *data() const noexcept { return ours_; }
    void flush(size_t written) const noexcept {
        if (ours_ != theirs_) spread(ours_, std::min(written, n_), theirs_, stride_);
    }

private:
    T *theirs_;
    T *ours_;
    size_t stride_, n_;
};

// Runs poll(out, max) into the caller's message array (see OutArray): what the poll wrote
// (*count messages) reaches the caller at its stride whatever the status.
template <class Poll>
inline mq_status into_messages(mq_message *msgs, size_t msg_size, size_t max, size_t *count,
                               Poll &&poll) {
    const OutArray<mq_message> out(msgs, msg_size, max);
    const mq_status st = poll(out.data(), max);
    out.flush(*count);
    return st;
}

// The arguments every view poll checks after its topic, group and partition (or member).
inline mq_status check_poll_args(const mq_message *msgs, size_t msg_size, size_t max,
                                 int64_t wait_ms, const size_t *count_out) {
    if (!msgs) return fail(MQ_ERR_INVALID, "msgs is NULL");
    if (mq_status st = check_elem_size(msg_size, sizeof(mq_message), "msg_size"); st) return st;
    if (max == 0) return fail(MQ_ERR_INVALID, "max is 0; ask for at least one message");
    if (mq_status st = check_wait(wait_ms); st != MQ_OK) return st;
    if (!count_out) return fail(MQ_ERR_INVALID, "count_out is NULL");
    return MQ_OK;
}

// A copying call's buffer (mq.h, "the copying poll"): there, 8-byte aligned, room for the header.
inline mq_status check_copy_buffer(const void *buf, size_t cap) {
    if (!buf) return fail(MQ_ERR_INVALID, "buf is NULL");
    if (reinterpret_cast<uintptr_t>(buf) % 8 != 0)
        return fail(MQ_ERR_INVALID, "buf is not 8-byte aligned (the copy layout needs it)");
    if (cap < sizeof(mq_copy_header)) {
        return fail(MQ_ERR_INVALID, "cap is %zu; the buffer must hold at least the %zu-byte header",
                    cap, sizeof(mq_copy_header));
    }
    return MQ_OK;
}

// The copying poll (mq.h): checks its buffer arguments (after the call's topic, group and
// partition, as mq.h orders the statuses), runs poll(copy, max) and then, whatever it returned,
// writes the buffer's header and *needed_out. max is capped at the entries the buffer could
// hold: the engines size their scratch by it.
template <class Poll>
inline mq_status poll_copy(void *buf, size_t cap, size_t max, int64_t wait_ms, size_t *count_out,
                           size_t *needed_out, Poll &&poll) {
    if (mq_status st = check_copy_buffer(buf, cap); st != MQ_OK) return st;
    if (max == 0) return fail(MQ_ERR_INVALID, "max is 0; ask for at least one message");
    if (mq_status st = check_wait(wait_ms); st != MQ_OK) return st;
    if (!count_out) return fail(MQ_ERR_INVALID, "count_out is NULL");
    CopyOut copy(buf, cap);
    struct Finish {  // also when the poll throws (out of memory): the header stays readable
        CopyOut &copy;
        ~Finish() { copy.finish(); }
    } finish{copy};
    const size_t room = (cap - sizeof(mq_copy_header)) / sizeof(mq_copied_message);
    const mq_status st = poll(copy, std::min(max, std::max<size_t>(room, 1)));
    if (st == MQ_ERR_TOO_LARGE && copy.too_large_need) {
        if (needed_out) *needed_out = copy.too_large_need;
        *count_out = 0;
        return fail(MQ_ERR_TOO_LARGE,
                    "the buffer (%zu bytes) cannot hold the next message, which needs %zu bytes "
                    "alone (*needed_out); nothing was handed out",
                    cap, copy.too_large_need);
    }
    if (needed_out) *needed_out = copy.used();
    return st;
}

inline mq_status bad_size(size_t size, const char *init) {
    return fail(MQ_ERR_INVALID, "options size is %zu; initialise them with %s", size, init);
}

inline mq_status check_partition(Topic &t, int32_t p) {
    if (p < 0 || p >= t.partition_count()) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range for topic %s (0..%d)", p,
                    t.name().c_str(), t.partition_count() - 1);
    }
    return MQ_OK;
}

template <class Config>
inline bool size_ok(const Config *cfg) {
    return cfg->size >= sizeof(size_t);
}

// Reads `field` only if the caller's struct (cfg->size bytes) is large enough to hold it.
#define MQ_HAS_FIELD(cfg, field) \
    ((cfg)->size >= offsetof(std::remove_pointer_t<decltype(cfg)>, field) + sizeof((cfg)->field))

}  // namespace mq
