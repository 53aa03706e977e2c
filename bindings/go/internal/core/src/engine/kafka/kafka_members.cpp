// Group members on the Kafka backend: Kafka's group protocol (join, rebalance, generations,
// fencing) through a librdkafka consumer subscribed to the topic.
//
// Each member has a service thread that keeps calling rd_kafka_consumer_poll: that is what
// heartbeats, takes part in rebalances and fetches, whatever the application does, so a member
// stays in the group while its process lives (and leaves it, through the session timeout, when
// the process dies). Fetched messages go to the member's cursor of their partition; mq_member_poll
// takes them from there under mq's rules (kafka_cursor.cpp).
//
// Generations: this member's count of the assignments it received (1 for its first), not
// Kafka's generation id (librdkafka does not expose it); a member call after a new one returns
// MQ_REBALANCED until the member fetches its assignment, as in the in-process log.
#include <chrono>
#include <condition_variable>
#include <map>

#include "util/error.h"
#include "engine/kafka/kafka_backend.h"
#include "util/thread_scratch.h"

namespace mq::kafka {

namespace {

// A partition whose fetched but not handed out messages pass this is paused until they fall
// below kResumeAt: a slow member holds a bounded amount of memory.
constexpr size_t kPauseAt = 4096;
constexpr size_t kResumeAt = 1024;

class KafkaMember final : public BackendMember, public MemberCursors {
public:
    KafkaMember(KafkaBackend &backend, std::string topic, std::string group, std::string id,
                int64_t ack_timeout_ns, DeadLetterRule dead_letter, const BackendJoin &opts,
                const Settings &settings, std::string registry_key, std::shared_ptr<TopicMeta> meta)
        : backend_(backend),
          meta_(std::move(meta)),
          topic_(std::move(topic)),
          group_(std::move(group)),
          id_(std::move(id)),
          ack_timeout_ns_(ack_timeout_ns),
          dead_letter_(std::move(dead_letter)),
          on_rebalance_(opts.on_rebalance),
          on_rebalance_user_(opts.on_rebalance_user),
          handle_(opts.handle),
          settings_(settings),
          session_timeout_ms_(opts.session_timeout_ms),
          registry_key_(std::move(registry_key)) {}

    ~KafkaMember() override { close(); }

    mq_status begin() override;
    bool in_own_callback() const noexcept override {
        return std::this_thread::get_id() == service_id_.load();
    }
    void close() noexcept override;
    mq_status assignment(int64_t *generation, std::vector<int32_t> &out) override;
    mq_status poll(const int32_t *ack_partition, const int64_t *ack_offset, mq_message *out,
                   size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count,
                   CopyOut *copy = nullptr) override;
    mq_status ack(int32_t partition, int64_t offset) override;
    mq_status nack(int32_t partition, int64_t delay_ms, int64_t unhandled_from) override;
    mq_status extend_lease(int32_t partition) override;
    bool cursor_info(int32_t partition, mq_group_info &out) override {
        std::lock_guard l(mu_);
        auto it = cursors_.find(partition);
        if (it == cursors_.end()) return false;
        const KafkaCursor &c = *it->second;
        out.committed = c.committed;
        out.next = c.next();
        out.in_flight = out.next - out.committed;
        out.lost = c.lost_total;
        out.dead_lettered = c.dead_lettered;
        out.next_age_ns = -1;
        const int64_t now = steady_now_ns();
        out.paused_until_ns = c.paused_until_ns > now ? c.paused_until_ns : 0;
        return true;
    }

    bool remove(Removal why) noexcept override {
        int none = 0;
        return removed_.compare_exchange_strong(none, static_cast<int>(why),
                                                std::memory_order_acq_rel);
    }
    bool topic_deleted() const noexcept override {
        return removed_.load(std::memory_order_acquire) == static_cast<int>(Removal::topic_deleted);
    }

    // With the in-process log's words: MQ_ERR_NO_TOPIC once this handle deleted the topic,
    // MQ_ERR_NO_GROUP once it unsubscribed the group.
    mq_status check_removed() const override {
        switch (static_cast<Removal>(removed_.load(std::memory_order_acquire))) {
            case Removal::topic_deleted:
                return fail(MQ_ERR_NO_TOPIC,
                            "topic %s of member %s was deleted; close the member (a topic created "
                            "anew under that name is a new topic: join it again)",
                            topic_.c_str(), id_.c_str());
            case Removal::unsubscribed:
                return fail(MQ_ERR_NO_GROUP,
                            "group %s is no longer subscribed to topic %s; close member %s "
                            "(subscribe the group again and join anew to go on)",
                            group_.c_str(), topic_.c_str(), id_.c_str());
        }
        return MQ_OK;
    }

private:
    static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *parts, void *opaque);
    void assigned(rd_kafka_topic_partition_list_t *parts);
    void revoked(rd_kafka_topic_partition_list_t *parts);
    void serve();
    // With mu_ held: MQ_OK and *c for a partition this member owns in the generation it fetched.
    mq_status owned(int32_t partition, KafkaCursor **c);
    void resume_if_drained(KafkaCursor &c);
    // With l (mu_) held on entry and return: moves the due head of c to the dead-letter
    // topic, releasing mu_ meanwhile.
    mq_status dead_letter(KafkaCursor &c, std::unique_lock<std::mutex> &l, int64_t deadline_ns,
                          mq_cancel *cancel);

    KafkaBackend &backend_;
    const std::shared_ptr<TopicMeta> meta_;  // the topic as this handle knew it at the join
    const std::string topic_, group_, id_;
    const int64_t ack_timeout_ns_;
    const DeadLetterRule dead_letter_;  // the group's, when this handle subscribed it
    const mq_rebalance_fn on_rebalance_;
    void *const on_rebalance_user_;
    mq_member *const handle_;
    const Settings settings_;
    const int64_t session_timeout_ms_;
    const std::string registry_key_;  // in the backend's member_ids_ until the member closes
    rd_kafka_t *consumer_ = nullptr;
    std::thread service_;
    std::atomic<std::thread::id> service_id_{};
    std::atomic<bool> stop_{false};
    std::atomic<bool> closing_{false};
    std::atomic<int> removed_{0};  // a Removal, once removed
    bool left_ = false;            // the service thread's: it left the Kafka group

    std::mutex mu_;  // everything below
    std::condition_variable cv_;
    std::map<int32_t, std::unique_ptr<KafkaCursor>> cursors_;  // the partitions it owns
    // Cursors of partitions taken away: their views stay valid until the member's next call.
    std::vector<std::unique_ptr<KafkaCursor>> retired_;
    std::map<int32_t, bool> fetch_paused_;
    int64_t generation_ = 0;  // assignments received
    int64_t seen_ = 0;        // the generation the member last fetched
    uint32_t rotate_ = 0;     // where the next poll starts, for fairness
    std::string failure_;     // set when Kafka removed the member for good
    std::string join_error_;  // a refusal of the group's coordinator before the first assignment
};

namespace {
// JoinGroup errors that retrying cannot cure: librdkafka reports them as consumer errors and
// keeps retrying the join, so a member waiting for its first assignment would wait out its whole
// deadline (as long as the session timeout) for nothing.
bool refuses_the_join(rd_kafka_resp_err_t e) {
    switch (e) {
        case RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT:
        case RD_KAFKA_RESP_ERR_INCONSISTENT_GROUP_PROTOCOL:
        case RD_KAFKA_RESP_ERR_INVALID_GROUP_ID:
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_GROUP_MAX_SIZE_REACHED: return true;
        default: return false;
    }
}
}  // namespace

mq_status KafkaMember::begin() {
    const Settings &settings = settings_;
    const int64_t session_timeout_ms = session_timeout_ms_;
    const std::string session = std::to_string(session_timeout_ms);
    const std::string heartbeat = std::to_string(std::max<int64_t>(session_timeout_ms / 3, 100));
    // librdkafka refuses a session timeout above max.poll.interval.ms (5 min by default); the
    // service thread polls all the time, so that interval only has to let the session through.
    const std::string max_poll =
        std::to_string(std::min<int64_t>(std::max<int64_t>(session_timeout_ms, 300000), 86400000));
    rd_kafka_conf_t *conf = settings.conf({{"group.id", group_},
                                           {"client.id", id_},
                                           {"enable.auto.commit", "false"},
                                           {"enable.auto.offset.store", "false"},
                                           {"enable.partition.eof", "false"},
                                           {"auto.offset.reset", "earliest"},
                                           {"session.timeout.ms", session},
                                           {"heartbeat.interval.ms", heartbeat},
                                           {"max.poll.interval.ms", max_poll},
                                           {"partition.assignment.strategy", "roundrobin"}});
    if (!conf) return MQ_ERR_INVALID;
    rd_kafka_conf_set_rebalance_cb(conf, &KafkaMember::rebalance_cb);
    rd_kafka_conf_set_opaque(conf, this);
    char err[512];
    consumer_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!consumer_) {
        rd_kafka_conf_destroy(conf);
        return fail(MQ_ERR_INVALID, "kafka_config: %s", err);
    }
    rd_kafka_poll_set_consumer(consumer_);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic_.c_str(), RD_KAFKA_PARTITION_UA);
    const rd_kafka_resp_err_t e = rd_kafka_subscribe(consumer_, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e) return fail_kafka(e, "join a group on", topic_.c_str());
    service_ = std::thread([this] { serve(); });
    // mq_member_join returns once the member is in the group with its first assignment.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(session_timeout_ms + kRequestMs);
    std::unique_lock l(mu_);
    while (generation_ == 0) {
        if (backend_.closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
        if (!join_error_.empty()) {
            return fail(MQ_ERR_BACKEND, "group %s on topic %s: the cluster refused the join: %s",
                        group_.c_str(), topic_.c_str(), join_error_.c_str());
        }
        if (cv_.wait_until(l, deadline) == std::cv_status::timeout && generation_ == 0) {
            return fail(MQ_ERR_BACKEND,
                        "group %s on topic %s did not finish its rebalance within %lld ms",
                        group_.c_str(), topic_.c_str(),
                        static_cast<long long>(session_timeout_ms + kRequestMs));
        }
    }
    seen_ = generation_;
    return MQ_OK;
}

void KafkaMember::close() noexcept {
    if (closing_.exchange(true)) return;
    backend_.forget_member(registry_key_);
    stop_.store(true, std::memory_order_release);
    if (service_.joinable()) service_.join();
    if (consumer_) {
        rd_kafka_consumer_close(consumer_);  // leaves the group: the others rebalance now
        {
            std::lock_guard l(mu_);
            cursors_.clear();
            retired_.clear();
        }
        destroy_client(consumer_);
        consumer_ = nullptr;
    }
}

void KafkaMember::serve() {
    service_id_.store(std::this_thread::get_id());
    while (!stop_.load(std::memory_order_acquire)) {
        if (!left_ &&
            removed_.load(std::memory_order_acquire) == static_cast<int>(Removal::unsubscribed)) {
            // Removed from the group: its partitions go to the group's other members (other
            // processes'), as a removed member's do in the in-process log.
            left_ = true;
            rd_kafka_unsubscribe(consumer_);
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer_, 50);
        if (!m) continue;
        if (m->err) {
            if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
                std::lock_guard l(mu_);
                failure_ = rd_kafka_message_errstr(m);
            } else if (refuses_the_join(m->err)) {
                {
                    std::lock_guard l(mu_);
                    if (generation_ == 0) join_error_ = rd_kafka_message_errstr(m);
                }
                cv_.notify_all();
            }
            rd_kafka_message_destroy(m);
            continue;
        }
        bool pause = false;
        {
            std::lock_guard l(mu_);
            auto it = cursors_.find(m->partition);
            if (it == cursors_.end()) {
                rd_kafka_message_destroy(m);  // a partition revoked meanwhile
                continue;
            }
            KafkaCursor &c = *it->second;
            c.take(m);
            if (c.held.size() - c.next_idx >= kPauseAt && !fetch_paused_[c.partition]) {
                fetch_paused_[c.partition] = pause = true;
            }
            if (pause) {
                PartList pl;
                pl.add(topic_, c.partition, RD_KAFKA_OFFSET_INVALID);
                rd_kafka_pause_partitions(consumer_, pl.list);
            }
        }
        cv_.notify_all();
    }
}

void KafkaMember::resume_if_drained(KafkaCursor &c) {
    auto it = fetch_paused_.find(c.partition);
    if (it == fetch_paused_.end() || !it->second || c.held.size() - c.next_idx > kResumeAt) return;
    it->second = false;
    PartList pl;
    pl.add(topic_, c.partition, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resume_partitions(consumer_, pl.list);
}

void KafkaMember::rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t *parts, void *opaque) {
    auto *self = static_cast<KafkaMember *>(opaque);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        self->assigned(parts);
    } else {
        self->revoked(parts);
        rd_kafka_assign(rk, nullptr);
    }
}

void KafkaMember::assigned(rd_kafka_topic_partition_list_t *parts) {
    // Where each partition starts: the group's committed offset, else the end of the log now
    // (committed at once, so that an owner after this one starts there too).
    rd_kafka_committed(consumer_, parts, kRequestMs);
    bool commit = false;
    for (int i = 0; i < parts->cnt; i++) {
        rd_kafka_topic_partition_t &tp = parts->elems[i];
        if (tp.offset < 0) {
            int64_t lo = 0, hi = 0;
            if (query_watermarks(consumer_, topic_.c_str(), tp.partition, &lo, &hi) != MQ_OK) {
                hi = RD_KAFKA_OFFSET_END;  // the consumer resolves it (later, racing publishes)
            }
            tp.offset = hi;
            commit = true;
        }
    }
    if (commit) rd_kafka_commit(consumer_, parts, 0);
    rd_kafka_assign(consumer_, parts);
    int64_t generation;
    {
        std::lock_guard l(mu_);
        for (auto &[p, c] : cursors_) retired_.push_back(std::move(c));
        cursors_.clear();
        fetch_paused_.clear();
        for (int i = 0; i < parts->cnt; i++) {
            auto c = std::make_unique<KafkaCursor>();
            c->topic = topic_;
            c->partition = parts->elems[i].partition;
            c->committed = c->fetched_to = parts->elems[i].offset;
            c->max_deliveries = dead_letter_.max_deliveries;
            cursors_.emplace(c->partition, std::move(c));
        }
        generation = ++generation_;
    }
    cv_.notify_all();
    // No lock held: the callback may call into mq (mq.h). None once the member's topic or group
    // is gone through this handle (mq.h), though a rebalance may come before it leaves.
    if (on_rebalance_ && !closing_.load() && removed_.load(std::memory_order_acquire) == 0) {
        on_rebalance_(on_rebalance_user_, handle_, generation);
    }
}

void KafkaMember::revoked(rd_kafka_topic_partition_list_t *) {
    // What was handed out and not acked goes to the next owner from the committed offset.
    {
        std::lock_guard l(mu_);
        for (auto &[p, c] : cursors_) retired_.push_back(std::move(c));
        cursors_.clear();
        fetch_paused_.clear();
    }
    cv_.notify_all();
}

mq_status KafkaMember::owned(int32_t partition, KafkaCursor **c) {
    retired_.clear();  // this is the member's next call
    // In the in-process log's order: the topic, then the range (below 0: the boundary's).
    if (mq_status st = check_removed(); st) return st;
    if (partition >= meta_->partitions) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range for topic %s (0..%d)",
                    partition, topic_.c_str(), meta_->partitions - 1);
    }
    if (!failure_.empty()) {
        return fail(MQ_ERR_FENCED, "member %s was removed from group %s: %s", id_.c_str(),
                    group_.c_str(), failure_.c_str());
    }
    if (seen_ != generation_) {
        return fail(MQ_REBALANCED,
                    "group %s rebalanced (generation %lld); fetch the assignment and carry on",
                    group_.c_str(), static_cast<long long>(generation_));
    }
    auto it = cursors_.find(partition);
    if (it == cursors_.end()) {
        return fail(MQ_ERR_FENCED, "member %s does not own partition %d of %s in generation %lld",
                    id_.c_str(), partition, topic_.c_str(), static_cast<long long>(generation_));
    }
    *c = it->second.get();
    return MQ_OK;
}

mq_status KafkaMember::assignment(int64_t *generation, std::vector<int32_t> &out) {
    std::lock_guard l(mu_);
    retired_.clear();
    if (mq_status st = check_removed(); st) return st;
    if (!failure_.empty()) {
        return fail(MQ_ERR_FENCED, "member %s was removed from group %s: %s", id_.c_str(),
                    group_.c_str(), failure_.c_str());
    }
    if (seen_ != generation_) {
        // Acks were refused meanwhile (MQ_REBALANCED): hand the kept in-flight ones out again.
        for (auto &[p, c] : cursors_) c->next_idx = 0;
        seen_ = generation_;
    }
    *generation = generation_;
    for (const auto &[p, c] : cursors_) out.push_back(p);
    return MQ_OK;
}

// Where this handle's records of partition p ended when the poll began (0: not owned then).
int64_t produced_before(const std::vector<std::pair<int32_t, int64_t>> &ends, int32_t p) {
    for (const auto &[part, end] : ends) {
        if (part == p) return end;
    }
    return 0;
}

mq_status KafkaMember::poll(const int32_t *ack_partition, const int64_t *ack_offset,
                            mq_message *out, size_t max, int64_t wait_ms, mq_cancel *cancel,
                            size_t *count, CopyOut *copy) {
    const bool forever = wait_ms == MQ_WAIT_FOREVER;
    const int64_t start = steady_now_ns();
    const int64_t deadline = start + (forever ? 0 : wait_ms * 1000000);
    const int64_t local_deadline = start + int64_t{kCatchUpMs} * 1000000;
    std::map<int32_t, int64_t> targets;  // where each partition ended when the poll began
    // Where this handle's own records of each owned partition ended when the poll began.
    std::vector<std::pair<int32_t, int64_t>> produced_to;
    bool caught_up_read = false;
    int64_t catch_up_deadline = 0;
    std::unique_lock l(mu_);
    retired_.clear();
    if (ack_partition) {
        KafkaCursor *c;
        if (mq_status st = owned(*ack_partition, &c); st) return st;
        if (mq_status st = ack_cursor(consumer_, group_, *c, *ack_offset); st) return st;
    }
    produced_to.reserve(cursors_.size());
    for (const auto &[p, c] : cursors_) produced_to.emplace_back(p, meta_->produced_to(p));
    for (;;) {
        if (backend_.closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
        if (mq_status st = check_removed(); st) return st;  // a waiting poll wakes with it too
        if (cancel && cancel->is_triggered()) {
            return fail_fixed(MQ_CANCELLED, "the call was cancelled");
        }
        if (!failure_.empty()) {
            return fail(MQ_ERR_FENCED, "member %s was removed from group %s: %s", id_.c_str(),
                        group_.c_str(), failure_.c_str());
        }
        if (seen_ != generation_) {
            return fail(MQ_REBALANCED,
                        "group %s rebalanced (generation %lld); fetch the assignment",
                        group_.c_str(), static_cast<long long>(generation_));
        }
        const int64_t now = steady_now_ns();
        KafkaCursor *due = nullptr;
        bool local_behind = false;  // a cursor waits for records of this handle on their way
        if (!cursors_.empty()) {
            const size_t n = cursors_.size();
            auto it = cursors_.begin();
            std::advance(it, rotate_ % n);
            for (size_t i = 0; i < n && !due; i++, ++it) {
                if (it == cursors_.end()) it = cursors_.begin();
                KafkaCursor &c = *it->second;
                if (!fetch_paused_[c.partition] &&
                    local_catch_up(c, produced_before(produced_to, c.partition), max, now,
                                   local_deadline)) {
                    local_behind = true;
                    continue;
                }
                bool head_due = false;
                if (size_t got = c.hand_out(out, max, now, ack_timeout_ns_, &head_due, copy)) {
                    rotate_++;
                    resume_if_drained(c);
                    *count = got;
                    return MQ_OK;
                }
                if (copy && copy->too_large_need) {
                    return fail_fixed(MQ_ERR_TOO_LARGE, "the buffer cannot hold the next message");
                }
                if (head_due) due = &c;
            }
        }
        if (due) {
            if (mq_status st = dead_letter(*due, l, forever ? 0 : deadline, cancel); st) return st;
            continue;  // then hand out what comes after it, in this same call
        }
        // As a group poll does: what was published before this poll started is handed out by
        // it, whatever the wait; the cluster says once where each owned partition ends.
        if (!caught_up_read) {
            caught_up_read = true;
            std::vector<int32_t> parts;
            for (const auto &[p, c] : cursors_) parts.push_back(p);
            l.unlock();
            for (int32_t p : parts) {
                int64_t lo = 0, hi = 0;
                if (query_watermarks(consumer_, topic_.c_str(), p, &lo, &hi) == MQ_OK) {
                    targets.emplace(p, hi);
                }
            }
            l.lock();
            catch_up_deadline = steady_now_ns() + int64_t{kCatchUpMs} * 1000000;
            continue;
        }
        bool catching_up = local_behind;
        if (now < catch_up_deadline) {
            for (const auto &[p, c] : cursors_) {
                auto t = targets.find(p);
                if (t != targets.end() && c->fetched_to < t->second && !c->paused(now)) {
                    catching_up = true;
                }
            }
        }
        if (!forever && !catching_up && now >= deadline) {
            return fail_fixed(MQ_TIMEOUT, "nothing to hand out within the wait");
        }
        // Slices: close, cancel, leases and nack pauses are noticed within one.
        const int64_t left = forever || catching_up
                                 ? kSliceMs
                                 : std::min<int64_t>(kSliceMs, (deadline - now) / 1000000 + 1);
        cv_.wait_for(l, std::chrono::milliseconds(left));
    }
}

mq_status KafkaMember::dead_letter(KafkaCursor &c, std::unique_lock<std::mutex> &l,
                                   int64_t deadline_ns, mq_cancel *cancel) {
    DueHead &head = thread_scratch<DueHead>();  // reused: its buffers keep their capacity
    c.begin_dead_letter(group_, head);
    const int32_t partition = c.partition;
    const int64_t generation = generation_;
    l.unlock();  // the service thread fetches and rebalances meanwhile
    mq_status produced;
    try {
        produced = backend_.dead_letter(dead_letter_, head, deadline_ns, cancel);
    } catch (...) {  // out of memory: the head stays where it was
        l.lock();
        if (generation_ == generation) {
            if (auto it = cursors_.find(partition); it != cursors_.end()) {
                it->second->dead_lettering = false;
            }
        }
        throw;
    }
    l.lock();
    // The same generation and the partition still here: the same cursor. Otherwise the
    // partition moved while the dead letter went out: its next owner starts from the committed
    // offset and counts afresh (the copy may then go out again: at-least-once).
    auto it = cursors_.find(partition);
    if (generation_ != generation || it == cursors_.end()) return produced ? produced : MQ_OK;
    return finish_dead_letter(consumer_, group_, dead_letter_, *it->second, head, produced);
}

mq_status KafkaMember::ack(int32_t partition, int64_t offset) {
    std::lock_guard l(mu_);
    KafkaCursor *c;
    if (mq_status st = owned(partition, &c); st) return st;
    return ack_cursor(consumer_, group_, *c, offset);
}

mq_status KafkaMember::nack(int32_t partition, int64_t delay_ms, int64_t unhandled_from) {
    std::lock_guard l(mu_);
    KafkaCursor *c;
    if (mq_status st = owned(partition, &c); st) return st;
    c->nack(delay_ms, unhandled_from);
    return MQ_OK;
}

mq_status KafkaMember::extend_lease(int32_t partition) {
    std::lock_guard l(mu_);
    KafkaCursor *c;
    if (mq_status st = owned(partition, &c); st) return st;
    return c->extend_lease(group_, ack_timeout_ns_);
}

}  // namespace

mq_status KafkaBackend::join(const char *topic, const char *group, const BackendJoin &opts,
                             std::string *member_id, std::unique_ptr<BackendMember> *out) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    int64_t ack_timeout_ns;
    {
        std::lock_guard g(mu_);
        ack_timeout_ns = meta->cfg.ack_timeout_ms * 1000000;
    }
    if (mq_status st = claim(topic, group, {}); st) return st;  // a partition list owns some
    static std::atomic<uint64_t> next_id{1};
    *member_id = opts.member_id ? std::string(opts.member_id)
                                : std::string(group) + "-" + std::to_string(next_id++);
    // Within this broker handle, as in the in-process log; across processes Kafka's own member
    // ids tell members apart.
    const std::string key = std::string(topic) + '\n' + group + '\n' + *member_id;
    {
        std::lock_guard g(mu_);
        if (std::find_if(member_ids_.begin(), member_ids_.end(),
                         [&](const auto &e) { return e.first == key; }) != member_ids_.end()) {
            return fail(MQ_ERR_EXISTS, "member %s is already in group %s", member_id->c_str(),
                        group);
        }
    }
    auto m =
        std::make_unique<KafkaMember>(*this, topic, group, *member_id, ack_timeout_ns,
                                      dead_letter_rule(topic, group), opts, settings_, key, meta);
    {
        std::lock_guard g(mu_);
        member_ids_.emplace_back(key, m.get());
        note_group(topic, group);
    }
    *out = std::move(m);
    return MQ_OK;
}

}  // namespace mq::kafka
