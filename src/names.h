// Kafka's naming rule, applied to topics and groups alike: 1 to 249 of [a-zA-Z0-9._-].
#pragma once

#include <string_view>

#include "mq.h"

namespace mq {

constexpr size_t kMaxNameLength = 249;

// MQ_OK, or MQ_ERR_INVALID with a message naming `what` ("topic" or "group").
mq_status check_name(const char *name, const char *what) noexcept;

}  // namespace mq
