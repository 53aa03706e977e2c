// What every benchmark of the suite shares: 64-byte messages that carry their sequence number,
// the digest that proves what arrived, timing, statistics and failing loudly.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace suite {

constexpr size_t kPayload = 64;
struct Msg {
    unsigned char b[kPayload];
};

// Word 0 is the sequence number; the other words are derived from it so that a torn or stale
// message changes the digest. Cheap on purpose: the ring peer moves tens of millions of these
// per second and the benchmark must not measure its own bookkeeping.
inline void fill(Msg &m, uint64_t seq) {
    uint64_t w[kPayload / 8];
    w[0] = seq;
    for (size_t i = 1; i < kPayload / 8; ++i) w[i] = (seq + i) * 0x9e3779b97f4a7c15ull ^ (i << 56);
    std::memcpy(m.b, w, kPayload);
}

inline uint64_t seq_of(const void *p) {
    uint64_t s;
    std::memcpy(&s, p, 8);
    return s;
}

// One term per message, summed: independent multipliers per word, so any changed word (or a
// word moved to another position) changes the total.
inline uint64_t digest_term(const void *p) {
    static constexpr uint64_t k[8] = {
        0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0x87c37b91114253d5ull, 0x4cf5ad432745937full,
        0x52dce729da3ed4b1ull, 0x38495ab5a3d7c4e3ull, 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull};
    uint64_t w[8], h = 0;
    std::memcpy(w, p, kPayload);
    for (int i = 0; i < 8; ++i) h += (w[i] ^ (w[i] >> 29)) * k[i];
    return h ^ (h >> 31);
}

// The digest a receiver of messages 0..n-1 must end with.
inline uint64_t expected_digest(uint64_t first, uint64_t n) {
    uint64_t d = 0;
    Msg m;
    for (uint64_t s = first; s < first + n; ++s) {
        fill(m, s);
        d += digest_term(m.b);
    }
    return d;
}

// Latency messages carry their send time (CLOCK_MONOTONIC ns) in word 1. The receiver takes it
// out and restores the word before verifying, so the digest still covers the whole message.
inline void stamp(Msg &m, int64_t t) { std::memcpy(m.b + 8, &t, 8); }
inline int64_t unstamp(const void *p, Msg &out) {
    std::memcpy(out.b, p, kPayload);
    int64_t t;
    std::memcpy(&t, out.b + 8, 8);
    uint64_t w1 = (seq_of(out.b) + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t{1} << 56);
    std::memcpy(out.b + 8, &w1, 8);
    return t;
}

[[noreturn]] void fail(const char *bench, const std::string &what);

// A receiver's running check: every message in sequence order, and the digest at the end.
struct Verifier {
    const char *bench;
    uint64_t next = 0;
    uint64_t digest = 0;

    // Any thread may fail the whole process: a wrong result must not look like a slow one.
    void take(const void *payload, size_t len) {
        if (len != kPayload) fail(bench, "payload of " + std::to_string(len) + " bytes");
        uint64_t s = seq_of(payload);
        if (s != next)
            fail(bench,
                 "order: got seq " + std::to_string(s) + ", expected " + std::to_string(next));
        ++next;
        digest += digest_term(payload);
    }
    // Called after the run, on the main thread.
    void finish(uint64_t count, uint64_t want_digest, const char *who) const {
        if (next != count)
            fail(bench, std::string(who) + " received " + std::to_string(next) + " of " +
                            std::to_string(count));
        if (digest != want_digest) fail(bench, std::string(who) + ": payload digest differs");
    }
};

double now_s();
int64_t now_ns();
void pin_to_cpu(int cpu);  // best effort; -1 unpins. With one CPU nothing happens.

struct Latency {
    double p50_us = 0, p99_us = 0, p999_us = 0;
};
Latency percentiles(std::vector<int64_t> &ns);  // sorts ns

double median(std::vector<double> v);

// Paces a sender at a fixed rate: message i goes out at start + i * interval (absolute sleeps,
// so a late wake-up does not shift every later message).
class Pacer {
public:
    explicit Pacer(int64_t interval_ns);
    void wait(uint64_t i);

private:
    int64_t start_, interval_;
};

}  // namespace suite
