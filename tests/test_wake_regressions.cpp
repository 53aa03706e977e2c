// Wake-ups the wake protocol's model (tests/model/wake.pml) found missing in the code: each test
// fails without its fix.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "mq_test_util.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t producer_waits(mq_broker *b) {
    mq_partition_info i;
    EXPECT_EQ(mq_partition_get_info(b, "t", 0, &i, sizeof i), MQ_OK) << mq_last_error();
    return i.producer_waits;
}

// Found by the model (mutant BUG_LAST_GROUP_WAKES_FREED): unsubscribing the last group freed one
// message and woke one publisher, though without groups every publisher has room (rule 8); the
// other slept until its deadline.
TEST(WakeRegressions, UnsubscribingTheLastGroupWakesEveryWaitingPublisher) {
    auto b = mqtest::broker();
    const mq_topic_config cfg = mqtest::topic_config(1, 1);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK) << mq_last_error();
    mqtest::publish(b.get(), "t", nullptr, "fills the partition");

    constexpr int64_t kWaitMs = 20'000;  // far longer than the test takes when it passes
    mq_status st[2] = {MQ_ERR_INTERNAL, MQ_ERR_INTERNAL};
    Clock::duration took[2]{};
    auto publisher = [&](int i) {
        const auto t0 = Clock::now();
        st[i] = mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, nullptr, 0, kWaitMs, nullptr,
                                 nullptr, nullptr);
        took[i] = Clock::now() - t0;
    };
    std::thread p0(publisher, 0), p1(publisher, 1);
    // Both blocked: producer_waits is counted under the lock the wait then releases.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (producer_waits(b.get()) < 2 && Clock::now() < deadline) std::this_thread::yield();
    ASSERT_EQ(producer_waits(b.get()), 2);

    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "g"), MQ_OK) << mq_last_error();
    p0.join();
    p1.join();
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(st[i], MQ_OK) << "publisher " << i;
        // Woken by the unsubscribe, not by its deadline.
        EXPECT_LT(took[i], std::chrono::milliseconds(kWaitMs / 2)) << "publisher " << i;
    }
}

}  // namespace
