// Headers ride in the arena with key and payload, so steady-state publishing, polling and
// acking of messages with headers touches the heap no more than without (test_alloc.cpp): none.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "alloc_hooks.h"
#include "mq.h"

namespace {

struct Counting {
    Counting() { alloc_hooks::count_start(); }
    ~Counting() { alloc_hooks::count_stop(); }
    long count() const { return alloc_hooks::count(); }
};

struct AllocHeaders : ::testing::Test {
    mq_broker *b = nullptr;
    const std::string payload = std::string(64, 'x');
    const mq_header headers[3] = {{"trace-id", 8, "4bf92f3577b34da6", 16},
                                  {"content-type", 12, "application/json", 16},
                                  {"", 0, "", 0}};
    void SetUp() override {
        ASSERT_EQ(mq_broker_new(nullptr, &b), MQ_OK);
        mq_topic_config cfg;
        mq_topic_config_init(&cfg, sizeof cfg);
        cfg.partitions = 2;
        cfg.capacity = 256;
        ASSERT_EQ(mq_topic_create(b, "t", &cfg), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    }
    void TearDown() override { mq_broker_free(b); }

    // Drains partition p for the group, checking each view's headers; false on any failure.
    bool drain(int32_t p, size_t max) {
        mq_message msgs[64];
        size_t got = 0;
        while (mq_group_poll(b, "t", "g", p, msgs, sizeof(mq_message), max, MQ_NO_WAIT, nullptr,
                             &got) == MQ_OK) {
            for (size_t i = 0; i < got; i++) {
                if (msgs[i].header_count != 3 ||
                    std::memcmp(msgs[i].headers[1].value, "application/json", 16) != 0) {
                    return false;
                }
            }
            if (mq_group_ack(b, "t", "g", p, msgs[got - 1].offset) != MQ_OK) return false;
        }
        return true;
    }
};

TEST_F(AllocHeaders, SinglePublishesWithHeadersDoNotAllocateAfterWarmUp) {
    auto run = [&](int n) {
        for (int i = 0; i < n; i++) {
            int32_t p;
            if (mq_topic_publish(b, "t", "k", 1, payload.data(), payload.size(), headers, 3,
                                 MQ_NO_WAIT, nullptr, &p, nullptr) != MQ_OK) {
                return false;
            }
            if (!drain(p, 1)) return false;
        }
        return true;
    };
    ASSERT_TRUE(run(10000));
    Counting counting;
    ASSERT_TRUE(run(100000));
    EXPECT_EQ(counting.count(), 0);
}

TEST_F(AllocHeaders, BatchesWithHeadersDoNotAllocateAfterWarmUp) {
    mq_record recs[64];
    const char *keys[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 64; i++)
        recs[i] = mq_record{keys[i % 4], 1, payload.data(), payload.size(), headers, 3};
    auto run = [&](int n) {
        for (int i = 0; i < n; i++) {
            size_t done = 0;
            if (mq_topic_publish_batch(b, "t", recs, sizeof(mq_record), 64, MQ_NO_WAIT, nullptr,
                                       nullptr, sizeof(mq_publish_result), &done) != MQ_OK ||
                done != 64) {
                return false;
            }
            if (!drain(0, 64) || !drain(1, 64)) return false;
        }
        return true;
    };
    ASSERT_TRUE(run(500));
    Counting counting;
    ASSERT_TRUE(run(2000));
    EXPECT_EQ(counting.count(), 0);
}

}  // namespace
