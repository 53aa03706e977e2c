#include "member.h"

#include <charconv>
#include <vector>

#include "errors.h"

namespace mqj {

AssignorSink::~AssignorSink() = default;
std::string AssignorSink::assign(int32_t, const std::string &) { return std::string(); }

RebalanceSink::~RebalanceSink() = default;
void RebalanceSink::onRebalance(int64_t) {}

NativeMember::NativeMember() = default;

NativeMember::~NativeMember() {
    if (mq_member *m = member_.load()) mq_member_close(m);
    delete_director(listener_.release());
}

void NativeMember::join(NativeBroker &broker, const char *topic, const char *group,
                        const char *member_id, int64_t session_timeout_ms, AssignorSink *assignor,
                        RebalanceSink *listener) {
    std::unique_ptr<AssignorSink> owned_assignor(assignor);
    listener_.reset(listener);
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = member_id;
    o.session_timeout_ms = session_timeout_ms;
    if (assignor) {
        o.assignor = assign;
        o.assignor_user = assignor;
        broker.keep(std::move(owned_assignor));  // the group may use it after this member
    }
    o.on_rebalance = rebalanced;
    o.on_rebalance_user = this;
    mq_member *m = nullptr;
    const mq_status st = mq_member_join(broker.raw(), topic, group, &o, &m);
    if (st != MQ_OK) {
        const std::string message = mq_last_error();
        delete_director(listener_.release());  // a failed join never called it
        fail(st, message);
    }
    member_.store(m);
}

mq_member *NativeMember::handle() {
    mq_member *m = member_.load();
    if (!m) fail(MQ_ERR_INVALID, "the member has not joined (or has left)");
    return m;
}

jstring NativeMember::id(JNIEnv *jenv) {
    return make_jstring(jenv, std::string(mq_member_id(handle())));
}

jintArray NativeMember::assignment(JNIEnv *jenv, jlongArray generation_out) {
    mq_member *m = handle();
    int64_t generation = 0;
    size_t count = 0;
    std::vector<int32_t> parts(64);
    for (;;) {
        check(mq_member_get_assignment(m, &generation, parts.data(), parts.size(), &count));
        if (count <= parts.size()) break;
        parts.resize(count);  // the assignment grew meanwhile: fetch again with room for it
    }
    jlong g = generation;
    jenv->SetLongArrayRegion(generation_out, 0, 1, &g);
    jintArray a = jenv->NewIntArray(static_cast<jsize>(count));
    if (a) jenv->SetIntArrayRegion(a, 0, static_cast<jsize>(count), parts.data());
    return a;
}

int64_t NativeMember::pollCopy(int64_t buf, int64_t cap, int32_t max, int64_t wait_ms,
                               CancelToken *cancel) {
    mq_member *m = handle();
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_member_poll_copy(m, address(buf), static_cast<size_t>(cap), poll_max(max),
                                   wait_ms, token_of(cancel), n, needed);
    });
}

int64_t NativeMember::ackPollCopy(int32_t partition, int64_t offset, int64_t buf, int64_t cap,
                                  int32_t max, int64_t wait_ms, CancelToken *cancel) {
    mq_member *m = handle();
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_member_ack_poll_copy(m, partition, offset, address(buf), static_cast<size_t>(cap),
                                       poll_max(max), wait_ms, token_of(cancel), n, needed);
    });
}

void NativeMember::ack(int32_t partition, int64_t offset) {
    check(mq_member_ack(handle(), partition, offset));
}

void NativeMember::nack(int32_t partition, int64_t delay_ms) {
    check(mq_member_nack(handle(), partition, delay_ms));
}

void NativeMember::extendLease(int32_t partition) {
    check(mq_member_extend_lease(handle(), partition));
}

void NativeMember::close() {
    mq_member *m = member_.load();
    if (!m) return;
    check(mq_member_close(m));
    member_.store(nullptr);
    delete_director(listener_.release());  // no call of it can run any more
}

void NativeMember::assign(void *user, int32_t partitions, const char *const *member_ids,
                          int32_t member_count, int32_t *owner_out) {
    for (int32_t p = 0; p < partitions; ++p) owner_out[p] = member_count;  // unowned by default
    auto *sink = static_cast<AssignorSink *>(user);
    JNIEnv *env = attach_current_thread("mq-rebalance");
    if (!env || env->PushLocalFrame(16) != JNI_OK) return;
    // The frame frees the call's local references also on a library thread, which never
    // returns to Java to have them freed.
    struct Frame {
        JNIEnv *env;
        ~Frame() {
            if (env->ExceptionCheck()) env->ExceptionClear();
            env->PopLocalFrame(nullptr);
        }
    } frame{env};
    try {
        std::string ids;
        for (int32_t i = 0; i < member_count; ++i) (ids += member_ids[i]) += '\n';
        const std::string owners = sink->assign(partitions, ids);
        const char *p = owners.data();
        const char *end = p + owners.size();
        for (int32_t part = 0; part < partitions && p <= end; ++part) {
            const char *comma = p;
            while (comma < end && *comma != ',') ++comma;
            int32_t v = 0;
            auto [ptr, ec] = std::from_chars(p, comma, v);
            if (ec == std::errc() && ptr == comma) owner_out[part] = v;
            p = comma + 1;
        }
    } catch (...) {
        // A failing assignor leaves the partitions unowned until the next rebalance.
    }
}

void NativeMember::rebalanced(void *user, mq_member *member, int64_t generation) {
    auto *self = static_cast<NativeMember *>(user);
    mq_member *expected = nullptr;
    self->member_.compare_exchange_strong(expected, member);
    JNIEnv *env = self->listener_ ? attach_current_thread("mq-rebalance") : nullptr;
    if (!env || env->PushLocalFrame(16) != JNI_OK) return;
    struct Frame {
        JNIEnv *env;
        ~Frame() {
            if (env->ExceptionCheck()) env->ExceptionClear();
            env->PopLocalFrame(nullptr);
        }
    } frame{env};
    try {
        self->listener_->onRebalance(generation);
    } catch (...) {
        // Nothing crosses into the library; the Java side reports what the listener threw.
    }
}

}  // namespace mqj
