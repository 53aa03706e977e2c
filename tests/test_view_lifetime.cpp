// How long a message view stays readable (mq.h, mq_message): until the group acks or seeks past
// it, and if the message is dropped from under the group (bounded retention, max age) until the
// group's next poll, ack or seek on that partition -- however the group came to hold the view,
// a replay after a seek back included. Each test holds a view, drops its message, makes the
// partition reuse its storage, and compares the view's bytes with what was published.
#include <gtest/gtest.h>

#include <string>

#include "mq_test_util.h"

namespace {

using namespace mqtest;

// The view's key and payload, read now.
std::string bytes_of(const mq_message &m) {
    std::string s = payload_of(m);
    if (m.key) s += "|" + std::string(static_cast<const char *>(m.key), m.key_len);
    return s;
}

mq_topic_config bounded(int64_t capacity, int64_t max_bytes) {
    auto cfg = topic_config(1, capacity);
    cfg.retention = MQ_RETAIN_BOUNDED;
    cfg.max_bytes = max_bytes;
    return cfg;
}

const std::string kOld(16, 'A');  // the message whose view is held
const std::string kNew(16, 'z');  // what the storage is reused for

// The case of issue 18: a group that subscribed late seeks to the earliest offset, is handed a
// view of it, and a publish drops it.
TEST(ViewLifetime, AReplayAfterALateSubscribeSurvivesTheDropAtTheNextPublish) {
    auto b = broker();
    auto cfg = bounded(3, 20);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g0", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, kOld);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g1", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "g1", 0, MQ_OFFSET_EARLIEST), MQ_OK);
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "g0"), MQ_OK);
    auto held = poll(b.get(), "t", "g1", 0, 1);
    ASSERT_EQ(held.size(), 1u);
    ASSERT_EQ(held[0].offset, 0);
    publish(b.get(), "t", nullptr, std::string(8, 'z'));  // 16 + 8 > 20: offset 0 is dropped
    EXPECT_EQ(partition_info(b.get(), "t").start, 1);
    EXPECT_EQ(payload_of(held[0]), kOld) << "the view died before g1's next poll or ack";
    auto next = poll(b.get(), "t", "g1", 0);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0].lost, 1);
}

// The same after the group had acked the message and seeks back over it.
TEST(ViewLifetime, AReplayAfterAnAckSurvivesABoundedDrop) {
    auto b = broker();
    auto cfg = bounded(1, 0);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "slow", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", "k", kOld);  // slow keeps it retained
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "g", 0, 0), MQ_OK);
    auto held = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(held.size(), 1u);
    ASSERT_EQ(held[0].delivery_count, 1u);  // counts start over after a seek
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "slow"), MQ_OK);
    publish(b.get(), "t", "k", kNew);  // capacity 1: offset 0 goes
    ASSERT_EQ(partition_info(b.get(), "t").start, 1);
    EXPECT_EQ(bytes_of(held[0]), kOld + "|k");
}

struct Aged : ::testing::Test {
    ManualClock clock;
    BrokerPtr b = broker(&clock);
    std::vector<mq_message> held;

    // Topic t (max age 1 s): groups `other` and `g`; g is handed a replay of offset 0 after
    // acking it (other holds it meanwhile). Each test then lets it age out.
    void SetUp() override {
        auto cfg = topic_config(1, 10);
        cfg.max_age_ms = 1000;
        ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "other", nullptr), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
        publish(b.get(), "t", nullptr, kOld);
        ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
        ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_OK);
        ASSERT_EQ(mq_group_seek(b.get(), "t", "g", 0, MQ_OFFSET_EARLIEST), MQ_OK);
        held = poll(b.get(), "t", "g", 0);
        ASSERT_EQ(held.size(), 1u);
    }
};

TEST_F(Aged, AReplayedViewSurvivesTheDropAtAPublish) {
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "other"), MQ_OK);
    clock.advance_ms(1001);
    publish(b.get(), "t", nullptr, kNew);  // drops offset 0, then reuses its storage
    ASSERT_EQ(partition_info(b.get(), "t").start, 1);
    EXPECT_EQ(payload_of(held[0]), kOld);
}

TEST_F(Aged, AReplayedViewSurvivesAnotherGroupsPoll) {
    clock.advance_ms(1001);
    EXPECT_EQ(poll(b.get(), "t", "other", 0).size(), 0u);  // the drop happens here
    publish(b.get(), "t", nullptr, kNew);
    EXPECT_EQ(payload_of(held[0]), kOld);
}

TEST_F(Aged, AReplayedViewSurvivesAnotherGroupsUnsubscribe) {
    clock.advance_ms(1001);
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "other"), MQ_OK);
    publish(b.get(), "t", nullptr, kNew);
    EXPECT_EQ(payload_of(held[0]), kOld);
}

TEST_F(Aged, AReplayedViewSurvivesInfoCalls) {
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "other"), MQ_OK);
    clock.advance_ms(1001);
    partition_info(b.get(), "t");  // enforces the age: the drop
    group_info(b.get(), "t", "g");
    publish(b.get(), "t", nullptr, kNew);
    EXPECT_EQ(payload_of(held[0]), kOld);
    // The group's next poll ends the view and reports the loss.
    auto next = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0].lost, 1);
    EXPECT_EQ(payload_of(next[0]), kNew);
}

// A first delivery (no seek) already held: the rule the replays now share.
TEST(ViewLifetime, AFirstDeliverySurvivesABoundedDropUntilTheNextPoll) {
    auto b = broker();
    auto cfg = bounded(1, 0);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, kOld);
    auto held = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(held.size(), 1u);
    publish(b.get(), "t", nullptr, kNew);  // capacity 1: drops offset 0
    publish(b.get(), "t", nullptr, kNew);
    EXPECT_EQ(payload_of(held[0]), kOld);
}

}  // namespace
