//go:build cgo && !mq_system

package core

// The core compiles from this package's copy of the repository's include/ and src/ (see
// doc.go), so a build needs nothing outside the module.
//
// With -tags mq_kafka the wrappers of the Kafka backend's sources compile too and every core
// file sees MQ_HAVE_KAFKA, as CMake's -DMQ_KAFKA=ON does: the Kafka backend, linked with
// librdkafka (Debian: librdkafka-dev) found by pkg-config. Without the tag the core refuses a
// Kafka bootstrap with MQ_ERR_UNSUPPORTED and needs nothing but the C++ runtime; its message
// names the switch to turn on, MQ_KAFKA_HINT, which kafka_hint.h sets to the build tag (a
// forced include: cgo refuses the quotes of a string literal in a #cgo flag).

// #cgo CPPFLAGS: -I${SRCDIR}/include -DMQ_STATIC
// #cgo CXXFLAGS: -std=c++20 -I${SRCDIR}/src -DMQ_BUILDING -fvisibility=hidden
// #cgo !mq_kafka CXXFLAGS: -include ${SRCDIR}/kafka_hint.h
// #cgo mq_kafka CXXFLAGS: -DMQ_HAVE_KAFKA
// #cgo mq_kafka pkg-config: rdkafka
// #cgo LDFLAGS: -lstdc++ -lm -lpthread
import "C"
