#include "clock.h"

namespace mq {

int64_t coarse_tick_ns() noexcept {
    static const int64_t tick = [] {
#if defined(CLOCK_MONOTONIC_COARSE)
        timespec res;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
            return static_cast<int64_t>(res.tv_sec) * 1000000000 + res.tv_nsec;
#endif
        return int64_t{0};
    }();
    return tick;
}

}  // namespace mq
