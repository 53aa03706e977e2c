// ABI 1.7's handles: a publisher (a topic looked up once) and a cursor (one group's partition
// looked up once). Their calls are the named forms' of NativeBroker minus the names, sharing
// its marshalling (broker.h). The C handle outlives its broker (its calls then fail with
// MQ_CLOSED); Java keeps the object open while a call runs on it (its gate) and deletes it once.
#pragma once

#include <jni.h>
#include <mq.h>

#include <cstdint>

#include "broker.h"

namespace mqj {

class NativePublisher {
public:
    // mq_publisher_open; throws its failure.
    NativePublisher(NativeBroker &broker, const char *topic);
    ~NativePublisher();
    // As NativeBroker::publish and publishBatch, on the publisher's topic.
    int64_t publish(int64_t record, int64_t wait_ms, CancelToken *cancel);
    int32_t publishBatch(JNIEnv *jenv, int64_t records, int32_t count, int64_t wait_ms,
                         CancelToken *cancel, jlongArray results);
#ifndef SWIG
    NativePublisher(const NativePublisher &) = delete;
    NativePublisher &operator=(const NativePublisher &) = delete;

private:
    mq_publisher *p_ = nullptr;
#endif
};

class NativeCursor {
public:
    // mq_cursor_open; throws its failure.
    NativeCursor(NativeBroker &broker, const char *topic, const char *group, int32_t partition);
    ~NativeCursor();
    // As NativeBroker::pollCopy, ackPollCopy and ack, on the cursor's group and partition.
    int64_t pollCopy(int64_t buf, int64_t cap, int32_t max, int64_t wait_ms, CancelToken *cancel);
    int64_t ackPollCopy(int64_t offset, int64_t buf, int64_t cap, int32_t max, int64_t wait_ms,
                        CancelToken *cancel);
    void ack(int64_t offset);
#ifndef SWIG
    NativeCursor(const NativeCursor &) = delete;
    NativeCursor &operator=(const NativeCursor &) = delete;

private:
    mq_cursor *c_ = nullptr;
#endif
};

}  // namespace mqj
