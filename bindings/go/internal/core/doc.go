// Package core compiles the repository's C++ core (src/*.cpp, through the core_*.cpp
// wrappers) into a Go package, so that a default build of the mq package needs nothing
// installed but a C++ compiler. It has no Go API: the mq package's C code calls the core's
// mq_* functions, and the linker finds them here.
//
// It is a package of its own so that Go's build cache compiles the core once: an edit to the
// mq package recompiles only that package's small C shim. Go's cache does not see the files
// the wrappers #include; core_hash.go (the hash of include/ and src/, src/kafka/ included,
// written by `go generate ./...`) changes with them, so an edit to the core rebuilds this
// package.
//
// With -tags mq_kafka the package also compiles the Kafka backend (core_kafka_*.cpp, the
// wrappers of src/kafka/*.cpp) with MQ_HAVE_KAFKA and links librdkafka (core.go).
package core

//go:generate go run ../gencore
