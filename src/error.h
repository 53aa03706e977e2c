// Failure reporting: a status plus a thread-local detail message. The message lives in a fixed
// thread-local buffer so that reporting a failure never allocates (it may be reporting one).
#pragma once

#include "mq.h"

namespace mq {

// Formats the detail of a failure into the calling thread's message buffer and returns status,
// so call sites read `return fail(MQ_ERR_NO_TOPIC, "no topic named %s", name);`.
[[gnu::format(printf, 2, 3)]] mq_status fail(mq_status status, const char *fmt, ...) noexcept;

const char *last_error() noexcept;

}  // namespace mq
