// The one rule for every duration the C API takes (mq.h, "Durations"): a count of milliseconds
// (or nanoseconds, where the name ends in _ns) from 0 to 2^40 ms, narrowed per parameter where
// its documentation says so; a wait may also be MQ_WAIT_FOREVER. Every call checks its
// durations here, so the limit and the message are the same everywhere, and no deadline
// (steady clock or broker clock, in ns) can overflow: 2^40 ms is 1.1e18 ns, an eighth of
// INT64_MAX.
#pragma once

#include <cstdint>

#include "util/error.h"
#include "mq.h"

namespace mq {

constexpr int64_t kMaxDurationMs = int64_t{1} << 40;
constexpr int64_t kMaxDurationNs = kMaxDurationMs * 1000000;
// spin_ns: a spin longer than a second is never a wait strategy worth a busy core.
constexpr int64_t kMaxSpinNs = 1000000000;

struct DurationRule {
    int64_t min = 0;               // in the parameter's unit
    int64_t max = kMaxDurationMs;  // in the parameter's unit, never above 2^40 ms
    bool ns = false;               // the unit: ns instead of ms
    bool forever = false;          // MQ_WAIT_FOREVER (-1) is accepted too (waits)
};

inline mq_status check_duration(int64_t value, const char *name, DurationRule rule = {}) {
    if (rule.forever && value == MQ_WAIT_FOREVER) return MQ_OK;
    if (value >= rule.min && value <= rule.max) return MQ_OK;
    const char *unit = rule.ns ? "ns" : "ms";
    const long long v = static_cast<long long>(value);
    const long long lo = static_cast<long long>(rule.min);
    const long long hi = static_cast<long long>(rule.max);
    if (rule.forever) {
        return fail(MQ_ERR_INVALID,
                    "%s is %lld; use -1 (MQ_WAIT_FOREVER), 0 (MQ_NO_WAIT) or a wait of 1 to %lld "
                    "%s (2^40 ms)",
                    name, v, hi, unit);
    }
    return fail(MQ_ERR_INVALID, "%s is %lld; it must be %lld to %lld %s%s", name, v, lo, hi, unit,
                rule.max == kMaxDurationMs && !rule.ns ? " (2^40 ms)" : "");
}

// A wait argument (wait_ms): MQ_WAIT_FOREVER, MQ_NO_WAIT or 1 to 2^40 ms.
inline mq_status check_wait(int64_t wait_ms) {
    return check_duration(wait_ms, "wait_ms", {0, kMaxDurationMs, false, true});
}

}  // namespace mq
