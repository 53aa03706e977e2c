// Share groups (mq.h mq_group_options.share, mq_share_settle; SPEC rule 16): what the
// conformance scenarios cannot show with one thread — several consumers racing on one
// partition (nothing lost, nothing settled twice, key-shared order held), waits that end on a
// settlement, the frontier holding back-pressure, and the group's life with retention, seek,
// copying polls and the handles that refuse it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mq_test_util.h"
#include "token_probe.h"
#include "util/cancel.h"

namespace {

using namespace mqtest;

BrokerPtr share_broker(int32_t mode, int64_t capacity, uint32_t max_acquired = 0,
                       ManualClock *clock = nullptr, int64_t ack_timeout_ms = 30000,
                       int32_t retention = MQ_RETAIN_UNTIL_ACKED) {
    BrokerPtr b = new_broker(clock);
    mq_topic_config c = topic_config(1, capacity);
    c.ack_timeout_ms = ack_timeout_ms;
    c.retention = retention;
    EXPECT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK) << mq_last_error();
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.share = mode;
    o.max_acquired = max_acquired;
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "w", &o), MQ_OK) << mq_last_error();
    return b;
}

mq_status settle(mq_broker *b, const mq_message &m, int32_t action, int64_t delay_ms = 0) {
    return mq_share_settle(b, "t", "w", m.partition, m.offset, m.delivery_count, action, delay_ms);
}

// Several workers poll one partition, each settling at random: accept, release, reject or a
// crash (the message is abandoned, its lock runs out). Every message ends accepted or rejected
// exactly once, no settlement of a stale acquisition succeeds, and with MQ_SHARE_KEY the
// messages of a key are accepted in offset order.
void race(int32_t mode) {
    constexpr int kMessages = 3000, kWorkers = 8, kKeys = 7;
    ManualClock clock;  // locks run out when the test moves the clock
    auto b = share_broker(mode, 256, 64, &clock, 100);
    std::mutex mu;
    std::map<int64_t, int> settled;                      // offset -> accepts + rejects
    std::map<std::string, std::vector<int64_t>> by_key;  // key -> accepted offsets in order
    std::atomic<int> done{0};
    std::atomic<int64_t> stale_ok{0};
    std::thread publisher([&] {
        for (int i = 0; i < kMessages; i++) {
            const std::string key = "k" + std::to_string(i % kKeys);
            publish(b.get(), "t", key.c_str(), std::to_string(i), MQ_WAIT_FOREVER);
        }
    });
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; w++) {
        workers.emplace_back([&, w] {
            std::mt19937 rng(1234 + w);
            std::vector<mq_message> abandoned;
            // The copying poll: another worker may settle a message whose lock ran out here,
            // and with it the group's frontier passes the message and its view ends (mq.h,
            // share groups); a copy made under the partition's lock outlives that.
            alignas(8) unsigned char buf[4096];
            while (done.load() < kMessages) {
                mq_message msgs[8];
                std::string keys[8];
                size_t n = 0;
                const mq_status st = mq_group_poll_copy(b.get(), "t", "w", 0, buf, sizeof buf, 8, 5,
                                                        nullptr, &n, nullptr);
                for (size_t i = 0; i < n; i++) {
                    mq_copied_message c;
                    std::memcpy(&c, buf + sizeof(mq_copy_header) + i * sizeof c, sizeof c);
                    msgs[i] = mq_message{};
                    msgs[i].partition = c.partition;
                    msgs[i].offset = c.offset;
                    msgs[i].delivery_count = c.delivery_count;
                    keys[i].assign(reinterpret_cast<const char *>(buf + c.key_at), c.key_len);
                }
                if (st == MQ_TIMEOUT) {
                    clock.advance_ms(200);  // every lock runs out: abandoned ones too
                    for (const mq_message &m : abandoned) {
                        // A crashed worker's late settlement must be refused once its lock
                        // ran out and someone else may hold the message.
                        if (settle(b.get(), m, MQ_SETTLE_ACCEPT) == MQ_OK) stale_ok++;
                    }
                    abandoned.clear();
                    continue;
                }
                ASSERT_EQ(st, MQ_OK) << mq_last_error();
                for (size_t i = 0; i < n; i++) {
                    const mq_message &m = msgs[i];  // offset, partition, delivery count only
                    const std::string &key = keys[i];
                    const int r = static_cast<int>(rng() % 10);
                    if (r == 0) {
                        const mq_status s = settle(b.get(), m, MQ_SETTLE_RELEASE);
                        // Refused only when its lock ran out (another worker moved the clock).
                        ASSERT_TRUE(s == MQ_OK || s == MQ_ERR_NOT_IN_FLIGHT) << mq_last_error();
                        continue;
                    }
                    if (r == 1 && m.delivery_count < 3) {  // crash: keep the view, settle later
                        abandoned.push_back(m);
                        continue;
                    }
                    const int32_t action = r == 2 ? MQ_SETTLE_REJECT : MQ_SETTLE_ACCEPT;
                    // Recorded under the same lock as the settlement, so the order of
                    // accepts per key is the order in which they succeeded.
                    std::lock_guard lk(mu);
                    const mq_status s = settle(b.get(), m, action);
                    if (s == MQ_ERR_NOT_IN_FLIGHT) continue;  // our lock ran out meanwhile
                    ASSERT_EQ(s, MQ_OK) << mq_last_error();
                    settled[m.offset]++;
                    if (action == MQ_SETTLE_ACCEPT) by_key[key].push_back(m.offset);
                    done++;
                }
            }
        });
    }
    publisher.join();
    for (auto &t : workers) t.join();
    EXPECT_EQ(stale_ok.load(), 0);
    ASSERT_EQ(settled.size(), static_cast<size_t>(kMessages));
    for (const auto &[offset, times] : settled) EXPECT_EQ(times, 1) << "offset " << offset;
    const mq_group_info gi = group_info(b.get(), "t", "w");
    EXPECT_EQ(gi.committed, kMessages);
    EXPECT_EQ(gi.acquired, 0);
    if (mode == MQ_SHARE_KEY) {
        for (const auto &[key, offsets] : by_key) {
            EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end())) << "key " << key;
        }
    }
}

TEST(ShareGroups, RacingWorkersSettleEveryMessageOnce) { race(MQ_SHARE_ALL); }

TEST(ShareGroups, KeySharedRacingWorkersKeepPerKeyOrder) { race(MQ_SHARE_KEY); }

TEST(ShareGroups, PollsOfOnePartitionRunSideBySide) {
    auto b = share_broker(MQ_SHARE_ALL, 16);
    publish(b.get(), "t", nullptr, "a");
    publish(b.get(), "t", nullptr, "b");
    const auto first = poll(b.get(), "t", "w", 0, 1);
    const auto second = poll(b.get(), "t", "w", 0, 1);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(payload_of(first[0]), "a");
    EXPECT_EQ(payload_of(second[0]), "b");
    // The second consumer finishes first: its message is done, the first's still holds the log.
    EXPECT_EQ(settle(b.get(), second[0], MQ_SETTLE_ACCEPT), MQ_OK) << mq_last_error();
    EXPECT_EQ(group_info(b.get(), "t", "w").committed, 0);
    EXPECT_EQ(partition_info(b.get(), "t").backlog, 2);
    EXPECT_EQ(settle(b.get(), first[0], MQ_SETTLE_ACCEPT), MQ_OK) << mq_last_error();
    EXPECT_EQ(group_info(b.get(), "t", "w").committed, 2);
    EXPECT_EQ(partition_info(b.get(), "t").backlog, 0);
}

TEST(ShareGroups, OldestUnsettledHoldsBackPressure) {
    auto b = share_broker(MQ_SHARE_ALL, 4);
    for (int i = 0; i < 4; i++) publish(b.get(), "t", nullptr, std::to_string(i));
    auto ms = poll(b.get(), "t", "w", 0, 4);
    ASSERT_EQ(ms.size(), 4u);
    for (size_t i = 1; i < 4; i++) ASSERT_EQ(settle(b.get(), ms[i], MQ_SETTLE_ACCEPT), MQ_OK);
    EXPECT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, nullptr, 0, MQ_NO_WAIT, nullptr,
                               nullptr, nullptr),
              MQ_FULL);
    // A publisher waiting for room wakes when the oldest is accepted.
    std::atomic<int> st{-1};
    std::thread p([&] {
        st = mq_topic_publish(b.get(), "t", nullptr, 0, "x", 1, nullptr, 0, 10000, nullptr, nullptr,
                              nullptr);
    });
    ASSERT_TRUE(eventually([&] { return partition_info(b.get(), "t").producer_waits == 1; }))
        << partition_info(b.get(), "t").producer_waits;
    ASSERT_EQ(settle(b.get(), ms[0], MQ_SETTLE_ACCEPT), MQ_OK) << mq_last_error();
    p.join();
    EXPECT_EQ(st.load(), MQ_OK);
}

// A poll waiting at max_acquired (or, key-shared, behind a key) is woken by every settlement
// that frees what it waits for: accept, reject and ack as well as release.
void settlement_wakes_waiting_poll(int32_t mode, int action) {
    SCOPED_TRACE(testing::Message() << "mode " << mode << " action " << action);
    auto b = share_broker(mode, 16, mode == MQ_SHARE_KEY ? 0 : 1);
    publish(b.get(), "t", "k", "0");
    publish(b.get(), "t", "k", "1");
    auto held = poll(b.get(), "t", "w", 0, 10);
    ASSERT_EQ(held.size(), 1u);  // the limit (or the key), not max
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    std::vector<mq_message> got(4);
    std::atomic<int> st{-1};
    size_t n = 0;
    const auto start = std::chrono::steady_clock::now();
    std::thread waiter([&] {
        st = mq_group_poll(b.get(), "t", "w", 0, got.data(), sizeof got[0], got.size(), 20000, c,
                           &n);
    });
    // The token is taken inside the partition's poll, under its lock: from then on the poll
    // either finds the freed slot or waits for the wake-up the settlement must send.
    ASSERT_TRUE(eventually([&] { return token_in_use(c); }));
    const mq_status s = action < 0 ? mq_group_ack(b.get(), "t", "w", 0, held[0].offset)
                                   : settle(b.get(), held[0], action);
    ASSERT_EQ(s, MQ_OK) << mq_last_error();
    waiter.join();
    mq_cancel_free(c);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
        << "the waiting poll slept through the settlement";
    ASSERT_EQ(st.load(), MQ_OK) << mq_last_error();
    ASSERT_GE(n, 1u);
    EXPECT_EQ(payload_of(got[0]), action == MQ_SETTLE_RELEASE ? "0" : "1");
}

TEST(ShareGroups, ASettlementWakesAPollWaitingAtMaxAcquired) {
    for (int action : {int{MQ_SETTLE_ACCEPT}, int{MQ_SETTLE_RELEASE}, int{MQ_SETTLE_REJECT}, -1}) {
        settlement_wakes_waiting_poll(MQ_SHARE_ALL, action);
    }
}

TEST(ShareGroups, ASettlementWakesAPollWaitingBehindItsKey) {
    for (int action : {int{MQ_SETTLE_ACCEPT}, int{MQ_SETTLE_RELEASE}, int{MQ_SETTLE_REJECT}, -1}) {
        settlement_wakes_waiting_poll(MQ_SHARE_KEY, action);
    }
}

TEST(ShareGroups, BlockingPollWakesForAReleasedMessage) {
    auto b = share_broker(MQ_SHARE_ALL, 16);
    publish(b.get(), "t", nullptr, "only");
    auto held = poll(b.get(), "t", "w", 0, 1);
    ASSERT_EQ(held.size(), 1u);
    mq_message got{};
    size_t n = 0;
    std::atomic<int> st{-1};
    std::thread waiter(
        [&] { st = mq_group_poll(b.get(), "t", "w", 0, &got, sizeof got, 1, 10000, nullptr, &n); });
    ASSERT_EQ(settle(b.get(), held[0], MQ_SETTLE_RELEASE), MQ_OK) << mq_last_error();
    waiter.join();
    ASSERT_EQ(st.load(), MQ_OK) << mq_last_error();
    EXPECT_EQ(payload_of(got), "only");
    EXPECT_EQ(got.delivery_count, 2u);
}

TEST(ShareGroups, DroppedMessagesLeaveTheShareStateAndAreReportedLost) {
    auto b = share_broker(MQ_SHARE_ALL, 3, 0, nullptr, 30000, MQ_RETAIN_BOUNDED);
    publish(b.get(), "t", nullptr, "0");
    publish(b.get(), "t", nullptr, "1");
    auto held = poll(b.get(), "t", "w", 0, 1);
    ASSERT_EQ(held.size(), 1u);
    for (int i = 2; i < 6; i++) publish(b.get(), "t", nullptr, std::to_string(i));
    // 0..2 were dropped, the acquired one among them: it can no longer be settled.
    EXPECT_EQ(settle(b.get(), held[0], MQ_SETTLE_ACCEPT), MQ_ERR_NOT_IN_FLIGHT);
    const mq_group_info gi = group_info(b.get(), "t", "w");
    EXPECT_EQ(gi.committed, 3);
    EXPECT_EQ(gi.acquired, 0);
    EXPECT_EQ(gi.lost, 3);
    auto next = poll(b.get(), "t", "w", 0, 10);
    ASSERT_EQ(next.size(), 3u);
    EXPECT_EQ(payload_of(next[0]), "3");
    EXPECT_EQ(next[0].lost, 3);
}

TEST(ShareGroups, ADropCountsOnlyUnsettledMessagesAndMovesTheFrontierPastSettledOnes) {
    auto b = share_broker(MQ_SHARE_ALL, 3, 0, nullptr, 30000, MQ_RETAIN_BOUNDED);
    for (int i = 0; i < 3; i++) publish(b.get(), "t", nullptr, std::to_string(i));
    auto held = poll(b.get(), "t", "w", 0, 3);
    ASSERT_EQ(held.size(), 3u);
    ASSERT_EQ(settle(b.get(), held[1], MQ_SETTLE_ACCEPT), MQ_OK) << mq_last_error();
    publish(b.get(), "t", nullptr, "3");  // drops 0, which was unsettled; 1 was accepted
    const mq_group_info gi = group_info(b.get(), "t", "w");
    EXPECT_EQ(gi.committed, 2);  // the oldest unsettled, not the accepted 1
    EXPECT_EQ(gi.lost, 1);
    EXPECT_EQ(gi.acquired, 1);
    EXPECT_EQ(partition_info(b.get(), "t").start, 2);  // the accepted message is not retained
    EXPECT_EQ(settle(b.get(), held[2], MQ_SETTLE_ACCEPT), MQ_OK) << mq_last_error();
}

TEST(ShareGroups, SeekForgetsAcquisitions) {
    auto b = share_broker(MQ_SHARE_ALL, 16);
    for (int i = 0; i < 3; i++) publish(b.get(), "t", nullptr, std::to_string(i));
    auto held = poll(b.get(), "t", "w", 0, 3);
    ASSERT_EQ(held.size(), 3u);
    ASSERT_EQ(mq_group_seek(b.get(), "t", "w", 0, 1), MQ_OK) << mq_last_error();
    EXPECT_EQ(settle(b.get(), held[1], MQ_SETTLE_ACCEPT), MQ_ERR_NOT_IN_FLIGHT);
    auto again = poll(b.get(), "t", "w", 0, 3);
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(payload_of(again[0]), "1");
    EXPECT_EQ(again[0].delivery_count, 1u);  // counts start over, as an ordered group's do
}

TEST(ShareGroups, CopyingPollAcquiresOnlyWhatFits) {
    auto b = share_broker(MQ_SHARE_ALL, 16);
    publish(b.get(), "t", nullptr, std::string(40, 'a'));
    publish(b.get(), "t", nullptr, std::string(40, 'b'));
    std::vector<unsigned char> buf(160);
    size_t n = 0, needed = 0;
    mq_status st = mq_group_poll_copy(b.get(), "t", "w", 0, buf.data(), buf.size(), 2, MQ_NO_WAIT,
                                      nullptr, &n, &needed);
    ASSERT_EQ(st, MQ_OK) << mq_last_error();
    ASSERT_EQ(n, 1u);
    // The one that did not fit was not acquired: the next poll gets it.
    const mq_group_info gi = group_info(b.get(), "t", "w");
    EXPECT_EQ(gi.acquired, 1);
    EXPECT_EQ(gi.available, 1);
}

TEST(ShareGroups, MembersAndPushSubscriptionsRefuseAShareGroup) {
    auto b = share_broker(MQ_SHARE_ALL, 16);
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b.get(), "t", "w", nullptr, &m), MQ_ERR_INVALID);
    EXPECT_NE(std::strstr(mq_last_error(), "share group"), nullptr) << mq_last_error();
    EXPECT_EQ(m, nullptr);
    mq_subscription *s = nullptr;
    auto handler = [](void *, const mq_message *) -> int { return 0; };
    EXPECT_EQ(mq_subscription_open(b.get(), "t", "w", nullptr, handler, nullptr, nullptr, &s),
              MQ_ERR_INVALID);
    EXPECT_EQ(s, nullptr);
}

TEST(ShareGroups, OptionsAreChecked) {
    BrokerPtr b = new_broker();
    mq_topic_config c = topic_config(1, 16);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    EXPECT_EQ(o.share, MQ_SHARE_NONE);
    EXPECT_EQ(o.max_acquired, 0u);
    o.share = 3;
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", &o), MQ_ERR_INVALID);
    o.share = MQ_SHARE_KEY;
    o.max_acquired = 1000001;
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", &o), MQ_ERR_INVALID);
    o.max_acquired = 1000000;
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", &o), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_share_settle(b.get(), "t", "g", 0, 0, 1, 7, 0), MQ_ERR_INVALID);
    EXPECT_EQ(mq_share_settle(b.get(), "t", "g", 0, 0, 1, MQ_SETTLE_RELEASE, -1), MQ_ERR_INVALID);
    EXPECT_EQ(mq_share_settle(b.get(), "t", "g", 3, 0, 1, MQ_SETTLE_ACCEPT, 0), MQ_ERR_PARTITION);
    EXPECT_EQ(mq_share_settle(nullptr, "t", "g", 0, 0, 1, MQ_SETTLE_ACCEPT, 0), MQ_ERR_INVALID);
    // A caller compiled against 1.5's smaller options gets an ordered group.
    mq_group_options old;
    mq_group_options_init(&old, offsetof(mq_group_options, share));
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "old", &old), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_share_settle(b.get(), "t", "old", 0, 0, 1, MQ_SETTLE_ACCEPT, 0), MQ_ERR_INVALID);
}

}  // namespace
