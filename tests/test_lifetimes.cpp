// Lifetimes (mq.h, "Lifetimes"): handles are released in any order, from any thread, also from
// inside the library's callbacks, and none of it can crash, hang or leak.
//
// - Every order of releasing a broker, two push subscriptions (one a group member, one with a
//   partition list), two group members and a cancel token, with a thread in mq_group_poll and
//   one in mq_member_poll and an asynchronous poll pending (no thread) during the releases:
//   each release does what it says, the pending call completes exactly once (MQ_CLOSED) by the
//   time the broker's free returns, the closed
//   handles answer MQ_CLOSED, user_free runs exactly once, no callback runs after the broker is
//   freed, and the broker's memory goes with the last release.
// - mq_broker_free from a push handler and from a rebalance callback (neither may wait for its
//   own call), and while a handler runs.
// - mq_cancel_free while a call waits with the token.
//
// No sleep synchronises anything. A poller is known to be blocked through internal state (a
// member poll's notifier counts its sleepers; a group poll has registered its cancel token just
// before it takes the partition lock to wait); half the runs release without waiting for that,
// so the poller may be about to block instead (only "about to": a handle is not released before
// the call that uses it has entered the library, as no caller may). Every wakeup used is sticky
// (close, cancel, a rebalance), so both must give the same result.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi/broker.h"
#include "util/call_gate.h"
#include "util/cancel.h"
#include "capi/member.h"
#include "mq.h"
#include "mq_test_util.h"
#include "token_probe.h"

namespace {

using mqtest::eventually;
using mqtest::token_in_use;

using namespace std::chrono_literals;
constexpr auto kHang = 10s;  // far beyond any correct wakeup, even under ThreadSanitizer

// A call on its own thread whose result is awaited with a limit: a hang aborts this test's
// process (its thread cannot be joined) instead of hanging the suite.
class Call {
public:
    template <class F>
    explicit Call(F f) : fut_(std::async(std::launch::async, std::move(f))) {}
    mq_status get() {
        if (fut_.wait_for(kHang) != std::future_status::ready) {
            std::fprintf(stderr, "FAILED: an mq call did not return within %lld ms\n",
                         static_cast<long long>(std::chrono::milliseconds(kHang).count()));
            std::abort();
        }
        return fut_.get();
    }

private:
    std::future<mq_status> fut_;
};

mq_broker *new_broker() {
    mq_broker *b = nullptr;
    EXPECT_EQ(mq_broker_new(nullptr, &b), MQ_OK) << mq_last_error();
    return b;
}

void create_topic(mq_broker *b, const char *name, int32_t partitions, int64_t capacity) {
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = partitions;
    c.capacity = capacity;
    ASSERT_EQ(mq_topic_create(b, name, &c), MQ_OK) << mq_last_error();
}

mq_status publish(mq_broker *b, const char *topic, const char *key, const char *payload) {
    return mq_topic_publish(b, topic, key, key ? std::strlen(key) : 0, payload,
                            std::strlen(payload), nullptr, 0, MQ_NO_WAIT, nullptr, nullptr,
                            nullptr);
}

int64_t committed(mq_broker *b, const char *topic, const char *group, int32_t partition) {
    mq_group_info gi{};
    if (mq_group_get_info(b, topic, group, partition, &gi, sizeof gi) != MQ_OK) return -1;
    return gi.committed;
}

bool member_poll_asleep(mq_member *m) {
    std::lock_guard g(m->state->notifier.mu);
    return m->state->sleeping > 0;
}

// What a push subscription's user data records. `broker_freed` is set once mq_broker_free has
// returned: a handler call after that would be a broken promise.
struct PushUser {
    const std::atomic<bool> *broker_freed = nullptr;
    std::atomic<int> calls{0};
    std::atomic<int> calls_after_free{0};
    std::atomic<int> frees{0};
};
int count_handler(void *user, const mq_message *) {
    auto *u = static_cast<PushUser *>(user);
    if (u->broker_freed->load()) u->calls_after_free++;
    u->calls++;
    return 0;
}
void count_free(void *user) { static_cast<PushUser *>(user)->frees++; }

struct RebalanceUser {
    const std::atomic<bool> *broker_freed = nullptr;
    std::atomic<int> calls{0};
    std::atomic<int> calls_after_free{0};
};
void count_rebalance(void *user, mq_member *, int64_t) {
    auto *u = static_cast<RebalanceUser *>(user);
    if (u->broker_freed->load()) u->calls_after_free++;
    u->calls++;
}

mq_member *join(mq_broker *b, const char *topic, const char *group, const char *id,
                RebalanceUser *r) {
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = id;
    o.on_rebalance = r ? &count_rebalance : nullptr;
    o.on_rebalance_user = r;
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b, topic, group, &o, &m), MQ_OK) << mq_last_error();
    return m;
}

// Marks the member's generation seen, so that its calls are not refused with MQ_REBALANCED.
void fetch_assignment(mq_member *m) {
    int32_t parts[4];
    size_t n = 0;
    EXPECT_EQ(mq_member_get_assignment(m, nullptr, parts, 4, &n), MQ_OK) << mq_last_error();
}

// ---- every order ---------------------------------------------------------------------------

enum Handle { kBroker, kSub1, kSub2, kMember1, kMember2, kCancel, kHandles };
const char *const kNames[] = {"broker", "sub1", "sub2", "member1", "member2", "cancel"};

std::string describe(const std::array<int, kHandles> &order, bool blocked) {
    std::string s = blocked ? "blocked pollers; order:" : "pollers maybe not yet blocked; order:";
    for (int h : order) (s += ' ') += kNames[h];
    return s;
}

// One run: builds the six handles and two pollers, releases the handles in `order`.
void release_in_order(const std::array<int, kHandles> &order, bool wait_until_blocked) {
    SCOPED_TRACE(describe(order, wait_until_blocked));
    const int64_t brokers_before = mq_broker::alive_for_testing();
    std::atomic<bool> freed{false};
    mq_broker *b = new_broker();
    ASSERT_NE(b, nullptr);
    create_topic(b, "t", 2, 8);

    // Two push subscriptions, each handed one message per partition it owns before anything
    // is released, so their loops have run handlers and are back in their polls.
    PushUser u1, u2;
    u1.broker_freed = u2.broker_freed = &freed;
    mq_subscription *s1 = nullptr, *s2 = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "t", "push", nullptr, &count_handler, &u1, &count_free, &s1),
              MQ_OK)
        << mq_last_error();
    mq_subscription_options so;
    mq_subscription_options_init(&so, sizeof so);
    const int32_t one[] = {1};
    so.partitions = one;
    so.partition_count = 1;
    ASSERT_EQ(mq_subscription_open(b, "t", "listed", &so, &count_handler, &u2, &count_free, &s2),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(publish(b, "t", "user-b", "to-0"), MQ_OK);  // Kafka's partition 0 of 2
    ASSERT_EQ(publish(b, "t", "user-a", "to-1"), MQ_OK);  // and 1
    ASSERT_TRUE(eventually([&] {
        return committed(b, "t", "push", 0) == 1 && committed(b, "t", "push", 1) == 1 &&
               committed(b, "t", "listed", 1) == 1;
    }));

    // Groups created now start at the end: nothing for the pollers until the releases.
    ASSERT_EQ(mq_group_subscribe(b, "t", "pull", nullptr), MQ_OK);
    RebalanceUser r1, r2;
    r1.broker_freed = r2.broker_freed = &freed;
    mq_member *m1 = join(b, "t", "crew", "m-1", &r1);
    mq_member *m2 = join(b, "t", "crew", "m-2", &r2);
    ASSERT_TRUE(m1 && m2);
    fetch_assignment(m1);
    fetch_assignment(m2);
    mq_cancel *c = nullptr, *wake_m1 = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    ASSERT_EQ(mq_cancel_new(&wake_m1), MQ_OK);  // not among the six: ends m1's poll for its close

    // P1 waits through the broker handle with the token among the six: only the broker's free
    // ends it. P2 waits through m1, ended by whichever comes first: the broker's free
    // (MQ_CLOSED), m2 leaving (MQ_REBALANCED), or wake_m1 before m1's close (MQ_CANCELLED).
    Call p1([&] {
        mq_message m;
        size_t n = 0;
        return mq_group_poll(b, "t", "pull", 0, &m, sizeof m, 1, MQ_WAIT_FOREVER, c, &n);
    });
    Call p2([&] {
        mq_message m;
        size_t n = 0;
        return mq_member_poll(m1, &m, sizeof m, 1, MQ_WAIT_FOREVER, wake_m1, &n);
    });
    if (wait_until_blocked) {
        ASSERT_TRUE(eventually([&] { return token_in_use(c) && member_poll_asleep(m1); }));
    }
    // P3, an asynchronous poll (no thread), with a token of its own among the six: only the
    // broker's free ends it, and its callback has run exactly once when the free returns.
    mq_cancel *c3 = nullptr;
    ASSERT_EQ(mq_cancel_new(&c3), MQ_OK);
    struct AsyncDone {
        std::atomic<int> calls{0};
        std::atomic<int> status{-1};
        static void fn(void *user, mq_status st) {
            auto *d = static_cast<AsyncDone *>(user);
            d->status = st;
            d->calls++;
        }
    } p3;
    mq_message p3_msg;
    size_t p3_n = 0;
    ASSERT_EQ(mq_group_poll_async(b, "t", "pull", 1, &p3_msg, sizeof p3_msg, 1, MQ_WAIT_FOREVER, c3,
                                  &p3_n, &AsyncDone::fn, &p3),
              MQ_PENDING)
        << mq_last_error();

    bool p2_done = false;
    auto end_p2 = [&](mq_status want) {
        if (p2_done) return;
        p2_done = true;
        EXPECT_EQ(p2.get(), want) << mq_status_name(want) << " wanted";
    };
    bool m1_open = true, m2_open = true, cancel_freed = false;
    for (int h : order) {
        switch (h) {
            case kBroker:
                // P1 must have entered its call: a call made after the free is the caller's use
                // after free. Its token is taken inside the call (its partition's poll), so a
                // token in use says it has entered; the gate's count would not, as other calls
                // (the push loops' polls) enter and leave it too. If the token was freed
                // already, kCancel saw it in use first.
                if (!cancel_freed) ASSERT_TRUE(eventually([&] { return token_in_use(c); }));
                mq_broker_free(b);
                freed = true;
                EXPECT_EQ(p3.calls.load(), 1) << "the pending asynchronous poll was not completed";
                EXPECT_EQ(p3.status.load(), MQ_CLOSED);
                EXPECT_EQ(p1.get(), MQ_CLOSED);
                end_p2(MQ_CLOSED);
                for (mq_member *m : {m1_open ? m1 : nullptr, m2_open ? m2 : nullptr}) {
                    if (!m) continue;
                    // Still valid handles, now closed ones.
                    EXPECT_STREQ(mq_member_id(m), m == m1 ? "m-1" : "m-2");
                    EXPECT_EQ(mq_member_ack(m, 0, 0), MQ_CLOSED);
                    size_t n = 0;
                    EXPECT_EQ(mq_member_get_assignment(m, nullptr, nullptr, 0, &n), MQ_CLOSED);
                }
                break;
            case kSub1:
                EXPECT_EQ(mq_subscription_close(s1), MQ_OK);
                EXPECT_EQ(u1.frees.load(), 1);
                break;
            case kSub2:
                EXPECT_EQ(mq_subscription_close(s2), MQ_OK);
                EXPECT_EQ(u2.frees.load(), 1);
                break;
            case kMember1:
                if (!p2_done) {  // a handle may not be closed while a call uses it
                    mq_cancel_trigger(wake_m1);
                    end_p2(MQ_CANCELLED);
                }
                EXPECT_EQ(mq_member_close(m1), MQ_OK);
                m1_open = false;
                break;
            case kMember2:
                EXPECT_EQ(mq_member_close(m2), MQ_OK);
                m2_open = false;
                if (!freed && m1_open) end_p2(MQ_REBALANCED);
                break;
            case kCancel:
                // P1 may still wait with it. (Not before P1's call has taken it: a token freed
                // before the call that is given it is the caller's use after free.)
                if (!freed) ASSERT_TRUE(eventually([&] { return token_in_use(c); }));
                mq_cancel_free(c);
                cancel_freed = true;
                mq_cancel_free(c3);  // held by P3 while it is pending
                EXPECT_EQ(p3.calls.load(), freed ? 1 : 0);
                break;
        }
    }
    mq_cancel_free(wake_m1);
    EXPECT_EQ(p3.calls.load(), 1);
    EXPECT_EQ(u1.frees.load(), 1);
    EXPECT_EQ(u2.frees.load(), 1);
    EXPECT_EQ(u1.calls.load(), 2);
    EXPECT_EQ(u2.calls.load(), 1);
    EXPECT_EQ(u1.calls_after_free.load() + u2.calls_after_free.load(), 0);
    EXPECT_EQ(r1.calls_after_free.load() + r2.calls_after_free.load(), 0)
        << "a rebalance callback ran after the broker was freed";
    EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before)
        << "the broker's memory did not go with the last release";
}

TEST(Lifetimes, EveryReleaseOrderWithPollersBlocked) {
    std::array<int, kHandles> order{kBroker, kSub1, kSub2, kMember1, kMember2, kCancel};
    int runs = 0;
    do {
        release_in_order(order, true);
        runs++;
        if (HasFailure()) return;  // one failing order is enough to read
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(runs, 720);
}

TEST(Lifetimes, EveryReleaseOrderWithPollersAboutToBlock) {
    std::array<int, kHandles> order{kBroker, kSub1, kSub2, kMember1, kMember2, kCancel};
    int runs = 0;
    do {
        release_in_order(order, false);
        runs++;
        if (HasFailure()) return;
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(runs, 720);
}

// Views point into the log: they stay valid while any handle keeps the broker's memory.
TEST(Lifetimes, MessageViewsOutliveTheBrokerHandle) {
    mq_broker *b = new_broker();
    create_topic(b, "t", 1, 8);
    mq_member *m = join(b, "t", "g", "m", nullptr);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(publish(b, "t", "key", "payload"), MQ_OK);
    mq_message msg{};
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m, &msg, sizeof msg, 1, MQ_NO_WAIT, nullptr, &n), MQ_OK);
    ASSERT_EQ(n, 1u);
    mq_broker_free(b);
    EXPECT_EQ(std::string(static_cast<const char *>(msg.payload), msg.payload_len), "payload");
    EXPECT_EQ(std::string(static_cast<const char *>(msg.key), msg.key_len), "key");
    EXPECT_EQ(mq_member_ack(m, 0, msg.offset), MQ_CLOSED);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// ---- freeing the broker from inside its callbacks ------------------------------------------

struct FreeingHandler {
    mq_broker *b = nullptr;
    std::atomic<int> calls{0};
    std::atomic<bool> freed{false};  // mq_broker_free returned inside the handler
    std::atomic<int> frees{0};
};
int free_broker_handler(void *user, const mq_message *) {
    auto *h = static_cast<FreeingHandler *>(user);
    if (h->calls.fetch_add(1) == 0) {
        mq_broker_free(h->b);
        h->freed = true;
    }
    return 0;
}
void freeing_free(void *user) { static_cast<FreeingHandler *>(user)->frees++; }

// The handler frees the broker on the first of three messages polled in one batch: the free
// returns (it does not wait for the handler's own loop), the rest of the batch is not handed
// to the handler, and the subscription still closes, calling user_free once.
void free_from_handler(const mq_subscription_options *opts) {
    const int64_t brokers_before = mq_broker::alive_for_testing();
    mq_broker *b = new_broker();
    create_topic(b, "t", 1, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    for (const char *p : {"one", "two", "three"}) ASSERT_EQ(publish(b, "t", nullptr, p), MQ_OK);
    FreeingHandler h;
    h.b = b;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g", opts, &free_broker_handler, &h, &freeing_free, &sub),
        MQ_OK)
        << mq_last_error();
    ASSERT_TRUE(eventually([&] { return h.freed.load(); }))
        << "mq_broker_free from a handler did not return";
    EXPECT_EQ(Call([&] { return mq_subscription_close(sub); }).get(), MQ_OK);
    EXPECT_EQ(h.calls.load(), 1) << "a handler ran after the broker was freed";
    EXPECT_EQ(h.frees.load(), 1);
    EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before);
}

TEST(Lifetimes, BrokerFreeFromAPushHandlerOfAGroupMember) { free_from_handler(nullptr); }

TEST(Lifetimes, BrokerFreeFromAPushHandlerWithAPartitionList) {
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    const int32_t zero[] = {0};
    o.partitions = zero;
    o.partition_count = 1;
    free_from_handler(&o);
}

// A handler is running when another thread frees the broker: the free does not wait for it,
// and once it returns the loop hands it nothing more (two more messages were in its batch).
TEST(Lifetimes, BrokerFreeWhileAHandlerRunsEndsItsBatch) {
    struct Blocked {
        std::atomic<int> calls{0};
        std::promise<void> entered;
        std::promise<void> release;
        std::atomic<int> frees{0};
    } blk;
    mq_broker *b = new_broker();
    create_topic(b, "t", 1, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    for (const char *p : {"one", "two", "three"}) ASSERT_EQ(publish(b, "t", nullptr, p), MQ_OK);
    auto handler = [](void *user, const mq_message *) {
        auto *k = static_cast<Blocked *>(user);
        if (k->calls.fetch_add(1) == 0) {
            k->entered.set_value();
            k->release.get_future().wait();
        }
        return 0;
    };
    auto user_free = [](void *user) { static_cast<Blocked *>(user)->frees++; };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "t", "g", nullptr, handler, &blk, user_free, &sub), MQ_OK);
    ASSERT_EQ(blk.entered.get_future().wait_for(kHang), std::future_status::ready);
    Call([&] {
        mq_broker_free(b);
        return MQ_OK;
    }).get();  // returns while the handler is still inside
    EXPECT_EQ(blk.calls.load(), 1);
    blk.release.set_value();
    EXPECT_EQ(Call([&] { return mq_subscription_close(sub); }).get(), MQ_OK);
    EXPECT_EQ(blk.calls.load(), 1) << "the rest of the batch was handed out after the free";
    EXPECT_EQ(blk.frees.load(), 1);
}

struct FreeingRebalance {
    mq_broker *b = nullptr;
    int64_t at_generation = 0;
    std::atomic<bool> freed{false};
};
void free_broker_on_rebalance(void *user, mq_member *, int64_t generation) {
    auto *f = static_cast<FreeingRebalance *>(user);
    if (generation == f->at_generation && !f->freed.exchange(true)) mq_broker_free(f->b);
}

// A rebalance callback runs on the thread of the call that caused the rebalance (here
// mq_member_join, a call made through the broker handle): freeing the broker from it must not
// wait for that call. Both the joiner's own callback and another member's.
TEST(Lifetimes, BrokerFreeFromARebalanceCallback) {
    for (int64_t at : {1, 2}) {  // 1: the first member's own join; 2: the second's join
        SCOPED_TRACE("freed at generation " + std::to_string(at));
        const int64_t brokers_before = mq_broker::alive_for_testing();
        mq_broker *b = new_broker();
        create_topic(b, "t", 2, 8);
        FreeingRebalance f;
        f.b = b;
        f.at_generation = at;
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.member_id = "first";
        o.on_rebalance = &free_broker_on_rebalance;
        o.on_rebalance_user = &f;
        mq_member *first = nullptr, *second = nullptr;
        EXPECT_EQ(Call([&] { return mq_member_join(b, "t", "g", &o, &first); }).get(), MQ_OK);
        ASSERT_NE(first, nullptr);
        if (at == 2) {
            mq_member_options o2;
            mq_member_options_init(&o2, sizeof o2);
            o2.member_id = "second";
            EXPECT_EQ(Call([&] { return mq_member_join(b, "t", "g", &o2, &second); }).get(), MQ_OK);
        }
        ASSERT_TRUE(f.freed.load());
        EXPECT_STREQ(mq_member_id(first), "first");
        size_t n = 0;
        EXPECT_EQ(mq_member_get_assignment(first, nullptr, nullptr, 0, &n), MQ_CLOSED);
        if (second) EXPECT_EQ(Call([&] { return mq_member_close(second); }).get(), MQ_OK);
        EXPECT_EQ(Call([&] { return mq_member_close(first); }).get(), MQ_OK);
        EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before);
    }
}

// No lock is held while a rebalance callback runs: it may join another member to the topic
// and open a push subscription on it (both take the topic's group lock).
TEST(Lifetimes, RebalanceCallbackMayJoinAndSubscribe) {
    struct Reentrant {
        mq_broker *b = nullptr;
        std::atomic<int> joined{-1}, opened{-1};
        mq_member *other = nullptr;
        mq_subscription *sub = nullptr;
    } r;
    mq_broker *b = new_broker();
    create_topic(b, "t", 2, 8);
    r.b = b;
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.on_rebalance_user = &r;
    o.on_rebalance = [](void *user, mq_member *, int64_t) {
        auto *x = static_cast<Reentrant *>(user);
        if (x->joined.load() != -1) return;
        x->joined = mq_member_join(x->b, "t", "other", nullptr, &x->other);
        x->opened = mq_subscription_open(
            x->b, "t", "third", nullptr, [](void *, const mq_message *) { return 0; }, nullptr,
            nullptr, &x->sub);
    };
    mq_member *m = nullptr;
    EXPECT_EQ(Call([&] { return mq_member_join(b, "t", "g", &o, &m); }).get(), MQ_OK);
    EXPECT_EQ(r.joined.load(), MQ_OK);
    EXPECT_EQ(r.opened.load(), MQ_OK);
    if (r.sub) EXPECT_EQ(mq_subscription_close(r.sub), MQ_OK);
    if (r.other) EXPECT_EQ(mq_member_close(r.other), MQ_OK);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
    mq_broker_free(b);
}

// ---- cancel tokens freed while a call waits with them --------------------------------------

// The call keeps the token alive: it goes on waiting and ends normally (ASan sees any use of
// freed memory).
TEST(Lifetimes, CancelFreedWhileAGroupPollWaits) {
    mq_broker *b = new_broker();
    create_topic(b, "t", 1, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    Call poll([&] {
        mq_message m;
        size_t n = 0;
        const mq_status st = mq_group_poll(b, "t", "g", 0, &m, sizeof m, 1, MQ_WAIT_FOREVER, c, &n);
        return st == MQ_OK && n == 1 ? MQ_OK : (st == MQ_OK ? MQ_ERR_INTERNAL : st);
    });
    ASSERT_TRUE(eventually([&] { return token_in_use(c); }));
    mq_cancel_free(c);
    ASSERT_EQ(publish(b, "t", nullptr, "x"), MQ_OK);
    EXPECT_EQ(poll.get(), MQ_OK);
    mq_broker_free(b);
}

TEST(Lifetimes, CancelFreedWhileAMemberPollWaits) {
    mq_broker *b = new_broker();
    create_topic(b, "t", 2, 8);
    mq_member *m = join(b, "t", "g", "m", nullptr);
    ASSERT_NE(m, nullptr);
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    Call poll([&] {
        mq_message msg;
        size_t n = 0;
        return mq_member_poll(m, &msg, sizeof msg, 1, MQ_WAIT_FOREVER, c, &n);
    });
    ASSERT_TRUE(eventually([&] { return member_poll_asleep(m); }));
    mq_cancel_free(c);
    ASSERT_EQ(publish(b, "t", nullptr, "x"), MQ_OK);
    EXPECT_EQ(poll.get(), MQ_OK);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
    mq_broker_free(b);
}

TEST(Lifetimes, CancelFreedWhileAPublishWaitsForRoom) {
    mq_broker *b = new_broker();
    create_topic(b, "t", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(publish(b, "t", nullptr, "fills"), MQ_OK);
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    Call pub([&] {
        return mq_topic_publish(b, "t", nullptr, 0, "waits", 5, nullptr, 0, MQ_WAIT_FOREVER, c,
                                nullptr, nullptr);
    });
    mq_partition_info pi{};
    ASSERT_TRUE(eventually([&] {  // producer_waits counts a publish that started waiting
        return mq_partition_get_info(b, "t", 0, &pi, sizeof pi) == MQ_OK && pi.producer_waits == 1;
    }));
    mq_cancel_free(c);
    mq_message m;
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b, "t", "g", 0, &m, sizeof m, 1, MQ_NO_WAIT, nullptr, &n), MQ_OK);
    ASSERT_EQ(mq_group_ack(b, "t", "g", 0, m.offset), MQ_OK);
    EXPECT_EQ(pub.get(), MQ_OK);
    mq_broker_free(b);
}

// ---- the call gate ----------------------------------------------------------------------------

// mq_broker_free frees the broker (and its gate) as soon as the drain returns, so a call leaving
// while the gate drains must not touch the gate after its decrement (it used to signal the
// gate's own condition variable then: a use after free that ASan and TSan catch here).
TEST(LifetimesGate, MayBeDestroyedAsSoonAsDrainReturns) {
    for (int i = 0; i < 2000; i++) {
        auto *gate = new mq::CallGate;
        std::atomic<bool> entered{false};
        std::thread caller([gate, &entered] {
            const unsigned parity = gate->enter();
            entered = true;
            gate->leave(parity);  // races the drain below
        });
        while (!entered.load()) std::this_thread::yield();
        gate->drain();
        EXPECT_EQ(gate->inside(), 0);
        delete gate;
        caller.join();
    }
}

}  // namespace
