#include "broker.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "errors.h"
#include "member.h"

namespace mqj {
namespace {

// Java reads and writes these structs in direct buffers by their offsets (org.mq.Wire): the
// layout it assumes is checked here, at build time. Every field of mq_header and mq_record is
// 8 bytes on LP64, so their offsets follow from their sizes (mq_record's delay_ms, ABI 1.5,
// last at 48).
static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "org.mq.Wire assumes 64-bit");
static_assert(sizeof(mq_header) == 32 && sizeof(mq_record) == 56 &&
              offsetof(mq_record, delay_ms) == 48);
static_assert(sizeof(mq_copy_header) == 16 && offsetof(mq_copy_header, bytes_at) == 8);
static_assert(sizeof(mq_copied_message) == 88 && offsetof(mq_copied_message, key_at) == 32 &&
              offsetof(mq_copied_message, dead_letter_at) == 80);
static_assert(sizeof(mq_copied_header) == 32);
static_assert(sizeof(mq_copied_dead_letter) == 48 &&
              offsetof(mq_copied_dead_letter, partition) == 40);

int64_t read_clock(void *user) {
    return static_cast<std::atomic<int64_t> *>(user)->load(std::memory_order_acquire);
}

jlongArray long_array(JNIEnv *env, const int64_t *v, size_t n) {
    jlongArray a = env->NewLongArray(static_cast<jsize>(n));
    if (a) env->SetLongArrayRegion(a, 0, static_cast<jsize>(n), reinterpret_cast<const jlong *>(v));
    return a;
}

// Reads an snprintf-style list or description: asks for the size first, then fills.
template <typename Call>
std::string read_text(Call call) {
    size_t needed = 0;
    check(call(nullptr, 0, &needed));
    std::string s(needed, '\0');
    check(call(s.data(), s.size(), &needed));
    s.resize(needed ? needed - 1 : 0);
    return s;
}

}  // namespace

jlongArray defaults(JNIEnv *jenv) {
    mq_broker_options b;
    mq_broker_options_init(&b, sizeof b);
    mq_topic_config t;
    mq_topic_config_init(&t, sizeof t);
    mq_group_options g;
    mq_group_options_init(&g, sizeof g);
    mq_subscription_options s;
    mq_subscription_options_init(&s, sizeof s);
    mq_member_options m;
    mq_member_options_init(&m, sizeof m);
    const int64_t v[] = {static_cast<int64_t>(b.max_message_bytes),
                         b.spin_ns,
                         t.partitions,
                         t.capacity,
                         t.max_bytes,
                         t.ack_timeout_ms,
                         t.retention,
                         t.max_age_ms,
                         g.start,
                         g.max_deliveries,
                         s.prefetch,
                         m.session_timeout_ms,
                         s.session_timeout_ms,
                         g.share,
                         g.max_acquired};
    return long_array(jenv, v, sizeof v / sizeof v[0]);
}

// ---- ManualClock, CancelToken, copying polls------------------------------------------------

ManualClock::ManualClock(int64_t start_ns)
    : now_(std::make_shared<std::atomic<int64_t>>(start_ns)) {}
int64_t ManualClock::now() const { return now_->load(); }
void ManualClock::set(int64_t ns) { now_->store(ns); }
void ManualClock::advance(int64_t ns) { now_->fetch_add(ns); }

CancelToken::CancelToken() { check(mq_cancel_new(&token_)); }
CancelToken::~CancelToken() { mq_cancel_free(token_); }
void CancelToken::trigger() { mq_cancel_trigger(token_); }
void CancelToken::reset() { mq_cancel_reset(token_); }
bool CancelToken::triggered() const { return mq_cancel_is_triggered(token_) != 0; }

int64_t copied(mq_status st, size_t count, size_t needed, int64_t cap) {
    if (st == MQ_TIMEOUT) return 0;
    // A room above cap is the first message's alone; anything else is a failure to report.
    if (st == MQ_ERR_TOO_LARGE && needed > static_cast<size_t>(cap))
        return -static_cast<int64_t>(needed);
    check(st);
    return static_cast<int64_t>(count);
}

size_t poll_max(int32_t max) {
    if (max < 0) fail(MQ_ERR_INVALID, "max is " + std::to_string(max) + "; it must be at least 1");
    return static_cast<size_t>(max);
}

void *address(int64_t at) { return reinterpret_cast<void *>(static_cast<intptr_t>(at)); }

// ---- NativeBroker ----------------------------------------------------------------------------

namespace {

// A C string of a Java byte[]'s bytes; NULL stays NULL. The Java side refuses NUL characters,
// which would cut the C string short; this checks again, for a caller other than it.
const char *c_text(const void *data, size_t len, std::string &store, const char *what) {
    if (!data) return nullptr;
    store.assign(static_cast<const char *>(data), len);
    if (store.find('\0') != std::string::npos)
        fail(MQ_ERR_INVALID, std::string(what) + " contains a NUL character");
    return store.c_str();
}

}  // namespace

NativeBroker::NativeBroker(int64_t max_message_bytes, int64_t spin_ns, ManualClock *clock,
                           const void *kafka_bootstrap, size_t kafka_bootstrap_len,
                           const void *kafka_config, size_t kafka_config_len) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    if (max_message_bytes < 0) {
        fail(MQ_ERR_INVALID, "max_message_bytes is " + std::to_string(max_message_bytes) +
                                 "; it must be 1 to 2^30");
    }
    o.max_message_bytes = static_cast<size_t>(max_message_bytes);
    o.spin_ns = spin_ns;
    std::string bootstrap, config;  // mq_broker_new copies both
    o.kafka_bootstrap = c_text(kafka_bootstrap, kafka_bootstrap_len, bootstrap, "kafka_bootstrap");
    o.kafka_config = c_text(kafka_config, kafka_config_len, config, "kafka_config");
    if (clock) {
        clock_ = clock->state();  // outlives the broker, whatever happens to the Java clock
        o.clock = read_clock;
        o.clock_user = clock_.get();
    }
    check(mq_broker_new(&o, &broker_));
}

NativeBroker::~NativeBroker() {
    mq_broker_free(broker_);
    // After the free no rebalance can run an assignor; releasing them calls into Java.
    for (auto &a : assignors_) delete_director(a.release());
    assignors_.clear();
}

void NativeBroker::keep(std::unique_ptr<AssignorSink> assignor) {
    std::lock_guard lk(assignors_mu_);
    assignors_.push_back(std::move(assignor));
}

void NativeBroker::close() { check(mq_broker_close(broker_)); }

void NativeBroker::createTopic(const char *topic, int32_t partitions, int64_t capacity,
                               int64_t max_bytes, int64_t ack_timeout_ms, int32_t retention,
                               int64_t max_age_ms) {
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = partitions;
    c.capacity = capacity;
    c.max_bytes = max_bytes;
    c.ack_timeout_ms = ack_timeout_ms;
    c.retention = retention;
    c.max_age_ms = max_age_ms;
    check(mq_topic_create(broker_, topic, &c));
}

void NativeBroker::subscribe(const char *topic, const char *group, int32_t start,
                             int64_t max_deliveries, const char *dead_letter_topic, int32_t share,
                             int64_t max_acquired) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = start;
    if (max_deliveries < 0 || max_deliveries > UINT32_MAX) {
        fail(MQ_ERR_INVALID, "max_deliveries is " + std::to_string(max_deliveries) +
                                 "; it must be 0 (no limit) to 4294967295");
    }
    o.max_deliveries = static_cast<uint32_t>(max_deliveries);
    o.dead_letter_topic = dead_letter_topic;
    o.share = share;  // the library checks the mode
    if (max_acquired < 0 || max_acquired > UINT32_MAX) {
        fail(MQ_ERR_INVALID, "max_acquired is " + std::to_string(max_acquired) +
                                 "; it must be 0 (the default, 2000) to 1000000");
    }
    o.max_acquired = static_cast<uint32_t>(max_acquired);
    check(mq_group_subscribe(broker_, topic, group, &o));
}

void NativeBroker::unsubscribe(const char *topic, const char *group) {
    check(mq_group_unsubscribe(broker_, topic, group));
}

void NativeBroker::deleteTopic(const char *topic) { check(mq_topic_delete(broker_, topic)); }

int64_t NativeBroker::publish(const char *topic, int64_t record, int64_t wait_ms,
                              CancelToken *cancel) {
    return publish_record(record, [&](const mq_record &r, int32_t *partition, int64_t *offset) {
        return mq_topic_publish(broker_, topic, r.key, r.key_len, r.payload, r.payload_len,
                                r.headers, r.header_count, wait_ms, token_of(cancel), partition,
                                offset);
    });
}

int32_t NativeBroker::publishBatch(JNIEnv *jenv, const char *topic, int64_t records, int32_t count,
                                   int64_t wait_ms, CancelToken *cancel, jlongArray results) {
    return publish_batch(
        jenv, records, count, results,
        [&](const mq_record *recs, size_t n, mq_publish_result *res, size_t *published) {
            return mq_topic_publish_batch(broker_, topic, recs, sizeof(mq_record), n, wait_ms,
                                          token_of(cancel), res, sizeof(mq_publish_result),
                                          published);
        });
}

int64_t NativeBroker::pollCopy(const char *topic, const char *group, int32_t partition, int64_t buf,
                               int64_t cap, int32_t max, int64_t wait_ms, CancelToken *cancel) {
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_group_poll_copy(broker_, topic, group, partition, address(buf),
                                  static_cast<size_t>(cap), poll_max(max), wait_ms,
                                  token_of(cancel), n, needed);
    });
}

int64_t NativeBroker::ackPollCopy(const char *topic, const char *group, int32_t partition,
                                  int64_t offset, int64_t buf, int64_t cap, int32_t max,
                                  int64_t wait_ms, CancelToken *cancel) {
    return copy_poll(cap, [&](size_t *n, size_t *needed) {
        return mq_group_ack_poll_copy(broker_, topic, group, partition, offset, address(buf),
                                      static_cast<size_t>(cap), poll_max(max), wait_ms,
                                      token_of(cancel), n, needed);
    });
}

void NativeBroker::ack(const char *topic, const char *group, int32_t partition, int64_t offset) {
    check(mq_group_ack(broker_, topic, group, partition, offset));
}

void NativeBroker::nack(const char *topic, const char *group, int32_t partition, int64_t delay_ms) {
    check(mq_group_nack(broker_, topic, group, partition, delay_ms));
}

void NativeBroker::extendLease(const char *topic, const char *group, int32_t partition) {
    check(mq_group_extend_lease(broker_, topic, group, partition));
}

void NativeBroker::seek(const char *topic, const char *group, int32_t partition, int64_t offset) {
    check(mq_group_seek(broker_, topic, group, partition, offset));
}

void NativeBroker::shareSettle(const char *topic, const char *group, int32_t partition,
                               int64_t offset, int64_t delivery_count, int32_t action,
                               int64_t delay_ms) {
    if (delivery_count < 0 || delivery_count > UINT32_MAX) {
        fail(MQ_ERR_INVALID, "delivery_count is " + std::to_string(delivery_count) +
                                 "; it must be 0 to 4294967295 (the message's, as a poll handed "
                                 "it out)");
    }
    check(mq_share_settle(broker_, topic, group, partition, offset,
                          static_cast<uint32_t>(delivery_count), action, delay_ms));
}

jlongArray NativeBroker::topicInfo(JNIEnv *jenv, const char *topic) {
    mq_topic_info i;
    check(mq_topic_get_info(broker_, topic, &i, sizeof i));
    const int64_t v[] = {i.partitions,     i.capacity,  i.max_bytes,
                         i.ack_timeout_ms, i.retention, i.max_age_ms};
    return long_array(jenv, v, sizeof v / sizeof v[0]);
}

jlongArray NativeBroker::partitionInfo(JNIEnv *jenv, const char *topic, int32_t partition) {
    mq_partition_info i;
    check(mq_partition_get_info(broker_, topic, partition, &i, sizeof i));
    const int64_t v[] = {i.start,          i.end,
                         i.backlog,        i.capacity,
                         i.retained_bytes, i.max_bytes,
                         i.producer_waits, i.max_backlog,
                         i.dropped,        i.oldest_timestamp_ns,
                         i.oldest_age_ns};
    return long_array(jenv, v, sizeof v / sizeof v[0]);
}

jlongArray NativeBroker::groupInfo(JNIEnv *jenv, const char *topic, const char *group,
                                   int32_t partition) {
    mq_group_info i;
    check(mq_group_get_info(broker_, topic, group, partition, &i, sizeof i));
    const int64_t v[] = {i.committed,
                         i.next,
                         i.lag,
                         i.in_flight,
                         i.lost,
                         i.dead_lettered,
                         i.next_age_ns,
                         i.paused_until_ns,
                         i.acquired,
                         i.available,
                         i.delayed,
                         i.rejected,
                         i.oldest_unsettled_age_ns,
                         i.delivered_once,
                         i.delivered_twice,
                         i.delivered_thrice,
                         i.delivered_more};
    return long_array(jenv, v, sizeof v / sizeof v[0]);
}

jstring NativeBroker::describe(JNIEnv *jenv, const char *topic, int32_t partition) {
    return make_jstring(jenv, read_text([&](char *buf, size_t cap, size_t *needed) {
                            return mq_partition_describe(broker_, topic, partition, buf, cap,
                                                         needed);
                        }));
}

jstring NativeBroker::topics(JNIEnv *jenv) {
    return make_jstring(jenv, read_text([&](char *buf, size_t cap, size_t *needed) {
                            return mq_topic_list(broker_, buf, cap, needed);
                        }));
}

jstring NativeBroker::groups(JNIEnv *jenv, const char *topic) {
    return make_jstring(jenv, read_text([&](char *buf, size_t cap, size_t *needed) {
                            return mq_group_list(broker_, topic, buf, cap, needed);
                        }));
}

int32_t NativeBroker::partitionFor(const void *key, size_t key_len, int32_t partitions) {
    int32_t p = -1;
    check(mq_key_partition(key, key_len, partitions, &p));
    return p;
}

int32_t NativeBroker::murmur2(const void *key, size_t key_len) {
    return mq_key_murmur2(key, key_len);
}

jintArray NativeBroker::roundRobin(JNIEnv *jenv, int32_t partitions, int32_t members,
                                   int32_t member) {
    size_t count = 0;
    check(mq_assignment_round_robin(partitions, members, member, nullptr, 0, &count));
    std::vector<int32_t> out(count);
    check(mq_assignment_round_robin(partitions, members, member, out.data(), out.size(), &count));
    jintArray a = jenv->NewIntArray(static_cast<jsize>(count));
    if (a) jenv->SetIntArrayRegion(a, 0, static_cast<jsize>(count), out.data());
    return a;
}

jstring NativeBroker::version(JNIEnv *jenv) {
    return make_jstring(jenv, std::string(mq_version_string()));
}

int32_t NativeBroker::versionNumber() { return mq_version_number(); }

jstring NativeBroker::statusName(JNIEnv *jenv, int32_t status) {
    return make_jstring(jenv, std::string(mq_status_name(static_cast<mq_status>(status))));
}

int64_t NativeBroker::addressOf(JNIEnv *jenv, jobject buffer) {
    void *p = jenv->GetDirectBufferAddress(buffer);
    if (!p) fail(MQ_ERR_INTERNAL, "not a direct buffer (a bug of the binding)");
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
}

int64_t NativeBroker::copyName(const void *key, size_t key_len) {
    char *s = static_cast<char *>(std::malloc(key_len + 1));
    if (!s) throw std::bad_alloc();
    if (key_len) std::memcpy(s, key, key_len);
    s[key_len] = '\0';
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(s));
}

}  // namespace mqj
