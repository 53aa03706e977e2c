// Paths the coverage run (scripts/coverage.sh, docs/RELIABILITY.md) found no test taking.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "mq_test_util.h"

namespace {

using Clock = std::chrono::steady_clock;

mq_partition_info partition_info(mq_broker *b) {
    mq_partition_info i;
    EXPECT_EQ(mq_partition_get_info(b, "t", 0, &i, sizeof i), MQ_OK) << mq_last_error();
    return i;
}

mq_record record(const char *payload) {
    mq_record r{};
    r.payload = payload;
    r.payload_len = std::strlen(payload);
    return r;
}

// Rule 8 for a batch: without groups the records take offsets and are trimmed as appended.
TEST(CoveragePaths, BatchWithoutGroupsTakesOffsetsAndKeepsNothing) {
    auto b = mqtest::broker();
    const mq_topic_config cfg = mqtest::topic_config(1, 2);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK) << mq_last_error();
    const mq_record recs[3] = {record("a"), record("b"), record("c")};  // more than capacity
    mq_publish_result res[3];
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b.get(), "t", recs, sizeof recs[0], 3, MQ_NO_WAIT, nullptr,
                                     res, sizeof res[0], &published),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, 3u);
    for (int64_t k = 0; k < 3; k++) EXPECT_EQ(res[k].offset, k);
    const mq_partition_info i = partition_info(b.get());
    EXPECT_EQ(i.start, 3);
    EXPECT_EQ(i.end, 3);
    EXPECT_EQ(i.backlog, 0);
}

// A batch that fills the partition waits for room, and an ack lets the rest in.
TEST(CoveragePaths, BatchWaitsForRoomAndAnAckLetsTheRestIn) {
    auto b = mqtest::broker();
    const mq_topic_config cfg = mqtest::topic_config(1, 1);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK) << mq_last_error();

    const mq_record recs[2] = {record("first"), record("second")};
    mq_publish_result res[2];
    size_t published = 0;
    mq_status st = MQ_ERR_INTERNAL;
    std::thread batch([&] {
        st = mq_topic_publish_batch(b.get(), "t", recs, sizeof recs[0], 2, 20'000, nullptr, res,
                                    sizeof res[0], &published);
    });
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (partition_info(b.get()).producer_waits < 1 && Clock::now() < deadline)
        std::this_thread::yield();
    ASSERT_EQ(partition_info(b.get()).producer_waits, 1);

    mq_message m;
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, &m, sizeof m, 1, MQ_NO_WAIT, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(mqtest::payload_of(m), "first");
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, m.offset), MQ_OK) << mq_last_error();
    batch.join();
    EXPECT_EQ(st, MQ_OK);
    EXPECT_EQ(published, 2u);
    EXPECT_EQ(res[0].offset, 0);
    EXPECT_EQ(res[1].offset, 1);
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, &m, sizeof m, 1, MQ_NO_WAIT, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(mqtest::payload_of(m), "second");
}

}  // namespace
