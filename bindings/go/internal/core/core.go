//go:build cgo && !mq_system

package core

// With -tags mq_kafka the wrappers of src/kafka/*.cpp compile too and every core file sees
// MQ_HAVE_KAFKA, as CMake's -DMQ_KAFKA=ON does: the Kafka backend, linked with librdkafka
// (Debian: librdkafka-dev) found by pkg-config. Without the tag src/backend_none.cpp refuses a
// Kafka bootstrap with MQ_ERR_UNSUPPORTED and the core needs nothing but the C++ runtime.

// #cgo CPPFLAGS: -I${SRCDIR}/../../../../include -DMQ_STATIC
// #cgo CXXFLAGS: -std=c++20 -I${SRCDIR}/../../../../src -DMQ_BUILDING -fvisibility=hidden
// #cgo mq_kafka CXXFLAGS: -DMQ_HAVE_KAFKA
// #cgo mq_kafka pkg-config: rdkafka
// #cgo LDFLAGS: -lstdc++ -lm -lpthread
import "C"
