// Churn without growth (mq.h: "Churn does not grow memory"): subscribe/unsubscribe, member
// join/leave, push subscription open/close and topic create/delete, repeated with traffic
// flowing, leave the live groups, group-list snapshots, topic tables and topics where they
// were; and the reclaimer frees nothing a call inside the gate could still see.
//
// The live-object counts are the library's own (every constructor and destructor counts). With
// 1.0's "kept until the broker goes" each cycle left a group and a snapshot behind, which the
// first test's bound catches after a few cycles. Under LeakSanitizer (the ASan build) a leak
// at the broker's end fails the run as well.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/broker.h"
#include "util/call_gate.h"
#include "util/cancel.h"
#include "core/cursor.h"
#include "mq.h"
#include "mq_test_util.h"
#include "token_probe.h"
#include "util/reclaim.h"
#include "core/topic.h"
#include "core/topic_table.h"

namespace {

using mqtest::eventually;

using mqtest::BrokerPtr;
using mqtest::token_in_use;

struct Live {
    int64_t groups, snapshots, topics, tables;
    static Live now() {
        return {mq::Group::alive_for_testing(), mq::Topic::snapshots_alive_for_testing(),
                mq::Topic::alive_for_testing(), mq::TopicTable::alive_for_testing()};
    }
};

// What may be waiting for its grace period at any time: a few changes' worth.
constexpr int64_t kSlack = 8;

bool within(const Live &base, const Live &now) {
    return now.groups <= base.groups + kSlack && now.snapshots <= base.snapshots + kSlack &&
           now.topics <= base.topics + kSlack && now.tables <= base.tables + kSlack;
}

// A reader preempted inside a call holds the grace period back (on a loaded machine for
// milliseconds, while thousands of changes pass): what waits must go once it has moved on.
// Polls the reclaimer until then, with a limit that only ends a leak's wait.
Live settled(mq_broker *b, const Live &base) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    Live now = Live::now();
    while (!within(base, now) && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
        b->collect_for_testing();
        now = Live::now();
    }
    return now;
}

void expect_flat(const Live &base, const Live &now, int cycle) {
    EXPECT_LE(now.groups, base.groups + kSlack) << "after cycle " << cycle;
    EXPECT_LE(now.snapshots, base.snapshots + kSlack) << "after cycle " << cycle;
    EXPECT_LE(now.topics, base.topics + kSlack) << "after cycle " << cycle;
    EXPECT_LE(now.tables, base.tables + kSlack) << "after cycle " << cycle;
}

void create(mq_broker *b, const char *name, int32_t partitions = 2, int64_t capacity = 64) {
    auto cfg = mqtest::topic_config(partitions, capacity);
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

int ack_handler(void *, const mq_message *) { return 0; }

// The short version of the churn soak (bench/churn_soak.c): each kind of churn a few thousand
// times while a publisher and a poller keep traffic flowing on a topic that stays.
TEST(Churn, EveryKindOfChurnLeavesLiveObjectCountsFlat) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "steady");
    ASSERT_EQ(mq_group_subscribe(b.get(), "steady", "reader", nullptr), MQ_OK);
    create(b.get(), "churn");
    std::atomic<bool> stop{false};
    std::thread traffic([&] {
        mq_message m[16];
        while (!stop) {
            mq_topic_publish(b.get(), "steady", nullptr, 0, "x", 1, nullptr, 0, 0, nullptr, nullptr,
                             nullptr);
            for (int32_t p = 0; p < 2; p++) {
                size_t n = 0;
                if (mq_group_poll(b.get(), "steady", "reader", p, m, sizeof m[0], 16, 0, nullptr,
                                  &n) == MQ_OK)
                    mq_group_ack(b.get(), "steady", "reader", p, m[n - 1].offset);
            }
        }
    });
    const Live base = Live::now();
    constexpr int kCycles = 2000;
    for (int i = 0; i < kCycles; i++) {
        const std::string group = "g" + std::to_string(i % 7);  // names come back, and new ones
        ASSERT_EQ(mq_group_subscribe(b.get(), "churn", group.c_str(), nullptr), MQ_OK);
        ASSERT_EQ(mq_group_unsubscribe(b.get(), "churn", group.c_str()), MQ_OK);

        mq_member *m = nullptr;
        ASSERT_EQ(mq_member_join(b.get(), "churn", "members", nullptr, &m), MQ_OK);
        ASSERT_EQ(mq_member_close(m), MQ_OK);
        ASSERT_EQ(mq_group_unsubscribe(b.get(), "churn", "members"), MQ_OK);

        if (i % 4 == 0) {  // threads are slow to start: a quarter of the cycles
            mq_subscription *s = nullptr;
            ASSERT_EQ(mq_subscription_open(b.get(), "churn", "push", nullptr, ack_handler, nullptr,
                                           nullptr, &s),
                      MQ_OK);
            ASSERT_EQ(mq_subscription_close(s), MQ_OK);
            ASSERT_EQ(mq_group_unsubscribe(b.get(), "churn", "push"), MQ_OK);
        }

        const std::string topic = "t" + std::to_string(i);  // every name new: tombstones pile up
        create(b.get(), topic.c_str());
        ASSERT_EQ(mq_group_subscribe(b.get(), topic.c_str(), "g", nullptr), MQ_OK);
        ASSERT_EQ(mq_topic_publish(b.get(), topic.c_str(), nullptr, 0, "m", 1, nullptr, 0, 0,
                                   nullptr, nullptr, nullptr),
                  MQ_OK);
        ASSERT_EQ(mq_topic_delete(b.get(), topic.c_str()), MQ_OK);
        if (i % 100 == 99) {
            expect_flat(base, settled(b.get(), base), i);
            if (HasFailure()) break;
        }
    }
    stop = true;
    traffic.join();
    expect_flat(base, settled(b.get(), base), kCycles);
    // The steady topic still works: its group and snapshot were never reclaimed from under it.
    EXPECT_EQ(mq_topic_publish(b.get(), "steady", nullptr, 0, "y", 1, nullptr, 0, 0, nullptr,
                               nullptr, nullptr),
              MQ_OK);
}

// An idle consumer in a forever poll and a publisher waiting forever for room are parked while
// they sleep (call_gate.h): churn elsewhere is reclaimed meanwhile, and each still finishes on
// the topic it pinned, the poll's deleted from under it, the publish's room made by an
// unsubscribe. Before parking, each held its epoch's parity and every cycle's group, snapshot
// and topic waited for it.
TEST(Churn, CallsBlockedForeverHoldNoReclamationBack) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "idle", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b.get(), "idle", "g", nullptr), MQ_OK);
    create(b.get(), "full", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b.get(), "full", "slow", nullptr), MQ_OK);
    ASSERT_EQ(mq_topic_publish(b.get(), "full", nullptr, 0, "m", 1, nullptr, 0, 0, nullptr, nullptr,
                               nullptr),
              MQ_OK);
    create(b.get(), "churn");

    // The tokens are never triggered: in use, they show each call has reached its wait.
    mq_cancel *poll_token = nullptr, *publish_token = nullptr;
    ASSERT_EQ(mq_cancel_new(&poll_token), MQ_OK);
    ASSERT_EQ(mq_cancel_new(&publish_token), MQ_OK);
    std::atomic<int> polled{-1}, published{-1};
    std::thread poller([&] {
        mq_message m[1];
        size_t n = 0;
        polled = mq_group_poll(b.get(), "idle", "g", 0, m, sizeof m[0], 1, MQ_WAIT_FOREVER,
                               poll_token, &n);
    });
    std::thread publisher([&] {
        published = mq_topic_publish(b.get(), "full", nullptr, 0, "n", 1, nullptr, 0,
                                     MQ_WAIT_FOREVER, publish_token, nullptr, nullptr);
    });
    ASSERT_TRUE(
        eventually([&] { return token_in_use(poll_token) && token_in_use(publish_token); }));

    const Live base = Live::now();
    for (int i = 0; i < 300; i++) {
        ASSERT_EQ(mq_group_subscribe(b.get(), "churn", "c", nullptr), MQ_OK);
        ASSERT_EQ(mq_group_unsubscribe(b.get(), "churn", "c"), MQ_OK);
        const std::string topic = "t" + std::to_string(i);
        create(b.get(), topic.c_str());
        ASSERT_EQ(mq_topic_delete(b.get(), topic.c_str()), MQ_OK);
    }
    expect_flat(base, settled(b.get(), base), 300);
    EXPECT_TRUE(eventually([&] { return b->gate.parked() == 2; }));  // asleep all along

    ASSERT_EQ(mq_topic_delete(b.get(), "idle"), MQ_OK);
    poller.join();
    EXPECT_EQ(polled.load(), MQ_ERR_NO_TOPIC);
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "full", "slow"), MQ_OK);  // nobody holds the backlog
    publisher.join();
    EXPECT_EQ(published.load(), MQ_OK);
    EXPECT_EQ(b->gate.parked(), 0);
    mq_cancel_free(poll_token);
    mq_cancel_free(publish_token);
    // The deleted topic went once the poll released its pin, and its group with it.
    const Live end = settled(
        b.get(), Live{base.groups - 2, base.snapshots - 1, base.topics - 1, base.tables - 1});
    EXPECT_LE(end.topics, base.topics - 1 + kSlack);
}

// A parked call is still inside for mq_broker_free: it returns only once the calls its close
// woke have left the broker (a member keeps the broker's memory, so the gate can be read after).
TEST(Churn, BrokerFreeWaitsForParkedCalls) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    mq_member *keep = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "m", nullptr, &keep), MQ_OK);
    constexpr int kPollers = 4;
    std::vector<std::thread> pollers;
    for (int i = 0; i < kPollers; i++) {
        pollers.emplace_back([broker = b.get()] {
            mq_message m[1];
            size_t n = 0;
            EXPECT_EQ(
                mq_group_poll(broker, "t", "g", 0, m, sizeof m[0], 1, MQ_WAIT_FOREVER, nullptr, &n),
                MQ_CLOSED);
        });
    }
    ASSERT_TRUE(eventually([&] { return b->gate.parked() == kPollers; }));
    mq_broker *raw = b.release();
    mq_broker_free(raw);
    EXPECT_EQ(raw->gate.inside(), 0);
    for (std::thread &t : pollers) t.join();
    ASSERT_EQ(mq_member_close(keep), MQ_OK);
}

// Everything goes with the broker, including what still waited for a grace period.
TEST(Churn, TheBrokersEndFreesEverything) {
    const Live before = Live::now();
    {
        BrokerPtr b = mqtest::new_broker();
        create(b.get(), "dlq");
        create(b.get(), "t");
        mq_group_options go;
        mq_group_options_init(&go, sizeof go);
        go.max_deliveries = 2;
        go.dead_letter_topic = "dlq";
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", &go), MQ_OK);
        ASSERT_EQ(mq_topic_delete(b.get(), "dlq"), MQ_OK);  // its group still holds it
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "h", nullptr), MQ_OK);
        ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "h"), MQ_OK);
        mq_member *m = nullptr;
        ASSERT_EQ(mq_member_join(b.get(), "t", "live", nullptr, &m), MQ_OK);
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        mq_broker_free(b.release());
        EXPECT_GT(Live::now().topics, before.topics);  // the member keeps the broker's memory
        ASSERT_EQ(mq_member_close(m), MQ_OK);
    }
    const Live after = Live::now();
    EXPECT_EQ(after.groups, before.groups);
    EXPECT_EQ(after.snapshots, before.snapshots);
    EXPECT_EQ(after.topics, before.topics);
    EXPECT_EQ(after.tables, before.tables);
}

// The grace period itself: what is retired while a call is inside stays until that call has
// left, whatever calls come and go meanwhile; a call that entered after the retirement does
// not hold it back.
TEST(Reclaimer, FreesOnlyOnceEveryCallThatCouldSeeItHasLeft) {
    mq::CallGate gate;
    mq::Reclaimer reclaimer(gate);
    static std::atomic<int> freed{0};
    freed = 0;
    auto count_free = [](void *) { freed++; };

    auto early = std::make_unique<mq::GateScope>(gate);  // may have seen the object
    reclaimer.reserve(1);
    reclaimer.retire(nullptr, count_free);
    for (int i = 0; i < 10; i++) {
        mq::GateScope passing(gate);  // calls entering and leaving meanwhile
        reclaimer.collect();
    }
    EXPECT_EQ(freed.load(), 0);
    auto late = std::make_unique<mq::GateScope>(gate);  // entered after the retirement
    early.reset();
    reclaimer.collect();
    reclaimer.collect();
    EXPECT_EQ(freed.load(), 1);
    EXPECT_EQ(reclaimer.pending(), 0u);
    late.reset();

    // Retired from inside a call: freed once that call, too, has left.
    {
        mq::GateScope self(gate);
        reclaimer.reserve(1);
        reclaimer.retire(nullptr, count_free);
        for (int i = 0; i < 4; i++) reclaimer.collect();
        EXPECT_EQ(freed.load(), 1);
    }
    reclaimer.collect();
    EXPECT_EQ(freed.load(), 2);
}

// Many threads enter and leave while objects are retired and collected: each is freed once, and
// only after the readers that entered before its retirement left (each reader checks that the
// object it found is alive while it is inside). TSan checks the freeing is ordered after the
// readers' accesses.
TEST(Reclaimer, ReadersNeverSeeAFreedObject) {
    struct Obj {
        std::atomic<int> alive{1};
        int value = 42;
    };
    mq::CallGate gate;
    mq::Reclaimer reclaimer(gate);
    std::atomic<Obj *> current{new Obj};
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; r++) {
        readers.emplace_back([&] {
            while (!stop) {
                mq::GateScope scope(gate);
                Obj *o = current.load(std::memory_order_acquire);
                for (int k = 0; k < 4; k++) {
                    if (o->alive.load(std::memory_order_relaxed) != 1 || o->value != 42) bad++;
                }
            }
        });
    }
    for (int i = 0; i < 5000; i++) {
        reclaimer.reserve(1);
        Obj *old = current.exchange(new Obj, std::memory_order_acq_rel);
        reclaimer.retire(old, [](void *p) {
            auto *o = static_cast<Obj *>(p);
            o->alive.store(0, std::memory_order_relaxed);
            o->value = 0;
            delete o;
        });
        reclaimer.collect();
    }
    stop = true;
    for (auto &t : readers) t.join();
    reclaimer.free_all();
    delete current.load();
    EXPECT_EQ(bad.load(), 0);
}

}  // namespace
