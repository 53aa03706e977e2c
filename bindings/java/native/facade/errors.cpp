#include "errors.h"

namespace mqj {

void fail(mq_status status) { throw Error{status, mq_last_error()}; }

void fail(mq_status status, std::string message) { throw Error{status, std::move(message)}; }

}  // namespace mqj
