// Delayed delivery (mq.h, mq_record.delay_ms; SPEC rule 15): no group is handed a message before
// its publish time + delay, a delayed message holds its partition in offset order, waiting polls
// (blocking, asynchronous, member) wake when it becomes due, and an older caller's mq_record
// (without the field) still publishes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "async_done.h"
#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

mq_record record(const char *key, const std::string &payload, int64_t delay_ms) {
    mq_record r{};
    r.key = key;
    r.key_len = key ? std::strlen(key) : 0;
    r.payload = payload.data();
    r.payload_len = payload.size();
    r.delay_ms = delay_ms;
    return r;
}

mq_status publish_delayed(mq_broker *b, const char *key, const std::string &payload,
                          int64_t delay_ms, int64_t *offset = nullptr) {
    const mq_record r = record(key, payload, delay_ms);
    mq_publish_result res{};
    const mq_status st = mq_topic_publish_batch(b, "t", &r, sizeof r, 1, MQ_NO_WAIT, nullptr, &res,
                                                sizeof res, nullptr);
    if (offset) *offset = res.offset;
    return st;
}

BrokerPtr broker_with_topic(ManualClock *clock, int32_t partitions = 1) {
    BrokerPtr b = new_broker(clock);
    mq_topic_config c = topic_config(partitions, 64);
    EXPECT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK) << mq_last_error();
    return b;
}

std::vector<std::string> payloads(const std::vector<mq_message> &ms) {
    std::vector<std::string> out;
    for (const auto &m : ms) out.push_back(payload_of(m));
    return out;
}

TEST(DelayedDelivery, NotHandedOutBeforeItsTimeThenAtIt) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    int64_t off = -1;
    ASSERT_EQ(publish_delayed(b.get(), "k", "later", 100, &off), MQ_OK) << mq_last_error();
    EXPECT_EQ(off, 0);  // appended at once: only its hand-out waits
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(99);
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(1);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(payloads(m), std::vector<std::string>{"later"});
    EXPECT_EQ(m[0].delivery_count, 1u);
    EXPECT_EQ(m[0].timestamp_ns, 1'000'000'000);  // its publish time, not its due time
}

TEST(DelayedDelivery, TheTimeoutSaysTheNextMessageIsDelayed) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "x", 50), MQ_OK);
    mq_message out[4];
    size_t n = 9;
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, out, sizeof out[0], 4, MQ_NO_WAIT, nullptr, &n),
              MQ_TIMEOUT);
    EXPECT_EQ(n, 0u);
}

TEST(DelayedDelivery, HoldsThePartitionInOffsetOrder) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    ASSERT_EQ(publish_delayed(b.get(), "k", "a", 0), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), "k", "b", 200), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), "k", "c", 0), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), "k", "d", 50), MQ_OK);
    EXPECT_EQ(payloads(poll(b.get(), "t", "g", 0)), std::vector<std::string>{"a"});
    clock.advance_ms(150);  // d is due, but b before it is not: nothing passes b
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(50);
    EXPECT_EQ(payloads(poll(b.get(), "t", "g", 0)), (std::vector<std::string>{"b", "c", "d"}));
}

TEST(DelayedDelivery, EachGroupWaitsAndRedeliveryDoesNotWaitAgain) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "h", nullptr), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "x", 10), MQ_OK);
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    EXPECT_TRUE(poll(b.get(), "t", "h", 0).empty());
    clock.advance_ms(10);
    EXPECT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    auto again = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].delivery_count, 2u);
    EXPECT_EQ(poll(b.get(), "t", "h", 0).size(), 1u);
}

TEST(DelayedDelivery, BatchRecordsCarryTheirOwnDelays) {
    ManualClock clock;
    auto b = broker_with_topic(&clock, 2);
    // Keyed so both go to one partition: the first is due at once, the second in 30 ms.
    const std::string p1 = "now", p2 = "soon";
    const mq_record recs[2] = {record("k", p1, 0), record("k", p2, 30)};
    mq_publish_result res[2];
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b.get(), "t", recs, sizeof recs[0], 2, MQ_NO_WAIT, nullptr,
                                     res, sizeof res[0], &published),
              MQ_OK);
    ASSERT_EQ(published, 2u);
    ASSERT_EQ(res[0].partition, res[1].partition);
    EXPECT_EQ(payloads(poll(b.get(), "t", "g", res[0].partition)), std::vector<std::string>{"now"});
    clock.advance_ms(30);
    EXPECT_EQ(payloads(poll(b.get(), "t", "g", res[0].partition)),
              std::vector<std::string>{"soon"});
}

TEST(DelayedDelivery, HeadersAndKeysSurviveTheDelay) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    const mq_header h{"trace", 5, "t-1", 3};
    const std::string payload = "payload";  // outlives the record that points into it
    mq_record r = record("user-a", payload, 5);
    r.headers = &h;
    r.header_count = 1;
    ASSERT_EQ(mq_topic_publish_batch(b.get(), "t", &r, sizeof r, 1, MQ_NO_WAIT, nullptr, nullptr,
                                     sizeof(mq_publish_result), nullptr),
              MQ_OK);
    clock.advance_ms(5);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(std::string(static_cast<const char *>(m[0].key), m[0].key_len), "user-a");
    EXPECT_EQ(payload_of(m[0]), "payload");
    ASSERT_EQ(m[0].header_count, 1u);
    EXPECT_EQ(std::string(static_cast<const char *>(m[0].headers[0].value), 3), "t-1");
}

TEST(DelayedDelivery, BadDelaysAreRefusedByName) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    EXPECT_EQ(publish_delayed(b.get(), nullptr, "x", -1), MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("record 0: delay_ms is -1"), std::string::npos)
        << mq_last_error();
    EXPECT_EQ(publish_delayed(b.get(), nullptr, "x", (int64_t{1} << 40) + 1), MQ_ERR_INVALID);
    EXPECT_EQ(publish_delayed(b.get(), nullptr, "x", int64_t{1} << 40), MQ_OK);  // the maximum
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
}

TEST(DelayedDelivery, AnOlderCallersRecordWithoutTheFieldIsDueAtOnce) {
    ManualClock clock;
    auto b = broker_with_topic(&clock);
    // Two records laid out at the 1.4 size: the second one's "delay_ms" would be the first
    // field of the next record if the library read past the caller's stride.
    constexpr size_t old_size = offsetof(mq_record, delay_ms);
    alignas(mq_record) unsigned char buf[2 * old_size];
    const std::string a = "a", c = "c";
    mq_record r1 = record(nullptr, a, 0), r2 = record(nullptr, c, 0);
    std::memcpy(buf, &r1, old_size);
    std::memcpy(buf + old_size, &r2, old_size);
    size_t published = 0;
    ASSERT_EQ(
        mq_topic_publish_batch(b.get(), "t", reinterpret_cast<const mq_record *>(buf), old_size, 2,
                               MQ_NO_WAIT, nullptr, nullptr, sizeof(mq_publish_result), &published),
        MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, 2u);
    EXPECT_EQ(payloads(poll(b.get(), "t", "g", 0)), (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(mq_topic_publish_batch(b.get(), "t", reinterpret_cast<const mq_record *>(buf),
                                     old_size - 1, 1, MQ_NO_WAIT, nullptr, nullptr,
                                     sizeof(mq_publish_result), &published),
              MQ_ERR_INVALID);
}

TEST(DelayedDelivery, MaxAgeCountsFromThePublishTime) {
    ManualClock clock;
    auto b = new_broker(&clock);
    mq_topic_config c = topic_config(1, 16);
    c.max_age_ms = 50;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "old", 100), MQ_OK);
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "fresh", 0), MQ_OK);
    clock.advance_ms(60);  // both aged out before the delayed one was due
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "new", 0), MQ_OK);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(payloads(m), std::vector<std::string>{"new"});
    EXPECT_EQ(m[0].lost, 2);  // never silent
}

// The real clock from here on: waits end when the message is due.

TEST(DelayedDelivery, ABlockingPollWakesWhenTheMessageIsDue) {
    auto b = broker_with_topic(nullptr);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "x", 40), MQ_OK);
    mq_message out[2];
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, out, sizeof out[0], 2, 10000, nullptr, &n), MQ_OK)
        << mq_last_error();
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(n, 1u);
    EXPECT_GE(took, 40ms);
    EXPECT_LT(took, 5s);  // woke at the due time, not at the end of the wait
}

TEST(DelayedDelivery, AnAsynchronousPollCompletesWhenTheMessageIsDue) {
    auto b = broker_with_topic(nullptr);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "x", 40), MQ_OK);
    mq_message out[2];
    size_t n = 0;
    Done done;
    ASSERT_EQ(mq_group_poll_async(b.get(), "t", "g", 0, out, sizeof out[0], 2, 10000, nullptr, &n,
                                  &Done::fn, &done),
              MQ_PENDING);
    ASSERT_EQ(done.wait(), MQ_OK) << done.error;
    EXPECT_EQ(n, 1u);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms);
}

TEST(DelayedDelivery, AMemberPollWakesWhenTheMessageIsDue) {
    auto b = broker_with_topic(nullptr);
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", &o, &m), MQ_OK) << mq_last_error();
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(publish_delayed(b.get(), nullptr, "x", 40), MQ_OK);
    mq_message out[2];
    size_t n = 0;
    mq_status st = MQ_REBALANCED;
    while (st == MQ_REBALANCED) st = mq_member_poll(m, out, sizeof out[0], 2, 10000, nullptr, &n);
    EXPECT_EQ(st, MQ_OK) << mq_last_error();
    EXPECT_EQ(n, 1u);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms);
    mq_member_close(m);
}

}  // namespace
