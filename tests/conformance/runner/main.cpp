// mq_conformance: runs tests/conformance/*.mqs scenarios against a testee (FORMAT.md).
//
//   mq_conformance --testee "COMMAND LINE" [--expected-failures FILE] [--wait-limit-ms N]
//                  [--trace] FILE.mqs...
//   mq_conformance --testee "COMMAND LINE" --must-fail FILE   (the runner's own tests)
//
// Exit status 0 only if every file passes (or fails, when the expected-failures list names it).
// With MQ_CONFORMANCE_BACKEND=kafka in the environment (which the testee reads too), lines
// marked kafka_differs are run without comparing their answers (FORMAT.md).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenario.h"
#include "script.h"

namespace fs = std::filesystem;
using namespace mqc;

namespace {

int usage(const std::string &why) {
    std::cerr << "mq_conformance: " << why << "\n"
              << "usage: mq_conformance --testee \"COMMAND LINE\" [--expected-failures FILE]\n"
              << "                      [--wait-limit-ms N] [--trace] FILE.mqs...\n"
              << "       mq_conformance --testee \"COMMAND LINE\" --must-fail FILE\n";
    return 2;
}

bool read_file(const std::string &path, std::string &out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::stringstream text;
    text << in.rdbuf();
    out = text.str();
    return true;
}

std::string trim(const std::string &s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Expected failures: "SCENARIO REASON..." per line, '#' comments. Every name must be a script
// in `dir`, so a typo cannot hide a failure.
bool read_expected(const std::string &path, const fs::path &dir,
                   std::map<std::string, std::string> &out) {
    std::string text;
    if (!read_file(path, text)) {
        std::cerr << "mq_conformance: cannot read " << path << "\n";
        return false;
    }
    bool good = true;
    for (const Line &l : split_lines(text)) {
        std::string line = trim(l.text.substr(0, l.text.find('#')));
        if (line.empty()) continue;
        size_t sp = line.find_first_of(" \t");
        std::string name = line.substr(0, sp),
                    reason = sp == std::string::npos ? "" : trim(line.substr(sp));
        std::string where = path + ":" + std::to_string(l.number) + ": ";
        if (reason.empty()) std::cerr << where << "'" << name << "' needs a reason\n", good = false;
        else if (!fs::exists(dir / (name + ".mqs")))
            std::cerr << where << "no scenario " << (dir / (name + ".mqs")).string() << "\n",
                good = false;
        else if (!out.emplace(name, reason).second)
            std::cerr << where << "'" << name << "' is listed twice\n", good = false;
    }
    return good;
}

std::string indent(const std::string &report) {
    std::string out = "  ";
    for (char c : report) {
        out += c;
        if (c == '\n') out += "  ";
    }
    return out;
}

// Runs the scenarios; each passes, or fails as its expected-failures entry says.
int run_files(const std::vector<std::string> &files, const std::string &expected_path,
              const Options &options) {
    std::map<std::string, std::string> expected;
    if (!expected_path.empty() &&
        !read_expected(expected_path, fs::path(files[0]).parent_path(), expected))
        return 2;
    int bad = 0;
    for (const std::string &file : files) {
        std::string text;
        std::string name = fs::path(file).stem().string();
        std::string report = read_file(file, text) ? run_scenario(file, split_lines(text), options)
                                                   : file + ": cannot read it";
        auto listed = expected.find(name);
        if (listed == expected.end()) {
            if (report.empty()) {
                std::cout << "PASS " << name << "\n";
            } else {
                std::cout << "FAIL " << name << "\n" << indent(report) << "\n";
                ++bad;
            }
        } else if (report.empty()) {
            std::cout << "FAIL " << name << ": passed, but " << expected_path
                      << " lists it as failing (" << listed->second
                      << "): remove it from the list\n";
            ++bad;
        } else {
            std::cout << "XFAIL " << name << " (expected: " << listed->second << ")\n"
                      << indent(report) << "\n";
        }
    }
    std::cout << files.size() - bad << " of " << files.size() << " scenarios as expected\n";
    return bad ? 1 : 0;
}

// The runner's own tests: the lines before the first "===" are a preamble; each "=== last TEXT"
// or "=== end TEXT" starts a case that, run after the preamble, must fail at its last line (or
// at the end of the scenario) with a report containing TEXT.
int run_must_fail(const std::string &path, const Options &options) {
    std::string text;
    if (!read_file(path, text)) return usage("cannot read " + path);
    std::vector<Line> preamble;
    struct Case {
        Line header;
        bool at_end;
        std::string needle;
        std::vector<Line> lines;
    };
    std::vector<Case> cases;
    for (const Line &l : split_lines(text)) {
        if (l.text.rfind("=== ", 0) == 0) {
            std::string rest = l.text.substr(4);
            std::string where = rest.substr(0, rest.find(' '));
            std::string needle = trim(rest.substr(where.size()));
            if ((where != "last" && where != "end") || needle.empty())
                return usage(path + ":" + std::to_string(l.number) + ": '=== last|end TEXT'");
            cases.push_back({l, where == "end", needle, {}});
        } else if (cases.empty()) {
            preamble.push_back(l);
        } else if (!trim(l.text).empty() && trim(l.text)[0] != '#') {
            cases.back().lines.push_back(l);
        }
    }
    int bad = 0;
    for (const Case &c : cases) {
        std::vector<Line> lines = preamble;
        lines.insert(lines.end(), c.lines.begin(), c.lines.end());
        std::string report = run_scenario(path, lines, options);
        std::string at = c.at_end ? path + ": at the end:"
                                  : path + ":" + std::to_string(c.lines.back().number) + ":";
        bool good = report.rfind(at, 0) == 0 && report.find(c.needle) != std::string::npos;
        if (!good) {
            std::cout << "WRONG case at line " << c.header.number << " (" << c.header.text
                      << "): expected a failure starting '" << at << "' containing '" << c.needle
                      << "', got:\n"
                      << indent(report.empty() ? "(it passed)" : report) << "\n";
            ++bad;
        }
    }
    std::cout << cases.size() - bad << " of " << cases.size()
              << " must-fail cases failed as they must\n";
    return bad || cases.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options options;
    const char *backend = std::getenv("MQ_CONFORMANCE_BACKEND");
    options.kafka = backend && std::strcmp(backend, "kafka") == 0;
    std::string expected, must_fail;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        try {
            if (a == "--testee") options.testee = value();
            else if (a == "--expected-failures") expected = value();
            else if (a == "--must-fail") must_fail = value();
            else if (a == "--wait-limit-ms")
                options.wait_limit = std::chrono::milliseconds(std::stoll(value()));
            else if (a == "--trace") options.trace = true;
            else if (a.rfind("--", 0) == 0) return usage("unknown option " + a);
            else files.push_back(a);
        } catch (const std::exception &e) {
            return usage(e.what());
        }
    }
    if (options.testee.empty()) return usage("--testee is required");
    if (!must_fail.empty()) {
        if (!files.empty() || !expected.empty()) return usage("--must-fail runs alone");
        return run_must_fail(must_fail, options);
    }
    if (files.empty()) return usage("no scenario files given");
    return run_files(files, expected, options);
}
