//go:build cgo && !mq_system

package mq

// The default build links the repository's C++ core, compiled by the internal/core package.

// #cgo CPPFLAGS: -I${SRCDIR}/../../../include -DMQ_STATIC
// #cgo LDFLAGS: -lstdc++ -lm -lpthread
import "C"

import _ "github.com/mqlib/mq/bindings/go/internal/core"
