#include "util/error.h"

#include <cstdarg>
#include <cstdio>

namespace mq {
namespace {
thread_local char tl_message[1024];
// What mq_last_error returns: tl_message, or a fixed text.
thread_local const char *tl_current = "";

void vformat(const char *fmt, va_list ap) noexcept {
    std::vsnprintf(tl_message, sizeof tl_message, fmt, ap);
    tl_current = tl_message;
}
}  // namespace

mq_status fail(mq_status status, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    vformat(fmt, ap);
    va_end(ap);
    return status;
}

mq_status fail_fixed(mq_status status, const char *text) noexcept {
    tl_current = text;
    return status;
}

void Deferred::format(mq_status, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    vformat(fmt, ap);
    va_end(ap);
}

const char *last_error() noexcept { return tl_current; }

}  // namespace mq
