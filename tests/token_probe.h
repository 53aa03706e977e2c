// What a test may know of a call through its cancel token: a blocking call with a token
// registers it (CancelScope) right before it locks what it looks at and waits on, so a token in
// use says the call has entered and is about to look or wait. Tests wait on it instead of
// sleeping.
#pragma once

#include <mutex>

#include "util/cancel.h"

namespace mqtest {

inline bool token_in_use(mq_cancel *c) {
    std::lock_guard g(c->mu);
    return c->where != nullptr;
}

}  // namespace mqtest
