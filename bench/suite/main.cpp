// mq_bench_suite: mq's workloads 1-7 beside the peers a user would otherwise reach for, in one
// process, interleaved: each round runs every benchmark once, so a burst of load from elsewhere
// on the machine hits mq and its peers alike. Each figure is the median over rounds; each ratio
// is the median over rounds of (mq / peer) within a round.
//
//   mq_bench_suite [--runs N] [--scale F] [--out DIR]
//
// --out DIR writes tables.md (Markdown), throughput.dat and latency.dat (for the chart).
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "benches.h"
#include "mq.h"

namespace suite {
namespace {

struct Row {
    std::string id, label, unit;
    std::vector<double> samples;  // one per round
};

struct Suite {
    std::vector<Row> rows;
    Row &row(const std::string &id, const std::string &label, const std::string &unit) {
        for (auto &r : rows)
            if (r.id == id) return r;
        rows.push_back({id, label, unit, {}});
        return rows.back();
    }
    const Row *find(const std::string &id) const {
        for (auto &r : rows)
            if (r.id == id) return &r;
        return nullptr;
    }
    // Median over rounds of a / b, each pair from the same round.
    double ratio(const std::string &a, const std::string &b) const {
        const Row *x = find(a), *y = find(b);
        if (!x || !y || x->samples.size() != y->samples.size() || x->samples.empty()) return NAN;
        std::vector<double> r;
        for (size_t i = 0; i < x->samples.size(); ++i)
            if (y->samples[i] > 0) r.push_back(x->samples[i] / y->samples[i]);
        return r.empty() ? NAN : median(r);
    }
    double med(const std::string &id) const {
        const Row *r = find(id);
        return r ? median(r->samples) : NAN;
    }
};

struct Counts {
    uint64_t ring, mutex_single, mutex_batch, zmq, mq_batch, mq_single, mq_fanout, mq_stress,
        mq_push, latency, pingpong_spin, pingpong_block, retained;
};

Counts counts_for(double scale) {
    auto s = [&](double n) { return std::max<uint64_t>(uint64_t(n * scale), 640); };
    // About 0.2-1 s per benchmark on a 2-core machine: long enough to swamp thread start-up,
    // short enough for 5 interleaved rounds of everything in a few minutes.
    return {s(6e7), s(6e6), s(2e7), s(6e6), s(1e7), s(3e6), s(6e6),
            s(1e6), s(6e6), s(2e4), s(2e5), s(1e4), s(1e6)};
}

constexpr int64_t kLatencyInterval = 50000;
constexpr int64_t kSpin =
    20000;  // spin_ns of the spinning variants of workloads 1 and 2  // 20,000 msg/s: far below every queue's limit

std::string fmt_rate(double v) {
    char b[32];
    if (std::isnan(v)) return "—";
    if (v >= 1e6) std::snprintf(b, sizeof b, "%.2f M/s", v / 1e6);
    else std::snprintf(b, sizeof b, "%.0f k/s", v / 1e3);
    return b;
}
std::string fmt(double v, const char *f) {
    if (std::isnan(v)) return "—";
    char b[32];
    std::snprintf(b, sizeof b, f, v);
    return b;
}
std::string fmt_value(const Row &r, double v) {
    return r.unit == "msg/s" ? fmt_rate(v) : r.unit == "us" ? fmt(v, "%.1f µs") : fmt(v, "%.1f");
}

// The memory workload runs in a child process: peak RSS is per process, and the throughput
// benchmarks before it would otherwise have set it.
MemoryResult memory_in_child(uint64_t retained) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) fail("mq memory", "cannot find /proc/self/exe");
    self[len] = '\0';
    std::string cmd = std::string("'") + self + "' --memory-child " + std::to_string(retained);
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) fail("mq memory", "cannot start the child process");
    MemoryResult r;
    int got =
        std::fscanf(p, "%lf %lf %lf %lf %lf %lf %lf", &r.overhead_bytes, &r.rss_overhead_bytes,
                    &r.peak_rss_mib, &r.allocs_per_msg_batch, &r.allocs_per_msg_single,
                    &r.allocs_per_msg_push, &r.deque_string_overhead_bytes);
    int rc = pclose(p);
    if (got != 7 || rc != 0) fail("mq memory", "the child process failed (its error is above)");
    return r;
}

void add_latency(Suite &s, const std::string &id, const std::string &label, const Latency &l) {
    s.row(id + ".p50", label + " p50", "us").samples.push_back(l.p50_us);
    s.row(id + ".p99", label + " p99", "us").samples.push_back(l.p99_us);
    s.row(id + ".p999", label + " p99.9", "us").samples.push_back(l.p999_us);
}

// --only: a comma-separated list of row ids (e.g. "w6,ppb"); empty runs everything.
std::vector<std::string> g_only;
bool selected(const char *id) {
    if (g_only.empty()) return true;
    for (auto &o : g_only)
        if (o == id) return true;
    return false;
}

// Voluntary + involuntary context switches of the whole process so far (every thread).
int64_t context_switches() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return int64_t(u.ru_nvcsw) + int64_t(u.ru_nivcsw);
}

void one_round(Suite &s, const Counts &c, int round, int rounds) {
    auto step = [&](const char *id, const char *what, const std::function<void()> &fn) {
        if (!selected(id)) return;
        std::printf("  round %d/%d: %-44s", round, rounds, what);
        std::fflush(stdout);
        double t0 = now_s();
        fn();
        std::printf(" %.2f s\n", now_s() - t0);
    };
    auto tput = [&](const char *id, const char *label, const std::function<double()> &fn) {
        step(id, label, [&] { s.row(id, label, "msg/s").samples.push_back(fn()); });
    };
    // The same, also counting context switches per message (rows 2, 4, 5 and their peers).
    auto tput_cs = [&](const char *id, const char *label, uint64_t n,
                       const std::function<double()> &fn) {
        step(id, label, [&] {
            const int64_t c0 = context_switches();
            const double v = fn();
            const int64_t c1 = context_switches();
            s.row(id, label, "msg/s").samples.push_back(v);
            s.row(std::string(id) + ".cs", label, "n")
                .samples.push_back(double(c1 - c0) / double(n));
        });
    };
    tput("ring", "SPSC lock-free ring", [&] { return bench_ring(c.ring); });
    tput_cs("mv1", "mutex+2cv queue, 64 B by value, single", c.mutex_single,
            [&] { return bench_mutex_value(c.mutex_single, 1); });
    tput_cs("mv64", "mutex+2cv queue, 64 B by value, batch 64", c.mutex_batch,
            [&] { return bench_mutex_value(c.mutex_batch, kBatch); });
    tput("ms1", "mutex+2cv queue, std::string, single",
         [&] { return bench_mutex_string(c.mutex_single, 1); });
    tput("ms64", "mutex+2cv queue, std::string, batch 64",
         [&] { return bench_mutex_string(c.mutex_batch, kBatch); });
    if (have_zmq()) {
        tput("z1", "ZeroMQ inproc PUB/SUB, 1 subscriber", [&] { return bench_zmq(c.zmq, 1); });
        tput("z2", "ZeroMQ inproc PUB/SUB, 2 subscribers (each)",
             [&] { return bench_zmq(c.zmq, 2); });
    }
    tput("w1", "1. mq 1→1, batch 64", [&] { return bench_mq_pull(c.mq_batch, kBatch, 1); });
    tput_cs("w2", "2. mq 1→1, single (publish, poll, ack)", c.mq_single,
            [&] { return bench_mq_pull(c.mq_single, 1, 1); });
    tput("w1h", "1. mq 1→1, batch 64, on handles",
         [&] { return bench_mq_pull(c.mq_batch, kBatch, 1, 0, true); });
    tput_cs("w2h", "2. mq 1→1, single, on handles", c.mq_single,
            [&] { return bench_mq_pull(c.mq_single, 1, 1, 0, true); });
    tput("w3", "3. mq 1→2 groups, batch 64 (each group)",
         [&] { return bench_mq_pull(c.mq_fanout, kBatch, 2); });
    // The same with the broker's spinning wait strategy: what a consumer gains by not parking.
    tput("w1s", "1. mq 1→1, batch 64, spin_ns 20 µs",
         [&] { return bench_mq_pull(c.mq_batch, kBatch, 1, kSpin); });
    tput("w2s", "2. mq 1→1, single, spin_ns 20 µs",
         [&] { return bench_mq_pull(c.mq_single, 1, 1, kSpin); });
    tput_cs("w4r", "reference design (mutex+2cv+deque, C++), reference stress", c.mq_stress,
            [&] { return bench_reference_stress(c.mq_stress); });
    tput_cs("w4", "4. mq reference stress (published msg/s)", c.mq_stress,
            [&] { return bench_mq_stress(c.mq_stress); });
    if (MQ_VERSION_MINOR >= 1)
        tput_cs("w4a", "4. mq reference stress, acks with polls (mq_group_ack_poll)", c.mq_stress,
                [&] { return bench_mq_stress(c.mq_stress, true); });
    tput_cs("w5a", "5. mq push subscription, prefetch 10", c.mq_push,
            [&] { return bench_mq_push(c.mq_push, 10); });
    tput_cs("w5b", "5. mq push subscription, prefetch 64", c.mq_push,
            [&] { return bench_mq_push(c.mq_push, 64); });
    step("pps", "cross-core ping-pong, spinning", [&] {
        add_latency(s, "pps", "ping-pong round trip, spinning",
                    bench_pingpong_spin(c.pingpong_spin));
    });
    step("ppb", "cross-core ping-pong, blocking (futex)", [&] {
        add_latency(s, "ppb", "ping-pong round trip, blocking",
                    bench_pingpong_blocking(c.pingpong_block));
    });
    step("mvl", "mutex+2cv queue latency at 20k msg/s", [&] {
        add_latency(s, "mvl", "mutex+2cv queue publish→pop",
                    bench_mutex_latency(c.latency, kLatencyInterval));
    });
    step("w6", "6. mq latency at 20k msg/s", [&] {
        add_latency(s, "w6", "6. mq publish→poll",
                    bench_mq_latency(c.latency, kLatencyInterval, 0));
    });
    step("w6s", "6. mq latency, spin_ns 2 × the interval", [&] {
        add_latency(s, "w6s", "6. mq publish→poll, spin_ns 100 µs",
                    bench_mq_latency(c.latency, kLatencyInterval, 2 * kLatencyInterval));
    });
    step("w7", "7. mq memory (child process)", [&] {
        MemoryResult m = memory_in_child(c.retained);
        s.row("w7.over", "7. mq heap bytes per retained message beyond payload", "B")
            .samples.push_back(m.overhead_bytes);
        s.row("w7.rss", "7. mq resident bytes per retained message beyond payload", "B")
            .samples.push_back(m.rss_overhead_bytes);
        s.row("w7.peak",
              "7. mq peak RSS (MiB), " + std::to_string(c.retained) + " retained 64 B messages",
              "MiB")
            .samples.push_back(m.peak_rss_mib);
        s.row("w7.a64", "7. mq heap allocations per message, batch 64 steady state", "n")
            .samples.push_back(m.allocs_per_msg_batch);
        s.row("w7.a1", "7. mq heap allocations per message, single steady state", "n")
            .samples.push_back(m.allocs_per_msg_single);
        s.row("w7.ap", "7. mq heap allocations per message, push steady state", "n")
            .samples.push_back(m.allocs_per_msg_push);
        s.row("dq.over", "std::deque<std::string> heap bytes per message beyond payload", "B")
            .samples.push_back(m.deque_string_overhead_bytes);
    });
}

struct Target {
    std::string what;
    double value;
    double limit;
    bool at_least;  // value >= limit, else value <= limit
};

std::string ratio_cell(const Suite &s, const std::string &a, const std::string &b) {
    double r = s.ratio(a, b);
    return std::isnan(r) ? "—" : fmt(r, r < 0.1 ? "%.3f×" : "%.2f×");
}

void write_report(const Suite &s, const Counts &c, int rounds, const std::string &dir) {
    std::ostringstream md;
    md << "Each figure is the median of " << rounds << " rounds; each round runs every benchmark "
       << "once, interleaved. A ratio is the median over rounds of mq ÷ peer within a round. "
       << "Throughput is per receiver (in a fan-out each receiver gets every message). "
       << "Payloads are 64 bytes. Every run verified count, order and a payload digest.\n\n";
    if (!have_zmq())
        md << "**ZeroMQ was not found at build time: its peer and the ratios to it are "
              "missing.**\n\n";

    struct Cmp {
        const char *id;
        const char *ring, *mv, *ms, *zmq;
    };
    const Cmp mq_rows[] = {
        {"w1", "ring", "mv64", "ms64", "z1"},        {"w2", "ring", "mv1", "ms1", "z1"},
        {"w1h", "ring", "mv64", "ms64", "z1"},       {"w2h", "ring", "mv1", "ms1", "z1"},
        {"w1s", "ring", "mv64", "ms64", "z1"},       {"w2s", "ring", "mv1", "ms1", "z1"},
        {"w3", "ring", "mv64", "ms64", "z2"},        {"w4", nullptr, nullptr, nullptr, nullptr},
        {"w4a", nullptr, nullptr, nullptr, nullptr}, {"w5a", "ring", "mv64", "ms64", "z1"},
        {"w5b", "ring", "mv64", "ms64", "z1"}};
    md << "## Throughput\n\n"
       << "| benchmark | median | min – max | vs ring | vs mutex queue, by value | "
          "vs mutex queue, std::string | vs ZeroMQ |\n|---|---:|---:|---:|---:|---:|---:|\n";
    auto range = [&](const Row &r) {
        auto [lo, hi] = std::minmax_element(r.samples.begin(), r.samples.end());
        return fmt_value(r, *lo) + " – " + fmt_value(r, *hi);
    };
    for (auto &cmp : mq_rows) {
        const Row *r = s.find(cmp.id);
        if (!r) continue;
        auto cell = [&](const char *peer) { return peer ? ratio_cell(s, cmp.id, peer) : "—"; };
        md << "| " << r->label << " | **" << fmt_value(*r, median(r->samples)) << "** | "
           << range(*r) << " | " << cell(cmp.ring) << " | " << cell(cmp.mv) << " | " << cell(cmp.ms)
           << " | " << cell(cmp.zmq) << " |\n";
    }
    for (const char *peer : {"ring", "mv1", "mv64", "ms1", "ms64", "z1", "z2", "w4r"}) {
        const Row *r = s.find(peer);
        if (!r) continue;
        md << "| *peer:* " << r->label << " | " << fmt_value(*r, median(r->samples)) << " | "
           << range(*r) << " | | | | |\n";
    }
    md << "\nThe mutex-queue and ZeroMQ columns compare with the variant of the same shape: "
          "batch 64 for mq's batch and push rows, single messages for row 2; ZeroMQ with 2 "
          "subscribers for the fan-out row, else 1. The reference stress (4 producers, 40 keys, "
          "4 partitions, capacity 64, 2 groups × 2 consumers, polls of 10) is compared with the "
          "reference design on the same workload: "
       << ratio_cell(s, "w4", "w4r") << ".\n\n";
    if (s.find("w4.cs") || s.find("w2.cs")) {
        md << "## Context switches per message\n\n(getrusage ru_nvcsw + ru_nivcsw of the whole "
              "process over the run, divided by the messages published)\n\n| benchmark | median "
              "| min – max |\n|---|---:|---:|\n";
        for (const char *id : {"w2", "w2h", "mv1", "w4", "w4a", "w4r", "w5a", "w5b", "mv64"}) {
            const Row *r = s.find(std::string(id) + ".cs");
            if (!r) continue;
            auto [lo, hi] = std::minmax_element(r->samples.begin(), r->samples.end());
            md << "| " << r->label << " | " << fmt(median(r->samples), "%.3f") << " | "
               << fmt(*lo, "%.3f") << " – " << fmt(*hi, "%.3f") << " |\n";
        }
        md << "\n";
    }

    md << "## Latency\n\nAt a fixed 20,000 messages per second, the receiver already waiting "
          "(mq: in `mq_group_poll`; the mutex queue: in `pop`). Ping-pong figures are round trips "
          "between threads pinned to CPUs 0 and 1.\n\n"
       << "| benchmark | median | min – max | p50 vs blocking ping-pong p50 | "
          "p50 vs spinning ping-pong p50 |\n|---|---:|---:|---:|---:|\n";
    for (const char *base : {"w6", "w6s", "mvl", "ppb", "pps"})
        for (const char *pct : {".p50", ".p99", ".p999"}) {
            std::string id = std::string(base) + pct;
            const Row *r = s.find(id);
            if (!r) continue;
            // Only medians compare meaningfully: the tails of a shared machine are its load.
            bool cmp = std::string(base) != "ppb" && std::string(base) != "pps" &&
                       std::string(pct) == ".p50";
            md << "| " << r->label << " | " << (std::string(base) == "w6" ? "**" : "")
               << fmt_value(*r, median(r->samples)) << (std::string(base) == "w6" ? "**" : "")
               << " | " << range(*r) << " | "
               << (cmp ? ratio_cell(s, id, std::string("ppb") + pct) : "") << " | "
               << (cmp ? ratio_cell(s, id, std::string("pps") + pct) : "") << " |\n";
        }

    if (s.find("w7.over"))
        md << "\n## Memory\n\n| measure | median | min – max |\n|---|---:|---:|\n";
    for (const char *id : {"w7.over", "w7.rss", "w7.peak", "w7.a64", "w7.a1", "w7.ap", "dq.over"}) {
        const Row *r = s.find(id);
        if (!r) continue;
        md << "| " << r->label << " | " << fmt(median(r->samples), "%.2f") << " | "
           << fmt(*std::min_element(r->samples.begin(), r->samples.end()), "%.2f") << " – "
           << fmt(*std::max_element(r->samples.begin(), r->samples.end()), "%.2f") << " |\n";
    }
    if (s.find("w7.over"))
        md << "\nHeap bytes are what the library holds through `operator new` (usable size of each "
              "block) after publishing "
           << c.retained
           << " messages into a topic with one group "
              "that has not consumed, divided per message, minus the 64-byte payload (no key). "
              "Allocations are counted by a replacement `operator new` in the benchmark binary "
              "over "
           << 64 * 1600 << " messages after a warm-up.\n\n";

    std::vector<Target> targets = {
        {"1. batch 64 ≥ 0.5 × the lock-free ring", s.ratio("w1", "ring"), 0.5, true},
        {"1. batch 64 ≥ 1.2 × the by-value mutex queue in batches of 64", s.ratio("w1", "mv64"),
         1.2, true},
        {"2. single ≥ 1.0 × the by-value mutex queue, single", s.ratio("w2", "mv1"), 1.0, true},
        {"1. (with spin_ns 20 µs) batch 64 ≥ 1.2 × the by-value mutex queue, batch 64",
         s.ratio("w1s", "mv64"), 1.2, true},
        {"2. (with spin_ns 20 µs) single ≥ 1.0 × the by-value mutex queue, single",
         s.ratio("w2s", "mv1"), 1.0, true},
        {"3. fan-out, each group ≥ 5 × ZeroMQ per subscriber with 2 subscribers",
         s.ratio("w3", "z2"), 5.0, true},
        {"4. reference stress ≥ 3 × the reference design (C++, same run)", s.ratio("w4", "w4r"),
         3.0, true},
        {"4. (acks with polls) reference stress ≥ 3 × the reference design", s.ratio("w4a", "w4r"),
         3.0, true},
        // Round 2 (docs/BENCHMARKS.md): the tighter targets, and push beside pull.
        {"1. (round 2) batch 64 ≥ 1.5 × the by-value mutex queue in batches of 64",
         s.ratio("w1", "mv64"), 1.5, true},
        {"3. (round 2) fan-out, each group ≥ 6 × ZeroMQ per subscriber with 2 subscribers",
         s.ratio("w3", "z2"), 6.0, true},
        {"5. push, prefetch 64 ≥ 0.5 × workload 1 (batch 64, pull)", s.ratio("w5b", "w1"), 0.5,
         true},
        {"6. p50 latency ≤ 0.25 × the blocking ping-pong round trip", s.ratio("w6.p50", "ppb.p50"),
         0.25, false},
        {"6. (with spin_ns = 2 × the interval) p50 ≤ 0.25 × the blocking round trip",
         s.ratio("w6s.p50", "ppb.p50"), 0.25, false},
        // Round 3 (issue 33): the same rows on a publisher and cursor (ABI 1.7).
        {"1. (round 3, handles) batch 64 ≥ 1.5 × the by-value mutex queue in batches of 64",
         s.ratio("w1h", "mv64"), 1.5, true},
        {"1. (round 3, handles) batch 64 ≥ 0.5 × the lock-free ring", s.ratio("w1h", "ring"), 0.5,
         true},
        {"2. (round 3, handles) single ≥ 1.0 × the by-value mutex queue, single",
         s.ratio("w2h", "mv1"), 1.0, true},
        {"7. ≤ 32 bytes of overhead per retained message (heap)", s.med("w7.over"), 32, false},
        {"7. no heap allocation per message in steady state (batch, single, push)",
         std::max({s.med("w7.a64"), s.med("w7.a1"), s.med("w7.ap")}), 0.0, false},
    };
    md << "## Targets\n\n| target | measured | holds |\n|---|---:|:---:|\n";
    for (auto &t : targets) {
        bool ok = !std::isnan(t.value) && (t.at_least ? t.value >= t.limit : t.value <= t.limit);
        md << "| " << t.what << " | " << fmt(t.value, "%.3g") << " | "
           << (std::isnan(t.value) ? "not measured"
               : ok                ? "yes"
                                   : "**no**")
           << " |\n";
    }

    std::string text = md.str();
    std::printf("\n%s", text.c_str());
    if (dir.empty()) return;
    std::ofstream(dir + "/tables.md") << text;
    std::ofstream tp(dir + "/throughput.dat");
    tp << "# label\tmedian M msg/s\tis_mq\n";
    for (const char *id : {"w1", "w2", "w1h", "w2h", "w1s", "w2s", "w3", "w4", "w5a", "w5b", "ring",
                           "mv1", "mv64", "ms1", "ms64", "z1", "z2"})
        if (const Row *r = s.find(id))
            tp << '"' << r->label << "\"\t" << median(r->samples) / 1e6 << '\t' << (id[0] == 'w')
               << '\n';
    std::ofstream lt(dir + "/latency.dat");
    lt << "# label\tp50 us\tp99 us\tp99.9 us\n";
    for (auto [id, label] : {std::pair{"w6", "mq publish→poll"},
                             {"w6s", "mq, spin 100 µs"},
                             {"mvl", "mutex queue push→pop"},
                             {"pps", "ping-pong RTT, spin"},
                             {"ppb", "ping-pong RTT, futex"}})
        if (s.find(std::string(id) + ".p50"))
            lt << '"' << label << "\"\t" << s.med(std::string(id) + ".p50") << '\t'
               << s.med(std::string(id) + ".p99") << '\t' << s.med(std::string(id) + ".p999")
               << '\n';
}

int parse_int(const char *flag, const char *v) {
    char *end = nullptr;
    long x = v ? std::strtol(v, &end, 10) : 0;
    if (!v || *end || x < 1 || x > 1000) {
        std::fprintf(stderr, "%s needs an integer from 1 to 1000\n", flag);
        std::exit(2);
    }
    return int(x);
}

}  // namespace
}  // namespace suite

int main(int argc, char **argv) {
    using namespace suite;
    int rounds = 5;
    double scale = 1.0;
    std::string out;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--memory-child" && next) {
            MemoryResult m = bench_mq_memory(std::strtoull(argv[++i], nullptr, 10));
            std::printf("%.4f %.4f %.4f %.6f %.6f %.6f %.4f\n", m.overhead_bytes,
                        m.rss_overhead_bytes, m.peak_rss_mib, m.allocs_per_msg_batch,
                        m.allocs_per_msg_single, m.allocs_per_msg_push,
                        m.deque_string_overhead_bytes);
            return 0;
        } else if (a == "--runs") {
            rounds = parse_int("--runs", next);
            ++i;
        } else if (a == "--scale" && next) {
            scale = std::atof(argv[++i]);
            if (!(scale > 0 && scale <= 100)) {
                std::fprintf(stderr, "--scale needs a number in (0, 100]\n");
                return 2;
            }
        } else if (a == "--only" && next) {
            std::stringstream list(argv[++i]);
            for (std::string id; std::getline(list, id, ',');) g_only.push_back(id);
        } else if (a == "--out" && next) {
            out = argv[++i];
        } else {
            std::fprintf(
                stderr,
                "usage: %s [--runs N] [--scale F] [--only IDS] [--out DIR]\n"
                "  --runs N    rounds; each figure is the median (default 5)\n"
                "  --scale F   multiply every message count by F (default 1)\n"
                "  --only IDS  run only these benchmarks (ids: ring mv1 mv64 ms1 ms64 z1 z2\n"
                "              w1 w2 w1s w2s w3 w4 w5a w5b pps ppb mvl w6 w6s w7), "
                "comma-separated\n"
                "  --out DIR   write tables.md, throughput.dat, latency.dat there\n",
                argv[0]);
            return a == "--help" ? 0 : 2;
        }
    }
    Counts c = counts_for(scale);
    std::printf("mq %s benchmark suite: %d round%s, scale %g%s\n", mq_version_string(), rounds,
                rounds == 1 ? "" : "s", scale,
                have_zmq() ? "" : " (built WITHOUT ZeroMQ: that peer is skipped)");
    Suite s;
    for (int r = 1; r <= rounds; ++r) one_round(s, c, r, rounds);
    write_report(s, c, rounds, out);
    return 0;
}
