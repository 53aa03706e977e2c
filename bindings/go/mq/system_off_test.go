//go:build !mq_system

package mq

// systemBuild: the package compiles the repository's core, without the Kafka backend.
const systemBuild = false
