package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"unsafe"
)

// direct makes f's call of the library with the goroutine held on its OS thread, so that the
// error message, which the library keeps per thread, is read on the thread that failed. The
// calls off the hot path are made this way, straight from Go; the hot ones (publish, poll,
// ack) go through shim.c, which reads the message in the same cgo crossing and terminates
// names on its stack instead of allocating.
func direct(op string, f func() C.mq_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := f(); s != C.MQ_OK {
		return &Error{Op: op, Status: Status(s), Message: C.GoString(C.mq_last_error())}
	}
	return nil
}

// cname is a name as a C string (malloc'd: free it). A NUL byte inside cannot travel in a C
// string (the library would see a shorter, maybe existing, name): refused, as shim.c does.
func cname(op, what, s string) (*C.char, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, invalid(op, fmt.Sprintf("%s name has a NUL byte at position %d; names are 1 to "+
			"249 characters of [a-zA-Z0-9._-]", what, i))
	}
	return C.CString(s), nil
}

// cnames are the C strings of one call's names, freed together.
type cnames []*C.char

func (n *cnames) add(op, what, s string) (*C.char, error) {
	c, err := cname(op, what, s)
	if err == nil {
		*n = append(*n, c)
	}
	return c, err
}

func (n cnames) free() {
	for _, c := range n {
		C.free(unsafe.Pointer(c))
	}
}

// text makes a call of the snprintf-style list and describe functions: asked with a buffer,
// it says how much it needed; the list may grow between two calls, so it is asked again until
// the answer fits.
func text(op string, f func(buf *C.char, cap C.size_t, needed *C.size_t) C.mq_status) (string, error) {
	buf := make([]byte, 256)
	for {
		var needed C.size_t
		if err := direct(op, func() C.mq_status {
			return f((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)
		}); err != nil {
			return "", err
		}
		if int(needed) <= len(buf) {
			// needed counts the terminating NUL.
			return string(buf[:max(int(needed)-1, 0)]), nil
		}
		buf = make([]byte, int(needed))
	}
}

// cBroker and cMember are the handles, which cross as integers (see shim.h), as the pointers
// the library takes: read through memory, since they point into C and no Go rule covers them.
func cBroker(p C.mqgo_broker) *C.mq_broker { return *(**C.mq_broker)(unsafe.Pointer(&p)) }
func cMember(p C.mqgo_member) *C.mq_member { return *(**C.mq_member)(unsafe.Pointer(&p)) }

// groupCall makes f's call (direct) with a topic's and a group's names as C strings.
func groupCall(op, topic, group string, f func(t, g *C.char) C.mq_status) error {
	var names cnames
	defer names.free()
	t, err := names.add(op, "topic", topic)
	if err != nil {
		return err
	}
	g, err := names.add(op, "group", group)
	if err != nil {
		return err
	}
	return direct(op, func() C.mq_status { return f(t, g) })
}

// newBox puts a cgo.Handle's value in C memory, where the library keeps it as a callback's
// user data (the trampolines in shim.c read it). nil when out of memory; C.free releases it.
func newBox(h cgo.Handle) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
	if p != nil {
		*(*uintptr)(p) = uintptr(h)
	}
	return p
}
