// mq's cursor rules on the Kafka backend, for one group's partition, shared by group polls and
// members: what a poll hands out (lease, redelivery, delivery counts, a nack's pause), when the
// head goes to the dead-letter topic instead and what happens to the group after it, what an
// ack accepts and commits. SPEC.md rules 5-9; Kafka keeps only the committed offset.
#include <charconv>
#include <cinttypes>
#include <cstring>
#include <string_view>

#include "util/error.h"
#include "engine/kafka/kafka_backend.h"

namespace mq::kafka {

PartList::PartList() : list(rd_kafka_topic_partition_list_new(1)) {}
PartList::~PartList() { rd_kafka_topic_partition_list_destroy(list); }
rd_kafka_topic_partition_t *PartList::add(const std::string &topic, int32_t p, int64_t offset) {
    rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
    tp->offset = offset;
    return tp;
}

namespace {

void fill_view(const Held &h, mq_message &m) {
    const rd_kafka_message_t *k = h.msg;
    m = mq_message{};
    m.partition = k->partition;
    m.offset = k->offset;
    m.delivery_count = h.deliveries;
    m.key = k->key;
    m.key_len = k->key ? k->key_len : 0;
    static const char empty = 0;
    m.payload = k->payload ? k->payload : &empty;
    m.payload_len = k->payload ? k->len : 0;
    if (h.rare) {
        m.headers = h.rare->headers.empty() ? nullptr : h.rare->headers.data();
        m.header_count = h.rare->headers.size();
        m.dead_letter = h.rare->is_dead_letter ? &h.rare->origin : nullptr;
    }
    rd_kafka_timestamp_type_t type;
    const int64_t ms = rd_kafka_message_timestamp(k, &type);
    m.timestamp_ns = ms >= 0 ? ms * 1000000 : 0;  // Kafka's time of the record, in ns
    m.lost = h.lost;
}

template <class T>
bool parse_number(std::string_view s, T &out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

// A dead letter carries its origin as its last five headers (dead_letter.cpp writes them, in
// both engines): read back, they give the view its mq_dead_letter, as the in-process log's
// dead letters have one. Anything else that merely looks like them is left alone.
void read_origin(HeldRare &h) {
    static constexpr std::string_view kNames[] = {
        MQ_HEADER_DEAD_LETTER_TOPIC, MQ_HEADER_DEAD_LETTER_GROUP, MQ_HEADER_DEAD_LETTER_PARTITION,
        MQ_HEADER_DEAD_LETTER_OFFSET, MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT};
    constexpr size_t n = sizeof kNames / sizeof kNames[0];
    if (h.headers.size() < n) return;
    const mq_header *o = h.headers.data() + (h.headers.size() - n);
    std::string_view v[n];
    for (size_t i = 0; i < n; i++) {
        if (std::string_view(static_cast<const char *>(o[i].name), o[i].name_len) != kNames[i])
            return;
        v[i] = std::string_view(o[i].value_len ? static_cast<const char *>(o[i].value) : "",
                                o[i].value_len);
    }
    mq_dead_letter d{};
    if (!parse_number(v[2], d.partition) || !parse_number(v[3], d.offset) ||
        !parse_number(v[4], d.delivery_count)) {
        return;
    }
    h.origin_topic.assign(v[0]);
    h.origin_group.assign(v[1]);
    h.origin = d;
    h.origin.topic = h.origin_topic.c_str();
    h.origin.group = h.origin_group.c_str();
    h.is_dead_letter = true;
}

}  // namespace

bool KafkaCursor::take(rd_kafka_message_t *m) {
    if (m->err || m->offset < fetched_to) {  // an error event, or a refetch after a seek
        rd_kafka_message_destroy(m);
        return false;
    }
    Held h;
    h.msg = m;
    rd_kafka_headers_t *hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR && hdrs) {
        h.rare = std::make_unique<HeldRare>();
        const char *name;
        const void *value;
        size_t size;
        for (size_t i = 0;
             rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
             i++) {
            h.rare->headers.push_back(mq_header{name, std::strlen(name), value, value ? size : 0});
        }
        read_origin(*h.rare);
    }
    h.lost = m->offset - fetched_to;  // offsets that left the log before we read them
    lost_total += h.lost;
    fetched_to = m->offset + 1;
    held.push_back(std::move(h));  // views point into rare, which stays put when h moves
    return true;
}

size_t KafkaCursor::hand_out(mq_message *out, size_t max, int64_t now, int64_t ack_timeout_ns,
                             bool *due, CopyOut *copy) {
    *due = false;
    if (next_idx && lease_deadline_ns && now >= lease_deadline_ns) {
        next_idx = 0;  // the lease ran out: hand the in-flight messages out again
    }
    if (paused(now)) return 0;
    paused_until_ns = 0;
    if (next_idx == 0) {
        if (dead_lettering) return 0;  // another poll is moving the head
        // The head has had its deliveries: it goes to the dead-letter topic, not out again
        // (mq.h, mq_group_options.max_deliveries).
        if (max_deliveries && !held.empty() && held.front().deliveries >= max_deliveries) {
            *due = true;
            return 0;
        }
    }
    size_t n = 0;
    const size_t first = copy ? copy->count() : 0;
    while (n < max && next_idx < held.size()) {
        Held &h = held[next_idx];
        if (copy) {  // copied under mu, before it is handed out: only what fits goes
            mq_message v;
            fill_view(h, v);
            v.delivery_count = h.deliveries + 1;
            if (!copy->put(v)) {
                if (n == 0) copy->too_large_need = CopyOut::alone(v);
                break;
            }
            n++;
        } else {
            fill_view(h, out[n]);
            out[n++].delivery_count = h.deliveries + 1;
        }
        next_idx++;
        h.deliveries++;
        h.lost = 0;  // reported once
    }
    if (n) {
        lease_deadline_ns = now + ack_timeout_ns;
        // heads lost on their way to the dead-letter topic
        if (copy) copy->add_lost(first, lost_unreported);
        else out[0].lost += lost_unreported;
        lost_unreported = 0;
    }
    return n;
}

void KafkaCursor::begin_dead_letter(const std::string &group, DueHead &due) {
    const Held &h = held.front();
    mq_message view;
    fill_view(h, view);
    due.copy.capture(
        view, mq_dead_letter{topic.c_str(), group.c_str(), partition, h.deliveries, h.msg->offset});
    due.offset = h.msg->offset;
    due.epoch = epoch;
    dead_lettering = true;
}

int64_t dead_letter_deadline(int64_t deadline_ns) {
    if (deadline_ns == 0) return 0;
    // As the catch-up of a poll (kafka_groups.cpp): a poll with a short wait still gets the
    // cluster's answer, so a wait that works in-process (where the append is instant unless
    // the topic is full) works here too.
    return std::max(deadline_ns, steady_now_ns() + int64_t{kCatchUpMs} * 1000000);
}

mq_status finish_dead_letter(rd_kafka_t *consumer, const std::string &group,
                             const DeadLetterRule &rule, KafkaCursor &c, const DueHead &due,
                             mq_status produced) {
    c.dead_lettering = false;
    const bool too_large = produced == MQ_ERR_TOO_LARGE;
    if (produced == MQ_OK || too_large) {
        // Still the head (no seek or ack moved the cursor meanwhile): treated as acked for this
        // group, so the partition moves on. A copy the dead-letter topic can never take is lost
        // instead, and said so like any other loss (as in the in-process log).
        if (due.epoch == c.epoch && c.next_idx == 0 && !c.held.empty() &&
            c.held.front().msg->offset == due.offset) {
            if (mq_status st = commit_offset(consumer, c, due.offset + 1); st) return st;
            c.drop_front(1);
            c.committed = due.offset + 1;
            c.lease_deadline_ns = 0;
            if (too_large) {
                c.lost_total++;
                c.lost_unreported++;
            } else {
                c.dead_lettered++;
            }
        }
        return MQ_OK;
    }
    switch (produced) {
        case MQ_TIMEOUT:
            return fail(MQ_TIMEOUT,
                        "dead-letter topic %s did not confirm the dead letter within the wait; "
                        "offset %" PRId64 " of partition %d waits at the head of group %s",
                        rule.topic.c_str(), due.offset, c.partition, group.c_str());
        case MQ_ERR_NO_TOPIC:
            return fail(MQ_ERR_NO_TOPIC,
                        "dead-letter topic %s is not on the cluster; offset %" PRId64
                        " of partition %d stays at the head of group %s (create the topic, or "
                        "subscribe the group anew with another dead-letter topic)",
                        rule.topic.c_str(), due.offset, c.partition, group.c_str());
        default: return produced;  // closed, cancelled, the cluster's refusal: message set
    }
}

void KafkaCursor::nack(int64_t delay_ms, int64_t unhandled_from) {
    if (next_idx == 0) return;
    if (unhandled_from >= 0) {
        for (size_t i = 0; i < next_idx; i++) {
            Held &h = held[i];
            if (h.msg->offset >= unhandled_from && h.deliveries > 0) h.deliveries--;
        }
    }
    next_idx = 0;
    lease_deadline_ns = 0;
    if (delay_ms) paused_until_ns = steady_now_ns() + delay_ms * 1000000;
}

mq_status KafkaCursor::extend_lease(const std::string &group, int64_t ack_timeout_ns) {
    if (next_idx == 0) {
        return fail(MQ_ERR_NOT_IN_FLIGHT, "nothing is in flight for %s on partition %d",
                    group.c_str(), partition);
    }
    lease_deadline_ns = steady_now_ns() + ack_timeout_ns;
    return MQ_OK;
}

mq_status commit_offset(rd_kafka_t *consumer, const KafkaCursor &c, int64_t offset) {
    PartList l;
    l.add(c.topic, c.partition, offset);
    if (rd_kafka_resp_err_t e = rd_kafka_commit(consumer, l.list, 0)) {
        if (e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
            e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION || e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID) {
            return fail(MQ_ERR_FENCED,
                        "the group is rebalancing: partition %d may have moved (%s); fetch the "
                        "assignment and carry on",
                        c.partition, rd_kafka_err2str(e));
        }
        return fail_kafka(e, "commit an offset of", c.topic.c_str());
    }
    return MQ_OK;
}

mq_status ack_cursor(rd_kafka_t *consumer, const std::string &group, KafkaCursor &c,
                     int64_t offset) {
    const int64_t next = c.next();
    if (offset < c.committed || offset >= next) {
        if (c.committed == next) {
            return fail(MQ_ERR_NOT_IN_FLIGHT,
                        "offset %" PRId64 " is not in flight for %s (nothing is)", offset,
                        group.c_str());
        }
        return fail(MQ_ERR_NOT_IN_FLIGHT,
                    "offset %" PRId64 " is not in flight for %s (in flight: %" PRId64 "..%" PRId64
                    ")",
                    offset, group.c_str(), c.committed, next - 1);
    }
    // Committed first: if the cluster refuses, nothing changes here either.
    if (mq_status st = commit_offset(consumer, c, offset + 1); st) return st;
    size_t n = 0;
    while (n < c.held.size() && c.held[n].msg->offset <= offset) n++;
    c.drop_front(n);
    c.committed = offset + 1;
    if (c.next_idx == 0) c.lease_deadline_ns = 0;
    return MQ_OK;
}

void KafkaCursor::drop_front(size_t n) {
    for (size_t i = 0; i < n; i++) {
        rd_kafka_message_destroy(held.front().msg);
        held.pop_front();
    }
    next_idx -= std::min(next_idx, n);
}

void KafkaCursor::clear() {
    drop_front(held.size());
    next_idx = 0;
}

KafkaCursor::~KafkaCursor() {
    clear();
    if (queue) rd_kafka_queue_destroy(queue);
}

}  // namespace mq::kafka
