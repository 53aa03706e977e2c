// The spinning wait strategy (mq_broker_options.spin_ns): a poll spins before it blocks, and
// must still see every change a blocking poll sees.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

BrokerPtr spinning_broker(int64_t spin_ns) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.spin_ns = spin_ns;
    mq_broker *b = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_OK) << mq_last_error();
    return BrokerPtr(b);
}

// Creates topic t with `partitions` partitions and joins one member, which then owns them all
// (its assignment fetched, so its polls are not refused as stale).
mq_member *sole_member(mq_broker *b, int32_t partitions) {
    mq_topic_config cfg = topic_config(partitions, 64);
    EXPECT_EQ(mq_topic_create(b, "t", &cfg), MQ_OK) << mq_last_error();
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b, "t", "g", nullptr, &m), MQ_OK) << mq_last_error();
    int64_t gen = 0;
    int32_t parts[8];
    size_t np = 0;
    EXPECT_EQ(mq_member_get_assignment(m, &gen, parts, 8, &np), MQ_OK) << mq_last_error();
    EXPECT_EQ(np, static_cast<size_t>(partitions));
    return m;
}

TEST(WaitStrategy, ASpinningPollSeesAPublishFromAnotherThread) {
    auto b = spinning_broker(2'000'000);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 200; i++) {
        auto poller = std::async(std::launch::async, [&] {
            mq_message m[4];
            size_t n = 0;
            const mq_status st =
                mq_group_poll(b.get(), "t", "g", 0, m, sizeof(mq_message), 4, 10000, nullptr, &n);
            std::string got = n ? payload_of(m[0]) : "";
            if (n) mq_group_ack(b.get(), "t", "g", 0, m[n - 1].offset);
            return std::make_pair(st, got);
        });
        const std::string payload = "m" + std::to_string(i);
        publish(b.get(), "t", nullptr, payload);
        ASSERT_EQ(poller.wait_for(10s), std::future_status::ready);
        const auto [st, got] = poller.get();
        ASSERT_EQ(st, MQ_OK) << i;
        ASSERT_EQ(got, payload) << i;
    }
}

TEST(WaitStrategy, ASpinningPollStillTimesOutAndWakesOnClose) {
    auto b = spinning_broker(1'000'000);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    mq_message m[1];
    size_t n = 0;
    EXPECT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof(mq_message), 1, 20, nullptr, &n),
              MQ_TIMEOUT);
    auto poller = std::async(std::launch::async, [&] {
        size_t k = 0;
        mq_message got[1];
        return mq_group_poll(b.get(), "t", "g", 0, got, sizeof(mq_message), 1, MQ_WAIT_FOREVER,
                             nullptr, &k);
    });
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(poller.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(poller.get(), MQ_CLOSED);
}

// Group members spin too, and a spin ends as soon as a partition they watch changes. With a
// one-second spin, 20 hand-offs take 20 s or more if a spin missed its signal; the bound below
// leaves half of that for a loaded machine.
TEST(WaitStrategy, ASpinningMemberPollReturnsAsSoonAsAWatchedPartitionChanges) {
    auto b = spinning_broker(1'000'000'000);
    mq_member *m = sole_member(b.get(), 2);
    ASSERT_NE(m, nullptr);
    // One poller; each publish waits until the previous message was taken, then a moment more
    // so that the poller is usually already spinning when it comes (if it is not, the poll
    // finds the message at once: the test passes either way when spins end on a signal).
    std::atomic<int> taken{0};
    auto poller = std::async(std::launch::async, [&] {
        for (int i = 0; i < 20; i++) {
            mq_message got[4];
            size_t n = 0;
            const mq_status st =
                mq_member_poll(m, got, sizeof(mq_message), 4, MQ_WAIT_FOREVER, nullptr, &n);
            if (st != MQ_OK || n != 1 || payload_of(got[0]) != "m" + std::to_string(i))
                return testing::AssertionFailure() << "poll " << i << ": " << mq_status_name(st);
            if (mq_member_ack(m, got[0].partition, got[0].offset) != MQ_OK)
                return testing::AssertionFailure() << "ack " << i << ": " << mq_last_error();
            taken.store(i + 1);
        }
        return testing::AssertionSuccess();
    });
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; i++) {
        while (taken.load() < i) std::this_thread::yield();
        std::this_thread::sleep_for(1ms);
        const std::string key = "k" + std::to_string(i);  // spreads over both partitions
        publish(b.get(), "t", key.c_str(), "m" + std::to_string(i));
    }
    ASSERT_EQ(poller.wait_for(60s), std::future_status::ready);
    EXPECT_TRUE(poller.get());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// A spin longer than the poll's wait stops at the wait's deadline: ten 20 ms polls with a
// one-second spin take 10 s or more if it did not.
TEST(WaitStrategy, ASpinNeverOutlastsThePollsWait) {
    auto b = spinning_broker(1'000'000'000);
    mq_member *m = sole_member(b.get(), 1);
    ASSERT_NE(m, nullptr);
    mq_topic_config cfg = topic_config(1, 64);
    ASSERT_EQ(mq_topic_create(b.get(), "u", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "u", "g", nullptr), MQ_OK);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; i++) {
        mq_message got[1];
        size_t n = 0;
        EXPECT_EQ(mq_group_poll(b.get(), "u", "g", 0, got, sizeof(mq_message), 1, 20, nullptr, &n),
                  MQ_TIMEOUT);
        EXPECT_EQ(mq_member_poll(m, got, sizeof(mq_message), 1, 20, nullptr, &n), MQ_TIMEOUT);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

TEST(WaitStrategy, ASpinningMemberPollTimesOutAndWakesOnRebalanceAndClose) {
    auto b = spinning_broker(1'000'000);
    mq_member *m = sole_member(b.get(), 2);
    ASSERT_NE(m, nullptr);
    mq_message got[1];
    size_t n = 0;
    EXPECT_EQ(mq_member_poll(m, got, sizeof(mq_message), 1, 20, nullptr, &n), MQ_TIMEOUT);

    auto rebalanced = std::async(std::launch::async, [&] {
        size_t k = 0;
        mq_message one[1];
        return mq_member_poll(m, one, sizeof(mq_message), 1, MQ_WAIT_FOREVER, nullptr, &k);
    });
    mq_member *other = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &other), MQ_OK) << mq_last_error();
    ASSERT_EQ(rebalanced.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(rebalanced.get(), MQ_REBALANCED);
    int64_t gen = 0;
    int32_t parts[2];
    size_t np = 0;
    ASSERT_EQ(mq_member_get_assignment(m, &gen, parts, 2, &np), MQ_OK);

    auto closed = std::async(std::launch::async, [&] {
        size_t k = 0;
        mq_message one[1];
        return mq_member_poll(m, one, sizeof(mq_message), 1, MQ_WAIT_FOREVER, nullptr, &k);
    });
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(closed.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(closed.get(), MQ_CLOSED);
    EXPECT_EQ(mq_member_close(other), MQ_OK);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

TEST(WaitStrategy, SpinLengthIsValidated) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    EXPECT_EQ(o.spin_ns, 0);  // blocking is the default
    o.spin_ns = -1;
    mq_broker *b = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()), "");
    o.spin_ns = 1'000'000'001;
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_ERR_INVALID);
}

}  // namespace
