// Rules of SPEC.md that the conformance scripts (tests/conformance/*.mqs, which hold every rule
// a script can state) cannot express: the C ABI's own promises (copies, pointers, buffers),
// orders relative to an unspecified start, either-or outcomes, and how long a wait lasts.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using namespace std::chrono_literals;
using mqtest::BrokerPtr;
using mqtest::ginfo;
using mqtest::ManualClock;
using mqtest::new_broker;
using mqtest::payload_of;
using mqtest::pinfo;
using Clock = std::chrono::steady_clock;

void create_topic(mq_broker *b, const char *name, int32_t partitions, int64_t capacity,
                  int64_t ack_timeout_ms = 30000, int64_t max_bytes = 0) {
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = partitions;
    cfg.capacity = capacity;
    cfg.ack_timeout_ms = ack_timeout_ms;
    cfg.max_bytes = max_bytes;
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

void subscribe(mq_broker *b, const char *topic, const char *group,
               mq_start start = MQ_START_LATEST) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = start;
    ASSERT_EQ(mq_group_subscribe(b, topic, group, &o), MQ_OK) << mq_last_error();
}

// Publishes without a key unless one is given; returns the offset (or -1 on failure).
int64_t pub(mq_broker *b, const char *topic, const std::string &payload, mq_status expect = MQ_OK,
            int64_t wait_ms = MQ_NO_WAIT, int32_t *partition = nullptr) {
    int64_t off = -1;
    mq_status s = mq_topic_publish(b, topic, nullptr, 0, payload.data(), payload.size(), NULL, 0,
                                   wait_ms, nullptr, partition, &off);
    EXPECT_EQ(s, expect) << mq_status_name(s) << ": " << mq_last_error();
    return s == MQ_OK ? off : -1;
}

std::vector<mq_message> poll(mq_broker *b, const char *topic, const char *group, int32_t p,
                             size_t max) {
    std::vector<mq_message> msgs(max);
    size_t n = 0;
    mq_status s = mq_group_poll(b, topic, group, p, msgs.data(), sizeof(mq_message), max,
                                MQ_NO_WAIT, nullptr, &n);
    EXPECT_TRUE(s == MQ_OK || s == MQ_TIMEOUT) << mq_status_name(s) << ": " << mq_last_error();
    if (s == MQ_TIMEOUT) {
        EXPECT_EQ(n, 0u);
    }
    msgs.resize(s == MQ_OK ? n : 0);
    return msgs;
}

std::string list_topics(mq_broker *b) {
    size_t needed = 0;
    EXPECT_EQ(mq_topic_list(b, nullptr, 0, &needed), MQ_OK) << mq_last_error();
    std::string s(needed, '\0');
    EXPECT_EQ(mq_topic_list(b, s.data(), s.size(), &needed), MQ_OK) << mq_last_error();
    s.resize(std::strlen(s.c_str()));
    return s;
}

// ---- rule 1: partitioning ----------------------------------------------------------------

TEST(SpecRules, NullKeyGoesRoundRobin) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "rr", 4, 16);
    std::vector<int32_t> parts;
    for (int i = 0; i < 12; ++i) {
        int32_t p = -1;
        pub(b, "rr", "m", MQ_OK, MQ_NO_WAIT, &p);
        parts.push_back(p);
    }
    for (size_t i = 1; i < parts.size(); ++i)
        EXPECT_EQ(parts[i], (parts[i - 1] + 1) % 4) << "publish " << i;
    for (int32_t p = 0; p < 4; ++p) EXPECT_EQ(pinfo(b, "rr", p).end, 3) << "partition " << p;
}

// ---- rule 2: publish -----------------------------------------------------------------------

TEST(SpecRules, PublishAppendsAtEndAndCopiesBytes) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    create_topic(b, "copy", 1, 8);
    subscribe(b, "copy", "g");

    char key[] = "key-1";
    char payload[] = "payload-1";
    int32_t p = -1;
    int64_t off = -1;
    ASSERT_EQ(
        mq_topic_publish(b, "copy", key, 5, payload, 9, NULL, 0, MQ_NO_WAIT, nullptr, &p, &off),
        MQ_OK);
    EXPECT_EQ(p, 0);
    EXPECT_EQ(off, 0);
    const int64_t t0 = clock.ns.load();
    // The caller owns its buffers again: scribble over them.
    std::memset(key, 'X', 5);
    std::memset(payload, 'Y', 9);
    clock.advance_ms(5);
    EXPECT_EQ(pub(b, "copy", "second"), 1);

    std::vector<mq_message> m = poll(b, "copy", "g", 0, 10);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(std::string(static_cast<const char *>(m[0].key), m[0].key_len), "key-1");
    EXPECT_EQ(payload_of(m[0]), "payload-1");
    EXPECT_EQ(m[0].timestamp_ns, t0);
    EXPECT_EQ(m[1].key, nullptr);
    EXPECT_EQ(payload_of(m[1]), "second");
    EXPECT_EQ(m[1].timestamp_ns, t0 + 5'000'000);
    EXPECT_NE(m[0].payload, static_cast<const void *>(payload));
}

// Clocks are read before the partition's lock, so two racing publishers may append in the
// other order than they read the clock; a clock stepping back looks the same to the partition.
TEST(SpecRules, TimestampsNeverDecreaseAlongThePartition) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    create_topic(b, "ts", 1, 8);
    subscribe(b, "ts", "g");
    const int64_t t0 = clock.ns.load();
    EXPECT_EQ(pub(b, "ts", "first"), 0);
    clock.ns -= 3'000'000;  // the clock steps back
    EXPECT_EQ(pub(b, "ts", "second"), 1);
    const mq_record batch[2] = {{nullptr, 0, "a", 1}, {nullptr, 0, "b", 1}};
    ASSERT_EQ(mq_topic_publish_batch(b, "ts", batch, sizeof(mq_record), 2, MQ_NO_WAIT, nullptr,
                                     nullptr, sizeof(mq_publish_result), nullptr),
              MQ_OK);
    clock.advance_ms(10);
    EXPECT_EQ(pub(b, "ts", "later"), 4);

    std::vector<mq_message> m = poll(b, "ts", "g", 0, 10);
    ASSERT_EQ(m.size(), 5u);
    for (int i = 0; i < 4; i++) EXPECT_EQ(m[i].timestamp_ns, t0) << "message " << i;
    EXPECT_EQ(m[4].timestamp_ns, t0 + 7'000'000);
}

TEST(SpecRules, MessageIsStoredOnceWhateverTheGroups) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "once", 1, 8);
    subscribe(b, "once", "a");
    subscribe(b, "once", "b");
    subscribe(b, "once", "c");
    pub(b, "once", "12345");
    EXPECT_EQ(pinfo(b, "once", 0).retained_bytes, 5);
    // Every group sees the same bytes, not a copy per group.
    std::vector<mq_message> a = poll(b, "once", "a", 0, 1);
    std::vector<mq_message> c = poll(b, "once", "c", 0, 1);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(a[0].payload, c[0].payload);
}

// ---- rule 3: back-pressure -----------------------------------------------------------------

TEST(SpecRules, FullPartitionWithShortWaitTimesOutAsFull) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bpw", 1, 1);
    subscribe(b, "bpw", "g");
    pub(b, "bpw", "a");
    int64_t waits_before = pinfo(b, "bpw", 0).producer_waits;
    auto t0 = Clock::now();
    EXPECT_EQ(
        mq_topic_publish(b, "bpw", nullptr, 0, "b", 1, NULL, 0, 30, nullptr, nullptr, nullptr),
        MQ_FULL);
    auto waited = Clock::now() - t0;
    EXPECT_GE(waited, 30ms);
    EXPECT_LT(waited, 3000ms);
    mq_partition_info i = pinfo(b, "bpw", 0);
    EXPECT_EQ(i.end, 1);
    EXPECT_EQ(i.producer_waits, waits_before + 1);
}

// ---- rule 4: poll --------------------------------------------------------------------------

TEST(SpecRules, PollWithNothingTimesOut) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "pt", 1, 4);
    subscribe(b, "pt", "g");
    mq_message m[4];
    size_t n = 99;
    EXPECT_EQ(mq_group_poll(b, "pt", "g", 0, m, sizeof(mq_message), 4, MQ_NO_WAIT, nullptr, &n),
              MQ_TIMEOUT);
    EXPECT_EQ(n, 0u);
    n = 99;
    auto t0 = Clock::now();
    EXPECT_EQ(mq_group_poll(b, "pt", "g", 0, m, sizeof(mq_message), 4, 30, nullptr, &n),
              MQ_TIMEOUT);
    auto waited = Clock::now() - t0;
    EXPECT_EQ(n, 0u);
    EXPECT_GE(waited, 30ms);
    EXPECT_LT(waited, 3000ms);
    mq_group_info g = ginfo(b, "pt", "g", 0);
    EXPECT_EQ(g.committed, 0);
    EXPECT_EQ(g.next, 0);
}

// ---- what the C ABI adds: buffers the caller sizes --------------------------------------

// The scripts cannot size a buffer (tests/conformance/assign_round_robin.mqs has the rule).
TEST(SpecRules, AssignRoundRobinCountsPastTheBuffer) {
    int32_t out[2] = {-7, -7};
    size_t n = 0;
    ASSERT_EQ(mq_assignment_round_robin(10, 1, 0, out, 1, &n), MQ_OK) << mq_last_error();
    EXPECT_EQ(n, 10u);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], -7);
}

// The scripts read whole lists (tests/conformance/lists_in_creation_order.mqs has the rule).
TEST(SpecRules, ListsAreWrittenSnprintfStyle) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "zeta", 1, 4);
    create_topic(b, "alpha.v1", 1, 4);
    create_topic(b, "Mid_dle-2", 1, 4);
    // Truncated, NUL-terminated; needed counts the whole list and its NUL.
    char buf[6];
    std::memset(buf, '#', sizeof buf);
    size_t needed = 0;
    ASSERT_EQ(mq_topic_list(b, buf, sizeof buf, &needed), MQ_OK);
    EXPECT_EQ(needed, std::strlen("zeta\nalpha.v1\nMid_dle-2\n") + 1);
    EXPECT_STREQ(buf, "zeta\n");
    ASSERT_EQ(mq_topic_list(b, nullptr, 0, nullptr), MQ_OK);
    EXPECT_EQ(list_topics(b), "zeta\nalpha.v1\nMid_dle-2\n");
}

// ---- batch publish -------------------------------------------------------------------------

TEST(SpecRules, PublishBatchStopsPartWayWhenFull) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bfull", 2, 2);
    subscribe(b, "bfull", "g");
    // Three for partition 1 (room for two), one for partition 0.
    const char *keys[] = {"user-a", "user-a", "user-b", "user-a"};
    std::vector<mq_record> recs;
    for (const char *k : keys) recs.push_back({k, 6, "x", 1});
    std::vector<mq_publish_result> res(4, mq_publish_result{-9, -9});
    size_t published = 99;
    EXPECT_EQ(
        mq_topic_publish_batch(b, "bfull", recs.data(), sizeof(mq_record), recs.size(), MQ_NO_WAIT,
                               nullptr, res.data(), sizeof(mq_publish_result), &published),
        MQ_FULL);
    int32_t want_part[] = {1, 1, 0, 1};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(res[i].partition, want_part[i]) << "record " << i;
    // Partition 1 took what fit, in order; the record that did not fit was not appended.
    EXPECT_EQ(res[0].offset, 0);
    EXPECT_EQ(res[1].offset, 1);
    EXPECT_EQ(res[3].offset, -1);
    EXPECT_EQ(pinfo(b, "bfull", 1).end, 2);
    // Partition 0's record is either published (offset 0) or not (-1): a prefix either way,
    // and *published agrees with the results and the logs.
    EXPECT_TRUE(res[2].offset == 0 || res[2].offset == -1) << res[2].offset;
    size_t appended = 0;
    for (const mq_publish_result &r : res) appended += r.offset >= 0;
    EXPECT_EQ(published, appended);
    EXPECT_EQ(pinfo(b, "bfull", 0).end, res[2].offset == 0 ? 1 : 0);
}

}  // namespace
