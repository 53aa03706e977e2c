// Replaces the global allocation functions for the whole benchmark process. libmq's own calls
// to operator new resolve to these too (the executable's definitions come first in the dynamic
// linker's search order), which is what lets workload 7 count the library's allocations.
// Counting is two relaxed atomic adds per call: negligible beside malloc itself.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "benches.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
std::atomic<int64_t> g_live{0};

void *counted(std::size_t n) {
    void *p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_live.fetch_add(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
    return p;
}

void *counted_aligned(std::size_t n, std::align_val_t a) {
    void *p = nullptr;
    if (posix_memalign(&p, std::max(sizeof(void *), std::size_t(a)), n ? n : 1) != 0)
        throw std::bad_alloc();
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_live.fetch_add(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
    return p;
}

void release(void *p) noexcept {
    if (!p) return;
    g_live.fetch_sub(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
}
}  // namespace

void *operator new(std::size_t n) { return counted(n); }
void *operator new[](std::size_t n) { return counted(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
    try {
        return counted(n);
    } catch (...) {
        return nullptr;
    }
}
void *operator new[](std::size_t n, const std::nothrow_t &t) noexcept { return operator new(n, t); }
void *operator new(std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void *operator new[](std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void operator delete(void *p) noexcept { release(p); }
void operator delete[](void *p) noexcept { release(p); }
void operator delete(void *p, std::size_t) noexcept { release(p); }
void operator delete[](void *p, std::size_t) noexcept { release(p); }
void operator delete(void *p, std::align_val_t) noexcept { release(p); }
void operator delete[](void *p, std::align_val_t) noexcept { release(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { release(p); }

namespace suite {
HeapStats heap_stats() {
    return {g_allocations.load(std::memory_order_relaxed), g_live.load(std::memory_order_relaxed)};
}
}  // namespace suite
