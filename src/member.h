// A group member handle (mq_member): the calls a member makes, each checked against the
// group's generation and the partition's owner so that a stale member is fenced.
#pragma once

#include <memory>
#include <vector>

#include "cancel.h"
#include "membership.h"
#include "partition.h"
#include "topic.h"

struct mq_member {
    mq_broker *broker;
    mq::Topic *topic;
    const mq::Group *group;
    std::shared_ptr<mq::MemberState> state;

    mq::Membership &membership() const noexcept { return *group->membership; }

    mq_status poll(mq_message *out, size_t max, mq::Wait wait, mq_cancel *cancel, size_t *count);
    mq_status ack(int32_t partition, int64_t offset);
    mq_status nack(int32_t partition, int64_t delay_ns);
    mq_status extend_lease(int32_t partition);
    mq_status assignment(int64_t *generation, std::vector<int32_t> &out);

private:
    // Counts the call as a sign of life; then MQ_OK, MQ_ERR_FENCED or MQ_REBALANCED.
    class Call;
    mq_status check(bool check_generation);
    mq::Caller caller() const noexcept { return {state->id, state->seen_generation.load()}; }
    void spin_for_signal(mq::Notifier &n, uint64_t seen, const mq::Wait &wait,
                         const mq::CancelScope &scope);
};
