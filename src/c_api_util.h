// Shared by the C boundary files: the exception barrier, the call gate, argument checks.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <type_traits>
#include <vector>

#include "broker.h"
#include "topic.h"
#include "error.h"

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

// A call on a live broker: counted by the gate, refused once the broker is closed.
template <class F>
inline mq_status on_broker(mq_broker *b, F &&f) noexcept {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    GateScope scope(b->gate);
    if (b->closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
    return guarded([&] { return f(); });
}

// Introspection keeps working after close.
template <class F>
inline mq_status on_broker_any(mq_broker *b, F &&f) noexcept {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    GateScope scope(b->gate);
    return guarded([&] { return f(); });
}

inline mq_status check_wait(int64_t wait_ms) {
    if (wait_ms < MQ_WAIT_FOREVER) {
        return fail(MQ_ERR_INVALID,
                    "wait of %lld ms: use -1 (forever), 0 (don't block) or a positive number of ms",
                    static_cast<long long>(wait_ms));
    }
    return MQ_OK;
}

inline mq_status check_duration(int64_t ms, const char *what) {
    if (ms < 0 || ms > (int64_t{1} << 40)) {
        return fail(MQ_ERR_INVALID, "%s is %lld; it must be 0 to 2^40 ms", what,
                    static_cast<long long>(ms));
    }
    return MQ_OK;
}

// The growth rule for arrays (mq.h): the caller passes the element size it was compiled with; a
// smaller one than this library's 1.0 struct is refused. A larger one comes from a newer header
// (its extra fields are left alone on input and zeroed on output).
inline mq_status check_elem_size(size_t got, size_t ours, const char *what) {
    if (got < ours) {
        return fail(MQ_ERR_INVALID, "%s is %zu; pass sizeof the struct (%zu in this library)",
                    what, got, ours);
    }
    return MQ_OK;
}

// Runs poll(out, max) into the caller's array when its element size is ours (the common case,
// no copy), else into a scratch array that is then spread at the caller's stride.
template <class Poll>
inline mq_status into_messages(mq_message *msgs, size_t msg_size, size_t max, size_t *count,
                               Poll &&poll) {
    if (msg_size == sizeof(mq_message)) return poll(msgs, max);
    thread_local std::vector<mq_message> scratch;
    scratch.resize(max);
    const mq_status st = poll(scratch.data(), max);
    auto *dst = reinterpret_cast<unsigned char *>(msgs);
    for (size_t i = 0; i < *count; i++, dst += msg_size) {
        std::memcpy(dst, &scratch[i], sizeof(mq_message));
        std::memset(dst + sizeof(mq_message), 0, msg_size - sizeof(mq_message));
    }
    return st;
}

inline mq_status bad_size(size_t size, const char *init) {
    return fail(MQ_ERR_INVALID, "options size is %zu; initialise them with %s", size, init);
}

// Undoes a group subscription made on the caller's behalf if the call then fails.
struct GroupRollback {
    Topic *topic;
    const Group *group;
    bool armed;
    ~GroupRollback() {
        if (armed) topic->rollback_subscribe(group);
    }
};

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
