// Runs one scenario against a fresh testee process.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace mqc {

struct Line {
    int number;
    std::string text;
};

struct Options {
    std::string testee;                           // the command line that starts the testee
    std::chrono::milliseconds wait_limit{10000};  // eventually, await and every reply
    bool trace = false;                           // print the protocol's lines to stderr
    // The testee's broker is on a Kafka cluster (MQ_CONFORMANCE_BACKEND=kafka): lines marked
    // kafka_differs are run there without comparing their answers.
    bool kafka = false;
};

std::vector<Line> split_lines(const std::string &text);

// Runs the lines as one scenario; returns "" when it passed, else the report of its first
// failure ("file:line: the line\n    what went wrong").
std::string run_scenario(const std::string &file, const std::vector<Line> &lines,
                         const Options &options);

}  // namespace mqc
