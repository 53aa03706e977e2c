#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace suite {

void fail(const char *bench, const std::string &what) {
    std::fprintf(stderr, "\nmq_bench_suite: FAILED: %s: %s\n", bench, what.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(1);  // other threads may still be running: no static destructors under them
}

double now_s() { return double(now_ns()) / 1e9; }

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void pin_to_cpu(int cpu) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < 0) {
        for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET(i, &set);
    } else {
        CPU_SET(cpu % n, &set);
    }
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

Latency percentiles(std::vector<int64_t> &ns) {
    Latency l;
    if (ns.empty()) return l;
    std::sort(ns.begin(), ns.end());
    auto at = [&](double q) {
        size_t i = size_t(q * double(ns.size() - 1) + 0.5);
        return double(ns[std::min(i, ns.size() - 1)]) / 1e3;
    };
    l.p50_us = at(0.50);
    l.p99_us = at(0.99);
    l.p999_us = at(0.999);
    return l;
}

Pacer::Pacer(int64_t interval_ns) : start_(now_ns() + 1000000), interval_(interval_ns) {}

void Pacer::wait(uint64_t i) {
    int64_t t = start_ + int64_t(i) * interval_;
    timespec ts{time_t(t / 1000000000), long(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace suite
