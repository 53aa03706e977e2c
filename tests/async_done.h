// What an asynchronous call's callback received (the tests of mq.h's "asynchronous calls").
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "mq.h"

namespace mqtest {

// What one callback received.
struct Done {
    std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    mq_status status = MQ_OK;
    std::string error;
    std::thread::id thread;

    static void fn(void *user, mq_status st) {
        auto *d = static_cast<Done *>(user);
        std::lock_guard lk(d->mu);
        d->calls++;
        d->status = st;
        d->error = mq_last_error();
        d->thread = std::this_thread::get_id();
        d->cv.notify_all();
    }
    // The status of the first callback, or -1 if none came within the limit.
    int wait(std::chrono::milliseconds limit = std::chrono::seconds(10)) {
        std::unique_lock lk(mu);
        if (!cv.wait_for(lk, limit, [&] { return calls > 0; })) return -1;
        return status;
    }
    int count() {
        std::lock_guard lk(mu);
        return calls;
    }
};

}  // namespace mqtest
