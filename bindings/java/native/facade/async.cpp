// The asynchronous calls (ABI 1.4) under org.mq's CompletableFutures: no thread per call. The
// group's polls and the publishes (NativeBroker) and a member's polls (NativeMember) share what
// is here. Each call owns one native block (Pending) holding everything the C call points to
// while it is pending: the names, the copy buffer or the records with their bytes, the outputs,
// and a global reference to the Java completion object (org.mq.AsyncCall). The block is freed right
// after the outcome was handed to Java: on the calling thread when the C call did not pend,
// else in the `done` callback on the broker's completer thread, which is attached to the JVM
// as a daemon (as the library's push threads are) and detached when it ends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "broker.h"
#include "errors.h"
#include "member.h"

namespace mqj {
namespace {

// Java reads a batch's results in place (org.mq.AsyncCall's batch): partition at 0, offset at 8.
static_assert(sizeof(mq_publish_result) == 16 && offsetof(mq_publish_result, offset) == 8);

enum class Kind { Poll, Publish, Batch };

struct Pending {
    Kind kind = Kind::Poll;
    jobject call = nullptr;  // a global reference to the org.mq.AsyncCall
    std::string topic, group;
    // Poll: the copy buffer (8-byte aligned, malloc's alignment) and its outputs.
    char *buf = nullptr;
    size_t cap = 0;
    size_t count = 0, needed = 0;
    // Publish and batch: a copy of the records, their header arrays and bytes (rebased).
    char *records = nullptr;
    int32_t partition = -1;
    int64_t offset = -1;
    std::vector<mq_publish_result> results;
    size_t published = 0;

    Pending() = default;
    Pending(const Pending &) = delete;
    Pending &operator=(const Pending &) = delete;
    ~Pending() {
        std::free(buf);
        std::free(records);
    }
};

// Hands the outcome to call.finish(status, a, b, buffer, error, onCompleter) and drops the
// global reference. Never lets a Java exception stay pending (the completer thread goes back
// into C): the Java side catches everything, and whatever still escapes is reported and cleared.
void deliver(JNIEnv *env, Pending *p, mq_status st, const std::string &error, bool on_completer) {
    if (env->PushLocalFrame(8) == 0) {
        jlong a = 0, b = 0;
        jobject buffer = nullptr;
        switch (p->kind) {
            case Kind::Poll:
                a = static_cast<jlong>(p->count);
                b = static_cast<jlong>(p->needed);
                if (st == MQ_OK && p->count > 0)
                    buffer = env->NewDirectByteBuffer(p->buf, static_cast<jlong>(p->cap));
                break;
            case Kind::Publish:
                a = p->partition;
                b = p->offset;
                break;
            case Kind::Batch: {
                a = static_cast<jlong>(p->published);
                bool written = true;
                for (const mq_publish_result &r : p->results)
                    written = written && r.partition != INT32_MIN;
                b = written ? 1 : 0;
                if (written && !p->results.empty()) {
                    buffer = env->NewDirectByteBuffer(
                        p->results.data(),
                        static_cast<jlong>(p->results.size() * sizeof(mq_publish_result)));
                }
                break;
            }
        }
        jbyteArray text = nullptr;
        if (!env->ExceptionCheck() && st != MQ_OK && !error.empty()) {
            const auto n = static_cast<jsize>(error.size());
            text = env->NewByteArray(n);
            if (text)
                env->SetByteArrayRegion(text, 0, n, reinterpret_cast<const jbyte *>(error.data()));
        }
        if (env->ExceptionCheck()) env->ExceptionClear();  // no memory: finish says what it can
        env->CallVoidMethod(p->call, async_finish(), static_cast<jint>(st), a, b, buffer, text,
                            static_cast<jboolean>(on_completer ? JNI_TRUE : JNI_FALSE));
        if (env->ExceptionCheck()) {
            env->ExceptionDescribe();  // reports and clears: a bug of the binding if ever seen
            env->ExceptionClear();
        }
        env->PopLocalFrame(nullptr);
    } else {
        env->ExceptionClear();  // no room for local references: the call is dropped, not the JVM
    }
    env->DeleteGlobalRef(p->call);
    p->call = nullptr;
}

// The C `done`: on the broker's completer thread, with no lock of the library held.
void on_done(void *user, mq_status st) {
    auto *p = static_cast<Pending *>(user);
    const std::string error = st == MQ_OK ? std::string() : std::string(mq_last_error());
    JNIEnv *env = attach_current_thread("mq-completer");
    if (env) {
        deliver(env, p, st, error, true);
    }
    // Without a JVM (it refused to attach: it is going away) the reference cannot be dropped;
    // nothing can observe the call any more.
    delete p;
}

// Starts the call (start() returns the C status) with p set up; finishes at once if it did not
// pend. p is owned here until then and by the completer afterwards.
template <typename Start>
void run(JNIEnv *jenv, Pending *p, jobject call, Start start) {
    p->call = jenv->NewGlobalRef(call);
    if (!p->call) {
        delete p;
        throw std::bad_alloc();
    }
    const mq_status st = start();
    if (st == MQ_PENDING) return;  // done owns p now (it may even have run already)
    const std::string error = st == MQ_OK ? std::string() : std::string(mq_last_error());
    deliver(jenv, p, st, error, false);
    delete p;
}

char *rebase(const void *ptr, const char *from, char *to) {
    if (!ptr) return nullptr;
    return to + (static_cast<const char *>(ptr) - from);
}

// A poll's block: the copy buffer of cap bytes (checked with the rest of the arguments).
Pending *poll_block(int64_t cap, jasynccall call, CancelToken *cancel) {
    if (cap < static_cast<int64_t>(sizeof(mq_copy_header)) || !call || !cancel)
        fail(MQ_ERR_INTERNAL, "a bad asynchronous poll (a bug of the binding)");
    auto *p = new Pending();
    p->kind = Kind::Poll;
    p->cap = static_cast<size_t>(cap);
    p->buf = static_cast<char *>(std::malloc(p->cap));
    if (!p->buf) {
        delete p;
        throw std::bad_alloc();
    }
    return p;
}

}  // namespace

void NativeBroker::pollAsync(JNIEnv *jenv, const char *topic, const char *group, int32_t partition,
                             bool ack, int64_t offset, int64_t cap, int32_t max, int64_t wait_ms,
                             CancelToken *cancel, jasynccall call) {
    const size_t m = poll_max(max);
    Pending *p = poll_block(cap, call, cancel);
    if (topic) p->topic = topic;
    if (group) p->group = group;
    const char *t = topic ? p->topic.c_str() : nullptr;
    const char *g = group ? p->group.c_str() : nullptr;
    mq_broker *b = broker_;
    mq_cancel *tok = cancel->raw();
    run(jenv, p, call, [&] {
        return ack ? mq_group_ack_poll_copy_async(b, t, g, partition, offset, p->buf, p->cap, m,
                                                  wait_ms, tok, &p->count, &p->needed, on_done, p)
                   : mq_group_poll_copy_async(b, t, g, partition, p->buf, p->cap, m, wait_ms, tok,
                                              &p->count, &p->needed, on_done, p);
    });
}

void NativeMember::pollAsync(JNIEnv *jenv, bool ack, int32_t partition, int64_t offset, int64_t cap,
                             int32_t max, int64_t wait_ms, CancelToken *cancel, jasynccall call) {
    mq_member *mb = handle();
    const size_t m = poll_max(max);
    Pending *p = poll_block(cap, call, cancel);
    mq_cancel *tok = cancel->raw();
    run(jenv, p, call, [&] {
        return ack ? mq_member_ack_poll_copy_async(mb, partition, offset, p->buf, p->cap, m,
                                                   wait_ms, tok, &p->count, &p->needed, on_done, p)
                   : mq_member_poll_copy_async(mb, p->buf, p->cap, m, wait_ms, tok, &p->count,
                                               &p->needed, on_done, p);
    });
}

void NativeBroker::publishAsync(JNIEnv *jenv, const char *topic, int64_t records, int64_t size,
                                int32_t count, bool batch, int64_t wait_ms, CancelToken *cancel,
                                jasynccall call) {
    if (size < 0 || count < 0 || (!batch && count != 1) || !call || !cancel)
        fail(MQ_ERR_INTERNAL, "a bad asynchronous publish (a bug of the binding)");
    const size_t n = static_cast<size_t>(count);
    if (n * sizeof(mq_record) > static_cast<size_t>(size))
        fail(MQ_ERR_INTERNAL, "a bad asynchronous publish (a bug of the binding)");
    auto *p = new Pending();
    p->kind = batch ? Kind::Batch : Kind::Publish;
    if (topic) p->topic = topic;
    // The records, their header arrays and their bytes, with every pointer moved to the copy.
    const char *from = static_cast<const char *>(address(records));
    p->records = static_cast<char *>(std::malloc(size > 0 ? static_cast<size_t>(size) : 1));
    if (!p->records) {
        delete p;
        throw std::bad_alloc();
    }
    if (size > 0) std::memcpy(p->records, from, static_cast<size_t>(size));
    auto *recs = reinterpret_cast<mq_record *>(p->records);
    for (size_t i = 0; i < n; ++i) {
        mq_record &r = recs[i];
        r.key = rebase(r.key, from, p->records);
        r.payload = rebase(r.payload, from, p->records);
        r.headers = reinterpret_cast<const mq_header *>(rebase(r.headers, from, p->records));
        auto *hs = const_cast<mq_header *>(r.headers);
        for (size_t h = 0; hs && h < r.header_count; ++h) {
            hs[h].name = rebase(hs[h].name, from, p->records);
            hs[h].value = rebase(hs[h].value, from, p->records);
        }
    }
    // INT32_MIN marks a result the library did not write (a batch refused before it started).
    if (batch) p->results.assign(n, mq_publish_result{INT32_MIN, -1});
    const char *t = topic ? p->topic.c_str() : nullptr;
    mq_broker *b = broker_;
    mq_cancel *tok = cancel->raw();
    run(jenv, p, call, [&] {
        if (batch) {
            return mq_topic_publish_batch_async(b, t, recs, sizeof(mq_record), n, wait_ms, tok,
                                                p->results.data(), sizeof(mq_publish_result),
                                                &p->published, on_done, p);
        }
        const mq_record &r = recs[0];
        return mq_topic_publish_async(b, t, r.key, r.key_len, r.payload, r.payload_len, r.headers,
                                      r.header_count, wait_ms, tok, &p->partition, &p->offset,
                                      on_done, p);
    });
}

}  // namespace mqj
