// The conformance script language (tests/conformance/FORMAT.md): lexing a line, parsing it into
// a call with its expectations, and comparing what a call produced with them. Nothing here
// calls into a broker; test_conformance.cpp runs the calls.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mq.h"

namespace mq_conformance {

// A failure of the scenario at the current line: a mismatch or a malformed script.
struct ScriptError {
    std::string what;
};

[[noreturn]] inline void fail(std::string what) { throw ScriptError{std::move(what)}; }

// ---- lexing -----------------------------------------------------------------------------------

struct Token {
    std::string text;
    bool quoted = false;
};

inline std::vector<Token> tokenize(const std::string &line) {
    std::vector<Token> out;
    Token cur;
    bool in_token = false, quoting = false;
    auto flush = [&] {
        if (in_token) out.push_back(std::move(cur));
        cur = Token{};
        in_token = false;
    };
    for (char ch : line) {
        if (quoting) {
            if (ch == '"') quoting = false;
            else cur.text += ch;
            continue;
        }
        if (ch == '"') {
            if (!in_token) cur.quoted = true;
            in_token = quoting = true;
        } else if (ch == '#') {
            break;
        } else if (ch == ' ' || ch == '\t') {
            flush();
        } else {
            in_token = true;
            cur.text += ch;
        }
    }
    if (quoting) fail("unterminated quote");
    flush();
    return out;
}

inline bool is_separator(const Token &t) { return !t.quoted && t.text == "->"; }

// name=value with name a non-empty run of [a-z_], for unquoted tokens only.
inline std::optional<std::pair<std::string, std::string>> as_option(const Token &t) {
    if (t.quoted) return std::nullopt;
    size_t eq = t.text.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    for (size_t i = 0; i < eq; ++i)
        if (!(t.text[i] == '_' || (t.text[i] >= 'a' && t.text[i] <= 'z'))) return std::nullopt;
    return std::make_pair(t.text.substr(0, eq), t.text.substr(eq + 1));
}

inline int64_t parse_int(const std::string &s, const std::string &what) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        fail(what + ": not an integer: '" + s + "'");
    return v;
}

inline int32_t parse_i32(const std::string &s, const std::string &what) {
    int64_t v = parse_int(s, what);
    if (v < INT32_MIN || v > INT32_MAX) fail(what + ": out of 32-bit range: " + s);
    return static_cast<int32_t>(v);
}

inline std::vector<std::string> split_list(const std::string &s) {
    std::vector<std::string> out;
    if (s.empty()) return out;
    size_t from = 0;
    for (;;) {
        size_t comma = s.find(',', from);
        out.push_back(s.substr(from, comma - from));
        if (comma == std::string::npos) return out;
        from = comma + 1;
    }
}

inline std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
}

// ---- parsing a line into a call ----------------------------------------------------------------

struct VerbSpec {
    std::string_view verb;
    int min_words, max_words;  // positional arguments; -1 = no upper bound
    std::set<std::string> options;
    std::set<std::string> results;  // result options besides error=
    bool arrow = true;               // may take "->"
    bool check = false;              // reads state only: allowed under "eventually"
    bool background = false;         // allowed under "async"
};

inline const std::vector<VerbSpec> &verb_specs() {
    static const std::vector<VerbSpec> specs = {
        {"broker", 0, 0, {"max_message_bytes"}, {}},
        {"clock", 1, 1, {}, {}, false},
        {"topic", 1, 1,
         {"partitions", "capacity", "max_bytes", "ack_timeout_ms", "retention", "max_age_ms"}, {}},
        {"subscribe", 2, 2, {"start", "max_deliveries", "dead_letter"}, {}},
        {"unsubscribe", 2, 2, {}, {}},
        {"close_broker", 0, 0, {}, {}},
        {"publish", 2, 2, {"key", "wait"}, {"partition", "offset"}, true, false, true},
        {"publish_batch", 2, -1, {"wait"}, {"published", "results"}, true, false, true},
        {"poll", 3, 3, {"max", "wait"},
         {"deliveries", "keys", "timestamps", "lost", "dead_letters"}, true, false, true},
        {"ack", 4, 4, {}, {}},
        {"nack", 3, 3, {"delay"}, {}},
        {"lease_extend", 3, 3, {}, {}},
        {"seek", 4, 4, {}, {}},
        {"describe", 2, 2, {}, {}, true, true},
        {"topic_info", 1, 1, {}, {"partitions", "capacity", "max_bytes", "ack_timeout_ms"}, true,
         true},
        {"partition_info", 2, 2, {},
         {"start", "end", "backlog", "capacity", "retained_bytes", "max_bytes", "producer_waits",
          "max_backlog", "dropped", "oldest_timestamp", "oldest_age_ms"},
         true, true},
        {"group_info", 3, 3, {},
         {"committed", "next", "lag", "in_flight", "lost", "dead_lettered", "next_age_ms",
          "paused_until"},
         true, true},
        {"topics", 0, 0, {}, {}, true, true},
        {"groups", 1, 1, {}, {}, true, true},
        {"calls", 2, 2, {},
         {"deliveries", "keys", "outcomes", "lost", "dead_letters", "delays", "extends"}, true,
         true},
        {"murmur2", 1, 1, {}, {}},
        {"partition_for_key", 2, 2, {}, {}},
        {"assign", 3, 3, {}, {}},
        {"push", 3, 3, {"prefetch", "partitions", "fail", "nack_delay", "extend"}, {}},
        {"handler_extend_lease", 0, 0, {}, {}},
        {"handler_nack_delay", 1, 1, {}, {}},
        {"join", 3, 3, {"id", "session_timeout_ms", "assignor"}, {"id"}},
        {"leave", 1, 1, {}, {}},
        {"assignment", 1, 1, {}, {"generation", "partitions"}},
        {"member_poll", 1, 1, {"max", "wait"},
         {"deliveries", "keys", "timestamps", "lost", "dead_letters"}, true, false, true},
        {"member_ack", 3, 3, {}, {}},
        {"member_nack", 2, 2, {"delay"}, {}},
        {"member_extend_lease", 2, 2, {}, {}},
        {"rebalances", 1, 1, {}, {}, true, true},
        {"close", 1, 1, {}, {}},
        {"await", 1, 1, {}, {}},  // its results are those of the awaited call
        {"cancel", 1, 1, {}, {}, false},
    };
    return specs;
}

inline const VerbSpec *find_spec(const std::string &verb) {
    for (const auto &s : verb_specs())
        if (s.verb == verb) return &s;
    return nullptr;
}

// Result options that hold integers; compared by value so "-0" and "0" cannot disagree.
inline const std::set<std::string> kIntegerResults = {
    "partition", "offset", "published", "partitions", "capacity", "max_bytes", "ack_timeout_ms",
    "start", "end", "backlog", "retained_bytes", "producer_waits", "max_backlog", "committed",
    "next", "lag", "in_flight", "dropped", "lost", "dead_lettered", "generation"};

struct Call {
    std::string verb;
    std::vector<std::string> words;
    std::map<std::string, std::string> opts;
    bool arrow = false;
    std::string status = "MQ_OK";
    std::vector<std::string> want_words;
    std::map<std::string, std::string> want;

    bool has(const std::string &o) const { return opts.count(o) != 0; }
    int64_t opt_int(const std::string &o, int64_t dflt) const {
        auto it = opts.find(o);
        return it == opts.end() ? dflt : parse_int(it->second, o + "=");
    }
};

// Rewrites expected integer results in canonical form (a poll's `lost=` and an assignment's
// `partitions=` are lists, not one integer).
inline void normalize_integers(Call &c) {
    bool messages = c.verb == "poll" || c.verb == "member_poll" || c.verb == "calls";
    for (auto &[k, v] : c.want)
        if (kIntegerResults.count(k) && !(messages && k == "lost") &&
            !(c.verb == "assignment" && k == "partitions"))
            v = std::to_string(parse_int(v, k + "="));
}

// Splits tokens into arguments and expectations and validates them against the verb.
inline void parse_expectations(Call &c, const std::vector<Token> &toks, size_t from,
                        const VerbSpec &results_of) {
    c.arrow = true;
    if (from < toks.size() && !toks[from].quoted && toks[from].text.rfind("MQ_", 0) == 0)
        c.status = toks[from++].text;
    for (size_t i = from; i < toks.size(); ++i) {
        if (is_separator(toks[i])) fail("more than one '->'");
        if (auto o = as_option(toks[i])) {
            // await's results are those of the call it awaits, checked once that is known.
            if (o->first != "error" && results_of.verb != "await" &&
                !results_of.results.count(o->first))
                fail("'" + std::string(results_of.verb) + "' has no result '" + o->first + "'");
            if (!c.want.emplace(o->first, o->second).second)
                fail("result '" + o->first + "' given twice");
        } else {
            c.want_words.push_back(toks[i].text);
        }
    }
    if (c.want.count("error") && c.status == "MQ_OK") fail("error= needs a failing status");
    if (results_of.verb != "await") normalize_integers(c);
}

inline Call parse_call(const std::vector<Token> &toks, size_t from = 0) {
    if (from >= toks.size()) fail("missing verb");
    if (toks[from].quoted || as_option(toks[from]) || is_separator(toks[from]))
        fail("a line starts with a verb");
    Call c;
    c.verb = toks[from].text;
    const VerbSpec *spec = find_spec(c.verb);
    if (!spec) fail("unknown verb '" + c.verb + "'");
    size_t i = from + 1;
    for (; i < toks.size() && !is_separator(toks[i]); ++i) {
        if (auto o = as_option(toks[i])) {
            if (!spec->options.count(o->first))
                fail("'" + c.verb + "' has no option '" + o->first + "'");
            if (!c.opts.emplace(o->first, o->second).second)
                fail("option '" + o->first + "' given twice");
        } else {
            c.words.push_back(toks[i].text);
        }
    }
    int n = static_cast<int>(c.words.size());
    if (n < spec->min_words || (spec->max_words >= 0 && n > spec->max_words))
        fail("'" + c.verb + "' takes " + std::to_string(spec->min_words) +
             (spec->max_words == spec->min_words ? ""
              : spec->max_words < 0             ? " or more"
                                                : " to " + std::to_string(spec->max_words)) +
             " positional arguments, got " + std::to_string(n));
    if (i < toks.size()) {
        if (!spec->arrow) fail("'" + c.verb + "' takes no '->'");
        parse_expectations(c, toks, i + 1, *spec);
    }
    return c;
}

// ---- what a call produced ----------------------------------------------------------------------

struct Outcome {
    std::string status;
    std::string error;                          // mq_last_error() when status != MQ_OK
    std::vector<std::string> words;             // result words (none when the call failed)
    std::map<std::string, std::string> fields;  // result options
};

inline Outcome finish(mq_status st) {
    Outcome o;
    o.status = mq_status_name(st);
    if (st != MQ_OK) o.error = mq_last_error();
    return o;
}

inline std::string in_quotes(const std::string &s) { return "\"" + s + "\""; }

// Compares an outcome with the line's expectations; throws with every difference found.
inline void check(const Call &c, const Outcome &o) {
    std::vector<std::string> diffs;
    if (o.status != c.status) diffs.push_back("status: expected " + c.status + ", got " + o.status);
    if (auto it = c.want.find("error"); it != c.want.end() && it->second != o.error)
        diffs.push_back("error: expected " + in_quotes(it->second) + ", got " + in_quotes(o.error));
    if (o.status.rfind("MQ_ERR_", 0) == 0 && o.error.empty())
        diffs.push_back(o.status + " came with an empty mq_last_error()");
    if (c.arrow && c.want_words != o.words)
        diffs.push_back("expected [" + join(c.want_words, " ") + "], got [" + join(o.words, " ") +
                        "]");
    for (const auto &[k, v] : c.want) {
        if (k == "error") continue;
        auto it = o.fields.find(k);
        if (it == o.fields.end())
            diffs.push_back(k + ": expected " + v + ", not produced");
        else if (it->second != v)
            diffs.push_back(k + ": expected " + v + ", got " + it->second);
    }
    if (diffs.empty()) return;
    std::string msg = join(diffs, "; ");
    if (o.status != c.status && !o.error.empty())
        msg += " (mq_last_error: " + in_quotes(o.error) + ")";
    fail(msg);
}

}  // namespace mq_conformance
