//go:build cgo && !mq_system

package mq

// The default build links the C++ core compiled by the internal/core package, from the copy
// of the repository's include/ and src/ the module carries there.

// #cgo CPPFLAGS: -I${SRCDIR}/../internal/core/include -DMQ_STATIC
// #cgo LDFLAGS: -lstdc++ -lm -lpthread
import "C"

import _ "github.com/mqlib/mq/bindings/go/internal/core"
