// The textbook design: a bounded queue behind one mutex and two condition variables (not full,
// not empty), notifying on every push and pop. Storage is a preallocated ring of `capacity`
// values, so the by-value variant never touches the heap and the std::string variant pays
// exactly one allocation per message (64 bytes does not fit the small-string buffer).
// Batch variants take the lock once per batch of up to 64, as mq's batch calls do.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "benches.h"

namespace suite {
namespace {

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(size_t capacity) : slots_(capacity) {}

    // Pushes all n values, waiting for room as needed (a batch may span several waits).
    void push(T *values, size_t n) {
        std::unique_lock lk(mu_);
        for (size_t i = 0; i < n;) {
            not_full_.wait(lk, [&] { return count_ < slots_.size(); });
            for (; i < n && count_ < slots_.size(); ++i, ++count_)
                slots_[(head_ + count_) % slots_.size()] = std::move(values[i]);
            not_empty_.notify_one();
        }
    }

    // Pops between 1 and max values.
    size_t pop(T *out, size_t max) {
        std::unique_lock lk(mu_);
        not_empty_.wait(lk, [&] { return count_ > 0; });
        size_t n = 0;
        for (; n < max && count_ > 0; ++n, --count_) {
            out[n] = std::move(slots_[head_]);
            head_ = (head_ + 1) % slots_.size();
        }
        not_full_.notify_one();
        return n;
    }

private:
    std::mutex mu_;
    std::condition_variable not_full_, not_empty_;
    std::vector<T> slots_;
    size_t head_ = 0, count_ = 0;
};

template <class T>
void make(T &out, uint64_t seq);
template <>
void make(Msg &out, uint64_t seq) {
    fill(out, seq);
}
template <>
void make(std::string &out, uint64_t seq) {
    Msg m;
    fill(m, seq);
    out.assign(reinterpret_cast<const char *>(m.b), kPayload);
}
inline void check(Verifier &v, const Msg &m) { v.take(m.b, kPayload); }
inline void check(Verifier &v, const std::string &s) { v.take(s.data(), s.size()); }

template <class T>
double run(const char *name, uint64_t n, size_t batch, size_t capacity) {
    BoundedQueue<T> q(capacity);
    Verifier v{name};
    std::thread consumer([&] {
        std::vector<T> buf(batch);
        for (uint64_t got = 0; got < n;) {
            size_t k = q.pop(buf.data(), batch);
            for (size_t i = 0; i < k; ++i) check(v, buf[i]);
            got += k;
        }
    });
    double t0 = now_s();
    std::vector<T> buf(batch);
    for (uint64_t seq = 0; seq < n;) {
        size_t k = 0;
        for (; k < batch && seq < n; ++k, ++seq) make(buf[k], seq);
        q.push(buf.data(), k);
    }
    consumer.join();
    double elapsed = now_s() - t0;
    v.finish(n, expected_digest(0, n), "consumer");
    return double(n) / elapsed;
}

}  // namespace

double bench_mutex_value(uint64_t n, size_t batch) {
    return run<Msg>(batch == 1 ? "mutex queue (value), single" : "mutex queue (value), batch", n,
                    batch, kCapacity);
}

double bench_mutex_string(uint64_t n, size_t batch) {
    return run<std::string>(
        batch == 1 ? "mutex queue (string), single" : "mutex queue (string), batch", n, batch,
        kCapacity);
}

// Publish -> delivery latency of the by-value queue at a fixed rate, the consumer blocked in pop.
Latency bench_mutex_latency(uint64_t n, int64_t interval_ns) {
    BoundedQueue<Msg> q(kCapacity);
    Verifier v{"mutex queue latency"};
    std::vector<int64_t> lat(n);
    std::thread consumer([&] {
        Msg m, plain;
        for (uint64_t i = 0; i < n; ++i) {
            q.pop(&m, 1);
            int64_t t = now_ns();
            lat[i] = t - unstamp(m.b, plain);
            v.take(plain.b, kPayload);
        }
    });
    Pacer pace(interval_ns);
    for (uint64_t seq = 0; seq < n; ++seq) {
        pace.wait(seq);
        Msg m;
        fill(m, seq);
        stamp(m, now_ns());
        q.push(&m, 1);
    }
    consumer.join();
    v.finish(n, expected_digest(0, n), "consumer");
    return percentiles(lat);
}

}  // namespace suite
