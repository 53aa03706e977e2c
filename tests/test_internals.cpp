// Unit tests of core pieces whose rules are easier to pin down directly than through the C API.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "util/arena.h"
#include "util/call_gate.h"
#include "core/cursor.h"
#include "util/murmur2.h"

namespace {

using Counts = std::map<int64_t, uint32_t>;

Counts deliver(mq::DeliveryCounts &dc, int64_t from, int64_t to) {
    Counts seen;
    dc.reserve();
    dc.deliver(from, to, [&](int64_t o, uint32_t n) { seen[o] = n; });
    return seen;
}

TEST(DeliveryCounts, FirstDeliveryCountsOne) {
    mq::DeliveryCounts dc;
    dc.reset(0);
    EXPECT_EQ(deliver(dc, 0, 3), (Counts{{0, 1}, {1, 1}, {2, 1}}));
    EXPECT_EQ(deliver(dc, 3, 5), (Counts{{3, 1}, {4, 1}}));
}

TEST(DeliveryCounts, RedeliveryOfAPrefixCountsOnlyWhatIsHandedOutAgain) {
    mq::DeliveryCounts dc;
    dc.reset(10);
    deliver(dc, 10, 15);                                         // 10..14 once
    EXPECT_EQ(deliver(dc, 10, 12), (Counts{{10, 2}, {11, 2}}));  // rewind, poll 2
    EXPECT_EQ(deliver(dc, 12, 17), (Counts{{12, 2}, {13, 2}, {14, 2}, {15, 1}, {16, 1}}));
    EXPECT_EQ(deliver(dc, 10, 11), (Counts{{10, 3}}));  // rewind again, poll 1
}

TEST(DeliveryCounts, AckForgetsAndLaterOffsetsKeepTheirCounts) {
    mq::DeliveryCounts dc;
    dc.reset(0);
    deliver(dc, 0, 4);
    deliver(dc, 0, 4);  // all twice
    dc.ack(2);          // 0 and 1 acked
    EXPECT_EQ(deliver(dc, 2, 6), (Counts{{2, 3}, {3, 3}, {4, 1}, {5, 1}}));
}

// Against a plain per-offset map, under random deliveries, rewinds and acks as poll does them.
TEST(DeliveryCounts, MatchesAPerOffsetModel) {
    std::mt19937 rng(12345);
    mq::DeliveryCounts dc;
    dc.reset(0);
    std::map<int64_t, uint32_t> model;
    int64_t committed = 0, next = 0;
    for (int step = 0; step < 20000; step++) {
        switch (rng() % 5) {
            case 0:
            case 1: {  // poll up to 5
                const int64_t to = next + 1 + static_cast<int64_t>(rng() % 5);
                Counts got = deliver(dc, next, to);
                for (int64_t o = next; o < to; o++) {
                    ASSERT_EQ(got[o], ++model[o]) << "offset " << o << " step " << step;
                }
                next = to;
                break;
            }
            case 2:  // nack or lease expiry
                next = committed;
                break;
            case 3:  // ack something in flight
                if (next > committed) {
                    committed +=
                        1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(next - committed));
                    dc.ack(committed);
                    model.erase(model.begin(), model.lower_bound(committed));
                }
                break;
            case 4:  // a push loop gives back [from, next) unseen, then rewinds
                if (next > committed) {
                    const int64_t from =
                        committed +
                        static_cast<int64_t>(rng() % static_cast<uint64_t>(next - committed));
                    const auto at = model.find(next);
                    const uint32_t floor = at == model.end() ? 0 : at->second;
                    dc.undeliver(from, next);
                    for (int64_t o = from; o < next; o++) {
                        if (model[o] > floor) model[o]--;
                    }
                    next = committed;
                }
                break;
        }
    }
}

TEST(DeliveryCounts, AGivenBackBatchTailCountsAsNotDelivered) {
    mq::DeliveryCounts dc;
    dc.reset(0);
    deliver(dc, 0, 10);  // a push loop's batch; its handler fails at 0
    dc.undeliver(1, 10);
    EXPECT_EQ(deliver(dc, 0, 3), (Counts{{0, 2}, {1, 1}, {2, 1}}));
    // Offsets past the batch that an earlier poll counted keep their count, and nothing below
    // them drops under it (the counts never increase with the offset).
    dc.reset(0);
    deliver(dc, 0, 10);
    deliver(dc, 0, 5);  // 0..4 twice, 5..9 once
    dc.undeliver(3, 5);
    EXPECT_EQ(
        deliver(dc, 0, 10),
        (Counts{{0, 3}, {1, 3}, {2, 3}, {3, 2}, {4, 2}, {5, 2}, {6, 2}, {7, 2}, {8, 2}, {9, 2}}));
}

TEST(Arena, BytesStayPutUntilTrimmedAndChunksAreReused) {
    mq::Arena a;
    std::vector<char *> ptrs;
    for (int64_t o = 0; o < 1000; o++) {
        char *p = a.allocate(100, o, static_cast<size_t>(o) * 100);
        std::memset(p, static_cast<int>(o & 0x7f), 100);
        ptrs.push_back(p);
    }
    for (int64_t o = 0; o < 1000; o++) {
        ASSERT_EQ(ptrs[static_cast<size_t>(o)][99], static_cast<char>(o & 0x7f)) << o;
    }
    const size_t held = a.chunk_bytes();
    a.trim(1000);
    for (int round = 0; round < 10; round++) {
        for (int64_t o = 0; o < 1000; o++)
            a.allocate(100, 1000 * (round + 1) + o, static_cast<size_t>(o) * 100);
        a.trim(1000 * (round + 2));
    }
    EXPECT_EQ(a.chunk_bytes(), held);  // recycled, not grown
}

TEST(Arena, MessageLargerThanAChunkGetsItsOwn) {
    mq::Arena a;
    char *small = a.allocate(10, 0, 0);
    char *big = a.allocate(3 << 20, 1, 10);
    std::memset(big, 1, 3 << 20);
    std::memset(small, 2, 10);
    EXPECT_EQ(big[(3 << 20) - 1], 1);
    EXPECT_EQ(small[9], 2);
}

TEST(Murmur2, KafkaVectors) {
    EXPECT_EQ(mq::murmur2("21", 2), -973932308);
    EXPECT_EQ(mq::murmur2("foobar", 6), -790332482);
    EXPECT_EQ(mq::murmur2("a-little-bit-long-string", 24), -985981536);
    EXPECT_EQ(mq::murmur2("a-little-bit-longer-string", 26), -1486304829);
    EXPECT_EQ(mq::murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 48), -58897971);
}

// The call gate: mq_broker_free's drain must wait for every call inside, also when calls nest
// (a handler calling back into mq) and when threads share a shard.
TEST(CallGate, DrainWaitsForACallInside) {
    mq::CallGate gate;
    std::promise<void> entered, release;
    std::thread caller([&] {
        mq::GateScope scope(gate);
        entered.set_value();
        release.get_future().wait();
    });
    entered.get_future().wait();
    EXPECT_EQ(gate.inside(), 1);
    auto drained = std::async(std::launch::async, [&] { gate.drain(); });
    // Never ready while the call is inside; a wrong gate would let it return.
    EXPECT_EQ(drained.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
    release.set_value();
    caller.join();
    EXPECT_EQ(drained.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(gate.inside(), 0);
}

TEST(CallGate, NestedCallsOnSeveralGatesAreCounted) {
    mq::CallGate gate, other;
    std::vector<std::unique_ptr<mq::GateScope>> scopes;
    for (int i = 0; i < 7; i++) {
        scopes.push_back(std::make_unique<mq::GateScope>(i % 3 == 2 ? other : gate));
        EXPECT_EQ(gate.inside() + other.inside(), i + 1);
    }
    EXPECT_EQ(other.inside(), 2);
    while (!scopes.empty()) scopes.pop_back();  // innermost first
    EXPECT_EQ(gate.inside(), 0);
    EXPECT_EQ(other.inside(), 0);
}

TEST(CallGate, ManyThreadsEnterAndLeaveThenDrainReturns) {
    mq::CallGate gate;
    std::vector<std::thread> threads;
    for (int t = 0; t < 20; t++) {  // more threads than shards
        threads.emplace_back([&gate, t] {
            for (int i = 0; i < 20000; i++) {
                mq::GateScope a(gate);
                if ((i + t) % 7 == 0) {  // sometimes nested
                    mq::GateScope b(gate), c(gate), d(gate), e(gate);
                }
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(gate.inside(), 0);
    gate.drain();
}

}  // namespace
