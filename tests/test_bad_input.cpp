// Bad input for every function of the C ABI: each is refused with the status mq.h documents,
// leaves a detail message in mq_last_error(), and leaves the broker's observable state exactly as
// it was (see state_snapshot.h). Also: calls after mq_broker_close, refused calls from inside
// handlers and rebalance callbacks, the version and status-name functions, and user_free being
// called exactly once when mq_subscription_open fails.
#include <mq.h>

#include <gtest/gtest.h>

#include "state_snapshot.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using mq_snapshot::snapshot;

constexpr size_t kMaxMessage = 64;  // the broker's max_message_bytes: small, so oversize is cheap
constexpr int64_t kBudget = 32;     // byte budget of topic "budget"

// A clock that never moves: no lease can run out between a "before" and an "after" snapshot.
int64_t frozen_clock(void *) { return 1'000'000'000; }

// mq_last_error() is thread-local and "" on a thread that never failed: running each call on a
// fresh thread proves the message was left by that very call, not by an earlier failure.
struct Outcome {
    int status = -1;
    std::string error_before;
    std::string error;
};

Outcome on_fresh_thread(const std::function<int()> &call) {
    Outcome o;
    std::thread t([&] {
        o.error_before = mq_last_error();
        o.status = call();
        o.error = mq_last_error();
    });
    t.join();
    return o;
}

struct Case {
    std::string what;  // the call as written, so a failure names the function and the input
    mq_status expected;
    std::function<int()> call;
};

// clang-format takes these braces for a block and puts the stringised call at column 0.
// clang-format off
#define BAD(expected, ...) \
    Case { #__VA_ARGS__, expected, [&]() -> int { return __VA_ARGS__; } }
// clang-format on

std::string status_text(int s) {
    return std::string(mq_status_name(s)) + " (" + std::to_string(s) + ")";
}

// `b` is the broker whose state must not change, or nullptr for broker-less functions.
void expect_rejected(mq_broker *b, const Case &c) {
    SCOPED_TRACE(c.what);
    const std::string before = b ? snapshot(b) : "";
    const Outcome o = on_fresh_thread(c.call);
    EXPECT_EQ(status_text(o.status), status_text(c.expected))
        << c.what << " returned the wrong status; its message: \"" << o.error << "\"";
    EXPECT_EQ(o.error_before, "") << "a thread that never failed must have an empty mq_last_error";
    EXPECT_NE(o.error, "") << c.what << " left no mq_last_error() message";
    if (b) {
        EXPECT_EQ(snapshot(b), before) << c.what << " changed the broker's state";
    }
}

void expect_all_rejected(mq_broker *b, const std::vector<Case> &cases) {
    for (const Case &c : cases) expect_rejected(b, c);
}

std::vector<std::pair<std::string, std::string>> illegal_names() {
    return {{"empty", ""},       {"250 chars", std::string(250, 'a')},
            {"space", "a b"},    {"slash", "a/b"},
            {"newline", "a\nb"}, {"non-ASCII", "caf\xc3\xa9"},
            {"colon", "a:b"},    {"byte 0xff", "\xff"}};
}

// The legal edge: 249 characters, using every character the rule allows.
std::string longest_legal_name() {
    const std::string alphabet =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    std::string name;
    while (name.size() < 249) name += alphabet[name.size() % alphabet.size()];
    return name;
}

// Counts handler calls and user_free calls of one mq_subscription_open.
struct SubUser {
    std::atomic<int> handled{0};
    std::atomic<int> freed{0};
};
int count_handler(void *user, const mq_message *) {
    static_cast<SubUser *>(user)->handled.fetch_add(1);
    return 0;
}
void count_free(void *user) { static_cast<SubUser *>(user)->freed.fetch_add(1); }

struct SubCase {
    std::string what;
    mq_status expected;
    mq_broker *b;
    const char *topic;
    const char *group;
    const mq_subscription_options *opts;
    mq_handler handler = count_handler;
    bool null_out = false;
};

// A refused mq_subscription_open must still call user_free exactly once, before it returns, and never
// call the handler.
void expect_subscribe_rejected(mq_broker *snap, const SubCase &sc) {
    SubUser user;
    mq_subscription *sub = nullptr;
    expect_rejected(snap, Case{sc.what, sc.expected, [&]() -> int {
                                   return mq_subscription_open(sc.b, sc.topic, sc.group, sc.opts,
                                                               sc.handler, &user, count_free,
                                                               sc.null_out ? nullptr : &sub);
                               }});
    EXPECT_EQ(user.freed.load(), 1) << sc.what << ": user_free calls after the failed subscribe";
    EXPECT_EQ(user.handled.load(), 0) << sc.what << ": handler ran for a failed subscribe";
    if (sub != nullptr) mq_subscription_close(sub);  // only reached if the library wrongly accepted
}

mq_subscription_options sub_opts(int32_t prefetch, const int32_t *parts, size_t count) {
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.prefetch = prefetch;
    o.partitions = parts;
    o.partition_count = count;
    return o;
}

// State the bad calls could damage: two topics, three groups, messages retained, some in flight,
// some acked, a byte budget partly used.
//   orders (2 partitions, capacity 4): 3 messages per partition; groups billing and email;
//     partition 0: billing committed 1 / next 2, email committed 0 / next 1 (log 0..2);
//     partition 1: both groups committed 1 / next 1 (log 1..2).
//   budget (1 partition, capacity 8, 32-byte budget): 20 bytes retained; group audit.
class BadInput : public ::testing::Test {
protected:
    void SetUp() override {
        mq_broker_options opts;
        mq_broker_options_init(&opts, sizeof opts);
        opts.clock = frozen_clock;
        opts.max_message_bytes = kMaxMessage;
        ASSERT_EQ(mq_broker_new(&opts, &b), MQ_OK) << mq_last_error();

        mq_topic_config cfg;
        mq_topic_config_init(&cfg, sizeof cfg);
        cfg.partitions = 2;
        cfg.capacity = 4;
        ASSERT_EQ(mq_topic_create(b, "orders", &cfg), MQ_OK) << mq_last_error();
        cfg.partitions = 1;
        cfg.capacity = 8;
        cfg.max_bytes = kBudget;
        ASSERT_EQ(mq_topic_create(b, "budget", &cfg), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_subscribe(b, "orders", "billing", nullptr), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_subscribe(b, "orders", "email", nullptr), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_subscribe(b, "budget", "audit", nullptr), MQ_OK) << mq_last_error();

        for (int32_t p = 0; p < 2; ++p) {
            const std::string key = key_for(p);
            for (int i = 0; i < 3; ++i) {
                int32_t part = -1;
                ASSERT_EQ(mq_topic_publish(b, "orders", key.data(), key.size(), "o", 1, NULL, 0,
                                           MQ_NO_WAIT, nullptr, &part, nullptr),
                          MQ_OK)
                    << mq_last_error();
                ASSERT_EQ(part, p);
            }
        }
        mq_message msgs[2];
        size_t n = 0;
        ASSERT_EQ(mq_group_poll(b, "orders", "billing", 0, msgs, sizeof(mq_message), 2, MQ_NO_WAIT,
                                nullptr, &n),
                  MQ_OK);
        ASSERT_EQ(n, 2u);
        ASSERT_EQ(mq_group_ack(b, "orders", "billing", 0, 0), MQ_OK) << mq_last_error();
        ASSERT_EQ(mq_group_poll(b, "orders", "email", 0, msgs, sizeof(mq_message), 1, MQ_NO_WAIT,
                                nullptr, &n),
                  MQ_OK);
        ASSERT_EQ(n, 1u);
        for (const char *group : {"billing", "email"}) {
            ASSERT_EQ(mq_group_poll(b, "orders", group, 1, msgs, sizeof(mq_message), 1, MQ_NO_WAIT,
                                    nullptr, &n),
                      MQ_OK);
            ASSERT_EQ(n, 1u);
            ASSERT_EQ(mq_group_ack(b, "orders", group, 1, 0), MQ_OK) << mq_last_error();
        }

        const std::string ten(10, 'b');
        for (int i = 0; i < 2; ++i)
            ASSERT_EQ(mq_topic_publish(b, "budget", nullptr, 0, ten.data(), ten.size(), NULL, 0,
                                       MQ_NO_WAIT, nullptr, nullptr, nullptr),
                      MQ_OK)
                << mq_last_error();
    }

    void TearDown() override { mq_broker_free(b); }

    // A key that Kafka's partitioner puts on partition p of a 2-partition topic.
    static std::string key_for(int32_t p) {
        for (int i = 0;; ++i) {
            const std::string key = "key-" + std::to_string(i);
            int32_t got = -1;
            EXPECT_EQ(mq_key_partition(key.data(), key.size(), 2, &got), MQ_OK);
            if (got == p) return key;
        }
    }

    mq_broker *b = nullptr;
};

// Guards every other test here: if the snapshot missed changes, "state unchanged" would be
// vacuous.
TEST_F(BadInput, SnapshotSeesEveryKindOfChange) {
    std::string s = snapshot(b);
    EXPECT_NE(s.find("billing: committed=1 next=2"), std::string::npos) << s;
    EXPECT_NE(s.find("retained_bytes=20"), std::string::npos) << s;

    const std::vector<std::pair<std::string, std::function<int()>>> changes = {
        {"publish",
         [&] {
             return mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0, 0, nullptr, nullptr,
                                     nullptr);
         }},
        {"poll",
         [&] {
             mq_message m;
             size_t n = 0;
             return mq_group_poll(b, "orders", "email", 1, &m, sizeof(mq_message), 1, 0, nullptr,
                                  &n);
         }},
        {"ack", [&] { return mq_group_ack(b, "orders", "billing", 0, 1); }},
        {"nack", [&] { return mq_group_nack(b, "orders", "email", 0, 0); }},
        {"group subscribe", [&] { return mq_group_subscribe(b, "budget", "late", nullptr); }},
        {"group unsubscribe", [&] { return mq_group_unsubscribe(b, "budget", "late"); }},
        {"topic create", [&] { return mq_topic_create(b, "more", nullptr); }},
    };
    for (const auto &[what, change] : changes) {
        ASSERT_EQ(change(), MQ_OK) << what << ": " << mq_last_error();
        const std::string after = snapshot(b);
        EXPECT_NE(after, s) << "the snapshot did not see a successful " << what;
        s = after;
    }
}

TEST(BadInputVersion, RuntimeMatchesHeader) {
    EXPECT_EQ(mq_version_number(), MQ_VERSION_NUMBER);
    ASSERT_NE(mq_version_string(), nullptr);
    EXPECT_STREQ(mq_version_string(), MQ_VERSION_STRING);
}

TEST(BadInputStatusName, EveryStatusAndUnknownValues) {
    const std::vector<std::pair<int, const char *>> names = {
        {MQ_OK, "MQ_OK"},
        {MQ_TIMEOUT, "MQ_TIMEOUT"},
        {MQ_FULL, "MQ_FULL"},
        {MQ_CLOSED, "MQ_CLOSED"},
        {MQ_CANCELLED, "MQ_CANCELLED"},
        {MQ_REBALANCED, "MQ_REBALANCED"},
        {MQ_PENDING, "MQ_PENDING"},
        {MQ_ERR_INVALID, "MQ_ERR_INVALID"},
        {MQ_ERR_NO_TOPIC, "MQ_ERR_NO_TOPIC"},
        {MQ_ERR_NO_GROUP, "MQ_ERR_NO_GROUP"},
        {MQ_ERR_EXISTS, "MQ_ERR_EXISTS"},
        {MQ_ERR_PARTITION, "MQ_ERR_PARTITION"},
        {MQ_ERR_TOO_LARGE, "MQ_ERR_TOO_LARGE"},
        {MQ_ERR_NOT_IN_FLIGHT, "MQ_ERR_NOT_IN_FLIGHT"},
        {MQ_ERR_OWNED, "MQ_ERR_OWNED"},
        {MQ_ERR_DEADLOCK, "MQ_ERR_DEADLOCK"},
        {MQ_ERR_NO_MEMORY, "MQ_ERR_NO_MEMORY"},
        {MQ_ERR_INTERNAL, "MQ_ERR_INTERNAL"},
        {MQ_ERR_OUT_OF_RANGE, "MQ_ERR_OUT_OF_RANGE"},
        {MQ_ERR_FENCED, "MQ_ERR_FENCED"},
        {MQ_ERR_UNSUPPORTED, "MQ_ERR_UNSUPPORTED"},
        {MQ_ERR_BACKEND, "MQ_ERR_BACKEND"},
    };
    for (const auto &[status, name] : names) {
        ASSERT_NE(mq_status_name(status), nullptr) << status;
        EXPECT_STREQ(mq_status_name(status), name) << "status " << status;
    }
    // The gaps in the numbering and values on both sides of it.
    for (int unknown : {-1, 7, 9, 25, 100, INT_MIN, INT_MAX}) {
        ASSERT_NE(mq_status_name(unknown), nullptr) << unknown;
        EXPECT_STREQ(mq_status_name(unknown), "MQ_UNKNOWN_STATUS") << "status " << unknown;
    }
}

TEST(BadInputBroker, NewRejectsBadArguments) {
    mq_broker_options base;
    mq_broker_options_init(&base, sizeof base);
    auto with = [&](auto edit) {
        mq_broker_options o = base;
        edit(o);
        return o;
    };
    const mq_broker_options size0 = with([](auto &o) { o.size = 0; });
    const mq_broker_options size_short = with([](auto &o) { o.size = sizeof(size_t) - 1; });
    const mq_broker_options max0 = with([](auto &o) { o.max_message_bytes = 0; });
    const mq_broker_options max_over =
        with([](auto &o) { o.max_message_bytes = (size_t{1} << 30) + 1; });
    const mq_broker_options max_huge = with([](auto &o) { o.max_message_bytes = SIZE_MAX; });
    // Frees a broker the library should not have created, so a wrong acceptance does not leak.
    auto try_new = [](const mq_broker_options *o) {
        mq_broker *nb = nullptr;
        const int st = mq_broker_new(o, &nb);
        if (st == MQ_OK) mq_broker_free(nb);
        return st;
    };
    expect_all_rejected(nullptr, {
                                     BAD(MQ_ERR_INVALID, mq_broker_new(nullptr, nullptr)),
                                     BAD(MQ_ERR_INVALID, mq_broker_new(&base, nullptr)),
                                     BAD(MQ_ERR_INVALID, try_new(&size0)),
                                     BAD(MQ_ERR_INVALID, try_new(&size_short)),
                                     BAD(MQ_ERR_INVALID, try_new(&max0)),
                                     BAD(MQ_ERR_INVALID, try_new(&max_over)),
                                     BAD(MQ_ERR_INVALID, try_new(&max_huge)),
                                     BAD(MQ_ERR_INVALID, mq_broker_close(nullptr)),
                                 });
    mq_broker_free(nullptr);  // documented as ignored
}

TEST(BadInputBroker, NewAcceptsTheLegalEdges) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.max_message_bytes = size_t{1} << 30;  // "above 2^30" is refused, 2^30 itself is not
    mq_broker *nb = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &nb), MQ_OK) << mq_last_error();
    mq_broker_free(nb);

    // A caller built against an older header: fields beyond `size` are not read, even if garbage.
    o.size = offsetof(mq_broker_options, max_message_bytes);
    o.max_message_bytes = 0;
    nb = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &nb), MQ_OK) << mq_last_error();
    mq_broker_free(nb);

    o.size = sizeof(size_t);
    nb = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &nb), MQ_OK) << mq_last_error();
    mq_broker_free(nb);
}

// A bootstrap is refused with MQ_ERR_UNSUPPORTED and words saying why, before any network
// wait: without the backend compiled in (how to rebuild), and with a manual clock in either
// build (Kafka's time is the cluster's). The Kafka build's network paths: tests/kafka.
TEST(BadInputBroker, KafkaBootstrapRefusals) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = "127.0.0.1:1";
    o.clock = frozen_clock;
    mq_broker *nb = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &nb), MQ_ERR_UNSUPPORTED);
    EXPECT_EQ(nb, nullptr);
#ifdef MQ_TEST_HAVE_KAFKA
    EXPECT_NE(std::strstr(mq_last_error(), "clock"), nullptr) << mq_last_error();
#else
    EXPECT_NE(std::strstr(mq_last_error(), "-DMQ_KAFKA=ON"), nullptr) << mq_last_error();
    o.clock = nullptr;
    EXPECT_EQ(mq_broker_new(&o, &nb), MQ_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(mq_last_error(), "-DMQ_KAFKA=ON"), nullptr) << mq_last_error();
    EXPECT_EQ(nb, nullptr);
#endif
}

// The *_init functions must not write past `size` (an older caller's struct is smaller), and do
// nothing for NULL or a size that cannot even hold the size field. Only mq_broker_options_init
// documents the NULL and short-size cases; the others follow the same pattern by the header's
// "Config structs" promise.
template <class T>
void check_init(const char *name, void (*init)(T *, size_t), size_t first_field_end) {
    SCOPED_TRACE(name);
    init(nullptr, sizeof(T));
    T t;
    std::memset(&t, 0xAB, sizeof t);
    init(&t, sizeof(size_t) - 1);
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&t);
    for (size_t i = 0; i < sizeof t; ++i)
        ASSERT_EQ(bytes[i], 0xAB) << name << " with a size below the size field wrote byte " << i;
    init(&t, first_field_end);
    EXPECT_EQ(t.size, first_field_end) << name;
    for (size_t i = first_field_end; i < sizeof t; ++i)
        ASSERT_EQ(bytes[i], 0xAB) << name << " wrote byte " << i << " past size "
                                  << first_field_end;
}

TEST(BadInputInit, NullShortAndPartialSizes) {
    check_init<mq_broker_options>("mq_broker_options_init", mq_broker_options_init,
                                  offsetof(mq_broker_options, clock_user));
    check_init<mq_topic_config>("mq_topic_config_init", mq_topic_config_init,
                                offsetof(mq_topic_config, capacity));
    check_init<mq_group_options>("mq_group_options_init", mq_group_options_init, sizeof(size_t));
    check_init<mq_subscription_options>("mq_subscription_options_init",
                                        mq_subscription_options_init,
                                        offsetof(mq_subscription_options, partitions));
    check_init<mq_member_options>("mq_member_options_init", mq_member_options_init,
                                  offsetof(mq_member_options, session_timeout_ms));
}

TEST(BadInputCancel, NullTokens) {
    expect_rejected(nullptr, BAD(MQ_ERR_INVALID, mq_cancel_new(nullptr)));
    // Documented as ignored (or 0): must not crash.
    mq_cancel_trigger(nullptr);
    mq_cancel_reset(nullptr);
    EXPECT_EQ(mq_cancel_is_triggered(nullptr), 0);
    mq_cancel_free(nullptr);
}

TEST(BadInputHelpers, PartitionForKey) {
    int32_t out = -1;
    expect_all_rejected(nullptr, {
                                     BAD(MQ_ERR_INVALID, mq_key_partition("k", 1, 4, nullptr)),
                                     BAD(MQ_ERR_INVALID, mq_key_partition(nullptr, 1, 4, &out)),
                                     BAD(MQ_ERR_INVALID, mq_key_partition("k", 1, 0, &out)),
                                     BAD(MQ_ERR_INVALID, mq_key_partition("k", 1, -1, &out)),
                                     BAD(MQ_ERR_INVALID, mq_key_partition("k", 1, INT32_MIN, &out)),
                                 });
    // The legal edges: an empty key (not "no key") may be NULL with length 0.
    EXPECT_EQ(mq_key_partition(nullptr, 0, 4, &out), MQ_OK) << mq_last_error();
    int32_t out_empty = -1;
    EXPECT_EQ(mq_key_partition("", 0, 4, &out_empty), MQ_OK) << mq_last_error();
    EXPECT_EQ(out, out_empty);
    EXPECT_EQ(mq_key_murmur2(nullptr, 0), mq_key_murmur2("x", 0));
}

TEST(BadInputHelpers, AssignRoundRobin) {
    int32_t out[8];
    size_t count = 0;
    expect_all_rejected(
        nullptr,
        {
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(0, 2, 0, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(-1, 2, 0, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 0, 0, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, -1, 0, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 2, -1, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 2, 2, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 2, INT32_MAX, out, 8, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 2, 0, nullptr, 1, &count)),
            BAD(MQ_ERR_INVALID, mq_assignment_round_robin(4, 2, 0, out, 8, nullptr)),
        });
    // The legal edge: out NULL with cap 0 only counts.
    EXPECT_EQ(mq_assignment_round_robin(5, 2, 0, nullptr, 0, &count), MQ_OK) << mq_last_error();
    EXPECT_EQ(count, 3u);
}

TEST_F(BadInput, TopicCreate) {
    mq_topic_config base;
    mq_topic_config_init(&base, sizeof base);
    std::vector<std::pair<std::string, mq_topic_config>> configs;
    auto bad_cfg = [&](const std::string &what, auto edit) {
        mq_topic_config c = base;
        edit(c);
        configs.emplace_back(what, c);
    };
    bad_cfg("partitions 0", [](auto &c) { c.partitions = 0; });
    bad_cfg("partitions -1", [](auto &c) { c.partitions = -1; });
    bad_cfg("partitions 65537", [](auto &c) { c.partitions = 65537; });
    bad_cfg("partitions INT32_MIN", [](auto &c) { c.partitions = INT32_MIN; });
    bad_cfg("capacity 0", [](auto &c) { c.capacity = 0; });
    bad_cfg("capacity -1", [](auto &c) { c.capacity = -1; });
    bad_cfg("capacity 2^40+1", [](auto &c) { c.capacity = (int64_t{1} << 40) + 1; });
    bad_cfg("max_bytes -1", [](auto &c) { c.max_bytes = -1; });
    bad_cfg("max_bytes INT64_MIN", [](auto &c) { c.max_bytes = INT64_MIN; });
    bad_cfg("ack_timeout_ms 0", [](auto &c) { c.ack_timeout_ms = 0; });
    bad_cfg("ack_timeout_ms -1", [](auto &c) { c.ack_timeout_ms = -1; });
    bad_cfg("max_age_ms -1", [](auto &c) { c.max_age_ms = -1; });
    bad_cfg("retention 2 (unknown)", [](auto &c) { c.retention = 2; });
    bad_cfg("retention -1 (unknown)", [](auto &c) { c.retention = -1; });
    bad_cfg("size 0", [](auto &c) { c.size = 0; });
    bad_cfg("size below the size field", [](auto &c) { c.size = sizeof(size_t) - 1; });
    for (const auto &c : configs)
        expect_rejected(b,
                        Case{"mq_topic_create(b, \"fresh\", cfg) with " + c.first, MQ_ERR_INVALID,
                             [&] { return mq_topic_create(b, "fresh", &c.second); }});
    for (const auto &n : illegal_names())
        expect_rejected(b, Case{"mq_topic_create with an illegal name: " + n.first, MQ_ERR_INVALID,
                                [&] { return mq_topic_create(b, n.second.c_str(), nullptr); }});
    mq_topic_config other = base;
    other.partitions = 3;
    expect_all_rejected(b, {
                               BAD(MQ_ERR_INVALID, mq_topic_create(nullptr, "fresh", nullptr)),
                               BAD(MQ_ERR_INVALID, mq_topic_create(b, nullptr, nullptr)),
                               BAD(MQ_ERR_EXISTS, mq_topic_create(b, "orders", nullptr)),
                               BAD(MQ_ERR_EXISTS, mq_topic_create(b, "budget", &other)),
                           });
}

TEST_F(BadInput, LegalEdgesAreAccepted) {
    const std::string longest = longest_legal_name();
    ASSERT_EQ(mq_topic_create(b, longest.c_str(), nullptr), MQ_OK) << mq_last_error();
    EXPECT_NE(mq_snapshot::topic_list(b).find(longest + "\n"), std::string::npos);
    ASSERT_EQ(mq_group_subscribe(b, longest.c_str(), longest.c_str(), nullptr), MQ_OK)
        << mq_last_error();
    EXPECT_EQ(mq_snapshot::group_list(b, longest), longest + "\n");

    // Fields beyond cfg->size are not read: the garbage capacity 0 gives way to the default.
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.size = offsetof(mq_topic_config, capacity);
    cfg.partitions = 2;
    cfg.capacity = 0;
    ASSERT_EQ(mq_topic_create(b, "old-caller", &cfg), MQ_OK) << mq_last_error();
    mq_topic_info ti{};
    ASSERT_EQ(mq_topic_get_info(b, "old-caller", &ti, sizeof ti), MQ_OK);
    EXPECT_EQ(ti.partitions, 2);
    EXPECT_EQ(ti.capacity, 1024);

    // A message of exactly max_message_bytes (key + payload), and one of exactly the budget.
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.max_bytes = kBudget;
    ASSERT_EQ(mq_topic_create(b, "edge", &cfg), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_subscribe(b, "edge", "g", nullptr), MQ_OK);
    const std::string max(kMaxMessage, 'm');
    EXPECT_EQ(mq_topic_publish(b, "orders", max.data(), 10, max.data(), kMaxMessage - 10, NULL, 0,
                               0, nullptr, nullptr, nullptr),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(mq_topic_publish(b, "edge", nullptr, 0, max.data(), kBudget, NULL, 0, 0, nullptr,
                               nullptr, nullptr),
              MQ_OK)
        << mq_last_error();
    // An empty payload may be NULL, and an empty key ("" rather than no key) fits any budget.
    EXPECT_EQ(mq_topic_publish(b, "edge", "", 0, nullptr, 0, NULL, 0, 0, nullptr, nullptr, nullptr),
              MQ_OK)
        << mq_last_error();
}

TEST_F(BadInput, ListsAndIntrospection) {
    char buf[64];
    size_t needed = 0;
    mq_topic_info ti{};
    mq_partition_info pi{};
    mq_group_info gi{};
    const std::string longest = longest_legal_name();
    expect_all_rejected(
        b,
        {
            BAD(MQ_ERR_INVALID, mq_topic_list(nullptr, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_topic_list(b, nullptr, 1, &needed)),

            BAD(MQ_ERR_INVALID, mq_group_list(nullptr, "orders", buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_group_list(b, nullptr, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_group_list(b, "orders", nullptr, 1, &needed)),
            BAD(MQ_ERR_NO_TOPIC, mq_group_list(b, "nope", buf, sizeof buf, &needed)),
            BAD(MQ_ERR_NO_TOPIC, mq_group_list(b, longest.c_str(), buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_group_list(b, "a b", buf, sizeof buf, &needed)),

            BAD(MQ_ERR_INVALID, mq_topic_get_info(nullptr, "orders", &ti, sizeof ti)),
            BAD(MQ_ERR_INVALID, mq_topic_get_info(b, nullptr, &ti, sizeof ti)),
            BAD(MQ_ERR_INVALID, mq_topic_get_info(b, "orders", nullptr, sizeof ti)),
            BAD(MQ_ERR_NO_TOPIC, mq_topic_get_info(b, "nope", &ti, sizeof ti)),
            BAD(MQ_ERR_INVALID, mq_topic_get_info(b, "", &ti, sizeof ti)),

            BAD(MQ_ERR_INVALID, mq_partition_get_info(nullptr, "orders", 0, &pi, sizeof pi)),
            BAD(MQ_ERR_INVALID, mq_partition_get_info(b, nullptr, 0, &pi, sizeof pi)),
            BAD(MQ_ERR_INVALID, mq_partition_get_info(b, "orders", 0, nullptr, sizeof pi)),
            BAD(MQ_ERR_NO_TOPIC, mq_partition_get_info(b, "nope", 0, &pi, sizeof pi)),
            BAD(MQ_ERR_PARTITION, mq_partition_get_info(b, "orders", -1, &pi, sizeof pi)),
            BAD(MQ_ERR_PARTITION, mq_partition_get_info(b, "orders", 2, &pi, sizeof pi)),
            BAD(MQ_ERR_PARTITION, mq_partition_get_info(b, "orders", INT32_MIN, &pi, sizeof pi)),

            BAD(MQ_ERR_INVALID, mq_group_get_info(nullptr, "orders", "billing", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_INVALID, mq_group_get_info(b, nullptr, "billing", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_INVALID, mq_group_get_info(b, "orders", nullptr, 0, &gi, sizeof gi)),
            BAD(MQ_ERR_INVALID, mq_group_get_info(b, "orders", "billing", 0, nullptr, sizeof gi)),
            BAD(MQ_ERR_NO_TOPIC, mq_group_get_info(b, "nope", "billing", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_NO_GROUP, mq_group_get_info(b, "orders", "nope", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_NO_GROUP, mq_group_get_info(b, "orders", "audit", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_PARTITION, mq_group_get_info(b, "orders", "billing", -1, &gi, sizeof gi)),
            BAD(MQ_ERR_PARTITION, mq_group_get_info(b, "orders", "billing", 2, &gi, sizeof gi)),
            BAD(MQ_ERR_INVALID, mq_group_get_info(b, "orders", "a/b", 0, &gi, sizeof gi)),

            BAD(MQ_ERR_INVALID,
                mq_partition_describe(nullptr, "orders", 0, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_partition_describe(b, nullptr, 0, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_INVALID, mq_partition_describe(b, "orders", 0, nullptr, 1, &needed)),
            BAD(MQ_ERR_NO_TOPIC, mq_partition_describe(b, "nope", 0, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_PARTITION, mq_partition_describe(b, "orders", -1, buf, sizeof buf, &needed)),
            BAD(MQ_ERR_PARTITION, mq_partition_describe(b, "orders", 2, buf, sizeof buf, &needed)),
        });
}

TEST_F(BadInput, GroupSubscribeAndUnsubscribe) {
    mq_group_options start2, start_neg, size0, size_short, dlq_only, max_only, dlq_self,
        dlq_unknown, dlq_illegal;
    for (auto *o : {&start2, &start_neg, &size0, &size_short, &dlq_only, &max_only, &dlq_self,
                    &dlq_unknown, &dlq_illegal})
        mq_group_options_init(o, sizeof *o);
    start2.start = 2;
    start_neg.start = -1;
    size0.size = 0;
    size_short.size = sizeof(size_t) - 1;
    dlq_only.dead_letter_topic = "budget";
    max_only.max_deliveries = 3;
    for (auto *o : {&dlq_self, &dlq_unknown, &dlq_illegal}) o->max_deliveries = 3;
    dlq_self.dead_letter_topic = "orders";
    dlq_unknown.dead_letter_topic = "nope";
    dlq_illegal.dead_letter_topic = "dead letters";
    for (const auto &n : illegal_names()) {
        const char *name = n.second.c_str();
        expect_rejected(
            b, Case{"mq_group_subscribe with an illegal group name: " + n.first, MQ_ERR_INVALID,
                    [&] { return mq_group_subscribe(b, "orders", name, nullptr); }});
        expect_rejected(
            b, Case{"mq_group_unsubscribe with an illegal group name: " + n.first, MQ_ERR_INVALID,
                    [&] { return mq_group_unsubscribe(b, "orders", name); }});
    }
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID, mq_group_subscribe(nullptr, "orders", "fresh", nullptr)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, nullptr, "fresh", nullptr)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", nullptr, nullptr)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "a b", "fresh", nullptr)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_subscribe(b, "nope", "fresh", nullptr)),
               BAD(MQ_ERR_EXISTS, mq_group_subscribe(b, "orders", "billing", nullptr)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &start2)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &start_neg)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &size0)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &size_short)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &dlq_only)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &max_only)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &dlq_self)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_subscribe(b, "orders", "fresh", &dlq_unknown)),
               BAD(MQ_ERR_INVALID, mq_group_subscribe(b, "orders", "fresh", &dlq_illegal)),

               BAD(MQ_ERR_INVALID, mq_group_unsubscribe(nullptr, "orders", "billing")),
               BAD(MQ_ERR_INVALID, mq_group_unsubscribe(b, nullptr, "billing")),
               BAD(MQ_ERR_INVALID, mq_group_unsubscribe(b, "orders", nullptr)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_unsubscribe(b, "nope", "billing")),
               BAD(MQ_ERR_NO_GROUP, mq_group_unsubscribe(b, "orders", "nope")),
               BAD(MQ_ERR_NO_GROUP, mq_group_unsubscribe(b, "orders", "audit")),
           });
}

TEST_F(BadInput, Publish) {
    const std::string big(2 * kMaxMessage, 'x');
    const std::string longest = longest_legal_name();
    const char *p = big.data();
    int32_t part = -7;
    int64_t off = -7;
    expect_all_rejected(
        b,
        {
            BAD(MQ_ERR_INVALID, mq_topic_publish(nullptr, "orders", nullptr, 0, "x", 1, NULL, 0, 0,
                                                 nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID,
                mq_topic_publish(b, nullptr, nullptr, 0, "x", 1, NULL, 0, 0, nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID, mq_topic_publish(b, "orders", nullptr, 1, "x", 1, NULL, 0, 0,
                                                 nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID, mq_topic_publish(b, "orders", "k", 1, nullptr, 1, NULL, 0, 0,
                                                 nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID, mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0, -2,
                                                 nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID, mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0,
                                                 INT64_MIN, nullptr, &part, &off)),
            BAD(MQ_ERR_INVALID,
                mq_topic_publish(b, "a/b", nullptr, 0, "x", 1, NULL, 0, 0, nullptr, &part, &off)),
            BAD(MQ_ERR_NO_TOPIC,
                mq_topic_publish(b, "nope", nullptr, 0, "x", 1, NULL, 0, 0, nullptr, &part, &off)),
            BAD(MQ_ERR_NO_TOPIC, mq_topic_publish(b, longest.c_str(), nullptr, 0, "x", 1, NULL, 0,
                                                  0, nullptr, &part, &off)),
            // Over max_message_bytes: by payload, by key, and by the sum of the two.
            BAD(MQ_ERR_TOO_LARGE, mq_topic_publish(b, "orders", nullptr, 0, p, kMaxMessage + 1,
                                                   NULL, 0, 0, nullptr, &part, &off)),
            BAD(MQ_ERR_TOO_LARGE, mq_topic_publish(b, "orders", p, kMaxMessage + 1, nullptr, 0,
                                                   NULL, 0, 0, nullptr, &part, &off)),
            BAD(MQ_ERR_TOO_LARGE, mq_topic_publish(b, "orders", p, 32, p, kMaxMessage - 31, NULL, 0,
                                                   0, nullptr, &part, &off)),
            // Over the topic's byte budget (which no amount of waiting can make room for).
            BAD(MQ_ERR_TOO_LARGE, mq_topic_publish(b, "budget", nullptr, 0, p, kBudget + 1, NULL, 0,
                                                   0, nullptr, &part, &off)),
            // A short wait, not forever: a library that waited for room instead would hang the suite.
            BAD(MQ_ERR_TOO_LARGE, mq_topic_publish(b, "budget", p, 20, p, kBudget - 19, NULL, 0, 50,
                                                   nullptr, &part, &off)),
        });
}

TEST_F(BadInput, PublishBatch) {
    const std::string big(2 * kMaxMessage, 'x');
    const mq_record ok{nullptr, 0, "ok", 2};
    const mq_record null_key{nullptr, 3, "x", 1};
    const mq_record null_payload{"k", 1, nullptr, 2};
    const mq_record too_large{nullptr, 0, big.data(), kMaxMessage + 1};
    const mq_record over_budget{nullptr, 0, big.data(), kBudget + 1};
    const mq_record bad_key_batch[] = {ok, null_key, ok};
    const mq_record bad_payload_batch[] = {ok, ok, null_payload};
    const mq_record large_batch[] = {ok, too_large};
    const mq_record budget_batch[] = {ok, over_budget};
    const mq_record fine[] = {ok};
    // A refused batch publishes nothing: `published`, if written, says 0 and every result, if
    // written, has offset -1.
    auto batch = [&](mq_broker *bb, const char *topic, const mq_record *recs, size_t n,
                     int64_t wait) {
        mq_publish_result results[3] = {{-7, -7}, {-7, -7}, {-7, -7}};
        size_t published = 777;
        const int st = mq_topic_publish_batch(bb, topic, recs, sizeof(mq_record), n, wait, nullptr,
                                              results, sizeof(mq_publish_result), &published);
        EXPECT_TRUE(published == 777 || published == 0) << "published " << published;
        for (size_t i = 0; i < n && i < 3; ++i)
            EXPECT_TRUE(results[i].offset == -7 || results[i].offset == -1)
                << "record " << i << " has offset " << results[i].offset;
        return st;
    };
    expect_all_rejected(b, {
                               BAD(MQ_ERR_INVALID, batch(nullptr, "orders", fine, 1, 0)),
                               BAD(MQ_ERR_INVALID, batch(b, nullptr, fine, 1, 0)),
                               BAD(MQ_ERR_INVALID, batch(b, "orders", nullptr, 1, 0)),
                               BAD(MQ_ERR_INVALID, batch(b, "orders", fine, 1, -2)),
                               BAD(MQ_ERR_INVALID, batch(b, "orders", bad_key_batch, 3, 0)),
                               BAD(MQ_ERR_INVALID, batch(b, "orders", bad_payload_batch, 3, 0)),
                               BAD(MQ_ERR_INVALID, batch(b, "a\nb", fine, 1, 0)),
                               BAD(MQ_ERR_NO_TOPIC, batch(b, "nope", fine, 1, 0)),
                               BAD(MQ_ERR_TOO_LARGE, batch(b, "orders", large_batch, 2, 0)),
                               BAD(MQ_ERR_TOO_LARGE, batch(b, "budget", budget_batch, 2, 0)),
                           });
}

TEST_F(BadInput, Poll) {
    mq_message msgs[4];
    size_t n = 0;
    // billing has three messages ready on partition 1, so a bad poll that slipped through would
    // move its cursor.
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID, mq_group_poll(nullptr, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, nullptr, "billing", 1, msgs, sizeof(mq_message),
                                                 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", nullptr, 1, msgs, sizeof(mq_message),
                                                 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, nullptr,
                                                 sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message), 4, 0, nullptr, nullptr)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message), 0, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message), 4, -2, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message), 4, INT64_MIN, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "bill ing", 1, msgs,
                                                 sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_poll(b, "nope", "billing", 1, msgs, sizeof(mq_message),
                                                  4, 0, nullptr, &n)),
               BAD(MQ_ERR_NO_GROUP, mq_group_poll(b, "orders", "nope", 1, msgs, sizeof(mq_message),
                                                  4, 0, nullptr, &n)),
               BAD(MQ_ERR_NO_GROUP, mq_group_poll(b, "orders", "audit", 1, msgs, sizeof(mq_message),
                                                  4, 0, nullptr, &n)),
               BAD(MQ_ERR_PARTITION, mq_group_poll(b, "orders", "billing", -1, msgs,
                                                   sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_ERR_PARTITION, mq_group_poll(b, "orders", "billing", 2, msgs,
                                                   sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_ERR_PARTITION, mq_group_poll(b, "orders", "billing", INT32_MAX, msgs,
                                                   sizeof(mq_message), 4, 0, nullptr, &n)),
           });
}

// The growth rule (mq.h): an element size below the 1.0 struct's is refused, and nothing
// changes (the results of a refused batch are not written).
TEST_F(BadInput, ElementSizesBelowTheStruct) {
    mq_message msgs[4];
    size_t n = 0;
    const mq_record ok{nullptr, 0, "ok", 2, nullptr, 0};
    const mq_record recs[] = {ok, ok};
    mq_publish_result results[2] = {{-7, -7}, {-7, -7}};
    size_t published = 777;
    auto batch = [&](size_t record_size, size_t result_size) {
        return mq_topic_publish_batch(b, "orders", recs, record_size, 2, 0, nullptr, results,
                                      result_size, &published);
    };
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID,
                   mq_group_poll(b, "orders", "billing", 1, msgs, 0, 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs,
                                                 sizeof(mq_message) - 1, 4, 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, mq_group_poll(b, "orders", "billing", 1, msgs, sizeof(size_t), 4,
                                                 0, nullptr, &n)),
               BAD(MQ_ERR_INVALID, batch(0, sizeof(mq_publish_result))),
               // Below the 1.0 record (the 1.5 one without delay_ms): refused.
               BAD(MQ_ERR_INVALID,
                   batch(offsetof(mq_record, delay_ms) - 1, sizeof(mq_publish_result))),
               BAD(MQ_ERR_INVALID, batch(sizeof(mq_record), 0)),
               BAD(MQ_ERR_INVALID, batch(sizeof(mq_record), sizeof(mq_publish_result) - 1)),
           });
    EXPECT_EQ(published, 0u);
    for (const mq_publish_result &r : results) {
        EXPECT_EQ(r.partition, -7) << "a refused batch wrote its results";
        EXPECT_EQ(r.offset, -7);
    }
}

// Header arguments: a NULL list or a NULL name or value with a length is MQ_ERR_INVALID, and the
// header bytes count against max_message_bytes and the byte budget (MQ_ERR_TOO_LARGE).
TEST_F(BadInput, Headers) {
    const std::string big(2 * kMaxMessage, 'h');
    const mq_header fine{"n", 1, "v", 1};
    const mq_header null_name{nullptr, 1, "v", 1};
    const mq_header null_value{"n", 1, nullptr, 2};
    const mq_header empty{nullptr, 0, nullptr, 0};  // legal: both empty
    const mq_header bad_name_list[] = {fine, null_name};
    const mq_header bad_value_list[] = {empty, null_value};
    // With a payload of 60 bytes, headers of 5 bytes pass the 64-byte limit; the name pushes
    // it over, so does the value, so do many small headers.
    const mq_header name_over{big.data(), 5, "", 0};
    const mq_header value_over{"", 0, big.data(), 5};
    const mq_header small{"ab", 2, "c", 1};
    const mq_header two_small[] = {small, small};
    // Huge lengths must not wrap around the sum.
    const mq_header huge{big.data(), SIZE_MAX, big.data(), SIZE_MAX};
    const char *p = big.data();
    auto publish = [&](const char *topic, size_t payload_len, const mq_header *h, size_t count) {
        return mq_topic_publish(b, topic, nullptr, 0, p, payload_len, h, count, 0, nullptr, nullptr,
                                nullptr);
    };
    auto batch = [&](const char *topic, size_t payload_len, const mq_header *h, size_t count) {
        const mq_record recs[] = {{nullptr, 0, "ok", 2, nullptr, 0},
                                  {nullptr, 0, p, payload_len, h, count}};
        size_t published = 777;
        const int st = mq_topic_publish_batch(b, topic, recs, sizeof(mq_record), 2, 0, nullptr,
                                              nullptr, sizeof(mq_publish_result), &published);
        EXPECT_EQ(published, 0u);
        return st;
    };
    for (auto send : {std::function<int(const char *, size_t, const mq_header *, size_t)>(publish),
                      std::function<int(const char *, size_t, const mq_header *, size_t)>(batch)}) {
        expect_all_rejected(
            b, {
                   BAD(MQ_ERR_INVALID, send("orders", 1, nullptr, 1)),
                   BAD(MQ_ERR_INVALID, send("orders", 1, bad_name_list, 2)),
                   BAD(MQ_ERR_INVALID, send("orders", 1, bad_value_list, 2)),
                   BAD(MQ_ERR_TOO_LARGE, send("orders", 60, &name_over, 1)),
                   BAD(MQ_ERR_TOO_LARGE, send("orders", 60, &value_over, 1)),
                   BAD(MQ_ERR_TOO_LARGE, send("orders", 60, two_small, 2)),
                   BAD(MQ_ERR_TOO_LARGE, send("orders", 1, &huge, 1)),
                   // "budget" has 12 of its 32 bytes free, but a record that fits the budget at all
                   // waits; one whose headers take it over the budget can never fit.
                   BAD(MQ_ERR_TOO_LARGE, send("budget", 30, two_small, 1)),
               });
    }
    // The legal edges: exactly max_message_bytes with headers, and empty headers.
    const mq_header four{"ab", 2, "cd", 2};
    EXPECT_EQ(publish("orders", 60, &four, 1), MQ_OK) << mq_last_error();
    EXPECT_EQ(publish("orders", 1, &empty, 1), MQ_OK) << mq_last_error();
}

TEST_F(BadInput, AckAndNack) {
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID, mq_group_ack(nullptr, "orders", "billing", 0, 1)),
               BAD(MQ_ERR_INVALID, mq_group_ack(b, nullptr, "billing", 0, 1)),
               BAD(MQ_ERR_INVALID, mq_group_ack(b, "orders", nullptr, 0, 1)),
               BAD(MQ_ERR_INVALID, mq_group_ack(b, "orders", "", 0, 1)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_ack(b, "nope", "billing", 0, 1)),
               BAD(MQ_ERR_NO_GROUP, mq_group_ack(b, "orders", "nope", 0, 1)),
               BAD(MQ_ERR_PARTITION, mq_group_ack(b, "orders", "billing", -1, 1)),
               BAD(MQ_ERR_PARTITION, mq_group_ack(b, "orders", "billing", 2, 1)),
               // billing on partition 0 has committed 1, next 2: only offset 1 is in flight.
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "billing", 0, 0)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "billing", 0, 2)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "billing", 0, 3)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "billing", 0, -1)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "billing", 0, INT64_MAX)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_ack(b, "orders", "email", 1, 0)),

               BAD(MQ_ERR_INVALID, mq_group_nack(nullptr, "orders", "email", 0, 0)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, nullptr, "email", 0, 0)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, "orders", nullptr, 0, 0)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_nack(b, "nope", "email", 0, 0)),
               BAD(MQ_ERR_NO_GROUP, mq_group_nack(b, "orders", "nope", 0, 0)),
               BAD(MQ_ERR_PARTITION, mq_group_nack(b, "orders", "email", -1, 0)),
               BAD(MQ_ERR_PARTITION, mq_group_nack(b, "orders", "email", 2, 0)),
           });
}

// The rejection names the group and the in-flight range, as SPEC.md's reference trace shows.
TEST_F(BadInput, NotInFlightMessageNamesGroupAndRange) {
    ASSERT_EQ(mq_group_ack(b, "orders", "email", 1, 7), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_STREQ(mq_last_error(), "offset 7 is not in flight for email (nothing is)");
    ASSERT_EQ(mq_group_ack(b, "orders", "billing", 0, 5), MQ_ERR_NOT_IN_FLIGHT);
    const std::string msg = mq_last_error();
    EXPECT_NE(msg.find("offset 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("billing"), std::string::npos) << msg;
    EXPECT_NE(msg.find('1'), std::string::npos) << "the in-flight range is offset 1: " << msg;
}

// billing has offset 1 in flight on partition 0: a delayed nack or a seek that slipped through
// would show in its cursor or its pause.
TEST_F(BadInput, DelayedNackLeaseExtendAndSeek) {
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID, mq_group_nack(nullptr, "orders", "billing", 0, 10)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, nullptr, "billing", 0, 10)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, "orders", nullptr, 0, 10)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, "orders", "billing", 0, -1)),
               BAD(MQ_ERR_INVALID, mq_group_nack(b, "orders", "billing", 0, INT64_MIN)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_nack(b, "nope", "billing", 0, 10)),
               BAD(MQ_ERR_NO_GROUP, mq_group_nack(b, "orders", "nope", 0, 10)),
               BAD(MQ_ERR_PARTITION, mq_group_nack(b, "orders", "billing", -1, 10)),
               BAD(MQ_ERR_PARTITION, mq_group_nack(b, "orders", "billing", 2, 10)),

               BAD(MQ_ERR_INVALID, mq_group_extend_lease(nullptr, "orders", "billing", 0)),
               BAD(MQ_ERR_INVALID, mq_group_extend_lease(b, nullptr, "billing", 0)),
               BAD(MQ_ERR_INVALID, mq_group_extend_lease(b, "orders", nullptr, 0)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_extend_lease(b, "nope", "billing", 0)),
               BAD(MQ_ERR_NO_GROUP, mq_group_extend_lease(b, "orders", "nope", 0)),
               BAD(MQ_ERR_PARTITION, mq_group_extend_lease(b, "orders", "billing", -1)),
               BAD(MQ_ERR_PARTITION, mq_group_extend_lease(b, "orders", "billing", 2)),
               BAD(MQ_ERR_NOT_IN_FLIGHT, mq_group_extend_lease(b, "orders", "email", 1)),

               BAD(MQ_ERR_INVALID, mq_group_seek(nullptr, "orders", "billing", 0, 0)),
               BAD(MQ_ERR_INVALID, mq_group_seek(b, nullptr, "billing", 0, 0)),
               BAD(MQ_ERR_INVALID, mq_group_seek(b, "orders", nullptr, 0, 0)),
               BAD(MQ_ERR_NO_TOPIC, mq_group_seek(b, "nope", "billing", 0, 0)),
               BAD(MQ_ERR_NO_GROUP, mq_group_seek(b, "orders", "nope", 0, 0)),
               BAD(MQ_ERR_PARTITION, mq_group_seek(b, "orders", "billing", -1, 0)),
               BAD(MQ_ERR_PARTITION, mq_group_seek(b, "orders", "billing", 2, 0)),
               // Partition 0 retains 0..2 (end 3), partition 1 retains 1..2 (end 3).
               BAD(MQ_ERR_OUT_OF_RANGE, mq_group_seek(b, "orders", "billing", 0, 4)),
               BAD(MQ_ERR_OUT_OF_RANGE, mq_group_seek(b, "orders", "billing", 0, INT64_MAX)),
               BAD(MQ_ERR_OUT_OF_RANGE, mq_group_seek(b, "orders", "billing", 1, 0)),
               BAD(MQ_ERR_OUT_OF_RANGE, mq_group_seek(b, "orders", "billing", 0, -3)),
               BAD(MQ_ERR_OUT_OF_RANGE, mq_group_seek(b, "orders", "billing", 0, INT64_MIN)),
           });
    ASSERT_EQ(mq_group_seek(b, "orders", "billing", 1, 0), MQ_ERR_OUT_OF_RANGE);
    const std::string msg = mq_last_error();
    EXPECT_NE(msg.find('1'), std::string::npos) << "the range 1..3 is not named: " << msg;
    EXPECT_NE(msg.find('3'), std::string::npos) << "the range 1..3 is not named: " << msg;
}

TEST_F(BadInput, HandlerOnlyCallsOutsideAHandler) {
    expect_all_rejected(b, {
                               BAD(MQ_ERR_INVALID, mq_handler_extend_lease()),
                               BAD(MQ_ERR_INVALID, mq_handler_set_nack_delay(0)),
                               BAD(MQ_ERR_INVALID, mq_handler_set_nack_delay(-1)),
                           });
}

TEST_F(BadInput, SubscribeCallsUserFreeOnceOnEveryFailure) {
    const int32_t dup[] = {0, 0};
    const int32_t dup_far[] = {1, 0, 1};
    const int32_t out_of_range[] = {2};
    const int32_t negative[] = {-1};
    const int32_t one_bad[] = {0, 2};
    const mq_subscription_options prefetch0 = sub_opts(0, nullptr, 0);
    const mq_subscription_options prefetch_neg = sub_opts(-1, nullptr, 0);
    const mq_subscription_options null_parts = sub_opts(10, nullptr, 1);
    const mq_subscription_options dup_opts = sub_opts(10, dup, 2);
    const mq_subscription_options dup_far_opts = sub_opts(10, dup_far, 3);
    const mq_subscription_options range_opts = sub_opts(10, out_of_range, 1);
    const mq_subscription_options negative_opts = sub_opts(10, negative, 1);
    const mq_subscription_options one_bad_opts = sub_opts(10, one_bad, 2);
    mq_subscription_options size0 = sub_opts(10, nullptr, 0);
    size0.size = 0;
    mq_subscription_options size_short = sub_opts(10, nullptr, 0);
    size_short.size = sizeof(size_t) - 1;

    // "fresh" is a new group: a refused subscribe must not leave it subscribed.
    std::vector<SubCase> cases = {
        {"mq_subscription_open: broker NULL", MQ_ERR_INVALID, nullptr, "orders", "fresh", nullptr},
        {"mq_subscription_open: topic NULL", MQ_ERR_INVALID, b, nullptr, "fresh", nullptr},
        {"mq_subscription_open: group NULL", MQ_ERR_INVALID, b, "orders", nullptr, nullptr},
        {"mq_subscription_open: handler NULL", MQ_ERR_INVALID, b, "orders", "fresh", nullptr,
         nullptr},
        {"mq_subscription_open: out NULL", MQ_ERR_INVALID, b, "orders", "fresh", nullptr,
         count_handler, true},
        {"mq_subscription_open: illegal topic name", MQ_ERR_INVALID, b, "or ders", "fresh",
         nullptr},
        {"mq_subscription_open: unknown topic", MQ_ERR_NO_TOPIC, b, "nope", "fresh", nullptr},
        {"mq_subscription_open: opts size 0", MQ_ERR_INVALID, b, "orders", "fresh", &size0},
        {"mq_subscription_open: opts size below the size field", MQ_ERR_INVALID, b, "orders",
         "fresh", &size_short},
        {"mq_subscription_open: prefetch 0", MQ_ERR_INVALID, b, "orders", "fresh", &prefetch0},
        {"mq_subscription_open: prefetch -1", MQ_ERR_INVALID, b, "orders", "fresh", &prefetch_neg},
        {"mq_subscription_open: prefetch 0, existing group", MQ_ERR_INVALID, b, "orders", "billing",
         &prefetch0},
        {"mq_subscription_open: partitions NULL with count 1", MQ_ERR_INVALID, b, "orders", "fresh",
         &null_parts},
        {"mq_subscription_open: partitions {0, 0}", MQ_ERR_INVALID, b, "orders", "fresh",
         &dup_opts},
        {"mq_subscription_open: partitions {1, 0, 1}", MQ_ERR_INVALID, b, "orders", "fresh",
         &dup_far_opts},
        {"mq_subscription_open: partitions {2} of 2", MQ_ERR_PARTITION, b, "orders", "fresh",
         &range_opts},
        {"mq_subscription_open: partitions {-1}", MQ_ERR_PARTITION, b, "orders", "fresh",
         &negative_opts},
        {"mq_subscription_open: partitions {0, 2} of 2", MQ_ERR_PARTITION, b, "orders", "fresh",
         &one_bad_opts},
    };
    const auto names = illegal_names();  // outlives `cases`, which point into it
    for (const auto &n : names)
        cases.push_back({"mq_subscription_open: illegal group name: " + n.first, MQ_ERR_INVALID, b,
                         "orders", n.second.c_str(), nullptr});
    for (const SubCase &sc : cases) expect_subscribe_rejected(b, sc);

    // user_free may be NULL: the failure must still be clean.
    mq_subscription *sub = nullptr;
    expect_rejected(
        b, BAD(MQ_ERR_INVALID, mq_subscription_open(b, "orders", "fresh", &prefetch0, count_handler,
                                                    nullptr, nullptr, &sub)));
    expect_rejected(nullptr, BAD(MQ_ERR_INVALID, mq_subscription_close(nullptr)));
}

TEST_F(BadInput, SubscribeRefusesOwnedPartitionsAndClaimsNothing) {
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 2;
    ASSERT_EQ(mq_topic_create(b, "push", &cfg), MQ_OK);
    // Nothing is ever published to "push", so the live subscription's loops change nothing.
    const int32_t p0[] = {0};
    const mq_subscription_options own0 = sub_opts(10, p0, 1);
    SubUser live_user;
    mq_subscription *live = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "push", "workers", &own0, count_handler, &live_user,
                                   count_free, &live),
              MQ_OK)
        << mq_last_error();

    const int32_t both[] = {1, 0};
    const mq_subscription_options own_both = sub_opts(10, both, 2);
    const int32_t p1[] = {1};
    const mq_subscription_options own1 = sub_opts(10, p1, 1);
    for (const SubCase &sc : std::vector<SubCase>{
             {"mq_subscription_open: {0} already owned", MQ_ERR_OWNED, b, "push", "workers", &own0},
             {"mq_subscription_open: {1, 0} with 0 owned", MQ_ERR_OWNED, b, "push", "workers",
              &own_both},
             {"mq_subscription_open: all with 0 owned", MQ_ERR_OWNED, b, "push", "workers",
              nullptr},
         })
        expect_subscribe_rejected(b, sc);

    // Members and explicit partition lists cannot share a group, in either order.
    mq_member *joined = nullptr;
    expect_rejected(b, BAD(MQ_ERR_OWNED, mq_member_join(b, "push", "workers", nullptr, &joined)));
    if (joined) mq_member_close(joined);  // only reached if the library wrongly accepted
    mq_member *crew = nullptr;
    ASSERT_EQ(mq_member_join(b, "push", "crew", nullptr, &crew), MQ_OK) << mq_last_error();
    expect_subscribe_rejected(b, {"mq_subscription_open: {1} in a group with members", MQ_ERR_OWNED,
                                  b, "push", "crew", &own1});
    EXPECT_EQ(mq_member_close(crew), MQ_OK) << mq_last_error();

    // Nothing was claimed by the refused {1, 0}: partition 1 is still free.
    SubUser second_user;
    mq_subscription *second = nullptr;
    EXPECT_EQ(mq_subscription_open(b, "push", "workers", &own1, count_handler, &second_user,
                                   count_free, &second),
              MQ_OK)
        << mq_last_error();
    if (second) {
        EXPECT_EQ(mq_subscription_close(second), MQ_OK);
    }
    EXPECT_EQ(mq_subscription_close(live), MQ_OK);
    EXPECT_EQ(live_user.freed.load(), 1);
    EXPECT_EQ(live_user.handled.load(), 0);
}

// From inside a handler: closing its own subscription is refused (MQ_ERR_DEADLOCK) and so is a
// negative nack delay; neither changes anything, so the subscription keeps delivering and
// closes normally from outside.
TEST_F(BadInput, RefusedCallsFromInsideAHandler) {
    ASSERT_EQ(mq_topic_create(b, "self", nullptr), MQ_OK);
    struct Ctx {
        std::atomic<mq_subscription *> sub{nullptr};
        std::mutex m;
        std::condition_variable cv;
        int calls = 0;
        int close_status = -1, delay_status = -1;
        std::string close_error, delay_error;
        std::atomic<int> freed{0};
    } ctx;
    auto handler = [](void *user, const mq_message *) -> int {
        auto *c = static_cast<Ctx *>(user);
        bool first;
        {
            std::lock_guard<std::mutex> lk(c->m);
            first = c->calls == 0;
        }
        int close_st = -1, delay_st = -1;
        std::string close_err, delay_err;
        if (first) {
            close_st = mq_subscription_close(c->sub.load());
            close_err = mq_last_error();
            delay_st = mq_handler_set_nack_delay(-1);
            delay_err = mq_last_error();
        }
        std::lock_guard<std::mutex> lk(c->m);
        if (first) {
            c->close_status = close_st;
            c->close_error = close_err;
            c->delay_status = delay_st;
            c->delay_error = delay_err;
        }
        ++c->calls;
        c->cv.notify_all();
        return 0;
    };
    auto user_free = [](void *user) { static_cast<Ctx *>(user)->freed.fetch_add(1); };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "self", "g", nullptr, handler, &ctx, user_free, &sub), MQ_OK)
        << mq_last_error();
    ctx.sub.store(sub);  // before the publish, so the handler can only run after this

    auto wait_calls = [&](int n) {
        std::unique_lock<std::mutex> lk(ctx.m);
        return ctx.cv.wait_for(lk, std::chrono::seconds(5), [&] { return ctx.calls >= n; });
    };
    ASSERT_EQ(
        mq_topic_publish(b, "self", nullptr, 0, "one", 3, NULL, 0, 0, nullptr, nullptr, nullptr),
        MQ_OK);
    ASSERT_TRUE(wait_calls(1)) << "the handler never ran";
    {
        std::lock_guard<std::mutex> lk(ctx.m);
        EXPECT_EQ(status_text(ctx.close_status), status_text(MQ_ERR_DEADLOCK))
            << "mq_subscription_close of its own subscription from a handler";
        EXPECT_NE(ctx.close_error, "") << "mq_subscription_close from its own handler";
        EXPECT_EQ(status_text(ctx.delay_status), status_text(MQ_ERR_INVALID))
            << "mq_handler_set_nack_delay(-1) from a handler";
        EXPECT_NE(ctx.delay_error, "") << "mq_handler_set_nack_delay(-1) from a handler";
    }
    EXPECT_EQ(ctx.freed.load(), 0) << "a refused close must not call user_free";
    ASSERT_EQ(
        mq_topic_publish(b, "self", nullptr, 0, "two", 3, NULL, 0, 0, nullptr, nullptr, nullptr),
        MQ_OK);
    EXPECT_TRUE(wait_calls(2)) << "the subscription stopped after the refused close";
    EXPECT_EQ(mq_subscription_close(sub), MQ_OK) << mq_last_error();
    EXPECT_EQ(ctx.freed.load(), 1);
}

// mq_broker_close is safe from a handler; after it, the handler's own lease extension is
// MQ_CLOSED, and the subscription still closes normally.
TEST_F(BadInput, HandlerExtendLeaseAfterBrokerClose) {
    ASSERT_EQ(mq_topic_create(b, "self", nullptr), MQ_OK);
    struct Ctx {
        mq_broker *b;
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        int close_status = -1, extend_status = -1;
        std::string extend_error;
    } ctx;
    ctx.b = b;
    auto handler = [](void *user, const mq_message *) -> int {
        auto *c = static_cast<Ctx *>(user);
        {
            std::lock_guard<std::mutex> lk(c->m);
            if (c->done) return 0;
        }
        const int close_st = mq_broker_close(c->b);
        const int extend_st = mq_handler_extend_lease();
        const std::string err = mq_last_error();
        std::lock_guard<std::mutex> lk(c->m);
        c->close_status = close_st;
        c->extend_status = extend_st;
        c->extend_error = err;
        c->done = true;
        c->cv.notify_all();
        return 0;
    };
    mq_subscription *sub = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "self", "g", nullptr, handler, &ctx, nullptr, &sub), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(
        mq_topic_publish(b, "self", nullptr, 0, "one", 3, NULL, 0, 0, nullptr, nullptr, nullptr),
        MQ_OK);
    {
        std::unique_lock<std::mutex> lk(ctx.m);
        ASSERT_TRUE(ctx.cv.wait_for(lk, std::chrono::seconds(5), [&] { return ctx.done; }))
            << "the handler never ran";
        EXPECT_EQ(status_text(ctx.close_status), status_text(MQ_OK));
        EXPECT_EQ(status_text(ctx.extend_status), status_text(MQ_CLOSED))
            << "mq_handler_extend_lease after the broker closed";
        EXPECT_NE(ctx.extend_error, "") << "mq_handler_extend_lease after the broker closed";
    }
    EXPECT_EQ(mq_subscription_close(sub), MQ_OK) << mq_last_error();
}

// After mq_broker_close: every call that changes state returns MQ_CLOSED (even with arguments
// that would otherwise succeed), introspection keeps working, and nothing changes.
TEST_F(BadInput, AfterClose) {
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    ASSERT_EQ(mq_topic_create(b, "push", &cfg), MQ_OK);
    SubUser live_user;
    mq_subscription *live = nullptr;
    ASSERT_EQ(mq_subscription_open(b, "push", "workers", nullptr, count_handler, &live_user,
                                   count_free, &live),
              MQ_OK)
        << mq_last_error();
    mq_member *member = nullptr;
    ASSERT_EQ(mq_member_join(b, "push", "crew", nullptr, &member), MQ_OK) << mq_last_error();
    int64_t gen = 0;
    int32_t parts[2];
    size_t owned = 0;
    // Seen before close, so nothing below can be MQ_REBALANCED instead of MQ_CLOSED.
    ASSERT_EQ(mq_member_get_assignment(member, &gen, parts, 2, &owned), MQ_OK) << mq_last_error();
    ASSERT_EQ(owned, 1u);

    const std::string open_state = snapshot(b);
    ASSERT_EQ(mq_broker_close(b), MQ_OK) << mq_last_error();
    EXPECT_EQ(snapshot(b), open_state) << "closing changed the observable state";
    // "Idempotent": a second close is the same success, not MQ_CLOSED.
    EXPECT_EQ(mq_broker_close(b), MQ_OK) << mq_last_error();

    const mq_record rec{nullptr, 0, "x", 1};
    mq_message msgs[4];
    size_t n = 0;
    mq_member *joined = nullptr;
    expect_all_rejected(
        b, {
               BAD(MQ_CLOSED, mq_topic_create(b, "fresh", nullptr)),
               BAD(MQ_CLOSED, mq_group_subscribe(b, "orders", "fresh", nullptr)),
               BAD(MQ_CLOSED, mq_group_unsubscribe(b, "orders", "email")),
               BAD(MQ_CLOSED, mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0, 0, nullptr,
                                               nullptr, nullptr)),
               BAD(MQ_CLOSED, mq_topic_publish(b, "orders", nullptr, 0, "x", 1, NULL, 0,
                                               MQ_WAIT_FOREVER, nullptr, nullptr, nullptr)),
               BAD(MQ_CLOSED,
                   mq_topic_publish_batch(b, "orders", &rec, sizeof(mq_record), 1, 0, nullptr,
                                          nullptr, sizeof(mq_publish_result), nullptr)),
               BAD(MQ_CLOSED, mq_group_poll(b, "orders", "billing", 1, msgs, sizeof(mq_message), 4,
                                            0, nullptr, &n)),
               BAD(MQ_CLOSED, mq_group_ack(b, "orders", "billing", 0, 1)),
               BAD(MQ_CLOSED, mq_group_nack(b, "orders", "billing", 0, 0)),
               BAD(MQ_CLOSED, mq_group_nack(b, "orders", "billing", 0, 10)),
               BAD(MQ_CLOSED, mq_group_extend_lease(b, "orders", "billing", 0)),
               BAD(MQ_CLOSED, mq_group_seek(b, "orders", "billing", 0, 0)),
               BAD(MQ_CLOSED, mq_member_join(b, "push", "crew", nullptr, &joined)),
               BAD(MQ_CLOSED, mq_member_get_assignment(member, &gen, parts, 2, &owned)),
               BAD(MQ_CLOSED, mq_member_poll(member, msgs, sizeof(mq_message), 4, 0, nullptr, &n)),
               BAD(MQ_CLOSED, mq_member_ack(member, 0, 0)),
               BAD(MQ_CLOSED, mq_member_nack(member, 0, 0)),
               BAD(MQ_CLOSED, mq_member_extend_lease(member, 0)),
           });
    expect_subscribe_rejected(
        b, {"mq_subscription_open after close", MQ_CLOSED, b, "orders", "fresh", nullptr});

    // Bad input to the calls that work after close is still told apart from "closed".
    char buf[64];
    size_t needed = 0;
    mq_partition_info pi{};
    mq_group_info gi{};
    expect_all_rejected(
        b,
        {
            BAD(MQ_ERR_INVALID, mq_broker_close(nullptr)),
            BAD(MQ_ERR_INVALID, mq_topic_list(b, nullptr, 1, &needed)),
            BAD(MQ_ERR_NO_TOPIC, mq_group_list(b, "nope", buf, sizeof buf, &needed)),
            BAD(MQ_ERR_PARTITION, mq_partition_get_info(b, "orders", 2, &pi, sizeof pi)),
            BAD(MQ_ERR_NO_GROUP, mq_group_get_info(b, "orders", "nope", 0, &gi, sizeof gi)),
            BAD(MQ_ERR_PARTITION, mq_partition_describe(b, "orders", -1, buf, sizeof buf, &needed)),
        });

    if (joined) mq_member_close(joined);  // only reached if the library wrongly accepted

    // mq_subscription_close works after close, and frees exactly once. mq.h does not list
    // mq_member_close among the calls that work after close, but it is the handle's only
    // destructor (mq_broker_free does not mention members), so it must work too.
    EXPECT_EQ(mq_subscription_close(live), MQ_OK) << mq_last_error();
    EXPECT_EQ(live_user.freed.load(), 1);
    EXPECT_EQ(mq_member_close(member), MQ_OK) << mq_last_error();
    EXPECT_EQ(snapshot(b), open_state);
}

// Group "crew" on topic "live" (2 partitions): member m-1 owns partition 0 and has offset 0 in
// flight there; m-2 owns partition 1, where two messages wait. Both have seen their assignment,
// so a refused call can only be refused for its own bad input, not MQ_REBALANCED.
class BadInputMembers : public BadInput {
protected:
    void SetUp() override {
        BadInput::SetUp();
        if (HasFatalFailure()) return;
        mq_topic_config cfg;
        mq_topic_config_init(&cfg, sizeof cfg);
        cfg.partitions = 2;
        cfg.capacity = 8;
        ASSERT_EQ(mq_topic_create(b, "live", &cfg), MQ_OK) << mq_last_error();
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.member_id = "m-1";
        ASSERT_EQ(mq_member_join(b, "live", "crew", &o, &m1), MQ_OK) << mq_last_error();
        o.member_id = "m-2";
        ASSERT_EQ(mq_member_join(b, "live", "crew", &o, &m2), MQ_OK) << mq_last_error();
        for (int32_t p = 0; p < 2; ++p) {
            const std::string key = key_for(p);
            for (int i = 0; i < 2; ++i)
                ASSERT_EQ(mq_topic_publish(b, "live", key.data(), key.size(), "l", 1, NULL, 0,
                                           MQ_NO_WAIT, nullptr, nullptr, nullptr),
                          MQ_OK)
                    << mq_last_error();
        }
        int32_t parts[2];
        size_t count = 0;
        ASSERT_EQ(mq_member_get_assignment(m1, nullptr, parts, 2, &count), MQ_OK)
            << mq_last_error();
        ASSERT_EQ(count, 1u);
        ASSERT_EQ(parts[0], 0);
        ASSERT_EQ(mq_member_get_assignment(m2, nullptr, parts, 2, &count), MQ_OK)
            << mq_last_error();
        ASSERT_EQ(count, 1u);
        ASSERT_EQ(parts[0], 1);
        mq_message msg;
        size_t n = 0;
        ASSERT_EQ(mq_member_poll(m1, &msg, sizeof(mq_message), 1, MQ_NO_WAIT, nullptr, &n), MQ_OK)
            << mq_last_error();
        ASSERT_EQ(n, 1u);
        ASSERT_EQ(msg.partition, 0);
        ASSERT_EQ(msg.offset, 0);
    }

    void TearDown() override {
        if (m2) mq_member_close(m2);
        if (m1) mq_member_close(m1);
        BadInput::TearDown();
    }

    mq_member *m1 = nullptr;
    mq_member *m2 = nullptr;
};

TEST_F(BadInputMembers, Join) {
    mq_member_options base;
    mq_member_options_init(&base, sizeof base);
    // Closes a member the library should not have let in, so a wrong acceptance does not leak
    // (the snapshot still shows it, through the group it subscribed).
    auto join = [&](mq_broker *bb, const char *topic, const char *group,
                    const mq_member_options *o) {
        mq_member *m = nullptr;
        const int st = mq_member_join(bb, topic, group, o, &m);
        if (st == MQ_OK && m) mq_member_close(m);
        return st;
    };
    std::vector<std::pair<std::string, mq_member_options>> bad_opts;
    auto bad = [&](const std::string &what, auto edit) {
        mq_member_options o = base;
        edit(o);
        bad_opts.emplace_back(what, o);
    };
    bad("session_timeout_ms 0", [](auto &o) { o.session_timeout_ms = 0; });
    bad("session_timeout_ms -1", [](auto &o) { o.session_timeout_ms = -1; });
    bad("size 0", [](auto &o) { o.size = 0; });
    bad("size below the size field", [](auto &o) { o.size = sizeof(size_t) - 1; });
    const auto names = illegal_names();  // outlives bad_opts, which point into it
    for (const auto &n : names)
        bad("member_id " + n.first, [&](auto &o) { o.member_id = n.second.c_str(); });
    // "fresh" is a new group: a refused join must not leave it subscribed.
    for (const char *group : {"fresh", "crew"})
        for (const auto &c : bad_opts)
            expect_rejected(
                b, Case{std::string("mq_member_join to ") + group + " with " + c.first,
                        MQ_ERR_INVALID, [&] { return join(b, "live", group, &c.second); }});
    mq_member_options taken = base;
    taken.member_id = "m-1";
    expect_all_rejected(
        b, {
               BAD(MQ_ERR_INVALID, join(nullptr, "live", "crew", nullptr)),
               BAD(MQ_ERR_INVALID, join(b, nullptr, "crew", nullptr)),
               BAD(MQ_ERR_INVALID, join(b, "live", nullptr, nullptr)),
               BAD(MQ_ERR_INVALID, mq_member_join(b, "live", "crew", nullptr, nullptr)),
               BAD(MQ_ERR_INVALID, join(b, "live", "cr ew", nullptr)),
               BAD(MQ_ERR_INVALID, join(b, "li/ve", "crew", nullptr)),
               BAD(MQ_ERR_NO_TOPIC, join(b, "nope", "crew", nullptr)),
               BAD(MQ_ERR_EXISTS, join(b, "live", "crew", &taken)),
           });
}

TEST_F(BadInputMembers, CallsOnAMember) {
    mq_message msgs[4];
    size_t n = 0;
    int32_t parts[4];
    size_t count = 0;
    int64_t gen = 0;
    expect_all_rejected(
        b,
        {
            BAD(MQ_ERR_INVALID, mq_member_close(nullptr)),

            BAD(MQ_ERR_INVALID, mq_member_get_assignment(nullptr, &gen, parts, 4, &count)),
            BAD(MQ_ERR_INVALID, mq_member_get_assignment(m1, &gen, parts, 4, nullptr)),
            BAD(MQ_ERR_INVALID, mq_member_get_assignment(m1, &gen, nullptr, 1, &count)),

            // m-2 has two messages ready on partition 1: a poll that slipped through would take them.
            BAD(MQ_ERR_INVALID,
                mq_member_poll(nullptr, msgs, sizeof(mq_message), 4, 0, nullptr, &n)),
            BAD(MQ_ERR_INVALID, mq_member_poll(m2, nullptr, sizeof(mq_message), 4, 0, nullptr, &n)),
            BAD(MQ_ERR_INVALID,
                mq_member_poll(m2, msgs, sizeof(mq_message), 4, 0, nullptr, nullptr)),
            BAD(MQ_ERR_INVALID, mq_member_poll(m2, msgs, sizeof(mq_message), 0, 0, nullptr, &n)),
            BAD(MQ_ERR_INVALID, mq_member_poll(m2, msgs, sizeof(mq_message), 4, -2, nullptr, &n)),
            BAD(MQ_ERR_INVALID, mq_member_poll(m2, msgs, 0, 4, 0, nullptr, &n)),
            BAD(MQ_ERR_INVALID,
                mq_member_poll(m2, msgs, sizeof(mq_message) - 1, 4, 0, nullptr, &n)),

            BAD(MQ_ERR_INVALID, mq_member_ack(nullptr, 0, 0)),
            BAD(MQ_ERR_PARTITION, mq_member_ack(m1, -1, 0)),
            BAD(MQ_ERR_PARTITION, mq_member_ack(m1, 2, 0)),
            BAD(MQ_ERR_FENCED, mq_member_ack(m2, 0, 0)),
            BAD(MQ_ERR_NOT_IN_FLIGHT, mq_member_ack(m1, 0, 1)),

            BAD(MQ_ERR_INVALID, mq_member_nack(nullptr, 0, 0)),
            BAD(MQ_ERR_INVALID, mq_member_nack(m1, 0, -1)),
            BAD(MQ_ERR_PARTITION, mq_member_nack(m1, -1, 0)),
            BAD(MQ_ERR_PARTITION, mq_member_nack(m1, 2, 0)),
            BAD(MQ_ERR_FENCED, mq_member_nack(m2, 0, 0)),

            BAD(MQ_ERR_INVALID, mq_member_extend_lease(nullptr, 0)),
            BAD(MQ_ERR_PARTITION, mq_member_extend_lease(m1, 2)),
            BAD(MQ_ERR_FENCED, mq_member_extend_lease(m2, 0)),
            BAD(MQ_ERR_NOT_IN_FLIGHT, mq_member_extend_lease(m2, 1)),
        });
    EXPECT_STREQ(mq_member_id(nullptr), "");
    EXPECT_STREQ(mq_member_id(m1), "m-1");
}

// A member may not close itself from its own on_rebalance (MQ_ERR_DEADLOCK); it stays a member.
TEST_F(BadInputMembers, CloseFromOwnRebalanceCallbackIsDeadlock) {
    struct Ctx {
        std::mutex m;
        std::vector<std::pair<int, std::string>> refusals;
    } ctx;
    auto on_rebalance = [](void *user, mq_member *member, int64_t) {
        auto *c = static_cast<Ctx *>(user);
        const int st = mq_member_close(member);
        const std::string err = mq_last_error();
        std::lock_guard<std::mutex> lk(c->m);
        c->refusals.emplace_back(st, err);
    };
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = "watcher";
    o.on_rebalance = on_rebalance;
    o.on_rebalance_user = &ctx;
    mq_member *watcher = nullptr;
    ASSERT_EQ(mq_member_join(b, "live", "watch", &o, &watcher), MQ_OK) << mq_last_error();
    // The second member takes a partition from the watcher: a rebalance that concerns it, run
    // on this thread before the join returns.
    mq_member *other = nullptr;
    ASSERT_EQ(mq_member_join(b, "live", "watch", nullptr, &other), MQ_OK) << mq_last_error();
    {
        std::lock_guard<std::mutex> lk(ctx.m);
        ASSERT_FALSE(ctx.refusals.empty()) << "on_rebalance was not called";
        for (const auto &[st, err] : ctx.refusals) {
            EXPECT_EQ(status_text(st), status_text(MQ_ERR_DEADLOCK))
                << "mq_member_close from its own on_rebalance";
            EXPECT_NE(err, "") << "mq_member_close from its own on_rebalance";
        }
    }
    int32_t parts[2];
    size_t count = 0;
    EXPECT_EQ(mq_member_get_assignment(watcher, nullptr, parts, 2, &count), MQ_OK)
        << "the refused close changed the member: " << mq_last_error();
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(mq_member_close(other), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_member_close(watcher), MQ_OK) << mq_last_error();
}

// mq.h: "When several statuses apply, the first in this order is returned": a NULL handle,
// MQ_CLOSED, then the arguments left to right (a name's legality, then whether it exists; the
// partition; then the others), then the state.
TEST_F(BadInput, StatusOrderArgumentsLeftToRight) {
    char buf[8];
    size_t needed = 0;
    const std::string big(2 * kMaxMessage, 'x');
    const mq_record too_large{nullptr, 0, big.data(), kMaxMessage + 1, nullptr, 0};
    mq_member *m = nullptr;
    expect_all_rejected(
        b, {
               // The topic comes before the output arguments after it.
               BAD(MQ_ERR_NO_TOPIC, mq_group_list(b, "nope", nullptr, 1, &needed)),
               BAD(MQ_ERR_NO_TOPIC, mq_topic_get_info(b, "nope", nullptr, 0)),
               BAD(MQ_ERR_PARTITION, mq_partition_get_info(b, "orders", 2, nullptr, 0)),
               BAD(MQ_ERR_PARTITION,
                   mq_partition_describe(b, "orders", 2, nullptr, sizeof buf, &needed)),
               BAD(MQ_ERR_NO_GROUP, mq_group_get_info(b, "orders", "nope", 0, nullptr, 0)),
               // The record comes before the wait.
               BAD(MQ_ERR_TOO_LARGE,
                   mq_topic_publish(b, "orders", nullptr, 0, big.data(), kMaxMessage + 1, nullptr,
                                    0, -2, nullptr, nullptr, nullptr)),
               BAD(MQ_ERR_TOO_LARGE,
                   mq_topic_publish_batch(b, "orders", &too_large, sizeof(mq_record), 1, -2,
                                          nullptr, nullptr, sizeof(mq_publish_result), nullptr)),
               // The partition comes before the output arguments.
               BAD(MQ_ERR_PARTITION,
                   mq_group_poll(b, "orders", "billing", 2, nullptr, 0, 0, -2, nullptr, nullptr)),
               BAD(MQ_ERR_NO_GROUP,
                   mq_group_poll(b, "orders", "nope", 0, nullptr, 0, 0, -2, nullptr, nullptr)),
               BAD(MQ_ERR_NO_TOPIC, mq_member_join(b, "nope", "crew", nullptr, nullptr)),
               BAD(MQ_ERR_INVALID, mq_member_join(b, "orders", "cr ew", nullptr, &m)),
           });
    const int32_t out_of_range[] = {5};
    const mq_subscription_options listed = sub_opts(1, out_of_range, 1);
    expect_subscribe_rejected(b, {"mq_subscription_open, unknown topic and NULL handler",
                                  MQ_ERR_NO_TOPIC, b, "nope", "g", nullptr, nullptr});
    expect_subscribe_rejected(b, {"mq_subscription_open, partition 5 and NULL handler",
                                  MQ_ERR_PARTITION, b, "orders", "g", &listed, nullptr});
    expect_subscribe_rejected(
        b, {"mq_subscription_open, illegal group and NULL out", MQ_ERR_INVALID, b, "orders", "a b",
            nullptr, count_handler, true});
}

// A member call on a closed broker is MQ_CLOSED whatever its other arguments; on an open one,
// the partition comes before the other arguments.
TEST_F(BadInputMembers, StatusOrderClosedThenPartitionThenArguments) {
    mq_message msgs[2];
    size_t n = 0;
    expect_all_rejected(b, {
                               BAD(MQ_ERR_PARTITION, mq_member_nack(m1, -1, -1)),
                               BAD(MQ_ERR_PARTITION, mq_member_nack(m1, 2, INT64_MAX)),
                           });
    ASSERT_EQ(mq_broker_close(b), MQ_OK);
    expect_all_rejected(
        b, {
               BAD(MQ_CLOSED, mq_member_ack(m1, -1, 0)),
               BAD(MQ_CLOSED, mq_member_nack(m1, -1, -1)),
               BAD(MQ_CLOSED, mq_member_extend_lease(m1, 7)),
               BAD(MQ_CLOSED, mq_member_poll(m2, nullptr, 0, 0, -2, nullptr, nullptr)),
               BAD(MQ_CLOSED, mq_member_get_assignment(m1, nullptr, nullptr, 2, nullptr)),
               BAD(MQ_ERR_INVALID,
                   mq_member_poll(nullptr, msgs, sizeof(mq_message), 2, 0, nullptr, &n)),
           });
}

}  // namespace
