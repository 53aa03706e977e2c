// The Kafka backend when the cluster refuses: faults injected through librdkafka's mock
// cluster (rdkafka_mock.h), an in-process stand-in for a Kafka cluster that speaks the protocol
// over loopback and answers chosen requests with chosen errors. A healthy cluster never sends
// these answers, so the suite against a real one (test_kafka.cpp) cannot reach them. No cluster
// is needed: these run in every build with MQ_KAFKA.
//
// The mock of librdkafka 2.0 has no admin API (CreateTopics and DeleteTopics go unanswered):
// topics are made with rd_kafka_mock_topic_create, and mq sees them as topics made by another
// client.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "alloc_hooks.h"
#include "mq.h"

namespace {

// Kafka's API keys (the protocol's numbers; librdkafka does not install its header for them).
enum Api : int16_t {
    kProduce = 0,
    kFetch = 1,
    kListOffsets = 2,
    kOffsetCommit = 8,
    kOffsetFetch = 9,
};

class KafkaFaults : public testing::Test {
protected:
    void SetUp() override {
        char err[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        ASSERT_EQ(rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err), RD_KAFKA_CONF_OK);
        host_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        ASSERT_NE(host_, nullptr) << err;
        mock_ = rd_kafka_mock_cluster_new(host_, 1);
        ASSERT_NE(mock_, nullptr);
        b_ = open();
        ASSERT_NE(b_, nullptr);
    }
    void TearDown() override {
        mq_broker_free(b_);
        if (mock_) rd_kafka_mock_cluster_destroy(mock_);
        if (host_) rd_kafka_destroy(host_);
    }

    // A broker on the mock cluster; `config` lines come after the test's own.
    mq_broker *open(const std::string &config = "") {
        const std::string lines = "log_level=0\n" + config;
        mq_broker_options o;
        mq_broker_options_init(&o, sizeof o);
        o.kafka_bootstrap = rd_kafka_mock_cluster_bootstraps(mock_);
        o.kafka_config = lines.c_str();
        mq_broker *b = nullptr;
        EXPECT_EQ(mq_broker_new(&o, &b), MQ_OK) << mq_last_error();
        return b;
    }
    void topic(const char *name, int partitions) {
        ASSERT_EQ(rd_kafka_mock_topic_create(mock_, name, partitions, 1),
                  RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    // The next requests of `api` get these errors, one each, in order.
    void refuse(Api api, std::initializer_list<rd_kafka_resp_err_t> errs) {
        std::vector<rd_kafka_resp_err_t> v(errs);
        rd_kafka_mock_push_request_errors_array(mock_, api, v.size(), v.data());
    }
    void subscribe(const char *t, const char *g, mq_status want = MQ_OK) {
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        o.start = MQ_START_EARLIEST;
        EXPECT_EQ(mq_group_subscribe(b_, t, g, &o), want) << mq_last_error();
    }
    mq_status publish(const char *t, const char *key, int64_t *offset = nullptr) {
        int32_t part = -1;
        int64_t off = -1;
        const mq_status st = mq_topic_publish(b_, t, key, std::strlen(key), "v", 1, nullptr, 0,
                                              MQ_NO_WAIT, nullptr, &part, &off);
        if (offset) *offset = off;
        return st;
    }
    std::vector<mq_message> poll(const char *t, const char *g, int32_t partition, size_t max) {
        std::vector<mq_message> m(max);
        size_t n = 0;
        EXPECT_EQ(mq_group_poll(b_, t, g, partition, m.data(), sizeof(mq_message), max, 5000,
                                nullptr, &n),
                  MQ_OK)
            << mq_last_error();
        m.resize(n);
        return m;
    }
    int64_t committed(const char *t, const char *g, int32_t partition) {
        mq_group_info gi{};
        EXPECT_EQ(mq_group_get_info(b_, t, g, partition, &gi, sizeof gi), MQ_OK) << mq_last_error();
        return gi.committed;
    }

    rd_kafka_t *host_ = nullptr;
    rd_kafka_mock_cluster_t *mock_ = nullptr;
    mq_broker *b_ = nullptr;
};

bool says(const char *what) { return std::strstr(mq_last_error(), what) != nullptr; }

TEST_F(KafkaFaults, APublishTheClusterRefusesAppendsNothingAndSaysWhy) {
    topic("t", 1);
    refuse(kProduce, {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE});
    EXPECT_EQ(publish("t", "k"), MQ_ERR_TOO_LARGE);
    EXPECT_TRUE(says("publish to t")) << mq_last_error();

    // A batch: every request it takes (one, or more when the first record leaves before the
    // others are queued) gets the answer, and no record counts as published.
    refuse(kProduce, {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                      RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE});
    mq_record r[3];
    for (auto &x : r) x = {"k", 1, "v", 1, nullptr, 0};
    mq_publish_result res[3];
    size_t published = 99;
    EXPECT_EQ(mq_topic_publish_batch(b_, "t", r, sizeof r[0], 3, MQ_NO_WAIT, nullptr, res,
                                     sizeof res[0], &published),
              MQ_ERR_TOO_LARGE)
        << mq_last_error();
    EXPECT_EQ(published, 0u);
    for (const auto &x : res) EXPECT_EQ(x.offset, -1);
    rd_kafka_mock_clear_request_errors(mock_, kProduce);  // those one request did not take

    // The refusals appended nothing: the next record is the log's first.
    int64_t off = -1;
    ASSERT_EQ(publish("t", "k", &off), MQ_OK) << mq_last_error();
    EXPECT_EQ(off, 0);

    // Any other refusal is MQ_ERR_BACKEND with the cluster's words. (librdkafka then holds
    // the topic as unauthorized until its next metadata refresh: this one comes last.)
    refuse(kProduce, {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED});
    EXPECT_EQ(publish("t", "k"), MQ_ERR_BACKEND);
    EXPECT_TRUE(says("authorization")) << mq_last_error();
}

TEST_F(KafkaFaults, ABatchLargerThanTheClientsQueueWaitsForRoom) {
    mq_broker_free(b_);
    b_ = open("queue.buffering.max.messages=2");
    ASSERT_NE(b_, nullptr);
    topic("t", 1);
    // Slow answers keep the queue full while the batch is handed over.
    rd_kafka_mock_broker_set_rtt(mock_, 1, 20);
    constexpr size_t kCount = 12;
    std::vector<mq_record> r(kCount, mq_record{"k", 1, "v", 1, nullptr, 0});
    std::vector<mq_publish_result> res(kCount);
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b_, "t", r.data(), sizeof r[0], kCount, MQ_NO_WAIT, nullptr,
                                     res.data(), sizeof res[0], &published),
              MQ_OK)
        << mq_last_error();
    EXPECT_EQ(published, kCount);
    for (size_t i = 0; i < kCount; i++) EXPECT_EQ(res[i].offset, static_cast<int64_t>(i));
}

TEST_F(KafkaFaults, ARecordTheClientRefusesEndsTheBatchAfterTheOnesBefore) {
    mq_broker_free(b_);
    b_ = open("message.max.bytes=2000");
    ASSERT_NE(b_, nullptr);
    topic("t", 1);
    static const char big[4000] = {};
    mq_record r[3];
    for (auto &x : r) x = {"k", 1, "v", 1, nullptr, 0};
    r[1].payload = big;
    r[1].payload_len = sizeof big;
    mq_publish_result res[3];
    size_t published = 0;
    EXPECT_EQ(mq_topic_publish_batch(b_, "t", r, sizeof r[0], 3, MQ_NO_WAIT, nullptr, res,
                                     sizeof res[0], &published),
              MQ_ERR_TOO_LARGE);
    EXPECT_TRUE(says("publish to t")) << mq_last_error();
    EXPECT_EQ(published, 1u);
    EXPECT_EQ(res[0].offset, 0);
    EXPECT_EQ(res[1].offset, -1);
    EXPECT_EQ(res[2].offset, -1);
    subscribe("t", "g");
    EXPECT_EQ(poll("t", "g", 0, 8).size(), 1u);  // the record before the refused one, alone
}

TEST_F(KafkaFaults, APublishWaitingForItsReportEndsOnCancelAndOnClose) {
    topic("t", 1);
    int64_t off = -1;
    ASSERT_EQ(publish("t", "k", &off), MQ_OK) << mq_last_error();  // the topic's metadata known
    // Answers now take 3 s: a publish is still waiting for its report when it is ended.
    rd_kafka_mock_broker_set_rtt(mock_, 1, 3000);
    mq_cancel *cancel = nullptr;
    ASSERT_EQ(mq_cancel_new(&cancel), MQ_OK);
    mq_status cancelled = MQ_OK;
    std::thread pub([&] {
        cancelled = mq_topic_publish(b_, "t", "k", 1, "v", 1, nullptr, 0, MQ_WAIT_FOREVER, cancel,
                                     nullptr, nullptr);
    });
    mq_cancel_trigger(cancel);
    pub.join();
    EXPECT_EQ(cancelled, MQ_CANCELLED);
    mq_cancel_free(cancel);

    mq_status closed = MQ_OK;
    std::thread pub2([&] {
        closed = mq_topic_publish(b_, "t", "k", 1, "v", 1, nullptr, 0, MQ_WAIT_FOREVER, nullptr,
                                  nullptr, nullptr);
    });
    EXPECT_EQ(mq_broker_close(b_), MQ_OK);
    pub2.join();
    EXPECT_EQ(closed, MQ_CLOSED);
}

TEST_F(KafkaFaults, AnAckTheGroupRefusesLeavesTheMessageInFlight) {
    topic("t", 1);
    subscribe("t", "g");
    int64_t off = -1;
    ASSERT_EQ(publish("t", "k", &off), MQ_OK) << mq_last_error();
    ASSERT_EQ(poll("t", "g", 0, 1).size(), 1u);
    // A commit the group coordinator refuses because the group moved on is MQ_ERR_FENCED ...
    for (auto e : {RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
                   RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID}) {
        refuse(kOffsetCommit, {e});
        EXPECT_EQ(mq_group_ack(b_, "t", "g", 0, off), MQ_ERR_FENCED) << rd_kafka_err2name(e);
        EXPECT_TRUE(says("rebalancing")) << mq_last_error();
    }
    // ... any other refusal MQ_ERR_BACKEND, with the cluster's words.
    refuse(kOffsetCommit, {RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED});
    EXPECT_EQ(mq_group_ack(b_, "t", "g", 0, off), MQ_ERR_BACKEND);
    EXPECT_TRUE(says("authorization")) << mq_last_error();
    EXPECT_EQ(committed("t", "g", 0), 0);
    // A seek commits its offset first: refused the same way, it moves nothing.
    refuse(kOffsetCommit, {RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED});
    EXPECT_EQ(mq_group_seek(b_, "t", "g", 0, MQ_OFFSET_END), MQ_ERR_BACKEND);
    // None of them acked: the message is still in flight, and the next ack takes it.
    ASSERT_EQ(mq_group_ack(b_, "t", "g", 0, off), MQ_OK) << mq_last_error();
    EXPECT_EQ(committed("t", "g", 0), off + 1);
}

TEST_F(KafkaFaults, ASubscribeTheClusterRefusesLeavesNoGroup) {
    topic("t", 2);
    refuse(kOffsetFetch, {RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED});
    subscribe("t", "g1", MQ_ERR_BACKEND);
    EXPECT_TRUE(says("committed offsets of group g1")) << mq_last_error();
    refuse(kOffsetCommit, {RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED});
    subscribe("t", "g2", MQ_ERR_BACKEND);
    EXPECT_TRUE(says("start offsets of group g2")) << mq_last_error();
    refuse(kListOffsets, {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                          RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED});  // one per end
    subscribe("t", "g3", MQ_ERR_BACKEND);
    EXPECT_TRUE(says("read the offsets of t")) << mq_last_error();
    rd_kafka_mock_clear_request_errors(mock_, kListOffsets);

    char buf[64];
    size_t needed = 0;
    ASSERT_EQ(mq_group_list(b_, "t", buf, sizeof buf, &needed), MQ_OK) << mq_last_error();
    EXPECT_STREQ(buf, "");
    mq_group_info gi{};
    EXPECT_EQ(mq_group_get_info(b_, "t", "g1", 0, &gi, sizeof gi), MQ_ERR_NO_GROUP);
    // Each can subscribe once the cluster agrees.
    for (const char *g : {"g1", "g2", "g3"}) subscribe("t", g);
}

TEST_F(KafkaFaults, OffsetReadsRetryALeaderMoveAndReportOtherRefusals) {
    topic("t", 1);
    subscribe("t", "g");
    ASSERT_EQ(publish("t", "k"), MQ_OK) << mq_last_error();
    // The group's consumer has fetched (its start-up requests are over) before any refusal.
    mq_message m;
    size_t n = 0;
    ASSERT_EQ(mq_group_poll(b_, "t", "g", 0, &m, sizeof m, 1, 5000, nullptr, &n), MQ_OK)
        << mq_last_error();
    mq_partition_info pi{};
    // A leader that moved or is not elected yet: asked again.
    refuse(kListOffsets,
           {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE});
    ASSERT_EQ(mq_partition_get_info(b_, "t", 0, &pi, sizeof pi), MQ_OK) << mq_last_error();
    EXPECT_EQ(pi.end, 1);
    // Anything else is the call's answer, in each call that reads the log's ends.
    const std::vector<std::pair<const char *, std::function<mq_status()>>> calls = {
        {"mq_partition_get_info",
         [&] { return mq_partition_get_info(b_, "t", 0, &pi, sizeof pi); }},
        {"mq_partition_describe",
         [&] {
             char buf[128];
             return mq_partition_describe(b_, "t", 0, buf, sizeof buf, nullptr);
         }},
        {"mq_group_get_info",
         [&] {
             mq_group_info gi{};
             return mq_group_get_info(b_, "t", "g", 0, &gi, sizeof gi);
         }},
        {"mq_group_seek", [&] { return mq_group_seek(b_, "t", "g", 0, MQ_OFFSET_EARLIEST); }},
    };
    for (const auto &[what, call] : calls) {
        rd_kafka_mock_clear_request_errors(mock_, kListOffsets);
        // One for each end, which librdkafka asks for in requests of their own, and more: the
        // group's consumer may send a ListOffsets of its own meanwhile and take one (a refusal
        // it retries), which left this call none in one CI run.
        refuse(kListOffsets, {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                              RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                              RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                              RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                              RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                              RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED});
        EXPECT_EQ(call(), MQ_ERR_BACKEND) << what;
        EXPECT_TRUE(says("read the offsets of t")) << what << ": " << mq_last_error();
    }
    rd_kafka_mock_clear_request_errors(mock_, kListOffsets);
    EXPECT_EQ(mq_group_seek(b_, "t", "g", 0, MQ_OFFSET_EARLIEST), MQ_OK) << mq_last_error();
}

TEST_F(KafkaFaults, ATopicWhoseMetadataCarriesAnErrorIsNotListedOrFound) {
    topic("ok", 1);
    topic("broken", 1);
    rd_kafka_mock_topic_set_error(mock_, "broken", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    mq_topic_info ti{};
    EXPECT_EQ(mq_topic_get_info(b_, "broken", &ti, sizeof ti), MQ_ERR_NO_TOPIC);
    EXPECT_TRUE(says("broken")) << mq_last_error();
    char buf[64];
    ASSERT_EQ(mq_topic_list(b_, buf, sizeof buf, nullptr), MQ_OK) << mq_last_error();
    EXPECT_STREQ(buf, "ok\n");
}

TEST_F(KafkaFaults, AdminRequestsWithoutAnAnswerAreBackendErrorsInBoundedTime) {
    // The mock leaves CreateTopics and DeleteTopics unanswered, as a cluster that is down would:
    // each call gives up after its request time (10 s) with a message that says what failed.
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = 2;
    c.max_age_ms = 60000;
    c.max_bytes = 1 << 20;
    EXPECT_EQ(mq_topic_create(b_, "new", &c), MQ_ERR_BACKEND);
    EXPECT_TRUE(says("create topic new")) << mq_last_error();
    topic("old", 1);
    EXPECT_EQ(mq_topic_delete(b_, "old"), MQ_ERR_BACKEND);
    EXPECT_TRUE(says("delete topic old")) << mq_last_error();
}

TEST_F(KafkaFaults, ClientSettingsAreNameValueLinesAndBlankLinesAreSkipped) {
    mq_broker *b = open("\n\nlinger.ms=5\n");
    ASSERT_NE(b, nullptr);
    mq_broker_free(b);
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = rd_kafka_mock_cluster_bootstraps(mock_);
    mq_broker *none = nullptr;
    for (const char *bad : {"=5", "linger.ms", "linger.ms=soon"}) {
        o.kafka_config = bad;
        EXPECT_EQ(mq_broker_new(&o, &none), MQ_ERR_INVALID) << bad;
        EXPECT_EQ(none, nullptr);
        EXPECT_TRUE(says("kafka_config")) << bad << ": " << mq_last_error();
    }
}

// A dead letter the cluster refuses keeps the head where it is (the poll says why); one it can
// never take (too large) is lost instead, and counted, as in the in-process log.
TEST_F(KafkaFaults, ADeadLetterTheClusterRefusesKeepsTheHeadOrIsLost) {
    topic("t", 1);
    topic("dlq", 1);
    mq_group_options o;
    mq_group_options_init(&o, sizeof o);
    o.start = MQ_START_EARLIEST;
    o.max_deliveries = 1;
    o.dead_letter_topic = "dlq";
    ASSERT_EQ(mq_group_subscribe(b_, "t", "g", &o), MQ_OK) << mq_last_error();
    ASSERT_EQ(publish("t", "poison"), MQ_OK) << mq_last_error();
    ASSERT_EQ(poll("t", "g", 0, 1).size(), 1u);
    ASSERT_EQ(mq_group_nack(b_, "t", "g", 0, 0), MQ_OK) << mq_last_error();
    mq_message m[1];
    size_t n = 0;
    refuse(kProduce, {RD_KAFKA_RESP_ERR_POLICY_VIOLATION});
    EXPECT_EQ(mq_group_poll(b_, "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n), MQ_ERR_BACKEND);
    EXPECT_TRUE(says("dlq")) << mq_last_error();
    mq_group_info gi{};
    ASSERT_EQ(mq_group_get_info(b_, "t", "g", 0, &gi, sizeof gi), MQ_OK);
    EXPECT_EQ(gi.committed, 0);
    EXPECT_EQ(gi.dead_lettered, 0);
    refuse(kProduce, {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE});
    EXPECT_EQ(mq_group_poll(b_, "t", "g", 0, m, sizeof m[0], 1, 0, nullptr, &n), MQ_TIMEOUT)
        << mq_last_error();
    ASSERT_EQ(mq_group_get_info(b_, "t", "g", 0, &gi, sizeof gi), MQ_OK);
    EXPECT_EQ(gi.committed, 1);
    EXPECT_EQ(gi.dead_lettered, 0);
    EXPECT_EQ(gi.lost, 1);
}

// mq_subscription_open calls user_free exactly once whichever allocation of the call fails, as
// in-process (test_alloc_failure.cpp): each allocation in turn is made to fail until the call
// makes fewer than that.
TEST_F(KafkaFaults, SubscriptionOpenCallsUserFreeOnceWhicheverAllocationFails) {
    topic("t", 1);
    subscribe("t", "g");
    const int32_t p0 = 0;
    mq_subscription_options so;
    mq_subscription_options_init(&so, sizeof so);
    so.partitions = &p0;
    so.partition_count = 1;
    auto handler = [](void *, const mq_message *) { return 0; };
    auto user_free = [](void *u) { static_cast<std::atomic<int> *>(u)->fetch_add(1); };
    bool done = false;
    long failures = 0;
    for (long n = 1; n < 100000 && !done; n++) {
        std::atomic<int> freed{0};
        mq_subscription *s = nullptr;
        alloc_hooks::fail_nth(n);
        const mq_status st =
            mq_subscription_open(b_, "t", "g", &so, handler, &freed, user_free, &s);
        const bool hit = alloc_hooks::failed();
        alloc_hooks::disarm();
        if (st == MQ_OK) {
            EXPECT_EQ(freed.load(), 0) << "allocation " << n;
            ASSERT_EQ(mq_subscription_close(s), MQ_OK) << mq_last_error();
            ASSERT_EQ(freed.load(), 1) << "allocation " << n;
            done = !hit;
            continue;
        }
        failures++;
        ASSERT_TRUE(hit) << "allocation " << n << ": " << mq_last_error();
        ASSERT_EQ(st, MQ_ERR_NO_MEMORY) << "allocation " << n << ": " << mq_last_error();
        ASSERT_EQ(freed.load(), 1) << "allocation " << n;
    }
    EXPECT_TRUE(done);
    EXPECT_GT(failures, 0);
}

// Members on the mock: the group protocol (join, sync, heartbeats) is the mock's own.
class KafkaFaultsMembers : public KafkaFaults {
protected:
    mq_member *join(const char *t, const char *g, const char *id) {
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.member_id = id;
        mq_member *m = nullptr;
        EXPECT_EQ(mq_member_join(b_, t, g, &o, &m), MQ_OK) << mq_last_error();
        return m;
    }
    // The in-process broker a test compares the mock's with: topic t of 2 partitions, group
    // `subscribed` subscribed to it, and *member, member m1 of `group`.
    static mq_broker *in_process(const char *subscribed, const char *group, mq_member **member) {
        mq_broker *b = nullptr;
        EXPECT_EQ(mq_broker_new(nullptr, &b), MQ_OK) << mq_last_error();
        if (!b) return nullptr;
        mq_topic_config tc;
        mq_topic_config_init(&tc, sizeof tc);
        tc.partitions = 2;
        EXPECT_EQ(mq_topic_create(b, "t", &tc), MQ_OK) << mq_last_error();
        EXPECT_EQ(mq_group_subscribe(b, "t", subscribed, nullptr), MQ_OK) << mq_last_error();
        mq_member_options mo;
        mq_member_options_init(&mo, sizeof mo);
        mo.member_id = "m1";
        EXPECT_EQ(mq_member_join(b, "t", group, &mo, member), MQ_OK) << mq_last_error();
        return b;
    }
};

TEST_F(KafkaFaultsMembers, AFencedAckIsRedeliveredAfterTheRebalance) {
    topic("t", 1);
    mq_member *m = join("t", "g", "me");
    ASSERT_NE(m, nullptr);
    EXPECT_STREQ(mq_member_id(m), "me");
    int64_t off = -1;
    ASSERT_EQ(publish("t", "a", &off), MQ_OK) << mq_last_error();
    mq_message msgs[1];
    size_t n = 0;
    ASSERT_EQ(mq_member_poll(m, msgs, sizeof msgs[0], 1, 5000, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(msgs[0].offset, off);
    // The coordinator says the member's generation is over: the ack (and the poll after it)
    // is refused, and librdkafka rejoins the group.
    refuse(kOffsetCommit, {RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION});
    EXPECT_EQ(mq_member_ack_poll(m, 0, off, msgs, sizeof msgs[0], 1, 0, nullptr, &n),
              MQ_ERR_FENCED);
    EXPECT_TRUE(says("rebalancing")) << mq_last_error();
    EXPECT_EQ(n, 0u);
    // What a member does then (mq.h): fetch the assignment and carry on. The message was never
    // committed, so it comes again.
    bool again = false;
    for (int i = 0; i < 60 && !again; i++) {
        const mq_status st = mq_member_poll(m, msgs, sizeof msgs[0], 1, 500, nullptr, &n);
        if (st == MQ_REBALANCED) {
            size_t owned = 0;
            ASSERT_EQ(mq_member_get_assignment(m, nullptr, nullptr, 0, &owned), MQ_OK)
                << mq_last_error();
        } else if (st == MQ_OK) {
            ASSERT_EQ(n, 1u);
            EXPECT_EQ(msgs[0].offset, off);
            again = true;
        } else {
            ASSERT_EQ(st, MQ_TIMEOUT) << mq_last_error();
        }
    }
    ASSERT_TRUE(again) << "the fenced message never came again";
    EXPECT_EQ(mq_member_ack(m, 0, off), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_member_ack(m, 0, off), MQ_ERR_NOT_IN_FLIGHT);
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

TEST_F(KafkaFaultsMembers, ASlowMemberPausesFetchingAndResumesAsItCatchesUp) {
    // A member that does not poll stops fetching once 4096 messages wait for it (the bound on
    // what it holds) and fetches again when it is down to 1024: every message still comes,
    // once and in order.
    topic("t", 1);
    constexpr size_t kCount = 6000;
    std::vector<mq_record> r(kCount, mq_record{"k", 1, "v", 1, nullptr, 0});
    size_t published = 0;
    ASSERT_EQ(mq_topic_publish_batch(b_, "t", r.data(), sizeof r[0], kCount, MQ_NO_WAIT, nullptr,
                                     nullptr, sizeof(mq_publish_result), &published),
              MQ_OK)
        << mq_last_error();
    mq_group_options go;
    mq_group_options_init(&go, sizeof go);
    go.start = MQ_START_EARLIEST;
    ASSERT_EQ(mq_group_subscribe(b_, "t", "g", &go), MQ_OK) << mq_last_error();
    mq_member *m = join("t", "g", nullptr);
    ASSERT_NE(m, nullptr);
    std::vector<mq_message> msgs(500);
    int64_t expect = 0;
    while (expect < static_cast<int64_t>(kCount)) {
        size_t n = 0;
        const mq_status st =
            expect == 0
                ? mq_member_poll(m, msgs.data(), sizeof msgs[0], msgs.size(), 10000, nullptr, &n)
                : mq_member_ack_poll(m, 0, expect - 1, msgs.data(), sizeof msgs[0], msgs.size(),
                                     10000, nullptr, &n);
        ASSERT_EQ(st, MQ_OK) << "at offset " << expect << ": " << mq_last_error();
        for (size_t i = 0; i < n; i++) ASSERT_EQ(msgs[i].offset, expect++);
    }
    EXPECT_EQ(mq_member_ack(m, 0, expect - 1), MQ_OK) << mq_last_error();
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

TEST_F(KafkaFaultsMembers, AFetchErrorIsRetriedNotHandedOut) {
    topic("t", 1);
    mq_member *m = join("t", "g", nullptr);
    ASSERT_NE(m, nullptr);
    // Refused fetches on either side of the record's own: each becomes an error event in the
    // partition's queue, before or after the record, and none may come out as a message.
    refuse(kFetch, {RD_KAFKA_RESP_ERR_UNKNOWN});
    int64_t off = -1;
    ASSERT_EQ(publish("t", "k", &off), MQ_OK) << mq_last_error();
    refuse(kFetch, {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED});
    mq_message msgs[4];
    size_t n = 0;
    // A member's first fetch on the mock takes some 6 s (on a real cluster, milliseconds).
    ASSERT_EQ(mq_member_poll(m, msgs, sizeof msgs[0], 4, 20000, nullptr, &n), MQ_OK)
        << mq_last_error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(msgs[0].offset, off);
    EXPECT_EQ(msgs[0].delivery_count, 1u);
    ASSERT_EQ(msgs[0].key_len, 1u);
    EXPECT_EQ(std::memcmp(msgs[0].key, "k", 1), 0);
    ASSERT_EQ(mq_member_ack(m, 0, off), MQ_OK) << mq_last_error();
    // Long enough for the refused fetches' back-off (fetch.error.backoff.ms, 500 ms each) to
    // pass: whatever they left in the queue is not handed out either.
    EXPECT_EQ(mq_member_poll(m, msgs, sizeof msgs[0], 4, 2500, nullptr, &n), MQ_TIMEOUT)
        << n << " handed out, the first at offset " << msgs[0].offset;
    EXPECT_EQ(mq_member_close(m), MQ_OK);
}

// Every refusal of a bad argument on a Kafka broker is the in-process broker's: the same status
// for the same call (the C boundary checks before it dispatches, or in the same order after).
// Short option structs (an older caller's) get the defaults of the missing fields on both.
TEST_F(KafkaFaultsMembers, BadArgumentsGetTheInProcessStatuses) {
    topic("t", 2);
    subscribe("t", "g");
    mq_member *km = join("t", "gm", "m1");
    ASSERT_NE(km, nullptr);
    mq_member *lm = nullptr;
    mq_broker *local = in_process("g", "gm", &lm);
    ASSERT_NE(lm, nullptr);
    mq_group_options go;
    mq_group_options_init(&go, sizeof go);

    mq_message msgs[2];
    size_t n = 0;
    char buf[64];
    mq_topic_info ti{};
    mq_partition_info pi{};
    mq_group_info gi{};
    const mq_record rec{"k", 1, "v", 1, nullptr, 0};
    const int32_t far_partition = 5;
    const int64_t too_long = (int64_t{1} << 40) + 1;
    const size_t kOld = sizeof(size_t);  // an options struct from before every field
    auto no_handler = [](void *, const mq_message *) { return 0; };
    struct Case {
        const char *what;
        std::function<int(mq_broker *, mq_member *)> call;
    };
    const std::vector<Case> cases = {
        {"poll: msgs NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "g", 0, nullptr, sizeof(mq_message), 2, 0, nullptr, &n);
         }},
        {"poll: msg_size 1",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "g", 0, msgs, 1, 2, 0, nullptr, &n);
         }},
        {"poll: max 0",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "g", 0, msgs, sizeof msgs[0], 0, 0, nullptr, &n);
         }},
        {"poll: wait -5",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "g", 0, msgs, sizeof msgs[0], 2, -5, nullptr, &n);
         }},
        {"poll: count_out NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "g", 0, msgs, sizeof msgs[0], 2, 0, nullptr, nullptr);
         }},
        {"poll: topic ''",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "", "g", 0, msgs, sizeof msgs[0], 2, 0, nullptr, &n);
         }},
        {"poll: group 'a b'",
         [&](mq_broker *b, mq_member *) {
             return mq_group_poll(b, "t", "a b", 0, msgs, sizeof msgs[0], 2, 0, nullptr, &n);
         }},
        {"ack_poll: max 0",
         [&](mq_broker *b, mq_member *) {
             return mq_group_ack_poll(b, "t", "g", 0, 0, msgs, sizeof msgs[0], 0, 0, nullptr, &n);
         }},
        {"ack_poll: count_out NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_group_ack_poll(b, "t", "g", 0, 0, msgs, sizeof msgs[0], 2, 0, nullptr,
                                      nullptr);
         }},
        {"nack: delay -5",
         [&](mq_broker *b, mq_member *) { return mq_group_nack(b, "t", "g", 0, -5); }},
        {"nack: delay 2^40 + 1",
         [&](mq_broker *b, mq_member *) { return mq_group_nack(b, "t", "g", 0, too_long); }},
        {"seek: partition 5",
         [&](mq_broker *b, mq_member *) { return mq_group_seek(b, "t", "g", 5, 0); }},
        {"subscribe: topic ''",
         [&](mq_broker *b, mq_member *) { return mq_group_subscribe(b, "", "g2", &go); }},
        {"unsubscribe: group 'a b'",
         [&](mq_broker *b, mq_member *) { return mq_group_unsubscribe(b, "t", "a b"); }},
        {"publish: topic ''",
         [&](mq_broker *b, mq_member *) {
             return mq_topic_publish(b, "", nullptr, 0, "v", 1, nullptr, 0, 0, nullptr, nullptr,
                                     nullptr);
         }},
        {"publish_batch: topic ''",
         [&](mq_broker *b, mq_member *) {
             return mq_topic_publish_batch(b, "", &rec, sizeof rec, 1, 0, nullptr, nullptr, 0,
                                           nullptr);
         }},
        {"publish_batch: records NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_topic_publish_batch(b, "t", nullptr, sizeof rec, 1, 0, nullptr, nullptr, 0,
                                           nullptr);
         }},
        {"publish_batch: count 2^32",
         [&](mq_broker *b, mq_member *) {
             return mq_topic_publish_batch(b, "t", &rec, sizeof rec, size_t{UINT32_MAX} + 1, 0,
                                           nullptr, nullptr, 0, nullptr);
         }},
        {"topic_list: buf NULL, cap 5",
         [&](mq_broker *b, mq_member *) { return mq_topic_list(b, nullptr, 5, nullptr); }},
        {"group_list: topic ''",
         [&](mq_broker *b, mq_member *) { return mq_group_list(b, "", buf, sizeof buf, nullptr); }},
        {"group_list: buf NULL, cap 5",
         [&](mq_broker *b, mq_member *) { return mq_group_list(b, "t", nullptr, 5, nullptr); }},
        {"topic_get_info: topic ''",
         [&](mq_broker *b, mq_member *) { return mq_topic_get_info(b, "", &ti, sizeof ti); }},
        {"topic_get_info: out NULL",
         [&](mq_broker *b, mq_member *) { return mq_topic_get_info(b, "t", nullptr, sizeof ti); }},
        {"partition_get_info: topic ''",
         [&](mq_broker *b, mq_member *) {
             return mq_partition_get_info(b, "", 0, &pi, sizeof pi);
         }},
        {"partition_get_info: out NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_partition_get_info(b, "t", 0, nullptr, sizeof pi);
         }},
        {"group_get_info: out NULL",
         [&](mq_broker *b, mq_member *) {
             return mq_group_get_info(b, "t", "g", 0, nullptr, sizeof gi);
         }},
        {"describe: topic ''",
         [&](mq_broker *b, mq_member *) {
             return mq_partition_describe(b, "", 0, buf, sizeof buf, nullptr);
         }},
        {"describe: buf NULL, cap 5",
         [&](mq_broker *b, mq_member *) {
             return mq_partition_describe(b, "t", 0, nullptr, 5, nullptr);
         }},
        {"subscription_open: topic ''",
         [&](mq_broker *b, mq_member *) {
             mq_subscription *s = nullptr;
             return mq_subscription_open(b, "", "g", nullptr, no_handler, nullptr, nullptr, &s);
         }},
        {"subscription_open: partition 5",
         [&](mq_broker *b, mq_member *) {
             mq_subscription_options so;
             mq_subscription_options_init(&so, sizeof so);
             so.partitions = &far_partition;
             so.partition_count = 1;
             mq_subscription *s = nullptr;
             return mq_subscription_open(b, "t", "g", &so, no_handler, nullptr, nullptr, &s);
         }},
        {"member_join: topic ''",
         [&](mq_broker *b, mq_member *) {
             mq_member *m = nullptr;
             return mq_member_join(b, "", "gm", nullptr, &m);
         }},
        {"member_poll: msgs NULL",
         [&](mq_broker *, mq_member *m) {
             return mq_member_poll(m, nullptr, sizeof(mq_message), 2, 0, nullptr, &n);
         }},
        {"member_poll: msg_size 1",
         [&](mq_broker *, mq_member *m) { return mq_member_poll(m, msgs, 1, 2, 0, nullptr, &n); }},
        {"member_poll: max 0",
         [&](mq_broker *, mq_member *m) {
             return mq_member_poll(m, msgs, sizeof msgs[0], 0, 0, nullptr, &n);
         }},
        {"member_poll: wait -5",
         [&](mq_broker *, mq_member *m) {
             return mq_member_poll(m, msgs, sizeof msgs[0], 2, -5, nullptr, &n);
         }},
        {"member_poll: count_out NULL",
         [&](mq_broker *, mq_member *m) {
             return mq_member_poll(m, msgs, sizeof msgs[0], 2, 0, nullptr, nullptr);
         }},
        {"member_ack_poll: partition 5",
         [&](mq_broker *, mq_member *m) {
             return mq_member_ack_poll(m, 5, 0, msgs, sizeof msgs[0], 2, 0, nullptr, &n);
         }},
        {"member_nack: delay -5",
         [&](mq_broker *, mq_member *m) { return mq_member_nack(m, 0, -5); }},
        {"member_extend_lease: partition -1",
         [&](mq_broker *, mq_member *m) { return mq_member_extend_lease(m, -1); }},
        // Old option structs: the fields past their size take the defaults.
        {"subscribe: old opts",
         [&](mq_broker *b, mq_member *) {
             mq_group_options o = go;
             o.size = kOld;
             o.start = MQ_START_EARLIEST;  // past the size: not read
             int st = mq_group_subscribe(b, "t", "old", &o);
             if (st == MQ_OK) st = mq_group_unsubscribe(b, "t", "old");
             return st;
         }},
        {"subscription_open: old opts",
         [&](mq_broker *b, mq_member *) {
             mq_subscription_options so;
             mq_subscription_options_init(&so, sizeof so);
             so.size = kOld;
             so.partitions = &far_partition;  // past the size: not read
             so.partition_count = 1;
             mq_subscription *s = nullptr;
             int st = mq_subscription_open(b, "t", "g", &so, no_handler, nullptr, nullptr, &s);
             if (st == MQ_OK) st = mq_subscription_close(s);
             return st;
         }},
        {"member_join: old opts",
         [&](mq_broker *b, mq_member *) {
             mq_member_options o;
             mq_member_options_init(&o, sizeof o);
             o.size = kOld;
             o.member_id = "a b";  // past the size: not read
             mq_member *m = nullptr;
             int st = mq_member_join(b, "t", "old-members", &o, &m);
             if (st == MQ_OK) st = mq_member_close(m);
             return st;
         }},
    };
    for (const auto &c : cases) {
        const int want = c.call(local, lm);
        const std::string local_error = mq_last_error();
        const int got = c.call(b_, km);
        EXPECT_EQ(got, want) << c.what << ": in-process \"" << local_error << "\", Kafka \""
                             << mq_last_error() << "\"";
        if (std::strstr(c.what, "old opts") == nullptr) {
            EXPECT_NE(want, MQ_OK) << c.what << " is not a bad argument in-process";
        }
    }
    EXPECT_EQ(mq_member_close(lm), MQ_OK);
    mq_broker_free(local);
    EXPECT_EQ(mq_member_close(km), MQ_OK);
}

// A member whose group was unsubscribed through its handle answers MQ_ERR_NO_GROUP before it
// looks at the call's other arguments, on both backends (mq.h's order: the member stands for
// its topic and group, which come before the other arguments).
TEST_F(KafkaFaultsMembers, AnUnsubscribedGroupsMemberSaysSoBeforeItsBadArguments) {
    topic("t", 2);
    subscribe("t", "gm");
    mq_member *km = join("t", "gm", "m1");
    ASSERT_NE(km, nullptr);
    mq_member *lm = nullptr;
    mq_broker *local = in_process("gm", "gm", &lm);
    ASSERT_NE(lm, nullptr);
    ASSERT_EQ(mq_group_unsubscribe(local, "t", "gm"), MQ_OK) << mq_last_error();
    ASSERT_EQ(mq_group_unsubscribe(b_, "t", "gm"), MQ_OK) << mq_last_error();

    mq_message msgs[2];
    size_t n = 0;
    int64_t generation = 0;
    int32_t parts[2];
    const std::vector<std::pair<const char *, std::function<int(mq_member *)>>> cases = {
        {"member_poll: msgs NULL",
         [&](mq_member *m) {
             return mq_member_poll(m, nullptr, sizeof(mq_message), 2, 0, nullptr, &n);
         }},
        {"member_poll: max 0",
         [&](mq_member *m) { return mq_member_poll(m, msgs, sizeof msgs[0], 0, 0, nullptr, &n); }},
        {"member_ack_poll: partition 5",
         [&](mq_member *m) {
             return mq_member_ack_poll(m, 5, 0, msgs, sizeof msgs[0], 2, 0, nullptr, &n);
         }},
        {"member_ack: partition -1", [&](mq_member *m) { return mq_member_ack(m, -1, 0); }},
        {"member_nack: delay -5", [&](mq_member *m) { return mq_member_nack(m, 0, -5); }},
        {"member_extend_lease: partition -1",
         [&](mq_member *m) { return mq_member_extend_lease(m, -1); }},
        {"member_get_assignment: count NULL",
         [&](mq_member *m) { return mq_member_get_assignment(m, &generation, parts, 2, nullptr); }},
        {"member_poll: good arguments",
         [&](mq_member *m) { return mq_member_poll(m, msgs, sizeof msgs[0], 2, 0, nullptr, &n); }},
    };
    for (const auto &[what, call] : cases) {
        EXPECT_EQ(call(lm), MQ_ERR_NO_GROUP) << what << " in-process: " << mq_last_error();
        EXPECT_EQ(call(km), MQ_ERR_NO_GROUP) << what << " on Kafka: " << mq_last_error();
        EXPECT_TRUE(says("no longer subscribed")) << what << ": " << mq_last_error();
    }
    EXPECT_EQ(mq_member_close(lm), MQ_OK);
    mq_broker_free(local);
    EXPECT_EQ(mq_member_close(km), MQ_OK);
}

}  // namespace
