// SPEC rule 10's coalesced acks in push loops: the acks of one polled batch may be deferred,
// but a handled message is never redelivered because its ack was: the loop acks before the
// lease could run out, the successes before a nack, and what it handled when it closes.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using namespace std::chrono_literals;

void make_topic(mq_broker *b, int64_t ack_timeout_ms = 30000) {
    mq_topic_config cfg = topic_config(1, 64);
    cfg.ack_timeout_ms = ack_timeout_ms;
    ASSERT_EQ(mq_topic_create(b, "t", &cfg), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b, "t", "g", nullptr), MQ_OK) << mq_last_error();
}

mq_subscription *open(mq_broker *b, int32_t prefetch, mq_handler h, void *user) {
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.prefetch = prefetch;
    const int32_t part = 0;
    o.partitions = &part;
    o.partition_count = 1;
    mq_subscription *s = nullptr;
    EXPECT_EQ(mq_subscription_open(b, "t", "g", &o, h, user, nullptr, &s), MQ_OK)
        << mq_last_error();
    return s;
}

struct Calls {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int64_t> offsets;
    void add(int64_t o) {
        std::lock_guard lk(mu);
        offsets.push_back(o);
        cv.notify_all();
    }
    bool wait_for(size_t n) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, 10s, [&] { return offsets.size() >= n; });
    }
    std::vector<int64_t> get() {
        std::lock_guard lk(mu);
        return offsets;
    }
};

// A failing handler: the messages before it in the batch are acked, then the rest is nacked,
// so only the failed one and those after it come again.
TEST(PushCoalescing, AFailureAcksTheSuccessesThenNacks) {
    auto b = broker();
    make_topic(b.get());
    for (int i = 0; i < 5; i++) publish(b.get(), "t", nullptr, "m");
    struct State {
        Calls calls;
        bool failed = false;
    } st;
    auto h = [](void *u, const mq_message *m) -> int {
        auto *s = static_cast<State *>(u);
        s->calls.add(m->offset);
        if (m->offset == 2 && !s->failed) {
            s->failed = true;
            return 1;
        }
        return 0;
    };
    mq_subscription *sub = open(b.get(), 5, h, &st);
    ASSERT_TRUE(st.calls.wait_for(6));
    EXPECT_EQ(st.calls.get(), (std::vector<int64_t>{0, 1, 2, 2, 3, 4}));
    EXPECT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 5);
}

// A batch whose handlers take most of the lease: the ack of what was handled is sent before the
// next handler runs, so when the lease of the rest runs out (a poll from outside takes them
// back), the handled message is not among them.
TEST(PushCoalescing, AcksBeforeTheLeaseCouldRunOut) {
    ManualClock clock;
    auto b = broker(&clock);
    make_topic(b.get(), 1000);
    for (int i = 0; i < 3; i++) publish(b.get(), "t", nullptr, "m");
    struct State {
        ManualClock *clock;
        mq_broker *b;
        Calls calls;
        int64_t retaken_first = -1;
    } st{&clock, b.get(), {}, -1};
    auto h = [](void *u, const mq_message *m) -> int {
        auto *s = static_cast<State *>(u);
        s->clock->advance_ms(600);  // each handler is within the lease; two together are not
        if (m->offset == 1) {
            // The lease of the batch has run out: a plain poll of the group takes back what is
            // not acked (the push loop's own poll would do the same).
            mq_message out[8];
            size_t n = 0;
            if (mq_group_poll(s->b, "t", "g", 0, out, sizeof *out, 8, 0, nullptr, &n) == MQ_OK &&
                n > 0)
                s->retaken_first = out[0].offset;
        }
        s->calls.add(m->offset);
        return 0;
    };
    mq_subscription *sub = open(b.get(), 3, h, &st);
    ASSERT_TRUE(st.calls.wait_for(2));
    EXPECT_EQ(st.retaken_first, 1) << "message 0 was handled but not acked in time";
    EXPECT_EQ(mq_subscription_close(sub), MQ_OK);
}

// Closing acks what the loop handled. The close races the last handler's return (either the
// loop sees the stop after it, or it polls again first): in both cases everything handled is
// acked once the close returns, which a deferred ack forgotten at close would break.
TEST(PushCoalescing, CloseAcksWhatWasHandled) {
    for (int round = 0; round < 20; round++) {
        SCOPED_TRACE("round " + std::to_string(round));
        auto b = broker();
        make_topic(b.get());
        for (int i = 0; i < 3; i++) publish(b.get(), "t", nullptr, "m");
        struct State {
            Calls calls;
            std::mutex mu;
            std::condition_variable cv;
            bool release = false;
        } st;
        auto h = [](void *u, const mq_message *m) -> int {
            auto *s = static_cast<State *>(u);
            s->calls.add(m->offset);
            if (m->offset == 1) {  // holds the loop mid-batch until the close has begun
                std::unique_lock lk(s->mu);
                s->cv.wait(lk, [&] { return s->release; });
            }
            return 0;
        };
        mq_subscription *sub = open(b.get(), 3, h, &st);
        ASSERT_TRUE(st.calls.wait_for(2));
        std::thread closer([&] { EXPECT_EQ(mq_subscription_close(sub), MQ_OK); });
        {
            std::lock_guard lk(st.mu);
            st.release = true;
            st.cv.notify_all();
        }
        closer.join();
        const std::vector<int64_t> handled = st.calls.get();
        ASSERT_GE(handled.size(), 2u);
        EXPECT_EQ(group_info(b.get(), "t", "g").committed, handled.back() + 1);
    }
}

}  // namespace
