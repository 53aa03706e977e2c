// The runner's side of the testee protocol (FORMAT.md, "The testee protocol"): the child
// process, one request line out and one reply line back, each within a deadline, and the
// encoding of byte strings.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mqc {

using Clock = std::chrono::steady_clock;

// Every byte outside [A-Za-z0-9._-] as %XX (upper-case hex); the rest as itself.
std::string encode(std::string_view bytes);
// The inverse; nullopt if a '%' is not followed by two hex digits.
std::optional<std::string> decode(std::string_view text);

// A request: VERB name=value ... (values already encoded where they are byte strings).
struct Request {
    std::string verb;
    std::vector<std::pair<std::string, std::string>> fields;

    Request &add(std::string name, std::string raw) {
        fields.emplace_back(std::move(name), std::move(raw));
        return *this;
    }
    Request &bytes(std::string name, std::string_view value) {
        return add(std::move(name), encode(value));
    }
    Request &integer(std::string name, int64_t v) {
        return add(std::move(name), std::to_string(v));
    }
    std::string line() const;
};

// A reply: STATUS name=value ...; fields keep their order (messages are runs of fields).
struct Reply {
    std::string status;
    std::vector<std::pair<std::string, std::string>> fields;  // raw (still encoded)
    std::string text;                                         // the line, for reports

    const std::string *raw(const std::string &name) const;
    std::optional<std::string> bytes(const std::string &name) const;  // decoded
    std::optional<int64_t> integer(const std::string &name) const;
};
Reply parse_reply(const std::string &line);

class Testee {
public:
    explicit Testee(const std::string &command, bool trace);
    ~Testee();
    Testee(const Testee &) = delete;
    Testee &operator=(const Testee &) = delete;

    // Sends the request and waits for its reply until `deadline`; fails (ScriptError) when the
    // testee dies, hangs, or answers with something that is not a reply line.
    Reply exchange(const Request &req, Clock::time_point deadline);
    // Closes the testee's stdin and waits for it to exit until `deadline` (then kills it).
    // Returns a problem to report ("" when it exited with status 0).
    std::string finish(Clock::time_point deadline);
    bool alive() const { return pid_ > 0; }

private:
    std::optional<std::string> read_line(Clock::time_point deadline);
    std::string reap(bool kill_first);

    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
    std::string buffered_;
    bool trace_;
};

}  // namespace mqc
