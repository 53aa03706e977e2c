// The Kafka backend's broker and topics: opening the client, creating, deleting, listing and
// describing topics through Kafka's admin API and metadata.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <thread>

#include "util/error.h"
#include "engine/kafka/kafka_backend.h"

namespace mq {

mq_status make_kafka_backend(const mq_broker_options &opts, std::unique_ptr<Backend> *out) {
    return kafka::KafkaBackend::open(opts, out);
}

}  // namespace mq

namespace mq::kafka {

namespace {

// An admin request's result queue and options, released whichever way the call ends.
struct AdminCall {
    rd_kafka_queue_t *queue;
    rd_kafka_AdminOptions_t *options;
    rd_kafka_event_t *event = nullptr;
    AdminCall(rd_kafka_t *rk, rd_kafka_admin_op_t op)
        : queue(rd_kafka_queue_new(rk)), options(rd_kafka_AdminOptions_new(rk, op)) {
        char err[256];
        rd_kafka_AdminOptions_set_request_timeout(options, kRequestMs, err, sizeof err);
        rd_kafka_AdminOptions_set_operation_timeout(options, kRequestMs, err, sizeof err);
    }
    ~AdminCall() {
        if (event) rd_kafka_event_destroy(event);
        rd_kafka_AdminOptions_destroy(options);
        rd_kafka_queue_destroy(queue);
    }
    // The result event, or nullptr when the cluster did not answer in time.
    rd_kafka_event_t *wait() {
        event = rd_kafka_queue_poll(queue, kRequestMs + 5000);
        return event;
    }
};

// The cluster's metadata for every topic; nullptr with the message set.
const rd_kafka_metadata_t *all_metadata(rd_kafka_t *rk, mq_status *st) {
    const rd_kafka_metadata_t *md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &md, kRequestMs);
    if (err) {
        *st = fail(MQ_ERR_BACKEND, "the Kafka cluster did not give its metadata: %s",
                   rd_kafka_err2str(err));
        return nullptr;
    }
    return md;
}

}  // namespace

mq_status fail_kafka(rd_kafka_resp_err_t err, const char *what, const char *name) {
    switch (err) {
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
            return fail(MQ_ERR_NO_TOPIC, "%s: no topic %s on the Kafka cluster", what, name);
        case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
            return fail(MQ_ERR_EXISTS, "%s: topic %s already exists on the Kafka cluster", what,
                        name);
        case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
        case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
        case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
            return fail(MQ_ERR_INVALID, "%s %s: the Kafka cluster refused it: %s", what, name,
                        rd_kafka_err2str(err));
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
            return fail(MQ_ERR_TOO_LARGE, "%s %s: the Kafka cluster refused it: %s", what, name,
                        rd_kafka_err2str(err));
        default: return fail(MQ_ERR_BACKEND, "%s %s: %s", what, name, rd_kafka_err2str(err));
    }
}

mq_status Settings::parse(const char *bootstrap, const char *lines) {
    // Defaults that mq's semantics need: every publish waits for its own delivery report, so
    // lingering only adds latency (a batch is handed over at once and still goes in one
    // request); idempotence keeps per-key order through retries.
    pairs = {{"bootstrap.servers", bootstrap}};
    std::string text = lines ? lines : "";
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty()) continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos || eq == 0) {
            return fail(MQ_ERR_INVALID, "kafka_config line '%s' is not name=value", line.c_str());
        }
        pairs.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
    rd_kafka_conf_t *c = conf({});  // checks every name and value once, here
    if (!c) return MQ_ERR_INVALID;
    rd_kafka_conf_destroy(c);
    return MQ_OK;
}

rd_kafka_conf_t *Settings::conf(
    const std::vector<std::pair<std::string, std::string>> &extra) const {
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char err[512];
    for (const auto *list : {&pairs, &extra}) {
        for (const auto &[k, v] : *list) {
            if (rd_kafka_conf_set(c, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
                fail(MQ_ERR_INVALID, "kafka_config %s=%s: %s", k.c_str(), v.c_str(), err);
                rd_kafka_conf_destroy(c);
                return nullptr;
            }
        }
    }
    return c;
}

mq_status KafkaBackend::open(const mq_broker_options &opts, std::unique_ptr<Backend> *out) {
    if (opts.clock) {
        return fail(MQ_ERR_UNSUPPORTED,
                    "a clock cannot be set with kafka_bootstrap: on Kafka, message times are the "
                    "cluster's");
    }
    std::unique_ptr<KafkaBackend> k(new KafkaBackend());
    k->max_message_bytes_ = opts.max_message_bytes;
    if (mq_status st = k->settings_.parse(opts.kafka_bootstrap, opts.kafka_config); st) return st;
    // Ahead of the user's lines, which may change them.
    k->settings_.pairs.insert(k->settings_.pairs.begin() + 1,
                              {{"linger.ms", "0"}, {"enable.idempotence", "true"}});
    rd_kafka_conf_t *conf = k->settings_.conf({});
    k->settings_.pairs.erase(k->settings_.pairs.begin() + 1, k->settings_.pairs.begin() + 3);
    if (!conf) return MQ_ERR_INVALID;
    rd_kafka_conf_set_dr_msg_cb(
        conf, [](rd_kafka_t *, const rd_kafka_message_t *m, void *) { delivered(m); });
    char err[512];
    k->producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!k->producer_) {
        rd_kafka_conf_destroy(conf);
        return fail(MQ_ERR_INVALID, "kafka_config: %s", err);
    }
    k->service_ = std::thread([raw = k.get()] { raw->serve_producer(); });
    // Kafka clients connect lazily: ask once now so a wrong address fails here, not later.
    const rd_kafka_metadata_t *md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(k->producer_, 0, nullptr, &md, kRequestMs);
    if (e) {
        return fail(MQ_ERR_BACKEND, "no answer from the Kafka cluster at %s within %d ms: %s",
                    opts.kafka_bootstrap, kRequestMs, rd_kafka_err2str(e));
    }
    rd_kafka_metadata_destroy(md);
    *out = std::move(k);
    return MQ_OK;
}

void KafkaBackend::serve_producer() {
    while (!stop_.load(std::memory_order_acquire)) rd_kafka_poll(producer_, 50);
}

KafkaBackend::~KafkaBackend() {
    close();
    {
        std::lock_guard g(mu_);
        groups_.clear();  // consumers go first: they never depend on the producer
    }
    if (producer_) rd_kafka_flush(producer_, 2000);  // reports of publishes that timed out
    stop_.store(true, std::memory_order_release);
    if (service_.joinable()) service_.join();
    if (producer_) destroy_client(producer_);
}

void KafkaBackend::close() noexcept { closed_.store(true, std::memory_order_release); }

void destroy_client(rd_kafka_t *rk) noexcept {
    struct Done {
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
    };
    // Closed already, so no callback may run on the destroying thread after we return.
    constexpr int kFlags = RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE;
    try {
        auto d = std::make_shared<Done>();
        std::thread([rk, d] {
            rd_kafka_destroy_flags(rk, kFlags);
            std::lock_guard g(d->mu);
            d->done = true;
            d->cv.notify_all();
        }).detach();
        std::unique_lock l(d->mu);
        d->cv.wait_for(l, std::chrono::milliseconds(kDestroyMs), [&] { return d->done; });
    } catch (...) {  // no thread (out of memory or threads): destroy here, unbounded
        rd_kafka_destroy_flags(rk, kFlags);
    }
}

mq_status KafkaBackend::topic(const char *name, std::shared_ptr<TopicMeta> *out) {
    {
        std::lock_guard g(mu_);
        auto it = topics_.find(name);
        if (it != topics_.end()) {
            *out = it->second;
            return MQ_OK;
        }
    }
    mq_status st = MQ_OK;
    const rd_kafka_metadata_t *md = all_metadata(producer_, &st);
    if (!md) return st;
    int32_t parts = 0;
    for (int i = 0; i < md->topic_cnt; i++) {
        if (std::strcmp(md->topics[i].topic, name) == 0 && !md->topics[i].err) {
            parts = md->topics[i].partition_cnt;
        }
    }
    rd_kafka_metadata_destroy(md);
    if (parts == 0) return fail(MQ_ERR_NO_TOPIC, "no topic %s on the Kafka cluster", name);
    auto meta = std::make_shared<TopicMeta>(parts);
    mq_topic_config_init(&meta->cfg, sizeof meta->cfg);
    meta->cfg.partitions = parts;
    std::lock_guard g(mu_);
    *out = topics_.emplace(name, meta).first->second;
    return MQ_OK;
}

mq_status KafkaBackend::create_topic(const char *name, const mq_topic_config &cfg) {
    char err[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, cfg.partitions, -1, err, sizeof err);
    if (!nt) return fail(MQ_ERR_INVALID, "topic %s: %s", name, err);
    // The nearest Kafka settings (docs/KAFKA.md): age and byte budget become retention; the
    // message count and the ack timeout stay client-side.
    char num[32];
    if (cfg.max_age_ms) {
        std::snprintf(num, sizeof num, "%" PRId64, cfg.max_age_ms);
        rd_kafka_NewTopic_set_config(nt, "retention.ms", num);
    }
    if (cfg.max_bytes) {
        std::snprintf(num, sizeof num, "%" PRId64, cfg.max_bytes);
        rd_kafka_NewTopic_set_config(nt, "retention.bytes", num);
    }
    AdminCall call(producer_, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_CreateTopics(producer_, &nt, 1, call.options, call.queue);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_event_t *ev = call.wait();
    if (!ev) return fail(MQ_ERR_BACKEND, "create topic %s: no answer from the cluster", name);
    if (rd_kafka_event_error(ev)) return fail_kafka(rd_kafka_event_error(ev), "create topic", name);
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    if (n == 1 && rd_kafka_topic_result_error(res[0])) {
        return fail_kafka(rd_kafka_topic_result_error(res[0]), "create topic", name);
    }
    // The controller has it; wait until the metadata this client reads does too, so the next
    // publish finds every partition.
    const bool shown = await_metadata(name, [&](mq_status st, TopicMeta *meta) {
        if (st != MQ_OK || meta->partitions != cfg.partitions) return false;
        std::lock_guard g(mu_);
        meta->cfg = cfg;
        return true;
    });
    if (!shown) {
        return fail(MQ_ERR_BACKEND,
                    "topic %s was created but its metadata did not show it within %d ms", name,
                    kRequestMs);
    }
    return MQ_OK;
}

bool KafkaBackend::await_metadata(const char *name,
                                  const std::function<bool(mq_status, TopicMeta *)> &done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestMs);
    for (;;) {
        forget_topic(name);
        std::shared_ptr<TopicMeta> meta;
        const mq_status st = topic(name, &meta);
        if (done(st, meta.get())) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));  // polling the cluster
    }
}

void KafkaBackend::forget_topic(const std::string &name) {
    std::vector<std::shared_ptr<KafkaGroup>> gone;
    {
        std::lock_guard g(mu_);
        topics_.erase(name);
        group_order_.erase(name);
        auto it = groups_.find(name);
        if (it != groups_.end()) {
            gone = std::move(it->second);
            groups_.erase(it);
        }
    }
    for (auto &g : gone) g->gone.store(true, std::memory_order_release);
}

mq_status KafkaBackend::delete_topic(const char *name) {
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(name);
    AdminCall call(producer_, RD_KAFKA_ADMIN_OP_DELETETOPICS);
    rd_kafka_DeleteTopics(producer_, &dt, 1, call.options, call.queue);
    rd_kafka_DeleteTopic_destroy(dt);
    rd_kafka_event_t *ev = call.wait();
    if (!ev) return fail(MQ_ERR_BACKEND, "delete topic %s: no answer from the cluster", name);
    if (rd_kafka_event_error(ev)) return fail_kafka(rd_kafka_event_error(ev), "delete topic", name);
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
    if (n == 1 && rd_kafka_topic_result_error(res[0])) {
        return fail_kafka(rd_kafka_topic_result_error(res[0]), "delete topic", name);
    }
    {
        // This handle's members of the topic: their calls say so from now on (its groups are
        // marked gone by forget_topic, below).
        const std::string prefix = std::string(name) + '\n';
        std::lock_guard g(mu_);
        for (const auto &[key, member] : member_ids_) {
            if (key.compare(0, prefix.size(), prefix) == 0)
                member->remove(MemberCursors::Removal::topic_deleted);
        }
    }
    // As with creation: return once this client's metadata no longer shows it, so the name
    // is free (for a new topic) and gone (for every call) when this returns.
    const bool gone =
        await_metadata(name, [](mq_status st, TopicMeta *) { return st == MQ_ERR_NO_TOPIC; });
    forget_topic(name);
    if (!gone) {
        return fail(MQ_ERR_BACKEND,
                    "topic %s was deleted but the cluster's metadata still showed it after %d ms",
                    name, kRequestMs);
    }
    return MQ_OK;
}

mq_status KafkaBackend::topic_list(std::string &out) {
    mq_status st = MQ_OK;
    const rd_kafka_metadata_t *md = all_metadata(producer_, &st);
    if (!md) return st;
    std::vector<std::string> names;
    for (int i = 0; i < md->topic_cnt; i++) {
        // Kafka's internal topics (__consumer_offsets) are not the user's.
        if (!md->topics[i].err && std::strncmp(md->topics[i].topic, "__", 2) != 0) {
            names.emplace_back(md->topics[i].topic);
        }
    }
    rd_kafka_metadata_destroy(md);
    std::sort(names.begin(), names.end());  // Kafka keeps no creation order
    for (const auto &n : names) (out += n) += '\n';
    return MQ_OK;
}

mq_status KafkaBackend::group_list(const char *topic, std::string &out) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    // The groups this handle subscribed or joined (Kafka lists a cluster's groups, not a
    // topic's, and other processes' are not this handle's to list).
    std::lock_guard g(mu_);
    auto it = group_order_.find(topic);
    if (it != group_order_.end()) {
        for (const auto &n : it->second) (out += n) += '\n';
    }
    return MQ_OK;
}

mq_status KafkaBackend::topic_info(const char *topic, mq_topic_info &out) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    std::lock_guard g(mu_);
    out.partitions = meta->partitions;
    out.capacity = meta->cfg.capacity;
    out.max_bytes = meta->cfg.max_bytes;
    out.ack_timeout_ms = meta->cfg.ack_timeout_ms;
    out.retention = meta->cfg.retention;
    out.max_age_ms = meta->cfg.max_age_ms;
    return MQ_OK;
}

mq_status KafkaBackend::watermarks(const char *topic, int32_t partition, int64_t *lo, int64_t *hi) {
    return query_watermarks(producer_, topic, partition, lo, hi);
}

mq_status query_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo,
                           int64_t *hi) {
    // Right after a topic is created (or a leader moves) the partition's leader may not be
    // known yet: those answers are retried, within one request's time.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestMs);
    for (;;) {
        const rd_kafka_resp_err_t err =
            rd_kafka_query_watermark_offsets(rk, topic, partition, lo, hi, kRequestMs);
        if (!err) return MQ_OK;
        const bool transient = err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                               err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                               err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
        if (!transient || std::chrono::steady_clock::now() > deadline) {
            return fail_kafka(err, "read the offsets of", topic);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));  // polling the cluster
    }
}

mq_status KafkaBackend::partition_info(const char *topic, int32_t partition,
                                       mq_partition_info &out) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    if (partition < 0 || partition >= meta->partitions) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range: topic %s has %d", partition,
                    topic, meta->partitions);
    }
    int64_t lo = 0, hi = 0;
    if (mq_status st = watermarks(topic, partition, &lo, &hi); st) return st;
    out.start = lo;
    out.end = hi;
    out.capacity = meta->cfg.capacity;
    out.max_bytes = meta->cfg.max_bytes;
    out.retained_bytes = -1;  // Kafka does not say per partition cheaply
    out.oldest_timestamp_ns = -1;
    out.oldest_age_ns = -1;
    // The slowest group this broker knows.
    int64_t slowest = hi;
    {
        std::lock_guard g(mu_);
        auto it = groups_.find(topic);
        if (it != groups_.end()) {
            for (const auto &grp : it->second) {
                std::lock_guard c(grp->cursors[static_cast<size_t>(partition)]->mu);
                slowest =
                    std::min(slowest, grp->cursors[static_cast<size_t>(partition)]->committed);
            }
        }
    }
    out.backlog = hi - slowest;
    out.max_backlog = out.backlog;
    return MQ_OK;
}

mq_status KafkaBackend::describe(const char *topic, int32_t partition, std::string &out) {
    mq_partition_info info{};
    if (mq_status st = partition_info(topic, partition, info); st) return st;
    // The in-process log's format (SPEC.md), so the same line reads alike on both; the log's
    // start is Kafka's (its retention, not the groups' acks, trims it).
    char line[256];
    if (info.end > info.start) {
        std::snprintf(line, sizeof line,
                      "log %" PRId64 "..%" PRId64 ", backlog %" PRId64 "/%" PRId64, info.start,
                      info.end - 1, info.backlog, info.capacity);
    } else {
        std::snprintf(line, sizeof line, "log empty, next offset %" PRId64 ", backlog 0/%" PRId64,
                      info.end, info.capacity);
    }
    out = line;
    std::lock_guard g(mu_);
    auto it = groups_.find(topic);
    if (it == groups_.end()) return MQ_OK;
    for (const auto &grp : it->second) {
        KafkaCursor &c = *grp->cursors[static_cast<size_t>(partition)];
        std::lock_guard cl(c.mu);
        std::snprintf(line, sizeof line, "; %s %" PRId64 "/%" PRId64, grp->name.c_str(),
                      c.committed, c.next());
        out += line;
    }
    return MQ_OK;
}

}  // namespace mq::kafka
