#include "script.h"

#include <charconv>

namespace mqc {

void fail(std::string what) { throw ScriptError{std::move(what)}; }

// ---- lexing -----------------------------------------------------------------------------------

std::vector<Token> tokenize(const std::string &line) {
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

bool is_separator(const Token &t) { return !t.quoted && t.text == "->"; }

std::optional<std::pair<std::string, std::string>> as_option(const Token &t) {
    if (t.quoted) return std::nullopt;
    size_t eq = t.text.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    for (size_t i = 0; i < eq; ++i)
        if (!(t.text[i] == '_' || (t.text[i] >= 'a' && t.text[i] <= 'z'))) return std::nullopt;
    return std::make_pair(t.text.substr(0, eq), t.text.substr(eq + 1));
}

int64_t parse_int(const std::string &s, const std::string &what) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        fail(what + ": not an integer: '" + s + "'");
    return v;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    if (s.empty()) return out;
    size_t from = 0;
    for (;;) {
        size_t at = s.find(sep, from);
        out.push_back(s.substr(from, at - from));
        if (at == std::string::npos) return out;
        from = at + 1;
    }
}

std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
}

int64_t Call::opt_int(const std::string &o, int64_t dflt) const {
    auto it = opts.find(o);
    return it == opts.end() ? dflt : parse_int(it->second, o + "=");
}

// ---- the verb table ------------------------------------------------------------------------------

namespace {

const std::set<std::string> kMessageResults = {"deliveries", "keys",         "timestamps",
                                               "lost",       "dead_letters", "headers"};

std::set<std::string> messages_and(std::set<std::string> more) {
    more.insert(kMessageResults.begin(), kMessageResults.end());
    return more;
}

const std::vector<VerbSpec> &verb_specs() {
    static const std::vector<VerbSpec> specs = {
        {"broker_new", 0, 0, {"max_message_bytes"}, {}},
        {"clock", 1, 1, {}, {}, false},
        {"topic_create",
         1,
         1,
         {"partitions", "capacity", "max_bytes", "ack_timeout_ms", "retention", "max_age_ms"},
         {}},
        {"subscribe",
         2,
         2,
         {"start", "max_deliveries", "dead_letter", "share", "max_acquired"},
         {}},
        {"unsubscribe", 2, 2, {}, {}},
        {"topic_delete", 1, 1, {}, {}},
        {"broker_close", 0, 0, {}, {}},
        {"publish",
         2,
         2,
         {"key", "headers", "delay", "wait", "via"},
         {"partition", "offset"},
         true,
         false,
         true},
        {"publish_batch",
         2,
         -1,
         {"headers", "delays", "wait", "via"},
         {"published", "results"},
         true,
         false,
         true},
        {"poll", 3, 3, {"max", "wait", "via"}, kMessageResults, true, false, true},
        {"ack", 4, 4, {"via"}, {}},
        {"ack_poll", 4, 4, {"max", "wait", "via"}, kMessageResults, true, false, true},
        {"nack", 3, 3, {"delay"}, {}},
        {"extend_lease", 3, 3, {}, {}},
        {"settle", 6, 6, {"delay"}, {}},
        {"seek", 4, 4, {}, {}},
        {"partition_describe", 2, 2, {}, {}, true, true},
        {"topic_get_info",
         1,
         1,
         {},
         {"partitions", "capacity", "max_bytes", "ack_timeout_ms", "retention", "max_age_ms"},
         true,
         true},
        {"partition_get_info",
         2,
         2,
         {},
         {"start", "end", "backlog", "capacity", "retained_bytes", "max_bytes", "producer_waits",
          "max_backlog", "dropped", "oldest_timestamp", "oldest_age_ms"},
         true,
         true},
        {"group_get_info",
         3,
         3,
         {},
         {"committed", "next", "lag", "in_flight", "lost", "dead_lettered", "next_age_ms",
          "paused_until", "acquired", "available", "delayed", "rejected", "oldest_unsettled_age_ms",
          "delivered"},
         true,
         true},
        {"topic_list", 0, 0, {}, {}, true, true},
        {"group_list", 1, 1, {}, {}, true, true},
        {"calls", 2, 2, {}, messages_and({"outcomes", "delays", "extends"}), true, true},
        {"key_murmur2", 1, 1, {}, {}},
        {"key_partition", 2, 2, {}, {}},
        {"assignment_round_robin", 3, 3, {}, {}},
        {"subscription_open", 3, 3, {"prefetch", "partitions", "fail", "nack_delay", "extend"}, {}},
        {"subscription_close", 1, 1, {}, {}},
        {"handler_extend_lease", 0, 0, {}, {}},
        {"handler_set_nack_delay", 1, 1, {}, {}},
        {"publisher_open", 2, 2, {}, {}},
        {"publisher_close", 1, 1, {}, {}},
        {"cursor_open", 4, 4, {}, {}},
        {"cursor_close", 1, 1, {}, {}},
        {"member_join", 3, 3, {"id", "session_timeout_ms", "assignor"}, {"id"}},
        {"member_close", 1, 1, {}, {}},
        {"member_get_assignment", 1, 1, {}, {"generation", "partitions"}},
        {"member_poll", 1, 1, {"max", "wait"}, kMessageResults, true, false, true},
        {"member_ack", 3, 3, {}, {}},
        {"member_ack_poll", 3, 3, {"max", "wait"}, kMessageResults, true, false, true},
        {"member_nack", 2, 2, {"delay"}, {}},
        {"member_extend_lease", 2, 2, {}, {}},
        {"rebalances", 1, 1, {}, {}, true, true},
        {"await", 1, 1, {}, {}},  // its results are those of the awaited call
        {"cancel", 1, 1, {}, {}, false},
    };
    return specs;
}

// Every status of mq.h: an expected status outside this list is a typo, not a mismatch.
const std::set<std::string> kStatuses = {"MQ_OK",
                                         "MQ_TIMEOUT",
                                         "MQ_FULL",
                                         "MQ_CLOSED",
                                         "MQ_CANCELLED",
                                         "MQ_REBALANCED",
                                         "MQ_ERR_INVALID",
                                         "MQ_ERR_NO_TOPIC",
                                         "MQ_ERR_NO_GROUP",
                                         "MQ_ERR_EXISTS",
                                         "MQ_ERR_PARTITION",
                                         "MQ_ERR_TOO_LARGE",
                                         "MQ_ERR_NOT_IN_FLIGHT",
                                         "MQ_ERR_OWNED",
                                         "MQ_ERR_DEADLOCK",
                                         "MQ_ERR_NO_MEMORY",
                                         "MQ_ERR_INTERNAL",
                                         "MQ_ERR_OUT_OF_RANGE",
                                         "MQ_ERR_FENCED",
                                         "MQ_ERR_UNSUPPORTED",
                                         "MQ_ERR_BACKEND"};

// Result options that hold one integer; compared by value so "-0" and "0" cannot disagree.
const std::set<std::string> kIntegerResults = {
    "partition",     "offset",    "published", "capacity", "max_bytes",      "ack_timeout_ms",
    "max_age_ms",    "start",     "end",       "backlog",  "retained_bytes", "producer_waits",
    "max_backlog",   "committed", "next",      "lag",      "in_flight",      "dropped",
    "dead_lettered", "generation"};

bool is_message_verb(const std::string &v) {
    return v == "poll" || v == "member_poll" || v == "calls" || v == "ack_poll" ||
           v == "member_ack_poll";
}

// Rewrites expected integers in canonical form and checks the shape of expected message words
// (OFFSET:PAYLOAD, or PARTITION/OFFSET:PAYLOAD for a member poll), so a typo is a script error.
void normalize(Call &c) {
    for (auto &[k, v] : c.want) {
        bool integer = kIntegerResults.count(k) || (k == "lost" && !is_message_verb(c.verb)) ||
                       (k == "partitions" && c.verb == "topic_get_info");
        if (integer) v = std::to_string(parse_int(v, k + "="));
    }
    if (!is_message_verb(c.verb)) return;
    bool member = c.verb == "member_poll" || c.verb == "member_ack_poll";
    for (const auto &w : c.want_words) {
        size_t colon = w.find(':');
        size_t slash = member ? w.find('/') : std::string::npos;
        if (colon == std::string::npos || (member && (slash == std::string::npos || slash > colon)))
            fail(std::string("a message is ") + (member ? "PARTITION/" : "") +
                 "OFFSET:PAYLOAD, got '" + w + "'");
        size_t from = member ? slash + 1 : 0;
        if (member) parse_int(w.substr(0, slash), "message partition");
        parse_int(w.substr(from, colon - from), "message offset");
    }
}

void validate_results(const Call &c) {
    const VerbSpec *spec = find_spec(c.verb);
    for (const auto &[k, v] : c.want)
        if (k != "error" && !spec->results.count(k))
            fail("'" + c.verb + "' has no result '" + k + "'");
}

void parse_expectations(Call &c, const std::vector<Token> &toks, size_t from) {
    c.arrow = true;
    if (from < toks.size() && !toks[from].quoted && toks[from].text.rfind("MQ_", 0) == 0) {
        c.status = toks[from++].text;
        if (!kStatuses.count(c.status)) fail("no status is named '" + c.status + "'");
    }
    for (size_t i = from; i < toks.size(); ++i) {
        if (is_separator(toks[i])) fail("more than one '->'");
        if (auto o = as_option(toks[i])) {
            if (!c.want.emplace(o->first, o->second).second)
                fail("result '" + o->first + "' given twice");
        } else {
            c.want_words.push_back(toks[i].text);
        }
    }
    if (c.want.count("error") && c.status == "MQ_OK") fail("error= needs a failing status");
}

}  // namespace

const VerbSpec *find_spec(const std::string &verb) {
    for (const auto &s : verb_specs())
        if (s.verb == verb) return &s;
    return nullptr;
}

Call parse_call(const std::vector<Token> &toks, size_t from) {
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
              : spec->max_words < 0              ? " or more"
                                                 : " to " + std::to_string(spec->max_words)) +
             " positional arguments, got " + std::to_string(n));
    if (i < toks.size()) {
        if (!spec->arrow) fail("'" + c.verb + "' takes no '->'");
        parse_expectations(c, toks, i + 1);
        if (c.verb != "await") {
            validate_results(c);
            normalize(c);
        }
    }
    return c;
}

Call with_expectations_of(const Call &call, const Call &line) {
    Call want = call;
    want.arrow = line.arrow;
    want.status = line.status;
    want.want_words = line.want_words;
    want.want = line.want;
    validate_results(want);
    normalize(want);
    return want;
}

// ---- comparing ---------------------------------------------------------------------------------

namespace {
std::string in_quotes(const std::string &s) { return "\"" + s + "\""; }

bool ends_with(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

void check(const Call &c, const Outcome &o) {
    std::vector<std::string> diffs;
    if (o.status != c.status) diffs.push_back("status: expected " + c.status + ", got " + o.status);
    // A binding may put its own prefix before the library's text, never change it.
    if (auto it = c.want.find("error"); it != c.want.end() && !ends_with(o.error, it->second))
        diffs.push_back("error: expected a detail ending in " + in_quotes(it->second) + ", got " +
                        in_quotes(o.error));
    if (o.status.rfind("MQ_ERR_", 0) == 0 && o.error.empty())
        diffs.push_back(o.status + " came with an empty detail message");
    if (c.arrow && c.want_words != o.words)
        diffs.push_back("expected [" + join(c.want_words, " ") + "], got [" + join(o.words, " ") +
                        "]");
    for (const auto &[k, v] : c.want) {
        if (k == "error") continue;
        auto it = o.fields.find(k);
        if (it == o.fields.end()) diffs.push_back(k + ": expected " + v + ", not produced");
        else if (it->second != v) diffs.push_back(k + ": expected " + v + ", got " + it->second);
    }
    if (diffs.empty()) return;
    std::string msg = join(diffs, "; ");
    if (o.status != c.status && !o.error.empty()) msg += " (detail: " + in_quotes(o.error) + ")";
    fail(msg);
}

}  // namespace mqc
