// The C boundary: argument checks, translation to the core, and the guarantee that no C++
// exception leaves the library (std::bad_alloc becomes MQ_ERR_NO_MEMORY with nothing changed).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "capi/broker.h"
#include "capi/c_api_calls.h"
#include "capi/c_api_util.h"
#include "util/cancel.h"
#include "util/error.h"
#include "core/group_poll.h"
#include "util/murmur2.h"
#include "util/names.h"
#include "capi/member.h"
#include "capi/subscription.h"

using mq::fail;

using mq::check_partition;
using mq::check_wait;
using mq::guarded;
using mq::on_broker;
using mq::on_broker_any;
using mq::size_ok;

namespace {

mq_status lookup_group(mq::Topic &t, const char *group, const mq::Group **out) {
    if (!group) return fail(MQ_ERR_INVALID, "group name is NULL");
    const mq::Group *g = t.find_group(group);
    if (!g) {
        if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
        return fail(MQ_ERR_NO_GROUP, "group %s is not subscribed to topic %s", group,
                    t.name().c_str());
    }
    *out = g;
    return MQ_OK;
}

// What a call that may block uses when it wakes: if it sleeps, it holds references to them and
// leaves the grace period (call_gate.h), so an idle poll holds back no reclamation.
void pins(void *topic, void *group, bool acquire) noexcept {
    auto *t = static_cast<mq::Topic *>(topic);
    auto *g = static_cast<const mq::Group *>(group);
    if (acquire) {
        t->add_ref();
        if (g) g->add_ref();
    } else {
        if (g) g->release();
        t->release();  // after the group: a topic's last release drops its groups' references
    }
}
void pin_for_wait(mq::GateScope &scope, mq::Topic *t, const mq::Group *g = nullptr) noexcept {
    scope.pin(pins, t, const_cast<mq::Group *>(g));
}

// Resolves (topic, group, partition) and runs f(partition, group): the shape of every call on
// one group's cursor. A call that may block passes its scope, to pin the topic and group for
// its wait (a poll's dead letters go to a topic the group holds).
template <class F>
mq_status with_cursor(mq_broker *b, const char *topic, const char *group, int32_t partition, F &&f,
                      mq::GateScope *blocking = nullptr) {
    mq::Topic *t;
    if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
    const mq::Group *g = nullptr;  // set by lookup_group; gcc -O3 cannot see that
    if (mq_status st = lookup_group(*t, group, &g); st != MQ_OK) return st;
    if (mq_status st = check_partition(*t, partition); st != MQ_OK) return st;
    if (blocking) pin_for_wait(*blocking, t, g);
    return f(t->partition(partition), g);
}

// The same for a call that may block: f(partition, group, scope).
template <class F>
mq_status on_blocking_cursor(mq_broker *b, const char *topic, const char *group, int32_t partition,
                             F &&f) noexcept {
    return mq::on_broker(b, [&](mq::GateScope &scope) {
        return with_cursor(
            b, topic, group, partition,
            [&](mq::Partition &p, const mq::Group *g) { return f(p, g, scope); }, &scope);
    });
}

template <class F>
mq_status on_cursor(mq_broker *b, const char *topic, const char *group, int32_t partition,
                    F &&f) noexcept {
    return on_broker(b, [&] { return with_cursor(b, topic, group, partition, f); });
}

// The same on the Kafka backend: the names checked here, the rest there. g(backend).
template <class G>
mq_status on_kafka_cursor(mq_broker *b, const char *topic, const char *group, bool any,
                          G &&g) noexcept {
    auto body = [&] {
        if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
        if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
        return g(*b->backend);
    };
    return any ? on_broker_any(b, body) : on_broker(b, body);
}

template <class F>
mq_status on_cursor_any(mq_broker *b, const char *topic, const char *group, int32_t partition,
                        F &&f) noexcept {
    return on_broker_any(b, [&] { return with_cursor(b, topic, group, partition, f); });
}

}  // namespace

// Declared in c_api_calls.h (the handles' publish calls it too).
mq_status mq::capi::check_record(const mq_broker *b, const mq::Topic *t, const mq_record &r) {
    if (!r.key && r.key_len)
        return fail(MQ_ERR_INVALID, "key is NULL but key_len is %zu", r.key_len);
    if (!r.payload && r.payload_len) {
        return fail(MQ_ERR_INVALID, "payload is NULL but payload_len is %zu", r.payload_len);
    }
    if (!r.headers && r.header_count) {
        return fail(MQ_ERR_INVALID, "headers is NULL but header_count is %zu", r.header_count);
    }
    if (mq_status st = mq::check_duration(r.delay_ms, "delay_ms"); st != MQ_OK) return st;
    // Summed with overflow checks: a record's sizes come from the caller.
    const size_t limit = b->max_message_bytes;
    size_t bytes = r.key ? r.key_len : 0;
    bool over = bytes > limit || r.payload_len > limit - bytes;
    if (!over) bytes += r.payload_len;
    for (size_t h = 0; h < r.header_count && !over; h++) {
        const mq_header &hd = r.headers[h];
        if (!hd.name && hd.name_len) {
            return fail(MQ_ERR_INVALID, "header %zu: name is NULL but name_len is %zu", h,
                        hd.name_len);
        }
        if (!hd.value && hd.value_len) {
            return fail(MQ_ERR_INVALID, "header %zu: value is NULL but value_len is %zu", h,
                        hd.value_len);
        }
        over = hd.name_len > limit - bytes || hd.value_len > limit - bytes - hd.name_len;
        if (!over) bytes += hd.name_len + hd.value_len;
    }
    if (over) {
        return fail(MQ_ERR_TOO_LARGE,
                    "key + payload + headers is larger than the broker's max_message_bytes (%zu)",
                    limit);
    }
    if (t && t->settings().max_bytes && static_cast<int64_t>(bytes) > t->settings().max_bytes) {
        return fail(MQ_ERR_TOO_LARGE,
                    "key + payload + headers (%zu bytes) is larger than topic %s's byte budget "
                    "per partition (%lld)",
                    bytes, t->name().c_str(), static_cast<long long>(t->settings().max_bytes));
    }
    return MQ_OK;
}

namespace {

// True when r passes check_record without looking further: no headers, no NULL pointer with a
// length, key + payload within `cap` (the broker's max_message_bytes, or the topic's byte budget
// if that is less; below 2^63, so the sum cannot wrap once each length is within it). The batch
// loop runs this inline and calls check_record only for the rest, which then names the fault.
inline bool plainly_valid(const mq_record &r, size_t cap) noexcept {
    const bool sizes = ((r.key_len | r.payload_len) <= cap) & (r.key_len + r.payload_len <= cap);
    const bool pointers =
        ((r.key != nullptr) | (r.key_len == 0)) & ((r.payload != nullptr) | (r.payload_len == 0));
    return sizes & pointers & (r.header_count == 0) & (r.delay_ms == 0);
}

// snprintf-style output of a string.
void write_out(const std::string &s, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = s.size() + 1;
    if (cap == 0) return;
    const size_t n = std::min(cap - 1, s.size());
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
}

}  // namespace

extern "C" {

// ---- version, statuses, errors ------------------------------------------------------------

MQ_API int mq_version_number(void) { return MQ_VERSION_NUMBER; }
MQ_API const char *mq_version_string(void) { return MQ_VERSION_STRING; }

MQ_API const char *mq_status_name(int status) {
    switch (status) {
        case MQ_OK: return "MQ_OK";
        case MQ_TIMEOUT: return "MQ_TIMEOUT";
        case MQ_FULL: return "MQ_FULL";
        case MQ_CLOSED: return "MQ_CLOSED";
        case MQ_CANCELLED: return "MQ_CANCELLED";
        case MQ_REBALANCED: return "MQ_REBALANCED";
        case MQ_PENDING: return "MQ_PENDING";
        case MQ_ERR_INVALID: return "MQ_ERR_INVALID";
        case MQ_ERR_NO_TOPIC: return "MQ_ERR_NO_TOPIC";
        case MQ_ERR_NO_GROUP: return "MQ_ERR_NO_GROUP";
        case MQ_ERR_EXISTS: return "MQ_ERR_EXISTS";
        case MQ_ERR_PARTITION: return "MQ_ERR_PARTITION";
        case MQ_ERR_TOO_LARGE: return "MQ_ERR_TOO_LARGE";
        case MQ_ERR_NOT_IN_FLIGHT: return "MQ_ERR_NOT_IN_FLIGHT";
        case MQ_ERR_OWNED: return "MQ_ERR_OWNED";
        case MQ_ERR_DEADLOCK: return "MQ_ERR_DEADLOCK";
        case MQ_ERR_NO_MEMORY: return "MQ_ERR_NO_MEMORY";
        case MQ_ERR_INTERNAL: return "MQ_ERR_INTERNAL";
        case MQ_ERR_OUT_OF_RANGE: return "MQ_ERR_OUT_OF_RANGE";
        case MQ_ERR_FENCED: return "MQ_ERR_FENCED";
        case MQ_ERR_UNSUPPORTED: return "MQ_ERR_UNSUPPORTED";
        case MQ_ERR_BACKEND: return "MQ_ERR_BACKEND";
        default: return "MQ_UNKNOWN_STATUS";
    }
}

MQ_API const char *mq_last_error(void) { return mq::last_error(); }

// ---- cancel tokens ---------------------------------------------------------------------------

MQ_API mq_status mq_cancel_new(mq_cancel **out) {
    if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
    return guarded([&] {
        *out = new mq_cancel();
        return MQ_OK;
    });
}

MQ_API void mq_cancel_trigger(mq_cancel *c) {
    if (c) c->trigger();
}

MQ_API void mq_cancel_reset(mq_cancel *c) {
    if (c) c->triggered.store(false);
}

MQ_API int mq_cancel_is_triggered(const mq_cancel *c) { return c && c->is_triggered() ? 1 : 0; }

MQ_API void mq_cancel_free(mq_cancel *c) {
    if (c) c->release();  // a call waiting with it holds a reference of its own
}

// ---- broker ----------------------------------------------------------------------------------

MQ_API void mq_broker_options_init(mq_broker_options *o, size_t size) {
    if (!o || size < sizeof(size_t)) return;
    mq_broker_options d{};
    d.size = std::min(size, sizeof d);
    d.clock = nullptr;
    d.clock_user = nullptr;
    d.max_message_bytes = 1u << 20;
    d.spin_ns = 0;
    d.kafka_bootstrap = nullptr;
    d.kafka_config = nullptr;
    std::memcpy(o, &d, d.size);
    o->size = size;
}

MQ_API mq_status mq_broker_new(const mq_broker_options *opts, mq_broker **out) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    if (opts) {
        if (!size_ok(opts)) {
            return mq::bad_size(opts->size, "mq_broker_options_init");
        }
        if (MQ_HAS_FIELD(opts, clock)) o.clock = opts->clock;
        if (MQ_HAS_FIELD(opts, clock_user)) o.clock_user = opts->clock_user;
        if (MQ_HAS_FIELD(opts, max_message_bytes)) o.max_message_bytes = opts->max_message_bytes;
        if (MQ_HAS_FIELD(opts, spin_ns)) o.spin_ns = opts->spin_ns;
        if (MQ_HAS_FIELD(opts, kafka_bootstrap)) o.kafka_bootstrap = opts->kafka_bootstrap;
        if (MQ_HAS_FIELD(opts, kafka_config)) o.kafka_config = opts->kafka_config;
    }
    if (mq_status st = mq::check_duration(o.spin_ns, "spin_ns", {0, mq::kMaxSpinNs, true}); st) {
        return st;
    }
    if (o.max_message_bytes == 0 || o.max_message_bytes > (size_t{1} << 30)) {
        return fail(MQ_ERR_INVALID, "max_message_bytes is %zu; it must be 1 to 2^30",
                    o.max_message_bytes);
    }
    if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
    return guarded([&] {
        std::unique_ptr<mq::Backend> backend;
        if (o.kafka_bootstrap) {
            if (mq_status st = mq::make_kafka_backend(o, &backend); st != MQ_OK) return st;
        }
        auto *b = new mq_broker(o);
        b->backend = std::move(backend);
        *out = b;
        return MQ_OK;
    });
}

MQ_API mq_status mq_broker_close(mq_broker *b) {
    if (!b) return fail(MQ_ERR_INVALID, "broker handle is NULL");
    return guarded([&] {
        b->close();
        return MQ_OK;
    });
}

MQ_API void mq_broker_free(mq_broker *b) {
    if (b) b->free_handle();
}

// ---- topics ----------------------------------------------------------------------------------

MQ_API void mq_topic_config_init(mq_topic_config *c, size_t size) {
    if (!c || size < sizeof(size_t)) return;
    mq_topic_config d{};
    d.size = std::min(size, sizeof d);
    d.partitions = 1;
    d.capacity = 1024;
    d.max_bytes = 0;
    d.ack_timeout_ms = 30000;
    d.retention = MQ_RETAIN_UNTIL_ACKED;
    d.max_age_ms = 0;
    std::memcpy(c, &d, d.size);
    c->size = size;
}

MQ_API mq_status mq_topic_create(mq_broker *b, const char *name, const mq_topic_config *cfg) {
    return on_broker(b, [&] {
        if (mq_status st = mq::check_name(name, "topic"); st != MQ_OK) return st;
        mq_topic_config c;
        mq_topic_config_init(&c, sizeof c);
        if (cfg) {
            if (!size_ok(cfg)) {
                return mq::bad_size(cfg->size, "mq_topic_config_init");
            }
            if (MQ_HAS_FIELD(cfg, partitions)) c.partitions = cfg->partitions;
            if (MQ_HAS_FIELD(cfg, capacity)) c.capacity = cfg->capacity;
            if (MQ_HAS_FIELD(cfg, max_bytes)) c.max_bytes = cfg->max_bytes;
            if (MQ_HAS_FIELD(cfg, ack_timeout_ms)) c.ack_timeout_ms = cfg->ack_timeout_ms;
            if (MQ_HAS_FIELD(cfg, retention)) c.retention = cfg->retention;
            if (MQ_HAS_FIELD(cfg, max_age_ms)) c.max_age_ms = cfg->max_age_ms;
        }
        if (c.retention != MQ_RETAIN_UNTIL_ACKED && c.retention != MQ_RETAIN_BOUNDED) {
            return fail(MQ_ERR_INVALID,
                        "retention is %d; use MQ_RETAIN_UNTIL_ACKED or MQ_RETAIN_BOUNDED",
                        c.retention);
        }
        if (mq_status st = mq::check_duration(c.max_age_ms, "max_age_ms"); st) return st;
        if (c.partitions < 1 || c.partitions > 65536) {
            return fail(MQ_ERR_INVALID, "partitions is %d; it must be 1 to 65536", c.partitions);
        }
        if (c.capacity < 1 || c.capacity > (int64_t{1} << 40)) {
            return fail(MQ_ERR_INVALID, "capacity is %lld; it must be 1 to 2^40 messages",
                        static_cast<long long>(c.capacity));
        }
        if (c.max_bytes < 0) {
            return fail(MQ_ERR_INVALID, "max_bytes is %lld; use 0 for no byte budget",
                        static_cast<long long>(c.max_bytes));
        }
        if (mq_status st = mq::check_duration(c.ack_timeout_ms, "ack_timeout_ms", {1}); st)
            return st;
        if (b->backend) return b->backend->create_topic(name, c);
        return b->create_topic(name, c);
    });
}

MQ_API mq_status mq_topic_delete(mq_broker *b, const char *name) {
    return on_broker(b, [&] {
        if (mq_status st = mq::check_name(name, "topic"); st != MQ_OK) return st;
        if (b->backend) return b->backend->delete_topic(name);
        return b->delete_topic(name);
    });
}

MQ_API mq_status mq_topic_list(mq_broker *b, char *buf, size_t cap, size_t *needed) {
    return on_broker_any(b, [&] {
        if (!buf && cap) return fail(MQ_ERR_INVALID, "buf is NULL but cap is %zu", cap);
        std::string s;
        if (b->backend) {
            if (mq_status st = b->backend->topic_list(s); st != MQ_OK) return st;
        }
        for (const std::string &n : b->topic_names()) (s += n) += '\n';
        write_out(s, buf, cap, needed);
        return MQ_OK;
    });
}

MQ_API mq_status mq_group_list(mq_broker *b, const char *topic, char *buf, size_t cap,
                               size_t *needed) {
    return on_broker_any(b, [&] {
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
            if (!buf && cap) return fail(MQ_ERR_INVALID, "buf is NULL but cap is %zu", cap);
            std::string s;
            if (mq_status st = b->backend->group_list(topic, s); st != MQ_OK) return st;
            write_out(s, buf, cap, needed);
            return MQ_OK;
        }
        mq::Topic *t;
        if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
        if (!buf && cap) return fail(MQ_ERR_INVALID, "buf is NULL but cap is %zu", cap);
        std::string s;
        for (const std::string &n : t->group_names()) (s += n) += '\n';
        write_out(s, buf, cap, needed);
        return MQ_OK;
    });
}

MQ_API mq_status mq_topic_get_info(mq_broker *b, const char *topic, mq_topic_info *out,
                                   size_t out_size) {
    return on_broker_any(b, [&] {
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
            if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
            mq_topic_info info{};
            if (mq_status st = b->backend->topic_info(topic, info); st != MQ_OK) return st;
            std::memcpy(out, &info, std::min(out_size, sizeof info));
            return MQ_OK;
        }
        mq::Topic *t;
        if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        mq_topic_info info{};
        info.partitions = t->partition_count();
        info.capacity = t->settings().capacity;
        info.max_bytes = t->settings().max_bytes;
        info.ack_timeout_ms = t->settings().ack_timeout_ns / 1000000;
        info.retention = t->settings().bounded ? MQ_RETAIN_BOUNDED : MQ_RETAIN_UNTIL_ACKED;
        info.max_age_ms = t->settings().max_age_ns / 1000000;
        std::memcpy(out, &info, std::min(out_size, sizeof info));
        return MQ_OK;
    });
}

// ---- groups ----------------------------------------------------------------------------------

MQ_API void mq_group_options_init(mq_group_options *o, size_t size) {
    if (!o || size < sizeof(size_t)) return;
    mq_group_options d{};
    d.size = std::min(size, sizeof d);
    d.start = MQ_START_LATEST;
    d.max_deliveries = 0;
    d.dead_letter_topic = nullptr;
    d.share = MQ_SHARE_NONE;
    d.max_acquired = 0;
    std::memcpy(o, &d, d.size);
    o->size = size;
}

MQ_API mq_status mq_group_subscribe(mq_broker *b, const char *topic, const char *group,
                                    const mq_group_options *opts) {
    return on_broker(b, [&] {
        mq::Topic *t = nullptr;
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
        } else if (mq_status st = b->topic(topic, &t); st != MQ_OK) {
            return st;
        }
        if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        if (opts) {
            if (!size_ok(opts)) {
                return mq::bad_size(opts->size, "mq_group_options_init");
            }
            if (MQ_HAS_FIELD(opts, start)) o.start = opts->start;
            if (MQ_HAS_FIELD(opts, max_deliveries)) o.max_deliveries = opts->max_deliveries;
            if (MQ_HAS_FIELD(opts, dead_letter_topic))
                o.dead_letter_topic = opts->dead_letter_topic;
            if (MQ_HAS_FIELD(opts, share)) o.share = opts->share;
            if (MQ_HAS_FIELD(opts, max_acquired)) o.max_acquired = opts->max_acquired;
        }
        if (o.share < MQ_SHARE_NONE || o.share > MQ_SHARE_KEY) {
            return fail(MQ_ERR_INVALID,
                        "share is %d; use MQ_SHARE_NONE, MQ_SHARE_ALL or MQ_SHARE_KEY", o.share);
        }
        if (o.max_acquired && o.share == MQ_SHARE_NONE) {
            return fail(MQ_ERR_INVALID,
                        "max_acquired is %u but the group is not a share group (set share to "
                        "MQ_SHARE_ALL or MQ_SHARE_KEY, or leave max_acquired 0)",
                        o.max_acquired);
        }
        if (o.max_acquired > 1000000) {
            return fail(MQ_ERR_INVALID, "max_acquired is %u; it must be 1 to 1000000 (0: 2000)",
                        o.max_acquired);
        }
        if (o.start != MQ_START_LATEST && o.start != MQ_START_EARLIEST) {
            return fail(MQ_ERR_INVALID, "start is %d; use MQ_START_LATEST or MQ_START_EARLIEST",
                        o.start);
        }
        if (!o.max_deliveries != !o.dead_letter_topic) {
            return fail(MQ_ERR_INVALID,
                        "max_deliveries and dead_letter_topic go together: set both or neither");
        }
        if (b->backend) {
            if (o.share != MQ_SHARE_NONE) {
                return fail(MQ_ERR_UNSUPPORTED,
                            "share groups need a librdkafka with the share-consumer API "
                            "(KIP-932), which this build does not have; docs/KAFKA.md");
            }
            return b->backend->subscribe(topic, group, o);
        }
        mq::GroupConfig proto;
        proto.share = o.share;
        proto.max_acquired = o.share != MQ_SHARE_NONE && !o.max_acquired ? 2000 : o.max_acquired;
        if (o.max_deliveries) {
            if (mq_status st = b->topic(o.dead_letter_topic, &proto.dead_letter); st != MQ_OK) {
                return st;
            }
            if (proto.dead_letter == t) {
                return fail(MQ_ERR_INVALID, "topic %s cannot be its own dead-letter topic", topic);
            }
            proto.max_deliveries = o.max_deliveries;
            proto.origin_topic = b->intern(t->name());
            proto.origin_group = b->intern(group);
        }
        const mq::Group *g;
        return t->subscribe(group, static_cast<mq_start>(o.start), b->new_id(), proto, &g);
    });
}

MQ_API mq_status mq_group_unsubscribe(mq_broker *b, const char *topic, const char *group) {
    return on_broker(b, [&] {
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
            if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
            return b->backend->unsubscribe(topic, group);
        }
        mq::Topic *t;
        if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
        if (mq_status st = mq::check_name(group, "group"); st != MQ_OK) return st;
        return t->unsubscribe(group);
    });
}

// ---- publishing ------------------------------------------------------------------------------

// The body of mq_topic_publish and of its asynchronous form (async, routed: c_api_calls.h). One
// instance each, so that each is inlined into its caller, and the blocking one has no trace of
// the asynchronous branch (measured: 105 instructions per publish-poll-ack cycle otherwise).
extern "C++" {
template <bool kAsync>
static mq_status publish_one(mq_broker *b, const char *topic, const void *key, size_t key_len,
                             const void *payload, size_t payload_len, const mq_header *headers,
                             size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                             int32_t *partition_out, int64_t *offset_out, const mq::Wait *async,
                             int32_t *routed) {
    return on_broker(b, [&](mq::GateScope &scope) {
        mq::Topic *t = nullptr;
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
        } else if (mq_status st = b->topic(topic, &t); st != MQ_OK) {
            return st;
        }
        const mq_record r{key, key_len, payload, payload_len, headers, header_count, 0};
        if (mq_status st = mq::capi::check_record(b, t, r); st != MQ_OK) return st;
        if (mq_status st = check_wait(wait_ms); st != MQ_OK) return st;
        if (b->backend) {
            mq_publish_result res{};
            size_t done = 0;
            const mq_status st = b->backend->publish(topic, &r, 1, wait_ms, cancel, &res, &done);
            if (st == MQ_OK) {
                if (partition_out) *partition_out = res.partition;
                if (offset_out) *offset_out = res.offset;
            }
            return st;
        }
        if constexpr (kAsync) {  // routed once, by its first run
            if (*routed < 0) *routed = t->route(r);
            int64_t at = -1;
            const mq_status st = t->partition(*routed).publish(r, *async, cancel, &at);
            if (st == MQ_OK) {
                if (partition_out) *partition_out = *routed;
                if (offset_out) *offset_out = at;
            }
            return st;
        }
        pin_for_wait(scope, t);
        return t->publish(r, mq::Wait::from_ms(wait_ms, &scope), cancel, partition_out, offset_out);
    });
}
}  // extern "C++"

MQ_API mq_status mq_topic_publish(mq_broker *b, const char *topic, const void *key, size_t key_len,
                                  const void *payload, size_t payload_len, const mq_header *headers,
                                  size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                                  int32_t *partition_out, int64_t *offset_out) {
    return publish_one<false>(b, topic, key, key_len, payload, payload_len, headers, header_count,
                              wait_ms, cancel, partition_out, offset_out, nullptr, nullptr);
}

extern "C++" mq_status mq::capi::topic_publish(mq_broker *b, const char *topic, const void *key,
                                               size_t key_len, const void *payload,
                                               size_t payload_len, const mq_header *headers,
                                               size_t header_count, int64_t wait_ms,
                                               mq_cancel *cancel, int32_t *partition_out,
                                               int64_t *offset_out, const Wait *async,
                                               int32_t *routed) {
    return publish_one<true>(b, topic, key, key_len, payload, payload_len, headers, header_count,
                             wait_ms, cancel, partition_out, offset_out, async, routed);
}

MQ_API mq_status mq_topic_publish_batch(mq_broker *b, const char *topic, const mq_record *records,
                                        size_t record_size, size_t count, int64_t wait_ms,
                                        mq_cancel *cancel, mq_publish_result *results,
                                        size_t result_size, size_t *published) {
    return mq::capi::topic_publish_batch(b, topic, records, record_size, count, wait_ms, cancel,
                                         results, result_size, published);
}

extern "C++" mq_status mq::capi::topic_publish_batch(
    mq_broker *b, const char *topic, const mq_record *records, size_t record_size, size_t count,
    int64_t wait_ms, mq_cancel *cancel, mq_publish_result *results, size_t result_size,
    size_t *published, const Wait *async, std::vector<mq_publish_result> *routed) {
    if (published) *published = 0;
    return on_broker(b, [&](mq::GateScope &scope) {
        mq::Topic *t = nullptr;
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
        } else if (mq_status st = b->topic(topic, &t); st != MQ_OK) {
            return st;
        }
        return mq::capi::publish_records(b, t, topic, records, record_size, count, wait_ms, cancel,
                                         results, result_size, published, &scope, async, routed);
    });
}

extern "C++" mq_status mq::capi::publish_records(mq_broker *b, Topic *t, const char *topic,
                                                 const mq_record *records, size_t record_size,
                                                 size_t count, int64_t wait_ms, mq_cancel *cancel,
                                                 mq_publish_result *results, size_t result_size,
                                                 size_t *published, GateScope *scope,
                                                 const Wait *async,
                                                 std::vector<mq_publish_result> *routed) {
    if (!records && count) return fail(MQ_ERR_INVALID, "records is NULL but count is %zu", count);
    if (mq_status st =
            mq::check_elem_size(record_size, sizeof(mq_record), "record_size", mq::kRecordSizeV1);
        st)
        return st;
    if (count > UINT32_MAX)
        return fail(MQ_ERR_INVALID, "count %zu is too large for one batch", count);
    const mq_record *recs = mq::gather(records, record_size, count);
    size_t cap = b->max_message_bytes;
    if (t && t->settings().max_bytes)
        cap = std::min(cap, static_cast<size_t>(t->settings().max_bytes));
    for (size_t i = 0; i < count; i++) {
        if (plainly_valid(recs[i], cap)) [[likely]]
            continue;
        if (mq_status st = mq::capi::check_record(b, t, recs[i]); st != MQ_OK) {
            char detail[1024];  // named after the fact: the common path formats nothing
            std::snprintf(detail, sizeof detail, "%s", mq_last_error());
            return fail(st, "record %zu: %s", i, detail);
        }
    }
    if (mq_status st = check_wait(wait_ms); st != MQ_OK) return st;
    if (mq_status st = mq::check_elem_size(result_size, sizeof(mq_publish_result), "result_size");
        st)
        return st;
    size_t done = 0;
    const mq::OutArray<mq_publish_result> out(results, result_size, count);
    struct Report {  // also when an allocation throws part-way: some records are in
        const mq::OutArray<mq_publish_result> &out;
        size_t count, &done, *published;
        ~Report() {
            out.flush(count);
            if (published) *published = done;
        }
    } report{out, count, done, published};
    if (b->backend) {
        return b->backend->publish(topic, recs, count, wait_ms, cancel, out.data(), &done);
    }
    if (async) {  // routed once, by its first run; each run appends what is left
        if (routed->empty()) {
            routed->resize(count);
            t->route_all(recs, count, routed->data());
        }
        const mq_status st = t->publish_rest(recs, count, routed->data(), *async, cancel);
        for (size_t i = 0; i < count; i++) {
            out.data()[i] = (*routed)[i];
            done += (*routed)[i].offset >= 0;
        }
        return st;
    }
    if (scope) pin_for_wait(*scope, t);
    return t->publish_batch(recs, count, mq::Wait::from_ms(wait_ms, scope), cancel, out.data(),
                            &done);
}

// ---- pull consumption ------------------------------------------------------------------------

// The arguments of a poll, checked in mq.h's order after topic, group and partition.
static mq_status kafka_poll(mq_broker *b, const char *topic, const char *group, int32_t partition,
                            const int64_t *ack, mq_message *msgs, size_t msg_size, size_t max,
                            int64_t wait_ms, mq_cancel *cancel, size_t *count_out) {
    return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
        if (mq_status st = mq::check_poll_args(msgs, msg_size, max, wait_ms, count_out); st)
            return st;
        return mq::into_messages(msgs, msg_size, max, count_out, [&](mq_message *out, size_t n) {
            return k.poll(topic, group, partition, ack, out, n, wait_ms, cancel, count_out);
        });
    });
}

// mq_group_poll and mq_group_ack_poll (ack NULL: no ack), and their asynchronous forms (async:
// c_api_calls.h); one instance each, as publish_one.
extern "C++" {
template <bool kAsync>
static mq_status poll_views(mq_broker *b, const char *topic, const char *group, int32_t partition,
                            const int64_t *ack, mq_message *msgs, size_t msg_size, size_t max,
                            int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                            const mq::Wait *async) {
    if (count_out) *count_out = 0;
    if (b && b->backend) {
        return kafka_poll(b, topic, group, partition, ack, msgs, msg_size, max, wait_ms, cancel,
                          count_out);
    }
    return on_blocking_cursor(
        b, topic, group, partition,
        [&](mq::Partition &p, const mq::Group *g, mq::GateScope &scope) {
            if (mq_status st = mq::check_poll_args(msgs, msg_size, max, wait_ms, count_out); st)
                return st;
            return mq::into_messages(
                msgs, msg_size, max, count_out, [&](mq_message *out, size_t n) {
                    if constexpr (kAsync) {
                        return mq::poll_group(p, g, {}, out, n, *async, cancel, count_out, ack);
                    } else {
                        return mq::poll_group(p, g, {}, out, n, mq::Wait::from_ms(wait_ms, &scope),
                                              cancel, count_out, ack);
                    }
                });
        });
}
}  // extern "C++"

MQ_API mq_status mq_group_poll(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, mq_message *msgs, size_t msg_size, size_t max,
                               int64_t wait_ms, mq_cancel *cancel, size_t *count_out) {
    return poll_views<false>(b, topic, group, partition, nullptr, msgs, msg_size, max, wait_ms,
                             cancel, count_out, nullptr);
}

MQ_API mq_status mq_group_ack_poll(mq_broker *b, const char *topic, const char *group,
                                   int32_t partition, int64_t offset, mq_message *msgs,
                                   size_t msg_size, size_t max, int64_t wait_ms, mq_cancel *cancel,
                                   size_t *count_out) {
    return poll_views<false>(b, topic, group, partition, &offset, msgs, msg_size, max, wait_ms,
                             cancel, count_out, nullptr);
}

extern "C++" mq_status mq::capi::group_poll(mq_broker *b, const char *topic, const char *group,
                                            int32_t partition, const int64_t *ack, mq_message *msgs,
                                            size_t msg_size, size_t max, int64_t wait_ms,
                                            mq_cancel *cancel, size_t *count_out,
                                            const mq::Wait *async) {
    return poll_views<true>(b, topic, group, partition, ack, msgs, msg_size, max, wait_ms, cancel,
                            count_out, async);
}

// The copying forms of mq_group_poll and mq_group_ack_poll (ack NULL: no ack), and their
// asynchronous forms; one instance each, as publish_one.
extern "C++" {
template <bool kAsync>
static mq_status poll_copies(mq_broker *b, const char *topic, const char *group, int32_t partition,
                             const int64_t *ack, void *buf, size_t cap, size_t max, int64_t wait_ms,
                             mq_cancel *cancel, size_t *count_out, size_t *needed_out,
                             const mq::Wait *async) {
    if (count_out) *count_out = 0;
    if (needed_out) *needed_out = 0;
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
            return mq::poll_copy(buf, cap, max, wait_ms, count_out, needed_out,
                                 [&](mq::CopyOut &copy, size_t n) {
                                     return k.poll(topic, group, partition, ack, nullptr, n,
                                                   wait_ms, cancel, count_out, &copy);
                                 });
        });
    }
    return on_blocking_cursor(
        b, topic, group, partition,
        [&](mq::Partition &p, const mq::Group *g, mq::GateScope &scope) {
            return mq::poll_copy(buf, cap, max, wait_ms, count_out, needed_out,
                                 [&](mq::CopyOut &copy, size_t n) {
                                     if constexpr (kAsync) {
                                         return mq::poll_group(p, g, {}, nullptr, n, *async, cancel,
                                                               count_out, ack, &copy);
                                     } else {
                                         return mq::poll_group(p, g, {}, nullptr, n,
                                                               mq::Wait::from_ms(wait_ms, &scope),
                                                               cancel, count_out, ack, &copy);
                                     }
                                 });
        });
}
}  // extern "C++"

extern "C++" mq_status mq::capi::group_poll_copy(mq_broker *b, const char *topic, const char *group,
                                                 int32_t partition, const int64_t *ack, void *buf,
                                                 size_t cap, size_t max, int64_t wait_ms,
                                                 mq_cancel *cancel, size_t *count_out,
                                                 size_t *needed_out, const mq::Wait *async) {
    return poll_copies<true>(b, topic, group, partition, ack, buf, cap, max, wait_ms, cancel,
                             count_out, needed_out, async);
}

MQ_API mq_status mq_group_poll_copy(mq_broker *b, const char *topic, const char *group,
                                    int32_t partition, void *buf, size_t cap, size_t max,
                                    int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                    size_t *needed_out) {
    return poll_copies<false>(b, topic, group, partition, nullptr, buf, cap, max, wait_ms, cancel,
                              count_out, needed_out, nullptr);
}

MQ_API mq_status mq_group_ack_poll_copy(mq_broker *b, const char *topic, const char *group,
                                        int32_t partition, int64_t offset, void *buf, size_t cap,
                                        size_t max, int64_t wait_ms, mq_cancel *cancel,
                                        size_t *count_out, size_t *needed_out) {
    return poll_copies<false>(b, topic, group, partition, &offset, buf, cap, max, wait_ms, cancel,
                              count_out, needed_out, nullptr);
}

MQ_API mq_status mq_message_copy(const mq_message *msg, void *buf, size_t cap, size_t *needed_out) {
    return guarded([&] {
        if (needed_out) *needed_out = 0;
        if (!msg) return fail(MQ_ERR_INVALID, "msg is NULL");
        if (mq_status st = mq::check_copy_buffer(buf, cap); st != MQ_OK) return st;
        mq::CopyOut copy(buf, cap);
        if (!copy.put(*msg)) {
            const size_t need = mq::CopyOut::alone(*msg);
            if (needed_out) *needed_out = need;
            return fail(MQ_ERR_TOO_LARGE,
                        "the buffer (%zu bytes) cannot hold the message, which needs %zu bytes "
                        "(*needed_out)",
                        cap, need);
        }
        copy.finish();
        if (needed_out) *needed_out = copy.used();
        return MQ_OK;
    });
}

MQ_API mq_status mq_group_ack(mq_broker *b, const char *topic, const char *group, int32_t partition,
                              int64_t offset) {
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
            return k.ack(topic, group, partition, offset);
        });
    }
    return on_cursor(b, topic, group, partition,
                     [&](mq::Partition &p, const mq::Group *g) { return p.ack(g, {}, offset); });
}

MQ_API mq_status mq_group_nack(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, int64_t delay_ms) {
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
            if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
            return k.nack(topic, group, partition, delay_ms, -1);
        });
    }
    return on_cursor(b, topic, group, partition, [&](mq::Partition &p, const mq::Group *g) {
        if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
        return p.nack(g, {}, delay_ms * 1000000);
    });
}

MQ_API mq_status mq_share_settle(mq_broker *b, const char *topic, const char *group,
                                 int32_t partition, int64_t offset, uint32_t delivery_count,
                                 int32_t action, int64_t delay_ms) {
    auto check = [&]() -> mq_status {
        if (action < MQ_SETTLE_ACCEPT || action > MQ_SETTLE_RENEW) {
            return fail(MQ_ERR_INVALID,
                        "action is %d; use MQ_SETTLE_ACCEPT, MQ_SETTLE_RELEASE, MQ_SETTLE_REJECT "
                        "or MQ_SETTLE_RENEW",
                        action);
        }
        if (mq_status st = mq::check_duration(delay_ms, "delay_ms"); st != MQ_OK) return st;
        if (delay_ms && action != MQ_SETTLE_RELEASE) {
            return fail(MQ_ERR_INVALID, "delay_ms is %lld; only MQ_SETTLE_RELEASE takes a delay",
                        static_cast<long long>(delay_ms));
        }
        return MQ_OK;
    };
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &) {
            if (mq_status st = check(); st != MQ_OK) return st;
            return fail(MQ_ERR_UNSUPPORTED,
                        "share groups need a librdkafka with the share-consumer API (KIP-932), "
                        "which this build does not have; docs/KAFKA.md");
        });
    }
    return on_cursor(b, topic, group, partition, [&](mq::Partition &p, const mq::Group *g) {
        if (mq_status st = check(); st != MQ_OK) return st;
        return mq::settle_share(p, g, offset, delivery_count, action, delay_ms * 1000000);
    });
}

MQ_API mq_status mq_group_extend_lease(mq_broker *b, const char *topic, const char *group,
                                       int32_t partition) {
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
            return k.extend_lease(topic, group, partition);
        });
    }
    return on_cursor(b, topic, group, partition,
                     [&](mq::Partition &p, const mq::Group *g) { return p.extend_lease(g, {}); });
}

MQ_API mq_status mq_group_seek(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, int64_t offset) {
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, false, [&](mq::Backend &k) {
            return k.seek(topic, group, partition, offset);
        });
    }
    return on_cursor(b, topic, group, partition,
                     [&](mq::Partition &p, const mq::Group *g) { return p.seek(g, offset); });
}

MQ_API mq_status mq_handler_extend_lease(void) {
    return guarded([] { return mq_subscription::extend_current_lease(); });
}

MQ_API mq_status mq_handler_set_nack_delay(int64_t delay_ms) {
    return guarded([&] { return mq_subscription::delay_current_nack(delay_ms); });
}

// ---- push consumption ------------------------------------------------------------------------

MQ_API void mq_subscription_options_init(mq_subscription_options *o, size_t size) {
    if (!o || size < sizeof(size_t)) return;
    mq_subscription_options d{};
    d.size = std::min(size, sizeof d);
    d.prefetch = 10;
    d.partitions = nullptr;
    d.partition_count = 0;
    d.session_timeout_ms = 10000;  // Kafka's default, as mq_member_options'
    std::memcpy(o, &d, d.size);
    o->size = size;
}

MQ_API mq_status mq_subscription_open(mq_broker *b, const char *topic, const char *group,
                                      const mq_subscription_options *opts, mq_handler handler,
                                      void *user, mq_user_free user_free, mq_subscription **out) {
    mq::BrokerRef ref;  // taken once the arguments pass; the rest runs outside the call gate
    mq::Topic *t = nullptr;
    mq::Ref<mq::Topic> topic_ref;  // likewise: what keeps t's memory outside the gate
    int32_t prefetch = 0;
    int64_t session_timeout_ms = 0;
    std::vector<int32_t> parts;  // empty: a member of the group
    bool on_backend = false;
    int32_t backend_partitions = 0;
    const mq_status st = on_broker(b, [&]() -> mq_status {
        on_backend = b->backend != nullptr;
        if (on_backend) {
            if (mq_status s = mq::check_name(topic, "topic"); s != MQ_OK) return s;
            mq_topic_info ti{};
            if (mq_status s = b->backend->topic_info(topic, ti); s != MQ_OK) return s;
            backend_partitions = ti.partitions;
        } else if (mq_status s = b->topic(topic, &t); s != MQ_OK) {
            return s;
        }
        if (mq_status s = mq::check_name(group, "group"); s != MQ_OK) return s;
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        if (opts) {
            if (!size_ok(opts)) {
                return mq::bad_size(opts->size, "mq_subscription_options_init");
            }
            if (MQ_HAS_FIELD(opts, prefetch)) o.prefetch = opts->prefetch;
            if (MQ_HAS_FIELD(opts, partitions)) o.partitions = opts->partitions;
            if (MQ_HAS_FIELD(opts, partition_count)) o.partition_count = opts->partition_count;
            if (MQ_HAS_FIELD(opts, session_timeout_ms))
                o.session_timeout_ms = opts->session_timeout_ms;
        }
        // Each loop holds a buffer of prefetch messages: a huge one could only fail to allocate.
        if (o.prefetch < 1 || o.prefetch > 65536)
            return fail(MQ_ERR_INVALID, "prefetch is %d; it must be 1 to 65536", o.prefetch);
        if (mq_status s = mq::check_duration(o.session_timeout_ms, "session_timeout_ms", {1});
            s != MQ_OK)
            return s;
        if (!o.partitions && o.partition_count) {
            return fail(MQ_ERR_INVALID, "partitions is NULL but partition_count is %zu",
                        o.partition_count);
        }
        if (o.partitions) {
            if (o.partition_count == 0)
                return fail(MQ_ERR_INVALID, "partitions is empty; pass NULL to be a group member");
            parts.assign(o.partitions, o.partitions + o.partition_count);
            for (int32_t p : parts) {
                if (on_backend) {
                    if (p < 0 || p >= backend_partitions) {
                        return fail(MQ_ERR_PARTITION,
                                    "partition %d is out of range: topic %s has %d", p, topic,
                                    backend_partitions);
                    }
                } else if (mq_status s = check_partition(*t, p); s != MQ_OK) {
                    return s;
                }
            }
            std::vector<int32_t> sorted = parts;
            std::sort(sorted.begin(), sorted.end());
            if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
                return fail(MQ_ERR_INVALID, "partitions lists a partition twice");
            }
        }
        if (!handler) return fail(MQ_ERR_INVALID, "handler is NULL");
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        prefetch = o.prefetch;
        session_timeout_ms = o.session_timeout_ms;
        ref = mq::BrokerRef(b);
        if (on_backend) return MQ_OK;
        t->add_ref();  // inside the gate: the topic cannot have gone yet
        topic_ref = mq::Ref<mq::Topic>::adopt(t);
        return MQ_OK;
    });
    if (st != MQ_OK) {
        if (user_free) user_free(user);  // exactly once, whichever way this ends
        return st;
    }
    if (on_backend) {
        std::unique_ptr<mq::BackendSubscription> loops;
        const mq_status opened = guarded([&] {
            return ref->backend->open_push(topic, group, prefetch, session_timeout_ms,
                                           std::move(parts), handler, user, &loops);
        });
        if (opened != MQ_OK) {
            if (user_free) user_free(user);
            return opened;
        }
        const mq_status wrapped = guarded([&] {
            *out = mq_subscription::wrap(std::move(ref), std::move(loops), user, user_free);
            return MQ_OK;
        });
        // Out of memory in wrap: the loops went with its argument (closed, so no handler runs
        // any more), and user_free is still ours to call.
        if (wrapped != MQ_OK && user_free) user_free(user);
        return wrapped;
    }
    // From here on mq_subscription::open calls user_free on failure (also when it throws).
    return guarded([&] {
        return mq_subscription::open(std::move(ref), std::move(topic_ref), group, prefetch,
                                     std::move(parts), handler, user, user_free, out);
    });
}

MQ_API mq_status mq_subscription_close(mq_subscription *sub) {
    if (!sub) return fail(MQ_ERR_INVALID, "subscription handle is NULL");
    if (sub->is_current_thread()) {
        return fail(MQ_ERR_DEADLOCK,
                    "mq_subscription_close was called from this subscription's own handler; "
                    "return from the handler first, or close it from another thread");
    }
    mq_subscription::close(sub);
    return MQ_OK;
}

// ---- partitioning helpers --------------------------------------------------------------------

MQ_API int32_t mq_key_murmur2(const void *key, size_t key_len) {
    if (!key) return mq::murmur2("", 0);
    return mq::murmur2(key, key_len);
}

MQ_API mq_status mq_key_partition(const void *key, size_t key_len, int32_t partitions,
                                  int32_t *out) {
    if (!key && key_len) return fail(MQ_ERR_INVALID, "key is NULL but key_len is %zu", key_len);
    if (partitions < 1)
        return fail(MQ_ERR_INVALID, "partitions is %d; it must be at least 1", partitions);
    if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
    *out = mq::partition_for_key(key ? key : "", key_len, partitions);
    return MQ_OK;
}

MQ_API mq_status mq_assignment_round_robin(int32_t partitions, int32_t members, int32_t member,
                                           int32_t *out, size_t cap, size_t *count_out) {
    if (partitions < 1)
        return fail(MQ_ERR_INVALID, "partitions is %d; it must be at least 1", partitions);
    if (members < 1) return fail(MQ_ERR_INVALID, "members is %d; it must be at least 1", members);
    if (member < 0 || member >= members) {
        return fail(MQ_ERR_INVALID, "member is %d; it must be 0..%d", member, members - 1);
    }
    if (!out && cap) return fail(MQ_ERR_INVALID, "out is NULL but cap is %zu", cap);
    if (!count_out) return fail(MQ_ERR_INVALID, "count_out is NULL");
    size_t n = 0;
    for (int32_t p = member; p < partitions; p += members) {
        if (n < cap) out[n] = p;
        n++;
    }
    *count_out = n;
    return MQ_OK;
}

// ---- introspection ---------------------------------------------------------------------------

MQ_API mq_status mq_partition_get_info(mq_broker *b, const char *topic, int32_t partition,
                                       mq_partition_info *out, size_t out_size) {
    return on_broker_any(b, [&] {
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
            if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
            mq_partition_info info{};
            if (mq_status st = b->backend->partition_info(topic, partition, info); st) return st;
            std::memcpy(out, &info, std::min(out_size, sizeof info));
            return MQ_OK;
        }
        mq::Topic *t;
        if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
        if (mq_status st = check_partition(*t, partition); st != MQ_OK) return st;
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        mq_partition_info info{};
        t->partition(partition).info(info);
        std::memcpy(out, &info, std::min(out_size, sizeof info));
        return MQ_OK;
    });
}

MQ_API mq_status mq_group_get_info(mq_broker *b, const char *topic, const char *group,
                                   int32_t partition, mq_group_info *out, size_t out_size) {
    if (b && b->backend) {
        return on_kafka_cursor(b, topic, group, true, [&](mq::Backend &k) {
            if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
            mq_group_info info{};
            if (mq_status st = k.group_info(topic, group, partition, info); st) return st;
            std::memcpy(out, &info, std::min(out_size, sizeof info));
            return MQ_OK;
        });
    }
    return on_cursor_any(b, topic, group, partition, [&](mq::Partition &p, const mq::Group *g) {
        if (!out) return fail(MQ_ERR_INVALID, "out is NULL");
        mq_group_info info{};
        if (mq_status st = p.group_info(g, info); st != MQ_OK) return st;
        std::memcpy(out, &info, std::min(out_size, sizeof info));
        return MQ_OK;
    });
}

MQ_API mq_status mq_partition_describe(mq_broker *b, const char *topic, int32_t partition,
                                       char *buf, size_t cap, size_t *needed) {
    return on_broker_any(b, [&] {
        if (b->backend) {
            if (mq_status st = mq::check_name(topic, "topic"); st != MQ_OK) return st;
            if (!buf && cap) return fail(MQ_ERR_INVALID, "buf is NULL but cap is %zu", cap);
            std::string s;
            if (mq_status st = b->backend->describe(topic, partition, s); st) return st;
            write_out(s, buf, cap, needed);
            return MQ_OK;
        }
        mq::Topic *t;
        if (mq_status st = b->topic(topic, &t); st != MQ_OK) return st;
        if (mq_status st = check_partition(*t, partition); st != MQ_OK) return st;
        if (!buf && cap) return fail(MQ_ERR_INVALID, "buf is NULL but cap is %zu", cap);
        std::string s;
        t->partition(partition).describe(s);
        write_out(s, buf, cap, needed);
        return MQ_OK;
    });
}

}  // extern "C"

// ---- the design card's names (mq.h): the long forms under the names mq was specified with ---

MQ_API mq_status mq_publish(mq_broker *b, const char *topic, const void *key, size_t key_len,
                            const void *payload, size_t payload_len, const mq_header *headers,
                            size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                            int32_t *partition_out, int64_t *offset_out) {
    return mq_topic_publish(b, topic, key, key_len, payload, payload_len, headers, header_count,
                            wait_ms, cancel, partition_out, offset_out);
}

MQ_API mq_status mq_poll(mq_broker *b, const char *topic, const char *group, int32_t partition,
                         mq_message *msgs, size_t msg_size, size_t max, int64_t wait_ms,
                         mq_cancel *cancel, size_t *count_out) {
    return mq_group_poll(b, topic, group, partition, msgs, msg_size, max, wait_ms, cancel,
                         count_out);
}

MQ_API mq_status mq_ack(mq_broker *b, const char *topic, const char *group, int32_t partition,
                        int64_t offset) {
    return mq_group_ack(b, topic, group, partition, offset);
}

MQ_API mq_status mq_subscribe(mq_broker *b, const char *topic, const char *group,
                              const mq_subscription_options *opts, mq_handler handler, void *user,
                              mq_user_free user_free, mq_subscription **out) {
    return mq_subscription_open(b, topic, group, opts, handler, user, user_free, out);
}
