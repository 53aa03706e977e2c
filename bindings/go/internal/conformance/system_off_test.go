//go:build !mq_system

package conformance

const systemBuild = false
