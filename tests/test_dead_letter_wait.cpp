// A poll's wait is one deadline, whatever happens during it: dead-lettering a head into a full
// dead-letter topic waits for room within that deadline, and the poll returns by then (issue
// 18, bug 2). The room is made by another thread after the dead-letter publish has started
// waiting (seen in producer_waits); the delays before it are the scenario, not synchronisation.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct DeadLetterWait : ::testing::Test {
    BrokerPtr b = broker();

    // src (one partition) with group g giving up after one delivery into dlq (capacity 1),
    // which `ops` keeps full with an occupant. `poison` heads are published to src and each
    // handed out once, so the next poll must dead-letter them.
    void SetUp() override {
        auto cfg = topic_config(1, 10);
        ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
        auto one = topic_config(1, 1);
        ASSERT_EQ(mq_topic_create(b.get(), "dlq", &one), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
        publish(b.get(), "dlq", nullptr, "occupant");
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        o.max_deliveries = 1;
        o.dead_letter_topic = "dlq";
        ASSERT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_OK);
    }
    void poison(int n) {
        for (int i = 0; i < n; i++) publish(b.get(), "src", nullptr, "poison");
        ASSERT_EQ(poll(b.get(), "src", "g", 0).size(), static_cast<size_t>(n));
        ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    }
    // Waits (up to 10 s) until the dead-letter topic has seen `n` publishes start waiting.
    bool dlq_waits_reach(int64_t n) {
        const auto until = Clock::now() + 10s;
        while (partition_info(b.get(), "dlq").producer_waits < n) {
            if (Clock::now() > until) return false;
            std::this_thread::yield();
        }
        return true;
    }
    // Makes room for one dead letter: ops takes and acks what dlq holds.
    void make_room() {
        auto m = poll(b.get(), "dlq", "ops", 0, 1);
        ASSERT_EQ(m.size(), 1u);
        ASSERT_EQ(mq_group_ack(b.get(), "dlq", "ops", 0, m[0].offset), MQ_OK);
    }
};

// Room appears during the wait: the dead letter goes, nothing else comes, and the poll still
// times out at its own deadline, not a full wait after the room appeared.
TEST_F(DeadLetterWait, RoomDuringTheWaitDoesNotRestartIt) {
    poison(1);
    const auto t0 = Clock::now();
    auto helper = std::async(std::launch::async, [&] {
        if (!dlq_waits_reach(1)) return false;
        std::this_thread::sleep_for(300ms);
        make_room();
        return true;
    });
    mq_message m[4];
    size_t n = 9;
    const mq_status st =
        mq_group_poll(b.get(), "src", "g", 0, m, sizeof(mq_message), 4, 600, nullptr, &n);
    const auto elapsed = Clock::now() - t0;
    ASSERT_TRUE(helper.get());
    EXPECT_EQ(st, MQ_TIMEOUT) << mq_last_error();
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(group_info(b.get(), "src", "g").dead_lettered, 1);
    EXPECT_GE(elapsed, 590ms);
    EXPECT_LT(elapsed, 800ms) << "the wait restarted after the dead letter went (about 900 ms)";
}

// Two heads to dead-letter, room for each appearing during the wait: the poll returns at its
// deadline and does not hand out a message published after it.
TEST_F(DeadLetterWait, TwoDeadLettersShareTheDeadline) {
    poison(2);
    const auto t0 = Clock::now();
    auto helper = std::async(std::launch::async, [&] {
        if (!dlq_waits_reach(1)) return false;
        std::this_thread::sleep_for(100ms);
        make_room();  // the first goes; the second then waits for room again
        if (!dlq_waits_reach(2)) return false;
        std::this_thread::sleep_for(100ms);
        make_room();
        std::this_thread::sleep_until(t0 + 550ms);  // after the poll's 400 ms
        publish(b.get(), "src", nullptr, "late");
        return true;
    });
    mq_message m[4];
    size_t n = 9;
    const mq_status st =
        mq_group_poll(b.get(), "src", "g", 0, m, sizeof(mq_message), 4, 400, nullptr, &n);
    const auto elapsed = Clock::now() - t0;
    ASSERT_TRUE(helper.get());
    EXPECT_EQ(st, MQ_TIMEOUT) << (n ? "handed out " + payload_of(m[0]) : mq_last_error());
    EXPECT_LT(elapsed, 540ms);
    EXPECT_EQ(group_info(b.get(), "src", "g").dead_lettered, 2);
}

// The dead-letter topic stays full: the poll gives up at its deadline with the head kept.
TEST_F(DeadLetterWait, AFullDeadLetterTopicEndsThePollAtItsDeadline) {
    poison(1);
    const auto t0 = Clock::now();
    mq_message m[1];
    size_t n = 9;
    EXPECT_EQ(mq_group_poll(b.get(), "src", "g", 0, m, sizeof(mq_message), 1, 200, nullptr, &n),
              MQ_TIMEOUT);
    const auto elapsed = Clock::now() - t0;
    EXPECT_GE(elapsed, 190ms);
    EXPECT_LT(elapsed, 400ms);
    EXPECT_EQ(group_info(b.get(), "src", "g").committed, 0);
}

}  // namespace
