// A broker's other engine: what the C boundary calls instead of the in-process log when the
// broker was opened on a Kafka cluster (mq_broker_options.kafka_bootstrap). Arguments arrive
// checked by the boundary exactly as for the in-process log (names, sizes, durations), so an
// implementation keeps only the rules of its own engine. Every method runs inside the broker's
// call gate and may block only where the mq.h call it serves may.
//
// One implementation today (src/engine/kafka/, built with the CMake option MQ_KAFKA); without it
// make_kafka_backend refuses with MQ_ERR_UNSUPPORTED (backend_none.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mq.h"

namespace mq {

class CopyOut;  // core/copy_out.h: the copying poll's buffer

// A group member on the backend (mq_member's calls, after the boundary's argument checks).
class BackendMember {
public:
    virtual ~BackendMember() = default;
    // Joins the group and waits for the first assignment (mq_member_join returns then).
    virtual mq_status begin() = 0;
    // True on the thread running this member's on_rebalance (mq_member_close refuses there).
    virtual bool in_own_callback() const noexcept = 0;
    // Leaves the group (the others rebalance). Called once, by mq_member_close.
    virtual void close() noexcept = 0;
    virtual mq_status assignment(int64_t *generation, std::vector<int32_t> &out) = 0;
    // ack: the (partition, offset) mq_member_ack_poll acks first, or nullptr.
    // copy: the copying poll's buffer (then out is unused): only what fits is handed out.
    virtual mq_status poll(const int32_t *ack_partition, const int64_t *ack_offset, mq_message *out,
                           size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count,
                           CopyOut *copy = nullptr) = 0;
    virtual mq_status ack(int32_t partition, int64_t offset) = 0;
    // unhandled_from >= 0: a push loop gives back the messages from that offset on, which no
    // handler saw; their deliveries are taken back (as Partition::nack). -1 for a plain nack.
    virtual mq_status nack(int32_t partition, int64_t delay_ms, int64_t unhandled_from) = 0;
    virtual mq_status extend_lease(int32_t partition) = 0;
    // True once its topic was deleted through this handle: MQ_ERR_NO_TOPIC from its calls is
    // for good then (a push loop ends), not a dead-letter topic missing for now.
    virtual bool topic_deleted() const noexcept = 0;
    // MQ_ERR_NO_TOPIC or MQ_ERR_NO_GROUP (message set) once its topic was deleted or its group
    // unsubscribed through this handle, else MQ_OK: checked before the call's other arguments,
    // as mq.h orders the statuses (the member stands for its topic and group).
    virtual mq_status check_removed() const = 0;
};

// A push subscription on the backend: library threads calling the handler.
class BackendSubscription {
public:
    virtual ~BackendSubscription() = default;
    // Stops the loops and waits for them (a running handler finishes first), gives back what
    // they held. Not from one of its own handlers (the boundary checks is_current_thread).
    virtual void close() noexcept = 0;
    virtual bool is_current_thread() const noexcept = 0;
};

// What mq_handler_extend_lease and mq_handler_set_nack_delay reach inside a handler that a
// backend's loop runs (the in-process loops have their own, subscription.cpp).
class BackendHandler {
public:
    virtual mq_status extend_lease() = 0;
    virtual void set_nack_delay(int64_t delay_ms) = 0;

protected:
    ~BackendHandler() = default;
};
// The handler the calling thread is running for a backend's loop, or NULL (backend.cpp).
BackendHandler *&current_backend_handler() noexcept;

// mq_member_join's options after the boundary's checks.
struct BackendJoin {
    const char *member_id;  // NULL: generated
    int64_t session_timeout_ms;
    mq_rebalance_fn on_rebalance;
    void *on_rebalance_user;
    mq_member *handle;  // what on_rebalance is given
};

class Backend {
public:
    virtual ~Backend() = default;

    // mq_broker_close: every waiting call returns MQ_CLOSED soon (within one wait slice).
    virtual void close() noexcept = 0;

    virtual mq_status create_topic(const char *name, const mq_topic_config &cfg) = 0;
    virtual mq_status delete_topic(const char *name) = 0;
    virtual mq_status topic_list(std::string &out) = 0;  // names, each followed by '\n'
    virtual mq_status group_list(const char *topic, std::string &out) = 0;
    virtual mq_status topic_info(const char *topic, mq_topic_info &out) = 0;

    virtual mq_status subscribe(const char *topic, const char *group,
                                const mq_group_options &opts) = 0;
    virtual mq_status unsubscribe(const char *topic, const char *group) = 0;

    // Records are checked against max_message_bytes; results has count entries, or is NULL.
    virtual mq_status publish(const char *topic, const mq_record *records, size_t count,
                              int64_t wait_ms, mq_cancel *cancel, mq_publish_result *results,
                              size_t *published) = 0;

    // ack: the offset mq_group_ack_poll acks first, or nullptr for a plain poll.
    virtual mq_status poll(const char *topic, const char *group, int32_t partition,
                           const int64_t *ack, mq_message *out, size_t max, int64_t wait_ms,
                           mq_cancel *cancel, size_t *count, CopyOut *copy = nullptr) = 0;
    virtual mq_status ack(const char *topic, const char *group, int32_t partition,
                          int64_t offset) = 0;
    virtual mq_status nack(const char *topic, const char *group, int32_t partition,
                           int64_t delay_ms, int64_t unhandled_from) = 0;
    virtual mq_status extend_lease(const char *topic, const char *group, int32_t partition) = 0;
    virtual mq_status seek(const char *topic, const char *group, int32_t partition,
                           int64_t offset) = 0;

    virtual mq_status partition_info(const char *topic, int32_t partition,
                                     mq_partition_info &out) = 0;
    virtual mq_status group_info(const char *topic, const char *group, int32_t partition,
                                 mq_group_info &out) = 0;
    virtual mq_status describe(const char *topic, int32_t partition, std::string &out) = 0;

    // mq_subscription_open after the boundary's checks (partitions empty: a member of the
    // group). On failure the caller calls user_free.
    virtual mq_status open_push(const char *topic, const char *group, int32_t prefetch,
                                int64_t session_timeout_ms, std::vector<int32_t> partitions,
                                mq_handler handler, void *user,
                                std::unique_ptr<BackendSubscription> *out) = 0;

    // mq_member_join, part one: the member (not joined yet: begin() joins); *member_id
    // receives its id.
    virtual mq_status join(const char *topic, const char *group, const BackendJoin &opts,
                           std::string *member_id, std::unique_ptr<BackendMember> *out) = 0;
};

// The Kafka backend for opts (opts.kafka_bootstrap is set); MQ_OK with *out set, or a status
// with the message set. Blocks until the cluster answers (bounded).
mq_status make_kafka_backend(const mq_broker_options &opts, std::unique_ptr<Backend> *out);

}  // namespace mq
