// Workload 7: what a retained message costs beyond its key and payload, the peak resident set
// with a million of them retained, and heap allocations per message in steady state.
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <vector>

#include "benches.h"
#include "mq_util.h"

namespace suite {
namespace {

// A field of /proc/self/status ("VmRSS", "VmHWM") in bytes.
int64_t proc_status_bytes(const char *field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    size_t len = std::strlen(field);
    while (std::getline(in, line))
        if (line.compare(0, len, field) == 0 && line[len] == ':')
            return std::atoll(line.c_str() + len + 1) * 1024;
    return -1;
}

// Multiples of the batch, so the measured window starts on a batch boundary.
constexpr uint64_t kWarmup = 64 * 320, kMeasured = 64 * 1600;

// Heap allocations per message while one thread publishes, polls and acks in steps of `batch`
// on a topic that has already cycled its storage (the warm-up).
double steady_allocs_pull(size_t batch) {
    const char *name = "mq memory (steady state)";
    Broker b(name, 1, kCapacity);
    must(name, mq_group_subscribe(b.b, kTopic, "g0", nullptr), "subscribe");
    Verifier v{name};
    std::vector<Msg> buf(batch);
    std::vector<mq_record> recs(batch);
    std::vector<mq_message> msgs(batch);
    uint64_t before = 0;
    for (uint64_t seq = 0; seq < kWarmup + kMeasured;) {
        if (seq == kWarmup) before = heap_stats().allocations;
        for (size_t k = 0; k < batch; ++k) {
            fill(buf[k], seq + k);
            recs[k] = mq_record{nullptr, 0, buf[k].b, kPayload, nullptr, 0, 0};
        }
        size_t published = 0, got = 0;
        must(name,
             mq_topic_publish_batch(b.b, kTopic, recs.data(), sizeof(mq_record), batch, MQ_NO_WAIT,
                                    nullptr, nullptr, sizeof(mq_publish_result), &published),
             "mq_topic_publish_batch");
        must(name,
             mq_group_poll(b.b, kTopic, "g0", 0, msgs.data(), sizeof(mq_message), batch, MQ_NO_WAIT,
                           nullptr, &got),
             "mq_group_poll");
        if (got != batch) fail(name, "poll returned a short batch");
        for (size_t k = 0; k < got; ++k) v.take(msgs[k].payload, msgs[k].payload_len);
        must(name, mq_group_ack(b.b, kTopic, "g0", 0, msgs[got - 1].offset), "mq_group_ack");
        seq += batch;
    }
    uint64_t after = heap_stats().allocations;
    v.finish(kWarmup + kMeasured, expected_digest(0, kWarmup + kMeasured), "group");
    return double(after - before) / double(kMeasured);
}

struct PushCount {
    Verifier v{"mq memory (push)"};
    std::mutex mu;
    std::condition_variable cv;
    uint64_t seen = 0;  // guarded by mu: v.next as of the last notification
};

int count_push(void *user, const mq_message *m) {
    auto *pc = static_cast<PushCount *>(user);
    pc->v.take(m->payload, m->payload_len);
    if (pc->v.next == kWarmup || pc->v.next == kWarmup + kMeasured) {
        std::lock_guard g(pc->mu);
        pc->seen = pc->v.next;
        pc->cv.notify_all();
    }
    return 0;
}

double steady_allocs_push() {
    const char *name = "mq memory (push)";
    Broker b(name, 1, kCapacity);
    PushCount pc;
    mq_subscription_options opts;
    mq_subscription_options_init(&opts, sizeof opts);
    opts.prefetch = 64;
    mq_subscription *sub = nullptr;
    must(name, mq_subscription_open(b.b, kTopic, "push", &opts, count_push, &pc, nullptr, &sub),
         "mq_subscription_open");
    auto publish_until = [&](uint64_t from, uint64_t to) {
        Msg buf[kBatch];
        mq_record recs[kBatch];
        for (uint64_t seq = from; seq < to;) {
            size_t k = 0;
            for (; k < kBatch && seq < to; ++k, ++seq) {
                fill(buf[k], seq);
                recs[k] = mq_record{nullptr, 0, buf[k].b, kPayload, nullptr, 0, 0};
            }
            must(name,
                 mq_topic_publish_batch(b.b, kTopic, recs, sizeof(mq_record), k, MQ_WAIT_FOREVER,
                                        nullptr, nullptr, sizeof(mq_publish_result), nullptr),
                 "mq_topic_publish_batch");
        }
        std::unique_lock lk(pc.mu);
        if (!pc.cv.wait_for(lk, std::chrono::seconds(30), [&] { return pc.seen == to; }))
            fail(name, "handler stalled");
    };
    publish_until(0, kWarmup);
    uint64_t before = heap_stats().allocations;
    publish_until(kWarmup, kWarmup + kMeasured);
    uint64_t after = heap_stats().allocations;
    must(name, mq_subscription_close(sub), "mq_subscription_close");
    pc.v.finish(kWarmup + kMeasured, expected_digest(0, kWarmup + kMeasured), "handler");
    return double(after - before) / double(kMeasured);
}

double deque_string_overhead(uint64_t retained) {
    int64_t before = heap_stats().live_bytes;
    std::deque<std::string> q;
    Msg m;
    for (uint64_t seq = 0; seq < retained; ++seq) {
        fill(m, seq);
        q.emplace_back(reinterpret_cast<const char *>(m.b), kPayload);
    }
    int64_t after = heap_stats().live_bytes;
    Verifier v{"deque<string> memory"};
    for (auto &s : q) v.take(s.data(), s.size());
    v.finish(retained, expected_digest(0, retained), "deque");
    // The deque's own slots hold the std::string objects: count them as the overhead they are.
    return double(after - before) / double(retained) - double(kPayload);
}

}  // namespace

MemoryResult bench_mq_memory(uint64_t retained) {
    const char *name = "mq memory";
    MemoryResult r;
    {
        int64_t heap0, rss0;
        Broker b(name, 1, int64_t(retained));
        must(name, mq_group_subscribe(b.b, kTopic, "g0", nullptr), "subscribe");
        // Starts counting after the empty topic and group exist: their fixed cost is not per
        // message.
        uint64_t allocs0 = heap_stats().allocations;
        heap0 = heap_stats().live_bytes;
        rss0 = proc_status_bytes("VmRSS");
        Msg buf[kBatch];
        mq_record recs[kBatch];
        for (uint64_t seq = 0; seq < retained;) {
            size_t k = 0;
            for (; k < kBatch && seq < retained; ++k, ++seq) {
                fill(buf[k], seq);
                recs[k] = mq_record{nullptr, 0, buf[k].b, kPayload, nullptr, 0, 0};
            }
            must(name,
                 mq_topic_publish_batch(b.b, kTopic, recs, sizeof(mq_record), k, MQ_NO_WAIT,
                                        nullptr, nullptr, sizeof(mq_publish_result), nullptr),
                 "mq_topic_publish_batch(the topic holds every message, sizeof(mq_record), "
                 "sizeof(mq_publish_result))");
        }
        r.overhead_bytes =
            double(heap_stats().live_bytes - heap0) / double(retained) - double(kPayload);
        r.rss_overhead_bytes =
            double(proc_status_bytes("VmRSS") - rss0) / double(retained) - double(kPayload);
        r.peak_rss_mib = double(proc_status_bytes("VmHWM")) / (1024.0 * 1024.0);
        if (heap_stats().allocations == allocs0)
            fail(name,
                 "retaining a million messages allocated nothing the counter saw: the "
                 "counting operator new is not the library's");

        // Everything retained must still be there, in order.
        Verifier v{name};
        std::vector<mq_message> msgs(kBatch);
        while (v.next < retained) {
            size_t got = 0;
            must(name,
                 mq_group_poll(b.b, kTopic, "g0", 0, msgs.data(), sizeof(mq_message), kBatch,
                               MQ_NO_WAIT, nullptr, &got),
                 "mq_group_poll");
            for (size_t k = 0; k < got; ++k) v.take(msgs[k].payload, msgs[k].payload_len);
            must(name, mq_group_ack(b.b, kTopic, "g0", 0, msgs[got - 1].offset), "mq_group_ack");
        }
        v.finish(retained, expected_digest(0, retained), "group");
    }
    r.allocs_per_msg_batch = steady_allocs_pull(kBatch);
    r.allocs_per_msg_single = steady_allocs_pull(1);
    r.allocs_per_msg_push = steady_allocs_push();
    r.deque_string_overhead_bytes = deque_string_overhead(retained);
    return r;
}

}  // namespace suite
