//go:build mq_system

package mq

// systemBuild: the package links an installed libmq, which may have been built with the Kafka
// backend.
const systemBuild = true
