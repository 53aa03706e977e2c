// Publisher and cursor handles (mq.h, "handles", 1.7): the named calls' behaviour with the
// lookup done once, what a handle holds (its broker's memory, its topic and group, not their
// names), waits that wake on publish, close and deletion, every release order, and several
// threads sharing one handle.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi/broker.h"
#include "core/topic.h"
#include "util/cancel.h"
#include "mq_test_util.h"
#include "token_probe.h"

namespace {

using namespace mqtest;

struct PublisherCloser {
    void operator()(mq_publisher *p) const { mq_publisher_close(p); }
};
struct CursorCloser {
    void operator()(mq_cursor *c) const { mq_cursor_close(c); }
};
using PublisherPtr = std::unique_ptr<mq_publisher, PublisherCloser>;
using CursorPtr = std::unique_ptr<mq_cursor, CursorCloser>;

PublisherPtr open_publisher(mq_broker *b, const char *topic) {
    mq_publisher *p = nullptr;
    EXPECT_EQ(mq_publisher_open(b, topic, &p), MQ_OK) << mq_last_error();
    return PublisherPtr(p);
}

CursorPtr open_cursor(mq_broker *b, const char *topic, const char *group, int32_t partition = 0) {
    mq_cursor *c = nullptr;
    EXPECT_EQ(mq_cursor_open(b, topic, group, partition, &c), MQ_OK) << mq_last_error();
    return CursorPtr(c);
}

BrokerPtr one_topic(int64_t capacity = 64, const mq_group_options *o = nullptr) {
    BrokerPtr b = new_broker();
    const mq_topic_config c = topic_config(1, capacity);
    EXPECT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_group_subscribe(b.get(), "t", "g", o), MQ_OK) << mq_last_error();
    return b;
}

mq_status publish(mq_publisher *p, const std::string &payload, int64_t wait_ms = MQ_NO_WAIT,
                  int64_t *offset = nullptr) {
    return mq_publisher_publish(p, nullptr, 0, payload.data(), payload.size(), nullptr, 0, wait_ms,
                                nullptr, nullptr, offset);
}

mq_status poll(mq_cursor *c, std::vector<mq_message> &out, int64_t wait_ms = MQ_NO_WAIT,
               mq_cancel *cancel = nullptr) {
    size_t n = 0;
    out.resize(16);
    const mq_status st =
        mq_cursor_poll(c, out.data(), sizeof(mq_message), out.size(), wait_ms, cancel, &n);
    out.resize(n);
    return st;
}

TEST(Handles, ShareTheLogAndTheGroupPositionWithTheNamedCalls) {
    auto b = one_topic();
    auto p = open_publisher(b.get(), "t");
    auto c = open_cursor(b.get(), "t", "g");
    int64_t at = -1;
    ASSERT_EQ(publish(p.get(), "a", MQ_NO_WAIT, &at), MQ_OK);
    EXPECT_EQ(at, 0);
    mqtest::publish(b.get(), "t", nullptr, "b");
    const mq_record recs[2] = {{nullptr, 0, "c", 1, nullptr, 0, 0},
                               {nullptr, 0, "d", 1, nullptr, 0, 0}};
    mq_publish_result res[2];
    size_t published = 0;
    ASSERT_EQ(mq_publisher_publish_batch(p.get(), recs, sizeof(mq_record), 2, MQ_NO_WAIT, nullptr,
                                         res, sizeof res[0], &published),
              MQ_OK);
    EXPECT_EQ(published, 2u);
    EXPECT_EQ(res[1].offset, 3);

    std::vector<mq_message> got;
    size_t n = 0;
    got.resize(1);
    ASSERT_EQ(mq_cursor_poll(c.get(), got.data(), sizeof(mq_message), 1, MQ_NO_WAIT, nullptr, &n),
              MQ_OK);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(payload_of(got[0]), "a");
    auto named = mqtest::poll(b.get(), "t", "g", 0, 1);  // the named poll goes on from there
    ASSERT_EQ(named.size(), 1u);
    EXPECT_EQ(named[0].offset, 1);
    EXPECT_EQ(mq_cursor_ack(c.get(), 1), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 2);
    ASSERT_EQ(
        mq_cursor_ack_poll(c.get(), 1, got.data(), sizeof(mq_message), 1, MQ_NO_WAIT, nullptr, &n),
        MQ_ERR_NOT_IN_FLIGHT);  // a rejected ack polls nothing
    EXPECT_EQ(n, 0u);

    alignas(8) unsigned char buf[4096];
    size_t needed = 0;
    ASSERT_EQ(mq_cursor_poll_copy(c.get(), buf, sizeof buf, 1, MQ_NO_WAIT, nullptr, &n, &needed),
              MQ_OK);
    ASSERT_EQ(n, 1u);
    mq_copied_message e;
    std::memcpy(&e, buf + sizeof(mq_copy_header), sizeof e);
    EXPECT_EQ(e.offset, 2);
    ASSERT_EQ(
        mq_cursor_ack_poll_copy(c.get(), 2, buf, sizeof buf, 4, MQ_NO_WAIT, nullptr, &n, &needed),
        MQ_OK);
    ASSERT_EQ(n, 1u);
    std::memcpy(&e, buf + sizeof(mq_copy_header), sizeof e);
    EXPECT_EQ(e.offset, 3);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(buf) + e.payload_at, e.payload_len), "d");
    EXPECT_EQ(mq_cursor_ack(c.get(), 3), MQ_OK);
    EXPECT_EQ(partition_info(b.get(), "t").backlog, 0);
}

TEST(Handles, RefuseBadArgumentsAsTheNamedCallsDo) {
    auto b = one_topic(2);
    mq_publisher *p = nullptr;
    mq_cursor *c = nullptr;
    EXPECT_EQ(mq_publisher_open(nullptr, "t", &p), MQ_ERR_INVALID);
    EXPECT_EQ(mq_publisher_open(b.get(), nullptr, &p), MQ_ERR_INVALID);
    EXPECT_EQ(mq_publisher_open(b.get(), "bad name", &p), MQ_ERR_INVALID);
    EXPECT_EQ(mq_publisher_open(b.get(), "none", &p), MQ_ERR_NO_TOPIC);
    EXPECT_EQ(mq_publisher_open(b.get(), "t", nullptr), MQ_ERR_INVALID);
    EXPECT_EQ(mq_cursor_open(b.get(), "t", nullptr, 0, &c), MQ_ERR_INVALID);
    EXPECT_EQ(mq_cursor_open(b.get(), "t", "nobody", 0, &c), MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_cursor_open(b.get(), "t", "g", 1, &c), MQ_ERR_PARTITION);
    EXPECT_EQ(mq_cursor_open(b.get(), "t", "g", -1, &c), MQ_ERR_PARTITION);
    EXPECT_EQ(mq_cursor_open(b.get(), "t", "g", 0, nullptr), MQ_ERR_INVALID);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(c, nullptr);

    EXPECT_EQ(publish(nullptr, "x"), MQ_ERR_INVALID);
    EXPECT_EQ(mq_cursor_ack(nullptr, 0), MQ_ERR_INVALID);
    std::vector<mq_message> got;
    EXPECT_EQ(poll(nullptr, got), MQ_ERR_INVALID);
    mq_publisher_close(nullptr);
    mq_cursor_close(nullptr);

    auto pub = open_publisher(b.get(), "t");
    auto cur = open_cursor(b.get(), "t", "g");
    EXPECT_EQ(mq_publisher_publish(pub.get(), nullptr, 3, "x", 1, nullptr, 0, 0, nullptr, nullptr,
                                   nullptr),
              MQ_ERR_INVALID);  // key NULL with a length
    EXPECT_EQ(publish(pub.get(), "x", -2), MQ_ERR_INVALID);
    EXPECT_EQ(publish(pub.get(), "x"), MQ_OK);
    EXPECT_EQ(publish(pub.get(), "y"), MQ_OK);
    EXPECT_EQ(publish(pub.get(), "z"), MQ_FULL);
    size_t n = 7;
    EXPECT_EQ(mq_cursor_poll(cur.get(), nullptr, sizeof(mq_message), 1, 0, nullptr, &n),
              MQ_ERR_INVALID);
    EXPECT_EQ(n, 0u);
    mq_message m;
    EXPECT_EQ(mq_cursor_poll(cur.get(), &m, sizeof(mq_message), 0, 0, nullptr, &n), MQ_ERR_INVALID);
    alignas(8) unsigned char buf[64];
    EXPECT_EQ(
        mq_cursor_poll_copy(cur.get(), buf, sizeof(mq_copy_header) - 1, 1, 0, nullptr, &n, nullptr),
        MQ_ERR_INVALID);  // smaller than the copy header
    EXPECT_EQ(mq_cursor_ack(cur.get(), 0), MQ_ERR_NOT_IN_FLIGHT);
}

TEST(Handles, HoldTheirTopicAndGroupNotTheirNames) {
    auto b = one_topic();
    const int64_t topics_before = mq::Topic::alive_for_testing();
    auto p = open_publisher(b.get(), "t");
    auto c = open_cursor(b.get(), "t", "g");
    ASSERT_EQ(publish(p.get(), "a"), MQ_OK);

    ASSERT_EQ(mq_group_unsubscribe(b.get(), "t", "g"), MQ_OK);
    std::vector<mq_message> got;
    EXPECT_EQ(poll(c.get(), got), MQ_ERR_NO_GROUP);
    EXPECT_NE(std::strstr(mq_last_error(), "no longer subscribed"), nullptr) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    EXPECT_EQ(mq_cursor_ack(c.get(), 0), MQ_ERR_NO_GROUP);  // the new group is another group

    ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
    EXPECT_EQ(publish(p.get(), "b"), MQ_ERR_NO_TOPIC);
    EXPECT_NE(std::strstr(mq_last_error(), "was deleted"), nullptr) << mq_last_error();
    EXPECT_EQ(poll(c.get(), got), MQ_ERR_NO_TOPIC);
    const mq_topic_config cfg = topic_config(1, 8);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    EXPECT_EQ(publish(p.get(), "b"), MQ_ERR_NO_TOPIC);

    // The deleted topic's memory stays while a handle holds it, and goes with the last one.
    b->collect_for_testing();
    EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before + 1);
    p.reset();
    b->collect_for_testing();
    EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before + 1);
    c.reset();
    b->collect_for_testing();
    EXPECT_EQ(mq::Topic::alive_for_testing(), topics_before);
}

TEST(Handles, OutliveTheBrokerAsClosedHandles) {
    const int64_t brokers_before = mq_broker::alive_for_testing();
    auto b = one_topic();
    auto p = open_publisher(b.get(), "t");
    auto c = open_cursor(b.get(), "t", "g");
    ASSERT_EQ(publish(p.get(), "a"), MQ_OK);
    b.reset();  // mq_broker_free: the handles keep its memory
    EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before + 1);
    EXPECT_EQ(publish(p.get(), "b"), MQ_CLOSED);
    std::vector<mq_message> got;
    EXPECT_EQ(poll(c.get(), got), MQ_CLOSED);
    EXPECT_EQ(mq_cursor_ack(c.get(), 0), MQ_CLOSED);
    mq_record r{nullptr, 0, "x", 1, nullptr, 0, 0};
    size_t published = 9;
    EXPECT_EQ(mq_publisher_publish_batch(p.get(), &r, sizeof r, 1, 0, nullptr, nullptr,
                                         sizeof(mq_publish_result), &published),
              MQ_CLOSED);
    EXPECT_EQ(published, 0u);
    c.reset();
    EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before + 1);
    p.reset();  // the last reference: the broker's memory goes
    EXPECT_EQ(mq_broker::alive_for_testing(), brokers_before);
}

struct Token {
    mq_cancel *c = nullptr;
    Token() { EXPECT_EQ(mq_cancel_new(&c), MQ_OK); }
    ~Token() { mq_cancel_free(c); }
};

// A blocking poll through a cursor wakes on a publish through a publisher, on its cancel
// token, on the topic's deletion and on close; a publisher waiting for room wakes on an ack.
TEST(Handles, WaitsWakeOnPublishCancelDeleteAndClose) {
    auto b = one_topic(1);
    auto p = open_publisher(b.get(), "t");
    auto c = open_cursor(b.get(), "t", "g");
    std::vector<mq_message> got;
    {
        Token tok;
        std::thread poller([&] { EXPECT_EQ(poll(c.get(), got, MQ_WAIT_FOREVER, tok.c), MQ_OK); });
        ASSERT_TRUE(eventually([&] { return token_in_use(tok.c); }));
        ASSERT_EQ(publish(p.get(), "a"), MQ_OK);
        poller.join();
        ASSERT_EQ(got.size(), 1u);
    }
    std::thread publisher([&] { EXPECT_EQ(publish(p.get(), "b", MQ_WAIT_FOREVER), MQ_OK); });
    ASSERT_TRUE(eventually([&] { return partition_info(b.get(), "t").producer_waits == 1; }));
    ASSERT_EQ(mq_cursor_ack(c.get(), 0), MQ_OK);
    publisher.join();
    ASSERT_EQ(poll(c.get(), got), MQ_OK);  // b is in flight now: nothing more to hand out
    ASSERT_EQ(got.size(), 1u);
    {
        Token tok;
        std::thread poller(
            [&] { EXPECT_EQ(poll(c.get(), got, MQ_WAIT_FOREVER, tok.c), MQ_CANCELLED); });
        ASSERT_TRUE(eventually([&] { return token_in_use(tok.c); }));
        mq_cancel_trigger(tok.c);
        poller.join();
    }
    {
        Token tok;
        std::thread poller(
            [&] { EXPECT_EQ(poll(c.get(), got, MQ_WAIT_FOREVER, tok.c), MQ_ERR_NO_TOPIC); });
        ASSERT_TRUE(eventually([&] { return token_in_use(tok.c); }));
        ASSERT_EQ(mq_topic_delete(b.get(), "t"), MQ_OK);
        poller.join();
    }
    const mq_topic_config cfg = topic_config(1, 4);
    ASSERT_EQ(mq_topic_create(b.get(), "u", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "u", "g", nullptr), MQ_OK);
    auto cu = open_cursor(b.get(), "u", "g");
    {
        Token tok;
        std::thread poller(
            [&] { EXPECT_EQ(poll(cu.get(), got, MQ_WAIT_FOREVER, tok.c), MQ_CLOSED); });
        ASSERT_TRUE(eventually([&] { return token_in_use(tok.c); }));
        ASSERT_EQ(mq_broker_close(b.get()), MQ_OK);
        poller.join();
    }
}

// Several threads publish through one publisher while two consumers poll one partition each
// through their own cursors: every message arrives once, in each partition's order.
TEST(Handles, ThreadsShareOnePublisher) {
    constexpr int kThreads = 4, kEach = 2000;
    BrokerPtr b = new_broker();
    const mq_topic_config cfg = topic_config(2, 64);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    auto p = open_publisher(b.get(), "t");
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            const std::string key = "k" + std::to_string(t);
            for (int i = 0; i < kEach; i++) {
                const std::string v = std::to_string(i);
                ASSERT_EQ(
                    mq_publisher_publish(p.get(), key.data(), key.size(), v.data(), v.size(),
                                         nullptr, 0, MQ_WAIT_FOREVER, nullptr, nullptr, nullptr),
                    MQ_OK)
                    << mq_last_error();
            }
        });
    }
    std::atomic<int> total{0};
    std::vector<std::thread> consumers;
    for (int32_t part = 0; part < 2; part++) {
        consumers.emplace_back([&, part] {
            auto c = open_cursor(b.get(), "t", "g", part);
            std::vector<int> next(kThreads, 0);
            std::vector<mq_message> got(64);
            int64_t last = -1;
            while (total.load() < kThreads * kEach) {
                size_t n = 0;
                const mq_status st =
                    last < 0 ? mq_cursor_poll(c.get(), got.data(), sizeof(mq_message), got.size(),
                                              10, nullptr, &n)
                             : mq_cursor_ack_poll(c.get(), last, got.data(), sizeof(mq_message),
                                                  got.size(), 10, nullptr, &n);
                ASSERT_TRUE(st == MQ_OK || st == MQ_TIMEOUT) << mq_last_error();
                if (st == MQ_TIMEOUT) last = -1;  // the ack went with the empty poll
                for (size_t i = 0; i < n; i++) {
                    const int t = static_cast<const char *>(got[i].key)[1] - '0';
                    ASSERT_EQ(payload_of(got[i]), std::to_string(next[t]++));  // per-key order
                    last = got[i].offset;
                }
                total += static_cast<int>(n);
            }
        });
    }
    for (auto &t : threads) t.join();
    for (auto &t : consumers) t.join();
    EXPECT_EQ(total.load(), kThreads * kEach);
}

// A share group through a cursor: polls acquire, an ack accepts.
TEST(Handles, CursorOnAShareGroup) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.share = MQ_SHARE_ALL;
    auto b = one_topic(8, &o);
    auto p = open_publisher(b.get(), "t");
    auto c1 = open_cursor(b.get(), "t", "g");
    auto c2 = open_cursor(b.get(), "t", "g");
    ASSERT_EQ(publish(p.get(), "a"), MQ_OK);
    ASSERT_EQ(publish(p.get(), "b"), MQ_OK);
    mq_message m1, m2;
    size_t n = 0;
    ASSERT_EQ(mq_cursor_poll(c1.get(), &m1, sizeof m1, 1, 0, nullptr, &n), MQ_OK);
    ASSERT_EQ(mq_cursor_poll(c2.get(), &m2, sizeof m2, 1, 0, nullptr, &n), MQ_OK);
    EXPECT_EQ(m1.offset, 0);
    EXPECT_EQ(m2.offset, 1);  // side by side on one partition
    EXPECT_EQ(mq_cursor_ack(c2.get(), 1), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").acquired, 1);
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 0);
    EXPECT_EQ(mq_cursor_ack(c1.get(), 0), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 2);
}

}  // namespace
