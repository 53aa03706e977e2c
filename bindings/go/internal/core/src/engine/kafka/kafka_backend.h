// The Kafka backend (docs/KAFKA.md): mq's calls on a Kafka cluster through librdkafka.
//
// - One producer handle per broker: publishes name their partition themselves (mq's rule, which
//   is Kafka's murmur2 for keys and a client-side round-robin without one) and wait for their
//   delivery reports, which a service thread collects.
// - One consumer handle per (topic, group) this broker subscribed: the group's partitions are
//   assigned by hand at the offsets the group committed (or, for a new group, at the end or the
//   start of the log, read once at subscribe), each with its own queue, so a poll of one
//   partition reads only that partition.
// - What Kafka has no word for is kept here, per group and partition (KafkaCursor): the
//   messages handed out and not acked yet (the views point into them), the lease, delivery
//   counts and delayed nacks. An ack commits offset + 1 to the cluster before it returns.
// - Dead letters (a group's max_deliveries): the head due is produced to the dead-letter topic
//   through the producer, its report awaited, then committed past (kafka_cursor.cpp's rule).
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "core/copy_out.h"
#include "core/dead_letter.h"

namespace mq::kafka {

// Waits are cut into slices this long so that close and cancel end them promptly (librdkafka's
// queues cannot be woken by our tokens).
constexpr int kSliceMs = 10;
// What a call waits at most for an answer from the cluster (metadata, admin, commit).
constexpr int kRequestMs = 10000;
// How often librdkafka looks for the leaders of partitions it has no leader for: asking sooner
// is only worth this long.
constexpr int kTopicScanMs = 1000;
// How long a poll may spend fetching what was published before it started (a poll with wait 0
// sees those messages too, as in the in-process log).
constexpr int kCatchUpMs = 5000;

// librdkafka's configuration from the broker options: defaults of ours, then the user's lines.
struct Settings {
    std::vector<std::pair<std::string, std::string>> pairs;
    mq_status parse(const char *bootstrap, const char *lines);
    // A new conf with the pairs (and extra ones after them); nullptr with the message set.
    rd_kafka_conf_t *conf(const std::vector<std::pair<std::string, std::string>> &extra) const;
};

// What few records have: headers, and a dead letter's origin. Kept apart (and allocated only
// for such records) so that a Held stays small: the deque of a cursor then allocates once per
// many records instead of once per two or three.
struct HeldRare {
    std::vector<mq_header> headers;  // point into the record's header storage
    // A dead letter's origin, read back from its MQ_HEADER_DEAD_LETTER_* headers (the view's
    // dead_letter); the strings are its own, so they live as long as the view.
    bool is_dead_letter = false;
    std::string origin_topic, origin_group;
    mq_dead_letter origin{};
};

// A message fetched for a group and not acked yet; what its views point into.
struct Held {
    rd_kafka_message_t *msg = nullptr;
    uint32_t deliveries = 0;
    int64_t lost = 0;                // offsets skipped just before it (gone from the log)
    std::unique_ptr<HeldRare> rare;  // null for a record without headers
};

// A group's poison-message rule (mq_group_options.max_deliveries, dead_letter_topic).
struct DeadLetterRule {
    uint32_t max_deliveries = 0;  // 0: none
    std::string topic;
};

// The head a poll is moving to the dead-letter topic: its copy, and how to tell afterwards
// whether the cursor still has it at its head.
struct DueHead {
    DeadLetter copy;
    int64_t offset = 0;
    uint64_t epoch = 0;
};

// One partition's offset as librdkafka's list, for assign, commit, committed and seek.
struct PartList {
    rd_kafka_topic_partition_list_t *list;
    PartList();
    ~PartList();
    PartList(const PartList &) = delete;
    PartList &operator=(const PartList &) = delete;
    rd_kafka_topic_partition_t *add(const std::string &topic, int32_t p, int64_t offset);
};

// One partition of one group: mq's cursor kept beside Kafka's committed offset (kafka_cursor.cpp
// holds its rules). Guarded by mu, but for the fields set at creation.
struct KafkaCursor {
    std::mutex mu;                      // the state below
    std::mutex fetch_mu;                // one fetch at a time keeps `held` in offset order
    rd_kafka_queue_t *queue = nullptr;  // group polls: the partition's own queue
    std::string topic;
    int32_t partition = 0;
    int64_t committed = 0;   // every offset below is acked (and committed to Kafka)
    int64_t fetched_to = 0;  // the offset after the last message fetched
    std::deque<Held> held;   // fetched, not acked: offsets committed.. in order
    size_t next_idx = 0;     // held[next_idx] is the next to hand out
    int64_t lease_deadline_ns = 0;
    int64_t paused_until_ns = 0;
    uint64_t epoch = 0;           // bumped by seek: a fetch that raced it is dropped
    uint32_t max_deliveries = 0;  // the group's rule (0: none), set at creation
    bool dead_lettering = false;  // a poll is moving the head: the others keep away from it
    int64_t dead_lettered = 0;    // counted by this client, as the delivery counts are
    int64_t lost_total = 0;       // gaps seen, and heads the dead-letter topic could not take
    int64_t lost_unreported = 0;  // of those, not yet reported by a view's `lost`

    int64_t next() const { return next_idx ? held[next_idx - 1].msg->offset + 1 : committed; }
    bool paused(int64_t now) const { return paused_until_ns && now < paused_until_ns; }
    // Keeps a fetched message (false, and destroys it, for an error event or a refetch).
    bool take(rd_kafka_message_t *m);
    // Up to max views from next (a run-out lease rewinds first); 0 when none can go now. Sets
    // *due (and hands out nothing) when the head has had its max_deliveries and must be
    // dead-lettered instead: the caller then calls begin_dead_letter.
    // With copy (the copying poll) the views go there, and only those that fit are handed out;
    // 0 with copy->too_large_need set when not even the first fits.
    size_t hand_out(mq_message *out, size_t max, int64_t now, int64_t ack_timeout_ns, bool *due,
                    CopyOut *copy = nullptr);
    // Copies the head for its dead letter and keeps other polls away from it until
    // finish_dead_letter. May throw bad_alloc (then nothing changed).
    void begin_dead_letter(const std::string &group, DueHead &due);
    // unhandled_from >= 0: the in-flight messages from that offset on get their delivery back
    // (a push loop's batch no handler saw).
    void nack(int64_t delay_ms, int64_t unhandled_from = -1);
    mq_status extend_lease(const std::string &group, int64_t ack_timeout_ns);
    void drop_front(size_t n);
    void clear();
    ~KafkaCursor();
};

// A cumulative ack: checked against the in-flight range, committed (offset + 1), then applied.
mq_status ack_cursor(rd_kafka_t *consumer, const std::string &group, KafkaCursor &c,
                     int64_t offset);
mq_status commit_offset(rd_kafka_t *consumer, const KafkaCursor &c, int64_t offset);

// Destroys a client handle (a consumer already closed, or the producer), waiting at most
// kDestroyMs. librdkafka 2.0's rd_kafka_destroy can hang for good once a subscribed topic was
// deleted under the client (a partition reference leaks: librdkafka issue 4362); past the
// bound the handle is left to the process's exit, so that mq_member_close, mq_broker_free
// and the exit never hang on it. docs/KAFKA.md says so.
constexpr int kDestroyMs = 10000;
void destroy_client(rd_kafka_t *rk) noexcept;
// After the dead letter's produce (`produced`, whose message is set when it failed): commits
// past the head if the cursor still has it there, counts it, and says what the poll returns
// (MQ_OK: carry on polling).
mq_status finish_dead_letter(rd_kafka_t *consumer, const std::string &group,
                             const DeadLetterRule &rule, KafkaCursor &c, const DueHead &due,
                             mq_status produced);
// The deadline of a dead letter's produce within a poll that ends at deadline_ns (0: never):
// the poll's own, but never shorter than a round trip to the cluster can take.
int64_t dead_letter_deadline(int64_t deadline_ns);

struct TopicMeta {
    explicit TopicMeta(int32_t parts)
        : partitions(parts), produced_end(new std::atomic<int64_t>[static_cast<size_t>(parts)]) {
        for (int32_t p = 0; p < parts; p++) produced_end[p].store(0, std::memory_order_relaxed);
    }
    const int32_t partitions;
    mq_topic_config cfg{};  // what this broker created it with (defaults for a foreign topic)
    std::atomic<uint32_t> round_robin{0};
    // Per partition, the offset after the last record this handle's producer saw confirmed.
    // A poll hands out every record published before it started, up to its max, not only
    // those that a fetch happened to bring first: for this handle's own records it learns
    // where they end here, without asking the cluster (local_catch_up).
    std::unique_ptr<std::atomic<int64_t>[]> produced_end;
    void produced(int32_t p, int64_t end) noexcept {
        int64_t cur = produced_end[p].load(std::memory_order_relaxed);
        while (cur < end &&
               !produced_end[p].compare_exchange_weak(cur, end, std::memory_order_release)) {
        }
    }
    int64_t produced_to(int32_t p) const noexcept {
        return produced_end[p].load(std::memory_order_acquire);
    }
};

// Whether a poll that started when this handle's records of the partition ended at
// `produced_to` should fetch before it hands out from c: some of them are not fetched yet,
// the poll has room for more than c holds ready, and the bound (kCatchUpMs) has not passed.
inline bool local_catch_up(const KafkaCursor &c, int64_t produced_to, size_t max, int64_t now,
                           int64_t deadline_ns) {
    return c.fetched_to < produced_to && c.held.size() - c.next_idx < max && now < deadline_ns &&
           !c.paused(now);
}

struct KafkaGroup {
    std::string topic, name;
    int64_t ack_timeout_ns = 0;
    DeadLetterRule dead_letter;
    std::shared_ptr<TopicMeta> meta;  // the topic as this handle knew it at the subscribe
    rd_kafka_t *consumer = nullptr;
    std::vector<std::unique_ptr<KafkaCursor>> cursors;
    std::atomic<bool> gone{false};  // unsubscribed or its topic deleted: calls return at once
    ~KafkaGroup();
};

// A member's view of its cursors, for mq_group_get_info on a group this handle only joined.
class MemberCursors {
public:
    // False if the member does not own the partition now.
    virtual bool cursor_info(int32_t partition, mq_group_info &out) = 0;
    // This handle deleted the member's topic (its calls return MQ_ERR_NO_TOPIC from now on) or
    // unsubscribed its group (MQ_ERR_FENCED: the member was removed, and it leaves the Kafka
    // group), as in the in-process log. False if it was removed before (the first reason
    // stays). Called with the backend's mu_ held: takes no lock.
    enum class Removal { topic_deleted = 1, unsubscribed = 2 };
    virtual bool remove(Removal why) noexcept = 0;

protected:
    ~MemberCursors() = default;
};

class KafkaBackend final : public Backend {
public:
    static mq_status open(const mq_broker_options &opts, std::unique_ptr<Backend> *out);
    ~KafkaBackend() override;

    void close() noexcept override;
    mq_status create_topic(const char *name, const mq_topic_config &cfg) override;
    mq_status delete_topic(const char *name) override;
    mq_status topic_list(std::string &out) override;
    mq_status group_list(const char *topic, std::string &out) override;
    mq_status topic_info(const char *topic, mq_topic_info &out) override;
    mq_status subscribe(const char *topic, const char *group,
                        const mq_group_options &opts) override;
    mq_status unsubscribe(const char *topic, const char *group) override;
    mq_status publish(const char *topic, const mq_record *records, size_t count, int64_t wait_ms,
                      mq_cancel *cancel, mq_publish_result *results, size_t *published) override;
    mq_status poll(const char *topic, const char *group, int32_t partition, const int64_t *ack,
                   mq_message *out, size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count,
                   CopyOut *copy = nullptr) override;
    mq_status ack(const char *topic, const char *group, int32_t partition, int64_t offset) override;
    mq_status nack(const char *topic, const char *group, int32_t partition, int64_t delay_ms,
                   int64_t unhandled_from) override;
    mq_status extend_lease(const char *topic, const char *group, int32_t partition) override;
    mq_status seek(const char *topic, const char *group, int32_t partition,
                   int64_t offset) override;
    mq_status partition_info(const char *topic, int32_t partition, mq_partition_info &out) override;
    mq_status group_info(const char *topic, const char *group, int32_t partition,
                         mq_group_info &out) override;
    mq_status describe(const char *topic, int32_t partition, std::string &out) override;
    mq_status join(const char *topic, const char *group, const BackendJoin &opts,
                   std::string *member_id, std::unique_ptr<BackendMember> *out) override;
    mq_status open_push(const char *topic, const char *group, int32_t prefetch,
                        int64_t session_timeout_ms, std::vector<int32_t> partitions,
                        mq_handler handler, void *user,
                        std::unique_ptr<BackendSubscription> *out) override;

    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    // Produces records and waits for their reports until deadline_ns (steady clock; 0: no
    // deadline, as publish: MQ_TIMEOUT when it passes, the records may still be appended).
    mq_status produce(const char *topic, const mq_record *records, size_t count,
                      int64_t deadline_ns, mq_cancel *cancel, mq_publish_result *results,
                      size_t *published);
    // Why a produce stops waiting for room or reports: MQ_CLOSED, MQ_CANCELLED, MQ_TIMEOUT
    // past deadline_ns (0: none), with the message set; MQ_OK while it may go on.
    mq_status stopped(mq_cancel *cancel, int64_t deadline_ns, const char *topic) const;
    // The dead-letter rule of a group this handle subscribed (none otherwise): what its
    // members follow too.
    DeadLetterRule dead_letter_rule(const std::string &topic, const std::string &group);
    // Produces a due head's copy to the rule's topic (deadline_ns: the poll's, 0 for none).
    mq_status dead_letter(const DeadLetterRule &rule, const DueHead &head, int64_t deadline_ns,
                          mq_cancel *cancel);
    // Partition lists of push subscriptions (and members) share a group as in the in-process
    // log, within this handle: a partition has one owner (MQ_ERR_OWNED). claim() takes all of
    // parts or none (empty parts: the group's member mode, refused while a list owns any).
    mq_status claim(const std::string &topic, const std::string &group,
                    const std::vector<int32_t> &parts);
    void unclaim(const std::string &topic, const std::string &group,
                 const std::vector<int32_t> &parts) noexcept;
    void forget_member(const std::string &key) noexcept {
        std::lock_guard g(mu_);
        member_ids_.erase(std::remove_if(member_ids_.begin(), member_ids_.end(),
                                         [&](const auto &e) { return e.first == key; }),
                          member_ids_.end());
    }

private:
    KafkaBackend() = default;

    // The topic's metadata (asks the cluster when this broker has not seen it).
    mq_status topic(const char *name, std::shared_ptr<TopicMeta> *out);
    mq_status group(const char *topic, const char *group, int32_t partition,
                    std::shared_ptr<KafkaGroup> *g, KafkaCursor **c);
    mq_status watermarks(const char *topic, int32_t partition, int64_t *lo, int64_t *hi);
    // owner_only: MQ_ERR_NO_GROUP unless a member of this handle owns the partition.
    mq_status member_group_info(const char *topic, const char *group, int32_t partition,
                                mq_group_info &out, bool owner_only);
    int64_t committed_offset(const char *topic, const char *group, int32_t partition);
    void forget_topic(const std::string &name);
    // After a create or delete the controller did: asks the cluster (forgetting what this handle
    // knew) until done(status of the lookup, the topic if found) says the metadata agrees,
    // for at most kRequestMs. False when it did not in time.
    bool await_metadata(const char *name, const std::function<bool(mq_status, TopicMeta *)> &done);
    void serve_producer();

    Settings settings_;
    size_t max_message_bytes_ = 0;
    rd_kafka_t *producer_ = nullptr;  // also the admin and metadata client
    std::thread service_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> closed_{false};

    std::mutex mu_;  // the maps below
    std::map<std::string, std::shared_ptr<TopicMeta>, std::less<>> topics_;
    // (topic, group) in subscription order per topic
    std::map<std::string, std::vector<std::shared_ptr<KafkaGroup>>, std::less<>> groups_;
    // "topic\ngroup\nid" of this handle's open members, in join order, with what answers
    // mq_group_get_info for the partitions each owns.
    std::vector<std::pair<std::string, MemberCursors *>> member_ids_;
    // Per topic, the groups this handle subscribed or joined, in that order (mq_group_list).
    std::map<std::string, std::vector<std::string>, std::less<>> group_order_;
    void note_group(const std::string &topic, const std::string &group) {  // with mu_ held
        auto &names = group_order_[topic];
        if (std::find(names.begin(), names.end(), group) == names.end()) names.push_back(group);
    }
    // "topic\ngroup" -> the partitions push subscriptions with a list own.
    std::map<std::string, std::vector<int32_t>> claimed_;
};

// librdkafka's error as an mq status for calls on topics: the few codes with a status of
// their own, else MQ_ERR_BACKEND; the message names what was asked.
mq_status fail_kafka(rd_kafka_resp_err_t err, const char *what, const char *name);

// The partition's low and high watermarks from the cluster (transient leader errors retried).
mq_status query_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo,
                           int64_t *hi);

// The producer's delivery report callback (kafka_publish.cpp).
void delivered(const rd_kafka_message_t *m);

}  // namespace mq::kafka
