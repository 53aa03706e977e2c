// The Kafka backend's stand-in when the library is built without it (CMake MQ_KAFKA=OFF, and
// the bindings' own builds of the core): opening a broker on a cluster is refused clearly.
#include "engine/backend.h"
#include "util/error.h"

#ifndef MQ_HAVE_KAFKA
// What the user must switch on depends on how they got the library: a binding's build defines
// MQ_KAFKA_HINT as its own switch (a cargo feature, a Maven profile, a Go build tag, a pip
// option), so the message names the one this user can act on.
#ifndef MQ_KAFKA_HINT
#define MQ_KAFKA_HINT "the CMake option -DMQ_KAFKA=ON (needs librdkafka)"
#endif

namespace mq {

mq_status make_kafka_backend(const mq_broker_options &, std::unique_ptr<Backend> *) {
    return fail(
        MQ_ERR_UNSUPPORTED,
        "this mq library was built without the Kafka backend; rebuild it with " MQ_KAFKA_HINT
        " to use kafka_bootstrap");
}

}  // namespace mq
#endif
