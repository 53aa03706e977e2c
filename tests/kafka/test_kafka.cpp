// The Kafka backend against a real cluster (scripts/kafka-server.sh starts one; its address comes
// in MQ_KAFKA_BOOTSTRAP). Every test uses topics and groups of its own (the cluster outlives the
// run), named after the process and the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"

namespace {

const char *bootstrap() {
    const char *b = std::getenv("MQ_KAFKA_BOOTSTRAP");
    return b && *b ? b : nullptr;
}

struct Broker {
    mq_broker *b = nullptr;
    explicit Broker(const char *config = nullptr) {
        mq_broker_options o;
        mq_broker_options_init(&o, sizeof o);
        o.kafka_bootstrap = bootstrap();
        o.kafka_config = config;
        EXPECT_NE(o.kafka_bootstrap, nullptr)
            << "MQ_KAFKA_BOOTSTRAP is not set: start a cluster with scripts/kafka-server.sh start";
        EXPECT_EQ(mq_broker_new(&o, &b), MQ_OK) << mq_last_error();
    }
    ~Broker() { mq_broker_free(b); }
    operator mq_broker *() const { return b; }
};

std::string unique(const char *what) {
    static int n = 0;
    const auto *info = testing::UnitTest::GetInstance()->current_test_info();
    return std::string(what) + "-" + info->name() + "-" + std::to_string(getpid()) + "-" +
           std::to_string(++n);
}

void create(mq_broker *b, const std::string &topic, int32_t partitions,
            int64_t ack_timeout_ms = 30000) {
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = partitions;
    c.ack_timeout_ms = ack_timeout_ms;
    ASSERT_EQ(mq_topic_create(b, topic.c_str(), &c), MQ_OK) << mq_last_error();
}

void subscribe(mq_broker *b, const std::string &topic, const std::string &group,
               int32_t start = MQ_START_LATEST) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = start;
    ASSERT_EQ(mq_group_subscribe(b, topic.c_str(), group.c_str(), &o), MQ_OK) << mq_last_error();
}

int64_t publish(mq_broker *b, const std::string &topic, const char *key, const std::string &value,
                int32_t *partition = nullptr, const mq_header *h = nullptr, size_t nh = 0) {
    int64_t off = -1;
    EXPECT_EQ(mq_topic_publish(b, topic.c_str(), key, key ? std::strlen(key) : 0, value.data(),
                               value.size(), h, nh, MQ_NO_WAIT, nullptr, partition, &off),
              MQ_OK)
        << mq_last_error();
    return off;
}

std::string str(const void *p, size_t n) { return std::string(static_cast<const char *>(p), n); }

std::vector<mq_message> poll(mq_broker *b, const std::string &topic, const std::string &group,
                             int32_t partition, size_t max, int64_t wait_ms = MQ_NO_WAIT,
                             mq_status want = MQ_OK) {
    std::vector<mq_message> m(max);
    size_t n = 0;
    EXPECT_EQ(mq_group_poll(b, topic.c_str(), group.c_str(), partition, m.data(),
                            sizeof(mq_message), max, wait_ms, nullptr, &n),
              want)
        << mq_last_error();
    m.resize(n);
    return m;
}

TEST(Kafka, BrokerNeedsAnAnsweringCluster) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = "127.0.0.1:1";  // nothing listens there
    o.kafka_config = "socket.connection.setup.timeout.ms=1000";
    mq_broker *b = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_ERR_BACKEND);
    EXPECT_NE(std::strstr(mq_last_error(), "127.0.0.1:1"), nullptr) << mq_last_error();
    EXPECT_EQ(b, nullptr);
}

TEST(Kafka, BadClientSettingsAreInvalid) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = bootstrap();
    mq_broker *b = nullptr;
    o.kafka_config = "no.such.setting=1";
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_ERR_INVALID);
    EXPECT_NE(std::strstr(mq_last_error(), "no.such.setting"), nullptr) << mq_last_error();
    o.kafka_config = "linger.ms";
    EXPECT_EQ(mq_broker_new(&o, &b), MQ_ERR_INVALID);
    EXPECT_NE(std::strstr(mq_last_error(), "name=value"), nullptr) << mq_last_error();
}

TEST(Kafka, TopicsAreKafkaTopics) {
    Broker b;
    const std::string t = unique("topics");
    create(b, t, 3);
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    EXPECT_EQ(mq_topic_create(b, t.c_str(), &c), MQ_ERR_EXISTS);
    mq_topic_info info{};
    ASSERT_EQ(mq_topic_get_info(b, t.c_str(), &info, sizeof info), MQ_OK) << mq_last_error();
    EXPECT_EQ(info.partitions, 3);
    char buf[65536];
    size_t needed = 0;
    ASSERT_EQ(mq_topic_list(b, buf, sizeof buf, &needed), MQ_OK);
    EXPECT_NE(std::strstr(buf, (t + "\n").c_str()), nullptr) << buf;
    EXPECT_EQ(std::strstr(buf, "__consumer_offsets"), nullptr) << buf;
    {
        Broker other;  // another client sees the same topic
        ASSERT_EQ(mq_topic_get_info(other, t.c_str(), &info, sizeof info), MQ_OK);
        EXPECT_EQ(info.partitions, 3);
    }
    ASSERT_EQ(mq_topic_delete(b, t.c_str()), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_topic_get_info(b, t.c_str(), &info, sizeof info), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_topic_delete(b, t.c_str()), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_topic_publish(b, "bad name", nullptr, 0, "x", 1, nullptr, 0, MQ_NO_WAIT, nullptr,
                               nullptr, nullptr),
              MQ_ERR_INVALID);
}

TEST(Kafka, KeysLandWhereTheInProcessLogPutsThem) {
    Broker b;
    const std::string t = unique("keys");
    create(b, t, 4);
    for (const char *key : {"user-a", "user-b", "21", "foobar", ""}) {
        int32_t want = -1, got = -2;
        ASSERT_EQ(mq_key_partition(key, std::strlen(key), 4, &want), MQ_OK);
        publish(b, t, key, "v", &got);
        EXPECT_EQ(got, want) << key;
    }
    // Without a key: round-robin from partition 0, as in the in-process log.
    for (int32_t i = 0; i < 8; i++) {
        int32_t got = -1;
        publish(b, t, nullptr, "v", &got);
        EXPECT_EQ(got, i % 4);
    }
}

TEST(Kafka, PollAckAndResumeInAnotherClient) {
    const std::string t = unique("resume"), g = unique("billing");
    {
        Broker b;
        create(b, t, 1);
        subscribe(b, t, g);
        const mq_header h[] = {{"trace", 5, "abc", 3}, {"empty", 5, nullptr, 0}};
        for (int i = 0; i < 5; i++) {
            EXPECT_EQ(publish(b, t, "k", "m" + std::to_string(i), nullptr, h, 2), i);
        }
        // Wait 0 still hands out what was published before the poll.
        auto m = poll(b, t, g, 0, 3);
        ASSERT_EQ(m.size(), 3u);
        for (size_t i = 0; i < 3; i++) {
            EXPECT_EQ(m[i].offset, static_cast<int64_t>(i));
            EXPECT_EQ(str(m[i].payload, m[i].payload_len), "m" + std::to_string(i));
            EXPECT_EQ(str(m[i].key, m[i].key_len), "k");
            EXPECT_EQ(m[i].delivery_count, 1u);
            ASSERT_EQ(m[i].header_count, 2u);
            EXPECT_EQ(str(m[i].headers[0].name, m[i].headers[0].name_len), "trace");
            EXPECT_EQ(str(m[i].headers[0].value, m[i].headers[0].value_len), "abc");
            EXPECT_EQ(str(m[i].headers[1].name, m[i].headers[1].name_len), "empty");
            EXPECT_EQ(m[i].headers[1].value_len, 0u);
        }
        EXPECT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), 0, 3), MQ_ERR_NOT_IN_FLIGHT);
        EXPECT_NE(std::strstr(mq_last_error(), "in flight: 0..2"), nullptr) << mq_last_error();
        ASSERT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), 0, 1), MQ_OK) << mq_last_error();
        mq_group_info gi{};
        ASSERT_EQ(mq_group_get_info(b, t.c_str(), g.c_str(), 0, &gi, sizeof gi), MQ_OK);
        EXPECT_EQ(gi.committed, 2);
        EXPECT_EQ(gi.next, 3);
        EXPECT_EQ(gi.lag, 3);
    }
    // A new client of the same group starts at the committed offset: offset 2 comes again.
    Broker b2;
    subscribe(b2, t, g);
    auto m = poll(b2, t, g, 0, 10);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].offset, 2);
    EXPECT_EQ(mq_topic_delete(b2, t.c_str()), MQ_OK);
    EXPECT_EQ(mq_group_ack(b2, t.c_str(), g.c_str(), 0, 2), MQ_ERR_NO_TOPIC);
}

TEST(Kafka, LateGroupStartsAtTheEndAndEarliestAtTheStart) {
    Broker b;
    const std::string t = unique("start");
    create(b, t, 1);
    publish(b, t, nullptr, "before");
    subscribe(b, t, "late");
    subscribe(b, t, "early", MQ_START_EARLIEST);
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), "late", nullptr), MQ_ERR_EXISTS);
    publish(b, t, nullptr, "after");
    auto late = poll(b, t, "late", 0, 10);
    ASSERT_EQ(late.size(), 1u);
    EXPECT_EQ(str(late[0].payload, late[0].payload_len), "after");
    auto early = poll(b, t, "early", 0, 10);
    ASSERT_EQ(early.size(), 2u);
    EXPECT_EQ(str(early[0].payload, early[0].payload_len), "before");
    char buf[256];
    ASSERT_EQ(mq_group_list(b, t.c_str(), buf, sizeof buf, nullptr), MQ_OK);
    EXPECT_STREQ(buf, "late\nearly\n");
    ASSERT_EQ(mq_group_unsubscribe(b, t.c_str(), "late"), MQ_OK);
    EXPECT_EQ(mq_group_ack(b, t.c_str(), "late", 0, 1), MQ_ERR_NO_GROUP);
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, NackAndLeaseExpiryRedeliver) {
    Broker b;
    const std::string t = unique("nack"), g = unique("g");
    create(b, t, 1, 200);  // a 200 ms lease
    subscribe(b, t, g);
    publish(b, t, nullptr, "a");
    publish(b, t, nullptr, "b");
    ASSERT_EQ(poll(b, t, g, 0, 2).size(), 2u);
    EXPECT_TRUE(poll(b, t, g, 0, 2, MQ_NO_WAIT, MQ_TIMEOUT).empty());
    ASSERT_EQ(mq_group_nack(b, t.c_str(), g.c_str(), 0, 0), MQ_OK);
    auto again = poll(b, t, g, 0, 2);
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again[0].offset, 0);
    EXPECT_EQ(again[0].delivery_count, 2u);
    // The lease runs out: a waiting poll gets them back without a nack.
    auto third = poll(b, t, g, 0, 2, 5000);
    ASSERT_EQ(third.size(), 2u);
    EXPECT_EQ(third[1].delivery_count, 3u);
    ASSERT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), 0, 1), MQ_OK);
    EXPECT_EQ(mq_group_extend_lease(b, t.c_str(), g.c_str(), 0), MQ_ERR_NOT_IN_FLIGHT);
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, ADelayedNackHoldsThePartitionThenRedelivers) {
    Broker b;
    const std::string t = unique("delay"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    publish(b, t, nullptr, "a");
    ASSERT_EQ(poll(b, t, g, 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b, t.c_str(), g.c_str(), 0, 300), MQ_OK) << mq_last_error();
    // The waiting poll sits out the delay, then gets the message again.
    auto again = poll(b, t, g, 0, 1, 10000);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].offset, 0);
    EXPECT_EQ(again[0].delivery_count, 2u);
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, SeekToTheEndsAndIntoAnEmptyLog) {
    Broker b;
    const std::string t = unique("seek-ends"), g = unique("g");
    create(b, t, 2);
    subscribe(b, t, g);
    int32_t part = 0;
    publish(b, t, "k", "0", &part);
    publish(b, t, "k", "1");
    ASSERT_EQ(poll(b, t, g, part, 2).size(), 2u);
    ASSERT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), part, 1), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), part, MQ_OFFSET_EARLIEST), MQ_OK)
        << mq_last_error();
    auto replay = poll(b, t, g, part, 2, 5000);
    ASSERT_EQ(replay.size(), 2u);
    EXPECT_EQ(replay[0].offset, 0);
    const int32_t empty = 1 - part;
    EXPECT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), empty, 3), MQ_ERR_OUT_OF_RANGE);
    EXPECT_NE(std::strstr(mq_last_error(), "it is empty; seek to 0"), nullptr) << mq_last_error();
    EXPECT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), empty, 0), MQ_OK) << mq_last_error();
    mq_group_info gi{};
    EXPECT_EQ(mq_group_get_info(b, t.c_str(), g.c_str(), 2, &gi, sizeof gi), MQ_ERR_PARTITION);
    mq_topic_delete(b, t.c_str());
}

// A view of an empty payload points somewhere (as in-process); headers that look like a dead
// letter's origin give the view its dead_letter only when all five read back.
TEST(Kafka, EmptyPayloadsAndHeadersThatOnlyLookLikeAnOrigin) {
    Broker b;
    const std::string t = unique("lookalike"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    ASSERT_EQ(mq_topic_publish(b, t.c_str(), nullptr, 0, nullptr, 0, nullptr, 0, MQ_NO_WAIT,
                               nullptr, nullptr, nullptr),
              MQ_OK)
        << mq_last_error();
    auto origin = [](const char *partition, const char *offset, const char *count) {
        auto h = [](const char *name, const char *value) {
            return mq_header{name, std::strlen(name), value, std::strlen(value)};
        };
        return std::vector<mq_header>{h("x", "y"),
                                      h(MQ_HEADER_DEAD_LETTER_TOPIC, "from"),
                                      h(MQ_HEADER_DEAD_LETTER_GROUP, "gr"),
                                      h(MQ_HEADER_DEAD_LETTER_PARTITION, partition),
                                      h(MQ_HEADER_DEAD_LETTER_OFFSET, offset),
                                      h(MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT, count)};
    };
    const std::vector<std::vector<mq_header>> headers = {
        origin("x", "1", "1"), origin("1", "", "1"), origin("1", "1", "1z"), origin("2", "7", "3")};
    for (const auto &h : headers) publish(b, t, nullptr, "v", nullptr, h.data(), h.size());
    auto m = poll(b, t, g, 0, 8);
    ASSERT_EQ(m.size(), 5u);
    EXPECT_NE(m[0].payload, nullptr);
    EXPECT_EQ(m[0].payload_len, 0u);
    for (size_t i = 1; i < 4; i++) {
        EXPECT_EQ(m[i].header_count, 6u);
        EXPECT_EQ(m[i].dead_letter, nullptr) << "record " << i;
    }
    ASSERT_NE(m[4].dead_letter, nullptr);
    EXPECT_STREQ(m[4].dead_letter->topic, "from");
    EXPECT_STREQ(m[4].dead_letter->group, "gr");
    EXPECT_EQ(m[4].dead_letter->partition, 2);
    EXPECT_EQ(m[4].dead_letter->offset, 7);
    EXPECT_EQ(m[4].dead_letter->delivery_count, 3u);
    mq_topic_delete(b, t.c_str());
}

// mq.h: a NULL header value is an empty one on both engines. On Kafka it is written as an
// empty value, not as Kafka's null header (librdkafka hands a null header back as NULL, an
// empty one as a pointer to no bytes).
TEST(Kafka, ANullHeaderValueIsWrittenAsAnEmptyOne) {
    Broker b;
    const std::string t = unique("nullheader"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    const mq_header h[2] = {{"n", 1, nullptr, 0}, {"e", 1, "", 0}};
    publish(b, t, nullptr, "v", nullptr, h, 2);
    auto m = poll(b, t, g, 0, 1);
    ASSERT_EQ(m.size(), 1u);
    ASSERT_EQ(m[0].header_count, 2u);
    for (size_t i = 0; i < 2; i++) {
        EXPECT_EQ(m[0].headers[i].value_len, 0u) << i;
        EXPECT_NE(m[0].headers[i].value, nullptr) << "header " << i << " came back as null";
    }
    mq_topic_delete(b, t.c_str());
}

// The copying poll on Kafka: the same layout, only what fits handed out, MQ_ERR_TOO_LARGE with
// the room needed (tests/test_copy_poll.cpp has the in-process twin).
TEST(Kafka, TheCopyingPollCopiesWhatFits) {
    Broker b;
    const std::string t = unique("copy"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    const mq_header h{"h", 1, "v", 1};
    const std::string big(2000, 'z');
    publish(b, t, "k", big, nullptr, &h, 1);
    publish(b, t, nullptr, "small");
    alignas(8) unsigned char tiny[256];
    size_t n = 9, needed = 0;
    ASSERT_EQ(mq_group_poll_copy(b, t.c_str(), g.c_str(), 0, tiny, sizeof tiny, 4, 5000, nullptr,
                                 &n, &needed),
              MQ_ERR_TOO_LARGE)
        << mq_last_error();
    EXPECT_EQ(n, 0u);
    EXPECT_GT(needed, 2000u);
    std::vector<uint64_t> words((needed + 7) / 8);
    ASSERT_EQ(mq_group_poll_copy(b, t.c_str(), g.c_str(), 0, words.data(), needed, 4, 5000, nullptr,
                                 &n, &needed),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);  // the second did not fit: not handed out
    const auto *base = reinterpret_cast<const unsigned char *>(words.data());
    mq_copied_message e;
    std::memcpy(&e, base + sizeof(mq_copy_header), sizeof e);
    EXPECT_EQ(e.offset, 0);
    EXPECT_EQ(e.delivery_count, 1u);
    EXPECT_EQ(str(base + e.key_at, e.key_len), "k");
    EXPECT_EQ(str(base + e.payload_at, e.payload_len), big);
    ASSERT_EQ(e.header_count, 1u);
    mq_copied_header ch;
    std::memcpy(&ch, base + e.headers_at, sizeof ch);
    EXPECT_EQ(str(base + ch.value_at, ch.value_len), "v");
    std::vector<uint64_t> more(512);
    ASSERT_EQ(mq_group_poll_copy(b, t.c_str(), g.c_str(), 0, more.data(), 4096, 4, 5000, nullptr,
                                 &n, &needed),
              MQ_OK);
    ASSERT_EQ(n, 1u);
    std::memcpy(&e, reinterpret_cast<const unsigned char *>(more.data()) + sizeof(mq_copy_header),
                sizeof e);
    EXPECT_EQ(e.offset, 1);
    EXPECT_EQ(e.key_at, MQ_COPY_ABSENT);
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, SeekReplaysAndChecksTheRange) {
    Broker b;
    const std::string t = unique("seek"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    for (int i = 0; i < 4; i++) publish(b, t, nullptr, std::to_string(i));
    auto m = poll(b, t, g, 0, 4);
    ASSERT_EQ(m.size(), 4u);
    ASSERT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), 0, 3), MQ_OK);
    EXPECT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), 0, 9), MQ_ERR_OUT_OF_RANGE);
    EXPECT_NE(std::strstr(mq_last_error(), "0..4"), nullptr) << mq_last_error();
    ASSERT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), 0, 1), MQ_OK) << mq_last_error();
    auto replay = poll(b, t, g, 0, 10, 2000);
    ASSERT_EQ(replay.size(), 3u);
    EXPECT_EQ(replay[0].offset, 1);
    EXPECT_EQ(replay[0].delivery_count, 1u);
    ASSERT_EQ(mq_group_seek(b, t.c_str(), g.c_str(), 0, MQ_OFFSET_END), MQ_OK);
    EXPECT_TRUE(poll(b, t, g, 0, 10, 100, MQ_TIMEOUT).empty());
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, AckPollAndBatchPublish) {
    Broker b;
    const std::string t = unique("batch"), g = unique("g");
    create(b, t, 2);
    subscribe(b, t, g);
    std::vector<mq_record> recs;
    const char *keys[] = {"user-a", "user-b", "user-a", "user-b"};
    for (const char *k : keys) recs.push_back({k, std::strlen(k), "p", 1, nullptr, 0});
    mq_publish_result res[4];
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b, t.c_str(), recs.data(), sizeof(mq_record), 4, MQ_NO_WAIT,
                                     nullptr, res, sizeof(mq_publish_result), &published),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, 4u);
    EXPECT_EQ(res[0].partition, res[2].partition);
    EXPECT_EQ(res[2].offset, res[0].offset + 1);
    const int32_t p = res[0].partition;
    auto m = poll(b, t, g, p, 1);
    ASSERT_EQ(m.size(), 1u);
    mq_message next[4];
    size_t n = 0;
    ASSERT_EQ(mq_group_ack_poll(b, t.c_str(), g.c_str(), p, m[0].offset, next, sizeof(mq_message),
                                4, MQ_NO_WAIT, nullptr, &n),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(next[0].offset, m[0].offset + 1);
    EXPECT_EQ(mq_group_ack_poll(b, t.c_str(), g.c_str(), p, 0, next, sizeof(mq_message), 4,
                                MQ_NO_WAIT, nullptr, &n),
              MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(n, 0u);
    mq_topic_delete(b, t.c_str());
}

// Publisher and cursor handles (1.7) on Kafka keep the names and call the named forms: the
// same round trip, and the same refusals.
TEST(Kafka, HandlesCallTheNamedForms) {
    Broker b;
    const std::string t = unique("handles"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    mq_publisher *pub = nullptr;
    mq_cursor *cur = nullptr;
    ASSERT_EQ(mq_publisher_open(b, t.c_str(), &pub), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_cursor_open(b, t.c_str(), g.c_str(), 0, &cur), MQ_OK) << mq_last_error();
    mq_cursor *bad = nullptr;
    EXPECT_EQ(mq_cursor_open(b, t.c_str(), "bad name", 0, &bad), MQ_ERR_INVALID);
    EXPECT_EQ(bad, nullptr);
    int64_t offset = -1;
    ASSERT_EQ(mq_publisher_publish(pub, "k", 1, "a", 1, nullptr, 0, MQ_NO_WAIT, nullptr, nullptr,
                                   &offset),
              MQ_OK)
        << mq_last_error();
    const mq_record r{"k", 1, "b", 1, nullptr, 0};
    size_t published = 0;
    ASSERT_EQ(mq_publisher_publish_batch(pub, &r, sizeof r, 1, MQ_NO_WAIT, nullptr, nullptr,
                                         sizeof(mq_publish_result), &published),
              MQ_OK)
        << mq_last_error();
    mq_message m[2];
    size_t n = 0;
    ASSERT_EQ(mq_cursor_poll(cur, m, sizeof(mq_message), 1, 10000, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(m[0].offset, offset);
    ASSERT_EQ(mq_cursor_ack_poll(cur, m[0].offset, m, sizeof(mq_message), 2, 10000, nullptr, &n),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(str(m[0].payload, m[0].payload_len), "b");
    EXPECT_EQ(mq_cursor_ack(cur, m[0].offset), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_cursor_ack(cur, m[0].offset + 5), MQ_ERR_NOT_IN_FLIGHT);
    mq_topic_delete(b, t.c_str());
    mq_cursor_close(cur);
    mq_publisher_close(pub);
}

// 64 records of 64 KiB in one batch to partition 0: more than one fetch brings (a fetch takes
// at most 1 MiB of a partition), so a poll that handed out only what its first fetch brought
// would return about 16 of them.
constexpr size_t kBigRecords = 64;
void publish_big_batch(mq_broker *b, const std::string &topic) {
    const std::string value(64 * 1024, 'v');
    std::vector<mq_record> recs(kBigRecords,
                                mq_record{"k", 1, value.data(), value.size(), nullptr, 0});
    std::vector<mq_publish_result> res(kBigRecords);
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b, topic.c_str(), recs.data(), sizeof(mq_record), recs.size(),
                                     MQ_NO_WAIT, nullptr, res.data(), sizeof(mq_publish_result),
                                     &published),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(published, kBigRecords);
}

// What was published before a poll began is handed out by it up to its max, even with wait 0:
// not only the part of a batch that the consumer's first fetch happened to bring.
TEST(Kafka, APollHandsOutTheWholeEarlierBatchUpToMax) {
    Broker b;
    const std::string t = unique("whole"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    publish_big_batch(b, t);
    auto m = poll(b, t, g, 0, kBigRecords * 2);
    ASSERT_EQ(m.size(), kBigRecords);
    for (size_t i = 0; i < m.size(); i++) EXPECT_EQ(m[i].offset, static_cast<int64_t>(i));
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, BlockingPollWakesOnPublishCancelAndClose) {
    Broker b;
    const std::string t = unique("wake"), g = unique("g");
    create(b, t, 1);
    subscribe(b, t, g);
    std::thread pub([&] {
        // No sleep needed: the poll below waits forever, so whenever this lands it is seen.
        publish(b, t, nullptr, "late");
    });
    auto m = poll(b, t, g, 0, 1, MQ_WAIT_FOREVER);
    pub.join();
    ASSERT_EQ(m.size(), 1u);

    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    std::thread canceller([&] { mq_cancel_trigger(c); });
    mq_message out[1];
    size_t n = 0;
    EXPECT_EQ(
        mq_group_poll(b, t.c_str(), g.c_str(), 0, out, sizeof out[0], 1, MQ_WAIT_FOREVER, c, &n),
        MQ_CANCELLED);
    canceller.join();
    mq_cancel_free(c);
    std::thread closer([&] { mq_broker_close(b); });
    EXPECT_EQ(mq_group_poll(b, t.c_str(), g.c_str(), 0, out, sizeof out[0], 1, MQ_WAIT_FOREVER,
                            nullptr, &n),
              MQ_CLOSED);
    closer.join();
    Broker other;
    mq_topic_delete(other, t.c_str());
}

TEST(Kafka, WhatTheBackendDoesNotHaveYetIsRefusedClearly) {
    Broker b;
    const std::string t = unique("unsupported");
    create(b, t, 1);
    mq_member_options mo;
    mq_member_options_init(&mo, sizeof mo);
    mo.assignor = [](void *, int32_t, const char *const *, int32_t, int32_t *) {};
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b, t.c_str(), unique("g").c_str(), &mo, &m), MQ_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(mq_last_error(), "Kafka"), nullptr) << mq_last_error();
    // Delayed delivery (ABI 1.5): refused, and nothing of the batch is sent.
    mq_record recs[2]{};
    recs[0].payload = "now";
    recs[0].payload_len = 3;
    recs[1] = recs[0];
    recs[1].delay_ms = 1000;
    size_t published = 9;
    EXPECT_EQ(mq_topic_publish_batch(b, t.c_str(), recs, sizeof recs[0], 2, 5000, nullptr, nullptr,
                                     sizeof(mq_publish_result), &published),
              MQ_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(mq_last_error(), "record 1: delay_ms is 1000"), nullptr)
        << mq_last_error();
    EXPECT_EQ(published, 0u);
    mq_topic_delete(b, t.c_str());
}

// ABI 1.6: share groups need librdkafka's share consumer (KIP-932), which Debian's has not: the
// engine refuses them, naming what is missing, and subscribes nothing (docs/KAFKA.md).
TEST(Kafka, ShareGroupsAreRefused) {
    Broker b;
    const std::string t = unique("share"), g = unique("g");
    create(b, t, 1);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.share = MQ_SHARE_ALL;
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(mq_last_error(), "share-consumer API"), nullptr) << mq_last_error();
    subscribe(b, t, g);  // an ordered group of the name: the refused one left nothing behind
    EXPECT_EQ(mq_share_settle(b, t.c_str(), g.c_str(), 0, 0, 1, MQ_SETTLE_ACCEPT, 0),
              MQ_ERR_UNSUPPORTED);
    mq_topic_delete(b, t.c_str());
}

void subscribe_dead_letters(mq_broker *b, const std::string &topic, const std::string &group,
                            uint32_t max_deliveries, const std::string &dead_letter_topic) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = max_deliveries;
    o.dead_letter_topic = dead_letter_topic.c_str();
    ASSERT_EQ(mq_group_subscribe(b, topic.c_str(), group.c_str(), &o), MQ_OK) << mq_last_error();
}

std::string header(const mq_message &m, const char *name) {
    for (size_t i = 0; i < m.header_count; i++) {
        if (str(m.headers[i].name, m.headers[i].name_len) == name)
            return str(m.headers[i].value, m.headers[i].value_len);
    }
    return "(none)";
}

mq_group_info group_info(mq_broker *b, const std::string &topic, const std::string &group,
                         int32_t partition) {
    mq_group_info gi{};
    EXPECT_EQ(mq_group_get_info(b, topic.c_str(), group.c_str(), partition, &gi, sizeof gi), MQ_OK)
        << mq_last_error();
    return gi;
}

TEST(Kafka, DeadLetterOptionsAreCheckedAsInProcess) {
    Broker b;
    // Group names are unique too: the cluster refuses a plain commit to a group that has members
    // (the conformance scenarios, which run meanwhile, join a group "g").
    const std::string t = unique("dlopts"), dlq = unique("dlq"), g = unique("g");
    create(b, t, 1);
    create(b, dlq, 1);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 3;
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_INVALID);
    o.max_deliveries = 0;
    o.dead_letter_topic = dlq.c_str();
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_INVALID);
    o.max_deliveries = 3;
    o.dead_letter_topic = t.c_str();
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_INVALID);
    const std::string missing = unique("nosuch");
    o.dead_letter_topic = missing.c_str();
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_NO_TOPIC);
    o.dead_letter_topic = "bad name";
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_ERR_INVALID);
    o.dead_letter_topic = dlq.c_str();
    EXPECT_EQ(mq_group_subscribe(b, t.c_str(), g.c_str(), &o), MQ_OK) << mq_last_error();
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

TEST(Kafka, NackedToTheLimitGoesToTheDeadLetterTopicWithItsOrigin) {
    Broker b;
    const std::string t = unique("jobs"), dlq = unique("dlq"), g = unique("g"),
                      watcher = unique("w"), other = unique("h");
    create(b, t, 1);
    create(b, dlq, 1);
    subscribe(b, dlq, watcher);
    subscribe_dead_letters(b, t, g, 3, dlq);
    subscribe(b, t, other);
    const mq_header trace{"trace", 5, "x-1", 3};
    publish(b, t, "k", "poison", nullptr, &trace, 1);
    publish(b, t, "k", "fine");
    for (uint32_t n = 1; n <= 3; n++) {
        auto got = poll(b, t, g, 0, 1);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].offset, 0);
        EXPECT_EQ(got[0].delivery_count, n);
        EXPECT_EQ(got[0].dead_letter, nullptr);
        ASSERT_EQ(mq_group_nack(b, t.c_str(), g.c_str(), 0, 0), MQ_OK);
    }
    // The fourth delivery would pass the limit: the same poll dead-letters it, then hands out
    // what comes after it.
    auto next = poll(b, t, g, 0, 2);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0].offset, 1);
    EXPECT_EQ(str(next[0].payload, next[0].payload_len), "fine");
    EXPECT_EQ(next[0].delivery_count, 1u);
    mq_group_info gi = group_info(b, t, g, 0);
    EXPECT_EQ(gi.committed, 1);
    EXPECT_EQ(gi.next, 2);
    EXPECT_EQ(gi.dead_lettered, 1);
    EXPECT_EQ(gi.lost, 0);
    // The move past it is a commit on the cluster: another client resumes after it.
    {
        Broker b2;
        subscribe(b2, t, g);
        auto resumed = poll(b2, t, g, 0, 2);
        ASSERT_EQ(resumed.size(), 1u);
        EXPECT_EQ(resumed[0].offset, 1);
    }
    // The copy: key, payload, its own headers, then the origin's, read back as dead_letter.
    auto dead = poll(b, dlq, watcher, 0, 2, 10000);
    ASSERT_EQ(dead.size(), 1u);
    const mq_message &d = dead[0];
    EXPECT_EQ(str(d.key, d.key_len), "k");
    EXPECT_EQ(str(d.payload, d.payload_len), "poison");
    ASSERT_EQ(d.header_count, 6u);
    EXPECT_EQ(str(d.headers[0].name, d.headers[0].name_len), "trace");
    EXPECT_EQ(str(d.headers[1].name, d.headers[1].name_len), MQ_HEADER_DEAD_LETTER_TOPIC);
    EXPECT_EQ(header(d, MQ_HEADER_DEAD_LETTER_TOPIC), t);
    EXPECT_EQ(header(d, MQ_HEADER_DEAD_LETTER_GROUP), g);
    EXPECT_EQ(header(d, MQ_HEADER_DEAD_LETTER_PARTITION), "0");
    EXPECT_EQ(header(d, MQ_HEADER_DEAD_LETTER_OFFSET), "0");
    EXPECT_EQ(header(d, MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT), "3");
    ASSERT_NE(d.dead_letter, nullptr);
    EXPECT_EQ(std::string(d.dead_letter->topic), t);
    EXPECT_EQ(std::string(d.dead_letter->group), g);
    EXPECT_EQ(d.dead_letter->partition, 0);
    EXPECT_EQ(d.dead_letter->offset, 0);
    EXPECT_EQ(d.dead_letter->delivery_count, 3u);
    // A group without the rule is not affected.
    auto plain = poll(b, t, other, 0, 2);
    ASSERT_EQ(plain.size(), 2u);
    EXPECT_EQ(plain[0].delivery_count, 1u);
    EXPECT_EQ(group_info(b, t, other, 0).dead_lettered, 0);
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

TEST(Kafka, ALeaseExpiryCountsAsADelivery) {
    Broker b;
    const std::string t = unique("slow"), dlq = unique("dlq"), g = unique("g"),
                      watcher = unique("w");
    create(b, t, 1, 200);  // a 200 ms lease
    create(b, dlq, 1);
    subscribe(b, dlq, watcher);
    subscribe_dead_letters(b, t, g, 2, dlq);
    publish(b, t, nullptr, "slow");
    auto first = poll(b, t, g, 0, 2);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].delivery_count, 1u);
    // No nack: the waiting poll gets it back when the lease runs out.
    auto second = poll(b, t, g, 0, 2, 10000);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second[0].offset, 0);
    EXPECT_EQ(second[0].delivery_count, 2u);
    publish(b, t, nullptr, "next");
    auto third = poll(b, t, g, 0, 2, 10000);  // after "slow", which stays in flight
    ASSERT_EQ(third.size(), 1u);
    EXPECT_EQ(third[0].offset, 1);
    EXPECT_EQ(third[0].delivery_count, 1u);
    // The lease runs out again: "slow" has had its two and goes; "next" comes a second time.
    auto fourth = poll(b, t, g, 0, 2, 10000);
    ASSERT_EQ(fourth.size(), 1u);
    EXPECT_EQ(fourth[0].offset, 1);
    EXPECT_EQ(fourth[0].delivery_count, 2u);
    EXPECT_EQ(group_info(b, t, g, 0).dead_lettered, 1);
    ASSERT_EQ(mq_group_ack(b, t.c_str(), g.c_str(), 0, 1), MQ_OK) << mq_last_error();
    auto dead = poll(b, dlq, watcher, 0, 2, 10000);
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_EQ(str(dead[0].payload, dead[0].payload_len), "slow");
    EXPECT_EQ(dead[0].key, nullptr);  // no key stays no key
    ASSERT_NE(dead[0].dead_letter, nullptr);
    EXPECT_EQ(dead[0].dead_letter->delivery_count, 2u);
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

TEST(Kafka, AMissingDeadLetterTopicKeepsTheHead) {
    Broker b;
    const std::string t = unique("jobs"), dlq = unique("dlq"), g = unique("g");
    create(b, t, 1);
    create(b, dlq, 1);
    subscribe_dead_letters(b, t, g, 1, dlq);
    ASSERT_EQ(mq_topic_delete(b, dlq.c_str()), MQ_OK) << mq_last_error();
    publish(b, t, nullptr, "poison");
    ASSERT_EQ(poll(b, t, g, 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b, t.c_str(), g.c_str(), 0, 0), MQ_OK);
    poll(b, t, g, 0, 1, MQ_NO_WAIT, MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::strstr(mq_last_error(), dlq.c_str()), nullptr) << mq_last_error();
    mq_group_info gi = group_info(b, t, g, 0);
    EXPECT_EQ(gi.committed, 0);
    EXPECT_EQ(gi.next, 0);
    EXPECT_EQ(gi.dead_lettered, 0);
    // Once the topic is there again, the next poll moves the head on.
    create(b, dlq, 1);
    poll(b, t, g, 0, 1, MQ_NO_WAIT, MQ_TIMEOUT);
    gi = group_info(b, t, g, 0);
    EXPECT_EQ(gi.committed, 1);
    EXPECT_EQ(gi.dead_lettered, 1);
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

struct Member {
    mq_member *m = nullptr;
    Member(mq_broker *b, const std::string &topic, const std::string &group, const char *id) {
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.member_id = id;
        o.session_timeout_ms = 2000;
        EXPECT_EQ(mq_member_join(b, topic.c_str(), group.c_str(), &o, &m), MQ_OK)
            << mq_last_error();
    }
    ~Member() { close(); }
    void close() {
        if (m) EXPECT_EQ(mq_member_close(m), MQ_OK);
        m = nullptr;
    }
    std::vector<int32_t> assignment(int64_t *gen = nullptr) {
        int32_t parts[16];
        size_t n = 0;
        int64_t g = 0;
        EXPECT_EQ(mq_member_get_assignment(m, &g, parts, 16, &n), MQ_OK) << mq_last_error();
        if (gen) *gen = g;
        return std::vector<int32_t>(parts, parts + std::min<size_t>(n, 16));
    }
    // Polls until the member's generation changes (MQ_REBALANCED), bounded.
    bool await_rebalance() {
        for (int i = 0; i < 300; i++) {
            mq_message msg[1];
            size_t n = 0;
            if (mq_member_poll(m, msg, sizeof msg[0], 1, 100, nullptr, &n) == MQ_REBALANCED)
                return true;
        }
        return false;
    }
};

// A session timeout librdkafka accepts (up to 1 h) but the cluster refuses (above the broker's
// group.max.session.timeout.ms, 30 min by default): the join fails as soon as the coordinator
// answers, not after waiting out a deadline as long as the session.
TEST(Kafka, AJoinTheClusterRefusesFailsAtOnce) {
    Broker b;
    const std::string t = unique("refused"), g = unique("g");
    create(b, t, 1);
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.session_timeout_ms = 45 * 60 * 1000;
    mq_member *m = nullptr;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(mq_member_join(b, t.c_str(), g.c_str(), &o, &m), MQ_ERR_BACKEND);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::strstr(mq_last_error(), "refused the join"), nullptr) << mq_last_error();
    EXPECT_NE(std::strstr(mq_last_error(), "ession timeout"), nullptr) << mq_last_error();
    EXPECT_LT(took, std::chrono::seconds(30));
    // The same group joins with a session the cluster takes.
    o.session_timeout_ms = 2000;
    ASSERT_EQ(mq_member_join(b, t.c_str(), g.c_str(), &o, &m), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_member_close(m), MQ_OK);
    mq_topic_delete(b, t.c_str());
}

TEST(Kafka, MembersSplitTheGroupAndFenceStaleOwners) {
    Broker b1, b2;  // two clients: what two processes would be
    const std::string t = unique("members"), g = unique("g");
    create(b1, t, 4);
    Member m1(b1, t, g, "one");
    EXPECT_STREQ(mq_member_id(m1.m), "one");
    int64_t gen1 = 0;
    EXPECT_EQ(m1.assignment(&gen1), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(gen1, 1);
    Member m2(b2, t, g, "two");
    ASSERT_TRUE(m1.await_rebalance());
    auto a1 = m1.assignment(), a2 = m2.assignment();
    EXPECT_EQ(a1.size() + a2.size(), 4u);
    std::vector<int32_t> all(a1);
    all.insert(all.end(), a2.begin(), a2.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3}));
    ASSERT_FALSE(a1.empty());
    ASSERT_FALSE(a2.empty());
    // A keyed message goes to its owner; the other is fenced off that partition.
    const char *key = "user-a";
    int32_t p = -1;
    publish(b1, t, key, "hello", &p);
    Member &owner = std::find(a1.begin(), a1.end(), p) != a1.end() ? m1 : m2;
    Member &other = &owner == &m1 ? m2 : m1;
    mq_message msg[4];
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(owner.m, msg, sizeof msg[0], 4, 10000, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(msg[0].partition, p);
    EXPECT_EQ(str(msg[0].payload, msg[0].payload_len), "hello");
    EXPECT_EQ(mq_member_ack(other.m, p, msg[0].offset), MQ_ERR_FENCED);
    ASSERT_EQ(mq_member_ack(owner.m, p, msg[0].offset), MQ_OK) << mq_last_error();
    // The second member leaves: the first gets every partition back, at the committed offsets.
    publish(b1, t, key, "after", &p);
    m2.close();
    ASSERT_TRUE(m1.await_rebalance());
    EXPECT_EQ(m1.assignment(), (std::vector<int32_t>{0, 1, 2, 3}));
    ASSERT_EQ(mq_member_poll(m1.m, msg, sizeof msg[0], 4, 10000, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(str(msg[0].payload, msg[0].payload_len), "after");
    EXPECT_EQ(msg[0].delivery_count, 1u);
    mq_topic_delete(b1, t.c_str());
}

TEST(Kafka, AMemberPollHandsOutTheWholeEarlierBatchUpToMax) {
    Broker b;
    const std::string t = unique("mwhole"), g = unique("g");
    create(b, t, 1);
    Member m(b, t, g, "whole");
    ASSERT_EQ(m.assignment(), (std::vector<int32_t>{0}));
    publish_big_batch(b, t);
    std::vector<mq_message> msg(kBigRecords * 2);
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m.m, msg.data(), sizeof msg[0], msg.size(), MQ_NO_WAIT, nullptr, &n),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, kBigRecords);
    for (size_t i = 0; i < n; i++) EXPECT_EQ(msg[i].offset, static_cast<int64_t>(i));
    m.close();
    mq_topic_delete(b, t.c_str());
}

// A push loop whose dead letter cannot go (its topic is missing) keeps the head and tries again,
// as a group poll does; once the topic is there the head moves on and what follows is pushed.
TEST(Kafka, APushSubscriptionWaitsOutAMissingDeadLetterTopic) {
    Broker b;
    const std::string t = unique("jobs"), dlq = unique("dlq"), g = unique("g"),
                      watcher = unique("w");
    create(b, t, 1);
    create(b, dlq, 1);
    subscribe_dead_letters(b, t, g, 1, dlq);
    ASSERT_EQ(mq_topic_delete(b, dlq.c_str()), MQ_OK) << mq_last_error();
    struct Seen {
        std::mutex mu;
        std::condition_variable cv;
        std::vector<std::string> payloads;
        static int handle(void *u, const mq_message *m) {
            auto *self = static_cast<Seen *>(u);
            const std::string p = str(m->payload, m->payload_len);
            {
                std::lock_guard l(self->mu);
                self->payloads.push_back(p);
            }
            self->cv.notify_all();
            return p == "poison" ? 1 : 0;
        }
        bool wait_for(const std::string &p) {
            std::unique_lock l(mu);
            return cv.wait_for(l, std::chrono::seconds(30), [&] {
                return std::find(payloads.begin(), payloads.end(), p) != payloads.end();
            });
        }
    } seen;
    const int32_t part0 = 0;
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    // The default prefetch: "after" is in poison's batch, given back unseen by the failure, so
    // it does not count a delivery and is not dead-lettered with it (max_deliveries 1).
    o.partitions = &part0;
    o.partition_count = 1;
    mq_subscription *s = nullptr;
    ASSERT_EQ(mq_subscription_open(b, t.c_str(), g.c_str(), &o, &Seen::handle, &seen, nullptr, &s),
              MQ_OK)
        << mq_last_error();
    publish(b, t, nullptr, "poison");
    publish(b, t, nullptr, "after");
    ASSERT_TRUE(seen.wait_for("poison"));
    // The failed handler's nack makes the head due; its dead letter finds no topic.
    create(b, dlq, 1);
    subscribe(b, dlq, watcher, MQ_START_EARLIEST);
    auto dead = poll(b, dlq, watcher, 0, 1, 30000);
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_EQ(str(dead[0].payload, dead[0].payload_len), "poison");
    EXPECT_TRUE(seen.wait_for("after"))
        << "the push loop stopped at the missing topic; seen: " << [&] {
               std::lock_guard l(seen.mu);
               std::string all;
               for (const auto &p : seen.payloads) all += p + " ";
               return all;
           }();
    EXPECT_EQ(mq_subscription_close(s), MQ_OK);
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

// As in-process (conformance scenario topic_delete): once this handle deletes the topic, its
// members' calls are MQ_ERR_NO_TOPIC, a member waiting in a poll wakes with it, and a push
// subscription on the topic stops (its close still returns at once).
TEST(Kafka, AMembersCallsAfterItsTopicIsDeletedAreNoTopic) {
    Broker b;
    const std::string t = unique("deleted"), g = unique("g"), pg = unique("pg");
    create(b, t, 1);
    Member m(b, t, g, "one");
    ASSERT_EQ(m.assignment(), (std::vector<int32_t>{0}));
    mq_subscription_options so;
    mq_subscription_options_init(&so, sizeof so);
    auto handler = [](void *, const mq_message *) { return 0; };
    mq_subscription *s = nullptr;
    ASSERT_EQ(mq_subscription_open(b, t.c_str(), pg.c_str(), &so, handler, nullptr, nullptr, &s),
              MQ_OK)
        << mq_last_error();
    mq_status waited = MQ_OK;
    std::thread waiter([&] {
        mq_message msg[1];
        size_t n = 0;
        waited = mq_member_poll(m.m, msg, sizeof msg[0], 1, MQ_WAIT_FOREVER, nullptr, &n);
    });
    ASSERT_EQ(mq_topic_delete(b, t.c_str()), MQ_OK) << mq_last_error();
    waiter.join();
    EXPECT_EQ(waited, MQ_ERR_NO_TOPIC);
    mq_message msg[1];
    size_t n = 0;
    EXPECT_EQ(mq_member_poll(m.m, msg, sizeof msg[0], 1, MQ_NO_WAIT, nullptr, &n), MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::strstr(mq_last_error(), "was deleted"), nullptr) << mq_last_error();
    int32_t parts[4];
    EXPECT_EQ(mq_member_get_assignment(m.m, nullptr, parts, 4, &n), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_ack(m.m, 0, 0), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_nack(m.m, 0, 0), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_subscription_close(s), MQ_OK);
}

TEST(Kafka, UnsubscribingRemovesThisHandlesMembersAndTheyLeaveTheKafkaGroup) {
    Broker b1, b2;  // two clients: what two processes would be
    const std::string t = unique("unsub"), g = unique("g");
    create(b1, t, 2);
    Member m1(b1, t, g, "one");
    Member m2(b2, t, g, "two");
    ASSERT_TRUE(m1.await_rebalance());
    ASSERT_EQ(m1.assignment().size() + m2.assignment().size(), 2u);
    mq_status waited = MQ_OK;
    std::thread waiter([&] {
        mq_message msg[1];
        size_t n = 0;
        waited = mq_member_poll(m1.m, msg, sizeof msg[0], 1, MQ_WAIT_FOREVER, nullptr, &n);
    });
    ASSERT_EQ(mq_group_unsubscribe(b1, t.c_str(), g.c_str()), MQ_OK) << mq_last_error();
    waiter.join();
    EXPECT_EQ(waited, MQ_ERR_NO_GROUP);
    mq_message msg[1];
    size_t n = 0;
    EXPECT_EQ(mq_member_poll(m1.m, msg, sizeof msg[0], 1, MQ_NO_WAIT, nullptr, &n),
              MQ_ERR_NO_GROUP);
    EXPECT_NE(std::strstr(mq_last_error(), "no longer subscribed"), nullptr) << mq_last_error();
    int32_t parts[4];
    EXPECT_EQ(mq_member_get_assignment(m1.m, nullptr, parts, 4, &n), MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_member_ack(m1.m, 0, 0), MQ_ERR_NO_GROUP);
    char list[64];
    ASSERT_EQ(mq_group_list(b1, t.c_str(), list, sizeof list, nullptr), MQ_OK);
    EXPECT_STREQ(list, "");
    EXPECT_EQ(mq_group_unsubscribe(b1, t.c_str(), g.c_str()), MQ_ERR_NO_GROUP);
    // The removed member left the Kafka group: the other client's member takes both partitions.
    ASSERT_TRUE(m2.await_rebalance());
    EXPECT_EQ(m2.assignment(), (std::vector<int32_t>{0, 1}));
    m1.close();
    mq_topic_delete(b1, t.c_str());
}

TEST(Kafka, MembersAndPushSubscriptionsDeadLetterToo) {
    Broker b;
    const std::string t = unique("jobs"), dlq = unique("dlq"), g = unique("g"),
                      watcher = unique("w");
    create(b, t, 1);
    create(b, dlq, 1);
    subscribe(b, dlq, watcher);
    subscribe_dead_letters(b, t, g, 2, dlq);  // a member of the group follows its rule
    {
        Member m(b, t, g, "one");
        ASSERT_EQ(m.assignment(), (std::vector<int32_t>{0}));
        publish(b, t, nullptr, "poison");
        publish(b, t, nullptr, "after");
        mq_message msg[2];
        size_t n = 0;
        for (uint32_t want = 1; want <= 2; want++) {
            ASSERT_EQ(mq_member_poll(m.m, msg, sizeof msg[0], 1, 10000, nullptr, &n), MQ_OK)
                << mq_last_error();
            ASSERT_EQ(n, 1u);
            EXPECT_EQ(str(msg[0].payload, msg[0].payload_len), "poison");
            EXPECT_EQ(msg[0].delivery_count, want);
            ASSERT_EQ(mq_member_nack(m.m, 0, 0), MQ_OK) << mq_last_error();
        }
        ASSERT_EQ(mq_member_poll(m.m, msg, sizeof msg[0], 2, 10000, nullptr, &n), MQ_OK)
            << mq_last_error();
        ASSERT_EQ(n, 1u);
        EXPECT_EQ(str(msg[0].payload, msg[0].payload_len), "after");
        EXPECT_EQ(group_info(b, t, g, 0).dead_lettered, 1);
        ASSERT_EQ(mq_member_ack(m.m, 0, msg[0].offset), MQ_OK) << mq_last_error();
    }
    auto dead = poll(b, dlq, watcher, 0, 2, 10000);
    ASSERT_EQ(dead.size(), 1u);
    ASSERT_NE(dead[0].dead_letter, nullptr);
    EXPECT_EQ(std::string(dead[0].dead_letter->group), g);
    EXPECT_EQ(dead[0].dead_letter->offset, 0);
    EXPECT_EQ(dead[0].dead_letter->delivery_count, 2u);
    // A push subscription is a member: a handler that keeps failing hands the message over.
    struct Failing {
        std::mutex mu;
        std::vector<std::string> seen;
        static int handle(void *u, const mq_message *m) {
            auto *self = static_cast<Failing *>(u);
            std::lock_guard l(self->mu);
            const std::string p = str(m->payload, m->payload_len);
            self->seen.push_back(p + "#" + std::to_string(m->delivery_count));
            return p == "bad" ? 1 : 0;
        }
    } rec;
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    mq_subscription *s = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, t.c_str(), g.c_str(), &o, &Failing::handle, &rec, nullptr, &s),
        MQ_OK)
        << mq_last_error();
    publish(b, t, nullptr, "bad");
    publish(b, t, nullptr, "good");
    auto pushed_dead = poll(b, dlq, watcher, 0, 1, 30000);
    ASSERT_EQ(pushed_dead.size(), 1u);
    EXPECT_EQ(str(pushed_dead[0].payload, pushed_dead[0].payload_len), "bad");
    ASSERT_NE(pushed_dead[0].dead_letter, nullptr);
    EXPECT_EQ(pushed_dead[0].dead_letter->offset, 2);
    EXPECT_EQ(pushed_dead[0].dead_letter->delivery_count, 2u);
    EXPECT_EQ(mq_subscription_close(s), MQ_OK);
    std::lock_guard l(rec.mu);
    ASSERT_GE(rec.seen.size(), 2u);
    EXPECT_EQ(rec.seen[0], "bad#1");
    EXPECT_EQ(rec.seen[1], "bad#2");
    for (size_t i = 2; i < rec.seen.size(); i++) EXPECT_EQ(rec.seen[i].substr(0, 5), "good#");
    mq_topic_delete(b, t.c_str());
    mq_topic_delete(b, dlq.c_str());
}

// A push handler's record of what it was handed, and a switch to fail one payload once.
struct Pushed {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> seen;
    std::string fail_once;
    int frees = 0;
    static int handle(void *u, const mq_message *m) {
        auto *self = static_cast<Pushed *>(u);
        std::lock_guard l(self->mu);
        std::string p = str(m->payload, m->payload_len);
        self->seen.push_back(p + "#" + std::to_string(m->delivery_count));
        self->cv.notify_all();
        if (p == self->fail_once) {
            self->fail_once.clear();
            return 1;
        }
        return 0;
    }
    static void free_user(void *u) { static_cast<Pushed *>(u)->frees++; }
    bool await(size_t n) {
        std::unique_lock l(mu);
        return cv.wait_for(l, std::chrono::seconds(30), [&] { return seen.size() >= n; });
    }
};

TEST(Kafka, PushSubscriptionsHandleAckAndRedeliverFailures) {
    Broker b;
    const std::string t = unique("push"), g = unique("g");
    create(b, t, 2);
    for (const bool member : {true, false}) {
        Pushed rec;
        rec.fail_once = "b";
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        const int32_t parts[] = {0, 1};
        if (!member) {
            o.partitions = parts;
            o.partition_count = 2;
        }
        const std::string group = g + (member ? "-m" : "-p");
        mq_subscription *s = nullptr;
        ASSERT_EQ(mq_subscription_open(b, t.c_str(), group.c_str(), &o, &Pushed::handle, &rec,
                                       &Pushed::free_user, &s),
                  MQ_OK)
            << mq_last_error();
        for (const char *v : {"a", "b", "c"}) publish(b, t, "same-key", v);
        ASSERT_TRUE(rec.await(4)) << "handled " << rec.seen.size();
        {
            std::lock_guard l(rec.mu);
            // a, b (fails: nacked), then b again and c, in partition order. (c's count says
            // whether it came in b's first batch.)
            ASSERT_EQ(rec.seen.size(), 4u);
            EXPECT_EQ(rec.seen[0], "a#1");
            EXPECT_EQ(rec.seen[1], "b#1");
            EXPECT_EQ(rec.seen[2], "b#2");
            EXPECT_EQ(rec.seen[3].substr(0, 2), "c#");
        }
        EXPECT_EQ(mq_subscription_close(s), MQ_OK);
        EXPECT_EQ(rec.frees, 1);
    }
    // Everything handled was acked: the partition-list group has committed to the end.
    int32_t p = -1;
    ASSERT_EQ(mq_key_partition("same-key", 8, 2, &p), MQ_OK);
    mq_group_info gi{};
    ASSERT_EQ(mq_group_get_info(b, t.c_str(), (g + "-p").c_str(), p, &gi, sizeof gi), MQ_OK);
    mq_partition_info pi{};
    ASSERT_EQ(mq_partition_get_info(b, t.c_str(), p, &pi, sizeof pi), MQ_OK);
    EXPECT_EQ(pi.end, 6);  // a, b, c for each mode
    EXPECT_EQ(gi.committed, pi.end);
    mq_topic_delete(b, t.c_str());
}

}  // namespace
