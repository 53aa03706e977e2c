#include "scenario.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "script.h"
#include "testee.h"

namespace mqc {

namespace {

constexpr int64_t kClockStartNs = 1'000'000'000;

// ---- canonical text of what the testee reports ---------------------------------------------------

// A duration in the scripts' unit, milliseconds ("<n>ns" if not whole).
std::string ms_text(int64_t ns) {
    return ns % 1'000'000 == 0 ? std::to_string(ns / 1'000'000) : std::to_string(ns) + "ns";
}
// A broker-clock time as milliseconds since the manual clock's start.
std::string clock_text(int64_t ns) { return ms_text(ns - kClockStartNs); }

int64_t int32_arg(const std::string &s, const std::string &what) {
    int64_t v = parse_int(s, what);
    if (v < INT32_MIN || v > INT32_MAX) fail(what + ": out of 32-bit range: " + s);
    return v;
}

// One message as a poll handed it out or a handler received it.
struct Message {
    int64_t partition = 0, offset = 0, delivery_count = 0, timestamp_ns = 0, lost = 0;
    std::optional<std::string> payload, key;
    std::string dead_letter = "-";                   // topic/group/partition/offset/delivery_count
    std::vector<std::string> headers;                // name:value
    std::string outcome, delay = "-", extend = "-";  // handler calls only
};

std::string decoded(const std::string &raw, const char *what) {
    auto d = decode(raw);
    if (!d) fail(std::string("testee: ") + what + " '" + raw + "' is not percent-encoded");
    return *d;
}

std::vector<Message> messages_of(const Reply &r) {
    std::vector<Message> out;
    std::vector<std::set<std::string>> seen;
    for (const auto &[name, raw] : r.fields) {
        if (name == "message") {
            std::vector<std::string> po = split(raw, ':');
            if (po.size() != 2) fail("testee: message=" + raw + " is not PARTITION:OFFSET");
            out.emplace_back();
            seen.emplace_back();
            out.back().partition = parse_int(po[0], "testee's message partition");
            out.back().offset = parse_int(po[1], "testee's message offset");
            continue;
        }
        if (out.empty()) continue;  // fields of the reply itself (count=)
        Message &m = out.back();
        seen.back().insert(name);
        if (name == "payload") m.payload = decoded(raw, "payload");
        else if (name == "key") m.key = decoded(raw, "key");
        else if (name == "delivery_count") m.delivery_count = parse_int(raw, "delivery_count");
        else if (name == "timestamp_ns") m.timestamp_ns = parse_int(raw, "timestamp_ns");
        else if (name == "lost") m.lost = parse_int(raw, "lost");
        else if (name == "outcome") m.outcome = raw;
        else if (name == "nack_delay") m.delay = raw;
        else if (name == "extend_lease") m.extend = raw;
        else if (name == "header") {
            std::vector<std::string> nv = split(raw, ':');
            if (nv.size() != 2) fail("testee: header=" + raw + " is not NAME:VALUE");
            m.headers.push_back(decoded(nv[0], "header name") + ":" +
                                decoded(nv[1], "header value"));
        } else if (name == "dead_letter") {
            std::vector<std::string> d = split(raw, ':');
            if (d.size() != 5)
                fail("testee: dead_letter=" + raw + " is not TOPIC:GROUP:PARTITION:OFFSET:COUNT");
            m.dead_letter = decoded(d[0], "dead-letter topic") + "/" +
                            decoded(d[1], "dead-letter group") + "/" + d[2] + "/" + d[3] + "/" +
                            d[4];
        } else {
            fail("testee: a message has no field '" + name + "'");
        }
    }
    for (size_t i = 0; i < out.size(); ++i)
        for (const char *required : {"delivery_count", "timestamp_ns", "lost"})
            if (!seen[i].count(required))
                fail("testee: message " + std::to_string(i) + " lacks " + required + "=");
    return out;
}

constexpr int64_t kAnyPartition = -1;

// Words and list fields for messages expected on `partition` (OFFSET:PAYLOAD), or, with
// kAnyPartition, on partitions the words name (PARTITION/OFFSET:PAYLOAD, for member polls).
void describe_messages(const std::vector<Message> &msgs, int64_t partition, Outcome &o) {
    std::vector<std::string> deliveries, keys, stamps, lost, dead, headers;
    for (const auto &m : msgs) {
        std::string w = std::to_string(m.offset) + ":" + (m.payload ? *m.payload : "<no payload>");
        if (partition == kAnyPartition) w = std::to_string(m.partition) + "/" + w;
        else if (m.partition != partition)
            w += "<from partition " + std::to_string(m.partition) + ">";
        o.words.push_back(w);
        deliveries.push_back(std::to_string(m.delivery_count));
        keys.push_back(m.key ? *m.key : "-");
        stamps.push_back(clock_text(m.timestamp_ns));
        lost.push_back(std::to_string(m.lost));
        dead.push_back(m.dead_letter);
        headers.push_back(join(m.headers, ","));
    }
    o.fields["deliveries"] = join(deliveries, ",");
    o.fields["keys"] = join(keys, ",");
    o.fields["timestamps"] = join(stamps, ",");
    o.fields["lost"] = join(lost, ",");
    o.fields["dead_letters"] = join(dead, ",");
    o.fields["headers"] = join(headers, ";");
}

// ---- one scenario -------------------------------------------------------------------------------

class Scenario {
public:
    explicit Scenario(const Options &o) : o_(o), t_(o.testee, o.trace) {}

    std::string run(const std::string &file, const std::vector<Line> &lines) {
        try {
            Request hello{"hello", {}};
            hello.integer("protocol", 1);
            Reply r = ask(hello);
            if (r.status != "MQ_OK" || r.integer("protocol") != 1)
                fail("the testee does not speak protocol 1: " + r.text);
        } catch (const ScriptError &e) {
            return file + ": starting the testee: " + e.what + after_failure();
        }
        for (const Line &line : lines) {
            try {
                auto toks = tokenize(line.text);
                if (toks.empty()) continue;
                execute_line(toks);
            } catch (const ScriptError &e) {
                std::string report =
                    file + ":" + std::to_string(line.number) + ": " + line.text + "\n    " + e.what;
                return report + after_failure();
            }
        }
        try {
            if (!started_) fail("the scenario has no 'broker_new' line");
            teardown();
        } catch (const ScriptError &e) {
            return file + ": at the end: " + e.what + after_failure();
        }
        return "";
    }

private:
    // Tears the testee down after a failure; its own failure is then only a note.
    std::string after_failure() {
        std::string note;
        try {
            if (t_.alive()) ask(Request{"end", {}});
        } catch (const ScriptError &e) {
            note = "\n    (then, tearing down: " + e.what + ")";
        }
        std::string exit = t_.finish(Clock::now() + o_.wait_limit);
        if (!exit.empty()) note += "\n    (then the testee " + exit + ")";
        return note;
    }

    Reply ask(const Request &req, int64_t wait_ms = 0) {
        auto deadline =
            Clock::now() + o_.wait_limit + std::chrono::milliseconds(std::max<int64_t>(wait_ms, 0));
        return t_.exchange(req, deadline);
    }

    void execute_line(const std::vector<Token> &toks) {
        const std::string &verb = toks[0].text;
        if (!started_ && verb != "broker_new") fail("the first command must be 'broker_new'");
        if (!toks[0].quoted && verb == "eventually") return eventually(toks);
        if (!toks[0].quoted && (verb == "async" || verb == "start")) return start_background(toks);
        if (!toks[0].quoted && verb == "kafka_differs") return kafka_differs(toks);
        Call c = parse_call(toks);
        if (c.verb == "await") return await_background(c);
        check(c, run(c));
    }

    void eventually(const std::vector<Token> &toks) {
        Call c = parse_call(toks, 1);
        if (!find_spec(c.verb)->check)
            fail("'eventually' takes a state check, not '" + c.verb + "'");
        preconditions(c);  // a script error is not worth retrying
        auto deadline = Clock::now() + o_.wait_limit;
        for (;;) {
            try {
                check(c, run(c));
                return;
            } catch (const ScriptError &e) {
                if (!t_.alive()) throw;
                if (Clock::now() >= deadline)
                    fail("still not true after " + std::to_string(o_.wait_limit.count()) +
                         " ms: " + e.what);
            }
            // The pause between tries of a polled condition, not a synchronisation.
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    // kafka_differs REASON CHECK...: a state check whose answer differs on the Kafka backend
    // for a documented REASON (FORMAT.md). Elsewhere it is an ordinary line; on Kafka it is run
    // and its answer not compared. Only a state check: it changes nothing, so every line after
    // it holds alike on both.
    void kafka_differs(const std::vector<Token> &toks) {
        static const std::set<std::string> kReasons = {"trimming", "retained_bytes", "push_groups",
                                                       "lists"};
        if (toks.size() < 3 || toks[1].quoted || as_option(toks[1]) || is_separator(toks[1]))
            fail("usage: kafka_differs REASON CHECK...");
        if (!kReasons.count(toks[1].text))
            fail("kafka_differs: no reason is named '" + toks[1].text +
                 "' (trimming, retained_bytes, push_groups, lists)");
        Call c = parse_call(toks, 2);
        if (!find_spec(c.verb)->check)
            fail("'kafka_differs' takes a state check, not '" + c.verb + "'");
        const Outcome out = run(c);
        if (!o_.kafka) check(c, out);
    }

    // async NAME CALL: the blocking call on a thread of the testee's. start NAME CALL: the
    // call through the front door's asynchronous form (C: its *_async function; a binding: its
    // future, coroutine or parked goroutine), which holds no thread while it waits.
    void start_background(const std::vector<Token> &toks) {
        const std::string &how = toks[0].text;
        if (toks.size() < 3 || toks[1].quoted || as_option(toks[1]) || is_separator(toks[1]))
            fail("usage: " + how + " NAME CALL...");
        const std::string &name = toks[1].text;
        take_name(name);
        Call c = parse_call(toks, 2);
        if (how == "start" && !find_spec(c.verb)->background)
            fail(
                "'start' runs publish, publish_batch, poll, member_poll, ack_poll or "
                "member_ack_poll (the calls with an asynchronous form)");
        if (!find_spec(c.verb)->background)
            fail(
                "'async' runs publish, publish_batch, poll, member_poll, ack_poll or "
                "member_ack_poll");
        if (c.arrow) fail("put the expectations on the 'await' line");
        if (how == "start" && c.has("via"))
            fail("'start' cannot run a call with via= (the handles have no asynchronous forms)");
        need_broker();
        check_via(c);
        if (c.verb == "member_poll" || c.verb == "member_ack_poll") open_member(c.words[0]);
        Request req = request_for(c);
        req.bytes(how == "start" ? "start" : "async", name);
        Reply r = ask(req);
        if (r.status != "MQ_OK") fail("the testee did not start the call: " + r.text);
        background_[name] = Background{c, false};
    }

    void await_background(const Call &line) {
        auto it = background_.find(line.words[0]);
        if (it == background_.end()) fail("no background call named '" + line.words[0] + "'");
        Background &bg = it->second;
        if (bg.awaited) fail("'" + line.words[0] + "' was already awaited");
        bg.awaited = true;
        Call want = with_expectations_of(bg.call, line);
        Request req{"await", {}};
        req.bytes("call", line.words[0]);
        auto deadline = Clock::now() + o_.wait_limit;
        for (;;) {
            Reply r = ask(req);
            if (r.status != "pending") return check(want, outcome_of(bg.call, r));
            if (Clock::now() >= deadline)
                fail("'" + line.words[0] + "' still blocked after " +
                     std::to_string(o_.wait_limit.count()) + " ms");
            // The pause between tries of a polled condition, not a synchronisation.
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    void take_name(const std::string &name) {
        if (!names_.insert(name).second) fail("name '" + name + "' is taken");
    }

    void need_broker() {
        if (!broker_) fail("no broker (the 'broker_new' line failed)");
    }

    // A call with via=NAME: NAME is an open handle of the kind the verb takes, on the line's own
    // topic (and group and partition).
    void check_via(const Call &c) {
        if (!c.has("via")) return;
        const std::string &name = c.opt("via");
        auto it = handles_.find(name);
        if (it == handles_.end()) fail("no publisher or cursor named '" + name + "'");
        const Handle &h = it->second;
        const bool publishes = c.verb.rfind("publish", 0) == 0;
        if (h.cursor == publishes)
            fail("'" + name + "' is a " + (h.cursor ? "cursor" : "publisher") + "; " + c.verb +
                 " goes through a " + (publishes ? "publisher" : "cursor"));
        if (!h.open) fail("'" + name + "' is not open");
        std::vector<std::string> own{h.topic};
        if (h.cursor) own = {h.topic, h.group, h.partition};
        for (size_t i = 0; i < own.size(); ++i)
            if (c.words[i] != own[i])
                fail("'" + name + "' is on " + join(own, " ") + ", not on " +
                     join(std::vector<std::string>(c.words.begin(), c.words.begin() + own.size()),
                          " "));
    }

    void open_member(const std::string &name) {
        auto it = members_.find(name);
        if (it == members_.end()) fail("no member named '" + name + "'");
        if (!it->second.open) fail("member '" + name + "' is not open");
    }

    // Everything a verb needs besides its own arguments, checked before the request goes out.
    void preconditions(const Call &c) {
        const std::string &v = c.verb;
        if (v == "broker_new") {
            if (broker_) fail("the scenario already has a broker");
            started_ = true;
            return;
        }
        if (v == "clock" || v == "key_murmur2" || v == "key_partition" ||
            v == "assignment_round_robin" || v == "handler_extend_lease" ||
            v == "handler_set_nack_delay")
            return;
        if (v == "calls" || v == "subscription_close") {
            auto it = pushes_.find(c.words[0]);
            if (it == pushes_.end()) fail("no subscription named '" + c.words[0] + "'");
            if (v == "subscription_close" && !it->second) fail("'" + c.words[0] + "' is not open");
            return;
        }
        if (v == "rebalances") {
            if (!members_.count(c.words[0])) fail("no member named '" + c.words[0] + "'");
            return;
        }
        if (v == "cancel") {
            if (!background_.count(c.words[0]))
                fail("no background call named '" + c.words[0] + "'");
            return;
        }
        need_broker();
        if (v == "subscription_open" || v == "member_join" || v == "publisher_open" ||
            v == "cursor_open")
            take_name(c.words[0]);
        if (v == "publisher_close" || v == "cursor_close") {
            auto it = handles_.find(c.words[0]);
            if (it == handles_.end() || it->second.cursor != (v == "cursor_close"))
                fail("no " + v.substr(0, v.find('_')) + " named '" + c.words[0] + "'");
            if (!it->second.open) fail("'" + c.words[0] + "' is not open");
            for (const auto &[name, bg] : background_)
                if (bg.call.has("via") && bg.call.opt("via") == c.words[0] && !bg.awaited)
                    fail("'" + name +
                         "' calls through this handle in the background: await it "
                         "first");
        }
        check_via(c);
        if (v.rfind("member_", 0) == 0 && v != "member_join") open_member(c.words[0]);
        if (v == "member_close")
            for (const auto &[name, bg] : background_)
                if ((bg.call.verb == "member_poll" || bg.call.verb == "member_ack_poll") &&
                    bg.call.words[0] == c.words[0] && !bg.awaited)
                    fail("'" + name + "' polls this member in the background: await it first");
    }

    Outcome run(const Call &c) {
        preconditions(c);
        int64_t wait = c.has("wait") ? c.opt_int("wait", 0) : 0;
        Reply r = ask(request_for(c), wait);
        Outcome o = outcome_of(c, r);
        const std::string &v = c.verb;
        const std::string &name = c.words.empty() ? v : c.words[0];
        if (v == "broker_new") broker_ = o.status == "MQ_OK";
        if (v == "clock" && o.status != "MQ_OK")
            fail("the testee refused to move its clock: " + r.text);
        if (v == "subscription_open") {
            check_frees(r, o.status == "MQ_OK" ? 0 : 1,
                        "after mq_subscription_open returned " + o.status);
            pushes_[name] = o.status == "MQ_OK";
        }
        if (v == "subscription_close" && o.status == "MQ_OK") {
            check_frees(r, 1, "after mq_subscription_close returned");
            pushes_[name] = false;
        }
        if (v == "member_join") {
            members_[name] =
                Member{o.status == "MQ_OK", o.fields.count("id") ? o.fields["id"] : ""};
            if (o.status != "MQ_OK" && rebalance_reply(name).raw("rebalance"))
                fail("a failed join called on_rebalance");
        }
        if (v == "member_close" && o.status == "MQ_OK") members_[name].open = false;
        if (v == "publisher_open" || v == "cursor_open") {
            Handle h{v == "cursor_open", o.status == "MQ_OK", c.words[1], "", ""};
            if (h.cursor) {
                h.group = c.words[2];
                h.partition = c.words[3];
            }
            handles_[name] = h;
        }
        if ((v == "publisher_close" || v == "cursor_close") && o.status == "MQ_OK")
            handles_[name].open = false;
        return o;
    }

    void check_frees(const Reply &r, int64_t want, const std::string &when) {
        const std::string *raw = r.raw("frees");
        if (!raw) fail("testee: the reply lacks frees=");
        if (*raw == "-") return;  // the front door cannot observe the release (FORMAT.md)
        int64_t got = parse_int(*raw, "testee's frees=");
        if (got != want)
            fail("the handler's user data was released " + std::to_string(got) + " times " + when +
                 ", not " + std::to_string(want));
    }

    // The generations member `name`'s on_rebalance received; each call must have been given the
    // member's own handle (the testee reports the id of the handle it was given).
    Reply rebalance_reply(const std::string &name) {
        Request req{"rebalances", {}};
        req.bytes("member", name);
        Reply r = ask(req);
        if (r.status != "MQ_OK") fail("testee: rebalances failed: " + r.text);
        return r;
    }

    // The generations member `name`'s on_rebalance received; each call must have been given the
    // member's own handle (the testee reports the id of the handle it was given).
    std::vector<std::string> generations(const Reply &r, const std::string &name) {
        std::vector<std::string> gens;
        const Member &m = members_[name];
        for (const auto &[field, raw] : r.fields) {
            if (field != "rebalance") continue;
            std::vector<std::string> gi = split(raw, ':');
            if (gi.size() != 2) fail("testee: rebalance=" + raw + " is not GENERATION:MEMBER_ID");
            if (decoded(gi[1], "member id") != m.id)
                fail("on_rebalance was given the handle of '" + decoded(gi[1], "member id") +
                     "', not of '" + m.id + "'");
            gens.push_back(std::to_string(parse_int(gi[0], "testee's generation")));
        }
        return gens;
    }

    // ---- requests ---------------------------------------------------------------------------

    static void add_record(Request &r, const std::string &payload, const std::string *key,
                           const std::string &headers, const std::string &delay = "") {
        r.bytes("payload", payload);
        if (key) r.bytes("key", *key);
        for (const auto &h : split(headers, ',')) {
            size_t colon = h.find(':');
            if (colon == std::string::npos) fail("a header is NAME:VALUE, got '" + h + "'");
            r.add("header", encode(h.substr(0, colon)) + ":" + encode(h.substr(colon + 1)));
        }
        if (!delay.empty()) r.integer("delay_ms", parse_int(delay, "delay"));
    }

    static int64_t duration_ns(const std::string &d) {
        size_t digits = d.find_first_not_of("0123456789", 1);
        if (d.size() < 2 || d[0] != '+' || digits == 1 || digits == std::string::npos)
            fail("usage: clock +N(s|ms|ns)");
        int64_t n = parse_int(d.substr(1, digits - 1), "clock");
        std::string unit = d.substr(digits);
        int64_t scale = unit == "s"    ? 1'000'000'000
                        : unit == "ms" ? 1'000'000
                        : unit == "ns" ? 1
                                       : 0;
        if (!scale) fail("clock units are s, ms or ns");
        return n * scale;
    }

    static std::string one_of(const Call &c, const std::string &opt,
                              std::initializer_list<const char *> names) {
        const std::string &v = c.opt(opt);
        for (const char *n : names)
            if (v == n) return v;
        std::vector<std::string> all(names.begin(), names.end());
        fail(opt + "= is one of " + join(all, ", ") + ", got '" + v + "'");
    }

    static Request request_for(const Call &c) {
        const std::string &v = c.verb;
        const auto &w = c.words;
        Request r{v, {}};
        auto ints = [&](std::initializer_list<const char *> opts) {
            for (const char *o : opts)
                if (c.has(o)) r.integer(o, c.opt_int(o, 0));
        };
        auto topic_group_partition = [&] {
            r.bytes("topic", w[0])
                .bytes("group", w[1])
                .integer("partition", int32_arg(w[2], "partition"));
        };
        auto max_wait = [&] {
            int64_t max = c.opt_int("max", 10);
            if (max < 0 || max > 100000) fail("max= must be 0..100000");
            r.integer("max", max).integer("wait", c.opt_int("wait", 0));
        };
        if (v == "broker_new") ints({"max_message_bytes"});
        else if (v == "clock") r.integer("advance_ns", duration_ns(w[0]));
        else if (v == "topic_create") {
            r.bytes("topic", w[0]);
            if (c.has("partitions"))
                r.integer("partitions", int32_arg(c.opt("partitions"), "partitions"));
            ints({"capacity", "max_bytes", "ack_timeout_ms", "max_age_ms"});
            if (c.has("retention"))
                r.add("retention", one_of(c, "retention", {"until_acked", "bounded"}));
        } else if (v == "subscribe") {
            r.bytes("topic", w[0]).bytes("group", w[1]);
            if (c.has("start")) r.add("start", one_of(c, "start", {"latest", "earliest"}));
            if (c.has("max_deliveries")) {
                int64_t m = c.opt_int("max_deliveries", 0);
                if (m < 0 || m > UINT32_MAX) fail("max_deliveries= is out of range");
                r.integer("max_deliveries", m);
            }
            if (c.has("dead_letter")) r.bytes("dead_letter_topic", c.opt("dead_letter"));
            if (c.has("share")) r.add("share", one_of(c, "share", {"none", "all", "key"}));
            if (c.has("max_acquired")) {
                int64_t m = c.opt_int("max_acquired", 0);
                if (m < 0 || m > UINT32_MAX) fail("max_acquired= is out of range");
                r.integer("max_acquired", m);
            }
        } else if (v == "unsubscribe" || v == "group_list" || v == "topic_get_info" ||
                   v == "topic_delete") {
            r.bytes("topic", w[0]);
            if (v == "unsubscribe") r.bytes("group", w[1]);
        } else if (v == "publish") {
            r.bytes("topic", w[0]).integer("wait", c.opt_int("wait", 0));
            add_record(r, w[1], c.has("key") ? &c.opt("key") : nullptr,
                       c.has("headers") ? c.opt("headers") : "",
                       c.has("delay") ? c.opt("delay") : "");
        } else if (v == "publish_batch") {
            r.bytes("topic", w[0]).integer("wait", c.opt_int("wait", 0));
            std::vector<std::string> headers;
            if (c.has("headers")) {
                headers = split(c.opt("headers"), ';');
                if (c.opt("headers").empty()) headers.push_back("");
                if (headers.size() != w.size() - 1)
                    fail("headers= has " + std::to_string(headers.size()) +
                         " ';'-separated lists for " + std::to_string(w.size() - 1) + " records");
            }
            std::vector<std::string> delays;
            if (c.has("delays")) {
                delays = split(c.opt("delays"), ',');
                if (delays.size() != w.size() - 1)
                    fail("delays= has " + std::to_string(delays.size()) + " delays for " +
                         std::to_string(w.size() - 1) + " records");
            }
            for (size_t i = 1; i < w.size(); ++i) {
                size_t colon = w[i].find(':');
                std::string key = colon == std::string::npos ? "" : w[i].substr(0, colon);
                add_record(r, colon == std::string::npos ? w[i] : w[i].substr(colon + 1),
                           colon == std::string::npos ? nullptr : &key,
                           headers.empty() ? "" : headers[i - 1],
                           delays.empty() ? "" : delays[i - 1]);
            }
        } else if (v == "poll") {
            topic_group_partition();
            max_wait();
        } else if (v == "ack_poll") {
            topic_group_partition();
            r.integer("offset", parse_int(w[3], "offset"));
            max_wait();
        } else if (v == "ack" || v == "seek") {
            topic_group_partition();
            if (v == "ack") r.integer("offset", parse_int(w[3], "offset"));
            else if (w[3] == "earliest" || w[3] == "end") r.add("offset", w[3]);
            else r.integer("offset", parse_int(w[3], "offset"));
        } else if (v == "nack") {
            topic_group_partition();
            r.integer("delay_ms", c.opt_int("delay", 0));
        } else if (v == "settle") {
            topic_group_partition();
            r.integer("offset", parse_int(w[3], "offset"));
            const int64_t n = parse_int(w[4], "delivery count");
            if (n < 0 || n > UINT32_MAX) fail("the delivery count is out of range");
            r.integer("delivery_count", n);
            if (w[5] != "accept" && w[5] != "release" && w[5] != "reject" && w[5] != "renew")
                fail("settle's action is '" + w[5] + "'; use accept, release, reject or renew");
            r.add("action", w[5]);
            if (c.has("delay")) r.integer("delay_ms", c.opt_int("delay", 0));
        } else if (v == "extend_lease" || v == "group_get_info") {
            topic_group_partition();
        } else if (v == "partition_describe" || v == "partition_get_info") {
            r.bytes("topic", w[0]).integer("partition", int32_arg(w[1], "partition"));
        } else if (v == "calls" || v == "subscription_close") {
            r.bytes("subscription", w[0]);
        } else if (v == "key_murmur2") {
            r.bytes("key", w[0]);
        } else if (v == "key_partition") {
            r.bytes("key", w[0]).integer("partitions", int32_arg(w[1], "partitions"));
        } else if (v == "assignment_round_robin") {
            r.integer("partitions", int32_arg(w[0], "partitions"))
                .integer("members", int32_arg(w[1], "members"))
                .integer("member", int32_arg(w[2], "member"));
        } else if (v == "subscription_open") {
            r.bytes("subscription", w[0]).bytes("topic", w[1]).bytes("group", w[2]);
            if (c.has("prefetch")) r.integer("prefetch", int32_arg(c.opt("prefetch"), "prefetch"));
            if (c.has("partitions")) {
                std::vector<std::string> ps;
                for (const auto &p : split(c.opt("partitions"), ','))
                    ps.push_back(std::to_string(int32_arg(p, "partitions=")));
                r.add("partitions", join(ps, ","));
            }
            for (const char *o : {"fail", "extend"})
                if (c.has(o))
                    for (const auto &p : split(c.opt(o), ',')) r.bytes(o, p);
            if (c.has("nack_delay")) r.integer("nack_delay_ms", c.opt_int("nack_delay", 0));
        } else if (v == "handler_set_nack_delay") {
            r.integer("delay_ms", parse_int(w[0], "delay"));
        } else if (v == "member_join") {
            r.bytes("member", w[0]).bytes("topic", w[1]).bytes("group", w[2]);
            if (c.has("id")) r.bytes("id", c.opt("id"));
            ints({"session_timeout_ms"});
            if (c.has("assignor"))
                r.add("assignor",
                      one_of(c, "assignor", {"round_robin", "all_to_last", "by_id", "none"}));
        } else if (v == "member_poll") {
            r.bytes("member", w[0]);
            max_wait();
        } else if (v == "member_ack_poll") {
            r.bytes("member", w[0]).integer("partition", int32_arg(w[1], "partition"));
            r.integer("offset", parse_int(w[2], "offset"));
            max_wait();
        } else if (v.rfind("member_", 0) == 0) {  // close, get_assignment, ack, nack, extend_lease
            r.bytes("member", w[0]);
            if (w.size() > 1) r.integer("partition", int32_arg(w[1], "partition"));
            if (v == "member_ack") r.integer("offset", parse_int(w[2], "offset"));
            if (v == "member_nack") r.integer("delay_ms", c.opt_int("delay", 0));
        } else if (v == "publisher_open") {
            r.bytes("publisher", w[0]).bytes("topic", w[1]);
        } else if (v == "cursor_open") {
            r.bytes("cursor", w[0]).bytes("topic", w[1]).bytes("group", w[2]);
            r.integer("partition", int32_arg(w[3], "partition"));
        } else if (v == "publisher_close" || v == "cursor_close") {
            r.bytes(v.substr(0, v.find('_')), w[0]);
        } else if (v == "cancel") {
            r.bytes("call", w[0]);
        } else if (v == "rebalances") {
            r.bytes("member", w[0]);
        }
        // broker_close, topic_list, handler_extend_lease: no fields.
        if (c.has("via"))
            r.bytes(v.rfind("publish", 0) == 0 ? "publisher" : "cursor", c.opt("via"));
        return r;
    }

    // ---- replies ------------------------------------------------------------------------------

    static int64_t need_int(const Reply &r, const std::string &name) {
        auto v = r.integer(name);
        if (!v) fail("testee: the reply lacks " + name + "=");
        return *v;
    }

    Outcome outcome_of(const Call &c, const Reply &r) {
        Outcome o;
        o.status = r.status;
        if (r.status == "pending") fail("testee: 'pending' answers only await");
        if (o.status != "MQ_OK") o.error = r.bytes("error").value_or("");
        bool ok = o.status == "MQ_OK";
        const std::string &v = c.verb;
        auto copy_ints = [&](std::initializer_list<const char *> names) {
            for (const char *n : names) o.fields[n] = std::to_string(need_int(r, n));
        };
        if (v == "publish" && ok) {
            copy_ints({"partition", "offset"});
        } else if (v == "publish_batch") {
            if (auto p = r.integer("published")) o.fields["published"] = std::to_string(*p);
            std::vector<std::string> results;
            for (const auto &[name, raw] : r.fields)
                if (name == "result") results.push_back(raw);
            if (!results.empty()) o.fields["results"] = join(results, ",");
        } else if (v == "poll" || v == "member_poll" || v == "calls" || v == "ack_poll" ||
                   v == "member_ack_poll") {
            std::vector<Message> msgs = messages_of(r);
            if (v == "calls") {
                std::vector<Message> mine;
                int64_t p = int32_arg(c.words[1], "partition");
                for (const auto &m : msgs)
                    if (m.partition == p) mine.push_back(m);
                describe_messages(mine, p, o);
                std::vector<std::string> outcomes, delays, extends;
                for (const auto &m : mine) {
                    if (m.outcome != "ok" && m.outcome != "fail")
                        fail("testee: a handler call's outcome is 'ok' or 'fail', got '" +
                             m.outcome + "'");
                    outcomes.push_back(m.outcome);
                    delays.push_back(m.delay);
                    extends.push_back(m.extend);
                }
                o.fields["outcomes"] = join(outcomes, ",");
                o.fields["delays"] = join(delays, ",");
                o.fields["extends"] = join(extends, ",");
                return o;
            }
            int64_t count = need_int(r, "count");
            if (count != static_cast<int64_t>(msgs.size()))
                fail("testee reported count=" + std::to_string(count) + " with " +
                     std::to_string(msgs.size()) + " messages");
            if (count > c.opt_int("max", 10))
                fail(v + " handed out " + std::to_string(count) + " messages, more than max");
            if (!ok && count != 0)
                fail(v + " returned " + o.status + " with " + std::to_string(count) + " messages");
            const bool one_partition = v == "poll" || v == "ack_poll";
            describe_messages(
                msgs, one_partition ? int32_arg(c.words[2], "partition") : kAnyPartition, o);
        } else if (v == "partition_describe" && ok) {
            auto text = r.bytes("text");
            if (!text) fail("testee: the reply lacks text=");
            o.words.push_back(*text);
        } else if (v == "topic_get_info" && ok) {
            copy_ints({"partitions", "capacity", "max_bytes", "ack_timeout_ms", "max_age_ms"});
            const std::string *ret = r.raw("retention");
            if (!ret) fail("testee: the reply lacks retention=");
            o.fields["retention"] = *ret;
        } else if (v == "partition_get_info" && ok) {
            copy_ints({"start", "end", "backlog", "capacity", "retained_bytes", "max_bytes",
                       "producer_waits", "max_backlog", "dropped"});
            int64_t ts = need_int(r, "oldest_timestamp_ns"), age = need_int(r, "oldest_age_ns");
            o.fields["oldest_timestamp"] = ts < 0 ? "-1" : clock_text(ts);
            o.fields["oldest_age_ms"] = age < 0 ? "-1" : ms_text(age);
        } else if (v == "group_get_info" && ok) {
            copy_ints({"committed", "next", "lag", "in_flight", "lost", "dead_lettered"});
            int64_t age = need_int(r, "next_age_ns"), paused = need_int(r, "paused_until_ns");
            o.fields["next_age_ms"] = age < 0 ? "-1" : ms_text(age);
            o.fields["paused_until"] = paused == 0 ? "0" : clock_text(paused);
            copy_ints({"acquired", "available", "delayed", "rejected"});
            int64_t oldest = need_int(r, "oldest_unsettled_age_ns");
            o.fields["oldest_unsettled_age_ms"] = oldest < 0 ? "-1" : ms_text(oldest);
            const std::string *d = r.raw("delivered");
            if (!d) fail("testee: the reply lacks delivered=");
            o.fields["delivered"] = *d;
        } else if ((v == "topic_list" || v == "group_list") && ok) {
            for (const auto &[name, raw] : r.fields)
                if (name == "name") o.words.push_back(decoded(raw, "name"));
        } else if (v == "key_murmur2" && ok) {
            o.words.push_back(std::to_string(need_int(r, "hash")));
        } else if (v == "key_partition" && ok) {
            o.words.push_back(std::to_string(need_int(r, "partition")));
        } else if (v == "assignment_round_robin" && ok) {
            const std::string *owned = r.raw("owned");
            if (!owned) fail("testee: the reply lacks owned=");
            for (const auto &p : split(*owned, ','))
                o.words.push_back(std::to_string(parse_int(p, "testee's owned=")));
        } else if (v == "member_join" && ok) {
            auto id = r.bytes("id");
            if (!id) fail("testee: the reply lacks id=");
            o.fields["id"] = *id;
        } else if (v == "member_get_assignment" && ok) {
            o.fields["generation"] = std::to_string(need_int(r, "generation"));
            const std::string *ps = r.raw("partitions");
            if (!ps) fail("testee: the reply lacks partitions=");
            o.fields["partitions"] = *ps;
        } else if (v == "rebalances" && ok) {
            o.words = generations(r, c.words[0]);
        }
        return o;
    }

    void teardown() {
        std::vector<std::string> never_awaited;
        for (const auto &[name, bg] : background_)
            if (!bg.awaited) never_awaited.push_back(name);
        if (!never_awaited.empty())
            fail("background calls never awaited: " + join(never_awaited, ", "));
        // The testee closes the broker (waking what still waits), joins its background calls,
        // frees the broker and releases the subscriptions and members left open.
        Reply r = ask(Request{"end", {}});
        if (r.status != "MQ_OK") fail("testee: end failed: " + r.text);
        for (const auto &[name, open] : pushes_) {
            Request req{"frees", {}};
            req.bytes("subscription", name);
            check_frees(ask(req), 1, "in all ('" + name + "')");
        }
        std::string exit = t_.finish(Clock::now() + o_.wait_limit);
        if (!exit.empty()) fail("the testee " + exit);
    }

    struct Member {
        bool open = false;
        std::string id;
    };
    struct Background {
        Call call;
        bool awaited = false;
    };
    struct Handle {
        bool cursor;  // else a publisher
        bool open;
        std::string topic, group, partition;  // as the open line wrote them
    };

    Options o_;
    Testee t_;
    bool started_ = false, broker_ = false;
    std::set<std::string> names_;
    std::map<std::string, bool> pushes_;  // name -> open
    std::map<std::string, Member> members_;
    std::map<std::string, Background> background_;
    std::map<std::string, Handle> handles_;
};

}  // namespace

std::vector<Line> split_lines(const std::string &text) {
    std::vector<Line> lines;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back({n, line});
    }
    return lines;
}

std::string run_scenario(const std::string &file, const std::vector<Line> &lines,
                         const Options &options) {
    try {
        Scenario s(options);
        return s.run(file, lines);
    } catch (const ScriptError &e) {  // the testee could not be started
        return file + ": " + e.what;
    }
}

}  // namespace mqc
