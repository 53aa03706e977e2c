// Normal outcomes are not errors: MQ_TIMEOUT, MQ_FULL, MQ_CLOSED and MQ_CANCELLED carry fixed
// texts (the same string whatever the call), and a failure found under a partition lock is
// formatted after the lock is released (error.h's Deferred).
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>

#include "util/error.h"
#include "mq_test_util.h"

namespace {

using namespace mqtest;

struct Texts : ::testing::Test {
    BrokerPtr b = broker();
    void SetUp() override {
        auto cfg = topic_config(2, 1);
        ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
        ASSERT_EQ(mq_topic_create(b.get(), "u", &cfg), MQ_OK);
        for (const char *t : {"t", "u"}) {
            ASSERT_EQ(mq_group_subscribe(b.get(), t, "g", nullptr), MQ_OK);
            ASSERT_EQ(mq_group_subscribe(b.get(), t, "h", nullptr), MQ_OK);
        }
    }
    // Makes the thread's last error a formatted one, so a fixed text must replace it.
    void formatted_failure() {
        ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 99), MQ_ERR_NOT_IN_FLIGHT);
        ASSERT_EQ(std::string(mq_last_error()), "offset 99 is not in flight for g (nothing is)");
    }
    const char *timeout_text(const char *topic, const char *group, int32_t p) {
        mq_message m;
        size_t n = 0;
        EXPECT_EQ(mq_group_poll(b.get(), topic, group, p, &m, sizeof m, 1, MQ_NO_WAIT, nullptr, &n),
                  MQ_TIMEOUT);
        return mq_last_error();
    }
    const char *full_text(const char *topic, const char *key) {
        EXPECT_EQ(mq_topic_publish(b.get(), topic, key, std::strlen(key), "x", 1, nullptr, 0,
                                   MQ_NO_WAIT, nullptr, nullptr, nullptr),
                  MQ_FULL);
        return mq_last_error();
    }
};

TEST_F(Texts, TimeoutsCarryOneFixedText) {
    formatted_failure();
    const char *a = timeout_text("t", "g", 0);
    EXPECT_STREQ(a, "nothing to hand out within the wait");
    formatted_failure();
    // A fixed text is a constant string: a later failure does not overwrite it.
    EXPECT_STREQ(a, "nothing to hand out within the wait");
    EXPECT_EQ(timeout_text("u", "h", 1), a) << "the same string, not one formatted per call";
}

TEST_F(Texts, FullCarriesOneFixedText) {
    publish(b.get(), "t", "user-a", "x");  // capacity 1
    publish(b.get(), "u", "user-b", "x");
    formatted_failure();
    const char *a = full_text("t", "user-a");
    const std::string text = a;
    EXPECT_NE(text.find("full"), std::string::npos) << a;
    formatted_failure();
    EXPECT_EQ(std::string(a), text);
    EXPECT_EQ(full_text("u", "user-b"), a);
}

TEST_F(Texts, CancelledCarriesOneFixedText) {
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    mq_cancel_trigger(c);
    mq_message m;
    size_t n = 0;
    formatted_failure();
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, &m, sizeof m, 1, 1000, c, &n), MQ_CANCELLED);
    const char *cancelled = mq_last_error();
    formatted_failure();
    EXPECT_STREQ(cancelled, "poll cancelled by its mq_cancel token");
    ASSERT_EQ(mq_group_poll(b.get(), "u", "h", 1, &m, sizeof m, 1, 1000, c, &n), MQ_CANCELLED);
    EXPECT_EQ(mq_last_error(), cancelled);
    EXPECT_STREQ(cancelled, "poll cancelled by its mq_cancel token");
    mq_cancel_free(c);
}

TEST_F(Texts, ClosedCarriesOneFixedText) {
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    mq_message m;
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, &m, sizeof m, 1, 0, nullptr, &n), MQ_CLOSED);
    const char *a = mq_last_error();
    EXPECT_STREQ(a, "the broker is closed");
    mq::fail(MQ_ERR_INVALID, "%s", "a formatted failure");  // nothing formats after close
    EXPECT_STREQ(a, "the broker is closed");
    ASSERT_EQ(mq_topic_publish(b.get(), "u", nullptr, 0, "x", 1, nullptr, 0, 0, nullptr, nullptr,
                               nullptr),
              MQ_CLOSED);
    EXPECT_EQ(mq_last_error(), a);
}

// A failure decided under a lock reaches mq_last_error only when its Deferred goes, which is
// after the lock guard declared below it has released the lock.
TEST(Deferred, FormatsWhenItGoesOutOfScopeAfterTheLock) {
    mq::fail_fixed(MQ_OK, "before");
    std::mutex mu;
    {
        mq::Deferred err;
        std::lock_guard lk(mu);
        EXPECT_EQ(err.fail(MQ_ERR_NOT_IN_FLIGHT, "offset %lld of %s", 7LL, "billing"),
                  MQ_ERR_NOT_IN_FLIGHT);
        EXPECT_STREQ(mq::last_error(), "before") << "formatted while the lock is held";
    }
    EXPECT_STREQ(mq::last_error(), "offset 7 of billing");
    {
        mq::Deferred err;
        err.fail(MQ_ERR_NO_GROUP, "group %s", "x");
        err.fail_fixed(MQ_TIMEOUT, "fixed");  // the later outcome wins
    }
    EXPECT_STREQ(mq::last_error(), "fixed");
    { mq::Deferred unused; }
    EXPECT_STREQ(mq::last_error(), "fixed");  // nothing failed: nothing changes
}

TEST(SeekText, AnEmptyPartitionNamesTheOnlyOffsetToSeekTo) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 3; i++) publish(b.get(), "t", nullptr, "m");
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 3u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 2), MQ_OK);  // log empty, next offset 3
    ASSERT_EQ(mq_group_seek(b.get(), "t", "g", 0, 1), MQ_ERR_OUT_OF_RANGE);
    EXPECT_STREQ(mq_last_error(),
                 "offset 1 is outside partition 0 of topic t: the partition is empty; the only "
                 "offset to seek to is 3");
    publish(b.get(), "t", nullptr, "m");
    ASSERT_EQ(mq_group_seek(b.get(), "t", "g", 0, 1), MQ_ERR_OUT_OF_RANGE);
    EXPECT_STREQ(mq_last_error(),
                 "offset 1 is outside partition 0 of topic t: retained 3..3 (seek to 4 for the "
                 "end)");
}

}  // namespace
