#include "testee.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "script.h"

extern char **environ;

namespace mqc {

// ---- encoding ----------------------------------------------------------------------------------

namespace {
bool plain(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}
int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}
}  // namespace

std::string encode(std::string_view bytes) {
    static const char digits[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : bytes) {
        if (plain(c)) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
    return out;
}

std::optional<std::string> decode(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

std::string Request::line() const {
    std::string out = verb;
    for (const auto &[name, raw] : fields) out += " " + name + "=" + raw;
    return out;
}

const std::string *Reply::raw(const std::string &name) const {
    for (const auto &[n, v] : fields)
        if (n == name) return &v;
    return nullptr;
}

std::optional<std::string> Reply::bytes(const std::string &name) const {
    const std::string *r = raw(name);
    if (!r) return std::nullopt;
    auto d = decode(*r);
    if (!d) fail("testee: '" + name + "=" + *r + "' is not percent-encoded");
    return d;
}

std::optional<int64_t> Reply::integer(const std::string &name) const {
    const std::string *r = raw(name);
    if (!r) return std::nullopt;
    return parse_int(*r, "testee's " + name + "=");
}

Reply parse_reply(const std::string &line) {
    Reply r;
    r.text = line;
    std::vector<std::string> parts = split(line, ' ');
    if (parts.empty() || parts[0].empty()) fail("testee sent an empty line");
    r.status = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
        size_t eq = parts[i].find('=');
        if (eq == std::string::npos || eq == 0)
            fail("testee sent a field without a name: '" + parts[i] + "' in: " + line);
        r.fields.emplace_back(parts[i].substr(0, eq), parts[i].substr(eq + 1));
    }
    return r;
}

// ---- the child process ---------------------------------------------------------------------------

Testee::Testee(const std::string &command, bool trace) : trace_(trace) {
    // A testee that dies must fail the line it was running, not kill the runner.
    signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        fail(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    // exec: the shell becomes the testee, so the pid we wait for and kill is the testee's.
    std::string script = "exec " + command;
    const char *argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    int rc = posix_spawn(&pid_, "/bin/sh", &fa, nullptr, const_cast<char **>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
        pid_ = -1;
        fail("cannot start the testee '" + command + "': " + std::strerror(rc));
    }
}

Testee::~Testee() {
    if (pid_ > 0) reap(true);
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
}

std::optional<std::string> Testee::read_line(Clock::time_point deadline) {
    for (;;) {
        size_t nl = buffered_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buffered_.substr(0, nl);
            buffered_.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            return line;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{from_, POLLIN, 0};
        int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
        if (n < 0 && errno != EINTR) fail(std::string("poll: ") + std::strerror(errno));
        if (n <= 0) continue;
        char buf[65536];
        ssize_t got = read(from_, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            std::string why = reap(false);
            fail("the testee closed its output (" + why + ")");
        }
        buffered_.append(buf, static_cast<size_t>(got));
    }
}

Reply Testee::exchange(const Request &req, Clock::time_point deadline) {
    if (pid_ <= 0) fail("the testee is gone");
    std::string line = req.line();
    if (trace_) std::fprintf(stderr, "> %s\n", line.c_str());
    line += '\n';
    for (size_t done = 0; done < line.size();) {
        ssize_t n = write(to_, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::string why = reap(false);
            fail("the testee stopped reading its input (" + why + ")");
        }
        done += static_cast<size_t>(n);
    }
    std::optional<std::string> answer = read_line(deadline);
    if (!answer) {
        reap(true);
        fail("the testee did not answer '" + req.verb + "' in time (killed it)");
    }
    if (trace_) std::fprintf(stderr, "< %s\n", answer->c_str());
    Reply r = parse_reply(*answer);
    if (r.status == "testee_error") {
        auto detail = r.bytes("detail");
        fail("testee: " + (detail ? *detail : r.text));
    }
    if (r.status.rfind("MQ_", 0) != 0 && r.status != "pending")
        fail("testee sent '" + r.status + "' where a status was due, in: " + r.text);
    return r;
}

// Waits for the child (killing it first if asked) and says how it ended.
std::string Testee::reap(bool kill_first) {
    if (pid_ <= 0) return "already gone";
    if (kill_first) kill(pid_, SIGKILL);
    int status = 0;
    pid_t got;
    do got = waitpid(pid_, &status, 0);
    while (got < 0 && errno == EINTR);
    pid_ = -1;
    if (got < 0) return std::string("waitpid: ") + std::strerror(errno);
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return "ended oddly";
}

std::string Testee::finish(Clock::time_point deadline) {
    if (to_ >= 0) {
        close(to_);
        to_ = -1;
    }
    if (pid_ <= 0) return "";
    // The testee exits when its input ends; give it until the deadline.
    for (;;) {
        int status = 0;
        pid_t got = waitpid(pid_, &status, WNOHANG);
        if (got == pid_) {
            pid_ = -1;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
            if (WIFEXITED(status))
                return "exited with status " + std::to_string(WEXITSTATUS(status));
            if (WIFSIGNALED(status))
                return std::string("killed by signal ") + strsignal(WTERMSIG(status));
            return "ended oddly";
        }
        if (Clock::now() >= deadline) {
            reap(true);
            return "did not exit after its input ended (killed it)";
        }
        // The pause between tries of a polled condition (the child's exit), not a synchronisation.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace mqc
