// Group members: join, assignment, poll, ack (also with the next poll), nack, and the two callbacks (an assignor and a
// rebalance listener), both SWIG directors implemented in Java.
#pragma once

#include <jni.h>
#include <mq.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "broker.h"
#include "jvm.h"

namespace mqj {

// Implemented in Java; called with the group's membership lock held. Returns the owner index
// of each partition, as text ("0,1,0"; an empty entry or a bad number leaves it unowned).
// memberIds lists the members in join order, each followed by '\n'.
class AssignorSink {
public:
    virtual ~AssignorSink();
    virtual std::string assign(int32_t partitions, const std::string &memberIds);
};

// Implemented in Java; called after every rebalance of the member's group.
class RebalanceSink {
public:
    virtual ~RebalanceSink();
    virtual void onRebalance(int64_t generation);
};

class NativeMember {
public:
    NativeMember();
    ~NativeMember();
    // member_id null: generated. assignor and
    // listener may be null; both are owned from here on (also when join fails).
    void join(NativeBroker &broker, const char *topic, const char *group, const char *member_id,
              int64_t session_timeout_ms, AssignorSink *assignor, RebalanceSink *listener);
    jstring id(JNIEnv *jenv);
    // The owned partitions; the generation goes to generation_out[0].
    jintArray assignment(JNIEnv *jenv, jlongArray generation_out);
    // mq_member_poll_copy, as NativeBroker::pollCopy.
    int64_t pollCopy(int64_t buf, int64_t cap, int32_t max, int64_t wait_ms, CancelToken *cancel);
    // mq_member_ack_poll_copy: as pollCopy, after the ack (which stands whatever the poll then
    // returns). A rejected ack throws and polls nothing.
    int64_t ackPollCopy(int32_t partition, int64_t offset, int64_t buf, int64_t cap, int32_t max,
                        int64_t wait_ms, CancelToken *cancel);
    // The asynchronous polls (ABI 1.4, async.cpp): mq_member_poll_copy_async, or with ack
    // mq_member_ack_poll_copy_async of (partition, offset), as NativeBroker::pollAsync (the
    // same per-call block, completion and token). Java keeps the member open while it starts
    // one (its gate); mq_member_close completes a pending one with MQ_CLOSED.
    void pollAsync(JNIEnv *jenv, bool ack, int32_t partition, int64_t offset, int64_t cap,
                   int32_t max, int64_t wait_ms, CancelToken *cancel, jasynccall call);
    void ack(int32_t partition, int64_t offset);
    void nack(int32_t partition, int64_t delay_ms);
    void extendLease(int32_t partition);
    // MQ_ERR_DEADLOCK from the member's own rebalance listener.
    void close();

#ifndef SWIG
    NativeMember(const NativeMember &) = delete;
    NativeMember &operator=(const NativeMember &) = delete;

private:
    static void assign(void *user, int32_t partitions, const char *const *member_ids,
                       int32_t member_count, int32_t *owner_out);
    static void rebalanced(void *user, mq_member *member, int64_t generation);
    mq_member *handle();

    // Set by join, or by the listener's first call (which can come before join returns).
    std::atomic<mq_member *> member_{nullptr};
    std::unique_ptr<RebalanceSink> listener_;
#endif
};

}  // namespace mqj
