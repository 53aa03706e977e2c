//go:build cgo && !mq_system

package core

// #cgo CPPFLAGS: -I${SRCDIR}/../../../../include -DMQ_STATIC
// #cgo CXXFLAGS: -std=c++20 -I${SRCDIR}/../../../../src -DMQ_BUILDING -fvisibility=hidden
// #cgo LDFLAGS: -lstdc++ -lm -lpthread
import "C"
