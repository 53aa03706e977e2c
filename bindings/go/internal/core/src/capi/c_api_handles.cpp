// The C boundary for publisher and cursor handles (mq.h, "handles"; see c_api.cpp for the
// conventions). Each call is its named form after the lookup: the checks, the core call and the
// statuses are the same, in the same order, and on a Kafka broker the named form is called.
#include <new>
#include <string>

#include "capi/c_api_calls.h"
#include "capi/c_api_util.h"
#include "capi/handles.h"
#include "core/group_poll.h"
#include "util/error.h"
#include "util/names.h"

using mq::fail;
using mq::guarded;

namespace {

mq_status closed() { return mq::fail_fixed(MQ_CLOSED, "the broker is closed"); }

mq_status topic_gone(const mq::Topic &t, const char *what) {
    return fail(MQ_ERR_NO_TOPIC,
                "topic %s of this %s was deleted; close it (a topic created anew under that "
                "name is a new topic: open a new %s on it)",
                t.name().c_str(), what, what);
}

// Resolves the names as the named forms do, and takes the references a handle keeps.
mq_status find_topic(mq_broker *b, const char *topic, mq::Ref<mq::Topic> *out) {
    if (b->backend) return mq::check_name(topic, "topic");
    mq::Topic *t = nullptr;
    if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
    t->add_ref();
    *out = mq::Ref<mq::Topic>::adopt(t);
    return MQ_OK;
}

}  // namespace

mq_status mq_publisher::check() const noexcept {
    if (broker->closed()) return closed();
    if (topic.get() && topic.get()->deleted()) return topic_gone(*topic.get(), "publisher");
    return MQ_OK;
}

mq_status mq_cursor::check() const noexcept {
    if (broker->closed()) return closed();
    if (!topic.get()) return MQ_OK;  // Kafka: the named forms check
    if (topic.get()->deleted()) return topic_gone(*topic.get(), "cursor");
    if (group.get()->unsubscribed.load(std::memory_order_acquire)) {
        return fail(MQ_ERR_NO_GROUP,
                    "group %s is no longer subscribed to topic %s; close this cursor (a group "
                    "subscribed anew under that name is a new group: open a new cursor on it)",
                    group_name.c_str(), topic_name.c_str());
    }
    return MQ_OK;
}

// ---- publisher ---------------------------------------------------------------------------------

MQ_API mq_status mq_publisher_open(mq_broker *b, const char *topic, mq_publisher **out) {
    if (out) *out = nullptr;
    return mq::on_broker(b, [&] {
        mq::Ref<mq::Topic> t;
        if (mq_status st = find_topic(b, topic, &t); st != MQ_OK) return st;
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        *out = new mq_publisher{mq::BrokerRef(b), std::move(t), topic};
        return MQ_OK;
    });
}

MQ_API mq_status mq_publisher_publish(mq_publisher *p, const void *key, size_t key_len,
                                      const void *payload, size_t payload_len,
                                      const mq_header *headers, size_t header_count,
                                      int64_t wait_ms, mq_cancel *cancel, int32_t *partition_out,
                                      int64_t *offset_out) {
    if (!p) return fail(MQ_ERR_INVALID, "publisher handle is NULL");
    if (mq_status st = p->check(); st != MQ_OK) return st;
    mq::Topic *t = p->topic.get();
    if (!t) {
        return mq_topic_publish(p->broker.get(), p->name.c_str(), key, key_len, payload,
                                payload_len, headers, header_count, wait_ms, cancel, partition_out,
                                offset_out);
    }
    return guarded([&] {
        const mq_record r{key, key_len, payload, payload_len, headers, header_count, 0};
        if (mq_status st = mq::capi::check_record(p->broker.get(), t, r); st != MQ_OK) return st;
        if (mq_status st = mq::check_wait(wait_ms); st != MQ_OK) return st;
        return t->publish(r, mq::Wait::from_ms(wait_ms), cancel, partition_out, offset_out);
    });
}

MQ_API mq_status mq_publisher_publish_batch(mq_publisher *p, const mq_record *records,
                                            size_t record_size, size_t count, int64_t wait_ms,
                                            mq_cancel *cancel, mq_publish_result *results,
                                            size_t result_size, size_t *published) {
    if (published) *published = 0;
    if (!p) return fail(MQ_ERR_INVALID, "publisher handle is NULL");
    if (mq_status st = p->check(); st != MQ_OK) return st;
    if (!p->topic.get()) {
        return mq_topic_publish_batch(p->broker.get(), p->name.c_str(), records, record_size, count,
                                      wait_ms, cancel, results, result_size, published);
    }
    return guarded([&] {
        return mq::capi::publish_records(p->broker.get(), p->topic.get(), p->name.c_str(), records,
                                         record_size, count, wait_ms, cancel, results, result_size,
                                         published, nullptr, nullptr, nullptr);
    });
}

MQ_API void mq_publisher_close(mq_publisher *p) { delete p; }

// ---- cursor ------------------------------------------------------------------------------------

MQ_API mq_status mq_cursor_open(mq_broker *b, const char *topic, const char *group,
                                int32_t partition, mq_cursor **out) {
    if (out) *out = nullptr;
    return mq::on_broker(b, [&] {
        mq::Ref<mq::Topic> t;
        if (mq_status st = find_topic(b, topic, &t); st != MQ_OK) return st;
        mq::Ref<const mq::Group> g;
        if (!group) return fail(MQ_ERR_INVALID, "group name is NULL");
        if (t.get()) {
            const mq::Group *found = t.get()->find_group(group);
            if (!found) {
                if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
                return fail(MQ_ERR_NO_GROUP, "group %s is not subscribed to topic %s", group,
                            topic);
            }
            found->add_ref();
            g = mq::Ref<const mq::Group>::adopt(found);
            if (mq_status st = mq::check_partition(*t.get(), partition); st != MQ_OK) return st;
        } else {
            if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
            if (partition < 0)
                return fail(MQ_ERR_PARTITION, "partition %d is out of range", partition);
        }
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        *out = new mq_cursor{mq::BrokerRef(b), std::move(t), std::move(g), topic, group, partition};
        return MQ_OK;
    });
}

namespace {

// A cursor's poll (ack NULL: none), as the named view poll.
mq_status cursor_poll(mq_cursor *c, const int64_t *ack, mq_message *msgs, size_t msg_size,
                      size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count_out) {
    if (count_out) *count_out = 0;
    if (!c) return fail(MQ_ERR_INVALID, "cursor handle is NULL");
    if (mq_status st = c->check(); st != MQ_OK) return st;
    if (!c->topic.get()) {
        mq_broker *b = c->broker.get();
        const char *t = c->topic_name.c_str(), *g = c->group_name.c_str();
        return ack ? mq_group_ack_poll(b, t, g, c->partition, *ack, msgs, msg_size, max, wait_ms,
                                       cancel, count_out)
                   : mq_group_poll(b, t, g, c->partition, msgs, msg_size, max, wait_ms, cancel,
                                   count_out);
    }
    return guarded([&] {
        if (mq_status st = mq::check_poll_args(msgs, msg_size, max, wait_ms, count_out); st)
            return st;
        return mq::into_messages(msgs, msg_size, max, count_out, [&](mq_message *out, size_t n) {
            return mq::poll_group(c->part(), c->group.get(), {}, out, n, mq::Wait::from_ms(wait_ms),
                                  cancel, count_out, ack);
        });
    });
}

// A cursor's copying poll, as the named one.
mq_status cursor_poll_copy(mq_cursor *c, const int64_t *ack, void *buf, size_t cap, size_t max,
                           int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                           size_t *needed_out) {
    if (count_out) *count_out = 0;
    if (needed_out) *needed_out = 0;
    if (!c) return fail(MQ_ERR_INVALID, "cursor handle is NULL");
    if (mq_status st = c->check(); st != MQ_OK) return st;
    if (!c->topic.get()) {
        mq_broker *b = c->broker.get();
        const char *t = c->topic_name.c_str(), *g = c->group_name.c_str();
        return ack ? mq_group_ack_poll_copy(b, t, g, c->partition, *ack, buf, cap, max, wait_ms,
                                            cancel, count_out, needed_out)
                   : mq_group_poll_copy(b, t, g, c->partition, buf, cap, max, wait_ms, cancel,
                                        count_out, needed_out);
    }
    return guarded([&] {
        return mq::poll_copy(
            buf, cap, max, wait_ms, count_out, needed_out, [&](mq::CopyOut &copy, size_t n) {
                return mq::poll_group(c->part(), c->group.get(), {}, nullptr, n,
                                      mq::Wait::from_ms(wait_ms), cancel, count_out, ack, &copy);
            });
    });
}

}  // namespace

MQ_API mq_status mq_cursor_poll(mq_cursor *c, mq_message *msgs, size_t msg_size, size_t max,
                                int64_t wait_ms, mq_cancel *cancel, size_t *count_out) {
    return cursor_poll(c, nullptr, msgs, msg_size, max, wait_ms, cancel, count_out);
}

MQ_API mq_status mq_cursor_ack_poll(mq_cursor *c, int64_t offset, mq_message *msgs, size_t msg_size,
                                    size_t max, int64_t wait_ms, mq_cancel *cancel,
                                    size_t *count_out) {
    return cursor_poll(c, &offset, msgs, msg_size, max, wait_ms, cancel, count_out);
}

MQ_API mq_status mq_cursor_poll_copy(mq_cursor *c, void *buf, size_t cap, size_t max,
                                     int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                     size_t *needed_out) {
    return cursor_poll_copy(c, nullptr, buf, cap, max, wait_ms, cancel, count_out, needed_out);
}

MQ_API mq_status mq_cursor_ack_poll_copy(mq_cursor *c, int64_t offset, void *buf, size_t cap,
                                         size_t max, int64_t wait_ms, mq_cancel *cancel,
                                         size_t *count_out, size_t *needed_out) {
    return cursor_poll_copy(c, &offset, buf, cap, max, wait_ms, cancel, count_out, needed_out);
}

MQ_API mq_status mq_cursor_ack(mq_cursor *c, int64_t offset) {
    if (!c) return fail(MQ_ERR_INVALID, "cursor handle is NULL");
    if (mq_status st = c->check(); st != MQ_OK) return st;
    if (!c->topic.get()) {
        return mq_group_ack(c->broker.get(), c->topic_name.c_str(), c->group_name.c_str(),
                            c->partition, offset);
    }
    return guarded([&] { return c->part().ack(c->group.get(), {}, offset); });
}

MQ_API void mq_cursor_close(mq_cursor *c) { delete c; }
