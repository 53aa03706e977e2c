// Every benchmark of the suite. Throughput benchmarks return messages per second (per receiver:
// each receiver of a fan-out gets every message); each verifies count, order and payload digest
// of every receiver and fails the process if anything differs.
#pragma once

#include <cstdint>

#include "common.h"

namespace suite {

constexpr int64_t kCapacity = 1024;  // mq topic capacity and the bounded peers' slots
constexpr size_t kBatch = 64;

// ---- mq through the C API ----
// 1 producer -> `groups` groups (one consumer thread each), 1 partition. batch 1: publish one,
// poll one, ack one; batch 64: publish_batch 64, poll up to 64, one cumulative ack.
// spin_ns is the broker's wait strategy (0, the default: a poll with nothing to hand out blocks).
double bench_mq_pull(uint64_t n, size_t batch, int groups, int64_t spin_ns = 0,
                     bool handles = false);
// The reference stress without the pause: 4 producers over 40 keys, 4 partitions, capacity 64,
// 2 groups x 2 consumers, polls of 10. Returns published messages per second.
// ack_with_poll: each consumer acks a batch with mq_group_ack_poll (ABI 1.1), which hands it the
// partition's next batch in the same critical section, until the partition is drained.
double bench_mq_stress(uint64_t n, bool ack_with_poll = false);
// 1 producer (publish_batch 64) -> 1 push subscription with the given prefetch.
double bench_mq_push(uint64_t n, int32_t prefetch);
// Publish -> delivery latency at a fixed rate, the consumer already waiting in mq_group_poll; spin_ns
// is the broker's wait strategy (0: block at once, the default).
Latency bench_mq_latency(uint64_t n, int64_t interval_ns, int64_t spin_ns);

struct MemoryResult {
    double overhead_bytes = 0;      // heap bytes per retained message beyond key and payload
    double rss_overhead_bytes = 0;  // the same measured as resident memory
    double peak_rss_mib = 0;        // the process's peak resident set
    double allocs_per_msg_batch = 0, allocs_per_msg_single = 0, allocs_per_msg_push = 0;
    double deque_string_overhead_bytes = 0;  // a std::deque<std::string> holding the same
};
// Runs in a fresh process (peak RSS is per process): see main.cpp.
MemoryResult bench_mq_memory(uint64_t retained);

// ---- peers ----
double bench_ring(uint64_t n);
// Workload 4's peer: the reference design (mutex + 2 condition variables + deque per partition,
// signal-all on append and ack) on the same stress. Published messages per second.
double bench_reference_stress(uint64_t n);
double bench_mutex_value(uint64_t n, size_t batch);
double bench_mutex_string(uint64_t n, size_t batch);
Latency bench_mutex_latency(uint64_t n, int64_t interval_ns);
bool have_zmq();
double bench_zmq(uint64_t n, int subscribers);     // per subscriber
Latency bench_pingpong_spin(uint64_t rounds);      // round trips
Latency bench_pingpong_blocking(uint64_t rounds);  // round trips, futex sleep and wake

// ---- heap accounting (alloc_count.cpp replaces the global operator new) ----
struct HeapStats {
    uint64_t allocations;  // operator new calls so far
    int64_t live_bytes;    // usable bytes of live operator new blocks
};
HeapStats heap_stats();

}  // namespace suite
