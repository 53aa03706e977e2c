// The asynchronous forms of the calls that can wait (mq.h, "asynchronous calls"). Each first
// runs its blocking form's body without waiting, which is all most calls need; only a call that
// would wait becomes a pending call (async_waits.h), whose runs are that same body with the
// call's one deadline.
#include <utility>
#include <vector>

#include "capi/broker.h"
#include "capi/c_api_calls.h"
#include "capi/c_api_util.h"
#include "util/async_waits.h"
#include "util/error.h"

using mq::fail;

namespace {

// Makes the call pending: its runs are body(wait, false) with one deadline, from now.
template <class Body>
mq_status pend(mq::AsyncWaits &waits, int64_t wait_ms, mq_cancel *cancel, mq_done_fn done,
               void *user, Body body) noexcept {
    return mq::guarded([&] {
        mq::Wait w = mq::Wait::from_ms(wait_ms);
        w.start();  // one deadline for every run
        return waits.start(
            [w, body = std::move(body)](mq::AsyncCall &call) mutable {
                mq::Wait run = w;
                run.async = &call;
                return body(run, false);
            },
            cancel, done, user);
    });
}

// body(wait, first) runs the blocking form's body once with `wait`; first is true for the
// run that may ack. `would_wait` is what a run that found nothing to do without waiting
// returns (MQ_TIMEOUT for polls, MQ_FULL for publishes).
template <class Body>
mq_status start(mq_broker *b, int64_t wait_ms, mq_cancel *cancel, mq_done_fn done, void *user,
                mq_status would_wait, Body body) noexcept {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    if (!done) return fail(MQ_ERR_INVALID, "done is NULL: an asynchronous call needs a callback");
    if (b->backend) {
        return fail(MQ_ERR_UNSUPPORTED,
                    "asynchronous calls are not available on the Kafka engine: use the blocking "
                    "form (docs/KAFKA.md)");
    }
    const mq_status now = body(mq::Wait{mq::Wait::kNone}, true);
    if (now != would_wait || wait_ms == 0) return now;
    return pend(b->async(), wait_ms, cancel, done, user, std::move(body));
}

// The member polls' start: as start, and the call keeps what mq_member::Pending keeps while it
// is pending (body(wait, first, pending)).
template <class Body>
mq_status start_member(mq_member *m, int64_t wait_ms, mq_cancel *cancel, mq_done_fn done,
                       void *user, Body body) noexcept {
    if (!m) return fail(MQ_ERR_INVALID, "member handle is NULL");
    if (!done) return fail(MQ_ERR_INVALID, "done is NULL: an asynchronous call needs a callback");
    if (m->backend) {
        return fail(MQ_ERR_UNSUPPORTED,
                    "asynchronous calls are not available on the Kafka engine: use the blocking "
                    "form (docs/KAFKA.md)");
    }
    const mq_status now = body(mq::Wait{mq::Wait::kNone}, true, nullptr);
    if (now != MQ_TIMEOUT || wait_ms == 0) return now;
    return mq::guarded([&] {
        // Shared (an AsyncRun is copyable), never copied: the call's one Pending.
        auto pending = std::make_shared<mq_member::Pending>(*m);
        return pend(m->broker->async(), wait_ms, cancel, done, user,
                    [pending, body = std::move(body)](const mq::Wait &w, bool first) mutable {
                        return body(w, first, pending.get());
                    });
    });
}

}  // namespace

extern "C" {

MQ_API mq_status mq_group_poll_async(mq_broker *b, const char *topic, const char *group,
                                     int32_t partition, mq_message *msgs, size_t msg_size,
                                     size_t max, int64_t wait_ms, mq_cancel *cancel,
                                     size_t *count_out, mq_done_fn done, void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_TIMEOUT, [=](const mq::Wait &w, bool) {
        return mq::capi::group_poll(b, topic, group, partition, nullptr, msgs, msg_size, max,
                                    wait_ms, cancel, count_out, &w);
    });
}

MQ_API mq_status mq_group_ack_poll_async(mq_broker *b, const char *topic, const char *group,
                                         int32_t partition, int64_t offset, mq_message *msgs,
                                         size_t msg_size, size_t max, int64_t wait_ms,
                                         mq_cancel *cancel, size_t *count_out, mq_done_fn done,
                                         void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_TIMEOUT, [=](const mq::Wait &w, bool first) {
        return mq::capi::group_poll(b, topic, group, partition, first ? &offset : nullptr, msgs,
                                    msg_size, max, wait_ms, cancel, count_out, &w);
    });
}

MQ_API mq_status mq_group_poll_copy_async(mq_broker *b, const char *topic, const char *group,
                                          int32_t partition, void *buf, size_t cap, size_t max,
                                          int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                          size_t *needed_out, mq_done_fn done, void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_TIMEOUT, [=](const mq::Wait &w, bool) {
        return mq::capi::group_poll_copy(b, topic, group, partition, nullptr, buf, cap, max,
                                         wait_ms, cancel, count_out, needed_out, &w);
    });
}

MQ_API mq_status mq_group_ack_poll_copy_async(mq_broker *b, const char *topic, const char *group,
                                              int32_t partition, int64_t offset, void *buf,
                                              size_t cap, size_t max, int64_t wait_ms,
                                              mq_cancel *cancel, size_t *count_out,
                                              size_t *needed_out, mq_done_fn done, void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_TIMEOUT, [=](const mq::Wait &w, bool first) {
        return mq::capi::group_poll_copy(b, topic, group, partition, first ? &offset : nullptr, buf,
                                         cap, max, wait_ms, cancel, count_out, needed_out, &w);
    });
}

MQ_API mq_status mq_topic_publish_async(mq_broker *b, const char *topic, const void *key,
                                        size_t key_len, const void *payload, size_t payload_len,
                                        const mq_header *headers, size_t header_count,
                                        int64_t wait_ms, mq_cancel *cancel, int32_t *partition_out,
                                        int64_t *offset_out, mq_done_fn done, void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_FULL,
                 [=, routed = int32_t{-1}](const mq::Wait &w, bool) mutable {
                     return mq::capi::topic_publish(b, topic, key, key_len, payload, payload_len,
                                                    headers, header_count, wait_ms, cancel,
                                                    partition_out, offset_out, &w, &routed);
                 });
}

MQ_API mq_status mq_topic_publish_batch_async(mq_broker *b, const char *topic,
                                              const mq_record *records, size_t record_size,
                                              size_t count, int64_t wait_ms, mq_cancel *cancel,
                                              mq_publish_result *results, size_t result_size,
                                              size_t *published, mq_done_fn done, void *user) {
    return start(b, wait_ms, cancel, done, user, MQ_FULL,
                 [=, routed = std::vector<mq_publish_result>{}](const mq::Wait &w, bool) mutable {
                     return mq::capi::topic_publish_batch(b, topic, records, record_size, count,
                                                          wait_ms, cancel, results, result_size,
                                                          published, &w, &routed);
                 });
}

MQ_API mq_status mq_member_poll_async(mq_member *m, mq_message *msgs, size_t msg_size, size_t max,
                                      int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                      mq_done_fn done, void *user) {
    return start_member(m, wait_ms, cancel, done, user,
                        [=](const mq::Wait &w, bool, mq_member::Pending *pending) {
                            return mq::capi::member_poll(m, nullptr, msgs, msg_size, max, wait_ms,
                                                         cancel, count_out, &w, pending);
                        });
}

MQ_API mq_status mq_member_ack_poll_async(mq_member *m, int32_t partition, int64_t offset,
                                          mq_message *msgs, size_t msg_size, size_t max,
                                          int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                          mq_done_fn done, void *user) {
    const mq::capi::MemberAck ack{partition, offset};
    return start_member(m, wait_ms, cancel, done, user,
                        [=](const mq::Wait &w, bool first, mq_member::Pending *pending) {
                            return mq::capi::member_poll(m, first ? &ack : nullptr, msgs, msg_size,
                                                         max, wait_ms, cancel, count_out, &w,
                                                         pending);
                        });
}

MQ_API mq_status mq_member_poll_copy_async(mq_member *m, void *buf, size_t cap, size_t max,
                                           int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                           size_t *needed_out, mq_done_fn done, void *user) {
    return start_member(
        m, wait_ms, cancel, done, user, [=](const mq::Wait &w, bool, mq_member::Pending *pending) {
            return mq::capi::member_poll_copy(m, nullptr, buf, cap, max, wait_ms, cancel, count_out,
                                              needed_out, &w, pending);
        });
}

MQ_API mq_status mq_member_ack_poll_copy_async(mq_member *m, int32_t partition, int64_t offset,
                                               void *buf, size_t cap, size_t max, int64_t wait_ms,
                                               mq_cancel *cancel, size_t *count_out,
                                               size_t *needed_out, mq_done_fn done, void *user) {
    const mq::capi::MemberAck ack{partition, offset};
    return start_member(m, wait_ms, cancel, done, user,
                        [=](const mq::Wait &w, bool first, mq_member::Pending *pending) {
                            return mq::capi::member_poll_copy(m, first ? &ack : nullptr, buf, cap,
                                                              max, wait_ms, cancel, count_out,
                                                              needed_out, &w, pending);
                        });
}

}  // extern "C"
