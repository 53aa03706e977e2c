// The Kafka backend's overhead (docs/KAFKA.md, docs/BENCHMARKS.md): publish and poll + ack
// through mq on a Kafka cluster, beside librdkafka's own producer and consumer doing the same
// work against the same broker, in one run, interleaved (mq, librdkafka, mq, ...), medians
// reported. Not a test: scripts/kafka-bench.sh runs it.
//
//   mq_kafka_overhead BOOTSTRAP [--messages N] [--batch B] [--runs R] [--size BYTES]
//
// The same work on both sides: batches of B records of BYTES bytes with a key, each batch's
// delivery reports awaited before the next (mq_topic_publish_batch does that); then a consumer
// group reads the partition from the start B at a time and commits after each batch,
// synchronously (what mq_group_ack does). Both consumers hand out what they have fetched, as
// mq_group_poll does (waiting only when nothing is there), so both commit as often.
#include <librdkafka/rdkafka.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mq.h"

namespace {

// On both sides: librdkafka before 2.4 stops fetching a partition for a whole second once its
// prefetch queue holds queued.min.messages (100,000 by default), so a consumer that is only a
// little slower than the fetcher waits that second, and the run measures the pause rather than
// the code (docs/KAFKA.md). Set above the run's size, neither consumer reaches it.
constexpr const char *kQueuedMin = "10000000";

struct Args {
    const char *bootstrap = nullptr;
    int messages = 100000, batch = 1000, runs = 3, size = 100;
};

// CPU time of the whole process (every librdkafka thread included), in seconds: what the
// client costs, which a loaded machine disturbs far less than wall-clock rates.
double cpu_now() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double secs_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

[[noreturn]] void die(const char *what, const char *detail) {
    std::fprintf(stderr, "kafka_overhead: %s: %s\n", what, detail);
    std::exit(1);
}

// ---- mq on Kafka ---------------------------------------------------------------------------

void run_mq(const Args &a, const std::string &topic, double *pub, double *con, double *cpu_pub,
            double *cpu_con, double *first_ms) {
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = a.bootstrap;
    const std::string config = std::string("queued.min.messages=") + kQueuedMin;
    o.kafka_config = config.c_str();
    mq_broker *b;
    if (mq_broker_new(&o, &b) != MQ_OK) die("mq_broker_new", mq_last_error());
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    if (mq_topic_create(b, topic.c_str(), &c) != MQ_OK) die("mq_topic_create", mq_last_error());
    const std::string payload(static_cast<size_t>(a.size), 'x');
    std::vector<mq_record> recs(static_cast<size_t>(a.batch));
    for (auto &r : recs) r = {"key", 3, payload.data(), payload.size(), nullptr, 0};
    double c0 = cpu_now();
    auto t0 = std::chrono::steady_clock::now();
    for (int sent = 0; sent < a.messages; sent += a.batch) {
        size_t done = 0;
        if (mq_topic_publish_batch(b, topic.c_str(), recs.data(), sizeof(mq_record), recs.size(),
                                   MQ_WAIT_FOREVER, nullptr, nullptr, sizeof(mq_publish_result),
                                   &done) != MQ_OK)
            die("mq_topic_publish_batch", mq_last_error());
    }
    *pub = a.messages / secs_since(t0);
    *cpu_pub = (cpu_now() - c0) * 1e6 / a.messages;
    mq_group_options g;
    mq_group_options_init(&g, sizeof g);
    g.start = MQ_START_EARLIEST;
    const std::string group = topic + "-g";
    if (mq_group_subscribe(b, topic.c_str(), group.c_str(), &g) != MQ_OK)
        die("mq_group_subscribe", mq_last_error());
    std::vector<mq_message> msgs(static_cast<size_t>(a.batch));
    int batches = 0;
    c0 = cpu_now();
    t0 = std::chrono::steady_clock::now();
    for (int got = 0; got < a.messages;) {
        size_t n = 0;
        if (mq_group_poll(b, topic.c_str(), group.c_str(), 0, msgs.data(), sizeof(mq_message),
                          msgs.size(), 10000, nullptr, &n) != MQ_OK)
            die("mq_group_poll", mq_last_error());
        if (batches == 0) *first_ms = secs_since(t0) * 1e3;
        if (mq_group_ack(b, topic.c_str(), group.c_str(), 0, msgs[n - 1].offset) != MQ_OK)
            die("mq_group_ack", mq_last_error());
        got += static_cast<int>(n);
        batches++;
    }
    *con = a.messages / secs_since(t0);
    *cpu_con = (cpu_now() - c0) * 1e6 / a.messages;
    std::printf("        mq: %d messages per poll on average\n", a.messages / batches);
    mq_topic_delete(b, topic.c_str());
    mq_broker_free(b);
}

// ---- librdkafka alone ------------------------------------------------------------------------

struct Reports {
    int outstanding = 0;
};

rd_kafka_t *client(rd_kafka_type_t type, const Args &a, const char *group) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    // The settings the backend uses (kafka_topics.cpp): the comparison is of the code, not of
    // the configuration.
    const char *common[][2] = {{"bootstrap.servers", a.bootstrap}};
    for (auto &kv : common) rd_kafka_conf_set(conf, kv[0], kv[1], err, sizeof err);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(conf, "linger.ms", "0", err, sizeof err);
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
        rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t *, const rd_kafka_message_t *m, void *) {
            if (m->err) die("delivery", rd_kafka_err2str(m->err));
            static_cast<Reports *>(m->_private)->outstanding--;
        });
    } else {
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof err);
        rd_kafka_conf_set(conf, "queued.min.messages", kQueuedMin, err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set(conf, "enable.partition.eof", "false", err, sizeof err);
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) die("rd_kafka_new", err);
    return rk;
}

void run_raw(const Args &a, const std::string &topic, double *pub, double *con, double *cpu_pub,
             double *cpu_con, double *first_ms) {
    // The topic: made through mq (the admin call is not what is measured).
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = a.bootstrap;
    mq_broker *b;
    if (mq_broker_new(&o, &b) != MQ_OK) die("mq_broker_new", mq_last_error());
    if (mq_topic_create(b, topic.c_str(), nullptr) != MQ_OK)
        die("mq_topic_create", mq_last_error());

    rd_kafka_t *p = client(RD_KAFKA_PRODUCER, a, nullptr);
    const std::string payload(static_cast<size_t>(a.size), 'x');
    Reports r;
    double c0 = cpu_now();
    auto t0 = std::chrono::steady_clock::now();
    for (int sent = 0; sent < a.messages; sent += a.batch) {
        for (int i = 0; i < a.batch; i++) {
            r.outstanding++;
            if (rd_kafka_producev(
                    p, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(0),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY("key", 3),
                    RD_KAFKA_V_VALUE(const_cast<char *>(payload.data()), payload.size()),
                    RD_KAFKA_V_OPAQUE(&r), RD_KAFKA_V_END))
                die("produce", "queue full");
        }
        while (r.outstanding > 0) rd_kafka_poll(p, 50);  // the batch's reports
    }
    *pub = a.messages / secs_since(t0);
    *cpu_pub = (cpu_now() - c0) * 1e6 / a.messages;
    rd_kafka_destroy(p);

    const std::string group = topic + "-g";
    rd_kafka_t *c = client(RD_KAFKA_CONSUMER, a, group.c_str());
    rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(assign, topic.c_str(), 0)->offset = 0;  // a new topic
    rd_kafka_queue_t *q = rd_kafka_queue_get_partition(c, topic.c_str(), 0);
    rd_kafka_queue_forward(q, nullptr);
    rd_kafka_assign(c, assign);
    rd_kafka_topic_partition_list_destroy(assign);
    // As the backend does after its assign: learn the leader now rather than at the next topic
    // scan, so that neither side's first fetch waits for it.
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(c, topic.c_str(), nullptr);
    const rd_kafka_metadata_t *md = nullptr;
    if (rd_kafka_metadata(c, 0, rkt, &md, 10000)) die("metadata", "no answer within 10 s");
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    std::vector<rd_kafka_message_t *> msgs(static_cast<size_t>(a.batch));
    int batches = 0;
    c0 = cpu_now();
    t0 = std::chrono::steady_clock::now();
    for (int got = 0; got < a.messages;) {
        // As mq_group_poll: what is fetched already, else a short wait for the first.
        ssize_t n = rd_kafka_consume_batch_queue(q, 0, msgs.data(), msgs.size());
        for (int waited = 0; n <= 0 && waited < 10000; waited += 10)
            n = rd_kafka_consume_batch_queue(q, 10, msgs.data(), msgs.size());
        if (n <= 0) die("consume", "nothing within 10 s");
        if (batches == 0) *first_ms = secs_since(t0) * 1e3;
        batches++;
        const int64_t last = msgs[static_cast<size_t>(n - 1)]->offset;
        for (ssize_t i = 0; i < n; i++) rd_kafka_message_destroy(msgs[static_cast<size_t>(i)]);
        rd_kafka_topic_partition_list_t *commit = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(commit, topic.c_str(), 0)->offset = last + 1;
        if (rd_kafka_resp_err_t e = rd_kafka_commit(c, commit, 0))
            die("commit", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(commit);
        got += static_cast<int>(n);
    }
    *con = a.messages / secs_since(t0);
    *cpu_con = (cpu_now() - c0) * 1e6 / a.messages;
    std::printf("        librdkafka: %d messages per poll on average\n", a.messages / batches);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    mq_topic_delete(b, topic.c_str());
    mq_broker_free(b);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; i++) {
        auto num = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (!std::strcmp(argv[i], "--messages")) a.messages = num();
        else if (!std::strcmp(argv[i], "--batch")) a.batch = num();
        else if (!std::strcmp(argv[i], "--runs")) a.runs = num();
        else if (!std::strcmp(argv[i], "--size")) a.size = num();
        else if (!a.bootstrap && argv[i][0] != '-') a.bootstrap = argv[i];
        else
            die("usage",
                "mq_kafka_overhead BOOTSTRAP [--messages N] [--batch B] [--runs R] [--size BYTES]");
    }
    if (!a.bootstrap || a.messages <= 0 || a.batch <= 0 || a.runs <= 0 || a.messages % a.batch)
        die("usage", "BOOTSTRAP required; messages a positive multiple of batch");
    std::vector<double> mp, mc, rp, rc, mpc, mcc, rpc, rcc, mf, rf;
    for (int run = 0; run < a.runs; run++) {
        double p, c, pc, cc, f;
        const std::string tag = std::to_string(run) + "-" + std::to_string(getpid());
        run_mq(a, "bench-mq-" + tag, &p, &c, &pc, &cc, &f);
        mp.push_back(p), mc.push_back(c), mpc.push_back(pc), mcc.push_back(cc), mf.push_back(f);
        std::printf(
            "run %d  mq:          publish %9.0f msg/s %5.2f us CPU/msg   poll+ack %9.0f "
            "msg/s %5.2f us CPU/msg   first poll %5.0f ms\n",
            run, p, pc, c, cc, f);
        run_raw(a, "bench-raw-" + tag, &p, &c, &pc, &cc, &f);
        rp.push_back(p), rc.push_back(c), rpc.push_back(pc), rcc.push_back(cc), rf.push_back(f);
        std::printf(
            "run %d  librdkafka:  publish %9.0f msg/s %5.2f us CPU/msg   poll+ack %9.0f "
            "msg/s %5.2f us CPU/msg   first poll %5.0f ms\n",
            run, p, pc, c, cc, f);
        std::fflush(stdout);
    }
    std::printf("\nmedians of %d runs, %d messages of %d bytes in batches of %d:\n", a.runs,
                a.messages, a.size, a.batch);
    std::printf(
        "  publish   mq %9.0f msg/s  librdkafka %9.0f msg/s  rate mq/librdkafka %.2f   "
        "CPU/msg mq %.2f us, librdkafka %.2f us: overhead %+.0f%%\n",
        median(mp), median(rp), median(mp) / median(rp), median(mpc), median(rpc),
        (median(mpc) / median(rpc) - 1) * 100);
    std::printf(
        "  poll+ack  mq %9.0f msg/s  librdkafka %9.0f msg/s  rate mq/librdkafka %.2f   "
        "CPU/msg mq %.2f us, librdkafka %.2f us: overhead %+.0f%%\n",
        median(mc), median(rc), median(mc) / median(rc), median(mcc), median(rcc),
        (median(mcc) / median(rcc) - 1) * 100);
    std::printf("  first poll after the subscribe (or assign): mq %.0f ms, librdkafka %.0f ms\n",
                median(mf), median(rf));
    return 0;
}
