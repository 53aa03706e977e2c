// What C users pick for in-process fan-out: ZeroMQ PUB/SUB over inproc://. The publisher is an
// XPUB socket (PUB plus visible subscriptions) with ZMQ_XPUB_NODROP, so a full subscriber
// blocks the sender instead of losing messages, and the publisher starts only once it has seen
// every subscription arrive (no slow-joiner loss). High-water marks match mq's capacity.
#include <zmq.h>

#include <thread>
#include <vector>

#include "benches.h"

namespace suite {
namespace {

void must(int rc, const char *what) {
    if (rc != 0) fail("zmq", std::string(what) + ": " + zmq_strerror(zmq_errno()));
}

}  // namespace

bool have_zmq() { return true; }

double bench_zmq(uint64_t n, int subscribers) {
    void *ctx = zmq_ctx_new();
    void *pub = zmq_socket(ctx, ZMQ_XPUB);
    int one = 1, hwm = int(kCapacity);
    must(zmq_setsockopt(pub, ZMQ_XPUB_NODROP, &one, sizeof one), "ZMQ_XPUB_NODROP");
    // Every subscriber's (identical) subscription must reach us, not only the first.
    must(zmq_setsockopt(pub, ZMQ_XPUB_VERBOSE, &one, sizeof one), "ZMQ_XPUB_VERBOSE");
    must(zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm), "ZMQ_SNDHWM");
    must(zmq_bind(pub, "inproc://bench"), "bind");

    std::vector<Verifier> v(size_t(subscribers), Verifier{"zmq pub/sub"});
    std::vector<std::thread> subs;
    for (int s = 0; s < subscribers; ++s) {
        subs.emplace_back([&, s] {
            void *sub = zmq_socket(ctx, ZMQ_SUB);
            must(zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof hwm), "ZMQ_RCVHWM");
            must(zmq_connect(sub, "inproc://bench"), "connect");
            must(zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0), "ZMQ_SUBSCRIBE");
            Msg m;
            for (uint64_t i = 0; i < n; ++i) {
                int got = zmq_recv(sub, m.b, kPayload, 0);
                if (got < 0) fail("zmq pub/sub", std::string("recv: ") + zmq_strerror(zmq_errno()));
                v[size_t(s)].take(m.b, size_t(got));
            }
            zmq_close(sub);
        });
    }
    // Each subscription reaches the XPUB socket as a message: wait for all of them.
    for (int s = 0; s < subscribers; ++s) {
        unsigned char buf[16];
        if (zmq_recv(pub, buf, sizeof buf, 0) < 1 || buf[0] != 1)
            fail("zmq pub/sub", "expected a subscription message");
    }
    double t0 = now_s();
    Msg m;
    for (uint64_t seq = 0; seq < n; ++seq) {
        fill(m, seq);
        if (zmq_send(pub, m.b, kPayload, 0) != int(kPayload))
            fail("zmq pub/sub", std::string("send: ") + zmq_strerror(zmq_errno()));
    }
    for (auto &t : subs) t.join();
    double elapsed = now_s() - t0;
    uint64_t want = expected_digest(0, n);
    for (auto &x : v) x.finish(n, want, "subscriber");
    zmq_close(pub);
    zmq_ctx_term(ctx);
    return double(n) / elapsed;
}

}  // namespace suite
