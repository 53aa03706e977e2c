//go:build !mq_kafka

package conformance

const kafkaBuild = false
