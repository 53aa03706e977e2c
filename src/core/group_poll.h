// A group's poll of one partition, dead letters included: the layer above Partition and Topic.
//
// A partition knows nothing of other topics. When a group's head has been handed out
// max_deliveries times, its poll hands out nothing and reports a copy of the head instead;
// this layer publishes the copy to the group's dead-letter topic (with the poll's wait and
// cancel token: one deadline for the whole poll) and tells the partition how that went, then
// polls again. Messages moved to the dead-letter topic do not count against `max`.
#pragma once

#include "mq.h"
#include "core/partition.h"

namespace mq {

// Dead-letters `due` and polls again, as often as heads are due (group_poll.cpp).
mq_status dead_letter_and_poll(Partition &p, const Group *g, Caller who, mq_message *out,
                               size_t max, Wait &wait, mq_cancel *cancel, size_t *count,
                               const DeadLetter *due, CopyOut *copy = nullptr);

// mq_share_settle: Partition::share_settle, and a rejected message's dead letter published at
// once without waiting; if the dead-letter topic is full, the group's next poll publishes it
// within its own wait. The reject stands either way.
mq_status settle_share(Partition &p, const Group *g, int64_t offset, uint32_t delivery_count,
                       int32_t action, int64_t delay_ns);

// Inline: a poll with no dead letter due costs no more than the partition's poll. With `ack`,
// acks *ack first in the same critical section (Partition::poll); a dead letter found after
// it is handled as a plain poll's is (the ack stands).
inline mq_status poll_group(Partition &p, const Group *g, Caller who, mq_message *out, size_t max,
                            Wait wait, mq_cancel *cancel, size_t *count,
                            const int64_t *ack = nullptr, CopyOut *copy = nullptr) {
    const DeadLetter *due = nullptr;
    const mq_status st = p.poll(g, who, out, max, wait, cancel, count, &due, ack, copy);
    if (!due) [[likely]]
        return st;
    return dead_letter_and_poll(p, g, who, out, max, wait, cancel, count, due, copy);
}

}  // namespace mq
