// The partition's lock and condition variables.
//
// A partition's critical sections are a few hundred nanoseconds, and a publisher and a
// consumer take the same lock several times per message. A plain mutex parks the loser of
// every collision in the kernel (a futex wait, then a futex wake on unlock): measured on the
// single-message benchmark, about 1.5 futex calls per message. An adaptive mutex spins for a
// bounded number of tries first (glibc's PTHREAD_MUTEX_ADAPTIVE_NP, tunable with
// glibc.pthread.mutex_spin_count), which is enough for the holder to leave, and then parks as
// before: fewer than 0.25 futex calls per message, and no CPU burnt while nobody holds it.
//
// std::condition_variable only waits on std::mutex, hence a condition variable of our own: a
// thin wrapper of pthread_cond_t measuring timeouts on CLOCK_MONOTONIC, like steady_clock.
// (A sequence-number futex with a short spin was tried in its place: fan-out gained about
// 30%, but single messages lost 20%, push subscriptions 60% and the p50 latency of a
// waiting poll went from 3 to 25 us, so glibc's stays. One without the spin, tried again on
// the reference stress workload, where glibc's broadcast sleeps in a fifth of the context
// switches, changed neither its throughput nor its switches: docs/BENCHMARKS.md, round 2.)
#pragma once

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <mutex>

#include "util/clock.h"

namespace mq {

class Mutex {
public:
    Mutex() noexcept {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)  // glibc; elsewhere a plain mutex
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
        pthread_mutex_init(&m_, &a);  // cannot fail for these attributes on Linux
        pthread_mutexattr_destroy(&a);
    }
    ~Mutex() { pthread_mutex_destroy(&m_); }
    Mutex(const Mutex &) = delete;
    Mutex &operator=(const Mutex &) = delete;

    void lock() noexcept { pthread_mutex_lock(&m_); }
    void unlock() noexcept { pthread_mutex_unlock(&m_); }
    pthread_mutex_t *native_handle() noexcept { return &m_; }

private:
    pthread_mutex_t m_;
};

// The spinning wait strategy (spin_ns): spins until `counter` moves on from `seen`, `stop()`
// says to (close, cancel), or the clock passes `until_ns` (steady_now_ns's scale). Call it
// without holding any lock.
template <class Stop>
void spin_until_changed(const std::atomic<uint64_t> &counter, uint64_t seen, int64_t until_ns,
                        Stop &&stop) noexcept {
    for (unsigned i = 1;; i++) {
        if (counter.load(std::memory_order_acquire) != seen || stop()) return;
        if (i % 64 == 0 && steady_now_ns() >= until_ns) return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

class CondVar {
public:
    CondVar() noexcept {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&c_, &a);
        pthread_condattr_destroy(&a);
    }
    ~CondVar() { pthread_cond_destroy(&c_); }
    CondVar(const CondVar &) = delete;
    CondVar &operator=(const CondVar &) = delete;

    void notify_one() noexcept { pthread_cond_signal(&c_); }
    void notify_all() noexcept { pthread_cond_broadcast(&c_); }

    void wait(std::unique_lock<Mutex> &lk) noexcept {
        pthread_cond_wait(&c_, lk.mutex()->native_handle());
    }
    // steady_clock is CLOCK_MONOTONIC in libstdc++ and libc++ on Linux.
    std::cv_status wait_until(std::unique_lock<Mutex> &lk,
                              std::chrono::steady_clock::time_point t) noexcept {
        const int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
        timespec ts{};
        if (ns > 0) {
            ts.tv_sec = static_cast<time_t>(ns / 1000000000);
            ts.tv_nsec = static_cast<long>(ns % 1000000000);
        }
        const int rc = pthread_cond_timedwait(&c_, lk.mutex()->native_handle(), &ts);
        return rc == ETIMEDOUT ? std::cv_status::timeout : std::cv_status::no_timeout;
    }

private:
    pthread_cond_t c_;
};

}  // namespace mq
