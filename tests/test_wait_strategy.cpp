// The spinning wait strategy (mq_broker_options.spin_ns): a poll spins before it blocks, and
// must still see every change a blocking poll sees.
#include <gtest/gtest.h>

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

TEST(WaitStrategy, ASpinningPollSeesAPublishFromAnotherThread) {
    auto b = spinning_broker(2'000'000);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 200; i++) {
        auto poller = std::async(std::launch::async, [&] {
            mq_message m[4];
            size_t n = 0;
            const mq_status st = mq_poll(b.get(), "t", "g", 0, m, 4, 10000, nullptr, &n);
            std::string got = n ? payload_of(m[0]) : "";
            if (n) mq_ack(b.get(), "t", "g", 0, m[n - 1].offset);
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
    EXPECT_EQ(mq_poll(b.get(), "t", "g", 0, m, 1, 20, nullptr, &n), MQ_TIMEOUT);
    auto poller = std::async(std::launch::async, [&] {
        size_t k = 0;
        mq_message got[1];
        return mq_poll(b.get(), "t", "g", 0, got, 1, MQ_WAIT_FOREVER, nullptr, &k);
    });
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(poller.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(poller.get(), MQ_CLOSED);
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
