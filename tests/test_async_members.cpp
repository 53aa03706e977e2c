// The member polls' asynchronous forms (mq.h, ABI 1.4): a pending one waits on all of the
// member's partitions without a thread, ends as the blocking form would (messages, a
// rebalance, the deadline, the token), keeps the member's session alive, and is completed by
// mq_member_close, which waits for it (or, from a callback, leaves the handle to it).
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "async_done.h"
#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

struct MemberClose {
    void operator()(mq_member *m) const {
        if (m) EXPECT_EQ(mq_member_close(m), MQ_OK) << mq_last_error();
    }
};
using MemberPtr = std::unique_ptr<mq_member, MemberClose>;

MemberPtr join(mq_broker *b, const char *id, int64_t session_ms = 10000) {
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = id;
    o.session_timeout_ms = session_ms;
    mq_member *m = nullptr;
    EXPECT_EQ(mq_member_join(b, "t", "g", &o, &m), MQ_OK) << mq_last_error();
    return MemberPtr(m);
}

BrokerPtr broker_with_topic(int32_t partitions, ManualClock *clock = nullptr,
                            int64_t ack_timeout_ms = 30000) {
    BrokerPtr b = new_broker(clock);
    mq_topic_config c = topic_config(partitions, 8);
    c.ack_timeout_ms = ack_timeout_ms;
    EXPECT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK) << mq_last_error();
    return b;
}

void publish_to(mq_broker *b, int32_t partition, const char *payload) {
    // A key that routes to `partition` of 2 (Kafka's murmur2): found once, by trying.
    for (int i = 0;; i++) {
        const std::string key = "k" + std::to_string(i);
        int32_t p = -1;
        ASSERT_EQ(mq_key_partition(key.data(), key.size(), 2, &p), MQ_OK);
        if (p != partition) continue;
        publish(b, "t", key.c_str(), payload);
        return;
    }
}

int64_t generation(mq_member *m) {
    int64_t g = 0;
    size_t n = 0;
    EXPECT_EQ(mq_member_get_assignment(m, &g, nullptr, 0, &n), MQ_OK) << mq_last_error();
    return g;
}

TEST(AsyncMembers, APendingPollWaitsOnEveryPartitionOfTheMember) {
    BrokerPtr b = broker_with_topic(2);
    MemberPtr m = join(b.get(), "a");
    generation(m.get());
    for (int32_t partition : {1, 0}) {
        Done d;
        mq_message msg{};
        size_t n = 0;
        ASSERT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 1, MQ_WAIT_FOREVER, nullptr, &n,
                                       &Done::fn, &d),
                  MQ_PENDING)
            << mq_last_error();
        publish_to(b.get(), partition, "hello");
        ASSERT_EQ(d.wait(), MQ_OK) << d.error;
        EXPECT_EQ(n, 1u);
        EXPECT_EQ(msg.partition, partition);
        EXPECT_EQ(payload_of(msg), "hello");
        EXPECT_NE(d.thread, std::this_thread::get_id());
        EXPECT_EQ(mq_member_ack(m.get(), partition, msg.offset), MQ_OK) << mq_last_error();
    }
    // With messages there, the call completes at once and never calls back.
    publish_to(b.get(), 1, "ready");
    Done d;
    mq_message msg{};
    size_t n = 0;
    ASSERT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 1, MQ_WAIT_FOREVER, nullptr, &n,
                                   &Done::fn, &d),
              MQ_OK);
    EXPECT_EQ(payload_of(msg), "ready");
    EXPECT_EQ(d.count(), 0);
}

TEST(AsyncMembers, TheAckStandsAndTheCopyingFormCopies) {
    BrokerPtr b = broker_with_topic(1);
    MemberPtr m = join(b.get(), "a");
    generation(m.get());
    publish(b.get(), "t", "k", "first");
    mq_message first{};
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m.get(), &first, sizeof first, 1, 0, nullptr, &n), MQ_OK);
    alignas(8) unsigned char buf[512];
    Done d;
    size_t needed = 0;
    ASSERT_EQ(mq_member_ack_poll_copy_async(m.get(), 0, first.offset, buf, sizeof buf, 1,
                                            MQ_WAIT_FOREVER, nullptr, &n, &needed, &Done::fn, &d),
              MQ_PENDING)
        << mq_last_error();
    mq_group_info info{};
    ASSERT_EQ(mq_group_get_info(b.get(), "t", "g", 0, &info, sizeof info), MQ_OK);
    EXPECT_EQ(info.committed, 1);  // acked before the call returned
    publish(b.get(), "t", "k", "second");
    ASSERT_EQ(d.wait(), MQ_OK) << d.error;
    ASSERT_EQ(n, 1u);
    mq_copy_header h{};
    std::memcpy(&h, buf, sizeof h);
    EXPECT_EQ(h.count, 1u);
    mq_copied_message c{};
    std::memcpy(&c, buf + sizeof h, sizeof c);
    EXPECT_EQ(std::string(reinterpret_cast<char *>(buf) + c.payload_at, c.payload_len), "second");
    EXPECT_GE(needed, sizeof h + sizeof c + c.payload_len);
    EXPECT_LE(needed, sizeof buf);
}

TEST(AsyncMembers, ARebalanceTheDeadlineAndTheTokenEndAPendingPoll) {
    BrokerPtr b = broker_with_topic(2);
    MemberPtr a = join(b.get(), "a");
    generation(a.get());
    mq_message msg{};
    size_t n = 0;
    Done rebalanced;
    ASSERT_EQ(mq_member_poll_async(a.get(), &msg, sizeof msg, 1, MQ_WAIT_FOREVER, nullptr, &n,
                                   &Done::fn, &rebalanced),
              MQ_PENDING);
    MemberPtr other = join(b.get(), "b");
    ASSERT_EQ(rebalanced.wait(), MQ_REBALANCED) << rebalanced.error;
    EXPECT_NE(rebalanced.error.find("mq_member_get_assignment"), std::string::npos);
    generation(a.get());

    Done timed;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(
        mq_member_poll_async(a.get(), &msg, sizeof msg, 1, 60, nullptr, &n, &Done::fn, &timed),
        MQ_PENDING);
    ASSERT_EQ(timed.wait(), MQ_TIMEOUT);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 60ms);

    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    Done cancelled;
    ASSERT_EQ(mq_member_poll_async(a.get(), &msg, sizeof msg, 1, MQ_WAIT_FOREVER, c, &n, &Done::fn,
                                   &cancelled),
              MQ_PENDING);
    mq_cancel_trigger(c);
    mq_cancel_free(c);
    ASSERT_EQ(cancelled.wait(), MQ_CANCELLED);
    EXPECT_EQ(cancelled.count(), 1);
}

TEST(AsyncMembers, ARunOutLeaseWakesAPendingPollWithTheRedelivery) {
    BrokerPtr b = broker_with_topic(1, nullptr, 50);
    MemberPtr m = join(b.get(), "a");
    generation(m.get());
    publish(b.get(), "t", "k", "again");
    mq_message msg{};
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m.get(), &msg, sizeof msg, 1, 0, nullptr, &n), MQ_OK);  // never acked
    Done d;
    ASSERT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 1, 10000, nullptr, &n, &Done::fn, &d),
              MQ_PENDING);
    ASSERT_EQ(d.wait(), MQ_OK) << d.error;  // no publish: the lease's end alone wakes it
    EXPECT_EQ(payload_of(msg), "again");
    EXPECT_EQ(msg.delivery_count, 2u);
}

// A member with a pending poll is calling: its session does not run out meanwhile.
TEST(AsyncMembers, APendingPollKeepsTheMembersSessionAlive) {
    ManualClock clock;
    BrokerPtr b = broker_with_topic(2, &clock);
    MemberPtr a = join(b.get(), "a", 100);
    generation(a.get());
    mq_message msg{};
    size_t n = 0;
    Done d;
    ASSERT_EQ(mq_member_poll_async(a.get(), &msg, sizeof msg, 1, MQ_WAIT_FOREVER, nullptr, &n,
                                   &Done::fn, &d),
              MQ_PENDING);
    clock.advance_ms(1000);
    MemberPtr other = join(b.get(), "b");  // reaps members whose session ran out
    ASSERT_EQ(d.wait(), MQ_REBALANCED) << d.error;
    EXPECT_GT(generation(a.get()), 0) << "the waiting member was removed";
}

TEST(AsyncMembers, CloseCompletesThePendingPollsBeforeItReturns) {
    BrokerPtr b = broker_with_topic(2);
    mq_member *m = join(b.get(), "a").release();
    generation(m);
    Done d[2];
    mq_message msg[2];
    size_t n[2];
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(mq_member_poll_async(m, &msg[i], sizeof msg[i], 1, MQ_WAIT_FOREVER, nullptr,
                                       &n[i], &Done::fn, &d[i]),
                  MQ_PENDING);
    }
    ASSERT_EQ(mq_member_close(m), MQ_OK);
    for (Done &x : d) {
        EXPECT_EQ(x.count(), 1);
        EXPECT_EQ(x.status, MQ_CLOSED);
        EXPECT_NE(x.error.find("member was closed"), std::string::npos) << x.error;
    }
    // The partitions it watched forgot it: a publish now wakes nobody and crashes nothing.
    publish_to(b.get(), 0, "after");
    publish_to(b.get(), 1, "after");
}

// Closed from the callback of its own poll (cancelled), while another poll of it is still
// pending: close returns at once, the other poll completes with MQ_CLOSED afterwards, and the
// handle goes with it (ASan: neither leaked nor used after it went).
TEST(AsyncMembers, ACallbackMayCloseItsMemberWhileAnotherPollOfItWaits) {
    BrokerPtr b = broker_with_topic(2);
    struct Closer {
        mq_member *m = nullptr;
        std::atomic<int> close_status{-1};
        Done done;
        static void fn(void *user, mq_status st) {
            auto *c = static_cast<Closer *>(user);
            c->close_status = mq_member_close(c->m);
            Done::fn(&c->done, st);
        }
    } closer;
    closer.m = join(b.get(), "a").release();
    generation(closer.m);
    mq_message first{}, second{};
    size_t n1 = 0, n2 = 0;
    Done other;
    mq_cancel *c = nullptr;
    ASSERT_EQ(mq_cancel_new(&c), MQ_OK);
    ASSERT_EQ(mq_member_poll_async(closer.m, &first, sizeof first, 1, MQ_WAIT_FOREVER, c, &n1,
                                   &Closer::fn, &closer),
              MQ_PENDING);
    ASSERT_EQ(mq_member_poll_async(closer.m, &second, sizeof second, 1, MQ_WAIT_FOREVER, nullptr,
                                   &n2, &Done::fn, &other),
              MQ_PENDING);
    mq_cancel_trigger(c);
    mq_cancel_free(c);
    ASSERT_EQ(closer.done.wait(), MQ_CANCELLED) << closer.done.error;
    EXPECT_EQ(closer.close_status.load(), MQ_OK);
    ASSERT_EQ(other.wait(), MQ_CLOSED) << other.error;
    EXPECT_EQ(other.count(), 1);
    b.reset();  // the completer exits; the handle went with the last pending call
}

TEST(AsyncMembers, ArgumentsAreCheckedAsTheBlockingFormsAre) {
    BrokerPtr b = broker_with_topic(1);
    MemberPtr m = join(b.get(), "a");
    mq_message msg{};
    size_t n = 0;
    EXPECT_EQ(
        mq_member_poll_async(nullptr, &msg, sizeof msg, 1, 10, nullptr, &n, &Done::fn, nullptr),
        MQ_ERR_INVALID);
    EXPECT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 1, 10, nullptr, &n, nullptr, nullptr),
              MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("done"), std::string::npos) << mq_last_error();
    Done d;
    generation(m.get());
    EXPECT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 0, 10, nullptr, &n, &Done::fn, &d),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_member_ack_poll_async(m.get(), 5, 0, &msg, sizeof msg, 1, 10, nullptr, &n,
                                       &Done::fn, &d),
              MQ_ERR_PARTITION);
    EXPECT_EQ(mq_member_ack_poll_async(m.get(), 0, 0, &msg, sizeof msg, 1, 10, nullptr, &n,
                                       &Done::fn, &d),
              MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(
        mq_member_poll_copy_async(m.get(), nullptr, 64, 1, 10, nullptr, &n, nullptr, &Done::fn, &d),
        MQ_ERR_INVALID);
    EXPECT_EQ(mq_member_poll_async(m.get(), &msg, sizeof msg, 1, 0, nullptr, &n, &Done::fn, &d),
              MQ_TIMEOUT);
    EXPECT_EQ(d.count(), 0);
}

}  // namespace
