// Allocation failure: each call is run with its 1st, 2nd, 3rd, ... allocation failing (on the
// calling thread, alloc_hooks.h) until it makes no more. Every failing run must return
// MQ_ERR_NO_MEMORY and leave everything a user can observe as it was; the broker must keep
// working afterwards. This is what mq.h's "MQ_ERR_NO_MEMORY: nothing changed" promises.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "alloc_hooks.h"
#include "mq.h"

namespace {

// Everything observable about the broker's topics, groups and cursors, as text.
std::string snapshot(mq_broker *b) {
    std::string out;
    char buf[4096];
    size_t needed = 0;
    EXPECT_EQ(mq_topic_list(b, buf, sizeof buf, &needed), MQ_OK);
    const std::string topics = buf;
    out += "topics:" + topics;
    size_t pos = 0;
    while (pos < topics.size()) {
        const size_t nl = topics.find('\n', pos);
        const std::string t = topics.substr(pos, nl - pos);
        pos = nl + 1;
        mq_topic_info ti{};
        EXPECT_EQ(mq_topic_get_info(b, t.c_str(), &ti, sizeof ti), MQ_OK);
        EXPECT_EQ(mq_group_list(b, t.c_str(), buf, sizeof buf, &needed), MQ_OK);
        const std::string groups = buf;
        out += "\n" + t + " groups:" + groups;
        for (int32_t p = 0; p < ti.partitions; p++) {
            EXPECT_EQ(mq_partition_describe(b, t.c_str(), p, buf, sizeof buf, &needed), MQ_OK);
            out += std::string("\n  ") + buf;
            mq_partition_info pi{};
            EXPECT_EQ(mq_partition_get_info(b, t.c_str(), p, &pi, sizeof pi), MQ_OK);
            std::snprintf(buf, sizeof buf,
                          " bytes %" PRId64 " waits %" PRId64 " max %" PRId64 " dropped %" PRId64,
                          pi.retained_bytes, pi.producer_waits, pi.max_backlog, pi.dropped);
            out += buf;
            size_t g0 = 0;
            while (g0 < groups.size()) {
                const size_t g1 = groups.find('\n', g0);
                const std::string g = groups.substr(g0, g1 - g0);
                g0 = g1 + 1;
                mq_group_info gi{};
                EXPECT_EQ(mq_group_get_info(b, t.c_str(), g.c_str(), p, &gi, sizeof gi), MQ_OK);
                std::snprintf(buf, sizeof buf,
                              " | %s %" PRId64 "/%" PRId64 " lost %" PRId64 " paused %" PRId64,
                              g.c_str(), gi.committed, gi.next, gi.lost, gi.paused_until_ns);
                out += buf;
            }
        }
    }
    return out;
}

// Runs `call` with its n-th allocation failing for n = 1, 2, ... until it succeeds without the
// failure being reached. `after_failure` adds a scenario's own checks after each failure.
// Returns how many allocations the successful call made.
long run_with_failures(mq_broker *b, const char *what, const std::function<mq_status()> &call,
                       const std::function<void()> &after_failure = {}) {
    for (long n = 1; n < 10000; n++) {
        const std::string before = snapshot(b);
        alloc_hooks::fail_nth(n);
        const mq_status st = call();
        const long made = alloc_hooks::disarm();
        const bool injected = alloc_hooks::failed();
        if (!injected) {
            EXPECT_EQ(st, MQ_OK) << what << " with no failure reached (n=" << n
                                 << "): " << mq_last_error();
            return made;
        }
        EXPECT_EQ(st, MQ_ERR_NO_MEMORY)
            << what << ": allocation " << n << " failed but the call returned "
            << mq_status_name(st) << " (" << mq_last_error() << ")";
        EXPECT_EQ(snapshot(b), before)
            << what << ": allocation " << n << " failed and the state changed";
        if (after_failure) after_failure();
        if (::testing::Test::HasFailure()) return -1;
    }
    ADD_FAILURE() << what << " never succeeded";
    return -1;
}

struct AllocFailure : ::testing::Test {
    mq_broker *b = nullptr;
    void SetUp() override { ASSERT_EQ(mq_broker_new(nullptr, &b), MQ_OK); }
    void TearDown() override { mq_broker_free(b); }

    void create(const char *name, int32_t partitions, int64_t capacity) {
        mq_topic_config c;
        mq_topic_config_init(&c, sizeof c);
        c.partitions = partitions;
        c.capacity = capacity;
        ASSERT_EQ(mq_topic_create(b, name, &c), MQ_OK) << mq_last_error();
    }

    // Proves the broker still works: a publish on every partition, polled and acked by `group`.
    void works(const char *topic, const char *group, int32_t partitions) {
        for (int32_t p = 0; p < partitions; p++) {
            mq_group_info before{};
            ASSERT_EQ(mq_group_get_info(b, topic, group, p, &before, sizeof before), MQ_OK);
            mq_partition_info pi{};
            ASSERT_EQ(mq_partition_get_info(b, topic, p, &pi, sizeof pi), MQ_OK);
            ASSERT_EQ(mq_group_seek(b, topic, group, p, MQ_OFFSET_END), MQ_OK) << mq_last_error();
            // Find a key for partition p so the message lands where we poll.
            std::string key;
            for (int k = 0;; k++) {
                key = "k" + std::to_string(k);
                int32_t kp;
                ASSERT_EQ(mq_key_partition(key.data(), key.size(), partitions, &kp), MQ_OK);
                if (kp == p) break;
            }
            int64_t off;
            ASSERT_EQ(mq_topic_publish(b, topic, key.data(), key.size(), "ok", 2, NULL, 0,
                                       MQ_NO_WAIT, nullptr, nullptr, &off),
                      MQ_OK)
                << mq_last_error();
            mq_message m;
            size_t n = 0;
            ASSERT_EQ(mq_group_poll(b, topic, group, p, &m, sizeof(mq_message), 1, MQ_NO_WAIT,
                                    nullptr, &n),
                      MQ_OK)
                << mq_last_error();
            ASSERT_EQ(m.offset, off);
            ASSERT_EQ(mq_group_ack(b, topic, group, p, off), MQ_OK) << mq_last_error();
        }
    }
};

TEST(AllocHooks, FailsTheNthAllocationOfThisThreadOnly) {
    alloc_hooks::fail_nth(2);
    auto *first = new int(1);
    EXPECT_THROW((void)new int(2), std::bad_alloc);
    auto *third = new int(3);
    EXPECT_EQ(alloc_hooks::disarm(), 3);
    EXPECT_TRUE(alloc_hooks::failed());
    delete first;
    delete third;
}

TEST_F(AllocFailure, BrokerNewFailsCleanly) {
    mq_broker *other = nullptr;
    for (long n = 1;; n++) {
        mq_broker *out = reinterpret_cast<mq_broker *>(0x1);
        alloc_hooks::fail_nth(n);
        const mq_status st = mq_broker_new(nullptr, &out);
        alloc_hooks::disarm();
        if (!alloc_hooks::failed()) {
            ASSERT_EQ(st, MQ_OK);
            other = out;
            break;
        }
        ASSERT_EQ(st, MQ_ERR_NO_MEMORY) << "allocation " << n;
        ASSERT_LT(n, 1000);
    }
    mq_broker_free(other);
}

TEST_F(AllocFailure, TopicCreate) {
    create("existing", 2, 8);
    ASSERT_EQ(mq_group_subscribe(b, "existing", "g", nullptr), MQ_OK);
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = 4;
    c.capacity = 16;
    const long made =
        run_with_failures(b, "mq_topic_create", [&] { return mq_topic_create(b, "orders", &c); });
    ASSERT_GT(made, 0) << "creating a topic allocates; the hook did not see it";
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    works("orders", "g", 4);
    works("existing", "g", 2);
}

TEST_F(AllocFailure, GroupSubscribe) {
    create("orders", 3, 8);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "first", nullptr), MQ_OK);
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0, MQ_NO_WAIT, nullptr,
                                   nullptr, nullptr),
                  MQ_OK);
    }
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = MQ_START_EARLIEST;
    const long made = run_with_failures(
        b, "mq_group_subscribe", [&] { return mq_group_subscribe(b, "orders", "second", &o); });
    ASSERT_GT(made, 0);
    works("orders", "second", 3);
    works("orders", "first", 3);
}

TEST_F(AllocFailure, FirstPublishAndEveryPublishThatNeedsMemory) {
    // 2048 slots' worth of messages forces the slot ring to grow; 1000-byte payloads fill chunk
    // after chunk. Every publish runs the failure loop; those that allocate nothing pass at n=1.
    create("orders", 1, 2048);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    const std::string payload(1000, 'p');
    int allocating = 0;
    for (int i = 0; i < 1100 && !HasFailure(); i++) {
        const long made = run_with_failures(b, "mq_topic_publish", [&] {
            return mq_topic_publish(b, "orders", "k", 1, payload.data(), payload.size(), NULL, 0,
                                    MQ_NO_WAIT, nullptr, nullptr, nullptr);
        });
        if (made > 0) allocating++;
        if (i == 0) ASSERT_GT(made, 0) << "the first publish allocates its first chunk";
    }
    EXPECT_GE(allocating, 3) << "new chunks and the slot ring's growth should need memory";
    mq_partition_info pi{};
    ASSERT_EQ(mq_partition_get_info(b, "orders", 0, &pi, sizeof pi), MQ_OK);
    EXPECT_EQ(pi.end, 1100);  // every publish landed exactly once
    std::vector<mq_message> m(64);
    size_t got = 0;
    int64_t expect = 0;
    while (mq_group_poll(b, "orders", "g", 0, m.data(), sizeof(mq_message), m.size(), MQ_NO_WAIT,
                         nullptr, &got) == MQ_OK) {
        for (size_t i = 0; i < got; i++) ASSERT_EQ(m[i].offset, expect++);
        ASSERT_EQ(mq_group_ack(b, "orders", "g", 0, m[got - 1].offset), MQ_OK);
    }
    EXPECT_EQ(expect, 1100);
}

TEST_F(AllocFailure, KeylessPublishAcrossPartitions) {
    create("orders", 4, 64);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    const std::string payload(700, 'q');
    for (int i = 0; i < 40 && !HasFailure(); i++) {
        run_with_failures(b, "keyless mq_topic_publish", [&] {
            return mq_topic_publish(b, "orders", nullptr, 0, payload.data(), payload.size(), NULL,
                                    0, MQ_NO_WAIT, nullptr, nullptr, nullptr);
        });
    }
    int64_t total = 0;
    for (int32_t p = 0; p < 4; p++) {
        mq_partition_info pi{};
        ASSERT_EQ(mq_partition_get_info(b, "orders", p, &pi, sizeof pi), MQ_OK);
        total += pi.end;
    }
    EXPECT_EQ(total, 40);
    works("orders", "g", 4);
}

// The join that also subscribes the group: a failure must leave the group unsubscribed.
TEST_F(AllocFailure, MemberJoinThatSubscribesTheGroup) {
    create("orders", 4, 8);
    mq_member_options mo;
    mq_member_options_init(&mo, sizeof mo);
    mq_member *m = nullptr;
    run_with_failures(b, "mq_member_join (new group)",
                      [&] { return mq_member_join(b, "orders", "g", &mo, &m); });
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(mq_member_close(m), MQ_OK);
    works("orders", "g", 4);
}

TEST_F(AllocFailure, MemberJoinAndRebalance) {
    create("orders", 4, 8);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    mq_member_options mo;
    mq_member_options_init(&mo, sizeof mo);
    mq_member *first = nullptr;
    run_with_failures(b, "first mq_member_join",
                      [&] { return mq_member_join(b, "orders", "g", &mo, &first); });
    ASSERT_NE(first, nullptr);
    int64_t gen0 = 0;
    size_t count = 0;
    int32_t parts[4];
    ASSERT_EQ(mq_member_get_assignment(first, &gen0, parts, 4, &count), MQ_OK);
    ASSERT_EQ(count, 4u);
    mq_member *second = nullptr;
    run_with_failures(
        b, "second mq_member_join", [&] { return mq_member_join(b, "orders", "g", &mo, &second); },
        [&] {
            // The failed join must not have rebalanced the group.
            int64_t gen = 0;
            size_t c = 0;
            EXPECT_EQ(mq_member_get_assignment(first, &gen, parts, 4, &c), MQ_OK);
            EXPECT_EQ(gen, gen0);
            EXPECT_EQ(c, 4u);
        });
    ASSERT_NE(second, nullptr);
    int64_t gen = 0;
    ASSERT_EQ(mq_member_get_assignment(first, &gen, parts, 4, &count), MQ_OK);
    EXPECT_GT(gen, gen0);
    EXPECT_EQ(count, 2u);
    ASSERT_EQ(mq_member_close(second), MQ_OK);
    ASSERT_EQ(mq_member_close(first), MQ_OK);
    works("orders", "g", 4);
}

struct PushState {
    std::atomic<int> handled{0};
    std::atomic<int> freed{0};
    std::mutex mu;
    std::condition_variable cv;
};

int count_handler(void *user, const mq_message *) {
    auto *s = static_cast<PushState *>(user);
    std::lock_guard lk(s->mu);
    s->handled++;
    s->cv.notify_all();
    return 0;
}
void count_free(void *user) { static_cast<PushState *>(user)->freed++; }

// Starts a push subscription of `group` on "orders" (2 partitions) under the failure loop, then
// proves it consumes: one message on each partition reaches its handler.
void start_subscription(mq_broker *b, const char *group, bool with_list) {
    const int32_t list[] = {0, 1};
    mq_subscription_options so;
    mq_subscription_options_init(&so, sizeof so);
    if (with_list) {
        so.partitions = list;
        so.partition_count = 2;
    }
    std::vector<PushState> states(1000);  // one per attempt: user data must outlive a failed start
    size_t attempt = 0;
    mq_subscription *sub = nullptr;
    run_with_failures(
        b, "mq_subscription_open",
        [&] {
            PushState &s = states[attempt++];
            return mq_subscription_open(b, "orders", group, &so, count_handler, &s, count_free,
                                        &sub);
        },
        [&] {
            // A failed start has released its user data exactly once, and nothing runs.
            EXPECT_EQ(states[attempt - 1].freed.load(), 1);
            EXPECT_EQ(states[attempt - 1].handled.load(), 0);
        });
    ASSERT_NE(sub, nullptr);
    PushState &live = states[attempt - 1];
    const int32_t keyed[] = {0, 1};
    for (int32_t p : keyed) {
        std::string key;
        for (int k = 0;; k++) {
            key = "k" + std::to_string(k);
            int32_t kp;
            ASSERT_EQ(mq_key_partition(key.data(), key.size(), 2, &kp), MQ_OK);
            if (kp == p) break;
        }
        ASSERT_EQ(mq_topic_publish(b, "orders", key.data(), key.size(), "a", 1, NULL, 0,
                                   MQ_WAIT_FOREVER, nullptr, nullptr, nullptr),
                  MQ_OK);
    }
    {
        std::unique_lock lk(live.mu);
        EXPECT_TRUE(
            live.cv.wait_for(lk, std::chrono::seconds(5), [&] { return live.handled.load() == 2; }))
            << "handled " << live.handled.load() << " of 2: a partition has no live consumer";
    }
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(live.freed.load(), 1);
    for (size_t i = 0; i + 1 < attempt; i++) EXPECT_EQ(states[i].handled.load(), 0);
}

TEST_F(AllocFailure, SubscriptionStartAsMemberOfSubscribedGroup) {
    create("orders", 2, 8);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    start_subscription(b, "g", false);
}

TEST_F(AllocFailure, SubscriptionStartThatSubscribesTheGroup) {
    create("orders", 2, 8);
    start_subscription(b, "g", false);
}

TEST_F(AllocFailure, SubscriptionStartWithPartitionList) {
    create("orders", 2, 8);
    ASSERT_EQ(mq_group_subscribe(b, "orders", "g", nullptr), MQ_OK);
    start_subscription(b, "g", true);
}

}  // namespace
