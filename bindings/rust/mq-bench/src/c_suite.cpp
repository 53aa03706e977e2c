// C entry points into the C suite's workloads (bench/suite/benches.h).
#include "benches.h"

extern "C" double mq_c_suite_pull(uint64_t n, size_t batch, int groups) {
    return suite::bench_mq_pull(n, batch, groups, 0);
}
extern "C" double mq_c_suite_push(uint64_t n, int32_t prefetch) {
    return suite::bench_mq_push(n, prefetch);
}
