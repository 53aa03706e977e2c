// Dead letters and delayed nacks under concurrency: every message is either handled (acked)
// by its group or dead-lettered, never both, never neither, and each key's handled sequence
// stays in publish order.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
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

constexpr int kProducers = 4;
constexpr int kPerProducer = 1500;
constexpr int kKeysPerProducer = 5;
constexpr int kTotal = kProducers * kPerProducer;

bool is_poison(int id) { return id % 37 == 0; }

struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::map<int, int> handled;                           // id -> successful handler calls
    std::map<std::string, std::vector<int>> handled_seq;  // key -> seqs in handling order
    std::set<int> dead;                                   // ids seen on the dead-letter topic
    std::vector<std::string> problems;
    std::mt19937 rng{20261130};

    bool done() const { return handled.size() + dead.size() >= static_cast<size_t>(kTotal); }
};

// payload "id key seq"
void parse(const mq_message &m, int &id, std::string &key, int &seq) {
    char k[32];
    const std::string p = payload_of(m);
    if (std::sscanf(p.c_str(), "%d %31s %d", &id, k, &seq) != 3) id = -1;
    key = k;
}

int handler(void *user, const mq_message *m) {
    auto *s = static_cast<Shared *>(user);
    int id, seq;
    std::string key;
    parse(*m, id, key, seq);
    std::lock_guard g(s->mu);
    if (id < 0) {
        s->problems.push_back("unparsable payload");
        return 0;
    }
    bool fail = is_poison(id) || s->rng() % 5 == 0;
    if (fail) {
        if (s->rng() % 2) mq_handler_set_nack_delay(1);
        return 1;
    }
    s->handled[id]++;
    s->handled_seq[key].push_back(seq);
    s->cv.notify_all();
    return 0;
}

TEST(DeliveryStress, EveryMessageIsHandledOrDeadLetteredExactlyOnceInKeyOrder) {
    auto b = broker();
    auto cfg = topic_config(4, 64);
    ASSERT_EQ(mq_topic_create(b.get(), "work", &cfg), MQ_OK);
    auto dcfg = topic_config(1, 4096);
    ASSERT_EQ(mq_topic_create(b.get(), "work.dlq", &dcfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "work.dlq", "ops", nullptr), MQ_OK);
    mq_group_options go;
    mq_group_options_init(&go, sizeof go);
    go.max_deliveries = 3;
    go.dead_letter_topic = "work.dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "work", "svc", &go), MQ_OK);

    Shared s;
    mq_subscription *subs[2] = {};
    const int32_t parts[2][2] = {{0, 2}, {1, 3}};
    for (int i = 0; i < 2; i++) {
        mq_subscription_options so;
        mq_subscription_options_init(&so, sizeof so);
        so.partitions = parts[i];
        so.partition_count = 2;
        so.prefetch = 8;
        ASSERT_EQ(mq_subscription_open(b.get(), "work", "svc", &so, handler, &s, nullptr, &subs[i]),
                  MQ_OK)
            << mq_last_error();
    }
    std::thread dlq_reader([&] {
        mq_message m[32];
        for (;;) {
            size_t n = 0;
            const mq_status st = mq_group_poll(b.get(), "work.dlq", "ops", 0, m, sizeof(mq_message),
                                               32, 50, nullptr, &n);
            if (st == MQ_TIMEOUT) {
                std::lock_guard g(s.mu);
                if (s.done()) return;
                continue;
            }
            if (st != MQ_OK) return;
            std::lock_guard g(s.mu);
            for (size_t i = 0; i < n; i++) {
                int id, seq;
                std::string key;
                parse(m[i], id, key, seq);
                if (!m[i].dead_letter || std::string(m[i].dead_letter->group) != "svc" ||
                    m[i].dead_letter->delivery_count != 3) {
                    s.problems.push_back("dead letter without the right origin: " +
                                         std::to_string(id));
                }
                if (!s.dead.insert(id).second)
                    s.problems.push_back("dead-lettered twice: " + std::to_string(id));
            }
            mq_group_ack(b.get(), "work.dlq", "ops", 0, m[n - 1].offset);
            s.cv.notify_all();
        }
    });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++) {
        producers.emplace_back([&, p] {
            for (int i = 0; i < kPerProducer; i++) {
                const int k = i % kKeysPerProducer;
                const std::string key = "p" + std::to_string(p) + "k" + std::to_string(k);
                const int id = p * kPerProducer + i;
                const std::string payload =
                    std::to_string(id) + " " + key + " " + std::to_string(i / kKeysPerProducer);
                if (mq_topic_publish(b.get(), "work", key.data(), key.size(), payload.data(),
                                     payload.size(), NULL, 0, MQ_WAIT_FOREVER, nullptr, nullptr,
                                     nullptr) != MQ_OK) {
                    std::lock_guard g(s.mu);
                    s.problems.push_back(std::string("publish failed: ") + mq_last_error());
                    return;
                }
            }
        });
    }
    for (auto &t : producers) t.join();
    {
        std::unique_lock lk(s.mu);
        EXPECT_TRUE(s.cv.wait_for(lk, 60s, [&] { return s.done(); }))
            << "handled " << s.handled.size() << " + dead " << s.dead.size() << " of " << kTotal;
    }
    for (auto *sub : subs) ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    dlq_reader.join();

    EXPECT_EQ(s.problems, std::vector<std::string>{});
    for (int id = 0; id < kTotal; id++) {
        const bool handled = s.handled.count(id) > 0;
        const bool dead = s.dead.count(id) > 0;
        EXPECT_NE(handled, dead) << "message " << id
                                 << (handled ? " both handled and dead-lettered" : " lost");
        if (handled)
            EXPECT_EQ(s.handled[id], 1) << "message " << id << " handled twice after success";
        if (is_poison(id)) EXPECT_TRUE(dead) << "poison message " << id << " was not dead-lettered";
    }
    for (const auto &[key, seqs] : s.handled_seq) {
        for (size_t i = 1; i < seqs.size(); i++) {
            ASSERT_LT(seqs[i - 1], seqs[i]) << "key " << key << " handled out of order";
        }
    }
    int64_t dead_counted = 0;
    for (int32_t p = 0; p < 4; p++)
        dead_counted += group_info(b.get(), "work", "svc", p).dead_lettered;
    EXPECT_EQ(dead_counted, static_cast<int64_t>(s.dead.size()));
}

}  // namespace
