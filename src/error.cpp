#include "error.h"

#include <cstdarg>
#include <cstdio>

namespace mq {
namespace {
thread_local char tl_message[1024];
}

mq_status fail(mq_status status, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(tl_message, sizeof tl_message, fmt, ap);
    va_end(ap);
    return status;
}

const char *last_error() noexcept {
    return tl_message;
}

}  // namespace mq
