// Package core compiles the C++ core into a Go package, so that a default build of the mq
// package needs nothing installed but a C++ compiler, and nothing outside the module: include/
// and src/ here are copies of the repository's, kept by `go generate ./...` (internal/gencore)
// and compared with the repository by TestGeneratedFilesAreCurrent. It has no Go API: the mq
// package's C code calls the core's mq_* functions, and the linker finds them here.
//
// cgo compiles only the files of a package's own directory, so each translation unit of the
// copy has a wrapper here, core_<path>.cpp, that #includes it. The wrappers of the Kafka
// backend (the sources under a kafka/ directory) compile only with -tags mq_kafka, which also
// defines MQ_HAVE_KAFKA and links librdkafka (core.go).
//
// It is a package of its own so that Go's build cache compiles the core once: an edit to the
// mq package recompiles only that package's small C shim. Go's cache does not see the files
// the wrappers #include from the subdirectories; core_hash.go (the hash of the copy, written
// by `go generate ./...`) changes with them, so an edit to the core rebuilds this package.
package core

//go:generate go run ../gencore
