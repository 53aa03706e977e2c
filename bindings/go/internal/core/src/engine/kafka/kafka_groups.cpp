// Consumer groups on the Kafka backend: subscribe, poll, ack (a commit of offset + 1), nack,
// leases and seek. The rules are mq's (SPEC.md rules 5-9); where they live is here: Kafka keeps
// only the committed offset, so the in-flight messages, the lease, delivery counts and a
// delayed nack's pause are this broker's (docs/KAFKA.md says what that means across
// processes), and so is the decision to dead-letter a head that had its deliveries.
#include <chrono>
#include <cinttypes>
#include <cstring>

#include "util/cancel.h"
#include "util/clock.h"
#include "util/error.h"
#include "engine/kafka/kafka_backend.h"
#include "util/thread_scratch.h"
#include "util/names.h"

namespace mq::kafka {

KafkaGroup::~KafkaGroup() {
    // The partition queues hold references to the consumer: they go first.
    cursors.clear();
    if (consumer) {
        rd_kafka_consumer_close(consumer);
        destroy_client(consumer);
    }
}

mq_status KafkaBackend::subscribe(const char *topic, const char *group,
                                  const mq_group_options &opts) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    DeadLetterRule rule;
    if (opts.max_deliveries) {  // the boundary checked that the two options come together
        if (mq_status st = check_name(opts.dead_letter_topic, "topic"); st) return st;
        if (std::strcmp(opts.dead_letter_topic, topic) == 0) {
            return fail(MQ_ERR_INVALID, "topic %s cannot be its own dead-letter topic", topic);
        }
        std::shared_ptr<TopicMeta> dead;
        if (mq_status st = this->topic(opts.dead_letter_topic, &dead); st) return st;
        rule.max_deliveries = opts.max_deliveries;
        rule.topic = opts.dead_letter_topic;
    }
    {
        std::lock_guard g(mu_);
        for (const auto &grp : groups_[topic]) {
            if (grp->name == group) {
                return fail(MQ_ERR_EXISTS, "group %s is already subscribed to topic %s", group,
                            topic);
            }
        }
    }
    auto grp = std::make_shared<KafkaGroup>();
    grp->topic = topic;
    grp->name = group;
    grp->meta = meta;
    grp->dead_letter = std::move(rule);
    {
        std::lock_guard g(mu_);
        grp->ack_timeout_ns = meta->cfg.ack_timeout_ms * 1000000;
    }
    rd_kafka_conf_t *conf = settings_.conf({{"group.id", group},
                                            {"enable.auto.commit", "false"},
                                            {"enable.auto.offset.store", "false"},
                                            {"enable.partition.eof", "false"},
                                            // only when a committed offset left the log
                                            {"auto.offset.reset", "earliest"}});
    if (!conf) return MQ_ERR_INVALID;
    char err[512];
    grp->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!grp->consumer) {
        rd_kafka_conf_destroy(conf);
        return fail(MQ_ERR_INVALID, "kafka_config: %s", err);
    }
    // Where the group starts: what it committed (another process, an earlier run), else the
    // end (or the start) of each partition now, so a publish after this returns is seen.
    PartList start;
    for (int32_t p = 0; p < meta->partitions; p++) start.add(topic, p, RD_KAFKA_OFFSET_INVALID);
    if (rd_kafka_resp_err_t e = rd_kafka_committed(grp->consumer, start.list, kRequestMs)) {
        return fail_kafka(e, "read the committed offsets of group", group);
    }
    for (int32_t p = 0; p < meta->partitions; p++) {
        rd_kafka_topic_partition_t &tp = start.list->elems[p];
        if (tp.offset < 0) {
            int64_t lo = 0, hi = 0;
            if (mq_status st = watermarks(topic, p, &lo, &hi); st) return st;
            tp.offset = opts.start == MQ_START_EARLIEST ? lo : hi;
        }
        auto c = std::make_unique<KafkaCursor>();
        c->topic = topic;
        c->partition = p;
        c->committed = c->fetched_to = tp.offset;
        c->max_deliveries = grp->dead_letter.max_deliveries;
        // The partition's own queue, taken off the consumer's common one, before assign so
        // that no fetched message can land in the common queue.
        c->queue = rd_kafka_queue_get_partition(grp->consumer, topic, p);
        if (!c->queue) {
            return fail(MQ_ERR_INTERNAL, "no queue for partition %d of topic %s", p, topic);
        }
        rd_kafka_queue_forward(c->queue, nullptr);
        grp->cursors.push_back(std::move(c));
    }
    if (rd_kafka_resp_err_t e = rd_kafka_commit(grp->consumer, start.list, 0)) {
        return fail_kafka(e, "commit the start offsets of group", group);
    }
    if (rd_kafka_resp_err_t e = rd_kafka_assign(grp->consumer, start.list)) {
        return fail_kafka(e, "assign the partitions of", topic);
    }
    // A new consumer learns where the partitions' leaders are only at its next topic scan (up
    // to a second away) and fetches nothing until then: ask now, so that the first poll does
    // not wait for the scan. A failure, or no answer within the scan's interval, only leaves
    // it to the scan.
    if (rd_kafka_topic_t *rkt = rd_kafka_topic_new(grp->consumer, topic, nullptr)) {
        const rd_kafka_metadata_t *md = nullptr;
        if (!rd_kafka_metadata(grp->consumer, 0, rkt, &md, kTopicScanMs)) {
            rd_kafka_metadata_destroy(md);
        }
        rd_kafka_topic_destroy(rkt);
    }
    std::lock_guard g(mu_);
    auto &list = groups_[topic];
    for (const auto &other : list) {
        if (other->name == group) {
            return fail(MQ_ERR_EXISTS, "group %s is already subscribed to topic %s", group, topic);
        }
    }
    list.push_back(std::move(grp));
    note_group(topic, group);
    return MQ_OK;
}

mq_status KafkaBackend::unsubscribe(const char *topic, const char *group) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    std::shared_ptr<KafkaGroup> gone;
    bool members = false;
    {
        std::lock_guard g(mu_);
        auto &list = groups_[topic];
        for (auto it = list.begin(); it != list.end(); ++it) {
            if ((*it)->name == group) {
                gone = std::move(*it);
                list.erase(it);
                break;
            }
        }
        // This handle's members of the group are removed from it, as in the in-process log
        // (their calls are MQ_ERR_NO_GROUP, their push loops stop, they leave the Kafka group).
        const std::string prefix = std::string(topic) + '\n' + group + '\n';
        for (const auto &[key, member] : member_ids_) {
            if (key.compare(0, prefix.size(), prefix) == 0 &&
                member->remove(MemberCursors::Removal::unsubscribed)) {
                members = true;
            }
        }
        if (gone || members) {
            auto &names = group_order_[topic];
            names.erase(std::remove(names.begin(), names.end(), std::string(group)), names.end());
        }
    }
    if (!gone && !members) {
        return fail(MQ_ERR_NO_GROUP, "group %s is not subscribed to topic %s", group, topic);
    }
    if (gone) gone->gone.store(true, std::memory_order_release);
    return MQ_OK;
}

mq_status KafkaBackend::group(const char *topic, const char *group, int32_t partition,
                              std::shared_ptr<KafkaGroup> *out, KafkaCursor **c) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    {
        std::lock_guard g(mu_);
        auto it = groups_.find(topic);
        if (it != groups_.end()) {
            for (const auto &grp : it->second) {
                if (grp->name == group) *out = grp;
            }
        }
    }
    if (!*out) return fail(MQ_ERR_NO_GROUP, "group %s is not subscribed to topic %s", group, topic);
    if (partition < 0 || partition >= (*out)->meta->partitions) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range: topic %s has %d", partition,
                    topic, (*out)->meta->partitions);
    }
    *c = (*out)->cursors[static_cast<size_t>(partition)].get();
    return MQ_OK;
}

mq_status KafkaBackend::ack(const char *topic, const char *group, int32_t partition,
                            int64_t offset) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) return st;
    std::lock_guard l(c->mu);
    return ack_cursor(g->consumer, g->name, *c, offset);
}

mq_status KafkaBackend::poll(const char *topic, const char *group, int32_t partition,
                             const int64_t *ack, mq_message *out, size_t max, int64_t wait_ms,
                             mq_cancel *cancel, size_t *count, CopyOut *copy) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) return st;
    const bool forever = wait_ms == MQ_WAIT_FOREVER;
    const int64_t start = steady_now_ns();
    const int64_t deadline = start + (forever ? 0 : wait_ms * 1000000);
    const int64_t produced_to = g->meta->produced_to(partition);
    const int64_t local_deadline = start + int64_t{kCatchUpMs} * 1000000;
    std::unique_lock l(c->mu);
    if (ack) {
        if (mq_status st = ack_cursor(g->consumer, g->name, *c, *ack); st) return st;
    }
    std::vector<rd_kafka_message_t *> batch(max);
    int64_t catch_up_to = -1, catch_up_deadline = 0;
    bool tried_local = false;
    // Fetches outside the state lock (acks and info go on meanwhile), one fetch at a time;
    // true if it kept anything.
    auto fetch = [&](KafkaCursor &cur, std::vector<rd_kafka_message_t *> &buf, int timeout_ms) {
        const uint64_t epoch = cur.epoch;
        l.unlock();
        ssize_t got;
        {
            // A wait ends with the first message (a batch consume would wait to fill the
            // batch); then what else is there, without waiting.
            std::lock_guard f(cur.fetch_mu);
            got = 0;
            if (timeout_ms > 0) {
                if (rd_kafka_message_t *first = rd_kafka_consume_queue(cur.queue, timeout_ms)) {
                    buf[0] = first;
                    got = 1;
                }
            }
            if (timeout_ms == 0 || got == 1) {
                const ssize_t more = rd_kafka_consume_batch_queue(
                    cur.queue, 0, buf.data() + got, buf.size() - static_cast<size_t>(got));
                if (more > 0) got += more;
            }
        }
        l.lock();
        bool kept = false;
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = buf[static_cast<size_t>(i)];
            if (epoch != cur.epoch) rd_kafka_message_destroy(m);  // fetched before a seek
            else kept |= cur.take(m);
        }
        return kept;
    };
    for (;;) {
        if (closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
        if (g->gone.load(std::memory_order_acquire)) {
            return fail(MQ_ERR_NO_GROUP,
                        "group %s was unsubscribed from topic %s (or the topic "
                        "was deleted)",
                        group, topic);
        }
        if (cancel && cancel->is_triggered())
            return fail_fixed(MQ_CANCELLED, "the call was cancelled");
        const int64_t now = steady_now_ns();
        if (local_catch_up(*c, produced_to, max, now, local_deadline)) {
            tried_local = true;
            fetch(*c, batch, kSliceMs);
            continue;
        }
        bool due = false;
        if (size_t n = c->hand_out(out, max, now, g->ack_timeout_ns, &due, copy)) {
            *count = n;
            return MQ_OK;
        }
        if (copy && copy->too_large_need) {
            return fail_fixed(MQ_ERR_TOO_LARGE, "the buffer cannot hold the next message");
        }
        if (due) {
            // Produced with the state lock released (acks and info go on; other polls keep
            // away from the head), within this poll's wait; then the poll carries on.
            DueHead &head = thread_scratch<DueHead>();  // reused: its buffers keep their capacity
            c->begin_dead_letter(g->name, head);
            l.unlock();
            mq_status produced;
            try {
                produced = dead_letter(g->dead_letter, head, forever ? 0 : deadline, cancel);
            } catch (...) {  // out of memory: the head stays where it was
                l.lock();
                c->dead_lettering = false;
                throw;
            }
            l.lock();
            if (mq_status st =
                    finish_dead_letter(g->consumer, g->name, g->dead_letter, *c, head, produced);
                st) {
                return st;
            }
            continue;
        }
        const bool paused = c->paused(now);
        // First what the consumer has fetched already, without waiting.
        if (!paused && !tried_local) {
            tried_local = true;
            if (fetch(*c, batch, 0)) continue;
        }
        // What was published before this poll started is handed out by it, whatever the
        // wait (as in the in-process log): the cluster says where the log ends once, and the
        // poll fetches up to there before its own wait counts (bounded: kCatchUpMs).
        if (catch_up_to < 0 && !paused) {
            // The consumer's own idea of the end (from its last fetch) first: when it is ahead,
            // those messages are on their way and no request is needed.
            int64_t lo = 0, hi = -1;
            if (rd_kafka_get_watermark_offsets(g->consumer, topic, partition, &lo, &hi) ||
                hi <= c->fetched_to) {
                l.unlock();
                const mq_status st = watermarks(topic, partition, &lo, &hi);
                l.lock();
                if (st) return st;
            }
            catch_up_to = hi;
            catch_up_deadline = steady_now_ns() + int64_t{kCatchUpMs} * 1000000;
            continue;
        }
        const bool catching_up = !paused && c->fetched_to < catch_up_to && now < catch_up_deadline;
        const int64_t left_ms = forever || catching_up ? kSliceMs : (deadline - now) / 1000000;
        if (!forever && !catching_up && deadline <= now) {
            return fail_fixed(MQ_TIMEOUT, "nothing to hand out within the wait");
        }
        const int slice =
            static_cast<int>(std::min<int64_t>(kSliceMs, std::max<int64_t>(left_ms, 1)));
        if (paused) {
            l.unlock();
            std::this_thread::sleep_for(std::chrono::milliseconds(std::max(slice, 1)));
            l.lock();
            continue;
        }
        fetch(*c, batch, slice);
    }
}

mq_status KafkaBackend::nack(const char *topic, const char *group, int32_t partition,
                             int64_t delay_ms, int64_t unhandled_from) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) return st;
    std::lock_guard l(c->mu);
    c->nack(delay_ms, unhandled_from);
    return MQ_OK;
}

mq_status KafkaBackend::extend_lease(const char *topic, const char *group, int32_t partition) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) return st;
    std::lock_guard l(c->mu);
    return c->extend_lease(group, g->ack_timeout_ns);
}

mq_status KafkaBackend::seek(const char *topic, const char *group, int32_t partition,
                             int64_t offset) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) return st;
    int64_t lo = 0, hi = 0;
    if (mq_status st = watermarks(topic, partition, &lo, &hi); st) return st;
    if (offset == MQ_OFFSET_END) offset = hi;
    else if (offset == MQ_OFFSET_EARLIEST) offset = lo;
    else if (offset < lo || offset > hi) {
        if (lo == hi) {
            return fail(MQ_ERR_OUT_OF_RANGE,
                        "offset %" PRId64 " is outside the log: it is empty; seek to %" PRId64,
                        offset, hi);
        }
        return fail(MQ_ERR_OUT_OF_RANGE,
                    "offset %" PRId64 " is outside the retained log %" PRId64 "..%" PRId64, offset,
                    lo, hi);
    }
    std::lock_guard f(c->fetch_mu);  // no fetch in between: the next one reads from offset
    std::lock_guard l(c->mu);
    if (mq_status st = commit_offset(g->consumer, *c, offset); st) return st;
    PartList pl;
    pl.add(topic, partition, offset);
    if (rd_kafka_error_t *e = rd_kafka_seek_partitions(g->consumer, pl.list, kRequestMs)) {
        const mq_status st =
            fail(MQ_ERR_BACKEND, "seek on topic %s: %s", topic, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return st;
    }
    c->clear();
    c->epoch++;
    c->committed = c->fetched_to = offset;
    c->lease_deadline_ns = 0;
    c->paused_until_ns = 0;
    return MQ_OK;
}

mq_status KafkaBackend::group_info(const char *topic, const char *group, int32_t partition,
                                   mq_group_info &out) {
    std::shared_ptr<KafkaGroup> g;
    KafkaCursor *c;
    // A member of this handle that owns the partition holds the group's cursor there (a push
    // subscription of a subscribed group is one); else the subscription's own cursor.
    if (mq_status st = member_group_info(topic, group, partition, out, true);
        st != MQ_ERR_NO_GROUP) {
        return st;
    }
    if (mq_status st = this->group(topic, group, partition, &g, &c); st) {
        if (st != MQ_ERR_NO_GROUP) return st;
        return member_group_info(topic, group, partition, out, false);
    }
    int64_t lo = 0, hi = 0;
    if (mq_status st = watermarks(topic, partition, &lo, &hi); st) return st;
    std::lock_guard l(c->mu);
    out.committed = c->committed;
    out.next = c->next();
    out.lag = hi - c->committed;
    out.in_flight = out.next - out.committed;
    out.lost = c->lost_total;
    out.dead_lettered = c->dead_lettered;
    out.next_age_ns = -1;
    const int64_t now = steady_now_ns();
    out.paused_until_ns = c->paused_until_ns > now ? c->paused_until_ns : 0;
    return MQ_OK;
}

DeadLetterRule KafkaBackend::dead_letter_rule(const std::string &topic, const std::string &group) {
    std::lock_guard g(mu_);
    auto it = groups_.find(topic);
    if (it != groups_.end()) {
        for (const auto &grp : it->second) {
            if (grp->name == group) return grp->dead_letter;
        }
    }
    return {};
}

mq_status KafkaBackend::dead_letter(const DeadLetterRule &rule, const DueHead &head,
                                    int64_t deadline_ns, mq_cancel *cancel) {
    size_t published = 0;
    return produce(rule.topic.c_str(), &head.copy.record(), 1, dead_letter_deadline(deadline_ns),
                   cancel, nullptr, &published);
}

// The group's committed offset of a partition on the cluster (admin API); 0 if none or no
// answer (a group that committed nothing starts at the end: 0 is its lower bound).
int64_t KafkaBackend::committed_offset(const char *topic, const char *group, int32_t partition) {
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, partition);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_queue_t *q = rd_kafka_queue_new(producer_);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(producer_, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    char err[256];
    rd_kafka_AdminOptions_set_request_timeout(o, kRequestMs, err, sizeof err);
    rd_kafka_ListConsumerGroupOffsets(producer_, &req, 1, o, q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    int64_t offset = 0;
    if (rd_kafka_event_t *ev = rd_kafka_queue_poll(q, kRequestMs + 5000)) {
        size_t n = 0;
        const rd_kafka_group_result_t **groups = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
        if (n == 1) {
            const rd_kafka_topic_partition_list_t *got =
                rd_kafka_group_result_partitions(groups[0]);
            if (got && got->cnt == 1 && got->elems[0].offset >= 0) offset = got->elems[0].offset;
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    return offset;
}

// A group this handle did not subscribe but whose members (or push subscriptions) it runs:
// the member that owns the partition answers; if none does here, the group's committed offset
// on the cluster (next = committed: what other processes hold in flight is theirs).
mq_status KafkaBackend::member_group_info(const char *topic, const char *group, int32_t partition,
                                          mq_group_info &out, bool owner_only) {
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    if (partition < 0 || partition >= meta->partitions) {
        return fail(MQ_ERR_PARTITION, "partition %d is out of range: topic %s has %d", partition,
                    topic, meta->partitions);
    }
    const std::string prefix = std::string(topic) + '\n' + group + '\n';
    bool known = false, owned = false;
    {
        std::lock_guard l(mu_);
        for (const auto &[key, cursors] : member_ids_) {
            if (key.compare(0, prefix.size(), prefix) != 0) continue;
            known = true;
            if ((owned = cursors->cursor_info(partition, out))) break;
        }
    }
    if (!known || (owner_only && !owned)) {
        return fail(MQ_ERR_NO_GROUP, "group %s is not subscribed to topic %s", group, topic);
    }
    int64_t lo = 0, hi = 0;
    if (mq_status st = watermarks(topic, partition, &lo, &hi); st) return st;
    if (!owned) {
        // No member here owns it now: what the cluster has committed.
        out.committed = out.next = committed_offset(topic, group, partition);
        out.in_flight = 0;
        out.next_age_ns = -1;
    }
    out.lag = hi - out.committed;
    return MQ_OK;
}

}  // namespace mq::kafka
