//go:build mq_system

package conformance

const systemBuild = true
