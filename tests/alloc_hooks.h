// The test binary's one replacement of the global allocation functions, and the two things
// tests do with it: count allocations (every thread) and make an allocation fail (the calling
// thread only, so a failure lands in the call under test and not in a library thread).
#pragma once

#include <cstdint>

namespace alloc_hooks {

// Counting: allocations on any thread between start and stop.
void count_start();
void count_stop();
long count();

// Failure injection: the n-th allocation (1-based) made by the calling thread from now on fails
// (operator new throws std::bad_alloc; the nothrow forms return nullptr). Later ones succeed.
void fail_nth(long n);
// Disarms; returns how many allocations the thread made while armed (the failed one included).
long disarm();
// True if the armed failure happened since fail_nth.
bool failed();

}  // namespace alloc_hooks
