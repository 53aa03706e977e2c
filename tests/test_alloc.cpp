// Steady-state publishing, polling and acking must not touch the heap: key and payload bytes go
// into chunks that are recycled after trim, and cursors keep their capacity. The counting comes
// from alloc_hooks.cpp, the test binary's replacement of the global allocation functions.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "alloc_hooks.h"
#include "mq.h"

namespace {
// Counts allocations on every thread while it lives.
struct Counting {
    Counting() { alloc_hooks::count_start(); }
    ~Counting() { alloc_hooks::count_stop(); }
    long count() const { return alloc_hooks::count(); }
};
}  // namespace

namespace {

struct AllocFixture : ::testing::Test {
    mq_broker *b = nullptr;
    void SetUp() override { ASSERT_EQ(mq_broker_new(nullptr, &b), MQ_OK); }
    void TearDown() override { mq_broker_free(b); }

    void create(const char *topic, int32_t partitions, int64_t capacity) {
        mq_topic_config cfg;
        mq_topic_config_init(&cfg, sizeof cfg);
        cfg.partitions = partitions;
        cfg.capacity = capacity;
        ASSERT_EQ(mq_topic_create(b, topic, &cfg), MQ_OK) << mq_last_error();
    }

    // One publish, one poll and one ack per group; returns false on any failure.
    bool cycle(const char *topic, const char *const *groups, size_t ngroups, const char *key,
               const std::string &payload) {
        int32_t p;
        int64_t off;
        if (mq_topic_publish(b, topic, key, key ? std::strlen(key) : 0, payload.data(),
                             payload.size(), NULL, 0, MQ_NO_WAIT, nullptr, &p, &off) != MQ_OK) {
            return false;
        }
        for (size_t g = 0; g < ngroups; g++) {
            mq_message m;
            size_t n = 0;
            if (mq_group_poll(b, topic, groups[g], p, &m, sizeof(mq_message), 1, MQ_NO_WAIT,
                              nullptr, &n) != MQ_OK ||
                n != 1)
                return false;
            if (m.offset != off || m.payload_len != payload.size()) return false;
            if (mq_group_ack(b, topic, groups[g], p, m.offset) != MQ_OK) return false;
        }
        return true;
    }
};

// Without this, a replacement that silently failed to link would make every test below pass.
TEST(AllocCounter, SeesAllocations) {
    Counting counting;
    auto *p = new std::string(100, 'x');
    delete p;
    EXPECT_GE(counting.count(), 1);
}

TEST_F(AllocFixture, PublishPollAckCyclesDoNotAllocateAfterWarmUp) {
    create("t", 1, 1024);
    const char *groups[] = {"g"};
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    const std::string payload(64, 'x');
    for (int i = 0; i < 10000; i++) ASSERT_TRUE(cycle("t", groups, 1, "k", payload)) << i;
    Counting counting;
    for (int i = 0; i < 100000; i++) ASSERT_TRUE(cycle("t", groups, 1, "k", payload)) << i;
    EXPECT_EQ(counting.count(), 0);
}

TEST_F(AllocFixture, TwoGroupsKeylessAndBacklogDoNotAllocateAfterWarmUp) {
    create("t", 4, 64);
    const char *groups[] = {"a", "b"};
    ASSERT_EQ(mq_group_subscribe(b, "t", "a", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b, "t", "b", nullptr), MQ_OK);
    const std::string payload(200, 'y');
    // Keep a standing backlog so trimming and recycling happen while messages are retained.
    for (int i = 0; i < 32; i++) {
        ASSERT_EQ(mq_topic_publish(b, "t", "k", 1, payload.data(), payload.size(), NULL, 0,
                                   MQ_NO_WAIT, nullptr, nullptr, nullptr),
                  MQ_OK);
    }
    auto run = [&](int n) {
        for (int i = 0; i < n; i++) {
            int32_t p;
            int64_t off;
            if (mq_topic_publish(b, "t", nullptr, 0, payload.data(), payload.size(), NULL, 0,
                                 MQ_NO_WAIT, nullptr, &p, &off) != MQ_OK)
                return false;
            for (const char *g : groups) {
                mq_message m[4];
                size_t got = 0;
                if (mq_group_poll(b, "t", g, p, m, sizeof(mq_message), 4, MQ_NO_WAIT, nullptr,
                                  &got) != MQ_OK)
                    return false;
                if (mq_group_ack(b, "t", g, p, m[got - 1].offset) != MQ_OK) return false;
            }
        }
        return true;
    };
    ASSERT_TRUE(run(20000));
    Counting counting;
    ASSERT_TRUE(run(100000));
    EXPECT_EQ(counting.count(), 0);
}

TEST_F(AllocFixture, BatchPublishDoesNotAllocateAfterWarmUp) {
    create("t", 2, 256);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    std::string payload(64, 'z');
    mq_record recs[64];
    mq_publish_result res[64];
    const char *keys[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 64; i++)
        recs[i] = mq_record{keys[i % 4], 1, payload.data(), payload.size()};
    mq_message msgs[64];
    auto run = [&](int n) {
        for (int i = 0; i < n; i++) {
            size_t done = 0;
            if (mq_topic_publish_batch(b, "t", recs, sizeof(mq_record), 64, MQ_NO_WAIT, nullptr,
                                       res, sizeof(mq_publish_result), &done) != MQ_OK ||
                done != 64)
                return false;
            for (int32_t p = 0; p < 2; p++) {
                size_t got = 0;
                while (mq_group_poll(b, "t", "g", p, msgs, sizeof(mq_message), 64, MQ_NO_WAIT,
                                     nullptr, &got) == MQ_OK) {
                    if (mq_group_ack(b, "t", "g", p, msgs[got - 1].offset) != MQ_OK) return false;
                }
            }
        }
        return true;
    };
    ASSERT_TRUE(run(500));
    Counting counting;
    ASSERT_TRUE(run(2000));  // 128,000 messages
    EXPECT_EQ(counting.count(), 0);
}

TEST_F(AllocFixture, PushSubscriptionDeliveryDoesNotAllocateAfterStart) {
    // A small capacity makes the warm-up reach the largest backlog the measured run can have.
    create("t", 1, 64);
    struct State {
        std::mutex mu;
        std::condition_variable cv;
        long seen = 0;
    } st;
    auto handler = [](void *user, const mq_message *) -> int {
        auto *s = static_cast<State *>(user);
        std::lock_guard g(s->mu);
        s->seen++;
        s->cv.notify_all();
        return 0;
    };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "t", "g", nullptr, handler, &st, nullptr, &sub), MQ_OK);
    const std::string payload(64, 'p');
    auto publish_and_wait = [&](long n) {
        long target;
        {
            std::lock_guard g(st.mu);
            target = st.seen + n;
        }
        for (long i = 0; i < n; i++) {
            if (mq_topic_publish(b, "t", "k", 1, payload.data(), payload.size(), NULL, 0,
                                 MQ_WAIT_FOREVER, nullptr, nullptr, nullptr) != MQ_OK)
                return false;
        }
        std::unique_lock lk(st.mu);
        return st.cv.wait_for(lk, std::chrono::seconds(30), [&] { return st.seen >= target; });
    };
    ASSERT_TRUE(publish_and_wait(10000));
    {
        Counting counting;
        ASSERT_TRUE(publish_and_wait(100000));
        EXPECT_EQ(counting.count(), 0);
    }
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
}

}  // namespace
