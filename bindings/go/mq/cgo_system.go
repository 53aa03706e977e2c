//go:build cgo && mq_system

package mq

// With -tags mq_system the package links an installed libmq found by pkg-config (set
// PKG_CONFIG_PATH for a prefix of your own) instead of compiling the core.

// #cgo pkg-config: mq
import "C"
