// What every build has of the backend interface (backend.h), with or without a backend.
#include "engine/backend.h"

namespace mq {

BackendHandler *&current_backend_handler() noexcept {
    thread_local BackendHandler *current = nullptr;
    return current;
}

}  // namespace mq
