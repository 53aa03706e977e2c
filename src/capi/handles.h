// Publisher and cursor handles (mq.h, "handles"): a topic, or a group's partition, looked up
// once at open so that their calls skip the name lookups of the named forms.
//
// Like a member, a handle holds a reference to the broker (its calls outlive mq_broker_free as
// MQ_CLOSED) and to its topic and group (a deleted topic or unsubscribed group stays in memory
// until the handle goes, and the handle's calls report it). Its calls need no call gate: those
// references keep everything they touch, and the group snapshot the gate protects is never
// read (the handle has its group).
#pragma once

#include <string>

#include "capi/broker.h"
#include "core/topic.h"

struct mq_publisher {
    const mq::BrokerRef broker;      // first: released last
    const mq::Ref<mq::Topic> topic;  // NULL on a Kafka broker
    const std::string name;          // the topic's, for Kafka

    // MQ_CLOSED, then MQ_ERR_NO_TOPIC: the first checks of every call.
    mq_status check() const noexcept;
};

struct mq_cursor {
    const mq::BrokerRef broker;
    const mq::Ref<mq::Topic> topic;        // NULL on a Kafka broker
    const mq::Ref<const mq::Group> group;  // NULL on a Kafka broker
    const std::string topic_name, group_name;
    const int32_t partition;

    // MQ_CLOSED, then MQ_ERR_NO_TOPIC, then MQ_ERR_NO_GROUP.
    mq_status check() const noexcept;
    mq::Partition &part() const noexcept { return topic.get()->partition(partition); }
};
