// The conformance script language (tests/conformance/FORMAT.md): lexing a line, parsing it into
// a call with its expectations, and comparing what a call produced with them. Nothing here talks
// to a testee; scenario.cpp does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mqc {

// A failure of the scenario at the current line: a mismatch, a malformed script, or a testee
// that broke the protocol.
struct ScriptError {
    std::string what;
};

[[noreturn]] void fail(std::string what);

struct Token {
    std::string text;
    bool quoted = false;
};

std::vector<Token> tokenize(const std::string &line);
bool is_separator(const Token &t);
// name=value with name a non-empty run of [a-z_], for unquoted tokens only.
std::optional<std::pair<std::string, std::string>> as_option(const Token &t);

int64_t parse_int(const std::string &s, const std::string &what);
std::vector<std::string> split(const std::string &s, char sep);  // "" -> no elements
std::string join(const std::vector<std::string> &v, const char *sep);

struct VerbSpec {
    std::string_view verb;
    int min_words, max_words;  // positional arguments; -1 = no upper bound
    std::set<std::string> options;
    std::set<std::string> results;  // result options besides error=
    bool arrow = true;              // may take "->"
    bool check = false;             // reads state only: allowed under "eventually"
    bool background = false;        // allowed under "async"
};

const VerbSpec *find_spec(const std::string &verb);

struct Call {
    std::string verb;
    std::vector<std::string> words;
    std::map<std::string, std::string> opts;
    bool arrow = false;
    std::string status = "MQ_OK";
    std::vector<std::string> want_words;
    std::map<std::string, std::string> want;

    bool has(const std::string &o) const { return opts.count(o) != 0; }
    const std::string &opt(const std::string &o) const { return opts.at(o); }
    int64_t opt_int(const std::string &o, int64_t dflt) const;
};

// Parses the call that starts at toks[from] (its verb) and validates it against the verb table.
Call parse_call(const std::vector<Token> &toks, size_t from = 0);
// Validates `line`'s expectations (an await line) as results of `call`'s verb, and moves them in.
Call with_expectations_of(const Call &call, const Call &line);

// What a call produced, in the scripts' canonical text.
struct Outcome {
    std::string status;
    std::string error;                          // the library's detail when status != MQ_OK
    std::vector<std::string> words;             // result words (none when the call failed)
    std::map<std::string, std::string> fields;  // result options
};

// Compares an outcome with the line's expectations; throws with every difference found.
void check(const Call &c, const Outcome &o);

}  // namespace mqc
