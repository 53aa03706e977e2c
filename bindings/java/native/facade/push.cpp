#include "push.h"

#include <cstring>
#include <memory>
#include <vector>

#include "broker.h"
#include "errors.h"

namespace mqj {
namespace {

// The handler's message in layout 1, so that Java reads pushed and polled messages alike. The
// C API copies only polls: this is the copying poll's work for the one view a handler call
// gets (alive for the call). The entry's structs first, then the bytes, front to back.
class OneCopy {
public:
    static size_t size(const mq_message &m) {
        size_t n = sizeof(mq_copy_header) + sizeof(mq_copied_message) +
                   m.header_count * sizeof(mq_copied_header) + (m.key ? m.key_len : 0) +
                   m.payload_len;
        for (size_t i = 0; i < m.header_count; ++i)
            n += m.headers[i].name_len + m.headers[i].value_len;
        if (const mq_dead_letter *d = m.dead_letter)
            n += sizeof(mq_copied_dead_letter) + std::strlen(d->topic) + std::strlen(d->group);
        return n;
    }

    // buf: 8-byte aligned, size(m) bytes.
    static void write(unsigned char *buf, const mq_message &m) {
        OneCopy w{buf, sizeof(mq_copy_header) + sizeof(mq_copied_message)};
        mq_copied_message e{};
        e.offset = m.offset;
        e.partition = m.partition;
        e.delivery_count = m.delivery_count;
        e.timestamp_ns = m.timestamp_ns;
        e.lost = m.lost;
        e.header_count = m.header_count;
        e.headers_at = e.dead_letter_at = MQ_COPY_ABSENT;
        const size_t headers_at = w.at_;
        if (m.header_count) {
            e.headers_at = headers_at;
            w.at_ += m.header_count * sizeof(mq_copied_header);
        }
        if (m.dead_letter) {
            e.dead_letter_at = w.at_;
            w.at_ += sizeof(mq_copied_dead_letter);
        }
        const size_t bytes_at = w.at_;
        e.key_len = m.key ? m.key_len : 0;
        e.key_at = m.key ? w.put(m.key, m.key_len) : MQ_COPY_ABSENT;
        e.payload_len = m.payload_len;
        e.payload_at = w.put(m.payload, m.payload_len);
        for (size_t i = 0; i < m.header_count; ++i) {
            const mq_header &h = m.headers[i];
            const mq_copied_header c{w.put(h.name, h.name_len), h.name_len,
                                     w.put(h.value, h.value_len), h.value_len};
            std::memcpy(buf + headers_at + i * sizeof c, &c, sizeof c);
        }
        if (const mq_dead_letter *d = m.dead_letter) {
            mq_copied_dead_letter c{};
            c.topic_len = std::strlen(d->topic);
            c.topic_at = w.put(d->topic, c.topic_len);
            c.group_len = std::strlen(d->group);
            c.group_at = w.put(d->group, c.group_len);
            c.offset = d->offset;
            c.partition = d->partition;
            c.delivery_count = d->delivery_count;
            std::memcpy(buf + e.dead_letter_at, &c, sizeof c);
        }
        const mq_copy_header h{MQ_COPY_LAYOUT_1, 1, bytes_at};
        std::memcpy(buf, &h, sizeof h);
        std::memcpy(buf + sizeof h, &e, sizeof e);
    }

private:
    OneCopy(unsigned char *base, size_t at) : base_(base), at_(at) {}
    uint64_t put(const void *p, size_t n) {
        if (n) std::memcpy(base_ + at_, p, n);
        at_ += n;
        return at_ - n;
    }
    unsigned char *base_;
    size_t at_;
};

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
        const size_t size = OneCopy::size(*msg);
        if (t.reserve(size) || !t.view) {
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
        OneCopy::write(t.data(), *msg);
        const int verdict = self->sink_->deliver(t.view, static_cast<int>(size));
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
