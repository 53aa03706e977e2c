// Replaces the global allocation functions for the whole mq_tests binary (only one replacement
// can exist per program); see alloc_hooks.h.
#include "alloc_hooks.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

// Per thread: armed while fail_nth is in effect; `seen` counts the thread's allocations then.
thread_local bool t_armed = false;
thread_local long t_fail_at = 0;
thread_local long t_seen = 0;
thread_local bool t_failed = false;

// Returns false when this allocation must fail.
bool account() noexcept {
    if (g_counting.load(std::memory_order_relaxed))
        g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (!t_armed) return true;
    if (++t_seen == t_fail_at) {
        t_failed = true;
        return false;
    }
    return true;
}

void *allocate(std::size_t n) {
    if (!account()) throw std::bad_alloc();
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}

void *allocate_nothrow(std::size_t n) noexcept {
    if (!account()) return nullptr;
    return std::malloc(n ? n : 1);
}
}  // namespace

namespace alloc_hooks {
void count_start() {
    g_allocations = 0;
    g_counting = true;
}
void count_stop() { g_counting = false; }
long count() { return g_allocations.load(); }

void fail_nth(long n) {
    t_seen = 0;
    t_fail_at = n;
    t_failed = false;
    t_armed = true;
}
long disarm() {
    t_armed = false;
    return t_seen;
}
bool failed() { return t_failed; }
}  // namespace alloc_hooks

void *operator new(std::size_t n) { return allocate(n); }
void *operator new[](std::size_t n) { return allocate(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
