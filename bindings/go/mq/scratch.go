package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Scratch memory for the structs a call hands the library (message views, records, headers,
// results) lives in C memory: the library may write C pointers into it, and cgo's pointer
// check, which would scan a Go array of pointer-holding structs on every call, has nothing to
// scan. Buffers are recycled; the garbage collector frees those the pool lets go.
type cbuf struct {
	p    unsafe.Pointer
	size uintptr
	h    *cbufHolder // what the pool keeps; its cleanup frees p if the pool drops it
}

type cbufHolder struct{ b cbuf }

// cbufs is per P (sync.Pool), so a producer and a consumer do not contend on one lock.
var cbufs sync.Pool

const maxKeptCBytes = 1 << 20 // a larger buffer is freed after its call

// getCBuf returns at least size bytes of C memory (nil p when out of memory).
func getCBuf(size uintptr) cbuf {
	if h, _ := cbufs.Get().(*cbufHolder); h != nil {
		if h.b.size >= size {
			return h.b
		}
		cbufs.Put(h)
	}
	alloc := uintptr(4096)
	for alloc < size {
		alloc *= 2
	}
	p := C.malloc(C.size_t(alloc))
	if p == nil {
		return cbuf{}
	}
	h := &cbufHolder{}
	h.b = cbuf{p: p, size: alloc, h: h}
	runtime.AddCleanup(h, func(p unsafe.Pointer) { C.free(p) }, p)
	return h.b
}

func putCBuf(b cbuf) {
	if b.p == nil {
		return
	}
	if b.size > maxKeptCBytes {
		// Freed by its holder's cleanup once unreachable; drop it now rather than keep it.
		return
	}
	cbufs.Put(b.h)
}

func noMemory(op string) *Error {
	return &Error{Op: op, Status: StatusNoMemory, Message: "out of memory for the call's scratch buffer"}
}
