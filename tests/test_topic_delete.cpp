// Topic deletion (mq_topic_delete, mq.h) and what goes with it: every kind of waiter wakes with
// MQ_ERR_NO_TOPIC, push subscriptions and members on the deleted topic stop but stay valid
// handles, views they hold stay readable until they are released (ASan checks the reads), a
// topic made anew under the name is new and empty, and deletion races publishers and pollers
// safely (run under TSan and ASan).
//
// Waiters are known to be blocked through internal state, as in test_lifetimes.cpp (a group
// poll or publish has registered its cancel token; a member poll's notifier counts sleepers).
// Deletion is sticky (a call that starts after it fails its lookup), so a waiter that had not
// blocked yet gets the same status.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi/broker.h"
#include "util/cancel.h"
#include "capi/member.h"
#include "mq.h"
#include "mq_test_util.h"
#include "token_probe.h"

namespace {

using namespace std::chrono_literals;
using mqtest::BrokerPtr;
using mqtest::token_in_use;
constexpr auto kHang = 10s;

template <class F>
bool eventually(F &&f) {
    const auto until = std::chrono::steady_clock::now() + kHang;
    while (!f()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
    return true;
}

bool member_poll_asleep(mq_member *m) {
    std::lock_guard g(m->state->notifier.mu);
    return m->state->sleeping > 0;
}

mq_status result_of(std::future<mq_status> &f) {
    if (f.wait_for(kHang) != std::future_status::ready) {
        std::fprintf(stderr, "FAILED: a call waiting on a deleted topic did not return\n");
        std::abort();
    }
    return f.get();
}

void create(mq_broker *b, const char *name, int32_t partitions = 1, int64_t capacity = 16) {
    auto cfg = mqtest::topic_config(partitions, capacity);
    ASSERT_EQ(mq_topic_create(b, name, &cfg), MQ_OK) << mq_last_error();
}

mq_status publish(mq_broker *b, const char *topic, const std::string &payload,
                  int64_t wait_ms = MQ_NO_WAIT, mq_cancel *cancel = nullptr) {
    return mq_topic_publish(b, topic, nullptr, 0, payload.data(), payload.size(), nullptr, 0,
                            wait_ms, cancel, nullptr, nullptr);
}

std::string topics(mq_broker *b) {
    char buf[256];
    EXPECT_EQ(mq_topic_list(b, buf, sizeof buf, nullptr), MQ_OK);
    return buf;
}

struct Cancel {
    mq_cancel *c = nullptr;
    Cancel() { EXPECT_EQ(mq_cancel_new(&c), MQ_OK); }
    ~Cancel() { mq_cancel_free(c); }
};

TEST(TopicDelete, ArgumentsAndUnknownNames) {
    BrokerPtr b = mqtest::new_broker();
    EXPECT_EQ(mq_topic_delete(nullptr, "t"), MQ_ERR_INVALID);
    EXPECT_EQ(mq_topic_delete(b.get(), nullptr), MQ_ERR_INVALID);
    EXPECT_EQ(mq_topic_delete(b.get(), "no/slash"), MQ_ERR_INVALID);
    EXPECT_EQ(mq_topic_delete(b.get(), ""), MQ_ERR_INVALID);
    EXPECT_EQ(mq_topic_delete(b.get(), "missing"), MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::strstr(mq_last_error(), "missing"), nullptr) << mq_last_error();
    create(b.get(), "t");
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_topic_delete(b.get(), "t"), MQ_ERR_NO_TOPIC);  // deleting twice
    create(b.get(), "u");
    ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
    EXPECT_EQ(mq_topic_delete(b.get(), "u"), MQ_CLOSED);
    EXPECT_EQ(topics(b.get()), "u\n");  // a refused deletion changed nothing
}

TEST(TopicDelete, NameIsFreedAndANewTopicIsNewAndEmpty) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "a");
    create(b.get(), "t", 2, 8);
    create(b.get(), "z");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 5; i++) ASSERT_EQ(publish(b.get(), "t", "m" + std::to_string(i)), MQ_OK);
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK) << mq_last_error();

    // Nothing by name reaches it: calls, introspection, lists.
    EXPECT_EQ(publish(b.get(), "t", "x"), MQ_ERR_NO_TOPIC);
    mq_message m[4];
    size_t n = 0;
    EXPECT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 4, 0, nullptr, &n),
              MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_group_ack(b.get(), "t", "g", 0, 0), MQ_ERR_NO_TOPIC);
    mq_topic_info ti{};
    EXPECT_EQ(mq_topic_get_info(b.get(), "t", &ti, sizeof ti), MQ_ERR_NO_TOPIC);
    mq_partition_info pi{};
    EXPECT_EQ(mq_partition_get_info(b.get(), "t", 0, &pi, sizeof pi), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_group_list(b.get(), "t", nullptr, 0, &n), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(topics(b.get()), "a\nz\n");

    // Made anew with another shape: no messages, groups or offsets of the old one.
    create(b.get(), "t", 3, 4);
    EXPECT_EQ(topics(b.get()), "a\nz\nt\n");
    ASSERT_EQ(mq_topic_get_info(b.get(), "t", &ti, sizeof ti), MQ_OK);
    EXPECT_EQ(ti.partitions, 3);
    EXPECT_EQ(ti.capacity, 4);
    ASSERT_EQ(mq_partition_get_info(b.get(), "t", 0, &pi, sizeof pi), MQ_OK);
    EXPECT_EQ(pi.end, 0);
    char buf[64];
    ASSERT_EQ(mq_group_list(b.get(), "t", buf, sizeof buf, nullptr), MQ_OK);
    EXPECT_STREQ(buf, "");
    EXPECT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 4, 0, nullptr, &n),
              MQ_ERR_NO_GROUP);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    ASSERT_EQ(publish(b.get(), "t", "new"), MQ_OK);
    int32_t got = 0;
    for (int32_t p = 0; p < 3; p++) {
        const mq_status st = mq_group_poll(b.get(), "t", "g", p, m, sizeof m[0], 4, 0, nullptr, &n);
        ASSERT_EQ(st, n ? MQ_OK : MQ_TIMEOUT);
        if (n) {
            EXPECT_EQ(mqtest::payload_of(m[0]), "new");
            EXPECT_EQ(m[0].offset, 0);
        }
        got += static_cast<int32_t>(n);
    }
    EXPECT_EQ(got, 1);
}

// The thread that caches the last topic it named must not reach the deleted one through it.
TEST(TopicDelete, ThePerThreadTopicCacheForgetsADeletedTopic) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t", 1, 4);
    ASSERT_EQ(publish(b.get(), "t", "old"), MQ_OK);  // caches "t" on this thread
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
    b->collect_for_testing();
    b->collect_for_testing();
    create(b.get(), "t", 1, 4);
    int64_t offset = -1;
    ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, "new", 3, nullptr, 0, 0, nullptr, nullptr,
                               &offset),
              MQ_OK);
    EXPECT_EQ(offset, 0);  // the new topic, not the old one (whose next offset was 1)
}

TEST(TopicDelete, WakesABlockedPoll) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (bool wait_for_block : {true, false}) {
        Cancel c;
        auto poll = std::async(std::launch::async, [&] {
            mq_message m[1];
            size_t n = 0;
            return mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 1, MQ_WAIT_FOREVER, c.c, &n);
        });
        if (wait_for_block) ASSERT_TRUE(eventually([&] { return token_in_use(c.c); }));
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        EXPECT_EQ(result_of(poll), MQ_ERR_NO_TOPIC);
        create(b.get(), "t");
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    }
}

TEST(TopicDelete, WakesBlockedPublishesSingleAndBatch) {
    BrokerPtr b = mqtest::new_broker();
    for (bool batch : {false, true}) {
        create(b.get(), "t", 1, 1);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
        ASSERT_EQ(publish(b.get(), "t", "fills it"), MQ_OK);
        Cancel c;
        auto pub = std::async(std::launch::async, [&] {
            mq_status st;
            if (!batch) {
                st = publish(b.get(), "t", "waits", MQ_WAIT_FOREVER, c.c);
            } else {
                const mq_record r[2] = {{nullptr, 0, "a", 1, nullptr, 0},
                                        {nullptr, 0, "b", 1, nullptr, 0}};
                size_t published = 9;
                st = mq_topic_publish_batch(b.get(), "t", r, sizeof r[0], 2, MQ_WAIT_FOREVER, c.c,
                                            nullptr, sizeof(mq_publish_result), &published);
                EXPECT_EQ(published, 0u);
            }
            EXPECT_NE(std::strstr(mq_last_error(), "deleted"), nullptr) << mq_last_error();
            return st;
        });
        ASSERT_TRUE(eventually([&] { return token_in_use(c.c); }));
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        EXPECT_EQ(result_of(pub), MQ_ERR_NO_TOPIC) << (batch ? "batch" : "single");
    }
}

TEST(TopicDelete, MembersWakeAndEveryCallButCloseSaysNoTopic) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t", 2);
    mq_member *asleep = nullptr, *idle = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &asleep), MQ_OK);
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &idle), MQ_OK);
    size_t count = 0;
    int32_t parts[2];
    ASSERT_EQ(mq_member_get_assignment(asleep, nullptr, parts, 2, &count), MQ_OK);
    auto poll = std::async(std::launch::async, [&] {
        mq_message m[1];
        size_t n = 0;
        return mq_member_poll(asleep, m, sizeof m[0], 1, MQ_WAIT_FOREVER, nullptr, &n);
    });
    ASSERT_TRUE(eventually([&] { return member_poll_asleep(asleep); }));
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
    EXPECT_EQ(result_of(poll), MQ_ERR_NO_TOPIC);

    mq_message m[1];
    size_t n = 0;
    EXPECT_EQ(mq_member_poll(idle, m, sizeof m[0], 1, 0, nullptr, &n), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_get_assignment(idle, nullptr, parts, 2, &count), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_ack(idle, 0, 0), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_nack(idle, 0, 0), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_member_extend_lease(idle, 0), MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::string(mq_member_id(idle)), "");
    // A member of the new topic of that name is a member of another group.
    create(b.get(), "t", 2);
    mq_member *fresh = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &fresh), MQ_OK);
    ASSERT_EQ(mq_member_get_assignment(fresh, nullptr, parts, 2, &count), MQ_OK);
    EXPECT_EQ(count, 2u);  // alone in its group: the old members are not in it
    EXPECT_EQ(mq_member_close(asleep), MQ_OK);
    EXPECT_EQ(mq_member_close(idle), MQ_OK);
    EXPECT_EQ(mq_member_close(fresh), MQ_OK);
}

// A view a member holds stays readable after the deletion, until the member is closed, and the
// topic's memory goes with the close (ASan catches an early free).
TEST(TopicDelete, AMembersViewsStayValidUntilItCloses) {
    BrokerPtr b = mqtest::new_broker();
    const int64_t topics_before = mq::Topic::alive_for_testing();
    create(b.get(), "t");
    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &m), MQ_OK);
    const std::string text(200, 'v');
    ASSERT_EQ(publish(b.get(), "t", text), MQ_OK);
    mq_message msg[1];
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m, msg, sizeof msg[0], 1, 0, nullptr, &n), MQ_OK);
    ASSERT_EQ(n, 1u);
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
    for (int i = 0; i < 4; i++) b->collect_for_testing();
    EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before + 1);  // the member holds it
    EXPECT_EQ(mqtest::payload_of(msg[0]), text);
    ASSERT_EQ(mq_member_close(m), MQ_OK);
    EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before);
}

struct Push {
    std::mutex mu;
    std::condition_variable cv;
    bool in_handler = false, release = false;
    std::atomic<int> calls{0};
    std::string seen;
};

int blocking_handler(void *user, const mq_message *msg) {
    auto *p = static_cast<Push *>(user);
    p->calls++;
    std::unique_lock lk(p->mu);
    p->in_handler = true;
    p->cv.notify_all();
    p->cv.wait(lk, [&] { return p->release; });
    p->seen = mqtest::payload_of(*msg);  // after the deletion: the view must still be there
    return 0;
}

// A handler running when its topic is deleted finishes with a valid message; no handler runs
// afterwards; the handle closes as usual and the topic's memory goes with it.
TEST(TopicDelete, PushSubscriptionsStopAndTheirHandlerMessageStaysValid) {
    for (bool member_mode : {true, false}) {
        SCOPED_TRACE(member_mode ? "member" : "partition list");
        BrokerPtr b = mqtest::new_broker();
        const int64_t topics_before = mq::Topic::alive_for_testing();
        create(b.get(), "t");
        Push push;
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        const int32_t part = 0;
        if (!member_mode) {
            o.partitions = &part;
            o.partition_count = 1;
        }
        mq_subscription *sub = nullptr;
        ASSERT_EQ(
            mq_subscription_open(b.get(), "t", "g", &o, blocking_handler, &push, nullptr, &sub),
            MQ_OK)
            << mq_last_error();
        const std::string text(300, 'p');
        ASSERT_EQ(publish(b.get(), "t", text), MQ_OK);
        ASSERT_EQ(publish(b.get(), "t", "second"), MQ_OK);
        {
            std::unique_lock lk(push.mu);
            ASSERT_TRUE(push.cv.wait_for(lk, kHang, [&] { return push.in_handler; }));
        }
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        for (int i = 0; i < 4; i++) b->collect_for_testing();
        {
            std::lock_guard lk(push.mu);
            push.release = true;
            push.cv.notify_all();
        }
        ASSERT_EQ(mq_subscription_close(sub), MQ_OK);  // joins the loops: they have ended
        EXPECT_EQ(push.seen, text);
        EXPECT_EQ(push.calls.load(), 1);  // "second" was never handed to the handler
        EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before);
    }
}

TEST(TopicDelete, ASubscriptionOrMemberCannotStartOnADeletedTopic) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t");
    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &m), MQ_ERR_NO_TOPIC);
    Push push;
    mq_subscription *sub = nullptr;
    EXPECT_EQ(
        mq_subscription_open(b.get(), "t", "g", nullptr, blocking_handler, &push, nullptr, &sub),
        MQ_ERR_NO_TOPIC);
}

// A group that dead-letters into a deleted topic keeps its poison message at the head and says
// why; the dead letters it wrote before keep their origin names after their group has gone.
TEST(TopicDelete, DeadLetterTopicDeleted) {
    mqtest::ManualClock clock;
    BrokerPtr b = mqtest::new_broker(&clock);
    create(b.get(), "t");
    create(b.get(), "dlq");
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "reader", nullptr), MQ_OK);
    mq_group_options go;
    mq_group_options_init(&go, sizeof go);
    go.max_deliveries = 1;
    go.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", &go), MQ_OK);
    mq_message m[2];
    size_t n = 0;
    auto poison = [&](const std::string &text) {
        ASSERT_EQ(publish(b.get(), "t", text), MQ_OK);
        ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n), MQ_OK);
        ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    };
    poison("first");
    ASSERT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n), MQ_TIMEOUT);
    ASSERT_EQ(mq_group_poll(b.get(), "dlq", "reader", 0, m, sizeof m[0], 1, 0, nullptr, &n), MQ_OK);
    ASSERT_NE(m[0].dead_letter, nullptr);
    const mq_dead_letter *origin = m[0].dead_letter;
    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "g"), MQ_OK);
    for (int i = 0; i < 4; i++) b->collect_for_testing();
    EXPECT_STREQ(origin->group, "g");  // mq.h: the strings live as long as the broker
    EXPECT_STREQ(origin->topic, "t");

    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", &go), MQ_OK);
    poison("second");
    ASSERT_EQ(mq_topic_delete(b.get(), "dlq"), MQ_OK);
    for (int i = 0; i < 4; i++) b->collect_for_testing();
    EXPECT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n),
              MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::strstr(mq_last_error(), "dead-letter topic dlq was deleted"), nullptr)
        << mq_last_error();
    mq_group_info gi = mqtest::group_info(b.get(), "t", "g");
    EXPECT_EQ(gi.committed, 1);  // the poison message waits at the head
    create(b.get(), "dlq");      // a new topic of the name does not take the old one's place
    EXPECT_EQ(mq_group_poll(b.get(), "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n),
              MQ_ERR_NO_TOPIC);
}

// Deletion racing a publisher and a poller that loop on the topic (and re-creation under the
// same name): every call returns a documented status, and nothing is used after it is freed
// (TSan, ASan).
TEST(TopicDelete, RacesPublishersAndPollersInALoop) {
    BrokerPtr b = mqtest::new_broker();
    create(b.get(), "t", 2, 64);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    auto ok_status = [](mq_status st) {
        return st == MQ_OK || st == MQ_ERR_NO_TOPIC || st == MQ_ERR_NO_GROUP || st == MQ_FULL ||
               st == MQ_TIMEOUT || st == MQ_ERR_NOT_IN_FLIGHT;
    };
    std::thread publisher([&] {
        while (!stop) {
            const mq_status st = publish(b.get(), "t", "payload", 1);
            if (!ok_status(st)) bad++;
        }
    });
    std::thread poller([&] {
        mq_message m[8];
        while (!stop) {
            size_t n = 0;
            for (int32_t p = 0; p < 2; p++) {
                const mq_status st =
                    mq_group_poll(b.get(), "t", "g", p, m, sizeof m[0], 8, 1, nullptr, &n);
                if (!ok_status(st)) bad++;
                if (st == MQ_OK) {
                    // Not the payload's bytes: mq.h lets a deletion that returns meanwhile end
                    // the views of mq_group_poll, so reading them here would be this test's own
                    // use after free. The length lives in this thread's mq_message.
                    if (m[n - 1].payload_len != std::strlen("payload")) bad++;
                    if (!ok_status(mq_group_ack(b.get(), "t", "g", p, m[n - 1].offset))) bad++;
                }
            }
        }
    });
    for (int i = 0; i < 2000; i++) {
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        create(b.get(), "t", 2, 64);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    }
    stop = true;
    publisher.join();
    poller.join();
    EXPECT_EQ(bad.load(), 0);
}

}  // namespace
