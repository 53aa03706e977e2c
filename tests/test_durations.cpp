// The duration rule of mq.h: every wait, delay and timeout is 0 to 2^40 ms (waits also -1).
// Each blocking call is tried at the edge (2^40: accepted, and it really waits until something
// ends the wait) and past it (2^40 + 1, 10^13, INT64_MAX: MQ_ERR_INVALID at once, naming the
// argument). The values past the edge once overflowed the deadline (an immediate timeout) or
// waited for decades; the refused calls get a triggered cancel token, so a library that accepts
// them returns MQ_CANCELLED instead of hanging the suite.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

constexpr int64_t kEdge = int64_t{1} << 40;
const int64_t kPastEdge[] = {kEdge + 1, 10'000'000'000'000, INT64_MAX};

struct Cancel {
    mq_cancel *c = nullptr;
    Cancel() { EXPECT_EQ(mq_cancel_new(&c), MQ_OK); }
    ~Cancel() { mq_cancel_free(c); }
};

// A blocking call, given its wait and cancel token.
using Call = std::function<mq_status(int64_t wait_ms, mq_cancel *cancel)>;

void expect_refused(const Call &call, const char *what) {
    for (int64_t w : kPastEdge) {
        Cancel cancel;
        mq_cancel_trigger(cancel.c);
        EXPECT_EQ(call(w, cancel.c), MQ_ERR_INVALID) << what << " with wait " << w;
        const std::string msg = mq_last_error();
        EXPECT_NE(msg.find("wait_ms is " + std::to_string(w)), std::string::npos) << msg;
        EXPECT_NE(msg.find("2^40"), std::string::npos) << msg;
    }
    // Other negative waits than MQ_WAIT_FOREVER are refused alike.
    for (int64_t w : {int64_t{-2}, INT64_MIN}) {
        Cancel cancel;
        mq_cancel_trigger(cancel.c);
        EXPECT_EQ(call(w, cancel.c), MQ_ERR_INVALID) << what << " with wait " << w;
    }
}

// The special waits keep their meaning: MQ_NO_WAIT returns at once with `no_wait` (MQ_FULL or
// MQ_TIMEOUT), MQ_WAIT_FOREVER waits (here ended at once by a triggered token).
void expect_special_waits(const Call &call, mq_status no_wait, const char *what) {
    EXPECT_EQ(call(MQ_NO_WAIT, nullptr), no_wait) << what;
    Cancel cancel;
    mq_cancel_trigger(cancel.c);
    EXPECT_EQ(call(MQ_WAIT_FOREVER, cancel.c), MQ_CANCELLED) << what << ": " << mq_last_error();
}

// The call with a wait of 2^40 ms runs on another thread; `waiting` (may be empty) tells when it
// has started waiting, then its token is triggered. It must end with MQ_CANCELLED: an immediate
// timeout (an overflowed deadline) or a refusal fails.
void expect_waits_at_edge(const Call &call, const std::function<bool()> &waiting,
                          const char *what) {
    Cancel cancel;
    std::promise<void> started;
    auto result = std::async(std::launch::async, [&] {
        started.set_value();
        const mq_status st = call(kEdge, cancel.c);
        return std::make_pair(st, std::string(mq_last_error()));
    });
    started.get_future().wait();
    if (waiting) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!waiting() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        // EXPECT, not ASSERT: the token below must still end the call.
        EXPECT_TRUE(waiting()) << what << " never started waiting";
        EXPECT_EQ(result.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
            << what << " returned although it was waiting";
    }
    mq_cancel_trigger(cancel.c);
    ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << what << " did not wake on its cancel token";
    const auto [st, msg] = result.get();
    EXPECT_EQ(st, MQ_CANCELLED) << what << ": " << mq_status_name(st) << ": " << msg;
}

class Durations : public ::testing::Test {
protected:
    void SetUp() override {
        b = mqtest::broker();
        // A full partition for the publishes (capacity 1, held by a group), an empty one for
        // the polls.
        mq_topic_config c = mqtest::topic_config(1, 1);
        ASSERT_EQ(mq_topic_create(b.get(), "full", &c), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_subscribe(b.get(), "full", "g", nullptr), MQ_OK);
        mqtest::publish(b.get(), "full", nullptr, "x");
        ASSERT_EQ(mq_topic_create(b.get(), "empty", nullptr), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "empty", "g", nullptr), MQ_OK);
    }
    int64_t producer_waits() { return mqtest::partition_info(b.get(), "full", 0).producer_waits; }

    mqtest::BrokerPtr b;
};

TEST_F(Durations, Publish) {
    const Call call = [&](int64_t w, mq_cancel *c) {
        return mq_topic_publish(b.get(), "full", nullptr, 0, "y", 1, nullptr, 0, w, c, nullptr,
                                nullptr);
    };
    expect_refused(call, "mq_topic_publish");
    expect_special_waits(call, MQ_FULL, "mq_topic_publish");
    EXPECT_EQ(producer_waits(), 0) << "a refused publish waited";
    expect_waits_at_edge(
        call, [&] { return producer_waits() == 1; }, "mq_topic_publish");
}

TEST_F(Durations, PublishBatch) {
    const mq_record rec{nullptr, 0, "y", 1, nullptr, 0};
    const Call call = [&](int64_t w, mq_cancel *c) {
        mq_publish_result res{};
        size_t published = 7;
        const mq_status st = mq_topic_publish_batch(b.get(), "full", &rec, sizeof rec, 1, w, c,
                                                    &res, sizeof res, &published);
        EXPECT_EQ(published, 0u);
        return st;
    };
    expect_refused(call, "mq_topic_publish_batch");
    expect_special_waits(call, MQ_FULL, "mq_topic_publish_batch");
    EXPECT_EQ(producer_waits(), 0) << "a refused batch waited";
    expect_waits_at_edge(
        call, [&] { return producer_waits() == 1; }, "mq_topic_publish_batch");
}

TEST_F(Durations, GroupPoll) {
    const Call call = [&](int64_t w, mq_cancel *c) {
        mq_message m[1];
        size_t n = 9;
        const mq_status st = mq_group_poll(b.get(), "empty", "g", 0, m, sizeof m[0], 1, w, c, &n);
        EXPECT_EQ(n, 0u);
        return st;
    };
    expect_refused(call, "mq_group_poll");
    expect_special_waits(call, MQ_TIMEOUT, "mq_group_poll");
    expect_waits_at_edge(call, {}, "mq_group_poll");
}

TEST_F(Durations, MemberPoll) {
    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "empty", "live", nullptr, &m), MQ_OK) << mq_last_error();
    size_t count = 0;
    int32_t part = -1;
    ASSERT_EQ(mq_member_get_assignment(m, nullptr, &part, 1, &count), MQ_OK);
    const Call call = [&](int64_t w, mq_cancel *c) {
        mq_message msg[1];
        size_t n = 9;
        const mq_status st = mq_member_poll(m, msg, sizeof msg[0], 1, w, c, &n);
        EXPECT_EQ(n, 0u);
        return st;
    };
    expect_refused(call, "mq_member_poll");
    expect_special_waits(call, MQ_TIMEOUT, "mq_member_poll");
    expect_waits_at_edge(call, {}, "mq_member_poll");
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// A close from another thread ends a wait of 2^40 ms as well (MQ_CLOSED).
TEST_F(Durations, CloseEndsAnEdgeWait) {
    auto result = std::async(std::launch::async, [&] {
        return mq_topic_publish(b.get(), "full", nullptr, 0, "y", 1, nullptr, 0, kEdge, nullptr,
                                nullptr, nullptr);
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (producer_waits() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    EXPECT_EQ(producer_waits(), 1) << "the publish never started waiting";
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(result.get(), MQ_CLOSED);
}

// The delays (nacks) follow the same rule: 2^40 pauses the group that long by the broker clock,
// anything past it is refused and changes nothing.
TEST(DurationDelays, NackDelays) {
    mqtest::ManualClock clock;
    auto b = mqtest::broker(&clock);
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    mqtest::publish(b.get(), "t", nullptr, "x");
    ASSERT_EQ(mqtest::poll(b.get(), "t", "g", 0).size(), 1u);
    for (int64_t d : kPastEdge) {
        EXPECT_EQ(mq_group_nack(b.get(), "t", "g", 0, d), MQ_ERR_INVALID) << d;
        EXPECT_NE(std::string(mq_last_error()).find("delay_ms is " + std::to_string(d)),
                  std::string::npos)
            << mq_last_error();
        EXPECT_EQ(mqtest::group_info(b.get(), "t", "g").next, 1) << "a refused nack rewound";
    }
    EXPECT_EQ(mq_group_nack(b.get(), "t", "g", 0, -1), MQ_ERR_INVALID);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, kEdge), MQ_OK) << mq_last_error();
    EXPECT_EQ(mqtest::group_info(b.get(), "t", "g").paused_until_ns,
              clock.ns.load() + kEdge * 1'000'000);

    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "live", nullptr, &m), MQ_OK) << mq_last_error();
    size_t count = 0;
    ASSERT_EQ(mq_member_get_assignment(m, nullptr, nullptr, 0, &count), MQ_OK);
    for (int64_t d : kPastEdge) {
        EXPECT_EQ(mq_member_nack(m, 0, d), MQ_ERR_INVALID) << d;
        EXPECT_NE(std::string(mq_last_error()).find("delay_ms"), std::string::npos);
    }
    EXPECT_EQ(mq_member_nack(m, 0, kEdge), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// mq_handler_set_nack_delay, from inside a push handler.
struct HandlerCtx {
    std::atomic<int> calls{0};
    std::vector<mq_status> statuses;  // written by the handler thread before `calls` moves
};

int set_delays(void *user, const mq_message *) {
    auto *ctx = static_cast<HandlerCtx *>(user);
    if (ctx->calls.load() == 0) {
        for (int64_t d : kPastEdge) ctx->statuses.push_back(mq_handler_set_nack_delay(d));
        ctx->statuses.push_back(mq_handler_set_nack_delay(-1));
        ctx->statuses.push_back(mq_handler_set_nack_delay(kEdge));
        ctx->statuses.push_back(mq_handler_set_nack_delay(0));
    }
    ctx->calls.fetch_add(1);
    return 0;
}

TEST(DurationDelays, HandlerNackDelay) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    HandlerCtx ctx;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b.get(), "t", "g", nullptr, set_delays, &ctx, nullptr, &sub),
              MQ_OK);
    mqtest::publish(b.get(), "t", nullptr, "x");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ctx.calls.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    ASSERT_EQ(ctx.calls.load(), 1) << "the handler never ran";
    EXPECT_EQ(mq_subscription_close(sub), MQ_OK);
    const std::vector<mq_status> want = {MQ_ERR_INVALID, MQ_ERR_INVALID, MQ_ERR_INVALID,
                                         MQ_ERR_INVALID, MQ_OK,          MQ_OK};
    EXPECT_EQ(ctx.statuses, want);
}

}  // namespace
