// libFuzzer target: decodes its input into a sequence of C API calls on one broker with a manual
// clock, runs each against the library and against the model (model.h), and aborts on the first
// difference or broken invariant. Single-threaded, and no call ever waits (a nonzero wait only
// with a triggered cancel token): the outcome of each call is fully determined by the contract.
// Besides the broker it holds members (no threads, a session timeout the manual clock never
// reaches) and cancel tokens, and releases all of them in a fuzzed order; push subscriptions
// are left out, their threads would make the outcome depend on the scheduler.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <iterator>
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
// Members get groups of their own (plain group calls never touch them), one member at a time.
const char *const kMemberGroups[] = {"workers", "w_2", "bad group"};
const char *const kHeaderNames[] = {"", "h", "trace-id", "mq.dead_letter.topic"};
constexpr size_t kMembers = 3;
constexpr size_t kTokens = 2;

// MQ_FUZZ_TRACE=1 prints every call (to see what a seed or a found input does).
bool tracing() {
    static const bool on = std::getenv("MQ_FUZZ_TRACE") != nullptr;
    return on;
}

struct Clock {
    int64_t ns = 1'000'000'000;
    static int64_t read(void *self) { return static_cast<Clock *>(self)->ns; }
};

// A view the library handed out, kept until its group acks or seeks past it: its bytes must
// stay put. Once its message is dropped (bounded retention, max age) it is kept until the
// group's next poll, ack or seek on the partition, and compared with the copy taken at the poll.
// Views handed to a member are also kept when its topic is deleted (orphan), until the member
// is released.
struct HeldView {
    std::string topic, group;
    int32_t partition;
    mq_message m;
    Msg want;
    bool dropped = false;
    uint64_t member = 0;  // serial of the member that polled it; 0: mq_group_poll
    bool orphan = false;
};

struct Member {
    mq_member *h = nullptr;
    uint64_t serial = 0;
    std::string topic, group;
    uint64_t topic_id = 0;
    uint32_t rotate = 0;  // polls that passed their checks
};

struct Token {
    mq_cancel *h = nullptr;
    bool triggered = false;
};

struct Run {
    mq_broker *b = nullptr;
    Clock clock;
    fuzzmodel::Broker model{32};
    std::vector<HeldView> views;
    Member members[kMembers];
    Token tokens[kTokens];
    uint64_t member_serial = 0;
    uint64_t seq = 0;
    size_t step = 0;

    void expect(const char *call, mq_status got, const Expect &e) {
        if (tracing()) std::fprintf(stderr, "step %zu %s: %s\n", step, call, mq_status_name(got));
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
        CHECK(m.header_count == want.headers.size() &&
                  (m.header_count == 0) == (m.headers == nullptr),
              "step %zu %s: %zu headers on %" PRId64 ", model %zu", step, call, m.header_count,
              offset, want.headers.size());
        for (size_t i = 0; i < m.header_count; i++) {
            const mq_header &h = m.headers[i];
            const fuzzmodel::Header &w = want.headers[i];
            CHECK(h.name_len == w.name.size() && h.value_len == w.value.size() &&
                      (h.name_len == 0 || std::memcmp(h.name, w.name.data(), h.name_len) == 0) &&
                      (h.value_len == 0 || std::memcmp(h.value, w.value.data(), h.value_len) == 0),
                  "step %zu %s: header %zu of %" PRId64 " differs", step, call, i, offset);
        }
    }

    // After every call, what it could have changed (scope: its topic, the partition or -1 for
    // all of them; the topic list after a create or delete); every full_every() calls, at the end
    // of the input and after each release, the full observable state. A partition left
    // unchecked is not touched by the library either, so its lazy enforcement of the maximum age
    // lands where the model's eager one does.
    // MQ_FUZZ_FULL=1 checks everything after every call (to triage a finding).
    static size_t full_every() {
        static const size_t n = std::getenv("MQ_FUZZ_FULL") ? 1 : 8;
        return n;
    }
    std::string scope;
    int32_t scope_part = -1;
    bool lists_changed = false;

    void check_state(bool full) {
        mark_dropped();
        if (!b) return check_views(nullptr);
        if (full || lists_changed) check_topic_list();
        for (auto &t : model.topics) {
            if (!full && t.name != scope) continue;
            check_topic(t);
            for (int32_t p = 0; p < t.partitions; p++) {
                if (full || scope_part < 0 || scope_part == p) check_partition(t, p, full);
            }
        }
        check_views(full ? nullptr : &scope);
        for (const Token &t : tokens) {
            CHECK(!t.h || mq_cancel_is_triggered(t.h) == (t.triggered ? 1 : 0),
                  "step %zu: cancel token triggered %d, model %d", step,
                  mq_cancel_is_triggered(t.h), t.triggered);
        }
    }

    void check_topic_list() {
        std::string names;
        for (const auto &t : model.topics) names += t.name + "\n";
        char buf[256];
        size_t needed = 0;
        CHECK(mq_topic_list(b, buf, sizeof buf, &needed) == MQ_OK && names == buf &&
                  needed == names.size() + 1,
              "step %zu topic list '%s', model '%s'", step, buf, names.c_str());
    }

    void check_topic(const fuzzmodel::Topic &t) {
        std::string gl;
        for (const auto &g : t.groups) gl += g + "\n";
        char buf[256];
        size_t needed = 0;
        CHECK(mq_group_list(b, t.name.c_str(), buf, sizeof buf, &needed) == MQ_OK && gl == buf,
              "step %zu group list of %s '%s', model '%s'", step, t.name.c_str(), buf, gl.c_str());
        mq_topic_info ti{};
        CHECK(mq_topic_get_info(b, t.name.c_str(), &ti, sizeof ti) == MQ_OK &&
                  ti.partitions == t.partitions && ti.capacity == t.capacity &&
                  ti.max_bytes == t.max_bytes &&
                  ti.ack_timeout_ms * 1'000'000 == t.ack_timeout_ns &&
                  (ti.retention == MQ_RETAIN_BOUNDED) == t.bounded &&
                  ti.max_age_ms * 1'000'000 == t.max_age_ns,
              "step %zu topic info of %s", step, t.name.c_str());
    }

    // A view not acked or sought past lies below start only if its message was dropped. Kept
    // up to date for every view before each call: the call's forget_dropped relies on it.
    void mark_dropped() {
        if (!b) return;
        for (HeldView &v : views) {
            if (v.orphan || v.dropped) continue;
            const fuzzmodel::Topic *t = model.find(v.topic);
            if (v.m.offset < t->parts[static_cast<size_t>(v.partition)].start) v.dropped = true;
        }
    }

    // Every view held (of topic `only`, if given) must still read its bytes, also after the
    // broker handle is released.
    void check_views(const std::string *only) {
        for (HeldView &v : views) {
            if (only && v.topic != *only) continue;
            if (b && !v.orphan && !v.dropped) {
                const fuzzmodel::Part &part =
                    model.find(v.topic)->parts[static_cast<size_t>(v.partition)];
                CHECK(v.m.offset < part.end && part.at(v.m.offset).payload == v.want.payload,
                      "step %zu: a held view (%s/%d/%" PRId64 ") is outside the retained log", step,
                      v.topic.c_str(), v.partition, v.m.offset);
            }
            check_message(v.dropped ? "held view of a dropped message" : "held view", v.m,
                          v.partition, v.m.offset, v.want);
        }
    }

    void check_partition(fuzzmodel::Topic &t, int32_t p, bool describe) {
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
            fuzzmodel::Cursor &c = part.cursors.at(g);
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
            check_share_info(t, part, c, g, p, gi);
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
        if (!describe) return;
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

    // mq_group_info's share fields (1.6).
    void check_share_info(const fuzzmodel::Topic &t, const fuzzmodel::Part &part,
                          fuzzmodel::Cursor &c, const std::string &g, int32_t p,
                          const mq_group_info &gi) {
        int64_t acquired = 0, available = 0, delayed = 0, hist[4] = {0, 0, 0, 0};
        int64_t oldest_age = -1;
        if (c.share) {
            c.expire(model.now);
            for (const auto &[o, e] : c.entries) {
                if (e.state == fuzzmodel::Cursor::kSettled) continue;
                if (e.state == fuzzmodel::Cursor::kAcquired) acquired++;
                else (e.deadline > model.now ? delayed : available)++;
                if (e.count) hist[std::min<uint32_t>(e.count, 4) - 1]++;
            }
            for (int64_t o = c.next; o < part.end; o++)
                (part.at(o).due() > model.now ? delayed : available)++;
            if (c.committed < part.end) oldest_age = model.now - part.at(c.committed).ts;
        }
        const bool avail_ok = c.share == MQ_SHARE_KEY
                                  ? gi.available + gi.delayed == available + delayed
                                  : gi.available == available;
        CHECK(gi.acquired == acquired && avail_ok && gi.delayed == delayed &&
                  gi.rejected == c.rejected && gi.oldest_unsettled_age_ns == oldest_age &&
                  gi.delivered_once == hist[0] && gi.delivered_twice == hist[1] &&
                  gi.delivered_thrice == hist[2] && gi.delivered_more == hist[3],
              "step %zu %s/%d %s (share %d): library acquired %" PRId64 " available %" PRId64
              " delayed %" PRId64 " rejected %" PRId64 " oldest %" PRId64 " hist %" PRId64
              ",%" PRId64 ",%" PRId64 ",%" PRId64 "; model %" PRId64 " %" PRId64 " %" PRId64
              " %" PRId64 " %" PRId64 " %" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
              step, t.name.c_str(), p, g.c_str(), c.share, gi.acquired, gi.available, gi.delayed,
              gi.rejected, gi.oldest_unsettled_age_ns, gi.delivered_once, gi.delivered_twice,
              gi.delivered_thrice, gi.delivered_more, acquired, available, delayed, c.rejected,
              oldest_age, hist[0], hist[1], hist[2], hist[3]);
    }

    void forget_views(const std::string &topic, const std::string &group, int32_t partition,
                      int64_t below) {
        std::erase_if(views, [&](const HeldView &v) {
            return !v.orphan && v.topic == topic && v.group == group &&
                   (partition < 0 || v.partition == partition) && v.m.offset < below;
        });
    }

    // The group's poll, ack or seek on the partition ends its views of dropped messages (the
    // call may do so whatever its outcome, so they are not checked after it). partition -1:
    // all of them (a member poll may look at each).
    void forget_dropped(const std::string &topic, const std::string &group, int32_t partition) {
        std::erase_if(views, [&](const HeldView &v) {
            return v.dropped && !v.orphan && v.topic == topic && v.group == group &&
                   (partition < 0 || v.partition == partition);
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
        scope = topic;
        scope_part = partition;
        lists_changed = false;
        const uint32_t op = in.pick(22);
        if (op == 16 || op == 17) return member_step(in, topic, partition);
        if (op == 18) return token_step(in);
        if (!b) return;  // the broker handle is released: only members and tokens are left
        switch (op) {
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
                lists_changed = true;
                scope_part = -1;
                model.create(topic, cfg.partitions, cfg.capacity, cfg.max_bytes, cfg.ack_timeout_ms,
                             cfg.retention, cfg.max_age_ms, e);
                expect("create", mq_topic_create(b, topic.c_str(), &cfg), e);
                if (tracing())
                    std::fprintf(stderr,
                                 "  %s: %d partitions, capacity %" PRId64 ", max_bytes %" PRId64
                                 ", ack %" PRId64 " ms, retention %d, max age %" PRId64 " ms\n",
                                 topic.c_str(), cfg.partitions, cfg.capacity, cfg.max_bytes,
                                 cfg.ack_timeout_ms, cfg.retention, cfg.max_age_ms);
                break;
            }
            case 1: {
                mq_group_options o;
                mq_group_options_init(&o, sizeof o);
                o.start = static_cast<int32_t>(in.pick(7) == 0 ? 5 : in.pick(2));
                // Share groups (rule 16) with a small max_acquired, so the limit and the
                // key-shared look-ahead come up; sometimes an invalid combination.
                const uint32_t sm = in.pick(9);
                o.share = sm < 4   ? MQ_SHARE_NONE
                          : sm < 6 ? MQ_SHARE_ALL
                          : sm < 8 ? MQ_SHARE_KEY
                                   : 0;
                if (sm == 8) o.max_acquired = 3;  // without share: MQ_ERR_INVALID
                if (o.share != MQ_SHARE_NONE) {
                    const uint32_t ma = in.pick(8);
                    o.max_acquired = ma < 5 ? ma : ma == 5 ? 7 : ma == 6 ? 0 : 1'000'001;
                }
                scope_part = -1;
                model.subscribe(topic, group, o.start, e, o.share, o.max_acquired);
                if (tracing())
                    std::fprintf(stderr, "  share %d max_acquired %u\n", o.share, o.max_acquired);
                expect("subscribe", mq_group_subscribe(b, topic.c_str(), group.c_str(), &o), e);
                break;
            }
            case 2:
                scope_part = -1;
                model.unsubscribe(topic, group, e);
                expect("unsubscribe", mq_group_unsubscribe(b, topic.c_str(), group.c_str()), e);
                if (e.ok_statuses[0] == MQ_OK) forget_views(topic, group, -1, INT64_MAX);
                break;
            case 3:
            case 4:
            case 5: publish(in, topic, false); break;
            case 21: publish(in, topic, true); break;
            case 19:
            case 20: settle(in, topic, group, partition); break;
            case 6:
            case 7: poll(in, topic, group, partition); break;
            case 8:
            case 9: {
                const int64_t off = pick_offset(in, topic, group, partition);
                forget_dropped(topic, group, partition);
                model.ack(topic, group, partition, off, e);
                expect("ack", mq_group_ack(b, topic.c_str(), group.c_str(), partition, off), e);
                if (e.ok_statuses[0] == MQ_OK) forget_acked(topic, group, partition);
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
                scope.clear();
                if (tracing()) std::fprintf(stderr, "  clock +%" PRId64 " ms\n", ms);
                model.now = clock.ns;
                model.expire_all();
                break;
            }
            default:
                scope_part = -1;
                lists_changed = true;
                if (in.pick(4) == 0) {
                    if (in.pick(3) == 0) return release_broker();
                    // A closed broker enforces no maximum age: every partition is read first, so
                    // the library's lazy enforcement catches up with the model's eager one.
                    check_state(true);
                    CHECK(mq_broker_close(b) == MQ_OK, "close failed");
                    model.closed = true;
                } else if (in.pick(3) == 0) {
                    model.delete_topic(topic, e);
                    expect("delete", mq_topic_delete(b, topic.c_str()), e);
                    if (e.ok_statuses[0] == MQ_OK) {
                        // Views handed to mq_group_poll may go with the topic; those a member
                        // holds stay until it is released (mq.h).
                        std::erase_if(views, [&](HeldView &v) {
                            if (v.orphan || v.topic != topic) return false;
                            v.orphan = live_member(v.member) != nullptr;
                            return !v.orphan;
                        });
                    }
                } else {
                    scope.clear();
                    truncated_lists(in, topic);
                }
        }
    }

    // A cancel token and a wait for a call that may wait. The wait is 0 unless the token is
    // triggered: then the call must return MQ_CANCELLED where it would wait, so nothing blocks.
    mq_cancel *pick_cancel(Input &in, int64_t *wait, bool *cancels) {
        *wait = 0;
        *cancels = false;
        if (in.pick(3) != 0) return nullptr;
        Token &t = tokens[in.pick(kTokens)];
        if (t.h && t.triggered && in.pick(2)) {
            *wait = in.pick(2) ? 1000 : MQ_WAIT_FOREVER;
            *cancels = true;
        }
        return t.h;
    }

    static void cancelled(Expect &e, bool cancels) {
        if (!cancels) return;
        for (mq_status &s : e.ok_statuses)
            if (s == MQ_FULL || s == MQ_TIMEOUT) s = MQ_CANCELLED;
    }

    // After a successful ack or settle: the views below the group's committed offset end.
    void forget_acked(const std::string &topic, const std::string &group, int32_t partition) {
        const fuzzmodel::Topic *t = model.find(topic);
        forget_views(topic, group, partition,
                     t->parts[static_cast<size_t>(partition)].cursors.at(group).committed);
    }

    // mq_share_settle: mostly of a message the group holds, with its delivery count (or a stale
    // one), sometimes of any offset.
    void settle(Input &in, const std::string &topic, const std::string &group, int32_t partition) {
        int64_t off = 0;
        uint32_t count = 1;
        const fuzzmodel::Cursor *c = nullptr;
        if (fuzzmodel::Topic *t = model.find(topic);
            t && partition >= 0 && partition < t->partitions && t->has_group(group))
            c = &t->parts[static_cast<size_t>(partition)].cursors.at(group);
        if (c && !c->entries.empty() && in.pick(4) != 0) {
            auto it = c->entries.begin();
            std::advance(it,
                         in.pick(static_cast<uint32_t>(std::min<size_t>(c->entries.size(), 16))));
            off = it->first;
            count = it->second.count;
            const uint32_t skew = in.pick(8);
            if (skew == 0) count--;
            if (skew == 1) count++;
        } else {
            off = pick_offset(in, topic, group, partition);
            count = in.pick(4);
        }
        const uint32_t a = in.pick(9);
        const int32_t action = a < 3   ? MQ_SETTLE_ACCEPT
                               : a < 5 ? MQ_SETTLE_RELEASE
                               : a < 6 ? MQ_SETTLE_REJECT
                               : a < 8 ? MQ_SETTLE_RENEW
                                       : 4;  // not an action
        const uint32_t d = in.pick(8);
        const int64_t delay = d < 4   ? 0
                              : d < 7 ? static_cast<int64_t>(in.pick(120))
                                      : (in.pick(2) ? -1 : (int64_t{1} << 40) + 1);
        forget_dropped(topic, group, partition);
        Expect e;
        model.settle(topic, group, partition, off, count, action, delay, e);
        if (tracing())
            std::fprintf(stderr,
                         "  settle %s/%s/%d offset %" PRId64 " count %u action %d delay %" PRId64
                         "\n",
                         topic.c_str(), group.c_str(), partition, off, count, action, delay);
        expect(
            "settle",
            mq_share_settle(b, topic.c_str(), group.c_str(), partition, off, count, action, delay),
            e);
        if (e.ok_statuses[0] == MQ_OK) forget_acked(topic, group, partition);
    }

    void publish(Input &in, const std::string &topic, bool batch) {
        Msg m;
        const uint32_t k = in.pick(8);
        m.has_key = k < 6;
        if (m.has_key) m.key = kKeys[k];
        if (k == 6) {  // two reads in sequence: argument order is unspecified across compilers
            const uint32_t len = 1 + in.pick(6);
            m.has_key = true, m.key = std::string(len, static_cast<char>(in.byte()));
        }
        // A unique payload (sequence number), padded to a fuzzed length; up to 40 bytes, past the
        // broker's 32-byte maximum.
        char head[24];
        const int n = std::snprintf(head, sizeof head, "#%" PRIu64, seq++);
        m.payload.assign(head, static_cast<size_t>(n));
        m.payload.resize(in.pick(41), '.');
        // 0 to 3 headers, names and values possibly empty; their bytes count against the 32-byte
        // maximum and the byte budget. Sometimes a NULL pointer with a nonzero length.
        mq_header hs[3];
        const size_t hn = in.pick(4);
        bool bad_pointers = false;
        m.headers.resize(hn);
        for (size_t i = 0; i < hn; i++) {
            fuzzmodel::Header &h = m.headers[i];
            h.name = kHeaderNames[in.pick(4)];
            const uint32_t v = in.pick(4);
            if (v == 1) h.value = "v";
            if (v >= 2) {
                const uint32_t len = in.pick(13);
                h.value.assign(len, static_cast<char>(in.byte()));
            }
            hs[i] = {h.name.data(), h.name.size(), h.value.data(), h.value.size()};
            const uint32_t form = in.pick(10);
            if (form == 0 && h.name.empty()) hs[i].name = nullptr;  // allowed with length 0
            if (form == 1 && h.value.empty()) hs[i].value = nullptr;
            if (form == 2) {
                hs[i].value = nullptr, hs[i].value_len += 1;
                bad_pointers = true;
            }
        }
        const mq_header *headers = hn || in.pick(2) ? hs : nullptr;
        if (hn && in.pick(12) == 0) headers = nullptr, bad_pointers = true;
        // Delayed delivery (rule 15) through a one-record batch.
        int64_t delay_ms = 0;
        if (batch) {
            const uint32_t d = in.pick(8);
            delay_ms = d == 0  ? 0
                       : d < 7 ? static_cast<int64_t>(in.byte())
                               : (in.pick(2) ? -1 : (int64_t{1} << 40) + 1);
            m.delay_ns = delay_ms * 1'000'000;
        }
        int64_t wait = 0;
        bool cancels = false;
        mq_cancel *cancel = pick_cancel(in, &wait, &cancels);
        int64_t model_off = -1;
        Expect e;
        const int32_t want_p = model.publish(topic, m, e, &model_off, bad_pointers);
        scope_part = want_p;
        cancelled(e, cancels);
        int32_t p = -7;
        int64_t off = -7;
        mq_status st;
        if (batch) {
            mq_record r{};
            r.key = m.has_key ? m.key.data() : nullptr;
            r.key_len = m.key.size();
            r.payload = m.payload.data();
            r.payload_len = m.payload.size();
            r.headers = headers;
            r.header_count = hn;
            r.delay_ms = delay_ms;
            mq_publish_result res{-7, -7};
            size_t published = 99;
            st = mq_topic_publish_batch(b, topic.c_str(), &r, sizeof r, 1, wait, cancel, &res,
                                        sizeof res, &published);
            if (tracing())
                std::fprintf(stderr, "  batch of 1, delay %" PRId64 " ms: %d/%" PRId64 "\n",
                             delay_ms, res.partition, res.offset);
            CHECK(published == (st == MQ_OK ? 1u : 0u),
                  "step %zu batch publish returned %s with %zu published", step, mq_status_name(st),
                  published);
            p = res.partition;
            off = res.offset;
            if (st == MQ_FULL || st == MQ_CANCELLED) {
                CHECK(off == -1 && p == want_p,
                      "step %zu batch publish %s: result %d/%" PRId64 ", model partition %d", step,
                      mq_status_name(st), p, off, want_p);
            }
        } else {
            st = mq_topic_publish(b, topic.c_str(), m.has_key ? m.key.data() : nullptr,
                                  m.key.size(), m.payload.data(), m.payload.size(), headers, hn,
                                  wait, cancel, &p, &off);
        }
        expect(batch ? "batch publish" : "publish", st, e);
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
        int64_t wait = 0;
        bool cancels = false;
        mq_cancel *cancel = pick_cancel(in, &wait, &cancels);
        forget_dropped(topic, group, partition);
        model.poll(topic, group, partition, max, e, want, &lost);
        cancelled(e, cancels);
        const mq_status st = mq_group_poll(b, topic.c_str(), group.c_str(), partition, msgs,
                                           sizeof(mq_message), max, wait, cancel, &count);
        expect("poll", st, e);
        if (st != MQ_OK) {
            CHECK((st != MQ_TIMEOUT && st != MQ_CANCELLED) || count == 0,
                  "step %zu poll returned %s with count %zu", step, mq_status_name(st), count);
            return;
        }
        CHECK(count == want.size(), "step %zu poll returned %zu messages, model %zu", step, count,
              want.size());
        check_polled("poll", *model.find(topic), topic, group, partition, msgs, want, lost, 0);
    }

    void check_polled(const char *call, const fuzzmodel::Topic &t, const std::string &topic,
                      const std::string &group, int32_t partition, const mq_message *msgs,
                      const std::vector<std::pair<int64_t, uint32_t>> &want, int64_t lost,
                      uint64_t member) {
        const fuzzmodel::Part &part = t.parts[static_cast<size_t>(partition)];
        for (size_t i = 0; i < want.size(); i++) {
            check_message(call, msgs[i], partition, want[i].first, part.at(want[i].first));
            CHECK(msgs[i].delivery_count == want[i].second,
                  "step %zu offset %" PRId64 " delivery count %u, model %u", step, msgs[i].offset,
                  msgs[i].delivery_count, want[i].second);
            CHECK(msgs[i].lost == (i == 0 ? lost : 0) && msgs[i].dead_letter == nullptr &&
                      msgs[i].timestamp_ns == part.at(want[i].first).ts,
                  "step %zu offset %" PRId64 ": lost %" PRId64 " (model %" PRId64
                  ")/dead_letter/timestamp",
                  step, msgs[i].offset, msgs[i].lost, i == 0 ? lost : 0);
            views.push_back(
                {topic, group, partition, msgs[i], part.at(want[i].first), false, member, false});
        }
    }

    Member *live_member(uint64_t serial) {
        for (Member &m : members)
            if (m.h && serial && m.serial == serial) return &m;
        return nullptr;
    }

    // Members: join when the slot is free, else one of the member calls or its release.
    void member_step(Input &in, const std::string &topic, int32_t partition) {
        Member &m = members[in.pick(kMembers)];
        scope_part = -1;  // a member's calls may reach any partition of its topic
        if (!m.h) return join(in, m, topic);
        scope = m.topic;
        Expect e;
        fuzzmodel::Statuses f;
        fuzzmodel::Topic *t = model.member_faults(m.topic_id, f);
        e.ok_statuses = f;
        switch (in.pick(6)) {
            case 0: return release_member(m);
            case 1: return member_poll(in, m);
            case 2: {
                const int64_t off = pick_offset(in, m.topic, m.group, partition);
                if (t) {
                    forget_dropped(m.topic, m.group, partition);
                    model.ack(t->name, m.group, partition, off, e);
                }
                expect("member ack", mq_member_ack(m.h, partition, off), e);
                if (e.ok_statuses[0] == MQ_OK) forget_views(m.topic, m.group, partition, off + 1);
                return;
            }
            case 3: {
                const int64_t delay = in.pick(3) == 0 ? 0 : static_cast<int64_t>(in.pick(120)) - 5;
                if (t) model.nack(t->name, m.group, partition, delay, e);
                expect("member nack", mq_member_nack(m.h, partition, delay), e);
                return;
            }
            case 4:
                if (t) model.extend(t->name, m.group, partition, e);
                expect("member lease extend", mq_member_extend_lease(m.h, partition), e);
                return;
            default: return check_assignment(m);
        }
    }

    void join(Input &in, Member &m, const std::string &topic) {
        if (!b) return;
        const std::string group = kMemberGroups[in.pick(3)];
        fuzzmodel::Topic *t = model.find(topic);
        const Member *live = nullptr;  // one member per group: joining one more must fail
        for (const Member &o : members)
            if (o.h && t && o.topic_id == t->id && o.group == group) live = &o;
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.session_timeout_ms = int64_t{1} << 40;  // the manual clock never gets there
        const uint32_t how = in.pick(4);
        std::string id = live ? mq_member_id(live->h) : how == 1 ? "bad id" : "m-1";
        o.member_id = !live && how == 0 ? nullptr : id.c_str();  // NULL: a generated id
        Expect e;
        model.member_join(topic, group, !live && how == 1, live != nullptr, e);
        mq_member *h = nullptr;
        const mq_status st = mq_member_join(b, topic.c_str(), group.c_str(), &o, &h);
        expect("member join", st, e);
        if (st != MQ_OK) return;
        m = Member{h, ++member_serial, topic, group, model.find(topic)->id, 0};
        check_assignment(m);
    }

    // A sole member owns every partition; generations count its group's joins and closes.
    void check_assignment(Member &m) {
        fuzzmodel::Statuses f;
        fuzzmodel::Topic *t = model.member_faults(m.topic_id, f);
        Expect e;
        e.ok_statuses = t ? fuzzmodel::Statuses{MQ_OK} : f;
        int64_t gen = -1;
        int32_t parts[8];
        size_t count = 99;
        const mq_status st = mq_member_get_assignment(m.h, &gen, parts, 8, &count);
        expect("member assignment", st, e);
        if (st != MQ_OK) return;
        bool all = count == static_cast<size_t>(t->partitions);
        for (size_t i = 0; all && i < count; i++) all = parts[i] == static_cast<int32_t>(i);
        CHECK(all && gen == t->generation[m.group],
              "step %zu: member of %s/%s owns %zu partitions in generation %" PRId64
              ", model %d in %" PRId64,
              step, m.topic.c_str(), m.group.c_str(), count, gen, t->partitions,
              t->generation[m.group]);
    }

    void member_poll(Input &in, Member &m) {
        const size_t max = in.pick(6);
        int64_t wait = 0;
        bool cancels = false;
        mq_cancel *cancel = pick_cancel(in, &wait, &cancels);
        std::vector<std::pair<int64_t, uint32_t>> want;
        int64_t lost = 0;
        Expect e;
        if (model.find_id(m.topic_id) && !model.closed) forget_dropped(m.topic, m.group, -1);
        const int32_t p = model.member_poll(m.topic_id, m.group, m.rotate, max, e, want, &lost);
        cancelled(e, cancels);
        mq_message msgs[5];
        size_t count = 99;
        const mq_status st =
            mq_member_poll(m.h, msgs, sizeof(mq_message), max, wait, cancel, &count);
        expect("member poll", st, e);
        if (st != MQ_OK) {
            CHECK(count == 0, "step %zu member poll returned %s with count %zu", step,
                  mq_status_name(st), count);
            return;
        }
        CHECK(count == want.size() && msgs[0].partition == p,
              "step %zu member poll returned %zu messages of partition %d, model %zu of %d", step,
              count, msgs[0].partition, want.size(), p);
        check_polled("member poll", *model.find_id(m.topic_id), m.topic, m.group, p, msgs, want,
                     lost, m.serial);
    }

    void release_member(Member &m) {
        if (b) model.member_close(m.topic_id, m.group);
        CHECK(mq_member_close(m.h) == MQ_OK, "step %zu member close failed", step);
        std::erase_if(views, [&](const HeldView &v) { return v.orphan && v.member == m.serial; });
        m = Member{};
        forget_all_if_gone();
    }

    // The broker's memory, with every view, goes with the last of the broker and its members.
    void forget_all_if_gone() {
        if (b) return;
        for (const Member &m : members)
            if (m.h) return;
        views.clear();
    }

    void release_broker() {
        mq_broker_free(b);
        b = nullptr;
        model.closed = true;
        forget_all_if_gone();
    }

    void token_step(Input &in) {
        Token &t = tokens[in.pick(kTokens)];
        scope.clear();
        if (!t.h) {
            CHECK(mq_cancel_new(&t.h) == MQ_OK && t.h, "step %zu mq_cancel_new failed", step);
            t.triggered = false;
            return;
        }
        switch (in.pick(4)) {
            case 0: mq_cancel_free(t.h), t = Token{}; break;
            case 1: mq_cancel_trigger(t.h), t.triggered = true; break;
            case 2: mq_cancel_reset(t.h), t.triggered = false; break;
            default:
                CHECK(mq_cancel_is_triggered(t.h) == (t.triggered ? 1 : 0),
                      "step %zu cancel token state", step);
        }
    }

    // The end of the input: every handle left is released, in an order the input picks, and
    // the views are read after each release while the broker's memory stays.
    void release_all(uint64_t seed) {
        int order[1 + kMembers + kTokens];
        int n = 0;
        for (int i = 0; i < 1 + static_cast<int>(kMembers + kTokens); i++) order[n++] = i;
        for (int i = n - 1; i > 0; i--) {  // Fisher-Yates with a xorshift of the input's hash
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            std::swap(order[i], order[seed % static_cast<uint64_t>(i + 1)]);
        }
        for (int i = 0; i < n; i++) {
            const int h = order[i];
            if (h == 0) {
                if (!b) continue;
                release_broker();
            } else if (h <= static_cast<int>(kMembers)) {
                Member &m = members[h - 1];
                if (!m.h) continue;
                release_member(m);
            } else {
                Token &t = tokens[static_cast<size_t>(h) - 1 - kMembers];
                if (!t.h) continue;
                mq_cancel_free(t.h);
                t = Token{};
            }
            check_state(true);
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
        r.check_state(r.step % Run::full_every() == Run::full_every() - 1);
    }
    r.check_state(true);
    uint64_t seed = 1469598103934665603u;  // FNV-1a of the input: the release order
    for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 1099511628211u;
    r.release_all(seed | 1);
    return 0;
}
