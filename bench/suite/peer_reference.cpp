// The peer of workload 4: the reference design as docs/SPEC.md describes it, written plainly in
// C++. Per partition one mutex, two condition variables and a deque log; each group a
// committed/next pair; signal-all on append and on ack; messages copied out by value. Same
// workload as bench_mq_stress: 4 producers over 40 keys (Kafka's partitioner), 4 partitions,
// capacity 64, 2 groups x 2 consumers, polls of 10, the same consumer loop, the same checks.
#include <array>
#include <atomic>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "benches.h"
#include "mq_util.h"

namespace suite {
namespace {

constexpr int kProducers = 4, kKeys = 40, kPartitions = 4, kGroups = 2, kMembers = 2;
constexpr size_t kPoll = 10, kCap = 64;

struct Stored {
    std::array<unsigned char, 6> key;
    Msg payload;
};

struct Part {
    std::mutex mu;
    std::condition_variable not_full, not_empty;
    std::deque<Stored> log;
    int64_t start = 0;  // offset of log.front()
    int64_t committed[kGroups] = {}, next[kGroups] = {};

    int64_t end() const { return start + int64_t(log.size()); }
    void publish(const unsigned char *key, const Msg &m) {
        std::unique_lock lk(mu);
        not_full.wait(lk, [&] { return log.size() < kCap; });
        log.push_back(Stored{{key[0], key[1], key[2], key[3], key[4], key[5]}, m});
        not_empty.notify_all();
    }
    // Up to kPoll messages from the group's next, waiting up to wait_ms for one.
    size_t poll(int g, Stored *out, int64_t *first, int wait_ms) {
        std::unique_lock lk(mu);
        if (next[g] == end()) {
            if (wait_ms == 0) return 0;
            not_empty.wait_for(lk, std::chrono::milliseconds(wait_ms),
                               [&] { return next[g] < end(); });
        }
        size_t k = 0;
        *first = next[g];
        for (; k < kPoll && next[g] < end(); ++k, ++next[g]) out[k] = log[size_t(next[g] - start)];
        return k;
    }
    void ack(int g, int64_t offset) {
        std::lock_guard lk(mu);
        committed[g] = offset + 1;
        const int64_t slowest = std::min(committed[0], committed[1]);
        while (start < slowest) {
            log.pop_front();
            ++start;
        }
        not_full.notify_all();
    }
};

void key_name(int k, char out[8]) { std::snprintf(out, 8, "key-%02d", k); }

}  // namespace

double bench_reference_stress(uint64_t n) {
    const char *name = "reference stress";
    std::vector<Part> parts(kPartitions);
    int32_t part_of[kKeys];
    uint64_t per_key[kKeys] = {}, per_part[kPartitions] = {};
    constexpr int kOwn = kKeys / kProducers;
    for (int k = 0; k < kKeys; ++k) {
        char kn[8];
        key_name(k, kn);
        must(name, mq_key_partition(kn, 6, kPartitions, &part_of[k]), "partition_for_key");
    }
    uint64_t per_producer[kProducers];
    for (int p = 0; p < kProducers; ++p) {
        per_producer[p] = n / kProducers + (uint64_t(p) < n % kProducers);
        for (uint64_t i = 0; i < per_producer[p]; ++i) ++per_key[p + kProducers * int(i % kOwn)];
    }
    for (int k = 0; k < kKeys; ++k) per_part[part_of[k]] += per_key[k];

    std::atomic<uint64_t> sent_digest{0};
    struct GroupState {
        uint32_t next_seq[kKeys] = {};
        std::atomic<uint64_t> digest{0}, received{0};
    } groups[kGroups];

    std::vector<std::thread> threads;
    for (int g = 0; g < kGroups; ++g)
        for (int m = 0; m < kMembers; ++m)
            threads.emplace_back([&, g, m] {
                int32_t mine[kPartitions];
                size_t nparts = 0;
                must(
                    name,
                    mq_assignment_round_robin(kPartitions, kMembers, m, mine, kPartitions, &nparts),
                    "assign");
                uint64_t remaining[kPartitions], total = 0, digest = 0, received = 0;
                for (size_t i = 0; i < nparts; ++i) total += remaining[i] = per_part[mine[i]];
                Stored msgs[kPoll];
                bool idle = false;
                double last_progress = now_s();
                while (received < total) {
                    bool got_any = false;
                    for (size_t i = 0; i < nparts; ++i) {
                        if (remaining[i] == 0) continue;
                        int64_t first = 0;
                        Part &p = parts[size_t(mine[i])];
                        const size_t got = p.poll(g, msgs, &first, idle ? 1 : 0);
                        if (got == 0) continue;
                        for (size_t j = 0; j < got; ++j) {
                            uint64_t w = seq_of(msgs[j].payload.b);
                            uint32_t key = uint32_t(w >> 32), seq = uint32_t(w);
                            char kn[8];
                            key_name(int(key % kKeys), kn);
                            if (key >= kKeys || std::memcmp(msgs[j].key.data(), kn, 6))
                                fail(name, "key does not match payload");
                            if (seq != groups[g].next_seq[key]) fail(name, "order");
                            groups[g].next_seq[key] = seq + 1;
                            digest += digest_term(msgs[j].payload.b);
                        }
                        received += got;
                        if (got > remaining[i]) fail(name, "more messages than published");
                        remaining[i] -= got;
                        p.ack(g, first + int64_t(got) - 1);
                        got_any = true;
                    }
                    idle = !got_any;
                    if (got_any) {
                        last_progress = now_s();
                    } else if (now_s() - last_progress > 10) {
                        fail(name, "stalled: nothing for 10 s");
                    }
                }
                groups[g].digest += digest;
                groups[g].received += received;
            });

    double t0 = now_s();
    for (int p = 0; p < kProducers; ++p)
        threads.emplace_back([&, p] {
            Msg m;
            uint64_t digest = 0;
            for (uint64_t i = 0; i < per_producer[p]; ++i) {
                int key = p + kProducers * int(i % kOwn);
                fill(m, (uint64_t(key) << 32) | uint32_t(i / kOwn));
                digest += digest_term(m.b);
                char kn[8];
                key_name(key, kn);
                parts[size_t(part_of[key])].publish(reinterpret_cast<const unsigned char *>(kn), m);
            }
            sent_digest += digest;
        });
    for (auto &t : threads) t.join();
    double elapsed = now_s() - t0;
    for (auto &g : groups) {
        if (g.received != n) fail(name, "a group received the wrong count");
        if (g.digest != sent_digest) fail(name, "payload digest differs");
        for (int k = 0; k < kKeys; ++k)
            if (g.next_seq[k] != per_key[k]) fail(name, "a key ended early");
    }
    return double(n) / elapsed;
}

}  // namespace suite
