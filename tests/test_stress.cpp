// Load: SPEC.md's reference stress, and a mixed concurrency test with failures (nacks, handler
// failures, consumers that vanish mid-batch and come back after their lease ran out) that checks
// the delivery guarantee: at-least-once, per-key order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using mqtest::BrokerPtr;

// Every payload says which key it belongs to and its place in that key's sequence.
struct Payload {
    uint32_t key;
    uint32_t seq;
};

Payload decode(const mq_message &m) {
    Payload p{};
    EXPECT_EQ(m.payload_len, sizeof p);
    if (m.payload_len == sizeof p) std::memcpy(&p, m.payload, sizeof p);
    return p;
}

std::string key_name(int k) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "key-%02d", k);
    return buf;
}

uint32_t test_seed() {
    const char *env = std::getenv("MQ_TEST_SEED");
    return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 20261130u;
}

// Per-key order of what a group has done: each key's sequence must go 0, 1, 2, ... Repeats
// (redeliveries of work already done) are allowed and counted; a jump ahead is a gap.
class OrderCheck {
public:
    explicit OrderCheck(size_t keys) : next_(keys, 0) {}
    // Returns true if seq was new work (the next one in order).
    bool record(uint32_t key, uint32_t seq) {
        std::lock_guard<std::mutex> lock(mu_);
        if (key >= next_.size()) {
            errors_.push_back("unknown key " + std::to_string(key));
            return false;
        }
        if (seq == next_[key]) {
            next_[key]++;
            return true;
        }
        if (seq < next_[key]) {
            repeats_++;
            return false;
        }
        if (errors_.size() < 10)
            errors_.push_back(key_name(static_cast<int>(key)) + ": got seq " + std::to_string(seq) +
                              " after " + std::to_string(next_[key]));
        return false;
    }
    std::vector<uint32_t> next() {
        std::lock_guard<std::mutex> lock(mu_);
        return next_;
    }
    std::vector<std::string> errors() {
        std::lock_guard<std::mutex> lock(mu_);
        return errors_;
    }
    int64_t repeats() {
        std::lock_guard<std::mutex> lock(mu_);
        return repeats_;
    }

private:
    std::mutex mu_;
    std::vector<uint32_t> next_;
    std::vector<std::string> errors_;
    int64_t repeats_ = 0;
};

// ---- SPEC.md's reference stress ------------------------------------------------------------

constexpr int kProducers = 4;
constexpr int kPerProducer = 2500;
constexpr int kKeys = 40;
constexpr int kPartitions = 4;
constexpr int64_t kCapacity = 64;
constexpr int kMembers = 2;

TEST(SpecStress, ReferenceStress) {
    mq_broker *raw = nullptr;
    ASSERT_EQ(mq_broker_new(nullptr, &raw), MQ_OK);
    BrokerPtr broker(raw);
    mq_broker *b = raw;
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = kPartitions;
    cfg.capacity = kCapacity;
    ASSERT_EQ(mq_topic_create(b, "orders", &cfg), MQ_OK);
    const char *groups[] = {"billing", "email"};
    for (const char *g : groups) ASSERT_EQ(mq_group_subscribe(b, "orders", g, nullptr), MQ_OK);

    // Where each key lands, hence how many messages each partition will carry.
    std::vector<std::string> keys;
    std::vector<int> expected_per_partition(kPartitions, 0);
    for (int k = 0; k < kKeys; ++k) {
        keys.push_back(key_name(k));
        int32_t p = -1;
        ASSERT_EQ(mq_key_partition(keys[k].data(), keys[k].size(), kPartitions, &p), MQ_OK);
        expected_per_partition[p] += kProducers * kPerProducer / kKeys;
    }

    const auto deadline = Clock::now() + 30s;
    std::atomic<bool> give_up{false};
    std::atomic<int> producer_errors{0};
    std::vector<std::thread> threads;
    for (int prod = 0; prod < kProducers; ++prod) {
        threads.emplace_back([&, prod] {
            std::vector<int> mine;
            for (int k = prod; k < kKeys; k += kProducers) mine.push_back(k);
            std::vector<uint32_t> seq(kKeys, 0);
            for (int i = 0; i < kPerProducer && !give_up; ++i) {
                int k = mine[i % mine.size()];
                Payload p{static_cast<uint32_t>(k), seq[k]++};
                mq_status s = mq_topic_publish(b, "orders", keys[k].data(), keys[k].size(), &p,
                                               sizeof p, NULL, 0, 10000, nullptr, nullptr, nullptr);
                if (s != MQ_OK) {
                    producer_errors++;
                    give_up = true;
                }
            }
        });
    }

    struct GroupState {
        OrderCheck order{kKeys};
        std::atomic<int> received{0};
        std::atomic<int> errors{0};
        std::atomic<int64_t> worst_backlog{0};
    } state[2];

    for (int gi = 0; gi < 2; ++gi) {
        for (int member = 0; member < kMembers; ++member) {
            threads.emplace_back([&, gi, member] {
                GroupState &st = state[gi];
                const char *group = groups[gi];
                int32_t owned[kPartitions];
                size_t n_owned = 0;
                if (mq_assignment_round_robin(kPartitions, kMembers, member, owned, kPartitions,
                                              &n_owned) != MQ_OK) {
                    st.errors++;
                    return;
                }
                int expected = 0;
                for (size_t i = 0; i < n_owned; ++i) expected += expected_per_partition[owned[i]];
                int got = 0;
                mq_message msgs[10];
                while (got < expected && !give_up) {
                    if (Clock::now() > deadline) {
                        give_up = true;
                        break;
                    }
                    for (size_t i = 0; i < n_owned; ++i) {
                        size_t n = 0;
                        mq_status s = mq_group_poll(b, "orders", group, owned[i], msgs,
                                                    sizeof(mq_message), 10, 1, nullptr, &n);
                        if (s == MQ_TIMEOUT) continue;
                        if (s != MQ_OK) {
                            st.errors++;
                            give_up = true;
                            break;
                        }
                        for (size_t j = 0; j < n; ++j) {
                            Payload p = decode(msgs[j]);
                            if (!st.order.record(p.key, p.seq)) st.errors++;
                        }
                        got += static_cast<int>(n);
                        st.received += static_cast<int>(n);
                        mq_partition_info pi{};
                        mq_partition_get_info(b, "orders", owned[i], &pi, sizeof pi);
                        int64_t seen = std::max(pi.backlog, pi.end - pi.start);
                        int64_t prev = st.worst_backlog.load();
                        while (seen > prev && !st.worst_backlog.compare_exchange_weak(prev, seen)) {
                        }
                        if (mq_group_ack(b, "orders", group, owned[i], msgs[n - 1].offset) != MQ_OK)
                            st.errors++;
                        // Part of the workload: email is the slow consumer.
                        if (gi == 1) std::this_thread::sleep_for(200us);
                    }
                }
            });
        }
    }
    for (std::thread &t : threads) t.join();

    EXPECT_EQ(producer_errors.load(), 0);
    EXPECT_FALSE(give_up.load()) << "the run did not finish by its deadline";
    for (int gi = 0; gi < 2; ++gi) {
        SCOPED_TRACE(groups[gi]);
        EXPECT_EQ(state[gi].received.load(), kProducers * kPerProducer);
        EXPECT_EQ(state[gi].errors.load(), 0);
        EXPECT_EQ(state[gi].order.errors(), std::vector<std::string>{});
        EXPECT_EQ(state[gi].order.repeats(), 0);
        std::vector<uint32_t> next = state[gi].order.next();
        for (int k = 0; k < kKeys; ++k)
            EXPECT_EQ(next[k], static_cast<uint32_t>(kProducers * kPerProducer / kKeys))
                << key_name(k);
        EXPECT_LE(state[gi].worst_backlog.load(), kCapacity);
    }

    int64_t waits = 0, max_backlog = 0;
    for (int32_t p = 0; p < kPartitions; ++p) {
        mq_partition_info pi{};
        ASSERT_EQ(mq_partition_get_info(b, "orders", p, &pi, sizeof pi), MQ_OK);
        EXPECT_LE(pi.max_backlog, kCapacity) << "partition " << p;
        EXPECT_EQ(pi.end, expected_per_partition[p]) << "partition " << p;
        EXPECT_EQ(pi.start, pi.end) << "partition " << p;
        EXPECT_EQ(pi.retained_bytes, 0) << "partition " << p;
        waits += pi.producer_waits;
        max_backlog = std::max(max_backlog, pi.max_backlog);
    }
    std::printf("reference stress: producer waits %lld, largest backlog %lld\n",
                static_cast<long long>(waits), static_cast<long long>(max_backlog));
    EXPECT_GT(waits, 0) << "the producers never blocked on back-pressure";
    EXPECT_EQ(max_backlog, kCapacity);
}

// ---- at-least-once under failures ----------------------------------------------------------

constexpr int kMixProducers = 3;
constexpr int kMixPerProducer = 400;
constexpr int kMixKeys = 12;
constexpr int kMixPerKey = kMixProducers * kMixPerProducer / kMixKeys;
constexpr int kMixPartitions = 4;
constexpr int kMixTotal = kMixProducers * kMixPerProducer;

// Push handlers decide failure from the seed and the delivery itself, so no generator is shared
// between handler threads.
struct PushGroup {
    uint32_t seed = 0;
    OrderCheck order{kMixKeys};
    std::atomic<int> done{0};      // distinct messages processed successfully
    std::atomic<int> failures{0};  // handler calls that reported failure
    std::atomic<int> redelivered{0};
    std::atomic<int> frees{0};
};

int push_handler(void *user, const mq_message *m) {
    auto *g = static_cast<PushGroup *>(user);
    if (m->delivery_count > 1) g->redelivered++;
    uint64_t h = (uint64_t{g->seed} << 32) ^ (uint64_t(m->partition) << 48) ^
                 (uint64_t(m->offset) * 0x9E3779B97F4A7C15ull) ^ m->delivery_count;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    if (h % 100 < 10) {
        g->failures++;
        return 1;
    }
    Payload p = decode(*m);
    if (g->order.record(p.key, p.seq)) g->done++;
    return 0;
}
void push_free(void *user) { static_cast<PushGroup *>(user)->frees++; }

TEST(SpecStress, AtLeastOnceWithNacksAndLeaseExpiries) {
    const uint32_t seed = test_seed();
    std::printf("seed %u (set MQ_TEST_SEED to replay)\n", seed);
    RecordProperty("seed", static_cast<int>(seed));

    mq_broker *raw = nullptr;
    ASSERT_EQ(mq_broker_new(nullptr, &raw), MQ_OK);
    BrokerPtr broker(raw);
    mq_broker *b = raw;
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = kMixPartitions;
    cfg.capacity = 32;
    cfg.ack_timeout_ms = 25;  // short and real: abandoned batches come back quickly
    ASSERT_EQ(mq_topic_create(b, "mix", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b, "mix", "pull", nullptr), MQ_OK);

    PushGroup push;
    push.seed = seed;
    std::vector<mq_subscription *> subs;
    for (int member = 0; member < 2; ++member) {
        int32_t owned[kMixPartitions];
        size_t n = 0;
        ASSERT_EQ(mq_assignment_round_robin(kMixPartitions, 2, member, owned, kMixPartitions, &n),
                  MQ_OK);
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        o.prefetch = 5;
        o.partitions = owned;
        o.partition_count = n;
        mq_subscription *s = nullptr;
        ASSERT_EQ(mq_subscription_open(b, "mix", "push", &o, &push_handler, &push, &push_free, &s),
                  MQ_OK)
            << mq_last_error();
        subs.push_back(s);
    }

    const auto deadline = Clock::now() + 30s;
    std::atomic<bool> give_up{false};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int prod = 0; prod < kMixProducers; ++prod) {
        threads.emplace_back([&, prod] {
            std::vector<uint32_t> seq(kMixKeys, 0);
            for (int i = 0; i < kMixPerProducer && !give_up; ++i) {
                int k = prod + kMixProducers * (i % (kMixKeys / kMixProducers));
                std::string key = key_name(k);
                Payload p{static_cast<uint32_t>(k), seq[k]++};
                if (mq_topic_publish(b, "mix", key.data(), key.size(), &p, sizeof p, NULL, 0, 10000,
                                     nullptr, nullptr, nullptr) != MQ_OK) {
                    errors++;
                    give_up = true;
                }
            }
        });
    }

    // Pull group: one poller per partition. Per batch: ack (most), nack, or vanish (neither:
    // the lease must bring the batch back).
    OrderCheck pull_order(kMixKeys);
    std::atomic<int> pull_done{0}, nacks{0}, vanished{0}, lease_returns{0};
    for (int32_t part = 0; part < kMixPartitions; ++part) {
        threads.emplace_back([&, part] {
            std::mt19937 rng(seed + static_cast<uint32_t>(part));
            std::uniform_int_distribution<int> pct(0, 99);
            int64_t waiting_for = -1;  // after vanishing: the offset the redelivery starts at
            mq_message msgs[8];
            while (pull_done.load() < kMixTotal && !give_up) {
                if (Clock::now() > deadline) {
                    give_up = true;
                    break;
                }
                size_t n = 0;
                mq_status s = mq_group_poll(b, "mix", "pull", part, msgs, sizeof(mq_message), 8, 10,
                                            nullptr, &n);
                if (s == MQ_TIMEOUT) continue;
                if (s != MQ_OK) {
                    errors++;
                    give_up = true;
                    break;
                }
                if (waiting_for >= 0) {
                    // A vanished consumer does not process what comes after its lost batch;
                    // these too stay in flight until the lease returns everything.
                    if (msgs[0].offset != waiting_for) continue;
                    lease_returns++;
                    waiting_for = -1;
                }
                int roll = pct(rng);
                if (roll < 10) {
                    nacks++;
                    if (mq_group_nack(b, "mix", "pull", part, 0) != MQ_OK) errors++;
                } else if (roll < 15) {
                    vanished++;
                    waiting_for = msgs[0].offset;
                } else {
                    // Views die with the ack that passes them: read the batch first.
                    Payload work[8];
                    for (size_t i = 0; i < n; ++i) work[i] = decode(msgs[i]);
                    if (mq_group_ack(b, "mix", "pull", part, msgs[n - 1].offset) != MQ_OK) {
                        errors++;
                        continue;
                    }
                    for (size_t i = 0; i < n; ++i) {
                        if (pull_order.record(work[i].key, work[i].seq)) pull_done++;
                    }
                }
            }
        });
    }

    for (std::thread &t : threads) t.join();
    EXPECT_FALSE(give_up.load()) << "the run did not finish by its deadline";
    EXPECT_EQ(errors.load(), 0);

    // Everything the push group did must also be acked: wait for the logs to drain.
    bool drained = false;
    while (!drained && Clock::now() < deadline) {
        drained = true;
        for (int32_t p = 0; p < kMixPartitions; ++p) {
            mq_partition_info pi{};
            mq_partition_get_info(b, "mix", p, &pi, sizeof pi);
            drained = drained && pi.backlog == 0;
        }
        if (!drained) std::this_thread::yield();
    }
    EXPECT_TRUE(drained) << "messages were left unacknowledged";
    for (mq_subscription *s : subs) EXPECT_EQ(mq_subscription_close(s), MQ_OK);
    EXPECT_EQ(push.frees.load(), 2);

    std::printf(
        "pull: %d nacks, %d vanished batches, %d returned by lease; push: %d failures, "
        "%d redeliveries\n",
        nacks.load(), vanished.load(), lease_returns.load(), push.failures.load(),
        push.redelivered.load());
    EXPECT_EQ(pull_done.load(), kMixTotal);
    EXPECT_EQ(push.done.load(), kMixTotal);
    EXPECT_EQ(pull_order.errors(), std::vector<std::string>{});
    EXPECT_EQ(push.order.errors(), std::vector<std::string>{});
    std::vector<uint32_t> pn = pull_order.next(), qn = push.order.next();
    for (int k = 0; k < kMixKeys; ++k) {
        EXPECT_EQ(pn[k], static_cast<uint32_t>(kMixPerKey)) << "pull " << key_name(k);
        EXPECT_EQ(qn[k], static_cast<uint32_t>(kMixPerKey)) << "push " << key_name(k);
    }
    // The failure paths were exercised, not just the happy one.
    EXPECT_GT(nacks.load(), 0);
    EXPECT_GT(vanished.load(), 0);
    EXPECT_EQ(lease_returns.load(), vanished.load());
    EXPECT_GT(push.failures.load(), 0);
    EXPECT_GT(push.redelivered.load(), 0);
}

}  // namespace
