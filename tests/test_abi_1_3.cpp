// ABI 1.3: the design card's names (mq_publish, mq_poll, mq_ack, mq_subscribe) and a push
// subscription's session timeout option.
#include <cstddef>
#include <string>
#include <type_traits>

#include "mq_test_util.h"

namespace {

using namespace mqtest;

// Same signatures as their long forms: a drift in either would stop this compiling.
static_assert(std::is_same_v<decltype(&mq_publish), decltype(&mq_topic_publish)>);
static_assert(std::is_same_v<decltype(&mq_poll), decltype(&mq_group_poll)>);
static_assert(std::is_same_v<decltype(&mq_ack), decltype(&mq_group_ack)>);
static_assert(std::is_same_v<decltype(&mq_subscribe), decltype(&mq_subscription_open)>);

TEST(CardNames, PublishPollAckRoundTrip) {
    auto b = broker();
    auto c = topic_config(1, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "orders", &c), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b.get(), "orders", "billing", nullptr), MQ_OK);
    for (int i = 0; i < 3; i++) {
        const std::string p = "m" + std::to_string(i);
        int32_t part = -1;
        int64_t off = -1;
        ASSERT_EQ(mq_publish(b.get(), "orders", "k", 1, p.data(), p.size(), nullptr, 0, MQ_NO_WAIT,
                             nullptr, &part, &off),
                  MQ_OK)
            << mq_last_error();
        EXPECT_EQ(part, 0);
        EXPECT_EQ(off, i);
    }
    mq_message msgs[4];
    size_t n = 0;
    ASSERT_EQ(
        mq_poll(b.get(), "orders", "billing", 0, msgs, sizeof msgs[0], 4, MQ_NO_WAIT, nullptr, &n),
        MQ_OK);
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(payload_of(msgs[2]), "m2");
    ASSERT_EQ(mq_ack(b.get(), "orders", "billing", 0, msgs[1].offset), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "orders", "billing").committed, 2);
    // The statuses are the long forms' too.
    EXPECT_EQ(mq_ack(b.get(), "orders", "billing", 0, 7), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(
        mq_poll(b.get(), "orders", "nobody", 0, msgs, sizeof msgs[0], 4, MQ_NO_WAIT, nullptr, &n),
        MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_publish(nullptr, "orders", nullptr, 0, "x", 1, nullptr, 0, MQ_NO_WAIT, nullptr,
                         nullptr, nullptr),
              MQ_ERR_INVALID);
}

struct Seen {
    std::atomic<int> count{0};
    std::atomic<bool> freed{false};
};

TEST(CardNames, SubscribeRunsTheHandlerAndAcks) {
    auto b = broker();
    auto c = topic_config(1, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "orders", &c), MQ_OK);
    Seen seen;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscribe(
                  b.get(), "orders", "email", nullptr,
                  [](void *u, const mq_message *) {
                      static_cast<Seen *>(u)->count++;
                      return 0;
                  },
                  &seen, [](void *u) { static_cast<Seen *>(u)->freed = true; }, &sub),
              MQ_OK)
        << mq_last_error();
    for (int i = 0; i < 5; i++) publish(b.get(), "orders", nullptr, "p");
    EXPECT_TRUE(eventually([&] { return group_info(b.get(), "orders", "email").committed == 5; }));
    EXPECT_EQ(seen.count.load(), 5);
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_TRUE(seen.freed.load());
}

int noop_handler(void *, const mq_message *) { return 0; }

mq_status open_with(mq_broker *b, const mq_subscription_options &o) {
    mq_subscription *sub = nullptr;
    const mq_status st =
        mq_subscription_open(b, "t", "g", &o, noop_handler, nullptr, nullptr, &sub);
    if (st == MQ_OK) mq_subscription_close(sub);
    return st;
}

TEST(SubscriptionSessionTimeout, DefaultAndRange) {
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    EXPECT_EQ(o.session_timeout_ms, 10000);

    auto b = broker();
    auto c = topic_config(2, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    for (int64_t bad : {int64_t{0}, int64_t{-1}, (int64_t{1} << 40) + 1}) {
        o.session_timeout_ms = bad;
        EXPECT_EQ(open_with(b.get(), o), MQ_ERR_INVALID) << bad;
        EXPECT_NE(std::string(mq_last_error()).find("session_timeout_ms"), std::string::npos)
            << mq_last_error();
    }
    for (int64_t good : {int64_t{1}, int64_t{1} << 40}) {
        o.session_timeout_ms = good;
        EXPECT_EQ(open_with(b.get(), o), MQ_OK) << good << ": " << mq_last_error();
    }
}

TEST(SubscriptionSessionTimeout, A12CallerGetsTheDefault) {
    // A program built against 1.2 passes the struct without the field: whatever follows it in
    // the caller's memory is not read.
    struct {
        mq_subscription_options o;
        int64_t garbage = 0;
    } old;
    mq_subscription_options_init(&old.o, offsetof(mq_subscription_options, session_timeout_ms));
    old.o.session_timeout_ms = 0;  // past the caller's size: must be ignored
    auto b = broker();
    auto c = topic_config(1, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    EXPECT_EQ(open_with(b.get(), old.o), MQ_OK) << mq_last_error();
}

TEST(NullHeaderValue, IsAnEmptyValue) {
    auto b = broker();
    auto c = topic_config(1, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    const mq_header h{"n", 1, nullptr, 0};
    ASSERT_EQ(
        mq_publish(b.get(), "t", nullptr, 0, "p", 1, &h, 1, MQ_NO_WAIT, nullptr, nullptr, nullptr),
        MQ_OK);
    auto got = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].header_count, 1u);
    EXPECT_EQ(got[0].headers[0].value_len, 0u);
    // A NULL value with a length is still refused.
    const mq_header bad{"n", 1, nullptr, 3};
    EXPECT_EQ(mq_publish(b.get(), "t", nullptr, 0, "p", 1, &bad, 1, MQ_NO_WAIT, nullptr, nullptr,
                         nullptr),
              MQ_ERR_INVALID);
}

}  // namespace
