// Publishing on the Kafka backend: each record goes to the partition mq's rule names (Kafka's
// murmur2 for a key, a client-side round-robin without one), and the call waits for every
// record's delivery report, so the offsets it returns are the cluster's.
//
// The wait: Kafka never makes a producer wait for consumers, so wait_ms (back-pressure in the
// in-process log) has nothing to bound; a publish always waits for its reports, which come
// within the producer's message.timeout.ms (librdkafka's default, 5 minutes, unless set in
// kafka_config). Close and cancel end the wait (MQ_CLOSED, MQ_CANCELLED): the records may
// then still be appended (at-least-once: publish again if they must be there). A dead letter's
// produce (a poll's) has a deadline as well: the poll's wait.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "util/cancel.h"
#include "util/error.h"
#include "engine/kafka/kafka_backend.h"
#include "util/murmur2.h"

namespace mq::kafka {

namespace {

struct Pending;
struct Slot {  // a record's opaque: its call and index
    Pending *p;
    size_t index;
};

// What a publish waits on: one per call, shared with the delivery reports of its records
// (which may come after the call gave up waiting). Each report writes its own entries, then
// counts down; the report that brings the count to 0 wakes the caller, and the last of the
// call and the reports frees it.
struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<size_t> outstanding{0};
    std::vector<int32_t> partitions;  // written by the call only
    // Written by the reports; atomics because a call that gives up (close, cancel) reads them
    // while late reports may still come.
    std::vector<std::atomic<int64_t>> offsets;
    std::vector<std::atomic<int>> errors;
    std::vector<Slot> slots;
    std::atomic<int> refs{2};  // the call's, and the reports' (all of them together)

    explicit Pending(size_t n) : partitions(n), offsets(n), errors(n), slots(n) {
        for (size_t i = 0; i < n; i++) {
            slots[i] = {this, i};
            offsets[i].store(-1, std::memory_order_relaxed);
            errors[i].store(RD_KAFKA_RESP_ERR_NO_ERROR, std::memory_order_relaxed);
        }
    }
    void release() {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    // One report (or one record that never got queued) fewer.
    void count_down() {
        if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        {
            std::lock_guard g(mu);  // the caller checks the count under mu before it sleeps
        }
        cv.notify_all();
        release();  // the reports' reference
    }
};

}  // namespace

// librdkafka's delivery report callback (set in KafkaBackend::open), on the service thread.
void delivered(const rd_kafka_message_t *m) {
    auto *slot = static_cast<Slot *>(m->_private);
    if (!slot) return;
    Pending *p = slot->p;
    p->offsets[slot->index].store(m->err ? -1 : m->offset, std::memory_order_relaxed);
    p->errors[slot->index].store(m->err, std::memory_order_relaxed);
    p->count_down();  // release: the caller's acquire of the count sees the stores above
}

// Why a publish stops waiting (MQ_OK: it goes on).
mq_status KafkaBackend::stopped(mq_cancel *cancel, int64_t deadline_ns, const char *topic) const {
    if (closed()) return fail_fixed(MQ_CLOSED, "the broker is closed");
    if (cancel && cancel->is_triggered()) return fail_fixed(MQ_CANCELLED, "the call was cancelled");
    if (deadline_ns && steady_now_ns() >= deadline_ns) {
        return fail(MQ_TIMEOUT, "topic %s did not confirm the records within the wait", topic);
    }
    return MQ_OK;
}

mq_status KafkaBackend::publish(const char *topic, const mq_record *records, size_t count, int64_t,
                                mq_cancel *cancel, mq_publish_result *results, size_t *published) {
    return produce(topic, records, count, 0, cancel, results, published);
}

mq_status KafkaBackend::produce(const char *topic, const mq_record *records, size_t count,
                                int64_t deadline_ns, mq_cancel *cancel, mq_publish_result *results,
                                size_t *published) {
    *published = 0;
    if (count == 0) return MQ_OK;
    std::shared_ptr<TopicMeta> meta;
    if (mq_status st = this->topic(topic, &meta); st) return st;
    for (size_t i = 0; i < count; i++) {
        if (records[i].delay_ms) {  // Kafka has no per-record delivery time to map it onto
            return fail(MQ_ERR_UNSUPPORTED,
                        "record %zu: delay_ms is %lld, but Kafka has no delayed delivery (a record "
                        "is readable once written); publish it when it is due, or use an "
                        "in-process broker",
                        i, static_cast<long long>(records[i].delay_ms));
        }
        for (size_t h = 0; h < records[i].header_count; h++) {
            const mq_header &hd = records[i].headers[h];
            if (hd.name_len && std::memchr(hd.name, 0, hd.name_len)) {
                return fail(MQ_ERR_UNSUPPORTED,
                            "record %zu header %zu: a Kafka header name cannot hold a NUL byte", i,
                            h);
            }
        }
    }
    auto *p = new Pending(count);
    p->outstanding.store(count, std::memory_order_relaxed);
    struct Release {
        Pending *p;
        ~Release() { p->release(); }
    } release{p};
    size_t queued = 0;
    mq_status st = MQ_OK;    // a record the client refused (the ones before it still count)
    mq_status stop = MQ_OK;  // close, cancel or the deadline: the call stops waiting
    for (; queued < count; queued++) {
        const mq_record &r = records[queued];
        int32_t part;
        if (r.key) {
            part = partition_for_key(r.key, r.key_len, meta->partitions);
        } else {
            part = static_cast<int32_t>(meta->round_robin.fetch_add(1, std::memory_order_relaxed) %
                                        static_cast<uint32_t>(meta->partitions));
        }
        p->partitions[queued] = part;
        rd_kafka_headers_t *hdrs = nullptr;
        if (r.header_count) {
            hdrs = rd_kafka_headers_new(r.header_count);
            for (size_t h = 0; h < r.header_count; h++) {
                const mq_header &hd = r.headers[h];
                rd_kafka_header_add(hdrs, hd.name_len ? static_cast<const char *>(hd.name) : "",
                                    static_cast<ssize_t>(hd.name_len),
                                    // a NULL value is an empty one (mq.h), not Kafka's null
                                    hd.value_len ? hd.value : "",
                                    static_cast<ssize_t>(hd.value_len));
            }
        }
        // A key of length 0 stays a key (Kafka tells an empty key from none, as mq does).
        static const char empty = 0;
        const void *key = r.key ? (r.key_len ? r.key : &empty) : nullptr;
        rd_kafka_resp_err_t err;
        // A full local queue (queue.buffering.max.messages or .kbytes) empties as earlier
        // records are sent: wait for room, as a publish in the in-process log waits for it,
        // until close, cancel or the deadline.
        while (
            (err = rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                     RD_KAFKA_V_KEY(const_cast<void *>(key), r.key_len),
                                     RD_KAFKA_V_VALUE(const_cast<void *>(r.payload), r.payload_len),
                                     RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(&p->slots[queued]),
                                     RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            if ((stop = stopped(cancel, deadline_ns, topic))) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // no event says "room"
        }
        if (err) {
            if (hdrs) rd_kafka_headers_destroy(hdrs);  // not taken on failure
            if (!stop) st = fail_kafka(err, "publish to", topic);
            break;
        }
    }
    // The records never queued get no report: counted down here.
    for (size_t i = queued; i < count; i++) p->count_down();
    // Wait for the reports of what was queued, in slices so close and cancel are seen.
    std::unique_lock lk(p->mu);
    while (!stop && p->outstanding.load(std::memory_order_acquire)) {
        if ((stop = stopped(cancel, deadline_ns, topic))) break;
        p->cv.wait_for(lk, std::chrono::milliseconds(kSliceMs));
    }
    // Records of one partition are reported in order: the published ones are a prefix.
    size_t done = 0;
    rd_kafka_resp_err_t first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (size_t i = 0; i < count; i++) {
        const int64_t off = p->offsets[i].load(std::memory_order_relaxed);
        const auto err =
            static_cast<rd_kafka_resp_err_t>(p->errors[i].load(std::memory_order_relaxed));
        if (results) results[i] = {p->partitions[i], off};  // NULL: the caller did not ask
        if (off >= 0) {
            done++;
            meta->produced(p->partitions[i], off + 1);
        }
        if (!first_err && err) first_err = err;
    }
    *published = done;
    if (stop) return stop;
    if (st == MQ_OK && first_err) {
        if (first_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) forget_topic(topic);
        st = fail_kafka(first_err, "publish to", topic);
    }
    return st;
}

}  // namespace mq::kafka
