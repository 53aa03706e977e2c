// The C++ runner of the cross-language conformance scripts in tests/conformance/*.mqs.
// tests/conformance/FORMAT.md is the format's contract; this runner implements it with the
// public C API only, so it checks exactly what a binding's runner checks through its own API.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conformance_script.h"
#include "mq.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kClockStartNs = 1'000'000'000;
constexpr std::chrono::milliseconds kWaitLimit{10000};

using namespace mq_conformance;

// ---- message views as words --------------------------------------------------------------------

struct Seen {  // one message as a poll returned it or a handler received it
    int32_t partition;
    int64_t offset;
    uint32_t delivery_count;
    std::optional<std::string> key;
    std::optional<std::string> payload;  // nullopt: the library gave a NULL payload
    int64_t timestamp_ns;
    int64_t lost;
    std::string dead_letter;  // "-" or topic/group/partition/offset/delivery_count
};

Seen seen(const mq_message &m) {
    Seen s{m.partition, m.offset,    m.delivery_count, std::nullopt,
           std::nullopt, m.timestamp_ns, m.lost,           "-"};
    if (m.key) s.key.emplace(static_cast<const char *>(m.key), m.key_len);
    if (m.payload) s.payload.emplace(static_cast<const char *>(m.payload), m.payload_len);
    if (const mq_dead_letter *d = m.dead_letter)
        s.dead_letter = std::string(d->topic ? d->topic : "<NULL>") + "/" +
                        (d->group ? d->group : "<NULL>") + "/" + std::to_string(d->partition) +
                        "/" + std::to_string(d->offset) + "/" + std::to_string(d->delivery_count);
    return s;
}

// A duration or broker-clock span in the scripts' unit, milliseconds ("<n>ns" if not whole).
std::string ms_text(int64_t ns) {
    return ns % 1'000'000 == 0 ? std::to_string(ns / 1'000'000) : std::to_string(ns) + "ns";
}

// A broker-clock time as milliseconds since the manual clock's start.
std::string clock_text(int64_t ns) { return ms_text(ns - kClockStartNs); }

constexpr int32_t kAnyPartition = -1;

// Words and list fields for messages expected on `partition` (OFFSET:PAYLOAD), or, with
// kAnyPartition, on partitions the words name (PARTITION/OFFSET:PAYLOAD, for member polls).
void describe_messages(const std::vector<Seen> &msgs, int32_t partition, Outcome &o) {
    std::vector<std::string> deliveries, keys, stamps, lost, dead;
    for (const auto &m : msgs) {
        std::string w =
            std::to_string(m.offset) + ":" + (m.payload ? *m.payload : "<NULL payload>");
        if (partition == kAnyPartition) w = std::to_string(m.partition) + "/" + w;
        else if (m.partition != partition)
            w += "<from partition " + std::to_string(m.partition) + ">";
        o.words.push_back(w);
        deliveries.push_back(std::to_string(m.delivery_count));
        keys.push_back(m.key ? *m.key : "-");
        stamps.push_back(clock_text(m.timestamp_ns));
        lost.push_back(std::to_string(m.lost));
        dead.push_back(m.dead_letter);
    }
    o.fields["deliveries"] = join(deliveries, ",");
    o.fields["keys"] = join(keys, ",");
    o.fields["timestamps"] = join(stamps, ",");
    o.fields["lost"] = join(lost, ",");
    o.fields["dead_letters"] = join(dead, ",");
}

// Validates expected message words (OFFSET:PAYLOAD, or PARTITION/OFFSET:PAYLOAD for a member
// poll) so a typo is a script error, not a mismatch.
void validate_message_words(const Call &c) {
    bool member = c.verb == "member_poll";
    for (const auto &w : c.want_words) {
        size_t colon = w.find(':');
        size_t slash = member ? w.find('/') : std::string::npos;
        if (colon == std::string::npos || (member && (slash == std::string::npos || slash > colon)))
            fail(std::string("a message is ") + (member ? "PARTITION/" : "") +
                 "OFFSET:PAYLOAD, got '" + w + "'");
        size_t from = member ? slash + 1 : 0;
        if (member) parse_i32(w.substr(0, slash), "message partition");
        parse_int(w.substr(from, colon - from), "message offset");
    }
}

// ---- push subscriptions ------------------------------------------------------------------------

struct PushState {
    std::mutex mu;
    std::vector<Seen> calls;
    std::vector<bool> failed;
    std::vector<std::string> delays;   // per call: mq_handler_set_nack_delay's status, or "-"
    std::vector<std::string> extends;  // per call: mq_handler_extend_lease's status, or "-"
    std::map<std::string, int> failures_left;
    std::map<std::string, int> extends_left;
    std::optional<int64_t> nack_delay;  // asked for before each failing return
    std::atomic<int> frees{0};
    mq_subscription *sub = nullptr;
    bool open = false;
};

int scripted_handler(void *user, const mq_message *msg) {
    auto *st = static_cast<PushState *>(user);
    std::lock_guard lock(st->mu);
    Seen s = seen(*msg);
    // Each listed occurrence of a payload is used up by one call.
    auto take = [&](std::map<std::string, int> &left) {
        if (!s.payload) return false;
        auto it = left.find(*s.payload);
        if (it == left.end() || it->second == 0) return false;
        --it->second;
        return true;
    };
    bool fails = take(st->failures_left);
    std::string extended = "-", delayed = "-";
    if (take(st->extends_left)) extended = mq_status_name(mq_handler_extend_lease());
    if (fails && st->nack_delay)
        delayed = mq_status_name(mq_handler_set_nack_delay(*st->nack_delay));
    st->calls.push_back(std::move(s));
    st->failed.push_back(fails);
    st->delays.push_back(delayed);
    st->extends.push_back(extended);
    return fails ? 1 : 0;
}

void count_free(void *user) { static_cast<PushState *>(user)->frees.fetch_add(1); }

// ---- group members -------------------------------------------------------------------------------

struct MemberState {
    mq_member *handle = nullptr;  // kept after leave, only to compare with callback arguments
    bool open = false;
    std::mutex mu;
    // Each on_rebalance call: the handle it was given and the generation.
    std::vector<std::pair<mq_member *, int64_t>> rebalances;
};

void record_rebalance(void *user, mq_member *member, int64_t generation) {
    auto *st = static_cast<MemberState *>(user);
    std::lock_guard lock(st->mu);
    st->rebalances.emplace_back(member, generation);
}

// The named assignment strategies of `join assignor=` (FORMAT.md).
void assign_all_to_last(void *, int32_t partitions, const char *const *, int32_t count,
                        int32_t *owner) {
    for (int32_t p = 0; p < partitions; ++p) owner[p] = count - 1;
}

void assign_by_id(void *, int32_t partitions, const char *const *ids, int32_t count,
                  int32_t *owner) {
    std::vector<int32_t> order(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
    std::sort(order.begin(), order.end(),
              [ids](int32_t a, int32_t b) { return std::string_view(ids[a]) < ids[b]; });
    for (int32_t p = 0; p < partitions; ++p) owner[p] = order[static_cast<size_t>(p % count)];
}

void assign_none(void *, int32_t partitions, const char *const *, int32_t count, int32_t *owner) {
    for (int32_t p = 0; p < partitions; ++p) owner[p] = count;  // out of range: unowned
}

// ---- calls that may run in the background -------------------------------------------------------

Outcome run_blocking(mq_broker *b, const Call &c, mq_cancel *cancel, mq_member *member) {
    int64_t wait = c.opt_int("wait", MQ_NO_WAIT);
    if (c.verb == "member_poll") {
        int64_t max = c.opt_int("max", 10);
        if (max < 0 || max > 100000) fail("max= must be 0..100000");
        std::vector<mq_message> msgs(static_cast<size_t>(std::max<int64_t>(max, 1)));
        size_t count = SIZE_MAX;
        mq_status st = mq_member_poll(member, msgs.data(), sizeof(mq_message), static_cast<size_t>(max), wait, cancel,
                                      &count);
        Outcome o = finish(st);
        if (count > msgs.size())
            fail("mq_member_poll reported " + std::to_string(count) + " messages");
        if (st != MQ_OK && count != 0)
            fail("mq_member_poll returned " + o.status + " with a count of " +
                 std::to_string(count));
        std::vector<Seen> got;
        for (size_t i = 0; i < count; ++i) got.push_back(seen(msgs[i]));
        describe_messages(got, kAnyPartition, o);
        return o;
    }
    const std::string &topic = c.words[0];
    if (c.verb == "publish") {
        const std::string &payload = c.words[1];
        const std::string *key = c.has("key") ? &c.opts.at("key") : nullptr;
        int32_t partition = -1;
        int64_t offset = -1;
        mq_status st = mq_topic_publish(b, topic.c_str(), key ? key->data() : nullptr,
                                  key ? key->size() : 0, payload.data(), payload.size(), NULL, 0, wait,
                                  cancel, &partition, &offset);
        Outcome o = finish(st);
        if (st == MQ_OK) {
            o.fields["partition"] = std::to_string(partition);
            o.fields["offset"] = std::to_string(offset);
        }
        return o;
    }
    if (c.verb == "publish_batch") {
        std::vector<std::string> keys, payloads;
        std::vector<bool> keyed;
        for (size_t i = 1; i < c.words.size(); ++i) {
            size_t colon = c.words[i].find(':');
            keyed.push_back(colon != std::string::npos);
            keys.push_back(colon == std::string::npos ? "" : c.words[i].substr(0, colon));
            payloads.push_back(colon == std::string::npos ? c.words[i]
                                                          : c.words[i].substr(colon + 1));
        }
        std::vector<mq_record> recs(payloads.size());
        for (size_t i = 0; i < recs.size(); ++i)
            recs[i] = {keyed[i] ? keys[i].data() : nullptr, keys[i].size(), payloads[i].data(),
                       payloads[i].size()};
        constexpr int32_t kUnwritten = INT32_MIN;
        std::vector<mq_publish_result> results(recs.size(), {kUnwritten, INT64_MIN});
        size_t published = SIZE_MAX;
        mq_status st = mq_topic_publish_batch(b, topic.c_str(), recs.data(), sizeof(mq_record), recs.size(), wait, cancel,
                                        results.data(), sizeof(mq_publish_result), &published);
        Outcome o = finish(st);
        if (published != SIZE_MAX) o.fields["published"] = std::to_string(published);
        std::vector<std::string> rs;
        for (const auto &r : results)
            if (r.partition != kUnwritten)
                rs.push_back(std::to_string(r.partition) + ":" + std::to_string(r.offset));
        if (rs.size() == results.size()) o.fields["results"] = join(rs, ",");
        return o;
    }
    // poll
    const std::string &group = c.words[1];
    int32_t partition = parse_i32(c.words[2], "partition");
    int64_t max = c.opt_int("max", 10);
    if (max < 0 || max > 100000) fail("max= must be 0..100000");
    std::vector<mq_message> msgs(static_cast<size_t>(std::max<int64_t>(max, 1)));
    size_t count = 0;
    mq_status st = mq_group_poll(b, topic.c_str(), group.c_str(), partition, msgs.data(), sizeof(mq_message),
                           static_cast<size_t>(max), wait, cancel, &count);
    Outcome o = finish(st);
    if (count > msgs.size()) fail("mq_group_poll reported " + std::to_string(count) + " messages");
    std::vector<Seen> got;
    for (size_t i = 0; i < count; ++i) got.push_back(seen(msgs[i]));
    describe_messages(got, partition, o);
    return o;
}

struct Background {
    Call call;
    mq_cancel *cancel = nullptr;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool awaited = false;
    Outcome outcome;
    std::string script_error;  // a malformed call found on the thread
};

// Calls an snprintf-style function (buf, cap, needed) with a buffer too small for most answers,
// then with the size it asked for, checking the truncation and size contract on the way.
template <class Fetch>
std::pair<mq_status, std::string> fetch_text(Fetch fetch) {
    std::vector<char> buf(16, '\x7f');
    size_t needed = 0;
    mq_status st = fetch(buf.data(), buf.size(), &needed);
    if (st != MQ_OK) return {st, ""};
    if (needed > buf.size()) {
        if (buf.back() != '\0') fail("truncated text is not NUL-terminated");
        buf.assign(needed, '\x7f');
        st = fetch(buf.data(), buf.size(), &needed);
        if (st != MQ_OK) return {st, ""};
    }
    auto nul = std::find(buf.begin(), buf.end(), '\0');
    if (nul == buf.end()) fail("text is not NUL-terminated");
    std::string text(buf.begin(), nul);
    if (text.size() + 1 != needed)
        fail("needed=" + std::to_string(needed) + " for a text of " + std::to_string(text.size()) +
             " bytes");
    return {st, text};
}

// ---- one scenario -------------------------------------------------------------------------------

class Scenario {
public:
    explicit Scenario(std::chrono::milliseconds wait_limit = kWaitLimit)
        : wait_limit_(wait_limit) {}
    ~Scenario() {
        try {
            teardown();
        } catch (const ScriptError &) {
            // Only reached after an earlier line failed; that failure is the one reported.
        }
    }

    // Runs the whole text; returns the first failure ("file:line: ..."), or "" if it passed.
    std::string run(const std::string &file, const std::string &text) {
        std::istringstream in(text);
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            try {
                auto toks = tokenize(line);
                if (toks.empty()) continue;
                execute_line(toks);
            } catch (const ScriptError &e) {
                return file + ":" + std::to_string(number) + ": " + line + "\n    " + e.what;
            }
        }
        if (!started_) return file + ": the scenario has no 'broker' line";
        try {
            teardown();
        } catch (const ScriptError &e) {
            return file + ": at the end: " + e.what;
        }
        return "";
    }

private:
    static int64_t manual_clock(void *user) {
        return static_cast<std::atomic<int64_t> *>(user)->load();
    }

    mq_broker *broker() {
        if (!b_) fail("no broker (the 'broker' line failed or is missing)");
        return b_;
    }

    void execute_line(const std::vector<Token> &toks) {
        const std::string &verb = toks[0].text;
        if (!started_ && verb != "broker") fail("the first command must be 'broker'");
        if (!toks[0].quoted && verb == "eventually") return eventually(toks);
        if (!toks[0].quoted && verb == "async") return start_background(toks);
        Call c = parse_call(toks);
        if (c.verb == "await") return await_background(c);
        check(c, execute(c));
    }

    void eventually(const std::vector<Token> &toks) {
        Call c = parse_call(toks, 1);
        if (!find_spec(c.verb)->check)
            fail("'eventually' takes a state check, not '" + c.verb + "'");
        auto deadline = Clock::now() + wait_limit_;
        for (;;) {
            try {
                check(c, execute(c));
                return;
            } catch (const ScriptError &e) {
                if (Clock::now() >= deadline)
                    fail("still not true after " + std::to_string(wait_limit_.count()) +
                         " ms: " + e.what);
            }
            // The pause between tries of a polled condition, not a synchronisation.
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    void start_background(const std::vector<Token> &toks) {
        if (toks.size() < 3 || toks[1].quoted || as_option(toks[1]) || is_separator(toks[1]))
            fail("usage: async NAME CALL...");
        const std::string &name = toks[1].text;
        if (name_taken(name)) fail("name '" + name + "' is taken");
        Call c = parse_call(toks, 2);
        if (!find_spec(c.verb)->background)
            fail("'async' runs publish, publish_batch, poll or member_poll");
        if (c.arrow) fail("put the expectations on the 'await' line");
        mq_broker *b = broker();
        mq_member *member = c.verb == "member_poll" ? open_member(c.words[0]).handle : nullptr;
        auto bg = std::make_unique<Background>();
        bg->call = std::move(c);
        if (mq_cancel_new(&bg->cancel) != MQ_OK) fail("mq_cancel_new failed");
        Background *raw = bg.get();
        bg->thread = std::thread([raw, b, member] {
            Outcome o;
            std::string err;
            try {
                o = run_blocking(b, raw->call, raw->cancel, member);
            } catch (const ScriptError &e) {
                err = e.what;
            }
            std::lock_guard lock(raw->mu);
            raw->outcome = std::move(o);
            raw->script_error = std::move(err);
            raw->done = true;
            raw->cv.notify_all();
        });
        background_.emplace(name, std::move(bg));
    }

    Background &background(const std::string &name) {
        auto it = background_.find(name);
        if (it == background_.end()) fail("no background call named '" + name + "'");
        return *it->second;
    }

    void await_background(const Call &line) {
        Background &bg = background(line.words[0]);
        if (bg.awaited) fail("'" + line.words[0] + "' was already awaited");
        bg.awaited = true;
        Call want = bg.call;
        want.arrow = line.arrow;
        want.status = line.status;
        want.want_words = line.want_words;
        want.want = line.want;
        for (const auto &[k, v] : want.want)
            if (k != "error" && !find_spec(want.verb)->results.count(k))
                fail("'" + want.verb + "' has no result '" + k + "'");
        normalize_integers(want);
        if (want.verb == "poll" || want.verb == "member_poll") validate_message_words(want);
        std::unique_lock lock(bg.mu);
        if (!bg.cv.wait_for(lock, wait_limit_, [&] { return bg.done; }))
            fail("'" + line.words[0] + "' still blocked after " +
                 std::to_string(wait_limit_.count()) + " ms");
        if (!bg.script_error.empty()) fail(bg.script_error);
        check(want, bg.outcome);
    }

    bool name_taken(const std::string &name) const {
        return pushes_.count(name) || background_.count(name) || members_.count(name);
    }

    MemberState &open_member(const std::string &name) {
        auto it = members_.find(name);
        if (it == members_.end()) fail("no member named '" + name + "'");
        if (!it->second->open) fail("member '" + name + "' is not open");
        return *it->second;
    }

    PushState &push_state(const std::string &name) {
        auto it = pushes_.find(name);
        if (it == pushes_.end()) fail("no push subscription named '" + name + "'");
        return *it->second;
    }

    Outcome execute(const Call &c) {
        const std::string &v = c.verb;
        if (v == "broker") return new_broker(c);
        if (v == "clock") {
            const std::string &d = c.words[0];
            size_t digits = d.find_first_not_of("0123456789", 1);
            if (d.size() < 2 || d[0] != '+' || digits == 1 || digits == std::string::npos)
                fail("usage: clock +N(s|ms|ns)");
            int64_t n = parse_int(d.substr(1, digits - 1), "clock");
            std::string unit = d.substr(digits);
            int64_t scale = unit == "s" ? 1'000'000'000 : unit == "ms" ? 1'000'000
                          : unit == "ns" ? 1 : 0;
            if (!scale) fail("clock units are s, ms or ns");
            now_.fetch_add(n * scale);
            return finish(MQ_OK);
        }
        if (v == "murmur2") {
            Outcome o = finish(MQ_OK);
            o.words.push_back(std::to_string(mq_key_murmur2(c.words[0].data(), c.words[0].size())));
            return o;
        }
        if (v == "partition_for_key") {
            int32_t p = -1;
            mq_status st = mq_key_partition(c.words[0].data(), c.words[0].size(),
                                                parse_i32(c.words[1], "partitions"), &p);
            Outcome o = finish(st);
            if (st == MQ_OK) o.words.push_back(std::to_string(p));
            return o;
        }
        if (v == "assign") {
            int32_t out[256];
            size_t count = SIZE_MAX;
            mq_status st = mq_assignment_round_robin(parse_i32(c.words[0], "partitions"),
                                                 parse_i32(c.words[1], "members"),
                                                 parse_i32(c.words[2], "member"), out, 256, &count);
            Outcome o = finish(st);
            if (st == MQ_OK) {
                if (count > 256) fail("assign: the runner handles at most 256 partitions");
                for (size_t i = 0; i < count; ++i) o.words.push_back(std::to_string(out[i]));
            }
            return o;
        }
        if (v == "calls") return calls(c);
        if (v == "cancel") {
            mq_cancel_trigger(background(c.words[0]).cancel);
            return finish(MQ_OK);
        }
        if (v == "close") return close_push(c);
        if (v == "handler_extend_lease") return finish(mq_handler_extend_lease());
        if (v == "handler_nack_delay")
            return finish(mq_handler_set_nack_delay(parse_int(c.words[0], "delay")));
        if (v == "rebalances") return rebalances(c);
        if (v == "leave") return leave_member(c);
        if (v == "assignment") return assignment(c);
        if (v == "member_ack")
            return finish(mq_member_ack(open_member(c.words[0]).handle,
                                        parse_i32(c.words[1], "partition"),
                                        parse_int(c.words[2], "offset")));
        if (v == "member_nack")
            return finish(mq_member_nack(open_member(c.words[0]).handle,
                                         parse_i32(c.words[1], "partition"),
                                         c.opt_int("delay", 0)));
        if (v == "member_extend_lease")
            return finish(mq_member_extend_lease(open_member(c.words[0]).handle,
                                                 parse_i32(c.words[1], "partition")));
        if (v == "member_poll") {
            validate_message_words(c);
            return run_blocking(broker(), c, nullptr, open_member(c.words[0]).handle);
        }

        mq_broker *b = broker();
        if (v == "publish" || v == "publish_batch" || v == "poll") {
            if (v == "poll") validate_message_words(c);
            return run_blocking(b, c, nullptr, nullptr);
        }
        if (v == "close_broker") return finish(mq_broker_close(b));
        if (v == "topics")
            return list([&](char *buf, size_t cap, size_t *needed) {
                return mq_topic_list(b, buf, cap, needed);
            });
        const char *topic = c.words[0].c_str();
        if (v == "topic") {
            mq_topic_config cfg;
            mq_topic_config_init(&cfg, sizeof cfg);
            if (c.has("partitions"))
                cfg.partitions = parse_i32(c.opts.at("partitions"), "partitions");
            cfg.capacity = c.opt_int("capacity", cfg.capacity);
            cfg.max_bytes = c.opt_int("max_bytes", cfg.max_bytes);
            cfg.ack_timeout_ms = c.opt_int("ack_timeout_ms", cfg.ack_timeout_ms);
            cfg.max_age_ms = c.opt_int("max_age_ms", cfg.max_age_ms);
            if (c.has("retention")) {
                const std::string &r = c.opts.at("retention");
                if (r != "until_acked" && r != "bounded")
                    fail("retention= is until_acked or bounded");
                cfg.retention = r == "bounded" ? MQ_RETAIN_BOUNDED : MQ_RETAIN_UNTIL_ACKED;
            }
            return finish(mq_topic_create(b, topic, &cfg));
        }
        if (v == "subscribe") {
            mq_group_options opts;
            mq_group_options_init(&opts, sizeof opts);
            if (c.has("start")) {
                const std::string &s = c.opts.at("start");
                if (s != "latest" && s != "earliest") fail("start= is latest or earliest");
                opts.start = s == "latest" ? MQ_START_LATEST : MQ_START_EARLIEST;
            }
            int64_t max_deliveries = c.opt_int("max_deliveries", 0);
            if (max_deliveries < 0 || max_deliveries > UINT32_MAX)
                fail("max_deliveries= is out of range");
            opts.max_deliveries = static_cast<uint32_t>(max_deliveries);
            if (c.has("dead_letter")) opts.dead_letter_topic = c.opts.at("dead_letter").c_str();
            return finish(mq_group_subscribe(b, topic, c.words[1].c_str(), &opts));
        }
        if (v == "unsubscribe") return finish(mq_group_unsubscribe(b, topic, c.words[1].c_str()));
        if (v == "groups")
            return list([&](char *buf, size_t cap, size_t *needed) {
                return mq_group_list(b, topic, buf, cap, needed);
            });
        if (v == "topic_info") {
            mq_topic_info ti{};
            mq_status st = mq_topic_get_info(b, topic, &ti, sizeof ti);
            Outcome o = finish(st);
            if (st == MQ_OK)
                o.fields = {{"partitions", std::to_string(ti.partitions)},
                            {"capacity", std::to_string(ti.capacity)},
                            {"max_bytes", std::to_string(ti.max_bytes)},
                            {"ack_timeout_ms", std::to_string(ti.ack_timeout_ms)}};
            return o;
        }
        if (v == "push") return start_push(b, c);
        if (v == "join") return join_member(b, c);
        if (v == "ack")
            return finish(mq_group_ack(b, topic, c.words[1].c_str(), parse_i32(c.words[2], "partition"),
                                 parse_int(c.words[3], "offset")));
        if (v == "nack") {
            int32_t p = parse_i32(c.words[2], "partition");
            if (!c.has("delay")) return finish(mq_group_nack(b, topic, c.words[1].c_str(), p, 0));
            return finish(mq_group_nack(b, topic, c.words[1].c_str(), p, c.opt_int("delay", 0)));
        }
        if (v == "lease_extend")
            return finish(mq_group_extend_lease(b, topic, c.words[1].c_str(),
                                          parse_i32(c.words[2], "partition")));
        if (v == "seek") {
            const std::string &to = c.words[3];
            int64_t offset = to == "earliest" ? MQ_OFFSET_EARLIEST
                             : to == "end"    ? MQ_OFFSET_END
                                              : parse_int(to, "offset");
            return finish(mq_group_seek(b, topic, c.words[1].c_str(), parse_i32(c.words[2], "partition"),
                                  offset));
        }
        if (v == "group_info") {
            mq_group_info gi{};
            mq_status st = mq_group_get_info(b, topic, c.words[1].c_str(),
                                             parse_i32(c.words[2], "partition"), &gi, sizeof gi);
            Outcome o = finish(st);
            if (st == MQ_OK)
                o.fields = {{"committed", std::to_string(gi.committed)},
                            {"next", std::to_string(gi.next)},
                            {"lag", std::to_string(gi.lag)},
                            {"in_flight", std::to_string(gi.in_flight)},
                            {"lost", std::to_string(gi.lost)},
                            {"dead_lettered", std::to_string(gi.dead_lettered)},
                            {"next_age_ms", gi.next_age_ns < 0 ? "-1" : ms_text(gi.next_age_ns)},
                            {"paused_until",
                             gi.paused_until_ns == 0 ? "0" : clock_text(gi.paused_until_ns)}};
            return o;
        }
        int32_t partition = parse_i32(c.words[1], "partition");
        if (v == "partition_info") {
            mq_partition_info pi{};
            mq_status st = mq_partition_get_info(b, topic, partition, &pi, sizeof pi);
            Outcome o = finish(st);
            if (st == MQ_OK)
                o.fields = {{"start", std::to_string(pi.start)},
                            {"end", std::to_string(pi.end)},
                            {"backlog", std::to_string(pi.backlog)},
                            {"capacity", std::to_string(pi.capacity)},
                            {"retained_bytes", std::to_string(pi.retained_bytes)},
                            {"max_bytes", std::to_string(pi.max_bytes)},
                            {"producer_waits", std::to_string(pi.producer_waits)},
                            {"max_backlog", std::to_string(pi.max_backlog)},
                            {"dropped", std::to_string(pi.dropped)},
                            {"oldest_timestamp", pi.oldest_timestamp_ns < 0
                                                     ? "-1"
                                                     : clock_text(pi.oldest_timestamp_ns)},
                            {"oldest_age_ms",
                             pi.oldest_age_ns < 0 ? "-1" : ms_text(pi.oldest_age_ns)}};
            return o;
        }
        if (v == "describe") {
            auto [st, text] = fetch_text([&](char *buf, size_t cap, size_t *needed) {
                return mq_partition_describe(b, topic, partition, buf, cap, needed);
            });
            Outcome o = finish(st);
            if (st == MQ_OK) o.words.push_back(text);
            return o;
        }
        fail("verb '" + v + "' is not implemented by this runner");
    }

    Outcome new_broker(const Call &c) {
        if (b_) fail("the scenario already has a broker");
        started_ = true;
        mq_broker_options opts;
        mq_broker_options_init(&opts, sizeof opts);
        opts.clock = &Scenario::manual_clock;
        opts.clock_user = &now_;
        if (c.has("max_message_bytes"))
            opts.max_message_bytes =
                static_cast<size_t>(parse_int(c.opts.at("max_message_bytes"), "max_message_bytes"));
        return finish(mq_broker_new(&opts, &b_));
    }

    // A list call (topics, groups): names, each followed by '\n'.
    template <class Fetch>
    Outcome list(Fetch fetch) {
        auto [st, text] = fetch_text(fetch);
        Outcome o = finish(st);
        if (st != MQ_OK) return o;
        if (!text.empty() && text.back() != '\n') fail("list: the last name lacks its '\\n'");
        std::istringstream in(text);
        for (std::string name; std::getline(in, name);) o.words.push_back(name);
        return o;
    }

    Outcome start_push(mq_broker *b, const Call &c) {
        const std::string &name = c.words[0];
        if (name_taken(name)) fail("name '" + name + "' is taken");
        auto st = std::make_unique<PushState>();
        for (const auto &p : split_list(c.opts.count("fail") ? c.opts.at("fail") : ""))
            ++st->failures_left[p];
        for (const auto &p : split_list(c.opts.count("extend") ? c.opts.at("extend") : ""))
            ++st->extends_left[p];
        if (c.has("nack_delay")) st->nack_delay = c.opt_int("nack_delay", 0);
        mq_subscription_options opts;
        mq_subscription_options_init(&opts, sizeof opts);
        if (c.has("prefetch")) opts.prefetch = parse_i32(c.opts.at("prefetch"), "prefetch");
        std::vector<int32_t> parts;
        if (c.has("partitions")) {
            for (const auto &p : split_list(c.opts.at("partitions")))
                parts.push_back(parse_i32(p, "partitions="));
            opts.partitions = parts.data();
            opts.partition_count = parts.size();
        }
        PushState *raw = st.get();
        pushes_.emplace(name, std::move(st));
        mq_status s = mq_subscription_open(b, c.words[1].c_str(), c.words[2].c_str(), &opts,
                                   &scripted_handler, raw, &count_free, &raw->sub);
        Outcome o = finish(s);
        int frees = raw->frees.load();
        if (s != MQ_OK && frees != 1)
            fail("a failed mq_subscription_open(" + o.status + ") called user_free " +
                 std::to_string(frees) + " times, not once");
        if (s == MQ_OK && frees != 0) fail("mq_subscription_open called user_free on success");
        raw->open = s == MQ_OK;
        return o;
    }

    Outcome close_push(const Call &c) {
        PushState &st = push_state(c.words[0]);
        if (!st.open) fail("'" + c.words[0] + "' is not open");
        mq_status s = mq_subscription_close(st.sub);
        Outcome o = finish(s);
        if (s == MQ_OK) {
            st.open = false;
            if (st.frees.load() != 1)
                fail("mq_subscription_close returned with user_free called " +
                     std::to_string(st.frees.load()) + " times, not once");
        }
        return o;
    }

    Outcome calls(const Call &c) {
        PushState &st = push_state(c.words[0]);
        int32_t partition = parse_i32(c.words[1], "partition");
        validate_message_words(c);
        std::vector<Seen> mine;
        std::vector<std::string> outcomes, delays, extends;
        {
            std::lock_guard lock(st.mu);
            for (size_t i = 0; i < st.calls.size(); ++i)
                if (st.calls[i].partition == partition) {
                    mine.push_back(st.calls[i]);
                    outcomes.push_back(st.failed[i] ? "fail" : "ok");
                    delays.push_back(st.delays[i]);
                    extends.push_back(st.extends[i]);
                }
        }
        Outcome o = finish(MQ_OK);
        describe_messages(mine, partition, o);
        o.fields.erase("timestamps");
        o.fields["outcomes"] = join(outcomes, ",");
        o.fields["delays"] = join(delays, ",");
        o.fields["extends"] = join(extends, ",");
        return o;
    }

    Outcome join_member(mq_broker *b, const Call &c) {
        const std::string &name = c.words[0];
        if (name_taken(name)) fail("name '" + name + "' is taken");
        auto st = std::make_unique<MemberState>();
        mq_member_options opts;
        mq_member_options_init(&opts, sizeof opts);
        if (c.has("id")) opts.member_id = c.opts.at("id").c_str();
        opts.session_timeout_ms = c.opt_int("session_timeout_ms", opts.session_timeout_ms);
        if (c.has("assignor")) {
            const std::string &a = c.opts.at("assignor");
            if (a == "all_to_last") opts.assignor = &assign_all_to_last;
            else if (a == "by_id") opts.assignor = &assign_by_id;
            else if (a == "none") opts.assignor = &assign_none;
            else if (a != "round_robin")
                fail("assignor= is round_robin, all_to_last, by_id or none");
        }
        opts.on_rebalance = &record_rebalance;
        opts.on_rebalance_user = st.get();
        MemberState *raw = st.get();
        members_.emplace(name, std::move(st));
        mq_status s = mq_member_join(b, c.words[1].c_str(), c.words[2].c_str(), &opts,
                                     &raw->handle);
        Outcome o = finish(s);
        if (s == MQ_OK) {
            raw->open = true;
            o.fields["id"] = mq_member_id(raw->handle);
        } else {
            std::lock_guard lock(raw->mu);
            if (!raw->rebalances.empty()) fail("a failed join called on_rebalance");
        }
        return o;
    }

    Outcome leave_member(const Call &c) {
        MemberState &st = open_member(c.words[0]);
        for (const auto &[name, bg] : background_)
            if (bg->call.verb == "member_poll" && bg->call.words[0] == c.words[0] && !bg->awaited)
                fail("'" + name + "' polls this member in the background: await it first");
        mq_status s = mq_member_close(st.handle);
        if (s == MQ_OK) st.open = false;
        return finish(s);
    }

    Outcome assignment(const Call &c) {
        MemberState &st = open_member(c.words[0]);
        constexpr size_t kCap = 1024;
        std::vector<int32_t> parts(kCap, INT32_MIN);
        int64_t generation = INT64_MIN;
        size_t count = SIZE_MAX;
        mq_status s = mq_member_get_assignment(st.handle, &generation, parts.data(), kCap, &count);
        Outcome o = finish(s);
        if (s != MQ_OK) return o;
        if (count > kCap) fail("assignment: the runner handles at most 1024 partitions");
        std::vector<std::string> owned;
        for (size_t i = 0; i < count; ++i) owned.push_back(std::to_string(parts[i]));
        o.fields["generation"] = std::to_string(generation);
        o.fields["partitions"] = join(owned, ",");
        return o;
    }

    Outcome rebalances(const Call &c) {
        auto it = members_.find(c.words[0]);
        if (it == members_.end()) fail("no member named '" + c.words[0] + "'");
        MemberState &st = *it->second;
        Outcome o = finish(MQ_OK);
        std::lock_guard lock(st.mu);
        for (const auto &[handle, generation] : st.rebalances) {
            if (handle != st.handle) fail("on_rebalance was given another member's handle");
            o.words.push_back(std::to_string(generation));
        }
        return o;
    }

    void teardown() {
        if (torn_down_) return;
        torn_down_ = true;
        // Close first so background calls still waiting return, then join them.
        if (b_) mq_broker_close(b_);
        std::vector<std::string> never_awaited;
        for (auto &[name, bg] : background_) {
            if (bg->thread.joinable()) bg->thread.join();
            if (!bg->awaited) never_awaited.push_back(name);
            mq_cancel_free(bg->cancel);
        }
        if (b_) mq_broker_free(b_);
        b_ = nullptr;
        if (!never_awaited.empty())
            fail("background calls never awaited: " + join(never_awaited, ", "));
        for (auto &[name, st] : pushes_)
            if (st->frees.load() != 1)
                fail("push '" + name + "': user_free called " + std::to_string(st->frees.load()) +
                     " times in all, not once");
    }

    std::chrono::milliseconds wait_limit_;
    mq_broker *b_ = nullptr;
    bool started_ = false;
    bool torn_down_ = false;
    std::atomic<int64_t> now_{kClockStartNs};
    std::map<std::string, std::unique_ptr<PushState>> pushes_;
    // Outlives the broker (freed by teardown in ~Scenario's body): freeing it frees the members
    // still open, whose leaving may call on_rebalance of the others.
    std::map<std::string, std::unique_ptr<MemberState>> members_;
    std::map<std::string, std::unique_ptr<Background>> background_;
};

std::string run_text(const std::string &file, const std::string &text,
                     std::chrono::milliseconds wait_limit = kWaitLimit) {
    Scenario s(wait_limit);
    return s.run(file, text);
}

// ---- the suite: one test per script -------------------------------------------------------------

std::vector<std::string> scripts() {
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(MQ_CONFORMANCE_DIR))
        if (e.is_regular_file() && e.path().extension() == ".mqs")
            names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, Script) {
    fs::path path = fs::path(MQ_CONFORMANCE_DIR) / GetParam();
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path;
    std::stringstream text;
    text << in.rdbuf();
    std::string failure = run_text(path.string(), text.str());
    if (!failure.empty()) ADD_FAILURE() << failure;
}

INSTANTIATE_TEST_SUITE_P(Scripts, Conformance, ::testing::ValuesIn(scripts()),
                         [](const ::testing::TestParamInfo<std::string> &param) {
                             std::string n = fs::path(param.param).stem().string();
                             for (char &ch : n)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n;
                         });

// The directory listing drives the suite, so a missing or renamed script must be noticed.
TEST(ConformanceSuite, HoldsTheSpecScenarios) {
    auto names = scripts();
    for (const char *needed : {"reference_trace.mqs", "push_step.mqs"})
        EXPECT_NE(std::find(names.begin(), names.end(), needed), names.end()) << needed;
}

// ---- the runner must catch what it claims to check ----------------------------------------------

TEST(ConformanceRunner, TokenizesQuotesCommentsAndOptions) {
    auto t = tokenize("  publish \"a b\" key=\"x # y\" \"\" p:\"q r\"  # trailing");
    ASSERT_EQ(t.size(), 5u);
    EXPECT_EQ(t[1].text, "a b");
    EXPECT_TRUE(t[1].quoted);
    EXPECT_EQ(t[2].text, "key=x # y");
    EXPECT_FALSE(t[2].quoted);
    EXPECT_EQ(t[3].text, "");
    EXPECT_TRUE(t[3].quoted);
    EXPECT_EQ(t[4].text, "p:q r");
    EXPECT_EQ(as_option(t[2])->second, "x # y");
    EXPECT_FALSE(as_option(Token{"key=x", true}).has_value());
    EXPECT_FALSE(as_option(Token{"0:a=b", false}).has_value());
    EXPECT_TRUE(tokenize("   # only a comment").empty());
    EXPECT_THROW(tokenize("describe \"open"), ScriptError);
}

// Each script must fail at its last line: a runner that let them pass would check nothing.
TEST(ConformanceRunner, ReportsEveryKindOfMismatchAtItsLine) {
    const std::string setup = "broker\ntopic t capacity=2\nsubscribe t g\n";
    const std::vector<std::string> last_lines = {
        "publish t a -> MQ_FULL",
        "publish t a -> partition=0 offset=5",
        "publish t a\npoll t g 0 -> 0:b",
        "publish t a\npoll t g 0 -> 0:a 1:a",
        "publish t a\npoll t g 0 -> 0:a deliveries=2",
        "publish t a\npoll t g 0 -> 0:a keys=\"\"",
        "publish t a key=k\npoll t g 0 -> 0:a keys=-",
        "publish t a\npoll t g 0 -> 0:a timestamps=1",
        "poll t g 0",
        "ack t g 0 3 -> MQ_ERR_NOT_IN_FLIGHT error=\"something else\"",
        "describe t 0 -> \"log empty\"",
        "partition_info t 0 -> capacity=3",
        "group_info t g 0 -> next=1",
        "topics -> t u",
        "groups t ->",
        "murmur2 21 -> 0",
        "assign 4 2 0 -> 0 1",
        "push s t g\nclose s\ncalls s 0 -> 0:x",
        "frobnicate t",
        "publish t a b c",
        "publish t a colour=red",
        "publish t a -> colour=red",
        "publish t a -> error=\"x\"",
        "poll t g 0 -> x",
        "async p poll t g 0 wait=-1",
        "async p poll t g 0 -> MQ_OK",
        "join m t g id=x -> id=y",
        "join m t g\nassignment m -> generation=2",
        "join m t g\nassignment m -> partitions=1",
        "join m t g\npublish t a\nmember_poll m -> 0/0:b",
        "join m t g\npublish t a\nmember_poll m -> 1/0:a",
        "join m t g\npublish t a\nmember_poll m -> 0/0:a deliveries=2",
        "join m t g\npublish t a\nmember_poll m -> 0:a",
        "join m t g\nrebalances m -> 1 2",
        "join m t g\nleave m\nmember_poll m",
        "join m t g\nmember_ack m 0 0",
        "join m t g\nmember_nack m 0 -> MQ_ERR_FENCED",
        "join m t g\nmember_extend_lease m 0",
        "join m t g\njoin m t h",
        "join m t g assignor=bogus",
        "async p member_poll m",
        "join m t g\nasync p member_poll m wait=-1\nleave m",
        "handler_nack_delay 1",
        "push s t g fail=a nack_delay=5 extend=a\npublish t a\n"
        "eventually group_info t g 0 -> paused_until=5\ncalls s 0 -> 0:a delays=-",
        "push s t g fail=a extend=a\npublish t a\neventually group_info t g 0 -> committed=1\n"
        "calls s 0 -> 0:a 0:a extends=-,-",
    };
    for (const auto &last : last_lines) {
        std::string text = setup + last + "\n";
        int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
        std::string failure = run_text("s.mqs", text);
        std::string at = "s.mqs:" + std::to_string(lines) + ":";
        bool at_end = last.rfind("async p poll t g 0 wait=-1", 0) == 0;  // reported at teardown
        if (at_end) at = "s.mqs: at the end:";
        EXPECT_EQ(failure.rfind(at, 0), 0u)
            << "script ending in [" << last << "] gave: " << failure;
    }
}

TEST(ConformanceRunner, EventuallyGivesUpOnAFalseCondition) {
    // The condition can never hold; a short limit keeps the test fast.
    std::string failure = run_text(
        "s.mqs", "broker\ntopic t\nsubscribe t g\neventually group_info t g 0 -> next=1\n",
        std::chrono::milliseconds(50));
    EXPECT_NE(failure.find("still not true"), std::string::npos) << failure;
}

}  // namespace
