#include "handles.h"

#include "errors.h"

namespace mqj {

NativePublisher::NativePublisher(NativeBroker &broker, const char *topic) {
    check(mq_publisher_open(broker.raw(), topic, &p_));
}

NativePublisher::~NativePublisher() { mq_publisher_close(p_); }

int64_t NativePublisher::publish(int64_t record, int64_t wait_ms, CancelToken *cancel) {
    return publish_record(record, [&](const mq_record &r, int32_t *partition, int64_t *offset) {
        return mq_publisher_publish(p_, r.key, r.key_len, r.payload, r.payload_len, r.headers,
                                    r.header_count, wait_ms, token_of(cancel), partition, offset);
    });
}

int32_t NativePublisher::publishBatch(JNIEnv *jenv, int64_t records, int32_t count, int64_t wait_ms,
                                      CancelToken *cancel, jlongArray results) {
    return publish_batch(
        jenv, records, count, results,
        [&](const mq_record *recs, size_t n, mq_publish_result *res, size_t *published) {
            return mq_publisher_publish_batch(p_, recs, sizeof(mq_record), n, wait_ms,
                                              token_of(cancel), res, sizeof(mq_publish_result),
                                              published);
        });
}

NativeCursor::NativeCursor(NativeBroker &broker, const char *topic, const char *group,
                           int32_t partition) {
    check(mq_cursor_open(broker.raw(), topic, group, partition, &c_));
}

NativeCursor::~NativeCursor() { mq_cursor_close(c_); }

int64_t NativeCursor::pollCopy(int64_t buf, int64_t cap, int32_t max, int64_t wait_ms,
                               CancelToken *cancel) {
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_cursor_poll_copy(c_, address(buf), static_cast<size_t>(cap), poll_max(max),
                                   wait_ms, token_of(cancel), n, needed);
    });
}

int64_t NativeCursor::ackPollCopy(int64_t offset, int64_t buf, int64_t cap, int32_t max,
                                  int64_t wait_ms, CancelToken *cancel) {
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_cursor_ack_poll_copy(c_, offset, address(buf), static_cast<size_t>(cap),
                                       poll_max(max), wait_ms, token_of(cancel), n, needed);
    });
}

void NativeCursor::ack(int64_t offset) { check(mq_cursor_ack(c_, offset)); }

}  // namespace mqj
