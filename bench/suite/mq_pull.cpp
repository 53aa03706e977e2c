// Workloads 1, 2, 3 and 6: mq's pull API through the C ABI, as a user would call it, on one
// partition: by name, or (handles, rows w1h and w2h) on a publisher and cursors (ABI 1.7).
#include <thread>
#include <vector>

#include "benches.h"
#include "mq.h"
#include "mq_util.h"

namespace suite {

double bench_mq_pull(uint64_t n, size_t batch, int groups, int64_t spin_ns, bool handles) {
    const char *name = batch == 1 ? "mq single" : groups == 1 ? "mq batch" : "mq fan-out";
    Broker b(name, 1, kCapacity, spin_ns);
    static const char *kGroups[] = {"g0", "g1", "g2", "g3"};
    for (int g = 0; g < groups; ++g)
        must(name, mq_group_subscribe(b.b, kTopic, kGroups[g], nullptr), "mq_group_subscribe");

    std::vector<Verifier> v(size_t(groups), Verifier{name});
    std::vector<std::thread> consumers;
    for (int g = 0; g < groups; ++g) {
        consumers.emplace_back([&, g] {
            std::vector<mq_message> msgs(batch);
            Verifier &mine = v[size_t(g)];
            mq_cursor *c = nullptr;
            if (handles)
                must(name, mq_cursor_open(b.b, kTopic, kGroups[g], 0, &c), "mq_cursor_open");
            while (mine.next < n) {
                size_t got = 0;
                // A long wait rather than forever: a lost message ends the run as a failure
                // instead of hanging it.
                mq_status s = c ? mq_cursor_poll(c, msgs.data(), sizeof(mq_message), batch, 10000,
                                                 nullptr, &got)
                                : mq_group_poll(b.b, kTopic, kGroups[g], 0, msgs.data(),
                                                sizeof(mq_message), batch, 10000, nullptr, &got);
                if (s == MQ_TIMEOUT) fail(name, "stalled: nothing to poll for 10 s");
                must(name, s, "poll");
                for (size_t i = 0; i < got; ++i) mine.take(msgs[i].payload, msgs[i].payload_len);
                const int64_t last = msgs[got - 1].offset;
                must(name,
                     c ? mq_cursor_ack(c, last) : mq_group_ack(b.b, kTopic, kGroups[g], 0, last),
                     "ack");
            }
            mq_cursor_close(c);
        });
    }

    mq_publisher *p = nullptr;
    if (handles) must(name, mq_publisher_open(b.b, kTopic, &p), "mq_publisher_open");
    double t0 = now_s();
    std::vector<Msg> buf(batch);
    std::vector<mq_record> recs(batch);
    for (uint64_t seq = 0; seq < n;) {
        size_t k = 0;
        for (; k < batch && seq < n; ++k, ++seq) {
            fill(buf[k], seq);
            recs[k] = mq_record{nullptr, 0, buf[k].b, kPayload, nullptr, 0, 0};
        }
        if (batch == 1) {
            must(name,
                 p ? mq_publisher_publish(p, nullptr, 0, buf[0].b, kPayload, NULL, 0,
                                          MQ_WAIT_FOREVER, nullptr, nullptr, nullptr)
                   : mq_topic_publish(b.b, kTopic, nullptr, 0, buf[0].b, kPayload, NULL, 0,
                                      MQ_WAIT_FOREVER, nullptr, nullptr, nullptr),
                 "publish");
        } else {
            size_t published = 0;
            must(name,
                 p ? mq_publisher_publish_batch(p, recs.data(), sizeof(mq_record), k,
                                                MQ_WAIT_FOREVER, nullptr, nullptr,
                                                sizeof(mq_publish_result), &published)
                   : mq_topic_publish_batch(b.b, kTopic, recs.data(), sizeof(mq_record), k,
                                            MQ_WAIT_FOREVER, nullptr, nullptr,
                                            sizeof(mq_publish_result), &published),
                 "publish_batch");
            if (published != k) fail(name, "publish_batch published " + std::to_string(published));
        }
    }
    for (auto &t : consumers) t.join();
    double elapsed = now_s() - t0;
    mq_publisher_close(p);
    uint64_t want = expected_digest(0, n);
    for (auto &x : v) x.finish(n, want, "group");
    return double(n) / elapsed;
}

Latency bench_mq_latency(uint64_t n, int64_t interval_ns, int64_t spin_ns) {
    const char *name = "mq latency";
    Broker b(name, 1, kCapacity, spin_ns);
    must(name, mq_group_subscribe(b.b, kTopic, "g0", nullptr), "mq_group_subscribe");
    Verifier v{name};
    std::vector<int64_t> lat(n);
    std::thread consumer([&] {
        Msg plain;
        for (uint64_t i = 0; i < n; ++i) {
            mq_message m;
            size_t got = 0;
            mq_status s = mq_group_poll(b.b, kTopic, "g0", 0, &m, sizeof(mq_message), 1, 10000,
                                        nullptr, &got);
            int64_t t = now_ns();
            if (s == MQ_TIMEOUT) fail(name, "stalled: nothing to poll for 10 s");
            must(name, s, "mq_group_poll");
            if (m.payload_len != kPayload) fail(name, "payload of the wrong size");
            lat[i] = t - unstamp(m.payload, plain);
            v.take(plain.b, m.payload_len);
            must(name, mq_group_ack(b.b, kTopic, "g0", 0, m.offset), "mq_group_ack");
        }
    });
    Pacer pace(interval_ns);
    Msg m;
    for (uint64_t seq = 0; seq < n; ++seq) {
        fill(m, seq);
        pace.wait(seq);
        stamp(m, now_ns());
        must(name,
             mq_topic_publish(b.b, kTopic, nullptr, 0, m.b, kPayload, NULL, 0, MQ_WAIT_FOREVER,
                              nullptr, nullptr, nullptr),
             "mq_topic_publish");
    }
    consumer.join();
    v.finish(n, expected_digest(0, n), "group");
    return percentiles(lat);
}

}  // namespace suite
