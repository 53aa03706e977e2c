// The copying poll (mq.h, ABI 1.3): layout 1, only what fits is handed out, MQ_ERR_TOO_LARGE
// with the room needed, the member forms, and copies that stay right while other threads of
// the group ack past them (the trap of copying views outside the library).
#include <cstdint>
#include <chrono>
#include <mutex>
#include <cstring>
#include <condition_variable>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/copy_out.h"
#include "mq_test_util.h"

namespace {

using namespace mqtest;

// A copied message read back through the layout's positions.
struct Got {
    int64_t offset;
    int32_t partition;
    uint32_t delivery_count;
    int64_t timestamp_ns;
    int64_t lost;
    bool has_key;
    std::string key, payload;
    std::vector<std::pair<std::string, std::string>> headers;
    bool dead_letter = false;
    std::string dl_topic, dl_group;
    int64_t dl_offset = -1;
    int32_t dl_partition = -1;
    uint32_t dl_count = 0;
};

struct Buffer {
    explicit Buffer(size_t cap) : words((cap + 7) / 8), cap(cap) {}
    std::vector<uint64_t> words;  // 8-byte aligned storage
    size_t cap;
    void *data() { return words.data(); }
    const unsigned char *bytes() const {
        return reinterpret_cast<const unsigned char *>(words.data());
    }
    std::string str(uint64_t at, uint64_t len) const {
        EXPECT_LE(at + len, cap);
        return std::string(reinterpret_cast<const char *>(bytes() + at), len);
    }
    template <class T>
    T at(uint64_t pos) const {
        T t;
        EXPECT_EQ(pos % 8, 0u);
        EXPECT_LE(pos + sizeof t, cap);
        std::memcpy(&t, bytes() + pos, sizeof t);
        return t;
    }
    std::vector<Got> read() const {
        const auto h = at<mq_copy_header>(0);
        EXPECT_EQ(h.layout, static_cast<uint32_t>(MQ_COPY_LAYOUT_1));
        std::vector<Got> out;
        for (uint32_t i = 0; i < h.count; i++) {
            const auto e = at<mq_copied_message>(sizeof h + i * sizeof(mq_copied_message));
            Got g{e.offset,
                  e.partition,
                  e.delivery_count,
                  e.timestamp_ns,
                  e.lost,
                  e.key_at != MQ_COPY_ABSENT,
                  "",
                  "",
                  {}};
            if (g.has_key) {
                EXPECT_GE(e.key_at, h.bytes_at);
                g.key = str(e.key_at, e.key_len);
            } else {
                EXPECT_EQ(e.key_len, 0u);
            }
            EXPECT_GE(e.payload_at, h.bytes_at);
            g.payload = str(e.payload_at, e.payload_len);
            if (e.header_count == 0) EXPECT_EQ(e.headers_at, MQ_COPY_ABSENT);
            for (uint64_t k = 0; k < e.header_count; k++) {
                const auto ch = at<mq_copied_header>(e.headers_at + k * sizeof(mq_copied_header));
                g.headers.emplace_back(str(ch.name_at, ch.name_len),
                                       str(ch.value_at, ch.value_len));
            }
            if (e.dead_letter_at != MQ_COPY_ABSENT) {
                const auto d = at<mq_copied_dead_letter>(e.dead_letter_at);
                g.dead_letter = true;
                g.dl_topic = str(d.topic_at, d.topic_len);
                g.dl_group = str(d.group_at, d.group_len);
                g.dl_offset = d.offset;
                g.dl_partition = d.partition;
                g.dl_count = d.delivery_count;
            }
            out.push_back(g);
        }
        return out;
    }
};

mq_status poll_copy(mq_broker *b, const char *topic, const char *group, Buffer &buf, size_t max,
                    size_t *count, size_t *needed, int32_t partition = 0) {
    return mq_group_poll_copy(b, topic, group, partition, buf.data(), buf.cap, max, MQ_NO_WAIT,
                              nullptr, count, needed);
}

void make_topic(mq_broker *b, const char *name, int32_t partitions = 1, int64_t capacity = 64) {
    auto c = topic_config(partitions, capacity);
    ASSERT_EQ(mq_topic_create(b, name, &c), MQ_OK) << mq_last_error();
}

TEST(CopyPoll, CopiesWhatTheViewsShow) {
    auto b = broker();
    make_topic(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "copy", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "view", nullptr), MQ_OK);
    const mq_header hs[3] = {{"a", 1, "1", 1}, {"b", 1, nullptr, 0}, {"a", 1, "333", 3}};
    ASSERT_EQ(mq_topic_publish(b.get(), "t", "k", 1, "payload", 7, hs, 3, MQ_NO_WAIT, nullptr,
                               nullptr, nullptr),
              MQ_OK);
    ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, nullptr, 0, nullptr, 0, MQ_NO_WAIT,
                               nullptr, nullptr, nullptr),
              MQ_OK);
    ASSERT_EQ(mq_topic_publish(b.get(), "t", "", 0, "x", 1, nullptr, 0, MQ_NO_WAIT, nullptr,
                               nullptr, nullptr),
              MQ_OK);
    Buffer buf(4096);
    size_t n = 0, needed = 0;
    ASSERT_EQ(poll_copy(b.get(), "t", "copy", buf, 16, &n, &needed), MQ_OK) << mq_last_error();
    ASSERT_EQ(n, 3u);
    auto views = poll(b.get(), "t", "view", 0);
    ASSERT_EQ(views.size(), 3u);
    const auto got = buf.read();
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(got[i].offset, views[i].offset);
        EXPECT_EQ(got[i].partition, 0);
        EXPECT_EQ(got[i].delivery_count, 1u);
        EXPECT_EQ(got[i].timestamp_ns, views[i].timestamp_ns);
        EXPECT_EQ(got[i].has_key, views[i].key != nullptr) << i;
        EXPECT_EQ(got[i].payload, payload_of(views[i]));
        EXPECT_EQ(got[i].headers.size(), views[i].header_count);
        EXPECT_FALSE(got[i].dead_letter);
    }
    EXPECT_EQ(got[0].key, "k");
    EXPECT_EQ(got[0].headers, (std::vector<std::pair<std::string, std::string>>{
                                  {"a", "1"}, {"b", ""}, {"a", "333"}}));
    EXPECT_TRUE(got[2].has_key);  // an empty key is a key
    EXPECT_EQ(got[2].key, "");
    // *needed_out: what the poll used, within the buffer.
    EXPECT_GT(needed, sizeof(mq_copy_header) + 3 * sizeof(mq_copied_message));
    EXPECT_LE(needed, buf.cap);
    // Handed out as a view poll would: in flight, counted.
    EXPECT_EQ(group_info(b.get(), "t", "copy").next, 3);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "copy", 0, 0), MQ_OK);
    ASSERT_EQ(poll_copy(b.get(), "t", "copy", buf, 1, &n, &needed), MQ_OK);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(buf.read()[0].delivery_count, 2u);
}

// The writer itself, on views the in-memory log never makes: a key and payload apart (as the
// Kafka engine's messages are), an empty key, no key; and a message that does not fit.
TEST(CopyPoll, TheWriterCopiesKeysAndPayloadsWhereverTheyLie) {
    const std::string key = "the-key", payload = "the payload, apart from its key";
    const std::string adjacent = "kkpayload";
    mq_message views[4]{};
    views[0].key = key.data();
    views[0].key_len = key.size();
    views[0].payload = payload.data();
    views[0].payload_len = payload.size();
    views[0].offset = 7;
    views[1].key = "";  // a key of zero bytes is a key
    views[1].payload = payload.data();
    views[1].payload_len = 3;
    views[2].payload = payload.data();  // no key
    views[2].payload_len = payload.size();
    views[3].key = adjacent.data();
    views[3].key_len = 2;
    views[3].payload = adjacent.data() + 2;
    views[3].payload_len = adjacent.size() - 2;
    Buffer buf(512);
    mq::CopyOut copy(buf.data(), buf.cap);
    for (const mq_message &m : views) ASSERT_TRUE(copy.put(m));
    mq_message too_big{};
    too_big.payload = payload.data();
    too_big.payload_len = 512;
    EXPECT_FALSE(copy.put(too_big));
    copy.finish();
    const std::vector<Got> got = buf.read();
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].offset, 7);
    EXPECT_TRUE(got[0].has_key);
    EXPECT_EQ(got[0].key, key);
    EXPECT_EQ(got[0].payload, payload);
    EXPECT_TRUE(got[1].has_key);
    EXPECT_EQ(got[1].key, "");
    EXPECT_EQ(got[1].payload, "the");
    EXPECT_FALSE(got[2].has_key);
    EXPECT_EQ(got[2].payload, payload);
    EXPECT_EQ(got[3].key, "kk");
    EXPECT_EQ(got[3].payload, "payload");
    EXPECT_EQ(copy.count(), 4u);
}

TEST(CopyPoll, HandsOutOnlyWhatFits) {
    auto b = broker();
    make_topic(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    const std::string big(1000, 'x');
    for (int i = 0; i < 5; i++) publish(b.get(), "t", nullptr, big);
    // Room for two messages and a half.
    Buffer buf(sizeof(mq_copy_header) + 2 * (sizeof(mq_copied_message) + 1000) + 500);
    size_t n = 0, needed = 0;
    ASSERT_EQ(poll_copy(b.get(), "t", "g", buf, 5, &n, &needed), MQ_OK);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(buf.read().size(), 2u);
    EXPECT_EQ(group_info(b.get(), "t", "g").next, 2);  // the third was not handed out
    ASSERT_EQ(poll_copy(b.get(), "t", "g", buf, 5, &n, &needed), MQ_OK);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(buf.read()[0].offset, 2);
    EXPECT_EQ(buf.read()[0].delivery_count, 1u);
}

TEST(CopyPoll, TooLargeSaysTheRoomAndHandsOutNothing) {
    auto b = broker();
    make_topic(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    const mq_header h{"name", 4, "value", 5};
    const std::string big(3000, 'y');
    ASSERT_EQ(mq_topic_publish(b.get(), "t", "key", 3, big.data(), big.size(), &h, 1, MQ_NO_WAIT,
                               nullptr, nullptr, nullptr),
              MQ_OK);
    Buffer small(256);
    size_t n = 7, needed = 0;
    ASSERT_EQ(poll_copy(b.get(), "t", "g", small, 4, &n, &needed), MQ_ERR_TOO_LARGE);
    EXPECT_EQ(n, 0u);
    EXPECT_GE(needed, 3000u + 3 + 9 + sizeof(mq_copy_header) + sizeof(mq_copied_message));
    EXPECT_NE(std::string(mq_last_error()).find(std::to_string(needed)), std::string::npos)
        << mq_last_error();
    EXPECT_EQ(small.at<mq_copy_header>(0).count, 0u);  // the header says "none"
    const auto gi = group_info(b.get(), "t", "g");
    EXPECT_EQ(gi.next, 0);  // nothing handed out, nothing counted
    EXPECT_EQ(gi.in_flight, 0);
    Buffer exact(needed);
    ASSERT_EQ(poll_copy(b.get(), "t", "g", exact, 4, &n, &needed), MQ_OK) << mq_last_error();
    ASSERT_EQ(n, 1u);
    const auto got = exact.read();
    EXPECT_EQ(got[0].payload, big);
    EXPECT_EQ(got[0].delivery_count, 1u);
    EXPECT_EQ(got[0].headers[0].second, "value");
}

TEST(CopyPoll, ArgumentsAreChecked) {
    auto b = broker();
    make_topic(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    Buffer buf(1024);
    size_t n = 0;
    EXPECT_EQ(mq_group_poll_copy(b.get(), "t", "g", 0, nullptr, 1024, 1, 0, nullptr, &n, nullptr),
              MQ_ERR_INVALID);
    auto *odd = static_cast<unsigned char *>(buf.data()) + 4;
    EXPECT_EQ(mq_group_poll_copy(b.get(), "t", "g", 0, odd, 512, 1, 0, nullptr, &n, nullptr),
              MQ_ERR_INVALID);
    EXPECT_NE(std::string(mq_last_error()).find("aligned"), std::string::npos);
    EXPECT_EQ(mq_group_poll_copy(b.get(), "t", "g", 0, buf.data(), sizeof(mq_copy_header) - 1, 1, 0,
                                 nullptr, &n, nullptr),
              MQ_ERR_INVALID);
    EXPECT_EQ(
        mq_group_poll_copy(b.get(), "t", "g", 0, buf.data(), 1024, 0, 0, nullptr, &n, nullptr),
        MQ_ERR_INVALID);
    EXPECT_EQ(
        mq_group_poll_copy(b.get(), "t", "g", 0, buf.data(), 1024, 1, 0, nullptr, nullptr, nullptr),
        MQ_ERR_INVALID);
    // Names and partition first, as mq.h orders the statuses.
    EXPECT_EQ(
        mq_group_poll_copy(b.get(), "t", "nobody", 0, nullptr, 0, 0, 0, nullptr, nullptr, nullptr),
        MQ_ERR_NO_GROUP);
    EXPECT_EQ(mq_group_poll_copy(b.get(), "t", "g", 3, nullptr, 0, 0, 0, nullptr, nullptr, nullptr),
              MQ_ERR_PARTITION);
    // Nothing to hand out: MQ_TIMEOUT, an empty header.
    size_t needed = 99;
    EXPECT_EQ(
        mq_group_poll_copy(b.get(), "t", "g", 0, buf.data(), 1024, 1, 0, nullptr, &n, &needed),
        MQ_TIMEOUT);
    EXPECT_EQ(buf.at<mq_copy_header>(0).count, 0u);
    EXPECT_EQ(needed, sizeof(mq_copy_header));
}

TEST(CopyPoll, AckPollAcksThenCopies) {
    auto b = broker();
    make_topic(b.get(), "t");
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    for (int i = 0; i < 4; i++) publish(b.get(), "t", nullptr, "m" + std::to_string(i));
    Buffer buf(4096);
    size_t n = 0, needed = 0;
    ASSERT_EQ(poll_copy(b.get(), "t", "g", buf, 2, &n, &needed), MQ_OK);
    ASSERT_EQ(mq_group_ack_poll_copy(b.get(), "t", "g", 0, 1, buf.data(), buf.cap, 8, MQ_NO_WAIT,
                                     nullptr, &n, &needed),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(buf.read()[0].payload, "m2");
    EXPECT_EQ(group_info(b.get(), "t", "g").committed, 2);
    // A rejected ack polls nothing.
    EXPECT_EQ(mq_group_ack_poll_copy(b.get(), "t", "g", 0, 9, buf.data(), buf.cap, 8, MQ_NO_WAIT,
                                     nullptr, &n, &needed),
              MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(n, 0u);
}

TEST(CopyPoll, DeadLettersCarryTheirOrigin) {
    auto b = broker();
    make_topic(b.get(), "t");
    make_topic(b.get(), "dlq");
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "reader", nullptr), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 1;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", &o), MQ_OK) << mq_last_error();
    publish(b.get(), "t", "key", "poison");
    Buffer buf(4096);
    size_t n = 0, needed = 0;
    ASSERT_EQ(poll_copy(b.get(), "t", "g", buf, 1, &n, &needed), MQ_OK);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    EXPECT_EQ(poll_copy(b.get(), "t", "g", buf, 1, &n, &needed), MQ_TIMEOUT);  // dead-lettered
    ASSERT_EQ(poll_copy(b.get(), "dlq", "reader", buf, 1, &n, &needed), MQ_OK);
    const auto got = buf.read();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].dead_letter);
    EXPECT_EQ(got[0].dl_topic, "t");
    EXPECT_EQ(got[0].dl_group, "g");
    EXPECT_EQ(got[0].dl_offset, 0);
    EXPECT_EQ(got[0].dl_partition, 0);
    EXPECT_EQ(got[0].dl_count, 1u);
    EXPECT_EQ(got[0].payload, "poison");
}

// mq_message_copy: one lent view in layout 1, as the copying poll would have written it (a
// dead letter with headers, the richest message), the room it needs, its argument checks.
TEST(CopyPoll, OneViewCopiesAsThePollWould) {
    auto b = broker();
    make_topic(b.get(), "t");
    make_topic(b.get(), "dlq");
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "view", nullptr), MQ_OK);
    ASSERT_EQ(mq_group_subscribe(b.get(), "dlq", "copy", nullptr), MQ_OK);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.max_deliveries = 1;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", &o), MQ_OK) << mq_last_error();
    const mq_header hs[2] = {{"h", 1, "v", 1}, {"empty", 5, nullptr, 0}};
    ASSERT_EQ(mq_topic_publish(b.get(), "t", "key", 3, "payload", 7, hs, 2, MQ_NO_WAIT, nullptr,
                               nullptr, nullptr),
              MQ_OK);
    ASSERT_EQ(poll(b.get(), "t", "g", 0).size(), 1u);
    ASSERT_EQ(mq_group_nack(b.get(), "t", "g", 0, 0), MQ_OK);
    size_t n = 0, needed = 0;
    Buffer polled(4096);
    EXPECT_EQ(poll_copy(b.get(), "t", "g", polled, 1, &n, &needed), MQ_TIMEOUT);  // dead-lettered
    ASSERT_EQ(poll_copy(b.get(), "dlq", "copy", polled, 1, &n, &needed), MQ_OK);
    const auto views = poll(b.get(), "dlq", "view", 0);
    ASSERT_EQ(views.size(), 1u);

    Buffer one(4096);
    ASSERT_EQ(mq_message_copy(&views[0], one.data(), one.cap, &needed), MQ_OK) << mq_last_error();
    const auto a = polled.read(), c = one.read();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].offset, a[0].offset);
    EXPECT_EQ(c[0].delivery_count, a[0].delivery_count);
    EXPECT_EQ(c[0].timestamp_ns, a[0].timestamp_ns);
    EXPECT_EQ(c[0].key, "key");
    EXPECT_EQ(c[0].payload, "payload");
    EXPECT_EQ(c[0].headers, a[0].headers);
    ASSERT_GE(c[0].headers.size(), 2u);  // the publisher's, then the dead letter's own
    EXPECT_EQ(c[0].headers[0], (std::pair<std::string, std::string>{"h", "v"}));
    EXPECT_EQ(c[0].headers[1], (std::pair<std::string, std::string>{"empty", ""}));
    EXPECT_TRUE(c[0].dead_letter);
    EXPECT_EQ(c[0].dl_topic, "t");
    EXPECT_EQ(c[0].dl_group, "g");
    EXPECT_EQ(c[0].dl_count, 1u);
    const size_t used = needed;
    EXPECT_LE(used, one.cap);

    // Too small: nothing written, the room it needs; that room is enough.
    Buffer small(64);
    std::memset(small.data(), 0xAB, small.cap);
    EXPECT_EQ(mq_message_copy(&views[0], small.data(), small.cap, &needed), MQ_ERR_TOO_LARGE);
    EXPECT_NE(std::strstr(mq_last_error(), "needs"), nullptr) << mq_last_error();
    EXPECT_EQ(small.bytes()[0], 0xAB);
    EXPECT_GE(needed, used);
    Buffer exact(needed);
    ASSERT_EQ(mq_message_copy(&views[0], exact.data(), exact.cap, nullptr), MQ_OK)
        << mq_last_error();
    EXPECT_EQ(exact.read()[0].payload, "payload");

    EXPECT_EQ(mq_message_copy(nullptr, one.data(), one.cap, &needed), MQ_ERR_INVALID);
    EXPECT_EQ(mq_message_copy(&views[0], nullptr, one.cap, &needed), MQ_ERR_INVALID);
    EXPECT_EQ(mq_message_copy(&views[0], static_cast<char *>(one.data()) + 4, 100, &needed),
              MQ_ERR_INVALID);
    EXPECT_EQ(mq_message_copy(&views[0], one.data(), sizeof(mq_copy_header) - 1, &needed),
              MQ_ERR_INVALID);
}

// In a push handler, where the view is lent for the call.
TEST(CopyPoll, APushHandlerCopiesItsMessage) {
    auto b = broker();
    make_topic(b.get(), "t");
    struct Seen {
        std::mutex mu;
        std::condition_variable cv;
        std::vector<std::string> payloads;
    } seen;
    auto handler = [](void *user, const mq_message *m) {
        auto *s = static_cast<Seen *>(user);
        Buffer buf(256);
        size_t needed = 0;
        if (mq_message_copy(m, buf.data(), buf.cap, &needed) != MQ_OK) return 1;
        const auto got = buf.read();
        std::lock_guard l(s->mu);
        s->payloads.push_back(got.at(0).key + "=" + got.at(0).payload);
        s->cv.notify_all();
        return 0;
    };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b.get(), "t", "push", nullptr, handler, &seen, nullptr, &sub),
              MQ_OK)
        << mq_last_error();
    publish(b.get(), "t", "a", "1");
    publish(b.get(), "t", "b", "2");
    {
        std::unique_lock l(seen.mu);
        ASSERT_TRUE(seen.cv.wait_for(l, std::chrono::seconds(10),
                                     [&] { return seen.payloads.size() == 2; }));
    }
    ASSERT_EQ(mq_subscription_close(sub), MQ_OK);
    EXPECT_EQ(seen.payloads, (std::vector<std::string>{"a=1", "b=2"}));
}

TEST(CopyPoll, MemberForms) {
    auto b = broker();
    make_topic(b.get(), "t", 2);
    mq_member *m = nullptr;
    ASSERT_EQ(mq_member_join(b.get(), "t", "g", nullptr, &m), MQ_OK) << mq_last_error();
    publish(b.get(), "t", "a", "one");
    Buffer buf(4096);
    size_t n = 0, needed = 0;
    mq_status st;
    do {  // the first poll after joining reports the assignment
        st = mq_member_poll_copy(m, buf.data(), buf.cap, 8, 1000, nullptr, &n, &needed);
    } while (st == MQ_REBALANCED);
    ASSERT_EQ(st, MQ_OK) << mq_last_error();
    ASSERT_EQ(n, 1u);
    const auto first = buf.read()[0];
    EXPECT_EQ(first.payload, "one");
    publish(b.get(), "t", "a", "two");  // same key, same partition
    ASSERT_EQ(mq_member_ack_poll_copy(m, first.partition, first.offset, buf.data(), buf.cap, 8,
                                      1000, nullptr, &n, &needed),
              MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(buf.read()[0].payload, "two");
    EXPECT_EQ(group_info(b.get(), "t", "g", first.partition).committed, first.offset + 1);
    Buffer tiny(sizeof(mq_copy_header) + 8);
    publish(b.get(), "t", "a", "three");
    EXPECT_EQ(mq_member_poll_copy(m, tiny.data(), tiny.cap, 8, 1000, nullptr, &n, &needed),
              MQ_ERR_TOO_LARGE);
    EXPECT_GT(needed, tiny.cap);
    ASSERT_EQ(mq_member_close(m), MQ_OK);
}

// Two threads of one group: one copies, the other acks past what the first was handed as soon
// as it can, so the log trims under the copier. A copy made outside the partition lock would
// read trimmed (recycled) bytes; every copy must still hold its own offset's payload.
TEST(CopyPoll, CopiesStayRightWhileTheGroupAcksPastThem) {
    auto b = broker();
    make_topic(b.get(), "t", 1, 64);
    ASSERT_EQ(mq_group_subscribe(b.get(), "t", "g", nullptr), MQ_OK);
    constexpr int kMessages = 20000;
    std::atomic<bool> done{false};
    std::thread publisher([&] {
        for (int i = 0; i < kMessages; i++) {
            const std::string p = "payload-" + std::to_string(i) + std::string(i % 97, '.');
            ASSERT_EQ(mq_topic_publish(b.get(), "t", nullptr, 0, p.data(), p.size(), nullptr, 0,
                                       MQ_WAIT_FOREVER, nullptr, nullptr, nullptr),
                      MQ_OK);
        }
    });
    std::thread acker([&] {
        while (!done.load()) {
            mq_group_info gi{};
            if (mq_group_get_info(b.get(), "t", "g", 0, &gi, sizeof gi) == MQ_OK &&
                gi.next > gi.committed)
                mq_group_ack(b.get(), "t", "g", 0, gi.next - 1);
            std::this_thread::yield();
        }
    });
    Buffer buf(2048);
    int64_t seen = 0, bad = 0;
    while (seen < kMessages) {
        size_t n = 0, needed = 0;
        const mq_status st = mq_group_poll_copy(b.get(), "t", "g", 0, buf.data(), buf.cap, 16, 100,
                                                nullptr, &n, &needed);
        if (st == MQ_TIMEOUT) continue;
        ASSERT_EQ(st, MQ_OK) << mq_last_error();
        for (const auto &g : buf.read()) {
            const std::string want =
                "payload-" + std::to_string(g.offset) + std::string(g.offset % 97, '.');
            if (g.payload != want) bad++;
            seen = std::max(seen, g.offset + 1);
        }
    }
    done = true;
    publisher.join();
    acker.join();
    EXPECT_EQ(bad, 0);
}

}  // namespace
