// Small helpers shared by the delivery-control tests: a manual clock, RAII handles, and
// one-line wrappers that assert success.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"

namespace mqtest {

// Waits for a condition that a correct library makes true; the limit only ends a wrong one's
// hang. Yields between looks: this is a wait on a condition, not a sleep.
template <class F>
bool eventually(F &&f, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!f()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
    return true;
}

struct ManualClock {
    std::atomic<int64_t> ns{1'000'000'000};
    static int64_t read(void *self) { return static_cast<ManualClock *>(self)->ns.load(); }
    void advance_ms(int64_t ms) { ns += ms * 1'000'000; }
};

struct BrokerDeleter {
    void operator()(mq_broker *b) const { mq_broker_free(b); }
};
using BrokerPtr = std::unique_ptr<mq_broker, BrokerDeleter>;

inline BrokerPtr broker(ManualClock *clock = nullptr) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    if (clock) {
        o.clock = &ManualClock::read;
        o.clock_user = clock;
    }
    mq_broker *b = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_OK) << mq_last_error();
    return BrokerPtr(b);
}

inline BrokerPtr new_broker(ManualClock *clock = nullptr) { return broker(clock); }

inline mq_topic_config topic_config(int32_t partitions, int64_t capacity) {
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = partitions;
    c.capacity = capacity;
    return c;
}

inline std::string payload_of(const mq_message &m) {
    return std::string(static_cast<const char *>(m.payload), m.payload_len);
}

inline void publish(mq_broker *b, const char *topic, const char *key, const std::string &payload,
                    int64_t wait_ms = MQ_NO_WAIT) {
    ASSERT_EQ(mq_topic_publish(b, topic, key, key ? std::strlen(key) : 0, payload.data(),
                               payload.size(), NULL, 0, wait_ms, nullptr, nullptr, nullptr),
              MQ_OK)
        << mq_last_error();
}

// Polls with wait 0 and returns "offset:payload" strings (empty on MQ_TIMEOUT).
inline std::vector<mq_message> poll(mq_broker *b, const char *topic, const char *group,
                                    int32_t partition, size_t max = 16) {
    std::vector<mq_message> out(max);
    size_t n = 0;
    const mq_status st = mq_group_poll(b, topic, group, partition, out.data(), sizeof(mq_message),
                                       max, MQ_NO_WAIT, nullptr, &n);
    EXPECT_TRUE(st == MQ_OK || st == MQ_TIMEOUT) << mq_status_name(st) << ": " << mq_last_error();
    out.resize(n);
    return out;
}

inline mq_group_info group_info(mq_broker *b, const char *topic, const char *group,
                                int32_t partition = 0) {
    mq_group_info gi{};
    EXPECT_EQ(mq_group_get_info(b, topic, group, partition, &gi, sizeof gi), MQ_OK)
        << mq_last_error();
    return gi;
}

inline mq_partition_info partition_info(mq_broker *b, const char *topic, int32_t partition = 0);
inline mq_partition_info pinfo(mq_broker *b, const char *topic, int32_t p) {
    return partition_info(b, topic, p);
}
inline mq_group_info ginfo(mq_broker *b, const char *topic, const char *group, int32_t p) {
    return group_info(b, topic, group, p);
}

inline mq_partition_info partition_info(mq_broker *b, const char *topic, int32_t partition) {
    mq_partition_info pi{};
    EXPECT_EQ(mq_partition_get_info(b, topic, partition, &pi, sizeof pi), MQ_OK) << mq_last_error();
    return pi;
}

}  // namespace mqtest
