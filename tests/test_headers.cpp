// Message headers: an ordered list of (name, value) byte pairs per message, set on publish
// (single and batch), visible zero-copy on every view (group poll, member poll, push handler),
// weighed in the byte budget, and carried into a dead-letter topic with the origin appended.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mq_test_util.h"

namespace {

using namespace mqtest;
using Pairs = std::vector<std::pair<std::string, std::string>>;

// Headers pointing into `pairs` (which must outlive them).
std::vector<mq_header> headers_of(const Pairs &pairs) {
    std::vector<mq_header> h;
    for (const auto &[n, v] : pairs) h.push_back({n.data(), n.size(), v.data(), v.size()});
    return h;
}

// The view's headers as strings, checking what every view promises about them.
Pairs read_headers(const mq_message &m) {
    Pairs out;
    if (m.header_count == 0) {
        EXPECT_EQ(m.headers, nullptr);
        return out;
    }
    EXPECT_NE(m.headers, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.headers) % alignof(mq_header), 0u)
        << "the header array must be aligned for mq_header";
    for (size_t i = 0; i < m.header_count; i++) {
        const mq_header &h = m.headers[i];
        EXPECT_NE(h.name, nullptr);
        EXPECT_NE(h.value, nullptr);
        out.emplace_back(std::string(static_cast<const char *>(h.name), h.name_len),
                         std::string(static_cast<const char *>(h.value), h.value_len));
    }
    return out;
}

void publish_with(mq_broker *b, const char *topic, const char *key, const std::string &payload,
                  const Pairs &pairs, mq_status want = MQ_OK) {
    const auto h = headers_of(pairs);
    EXPECT_EQ(mq_topic_publish(b, topic, key, key ? std::strlen(key) : 0, payload.data(),
                               payload.size(), h.empty() ? nullptr : h.data(), h.size(), MQ_NO_WAIT,
                               nullptr, nullptr, nullptr),
              want)
        << mq_last_error();
}

const Pairs kTrace = {{"trace-id", "4bf92f3577b34da6"}, {"content-type", "application/json"}};
// Empty names and values, and a duplicate name: all kept, in order.
const Pairs kOdd = {{"", "no name"}, {"dup", "1"}, {"empty", ""}, {"dup", "2"}, {"", ""}};

TEST(Headers, SinglePublishRoundTripsInOrderWithDuplicatesAndEmptyFields) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish_with(b.get(), "t", "k", "one", kTrace);
    publish_with(b.get(), "t", nullptr, "two", {});
    publish_with(b.get(), "t", nullptr, "", kOdd);
    const std::string binary("\0\xff\0", 3);
    publish_with(b.get(), "t", nullptr, "bin", {{binary, binary}});
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(read_headers(m[0]), kTrace);
    EXPECT_EQ(payload_of(m[0]), "one");
    EXPECT_EQ(std::string(static_cast<const char *>(m[0].key), m[0].key_len), "k");
    EXPECT_EQ(read_headers(m[1]), Pairs{});  // a message without headers says so
    EXPECT_EQ(payload_of(m[1]), "two");
    EXPECT_EQ(read_headers(m[2]), kOdd);
    EXPECT_EQ(m[2].payload_len, 0u);
    EXPECT_NE(m[2].payload, nullptr);
    EXPECT_EQ(m[2].key, nullptr);
    EXPECT_EQ(read_headers(m[3]), (Pairs{{binary, binary}}));
    for (const auto &x : m) EXPECT_EQ(x.dead_letter, nullptr);
}

TEST(Headers, NullPointersWithZeroLengthsAreEmptyFields) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    const mq_header h[2] = {{nullptr, 0, nullptr, 0}, {"n", 1, nullptr, 0}};
    ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, "p", 1, h, 2, MQ_NO_WAIT, nullptr, nullptr,
                               nullptr),
              MQ_OK)
        << mq_last_error();
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(read_headers(m[0]), (Pairs{{"", ""}, {"n", ""}}));
}

// The caller's buffers may change right after publish: the log holds its own copy, and every
// poll of the same message hands out the same bytes (views, not copies).
TEST(Headers, AreCopiedOnPublishAndViewedInPlace) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    Pairs mine = kTrace;
    publish_with(b.get(), "t", nullptr, "x", mine);
    mine[0].second.assign(mine[0].second.size(), '#');
    auto first = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    auto again = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(read_headers(again[0]), kTrace);
    EXPECT_EQ(again[0].headers, first[0].headers);
    EXPECT_EQ(again[0].headers[1].value, first[0].headers[1].value);
    EXPECT_EQ(read_headers(first[0]), kTrace);  // the first view is still good
}

// Batches take two paths: runs appended without waiting (capacity only), and records appended
// one by one (byte budget, bounded retention). Both store headers; several partitions too.
TEST(Headers, BatchPublishRoundTripsOnEveryAppendPath) {
    for (const bool budget : {false, true}) {
        SCOPED_TRACE(budget ? "byte budget" : "runs");
        auto b = broker();
        auto cfg = topic_config(3, 100);
        if (budget) cfg.max_bytes = 100000;
        ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
        ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
        const Pairs per[3] = {kTrace, {}, kOdd};
        std::vector<std::vector<mq_header>> h;
        for (const auto &p : per) h.push_back(headers_of(p));
        std::vector<std::string> payloads;
        for (int i = 0; i < 30; i++) payloads.push_back("m" + std::to_string(i));
        std::vector<mq_record> recs;
        for (int i = 0; i < 30; i++) {
            const auto &hh = h[static_cast<size_t>(i % 3)];
            recs.push_back(mq_record{i % 2 ? "key" : nullptr, i % 2 ? 3u : 0u,
                                     payloads[static_cast<size_t>(i)].data(),
                                     payloads[static_cast<size_t>(i)].size(),
                                     hh.empty() ? nullptr : hh.data(), hh.size()});
        }
        std::vector<mq_publish_result> res(recs.size());
        size_t published = 0;
        ASSERT_EQ(mq_topic_publish_batch(b.get(), "t", recs.data(), sizeof(mq_record), recs.size(),
                                         MQ_NO_WAIT, nullptr, res.data(), sizeof(mq_publish_result),
                                         &published),
                  MQ_OK)
            << mq_last_error();
        ASSERT_EQ(published, recs.size());
        size_t seen = 0;
        for (int32_t p = 0; p < 3; p++) {
            for (const auto &m : poll(b.get(), "t", "g", p, 64)) {
                const int i = std::stoi(payload_of(m).substr(1));
                EXPECT_EQ(res[static_cast<size_t>(i)].partition, p);
                EXPECT_EQ(res[static_cast<size_t>(i)].offset, m.offset);
                EXPECT_EQ(read_headers(m), per[i % 3]) << "record " << i;
                seen++;
            }
        }
        EXPECT_EQ(seen, recs.size());
    }
}

TEST(Headers, CountInTheByteBudget) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    cfg.max_bytes = 20;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    // 1 (key) + 3 (payload) + 2 + 4 (header) = 10 bytes
    publish_with(b.get(), "t", "k", "abc", {{"ab", "cdef"}});
    EXPECT_EQ(partition_info(b.get(), "t").retained_bytes, 10);
    publish_with(b.get(), "t", "k", "abc", {{"ab", "cdef"}});
    EXPECT_EQ(partition_info(b.get(), "t").retained_bytes, 20);
    // A header-less message of one byte no longer fits: the budget is used.
    publish_with(b.get(), "t", nullptr, "x", {}, MQ_FULL);
    // A message whose headers alone exceed the budget can never fit.
    publish_with(b.get(), "t", nullptr, "", {{"name", std::string(17, 'v')}}, MQ_ERR_TOO_LARGE);
    auto m = poll(b.get(), "t", "g", 0, 1);
    ASSERT_EQ(m.size(), 1u);
    ASSERT_EQ(mq_group_ack(b.get(), "t", "g", 0, m[0].offset), MQ_OK);
    EXPECT_EQ(partition_info(b.get(), "t").retained_bytes, 10);  // trimming gives them back
    // Ten bytes free: headers of 9 bytes plus a 1-byte payload fit exactly.
    publish_with(b.get(), "t", nullptr, "x", {{"abc", "defghi"}});
    EXPECT_EQ(partition_info(b.get(), "t").retained_bytes, 20);
}

TEST(Headers, BoundedRetentionDropsEnoughForTheHeaders) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    cfg.max_bytes = 20;
    cfg.retention = MQ_RETAIN_BOUNDED;
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    publish_with(b.get(), "t", nullptr, "aaaaa", {});               // 5 bytes
    publish_with(b.get(), "t", nullptr, "bbbbb", {});               // 10
    publish_with(b.get(), "t", nullptr, "c", {{"hh", "hhhhhhh"}});  // 10 more: 20
    EXPECT_EQ(partition_info(b.get(), "t").start, 0);
    publish_with(b.get(), "t", nullptr, "d", {{"h", "h"}});  // 3 more: drops the first
    const auto pi = partition_info(b.get(), "t");
    EXPECT_EQ(pi.start, 1);
    EXPECT_EQ(pi.retained_bytes, 18);
    auto m = poll(b.get(), "t", "g", 0);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].lost, 1);
    EXPECT_EQ(read_headers(m[1]), (Pairs{{"hh", "hhhhhhh"}}));
    EXPECT_EQ(read_headers(m[2]), (Pairs{{"h", "h"}}));
}

TEST(Headers, MemberPollViewsCarryThem) {
    auto b = broker();
    auto cfg = topic_config(2, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    mq_member *member = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "crew", nullptr, &member), MQ_OK) << mq_last_error();
    int64_t gen = 0;
    int32_t parts[2];
    size_t owned = 0;
    ASSERT_EQ(mq_member_get_assignment(member, &gen, parts, 2, &owned), MQ_OK);
    ASSERT_EQ(owned, 2u);
    publish_with(b.get(), "t", nullptr, "a", kTrace);
    publish_with(b.get(), "t", nullptr, "b", kOdd);
    Pairs seen[2];
    for (int i = 0; i < 2; i++) {
        mq_message m;
        size_t n = 0;
        ASSERT_EQ(mq_member_poll(member, &m, sizeof m, 1, 1000, nullptr, &n), MQ_OK)
            << mq_last_error();
        ASSERT_EQ(n, 1u);
        seen[payload_of(m) == "a" ? 0 : 1] = read_headers(m);
        ASSERT_EQ(mq_member_ack(member, m.partition, m.offset), MQ_OK);
    }
    EXPECT_EQ(seen[0], kTrace);
    EXPECT_EQ(seen[1], kOdd);
    ASSERT_EQ(mq_member_close(member), MQ_OK);
}

TEST(Headers, PushHandlerViewsCarryThem) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &cfg), MQ_OK);
    struct Seen {
        std::mutex mu;
        std::condition_variable cv;
        std::vector<Pairs> headers;
    } seen;
    auto handler = [](void *user, const mq_message *m) -> int {
        auto *s = static_cast<Seen *>(user);
        Pairs p;
        for (size_t i = 0; i < m->header_count; i++) {
            const mq_header &h = m->headers[i];
            p.emplace_back(std::string(static_cast<const char *>(h.name), h.name_len),
                           std::string(static_cast<const char *>(h.value), h.value_len));
        }
        std::lock_guard lk(s->mu);
        s->headers.push_back(std::move(p));
        s->cv.notify_all();
        return 0;
    };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b.get(), "t", "push", nullptr, handler, &seen, nullptr, &sub),
              MQ_OK);
    publish_with(b.get(), "t", nullptr, "a", kTrace);
    publish_with(b.get(), "t", nullptr, "b", {});
    publish_with(b.get(), "t", nullptr, "c", kOdd);
    {
        std::unique_lock lk(seen.mu);
        ASSERT_TRUE(seen.cv.wait_for(lk, std::chrono::seconds(30),
                                     [&] { return seen.headers.size() == 3; }));
    }
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(seen.headers[0], kTrace);
    EXPECT_EQ(seen.headers[1], Pairs{});
    EXPECT_EQ(seen.headers[2], kOdd);
}

void subscribe_dlq(mq_broker *b, const char *topic, const char *group, uint32_t max,
                   const char *dlq) {
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = max;
    o.dead_letter_topic = dlq;
    ASSERT_EQ(mq_group_subscribe(b, topic, group, &o), MQ_OK) << mq_last_error();
}

Pairs with_origin(Pairs own, const std::string &topic, const std::string &group,
                  const std::string &partition, const std::string &offset,
                  const std::string &count) {
    own.emplace_back(MQ_HEADER_DEAD_LETTER_TOPIC, topic);
    own.emplace_back(MQ_HEADER_DEAD_LETTER_GROUP, group);
    own.emplace_back(MQ_HEADER_DEAD_LETTER_PARTITION, partition);
    own.emplace_back(MQ_HEADER_DEAD_LETTER_OFFSET, offset);
    own.emplace_back(MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT, count);
    return own;
}

TEST(Headers, DeadLettersCarryTheOriginalHeadersThenTheOrigin) {
    auto b = broker();
    auto cfg = topic_config(3, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto one = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &one), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "src", "billing", 2, "dlq");
    int32_t p = -1;
    int64_t off = -1;
    // The poison message is the third on its partition, so its offset is not a default.
    for (int i = 0; i < 3; i++) {
        const auto h = headers_of(kOdd);
        ASSERT_EQ(mq_topic_publish(b.get(), "src", "user-b", 6, "poison", 6, h.data(), h.size(),
                                   MQ_NO_WAIT, nullptr, &p, &off),
                  MQ_OK);
    }
    ASSERT_EQ(off, 2);
    auto m = poll(b.get(), "src", "billing", p);
    ASSERT_EQ(m.size(), 3u);
    ASSERT_EQ(mq_group_ack(b.get(), "src", "billing", p, 1), MQ_OK);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "billing", p, 0), MQ_OK);
    ASSERT_EQ(poll(b.get(), "src", "billing", p).size(), 1u);  // the second delivery
    ASSERT_EQ(mq_group_nack(b.get(), "src", "billing", p, 0), MQ_OK);
    EXPECT_EQ(poll(b.get(), "src", "billing", p).size(), 0u);  // moved on, nothing else
    auto d = poll(b.get(), "dlq", "ops", 0);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(payload_of(d[0]), "poison");
    EXPECT_EQ(std::string(static_cast<const char *>(d[0].key), d[0].key_len), "user-b");
    EXPECT_EQ(read_headers(d[0]), with_origin(kOdd, "src", "billing", std::to_string(p), "2", "2"));
    ASSERT_NE(d[0].dead_letter, nullptr);  // the struct travels too
    EXPECT_STREQ(d[0].dead_letter->topic, "src");
    EXPECT_STREQ(d[0].dead_letter->group, "billing");
    EXPECT_EQ(d[0].dead_letter->partition, p);
    EXPECT_EQ(d[0].dead_letter->offset, 2);
    EXPECT_EQ(d[0].dead_letter->delivery_count, 2u);
    EXPECT_EQ(group_info(b.get(), "src", "billing", p).dead_lettered, 1);
}

TEST(Headers, AHeaderlessDeadLetterGetsOnlyTheOrigin) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &cfg), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    publish(b.get(), "src", nullptr, "bad");
    ASSERT_EQ(poll(b.get(), "src", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    EXPECT_EQ(poll(b.get(), "src", "g", 0).size(), 0u);
    auto d = poll(b.get(), "dlq", "ops", 0);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].key, nullptr);
    EXPECT_EQ(read_headers(d[0]), with_origin({}, "src", "g", "0", "0", "1"));
}

// The origin headers weigh like any others: a message that fitted its own topic's budget may
// not fit the dead-letter topic's once they are added. It then takes the too-large path: the
// group moves on and counts it as lost, and nothing reaches the dead-letter topic.
TEST(Headers, ADeadLetterTheOriginHeadersPushOverTheBudgetIsLost) {
    auto b = broker();
    auto cfg = topic_config(1, 10);
    ASSERT_EQ(mq_topic_create(b.get(), "src", &cfg), MQ_OK);
    auto small = topic_config(1, 10);
    small.max_bytes = 64;
    ASSERT_EQ(mq_topic_create(b.get(), "dlq", &small), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "ops", nullptr), MQ_OK);
    subscribe_dlq(b.get(), "src", "g", 1, "dlq");
    publish(b.get(), "src", nullptr, std::string(60, 'x'));  // fits 64 alone, not with origin
    publish(b.get(), "src", nullptr, "next");
    ASSERT_EQ(poll(b.get(), "src", "g", 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "src", "g", 0, 0), MQ_OK);
    auto m = poll(b.get(), "src", "g", 0);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(payload_of(m[0]), "next");
    EXPECT_EQ(m[0].lost, 1);  // reported on the next message handed out
    const auto gi = group_info(b.get(), "src", "g");
    EXPECT_EQ(gi.lost, 1);
    EXPECT_EQ(gi.dead_lettered, 0);
    EXPECT_EQ(partition_info(b.get(), "dlq").end, 0);
}

}  // namespace
