// Push subscriptions: the library's threads call a Java MessageSink (a SWIG director) for each
// message, attached to the JVM as daemons for as long as they live.
#pragma once

#include <jni.h>
#include <mq.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "jvm.h"

namespace mqj {

class NativeBroker;

// Implemented in Java. deliver() gets the message in buffer[0, length) in the copying poll's
// layout 1 (mq.h), one entry, and returns 0 to ack, nonzero to nack. It must not throw: whatever escapes is dropped and
// the message nacked.
class MessageSink {
public:
    virtual ~MessageSink();
    virtual int deliver(jbytebuffer buffer, int length);
};

class NativeSubscription {
public:
    NativeSubscription();
    ~NativeSubscription();
    // partitions null: the group's members share the
    // topic. The sink is owned from here on (also when open fails): it is deleted when the
    // library releases it, after its last call.
    void open(NativeBroker &broker, const char *topic, const char *group, int32_t prefetch,
              int64_t session_timeout_ms, jintArray partitions, MessageSink *sink, JNIEnv *jenv);
    // MQ_ERR_DEADLOCK from the subscription's own handler.
    void close();

    // mq_handler_extend_lease / mq_handler_set_nack_delay (the calling thread's handler call).
    static void extendLease();
    static void setNackDelay(int64_t delay_ms);

#ifndef SWIG
    NativeSubscription(const NativeSubscription &) = delete;
    NativeSubscription &operator=(const NativeSubscription &) = delete;

private:
    static int handle(void *user, const mq_message *msg);
    static void release(void *user);

    mq_subscription *sub_ = nullptr;
    MessageSink *sink_ = nullptr;
    std::string thread_name_;  // the Java name of its library threads
#endif
};

}  // namespace mqj
