// libFuzzer target: decodes its input into a sequence of C API calls on one broker with a manual
// clock, runs each against the library and against the model (model.h), and aborts on the first
// difference or broken invariant. Single-threaded, every wait 0: the outcome of each call is
// fully determined by the contract.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model.h"
#include "mq.h"

namespace {

using fuzzmodel::Expect;
using fuzzmodel::Msg;

[[noreturn]] void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "MODEL MISMATCH: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n  last error: %s\n", mq_last_error());
    va_end(ap);
    std::abort();
}

#define CHECK(cond, ...)               \
    do {                               \
        if (!(cond)) die(__VA_ARGS__); \
    } while (0)

// Reads the input a byte at a time; zeros once it runs out.
struct Input {
    const uint8_t *p;
    size_t n;
    uint8_t byte() { return n ? (n--, *p++) : 0; }
    bool done() const { return n == 0; }
    uint32_t pick(uint32_t k) { return byte() % k; }
};

// Names include an illegal one and an unknown legal one, so lookup faults come up.
const char *const kTopics[] = {"orders", "pay.v1", "t-3", "nope", "bad name"};
const char *const kGroups[] = {"billing", "email", "g_3", "bad/group"};
const char *const kKeys[] = {"user-a", "user-b", "", "21", "foobar", "k"};

struct Clock {
    int64_t ns = 1'000'000'000;
    static int64_t read(void *self) { return static_cast<Clock *>(self)->ns; }
};

// A view the library handed out, kept until its group acks or seeks past it: its bytes must
// stay put. Once its message is dropped (bounded retention, max age) it is kept until the
// group's next poll, ack or seek on the partition, and compared with the copy taken at the poll.
struct HeldView {
    std::string topic, group;
    int32_t partition;
    mq_message m;
    Msg want;
    bool dropped = false;
};

struct Run {
    mq_broker *b = nullptr;
    Clock clock;
    fuzzmodel::Broker model{32};
    std::vector<HeldView> views;
    uint64_t seq = 0;
    size_t step = 0;

    void expect(const char *call, mq_status got, const Expect &e) {
        if (e.allows(got)) return;
        std::string want;
        for (mq_status s : e.ok_statuses) want += std::string(mq_status_name(s)) + " ";
        die("step %zu %s returned %s, model expects %s", step, call, mq_status_name(got),
            want.c_str());
    }

    void check_message(const char *call, const mq_message &m, int32_t partition, int64_t offset,
                       const Msg &want) {
        CHECK(m.partition == partition && m.offset == offset,
              "step %zu %s: view says %d/%" PRId64 ", model %d/%" PRId64, step, call, m.partition,
              m.offset, partition, offset);
        CHECK(m.payload != nullptr, "step %zu %s: NULL payload", step, call);
        CHECK(m.payload_len == want.payload.size() &&
                  std::memcmp(m.payload, want.payload.data(), m.payload_len) == 0,
              "step %zu %s: payload of %d/%" PRId64 " differs", step, call, partition, offset);
        CHECK((m.key != nullptr) == want.has_key,
              "step %zu %s: key presence of %" PRId64 " differs", step, call, offset);
        if (want.has_key) {
            CHECK(
                m.key_len == want.key.size() && std::memcmp(m.key, want.key.data(), m.key_len) == 0,
                "step %zu %s: key of %" PRId64 " differs", step, call, offset);
        }
    }

    // The invariants and the full observable state, after every call.
    void check_state() {
        std::string names;
        for (const auto &t : model.topics) names += t.name + "\n";
        char buf[256];
        size_t needed = 0;
        CHECK(mq_topic_list(b, buf, sizeof buf, &needed) == MQ_OK && names == buf &&
                  needed == names.size() + 1,
              "step %zu topic list '%s', model '%s'", step, buf, names.c_str());
        for (auto &t : model.topics) {
            std::string gl;
            for (const auto &g : t.groups) gl += g + "\n";
            CHECK(mq_group_list(b, t.name.c_str(), buf, sizeof buf, &needed) == MQ_OK && gl == buf,
                  "step %zu group list of %s '%s', model '%s'", step, t.name.c_str(), buf,
                  gl.c_str());
            mq_topic_info ti{};
            CHECK(mq_topic_get_info(b, t.name.c_str(), &ti, sizeof ti) == MQ_OK &&
                      ti.partitions == t.partitions && ti.capacity == t.capacity &&
                      ti.max_bytes == t.max_bytes &&
                      ti.ack_timeout_ms * 1'000'000 == t.ack_timeout_ns &&
                      (ti.retention == MQ_RETAIN_BOUNDED) == t.bounded &&
                      ti.max_age_ms * 1'000'000 == t.max_age_ns,
                  "step %zu topic info of %s", step, t.name.c_str());
            for (int32_t p = 0; p < t.partitions; p++) check_partition(t, p);
        }
        for (HeldView &v : views) {
            fuzzmodel::Topic *t = model.find(v.topic);
            const fuzzmodel::Part &part = t->parts[static_cast<size_t>(v.partition)];
            // A view not acked or sought past lies below start only if its message was dropped.
            if (v.m.offset < part.start) v.dropped = true;
            if (!v.dropped) {
                CHECK(v.m.offset < part.end && part.at(v.m.offset).payload == v.want.payload,
                      "step %zu: a held view (%s/%d/%" PRId64 ") is outside the retained log", step,
                      v.topic.c_str(), v.partition, v.m.offset);
            }
            check_message(v.dropped ? "held view of a dropped message" : "held view", v.m,
                          v.partition, v.m.offset, v.want);
        }
    }

    void check_partition(fuzzmodel::Topic &t, int32_t p) {
        fuzzmodel::Part &part = t.parts[static_cast<size_t>(p)];
        mq_partition_info pi{};
        CHECK(mq_partition_get_info(b, t.name.c_str(), p, &pi, sizeof pi) == MQ_OK,
              "step %zu partition info", step);
        // Invariants on the library's own numbers, whatever the model says.
        CHECK(pi.start <= pi.end && pi.end - pi.start <= pi.capacity,
              "step %zu %s/%d: log %" PRId64 "..%" PRId64 " over capacity %" PRId64, step,
              t.name.c_str(), p, pi.start, pi.end, pi.capacity);
        CHECK(pi.max_bytes == 0 || pi.retained_bytes <= pi.max_bytes,
              "step %zu %s/%d: %" PRId64 " bytes retained, budget %" PRId64, step, t.name.c_str(),
              p, pi.retained_bytes, pi.max_bytes);
        int64_t slowest = pi.end;
        for (const auto &g : t.groups) {
            mq_group_info gi{};
            CHECK(mq_group_get_info(b, t.name.c_str(), g.c_str(), p, &gi, sizeof gi) == MQ_OK,
                  "step %zu group info %s", step, g.c_str());
            CHECK(pi.start <= gi.committed && gi.committed <= gi.next && gi.next <= pi.end,
                  "step %zu %s/%d %s: start %" PRId64 " committed %" PRId64 " next %" PRId64
                  " end %" PRId64,
                  step, t.name.c_str(), p, g.c_str(), pi.start, gi.committed, gi.next, pi.end);
            slowest = std::min(slowest, gi.committed);
            const fuzzmodel::Cursor &c = part.cursors.at(g);
            const int64_t paused = c.not_before > model.now ? c.not_before : 0;
            const int64_t age = c.next < part.end ? model.now - part.at(c.next).ts : -1;
            CHECK(gi.committed == c.committed && gi.next == c.next &&
                      gi.lag == part.end - c.committed && gi.in_flight == c.next - c.committed &&
                      gi.lost == c.lost && gi.dead_lettered == 0 && gi.paused_until_ns == paused &&
                      gi.next_age_ns == age,
                  "step %zu %s/%d %s: library %" PRId64 "/%" PRId64 " paused %" PRId64
                  " age %" PRId64 ", model %" PRId64 "/%" PRId64 " paused %" PRId64 " age %" PRId64,
                  step, t.name.c_str(), p, g.c_str(), gi.committed, gi.next, gi.paused_until_ns,
                  gi.next_age_ns, c.committed, c.next, paused, age);
        }
        CHECK(pi.start == slowest,
              "step %zu %s/%d: start %" PRId64 " is not the slowest committed %" PRId64, step,
              t.name.c_str(), p, pi.start, slowest);
        const int64_t oldest = part.start < part.end ? part.at(part.start).ts : -1;
        CHECK(pi.start == part.start && pi.end == part.end && pi.backlog == part.end - part.start &&
                  pi.capacity == t.capacity && pi.retained_bytes == part.bytes() &&
                  pi.producer_waits == 0 && pi.max_backlog == part.max_backlog &&
                  pi.dropped == part.dropped && pi.oldest_timestamp_ns == oldest &&
                  pi.oldest_age_ns == (oldest < 0 ? -1 : model.now - oldest),
              "step %zu %s/%d: library log %" PRId64 "..%" PRId64 " bytes %" PRId64
              " max_backlog %" PRId64 ", model %" PRId64 "..%" PRId64 " bytes %" PRId64
              " max_backlog %" PRId64,
              step, t.name.c_str(), p, pi.start, pi.end, pi.retained_bytes, pi.max_backlog,
              part.start, part.end, part.bytes(), part.max_backlog);
        std::string want;
        char buf[160];
        if (part.end > part.start) {
            std::snprintf(buf, sizeof buf,
                          "log %" PRId64 "..%" PRId64 ", backlog %" PRId64 "/%" PRId64, part.start,
                          part.end - 1, part.end - part.start, t.capacity);
        } else {
            std::snprintf(buf, sizeof buf, "log empty, next offset %" PRId64 ", backlog 0/%" PRId64,
                          part.end, t.capacity);
        }
        want = buf;
        for (const auto &g : t.groups) {
            std::snprintf(buf, sizeof buf, "; %s %" PRId64 "/%" PRId64, g.c_str(),
                          part.cursors.at(g).committed, part.cursors.at(g).next);
            want += buf;
        }
        char got[512];
        size_t needed = 0;
        CHECK(mq_partition_describe(b, t.name.c_str(), p, got, sizeof got, &needed) == MQ_OK &&
                  want == got && needed == want.size() + 1,
              "step %zu describe '%s', model '%s'", step, got, want.c_str());
    }

    void forget_views(const std::string &topic, const std::string &group, int32_t partition,
                      int64_t below) {
        std::erase_if(views, [&](const HeldView &v) {
            return v.topic == topic && v.group == group &&
                   (partition < 0 || v.partition == partition) && v.m.offset < below;
        });
    }

    // The group's poll, ack or seek on the partition ends its views of dropped messages (the
    // call may do so whatever its outcome, so they are not checked after it).
    void forget_dropped(const std::string &topic, const std::string &group, int32_t partition) {
        std::erase_if(views, [&](const HeldView &v) {
            return v.dropped && v.topic == topic && v.group == group && v.partition == partition;
        });
    }

    int64_t pick_offset(Input &in, const std::string &topic, const std::string &group, int32_t p) {
        int64_t committed = 0, next = 0, start = 0, end = 0;
        if (fuzzmodel::Topic *t = model.find(topic); t && p >= 0 && p < t->partitions) {
            const fuzzmodel::Part &part = t->parts[static_cast<size_t>(p)];
            start = part.start;
            end = part.end;
            if (auto it = part.cursors.find(group); it != part.cursors.end()) {
                committed = it->second.committed;
                next = it->second.next;
            }
        }
        switch (in.pick(10)) {
            case 0: return committed - 1;
            case 1: return committed;
            case 2: return next - 1;
            case 3: return next;
            case 4: return start;
            case 5: return end;
            case 6: return end + 1;
            case 7: return MQ_OFFSET_EARLIEST;
            case 8: return MQ_OFFSET_END;
            default: return static_cast<int64_t>(in.byte()) - 3;
        }
    }

    void step_once(Input &in) {
        const std::string topic = kTopics[in.pick(5)];
        const std::string group = kGroups[in.pick(4)];
        // Mostly valid partitions; sometimes one out of range.
        const int32_t partition =
            in.pick(8) == 0 ? (in.pick(2) ? -1 : 4) : static_cast<int32_t>(in.pick(4));
        Expect e;
        switch (in.pick(16)) {
            case 0: {
                mq_topic_config cfg;
                mq_topic_config_init(&cfg, sizeof cfg);
                cfg.partitions = static_cast<int32_t>(in.pick(5));  // 0 is invalid
                cfg.capacity = static_cast<int64_t>(in.pick(6));
                cfg.max_bytes = in.pick(3) == 0 ? static_cast<int64_t>(in.pick(70)) : 0;
                cfg.ack_timeout_ms = static_cast<int64_t>(in.pick(200));
                const uint32_t retention = in.pick(7);  // 6: not a retention
                cfg.retention = retention == 0   ? MQ_RETAIN_BOUNDED
                                : retention == 6 ? 5
                                                 : MQ_RETAIN_UNTIL_ACKED;
                cfg.max_age_ms = in.pick(4) == 0 ? static_cast<int64_t>(in.pick(250)) : 0;
                model.create(topic, cfg.partitions, cfg.capacity, cfg.max_bytes, cfg.ack_timeout_ms,
                             cfg.retention, cfg.max_age_ms, e);
                expect("create", mq_topic_create(b, topic.c_str(), &cfg), e);
                break;
            }
            case 1: {
                mq_group_options o;
                mq_group_options_init(&o, sizeof o);
                o.start = static_cast<int32_t>(in.pick(7) == 0 ? 5 : in.pick(2));
                model.subscribe(topic, group, o.start, e);
                expect("subscribe", mq_group_subscribe(b, topic.c_str(), group.c_str(), &o), e);
                break;
            }
            case 2:
                model.unsubscribe(topic, group, e);
                expect("unsubscribe", mq_group_unsubscribe(b, topic.c_str(), group.c_str()), e);
                if (e.ok_statuses[0] == MQ_OK) forget_views(topic, group, -1, INT64_MAX);
                break;
            case 3:
            case 4:
            case 5: publish(in, topic); break;
            case 6:
            case 7: poll(in, topic, group, partition); break;
            case 8:
            case 9: {
                const int64_t off = pick_offset(in, topic, group, partition);
                forget_dropped(topic, group, partition);
                model.ack(topic, group, partition, off, e);
                expect("ack", mq_group_ack(b, topic.c_str(), group.c_str(), partition, off), e);
                if (e.ok_statuses[0] == MQ_OK) forget_views(topic, group, partition, off + 1);
                break;
            }
            case 10: {
                const int64_t delay = in.pick(3) == 0 ? 0 : static_cast<int64_t>(in.pick(120)) - 5;
                model.nack(topic, group, partition, delay, e);
                mq_status st =
                    in.pick(2) && delay == 0
                        ? mq_group_nack(b, topic.c_str(), group.c_str(), partition, 0)
                        : mq_group_nack(b, topic.c_str(), group.c_str(), partition, delay);
                expect("nack", st, e);
                break;
            }
            case 11: {
                const int64_t off = pick_offset(in, topic, group, partition);
                forget_dropped(topic, group, partition);
                int64_t to = off;  // where the seek lands, if it succeeds
                if (fuzzmodel::Topic *t = model.find(topic);
                    t && partition >= 0 && partition < t->partitions) {
                    const fuzzmodel::Part &part = t->parts[static_cast<size_t>(partition)];
                    if (off == MQ_OFFSET_END) to = part.end;
                    if (off == MQ_OFFSET_EARLIEST) to = part.start;
                }
                model.seek(topic, group, partition, off, e);
                expect("seek", mq_group_seek(b, topic.c_str(), group.c_str(), partition, off), e);
                // A seek ends the views it moves past; a seek back keeps them.
                if (e.ok_statuses[0] == MQ_OK) forget_views(topic, group, partition, to);
                break;
            }
            case 12:
                model.extend(topic, group, partition, e);
                expect("lease extend",
                       mq_group_extend_lease(b, topic.c_str(), group.c_str(), partition), e);
                break;
            case 13:
            case 14: {
                const int64_t ms = in.pick(4) == 0 ? 0 : static_cast<int64_t>(in.byte());
                clock.ns += ms * 1'000'000;
                model.now = clock.ns;
                model.expire_all();
                break;
            }
            default:
                if (in.pick(4) == 0) {
                    CHECK(mq_broker_close(b) == MQ_OK, "close failed");
                    model.closed = true;
                } else if (in.pick(3) == 0) {
                    // Views its groups were handed may go with the topic (mq.h).
                    model.delete_topic(topic, e);
                    expect("delete", mq_topic_delete(b, topic.c_str()), e);
                    if (e.ok_statuses[0] == MQ_OK) {
                        std::erase_if(views, [&](const HeldView &v) { return v.topic == topic; });
                    }
                } else {
                    truncated_lists(in, topic);
                }
        }
    }

    void publish(Input &in, const std::string &topic) {
        Msg m;
        const uint32_t k = in.pick(8);
        m.has_key = k < 6;
        if (m.has_key) m.key = kKeys[k];
        if (k == 6)
            m.has_key = true, m.key = std::string(1 + in.pick(6), static_cast<char>(in.byte()));
        // A unique payload (sequence number), padded to a fuzzed length; up to 40 bytes, past the
        // broker's 32-byte maximum.
        char head[24];
        const int n = std::snprintf(head, sizeof head, "#%" PRIu64, seq++);
        m.payload.assign(head, static_cast<size_t>(n));
        m.payload.resize(in.pick(41), '.');
        int64_t model_off = -1;
        Expect e;
        const int32_t want_p = model.publish(topic, m, e, &model_off);
        int32_t p = -7;
        int64_t off = -7;
        const mq_status st = mq_topic_publish(b, topic.c_str(), m.has_key ? m.key.data() : nullptr,
                                              m.key.size(), m.payload.data(), m.payload.size(),
                                              NULL, 0, MQ_NO_WAIT, nullptr, &p, &off);
        expect("publish", st, e);
        if (st == MQ_OK) {
            CHECK(p == want_p && off == model_off,
                  "step %zu publish went to %d/%" PRId64 ", model %d/%" PRId64, step, p, off,
                  want_p, model_off);
        }
    }

    void poll(Input &in, const std::string &topic, const std::string &group, int32_t partition) {
        const size_t max = in.pick(6);
        mq_message msgs[5];
        size_t count = 99;
        Expect e;
        std::vector<std::pair<int64_t, uint32_t>> want;
        int64_t lost = 0;
        forget_dropped(topic, group, partition);
        model.poll(topic, group, partition, max, e, want, &lost);
        const mq_status st = mq_group_poll(b, topic.c_str(), group.c_str(), partition, msgs,
                                           sizeof(mq_message), max, MQ_NO_WAIT, nullptr, &count);
        expect("poll", st, e);
        if (st != MQ_OK) {
            CHECK(st != MQ_TIMEOUT || count == 0, "step %zu poll timed out with count %zu", step,
                  count);
            return;
        }
        CHECK(count == want.size(), "step %zu poll returned %zu messages, model %zu", step, count,
              want.size());
        const fuzzmodel::Part &part = model.find(topic)->parts[static_cast<size_t>(partition)];
        for (size_t i = 0; i < count; i++) {
            check_message("poll", msgs[i], partition, want[i].first, part.at(want[i].first));
            CHECK(msgs[i].delivery_count == want[i].second,
                  "step %zu offset %" PRId64 " delivery count %u, model %u", step, msgs[i].offset,
                  msgs[i].delivery_count, want[i].second);
            CHECK(msgs[i].lost == (i == 0 ? lost : 0) && msgs[i].dead_letter == nullptr &&
                      msgs[i].header_count == 0 &&
                      msgs[i].timestamp_ns == part.at(want[i].first).ts,
                  "step %zu offset %" PRId64 ": lost %" PRId64 " (model %" PRId64
                  ")/dead_letter/timestamp",
                  step, msgs[i].offset, msgs[i].lost, i == 0 ? lost : 0);
            views.push_back({topic, group, partition, msgs[i], part.at(want[i].first)});
        }
    }

    // Lists and describe into small buffers: snprintf-style truncation, and the needed size.
    void truncated_lists(Input &in, const std::string &topic) {
        const size_t cap = in.pick(12);
        char buf[12];
        std::memset(buf, 'X', sizeof buf);
        size_t needed = 0;
        std::string names;
        for (const auto &t : model.topics) names += t.name + "\n";
        CHECK(mq_topic_list(b, cap ? buf : nullptr, cap, &needed) == MQ_OK &&
                  needed == names.size() + 1,
              "step %zu topic list needed %zu", step, needed);
        if (cap) {
            const std::string want = names.substr(0, cap - 1);
            CHECK(want == buf, "step %zu truncated topic list '%s'", step, buf);
        }
        fuzzmodel::Topic *t = model.find(topic);
        mq_status st =
            mq_partition_describe(b, topic.c_str(), 0, cap ? buf : nullptr, cap, &needed);
        Expect e;
        if (!t) e.ok_statuses = {fuzzmodel::legal_name(topic) ? MQ_ERR_NO_TOPIC : MQ_ERR_INVALID};
        else e.ok_statuses = {MQ_OK};
        expect("describe", st, e);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const bool murmur_ok = fuzzmodel::kafka_murmur2("21") == -973932308 &&
                                  fuzzmodel::kafka_murmur2("foobar") == -790332482;
    if (!murmur_ok) die("the model's murmur2 does not match Kafka's vectors");
    Run r;
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.clock = &Clock::read;
    o.clock_user = &r.clock;
    o.max_message_bytes = 32;
    if (mq_broker_new(&o, &r.b) != MQ_OK) die("broker_new failed");
    Input in{data, size};
    // At most 400 calls per input keeps each execution fast.
    for (r.step = 0; !in.done() && r.step < 400; r.step++) {
        r.step_once(in);
        r.check_state();
    }
    mq_broker_free(r.b);
    return 0;
}
