// Names follow Kafka's Topic.validate exactly (mq.h, "Names"): 1 to 249 of [a-zA-Z0-9._-], not
// "." and not "..", for topics, groups and members alike; and, as Kafka refuses it, a topic whose
// name equals an existing one's with '.' and '_' taken as one character cannot be created.
#include <gtest/gtest.h>

#include <string>

#include "mq.h"
#include "mq_test_util.h"

namespace {

std::string topic_list(mq_broker *b) {
    char buf[4096];
    EXPECT_EQ(mq_topic_list(b, buf, sizeof buf, nullptr), MQ_OK);
    return buf;
}

void expect_reserved(mq_status st, const char *name) {
    EXPECT_EQ(st, MQ_ERR_INVALID) << name << ": " << mq_status_name(st);
    const std::string msg = mq_last_error();
    EXPECT_NE(msg.find(std::string("\"") + name + "\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
}

TEST(Names, DotAndDotDotAreRefusedEverywhere) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    for (const char *bad : {".", ".."}) {
        SCOPED_TRACE(bad);
        expect_reserved(mq_topic_create(b.get(), bad, nullptr), bad);
        EXPECT_NE(std::string(mq_last_error()).find("topic name"), std::string::npos);
        // A lookup of an illegal name is MQ_ERR_INVALID, not MQ_ERR_NO_TOPIC.
        expect_reserved(mq_topic_publish(b.get(), bad, nullptr, 0, "x", 1, nullptr, 0, 0, nullptr,
                                         nullptr, nullptr),
                        bad);
        expect_reserved(mq_group_subscribe(b.get(), "t", bad, nullptr), bad);
        EXPECT_NE(std::string(mq_last_error()).find("group name"), std::string::npos);
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.member_id = bad;
        mq_member *m = nullptr;
        expect_reserved(mq_member_join(b.get(), "t", "g", &o, &m), bad);
        EXPECT_NE(std::string(mq_last_error()).find("member name"), std::string::npos);
        EXPECT_EQ(m, nullptr);
    }
    EXPECT_EQ(topic_list(b.get()), "t\n");
}

TEST(Names, OtherDotNamesAndTheEdgesAreLegal) {
    auto b = mqtest::broker();
    for (const char *ok : {"...", ".a", "a.", "_", "-", "..a", "a.."}) {
        EXPECT_EQ(mq_topic_create(b.get(), ok, nullptr), MQ_OK) << ok << ": " << mq_last_error();
    }
    const std::string longest(249, 'x'), too_long(250, 'x');
    EXPECT_EQ(mq_topic_create(b.get(), longest.c_str(), nullptr), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_topic_create(b.get(), too_long.c_str(), nullptr), MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("longer than 249"), std::string::npos);
    EXPECT_EQ(mq_topic_create(b.get(), "", nullptr), MQ_ERR_INVALID);
    EXPECT_EQ(mq_topic_create(b.get(), "a b", nullptr), MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("0x20 at position 1"), std::string::npos)
        << mq_last_error();
    EXPECT_EQ(mq_group_subscribe(b.get(), "...", "..g", nullptr), MQ_OK) << mq_last_error();
}

TEST(Names, TopicsCollidingOnDotAndUnderscoreAreRefused) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "a.b", nullptr), MQ_OK);
    EXPECT_EQ(mq_topic_create(b.get(), "a_b", nullptr), MQ_ERR_INVALID);
    std::string msg = mq_last_error();
    EXPECT_NE(msg.find("\"a_b\" collides with existing topic \"a.b\""), std::string::npos) << msg;
    // The same name again is MQ_ERR_EXISTS (Kafka checks that first), not a collision.
    EXPECT_EQ(mq_topic_create(b.get(), "a.b", nullptr), MQ_ERR_EXISTS);

    ASSERT_EQ(mq_topic_create(b.get(), "x_y_z", nullptr), MQ_OK);
    for (const char *clash : {"x.y.z", "x.y_z", "x_y.z"}) {
        EXPECT_EQ(mq_topic_create(b.get(), clash, nullptr), MQ_ERR_INVALID) << clash;
        EXPECT_NE(std::string(mq_last_error()).find("\"x_y_z\""), std::string::npos);
    }
    // Only '.' against '_' collides: other differences, other lengths, '-' are distinct names.
    for (const char *ok : {"a-b", "ab", "a.bc", "a__b", "x_y_zz", "A.b"}) {
        EXPECT_EQ(mq_topic_create(b.get(), ok, nullptr), MQ_OK) << ok << ": " << mq_last_error();
    }
    EXPECT_EQ(topic_list(b.get()), "a.b\nx_y_z\na-b\nab\na.bc\na__b\nx_y_zz\nA.b\n");
    EXPECT_EQ(mq_topic_create(b.get(), "a._b", nullptr), MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("\"a__b\""), std::string::npos);

    // Groups and members have no collision rule (Kafka has none for group ids).
    EXPECT_EQ(mq_group_subscribe(b.get(), "ab", "g.1", nullptr), MQ_OK);
    EXPECT_EQ(mq_group_subscribe(b.get(), "ab", "g_1", nullptr), MQ_OK) << mq_last_error();
}

// A single publish's error speaks of the message; only a batch names the record by index.
TEST(PublishTexts, SingleSaysNoRecordIndexBatchDoes) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    EXPECT_EQ(mq_topic_publish(b.get(), "t", nullptr, 3, "x", 1, nullptr, 0, 0, nullptr, nullptr,
                               nullptr),
              MQ_ERR_INVALID);
    EXPECT_STREQ(mq_last_error(), "key is NULL but key_len is 3");
    const mq_header h{nullptr, 2, "v", 1};
    EXPECT_EQ(
        mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, &h, 1, 0, nullptr, nullptr, nullptr),
        MQ_ERR_INVALID);
    EXPECT_STREQ(mq_last_error(), "header 0: name is NULL but name_len is 2");

    const mq_record recs[2] = {{nullptr, 0, "ok", 2, nullptr, 0}, {nullptr, 3, "x", 1, nullptr, 0}};
    EXPECT_EQ(mq_topic_publish_batch(b.get(), "t", recs, sizeof recs[0], 2, 0, nullptr, nullptr,
                                     sizeof(mq_publish_result), nullptr),
              MQ_ERR_INVALID);
    EXPECT_STREQ(mq_last_error(), "record 1: key is NULL but key_len is 3");
}

}  // namespace
