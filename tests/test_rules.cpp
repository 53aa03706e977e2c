// One named test per rule and edge case of SPEC.md, through the public C API only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using namespace std::chrono_literals;
using mqtest::BrokerPtr;
using mqtest::ManualClock;
using mqtest::ginfo;
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
int64_t pub(mq_broker *b, const char *topic, const std::string &payload,
            mq_status expect = MQ_OK, int64_t wait_ms = MQ_NO_WAIT, int32_t *partition = nullptr) {
    int64_t off = -1;
    mq_status s = mq_topic_publish(b, topic, nullptr, 0, payload.data(), payload.size(), NULL, 0, wait_ms,
                             nullptr, partition, &off);
    EXPECT_EQ(s, expect) << mq_status_name(s) << ": " << mq_last_error();
    return s == MQ_OK ? off : -1;
}

int64_t pub_key(mq_broker *b, const char *topic, const std::string &key,
                const std::string &payload, int32_t *partition) {
    int64_t off = -1;
    EXPECT_EQ(mq_topic_publish(b, topic, key.data(), key.size(), payload.data(), payload.size(), NULL, 0,
                         MQ_NO_WAIT, nullptr, partition, &off),
              MQ_OK)
        << mq_last_error();
    return off;
}

std::vector<mq_message> poll(mq_broker *b, const char *topic, const char *group, int32_t p,
                             size_t max) {
    std::vector<mq_message> msgs(max);
    size_t n = 0;
    mq_status s = mq_group_poll(b, topic, group, p, msgs.data(), sizeof(mq_message), max, MQ_NO_WAIT, nullptr, &n);
    EXPECT_TRUE(s == MQ_OK || s == MQ_TIMEOUT) << mq_status_name(s) << ": " << mq_last_error();
    if (s == MQ_TIMEOUT) {
        EXPECT_EQ(n, 0u);
    }
    msgs.resize(s == MQ_OK ? n : 0);
    return msgs;
}

std::vector<int64_t> offsets(const std::vector<mq_message> &msgs) {
    std::vector<int64_t> o;
    for (const mq_message &m : msgs) o.push_back(m.offset);
    return o;
}

std::vector<uint32_t> delivery_counts(const std::vector<mq_message> &msgs) {
    std::vector<uint32_t> d;
    for (const mq_message &m : msgs) d.push_back(m.delivery_count);
    return d;
}

std::string list_topics(mq_broker *b) {
    size_t needed = 0;
    EXPECT_EQ(mq_topic_list(b, nullptr, 0, &needed), MQ_OK) << mq_last_error();
    std::string s(needed, '\0');
    EXPECT_EQ(mq_topic_list(b, s.data(), s.size(), &needed), MQ_OK) << mq_last_error();
    s.resize(std::strlen(s.c_str()));
    return s;
}

std::string list_groups(mq_broker *b, const char *topic) {
    size_t needed = 0;
    EXPECT_EQ(mq_group_list(b, topic, nullptr, 0, &needed), MQ_OK) << mq_last_error();
    std::string s(needed, '\0');
    EXPECT_EQ(mq_group_list(b, topic, s.data(), s.size(), &needed), MQ_OK) << mq_last_error();
    s.resize(std::strlen(s.c_str()));
    return s;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 5000ms) {
    auto deadline = Clock::now() + timeout;
    while (!pred()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::yield();
    }
    return true;
}

// ---- rule 1: partitioning ----------------------------------------------------------------

TEST(SpecRules, Murmur2MatchesKafkaVectors) {
    // Kafka's UtilsTest.testMurmur2 vectors.
    struct V {
        const char *key;
        int32_t hash;
    } vectors[] = {{"21", -973932308},
                   {"foobar", -790332482},
                   {"a-little-bit-long-string", -985981536},
                   {"a-little-bit-longer-string", -1486304829},
                   {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
                   {"abc", 479470107}};
    for (const V &v : vectors) EXPECT_EQ(mq_key_murmur2(v.key, std::strlen(v.key)), v.hash) << v.key;
}

TEST(SpecRules, PartitionForKeyIsKafkaDefaultPartitioner) {
    for (int32_t n : {1, 2, 3, 4, 7, 100}) {
        for (const char *key : {"21", "foobar", "user-a", "user-b", "abc"}) {
            int32_t expected =
                (mq_key_murmur2(key, std::strlen(key)) & 0x7fffffff) % n;
            int32_t got = -1;
            ASSERT_EQ(mq_key_partition(key, std::strlen(key), n, &got), MQ_OK);
            EXPECT_EQ(got, expected) << key << " over " << n;
        }
    }
    // Spelled out, so a wrong murmur2 cannot agree with itself: -973932308 & 0x7fffffff =
    // 1173551340; -790332482 & 0x7fffffff = 1357151166.
    int32_t p = -1;
    ASSERT_EQ(mq_key_partition("21", 2, 7, &p), MQ_OK);
    EXPECT_EQ(p, 1173551340 % 7);
    ASSERT_EQ(mq_key_partition("foobar", 6, 4, &p), MQ_OK);
    EXPECT_EQ(p, 1357151166 % 4);
}

TEST(SpecRules, KeyedPublishLandsOnKafkaPartition) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "keyed", 7, 16);
    for (const char *key : {"21", "foobar", "user-a", "user-b", "abc", "x"}) {
        int32_t expected = -1, got = -1;
        ASSERT_EQ(mq_key_partition(key, std::strlen(key), 7, &expected), MQ_OK);
        pub_key(b, "keyed", key, "v", &got);
        EXPECT_EQ(got, expected) << key;
    }
}

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

TEST(SpecRules, EmptyKeyIsHashedNotRoundRobin) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "ek", 4, 16);
    // murmur2 of no bytes is 275646681; 275646681 % 4 = 1.
    EXPECT_EQ(mq_key_murmur2("", 0), 275646681);
    int32_t expected = -1;
    ASSERT_EQ(mq_key_partition("", 0, 4, &expected), MQ_OK);
    EXPECT_EQ(expected, 1);
    for (int i = 0; i < 6; ++i) {
        int32_t p = -1;
        ASSERT_EQ(mq_topic_publish(b, "ek", "", 0, "v", 1, NULL, 0, MQ_NO_WAIT, nullptr, &p, nullptr), MQ_OK)
            << mq_last_error();
        EXPECT_EQ(p, expected) << "publish " << i;
    }
    EXPECT_EQ(pinfo(b, "ek", expected).end, 6);

    // The empty key comes back as an empty key, not as "no key".
    subscribe(b, "ek", "g");
    ASSERT_EQ(mq_topic_publish(b, "ek", "", 0, "v", 1, NULL, 0, MQ_NO_WAIT, nullptr, nullptr, nullptr), MQ_OK);
    ASSERT_EQ(mq_topic_publish(b, "ek", nullptr, 0, "w", 1, NULL, 0, MQ_NO_WAIT, nullptr, nullptr, nullptr),
              MQ_OK);
    std::vector<mq_message> m = poll(b, "ek", "g", expected, 1);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_NE(m[0].key, nullptr);
    EXPECT_EQ(m[0].key_len, 0u);
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
    ASSERT_EQ(mq_topic_publish(b, "copy", key, 5, payload, 9, NULL, 0, MQ_NO_WAIT, nullptr, &p, &off), MQ_OK);
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
    ASSERT_EQ(mq_topic_publish_batch(b, "ts", batch, sizeof(mq_record), 2, MQ_NO_WAIT, nullptr, nullptr, sizeof(mq_publish_result), nullptr), MQ_OK);
    clock.advance_ms(10);
    EXPECT_EQ(pub(b, "ts", "later"), 4);

    std::vector<mq_message> m = poll(b, "ts", "g", 0, 10);
    ASSERT_EQ(m.size(), 5u);
    for (int i = 0; i < 4; i++) EXPECT_EQ(m[i].timestamp_ns, t0) << "message " << i;
    EXPECT_EQ(m[4].timestamp_ns, t0 + 7'000'000);
}

TEST(SpecRules, ZeroLengthPayloadIsNeverNull) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "empty", 1, 8);
    subscribe(b, "empty", "g");
    ASSERT_EQ(mq_topic_publish(b, "empty", nullptr, 0, nullptr, 0, NULL, 0, MQ_NO_WAIT, nullptr, nullptr,
                         nullptr),
              MQ_OK)
        << mq_last_error();
    std::vector<mq_message> m = poll(b, "empty", "g", 0, 4);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_NE(m[0].payload, nullptr);
    EXPECT_EQ(m[0].payload_len, 0u);
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

TEST(SpecRules, FullPartitionWithNoWaitFailsAndAppendsNothing) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bp", 1, 2);
    subscribe(b, "bp", "g");
    pub(b, "bp", "a");
    pub(b, "bp", "b");
    mq_partition_info before = pinfo(b, "bp", 0);
    EXPECT_EQ(before.backlog, 2);
    int64_t off = 12345;
    EXPECT_EQ(mq_topic_publish(b, "bp", nullptr, 0, "c", 1, NULL, 0, MQ_NO_WAIT, nullptr, nullptr, &off),
              MQ_FULL);
    mq_partition_info after = pinfo(b, "bp", 0);
    EXPECT_EQ(after.end, 2);
    EXPECT_EQ(after.backlog, 2);
    EXPECT_EQ(after.retained_bytes, before.retained_bytes);
    EXPECT_EQ(after.max_backlog, 2);

    // Space is measured from the slowest group's committed, not from next.
    EXPECT_EQ(poll(b, "bp", "g", 0, 10).size(), 2u);
    pub(b, "bp", "c", MQ_FULL);
    ASSERT_EQ(mq_group_ack(b, "bp", "g", 0, 0), MQ_OK);
    EXPECT_EQ(pub(b, "bp", "c"), 2);
    pub(b, "bp", "d", MQ_FULL);
}

TEST(SpecRules, FullPartitionWithShortWaitTimesOutAsFull) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bpw", 1, 1);
    subscribe(b, "bpw", "g");
    pub(b, "bpw", "a");
    int64_t waits_before = pinfo(b, "bpw", 0).producer_waits;
    auto t0 = Clock::now();
    EXPECT_EQ(mq_topic_publish(b, "bpw", nullptr, 0, "b", 1, NULL, 0, 30, nullptr, nullptr, nullptr), MQ_FULL);
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
    EXPECT_EQ(mq_group_poll(b, "pt", "g", 0, m, sizeof(mq_message), 4, MQ_NO_WAIT, nullptr, &n), MQ_TIMEOUT);
    EXPECT_EQ(n, 0u);
    n = 99;
    auto t0 = Clock::now();
    EXPECT_EQ(mq_group_poll(b, "pt", "g", 0, m, sizeof(mq_message), 4, 30, nullptr, &n), MQ_TIMEOUT);
    auto waited = Clock::now() - t0;
    EXPECT_EQ(n, 0u);
    EXPECT_GE(waited, 30ms);
    EXPECT_LT(waited, 3000ms);
    mq_group_info g = ginfo(b, "pt", "g", 0);
    EXPECT_EQ(g.committed, 0);
    EXPECT_EQ(g.next, 0);
}

TEST(SpecRules, PollHandsOutAtMostMaxFromNext) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "pm", 1, 16);
    subscribe(b, "pm", "g");
    for (int i = 0; i < 5; ++i) pub(b, "pm", "m" + std::to_string(i));
    EXPECT_EQ(offsets(poll(b, "pm", "g", 0, 2)), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(offsets(poll(b, "pm", "g", 0, 2)), (std::vector<int64_t>{2, 3}));
    std::vector<mq_message> last = poll(b, "pm", "g", 0, 10);
    EXPECT_EQ(offsets(last), (std::vector<int64_t>{4}));
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(payload_of(last[0]), "m4");
    EXPECT_TRUE(poll(b, "pm", "g", 0, 10).empty());
    mq_group_info g = ginfo(b, "pm", "g", 0);
    EXPECT_EQ(g.committed, 0);
    EXPECT_EQ(g.next, 5);
    EXPECT_EQ(g.in_flight, 5);
    EXPECT_EQ(g.lag, 5);
}

// ---- rule 5: ack ---------------------------------------------------------------------------

TEST(SpecRules, AckIsCumulative) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "ack", 1, 16);
    subscribe(b, "ack", "g");
    for (int i = 0; i < 6; ++i) pub(b, "ack", "m");
    ASSERT_EQ(poll(b, "ack", "g", 0, 5).size(), 5u);
    ASSERT_EQ(mq_group_ack(b, "ack", "g", 0, 3), MQ_OK) << mq_last_error();
    mq_group_info g = ginfo(b, "ack", "g", 0);
    EXPECT_EQ(g.committed, 4);
    EXPECT_EQ(g.next, 5);
    EXPECT_EQ(g.in_flight, 1);
    EXPECT_EQ(g.lag, 2);
    mq_partition_info p = pinfo(b, "ack", 0);
    EXPECT_EQ(p.start, 4);  // the only group acked 0..3: trimmed at once
    EXPECT_EQ(p.backlog, 2);
}

TEST(SpecRules, AckOutsideInFlightIsRejectedAndChangesNothing) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "rej", 1, 16);
    subscribe(b, "rej", "billing");
    for (int i = 0; i < 10; ++i) pub(b, "rej", "m");
    ASSERT_EQ(poll(b, "rej", "billing", 0, 6).size(), 6u);
    ASSERT_EQ(mq_group_ack(b, "rej", "billing", 0, 3), MQ_OK);  // in flight: 4..5

    struct Case {
        int64_t offset;
        const char *message;
    } cases[] = {
        {9, "offset 9 is not in flight for billing (in flight: 4..5)"},  // never handed out
        {6, "offset 6 is not in flight for billing (in flight: 4..5)"},  // == next
        {3, "offset 3 is not in flight for billing (in flight: 4..5)"},  // == committed - 1
        {0, "offset 0 is not in flight for billing (in flight: 4..5)"},  // long acked
    };
    for (const Case &c : cases) {
        EXPECT_EQ(mq_group_ack(b, "rej", "billing", 0, c.offset), MQ_ERR_NOT_IN_FLIGHT) << c.offset;
        EXPECT_STREQ(mq_last_error(), c.message);
        mq_group_info g = ginfo(b, "rej", "billing", 0);
        EXPECT_EQ(g.committed, 4);
        EXPECT_EQ(g.next, 6);
        mq_partition_info p = pinfo(b, "rej", 0);
        EXPECT_EQ(p.start, 4);
        EXPECT_EQ(p.end, 10);
    }
    // The edges of the range are accepted.
    EXPECT_EQ(mq_group_ack(b, "rej", "billing", 0, 4), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_group_ack(b, "rej", "billing", 0, 5), MQ_OK) << mq_last_error();
    // With nothing in flight, the message says so.
    EXPECT_EQ(mq_group_ack(b, "rej", "billing", 0, 5), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_STREQ(mq_last_error(), "offset 5 is not in flight for billing (nothing is)");
    EXPECT_EQ(mq_group_ack(b, "rej", "billing", 0, 6), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_STREQ(mq_last_error(), "offset 6 is not in flight for billing (nothing is)");
}

TEST(SpecRules, AckWithNothingEverDeliveredIsRejected) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "rej0", 1, 4);
    subscribe(b, "rej0", "billing");
    pub(b, "rej0", "m");
    EXPECT_EQ(mq_group_ack(b, "rej0", "billing", 0, 0), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_STREQ(mq_last_error(), "offset 0 is not in flight for billing (nothing is)");
    EXPECT_EQ(ginfo(b, "rej0", "billing", 0).committed, 0);
    EXPECT_EQ(pinfo(b, "rej0", 0).start, 0);
}

// ---- rule 6: nack --------------------------------------------------------------------------

TEST(SpecRules, NackRewindsNextToCommitted) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "nack", 1, 16);
    subscribe(b, "nack", "g");
    for (int i = 0; i < 5; ++i) pub(b, "nack", "m" + std::to_string(i));
    ASSERT_EQ(poll(b, "nack", "g", 0, 4).size(), 4u);
    ASSERT_EQ(mq_group_ack(b, "nack", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_nack(b, "nack", "g", 0, 0), MQ_OK) << mq_last_error();
    mq_group_info g = ginfo(b, "nack", "g", 0);
    EXPECT_EQ(g.committed, 1);
    EXPECT_EQ(g.next, 1);
    EXPECT_EQ(g.in_flight, 0);
    std::vector<mq_message> again = poll(b, "nack", "g", 0, 10);
    EXPECT_EQ(offsets(again), (std::vector<int64_t>{1, 2, 3, 4}));
    ASSERT_EQ(again.size(), 4u);
    EXPECT_EQ(payload_of(again[0]), "m1");

    // A nack with nothing in flight is fine and changes nothing.
    ASSERT_EQ(mq_group_ack(b, "nack", "g", 0, 4), MQ_OK);
    EXPECT_EQ(mq_group_nack(b, "nack", "g", 0, 0), MQ_OK) << mq_last_error();
    g = ginfo(b, "nack", "g", 0);
    EXPECT_EQ(g.committed, 5);
    EXPECT_EQ(g.next, 5);
}

TEST(SpecRules, DeliveryCountCountsPollsNotRewinds) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    create_topic(b, "dc", 1, 16, /*ack_timeout_ms=*/1000);
    subscribe(b, "dc", "g");
    for (int i = 0; i < 3; ++i) pub(b, "dc", "m");

    EXPECT_EQ(delivery_counts(poll(b, "dc", "g", 0, 2)), (std::vector<uint32_t>{1, 1}));
    // Rewinding twice hands nothing out, so counts nothing.
    ASSERT_EQ(mq_group_nack(b, "dc", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_nack(b, "dc", "g", 0, 0), MQ_OK);
    std::vector<mq_message> m = poll(b, "dc", "g", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(delivery_counts(m), (std::vector<uint32_t>{2, 2, 1}));
    // A lease that runs out is a redelivery too.
    clock.advance_ms(1001);
    m = poll(b, "dc", "g", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(delivery_counts(m), (std::vector<uint32_t>{3, 3, 2}));
    // After a partial ack the rest keeps its count.
    ASSERT_EQ(mq_group_ack(b, "dc", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_nack(b, "dc", "g", 0, 0), MQ_OK);
    m = poll(b, "dc", "g", 0, 10);
    EXPECT_EQ(delivery_counts(m), (std::vector<uint32_t>{4, 3}));
}

// ---- rule 7: lease -------------------------------------------------------------------------

TEST(SpecRules, LeaseExpiryRedeliversWithInjectedClock) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    create_topic(b, "lease", 1, 16, /*ack_timeout_ms=*/1000);
    subscribe(b, "lease", "g");
    for (int i = 0; i < 4; ++i) pub(b, "lease", "m" + std::to_string(i));
    ASSERT_EQ(poll(b, "lease", "g", 0, 2).size(), 2u);
    ASSERT_EQ(mq_group_ack(b, "lease", "g", 0, 0), MQ_OK);

    // Before the lease runs out, a poll goes on from next.
    clock.advance_ms(999);
    EXPECT_EQ(offsets(poll(b, "lease", "g", 0, 1)), (std::vector<int64_t>{2}));
    // That poll started a new lease covering everything in flight (1..2), from t = 999 ms.
    clock.advance_ms(999);
    EXPECT_EQ(offsets(poll(b, "lease", "g", 0, 1)), (std::vector<int64_t>{3}));
    mq_group_info g = ginfo(b, "lease", "g", 0);
    EXPECT_EQ(g.committed, 1);
    EXPECT_EQ(g.next, 4);
    EXPECT_TRUE(poll(b, "lease", "g", 0, 10).empty());  // nothing new, lease still running

    clock.advance_ms(1001);
    std::vector<mq_message> m = poll(b, "lease", "g", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{1, 2, 3}));
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(payload_of(m[0]), "m1");
    g = ginfo(b, "lease", "g", 0);
    EXPECT_EQ(g.committed, 1);
    EXPECT_EQ(g.next, 4);

    ASSERT_EQ(mq_group_ack(b, "lease", "g", 0, 3), MQ_OK);
    EXPECT_EQ(pinfo(b, "lease", 0).start, 4);
}

TEST(SpecRules, LeaseDoesNotRunOutForAckedWork) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    create_topic(b, "lease2", 1, 16, 1000);
    subscribe(b, "lease2", "g");
    pub(b, "lease2", "a");
    ASSERT_EQ(poll(b, "lease2", "g", 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_ack(b, "lease2", "g", 0, 0), MQ_OK);
    clock.advance_ms(5000);
    EXPECT_TRUE(poll(b, "lease2", "g", 0, 10).empty());
    pub(b, "lease2", "b");
    std::vector<mq_message> m = poll(b, "lease2", "g", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{1}));
    EXPECT_EQ(delivery_counts(m), (std::vector<uint32_t>{1}));
}

TEST(SpecRules, DefaultAckTimeoutIsThirtySeconds) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();
    ASSERT_EQ(mq_topic_create(b, "deflt", nullptr), MQ_OK) << mq_last_error();
    mq_topic_info t{};
    ASSERT_EQ(mq_topic_get_info(b, "deflt", &t, sizeof t), MQ_OK);
    EXPECT_EQ(t.partitions, 1);
    EXPECT_EQ(t.capacity, 1024);
    EXPECT_EQ(t.max_bytes, 0);
    EXPECT_EQ(t.ack_timeout_ms, 30000);
    subscribe(b, "deflt", "g");
    pub(b, "deflt", "a");
    ASSERT_EQ(poll(b, "deflt", "g", 0, 1).size(), 1u);
    clock.advance_ms(29999);
    EXPECT_TRUE(poll(b, "deflt", "g", 0, 1).empty());
    clock.advance_ms(2);
    EXPECT_EQ(offsets(poll(b, "deflt", "g", 0, 1)), (std::vector<int64_t>{0}));
}

// ---- rule 8: trim --------------------------------------------------------------------------

TEST(SpecRules, TrimWhenEveryGroupHasAcked) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "trim", 1, 8);
    subscribe(b, "trim", "fast");
    subscribe(b, "trim", "slow");
    for (int i = 0; i < 4; ++i) pub(b, "trim", "abcd");
    EXPECT_EQ(pinfo(b, "trim", 0).retained_bytes, 16);

    ASSERT_EQ(poll(b, "trim", "fast", 0, 10).size(), 4u);
    ASSERT_EQ(mq_group_ack(b, "trim", "fast", 0, 3), MQ_OK);
    mq_partition_info p = pinfo(b, "trim", 0);
    EXPECT_EQ(p.start, 0);  // slow still holds everything
    EXPECT_EQ(p.backlog, 4);
    EXPECT_EQ(p.retained_bytes, 16);

    ASSERT_EQ(poll(b, "trim", "slow", 0, 2).size(), 2u);
    ASSERT_EQ(mq_group_ack(b, "trim", "slow", 0, 1), MQ_OK);
    p = pinfo(b, "trim", 0);
    EXPECT_EQ(p.start, 2);
    EXPECT_EQ(p.backlog, 2);
    EXPECT_EQ(p.retained_bytes, 8);

    ASSERT_EQ(poll(b, "trim", "slow", 0, 10).size(), 2u);
    ASSERT_EQ(mq_group_ack(b, "trim", "slow", 0, 3), MQ_OK);
    p = pinfo(b, "trim", 0);
    EXPECT_EQ(p.start, 4);
    EXPECT_EQ(p.end, 4);
    EXPECT_EQ(p.backlog, 0);
    EXPECT_EQ(p.retained_bytes, 0);
}

TEST(SpecRules, NoGroupsMeansNothingIsKept) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "void", 1, 3);
    // Far more than capacity, without waiting: with no groups nothing is retained to fill it.
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(pub(b, "void", "12345678"), i);
        mq_partition_info p = pinfo(b, "void", 0);
        EXPECT_EQ(p.start, i + 1);
        EXPECT_EQ(p.end, i + 1);
        EXPECT_EQ(p.backlog, 0);
        EXPECT_EQ(p.retained_bytes, 0);
    }
    EXPECT_EQ(pinfo(b, "void", 0).producer_waits, 0);
}

// ---- rule 9: late groups -------------------------------------------------------------------

TEST(SpecRules, LateGroupStartsAtEnd) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "late", 1, 8);
    subscribe(b, "late", "early");
    for (int i = 0; i < 3; ++i) pub(b, "late", "old");
    subscribe(b, "late", "late");
    mq_group_info g = ginfo(b, "late", "late", 0);
    EXPECT_EQ(g.committed, 3);
    EXPECT_EQ(g.next, 3);
    EXPECT_EQ(g.lag, 0);
    EXPECT_TRUE(poll(b, "late", "late", 0, 10).empty());
    pub(b, "late", "new");
    std::vector<mq_message> m = poll(b, "late", "late", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{3}));
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(payload_of(m[0]), "new");
    // The late group does not hold back what the early group acks.
    EXPECT_EQ(poll(b, "late", "early", 0, 10).size(), 4u);
    ASSERT_EQ(mq_group_ack(b, "late", "early", 0, 3), MQ_OK);
    EXPECT_EQ(pinfo(b, "late", 0).start, 3);
}

TEST(SpecRules, StartEarliestBeginsAtOldestRetained) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "earliest", 1, 8);
    subscribe(b, "earliest", "holder");
    for (int i = 0; i < 4; ++i) pub(b, "earliest", "m" + std::to_string(i));
    ASSERT_EQ(poll(b, "earliest", "holder", 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_ack(b, "earliest", "holder", 0, 0), MQ_OK);  // start is now 1

    subscribe(b, "earliest", "replay", MQ_START_EARLIEST);
    mq_group_info g = ginfo(b, "earliest", "replay", 0);
    EXPECT_EQ(g.committed, 1);
    EXPECT_EQ(g.next, 1);
    EXPECT_EQ(g.lag, 3);
    std::vector<mq_message> m = poll(b, "earliest", "replay", 0, 10);
    EXPECT_EQ(offsets(m), (std::vector<int64_t>{1, 2, 3}));
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(payload_of(m[0]), "m1");
}

// ---- rules 10 and 11: push subscriptions and ownership -------------------------------------

struct FreeCounter {
    std::atomic<int> frees{0};
};
int never_called(void *, const mq_message *) { return 0; }
void count_free(void *user) { static_cast<FreeCounter *>(user)->frees++; }

mq_status push_subscribe(mq_broker *b, const char *topic, const char *group,
                         std::vector<int32_t> parts, FreeCounter *fc, mq_subscription **out) {
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.partitions = parts.empty() ? nullptr : parts.data();
    o.partition_count = parts.size();
    *out = nullptr;
    return mq_subscription_open(b, topic, group, &o, &never_called, fc, &count_free, out);
}

TEST(SpecRules, SameGroupCannotClaimAnOwnedPartition) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "own", 4, 8);
    FreeCounter f1, f2, f3, f4;
    mq_subscription *s1 = nullptr, *s2 = nullptr, *s3 = nullptr, *s4 = nullptr;
    ASSERT_EQ(push_subscribe(b, "own", "g", {1, 3}, &f1, &s1), MQ_OK) << mq_last_error();

    EXPECT_EQ(push_subscribe(b, "own", "g", {0, 1}, &f2, &s2), MQ_ERR_OWNED);
    EXPECT_STRNE(mq_last_error(), "");
    EXPECT_EQ(f2.frees.load(), 1);  // user_free ran before the failed call returned
    // A refused subscription claimed nothing: partition 0 is still free.
    ASSERT_EQ(push_subscribe(b, "own", "g", {0}, &f3, &s3), MQ_OK) << mq_last_error();
    // "All partitions" overlaps too.
    EXPECT_EQ(push_subscribe(b, "own", "g", {}, &f4, &s4), MQ_ERR_OWNED);
    EXPECT_EQ(f4.frees.load(), 1);

    // Closing releases the claim.
    ASSERT_EQ(mq_subscription_close(s1), MQ_OK);
    EXPECT_EQ(f1.frees.load(), 1);
    FreeCounter f5;
    mq_subscription *s5 = nullptr;
    EXPECT_EQ(push_subscribe(b, "own", "g", {1, 2, 3}, &f5, &s5), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_subscription_close(s3), MQ_OK);
    ASSERT_EQ(mq_subscription_close(s5), MQ_OK);
    EXPECT_EQ(f3.frees.load(), 1);
    EXPECT_EQ(f5.frees.load(), 1);
}

TEST(SpecRules, DisjointPartitionsAndOtherGroupsMayOwn) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "own2", 4, 8);
    FreeCounter f[4];
    mq_subscription *s[4] = {};
    ASSERT_EQ(push_subscribe(b, "own2", "g", {0, 2}, &f[0], &s[0]), MQ_OK) << mq_last_error();
    ASSERT_EQ(push_subscribe(b, "own2", "g", {1, 3}, &f[1], &s[1]), MQ_OK) << mq_last_error();
    ASSERT_EQ(push_subscribe(b, "own2", "h", {}, &f[2], &s[2]), MQ_OK) << mq_last_error();
    ASSERT_EQ(push_subscribe(b, "own2", "i", {0}, &f[3], &s[3]), MQ_OK) << mq_last_error();
    EXPECT_EQ(list_groups(b, "own2"), "g\nh\ni\n");
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(mq_subscription_close(s[i]), MQ_OK);
        EXPECT_EQ(f[i].frees.load(), 1);
    }
}

TEST(SpecRules, PushSubscriptionJoinsAnExistingGroup) {
    // Ownership is for push subscriptions; a group subscribed for pulling claims nothing.
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "own3", 2, 8);
    subscribe(b, "own3", "g");
    FreeCounter fc;
    mq_subscription *s = nullptr;
    ASSERT_EQ(push_subscribe(b, "own3", "g", {}, &fc, &s), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_subscription_close(s), MQ_OK);
}

TEST(SpecRules, AssignRoundRobin) {
    int32_t out[8];
    size_t n = 0;
    ASSERT_EQ(mq_assignment_round_robin(5, 2, 0, out, 8, &n), MQ_OK);
    EXPECT_EQ(std::vector<int32_t>(out, out + n), (std::vector<int32_t>{0, 2, 4}));
    ASSERT_EQ(mq_assignment_round_robin(5, 2, 1, out, 8, &n), MQ_OK);
    EXPECT_EQ(std::vector<int32_t>(out, out + n), (std::vector<int32_t>{1, 3}));
    ASSERT_EQ(mq_assignment_round_robin(4, 3, 0, out, 8, &n), MQ_OK);
    EXPECT_EQ(std::vector<int32_t>(out, out + n), (std::vector<int32_t>{0, 3}));
    // More members than partitions: some own nothing.
    ASSERT_EQ(mq_assignment_round_robin(2, 4, 3, out, 8, &n), MQ_OK);
    EXPECT_EQ(n, 0u);
    // The count is the full count even when out is too small.
    out[1] = -7;
    ASSERT_EQ(mq_assignment_round_robin(10, 1, 0, out, 1, &n), MQ_OK);
    EXPECT_EQ(n, 10u);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], -7);
    ASSERT_EQ(mq_assignment_round_robin(10, 3, 2, nullptr, 0, &n), MQ_OK);
    EXPECT_EQ(n, 3u);

    EXPECT_EQ(mq_assignment_round_robin(0, 1, 0, out, 8, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_assignment_round_robin(4, 0, 0, out, 8, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_assignment_round_robin(4, 2, 2, out, 8, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_assignment_round_robin(4, 2, -1, out, 8, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_assignment_round_robin(4, 2, 0, nullptr, 8, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_assignment_round_robin(4, 2, 0, out, 8, nullptr), MQ_ERR_INVALID);

    // Every partition has exactly one member.
    for (int32_t members = 1; members <= 5; ++members) {
        std::vector<int> owners(7, 0);
        for (int32_t m = 0; m < members; ++m) {
            ASSERT_EQ(mq_assignment_round_robin(7, members, m, out, 8, &n), MQ_OK);
            for (size_t i = 0; i < n; ++i) {
                EXPECT_EQ(out[i] % members, m);
                owners[out[i]]++;
            }
        }
        for (int c : owners) EXPECT_EQ(c, 1);
    }
}

// ---- rule 12: removing a group -------------------------------------------------------------

TEST(SpecRules, UnsubscribeTrimsWhatOnlyThatGroupHeld) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "unsub", 1, 8);
    subscribe(b, "unsub", "keep");
    subscribe(b, "unsub", "gone");
    for (int i = 0; i < 4; ++i) pub(b, "unsub", "ab");
    ASSERT_EQ(poll(b, "unsub", "keep", 0, 2).size(), 2u);
    ASSERT_EQ(mq_group_ack(b, "unsub", "keep", 0, 1), MQ_OK);
    EXPECT_EQ(pinfo(b, "unsub", 0).start, 0);

    ASSERT_EQ(mq_group_unsubscribe(b, "unsub", "gone"), MQ_OK) << mq_last_error();
    mq_partition_info p = pinfo(b, "unsub", 0);
    EXPECT_EQ(p.start, 2);
    EXPECT_EQ(p.backlog, 2);
    EXPECT_EQ(p.retained_bytes, 4);
    EXPECT_EQ(list_groups(b, "unsub"), "keep\n");
    mq_group_info g{};
    EXPECT_EQ(mq_group_get_info(b, "unsub", "gone", 0, &g, sizeof g), MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_group_unsubscribe(b, "unsub", "gone"), MQ_ERR_NO_GROUP);

    // The last group going leaves nothing retained.
    ASSERT_EQ(mq_group_unsubscribe(b, "unsub", "keep"), MQ_OK);
    p = pinfo(b, "unsub", 0);
    EXPECT_EQ(p.start, 4);
    EXPECT_EQ(p.end, 4);
    EXPECT_EQ(p.retained_bytes, 0);
    EXPECT_EQ(list_groups(b, "unsub"), "");
    // And a group of the same name may come back, at the end.
    subscribe(b, "unsub", "gone");
    EXPECT_EQ(ginfo(b, "unsub", "gone", 0).committed, 4);
}

TEST(SpecRules, UnsubscribeWakesBlockedPublisher) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "stall", 1, 2);
    subscribe(b, "stall", "dead");
    pub(b, "stall", "a");
    pub(b, "stall", "b");
    int64_t waits0 = pinfo(b, "stall", 0).producer_waits;

    std::promise<std::pair<mq_status, int64_t>> done;
    auto fut = done.get_future();
    std::thread publisher([&] {
        int64_t off = -1;
        mq_status s =
            mq_topic_publish(b, "stall", nullptr, 0, "c", 1, NULL, 0, MQ_WAIT_FOREVER, nullptr, nullptr, &off);
        done.set_value({s, off});
    });
    bool waiting = eventually([&] { return pinfo(b, "stall", 0).producer_waits > waits0; });
    EXPECT_TRUE(waiting) << "the publish never started waiting";
    EXPECT_EQ(fut.wait_for(0ms), std::future_status::timeout);

    EXPECT_EQ(mq_group_unsubscribe(b, "stall", "dead"), MQ_OK) << mq_last_error();
    if (fut.wait_for(5s) != std::future_status::ready) {
        ADD_FAILURE() << "unsubscribe did not wake the blocked publisher";
        mq_broker_close(b);  // release it so the thread can be joined
    }
    publisher.join();
    auto [status, off] = fut.get();
    EXPECT_EQ(status, MQ_OK) << mq_status_name(status);
    EXPECT_EQ(off, 2);
    mq_partition_info p = pinfo(b, "stall", 0);
    EXPECT_EQ(p.start, 3);
    EXPECT_EQ(p.end, 3);
}

// ---- byte budget ---------------------------------------------------------------------------

TEST(SpecRules, ByteBudgetBackPressure) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bytes", 1, 100, 30000, /*max_bytes=*/10);
    subscribe(b, "bytes", "g");
    EXPECT_EQ(pinfo(b, "bytes", 0).max_bytes, 10);

    int32_t part = -1;
    int64_t off = -1;
    ASSERT_EQ(mq_topic_publish(b, "bytes", "k", 1, "abcde", 5, NULL, 0, MQ_NO_WAIT, nullptr, &part, &off),
              MQ_OK);  // 6 bytes: key and payload both count
    EXPECT_EQ(pinfo(b, "bytes", 0).retained_bytes, 6);
    EXPECT_EQ(mq_topic_publish(b, "bytes", "k", 1, "abcde", 5, NULL, 0, MQ_NO_WAIT, nullptr, nullptr, &off),
              MQ_FULL);  // 12 > 10
    mq_partition_info p = pinfo(b, "bytes", 0);
    EXPECT_EQ(p.end, 1);
    EXPECT_EQ(p.retained_bytes, 6);
    EXPECT_EQ(pub(b, "bytes", "wxyz"), 1);  // exactly 10 fits
    EXPECT_EQ(pinfo(b, "bytes", 0).retained_bytes, 10);
    pub(b, "bytes", "", MQ_OK);  // zero bytes always fit
    pub(b, "bytes", "q", MQ_FULL);

    // A message that could never fit is refused outright rather than waiting forever.
    EXPECT_EQ(mq_topic_publish(b, "bytes", nullptr, 0, "01234567890", 11, NULL, 0, MQ_WAIT_FOREVER, nullptr,
                         nullptr, nullptr),
              MQ_ERR_TOO_LARGE);
    EXPECT_STRNE(mq_last_error(), "");

    // Acking frees bytes and wakes a publisher blocked on the budget.
    int64_t waits0 = pinfo(b, "bytes", 0).producer_waits;
    std::promise<mq_status> done;
    auto fut = done.get_future();
    std::thread publisher([&] {
        done.set_value(mq_topic_publish(b, "bytes", nullptr, 0, "123456", 6, NULL, 0, MQ_WAIT_FOREVER, nullptr,
                                  nullptr, nullptr));
    });
    EXPECT_TRUE(eventually([&] { return pinfo(b, "bytes", 0).producer_waits > waits0; }));
    // No ASSERT until the publisher thread is joined.
    EXPECT_EQ(poll(b, "bytes", "g", 0, 1).size(), 1u);
    EXPECT_EQ(mq_group_ack(b, "bytes", "g", 0, 0), MQ_OK);  // frees 6: 4 + 6 = 10 fits
    if (fut.wait_for(5s) != std::future_status::ready) {
        ADD_FAILURE() << "ack did not wake the publisher blocked on bytes";
        mq_broker_close(b);
    }
    publisher.join();
    EXPECT_EQ(fut.get(), MQ_OK);
    p = pinfo(b, "bytes", 0);
    EXPECT_EQ(p.retained_bytes, 10);
    EXPECT_EQ(p.end, 4);
}

// ---- lists ---------------------------------------------------------------------------------

TEST(SpecRules, TopicAndGroupListsInCreationOrder) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    EXPECT_EQ(list_topics(b), "");
    create_topic(b, "zeta", 1, 4);
    create_topic(b, "alpha.v1", 1, 4);
    create_topic(b, "Mid_dle-2", 1, 4);
    EXPECT_EQ(list_topics(b), "zeta\nalpha.v1\nMid_dle-2\n");
    EXPECT_EQ(mq_topic_create(b, "zeta", nullptr), MQ_ERR_EXISTS);
    EXPECT_EQ(list_topics(b), "zeta\nalpha.v1\nMid_dle-2\n");

    // snprintf-style: truncated, NUL-terminated, needed counts the whole list and its NUL.
    char buf[6];
    std::memset(buf, '#', sizeof buf);
    size_t needed = 0;
    ASSERT_EQ(mq_topic_list(b, buf, sizeof buf, &needed), MQ_OK);
    EXPECT_EQ(needed, std::strlen("zeta\nalpha.v1\nMid_dle-2\n") + 1);
    EXPECT_STREQ(buf, "zeta\n");
    ASSERT_EQ(mq_topic_list(b, nullptr, 0, nullptr), MQ_OK);

    EXPECT_EQ(list_groups(b, "alpha.v1"), "");
    subscribe(b, "alpha.v1", "web");
    subscribe(b, "alpha.v1", "audit");
    subscribe(b, "alpha.v1", "billing");
    EXPECT_EQ(list_groups(b, "alpha.v1"), "web\naudit\nbilling\n");
    EXPECT_EQ(mq_group_subscribe(b, "alpha.v1", "web", nullptr), MQ_ERR_EXISTS);
    EXPECT_EQ(list_groups(b, "alpha.v1"), "web\naudit\nbilling\n");
    EXPECT_EQ(list_groups(b, "zeta"), "");
    EXPECT_EQ(mq_group_list(b, "nope", nullptr, 0, &needed), MQ_ERR_NO_TOPIC);
    EXPECT_STRNE(mq_last_error(), "");
}

// ---- batch publish -------------------------------------------------------------------------

TEST(SpecRules, PublishBatchKeepsPerPartitionOrder) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "batch", 2, 16);
    subscribe(b, "batch", "g");
    // "user-a" lands on 1, "user-b" on 0 (Kafka's partitioner over 2).
    const char *keys[] = {"user-a", "user-b", "user-a", "user-a", "user-b", "user-a"};
    std::vector<std::string> payloads;
    for (int i = 0; i < 6; ++i) payloads.push_back("b" + std::to_string(i));
    std::vector<mq_record> recs(6);
    for (int i = 0; i < 6; ++i)
        recs[i] = {keys[i], 6, payloads[i].data(), payloads[i].size()};
    std::vector<mq_publish_result> res(6, mq_publish_result{-9, -9});
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b, "batch", recs.data(), sizeof(mq_record), recs.size(), MQ_NO_WAIT, nullptr,
                               res.data(), sizeof(mq_publish_result), &published),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, 6u);
    int32_t want_part[] = {1, 0, 1, 1, 0, 1};
    int64_t want_off[] = {0, 0, 1, 2, 1, 3};
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(res[i].partition, want_part[i]) << "record " << i;
        EXPECT_EQ(res[i].offset, want_off[i]) << "record " << i;
    }
    std::vector<mq_message> p1 = poll(b, "batch", "g", 1, 10);
    ASSERT_EQ(p1.size(), 4u);
    EXPECT_EQ(payload_of(p1[0]), "b0");
    EXPECT_EQ(payload_of(p1[1]), "b2");
    EXPECT_EQ(payload_of(p1[2]), "b3");
    EXPECT_EQ(payload_of(p1[3]), "b5");
    std::vector<mq_message> p0 = poll(b, "batch", "g", 0, 10);
    ASSERT_EQ(p0.size(), 2u);
    EXPECT_EQ(payload_of(p0[0]), "b1");
    EXPECT_EQ(payload_of(p0[1]), "b4");

    // Appends after the batch go on from where it ended.
    int32_t part = -1;
    EXPECT_EQ(pub_key(b, "batch", "user-a", "after", &part), 4);
    EXPECT_EQ(part, 1);
}

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
    EXPECT_EQ(mq_topic_publish_batch(b, "bfull", recs.data(), sizeof(mq_record), recs.size(), MQ_NO_WAIT, nullptr,
                               res.data(), sizeof(mq_publish_result), &published),
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

TEST(SpecRules, PublishBatchWithABadRecordAppendsNothing) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "bbad", 2, 16);
    subscribe(b, "bbad", "g");
    std::vector<mq_record> recs = {
        {"user-a", 6, "ok", 2}, {"user-b", 6, "ok", 2}, {nullptr, 0, nullptr, 3}};
    size_t published = 0;
    EXPECT_EQ(mq_topic_publish_batch(b, "bbad", recs.data(), sizeof(mq_record), recs.size(), MQ_NO_WAIT, nullptr,
                               nullptr, sizeof(mq_publish_result), &published),
              MQ_ERR_INVALID);
    EXPECT_STRNE(mq_last_error(), "");
    EXPECT_EQ(pinfo(b, "bbad", 0).end, 0);
    EXPECT_EQ(pinfo(b, "bbad", 1).end, 0);

    // A record over the broker's maximum fails the whole batch the same way.
    std::string huge(1048577, 'h');
    recs[2] = {nullptr, 0, huge.data(), huge.size()};
    EXPECT_EQ(mq_topic_publish_batch(b, "bbad", recs.data(), sizeof(mq_record), recs.size(), MQ_NO_WAIT, nullptr,
                               nullptr, sizeof(mq_publish_result), &published),
              MQ_ERR_TOO_LARGE);
    EXPECT_EQ(pinfo(b, "bbad", 0).end, 0);
    EXPECT_EQ(pinfo(b, "bbad", 1).end, 0);
}

}  // namespace
