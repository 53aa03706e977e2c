// Delivery controls: delivery counts, dead letters, lease extension, delayed nack, seek,
// bounded retention and maximum age.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

void subscribe_dlq(mq_broker *b, const char *topic, const char *group, uint32_t max,
                   const char *dlq) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = max;
    o.dead_letter_topic = dlq;
    ASSERT_EQ(mq_group_subscribe(b, topic, group, &o), MQ_OK) << mq_last_error();
}

TEST(DeliveryCount, CountsPollsThatHandOutNotRewinds) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 10);
    cfg.ack_timeout_ms = 1000;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", "k", "a");
    publish(b.get(), "t", "k", "b");
    auto m = poll(b.get(), "t", "g", 0, 1);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].delivery_count, 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);  // a second rewind hands nothing out
    m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].delivery_count, 2u);  // a: two polls
    EXPECT_EQ(m[1].delivery_count, 1u);  // b: first time
    clock.advance_ms(1001);              // lease runs out: both come again
    m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].delivery_count, 3u);
    EXPECT_EQ(m[1].delivery_count, 2u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_OK);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(payload_of(m[0]), "b");
    EXPECT_EQ(m[0].delivery_count, 3u);
}

TEST(DeadLetter, AfterMaxDeliveriesTheHeadMovesToTheDeadLetterTopicWithItsOrigin) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "orders", &cfg), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "orders.dlq", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "orders.dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "orders", "billing", 2, "orders.dlq");
    ASSERT_EQ(mq_group_subscribe(b.get(), "orders", "email", nullptr), MQ_OK);
    publish(b.get(), "orders", "user-a", "poison");
    publish(b.get(), "orders", "user-a", "fine");
    for (uint32_t d = 1; d <= 2; d++) {
        auto m = poll(b.get(), "orders", "billing", 0, 1);
        ASSERT_EQ(m.size(), 1u);
        EXPECT_EQ(payload_of(m[0]), "poison");
        EXPECT_EQ(m[0].delivery_count, d);
        ASSERT_EQ(mq_group_nack(b.get(), "orders", "billing", 0, 0), MQ_OK);
    }
    auto m = poll(b.get(), "orders", "billing", 0);
    ASSERT_EQ(m.size(), 1u);  // the third poll skips the poison message...
    EXPECT_EQ(payload_of(m[0]), "fine");
    EXPECT_EQ(m[0].offset, 1);
    const auto gi = group_info(b.get(), "orders", "billing");
    EXPECT_EQ(gi.committed, 1);  // ...which counts as acked for billing
    EXPECT_EQ(gi.dead_lettered, 1);
    EXPECT_EQ(group_info(b.get(), "orders", "email").committed, 0);  // other groups unaffected
    auto d = poll(b.get(), "orders.dlq", "ops", 0);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(payload_of(d[0]), "poison");
    ASSERT_NE(d[0].key, nullptr);
    EXPECT_EQ(std::string(static_cast<const char *>(d[0].key), d[0].key_len), "user-a");
    ASSERT_NE(d[0].dead_letter, nullptr);
    EXPECT_STREQ(d[0].dead_letter->topic, "orders");
    EXPECT_STREQ(d[0].dead_letter->group, "billing");
    EXPECT_EQ(d[0].dead_letter->partition, 0);
    EXPECT_EQ(d[0].dead_letter->offset, 0);
    EXPECT_EQ(d[0].dead_letter->delivery_count, 2u);
    EXPECT_EQ(m[0].dead_letter, nullptr);  // ordinary messages carry no origin
}

TEST(DeadLetter, FullDeadLetterTopicHoldsTheHeadUntilThereIsRoom) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto small = topic_config(1, 1);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &small), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    publish(b.get(), "dlq", nullptr, "occupant");  // the dead-letter topic is now full
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    publish(b.get(), "src", nullptr, "poison");
    publish(b.get(), "src", nullptr, "next");
    ASSERT_EQ(poll(b.get(), "src", "g", 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    mq_message m[4];
    size_t n = 9;
    EXPECT_EQ(
        mq_group_poll(b.get(), "src", "g", 0, m, sizeof(mq_message), 4, MQ_NO_WAIT, nullptr, &n),
        MQ_TIMEOUT);
    EXPECT_EQ(n, 0u);
    EXPECT_NE(std::string(mq_last_error()).find("dead-letter topic dlq"), std::string::npos)
        << mq_last_error();
    EXPECT_EQ(group_info(b.get(), "src", "g").committed, 0);  // nothing lost, nothing skipped
    // A poll waiting on the full dead-letter topic goes on once the occupant is acked.
    auto waiter = std::async(std::launch::async, [&] {
        mq_message got[4];
        size_t k = 0;
        const mq_status st =
            mq_group_poll(b.get(), "src", "g", 0, got, sizeof(mq_message), 4, 10000, nullptr, &k);
        return std::make_pair(st, k ? payload_of(got[0]) : std::string());
    });
    auto occupant = poll(b.get(), "dlq", "ops", 0);
    ASSERT_EQ(occupant.size(), 1u);
    ASSERT_EQ(mq_group_ack(b.get(), "dlq", "ops", 0, occupant[0].offset), MQ_OK);
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    const auto [st, first] = waiter.get();
    EXPECT_EQ(st, MQ_OK);
    EXPECT_EQ(first, "next");
    auto d = poll(b.get(), "dlq", "ops", 0);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(payload_of(d[0]), "poison");
}

TEST(DeadLetter, OptionsAreCheckedAtSubscribe) {
    auto b = broker();
    ASSERT_EQ(mq_topic_create(b.get(), "src", nullptr), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 3;  // without a topic
    EXPECT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_ERR_INVALID);
    o.dead_letter_topic = "missing";
    EXPECT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_ERR_NO_TOPIC);
    o.dead_letter_topic = "src";
    EXPECT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_ERR_INVALID);
    o.max_deliveries = 0;
    o.dead_letter_topic = "src";  // a topic without a limit
    EXPECT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_ERR_INVALID);
    char buf[64];
    size_t need = 0;
    ASSERT_EQ(mq_group_list(b.get(), "src", buf, sizeof buf, &need), MQ_OK);
    EXPECT_STREQ(buf, "");  // no failed attempt subscribed anything
}

TEST(Lease, ExtensionPostponesRedelivery) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 10);
    cfg.ack_timeout_ms = 10000;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    EXPECT_EQ(mq_group_extend_lease(b.get(), "t", "g", 0), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_NE(std::string(mq_last_error()), "");
    publish(b.get(), "t", nullptr, "slow");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    clock.advance_ms(8000);
    ASSERT_EQ(mq_group_extend_lease(b.get(), "t", "g", 0), MQ_OK);
    clock.advance_ms(8000);  // 16 s after the poll, 8 s after the extension
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(2001);  // the extended lease has run out
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].delivery_count, 2u);
}

TEST(DelayedNack, HoldsTheGroupThenRedeliversInOrder) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "a");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    publish(b.get(), "t", nullptr, "b");  // behind the nacked one: must wait with it
    EXPECT_EQ(mq_group_nack(b.get(), "t", "g", 0, -1), MQ_ERR_INVALID);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 5000), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").paused_until_ns, clock.ns.load() + 5'000'000'000);
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(4999);
    EXPECT_TRUE(poll(b.get(), "t", "g", 0).empty());
    clock.advance_ms(1);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(payload_of(m[0]), "a");
    EXPECT_EQ(m[0].delivery_count, 2u);
    EXPECT_EQ(payload_of(m[1]), "b");
    EXPECT_EQ(group_info(b.get(), "t", "g").paused_until_ns, 0);
}

TEST(DelayedNack, WithNothingInFlightChangesNothing) {
    ManualClock clock;
    auto b = broker(&clock);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 5000), MQ_OK);
    publish(b.get(), "t", nullptr, "a");
    EXPECT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
}

struct PushRecorder {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<std::string, uint32_t>> calls;
    std::vector<mq_status> extend_results;
    bool fail_first = true;

    static int handle(void *user, const mq_message *m) {
        auto *r = static_cast<PushRecorder *>(user);
        std::lock_guard g(r->mu);
        r->calls.emplace_back(payload_of(*m), m->delivery_count);
        r->extend_results.push_back(mq_handler_extend_lease());
        r->cv.notify_all();
        if (r->fail_first) {
            r->fail_first = false;
            mq_handler_set_nack_delay(200);
            return 1;
        }
        return 0;
    }
    bool wait_calls(size_t n) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, 10s, [&] { return calls.size() >= n; });
    }
};

TEST(DelayedNack, PushHandlerCanAskForADelayAndExtendItsLease) {
    ManualClock clock;
    auto b = broker(&clock);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    PushRecorder rec;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b.get(), "t", "g", nullptr, &PushRecorder::handle, &rec, nullptr,
                                   &sub),
              MQ_OK);
    publish(b.get(), "t", nullptr, "x");
    ASSERT_TRUE(rec.wait_calls(1));
    // The delayed nack holds the group: observe the pause, then no second call can have
    // happened because the manual clock has not moved.
    for (int i = 0; i < 1000 && group_info(b.get(), "t", "g").paused_until_ns == 0; i++) {
        std::this_thread::yield();
    }
    EXPECT_EQ(group_info(b.get(), "t", "g").paused_until_ns, clock.ns.load() + 200'000'000);
    {
        std::lock_guard g(rec.mu);
        EXPECT_EQ(rec.calls.size(), 1u);
    }
    clock.advance_ms(200);
    ASSERT_TRUE(rec.wait_calls(2));
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    ASSERT_EQ(rec.calls.size(), 2u);
    EXPECT_EQ(rec.calls[1], std::make_pair(std::string("x"), 2u));
    EXPECT_EQ(rec.extend_results, (std::vector<mq_status>{MQ_OK, MQ_OK}));
    EXPECT_EQ(mq_handler_extend_lease(), MQ_ERR_INVALID);  // not inside a handler
    EXPECT_EQ(mq_handler_set_nack_delay(10), MQ_ERR_INVALID);
}

TEST(Seek, ReplaysRetainedMessagesAndSkipsToTheEnd) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "slow", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "fast", nullptr), MQ_OK);
    for (const char *p : {"a", "b", "c"}) publish(b.get(), "t", nullptr, p);
    auto m = poll(b.get(), "t", "fast", 0);
    ASSERT_EQ(m.size(), 3u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "fast", 0, 2), MQ_OK);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "fast", 0, 1), MQ_OK);  // retained: slow holds it
    m = poll(b.get(), "t", "fast", 0);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(payload_of(m[0]), "b");
    EXPECT_EQ(m[0].delivery_count, 1u);  // counts start over after a seek
    ASSERT_EQ(mq_group_seek(b.get(), "t", "fast", 0, MQ_OFFSET_EARLIEST), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "fast").next, 0);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "slow", 0, MQ_OFFSET_END), MQ_OK);  // skip: trims
    EXPECT_EQ(partition_info(b.get(), "t").start, 0);                         // fast is back at 0
    ASSERT_EQ(mq_group_seek(b.get(), "t", "fast", 0, MQ_OFFSET_END), MQ_OK);
    EXPECT_EQ(partition_info(b.get(), "t").start, 3);
    EXPECT_EQ(mq_group_seek(b.get(), "t", "fast", 0, 1), MQ_ERR_OUT_OF_RANGE);
    EXPECT_NE(std::string(mq_last_error()).find("outside partition 0 of topic t"),
              std::string::npos)
        << mq_last_error();
    EXPECT_EQ(mq_group_seek(b.get(), "t", "fast", 0, 4), MQ_ERR_OUT_OF_RANGE);
    EXPECT_EQ(group_info(b.get(), "t", "fast").committed, 3);  // unchanged by the rejections
}

TEST(Seek, WakesAPollWaitingForTheGroup) {
    auto b = broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "a", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "b", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "m");
    auto m = poll(b.get(), "t", "b", 0);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "b", 0, 0), MQ_OK);
    auto waiter = std::async(std::launch::async, [&] {
        mq_message got[2];
        size_t k = 0;
        return mq_group_poll(b.get(), "t", "b", 0, got, sizeof(mq_message), 2, 10000, nullptr, &k);
    });
    ASSERT_EQ(mq_group_seek(b.get(), "t", "b", 0, 0), MQ_OK);
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(waiter.get(), MQ_OK);
}

TEST(BoundedRetention, PublishersNeverWaitAndLaggingGroupsLearnWhatTheyLost) {
    auto b = broker();
    auto cfg = topic_config(1, 3);
    cfg.retention = MQ_RETAIN_BOUNDED;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "0");
    auto held = poll(b.get(), "t", "g", 0);  // a view the group still holds
    ASSERT_EQ(held.size(), 1u);
    for (int i = 1; i < 6; i++) publish(b.get(), "t", nullptr, std::to_string(i));
    const auto pi = partition_info(b.get(), "t");
    EXPECT_EQ(pi.start, 3);
    EXPECT_EQ(pi.end, 6);
    EXPECT_EQ(pi.dropped, 3);
    EXPECT_EQ(pi.producer_waits, 0);
    EXPECT_EQ(payload_of(held[0]), "0");  // still readable until the group's next poll
    const auto gi = group_info(b.get(), "t", "g");
    EXPECT_EQ(gi.committed, 3);
    EXPECT_EQ(gi.lost, 3);
    EXPECT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_ERR_NOT_IN_FLIGHT);  // it was lost
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].offset, 3);
    EXPECT_EQ(m[0].lost, 3);  // reported once, on the next message handed out
    EXPECT_EQ(m[1].lost, 0);
    // Dropping a message the group holds in flight is a loss too.
    publish(b.get(), "t", nullptr, "6");
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 4);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 5), MQ_OK);
    m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].lost, 1);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, 6), MQ_OK);
    publish(b.get(), "t", nullptr, "7");
    m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].lost, 0);
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 4);
}

TEST(BoundedRetention, ByteBudgetDropsTheOldest) {
    auto b = broker();
    auto cfg = topic_config(1, 100);
    cfg.retention = MQ_RETAIN_BOUNDED;
    cfg.max_bytes = 10;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 4; i++) publish(b.get(), "t", nullptr, "abcd");
    const auto pi = partition_info(b.get(), "t");
    EXPECT_EQ(pi.retained_bytes, 8);
    EXPECT_EQ(pi.start, 2);
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 2);
}

TEST(MaxAge, OldMessagesGoWhateverTheCursorsAndTheLossIsReported) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 10);
    cfg.max_age_ms = 1000;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "old");
    clock.advance_ms(600);
    publish(b.get(), "t", nullptr, "new");
    auto pi = partition_info(b.get(), "t");
    EXPECT_EQ(pi.oldest_age_ns, 600'000'000);
    EXPECT_EQ(group_info(b.get(), "t", "g").next_age_ns, 600'000'000);
    clock.advance_ms(400);  // "old" is 1000 ms old now
    pi = partition_info(b.get(), "t");
    EXPECT_EQ(pi.start, 1);
    EXPECT_EQ(pi.dropped, 1);
    EXPECT_EQ(pi.oldest_age_ns, 400'000'000);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(payload_of(m[0]), "new");
    EXPECT_EQ(m[0].lost, 1);
    EXPECT_EQ(group_info(b.get(), "t", "g").lost, 1);
}

TEST(MaxAge, ExpiryWakesABlockedPublisher) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 1);
    cfg.max_age_ms = 50;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "first");
    auto publisher = std::async(std::launch::async, [&] {
        return mq_topic_publish(b.get(), "t", nullptr, 0, "second", 6, NULL, 0, MQ_WAIT_FOREVER,
                                nullptr, nullptr, nullptr);
    });
    while (partition_info(b.get(), "t").producer_waits == 0) std::this_thread::yield();
    EXPECT_EQ(publisher.wait_for(0s), std::future_status::timeout);  // blocked: full
    clock.advance_ms(50);  // "first" expires; nobody acks, nobody polls
    ASSERT_EQ(publisher.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(publisher.get(), MQ_OK);
    EXPECT_EQ(partition_info(b.get(), "t").start, 1);
}

TEST(TopicConfig, RetentionAndAgeAreValidated) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    cfg.retention = 7;
    EXPECT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_ERR_INVALID);
    cfg.retention = MQ_RETAIN_BOUNDED;
    cfg.max_age_ms = -1;
    EXPECT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_ERR_INVALID);
    cfg.max_age_ms = 0;
    EXPECT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
}

}  // namespace

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

// Interplay with close: every wait these controls add must still wake on close.
TEST(DeliveryControlsClose, APollWaitingOnAFullDeadLetterTopicWakesOnClose) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto one = topic_config(1, 1);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &one), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    publish(b.get(), "dlq", nullptr, "occupant");
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 1;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_OK);
    publish(b.get(), "src", nullptr, "poison");
    ASSERT_EQ(poll(b.get(), "src", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    auto waiter = std::async(std::launch::async, [&] {
        mq_message m[2];
        size_t n = 0;
        return mq_group_poll(b.get(), "src", "g", 0, m, sizeof(mq_message), 2, MQ_WAIT_FOREVER,
                             nullptr, &n);
    });
    // The poll is stuck publishing into the full dead-letter topic: visible as a producer wait.
    while (partition_info(b.get(), "dlq").producer_waits == 0) std::this_thread::yield();
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(waiter.get(), MQ_CLOSED);
    EXPECT_EQ(group_info(b.get(), "src", "g").committed, 0);  // not acked: nothing lost
}

TEST(DeliveryControlsClose, APollHeldByADelayedNackWakesOnCloseAndOnItsCancelToken) {
    ManualClock clock;
    auto b = broker(&clock);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish(b.get(), "t", nullptr, "x");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 60000), MQ_OK);
    mq_cancel *cancel = nullptr;
    ASSERT_EQ(mq_cancel_new(&cancel), MQ_OK);
    mq_cancel_trigger(cancel);  // sticky: the poll returns CANCELLED whenever it starts waiting
    mq_message m[2];
    size_t n = 0;
    EXPECT_EQ(
        mq_group_poll(b.get(), "t", "g", 0, m, sizeof(mq_message), 2, MQ_WAIT_FOREVER, cancel, &n),
        MQ_CANCELLED);
    mq_cancel_free(cancel);
    auto waiter = std::async(std::launch::async, [&] {
        mq_message got[2];
        size_t k = 0;
        return mq_group_poll(b.get(), "t", "g", 0, got, sizeof(mq_message), 2, MQ_WAIT_FOREVER,
                             nullptr, &k);
    });
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(waiter.get(), MQ_CLOSED);
}

// Topics src and dlq; group ops on dlq, group svc on src dead-lettering to dlq after 3.
void dead_letter_push_setup(mq_broker *b) {
    ASSERT_EQ(mq_topic_create(b, "src", nullptr), MQ_OK);
    ASSERT_EQ(mq_topic_create(b, "dlq", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b, "dlq", "ops", nullptr), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 3;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b, "src", "svc", &o), MQ_OK);
}

// A push handler that records "payload#delivery_count" and fails on "bad".
struct PushCalls {
    std::mutex mu;
    std::vector<std::string> seen;
    static int handle(void *user, const mq_message *m) {
        auto *c = static_cast<PushCalls *>(user);
        std::lock_guard g(c->mu);
        c->seen.push_back(payload_of(*m) + "#" + std::to_string(m->delivery_count));
        return payload_of(*m) == "bad" ? 1 : 0;
    }
};

// Interplay with push subscriptions: max deliveries applies to push groups too.
TEST(DeliveryControlsPush, APushHandlerThatAlwaysFailsEndsInTheDeadLetterTopic) {
    auto b = broker();
    ASSERT_NO_FATAL_FAILURE(dead_letter_push_setup(b.get()));
    PushCalls calls;
    mq_subscription_options so;
    mq_subscription_options_init(&so, sizeof so);
    so.prefetch = 1;  // one message per poll, so only the bad one is redelivered
    mq_subscription *sub = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b.get(), "src", "svc", &so, PushCalls::handle, &calls, nullptr, &sub),
        MQ_OK);
    publish(b.get(), "src", nullptr, "bad");
    publish(b.get(), "src", nullptr, "good");
    mq_message d[2];
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b.get(), "dlq", "ops", 0, d, sizeof(mq_message), 2, 10000, nullptr, &n),
              MQ_OK);
    EXPECT_EQ(payload_of(d[0]), "bad");
    ASSERT_NE(d[0].dead_letter, nullptr);
    EXPECT_EQ(d[0].dead_letter->delivery_count, 3u);
    while (group_info(b.get(), "src", "svc").committed < 2) std::this_thread::yield();
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(calls.seen, (std::vector<std::string>{"bad#1", "bad#2", "bad#3", "good#1"}));
}

// A poison message in a push batch does not take the messages behind it to the dead-letter
// topic: after each failure the rest of the batch is given back unseen, and counts nothing.
TEST(DeliveryControlsPush, APoisonMessageLeavesTheRestOfItsBatchToTheHandler) {
    auto b = broker();
    ASSERT_NO_FATAL_FAILURE(dead_letter_push_setup(b.get()));
    // Published before the subscription opens: its first poll (prefetch 10) takes all three.
    publish(b.get(), "src", nullptr, "bad");
    publish(b.get(), "src", nullptr, "good-1");
    publish(b.get(), "src", nullptr, "good-2");
    PushCalls calls;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b.get(), "src", "svc", nullptr, PushCalls::handle, &calls,
                                   nullptr, &sub),
              MQ_OK);
    ASSERT_TRUE(
        mqtest::eventually([&] { return group_info(b.get(), "src", "svc").committed == 3; }));
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(calls.seen,
              (std::vector<std::string>{"bad#1", "bad#2", "bad#3", "good-1#1", "good-2#1"}));
    EXPECT_EQ(group_info(b.get(), "src", "svc").dead_lettered, 1);
    mq_message d[4];
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b.get(), "dlq", "ops", 0, d, sizeof(mq_message), 4, 0, nullptr, &n),
              MQ_OK);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(payload_of(d[0]), "bad");
}

// Interplay with leases: a dead-letter decision counts lease expiries as deliveries too.
TEST(DeliveryControlsLease, LostLeasesCountTowardsMaxDeliveries) {
    ManualClock clock;
    auto b = broker(&clock);
    auto cfg = topic_config(1, 10);
    cfg.ack_timeout_ms = 1000;
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 2;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "src", "g", &o), MQ_OK);
    publish(b.get(), "src", nullptr, "slow");
    ASSERT_EQ(poll(b.get(), "src", "g", 0).size(), 1u);
    clock.advance_ms(1000);
    ASSERT_EQ(poll(b.get(), "src", "g", 0).size(), 1u);  // second delivery after the lease
    clock.advance_ms(1000);
    EXPECT_TRUE(poll(b.get(), "src", "g", 0).empty());  // third would exceed: dead-lettered
    EXPECT_EQ(group_info(b.get(), "src", "g").dead_lettered, 1);
    EXPECT_EQ(poll(b.get(), "dlq", "ops", 0).size(), 1u);
}

}  // namespace
