// The Kafka backend's stand-in when the library is built without it (CMake MQ_KAFKA=OFF, and
// the bindings' own builds of the core): opening a broker on a cluster is refused clearly.
#include "backend.h"
#include "error.h"

#ifndef MQ_HAVE_KAFKA
namespace mq {

mq_status make_kafka_backend(const mq_broker_options &, std::unique_ptr<Backend> *) {
    return fail(MQ_ERR_UNSUPPORTED,
                "this mq library was built without the Kafka backend; rebuild it with the "
                "CMake option -DMQ_KAFKA=ON (needs librdkafka) to use kafka_bootstrap");
}

}  // namespace mq
#endif
