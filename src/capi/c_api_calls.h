// The bodies of the calls that can wait, shared by their blocking forms (c_api.cpp) and their
// asynchronous ones (c_api_async.cpp). `async` is null for a blocking call; for an asynchronous
// one it is the call's wait (its deadline fixed when the call started, Wait::async set), which
// parks where a blocking call would sleep.
#pragma once

#include <vector>

#include "capi/member.h"
#include "mq.h"
#include "util/wait.h"

namespace mq::capi {

// ack NULL: no ack.
mq_status group_poll(mq_broker *b, const char *topic, const char *group, int32_t partition,
                     const int64_t *ack, mq_message *msgs, size_t msg_size, size_t max,
                     int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                     const Wait *async = nullptr);
mq_status group_poll_copy(mq_broker *b, const char *topic, const char *group, int32_t partition,
                          const int64_t *ack, void *buf, size_t cap, size_t max, int64_t wait_ms,
                          mq_cancel *cancel, size_t *count_out, size_t *needed_out,
                          const Wait *async = nullptr);
// *routed (with async): the record's partition, chosen by the first run (-1 before it).
mq_status topic_publish(mq_broker *b, const char *topic, const void *key, size_t key_len,
                        const void *payload, size_t payload_len, const mq_header *headers,
                        size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                        int32_t *partition_out, int64_t *offset_out, const Wait *async = nullptr,
                        int32_t *routed = nullptr);
// *routed (with async): every record's partition and offset so far, filled by the first run.
mq_status topic_publish_batch(mq_broker *b, const char *topic, const mq_record *records,
                              size_t record_size, size_t count, int64_t wait_ms, mq_cancel *cancel,
                              mq_publish_result *results, size_t result_size, size_t *published,
                              const Wait *async = nullptr,
                              std::vector<mq_publish_result> *routed = nullptr);

// The checks every published record passes (mq_topic_publish, each record of a batch). t is
// NULL on the Kafka backend (no byte budget there: it is retention.bytes).
mq_status check_record(const mq_broker *b, const Topic *t, const mq_record &r);
// The body of a batch publish once its topic is resolved (t; NULL on Kafka, where `topic` names
// it). scope: the blocking call's gate scope, to pin t for its wait (NULL: the caller holds t).
mq_status publish_records(mq_broker *b, Topic *t, const char *topic, const mq_record *records,
                          size_t record_size, size_t count, int64_t wait_ms, mq_cancel *cancel,
                          mq_publish_result *results, size_t result_size, size_t *published,
                          GateScope *scope, const Wait *async,
                          std::vector<mq_publish_result> *routed);

// ack NULL: no ack. With async, `pending` is the asynchronous poll the run belongs to; an
// ack (made by the first run only) never waits.
struct MemberAck {
    int32_t partition;
    int64_t offset;
};
mq_status member_poll(mq_member *m, const MemberAck *ack, mq_message *msgs, size_t msg_size,
                      size_t max, int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                      const Wait *async = nullptr, mq_member::Pending *pending = nullptr);
mq_status member_poll_copy(mq_member *m, const MemberAck *ack, void *buf, size_t cap, size_t max,
                           int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                           size_t *needed_out, const Wait *async = nullptr,
                           mq_member::Pending *pending = nullptr);

}  // namespace mq::capi
