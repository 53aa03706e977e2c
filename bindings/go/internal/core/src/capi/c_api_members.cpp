// The C boundary for live group members (see c_api.cpp for the conventions).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "capi/broker.h"
#include "capi/c_api_calls.h"
#include "capi/c_api_util.h"
#include "util/error.h"
#include "capi/member.h"
#include "util/names.h"

using mq::fail;
using mq::guarded;

namespace {
// Member calls need no call gate: the member's reference keeps the broker's memory, and a
// closed broker is their first check (MQ_CLOSED right after a NULL handle, as mq.h orders).
mq_status check_member(const mq_member *m) {
    if (!m) return fail(MQ_ERR_INVALID, "member handle is NULL");
    if (m->closed()) return mq::fail_fixed(MQ_CLOSED, "the broker is closed");
    return m->backend ? m->backend->check_removed() : m->check_removed();
}

// The partition check of the in-process log; the backend checks the top of the range itself
// (it knows the topic as it was at the join), then ownership (MQ_ERR_FENCED).
template <class F>
mq_status on_member_partition(mq_member *m, int32_t partition, F &&f) noexcept {
    if (mq_status st = check_member(m); st != MQ_OK) return st;
    if (!m->backend) {
        if (mq_status st = mq::check_partition(*m->topic, partition); st != MQ_OK) return st;
    } else if (partition < 0) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range", partition);
    }
    return guarded([&] { return f(); });
}
}  // namespace

namespace mq::capi {

mq_status member_poll(mq_member *m, const MemberAck *ack, mq_message *msgs, size_t msg_size,
                      size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                      const Wait *async, mq_member::Pending *pending) {
    if (count_out) *count_out = 0;
    auto body = [&] {
        if (mq_status st = mq::check_poll_args(msgs, msg_size, max, wait_ms, count_out); st)
            return st;
        return mq::into_messages(msgs, msg_size, max, count_out, [&](mq_message *out, size_t n) {
            if (m->backend) {
                return ack ? m->backend->poll(&ack->partition, &ack->offset, out, n, wait_ms,
                                              cancel, count_out)
                           : m->backend->poll(nullptr, nullptr, out, n, wait_ms, cancel, count_out);
            }
            const Wait w = async ? *async : Wait::from_ms(wait_ms);
            return ack ? m->ack_poll(ack->partition, ack->offset, out, n, w, cancel, count_out)
                       : m->poll(out, n, w, cancel, count_out, nullptr, pending);
        });
    };
    if (ack) return on_member_partition(m, ack->partition, body);
    if (mq_status st = check_member(m); st != MQ_OK) return st;
    return guarded(body);
}

mq_status member_poll_copy(mq_member *m, const MemberAck *ack, void *buf, size_t cap, size_t max,
                           int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                           size_t *needed_out, const Wait *async, mq_member::Pending *pending) {
    if (count_out) *count_out = 0;
    if (needed_out) *needed_out = 0;
    auto body = [&] {
        return mq::poll_copy(
            buf, cap, max, wait_ms, count_out, needed_out, [&](mq::CopyOut &copy, size_t n) {
                if (m->backend) {
                    return ack ? m->backend->poll(&ack->partition, &ack->offset, nullptr, n,
                                                  wait_ms, cancel, count_out, &copy)
                               : m->backend->poll(nullptr, nullptr, nullptr, n, wait_ms, cancel,
                                                  count_out, &copy);
                }
                const Wait w = async ? *async : Wait::from_ms(wait_ms);
                return ack ? m->ack_poll(ack->partition, ack->offset, nullptr, n, w, cancel,
                                         count_out, &copy)
                           : m->poll(nullptr, n, w, cancel, count_out, &copy, pending);
            });
    };
    if (ack) return on_member_partition(m, ack->partition, body);
    if (mq_status st = check_member(m); st != MQ_OK) return st;
    return guarded(body);
}

}  // namespace mq::capi

extern "C" {

MQ_API void mq_member_options_init(mq_member_options *o, size_t size) {
    if (!o || size < sizeof(size_t)) return;
    mq_member_options d{};
    d.size = std::min(size, sizeof d);
    d.member_id = nullptr;
    d.session_timeout_ms = 10000;
    d.assignor = nullptr;
    d.assignor_user = nullptr;
    d.on_rebalance = nullptr;
    d.on_rebalance_user = nullptr;
    std::memcpy(o, &d, d.size);
    o->size = size;
}

MQ_API mq_status mq_member_join(mq_broker *b, const char *topic, const char *group,
                                const mq_member_options *opts, mq_member **out) {
    mq::BrokerRef ref;  // taken once the arguments pass; the join runs outside the call gate
    mq::Topic *t = nullptr;
    mq::Ref<mq::Topic> topic_ref;  // likewise: what keeps t's memory outside the gate
    mq_member::Options join{};
    bool kafka = false;
    const mq_status st = mq::on_broker(b, [&] {
        kafka = b->backend != nullptr;
        if (kafka) {
            if (mq_status s = mq::check_name(topic, "topic"); s != MQ_OK) return s;
        } else if (mq_status s = b->topic(topic, &t); s != MQ_OK) {
            return s;
        }
        if (mq_status s = mq::check_name(group, "group"); s != MQ_OK) return s;
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        if (opts) {
            if (!mq::size_ok(opts)) {
                return mq::bad_size(opts->size, "mq_member_options_init");
            }
            if (MQ_HAS_FIELD(opts, member_id)) o.member_id = opts->member_id;
            if (MQ_HAS_FIELD(opts, session_timeout_ms))
                o.session_timeout_ms = opts->session_timeout_ms;
            if (MQ_HAS_FIELD(opts, assignor)) o.assignor = opts->assignor;
            if (MQ_HAS_FIELD(opts, assignor_user)) o.assignor_user = opts->assignor_user;
            if (MQ_HAS_FIELD(opts, on_rebalance)) o.on_rebalance = opts->on_rebalance;
            if (MQ_HAS_FIELD(opts, on_rebalance_user))
                o.on_rebalance_user = opts->on_rebalance_user;
        }
        if (o.member_id) {
            if (mq_status s = mq::check_name(o.member_id, "member"); s != MQ_OK) return s;
        }
        if (mq_status s = mq::check_duration(o.session_timeout_ms, "session_timeout_ms", {1});
            s != MQ_OK) {
            return s;
        }
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        if (kafka && o.assignor) {
            return fail(MQ_ERR_UNSUPPORTED,
                        "custom assignors do not run on Kafka: the group protocol assigns "
                        "partitions there (round-robin); leave assignor NULL");
        }
        join = {o.member_id,    o.session_timeout_ms * 1000000,
                o.assignor,     o.assignor_user,
                o.on_rebalance, o.on_rebalance_user};
        ref = mq::BrokerRef(b);
        if (kafka) return MQ_OK;
        t->add_ref();  // inside the gate: the topic cannot have gone yet
        topic_ref = mq::Ref<mq::Topic>::adopt(t);
        return MQ_OK;
    });
    if (st != MQ_OK) return st;
    if (kafka) {
        return guarded([&] {
            // The handle first: on_rebalance is given it, and may call it, during the join.
            auto state = std::make_shared<mq::MemberState>();
            mq_broker *broker = ref.get();
            std::unique_ptr<mq_member> m(
                new mq_member{std::move(ref), nullptr, nullptr, state, {}, {}, nullptr});
            const mq::BackendJoin bj{join.member_id, join.session_timeout_ns / 1000000,
                                     join.on_rebalance, join.on_rebalance_user, m.get()};
            if (mq_status s =
                    broker->backend->join(topic, group, bj, &state->member_id, &m->backend);
                s != MQ_OK) {
                return s;
            }
            if (mq_status s = m->backend->begin(); s != MQ_OK) return s;
            *out = m.release();
            return MQ_OK;
        });
    }
    return guarded(
        [&] { return mq_member::join(std::move(ref), std::move(topic_ref), group, join, out); });
}

MQ_API mq_status mq_member_close(mq_member *m) {
    if (!m) return fail(MQ_ERR_INVALID, "member handle is NULL");
    if (m->backend ? m->backend->in_own_callback() : mq::in_rebalance_callback_of(m->state.get())) {
        return fail(MQ_ERR_DEADLOCK,
                    "mq_member_close was called from this member's own on_rebalance callback; "
                    "close it from another thread");
    }
    mq_member::close(m);
    return MQ_OK;
}

MQ_API const char *mq_member_id(const mq_member *m) { return m ? m->state->member_id.c_str() : ""; }

MQ_API mq_status mq_member_get_assignment(mq_member *m, int64_t *generation, int32_t *partitions,
                                          size_t cap, size_t *count) {
    if (mq_status st = check_member(m); st != MQ_OK) return st;
    if (!partitions && cap) return fail(MQ_ERR_INVALID, "partitions is NULL but cap is %zu", cap);
    if (!count) return fail(MQ_ERR_INVALID, "count is NULL");
    return guarded([&] {
        std::vector<int32_t> parts;
        int64_t gen = 0;
        if (mq_status st =
                m->backend ? m->backend->assignment(&gen, parts) : m->assignment(&gen, parts);
            st != MQ_OK) {
            return st;
        }
        if (generation) *generation = gen;
        *count = parts.size();
        std::copy_n(parts.begin(), std::min(cap, parts.size()), partitions);
        return MQ_OK;
    });
}

MQ_API mq_status mq_member_poll(mq_member *m, mq_message *msgs, size_t msg_size, size_t max,
                                int64_t wait_ms, mq_cancel *cancel, size_t *count_out) {
    return mq::capi::member_poll(m, nullptr, msgs, msg_size, max, wait_ms, cancel, count_out);
}

MQ_API mq_status mq_member_ack_poll(mq_member *m, int32_t partition, int64_t offset,
                                    mq_message *msgs, size_t msg_size, size_t max, int64_t wait_ms,
                                    mq_cancel *cancel, size_t *count_out) {
    const mq::capi::MemberAck ack{partition, offset};
    return mq::capi::member_poll(m, &ack, msgs, msg_size, max, wait_ms, cancel, count_out);
}

MQ_API mq_status mq_member_poll_copy(mq_member *m, void *buf, size_t cap, size_t max,
                                     int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                     size_t *needed_out) {
    return mq::capi::member_poll_copy(m, nullptr, buf, cap, max, wait_ms, cancel, count_out,
                                      needed_out);
}

MQ_API mq_status mq_member_ack_poll_copy(mq_member *m, int32_t partition, int64_t offset, void *buf,
                                         size_t cap, size_t max, int64_t wait_ms, mq_cancel *cancel,
                                         size_t *count_out, size_t *needed_out) {
    const mq::capi::MemberAck ack{partition, offset};
    return mq::capi::member_poll_copy(m, &ack, buf, cap, max, wait_ms, cancel, count_out,
                                      needed_out);
}

MQ_API mq_status mq_member_ack(mq_member *m, int32_t partition, int64_t offset) {
    return on_member_partition(m, partition, [&] {
        return m->backend ? m->backend->ack(partition, offset) : m->ack(partition, offset);
    });
}

MQ_API mq_status mq_member_nack(mq_member *m, int32_t partition, int64_t delay_ms) {
    return on_member_partition(m, partition, [&] {
        if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
        if (m->backend) return m->backend->nack(partition, delay_ms, -1);
        return m->nack(partition, delay_ms * 1000000);
    });
}

MQ_API mq_status mq_member_extend_lease(mq_member *m, int32_t partition) {
    return on_member_partition(m, partition, [&] {
        return m->backend ? m->backend->extend_lease(partition) : m->extend_lease(partition);
    });
}

}  // extern "C"
