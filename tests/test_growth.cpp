// The growth rule for arrays (mq.h): a caller compiled against a newer header passes a larger
// element size for mq_message, mq_record and mq_publish_result. The library strides by it,
// reads and writes the 1.0 fields of each element, ignores the extra input bytes and zeroes the
// extra output bytes of the elements it writes (and leaves the others alone).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using mqtest::BrokerPtr;
using mqtest::new_broker;

constexpr unsigned char kFill = 0xAB;

// What a newer header's structs could look like: the 1.0 struct, then fields of a later minor.
struct WideMessage {
    mq_message m;
    uint64_t later[3];
};
struct WideRecord {
    mq_record r;
    uint64_t later[2];
};
struct WideResult {
    mq_publish_result r;
    uint64_t later[2];
};

bool all_bytes(const void *p, size_t n, unsigned char v) {
    const auto *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++)
        if (c[i] != v) return false;
    return true;
}

std::string payload(const mq_message &m) {
    return std::string(static_cast<const char *>(m.payload), m.payload_len);
}

void create(mq_broker *b, const char *name, int32_t partitions, int64_t capacity) {
    auto cfg = mqtest::topic_config(partitions, capacity);
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

// Checks a poll's output at the wide stride: `want` payloads in order in the first elements,
// their extra bytes zeroed, the elements after them untouched.
void expect_wide_messages(const std::vector<WideMessage> &out, size_t n,
                          const std::vector<std::string> &want) {
    ASSERT_EQ(n, want.size());
    for (size_t i = 0; i < out.size(); i++) {
        SCOPED_TRACE("element " + std::to_string(i));
        if (i < n) {
            EXPECT_EQ(payload(out[i].m), want[i]);
            EXPECT_EQ(out[i].m.offset, static_cast<int64_t>(i));
            EXPECT_EQ(out[i].m.delivery_count, 1u);
            EXPECT_TRUE(all_bytes(out[i].later, sizeof out[i].later, 0))
                << "the bytes past the 1.0 struct were not zeroed";
        } else {
            EXPECT_TRUE(all_bytes(&out[i], sizeof out[i], kFill)) << "written past count";
        }
    }
}

TEST(GrowthRule, GroupPollStridesByTheCallersMessageSize) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create(b, "t", 1, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    for (const char *p : {"a", "bb", "ccc"}) mqtest::publish(b, "t", nullptr, p);
    std::vector<WideMessage> out(5);
    std::memset(out.data(), kFill, out.size() * sizeof(WideMessage));
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b, "t", "g", 0, &out[0].m, sizeof(WideMessage), out.size(), MQ_NO_WAIT,
                            nullptr, &n),
              MQ_OK)
        << mq_last_error();
    expect_wide_messages(out, n, {"a", "bb", "ccc"});
    // An empty poll writes nothing.
    std::memset(out.data(), kFill, out.size() * sizeof(WideMessage));
    EXPECT_EQ(mq_group_poll(b, "t", "g", 0, &out[0].m, sizeof(WideMessage), out.size(), MQ_NO_WAIT,
                            nullptr, &n),
              MQ_TIMEOUT);
    EXPECT_EQ(n, 0u);
    EXPECT_TRUE(all_bytes(out.data(), out.size() * sizeof(WideMessage), kFill));
}

TEST(GrowthRule, MemberPollStridesByTheCallersMessageSize) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create(b, "t", 2, 8);
    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b, "t", "g", nullptr, &m), MQ_OK) << mq_last_error();
    // Both on one partition ("user-b" is Kafka's partition 0 of 2): one poll returns both.
    for (const char *p : {"x", "yy"}) mqtest::publish(b, "t", "user-b", p);
    std::vector<WideMessage> out(4);
    std::memset(out.data(), kFill, out.size() * sizeof(WideMessage));
    size_t n = 0;
    ASSERT_EQ(
        mq_member_poll(m, &out[0].m, sizeof(WideMessage), out.size(), MQ_NO_WAIT, nullptr, &n),
        MQ_OK)
        << mq_last_error();
    expect_wide_messages(out, n, {"x", "yy"});
    EXPECT_EQ(out[0].m.partition, 0);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// Batch publish: wide records (with garbage in their later fields, which must be ignored) and
// wide results, over several partitions so the results are written out of input order.
TEST(GrowthRule, BatchPublishStridesByTheCallersRecordAndResultSizes) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create(b, "t", 2, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    const char *keys[] = {"user-a", "user-b", "user-a", "user-b", "user-b"};  // 1, 0, 1, 0, 0
    const int32_t want_partition[] = {1, 0, 1, 0, 0};
    const int64_t want_offset[] = {0, 0, 1, 1, 2};
    std::vector<WideRecord> recs(5);
    std::memset(recs.data(), 0xCD, recs.size() * sizeof(WideRecord));
    std::vector<std::string> payloads;
    for (size_t i = 0; i < recs.size(); i++) payloads.push_back("p" + std::to_string(i));
    for (size_t i = 0; i < recs.size(); i++) {
        recs[i].r = mq_record{
            keys[i], std::strlen(keys[i]), payloads[i].data(), payloads[i].size(), nullptr, 0};
    }
    std::vector<WideResult> results(6);  // one more than the batch: must stay untouched
    std::memset(results.data(), kFill, results.size() * sizeof(WideResult));
    size_t published = 0;
    ASSERT_EQ(
        mq_topic_publish_batch(b, "t", &recs[0].r, sizeof(WideRecord), recs.size(), MQ_NO_WAIT,
                               nullptr, &results[0].r, sizeof(WideResult), &published),
        MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, 5u);
    for (size_t i = 0; i < 5; i++) {
        SCOPED_TRACE("record " + std::to_string(i));
        EXPECT_EQ(results[i].r.partition, want_partition[i]);
        EXPECT_EQ(results[i].r.offset, want_offset[i]);
        EXPECT_TRUE(all_bytes(results[i].later, sizeof results[i].later, 0));
    }
    EXPECT_TRUE(all_bytes(&results[5], sizeof results[5], kFill)) << "written past count";
    // What was appended is what the wide records said, in order per partition.
    std::vector<std::string> got0, got1;
    for (const mq_message &m : mqtest::poll(b, "t", "g", 0)) got0.push_back(payload(m));
    for (const mq_message &m : mqtest::poll(b, "t", "g", 1)) got1.push_back(payload(m));
    EXPECT_EQ(got0, (std::vector<std::string>{"p1", "p3", "p4"}));
    EXPECT_EQ(got1, (std::vector<std::string>{"p0", "p2"}));
}

// A batch that stops part-way (the partition fills up) reports every record at the wide
// stride: the published ones with their offsets, the others with -1.
TEST(GrowthRule, PartialBatchReportsEveryRecordAtTheCallersStride) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create(b, "t", 1, 2);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    std::vector<WideRecord> recs(4);
    for (auto &r : recs) {
        std::memset(&r, 0xCD, sizeof r);
        r.r = mq_record{nullptr, 0, "m", 1, nullptr, 0};
    }
    std::vector<WideResult> results(4);
    std::memset(results.data(), kFill, results.size() * sizeof(WideResult));
    size_t published = 0;
    EXPECT_EQ(
        mq_topic_publish_batch(b, "t", &recs[0].r, sizeof(WideRecord), recs.size(), MQ_NO_WAIT,
                               nullptr, &results[0].r, sizeof(WideResult), &published),
        MQ_FULL);
    EXPECT_EQ(published, 2u);
    for (size_t i = 0; i < 4; i++) {
        SCOPED_TRACE("record " + std::to_string(i));
        EXPECT_EQ(results[i].r.partition, 0);
        EXPECT_EQ(results[i].r.offset, i < 2 ? static_cast<int64_t>(i) : -1);
        EXPECT_TRUE(all_bytes(results[i].later, sizeof results[i].later, 0));
    }
}

// A refused batch leaves wide results untouched, like results of our own size.
TEST(GrowthRule, RefusedBatchLeavesWideResultsUntouched) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create(b, "t", 2, 8);
    std::vector<WideRecord> recs(2);
    std::memset(recs.data(), 0, recs.size() * sizeof(WideRecord));
    recs[0].r = mq_record{nullptr, 0, "ok", 2, nullptr, 0};
    recs[1].r = mq_record{nullptr, 3, "bad", 3, nullptr, 0};  // key NULL with a length
    std::vector<WideResult> results(2);
    std::memset(results.data(), kFill, results.size() * sizeof(WideResult));
    size_t published = 9;
    EXPECT_EQ(
        mq_topic_publish_batch(b, "t", &recs[0].r, sizeof(WideRecord), recs.size(), MQ_NO_WAIT,
                               nullptr, &results[0].r, sizeof(WideResult), &published),
        MQ_ERR_INVALID);
    EXPECT_EQ(published, 0u);
    EXPECT_TRUE(all_bytes(results.data(), results.size() * sizeof(WideResult), kFill));
}

}  // namespace
