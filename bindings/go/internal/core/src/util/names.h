// Kafka's naming rule (its Topic.validate), applied to topics, groups and members alike: 1 to 249
// of [a-zA-Z0-9._-], and neither "." nor "..".
#pragma once

#include <string_view>

#include "mq.h"

namespace mq {

constexpr size_t kMaxNameLength = 249;

// MQ_OK, or MQ_ERR_INVALID with a message naming `what` ("topic" or "group").
mq_status check_name(const char *name, const char *what) noexcept;

// Kafka's Topic.hasCollision: two topic names that differ only where one has '.' and the other
// '_' (Kafka's metric names map '.' to '_'), so Kafka refuses to create the second one.
bool names_collide(std::string_view a, std::string_view b) noexcept;

}  // namespace mq
