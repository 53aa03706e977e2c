// The maximum age is enforced by every call that touches a partition, in one place at its
// start: publish, poll, ack, nack, lease extension, seek, subscribe, unsubscribe, info and
// describe. Each test lets a message age out and shows that the call saw the log without it
// (an observation the call itself makes, not a later info call).
#include <gtest/gtest.h>

#include <string>

#include "mq_test_util.h"

namespace {

using namespace mqtest;

struct MaxAgeCalls : ::testing::Test {
    ManualClock clock;
    BrokerPtr b = broker(&clock);
    void SetUp() override {
        auto cfg = topic_config(1, 10);
        cfg.max_age_ms = 1000;
        ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
        publish(b.get(), "t", nullptr, "old");
    }
    void age_out() { clock.advance_ms(1000); }
};

TEST_F(MaxAgeCalls, LeaseExtensionFindsNothingInFlight) {
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    age_out();
    EXPECT_EQ(mq_group_extend_lease(b.get(), "t", "g", 0), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 1);
}

TEST_F(MaxAgeCalls, ADelayedNackFindsNothingToHold) {
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    age_out();
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 500), MQ_OK);
    const auto gi = group_info(b.get(), "t", "g");
    EXPECT_EQ(gi.paused_until_ns, 0) << "the nack paused the group for a message already gone";
    EXPECT_EQ(gi.lost, 1);
}

// A group that acked the message leaves it retained only for the other; unsubscribing that
// other after the message aged out drops it (counted), rather than trimming it as acked.
TEST_F(MaxAgeCalls, UnsubscribeDropsWhatAgedOutFirst) {
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "early", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "early", 0, MQ_OFFSET_EARLIEST), MQ_OK);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_OK);  // `early` still holds it
    age_out();
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "early"), MQ_OK);
    EXPECT_EQ(partition_info(b.get(), "t").dropped, 1);
}

TEST_F(MaxAgeCalls, DescribeShowsTheLogWithoutIt) {
    age_out();
    char buf[128];
    ASSERT_EQ(mq_partition_describe(b.get(), "t", 0, buf, sizeof buf, nullptr), MQ_OK);
    EXPECT_STREQ(buf, "log empty, next offset 1, backlog 0/10; g 1/1");
}

TEST_F(MaxAgeCalls, AnEarliestSubscriberStartsAfterIt) {
    age_out();
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = MQ_START_EARLIEST;
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "late", &o), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "late").committed, 1);
}

TEST_F(MaxAgeCalls, SeekCannotReachIt) {
    age_out();
    EXPECT_EQ(mq_group_seek(b.get(), "t", "g", 0, 0), MQ_ERR_OUT_OF_RANGE);
}

TEST_F(MaxAgeCalls, AckOfItIsRejected) {
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    age_out();
    EXPECT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_ERR_NOT_IN_FLIGHT);
}

TEST_F(MaxAgeCalls, PublishAndPollReportTheLoss) {
    age_out();
    publish(b.get(), "t", nullptr, "new");
    EXPECT_EQ(partition_info(b.get(), "t").start, 1);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].lost, 1);
}

// A closed broker changes no state: its info calls keep working and read what was there.
TEST_F(MaxAgeCalls, NothingAgesOutAfterClose) {
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    age_out();
    EXPECT_EQ(partition_info(b.get(), "t").start, 0);
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 0);
}

}  // namespace
