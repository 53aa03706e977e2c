#include "push.h"

#include <memory>
#include <vector>

#include "broker.h"
#include "errors.h"

namespace mqj {
namespace {

// A library thread's copy area, with the direct ByteBuffer Java reads it through (a global
// reference, made again only when the storage moves).
struct ThreadArena {
    std::unique_ptr<uint64_t[]> words;  // 8-byte aligned, as layout 1 wants
    size_t cap = 0;
    jobject view = nullptr;
    ~ThreadArena() {
        // C++ thread_local destructors run before the pthread key that detaches the thread,
        // so the thread can still release its reference here.
        if (!view) return;
        JNIEnv *env = nullptr;
        if (jvm()->GetEnv(reinterpret_cast<void **>(&env), JNI_VERSION_1_8) == JNI_OK) {
            env->DeleteGlobalRef(view);
        }
    }
    // Room for n bytes; true if the storage moved (the view is then stale).
    bool reserve(size_t n) {
        if (n <= cap) return false;
        size_t c = cap ? cap : 4096;
        while (c < n) c *= 2;
        words.reset(new uint64_t[c / 8]);
        cap = c;
        return true;
    }
    unsigned char *data() { return reinterpret_cast<unsigned char *>(words.get()); }
};

thread_local ThreadArena tl_arena;

}  // namespace

MessageSink::~MessageSink() = default;
int MessageSink::deliver(jbytebuffer, int) { return 1; }

NativeSubscription::NativeSubscription() = default;

NativeSubscription::~NativeSubscription() {
    if (sub_) mq_subscription_close(sub_);
}

void NativeSubscription::open(NativeBroker &broker, const char *topic, const char *group,
                              int32_t prefetch, int64_t session_timeout_ms, jintArray partitions,
                              MessageSink *sink, JNIEnv *jenv) {
    std::unique_ptr<MessageSink> owned(sink);
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.prefetch = prefetch;
    o.session_timeout_ms = session_timeout_ms;
    std::vector<int32_t> parts;
    if (partitions) {
        const jsize n = jenv->GetArrayLength(partitions);
        parts.resize(static_cast<size_t>(n));
        jenv->GetIntArrayRegion(partitions, 0, n, parts.data());
        // An empty list stays a list (the library refuses it), never "all partitions".
        static const int32_t kNone = 0;
        o.partitions = parts.empty() ? &kNone : parts.data();
        o.partition_count = parts.size();
    }
    thread_name_ = std::string("mq-push ") + (group ? group : "?") + "@" + (topic ? topic : "?");
    sink_ = owned.release();  // from here on the library releases it, also on failure
    check(mq_subscription_open(broker.raw(), topic, group, &o, handle, this, release, &sub_));
}

void NativeSubscription::close() {
    if (!sub_) return;
    check(mq_subscription_close(sub_));
    sub_ = nullptr;
}

void NativeSubscription::extendLease() { check(mq_handler_extend_lease()); }

void NativeSubscription::setNackDelay(int64_t delay_ms) {
    check(mq_handler_set_nack_delay(delay_ms));
}

int NativeSubscription::handle(void *user, const mq_message *msg) {
    auto *self = static_cast<NativeSubscription *>(user);
    JNIEnv *env = attach_current_thread(self->thread_name_.c_str());
    if (!env) return 1;  // no JVM to run the handler: the message comes again
    try {
        ThreadArena &t = tl_arena;
        // The handler's message in layout 1 (mq_message_copy), so that Java reads pushed and
        // polled messages alike; the area grows to what a message needs.
        bool moved = t.reserve(4096);
        size_t needed = 0;
        mq_status copied = mq_message_copy(msg, t.data(), t.cap, &needed);
        if (copied == MQ_ERR_TOO_LARGE) {
            moved = t.reserve(needed) || moved;
            copied = mq_message_copy(msg, t.data(), t.cap, &needed);
        }
        if (copied != MQ_OK) return 1;  // nacked: the message comes again
        if (moved || !t.view) {
            if (t.view) env->DeleteGlobalRef(t.view);
            t.view = nullptr;
            jobject local = env->NewDirectByteBuffer(t.data(), static_cast<jlong>(t.cap));
            if (!local) {
                env->ExceptionClear();
                return 1;
            }
            t.view = env->NewGlobalRef(local);
            env->DeleteLocalRef(local);
            if (!t.view) return 1;
        }
        const int verdict = self->sink_->deliver(t.view, static_cast<int>(t.cap));
        if (env->ExceptionCheck()) {  // the director could not reach the Java sink
            env->ExceptionClear();
            return 1;
        }
        return verdict;
    } catch (...) {
        // Nothing may cross into the library: a message that cannot reach Java is nacked.
        if (env->ExceptionCheck()) env->ExceptionClear();
        return 1;
    }
}

void NativeSubscription::release(void *user) {
    auto *self = static_cast<NativeSubscription *>(user);
    delete_director(self->sink_);  // drops its reference to the Java handler
    self->sink_ = nullptr;
}

}  // namespace mqj
