// Per-thread scratch objects (buffers reused so that a path does not allocate once warm), kept
// on the heap behind a thread-local pointer. The library's hot paths use initial-exec TLS
// (call_gate.h), which makes glibc place its whole TLS block in the static TLS surplus when a
// language runtime loads it with dlopen: about 1.6 KiB shared with every other library. A JVM
// loading the Kafka variant ran out of it ("cannot allocate memory in static TLS block") once
// two dead-letter copies were thread-local objects.
#pragma once

#include <memory>

namespace mq {

// The calling thread's T, created on first use. May throw bad_alloc (the first time only).
template <class T>
T &thread_scratch() {
    thread_local std::unique_ptr<T> p;
    if (!p) p = std::make_unique<T>();
    return *p;
}

}  // namespace mq
