// The reference trace of SPEC.md, row by row, through the public C API: every result, offset,
// cursor, log range, backlog and describe string is asserted exactly, so any drift between the
// library and the contract shows up as the row that broke. The push step is its own test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

using namespace std::chrono_literals;
// Leases are driven by hand: the trace moves time by 31 s in one step.
using mqtest::BrokerPtr;
using mqtest::ginfo;
using mqtest::ManualClock;
using mqtest::new_broker;
using mqtest::pinfo;

std::string describe(mq_broker *b, const char *topic, int32_t p) {
    size_t needed = 0;
    EXPECT_EQ(mq_partition_describe(b, topic, p, nullptr, 0, &needed), MQ_OK) << mq_last_error();
    std::string s(needed, '\0');
    EXPECT_EQ(mq_partition_describe(b, topic, p, s.data(), s.size(), &needed), MQ_OK)
        << mq_last_error();
    s.resize(std::strlen(s.c_str()));
    return s;
}

struct Published {
    mq_status status;
    int32_t partition;
    int64_t offset;
};

Published publish(mq_broker *b, const char *topic, const std::string &key,
                  const std::string &payload, int64_t wait_ms = MQ_NO_WAIT) {
    Published r{MQ_OK, -1, -1};
    r.status = mq_topic_publish(b, topic, key.data(), key.size(), payload.data(), payload.size(),
                                NULL, 0, wait_ms, nullptr, &r.partition, &r.offset);
    return r;
}

std::string payload_of(const mq_message &m) {
    return std::string(static_cast<const char *>(m.payload), m.payload_len);
}
std::string key_of(const mq_message &m) {
    return m.key ? std::string(static_cast<const char *>(m.key), m.key_len) : std::string("<null>");
}

// "offset:payload" for each message, the way the trace's result column prints a poll.
std::string render(const mq_message *msgs, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += std::to_string(msgs[i].offset) + ":" + payload_of(msgs[i]);
    }
    return s;
}

// The state a row of the trace prints for partition 1, checked through every introspection
// call rather than through describe alone.
void expect_p1(mq_broker *b, int64_t start, int64_t end, int64_t backlog, int64_t billing_c,
               int64_t billing_n, int64_t email_c, int64_t email_n, const std::string &text) {
    mq_partition_info p = pinfo(b, "orders", 1);
    EXPECT_EQ(p.start, start);
    EXPECT_EQ(p.end, end);
    EXPECT_EQ(p.backlog, backlog);
    EXPECT_EQ(p.capacity, 3);
    EXPECT_EQ(p.max_bytes, 0);
    // Every retained message here is key "user-a" (6 bytes) + a 3-byte payload.
    EXPECT_EQ(p.retained_bytes, (end - start) * 9);
    mq_group_info g = ginfo(b, "orders", "billing", 1);
    EXPECT_EQ(g.committed, billing_c);
    EXPECT_EQ(g.next, billing_n);
    EXPECT_EQ(g.lag, end - billing_c);
    EXPECT_EQ(g.in_flight, billing_n - billing_c);
    g = ginfo(b, "orders", "email", 1);
    EXPECT_EQ(g.committed, email_c);
    EXPECT_EQ(g.next, email_n);
    EXPECT_EQ(g.lag, end - email_c);
    EXPECT_EQ(g.in_flight, email_n - email_c);
    EXPECT_EQ(describe(b, "orders", 1), text);
}

TEST(SpecTrace, ReferenceTraceEveryRow) {
    ManualClock clock;
    BrokerPtr broker = new_broker(&clock);
    mq_broker *b = broker.get();

    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 2;
    cfg.capacity = 3;
    cfg.ack_timeout_ms = 30000;
    ASSERT_EQ(mq_topic_create(b, "orders", &cfg), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b, "orders", "billing", nullptr), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b, "orders", "email", nullptr), MQ_OK) << mq_last_error();

    int32_t pa = -1, pb = -1;
    ASSERT_EQ(mq_key_partition("user-a", 6, 2, &pa), MQ_OK);
    ASSERT_EQ(mq_key_partition("user-b", 6, 2, &pb), MQ_OK);
    EXPECT_EQ(pa, 1);
    EXPECT_EQ(pb, 0);

    // Row 1: publish o-1, o-2, o-3 (user-a); o-4 (user-b).
    const int64_t t_publish = clock.ns.load();
    for (int i = 0; i < 3; ++i) {
        Published r = publish(b, "orders", "user-a", "o-" + std::to_string(i + 1));
        ASSERT_EQ(r.status, MQ_OK) << "row 1, o-" << i + 1 << ": " << mq_last_error();
        EXPECT_EQ(r.partition, 1);
        EXPECT_EQ(r.offset, i);
    }
    Published r4 = publish(b, "orders", "user-b", "o-4");
    ASSERT_EQ(r4.status, MQ_OK) << mq_last_error();
    EXPECT_EQ(r4.partition, 0);
    EXPECT_EQ(r4.offset, 0);
    expect_p1(b, 0, 3, 3, 0, 0, 0, 0, "log 0..2, backlog 3/3; billing 0/0; email 0/0");
    EXPECT_EQ(describe(b, "orders", 0), "log 0..0, backlog 1/3; billing 0/0; email 0/0");

    // Row 2: publish o-5 (user-a), wait 0: full, nothing appended.
    Published r5 = publish(b, "orders", "user-a", "o-5", MQ_NO_WAIT);
    EXPECT_EQ(r5.status, MQ_FULL) << mq_status_name(r5.status);
    expect_p1(b, 0, 3, 3, 0, 0, 0, 0, "log 0..2, backlog 3/3; billing 0/0; email 0/0");

    // Row 3: billing polls max 2, acks 0.
    mq_message msgs[10];
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b, "orders", "billing", 1, msgs, sizeof(mq_message), 2, MQ_NO_WAIT,
                            nullptr, &n),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(render(msgs, n), "0:o-1, 1:o-2");
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(msgs[i].partition, 1);
        EXPECT_EQ(msgs[i].delivery_count, 1u);
        EXPECT_EQ(key_of(msgs[i]), "user-a");
        EXPECT_EQ(msgs[i].timestamp_ns, t_publish);
    }
    ASSERT_EQ(mq_group_ack(b, "orders", "billing", 1, 0), MQ_OK) << mq_last_error();
    expect_p1(b, 0, 3, 3, 1, 2, 0, 0, "log 0..2, backlog 3/3; billing 1/2; email 0/0");

    // Row 4: email polls max 10, acks 2.
    ASSERT_EQ(mq_group_poll(b, "orders", "email", 1, msgs, sizeof(mq_message), 10, MQ_NO_WAIT,
                            nullptr, &n),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(render(msgs, n), "0:o-1, 1:o-2, 2:o-3");
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(msgs[i].delivery_count, 1u);
    ASSERT_EQ(mq_group_ack(b, "orders", "email", 1, 2), MQ_OK) << mq_last_error();
    expect_p1(b, 1, 3, 2, 1, 2, 3, 3, "log 1..2, backlog 2/3; billing 1/2; email 3/3");

    // Row 5: publish o-5 again.
    Published r5b = publish(b, "orders", "user-a", "o-5");
    ASSERT_EQ(r5b.status, MQ_OK) << mq_last_error();
    EXPECT_EQ(r5b.partition, 1);
    EXPECT_EQ(r5b.offset, 3);
    expect_p1(b, 1, 4, 3, 1, 2, 3, 3, "log 1..3, backlog 3/3; billing 1/2; email 3/3");

    // Row 6: clock +31 s; billing's lease ran out, so its poll rewinds to 1.
    clock.ns += 31'000'000'000;
    ASSERT_EQ(mq_group_poll(b, "orders", "billing", 1, msgs, sizeof(mq_message), 10, MQ_NO_WAIT,
                            nullptr, &n),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(render(msgs, n), "1:o-2, 2:o-3, 3:o-5");
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(msgs[0].delivery_count, 2u);  // handed to billing in row 3 and now
    EXPECT_EQ(msgs[1].delivery_count, 1u);  // never handed to billing before
    EXPECT_EQ(msgs[2].delivery_count, 1u);
    expect_p1(b, 1, 4, 3, 1, 4, 3, 3, "log 1..3, backlog 3/3; billing 1/4; email 3/3");

    // Row 7: billing acks 3.
    ASSERT_EQ(mq_group_ack(b, "orders", "billing", 1, 3), MQ_OK) << mq_last_error();
    expect_p1(b, 3, 4, 1, 4, 4, 3, 3, "log 3..3, backlog 1/3; billing 4/4; email 3/3");

    // Row 8: billing acks 7: rejected, with the in-flight range named, and nothing changes.
    EXPECT_EQ(mq_group_ack(b, "orders", "billing", 1, 7), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_STREQ(mq_last_error(), "offset 7 is not in flight for billing (nothing is)");
    expect_p1(b, 3, 4, 1, 4, 4, 3, 3, "log 3..3, backlog 1/3; billing 4/4; email 3/3");

    // Partition 0 was never touched after row 1.
    mq_partition_info p0 = pinfo(b, "orders", 0);
    EXPECT_EQ(p0.start, 0);
    EXPECT_EQ(p0.end, 1);
    EXPECT_EQ(p0.backlog, 1);
}

// The push step: a handler that fails the first time it sees pay-2.
struct Ledger {
    std::mutex mu;
    std::condition_variable cv;
    // "payload ok|fail", with "#delivery_count" for pay-1 and pay-2 only: whether pay-3 was
    // already handed out (and dropped by the nack) depends on when the loop first polled.
    std::vector<std::string> calls;
    bool failed_once = false;
};

int ledger_handler(void *user, const mq_message *m) {
    auto *l = static_cast<Ledger *>(user);
    std::string p = payload_of(*m);
    std::lock_guard<std::mutex> lock(l->mu);
    bool fail = (p == "pay-2" && !l->failed_once);
    if (fail) l->failed_once = true;
    std::string call = p + (fail ? " fail" : " ok");
    if (p != "pay-3") call += " #" + std::to_string(m->delivery_count);
    l->calls.push_back(call);
    l->cv.notify_all();
    return fail ? 1 : 0;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 5000ms) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::yield();
    }
    return true;
}

TEST(SpecTrace, PushStep) {
    BrokerPtr broker = new_broker(nullptr);
    mq_broker *b = broker.get();
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 1;
    cfg.capacity = 10;
    ASSERT_EQ(mq_topic_create(b, "payments", &cfg), MQ_OK) << mq_last_error();

    Ledger ledger;
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "payments", "ledger", nullptr, &ledger_handler, &ledger,
                                   nullptr, &sub),
              MQ_OK)
        << mq_last_error();

    for (int i = 1; i <= 3; ++i) {
        std::string p = "pay-" + std::to_string(i);
        ASSERT_EQ(mq_topic_publish(b, "payments", nullptr, 0, p.data(), p.size(), NULL, 0,
                                   MQ_NO_WAIT, nullptr, nullptr, nullptr),
                  MQ_OK)
            << mq_last_error();
    }

    {
        std::unique_lock<std::mutex> lock(ledger.mu);
        ASSERT_TRUE(ledger.cv.wait_for(lock, 5s, [&] { return ledger.calls.size() >= 4; }))
            << "handler calls so far: " << ledger.calls.size();
    }
    // The ack of pay-3 follows its handler call; wait for it on the cursor itself.
    ASSERT_TRUE(eventually([&] {
        mq_group_info g{};
        return mq_group_get_info(b, "payments", "ledger", 0, &g, sizeof g) == MQ_OK &&
               g.committed == 3;
    })) << describe(b, "payments", 0);

    ASSERT_EQ(mq_subscription_close(sub), MQ_OK) << mq_last_error();
    std::vector<std::string> expected = {"pay-1 ok #1", "pay-2 fail #1", "pay-2 ok #2", "pay-3 ok"};
    {
        std::lock_guard<std::mutex> lock(ledger.mu);
        EXPECT_EQ(ledger.calls, expected);
    }
    EXPECT_EQ(describe(b, "payments", 0), "log empty, next offset 3, backlog 0/10; ledger 3/3");
    mq_partition_info p = pinfo(b, "payments", 0);
    EXPECT_EQ(p.start, 3);
    EXPECT_EQ(p.end, 3);
    EXPECT_EQ(p.backlog, 0);
    EXPECT_EQ(p.retained_bytes, 0);
    mq_group_info g = ginfo(b, "payments", "ledger", 0);
    EXPECT_EQ(g.committed, 3);
    EXPECT_EQ(g.next, 3);
}

}  // namespace
