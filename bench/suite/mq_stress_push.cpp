// Workloads 4 and 5: the reference stress without its pause, and push subscriptions.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "benches.h"
#include "mq_util.h"

namespace suite {
namespace {

constexpr int kProducers = 4, kKeys = 40, kPartitions = 4, kGroups = 2, kMembers = 2;
constexpr size_t kStressPoll = 10;

void key_name(int k, char out[8]) { std::snprintf(out, 8, "key-%02d", k); }

// Stress payloads: word 0 is (key << 32) | per-key sequence; each key belongs to one producer,
// so per-key order is checkable; the digest covers every word.
uint64_t stress_word(uint32_t key, uint32_t seq) { return (uint64_t(key) << 32) | seq; }

}  // namespace

double bench_mq_stress(uint64_t n, bool ack_with_poll) {
    const char *name = "mq stress";
    Broker b(name, kPartitions, 64);
    static const char *kGroupNames[kGroups] = {"billing", "email"};
    for (auto g : kGroupNames) must(name, mq_group_subscribe(b.b, kTopic, g, nullptr), "subscribe");

    // Which partition each key lands on, and so how many messages each partition will get.
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
                int32_t parts[kPartitions];
                size_t nparts = 0;
                must(name,
                     mq_assignment_round_robin(kPartitions, kMembers, m, parts, kPartitions,
                                               &nparts),
                     "assign");
                uint64_t remaining[kPartitions], total = 0, digest = 0, received = 0;
                for (size_t i = 0; i < nparts; ++i) total += remaining[i] = per_part[parts[i]];
                mq_message msgs[kStressPoll];
                bool idle = false;
                double last_progress = now_s();
                while (received < total) {
                    bool got_any = false;
                    for (size_t i = 0; i < nparts; ++i) {
                        if (remaining[i] == 0) continue;
                        // Several partitions: block briefly only after a round that found
                        // nothing, so a quiet partition does not hold up a busy one.
                        size_t got = 0;
                        mq_status s = mq_group_poll(b.b, kTopic, kGroupNames[g], parts[i], msgs,
                                                    sizeof(mq_message), kStressPoll,
                                                    idle ? 1 : MQ_NO_WAIT, nullptr, &got);
                        if (s == MQ_TIMEOUT || got == 0) continue;
                        must(name, s, "mq_group_poll");
                        for (;;) {  // with ack_with_poll: the ack asks for the next batch
                            for (size_t j = 0; j < got; ++j) {
                                const mq_message &msg = msgs[j];
                                if (msg.payload_len != kPayload) fail(name, "payload size");
                                uint64_t w = seq_of(msg.payload);
                                uint32_t key = uint32_t(w >> 32), seq = uint32_t(w);
                                char kn[8];
                                key_name(int(key % kKeys), kn);
                                if (key >= kKeys || msg.key_len != 6 || std::memcmp(msg.key, kn, 6))
                                    fail(name, "key does not match payload");
                                if (seq != groups[g].next_seq[key])
                                    fail(name, "order: key " + std::to_string(key) + " got seq " +
                                                   std::to_string(seq) + ", expected " +
                                                   std::to_string(groups[g].next_seq[key]));
                                groups[g].next_seq[key] = seq + 1;
                                digest += digest_term(msg.payload);
                            }
                            received += got;
                            if (got > remaining[i]) fail(name, "more messages than published");
                            remaining[i] -= got;
                            got_any = true;
                            if (!ack_with_poll || remaining[i] == 0) {
                                must(name,
                                     mq_group_ack(b.b, kTopic, kGroupNames[g], parts[i],
                                                  msgs[got - 1].offset),
                                     "mq_group_ack");
                                break;
                            }
#if MQ_VERSION_MINOR >= 1  // the suite also builds against 1.0 for before/after runs
                            const int64_t last = msgs[got - 1].offset;
                            s = mq_group_ack_poll(b.b, kTopic, kGroupNames[g], parts[i], last, msgs,
                                                  sizeof(mq_message), kStressPoll, MQ_NO_WAIT,
                                                  nullptr, &got);
#else
                            fail(name, "mq_group_ack_poll needs mq 1.1");
#endif
                            if (s == MQ_TIMEOUT) break;  // acked; nothing more here for now
                            must(name, s, "mq_group_ack_poll");
                        }
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
                fill(m, stress_word(uint32_t(key), uint32_t(i / kOwn)));
                digest += digest_term(m.b);
                char kn[8];
                key_name(key, kn);
                must(name,
                     mq_topic_publish(b.b, kTopic, kn, 6, m.b, kPayload, NULL, 0, MQ_WAIT_FOREVER,
                                      nullptr, nullptr, nullptr),
                     "mq_topic_publish");
            }
            sent_digest += digest;
        });
    for (auto &t : threads) t.join();
    double elapsed = now_s() - t0;
    for (auto &g : groups) {
        if (g.received != n)
            fail(name, "a group received " + std::to_string(g.received.load()) + " of " +
                           std::to_string(n));
        if (g.digest != sent_digest) fail(name, "payload digest differs");
        for (int k = 0; k < kKeys; ++k)
            if (g.next_seq[k] != per_key[k]) fail(name, "a key ended early");
    }
    return double(n) / elapsed;
}

namespace {
struct PushState {
    Verifier v{"mq push"};
    uint64_t target = 0;
    std::mutex mu;
    std::condition_variable done;
    bool reached = false;
};

int on_message(void *user, const mq_message *m) {
    auto *st = static_cast<PushState *>(user);
    st->v.take(m->payload, m->payload_len);
    if (st->v.next == st->target) {
        std::lock_guard g(st->mu);
        st->reached = true;
        st->done.notify_all();
    }
    return 0;
}
}  // namespace

double bench_mq_push(uint64_t n, int32_t prefetch) {
    const char *name = "mq push";
    Broker b(name, 1, kCapacity);
    PushState st;
    st.target = n;
    mq_subscription_options opts;
    mq_subscription_options_init(&opts, sizeof opts);
    opts.prefetch = prefetch;
    mq_subscription *sub = nullptr;
    must(name, mq_subscription_open(b.b, kTopic, "push", &opts, on_message, &st, nullptr, &sub),
         "mq_subscription_open");

    double t0 = now_s();
    Msg buf[kBatch];
    mq_record recs[kBatch];
    for (uint64_t seq = 0; seq < n;) {
        size_t k = 0;
        for (; k < kBatch && seq < n; ++k, ++seq) {
            fill(buf[k], seq);
            recs[k] = mq_record{nullptr, 0, buf[k].b, kPayload, nullptr, 0, 0};
        }
        size_t published = 0;
        must(name,
             mq_topic_publish_batch(b.b, kTopic, recs, sizeof(mq_record), k, MQ_WAIT_FOREVER,
                                    nullptr, nullptr, sizeof(mq_publish_result), &published),
             "mq_topic_publish_batch");
        if (published != k) fail(name, "publish_batch published " + std::to_string(published));
    }
    {
        std::unique_lock lk(st.mu);
        if (!st.done.wait_for(lk, std::chrono::seconds(30), [&] { return st.reached; }))
            fail(name,
                 "handler stalled at " + std::to_string(st.v.next) + " of " + std::to_string(n));
    }
    double elapsed = now_s() - t0;
    must(name, mq_subscription_close(sub), "mq_subscription_close");
    st.v.finish(n, expected_digest(0, n), "handler");
    return double(n) / elapsed;
}

}  // namespace suite
