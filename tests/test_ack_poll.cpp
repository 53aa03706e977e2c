// ABI 1.1's mq_group_ack_poll and mq_member_ack_poll: exactly "ack, then poll", in one
// critical section; a rejected ack polls nothing; a waiting ack+poll wakes like a poll.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

void make_topic(mq_broker *b, const char *name, int32_t partitions, int64_t capacity) {
    const mq_topic_config cfg = topic_config(partitions, capacity);
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

void subscribe(mq_broker *b, const char *topic, const char *group) {
    ASSERT_EQ(mq_group_subscribe(b, topic, group, nullptr), MQ_OK) << mq_last_error();
}

struct Polled {
    mq_status st;
    std::vector<int64_t> offsets;
    std::vector<std::string> payloads;
};

Polled ack_poll(mq_broker *b, const char *topic, const char *group, int32_t p, int64_t offset,
                size_t max = 16, int64_t wait_ms = MQ_NO_WAIT, mq_cancel *cancel = nullptr) {
    std::vector<mq_message> out(max);
    size_t n = 99;
    Polled r;
    r.st = mq_group_ack_poll(b, topic, group, p, offset, out.data(), sizeof(mq_message), max,
                             wait_ms, cancel, &n);
    for (size_t i = 0; i < n; i++) {
        r.offsets.push_back(out[i].offset);
        r.payloads.push_back(payload_of(out[i]));
    }
    return r;
}

Polled ack_then_poll(mq_broker *b, const char *topic, const char *group, int32_t p, int64_t offset,
                     size_t max = 16) {
    Polled r;
    r.st = mq_group_ack(b, topic, group, p, offset);
    if (r.st != MQ_OK) return r;
    std::vector<mq_message> out(max);
    size_t n = 0;
    r.st = mq_group_poll(b, topic, group, p, out.data(), sizeof(mq_message), max, MQ_NO_WAIT,
                         nullptr, &n);
    for (size_t i = 0; i < n; i++) {
        r.offsets.push_back(out[i].offset);
        r.payloads.push_back(payload_of(out[i]));
    }
    return r;
}

std::string state(mq_broker *b, const char *topic) {
    char buf[256];
    EXPECT_EQ(mq_partition_describe(b, topic, 0, buf, sizeof buf, nullptr), MQ_OK);
    return buf;
}

// The same script, once with the pair and once with the combined call, on two topics of one
// broker: every result and every state after each step must match.
TEST(AckPoll, IsExactlyAckThenPoll) {
    auto b = broker();
    make_topic(b.get(), "pair", 1, 8);
    make_topic(b.get(), "one", 1, 8);
    for (const char *t : {"pair", "one"}) {
        subscribe(b.get(), t, "g");
        subscribe(b.get(), t, "slow");
        for (int i = 0; i < 8; i++) publish(b.get(), t, nullptr, "m-" + std::to_string(i));
        ASSERT_EQ(poll(b.get(), t, "g", 0, 3).size(), 3u);
    }
    struct Step {
        int64_t ack;
        size_t max;
    };
    // Mid-batch, last of a batch, an ack of something acked before, of something never handed
    // out, and one that ends with nothing left to poll.
    for (const Step s : {Step{0, 2}, Step{4, 1}, Step{2, 4}, Step{9, 4}, Step{5, 2}, Step{7, 4}}) {
        SCOPED_TRACE("ack " + std::to_string(s.ack) + " max " + std::to_string(s.max));
        const Polled a = ack_then_poll(b.get(), "pair", "g", 0, s.ack, s.max);
        const std::string pair_error = a.st == MQ_OK ? "" : mq_last_error();
        const Polled c = ack_poll(b.get(), "one", "g", 0, s.ack, s.max);
        EXPECT_EQ(c.st, a.st);
        if (a.st != MQ_OK && a.st != MQ_TIMEOUT) EXPECT_STREQ(mq_last_error(), pair_error.c_str());
        EXPECT_EQ(c.offsets, a.offsets);
        EXPECT_EQ(c.payloads, a.payloads);
        std::string sa = state(b.get(), "pair"), sc = state(b.get(), "one");
        EXPECT_EQ(sc, sa);
        const mq_group_info ga = group_info(b.get(), "pair", "g"),
                            gc = group_info(b.get(), "one", "g");
        EXPECT_EQ(gc.committed, ga.committed);
        EXPECT_EQ(gc.next, ga.next);
    }
    EXPECT_EQ(group_info(b.get(), "one", "g").committed, 8);  // the last step acked everything
}

TEST(AckPoll, ARejectedAckPollsNothingAndChangesNothing) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 8);
    subscribe(b.get(), "t", "g");
    for (int i = 0; i < 4; i++) publish(b.get(), "t", nullptr, "m");
    ASSERT_EQ(poll(b.get(), "t", "g", 0, 2).size(), 2u);
    const std::string before = state(b.get(), "t");
    const auto t0 = Clock::now();
    // Messages are there to poll, and the wait is long: a rejection must not wait or poll.
    const Polled r = ack_poll(b.get(), "t", "g", 0, 3, 16, 10000);
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_EQ(r.st, MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_TRUE(r.offsets.empty());
    EXPECT_STREQ(mq_last_error(), "offset 3 is not in flight for g (in flight: 0..1)");
    EXPECT_EQ(state(b.get(), "t"), before);
}

TEST(AckPoll, ArgumentsComeBeforeTheAckAndTheAckBeforeWaiting) {
    auto b = broker();
    make_topic(b.get(), "t", 2, 8);
    subscribe(b.get(), "t", "g");
    mq_message m[4];
    size_t n = 7;
    EXPECT_EQ(mq_group_ack_poll(nullptr, "t", "g", 0, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_INVALID);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "nope", "g", 0, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "nope", 0, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 2, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_PARTITION);
    // Nothing is in flight, so the ack would be refused: the bad arguments are reported first.
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, nullptr, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, 8, 4, 0, nullptr, &n), MQ_ERR_INVALID);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, sizeof *m, 0, 0, nullptr, &n),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, sizeof *m, 4, -2, nullptr, &n),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, sizeof *m, 4, 0, nullptr, nullptr),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_ERR_NOT_IN_FLIGHT);
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    EXPECT_EQ(mq_group_ack_poll(b.get(), "t", "g", 0, 0, m, sizeof *m, 4, 0, nullptr, &n),
              MQ_CLOSED);
}

// The ack stands while the poll waits, and a publish wakes the wait.
TEST(AckPoll, AWaitingAckPollHasAckedAndWakesOnPublish) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 8);
    subscribe(b.get(), "t", "g");
    publish(b.get(), "t", nullptr, "a");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    auto waiter = std::async(std::launch::async,
                             [&] { return ack_poll(b.get(), "t", "g", 0, 0, 16, 10000); });
    ASSERT_TRUE(eventually([&] { return group_info(b.get(), "t", "g").committed == 1; }));
    EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);  // nothing to hand out yet
    publish(b.get(), "t", nullptr, "b");
    const Polled r = waiter.get();
    EXPECT_EQ(r.st, MQ_OK);
    EXPECT_EQ(r.payloads, std::vector<std::string>{"b"});
}

TEST(AckPoll, AWaitingAckPollWakesOnCloseAndOnCancelWithTheAckKept) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 8);
    subscribe(b.get(), "t", "g");
    publish(b.get(), "t", nullptr, "a");
    publish(b.get(), "t", nullptr, "b");
    ASSERT_EQ(poll(b.get(), "t", "g", 0, 1).size(), 1u);
    mq_cancel *cancel = nullptr;
    ASSERT_EQ(mq_cancel_new(&cancel), MQ_OK);
    ASSERT_EQ(ack_poll(b.get(), "t", "g", 0, 0, 1).offsets, std::vector<int64_t>{1});
    auto cancelled = std::async(std::launch::async, [&] {
        return ack_poll(b.get(), "t", "g", 0, 1, 16, MQ_WAIT_FOREVER, cancel);
    });
    ASSERT_TRUE(eventually([&] { return group_info(b.get(), "t", "g").committed == 2; }));
    mq_cancel_trigger(cancel);
    EXPECT_EQ(cancelled.get().st, MQ_CANCELLED);
    mq_cancel_free(cancel);

    publish(b.get(), "t", nullptr, "c");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    auto closed = std::async(
        std::launch::async, [&] { return ack_poll(b.get(), "t", "g", 0, 2, 16, MQ_WAIT_FOREVER); });
    ASSERT_TRUE(eventually([&] { return group_info(b.get(), "t", "g").committed == 3; }));
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    EXPECT_EQ(closed.get().st, MQ_CLOSED);
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 3);
}

// The room an ack+poll makes is given to the blocked publisher before the poll sleeps: the
// publisher's message is then what the poll hands out. Were the wake-up held until the poll
// returned, both would wait for each other until the poll's deadline (MQ_TIMEOUT).
TEST(AckPoll, TheRoomItMakesWakesABlockedPublisherBeforeThePollSleeps) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 1);
    subscribe(b.get(), "t", "g");
    publish(b.get(), "t", nullptr, "first");
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    auto publisher = std::async(std::launch::async, [&] {
        return mq_topic_publish(b.get(), "t", nullptr, 0, "second", 6, nullptr, 0, MQ_WAIT_FOREVER,
                                nullptr, nullptr, nullptr);
    });
    ASSERT_TRUE(eventually([&] { return partition_info(b.get(), "t").producer_waits == 1; }));
    const Polled r = ack_poll(b.get(), "t", "g", 0, 0, 16, 3000);
    EXPECT_EQ(r.st, MQ_OK);
    EXPECT_EQ(r.payloads, std::vector<std::string>{"second"});
    EXPECT_EQ(publisher.get(), MQ_OK);
}

// ---- members -----------------------------------------------------------------------------

struct MemberDeleter {
    void operator()(mq_member *m) const {
        if (m) EXPECT_EQ(mq_member_close(m), MQ_OK) << mq_last_error();
    }
};
using MemberPtr = std::unique_ptr<mq_member, MemberDeleter>;

MemberPtr join(mq_broker *b, const char *topic, const char *group, const char *id) {
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = id;
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b, topic, group, &o, &m), MQ_OK) << mq_last_error();
    size_t n = 0;
    int32_t parts[16];
    EXPECT_EQ(mq_member_get_assignment(m, nullptr, parts, 16, &n), MQ_OK);
    return MemberPtr(m);
}

Polled member_ack_poll(mq_member *m, int32_t p, int64_t offset, size_t max = 16,
                       int64_t wait_ms = MQ_NO_WAIT) {
    std::vector<mq_message> out(max);
    size_t n = 99;
    Polled r;
    r.st =
        mq_member_ack_poll(m, p, offset, out.data(), sizeof(mq_message), max, wait_ms, nullptr, &n);
    for (size_t i = 0; i < n; i++) {
        r.offsets.push_back(out[i].partition * 1000 + out[i].offset);
        r.payloads.push_back(payload_of(out[i]));
    }
    return r;
}

Polled member_poll(mq_member *m, size_t max = 16) {
    std::vector<mq_message> out(max);
    size_t n = 0;
    Polled r;
    r.st = mq_member_poll(m, out.data(), sizeof(mq_message), max, MQ_NO_WAIT, nullptr, &n);
    for (size_t i = 0; i < n; i++) {
        r.offsets.push_back(out[i].partition * 1000 + out[i].offset);
        r.payloads.push_back(payload_of(out[i]));
    }
    return r;
}

TEST(MemberAckPoll, IsExactlyAckThenPoll) {
    auto b = broker();
    make_topic(b.get(), "pair", 1, 8);
    make_topic(b.get(), "one", 1, 8);
    MemberPtr mp = join(b.get(), "pair", "g", "a");
    MemberPtr mo = join(b.get(), "one", "g", "a");
    for (const char *t : {"pair", "one"})
        for (int i = 0; i < 6; i++) publish(b.get(), t, nullptr, "m-" + std::to_string(i));
    ASSERT_EQ(member_poll(mp.get(), 2).offsets.size(), 2u);
    ASSERT_EQ(member_poll(mo.get(), 2).offsets.size(), 2u);
    for (const int64_t ack : {0, 3, 1, 3, 5}) {
        SCOPED_TRACE("ack " + std::to_string(ack));
        Polled a;
        a.st = mq_member_ack(mp.get(), 0, ack);
        if (a.st == MQ_OK) a = member_poll(mp.get(), 2);
        const Polled c = member_ack_poll(mo.get(), 0, ack, 2);
        EXPECT_EQ(c.st, a.st);
        EXPECT_EQ(c.offsets, a.offsets);
        EXPECT_EQ(state(b.get(), "one"), state(b.get(), "pair"));
    }
    EXPECT_EQ(group_info(b.get(), "one", "g").committed, 6);
}

TEST(MemberAckPoll, ARejectedAckPollsNothing) {
    auto b = broker();
    make_topic(b.get(), "t", 2, 8);
    MemberPtr m = join(b.get(), "t", "g", "a");
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < 3; i++) {
            ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, nullptr, 0, 0, nullptr,
                                       nullptr, nullptr) == MQ_OK,
                      true);
        }
    }
    const Polled first = member_poll(m.get(), 1);
    ASSERT_EQ(first.offsets.size(), 1u);
    const int32_t p = static_cast<int32_t>(first.offsets[0] / 1000);
    const std::string before = state(b.get(), "t");
    const Polled r = member_ack_poll(m.get(), p, 2);  // offset 2 was never handed out
    EXPECT_EQ(r.st, MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_TRUE(r.offsets.empty());
    EXPECT_EQ(state(b.get(), "t"), before);
    EXPECT_EQ(member_ack_poll(m.get(), 2, 0).st, MQ_ERR_PARTITION);
    // Another member joins: the generation changed, so the ack is refused and nothing polled.
    MemberPtr other = join(b.get(), "t", "g", "b");
    const Polled stale = member_ack_poll(m.get(), p, 0);
    EXPECT_EQ(stale.st, MQ_REBALANCED);
    EXPECT_TRUE(stale.offsets.empty());
}

// With two partitions the poll's rotation may start at the other one: the ack is made first
// either way, and the poll then hands out from wherever the rotation finds messages.
TEST(MemberAckPoll, AcksFirstWhereverThePollLooks) {
    auto b = broker();
    make_topic(b.get(), "t", 2, 8);
    MemberPtr m = join(b.get(), "t", "g", "a");
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, nullptr, 0, 0, nullptr,
                                   nullptr, nullptr),
                  MQ_OK);
    }
    for (int round = 0; round < 2; round++) {
        const Polled got = member_poll(m.get(), 1);
        ASSERT_EQ(got.offsets.size(), 1u);
        const int32_t p = static_cast<int32_t>(got.offsets[0] / 1000);
        const int64_t off = got.offsets[0] % 1000;
        const Polled next = member_ack_poll(m.get(), p, off, 1);
        EXPECT_EQ(next.st, MQ_OK);
        EXPECT_EQ(group_info(b.get(), "t", "g", p).committed, off + 1);
        ASSERT_EQ(next.offsets.size(), 1u);
        const int32_t q = static_cast<int32_t>(next.offsets[0] / 1000);
        ASSERT_EQ(mq_member_ack(m.get(), q, next.offsets[0] % 1000), MQ_OK);
    }
    EXPECT_EQ(
        group_info(b.get(), "t", "g", 0).committed + group_info(b.get(), "t", "g", 1).committed, 4);
}

TEST(MemberAckPoll, AWaitingMemberAckPollWakesOnPublish) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 8);
    MemberPtr m = join(b.get(), "t", "g", "a");
    publish(b.get(), "t", nullptr, "a");
    ASSERT_EQ(member_poll(m.get()).offsets.size(), 1u);
    auto waiter =
        std::async(std::launch::async, [&] { return member_ack_poll(m.get(), 0, 0, 16, 10000); });
    ASSERT_TRUE(eventually([&] { return group_info(b.get(), "t", "g").committed == 1; }));
    publish(b.get(), "t", nullptr, "b");
    const Polled r = waiter.get();
    EXPECT_EQ(r.st, MQ_OK);
    EXPECT_EQ(r.payloads, std::vector<std::string>{"b"});
}

}  // namespace
