// Members join, leave and crash at random while producers publish. Checks at-least-once
// delivery, per-key order of the group's acked sequence, and that no partition is ever handed
// out to two members in one generation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

constexpr int kProducers = 3;
constexpr int kPerProducer = 2000;
constexpr int kKeys = 12;

struct Record {
    std::mutex mu;
    std::map<std::string, std::vector<int>> acked;  // key -> seqs in ack order
    std::map<std::pair<int64_t, int32_t>, std::set<std::string>> holders;  // (gen, partition)
    std::vector<std::string> problems;
    int acked_total = 0;
};

// One consumer's life: join, consume for a while, then leave cleanly or "crash" (stop calling
// without closing; the group removes it after the session timeout).
void consumer_life(mq_broker *b, Record &rec, const std::string &id, std::mt19937 &rng,
                   std::atomic<bool> &finished, std::vector<mq_member *> &crashed) {
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = id.c_str();
    o.session_timeout_ms = 200;
    mq_member *m = nullptr;
    if (mq_member_join(b, "work", "svc", &o, &m) != MQ_OK) {
        std::lock_guard g(rec.mu);
        rec.problems.push_back(std::string("join failed: ") + mq_last_error());
        return;
    }
    int64_t gen = 0;
    int32_t parts[16];
    size_t np = 0;
    mq_member_get_assignment(m, &gen, parts, 16, &np);
    const int polls = 20 + static_cast<int>(rng() % 60);
    mq_message msgs[16];
    for (int i = 0; i < polls && !finished.load(); i++) {
        size_t n = 0;
        const mq_status st = mq_member_poll(m, msgs, sizeof(mq_message), 16, 20, nullptr, &n);
        if (st == MQ_REBALANCED) {
            if (mq_member_get_assignment(m, &gen, parts, 16, &np) != MQ_OK) break;
            continue;
        }
        if (st == MQ_ERR_FENCED) break;  // removed: treat as dead
        if (st != MQ_OK) continue;
        {
            std::lock_guard g(rec.mu);
            rec.holders[{gen, msgs[0].partition}].insert(id);
        }
        for (size_t k = 0; k < n; k++) {
            int seq = -1;
            char key[32];
            const std::string p = payload_of(msgs[k]);
            if (std::sscanf(p.c_str(), "%31s %d", key, &seq) != 2) {
                std::lock_guard g(rec.mu);
                rec.problems.push_back("bad payload " + p);
                continue;
            }
            // The record is made under the same lock as the ack, so the recorded order is the
            // order in which acks succeeded, across members.
            std::unique_lock g(rec.mu);
            const mq_status a = mq_member_ack(m, msgs[k].partition, msgs[k].offset);
            if (a == MQ_REBALANCED) {  // fetching hands the rest out again, to us or the owner
                if (mq_member_get_assignment(m, &gen, parts, 16, &np) != MQ_OK) break;
            }
            if (a != MQ_OK) break;  // fenced: the partition moved and was rewound for its owner
            rec.acked[key].push_back(seq);
            rec.acked_total++;
        }
    }
    if (rng() % 3 == 0) {
        crashed.push_back(m);  // closed at the very end, long after it was removed
    } else {
        mq_member_close(m);
    }
}

TEST(MembersStress, JoinLeaveAndCrashWhilePublishingLosesNothingAndKeepsKeyOrder) {
    auto b = broker();
    auto cfg = topic_config(6, 64);
    ASSERT_EQ(mq_topic_create(b.get(), "work", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "work", "svc", nullptr), MQ_OK);
    Record rec;
    std::atomic<bool> finished{false};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++) {
        producers.emplace_back([&, p] {
            for (int i = 0; i < kPerProducer; i++) {
                const std::string key = "p" + std::to_string(p) + "-k" + std::to_string(i % kKeys);
                const std::string payload = key + " " + std::to_string(i / kKeys);
                if (mq_topic_publish(b.get(), "work", key.data(), key.size(), payload.data(),
                                     payload.size(), NULL, 0, MQ_WAIT_FOREVER, nullptr, nullptr,
                                     nullptr) != MQ_OK) {
                    std::lock_guard g(rec.mu);
                    rec.problems.push_back(std::string("publish: ") + mq_last_error());
                    return;
                }
            }
        });
    }
    // Three consumer "slots", each running consumer lives one after another.
    std::vector<std::thread> slots;
    std::mutex crashed_mu;
    std::vector<mq_member *> crashed_all;
    std::atomic<int> serial{0};
    for (int s = 0; s < 3; s++) {
        slots.emplace_back([&, s] {
            std::mt19937 rng(1000 + s);
            std::vector<mq_member *> crashed;
            while (!finished.load()) {
                consumer_life(b.get(), rec, "c" + std::to_string(serial++), rng, finished, crashed);
            }
            std::lock_guard g(crashed_mu);
            crashed_all.insert(crashed_all.end(), crashed.begin(), crashed.end());
        });
    }
    for (auto &t : producers) t.join();
    const int total = kProducers * kPerProducer;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
        {
            std::lock_guard g(rec.mu);
            if (rec.acked_total >= total) break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            finished = true;
            for (auto &t : slots) t.join();
            for (int32_t p = 0; p < 6; p++) {
                char d[256];
                mq_partition_describe(b.get(), "work", p, d, sizeof d, nullptr);
                ADD_FAILURE() << "consumers stalled; partition " << p << ": " << d;
            }
            return;
        }
        std::this_thread::sleep_for(5ms);  // pacing the check, not synchronising
    }
    finished = true;
    for (auto &t : slots) t.join();
    for (mq_member *m : crashed_all) EXPECT_EQ(mq_member_close(m), MQ_OK);

    EXPECT_EQ(rec.problems, std::vector<std::string>{});
    EXPECT_EQ(rec.acked_total, total);  // acks are fenced, so nothing is acked twice
    for (const auto &[key, seqs] : rec.acked) {
        const int k = std::stoi(key.substr(key.find("-k") + 2));
        const int expected = kPerProducer / kKeys + (k < kPerProducer % kKeys ? 1 : 0);
        ASSERT_EQ(seqs.size(), static_cast<size_t>(expected)) << key;
        for (size_t i = 0; i < seqs.size(); i++) ASSERT_EQ(seqs[i], static_cast<int>(i)) << key;
    }
    for (const auto &[where, who] : rec.holders) {
        EXPECT_EQ(who.size(), 1u) << "generation " << where.first << " partition " << where.second
                                  << " was handed to " << who.size() << " members";
    }
    for (int32_t p = 0; p < 6; p++) {
        const auto gi = group_info(b.get(), "work", "svc", p);
        EXPECT_EQ(gi.committed, partition_info(b.get(), "work", p).end) << p;
    }
}

}  // namespace
