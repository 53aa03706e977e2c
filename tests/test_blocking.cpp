// Blocking calls and lifetimes: what wakes a waiting publish or poll, cancellation of one waiter,
// close, and the promises around push handlers (close waits for them, user_free runs once).
//
// No sleep synchronises anything here. A thread known to be blocked is detected through
// observable state (producer_waits counts publishes that started waiting); where there is none
// (a waiting poll), the wakeup used is sticky (close, a cancel token, an unsubscribe, data that
// stays available), so the result is the same whether the call was already waiting or not. Every
// blocking call runs on its own thread behind a future with a timeout, so a hang fails the test
// instead of hanging the suite.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using mqtest::eventually;

using mqtest::BrokerPtr;
using mqtest::new_broker;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr auto kHang = 5000ms;  // far beyond any correct wakeup, even under ThreadSanitizer

// A call on its own thread. A call that never returns aborts this test's process (ctest runs
// each test in its own), since its thread cannot be joined and still points into the test.
template <class T>
class Async {
public:
    explicit Async(std::function<T()> fn)
        : fut_(prom_.get_future()), th_([this, fn = std::move(fn)] { prom_.set_value(fn()); }) {}
    Async(const Async &) = delete;
    Async &operator=(const Async &) = delete;
    ~Async() {
        if (th_.joinable()) {
            if (!ready_within(kHang)) hang();
            th_.join();
        }
    }
    bool ready_within(std::chrono::milliseconds d) {
        return fut_.wait_for(d) == std::future_status::ready;
    }
    T get() {
        if (!ready_within(kHang)) hang();
        th_.join();
        return fut_.get();
    }

private:
    [[noreturn]] static void hang() {
        std::fprintf(stderr, "FAILED: a blocking mq call did not return within %lld ms\n",
                     static_cast<long long>(kHang.count()));
        std::fflush(stderr);
        std::abort();
    }
    std::promise<T> prom_;
    std::future<T> fut_;
    std::thread th_;
};

struct CancelDeleter {
    void operator()(mq_cancel *c) const { mq_cancel_free(c); }
};
using CancelPtr = std::unique_ptr<mq_cancel, CancelDeleter>;

CancelPtr new_cancel() {
    mq_cancel *c = nullptr;
    EXPECT_EQ(mq_cancel_new(&c), MQ_OK);
    return CancelPtr(c);
}

void create_topic(mq_broker *b, const char *name, int32_t partitions, int64_t capacity,
                  int64_t ack_timeout_ms = 30000) {
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = partitions;
    cfg.capacity = capacity;
    cfg.ack_timeout_ms = ack_timeout_ms;
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

mq_status pub(mq_broker *b, const char *topic, const std::string &payload,
              int64_t wait_ms = MQ_NO_WAIT, mq_cancel *cancel = nullptr,
              int64_t *offset = nullptr) {
    return mq_topic_publish(b, topic, nullptr, 0, payload.data(), payload.size(), NULL, 0, wait_ms,
                            cancel, nullptr, offset);
}

int64_t producer_waits(mq_broker *b, const char *topic, int32_t p) {
    mq_partition_info i{};
    EXPECT_EQ(mq_partition_get_info(b, topic, p, &i, sizeof i), MQ_OK);
    return i.producer_waits;
}

struct PollResult {
    mq_status status;
    std::vector<mq_message> msgs;
    std::chrono::nanoseconds took;
};

PollResult poll(mq_broker *b, const char *topic, const char *group, int32_t p, size_t max,
                int64_t wait_ms, mq_cancel *cancel = nullptr) {
    PollResult r{MQ_OK, std::vector<mq_message>(max), {}};
    size_t n = 0;
    auto t0 = Clock::now();
    r.status = mq_group_poll(b, topic, group, p, r.msgs.data(), sizeof(mq_message), max, wait_ms,
                             cancel, &n);
    r.took = Clock::now() - t0;
    r.msgs.resize(r.status == MQ_OK ? n : 0);
    return r;
}

std::string payload_of(const mq_message &m) {
    return std::string(static_cast<const char *>(m.payload), m.payload_len);
}

// ---- close ---------------------------------------------------------------------------------

TEST(SpecBlocking, CloseWakesBlockedPublishersAndPollers) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "full", 1, 1);
    create_topic(b, "idle", 2, 4);
    ASSERT_EQ(mq_group_subscribe(b, "full", "g", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b, "idle", "g", nullptr), MQ_OK);
    ASSERT_EQ(pub(b, "full", "a"), MQ_OK);
    int64_t waits0 = producer_waits(b, "full", 0);

    Async<mq_status> pub1([&] { return pub(b, "full", "b", MQ_WAIT_FOREVER); });
    Async<mq_status> pub2([&] { return pub(b, "full", "c", 60000); });
    Async<mq_status> batch([&] {
        mq_record r[2] = {{nullptr, 0, "d", 1}, {nullptr, 0, "e", 1}};
        return mq_topic_publish_batch(b, "full", r, sizeof(mq_record), 2, MQ_WAIT_FOREVER, nullptr,
                                      nullptr, sizeof(mq_publish_result), nullptr);
    });
    Async<PollResult> poll0([&] { return poll(b, "idle", "g", 0, 4, MQ_WAIT_FOREVER); });
    Async<PollResult> poll1([&] { return poll(b, "idle", "g", 1, 4, 60000); });
    ASSERT_TRUE(eventually([&] { return producer_waits(b, "full", 0) >= waits0 + 2; }))
        << "the publishers never started waiting";
    EXPECT_FALSE(pub1.ready_within(0ms));
    EXPECT_FALSE(pub2.ready_within(0ms));

    ASSERT_EQ(mq_broker_close(b), MQ_OK);
    EXPECT_EQ(pub1.get(), MQ_CLOSED);
    EXPECT_EQ(pub2.get(), MQ_CLOSED);
    EXPECT_EQ(batch.get(), MQ_CLOSED);
    PollResult r0 = poll0.get(), r1 = poll1.get();
    EXPECT_EQ(r0.status, MQ_CLOSED) << mq_status_name(r0.status);
    EXPECT_EQ(r1.status, MQ_CLOSED) << mq_status_name(r1.status);
    EXPECT_TRUE(r0.msgs.empty());

    // Nothing the woken publishers carried was appended.
    mq_partition_info i{};
    ASSERT_EQ(mq_partition_get_info(b, "full", 0, &i, sizeof i), MQ_OK);
    EXPECT_EQ(i.end, 1);
}

int count_calls(void *user, const mq_message *) {
    static_cast<std::atomic<int> *>(user)->fetch_add(1);
    return 0;
}
void count_free(void *user) { static_cast<std::atomic<int> *>(user)->fetch_add(1000); }

TEST(SpecBlocking, CallsAfterCloseReturnClosed) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 4);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(pub(b, "t", "a"), MQ_OK);
    ASSERT_EQ(pub(b, "t", "b"), MQ_OK);
    ASSERT_EQ(poll(b, "t", "g", 0, 1, 0).msgs.size(), 1u);  // offset 0 in flight
    ASSERT_EQ(mq_broker_close(b), MQ_OK);
    ASSERT_EQ(mq_broker_close(b), MQ_OK);  // idempotent

    auto closed = [](mq_status s, const char *call) {
        EXPECT_EQ(s, MQ_CLOSED) << call << ": " << mq_status_name(s);
        EXPECT_STRNE(mq_last_error(), "") << call;
    };
    closed(mq_topic_create(b, "u", nullptr), "topic_create");
    closed(mq_group_subscribe(b, "t", "h", nullptr), "group_subscribe");
    closed(mq_group_unsubscribe(b, "t", "g"), "group_unsubscribe");
    closed(pub(b, "t", "c"), "publish");
    closed(pub(b, "t", "c", MQ_WAIT_FOREVER), "publish forever");
    mq_record r = {nullptr, 0, "x", 1};
    closed(mq_topic_publish_batch(b, "t", &r, sizeof(mq_record), 1, MQ_NO_WAIT, nullptr, nullptr,
                                  sizeof(mq_publish_result), nullptr),
           "batch");
    // Even with a message ready to hand out.
    closed(poll(b, "t", "g", 0, 4, MQ_NO_WAIT).status, "poll");
    closed(poll(b, "t", "g", 0, 4, MQ_WAIT_FOREVER).status, "poll forever");
    closed(mq_group_ack(b, "t", "g", 0, 0), "ack");
    closed(mq_group_nack(b, "t", "g", 0, 0), "nack");
    std::atomic<int> user{0};
    mq_subscription *sub = nullptr;
    closed(mq_subscription_open(b, "t", "g", nullptr, &count_calls, &user, &count_free, &sub),
           "subscribe");
    EXPECT_EQ(user.load(), 1000) << "user_free must run once when subscribe fails";

    // Introspection still answers, and shows nothing changed.
    mq_group_info g{};
    ASSERT_EQ(mq_group_get_info(b, "t", "g", 0, &g, sizeof g), MQ_OK);
    EXPECT_EQ(g.committed, 0);
    EXPECT_EQ(g.next, 1);
    mq_partition_info p{};
    ASSERT_EQ(mq_partition_get_info(b, "t", 0, &p, sizeof p), MQ_OK);
    EXPECT_EQ(p.end, 2);
    size_t needed = 0;
    EXPECT_EQ(mq_topic_list(b, nullptr, 0, &needed), MQ_OK);
    EXPECT_EQ(needed, 3u);  // "t\n" and the NUL
    EXPECT_EQ(mq_group_list(b, "t", nullptr, 0, &needed), MQ_OK);
    EXPECT_EQ(needed, 3u);
    EXPECT_EQ(mq_partition_describe(b, "t", 0, nullptr, 0, &needed), MQ_OK);
    mq_topic_info ti{};
    EXPECT_EQ(mq_topic_get_info(b, "t", &ti, sizeof ti), MQ_OK);
}

// ---- cancellation --------------------------------------------------------------------------

TEST(SpecBlocking, CancelWakesOnlyItsOwnPublisher) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(pub(b, "t", "a"), MQ_OK);
    int64_t waits0 = producer_waits(b, "t", 0);
    CancelPtr ta = new_cancel(), tb = new_cancel();

    Async<mq_status> a([&] { return pub(b, "t", "from-a", MQ_WAIT_FOREVER, ta.get()); });
    Async<std::pair<mq_status, int64_t>> bb([&] {
        int64_t off = -1;
        mq_status s = pub(b, "t", "from-b", MQ_WAIT_FOREVER, tb.get(), &off);
        return std::make_pair(s, off);
    });
    ASSERT_TRUE(eventually([&] { return producer_waits(b, "t", 0) >= waits0 + 2; }));

    mq_cancel_trigger(ta.get());
    EXPECT_EQ(a.get(), MQ_CANCELLED);
    EXPECT_FALSE(bb.ready_within(0ms));
    EXPECT_EQ(mq_cancel_is_triggered(tb.get()), 0);

    // Make room: B, still waiting, is the one that gets it; A appended nothing.
    PollResult r = poll(b, "t", "g", 0, 1, MQ_NO_WAIT);
    ASSERT_EQ(r.msgs.size(), 1u);
    ASSERT_EQ(mq_group_ack(b, "t", "g", 0, 0), MQ_OK);
    auto [status, off] = bb.get();
    EXPECT_EQ(status, MQ_OK) << mq_status_name(status);
    EXPECT_EQ(off, 1);
    r = poll(b, "t", "g", 0, 4, MQ_NO_WAIT);
    ASSERT_EQ(r.msgs.size(), 1u);
    EXPECT_EQ(payload_of(r.msgs[0]), "from-b");
}

TEST(SpecBlocking, CancelWakesOnlyItsOwnPoller) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 4);
    ASSERT_EQ(mq_group_subscribe(b, "t", "ga", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b, "t", "gb", nullptr), MQ_OK);
    CancelPtr ta = new_cancel(), tb = new_cancel();

    Async<PollResult> a([&] { return poll(b, "t", "ga", 0, 4, MQ_WAIT_FOREVER, ta.get()); });
    Async<PollResult> pb([&] { return poll(b, "t", "gb", 0, 4, MQ_WAIT_FOREVER, tb.get()); });
    mq_cancel_trigger(ta.get());
    PollResult ra = a.get();
    EXPECT_EQ(ra.status, MQ_CANCELLED) << mq_status_name(ra.status);
    EXPECT_TRUE(ra.msgs.empty());

    // B was given no trigger: a publish, not the cancel, ends its wait.
    ASSERT_EQ(pub(b, "t", "m"), MQ_OK);
    PollResult rb = pb.get();
    EXPECT_EQ(rb.status, MQ_OK) << mq_status_name(rb.status);
    ASSERT_EQ(rb.msgs.size(), 1u);
    EXPECT_EQ(payload_of(rb.msgs[0]), "m");

    // The cancelled poll handed nothing out.
    mq_group_info g{};
    ASSERT_EQ(mq_group_get_info(b, "t", "ga", 0, &g, sizeof g), MQ_OK);
    EXPECT_EQ(g.next, 0);
}

TEST(SpecBlocking, CancelTokenIsStickyUntilReset) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 1);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    CancelPtr t = new_cancel();
    EXPECT_EQ(mq_cancel_is_triggered(t.get()), 0);
    mq_cancel_trigger(t.get());
    mq_cancel_trigger(t.get());
    EXPECT_EQ(mq_cancel_is_triggered(t.get()), 1);

    // A triggered token only ends waits: calls that need not wait complete normally.
    EXPECT_EQ(pub(b, "t", "a", MQ_WAIT_FOREVER, t.get()), MQ_OK);
    Async<mq_status> full([&] { return pub(b, "t", "b", MQ_WAIT_FOREVER, t.get()); });
    EXPECT_EQ(full.get(), MQ_CANCELLED);
    PollResult r = poll(b, "t", "g", 0, 4, MQ_WAIT_FOREVER, t.get());
    EXPECT_EQ(r.status, MQ_OK);
    EXPECT_EQ(r.msgs.size(), 1u);
    Async<PollResult> empty([&] { return poll(b, "t", "g", 0, 4, MQ_WAIT_FOREVER, t.get()); });
    EXPECT_EQ(empty.get().status, MQ_CANCELLED);
    EXPECT_EQ(mq_cancel_is_triggered(t.get()), 1);

    mq_cancel_reset(t.get());
    EXPECT_EQ(mq_cancel_is_triggered(t.get()), 0);
    r = poll(b, "t", "g", 0, 4, 20, t.get());
    EXPECT_EQ(r.status, MQ_TIMEOUT) << mq_status_name(r.status);

    // NULL is ignored by the token functions.
    mq_cancel_trigger(nullptr);
    mq_cancel_reset(nullptr);
    EXPECT_EQ(mq_cancel_is_triggered(nullptr), 0);
    mq_cancel_free(nullptr);
    EXPECT_EQ(mq_cancel_new(nullptr), MQ_ERR_INVALID);
}

// ---- what wakes a waiting poll -------------------------------------------------------------

TEST(SpecBlocking, WaitingPollWakesOnPublish) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 2, 4);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    int32_t p = -1;
    ASSERT_EQ(mq_key_partition("k", 1, 2, &p), MQ_OK);
    Async<PollResult> waiter([&] { return poll(b, "t", "g", p, 4, MQ_WAIT_FOREVER); });
    ASSERT_EQ(mq_topic_publish(b, "t", "k", 1, "hello", 5, NULL, 0, MQ_NO_WAIT, nullptr, nullptr,
                               nullptr),
              MQ_OK);
    PollResult r = waiter.get();
    EXPECT_EQ(r.status, MQ_OK) << mq_status_name(r.status);
    ASSERT_EQ(r.msgs.size(), 1u);
    EXPECT_EQ(payload_of(r.msgs[0]), "hello");
    EXPECT_EQ(r.msgs[0].partition, p);
}

TEST(SpecBlocking, WaitingPollWakesOnNackFromAnotherThread) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 4);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(pub(b, "t", "redo"), MQ_OK);
    ASSERT_EQ(poll(b, "t", "g", 0, 4, MQ_NO_WAIT).msgs.size(), 1u);
    // Everything is handed out and the lease has 30 s to run: only the nack can end this wait.
    Async<PollResult> waiter([&] { return poll(b, "t", "g", 0, 4, MQ_WAIT_FOREVER); });
    Async<mq_status> nacker([&] { return mq_group_nack(b, "t", "g", 0, 0); });
    EXPECT_EQ(nacker.get(), MQ_OK);
    PollResult r = waiter.get();
    EXPECT_EQ(r.status, MQ_OK) << mq_status_name(r.status);
    ASSERT_EQ(r.msgs.size(), 1u);
    EXPECT_EQ(r.msgs[0].offset, 0);
    EXPECT_EQ(r.msgs[0].delivery_count, 2u);
}

TEST(SpecBlocking, WaitingPollNoticesLeaseRunningOutWithRealClock) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 4, /*ack_timeout_ms=*/50);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(pub(b, "t", "slow"), MQ_OK);
    auto t0 = Clock::now();
    ASSERT_EQ(poll(b, "t", "g", 0, 4, MQ_NO_WAIT).msgs.size(), 1u);
    // Nothing new will be published: this poll must wake when the 50 ms lease ends, long
    // before its own 4 s wait does.
    PollResult r = poll(b, "t", "g", 0, 4, 4000);
    auto since_lease = Clock::now() - t0;
    EXPECT_EQ(r.status, MQ_OK) << mq_status_name(r.status);
    ASSERT_EQ(r.msgs.size(), 1u);
    EXPECT_EQ(r.msgs[0].offset, 0);
    EXPECT_EQ(r.msgs[0].delivery_count, 2u);
    EXPECT_GE(since_lease, 50ms) << "redelivered before the lease ran out";
    EXPECT_LT(r.took, 2000ms) << "the poll waited for its own wait, not for the lease";
}

TEST(SpecBlocking, UnsubscribeEndsWaitingPollWithNoGroup) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 4);
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK);
    Async<PollResult> waiter([&] { return poll(b, "t", "g", 0, 4, MQ_WAIT_FOREVER); });
    ASSERT_EQ(mq_group_unsubscribe(b, "t", "g"), MQ_OK);
    PollResult r = waiter.get();
    EXPECT_EQ(r.status, MQ_ERR_NO_GROUP) << mq_status_name(r.status);
}

// ---- push subscriptions: handlers and lifetimes --------------------------------------------

struct Blocker {
    std::promise<void> entered;
    std::shared_future<void> release;
    std::atomic<bool> entered_once{false};
    std::atomic<bool> finished{false};
    std::atomic<bool> finished_at_free{false};
    std::atomic<int> frees{0};
};

int blocking_handler(void *user, const mq_message *) {
    auto *bl = static_cast<Blocker *>(user);
    if (!bl->entered_once.exchange(true)) {
        bl->entered.set_value();
        bl->release.wait_for(kHang);
        bl->finished = true;
    }
    return 0;
}
void blocker_free(void *user) {
    auto *bl = static_cast<Blocker *>(user);
    bl->finished_at_free = bl->finished.load();
    bl->frees++;
}

TEST(SpecBlocking, SubscriptionCloseWaitsForRunningHandler) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 8);
    std::promise<void> release;
    Blocker bl;
    bl.release = release.get_future().share();
    auto entered = bl.entered.get_future();
    mq_subscription *sub = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g", nullptr, &blocking_handler, &bl, &blocker_free, &sub),
        MQ_OK);
    ASSERT_EQ(pub(b, "t", "m"), MQ_OK);
    ASSERT_EQ(entered.wait_for(kHang), std::future_status::ready) << "handler never ran";

    Async<std::pair<mq_status, bool>> closer([&] {
        mq_status s = mq_subscription_close(sub);
        return std::make_pair(s, bl.finished.load());
    });
    // Close may not return while the handler is inside; this bounded look cannot fail a
    // correct library, it only limits how long a wrong one is watched.
    EXPECT_FALSE(closer.ready_within(100ms)) << "close returned while its handler was running";
    release.set_value();
    auto [status, finished_when_closed] = closer.get();
    EXPECT_EQ(status, MQ_OK);
    EXPECT_TRUE(finished_when_closed);
    EXPECT_EQ(bl.frees.load(), 1);
    EXPECT_TRUE(bl.finished_at_free.load());
}

struct SelfCloser {
    std::atomic<mq_subscription *> sub{nullptr};
    std::atomic<int> calls{0};
    std::atomic<int> close_status{-1};
    std::string close_message;  // written by the first call only, read after close
    std::atomic<int> frees{0};
};

int self_closing_handler(void *user, const mq_message *) {
    auto *sc = static_cast<SelfCloser *>(user);
    if (sc->calls.fetch_add(1) == 0) {
        sc->close_status = mq_subscription_close(sc->sub.load());
        sc->close_message = mq_last_error();
    }
    return 0;
}
void self_closer_free(void *user) { static_cast<SelfCloser *>(user)->frees++; }

TEST(SpecBlocking, SubscriptionCloseFromItsOwnHandlerIsRefused) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 8);
    SelfCloser sc;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "t", "g", nullptr, &self_closing_handler, &sc,
                                   &self_closer_free, &sub),
              MQ_OK);
    sc.sub = sub;
    ASSERT_EQ(pub(b, "t", "first"), MQ_OK);
    ASSERT_TRUE(eventually([&] { return sc.close_status.load() != -1; }));
    EXPECT_EQ(sc.close_status.load(), MQ_ERR_DEADLOCK) << mq_status_name(sc.close_status.load());

    // "Nothing happens": the subscription keeps delivering.
    ASSERT_EQ(pub(b, "t", "second"), MQ_OK);
    EXPECT_TRUE(eventually([&] { return sc.calls.load() >= 2; }))
        << "the refused close stopped the subscription";
    EXPECT_EQ(sc.frees.load(), 0);
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(sc.frees.load(), 1);
    EXPECT_NE(sc.close_message, "");
}

struct Tracker {
    std::atomic<int> calls{0};
    std::atomic<bool> freed{false};
    std::atomic<int> calls_after_free{0};
    std::atomic<int> frees{0};
};
int tracking_handler(void *user, const mq_message *) {
    auto *t = static_cast<Tracker *>(user);
    if (t->freed.load()) t->calls_after_free++;
    t->calls++;
    return 0;
}
void tracker_free(void *user) {
    auto *t = static_cast<Tracker *>(user);
    t->freed = true;
    t->frees++;
}

TEST(SpecBlocking, UserFreeRunsOnceAfterTheHandlerCanNoLongerRun) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 2, 16);
    Tracker tr;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g", nullptr, &tracking_handler, &tr, &tracker_free, &sub),
        MQ_OK);
    std::atomic<bool> stop{false};
    // Keep both partitions busy while the subscription closes ("user-b" hashes to partition 0
    // of 2, "user-a" to 1), so both loop threads are likely inside a handler at close.
    Async<int> producer([&] {
        int n = 0;
        for (unsigned i = 0; !stop.load(); ++i) {
            const char *key = (i % 2) ? "user-a" : "user-b";
            n += mq_topic_publish(b, "t", key, 6, "m", 1, NULL, 0, MQ_NO_WAIT, nullptr, nullptr,
                                  nullptr) == MQ_OK;
        }
        return n;
    });
    ASSERT_TRUE(eventually([&] { return tr.calls.load() >= 20; }));
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(tr.frees.load(), 1);
    int calls_at_close = tr.calls.load();
    // The producer keeps publishing for a while after close: with the group still subscribed,
    // the partitions fill up and further publishes are refused as full.
    ASSERT_TRUE(eventually([&] {
        mq_partition_info i0{}, i1{};
        mq_partition_get_info(b, "t", 0, &i0, sizeof i0);
        mq_partition_get_info(b, "t", 1, &i1, sizeof i1);
        return i0.backlog == 16 && i1.backlog == 16;
    })) << "the closed subscription kept consuming";
    stop = true;
    EXPECT_GT(producer.get(), 0);
    EXPECT_EQ(tr.calls.load(), calls_at_close);
    EXPECT_EQ(tr.calls_after_free.load(), 0);
    broker.reset();
    EXPECT_EQ(tr.frees.load(), 1) << "broker free must not free a closed subscription again";
}

TEST(SpecBlocking, UserFreeRunsOnceWhenSubscribeFails) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    Tracker tr;
    mq_subscription *sub = nullptr;
    EXPECT_EQ(mq_subscription_open(b, "missing", "g", nullptr, &tracking_handler, &tr,
                                   &tracker_free, &sub),
              MQ_ERR_NO_TOPIC);
    EXPECT_EQ(tr.frees.load(), 1);
    // A NULL user_free is allowed.
    EXPECT_EQ(
        mq_subscription_open(b, "missing", "g", nullptr, &tracking_handler, &tr, nullptr, &sub),
        MQ_ERR_NO_TOPIC);
    EXPECT_EQ(tr.frees.load(), 1);
}

// mq.h "Lifetimes": freeing the broker stops the handlers, and the subscriptions stay valid
// (closed) handles until their own close, which calls user_free exactly once.
TEST(SpecBlocking, BrokerFreeStopsHandlersAndSubscriptionsCloseAfterIt) {
    mq_broker *b = nullptr;
    ASSERT_EQ(mq_broker_new(nullptr, &b), MQ_OK);
    create_topic(b, "t", 2, 16);
    Tracker t1, t2;
    mq_subscription *s1 = nullptr, *s2 = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g1", nullptr, &tracking_handler, &t1, &tracker_free, &s1),
        MQ_OK);
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g2", nullptr, &tracking_handler, &t2, &tracker_free, &s2),
        MQ_OK);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(pub(b, "t", "m"), MQ_OK);
    ASSERT_TRUE(eventually([&] { return t1.calls.load() >= 1 && t2.calls.load() >= 1; }));

    Async<int> freer([&] {
        mq_broker_free(b);
        return 0;
    });
    freer.get();
    EXPECT_EQ(t1.frees.load(), 0) << "user_free belongs to mq_subscription_close";
    EXPECT_EQ(t2.frees.load(), 0);
    ASSERT_EQ(mq_subscription_close(s1), MQ_OK);
    ASSERT_EQ(mq_subscription_close(s2), MQ_OK);
    EXPECT_EQ(t1.frees.load(), 1);
    EXPECT_EQ(t2.frees.load(), 1);
    EXPECT_EQ(t1.calls_after_free.load(), 0);
    EXPECT_EQ(t2.calls_after_free.load(), 0);
}

TEST(SpecBlocking, BrokerCloseStopsHandlersAndSubscriptionsStillClose) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 16);
    Tracker tr;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(
        mq_subscription_open(b, "t", "g", nullptr, &tracking_handler, &tr, &tracker_free, &sub),
        MQ_OK);
    ASSERT_EQ(pub(b, "t", "m"), MQ_OK);
    ASSERT_TRUE(eventually([&] { return tr.calls.load() >= 1; }));
    ASSERT_EQ(mq_broker_close(b), MQ_OK);
    Async<mq_status> closer([&] { return mq_subscription_close(sub); });
    EXPECT_EQ(closer.get(), MQ_OK);
    EXPECT_EQ(tr.frees.load(), 1);
    EXPECT_EQ(tr.calls_after_free.load(), 0);
}

struct Reentrant {
    mq_broker *b = nullptr;
    std::atomic<int> step{0};  // 1 = running, 2 = every call returned
    std::atomic<int> failures{0};
};

// No library lock may be held while a handler runs: calls on the very partition being consumed
// (and on another topic) must go through instead of deadlocking.
int reentrant_handler(void *user, const mq_message *) {
    auto *r = static_cast<Reentrant *>(user);
    int idle = 0;
    if (!r->step.compare_exchange_strong(idle, 1)) return 0;  // the first call does the work
    auto check = [&](mq_status s, mq_status want) { r->failures += s != want; };
    check(pub(r->b, "t", "from-handler"), MQ_OK);
    check(pub(r->b, "other", "x"), MQ_OK);
    mq_message m[4];
    size_t n = 0;
    check(mq_group_poll(r->b, "t", "pull", 0, m, sizeof(mq_message), 4, MQ_NO_WAIT, nullptr, &n),
          MQ_OK);
    if (n > 0) check(mq_group_ack(r->b, "t", "pull", 0, m[n - 1].offset), MQ_OK);
    mq_partition_info pi{};
    check(mq_partition_get_info(r->b, "t", 0, &pi, sizeof pi), MQ_OK);
    mq_group_info gi{};
    check(mq_group_get_info(r->b, "t", "push", 0, &gi, sizeof gi), MQ_OK);
    size_t needed = 0;
    check(mq_partition_describe(r->b, "t", 0, nullptr, 0, &needed), MQ_OK);
    check(mq_group_list(r->b, "t", nullptr, 0, &needed), MQ_OK);
    r->step = 2;
    return 0;
}

TEST(SpecBlocking, HandlerMayCallIntoTheBroker) {
    BrokerPtr broker = new_broker();
    mq_broker *b = broker.get();
    create_topic(b, "t", 1, 8);
    create_topic(b, "other", 1, 8);
    ASSERT_EQ(mq_group_subscribe(b, "t", "pull", nullptr), MQ_OK);
    Reentrant r;
    r.b = b;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "t", "push", nullptr, &reentrant_handler, &r, nullptr, &sub),
              MQ_OK);
    ASSERT_EQ(pub(b, "t", "go"), MQ_OK);
    if (!eventually([&] { return r.step.load() == 2; })) {
        char state[256] = "";
        mq_partition_describe(b, "t", 0, state, sizeof state, nullptr);
        std::fprintf(stderr, "FAILED: a call from inside a handler deadlocked (step %d; %s)\n",
                     r.step.load(), state);
        std::abort();  // the handler cannot be stopped: closing would wait for it forever
    }
    EXPECT_EQ(r.failures.load(), 0);
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
}

}  // namespace
