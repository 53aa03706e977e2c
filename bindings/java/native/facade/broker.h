// The facade SWIG wraps: small C++ classes over the C API's handles, with every failure thrown
// as an Error (turned into a Java exception by the wrapper) and every message read in one
// crossing. Java's org.mq classes are the public API; these stay package-private.
#pragma once

#include <jni.h>
#include <mq.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "errors.h"
#include "jvm.h"

namespace mqj {

class AssignorSink;

// The library's defaults, read from its *_init functions so the Java builders start from them.
// Order: broker max_message_bytes, spin_ns; topic partitions, capacity, max_bytes,
// ack_timeout_ms, retention, max_age_ms; group start, max_deliveries; subscription prefetch;
// member session_timeout_ms; subscription session_timeout_ms; group share, max_acquired
// (ABI 1.6).
jlongArray defaults(JNIEnv *jenv);

// A manual broker clock for tests: an atomic the clock function reads. It never calls into
// Java (mq calls clocks with partition locks held).
class ManualClock {
public:
    explicit ManualClock(int64_t start_ns);
    int64_t now() const;
    void set(int64_t ns);
    void advance(int64_t ns);
#ifndef SWIG
    std::shared_ptr<std::atomic<int64_t>> state() const { return now_; }

private:
    std::shared_ptr<std::atomic<int64_t>> now_;
#endif
};

// An mq_cancel token: Java triggers it when the thread that waits with it is interrupted.
class CancelToken {
public:
    CancelToken();
    ~CancelToken();
    void trigger();
    void reset();
    bool triggered() const;
#ifndef SWIG
    CancelToken(const CancelToken &) = delete;
    CancelToken &operator=(const CancelToken &) = delete;
    mq_cancel *raw() const { return token_; }

private:
    mq_cancel *token_ = nullptr;
#endif
};

class NativeBroker {
public:
    // Values as the Java builders hold them (started from defaults()). clock may be null.
    // kafka_bootstrap and kafka_config (ABI 1.2) are UTF-8 without a terminator, null for
    // NULL; the library copies them, so they need to live only through mq_broker_new.
    NativeBroker(int64_t max_message_bytes, int64_t spin_ns, ManualClock *clock,
                 const void *kafka_bootstrap, size_t kafka_bootstrap_len, const void *kafka_config,
                 size_t kafka_config_len);
    ~NativeBroker();

    void close();

    void createTopic(const char *topic, int32_t partitions, int64_t capacity, int64_t max_bytes,
                     int64_t ack_timeout_ms, int32_t retention, int64_t max_age_ms);
    // share (an mq_share_mode) and max_acquired: ABI 1.6's share groups.
    void subscribe(const char *topic, const char *group, int32_t start, int64_t max_deliveries,
                   const char *dead_letter_topic, int32_t share, int64_t max_acquired);
    void unsubscribe(const char *topic, const char *group);
    // mq_topic_delete (ABI 1.1).
    void deleteTopic(const char *topic);

    // Publishes the mq_record Java wrote at `record` in a direct buffer (with the key, value
    // and header array it points to, all in that buffer). Returns the offset and writes the
    // partition (int32) over the start of the record.
    int64_t publish(const char *topic, int64_t record, int64_t wait_ms, CancelToken *cancel);
    // records: the address of count mq_records Java wrote in a direct buffer. Returns how many
    // were published; results gets (partition, offset) per record whenever the library
    // reported them (also before the throw of a batch that stopped part-way), and is left
    // alone otherwise.
    int32_t publishBatch(JNIEnv *jenv, const char *topic, int64_t records, int32_t count,
                         int64_t wait_ms, CancelToken *cancel, jlongArray results);

    // The copying poll (mq_group_poll_copy) into buf, the address of an 8-byte aligned direct
    // buffer of cap bytes, in layout 1. Returns how many messages were copied (0 when the
    // wait ended with none), or minus the room the first message needs alone when it does
    // not fit (nothing was handed out: grow the buffer and poll again).
    int64_t pollCopy(const char *topic, const char *group, int32_t partition, int64_t buf,
                     int64_t cap, int32_t max, int64_t wait_ms, CancelToken *cancel);
    // mq_group_ack_poll_copy: as pollCopy, after the ack of offset (which stands whatever the
    // poll then returns). A rejected ack throws and polls nothing.
    int64_t ackPollCopy(const char *topic, const char *group, int32_t partition, int64_t offset,
                        int64_t buf, int64_t cap, int32_t max, int64_t wait_ms,
                        CancelToken *cancel);
    // The asynchronous calls (ABI 1.4, async.cpp): each starts the C *_async call with
    // everything it points to copied into a per-call native block (the copy buffer of cap
    // bytes, the outputs, the records with their bytes, the names), and a global reference to
    // `call` (an org.mq.AsyncCall). The call's outcome goes to call.finish(...) once: on this
    // thread before the method returns when the C call did not pend, else on the broker's
    // completer thread (attached to the JVM as a daemon); the block and the reference go right
    // after. cancel (the call's own token) is Java's, freed by Java after finish.
    // pollAsync: mq_group_poll_copy_async, or with ack mq_group_ack_poll_copy_async of offset.
    void pollAsync(JNIEnv *jenv, const char *topic, const char *group, int32_t partition, bool ack,
                   int64_t offset, int64_t cap, int32_t max, int64_t wait_ms, CancelToken *cancel,
                   jasynccall call);
    // publishAsync: the `count` mq_records Java wrote at `records` (size bytes with their
    // headers and bytes, pointers into that region), copied here; batch: the batch call (count
    // may be any), else mq_topic_publish_async of the first record.
    void publishAsync(JNIEnv *jenv, const char *topic, int64_t records, int64_t size, int32_t count,
                      bool batch, int64_t wait_ms, CancelToken *cancel, jasynccall call);
    void ack(const char *topic, const char *group, int32_t partition, int64_t offset);
    void nack(const char *topic, const char *group, int32_t partition, int64_t delay_ms);
    void extendLease(const char *topic, const char *group, int32_t partition);
    void seek(const char *topic, const char *group, int32_t partition, int64_t offset);
    // mq_share_settle (ABI 1.6): action an mq_settle, delivery_count 0 to UINT32_MAX.
    void shareSettle(const char *topic, const char *group, int32_t partition, int64_t offset,
                     int64_t delivery_count, int32_t action, int64_t delay_ms);

    // Introspection, as arrays of the C structs' fields in their order.
    jlongArray topicInfo(JNIEnv *jenv, const char *topic);
    jlongArray partitionInfo(JNIEnv *jenv, const char *topic, int32_t partition);
    jlongArray groupInfo(JNIEnv *jenv, const char *topic, const char *group, int32_t partition);
    jstring describe(JNIEnv *jenv, const char *topic, int32_t partition);
    // Names separated by '\n' (each followed by one), as the C calls write them.
    jstring topics(JNIEnv *jenv);
    jstring groups(JNIEnv *jenv, const char *topic);

    static int32_t partitionFor(const void *key, size_t key_len, int32_t partitions);
    static int32_t murmur2(const void *key, size_t key_len);
    static jintArray roundRobin(JNIEnv *jenv, int32_t partitions, int32_t members, int32_t member);
    static jstring version(JNIEnv *jenv);
    // A malloc'd NUL-terminated copy of a name's bytes, as a number for org.mq.Names (never
    // freed when interned; freed by the call's wrapper otherwise). Aligned, so bit 0 is free.
    static int64_t copyName(const void *key, size_t key_len);
    // The address of a direct ByteBuffer (Java keeps it with the buffer).
    static int64_t addressOf(JNIEnv *jenv, jobject buffer);
    static int32_t versionNumber();
    // mq_status_name, for the test that Java's table of statuses matches the library's.
    static jstring statusName(JNIEnv *jenv, int32_t status);

#ifndef SWIG
    NativeBroker(const NativeBroker &) = delete;
    NativeBroker &operator=(const NativeBroker &) = delete;
    mq_broker *raw() const { return broker_; }
    // A group keeps the assignor of its first member after that member leaves (and the C API
    // has no release hook for assignor_user), so assignors live as long as the broker.
    void keep(std::unique_ptr<AssignorSink> assignor);

private:
    mq_broker *broker_ = nullptr;
    std::shared_ptr<std::atomic<int64_t>> clock_;
    std::mutex assignors_mu_;
    std::vector<std::unique_ptr<AssignorSink>> assignors_;
#endif
};

#ifndef SWIG
// What Java gets from a copying poll (see pollCopy), or the failure thrown.
int64_t copied(mq_status st, size_t count, size_t needed, int64_t cap);
// A poll's max for the C API: a negative one is refused here (size_t would wrap it).
size_t poll_max(int32_t max);
// A direct buffer's address from Java.
void *address(int64_t at);
inline mq_cancel *token_of(CancelToken *cancel) { return cancel ? cancel->raw() : nullptr; }

// The named forms and the handles (handles.h) share these: only the C call differs.
// A copying poll, call(size_t *count, size_t *needed) -> mq_status, reported as pollCopy says.
template <typename Call>
int64_t copy_poll(int64_t cap, Call call) {
    size_t n = 0, needed = 0;
    const mq_status st = call(&n, &needed);
    return copied(st, n, needed, cap);
}

// The publish of the mq_record Java wrote at `record`, call(const mq_record &, int32_t
// *partition, int64_t *offset) -> mq_status, reported as NativeBroker::publish says.
template <typename Call>
int64_t publish_record(int64_t record, Call call) {
    auto *r = static_cast<mq_record *>(address(record));
    int32_t partition = -1;
    int64_t offset = -1;
    check(call(*r, &partition, &offset));
    std::memcpy(r, &partition, sizeof partition);  // the library has copied the message
    return offset;
}

// The batch publish of the `count` mq_records Java wrote at `records`, call(const mq_record *,
// size_t count, mq_publish_result *, size_t *published) -> mq_status, reported as
// NativeBroker::publishBatch says.
template <typename Call>
int32_t publish_batch(JNIEnv *jenv, int64_t records, int32_t count, jlongArray results, Call call) {
    const size_t n = static_cast<size_t>(count > 0 ? count : 0);
    // INT32_MIN marks a result the library did not write (a batch refused before it started).
    std::vector<mq_publish_result> res(n, mq_publish_result{INT32_MIN, -1});
    size_t published = 0;
    const mq_status st =
        call(static_cast<const mq_record *>(address(records)), n, res.data(), &published);
    // Read the message before any JNI call: it belongs to this thread's last failing call.
    std::string message = st == MQ_OK ? std::string() : std::string(mq_last_error());
    bool written = true;
    for (const mq_publish_result &r : res) written = written && r.partition != INT32_MIN;
    if (written && (st == MQ_OK || st == MQ_FULL || st == MQ_CLOSED || st == MQ_CANCELLED)) {
        std::vector<jlong> flat(2 * n);
        for (size_t i = 0; i < n; ++i) {
            flat[2 * i] = res[i].partition;
            flat[2 * i + 1] = res[i].offset;
        }
        jenv->SetLongArrayRegion(results, 0, static_cast<jsize>(flat.size()), flat.data());
    }
    if (st != MQ_OK) fail(st, std::move(message));
    return static_cast<int32_t>(published);
}
#endif

}  // namespace mqj
