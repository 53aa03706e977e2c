// Failures of the facade: a library status with the detail message copied on the thread that
// saw it (mq_last_error() belongs to that thread and to the next failing call). The wrapper's
// %exception block turns an Error into the binding's Java exception.
#pragma once

#include <mq.h>

#include <string>

#ifndef SWIG
namespace mqj {

struct Error {
    int status;
    std::string message;
};

// Throws the status with the library's message for it.
[[noreturn]] void fail(mq_status status);
// Throws a status with a message of the facade's own (for what C cannot express, e.g. a
// negative count).
[[noreturn]] void fail(mq_status status, std::string message);

inline void check(mq_status status) {
    if (status != MQ_OK) fail(status);
}

}  // namespace mqj
#endif
