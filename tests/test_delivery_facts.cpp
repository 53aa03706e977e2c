// What the delivery controls already do and the header now says (issue 18's gaps): the
// dead-letter copy's timestamp and partition, dead letters outside a poll's max, the pause
// reading 0 once over, extending a lease that ran out, a seek keeping untold loss, and what
// "counted as lost" means for a dead letter too large for its topic.
#include <gtest/gtest.h>

#include <string>

#include "mq_test_util.h"

namespace {

using namespace mqtest;

void subscribe_dlq(mq_broker *b, const char *topic, const char *group, uint32_t max,
                   const char *dlq) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = max;
    o.dead_letter_topic = dlq;
    ASSERT_EQ(mq_group_subscribe(b, topic, group, &o), MQ_OK) << mq_last_error();
}

// Hands the head out once and nacks it, so with max_deliveries 1 the next poll dead-letters it.
void deliver_once(mq_broker *b, const char *topic, const char *group, int32_t p) {
    ASSERT_EQ(poll(b, topic, group, p, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b, topic, group, p, 0), MQ_OK);
}

struct Facts : ::testing::Test {
    ManualClock clock;
    BrokerPtr b = broker(&clock);
};

TEST_F(Facts, ADeadLetterIsStampedWhenAppendedToTheDeadLetterTopic) {
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    publish(b.get(), "src", nullptr, "poison");
    const int64_t published_at = clock.ns.load();
    deliver_once(b.get(), "src", "g", 0);
    clock.advance_ms(5000);
    EXPECT_EQ(poll(b.get(), "src", "g", 0).size(), 0u);
    auto d = poll(b.get(), "dlq", "ops", 0);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].timestamp_ns, published_at + 5'000'000'000);
}

// Routed like any record: by key when it has one, round-robin without.
TEST_F(Facts, ADeadLetterIsRoutedLikeAnyRecord) {
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto three = topic_config(3, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &three), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    int32_t key_partition = -1;
    ASSERT_EQ(mq_key_partition("user-a", 6, 3, &key_partition), MQ_OK);
    for (const char *key : {(const char *)nullptr, (const char *)nullptr, "user-a"}) {
        publish(b.get(), "src", key, "poison");
        deliver_once(b.get(), "src", "g", 0);
        EXPECT_EQ(poll(b.get(), "src", "g", 0).size(), 0u);
    }
    // The dead-letter topic's round-robin counter starts at partition 0 and only dead letters
    // move it here.
    int64_t want[3] = {1, 1, 0};
    want[key_partition]++;
    for (int32_t p = 0; p < 3; p++)
        EXPECT_EQ(partition_info(b.get(), "dlq", p).end, want[p]) << "partition " << p;
}

TEST_F(Facts, DeadLetteredMessagesDoNotCountAgainstAPollsMax) {
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &cfg), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    publish(b.get(), "src", nullptr, "poison-1");
    publish(b.get(), "src", nullptr, "poison-2");
    publish(b.get(), "src", nullptr, "fine");
    ASSERT_EQ(poll(b.get(), "src", "g", 0, 2).size(), 2u);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    auto m = poll(b.get(), "src", "g", 0, 1);
    ASSERT_EQ(m.size(), 1u);  // both poison heads went, and max 1 still hands out one
    EXPECT_EQ(payload_of(m[0]), "fine");
    EXPECT_EQ(group_info(b.get(), "src", "g").dead_lettered, 2);
}

TEST_F(Facts, PausedUntilReadsZeroOnceThePauseIsOver) {
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "m");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 100), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").paused_until_ns, clock.ns.load() + 100'000'000);
    clock.advance_ms(100);
    EXPECT_EQ(group_info(b.get(), "t", "g").paused_until_ns, 0);
}

TEST_F(Facts, ExtendingALeaseThatRanOutSucceedsAndKeepsTheMessages) {
    auto cfg = topic_config(1, 10);
    cfg.ack_timeout_ms = 1000;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "m");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    clock.advance_ms(1500);  // the lease ran out; no poll has taken the message back yet
    EXPECT_EQ(mq_group_extend_lease(b.get(), "t", "g", 0), MQ_OK);
    EXPECT_EQ(poll(b.get(), "t", "g", 0).size(), 0u);  // not redelivered: the lease is new
    EXPECT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_OK);
}

TEST_F(Facts, ASeekKeepsLossNotYetTold) {
    auto cfg = topic_config(1, 2);
    cfg.retention = MQ_RETAIN_BOUNDED;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 5; i++) publish(b.get(), "t", nullptr, "m" + std::to_string(i));
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 3);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "g", 0, MQ_OFFSET_END), MQ_OK);
    publish(b.get(), "t", nullptr, "after");
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].lost, 3) << "the loss before the seek is told by the next poll";
}

// "Counted as lost": the group moves past it, mq_group_info.lost counts it, the next message
// the group is handed reports it in `lost`; it is not a drop of the partition (dropped stays)
// and not a dead letter (dead_lettered stays).
TEST_F(Facts, ADeadLetterTooLargeForItsTopicIsCountedAsLost) {
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto small = topic_config(1, 10);
    small.max_bytes = 100;
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &small), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    ASSERT_EQ(mq_group_subscribe(b.get(), "src", "other", nullptr), MQ_OK);
    publish(b.get(), "src", nullptr, std::string(101, 'x'));
    publish(b.get(), "src", nullptr, "next");
    deliver_once(b.get(), "src", "g", 0);
    auto m = poll(b.get(), "src", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(payload_of(m[0]), "next");
    EXPECT_EQ(m[0].lost, 1);
    const auto gi = group_info(b.get(), "src", "g");
    EXPECT_EQ(gi.lost, 1);
    EXPECT_EQ(gi.dead_lettered, 0);
    EXPECT_EQ(gi.committed, 1);
    EXPECT_EQ(partition_info(b.get(), "src").dropped, 0);
    EXPECT_EQ(partition_info(b.get(), "dlq").end, 0);
    EXPECT_EQ(group_info(b.get(), "src", "other").lost, 0);  // only the dead-lettering group
}

}  // namespace
