// Every field of every options/config struct in mq.h, at the edges of the range the header
// states for it: min - 1 and max + 1 are refused with MQ_ERR_INVALID (or the status the header
// names) and a message naming the field; min and max are accepted. A field whose documented
// range and enforced range differ fails here, whichever side is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mq.h"
#include "mq_test_util.h"

namespace {

constexpr int64_t k2p40 = int64_t{1} << 40;

struct Row {
    const char *field;  // also what the refusal's message must name
    int64_t value;
    mq_status want;
};

// Tries each row through `attempt`, which builds the struct with one field set and calls the
// function that takes it (cleaning up whatever an accepted call created).
void run_rows(const char *what, const std::vector<Row> &rows,
              const std::function<mq_status(const Row &)> &attempt) {
    for (const Row &r : rows) {
        SCOPED_TRACE(std::string(what) + "." + r.field + " = " + std::to_string(r.value));
        const mq_status st = attempt(r);
        EXPECT_EQ(st, r.want) << mq_status_name(st) << ": " << mq_last_error();
        if (r.want != MQ_OK && st == r.want) {
            EXPECT_NE(std::string(mq_last_error()).find(r.field), std::string::npos)
                << "the message does not name the field: " << mq_last_error();
        }
    }
}

TEST(OptionRanges, BrokerOptions) {
    const std::vector<Row> rows = {
        {"max_message_bytes", 0, MQ_ERR_INVALID},
        {"max_message_bytes", 1, MQ_OK},
        {"max_message_bytes", int64_t{1} << 30, MQ_OK},
        {"max_message_bytes", (int64_t{1} << 30) + 1, MQ_ERR_INVALID},
        {"spin_ns", -1, MQ_ERR_INVALID},
        {"spin_ns", 0, MQ_OK},
        {"spin_ns", 1'000'000'000, MQ_OK},
        {"spin_ns", 1'000'000'001, MQ_ERR_INVALID},
        {"spin_ns", INT64_MAX, MQ_ERR_INVALID},
    };
    run_rows("mq_broker_options", rows, [](const Row &r) {
        mq_broker_options o;
        mq_broker_options_init(&o, sizeof o);
        if (std::string(r.field) == "max_message_bytes") o.max_message_bytes = size_t(r.value);
        if (std::string(r.field) == "spin_ns") o.spin_ns = r.value;
        mq_broker *b = nullptr;
        const mq_status st = mq_broker_new(&o, &b);
        if (st == MQ_OK) mq_broker_free(b);
        return st;
    });
}

TEST(OptionRanges, TopicConfig) {
    const std::vector<Row> rows = {
        {"partitions", 0, MQ_ERR_INVALID},
        {"partitions", 1, MQ_OK},
        {"partitions", 65536, MQ_OK},
        {"partitions", 65537, MQ_ERR_INVALID},
        {"capacity", 0, MQ_ERR_INVALID},
        {"capacity", 1, MQ_OK},
        {"capacity", k2p40, MQ_OK},
        {"capacity", k2p40 + 1, MQ_ERR_INVALID},
        {"max_bytes", -1, MQ_ERR_INVALID},
        {"max_bytes", 0, MQ_OK},
        {"max_bytes", INT64_MAX, MQ_OK},
        {"ack_timeout_ms", 0, MQ_ERR_INVALID},
        {"ack_timeout_ms", 1, MQ_OK},
        {"ack_timeout_ms", k2p40, MQ_OK},
        {"ack_timeout_ms", k2p40 + 1, MQ_ERR_INVALID},
        {"ack_timeout_ms", INT64_MAX, MQ_ERR_INVALID},
        {"retention", -1, MQ_ERR_INVALID},
        {"retention", MQ_RETAIN_UNTIL_ACKED, MQ_OK},
        {"retention", MQ_RETAIN_BOUNDED, MQ_OK},
        {"retention", 2, MQ_ERR_INVALID},
        {"max_age_ms", -1, MQ_ERR_INVALID},
        {"max_age_ms", 0, MQ_OK},
        {"max_age_ms", k2p40, MQ_OK},
        {"max_age_ms", k2p40 + 1, MQ_ERR_INVALID},
        {"max_age_ms", INT64_MAX, MQ_ERR_INVALID},
    };
    auto b = mqtest::broker();
    int n = 0;
    run_rows("mq_topic_config", rows, [&](const Row &r) {
        mq_topic_config c;
        mq_topic_config_init(&c, sizeof c);
        const std::string f = r.field;
        if (f == "partitions") c.partitions = int32_t(r.value);
        if (f == "capacity") c.capacity = r.value;
        if (f == "max_bytes") c.max_bytes = r.value;
        if (f == "ack_timeout_ms") c.ack_timeout_ms = r.value;
        if (f == "retention") c.retention = int32_t(r.value);
        if (f == "max_age_ms") c.max_age_ms = r.value;
        const std::string name = "t" + std::to_string(n++);
        const mq_status st = mq_topic_create(b.get(), name.c_str(), &c);
        if (st == MQ_OK) {  // the topic reports what it was given
            mq_topic_info ti{};
            EXPECT_EQ(mq_topic_get_info(b.get(), name.c_str(), &ti, sizeof ti), MQ_OK);
            if (f == "partitions") EXPECT_EQ(ti.partitions, r.value);
            if (f == "capacity") EXPECT_EQ(ti.capacity, r.value);
            if (f == "max_bytes") EXPECT_EQ(ti.max_bytes, r.value);
            if (f == "ack_timeout_ms") EXPECT_EQ(ti.ack_timeout_ms, r.value);
            if (f == "max_age_ms") EXPECT_EQ(ti.max_age_ms, r.value);
        }
        return st;
    });
}

TEST(OptionRanges, GroupOptions) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    ASSERT_EQ(mq_topic_create(b.get(), "dlt", nullptr), MQ_OK);
    const std::vector<Row> rows = {
        {"start", -1, MQ_ERR_INVALID},
        {"start", MQ_START_LATEST, MQ_OK},
        {"start", MQ_START_EARLIEST, MQ_OK},
        {"start", 2, MQ_ERR_INVALID},
        // max_deliveries is unsigned: 0 (no limit, then no dead-letter topic) to UINT32_MAX.
        {"max_deliveries", 0, MQ_OK},
        {"max_deliveries", 1, MQ_OK},
        {"max_deliveries", UINT32_MAX, MQ_OK},
    };
    int n = 0;
    run_rows("mq_group_options", rows, [&](const Row &r) {
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        if (std::string(r.field) == "start") o.start = int32_t(r.value);
        if (std::string(r.field) == "max_deliveries") {
            o.max_deliveries = uint32_t(r.value);
            o.dead_letter_topic = r.value ? "dlt" : nullptr;
        }
        const std::string g = "g" + std::to_string(n++);
        return mq_group_subscribe(b.get(), "t", g.c_str(), &o);
    });
}

TEST(OptionRanges, SubscriptionOptions) {
    auto b = mqtest::broker();
    mq_topic_config c = mqtest::topic_config(4, 16);
    ASSERT_EQ(mq_topic_create(b.get(), "t", &c), MQ_OK);
    const std::vector<Row> rows = {
        {"prefetch", 0, MQ_ERR_INVALID},
        {"prefetch", 1, MQ_OK},
        {"prefetch", 65536, MQ_OK},
        {"prefetch", 65537, MQ_ERR_INVALID},
        {"prefetch", INT32_MAX, MQ_ERR_INVALID},
        // One listed partition, at the topic's edges (0..3): MQ_ERR_PARTITION outside.
        {"partition", -1, MQ_ERR_PARTITION},
        {"partition", 0, MQ_OK},
        {"partition", 3, MQ_OK},
        {"partition", 4, MQ_ERR_PARTITION},
        // A partition list of no entries: refused (NULL is how to ask for a member).
        {"partitions", 0, MQ_ERR_INVALID},
    };
    int n = 0;
    run_rows("mq_subscription_options", rows, [&](const Row &r) {
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        int32_t part = 0;
        const std::string f = r.field;
        if (f == "prefetch") o.prefetch = int32_t(r.value);
        if (f == "partition") {
            part = int32_t(r.value);
            o.partitions = &part;
            o.partition_count = 1;
        }
        if (f == "partitions") {
            o.partitions = &part;
            o.partition_count = 0;
        }
        const std::string g = "g" + std::to_string(n++);
        mq_subscription *sub = nullptr;
        const mq_status st = mq_subscription_open(
            b.get(), "t", g.c_str(), &o, [](void *, const mq_message *) { return 0; }, nullptr,
            nullptr, &sub);
        if (st == MQ_OK) EXPECT_EQ(mq_subscription_close(sub), MQ_OK);
        return st;
    });
}

TEST(OptionRanges, MemberOptions) {
    auto b = mqtest::broker();
    ASSERT_EQ(mq_topic_create(b.get(), "t", nullptr), MQ_OK);
    const std::vector<Row> rows = {
        {"session_timeout_ms", 0, MQ_ERR_INVALID},
        {"session_timeout_ms", 1, MQ_OK},
        {"session_timeout_ms", k2p40, MQ_OK},
        {"session_timeout_ms", k2p40 + 1, MQ_ERR_INVALID},
        {"session_timeout_ms", INT64_MAX, MQ_ERR_INVALID},
    };
    int n = 0;
    run_rows("mq_member_options", rows, [&](const Row &r) {
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.session_timeout_ms = r.value;
        const std::string g = "g" + std::to_string(n++);
        mq_member *m = nullptr;
        const mq_status st = mq_member_join(b.get(), "t", g.c_str(), &o, &m);
        if (st == MQ_OK) EXPECT_EQ(mq_member_close(m), MQ_OK);
        return st;
    });
}

}  // namespace
